"""Controls really change the weights (chapter_code.controls, chapter 05); the control experiments' tables."""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")

from chapter_code.controls import (  # noqa: E402
    perturb_weights,
    control_pair,
    control_variants,
    controls_proxy,
    layer_stack,
    random_init,
    shuffle_layers,
)
from olacore.loading import LoadedModel  # noqa: E402


@pytest.fixture(autouse=True)
def twins_in_tmp(tmp_path, monkeypatch):
    """Random-init twins are saved in the store: keep a test's in its ``tmp_path``."""
    from conftest import store_in
    from olacore import loading as twins

    monkeypatch.setattr(twins, "TensorStore", store_in(tmp_path / "twins"))


@pytest.fixture(scope="module")
def tiny_model() -> LoadedModel:
    """A 4-layer BERT with non-default weights, wrapped as a LoadedModel (no files needed)."""
    config = transformers.BertConfig(
        vocab_size=50, hidden_size=16, num_hidden_layers=4, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=32, attn_implementation="eager",
    )
    torch.manual_seed(123)
    backbone = transformers.BertModel(config, add_pooling_layer=False)
    with torch.no_grad():  # stand-in for training: move every weight away from its init
        for p in backbone.parameters():
            p.add_(torch.randn_like(p) * 0.5)
    backbone.eval()
    return LoadedModel(name="tiny", tokenizer=None, backbone=backbone, is_causal=False, num_layers=4,
                       num_heads=2, max_length=32, device=torch.device("cpu"), fingerprint="tiny-fp")


def _params(model: LoadedModel) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.backbone.state_dict().items()}


def test_random_init_differs_and_keeps_shapes(tiny_model):
    before = _params(tiny_model)
    control = random_init(tiny_model, seed=0)
    after = _params(control)
    assert control.fingerprint != tiny_model.fingerprint
    assert after.keys() == before.keys()
    weights = [k for k in before if k.endswith("weight") and before[k].ndim == 2]
    assert all(after[k].shape == before[k].shape for k in before)
    assert all(not torch.allclose(after[k], before[k]) for k in weights)
    assert all(torch.equal(v, _params(tiny_model)[k]) for k, v in before.items())  # original untouched
    same = random_init(tiny_model, seed=0)
    assert all(torch.equal(v, _params(same)[k]) for k, v in after.items())  # seeded
    ids = torch.tensor([[1, 2, 3, 4]])
    out = control.backbone(input_ids=ids, output_attentions=True)
    assert len(out.attentions) == 4


def test_shuffle_is_a_permutation_of_layers(tiny_model):
    control, permutation = shuffle_layers(tiny_model, seed=1)
    assert sorted(permutation) == [0, 1, 2, 3] and permutation != [0, 1, 2, 3]
    assert control.fingerprint != tiny_model.fingerprint
    _, old_layers = layer_stack(tiny_model.backbone, 4)
    _, new_layers = layer_stack(control.backbone, 4)
    for position, source in enumerate(permutation):
        old = old_layers[source].state_dict()
        new = new_layers[position].state_dict()
        assert all(torch.equal(old[k], new[k]) for k in old)
    moved = [i for i, s in enumerate(permutation) if s != i]
    assert moved
    first = moved[0]
    q_old = old_layers[first].state_dict()["attention.self.query.weight"]
    q_new = new_layers[first].state_dict()["attention.self.query.weight"]
    assert not torch.equal(q_old, q_new)
    # everything outside the layer stack is unchanged
    before, after = _params(tiny_model), _params(control)
    assert all(torch.equal(before[k], after[k]) for k in before if not k.startswith("encoder.layer"))


@pytest.mark.parametrize("scale", [0.0, 0.1, 1.0])
def test_noise_has_the_asked_relative_scale(tiny_model, scale):
    control = perturb_weights(tiny_model, scale, seed=0)
    assert control.fingerprint != tiny_model.fingerprint
    before, after = _params(tiny_model), _params(control)
    for name, old in before.items():
        if old.numel() < 256:
            continue
        delta = after[name] - old
        ratio = float(delta.std() / old.std())
        assert ratio == pytest.approx(scale, rel=0.15, abs=1e-12), name


def test_noise_rejects_negative_scale(tiny_model):
    with pytest.raises(ValueError, match="scale"):
        perturb_weights(tiny_model, -0.1)


def test_a_perturbed_models_fingerprint_holds_the_code_that_built_it(tiny_model, tmp_path, monkeypatch):
    # chapter_code/controls.py builds the perturbed models whose maps are cached under their fingerprints: an edit
    # of its code (or of the package code it imports) must change them; an edit of its docstrings must not
    from olacore import store

    original = store.code_digest("chapter_code.controls")
    built = {perturb_weights(tiny_model, 0.1).fingerprint, shuffle_layers(tiny_model)[0].fingerprint}
    assert all(fp.endswith(f"|code:{original[:16]}") for fp in built)
    assert {"chapter_code.controls", "olacore.loading"} <= set(store.code_modules("chapter_code.controls"))
    source = store._module_file("chapter_code.controls").read_text(encoding="utf-8")
    for changes, edited in ((True, source.replace("std = parameter.float().std()", "std = 2 * parameter.float().std()")),
                            (False, source.replace('"""Add Gaussian noise', '"""Add some Gaussian noise'))):
        assert edited != source
        folder = tmp_path / f"edit{int(changes)}"
        folder.mkdir()
        (folder / "controls.py").write_text(edited, encoding="utf-8")
        monkeypatch.setitem(store._ROOTS, "chapter_code", folder)
        monkeypatch.setattr(store, "_SOURCES", {})
        monkeypatch.setattr(store, "_DIGESTS", {})
        assert (store.code_digest("chapter_code.controls") != original) == changes


def test_control_variants_come_one_at_a_time_in_order(tiny_model):
    seen = [(control, scale, model.fingerprint) for control, scale, model in
            control_variants(tiny_model, noise_scales=(0.0, 0.3, 1.0), seed=2)]
    assert [c for c, _, _ in seen] == ["trained", "random init", "shuffled layers", "noise", "noise"]
    assert seen[0][1] == 0.0 and seen[0][2] == tiny_model.fingerprint
    assert [s for c, s, _ in seen if c == "noise"] == [0.3, 1.0]  # scale 0 is the trained model itself
    assert len({f for _, _, f in seen}) == len(seen)


def test_controls_proxy_evaluates_one_source_trained_proxy_on_every_control(tmp_path, monkeypatch, one_thread):
    from olacore.maps import Maps
    from olacore.augment import BatchAugmentation
    from olacore.proxy import ProxyConfig
    from olacore.store import TensorStore

    monkeypatch.setattr("olacore.training.TensorStore", lambda root=None: TensorStore(root or tmp_path))

    def maps(tensor, name):
        return Maps(tensors=tuple(tensor), channels=("order1",), causal=False, model=name, align="resize",
                    sinks="clean", size=16, texts=tuple(f"text {i}" for i in range(tensor.shape[0])))

    generator = torch.Generator().manual_seed(0)
    classes = torch.full((6, 1, 16, 16), 0.01)
    for c in range(6):  # each text a bright block at its own place
        classes[c, 0, 2 * c : 2 * c + 4, 2 * c : 2 * c + 4] = 1.0
    source = maps(classes + 0.02 * torch.rand(classes.shape, generator=generator), "source")
    controls = {("trained", 0.0): maps(classes + 0.02 * torch.rand(classes.shape, generator=generator), "target"),
                ("random init", float("nan")): maps(torch.rand(classes.shape, generator=generator), "target")}
    config = ProxyConfig(iterations=30, batch_size=6, lr=0.05, width=4, eval_every=10,
                         augment=BatchAugmentation(noise_p=0.0, sink_p=0.0))
    table = controls_proxy(source, controls, config, seeds=[0, 1], device="cpu", progress=False)
    assert table[["control", "seed"]].values.tolist() == [["trained", 0], ["random init", 0], ["trained", 1],
                                                         ["random init", 1]]
    assert table["accuracy"].between(0, 1).all()
    assert len(list(tmp_path.rglob("*.safetensors"))) == 2  # one proxy per seed, whatever the controls


@pytest.mark.slow
def test_control_pair_on_real_encoders(tmp_path, monkeypatch):
    from conftest import store_in
    from olacore import pipeline

    monkeypatch.setattr(pipeline, "TensorStore", store_in(tmp_path))
    texts = ["The cat sat on the mat while the dog slept.", "Numbers like 12345 and 7 are words too.",
             "Tokenizers split unbelievable words into several pieces.", "Short words only: I am, we go."]
    table, source, tokens = control_pair("minilm-l6", "mpnet-base", texts, ("order1", "rollout"),
                                         noise_scales=(1.0,), size=16, device="cpu", progress=False)
    assert source.model == "mpnet-base" and source.sinks == "clean" and source.size == 16 and len(source) == 4
    controls = ["trained", "random init", "shuffled layers", "noise", "both random init"]
    assert list(dict.fromkeys(table["control"])) == controls
    assert len(table) == 2 * len(controls) and set(table["channel"]) == {"order1", "rollout"}
    assert table["hits@1"].between(0, 1).all() and (table["chance@1"] == 0.25).all()
    assert sorted(control for control, _ in tokens) == ["noise", "random init", "shuffled layers", "trained"]
    assert all(len(items) == 4 and items[0].channels == ("order1", "rollout") for items in tokens.values())


def test_control_hits_table_is_percent_by_control_and_channel():
    import pandas as pd

    from chapter_code.controls import control_hits_table

    table = pd.DataFrame([
        {"control": "trained", "scale": 0.0, "channel": "order1", "hits@1": 0.61},
        {"control": "trained", "scale": 0.0, "channel": "rollout", "hits@1": 0.06},
        {"control": "noise", "scale": 1.0, "channel": "order1", "hits@1": 0.03},
    ])
    wide = control_hits_table(table)
    assert wide.loc[("trained", 0.0), "order1"] == 61.0 and wide.loc[("trained", 0.0), "rollout"] == 6.0
    assert wide.loc[("noise", 1.0), "order1"] == 3.0


def test_control_hits_summary_gives_the_table_and_its_line():
    import pandas as pd

    from chapter_code.controls import control_hits_summary, control_hits_table

    cells = [("trained", float("nan"), "order1", 0.9), ("noise", 0.5, "order1", 0.25)]
    table = pd.DataFrame([{"control": c, "scale": s, "channel": ch, "hits@1": h} for c, s, ch, h in cells])
    hits, caption = control_hits_summary(table, "minilm-l6", "mpnet-base", 8)
    pd.testing.assert_frame_equal(hits, control_hits_table(table))
    assert caption == "target minilm-l6 vs trained source mpnet-base: Hits@1 % (8 texts; chance 12.5 %)"


def test_controls_notebook_is_thin_and_its_names_exist():
    """Chapter 05 parses, defines no function or class where the reader sees it (a hidden cell may hold a
    formatting helper), and every name it imports from olacore or chapter_code exists."""
    import ast
    import importlib
    from pathlib import Path

    jupytext = pytest.importorskip("jupytext")
    notebook = jupytext.read(Path(__file__).resolve().parent.parent / "notebooks" / "05_controls.py")
    code = [ast.parse(cell.source) for cell in notebook.cells if cell.cell_type == "code"]
    nodes = [node for tree in code for node in ast.walk(tree)]
    hidden = {"remove-input", "remove-cell"}
    visible = [ast.parse(cell.source) for cell in notebook.cells
               if cell.cell_type == "code" and not hidden & set(cell.metadata.get("tags", []))]
    assert not [n.name for tree in visible for n in ast.walk(tree)
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    imported = [(n.module, a.name) for n in nodes if isinstance(n, ast.ImportFrom) and n.module.startswith(("olacore", "chapter_code"))
                for a in n.names]
    assert ("chapter_code.controls", "control_hits_summary") in imported
    missing = [f"{m}.{name}" for m, name in imported if not hasattr(importlib.import_module(m), name)]
    assert not missing
