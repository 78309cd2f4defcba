"""Fetch the book's data from the official releases into ``$OLACORE_DATA`` (``make data``).

Usage::

    python scripts/fetch_data.py            # fetch what is missing, check every file
    OLACORE_DATA_URL=file:///path/to/mirror python scripts/fetch_data.py

The table ``scripts/data_sources.csv`` lists every file of the data folder: its path below the
folder, its sha256 and size, the address of its release (several, separated by spaces, are tried in
order until one gives the right file) and, where the release is an archive
(SemEval-2010 Task 8), the archive's name and the member that is the file; the sha256 is then the
member's. The data folder is the project's (:func:`olacore.settings.data_dir`: ``$OLACORE_DATA``,
default ``../shared/data`` beside the repository).

- A file already there with the right sha256 is left alone (with the data in place this is a
  no-op that writes nothing); one with another sha256 is refused, never overwritten.
- Missing files are downloaded and unpacked into a temporary folder beside the data folder,
  checked (size and sha256), and only when every one is right moved into place (one rename per
  folder, or per file where the folder already exists). A failed, truncated or corrupted
  download leaves nothing where ``OLACORE_DATA`` points, and the temporary folder is removed.
- ``OLACORE_DATA_URL`` (a ``file://``, ``http://`` or ``https://`` address) replaces the official
  addresses by a mirror laid out like the data folder: ``BASE/PATH`` for a plain file,
  ``BASE/FOLDER/ARCHIVE`` for an archive (the tests use a local ``file://`` copy).

Each refusal is one line naming the file, the expected and the found sha256 where there is one,
and what to do. Exit status 0 when every file is in place and right, 1 otherwise.
"""

from __future__ import annotations

import csv
import errno
import hashlib
import http.client
import os
import shutil
import sys
import tempfile
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

from olacore.settings import DATA_ENV, data_dir

TABLE = Path(__file__).resolve().parent / "data_sources.csv"
TABLE_NAME = "scripts/data_sources.csv"
URL_ENV = "OLACORE_DATA_URL"
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Source:
    """One row of the table: a file of the data folder and where its release lives."""

    path: str
    sha256: str
    size: int
    url: str
    archive: str
    member: str

    @property
    def folder(self) -> str:
        return self.path.split("/", 1)[0]


class FetchError(Exception):
    """A file could not be fetched or is not the release; the message says which and what to do."""


def read_table(table: Path = TABLE) -> list[Source]:
    """The rows of ``table``."""
    with table.open(newline="", encoding="utf-8") as handle:
        return [Source(row["path"], row["sha256"], int(row["bytes"]), row["url"], row["archive"], row["member"])
                for row in csv.DictReader(handle)]


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def mirror_base() -> str | None:
    """``$OLACORE_DATA_URL`` without a trailing slash, or ``None``; refused unless file/http/https."""
    value = os.environ.get(URL_ENV, "").strip()
    if not value:
        return None
    if urllib.parse.urlparse(value).scheme not in ("file", "http", "https"):
        raise FetchError(f"{URL_ENV}={value!r} is not a file://, http:// or https:// address; set it to the base "
                         f"address of a mirror of the data folder (e.g. file:///path/to/data), or unset it")
    return value.rstrip("/")


def download_urls(source: Source, base: str | None) -> tuple[str, ...]:
    """Where ``source`` is downloaded from, in the order tried: its release's addresses (the table's
    ``url`` cell, several separated by spaces), or the mirror under ``base`` alone."""
    if base is None:
        return tuple(source.url.split())
    relative = f"{source.folder}/{source.archive}" if source.archive else source.path
    return (f"{base}/{urllib.parse.quote(relative)}",)


class CutShort(Exception):
    """The server sent fewer bytes than it announced."""


def _download(url: str, target: Path) -> None:
    """Copy ``url`` into ``target``. Raises :class:`CutShort`, or OSError (URLError, HTTPError)."""
    request = urllib.request.Request(url, headers={"User-Agent": "olacore-fetch-data"})
    received = 0
    with urllib.request.urlopen(request, timeout=60) as response, target.open("wb") as out:
        announced = response.headers.get("Content-Length")
        try:
            for block in iter(lambda: response.read(_CHUNK), b""):
                out.write(block)
                received += len(block)
        except http.client.IncompleteRead as error:
            out.write(error.partial)
            received += len(error.partial)
            raise CutShort(f"got {received} of the {announced} bytes announced") from None
    if announced is not None and announced.isdigit() and int(announced) != received:
        raise CutShort(f"got {received} of the {announced} bytes announced")


def _expected(source: Source) -> str:
    """The expected digest, in words: the file's, or the archive member's."""
    if source.archive:
        return f"sha256 {source.sha256} of its member {source.member}"
    return f"sha256 {source.sha256}, {source.size} bytes"


def _check(source: Source, staged: Path, origin: str, data: Path) -> None:
    """Refuse ``staged`` unless its size and sha256 are the table's."""
    found = sha256_of(staged)
    if found == source.sha256:
        return
    size = staged.stat().st_size
    what = (f"the download was cut short ({size} of {source.size} bytes)" if size < source.size
            else "the download is damaged or the release changed")
    raise FetchError(
        f"{source.path}: sha256 {found}, expected {source.sha256} ({origin}): {what}. Nothing was written "
        f"to {data}; run `make data` again, and if it fails the same way check the address in {TABLE_NAME}")


def _fetch_into(stage: Path, sources: list[Source], base: str | None, data: Path) -> list[str]:
    """Download, unpack and check ``sources`` under ``stage/tree``; the refusals (empty: all good).

    Sources sharing their addresses (the members of one archive) are downloaded once; where an address
    fails, the next one of the row is tried, and the refusals of every address are reported."""
    (stage / "downloads").mkdir()
    groups: dict[tuple[str, ...], list[Source]] = {}
    for source in sources:
        groups.setdefault(download_urls(source, base), []).append(source)
    errors: list[str] = []
    for number, (urls, group) in enumerate(groups.items()):
        tried: list[str] = []
        for attempt, url in enumerate(urls):
            failed = _fetch_group(stage / "downloads" / f"{number}-{attempt}", url, group, stage / "tree", data)
            if not failed:
                break
            tried.extend(failed)
        else:
            errors.extend(tried)
    return errors


def _fetch_group(fetched: Path, url: str, group: list[Source], tree: Path, data: Path) -> list[str]:
    """Download ``url`` into ``fetched`` and stage every file of ``group`` from it; the refusals."""
    names = ", ".join(source.path for source in group)
    try:
        _download(url, fetched)
    except CutShort as error:
        found = sha256_of(fetched)
        return [f"{source.path}: {error} from {url}, sha256 {found} (expected {_expected(source)}): the download "
                f"was cut short. Nothing was written to {data}; run `make data` again" for source in group]
    except (OSError, ValueError) as error:  # URLError and HTTPError are OSErrors
        reason = getattr(error, "reason", None) or error
        return [f"{names}: cannot download {url} ({reason}). Nothing was written to {data}; check the network "
                f"(or {URL_ENV}) and run `make data` again"]
    errors = []
    for source in group:
        staged = tree / source.path
        staged.parent.mkdir(parents=True, exist_ok=True)
        try:
            if source.archive:
                origin = f"member {source.member} of {source.archive} from {url}"
                try:
                    with zipfile.ZipFile(fetched) as archive, archive.open(source.member) as member, \
                            staged.open("wb") as out:
                        shutil.copyfileobj(member, out, _CHUNK)
                except KeyError:
                    raise FetchError(
                        f"{source.path}: {source.archive} from {url} has no member {source.member}; the archive "
                        f"is not the release. Nothing was written to {data}; check the address in {TABLE_NAME}"
                    ) from None
                except (zipfile.BadZipFile, EOFError, zipfile.LargeZipFile) as error:
                    raise FetchError(
                        f"{source.path}: {source.archive} from {url} (sha256 {sha256_of(fetched)}) is not a "
                        f"readable zip archive ({error}; expected {_expected(source)}): the download is damaged "
                        f"or cut short. Nothing was written to {data}; run `make data` again") from None
            else:
                origin = f"from {url}"
                shutil.copyfile(fetched, staged)
            _check(source, staged, origin, data)
        except FetchError as error:
            errors.append(str(error))
    return errors


def _place(staged: Path, final: Path) -> None:
    """Move ``staged`` (a file or folder) to ``final`` in one rename; across file systems (the data
    folder a mount point), copy it beside ``final`` first and rename that."""
    try:
        os.rename(staged, final)
    except OSError as error:
        if error.errno != errno.EXDEV:
            raise
        beside = final.with_name(f".{final.name}.fetch-part")  # a leftover of a killed run is replaced
        if beside.is_dir():
            shutil.rmtree(beside)
        beside.unlink(missing_ok=True)
        if staged.is_dir():
            shutil.copytree(staged, beside)
        else:
            shutil.copyfile(staged, beside)
        os.rename(beside, final)


def _move_into_place(tree: Path, data: Path) -> None:
    """Move every checked folder (or file, where its folder exists) from ``tree`` into ``data``."""
    data.mkdir(parents=True, exist_ok=True)
    for folder in sorted(tree.iterdir()):
        target = data / folder.name
        if not target.exists():
            _place(folder, target)  # one atomic step: the whole folder or nothing
            continue
        for staged in sorted(path for path in folder.rglob("*") if path.is_file()):
            final = target / staged.relative_to(folder)
            final.parent.mkdir(parents=True, exist_ok=True)
            _place(staged, final)  # atomic per file (the file is missing, checked before)


def fetch(sources: list[Source] | None = None, data: Path | None = None, out=sys.stdout) -> list[str]:
    """Bring ``data`` (default: the project's data folder) to the table; the refusals (empty: done)."""
    sources = read_table() if sources is None else sources
    data = data_dir() if data is None else data
    try:
        base = mirror_base()
    except FetchError as error:
        return [str(error)]
    errors: list[str] = []
    missing: list[Source] = []
    for source in sources:
        target = data / source.path
        if not target.exists():
            missing.append(source)
            continue
        found = sha256_of(target) if target.is_file() else "none (not a file)"
        if found != source.sha256:
            errors.append(f"{target}: sha256 {found}, expected {source.sha256}: it is not the release file. Delete "
                          f"it (or point {DATA_ENV} at another folder) and run `make data` again")
    if errors or not missing:
        if not errors:
            print(f"make data: all {len(sources)} files are in {data} with the sha256 of {TABLE_NAME}; "
                  "nothing to fetch", file=out)
        return errors
    parent = data.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        stage = Path(tempfile.mkdtemp(prefix=f".{data.name}.fetch-", dir=parent))
    except OSError as error:
        return [f"{data}: cannot create a temporary folder beside it in {parent} ({error.strerror or error}); "
                f"point {DATA_ENV} at a folder whose parent is writable and run `make data` again"]
    try:
        print(f"make data: fetching {len(missing)} of {len(sources)} files into {data}", file=out)
        errors = _fetch_into(stage, missing, base, data)
        if not errors:
            _move_into_place(stage / "tree", data)
            for source in missing:
                print(f"  {source.path}  sha256 {source.sha256}  ok", file=out)
    except OSError as error:
        errors = [f"{data}: {error}; nothing half-written was left there; free some space or fix the "
                  f"permissions and run `make data` again"]
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return errors


def main(argv: list[str] | None = None) -> int:
    if argv:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    errors = fetch()
    for line in errors:
        print(f"make data: {line}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
