"""The ``paper`` profile, end to end, without a hub or a GPU (issue 24, item 4).

Every chapter executes at ``profile=paper`` with each paper model replaced by a tiny
random-weight stand-in of the same architecture (:mod:`paper_standins`, through
``OLACORE_MODEL_FOLDERS``) and every size shrunk to seconds (``OLACORE_SETTINGS_OVERRIDES``), so
that each code path the profile takes runs: the paper's models and their ALTI families, the
official axial backbone (``backbone="package"``), three seeds, the official proxy evaluation
schedule, zero-shot prompting through each model's chat template, and the report. Only the
sizes differ from a real paper run; the official-size backbone (448 M parameters) is built and
stepped once on its own, below.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from conftest import NOTEBOOKS, load_runner
from paper_standins import build_standins

from olacore.profiles import SETTINGS_OVERRIDES_ENV, settings
from olacore.settings import data_dir

_PROXY = {"iterations": 4, "batch_size": 4, "width": 4, "eval_every": 2}
_SYNTAX = {"num_train": 10, "num_dev": 4, "num_test": 4, "max_tokens": 16,
           "adapter": {"dim": 16, "depth": 1, "heads": 2, "ffn_mult": 1, "arc_dim": 16, "rel_dim": 8},
           "training": {"epochs": 1}}
_TASK = {"train": 10, "dev": 4, "test": 4}

#: Every size of the paper profile, shrunk; everything else (models, seeds, backbone kind, grids,
#: schedules, which models get ALTI, controls and zero-shot) stays the paper's.
SHRUNK = {
    "derivation": {"bench_layers": [2, 3], "bench_orders": [1, 2], "bench_size": 8, "bench_batch": 2,
                   "bench_repeats": 1},
    "qualitative": {"num_texts": 4},
    "quantitative": {"num_texts": 6, "proxy_num_texts": 6, "proxy_size": 16, "official_eval_every": 2,
                     "proxy": _PROXY},
    "controls": {"encoder_texts": 6, "causal_texts": 6, "encoder_noise": [0.1, 1.0], "causal_noise": [1.0],
                 "proxy_size": 16, "proxy": _PROXY},
    "syntax": _SYNTAX,
    "transfer": {"syntax": _SYNTAX, "re": _TASK, "ner": _TASK, "wnut": _TASK, "control_test": 4,
                 "similarity_texts": 6},
}


@pytest.fixture(scope="session")
def paper_run(tmp_path_factory):
    """Stand-ins built once, then every chapter executed at profile=paper into one folder."""
    root = tmp_path_factory.mktemp("paper")
    folders = build_standins(root / "models", data_dir())
    return root, folders


@pytest.fixture(scope="module")  # the variables are undone after this module: later tests see none of them
def paper_out(paper_run):
    root, folders = paper_run
    mp = pytest.MonkeyPatch()
    mp.setenv("OLACORE_MODEL_FOLDERS", json.dumps(folders))
    mp.setenv(SETTINGS_OVERRIDES_ENV, json.dumps(SHRUNK))
    mp.setenv("OLACORE_CACHE", str(root / "cache"))  # stand-in tensors and adapters stay out of the shared cache
    yield root / "generated"
    mp.undo()


def _finite_records(saved: Path) -> list[dict]:
    records = json.loads(saved.read_text())["records"]
    for record in records:
        numbers = [record["value"]] + [record[k] for k in ("paper", "chance") if record.get(k) is not None]
        assert all(isinstance(x, (int, float)) and math.isfinite(x) for x in numbers), record
    return records


@pytest.mark.slow
@pytest.mark.parametrize("source", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_chapter_executes_at_paper_profile_on_stand_ins(source, paper_out):
    out = paper_out
    load_runner().run_chapter(source, out, {"profile": "paper"})
    saved = out / "results" / f"{source.stem}.json"
    assert saved.is_file(), f"{source.stem} saved no results"
    assert json.loads(saved.read_text())["profile"] == "paper"
    records = _finite_records(saved)
    assert records, f"{source.stem} recorded nothing"
    if source.stem in ("06_syntax", "07_toa"):  # every paper model made it into the tables (02 records only pooled gaps)
        from olacore.profiles import PAPER_CAUSAL, PAPER_ENCODERS
        names = PAPER_ENCODERS + (PAPER_CAUSAL if source.stem != "06_syntax" else ())
        text = json.dumps(records)
        assert all(name in text for name in names), [n for n in names if n not in text]


@pytest.mark.slow
def test_official_size_backbone_builds_and_steps_once(monkeypatch):
    """The paper's adapter (official axial backbone, 448 M parameters at 2 input channels) takes one
    AdamW step on two 5-token sentences: finite loss, weights moved."""
    from olacore.toa.model import ToaModel
    from olacore.toa.train import optimiser_for, train_epoch

    monkeypatch.delenv(SETTINGS_OVERRIDES_ENV, raising=False)
    paper = settings("syntax", "paper", device="cpu")
    assert paper.adapter.backbone == "package"
    torch.manual_seed(0)
    model = ToaModel("dependency", 2, 5, paper.adapter)
    backbone = sum(p.numel() for p in model.backbone.parameters())
    assert 440e6 < backbone < 456e6, backbone  # "about 450 M", official models/adapters.py
    maps = [torch.rand(2, 5, 5).softmax(-1) for _ in range(2)]
    targets = [{"words": torch.arange(1, 5).numpy(), "heads": torch.tensor([0, 1, 1, 3]).numpy(),
                "rels": torch.tensor([0, 1, 2, 3]).numpy()} for _ in range(2)]
    before = model.backbone.embed.weight.detach().clone()
    optimiser, schedule = optimiser_for(model, paper.training, steps=1)
    loss = train_epoch(model, maps, targets, optimiser, schedule, paper.training, torch.Generator().manual_seed(0))
    assert math.isfinite(loss)
    assert not torch.equal(before, model.backbone.embed.weight)


def test_settings_overrides_apply_nested_and_refuse_unknown_fields(monkeypatch):
    monkeypatch.setenv(SETTINGS_OVERRIDES_ENV, json.dumps(SHRUNK))
    shrunk = settings("transfer", "paper")
    assert shrunk.syntax.adapter.dim == 16 and shrunk.syntax.adapter.backbone == "package"  # the rest stays the paper's
    assert shrunk.seeds == (0, 1, 2) and shrunk.re.train == 10
    monkeypatch.setenv(SETTINGS_OVERRIDES_ENV, json.dumps({"syntax": {"adapter": {"width": 3}}}))
    with pytest.raises(ValueError, match="OLACORE_SETTINGS_OVERRIDES") as error:
        settings("syntax", "paper")
    assert "width" in str(error.value)


def test_model_folders_refuse_a_folder_without_config(monkeypatch, tmp_path):
    from olacore.loading import model_kind

    monkeypatch.setenv("OLACORE_MODEL_FOLDERS", json.dumps({"bert-base-cased": str(tmp_path)}))
    with pytest.raises(ValueError, match="OLACORE_MODEL_FOLDERS") as error:
        model_kind("bert-base-cased")
    assert "config.json" in str(error.value)
