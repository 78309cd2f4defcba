"""Shared test helpers, and the smoke-built book that the notebook and browser tests share."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

torch.set_num_threads(max(1, min(2, torch.get_num_threads())))

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.append(str(ROOT / "notebooks"))  # chapter_code: the chapters' own modules, as the runner's kernel finds them
from notebook_manifest import chapter_sources  # noqa: E402

NOTEBOOKS = chapter_sources(ROOT / "notebooks")  # main chapters, appendices, the report page last


@pytest.fixture
def one_thread():
    """Small networks on a shared 2-core machine train fastest on one thread."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def random_attention(generator: torch.Generator, batch: int, layers: int, size: int,
                     causal: bool, dtype=torch.float64) -> torch.Tensor:
    """Random row-stochastic ``(batch, layers, size, size)`` maps, lower-triangular if causal."""
    logits = torch.randn(batch, layers, size, size, generator=generator, dtype=dtype) * 2
    if causal:
        logits = logits.masked_fill(~torch.ones(size, size, dtype=torch.bool).tril(), float("-inf"))
    return logits.softmax(-1)


def sink_map(size: int, seed: int) -> torch.Tensor:
    """A row-stochastic causal map with a sink on the first token, ``(1, size, size)``."""
    gen = torch.Generator().manual_seed(seed)
    maps = torch.rand(size, size, generator=gen).tril() + 0.05 * torch.eye(size)
    maps[:, 0] += 3.0
    maps = maps.tril()
    return (maps / maps.sum(-1, keepdim=True))[None]


def load_runner():
    """``scripts/execute_notebooks.py`` as a module (it is a script, not part of the package)."""
    spec = importlib.util.spec_from_file_location("execute_notebooks", ROOT / "scripts" / "execute_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def book_copy(tmp_path_factory):
    """A copy of the book sources; the smoke-executed chapters land in its book/generated."""
    root = tmp_path_factory.mktemp("book")
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy(ROOT / name, root / name)
    shutil.copytree(ROOT / "book", root / "book",
                    ignore=shutil.ignore_patterns("generated", "generated.manifest.json", "_build"))
    shutil.copytree(ROOT / "scripts", root / "scripts", ignore=shutil.ignore_patterns("__pycache__"))  # Sphinx extension
    return root


def execute_smoke_chapter(book_copy: Path, source: Path) -> dict:
    """Execute one chapter at profile=smoke into ``book_copy`` (skipped if this session already did)."""
    return load_runner().run_chapter(source, book_copy / "book" / "generated", {"profile": "smoke"})


@pytest.fixture(scope="session")
def smoke_book(book_copy):
    """The book built strictly (warnings are errors) from every chapter executed at profile=smoke.

    Built once per session; chapters already executed by the notebook tests are not re-run.
    With ``OLACORE_BUILT_BOOK=<folder>/_build/html`` set, that already built book is used
    instead (e.g. to open the default-profile book in the browser test).
    Returns ``SimpleNamespace(root, html, returncode, log)``.
    """
    built = os.environ.get("OLACORE_BUILT_BOOK")
    if built:
        html = Path(built).resolve()
        if not (html / "index.html").exists():
            pytest.fail(f"OLACORE_BUILT_BOOK={built} holds no index.html: point it at a built book's _build/html")
        return SimpleNamespace(root=html.parent.parent, html=html, returncode=0, log="")
    for source in NOTEBOOKS:
        try:
            execute_smoke_chapter(book_copy, source)
        except Exception as error:
            pytest.fail(f"chapter {source.name} failed at profile=smoke:\n{error}", pytrace=False)
    done = subprocess.run(
        [str(Path(sys.executable).parent / "jupyter-book"), "build", str(book_copy),
         "--warningiserror", "--nitpick", "--keep-going"],
        capture_output=True, text=True, timeout=900,
    )
    return SimpleNamespace(root=book_copy, html=book_copy / "_build" / "html", returncode=done.returncode,
                           log=done.stdout[-4000:] + done.stderr[-4000:])


def store_in(root: Path):
    """``olacore.store.TensorStore`` with ``root`` as its default folder: monkeypatch it where the package makes its
    store, so that a test's cache lives in ``tmp_path`` (a subclass, so its static ``key`` stays)."""
    from olacore.store import TensorStore

    class StoreInTmp(TensorStore):
        def __init__(self, root_=None):
            super().__init__(root)

    return StoreInTmp
