"""The command line on the smallest real model."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

TEXT = "The cat sat on the mat because it was warm."


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "olacore", *args], capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_json_orders_are_row_stochastic_maps():
    done = run_cli("ola", "--model", "minilm-l6", "--text", TEXT, "--max-order", "2", "--json", "--device", "cpu")
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert payload["model"] == "minilm-l6"
    tokens, orders = payload["tokens"], payload["orders"]
    assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]"
    assert len(orders) == 3 and all(len(m) == len(tokens) and len(m[0]) == len(tokens) for m in orders)
    for order in orders:
        for row in order:
            assert abs(sum(row) - 1) < 1e-4


@pytest.mark.slow
def test_words_and_figure(tmp_path):
    figure = tmp_path / "ola.png"
    done = run_cli("ola", "--model", "minilm-l6", "--text", TEXT, "--max-order", "3", "--words",
                   "--json", "--out", str(figure), "--device", "cpu")
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert payload["tokens"][:3] == ["The", "cat", "sat"] and len(payload["tokens"]) == 11
    assert len(payload["orders"][1]) == 11
    assert figure.stat().st_size > 10_000


def test_unknown_model_lists_the_zoo():
    done = run_cli("ola", "--model", "no-such-model", "--text", TEXT, "--json")
    assert done.returncode == 2
    assert "smollm2-135m" in done.stderr and "minilm-l6" in done.stderr


@pytest.mark.slow
def test_empty_text_is_refused():
    done = run_cli("ola", "--model", "minilm-l6", "--text", "   ", "--json", "--device", "cpu")
    assert done.returncode == 2
    assert "empty" in done.stderr.lower()


def test_missing_output_folder_is_refused_before_any_work(tmp_path):
    done = run_cli("ola", "--model", "no-such-model", "--text", TEXT, "--out", str(tmp_path / "missing" / "x.png"))
    assert done.returncode == 2
    assert "does not exist" in done.stderr  # checked before the (unknown) model is even looked up


@pytest.mark.slow
def test_words_keep_a_soft_hyphenated_word_whole():
    """Issue #13 item 6: 'co\\u00adoperation' was split into 'co' and 'operation', two identical rows."""
    text = "The co\u00adoperation works."
    done = run_cli("ola", "--model", "minilm-l6", "--text", text, "--max-order", "1", "--words", "--json", "--device", "cpu")
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert payload["tokens"] == ["The", "co\u00adoperation", "works", "."]
    order1 = payload["orders"][1]
    assert len(order1) == 4 and all(len(row) == 4 for row in order1)
    assert len({tuple(row) for row in order1}) == 4  # no two identical rows


# --- rough edges: plain help, options refused before any work -------------------------------

@pytest.fixture
def no_model(monkeypatch):
    """Any model lookup, loading or extraction fails the test: the CLI must refuse first."""
    import olacore.loading
    import olacore.pipeline

    def forbidden(*args, **kwargs):
        raise AssertionError("a model was looked up or loaded before the options were checked")

    for module, name in ((olacore.pipeline, "cached_ola"), (olacore.pipeline, "cached_attention"),
                         (olacore.loading, "load_model"), (olacore.loading, "model_fingerprint")):
        monkeypatch.setattr(module, name, forbidden)


@pytest.mark.parametrize("argv", [["--help"], ["ola", "--help"], ["models", "--help"]])
def test_help_is_plain_text(argv, capsys):
    from olacore.__main__ import main

    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 0
    text = capsys.readouterr().out
    assert "usage:" in text
    assert "``" not in text and not re.search(r":[a-z]+:`", text)  # no reST markup printed verbatim


@pytest.mark.parametrize("name, found", [("ola.txt", "unsupported suffix '.txt'"), ("ola", "no suffix")])
def test_unsupported_out_suffix_is_refused_before_any_model_loading(no_model, tmp_path, capsys, name, found):
    from olacore.__main__ import main

    out = tmp_path / name
    assert main(["ola", "--model", "minilm-l6", "--text", TEXT, "--out", str(out), "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert found in err and ".png" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_out_suffixes_are_formats_matplotlib_writes():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from olacore.__main__ import FIGURE_SUFFIXES, _check_options

    figure = plt.figure()
    supported = figure.canvas.get_supported_filetypes()
    plt.close(figure)
    assert {s.lstrip(".") for s in FIGURE_SUFFIXES} <= set(supported)
    import argparse

    _check_options(argparse.Namespace(model="minilm-l6", text=TEXT, words=False, out="ola.PNG"))  # any case, in the current folder: accepted


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_empty_text_gets_one_line_saying_what_to_do(no_model, capsys, text):
    from olacore.__main__ import main

    assert main(["ola", "--model", "minilm-l6", "--text", text, "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --text is empty") and "give the text" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.slow
@pytest.mark.parametrize("text", ["It costs $5 today and $10 tomorrow.", "Ba$$in", r"$\x and $y"])
def test_dollar_signs_in_the_text_are_text_in_the_figure(tmp_path, text):
    figure = tmp_path / "ola.svg"
    done = run_cli("ola", "--model", "minilm-l6", "--text", text, "--max-order", "1", "--out", str(figure),
                   "--device", "cpu")
    assert done.returncode == 0, done.stderr
    assert figure.stat().st_size > 1_000


@pytest.mark.parametrize("argv, named", [
    ([b"--text", b"caf\xe9 au lait"], "--text"),   # a latin-1 byte in a UTF-8 terminal
    ([b"--text", b"fine", b"--device", b"gpu"], "gpu"),
])
def test_inputs_that_failed_deep_inside_name_the_option(argv, named):
    done = subprocess.run([sys.executable.encode(), b"-m", b"olacore", b"ola", b"--model", b"minilm-l6", *argv],
                          capture_output=True, timeout=600)
    err = done.stderr.decode("utf-8", "replace").strip()
    assert done.returncode == 2 and named in err and len(err.splitlines()) == 1, err


def test_a_zoo_model_not_built_gets_one_line_naming_the_build_command(tmp_path, monkeypatch, capsys):
    from olacore.__main__ import main

    monkeypatch.setenv("OLACORE_CACHE", str(tmp_path / "cache"))  # an empty model cache
    assert main(["ola", "--model", "smollm2-135m", "--text", TEXT, "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "scripts/build_zoo.py smollm2-135m" in err and len(err.strip().splitlines()) == 1
