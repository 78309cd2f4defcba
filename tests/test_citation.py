"""The book is citable and says what it runs on: CITATION.cff, LICENSE, the bibliography, the intro's
BibTeX, and the sha256 of every weight file on the page "Models and data"."""

from __future__ import annotations

import hashlib
import importlib.metadata
import re
import tempfile
import tomllib
import zipfile
from pathlib import Path

import pytest
import yaml
from pybtex.database import parse_file

import build_zoo  # scripts/ is on the path (conftest): the per-part sizes and checksums
from olacore.zoo import ZOO, is_built, zoo_folder

ROOT = Path(__file__).resolve().parent.parent
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
BIB = parse_file(str(ROOT / "book" / "references.bib"))  # refuses duplicate keys and broken syntax
_CITE = re.compile(r"\{cite(?::[a-z]+)?\}`([^`]+)`")


def _pages() -> list[Path]:
    return sorted((ROOT / "book").glob("*.md")) + sorted((ROOT / "notebooks").glob("*.py"))


def test_every_cited_key_is_in_the_bibliography():
    cited = {key.strip() for page in _pages() for keys in _CITE.findall(page.read_text()) for key in keys.split(",")}
    assert cited, "no citation found: the pattern no longer matches the pages"
    assert cited <= set(BIB.entries), sorted(cited - set(BIB.entries))


@pytest.mark.parametrize("key", ["hendrickx2010semeval", "derczynski2017wnut", "mayhew2024uner", "udewt216",
                                 "demarneffe2021ud", "allal2025smollm2", "gemmateam2025gemma3", "hui2024qwen25coder",
                                 "wang2020minilm", "song2020mpnet", "reimers2019sbert", "st2021allminilm",
                                 "st2021allmpnet", "vera2025embeddinggemma"])
def test_models_page_cites_every_dataset_and_model_with_an_address(key):
    cited = {k.strip() for keys in _CITE.findall((ROOT / "book" / "models_and_data.md").read_text())
             for k in keys.split(",")}
    assert key in cited
    assert BIB.entries[key].fields.get("url", "").startswith("https://")


def test_citation_cff_names_this_version_and_licence():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0"
    assert str(cff["version"]) == VERSION
    assert cff["license"] == "Apache-2.0" and cff["authors"] and cff["title"] and cff["message"]
    paper = BIB.entries["liang2025olas"]
    assert any(ref["title"] == paper.fields["title"] and ref["url"] == paper.fields["url"]
               for ref in cff["references"])
    licence = (ROOT / "LICENSE").read_text()
    assert "Apache License" in licence and "Version 2.0, January 2004" in licence
    assert "END OF TERMS AND CONDITIONS" in licence


def test_intro_bibtex_matches_the_bibliography_and_version():
    intro = (ROOT / "book" / "intro.md").read_text()
    block = intro.split("```bibtex", 1)[1].split("```", 1)[0]
    keys = re.findall(r"@\w+\{([^,]+),", block)
    assert "liang2025olas" in keys and "olacorebook2026" in keys
    assert set(keys) <= set(BIB.entries)
    assert "url       = {https://arxiv.org/abs/2511.05064}" in block
    assert f"version {VERSION}" in block.lower() and f"version {VERSION}" in intro.lower()


def _weights_table() -> dict[str, tuple[int, str]]:
    page = (ROOT / "book" / "models_and_data.md").read_text()
    section = page.split("### The weight files and their sha256", 1)[1].split("\n### ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [cell.strip().strip("`") for cell in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0] in ZOO:
            rows[cells[0]] = (int(cells[2].replace(",", "")), cells[3])
    return rows


def _digest(chunks) -> tuple[int, str]:
    digest, size = hashlib.sha256(), 0
    for chunk in chunks:
        digest.update(chunk)
        size += len(chunk)
    return size, digest.hexdigest()


def _read(path: Path):
    with path.open("rb") as handle:
        yield from iter(lambda: handle.read(1 << 22), b"")


def _installed(dist: str, path: str) -> Path:
    return Path(importlib.metadata.distribution(dist).locate_file(path))


def test_weights_table_lists_every_zoo_model():
    assert set(_weights_table()) == set(ZOO)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(ZOO))
def test_weight_file_digest_on_the_models_page(name, tmp_path):
    size, sha = _weights_table()[name]
    spec = ZOO[name]
    if spec.source == "gguf" and spec.sha256:  # checked part by part when built: the zoo's table is the reference
        joined = sum(part for part, _ in build_zoo.PART_SUMS.get(name, ())) or size
        assert (size, sha) == (joined, spec.sha256)
        if spec.delivery == "download":
            return
    if spec.delivery == "download":  # the zip's member, once built (the build checks the joined zip's sha256)
        if not is_built(name):
            pytest.skip(f"{name} is not built in the model cache")
        assert _digest(_read(zoo_folder(name) / "model.safetensors")) == (size, sha)
    elif spec.source == "gguf":
        paths = [_installed(dist, path) for dist, path in spec.files]
        assert _digest(chunk for path in paths for chunk in _read(path)) == (size, sha)
    elif spec.source == "folder":
        assert _digest(_read(_installed(*spec.files[0]) / "model.safetensors")) == (size, sha)
    else:  # a zip split into installed parts
        with tempfile.TemporaryFile(dir=tmp_path) as joined:
            for dist, path in spec.files:
                for chunk in _read(_installed(dist, path)):
                    joined.write(chunk)
            joined.seek(0)
            with zipfile.ZipFile(joined) as archive, archive.open(f"{spec.inner}/model.safetensors") as member:
                assert _digest(iter(lambda: member.read(1 << 22), b"")) == (size, sha)
