"""Random-init twins: a model's architecture with fresh weights, initialised once per (model, seed) and kept.

A twin (:func:`random_init`) is re-initialised by Hugging Face's own initialiser under a fixed seed (the official
``load_method="random_all"``), which takes minutes for a large model on a CPU; its weights are therefore saved in the
tensor store (:class:`olacore.store.TensorStore`, one safetensors entry, written atomically) under a key of the
trained model's fingerprint, the seed, the torch and transformers versions and the :func:`olacore.store.code_digest`
of this module, and read back, bit for bit, afterwards. The twin's fingerprint, which keys its cached maps, names
the same initialiser digest.

A twin also has a **name**, :func:`twin_name` (``"minilm-l6 [random init seed=0]"``), that
:func:`olacore.loading.load_model` and :func:`olacore.loading.model_fingerprint` accept like a zoo name: a worker
process can load it, and its cached maps are found by its fingerprint without building it.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from typing import TYPE_CHECKING, Any

import torch
import torch.nn as nn

from olacore.store import TensorStore, code_digest

if TYPE_CHECKING:  # pragma: no cover - loading imports this module lazily
    from olacore.loading import LoadedModel

__all__ = ["random_init", "twin_name", "parse_twin_name", "twin_fingerprint", "twin_key", "load_twin"]

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
    """A digest of what draws a twin's weights: the torch and transformers versions (their initialisers) and the
    code of this module."""
    import transformers

    return TensorStore.key(torch=torch.__version__, transformers=transformers.__version__,
                           code=code_digest(__name__))[:16]


def twin_fingerprint(fingerprint: str, seed: int) -> str:
    """The fingerprint of the twin of a model of fingerprint ``fingerprint`` (keys the twin's cached maps):
    ``"<fingerprint>|control:random init seed=S|init:<digest of the initialiser>"``, so that another torch or
    transformers (other initial weights) never reads the maps of an earlier twin."""
    return f"{identity('', fingerprint, _TAG.format(seed=seed))[1]}|init:{_initialiser()}"


def twin_key(fingerprint: str, seed: int) -> str:
    """The store key of a twin's saved weights: the trained model's fingerprint, the seed and the initialiser's
    digest (torch and transformers versions, the code of this module)."""
    return TensorStore.key(kind="random-init-twin", model=fingerprint, seed=seed, initialiser=_initialiser())


def _fresh_state(model: "LoadedModel", seed: int) -> dict[str, torch.Tensor]:
    """The freshly initialised tensors of every entry of ``model.backbone``'s state dict (float32, CPU, own memory)."""
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
    """The same architecture with freshly initialised weights (Hugging Face's own initialiser), seeded; saved once.

    The weights come from ``store`` (default ``TensorStore()``) when a twin of this model fingerprint and seed was
    made before (:func:`twin_key`), else they are initialised and saved there (a cache that cannot be written only
    warns). ``name`` gets ``" [random init seed=S]"`` (:func:`twin_name`), the fingerprint
    ``"|control:random init seed=S|init:<digest>"`` (:func:`twin_fingerprint`); ``model`` is never modified.

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
    """:func:`olacore.loading.load_model` of a :func:`twin_name`: the model, then its (saved) twin.

    Raises:
        ValueError: ``name`` is not a twin name; as :func:`olacore.loading.load_model` for its model.
    """
    from olacore.loading import load_model

    parsed = parse_twin_name(name)
    if parsed is None:
        raise ValueError(f"{name!r} is not a twin name; give '<model> [random init seed=<S>]'")
    base, seed = parsed
    return random_init(load_model(base, device=device), seed)
