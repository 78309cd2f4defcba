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
# # TOA in detail: named entities, bounds and audits
#
# This appendix belongs to {doc}`07_toa`. It runs the same adapters (read back from the cache
# that chapter filled) and shows what the chapter leaves out: its settings and data, the
# training curves, the named-entity tasks (NER on UNER English-EWT, WNUT-17 on tweets) with
# their matrices and bounds, every bound and verdict cell in detail with its standard errors,
# a position-only bound for dependency parsing, and whether map similarity predicts transfer.
# How the verdicts are judged: {ref}`claims-transfer`. What differs from the paper: {ref}`departures`.

# %% tags=["parameters"]
profile = "default"  # smoke, default or paper: sets every size
device: str | None = None  # None: CUDA when available

# %% tags=["remove-input"]
import matplotlib.pyplot as plt
import pandas as pd
import torch
from IPython.display import Markdown, display

from olacore.corpora import SEMEVAL_LABELS, read_uner
from olacore.plots import show_figure, show_table
from olacore.profiles import settings as chapter_settings
from olacore.report import LEARNED_TOL, NOT_TESTED, paper_toa_relation_extraction, value_span
from olacore.results import ChapterResults, Stopwatch
from olacore.settings import cpu_workers
from olacore.toa import TOA_INPUT, input_spec, make_job, train_adapters

from chapter_code.syntax import data_reports
from chapter_code.transfer import (NOT_MEASURED_HERE, ROW_COLUMNS, all_task_data, gap_table, learned_table,
                                   majority_bounds, random_init_rows, record_transfer, show_findings, similarity_hits,
                                   similarity_vs_transfer, surface_bounds, surface_margins, transfer_heatmaps,
                                   transfer_scores, verdict_table, zero_shot_rows)
from chapter_code.zeroshot import prompt_forms

torch.set_num_threads(1)
settings = chapter_settings("transfer", profile, device=device)
syntax = settings.syntax
watch = Stopwatch("a5_entities")
results = ChapterResults("a5_entities", profile)
workers = cpu_workers(device)  # one single-threaded process per core: extraction and training
pd.set_option("display.precision", 1)
ENTITY_TASKS = [task for task in settings.tasks if task in ("ner", "wnut")]

# %% [markdown]
# ## Settings

# %% tags=["remove-input"]
a, t = syntax.adapter, syntax.training
show_table(pd.DataFrame([
    ("RE: SemEval-2010 Task 8 (train / dev / test; epochs)",
     f"{settings.re.train} / {settings.re.dev} / {settings.re.test}; {settings.training_for('re').epochs}"),
    ("NER: UNER English-EWT (train / dev from UNER dev / test; epochs)",
     f"{settings.ner.train} / {settings.ner.dev} / {settings.ner.test}; {settings.training_for('ner').epochs}"),
    ("WNUT: WNUT-17, out of domain (train / dev / test; epochs)",
     f"{settings.wnut.train} / {settings.wnut.dev} / {settings.wnut.test}; {settings.training_for('wnut').epochs}"),
    ("DP, POS: UD English EWT (train / dev / test), as the syntax chapter",
     f"{syntax.num_train} / {syntax.num_dev} / {syntax.num_test}"),
    ("causal models / encoders", f"{', '.join(settings.causal)} / {', '.join(settings.encoders)}"),
    ("encoders in DP and POS only (a third family)", ", ".join(settings.extra_encoders) or "none"),
    ("adapter input", "OLA orders 1 + 2, raw and sink-cleaned (official: preprocess_ola, models/ola_model.py)"),
    ("adapter: width, depth, heads", f"{a.dim}, {a.depth}, {a.heads} (official 768, 5, 8)"),
    ("training: epochs (DP, POS), batch, AdamW lr", f"{t.epochs}, {t.batch_size}, {t.lr:g} (checkpoint chosen on dev)"),
    ("O-tag loss weight (NER / WNUT; official 0.5, models/adapters.py)",
     f"{settings.training_for('ner').ner_o_weight:g} / {settings.training_for('wnut').ner_o_weight:g}"),
    ("augmentation (RE, NER, WNUT; DP and POS as the syntax chapter: none at default)",
     "official fake sinks and noise, p 0.3 each (models/ola_augmentations.py)" if settings.augment else "none"),
    ("length cut (tokens), grid", f"{syntax.max_tokens}, {syntax.grid}"),
    ("seeds", ", ".join(map(str, settings.seeds))),
    ("random-init control: targets, EWT test sentences", f"{', '.join(settings.control_models)}; {settings.control_test}"),
], columns=["setting", "value"]), "tbl-toa-settings", f"Settings of the `{profile}` profile "
           "(`olacore.profiles.settings(\"transfer\", profile)`).")

# %% [markdown]
# Where the settings name a third encoder family (`extra_encoders`: `embeddinggemma-300m` at
# `default`), it joins DP and POS, so their encoder matrices are 3 x 3 and the encoder claim
# rests on six ordered pairs, not two.
#
# ## Data and maps
#
# Each task's word-level gold is brought to every model's own tokens through the tokenizer's
# character offsets (`olacore.toa.data`), so one annotation serves all models. The EWT
# sentences (DP, POS) are the syntax chapter's, so their maps are read back from its cache.
# NER reads UNER English-EWT, which annotates the EWT sentences themselves (matched by
# `sent_id`; the sentences whose tokens differ from EWT's are left out and named below):
# its test split is the syntax chapter's very test sentences, and as UNER has no training file
# here its train and dev come from UNER dev (dev spread evenly over it, train the first of the
# other sentences: disjoint). SemEval has no dev file: its dev is every 10th example of the
# training file, its train the others (`olacore.corpora.read_semeval`); WNUT-17's dev is its
# official `emerging.dev.conll`. The RE and WNUT test sets are fixed subsets spread evenly over
# the official test files: the same examples the zero-shot baseline answers. A sentence a
# tokenizer cannot align is left out and counted (the column "not aligned"), never silently lost.

# %%
with watch("maps (extract or read back) and task data"):
    data = all_task_data(settings, workers=workers)
reports = data_reports(data, ("task", "model", "split"), ("dropped beyond cut", "entities beyond cut"))
show_table(reports, "tbl-toa-data", "Examples per task, model and split after alignment and the 64-token cut.",
           decimals=0)

# %% tags=["remove-input"]
uner = {split: read_uner(split) for split in ("dev", "test")}
show_table(pd.DataFrame([(split, len(r.items) + len(r.skipped), len(r.items), sent_id, why)
                         for split, r in uner.items() for sent_id, why in (r.skipped or [("", "none left out")])],
                        columns=["UNER split", "sentences read", "kept", "left out (sent_id)", "why"]),
           "tbl-toa-uner-left-out", "UNER English-EWT sentences left out because their tokens differ from EWT's.")

# %% [markdown]
# ## The adapters
#
# One adapter per task and model, trained on that model's OLA only, its checkpoint chosen on
# the task's **dev** split (by dev LAS for DP, accuracy for POS, entity F1 for NER and WNUT,
# macro-F1 for RE, the official SemEval score; `olacore.toa.train.SELECTION`), test scored once
# at the end (for RE the matrices report accuracy, the metric of the paper's table). The
# losses are cross-entropies (`olacore.toa.train.adapter_loss`): per token for POS and NER, of
# the 19-way label for RE, of head and relation for DP. The `O` tag of NER and WNUT is weighted
# as the settings table says: the official `models/adapters.py` gives it half weight; the
# default profile gives it less, chosen on a 150-sentence slice of UNER dev, where at half
# weight the adapter answered `O` almost everywhere ({ref}`compute-transfer-sizes`
# records the points; WNUT takes NER's weight untested on its own
# dev). The heads: per token for POS and NER, the biaffine scorer for DP, and for RE the mean
# of the backbone's diagonal features over each entity span, the two means concatenated and
# mapped to the relations (the label vocabulary is the training split's, so a split may see
# fewer than SemEval's 19: the printed head says how many).

# %%
spec = input_spec(TOA_INPUT)
with watch("adapters (train or read back)"):
    jobs = {(task, model, seed): make_job(splits["train"], splits["dev"], spec, syntax.adapter,
                                          settings.training_for(task), seed=seed, model=model, input=TOA_INPUT)
            for task in settings.tasks for model, splits in data[task].items() for seed in settings.seeds}
    adapters = dict(zip(jobs, train_adapters(list(jobs.values()), workers=workers)))
cells = list(adapters)
re_cell = next(cell for cell in cells if cell[0] == "re") if "re" in settings.tasks else cells[0]
example = adapters[re_cell]
print(example.model.head)
print(f"{re_cell[0]} adapter of {re_cell[1]}: {sum(p.numel() for p in example.model.parameters()):,} parameters, "
      f"checkpoint of epoch {example.record['best_epoch']} of {len(example.record['history'])}, "
      f"{example.record['selected_on']}")
if re_cell[0] == "re":
    unseen = [label for label in SEMEVAL_LABELS if label not in example.vocab.labels]
    print(f"RE head: {len(example.vocab)} of the {len(SEMEVAL_LABELS)} SemEval labels, those of its training split"
          + (f"; never seen in training, so never predicted: {', '.join(unseen)}" if unseen else ""))

# %%
curve_model = re_cell[1]
fig, axes = plt.subplots(1, 2, figsize=(10, 3))
for task in settings.tasks:
    record = adapters[task, curve_model, settings.seeds[0]].record
    history = pd.DataFrame(record["history"])
    metric = "dev_" + record["selected_on"].split()[-1]
    axes[0].plot(history["epoch"], history["loss"], marker=".", label=task)
    line, = axes[1].plot(history["epoch"], history[metric], marker=".", label=f"{task} ({metric[4:]})")
    kept = history[history["epoch"] == record["best_epoch"]]
    axes[1].scatter(kept["epoch"], kept[metric], s=80, facecolors="none", edgecolors=line.get_color())
axes[0].set(xlabel="epoch", ylabel="training loss", title=f"{curve_model}: loss")
axes[1].set(xlabel="epoch", ylabel="dev score (%)", title="dev score (circle: kept)")
for ax in axes:
    ax.legend(fontsize=8)
plt.tight_layout()
show_figure(fig, "fig-toa-training", f"Training of {curve_model}'s adapters, one line per task ({', '.join(settings.tasks)}; "
            f"seed {settings.seeds[0]}): training loss (left) and the dev score (%) each checkpoint is judged by "
            "(right); circles: the epoch kept.")

# %% [markdown]
# ## Named entities: the transfer matrices
#
# The chapter's double loop again (every adapter, unchanged, on every target of its kind),
# here shown for the two entity tasks: NER on UNER English-EWT (PER, LOC, ORG on the EWT
# sentences) and WNUT-17 (emerging entities in tweets, out of domain), scored by seqeval's
# entity F1.

# %%
with watch("transfer scores"):
    rows = []
    for (task, source, seed), adapter in adapters.items():
        for target, splits in data[task].items():
            if splits["test"].causal != adapter.record["causal"] or not len(splits["test"]):
                continue  # TOA transfers within a kind; a target with no test example left (see the data table)
            rows.append({"task": task, "kind": "causal" if splits["test"].causal else "encoder", "source": source,
                         "target": target, "seed": seed, "diagonal": source == target,
                         **transfer_scores(adapter, splits["test"])})
    rows = pd.DataFrame(rows) if rows else pd.DataFrame(columns=list(ROW_COLUMNS))
entity_rows = rows[rows["task"].isin(ENTITY_TASKS)]
seed_words = (f"seed {settings.seeds[0]}" if len(settings.seeds) == 1
              else "mean over seeds " + ", ".join(str(seed) for seed in settings.seeds))
if len(entity_rows):
    show_figure(transfer_heatmaps(entity_rows, ENTITY_TASKS), "fig-toa-entities",
                f"Entity transfer matrices: test entity F1 (%; {seed_words}) of each source model's adapter applied unchanged to each target model of the "
                "same kind; rows: source, columns: target; outlined: the diagonal (target-trained).")
wide = entity_rows.groupby(["task", "kind", "source", "target"], sort=False)["score"].mean().unstack("target")
show_table(wide.reset_index(), "tbl-toa-entity-matrices", "Entity transfer matrices: rows = source, columns = target; "
           f"the diagonal is target-trained. Entity F1 in % ({seed_words}).")

# %% [markdown]
# ## Every bound in detail
#
# The **capitalisation** bound of the entity tasks needs no model: every capitalised word not
# at a sentence start is an entity of the commonest training type (contiguous ones form one
# entity). It is what the surface form gives away, which the adapter never sees. The
# **random-init** control scores each adapter on the OLA of the target's twin with freshly
# initialised weights (same architecture and tokenizer; seed 0), and beside it on the real
# target's OLA of the same sentences. **Zero-shot prompting** asks each causal target, in its
# own chat template where it has one, to name the relation or list the entities (greedy
# decoding; `chapter_code/zeroshot.py`); an answer outside the label set counts as wrong and is counted.

# %%
with watch("bounds: majority, capitalisation"):
    bounds = majority_bounds(settings)
    surface = surface_bounds(settings)
with watch("bounds: random-init targets (extract or read back)"):
    control = random_init_rows(adapters, data, settings)
with watch("bounds: zero-shot prompting (generate or read back)"):
    zero_shot = zero_shot_rows(settings)
show_table(surface, "tbl-toa-surface", "The capitalisation bound of the entity tasks on their test splits "
           "(seqeval entity F1, precision, recall, %).")
show_table(prompt_forms(list(settings.zero_shot_models)), "tbl-toa-forms",
           "The prompt form each causal model gets (its chat template where it has one).")
if len(control):
    show_table(control[["task", "source", "target", "seed", "score", "transfer", "se"]].rename(
                   columns={"score": "random-init twin", "transfer": "real target", "se": "SE of the difference"}),
               "tbl-toa-random-init", "The same adapters on the random-init twin of each target and on the real "
               "target, on the same test sentences (score, %): RE and WNUT their whole test subsets, DP, POS and NER "
               f"{settings.control_test} of the EWT test sentences (spread over them; the transfer matrices use all "
               "of them). 'Beats random init' compares these two columns; the standard error of their difference "
               "(points) is a paired bootstrap over those sentences (2,000 resamples, seed 0).")

# %% [markdown]
# ## Gaps, verdicts and their standard errors
#
# The verdict table of the entity tasks (the chapter shows DP, POS and RE), then the margins in
# standard errors of the test subset, for every task, so that a 3-point margin on a few hundred
# sentences reads as what it is. Over the random-init twin: the standard error of the
# adapter's score on the real target minus its score on the twin, from a paired bootstrap over
# the control's test sentences (for DP, POS and NER only the few EWT sentences of the control,
# so a few points may be within the noise). RE: one binomial standard error at the majority's
# accuracy on the subset's sentences, the same for every cell (a yardstick, not a paired
# test). NER and WNUT: the entity F1 of the target-trained adapter minus the capitalisation
# rule's on the same words, its standard error from a paired bootstrap over test sentences.
# Differences are taken before rounding. Whether more NER training data would lift the NER
# adapters above the capitalisation rule was measured on UNER dev before the runs: twice the
# training sentences bought one to two points of dev F1, within the dev set's own spread (the
# points are recorded in {ref}`compute-transfer-sizes`).

# %%
gaps = gap_table(rows)
model_free = bounds.copy()  # the strongest model-free bound per task: the learned gate reads it
for _, b in surface.iterrows():
    row = model_free["task"] == b["task"]
    if b["score"] > float(model_free.loc[row, "score"].max()):
        model_free.loc[row, ["bound", "score"]] = [b["bound"], b["score"]]
verdicts = verdict_table(gaps, control, model_free, zero_shot)
entity_verdicts = verdicts[verdicts["task"].isin(ENTITY_TASKS)]
shown = entity_verdicts.drop(columns=["transfer std"] if verdicts["transfer std"].isna().all() else [])
show_table(shown.replace({NOT_MEASURED_HERE: float("nan"), NOT_TESTED: "not tested"}).reset_index(drop=True),
           "tbl-toa-entity-verdicts", "Every transferred entity cell beside its bounds (%), the gap (target-trained "
           "minus transferred, points), the share recovered (%), and the verdicts ('not tested': the source adapter "
           "did not learn its own task); 'majority' is the strongest model-free bound (the capitalisation rule where "
           "it is higher than no entity at all). 'transfer, same sentences' is scored on the random-init control's "
           "sentences (what 'beats random init' compares with 'random init').",
           missing="a number that does not exist or a bound not measured in this run (the verdict does not apply)")
over_twin = verdicts[verdicts["beats random init"].isin(["holds", "does not hold here"])].assign(
    over=lambda v: (v["transfer, same sentences"] - v["random init"]) / v["SE vs random init"])
counts = []
for claim in ("beats zero-shot", "beats random init", "beats majority"):
    for task, group in verdicts[verdicts[claim] != NOT_MEASURED_HERE].groupby("task", sort=False):
        tested = group[group[claim] != NOT_TESTED]
        twin = over_twin[over_twin["task"] == task]
        counts.append({"transfer": claim, "task": task, "pairs": len(group), "tested": len(tested),
                       "holds": int((tested[claim] == "holds").sum()),
                       "more than 2 SE above": int((twin["over"] > 2).sum()) if claim == "beats random init"
                       and len(twin) else float("nan")})
counts = pd.DataFrame(counts, columns=["transfer", "task", "pairs", "tested", "holds", "more than 2 SE above"])
show_table(counts, "tbl-toa-verdict-counts", "Transfer verdicts counted per bound and task, over every transferred "
           "pair: tested where the source adapter learned its task; for the twin, how many tested pairs are more than "
           "two paired standard errors above it.", decimals=0,
           missing="not counted (only the twin has a paired standard error)")
learned = learned_table(rows, model_free)
show_table(learned, "tbl-toa-learned", "Did the target-trained adapter (the diagonal) beat the strongest model-free "
           f"bound (majority; capitalisation for NER and WNUT) by more than {LEARNED_TOL:g} points? Transfer verdicts "
           "test OLAS only where it did; where no adapter of a task did, its transfer cells cannot test OLAS.")
surface_gap = surface_margins(adapters, data, settings)  # entity tasks: the rule on the words the adapter is scored on
show_table(surface_gap.assign(**{"margin, SE": lambda m: (m["margin"] / m["se"]).where(m["se"] > 0)})[
               ["task", "model", "f1", "capitalisation", "margin", "se", "margin, SE", "entities", "sentences"]].rename(
               columns={"f1": "entity F1", "capitalisation": "capitalisation rule", "margin": "margin, points",
                        "se": "standard error", "entities": "test entities", "sentences": "test sentences"}),
           "tbl-toa-surface-margins", "Target-trained entity adapters against the capitalisation rule on the same test "
           "words: entity F1 (%), the margin (points and in standard errors of a paired bootstrap over the test "
           "sentences).", decimals=1, missing="no spread to measure a margin against")
diagonal = rows[rows["diagonal"] & (rows["task"] == "re")]
if len(diagonal):
    majority = float(model_free.loc[model_free["task"] == "re", "score"].iloc[0]) / 100
    se = 100 * (majority * (1 - majority) / settings.re.test) ** 0.5  # binomial, at the majority's accuracy
    re_transfer = verdicts[verdicts["task"] == "re"].assign(
        over=lambda v: (v["transfer"] - 100 * majority) / se if se > 0 else float("nan"))
    re_margins = pd.concat([
        pd.DataFrame({"adapter": "target-trained", "source": diagonal["source"], "target": diagonal["target"],
                      "score": diagonal["score"]}),
        pd.DataFrame({"adapter": "transferred", "source": re_transfer["source"], "target": re_transfer["target"],
                      "score": re_transfer["transfer"]})], ignore_index=True)
    re_margins["above majority, points"] = re_margins["score"] - 100 * majority
    re_margins["above majority, SE"] = re_margins["above majority, points"] / se if se > 0 else float("nan")
    show_table(re_margins, "tbl-toa-re-margins", f"RE adapters against the majority class ({100 * majority:.1f} % "
               f"on {settings.re.test} test sentences), in points and in binomial standard errors at the majority's "
               f"accuracy ({se:.1f} points). 'beats majority' in the verdict tables asks only for more than 0.",
               decimals=1, missing="no spread at 0 or 100 %: standard errors undefined")
recovered = verdicts.dropna(subset=["recovered"]).groupby("task", sort=False).agg(
    pairs=("recovered", "size"), mean=("recovered", "mean"), low=("recovered", "min"), high=("recovered", "max"),
    above_majority=("recovered above majority", "mean")).reset_index()
if len(recovered):
    show_table(recovered.rename(columns={"mean": "recovered, mean %", "low": "lowest %", "high": "highest %",
                                         "above_majority": "share of the margin over the majority, %"}),
               "tbl-toa-recovered", "Share of the target-trained score that transfer keeps, over the pairs whose "
               "target-trained adapter learned (a task with none has no row).", decimals=0)
else:
    display(Markdown("No target-trained adapter learned its task in this run, so no share of its score is defined."))

# %% [markdown]
# ## A position-only bound for DP
#
# The majority bound of DP attaches every word to its neighbour. The syntax chapter's
# distance-only baseline is stronger: the same adapter, trained on the target's own training
# sentences, given only where the words sit (no attention; not to be confused with the
# random-init twin). A transferred DP adapter below it has carried over less than the
# target's word positions alone give. The baseline's job is the syntax chapter's (seed 0), so
# it is read back from the cache where that chapter ran.

# %%
if "dp" in settings.tasks:
    with watch("DP distance-only baselines (read back or train)"):
        dp_models = list(data["dp"])
        baselines = train_adapters([make_job(data["dp"][m]["train"], data["dp"][m]["dev"], input_spec("distance"),
                                             syntax.adapter, settings.training_for("dp"), seed=settings.seeds[0],
                                             model=m, input="distance") for m in dp_models], workers=workers)
        distance_uas = {m: transfer_scores(b, data["dp"][m]["test"])["score"] for m, b in zip(dp_models, baselines)}
    dp_cells = verdicts[verdicts["task"] == "dp"].assign(distance=lambda v: v["target"].map(distance_uas))
    dp_above = dp_cells[dp_cells["transfer"] > dp_cells["distance"]]
    print(f"DP: the targets' distance-only baselines score {value_span(pd.Series(distance_uas))} UAS on their test "
          f"sentences; {len(dp_above)} of {len(dp_cells)} transferred DP adapters score above their target's baseline"
          + (f" ({', '.join(f'{r.source} -> {r.target} {r.transfer:.1f}' for r in dp_above.itertuples())})"
             if len(dp_above) else "") + f", against {(dp_cells['beats majority'] == 'holds').sum()} above the majority bound.")

# %% [markdown]
# ## Does similarity predict transfer?
#
# If OLAS is what carries an adapter across models, pairs whose maps are more alike should
# transfer better. For each ordered source-target pair: transfer beside the pair's order-1
# SSIM retrieval Hits@1 (the retrieval chapter's measure of OLAS; source maps are the gallery,
# target maps the queries), and Spearman's rank correlation over the pairs, per task (the
# transfer score) and pooled over tasks (the share recovered).

# %%
with watch("similarity: Hits@1 (read or compute)"):
    hits, where = similarity_hits(settings, profile=profile, workers=workers)
pairs, spearman = similarity_vs_transfer(verdicts, hits)
print(f"Hits@1 from {where}")
show_table(pairs[["task", "kind", "source", "target", "hits@1", "transfer", "recovered"]], "tbl-toa-similarity",
           "Order-1 retrieval Hits@1 (%) beside transfer (%) and the share recovered, per ordered pair.")
show_table(spearman, "tbl-toa-spearman", "Spearman's rho between Hits@1 and transfer over the pairs (a dash: fewer "
           "than 3 pairs or a constant side).", decimals=2)

# %% [markdown]
# ## The findings, in full
#
# Every finding of the transfer runs, computed from the tables above and those of
# {doc}`07_toa`; the rules are those of {ref}`claims`.

# %% tags=["remove-input"]
findings = []
if len(learned):
    findings.append(f"- Target-trained adapters that beat their task's model-free bound by more than {LEARNED_TOL:g} "
                    "points: " + "; ".join(
                        f"{r['task']} ({r['kind']}) {int(r['above majority'])} of {int(r['models'])}"
                        for _, r in learned.iterrows()) + ".")
re_cells = verdicts[verdicts["task"] == "re"]
for claim in ("beats random init", "beats zero-shot", "beats majority"):
    parts = []
    for task, group in verdicts[verdicts[claim] != "-"].groupby("task", sort=False):
        tested = group[group[claim] != NOT_TESTED]
        if len(tested):
            parts.append(f"{task} {(tested[claim] == 'holds').sum()} of {len(tested)}")
    if parts:
        in_se = ""
        if claim == "beats random init" and len(over_twin):
            in_se = (" More than two paired standard errors above the twin: " + "; ".join(
                f"{task} {(group['over'] > 2).sum()} of {len(group)}" for task, group in over_twin.groupby("task", sort=False))
                + ".")
        if claim == "beats majority" and len(re_cells) and len(diagonal) and se > 0:
            in_se = (f" Of the RE pairs, {(re_transfer['over'] > 2).sum()} of {len(re_transfer)} are more than two "
                     f"binomial standard errors ({se:.1f} points) above the majority class.")
        findings.append(f"- Transfer {claim}, over the pairs whose source adapter learned: " + "; ".join(parts) + "."
                        + in_se)
if "dp" in settings.tasks and len(dp_cells):
    share = len(dp_above) / len(dp_cells)
    findings.append(f"- DP against a position-only bound: {len(dp_above)} of {len(dp_cells)} transferred DP adapters score "
                    f"above the target's distance-only baseline ({value_span(pd.Series(distance_uas))} UAS): "
                    + ("most transferred DP adapters carry less than the target's word positions alone give." if share < 0.5
                       else "half carry more than the target's word positions, half less." if share == 0.5
                       else "most carry more than the target's word positions."))
for task, group in surface_gap.groupby("task", sort=False):
    above, below = int((group["margin"] > 2 * group["se"]).sum()), int((group["margin"] < -2 * group["se"]).sum())
    findings.append(f"- {task}: the target-trained adapters' entity F1 minus the capitalisation rule's on the same "
                    f"words, {value_span(group['margin'])} points (standard errors {value_span(group['se'])}): of "
                    f"{len(group)} adapters, {above} are more than two standard errors above the rule (which reads "
                    f"only the surface form the adapter never sees), {below} more than two below it, "
                    f"{len(group) - above - below} within two.")
for task, group in verdicts.dropna(subset=["recovered"]).groupby("task", sort=False):
    findings.append(f"- {task}: transfer keeps {group['recovered'].mean():.0f} % of the target-trained score on average.")
if len(re_cells):
    published = paper_toa_relation_extraction().drop(index="zero-shot prompting")
    paper_transfer = pd.Series([published.loc[s, t] for s in published.index for t in published.columns if s != t])
    findings.append(f"- Relation extraction, the paper's table: our transfer "
                    f"{value_span(re_cells['transfer'])} % on {settings.re.test} test sentences (majority "
                    f"{float(model_free.loc[model_free['task'] == 're', 'score'].iloc[0]):.1f} %); the paper's "
                    f"transfer {value_span(paper_transfer)} % (source and target differ) with 7,200 training "
                    "sentences, 3-24 times larger models and the official adapter.")
show_findings("findings-toa-full", findings, "No transfer cell could be read at this profile (no rows), so no finding "
              "could be computed.")

# %% tags=["remove-input"]
note = (f"{profile} profile: {settings.re.train}/{settings.ner.train}/{settings.wnut.train}/{syntax.num_train} training "
        "sentences (RE/NER on UNER-EWT/WNUT-17/EWT), CPU-sized adapter, dev-selected checkpoints, fixed test subsets")
record_transfer(results, entity_rows, entity_verdicts, zero_shot[zero_shot["task"].isin(ENTITY_TASKS)],
                bounds[bounds["task"].isin(ENTITY_TASKS)], note)  # DP, POS and RE are recorded by chapter 07
for _, s in spearman.iterrows():
    if pd.notna(s["rho"]):
        results.add(f"toa/spearman/{s['over']}", f"Spearman rho, Hits@1 vs {s['value']} over {s['pairs']} pairs "
                    f"({s['over']})", s["rho"], unit="rho", anchor="tbl-toa-spearman")
results.save()
print(watch.report())
