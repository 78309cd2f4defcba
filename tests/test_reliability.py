"""Failure kinds from public bug reports of the project's dependencies, each tried against the package and the
command line: a config.json that disagrees with its weights, a damaged entry in a read-only cache, empty or
invisible text, byte-level tokens shown as bytes, bad environment values, a valid entry under the wrong key.

Models: minilm-l6 (its installed package folder, nothing to build) and smollm2-135m (the dequantised zoo folder).
Messages are checked by the names they carry, never by their wording.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from olacore.extraction import _check_memory, check_texts, tokenize
from olacore.loading import load_model, model_fingerprint
from olacore.loading import ModelLoadError
from olacore.pipeline import cached_attention, cached_ola
from olacore.store import CacheCorruptionWarning, TensorStore
from olacore.zoo import zoo_folder

ROOT = Path(__file__).resolve().parent.parent
TEXT = "The cat sat on the mat."


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "olacore", *args], capture_output=True, text=True, timeout=600,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", **env})


def _entries(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.safetensors")) if root.exists() else []


def _error_lines(done: subprocess.CompletedProcess) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.startswith(("error", "warning", "Traceback"))]


def _copy_with_config(source: Path, where: Path, **changes) -> Path:
    """``source``'s files linked into ``where``, its config.json rewritten with ``changes``."""
    where.mkdir()
    for item in source.iterdir():
        if item.is_file() and item.name != "config.json":
            os.symlink(item, where / item.name)
    config = json.loads((source / "config.json").read_text(encoding="utf-8"))
    (where / "config.json").write_text(json.dumps({**config, **changes}), encoding="utf-8")
    return where


@pytest.fixture(scope="module")
def minilm():
    return load_model("minilm-l6", device="cpu")


# ------------------------------------------------------------------------------------------
# 1. A config.json that disagrees with its weights
# ------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_cli_refuses_a_config_with_fewer_layers_than_the_weights_and_caches_nothing(tmp_path):
    """It loaded three of MiniLM's six layers, exited 0 and cached maps of the truncated network."""
    folder = _copy_with_config(zoo_folder("minilm-l6"), tmp_path / "minilm-3", num_hidden_layers=3)
    cache = tmp_path / "cache"
    done = _cli("ola", "--model", str(folder), "--text", TEXT, "--max-order", "1", "--json", "--device", "cpu",
                OLACORE_CACHE=str(cache))
    assert done.returncode == 2 and done.stdout == ""
    (line,) = _error_lines(done)
    assert "config.json" in line and "num_hidden_layers" in line and " 6 " in line
    assert _entries(cache) == []


@pytest.mark.slow
@pytest.mark.parametrize("changes, names", [
    ({"num_hidden_layers": 8}, ("config.json", "num_hidden_layers", " 6 ")),  # more layers than the weights hold
    ({"model_type": "roberta"}, ("config.json", "model_type", "'bert'")),  # another family on BERT weights
])
def test_a_config_that_disagrees_with_the_minilm_weights_is_refused(tmp_path, changes, names):
    folder = _copy_with_config(zoo_folder("minilm-l6"), tmp_path / "minilm", **changes)
    with pytest.raises(ModelLoadError) as info:
        load_model(str(folder), device="cpu")
    message = str(info.value)
    assert "\n" not in message and all(name in message for name in names), message


@pytest.mark.slow
def test_smollm_config_with_12_of_its_30_layers_is_refused(tmp_path):
    folder = _copy_with_config(zoo_folder("smollm2-135m"), tmp_path / "smollm-12", num_hidden_layers=12)
    with pytest.raises(ModelLoadError) as info:
        load_model(str(folder), device="cpu")
    assert "config.json" in str(info.value) and "num_hidden_layers" in str(info.value) and "30" in str(info.value)


# ------------------------------------------------------------------------------------------
# 2. A damaged entry in a read-only cache (the command line's case: tests/test_faults.py)
# ------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_damaged_entry_in_a_read_only_cache_is_recomputed_with_one_warning(minilm, tmp_path, monkeypatch):
    """It raised OSError [Errno 30] after printing 'deleted, it will be recomputed'."""
    store = TensorStore(tmp_path / "tensors")
    (expected,) = cached_ola(minilm, [TEXT], 2, store=store, progress=False)
    entries = _entries(store.root)
    for entry in entries:  # every entry truncated: the attention and the OLA
        entry.write_bytes(entry.read_bytes()[:100])

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(Path, "unlink", read_only)
    monkeypatch.setattr("tempfile.mkstemp", read_only)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (again,) = cached_ola(minilm, [TEXT], 2, store=store, progress=False)
    assert torch.equal(again.orders, expected.orders) and torch.equal(again.rollout, expected.rollout)
    assert again.tokens == expected.tokens
    removal = [w for w in caught if "could not be removed" in str(w.message)]
    assert len(removal) == len(entries) and len(caught) == len(entries)  # one per entry, and nothing else
    assert all(issubclass(w.category, CacheCorruptionWarning) for w in removal)
    assert _entries(store.root) == entries


# ------------------------------------------------------------------------------------------
# 3. Empty, whitespace-only or invisible text
# ------------------------------------------------------------------------------------------

INVISIBLE = ["", "   ", "\u200b", "\u2800", "\u3164", "\ufeff", " \u200b\u200d\u2060 ", "\u115f\u1160", "\ufe0f",
             "\t\n\u00a0"]


@pytest.mark.parametrize("text", INVISIBLE, ids=[repr(t) for t in INVISIBLE])
def test_invisible_texts_are_refused_by_index(text):
    with pytest.raises(ValueError, match=r"texts\[1\]"):
        check_texts(["A visible text.", text])


def test_texts_with_a_visible_character_pass():
    texts = ["a\u200bb", "\u00e9", "\U0001f600", "\u0301", "\u2800x"]
    assert check_texts(texts) == texts


@pytest.mark.parametrize("text", ["\u200b", "\u2800", "\u3164", "\ufeff", "   "], ids=repr)
def test_cli_refuses_invisible_text_in_one_line_naming_the_option(text, tmp_path):
    """It exited 0 with empty maps (with --out: an internal quantile() error)."""
    done = _cli("ola", "--model", "minilm-l6", "--text", text, "--max-order", "1", "--out",
                str(tmp_path / "maps.png"), OLACORE_CACHE=str(tmp_path / "cache"))
    assert done.returncode == 2
    (line,) = _error_lines(done)
    assert "--text" in line and "texts[" not in line
    assert not (tmp_path / "maps.png").exists() and _entries(tmp_path / "cache") == []


@pytest.mark.slow
def test_a_text_the_tokenizer_drops_entirely_is_refused(minilm):
    """MiniLM strips accents: a lone combining accent leaves only [CLS] [SEP]."""
    with pytest.raises(ValueError, match=r"texts\[0\].*minilm-l6"):
        tokenize(minilm, ["\u0301"])


# ------------------------------------------------------------------------------------------
# 4. Byte-level tokens shown as bytes
# ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def smollm_tokens():
    """A stand-in model for :func:`tokenize`: smollm2-135m's own tokenizer (byte-level BPE)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(zoo_folder("smollm2-135m"))
    model = SimpleNamespace(name="smollm2-135m", tokenizer=tokenizer, max_length=8192)

    def records(text: str):
        ((ids, tokens, offsets),) = tokenize(model, [text])
        return SimpleNamespace(text=text, tokens=tokens, offsets=offsets)
    return records


BYTE_SYMBOLS = set("ÃâĢľĿæĪĳçĪ±åĮĹäº¬ðŁĺ")


@pytest.mark.slow
def test_byte_level_tokens_are_labelled_with_the_characters_they_cover(smollm_tokens):
    from olacore.plots import token_labels

    record = smollm_tokens("Un café “noir” à 我爱北京 😀")
    labels = token_labels(record)
    assert len(labels) == len(record.tokens)
    assert not BYTE_SYMBOLS & set("".join(labels)), labels
    assert "é" in "".join(labels) and "“" in labels and "”" in labels
    # every label reads the text; a character split over tokens is marked on each of its tokens
    for label, (start, end) in zip(labels, record.offsets):
        plain = label.split(" (")[0]
        assert plain == record.text[start:end]
    for character in "我😀":  # both split into bytes over several tokens
        split = [label for label in labels if label.startswith(character)]
        assert len(split) >= 2 and split == [f"{character} ({i}/{len(split)})" for i in range(1, len(split) + 1)]


@pytest.mark.slow
def test_wordpiece_labels_keep_case_continuations_and_special_tokens(minilm):
    from olacore.plots import token_labels

    ((_, tokens, offsets),) = tokenize(minilm, ["Café au lait"])
    labels = token_labels(SimpleNamespace(text="Café au lait", tokens=tokens, offsets=offsets))
    assert labels == ["[CLS]", "Café", "au", "lai", "-t", "[SEP]"]


@pytest.mark.slow
def test_cli_figure_labels_show_characters_not_bytes(tmp_path, monkeypatch):
    """The --out figure of smollm2-135m labelled 'café' 'cafÃ©' and '“' 'âĢľ'."""
    from matplotlib.figure import Figure

    from olacore import __main__ as cli

    from olacore.settings import cache_dir

    drawn = []
    monkeypatch.setattr(Figure, "savefig", lambda self, *args, **kwargs: drawn.append(self))
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "models").symlink_to(cache_dir("models"), target_is_directory=True)  # the built models
    monkeypatch.setenv("OLACORE_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "maps.png"
    assert cli.main(["ola", "--model", "smollm2-135m", "--text", "“café”", "--max-order", "1", "--out", str(out),
                     "--device", "cpu"]) == 0
    (figure,) = drawn
    ticks = [tick.get_text() for tick in figure.axes[0].get_xticklabels()]
    assert "“" in ticks and "”" in ticks and any("é" in t for t in ticks)
    assert not BYTE_SYMBOLS & set("".join(ticks)), ticks


# ------------------------------------------------------------------------------------------
# 5. Environment values checked where they are read
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["abc", "-1", "0", "nan", "inf", "  ", " 4"])
def test_attention_budget_must_be_a_positive_number(monkeypatch, value):
    monkeypatch.setenv("OLACORE_ATTENTION_GB", value)
    with pytest.raises(ValueError, match="OLACORE_ATTENTION_GB") as info:
        _check_memory(SimpleNamespace(name="toy", num_layers=2, num_heads=4), 10, 0)
    assert "\n" not in str(info.value)


def _stopwatch_report():
    from olacore.results import Stopwatch

    return Stopwatch("reliability").report()


def _results_dir():
    from olacore.results import results_dir

    return results_dir()


def _data_dir():
    from olacore.settings import data_dir

    return data_dir()


def _cache_store():
    return TensorStore()


READERS = {"OLACORE_DATA": _data_dir, "OLACORE_CACHE": _cache_store, "OLACORE_RESULTS": _results_dir,
           "OLACORE_PHASES": _stopwatch_report, "OLACORE_MODEL_FOLDERS": lambda: model_fingerprint("bert-base-cased")}


@pytest.mark.parametrize("variable", sorted(READERS))
@pytest.mark.parametrize("bad", ["a file", "blank", "spaces around"])
def test_every_folder_variable_is_checked_where_it_is_read(variable, bad, tmp_path, monkeypatch):
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    value = {"a file": str(a_file), "blank": "   ", "spaces around": f" {tmp_path} "}[bad]
    if variable == "OLACORE_MODEL_FOLDERS" and bad != "blank":
        value = json.dumps({"bert-base-cased": value.strip() if bad == "a file" else ""})
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValueError, match=variable) as info:
        READERS[variable]()
    assert "\n" not in str(info.value)


def test_cli_names_a_bad_attention_budget(tmp_path):
    done = _cli("ola", "--model", "minilm-l6", "--text", TEXT, "--max-order", "1", "--device", "cpu",
                OLACORE_CACHE=str(tmp_path / "cache"), OLACORE_ATTENTION_GB="abc")
    assert done.returncode == 2
    (line,) = _error_lines(done)
    assert "OLACORE_ATTENTION_GB" in line


# ------------------------------------------------------------------------------------------
# 6. A valid entry under the wrong key
# ------------------------------------------------------------------------------------------


def test_an_entry_copied_under_another_key_is_damage(tmp_path):
    store = TensorStore(tmp_path)
    mine, other = store.key(text="mine"), store.key(text="other")
    store.put(other, {"x": torch.arange(3)}, {"text": "other"})
    store.path(mine).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(store.path(other), store.path(mine))
    with pytest.warns(CacheCorruptionWarning, match=str(store.path(mine))):
        assert store.get(mine) is None
    assert not store.path(mine).exists() and store.get(other)[1] == {"text": "other"}


@pytest.mark.slow
def test_attention_of_another_text_copied_under_this_texts_key_is_recomputed(minilm, tmp_path):
    store = TensorStore(tmp_path / "tensors")
    other = "A dog slept under the table."
    (expected,) = cached_attention(minilm, [TEXT], store=store, progress=False)
    (theirs,) = cached_attention(minilm, [other], store=store, progress=False)
    (mine_entry,) = [p for p in _entries(store.root) if store.get(p.stem)[1]["text"] == TEXT]
    shutil.copy([p for p in _entries(store.root) if p != mine_entry][0], mine_entry)
    with pytest.warns(CacheCorruptionWarning):
        (again,) = cached_attention(minilm, [TEXT], store=store, progress=False)
    assert again.tokens == expected.tokens != theirs.tokens and torch.equal(again.attentions, expected.attentions)


# ------------------------------------------------------------------------------------------
# Other members of the kinds
# ------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_zoo_folder_whose_config_disagrees_with_the_zoo_entry_is_refused(monkeypatch):
    """A zoo model's fingerprint names its packages, not its folder's files: the config is checked against the entry."""
    import dataclasses

    from olacore import loading

    spec = dataclasses.replace(loading.ZOO["minilm-l6"], num_heads=6)  # the folder's config says 12
    monkeypatch.setitem(loading.ZOO, "minilm-l6", spec)
    with pytest.raises(ModelLoadError) as info:
        load_model("minilm-l6", device="cpu")
    assert "config.json" in str(info.value) and "minilm-l6" in str(info.value) and "12 heads" in str(info.value)


def test_results_of_another_chapter_under_this_chapters_name_are_refused(tmp_path):
    from olacore.results import ChapterResults, Record, load_results

    ChapterResults("01_derivation", "smoke", [Record("a", "a number", 1.0)]).save(tmp_path)
    shutil.copy(tmp_path / "01_derivation.json", tmp_path / "02_qualitative.json")
    with pytest.raises(ValueError, match="01_derivation") as info:
        load_results("02_qualitative", tmp_path)
    assert "02_qualitative" in str(info.value)
    assert load_results("01_derivation", tmp_path).records[0].value == 1.0


@pytest.mark.parametrize("count", [2.5, "3", None])
def test_similarity_texts_needs_a_whole_number(count):
    from olacore.texts import similarity_texts

    with pytest.raises(ValueError, match="num_texts"):
        similarity_texts(count)


@pytest.mark.parametrize("option, value", [("--model", ""), ("--model", "  "), ("--out", ""), ("--text", "\u0301")])
def test_cli_refuses_empty_options_before_any_work(option, value, tmp_path):
    args = {"--model": "minilm-l6", "--text": TEXT, "--out": str(tmp_path / "maps.png")}
    args[option] = value
    extra = ["--words"] if option == "--text" else []  # a lone accent has no word to pool onto
    done = _cli("ola", *[part for pair in args.items() for part in pair], *extra, OLACORE_CACHE=str(tmp_path / "c"))
    assert done.returncode == 2
    (line,) = _error_lines(done)
    assert option in line
    assert _entries(tmp_path / "c") == []
