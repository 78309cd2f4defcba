"""Damaged, partial and mismatched model folders (olacore.loading; issue #13 items 1-3).

Every folder here is a copy of MiniLM's installed files in ``tmp_path`` (the weights linked,
or cut short where the test damages them); every store lives in ``tmp_path``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from olacore.loading import ModelLoadError, check_model_folder, folder_fingerprint
from olacore.zoo import zoo_folder

TEXT = "A cat sat on the mat."
SMALL_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt")


@pytest.fixture(scope="module")
def minilm_files() -> Path:
    return zoo_folder("minilm-l6")


def _folder(minilm_files: Path, where: Path, files=SMALL_FILES, weights: bool = True) -> Path:
    where.mkdir()
    for name in files:
        shutil.copy(minilm_files / name, where / name)
    if weights:
        os.symlink(minilm_files / "model.safetensors", where / "model.safetensors")
    return where


def run_cli(*args: str, cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "OLACORE_CACHE": str(cache)}
    return subprocess.run([sys.executable, "-m", "olacore", *args], capture_output=True, text=True, timeout=600, env=env)


# ------------------------------------------------------------------------------------------
# Item 1: a folder without tokenizer files; a tokenizer that cannot be the model's
# ------------------------------------------------------------------------------------------


def test_folder_without_tokenizer_files_is_refused_before_loading(minilm_files, tmp_path):
    folder = _folder(minilm_files, tmp_path / "m", files=("config.json",))
    with pytest.raises(ModelLoadError, match="holds no tokenizer files") as info:
        check_model_folder(folder)
    assert "\n" not in str(info.value) and str(folder) in str(info.value)


@pytest.mark.slow
def test_cli_names_the_missing_tokenizer_files_and_writes_nothing(minilm_files, tmp_path):
    """The issue's case: it exited 0 with [CLS], seven [UNK], [SEP]."""
    folder = _folder(minilm_files, tmp_path / "m", files=("config.json",))
    done = run_cli("ola", "--model", str(folder), "--text", TEXT, "--max-order", "1", "--json", "--device", "cpu",
                   cache=tmp_path / "cache")
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "tokenizer files" in lines[0]
    assert not list((tmp_path / "cache").rglob("*.safetensors"))


@pytest.mark.slow
def test_a_tokenizer_far_smaller_than_the_vocabulary_is_refused(minilm_files, tmp_path):
    from olacore.loading import load_model

    folder = _folder(minilm_files, tmp_path / "m", files=("config.json",))
    (folder / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat"]) + "\n")
    with pytest.raises(ModelLoadError, match=r"7.*config.json.*vocab_size 30522"):
        load_model(str(folder), device="cpu")


@pytest.mark.slow
def test_a_tokenizer_that_maps_ordinary_words_to_unknown_is_refused(minilm_files, tmp_path):
    from olacore.loading import load_model

    folder = _folder(minilm_files, tmp_path / "m", files=("config.json",))
    junk = [f"tok{i}" for i in range(30_000)]  # as large as the vocabulary, but not this model's
    (folder / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *junk]) + "\n")
    with pytest.raises(ModelLoadError, match=r"\[UNK\]"):
        load_model(str(folder), device="cpu")


# ------------------------------------------------------------------------------------------
# Item 2: every file that changes extraction is in the fingerprint
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, change", [
    ("tokenizer.json", lambda text: text.replace('"lowercase":true', '"lowercase":false')),
    ("tokenizer_config.json", lambda text: text.replace("}", ', "model_max_length": 128}', 1)),
    ("special_tokens_map.json", lambda text: text.replace("[SEP]", "[SEP] ")),
    ("vocab.txt", lambda text: text + "olacore\n"),
    ("generation_config.json", lambda text: '{"do_sample": false}'),
    ("added_tokens.json", lambda text: '{"olacore": 30522}'),
    ("model.safetensors", None),
])
def test_fingerprint_changes_with_every_file_that_changes_extraction(minilm_files, tmp_path, name, change):
    folder = _folder(minilm_files, tmp_path / "m")
    before = folder_fingerprint(folder)
    assert before == folder_fingerprint(folder)
    if change is None:  # weights: a new file of another size
        (folder / name).unlink()
        (folder / name).write_bytes(b"\0" * 16)
    else:
        path = folder / name
        old = path.read_text() if path.exists() else ""
        new = change(old.replace(" ", "") if name == "tokenizer.json" else old)
        assert new != old
        path.write_text(new)
    assert folder_fingerprint(folder) != before
    (folder / "README.md").write_text("a model card")  # documentation changes no key
    after = folder_fingerprint(folder)
    (folder / "README.md").write_text("another model card")
    assert folder_fingerprint(folder) == after


@pytest.mark.slow
def test_copying_tokenizer_files_in_gives_the_new_tokens_not_the_cached_ones(minilm_files, tmp_path):
    """The issue's case 2, and a tokenizer setting changed in place (accents kept or stripped)."""
    from olacore.pipeline import cached_ola
    from olacore.store import TensorStore

    store = TensorStore(tmp_path / "store")
    folder = _folder(minilm_files, tmp_path / "m", files=("config.json",))
    with pytest.raises(ModelLoadError):
        cached_ola(str(folder), [TEXT], 1, device="cpu", store=store, progress=False)
    for name in TOKENIZER_FILES:
        shutil.copy(minilm_files / name, folder / name)
    (result,) = cached_ola(str(folder), [TEXT], 1, device="cpu", store=store, progress=False)
    assert result.tokens == ["[CLS]", "a", "cat", "sat", "on", "the", "mat", ".", "[SEP]"]

    text = "A café."
    (stripped,) = cached_ola(str(folder), [text], 1, device="cpu", store=store, progress=False)
    assert stripped.tokens[2] == "cafe"  # uncased BERT strips accents
    settings = json.loads((folder / "tokenizer_config.json").read_text())
    settings["strip_accents"] = False  # transformers rebuilds the normalizer from this setting
    (folder / "tokenizer_config.json").write_text(json.dumps(settings))
    (kept,) = cached_ola(str(folder), [text], 1, device="cpu", store=store, progress=False)
    assert "cafe" not in kept.tokens and kept.tokens != stripped.tokens


# ------------------------------------------------------------------------------------------
# Item 3: every error raised while loading a damaged or partial folder
# ------------------------------------------------------------------------------------------


def _truncate_weights(folder: Path, minilm_files: Path) -> str:
    (folder / "model.safetensors").unlink()
    with open(minilm_files / "model.safetensors", "rb") as handle:
        (folder / "model.safetensors").write_bytes(handle.read(2**20))  # the first megabyte
    return "cannot load the weight file model.safetensors of .*: incomplete metadata, file not fully covered"


def _garbage_weight_header(folder: Path, minilm_files: Path) -> str:
    (folder / "model.safetensors").unlink()
    (folder / "model.safetensors").write_bytes((20).to_bytes(8, "little") + b"this is not json!!!!" + b"\0" * 64)
    return "cannot load the weight file model.safetensors of .*: invalid JSON in header"


def _tiny_weight_file(folder: Path, minilm_files: Path) -> str:
    (folder / "model.safetensors").unlink()
    (folder / "model.safetensors").write_bytes(b"abc")
    return "cannot load the weight file model.safetensors of .*: header too small"


def _no_weights(folder: Path, minilm_files: Path) -> str:
    (folder / "model.safetensors").unlink()
    return "holds no weight file"


def _missing_shard(folder: Path, minilm_files: Path) -> str:
    index = {"metadata": {}, "weight_map": {"embeddings.word_embeddings.weight": "model-00002-of-00002.safetensors"}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    return "lacks the weight shards model-00002-of-00002.safetensors"


def _damaged_config(folder: Path, minilm_files: Path) -> str:
    (folder / "config.json").write_text((minilm_files / "config.json").read_text()[:100])
    return "config.json in .* is damaged"


def _damaged_tokenizer(folder: Path, minilm_files: Path) -> str:
    (folder / "tokenizer.json").write_text((minilm_files / "tokenizer.json").read_text()[:5000])
    (folder / "vocab.txt").unlink()  # or transformers would rebuild the tokenizer from vocab.txt
    return "cannot load the tokenizer of .*: replace the folder"


def _truncated_torch_checkpoint(folder: Path, minilm_files: Path) -> str:
    import torch

    (folder / "model.safetensors").unlink()
    torch.save({"x": torch.zeros(1000)}, folder / "pytorch_model.bin")
    data = (folder / "pytorch_model.bin").read_bytes()
    (folder / "pytorch_model.bin").write_bytes(data[: len(data) // 2])
    return "cannot load the weight file pytorch_model.bin of .*BadZipFile"


def _weights_of_another_size(folder: Path, minilm_files: Path) -> str:
    config = json.loads((folder / "config.json").read_text())
    config["num_hidden_layers"] = 8  # MiniLM has 6: layers 7 and 8 would be random numbers
    (folder / "config.json").write_text(json.dumps(config))
    return "config.json .*num_hidden_layers 8.* 6 layers"


def _weights_of_another_width(folder: Path, minilm_files: Path) -> str:
    config = json.loads((folder / "config.json").read_text())
    config["intermediate_size"] = 512  # MiniLM's is 1536
    (folder / "config.json").write_text(json.dumps(config))
    return "cannot load the weights of .*ignore_mismatched_sizes"


DAMAGES = [_truncate_weights, _garbage_weight_header, _tiny_weight_file, _no_weights, _missing_shard, _damaged_config,
           _damaged_tokenizer, _truncated_torch_checkpoint, _weights_of_another_size, _weights_of_another_width]


@pytest.mark.slow
@pytest.mark.parametrize("damage", DAMAGES, ids=[d.__name__.strip("_") for d in DAMAGES])
def test_every_damaged_folder_gives_one_line_naming_the_problem(minilm_files, tmp_path, damage):
    from olacore.loading import load_model

    folder = _folder(minilm_files, tmp_path / "m")
    message = damage(folder, minilm_files)
    with pytest.raises(ModelLoadError, match=message) as info:
        load_model(str(folder), device="cpu")
    assert "\n" not in str(info.value) and str(folder.resolve()) in str(info.value)


@pytest.mark.slow
@pytest.mark.parametrize("damage", [_truncate_weights, _weights_of_another_width, _damaged_tokenizer],
                         ids=["truncated weights", "weights of another width", "damaged tokenizer"])
def test_cli_damaged_folder_exits_2_with_one_line(minilm_files, tmp_path, damage):
    """The issue's case 3: a 34-line traceback (SafetensorError escaped the command line)."""
    folder = _folder(minilm_files, tmp_path / "m")
    message = damage(folder, minilm_files)
    done = run_cli("ola", "--model", str(folder), "--text", TEXT, "--max-order", "1", "--json", "--device", "cpu",
                   cache=tmp_path / "cache")
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert re.search(message, lines[0]) and lines[0].startswith("error: ")
