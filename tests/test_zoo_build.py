"""Building the zoo's model folders (olacore.zoo_build): installed files, and the split-zip build path."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from olacore import zoo_build
from olacore.extraction import extract_attention
from olacore.loading import LoadedModel, load_model
from olacore.zoo import ZOO

TEXT = "The quick brown fox jumps over the lazy dog."


@pytest.mark.parametrize("name", sorted(ZOO))
def test_zoo_files_are_installed(name):
    paths = zoo_build._locate(ZOO[name])
    assert len(paths) == len(ZOO[name].files)
    assert all(path.exists() for path in paths)


def test_zoo_folder_refuses_a_name_outside_the_zoo():
    with pytest.raises(ValueError, match="minilm-l6"):
        zoo_build.zoo_folder("no-such-model")


@pytest.fixture(scope="module")
def minilm() -> LoadedModel:
    return load_model("minilm-l6", device="cpu")


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
    monkeypatch.setattr(zoo_build, "_locate", lambda s: list(parts) if s.name.endswith("zip-test") else None)
    monkeypatch.setenv("OLACORE_CACHE", str(tmp_path / "cache"))

    loaded = load_model("zip-test", device="cpu")
    built = Path(loaded.path)
    assert built.parent.parent == tmp_path / "cache" / "models"
    assert (built.parent / zoo_build.MANIFEST).is_file() and not (built / "desktop.ini").exists()
    assert [p.name for p in built.parent.parent.iterdir() if not p.name.endswith(".lock")] == [built.parent.name]
    (a,) = extract_attention(minilm, [TEXT], progress=False)
    (b,) = extract_attention(loaded, [TEXT], progress=False)
    torch.testing.assert_close(a.attentions, b.attentions, atol=1e-6, rtol=0)

    # A damaged cached build is detected at load time and rebuilt.
    weights = built / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    with pytest.warns(UserWarning, match="rebuilding"):
        again = load_model("zip-test", device="cpu")
    (c,) = extract_attention(again, [TEXT], progress=False)
    torch.testing.assert_close(a.attentions, c.attentions, atol=1e-6, rtol=0)

    # A wrong checksum fails loudly and leaves nothing half-built behind.
    bad = dataclasses.replace(spec, name="bad-zip-test", sha256="0" * 64)
    monkeypatch.setitem(ZOO, "bad-zip-test", bad)
    with pytest.raises(ValueError, match="sha256"):
        load_model("bad-zip-test", device="cpu")
    leftovers = [p.name for p in (tmp_path / "cache" / "models").iterdir() if "bad-zip-test" in p.name]
    assert leftovers == [".bad-zip-test.lock"]
