"""``make data`` (scripts/fetch_data.py) against a local mirror of the releases (``file://``, loopback).

The mirror is built from the project's own data folder: plain files copied, SemEval-2010 Task 8 packed
into a zip laid out as the release archive. Digests in the assertions are computed here from the
bytes, never read back from the script.
"""

from __future__ import annotations

import errno
import hashlib
import http.server
import os
import shutil
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import pytest

import fetch_data
from olacore.settings import data_dir

ROOT = Path(__file__).resolve().parent.parent
ROWS = fetch_data.read_table()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture(scope="module")
def originals() -> Path:
    folder = data_dir()
    if not all((folder / row.path).is_file() for row in ROWS):
        pytest.skip(f"the data folder {folder} (OLACORE_DATA) is incomplete")
    return folder


def build_mirror(originals: Path, mirror: Path, change=None) -> Path:
    """A mirror of the releases under ``mirror``; ``change(path, bytes) -> bytes | None`` edits a file
    (``None``: leave it out)."""
    change = change or (lambda path, data: data)
    archives: dict[Path, list[tuple[str, bytes]]] = {}
    for row in ROWS:
        data = change(row.path, (originals / row.path).read_bytes())
        if data is None:
            continue
        if row.archive:
            archives.setdefault(mirror / row.folder / row.archive, []).append((row.member, data))
        else:
            (mirror / row.path).parent.mkdir(parents=True, exist_ok=True)
            (mirror / row.path).write_bytes(data)
    for path, members in archives.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, data in members:
                archive.writestr(name, data)
    return mirror


def run(monkeypatch, capsys, data: Path, base: str) -> tuple[int, str, str]:
    monkeypatch.setenv("OLACORE_DATA", str(data))
    monkeypatch.setenv("OLACORE_DATA_URL", base)
    code = fetch_data.main([])
    out, err = capsys.readouterr()
    return code, out, err


def assert_nothing_left(tmp_path: Path, data: Path) -> None:
    """Nothing where OLACORE_DATA points, and no temporary folder beside it."""
    assert not data.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mirror"]


def test_table_lists_every_file_of_the_data_folder_with_its_digest(originals):
    listed = {row.path for row in ROWS}
    present = {str(p.relative_to(originals)) for p in originals.rglob("*") if p.is_file()} - {"README.md"}
    assert listed == present
    for row in ROWS:
        data = (originals / row.path).read_bytes()
        assert (sha(data), len(data)) == (row.sha256, row.size), row.path
        assert all(url.startswith("https://") for url in row.url.split())
        assert bool(row.archive) == bool(row.member)


def test_clean_folder_gets_every_file_equal_to_the_release(originals, tmp_path, monkeypatch, capsys):
    mirror = build_mirror(originals, tmp_path / "mirror")
    data = tmp_path / "data"
    code, out, err = run(monkeypatch, capsys, data, mirror.as_uri())
    assert code == 0, err
    for row in ROWS:
        assert (data / row.path).read_bytes() == (originals / row.path).read_bytes(), row.path
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "mirror"]
    stamps = {row.path: (data / row.path).stat().st_mtime_ns for row in ROWS}
    shutil.rmtree(mirror)  # a second run needs no source at all
    code, out, err = run(monkeypatch, capsys, data, mirror.as_uri())
    assert code == 0, err
    assert {row.path: (data / row.path).stat().st_mtime_ns for row in ROWS} == stamps


def test_data_in_place_is_a_no_op_that_writes_nothing(originals, tmp_path, monkeypatch, capsys):
    beside = sorted(p.name for p in originals.parent.iterdir())
    code, out, err = run(monkeypatch, capsys, originals, (tmp_path / "no-mirror").as_uri())
    assert code == 0, err
    assert sorted(p.name for p in originals.parent.iterdir()) == beside
    assert not (tmp_path / "no-mirror").exists()


def test_missing_files_are_added_beside_the_ones_in_place(originals, tmp_path, monkeypatch, capsys):
    mirror = build_mirror(originals, tmp_path / "mirror")
    data = tmp_path / "data"
    shutil.copytree(originals / "ud_english_ewt", data / "ud_english_ewt")
    (data / "wnut17").mkdir()
    shutil.copy(originals / "wnut17" / "README.md", data / "wnut17" / "README.md")
    kept = {p: p.stat().st_ino for p in data.rglob("*") if p.is_file()}
    code, out, err = run(monkeypatch, capsys, data, mirror.as_uri())
    assert code == 0, err
    assert {p: p.stat().st_ino for p in kept} == kept
    for row in ROWS:
        assert (data / row.path).read_bytes() == (originals / row.path).read_bytes(), row.path


def _flip(data: bytes) -> bytes:
    changed = bytearray(data)
    changed[len(changed) // 2] ^= 0x01
    return bytes(changed)


@pytest.mark.parametrize("path", ["wnut17/wnut17train.conll", "semeval2010_task8/TRAIN_FILE.TXT"])
def test_corrupted_download_names_the_file_both_digests_and_what_to_do(originals, tmp_path, monkeypatch,
                                                                       capsys, path):
    corrupted = _flip((originals / path).read_bytes())
    mirror = build_mirror(originals, tmp_path / "mirror",
                          lambda p, data: corrupted if p == path else data)
    data = tmp_path / "data"
    code, out, err = run(monkeypatch, capsys, data, mirror.as_uri())
    assert code == 1
    row = next(row for row in ROWS if row.path == path)
    line = next(line for line in err.splitlines() if path in line)
    assert row.sha256 in line and sha(corrupted) in line and "make data" in line
    assert_nothing_left(tmp_path, data)


def test_file_missing_at_the_source_is_named(originals, tmp_path, monkeypatch, capsys):
    path = "ud_english_ewt/en_ewt-ud-dev.conllu"
    mirror = build_mirror(originals, tmp_path / "mirror", lambda p, data: None if p == path else data)
    data = tmp_path / "data"
    code, out, err = run(monkeypatch, capsys, data, mirror.as_uri())
    assert code == 1
    assert [line for line in err.splitlines() if path in line and "make data" in line]
    assert_nothing_left(tmp_path, data)


def test_truncated_download_is_refused(originals, tmp_path, monkeypatch, capsys):
    path = "uner_english_ewt/en_ewt-ud-test.iob2"
    short = (originals / path).read_bytes()[:100_000]
    mirror = build_mirror(originals, tmp_path / "mirror", lambda p, data: short if p == path else data)
    archive = next(mirror.rglob("*.zip"))
    archive.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    data = tmp_path / "data"
    code, out, err = run(monkeypatch, capsys, data, mirror.as_uri())
    assert code == 1
    row = next(row for row in ROWS if row.path == path)
    line = next(line for line in err.splitlines() if path in line)
    assert row.sha256 in line and sha(short) in line and "make data" in line
    for row in ROWS:
        if row.archive:  # the cut archive names each file it should hold and its expected digest
            assert [line for line in err.splitlines() if row.path in line and row.sha256 in line]
    assert_nothing_left(tmp_path, data)


class _ShortServer(http.server.BaseHTTPRequestHandler):
    """Announces every mirror file's full length and sends half of it."""

    mirror: Path

    def do_GET(self):  # noqa: N802 (http.server's name)
        path = self.mirror / self.path.lstrip("/")
        if not path.is_file():
            self.send_error(404)
            return
        body = path.read_bytes()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[: len(body) // 2])
        self.close_connection = True

    def log_message(self, *args):
        pass


def test_connection_closed_before_the_announced_length_is_refused(originals, tmp_path, monkeypatch, capsys):
    mirror = build_mirror(originals, tmp_path / "mirror")
    handler = type("Handler", (_ShortServer,), {"mirror": mirror})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        data = tmp_path / "data"
        code, out, err = run(monkeypatch, capsys, data, f"http://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
        server.server_close()
    assert code == 1
    path = "wnut17/emerging.dev.conll"
    original = (originals / path).read_bytes()
    row = next(row for row in ROWS if row.path == path)
    line = next(line for line in err.splitlines() if path in line)
    assert row.sha256 in line and sha(original[: len(original) // 2]) in line and "make data" in line
    assert_nothing_left(tmp_path, data)


def test_wrong_file_in_place_is_refused_and_kept(originals, tmp_path, monkeypatch, capsys):
    mirror = build_mirror(originals, tmp_path / "mirror")
    data = tmp_path / "data"
    path = "wnut17/emerging.dev.conll"
    (data / "wnut17").mkdir(parents=True)
    (data / path).write_bytes(b"edited by hand\n")
    code, out, err = run(monkeypatch, capsys, data, mirror.as_uri())
    assert code == 1
    line = next(line for line in err.splitlines() if path in line)
    row = next(row for row in ROWS if row.path == path)
    assert row.sha256 in line and sha(b"edited by hand\n") in line and "make data" in line
    assert (data / path).read_bytes() == b"edited by hand\n"


def test_mirror_address_that_is_no_url_names_the_setting(tmp_path, monkeypatch, capsys):
    code, out, err = run(monkeypatch, capsys, tmp_path / "data", "ftp://example.org/data")
    assert code == 1
    assert "OLACORE_DATA_URL" in err
    assert not (tmp_path / "data").exists()


def test_make_data_runs_the_script():
    dry = subprocess.run(["make", "-n", "data", f"PY={sys.executable}"], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "MAKEFLAGS": ""})
    assert dry.returncode == 0, dry.stderr
    assert f"{sys.executable} scripts/fetch_data.py" in dry.stdout


def test_data_folder_on_another_file_system_still_gets_whole_files(originals, tmp_path, monkeypatch, capsys):
    """A rename across file systems fails (EXDEV): each folder is copied beside its place, then renamed."""
    rename = os.rename

    def cross_device(source, target):
        if ".fetch-part" not in str(source):
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        rename(source, target)

    monkeypatch.setattr(fetch_data.os, "rename", cross_device)
    mirror = build_mirror(originals, tmp_path / "mirror")
    data = tmp_path / "data"
    code, out, err = run(monkeypatch, capsys, data, mirror.as_uri())
    assert code == 0, err
    for row in ROWS:
        assert (data / row.path).read_bytes() == (originals / row.path).read_bytes(), row.path
    assert not [p for p in data.rglob("*") if ".fetch-part" in p.name]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "mirror"]


def test_next_address_is_tried_when_one_fails(originals, tmp_path, monkeypatch, capsys):
    mirror = build_mirror(originals, tmp_path / "mirror")
    dead = (tmp_path / "gone").as_uri()
    rows = [fetch_data.Source(row.path, row.sha256, row.size,
                              f"{dead}/{row.path} {mirror.as_uri()}/{row.path}", "", "")
            for row in ROWS if not row.archive][:2]
    monkeypatch.delenv("OLACORE_DATA_URL", raising=False)
    data = tmp_path / "data"
    assert fetch_data.fetch(rows, data) == []
    for row in rows:
        assert (data / row.path).read_bytes() == (originals / row.path).read_bytes()
    both_dead = [fetch_data.Source(row.path, row.sha256, row.size, f"{dead}/a {dead}/b", "", "") for row in rows[:1]]
    errors = fetch_data.fetch(both_dead, tmp_path / "other")
    assert len(errors) == 2 and f"{dead}/a" in errors[0] and f"{dead}/b" in errors[1]
    assert not (tmp_path / "other").exists()
