# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Syntax: settings, side checks and more models
#
# This appendix holds what the syntax chapter ({doc}`06_syntax`) measures beside its main line: the settings and
# data counts, the best single raw attention layer, the spread over seeds, why the causal LMs fall short of the
# encoders, the learning curve, orders 1+2, part of speech from OLA, and two models outside the grid. It reads
# back the chapter's maps and adapters from the cache (training only what the chapter does not), with the same
# profile. What differs from the paper, and why: {ref}`departures`; how verdicts are judged: {ref}`claims`.

# %% tags=["parameters"]
profile = "default"  # smoke, default or paper: sets every size
device: str | None = None  # None: CUDA when available

# %% tags=["remove-input"]
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from olacore import ZOO, model_kind
from olacore.plots import show_figure, show_table
from olacore.profiles import settings as chapter_settings
from olacore.report import MARGIN, claim_verdict, paper_comparison
from olacore.results import ChapterResults, Stopwatch
from olacore.settings import cpu_workers
from olacore.toa import input_spec, make_job, syntax_data, train_adapters

from chapter_code.syntax import (SCORE_COLUMNS, baseline_table, best_layer, data_reports, direction_table, grid_cells,
                                 grid_plan, grid_table, layer_cells, layer_screen, learning_curve, paired_margin,
                                 record_rows, record_syntax, summary, syntax_datasets, syntax_paper_numbers,
                                 syntax_splits, syntax_verdicts, wide_table)

settings = chapter_settings("syntax", profile, device=device)
watch = Stopwatch("a4_syntax_extras")
results = ChapterResults("a4_syntax_extras", profile)
workers = cpu_workers(device)
pd.set_option("display.precision", 1)
NOTE = f"{profile} profile: {settings.num_train} training sentences, CPU-sized adapter, dev-selected"

# %% [markdown]
# ## Settings and data
#
# Every size of the chapter comes from its profile (`olacore.profiles.settings("syntax", profile)`).

# %% tags=["remove-input"]
seeds_words = ("seed " if len(settings.seeds) == 1 else "seeds ") + (
    " and ".join([", ".join(map(str, settings.seeds[:-1])), str(settings.seeds[-1])]) if len(settings.seeds) > 1
    else str(settings.seeds[0]))
adapter, training = settings.adapter, settings.training
show_table(pd.DataFrame([
    ("EWT sentences (train / dev / test)", f"{settings.num_train} / {settings.num_dev} / {settings.num_test}"),
    ("ALTI comparison sentences (train / dev / test)", " / ".join(map(str, settings.alti_subset or ("as above",)))),
    ("length cut (tokens), grid", f"{settings.max_tokens}, {settings.grid}"),
    ("adapter: width, depth, heads, feed-forward", f"{adapter.dim}, {adapter.depth}, {adapter.heads}, "
     f"{adapter.ffn_mult}x wide {adapter.ffn_kernel}x{adapter.ffn_kernel} conv"
     f"{' + depthwise 3x3 mix (not official)' if adapter.local_mix else ''}"),
    ("DP head: arc / relation MLP, dropout", f"{adapter.arc_dim} / {adapter.rel_dim}, {adapter.mlp_dropout}"),
    ("pair-cell scores, input scaling", f"{adapter.pair_scores}, {adapter.input_transform}"),
    ("training: epochs, batch, AdamW lr, warm-up", f"{training.epochs}, {training.batch_size}, {training.lr:g}, "
     f"{training.warmup:.0%}"),
    ("seeds (repeated cells)", seeds_words),
    ("models (every input on)", f"{', '.join(settings.models)} ({', '.join(settings.full_grid)})"),
    ("more models (order 1 and distance only)", ", ".join(settings.extra_models) or "none"),
], columns=["setting", "value"]), "tbl-syntax-settings", f"Settings of the `{profile}` profile "
           "(`olacore.profiles.settings(\"syntax\", profile)`).")
show_table(grid_plan(settings), "tbl-syntax-plan", "What runs, per data set: its sentences (train / dev / test), "
           "inputs, seeds and adapters. Rows below the zoo models are the cells that ran smaller (the ALTI subset, "
           "the learning curve) or on a control (random init); the best raw layer is added once chosen on dev.",
           decimals=0)

# %% [markdown]
# Multi-word tokens are split into their syntactic words (the two words of "didn't" share the surface token's
# characters, so they share one first sub-token: a limit of any map-only parser). Each *data set* below is one
# model's sentences at one size (`[ALTI subset]`: the ALTI comparison; `[train n]`: the first `n` training
# sentences, for the learning curve; `[random init]`: the model with freshly initialised weights).

# %% tags=["remove-input"]
with watch("maps: read back"):
    splits = syntax_splits(settings)
    data = syntax_datasets(settings, splits, workers=workers, device=device)
reports = data_reports(data)
show_table(reports[reports["data set"].isin(settings.models)], "tbl-syntax-data",
           "Sentences and words per model and split after alignment and the length cut: 'kept' sentences are "
           "those aligned to the model's tokens ('not aligned': the rest), 'cut' those longer than the cut (kept, "
           "but their words past it, and words whose head lies past it, are not scored).", decimals=0)

# %% [markdown]
# ## The best single raw attention layer, chosen on dev
#
# Since `OLA_1 = (1/N) sum_i A^(i)`, the plain average of the layers *is* first-order OLA; the raw-attention
# question is whether one layer alone does as well. Training an adapter per layer is beyond this budget, so each
# layer is first scored as a parser with no training (`chapter_code.syntax.layer_screen`): on the *dev* sentences,
# a word's guessed head is the word it shares most attention with either way (sink entries removed), and the
# score is the share of right guesses (in the spirit of {cite}`clark2019bert`, who scored BERT's attention heads
# by whether a word attends most to its syntactic head). The best layer on dev then gets an adapter like every
# other input of the chapter.

# %%
with watch("layer screen (dev)"):
    screens = {m: layer_screen(data[m]["dev"]) for m in settings.layer_models}
    cells = grid_cells(settings) + layer_cells(screens, settings.seeds[0])
fig, ax = plt.subplots(figsize=(7, 3))
for model, screen in screens.items():
    ax.plot(screen["layer"] / screen["layer"].max(), screen["attachment"], marker="o", label=model)
ax.set(xlabel="layer / number of layers", ylabel="dev attachment (%)", title="Raw layers as untrained parsers (dev)")
ax.legend(fontsize=8)
plt.tight_layout()
show_figure(fig, "fig-layer-screen", f"Each raw attention layer of {', '.join(screens)} scored as an untrained parser on "
            "the dev sentences: the share (%) of words whose guessed head (the word it shares most attention with) is "
            "the gold head, against the layer's depth (layer / number of layers).")

# %% [markdown]
# The chapter's grid and the best-layer cells: the grid's adapters are read back from the cache (the chapter
# trained them), the best-layer adapters trained here where the chapter has not run.

# %% tags=["remove-input"]
with watch("adapters: read back or train, score test"):
    jobs = [make_job(data[name]["train"], data[name]["dev"], input_spec(input_name), settings.adapter,
                     settings.training, seed=cell_seed, model=name, input=input_name)
            for name, input_name, cell_seed in cells]
    adapters = dict(zip(cells, train_adapters(jobs, workers=workers)))
    table = grid_table(adapters, data)

# %%
baselines = baseline_table(table, settings.models)
show_table(baselines, "tbl-syntax-best-layer", "Test UAS (%), seed 0: order-1 OLA beside the distance-only twin, "
           "the random-init model's order-1 OLA and the best raw layer chosen on dev, with its adapter's test UAS "
           "('best layer score'; empty where not run).")

# %% [markdown]
# ## Spread over seeds
#
# The full-grid models run the inputs of the paper's order claim with every seed of the profile: a difference
# between inputs smaller than this spread is no finding.

# %%
seeded = summary(table[table["model"].isin(settings.full_grid)])
seeded = seeded[seeded["uas_count"] > 1].reset_index(drop=True)
if len(seeded):
    show_table(seeded.rename(columns=lambda c: c.replace("uas_", "UAS ").replace("las_", "LAS ")
                             .replace("count", "seeds").replace("std", "standard deviation")),
               "tbl-syntax-seeds", f"Spread over seeds {seeds_words} (initialisation, batch order, dropout): mean, "
               "standard deviation and number of seeds of test UAS and LAS (%).")
else:
    print(f"This run trains every cell with one seed ({seeds_words}), so there is no spread over seeds to show; "
          "the larger profiles repeat the full-grid cells with more seeds.")

# %% [markdown]
# ## ALTI, in detail
#
# ALTI {cite}`ferrando2022alti` measures how much each token contributes to each layer's output from the norms of
# the transformed vectors, not from the attention weights, and aggregates layers by its own rollout
# (`olacore.alti`). It costs about another forward pass per sentence, so it runs on the smaller `[ALTI subset]`
# sentences of {numref}`tbl-syntax-plan`, each beside an order-1 adapter trained on exactly the same sentences
# (the chapter's ALTI table). The paper has no ALTI row in its syntax table: its ALTI numbers are for the visual
# proxy (chapter 04).
#
# ## Why the causal LMs fall short
#
# **Left and right heads.** A causal LM's attention row of a word covers only the words before it. English UD
# heads lie more often to the *right* of their dependent (determiners, adjectives and subjects before their
# head), so a causal model's row of such a word does not hold its head; the mirrored upper triangle gives the
# adapter the head's attention *to* the word instead, a different signal. If that were the whole story, the
# causal models would fall behind the encoders on right heads and keep up on left heads. The table splits test
# words by where their gold head lies and scores each part; the lines below it give the causal-minus-encoder
# difference per direction, and say whether the explanation fits.

# %%
direction_cells = [(m, i, settings.seeds[0]) for m in settings.models for i in ("order 1", "distance")]
with watch("head directions (test)"):
    directions = direction_table(adapters, data, direction_cells)
wide_directions = directions.pivot_table(index=["model", "input"], columns="direction", values=["share", "uas"],
                                         sort=False)
show_table(wide_directions, "tbl-syntax-directions", "Share (%) of test words whose gold head lies to the left, to "
           "the right, or that are the root, and UAS (%) on each part, for order 1 and the distance-only twin.")
order1_directions = directions[directions["input"] == "order 1"].assign(
    kind=lambda t: [model_kind(m) for m in t["model"]])
by_kind = order1_directions.pivot_table(index="direction", columns="kind", values="uas")
if {"causal", "encoder"} <= set(by_kind.columns):
    behind = by_kind["causal"] - by_kind["encoder"]
    for direction, row in by_kind.iterrows():
        print(f"order 1, heads {direction:>5}: causal LMs {row['causal']:.1f} UAS, encoders {row['encoder']:.1f} "
              f"(causal minus encoder {behind[direction]:+.1f} points)")
    if {"left", "right"} <= set(behind.index):
        # the explanation predicts: level (within MARGIN) on left heads, behind by more than MARGIN on right heads
        supported = -behind["left"] <= MARGIN < -behind["right"]
        print(f"The left/right explanation {'fits' if supported else 'does not fit'} these numbers: the causal LMs are "
              f"{-behind['left']:.1f} points behind on left heads and {-behind['right']:.1f} on right heads (it "
              f"predicts at most {MARGIN:g} on the left and more on the right)"
              + ("." if supported else "; they fall behind where their own rows hold the head too, so the missing "
                 "right context is not the whole story."))

# %% [markdown]
# **More data.** Order 1 on fewer training sentences (same dev and test): a curve still rising at the right end
# says the adapter is data-starved there, a flat one says the maps hold no more for it.

# %%
curve = learning_curve(table, settings.curve_models)
fig, ax = plt.subplots(figsize=(6, 3))
sns.lineplot(data=curve, x="train", y="uas", hue="model", marker="o", ax=ax)
ax.set(xlabel="training sentences", ylabel="test UAS (%)", title="Order-1 adapter: learning curve (seed 0)")
plt.tight_layout()
show_figure(fig, "fig-syntax-curve", f"Test UAS (%) of the order-1 adapter against the number of training sentences "
            f"({', '.join(str(int(n)) for n in sorted(curve['train'].unique()))}; seed 0, same dev and test), per model.")
show_table(curve, "tbl-syntax-curve", "Test UAS / LAS (%) of the order-1 adapter by training sentences (seed 0).")

# %% [markdown]
# ## Orders 1+2
#
# Orders 1+2, the official TOA input, against order 1 alone: the second order adds the two-step paths; for a
# causal model these still run through earlier words only (later words enter, as at order 1, only through the
# mirrored upper triangle).

# %%
both = wide_table(table, settings.models, ["order 1", "order 1+2"], metrics=("uas",))
both[("uas", "1+2 - 1")] = both[("uas", "order 1+2")] - both[("uas", "order 1")]
show_table(both, "tbl-syntax-order12", "Test UAS (%): order 1 against orders 1+2 (mean over seeds where several ran).")

# %% [markdown]
# ## Two more models: a third encoder family (and why not the paper-size Qwen)
#
# The paper parsed with three encoders of one kind (BERT, RoBERTa, ELECTRA: masked-LM pretraining); the grid has
# two of one lineage (MiniLM, MPNet), so its encoder claim rests on one pair. The zoo holds two larger models
# outside that grid: `embeddinggemma-300m`, a third family (a Gemma-3 language model made bidirectional and
# fine-tuned for sentence embeddings, 24 layers), and `qwen2.5-1.5b`, a causal LM of the shape of the paper's
# Qwen2-1.5B (28 layers, dequantised 4-bit weights). The profile's `extra_models` lists those that run here. Each
# gets what the distance claim needs and no more: the order-1 adapter and its distance-only twin, the chapter's
# adapter and training, every seed of the profile, the checkpoint kept on **dev** LAS, test scored once; their
# maps are extracted in one process (the 1.5B model takes 6 GB of memory).
#
# The costs of extraction on the shared 2-core machine are recorded in {ref}`Design decisions <compute-syntax-sizes>`:
# the 1.5B model costs about ten times the 300M one per sentence, more than this section is worth in a default
# build, so `default` runs `embeddinggemma-300m` only; `extra_models=["qwen2.5-1.5b"]` adds it, at that cost.
#
# The margin's standard error (`chapter_code.syntax.paired_margin`) is over test sentences (what another draw of
# test sentences would move); the verdict is the chapter's rule over the seeds ({ref}`claims`).

# %%
EXTRA_ROLES = {"embeddinggemma-300m": "a third encoder family", "qwen2.5-1.5b": "the paper's Qwen size"}
extra_models = settings.extra_models
extra_table = pd.DataFrame()
if not extra_models:
    print(f"This section did not run at the `{profile}` profile: its settings list no extra model "
          "(SyntaxSettings.extra_models).")
else:
    with watch("more models: maps (attention, OLA order 1; one process)"):
        extra_data = {m: syntax_data(m, splits, settings, max_order=1, workers=1, device=device) for m in extra_models}
    extra_cells = [(m, name, s) for m in extra_models for name in ("order 1", "distance") for s in settings.seeds]
    with watch("more models: order-1 and distance adapters"):
        extra_jobs = [make_job(extra_data[m]["train"], extra_data[m]["dev"], input_spec(name), settings.adapter,
                               settings.training, seed=s, model=m, input=name) for m, name, s in extra_cells]
        extra_adapters = dict(zip(extra_cells, train_adapters(extra_jobs, workers=workers)))  # kept: best dev LAS
        extra_rows = []
        for (m, name, s), fitted in extra_adapters.items():
            scores = fitted.evaluate(extra_data[m]["test"])  # test, once
            extra_rows.append({"model": m, "kind": ZOO[m].kind, "input": name, "seed": s,
                               "train": len(extra_data[m]["train"]), "epoch": fitted.record["best_epoch"],
                               "dev_uas": fitted.record["dev"]["uas"], "dev_las": fitted.record["dev"]["las"],
                               **{k: scores[k] for k in SCORE_COLUMNS}})
        extra_table = pd.DataFrame(extra_rows)
    extra_wide = wide_table(extra_table, extra_models, ["order 1", "distance"])
    extra_summary = []
    for m in extra_models:
        margins = paired_margin([extra_adapters[m, "order 1", s] for s in settings.seeds],
                                [extra_adapters[m, "distance", s] for s in settings.seeds], extra_data[m]["test"])
        by_seed = extra_table[extra_table["model"] == m].pivot_table(index="seed", columns="input", values="uas")
        extra_summary.append({
            "model": m, "kind": ZOO[m].kind, "layers": ZOO[m].num_layers,
            "order 1 UAS": extra_wide.loc[m, ("uas", "order 1")], "order 1 LAS": extra_wide.loc[m, ("las", "order 1")],
            "distance UAS": extra_wide.loc[m, ("uas", "distance")], "distance LAS": extra_wide.loc[m, ("las", "distance")],
            "margin UAS": margins["uas"]["margin"], "SE UAS": margins["uas"]["se"],
            "margin LAS": margins["las"]["margin"], "SE LAS": margins["las"]["se"],
            "test words": margins["uas"]["words"],
            "verdict": claim_verdict(by_seed["order 1"] - by_seed["distance"], MARGIN)})
    extra_summary = pd.DataFrame(extra_summary)
    show_table(extra_summary, "tbl-syntax-more-models", "The models outside the grid: test UAS / LAS (%, mean over "
               f"{seeds_words}) of the order-1 adapter and its distance-only twin, the "
               "margin (order 1 minus distance, points) with its standard error over test sentences, and the verdict "
               f"of the chapter's rule on the UAS margin over seeds (margin {MARGIN:g} points).")
    for _, r in extra_summary.iterrows():
        role = EXTRA_ROLES.get(r["model"], f"a {r['kind']} model")
        beats = {"holds": "beats", "holds weakly": "beats only weakly"}.get(r["verdict"], "does not beat")
        print(f"{r['model']} ({role}, {r['layers']} layers): order-1 OLA {beats} the distance-only baseline, "
              f"{r['order 1 UAS']:.1f} against {r['distance UAS']:.1f} UAS, a margin of {r['margin UAS']:+.1f} points "
              f"(standard error {r['SE UAS']:.1f} over {r['test words']} test words"
              + (f", {r['margin UAS'] / r['SE UAS']:+.1f} SE" if r["SE UAS"] > 0 else "")
              + f"); verdict: {r['verdict']}.")
    beside = syntax_paper_numbers(pd.concat([table, extra_table], ignore_index=True))
    beside = beside[(beside["input"] == "order 1") & beside["subject"].isin(list(settings.models) + list(extra_models))]
    beside = paper_comparison("syntax", beside)
    if len(beside):
        show_table(beside.pivot_table(index=["published number", "paper %"], columns="ours: model", values="ours %",
                                      sort=False), "tbl-syntax-more-paper", "Order-1 UAS / LAS (%): the paper's "
                   "encoders (full EWT, official adapter, checkpoints chosen on test) beside our encoders (columns), "
                   "those of the grid and those of this section (this profile's sentences, CPU-sized adapter, chosen "
                   "on dev).")
    else:
        print("No encoder among these models: the paper's table (encoders only) has nothing to set beside them.")

# %% [markdown]
# ## Part of speech from OLA
#
# The same adapter with a token head (LeakyReLU and a linear map per word, as the official token adapter in
# `models/adapters.py`) trained on orders 1+2 to predict EWT's XPOS tags (the Penn Treebank tag set of the paper's
# CoNLL-2000 task), scored per word and per sub-token (every sub-token of a word carrying the word's tag).
# Chapter 07 moves this adapter between models.

# %%
with watch("POS adapters"):
    pos_spec, pos_seed = input_spec("order 1+2"), settings.seeds[0]
    pos_data = {m: syntax_data(m, splits, settings, task="pos") for m in settings.pos_models}
    pos_jobs = [make_job(d["train"], d["dev"], pos_spec, settings.adapter, settings.training, seed=pos_seed, model=m)
                for m, d in pos_data.items()]  # checkpoint chosen on dev accuracy
    pos_rows = []
    for (model, d), fitted in zip(pos_data.items(), train_adapters(pos_jobs, workers=workers, progress=False)):
        on_test = fitted.evaluate(d["test"])
        pos_rows.append({"model": model, "input": pos_spec.label, "epoch": fitted.record["best_epoch"],
                         "dev_accuracy": fitted.record["dev"]["accuracy"], "accuracy": on_test["accuracy"],
                         "subtoken_accuracy": on_test["subtoken_accuracy"], "unknown_labels": on_test["unknown_labels"]})
    pos = pd.DataFrame(pos_rows)
show_table(pos[["model", "input", "epoch", "dev_accuracy", "accuracy", "subtoken_accuracy", "unknown_labels"]].rename(
    columns={"epoch": "epoch kept", "dev_accuracy": "dev accuracy", "accuracy": "test accuracy (words)",
             "subtoken_accuracy": "test accuracy (sub-tokens)", "unknown_labels": "unknown tags"}),
           "tbl-syntax-pos", "XPOS accuracy (%) from OLA orders 1+2 (checkpoint chosen on dev accuracy; "
           "unknown tags: test words whose tag never occurs in training).")

# %% [markdown]
# ## Exercise
#
# ```{exercise} One raw layer against the layer average
# :label: ex-a4-layer
# First-order OLA is the mean of the layers' attention. Score every raw layer of an encoder as an untrained parser
# on dev (`layer_screen`), train the adapter on the best one, and set it beside order 1. Compare with
# {numref}`tbl-syntax-best-layer`. Why is the layer chosen on dev and not on test?
# ```
#
# ```{solution-start} ex-a4-layer
# :class: dropdown
# ```

# %%
model = next((m for m in settings.layer_models if model_kind(m) == "encoder"), settings.layer_models[0])
screen = layer_screen(data[model]["dev"])  # every layer as an untrained parser, on dev
best = int(screen.loc[screen["attachment"].idxmax(), "layer"])
for name in (f"layer {best}", "order 1"):
    job = make_job(data[model]["train"], data[model]["dev"], input_spec(name), settings.adapter, settings.training,
                   seed=settings.seeds[0], model=model, input=name)
    print(f"{model}, {name}: test UAS {train_adapters([job], workers=1, progress=False)[0].evaluate(data[model]['test'])['uas']:.1f}")

# %% [markdown]
# Both adapters are the chapter's cells (read back from the cache), so they equal
# {numref}`tbl-syntax-best-layer`. Choosing among the layers is a selection: choosing on test would report the
# best of several test scores, the very selection effect the quantitative chapters measure for the official
# visual proxy. On dev, test stays a single, unselected measurement.
#
# ```{solution-end}
# ```

# %% tags=["remove-cell"]
layer_rows = table[table["input"].str.match(r"^layer \d+$")]
record_syntax(results, layer_rows, syntax_verdicts(layer_rows), anchor="tbl-syntax-best-layer", note=NOTE)
record_rows(results, pos, "pos", ["model"], ["accuracy", "subtoken_accuracy"], "XPOS accuracy from OLA orders 1+2",
            anchor="tbl-syntax-pos")
record_rows(results, directions, "directions", ["model", "input", "direction"], ["share", "uas"],
            "gold-head direction on test", anchor="tbl-syntax-directions")
record_rows(results, best_layer(table).assign(layer=lambda t: t["input"]), "best-layer", ["model", "layer"],
            ["dev_las", "uas", "las"], "best raw layer chosen on dev", anchor="tbl-syntax-best-layer")
if len(extra_table):  # the models outside the grid: keys syntax/<model>/..., verdict/..., syntax-margin/...
    record_syntax(results, extra_table, syntax_verdicts(extra_table), anchor="tbl-syntax-more-models",
                  note=f"{NOTE}; outside the chapter's grid")
    for _, r in extra_summary.iterrows():
        for metric in ("UAS", "LAS"):
            results.add(f"syntax-margin/{r['model']}/{metric.lower()}", f"order 1 minus distance, test {metric}, "
                        f"{r['model']} (points, mean over seeds)", r[f"margin {metric}"], unit="points",
                        verdict=r["verdict"] if metric == "UAS" else "", anchor="tbl-syntax-more-models",
                        subject=r["model"])
            if pd.isna(r[f"SE {metric}"]):  # one test sentence: no spread to measure
                continue
            results.add(f"syntax-margin/{r['model']}/{metric.lower()}_se", f"standard error over test sentences of "
                        f"the {metric} margin, {r['model']}", r[f"SE {metric}"], unit="points",
                        anchor="tbl-syntax-more-models", subject=r["model"])
results.save()
print(watch.report())
