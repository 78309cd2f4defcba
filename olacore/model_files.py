"""The files of a local model folder: are they all there and whole, and which of them key the cache.

A folder is loaded only after :func:`check_model_folder` found its config, tokenizer files and whole weight files,
and its tokenizer is kept only after :func:`check_tokenizer` found it fit for the model (transformers otherwise
builds an empty tokenizer for a folder without tokenizer files and lets a truncated weight file escape as a
``SafetensorError``). Every failure is a :class:`ModelLoadError`, a one-line ``ValueError`` naming the folder, the
file and what to do. :func:`folder_fingerprint` hashes every file that can change what is extracted.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import zipfile
from pathlib import Path
from typing import Any, Callable, TypeVar

T = TypeVar("T")

__all__ = [
    "ModelLoadError",
    "TOKENIZER_FILES",
    "WEIGHT_SUFFIXES",
    "check_config_family",
    "check_loading_info",
    "check_model_folder",
    "check_tokenizer",
    "folder_fingerprint",
    "guard_load",
]

WEIGHT_SUFFIXES = frozenset({".safetensors", ".bin", ".pt", ".pth", ".gguf", ".h5", ".msgpack", ".ckpt"})
TOKENIZER_FILES = (
    "tokenizer.json",  # fast tokenizers (every tokenizer saved by transformers >= 4)
    "tokenizer.model", "spiece.model", "sentencepiece.bpe.model", "sentencepiece.model",  # SentencePiece
    "vocab.txt",  # WordPiece (BERT, MPNet, ELECTRA)
    "vocab.json",  # byte-level BPE (GPT-2, RoBERTa), with merges.txt
    "tiktoken.model", "tokenizer.tiktoken",
)
# Files that never change what is extracted: left out of the fingerprint.
_DOCUMENTATION = frozenset({"readme.md", "license", "license.txt", "license.md", "notice", ".gitattributes", ".gitignore"})
_DOCUMENTATION_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".svg", ".lock"})
_CONTENT_HASH_LIMIT = 64 * 2**20  # files up to 64 MB are hashed whole; larger (weights) by size and time
_PROBE_WORDS = "the of and to in is that it was for on with as by at from this"


class ModelLoadError(ValueError):
    """A model folder is incomplete or damaged, or its tokenizer does not fit the model (one line)."""


def _is_weight(path: Path) -> bool:
    return path.suffix.lower() in WEIGHT_SUFFIXES


def _fingerprinted(path: Path) -> bool:
    name = path.name.lower()
    return path.is_file() and name not in _DOCUMENTATION and path.suffix.lower() not in _DOCUMENTATION_SUFFIXES


_DIGESTS: dict[tuple, str] = {}  # (folder, names, sizes, mtimes) -> digest: a warm run rehashes nothing


def folder_fingerprint(path: str | os.PathLike) -> str:
    """Fingerprint of a local model folder, ``"folder:<absolute path>:<16 hex digits>"``: the cache key
    of everything extracted from it.

    Every regular file at the top of the folder counts but documentation (README, licence, images): settings
    (``config.json``, tokenizer files, ``generation_config.json``, ...) by name and content, weight files and other
    files over 64 MB by name, size and modification time. Sub-folders are not read by extraction and do not count.
    """
    folder = Path(path).expanduser().resolve()
    entries = sorted((p for p in folder.iterdir() if _fingerprinted(p)), key=lambda p: p.name)
    stats = tuple((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in entries)
    memo = (str(folder), stats)
    if memo not in _DIGESTS:
        digest = hashlib.sha256()
        for entry, (name, size, mtime) in zip(entries, stats):
            digest.update(f"\0{name}\0{size}\0".encode())
            if _is_weight(entry) or size > _CONTENT_HASH_LIMIT:
                digest.update(f"mtime:{mtime}".encode())
            else:
                digest.update(hashlib.sha256(entry.read_bytes()).digest())
        _DIGESTS[memo] = digest.hexdigest()[:16]
    return f"folder:{folder}:{_DIGESTS[memo]}"


def _check_safetensors(path: Path, folder: Path) -> None:
    """Raise ModelLoadError when a safetensors file is truncated or its header is unreadable."""
    size = path.stat().st_size
    what = f"the weight file {path.name} in {folder}"
    fix = "replace it with a complete copy (its download or copy was cut short?)"
    try:
        with open(path, "rb") as handle:
            head = handle.read(8)
            if len(head) < 8:
                raise ModelLoadError(f"{what} is damaged: {size} bytes, too short for a safetensors header; {fix}")
            header_size = int.from_bytes(head, "little")
            if header_size > size - 8:
                raise ModelLoadError(f"{what} is truncated: {size} bytes, but its header alone needs {header_size + 8}; {fix}")
            header = json.loads(handle.read(header_size))
    except (ValueError, UnicodeDecodeError) as error:
        if isinstance(error, ModelLoadError):
            raise
        raise ModelLoadError(f"{what} is damaged: its header is not valid JSON ({error}); {fix}") from None
    ends = [entry["data_offsets"][1] for name, entry in header.items()
            if name != "__metadata__" and isinstance(entry, dict) and "data_offsets" in entry]
    needed = 8 + header_size + max(ends, default=0)
    if size < needed:
        raise ModelLoadError(f"{what} is truncated: {size} bytes of the {needed} its header describes; {fix}")


def _check_zip_checkpoint(path: Path, folder: Path) -> None:
    """A torch ``.bin`` saved by torch >= 1.6 is a zip archive: its directory sits at the end."""
    with open(path, "rb") as handle:
        zipped = handle.read(4) == b"PK\x03\x04"
    if not zipped:  # the legacy pickle format: nothing cheap to check
        return
    try:
        with zipfile.ZipFile(path) as archive:
            archive.namelist()
    except (zipfile.BadZipFile, OSError) as error:
        raise ModelLoadError(
            f"the weight file {path.name} in {folder} is truncated or damaged ({error}); replace it with a complete copy"
        ) from None


def check_model_folder(path: str | os.PathLike) -> None:
    """Check, without loading anything, that a model folder has what extraction needs, whole.

    ``config.json`` is valid JSON; a tokenizer file is there (:data:`TOKENIZER_FILES`; ``vocab.json`` needs
    ``merges.txt``); a weight file and every shard an index lists exist; every safetensors file is as long as its
    header says (a torch zip checkpoint: its directory is readable).

    Raises:
        ModelLoadError: naming the folder, the missing or damaged file, and what to do.
    """
    folder = Path(path).expanduser().resolve()
    config = folder / "config.json"
    try:
        json.loads(config.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelLoadError(f"{folder} holds no config.json; it is not a Hugging Face model folder") from None
    except (ValueError, UnicodeDecodeError) as error:
        raise ModelLoadError(f"config.json in {folder} is damaged (not valid JSON: {error}); replace it with the model's own") from None
    names = {p.name for p in folder.iterdir() if p.is_file()}
    present = [name for name in TOKENIZER_FILES if name in names]
    if present == ["vocab.json"] and "merges.txt" not in names:
        raise ModelLoadError(f"{folder} has vocab.json but not merges.txt, its other byte-level BPE tokenizer file; "
                             "copy the model's tokenizer files into the folder")
    if not present:
        raise ModelLoadError(
            f"{folder} holds no tokenizer files (none of {', '.join(TOKENIZER_FILES)}); without them every word "
            f"would be an unknown token. Copy the model's tokenizer files into the folder "
            f"(e.g. AutoTokenizer.from_pretrained(<the model>).save_pretrained('{folder}'))"
        )
    for index in sorted(folder.glob("*.index.json")):
        try:
            shards = set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values())
        except (ValueError, KeyError, TypeError, UnicodeDecodeError) as error:
            raise ModelLoadError(f"the shard index {index.name} in {folder} is damaged ({type(error).__name__}: {error})") from None
        missing = sorted(shard for shard in shards if shard not in names)
        if missing:
            raise ModelLoadError(f"{folder} lacks the weight shards {', '.join(missing)} listed in {index.name}; "
                                 "copy every shard into the folder")
    weights = sorted(p for p in folder.iterdir() if p.is_file() and _is_weight(p))
    if not weights:
        raise ModelLoadError(f"{folder} holds no weight file (model.safetensors, pytorch_model.bin, ...); "
                             "copy the model's weights into the folder")
    for weight in weights:
        if weight.suffix == ".safetensors":
            _check_safetensors(weight, folder)
        elif weight.suffix in (".bin", ".pt", ".pth"):
            _check_zip_checkpoint(weight, folder)


def check_tokenizer(tokenizer: Any, config: Any, where: str) -> None:
    """Refuse a tokenizer that cannot be the model's: far smaller than its vocabulary, or blind to common words.

    ``config``: the model's (text) config, whose ``vocab_size`` is compared with ``len(tokenizer)``; ``where``: the
    model's name or folder, for the message.

    Raises:
        ModelLoadError: fewer than half of ``vocab_size`` entries, or common English words mapped to the unknown token.
    """
    vocab_size = getattr(config, "vocab_size", None)
    size = len(tokenizer)
    if isinstance(vocab_size, int) and vocab_size > 0 and size < vocab_size // 2:
        raise ModelLoadError(
            f"the tokenizer of {where} has {size} entries but the model's config.json says vocab_size "
            f"{vocab_size}: it is not this model's tokenizer, or its files are incomplete; copy the model's "
            f"own tokenizer files into the folder"
        )
    unk = getattr(tokenizer, "unk_token_id", None)
    if unk is not None:
        ids = tokenizer(_PROBE_WORDS, add_special_tokens=False)["input_ids"]
        unknown = sum(i == unk for i in ids)
        if unknown:
            raise ModelLoadError(
                f"the tokenizer of {where} maps {unknown} of {len(ids)} tokens of ordinary words "
                f"({_PROBE_WORDS!r}) to its unknown token {tokenizer.unk_token!r}: it is empty or not this "
                f"model's tokenizer; copy the model's own tokenizer files into the folder"
            )


def guard_load(where: str, what: str, call: Callable[[], T]) -> T:
    """``call()``, with any failure (but a :class:`ModelLoadError`) turned into a one-line :class:`ModelLoadError`.

    ``where``: the model's name or folder; ``what``: ``"config"``, ``"tokenizer"`` or ``"weights"``; the message names
    both and the original error's type and first line.
    """
    try:
        return call()
    except ModelLoadError:
        raise
    except Exception as error:  # noqa: BLE001 - every way a damaged or partial folder can fail to load
        text = str(error).strip()
        first = text.splitlines()[0] if text else ""
        raise ModelLoadError(
            f"cannot load the {what} of {where} ({type(error).__name__}: {first}); a file of the model is "
            f"damaged, partial or of another model: replace the folder with a complete copy"
        ) from error


_LAYER_COUNT_FIELDS = ("num_hidden_layers", "n_layer", "num_layers")
# One numbered block of a transformer stack: "encoder.layer.3.", "layers.12.", "h.4.", "blocks.0."
_NUMBERED_BLOCK = re.compile(r"(?:^|\.)(?:layer|layers|h|blocks|block)\.(\d+)\.")
# Buffers some checkpoints carry and no model reads (transformers drops them for its own families).
_IGNORED_BUFFERS = re.compile(r"(position_ids|inv_freq|masked_bias|attn\.bias)$")


def _block(key: str) -> int | None:
    found = _NUMBERED_BLOCK.search(key)
    return int(found.group(1)) if found else None


def _layer_field(config: Any) -> tuple[str, int] | None:
    """``(name, value)`` of the config field giving the number of layers (``num_hidden_layers``, ...)."""
    for name in _LAYER_COUNT_FIELDS:
        value = getattr(config, name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return name, value
    return None


def _shown(keys: list[str]) -> str:
    return ", ".join(keys[:3]) + (", ..." if len(keys) > 3 else "")


def check_loading_info(info: dict, where: str, model: Any = None, config: Any = None) -> None:
    """Refuse weights that disagree with the ``config.json`` that builds the model (transformers only warns).

    ``info``: the ``loading_info`` of ``from_pretrained(..., output_loading_info=True)``; ``model``: the loaded
    backbone and ``config``: its (text) config, to tell unused weights of the backbone (layers beyond the config's
    count, a module the config does not build) from a task head's (an LM or masked-LM head, never used by extraction);
    ``where``: for the message. The pooler (never used, often missing in masked-LM checkpoints) is not counted.

    Raises:
        ModelLoadError: parameters of the model missing from the weights, or weights of the backbone the model leaves
            unused; the message names ``config.json``, the field and what the weights hold.
    """
    field = _layer_field(config) if config is not None else None
    missing = sorted(key for key in info.get("missing_keys", ()) if "pooler" not in key)
    prefix = f"{getattr(model, 'base_model_prefix', '') or '<none>'}."
    children = {name for name, _ in model.named_children()} if model is not None else set()
    unused = []
    for key in sorted(info.get("unexpected_keys", ())):
        inner = key.removeprefix(prefix)
        if _IGNORED_BUFFERS.search(inner) or "pooler" in inner:
            continue
        if model is None or inner.split(".")[0] in children:
            unused.append(inner)
    if not missing and not unused:
        return
    fix = "use the config.json that came with the weights"
    if field is not None:
        name, value = field
        blocks = {_block(key) for key in unused} - {None}
        absent = {_block(key) for key in missing} - {None}
        if blocks and min(blocks) >= value:
            raise ModelLoadError(
                f"config.json of {where} says {name} {value}, but its weights hold {max(blocks) + 1} layers "
                f"({len(unused)} weights of layers {value}..{max(blocks)} would be left unused: {_shown(unused)}); "
                f"set {name} to {max(blocks) + 1} or {fix}")
        if absent and not unused and all(_block(key) is not None for key in missing):
            held = min(absent)
            raise ModelLoadError(
                f"config.json of {where} says {name} {value}, but its weights hold only {held} layers "
                f"(missing: {_shown(missing)}); set {name} to {held} or {fix}")
    if unused:
        raise ModelLoadError(
            f"config.json of {where} (model_type {getattr(config, 'model_type', '?')!r}) builds no place for "
            f"{len(unused)} weights of its checkpoint ({_shown(unused)}): the config describes another model or "
            f"another size; {fix}")
    raise ModelLoadError(
        f"the weights of {where} lack {len(missing)} parameters of the model its config.json describes "
        f"({_shown(missing)}): the weights are partial or of another model; {fix}")


def _model_types_of(architecture: str) -> set[str]:
    """The ``model_type`` values whose transformers classes include ``architecture`` (empty when unknown)."""
    from transformers.models.auto import modeling_auto

    found = set()
    for name in dir(modeling_auto):
        table = getattr(modeling_auto, name)
        if not name.endswith("_MAPPING_NAMES") or name == "CONFIG_MAPPING_NAMES" or not isinstance(table, dict):
            continue
        for model_type, classes in table.items():
            if architecture == classes or (isinstance(classes, (tuple, list)) and architecture in classes):
                found.add(model_type)
    return found


def check_config_family(config: Any, where: str) -> None:
    """Refuse a ``config.json`` whose ``model_type`` is not the family of its own ``architectures``.

    The weights were saved by the ``architectures`` class; a ``model_type`` of another family builds another network
    on them (``roberta`` on BERT weights loads with no missing weight, but numbers positions otherwise). Unknown
    architectures (custom code) and configs without ``architectures`` are not judged.

    Raises:
        ModelLoadError: naming ``config.json``, ``model_type`` and the family of the architectures.
    """
    model_type = getattr(config, "model_type", None)
    architectures = getattr(config, "architectures", None) or []
    families = [(a, _model_types_of(a)) for a in architectures]
    known = [(a, types) for a, types in families if types]
    if model_type and known and not any(model_type in types for _, types in known):
        architecture, types = known[0]
        family = " or ".join(repr(t) for t in sorted(types))
        raise ModelLoadError(
            f"config.json of {where} says model_type {model_type!r}, but its architectures field says the weights "
            f"were saved by {architecture}, a model_type {family} class; set model_type to {sorted(types)[0]!r} "
            f"or use the config.json that came with the weights")
