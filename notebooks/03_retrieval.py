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
# # SSIM retrieval
#
# ```{admonition} What you will learn
# :class: tip
# - how the paper cuts its texts: 50-word chunks, one class per text;
# - what the structural similarity (SSIM) of two maps is, computed in a few lines and checked against two libraries;
# - how Hits@1 and Hits@5 are read off a matrix of SSIM scores, in one line;
# - whether first-order OLA of one model lets you find the same text among another model's maps, and how far
#   above chance that is, beside the paper's numbers.
# ```
#
# The central claim of {cite}`liang2025olas` is that the Order-Level Attention (OLA) of one
# order is similar across language models. Its first test (section 4.1) is a **retrieval**:
# every map of a *target* model is a query, the maps of a *source* model for the same texts are
# the gallery, and the query succeeds when the map of its own text is the most similar one
# (Hits@1) or among the five most similar (Hits@5). Similarity is SSIM, an image measure. This
# chapter does it on one pair of models by hand, then for every pair.
#
# What differs from the paper, and why: {ref}`departures`. In short: smaller models, texts from
# UD English EWT, fewer texts (so chance is higher), and the same recipe otherwise. The retrieval
# runs exactly as the official code runs it (the "official protocol"; {doc}`a1_official_protocol`
# audits that protocol), and other ways of making the maps are compared in {doc}`a2_map_variants`.

# %% tags=["parameters"]
profile = "default"  # smoke, default or paper: sets every size
seeds: list[int] | None = None  # None: the profile's seeds
device: str | None = None  # None: CUDA when available, else CPU

# %% tags=["remove-input"]
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from IPython.display import Markdown
from myst_nb import glue
from skimage.metrics import structural_similarity

from olacore import token_maps
from olacore.maps import make_maps
from olacore.plots import show_figure, show_table
from olacore.profiles import settings
from olacore.report import better, paper_retrieval, published_value, retrieval_keys, verdict
from olacore.results import ChapterResults, OFFICIAL, Stopwatch
from olacore.settings import cpu_workers
from olacore.similarity import chance_hits, hits_at_k, mean_hits, pairwise_ssim, retrieval_grid
from olacore.texts import similarity_texts, text_counts

from chapter_code.retrieval import PAIRS_TABLE, hits_heatmaps, pairs_rows

watch = Stopwatch("03_retrieval")
cfg = settings("quantitative", profile, seeds=seeds)
results = ChapterResults("03_retrieval", profile)
workers = cpu_workers(device)
pd.set_option("display.precision", 3)
OFFICIAL_TAG = "official texts, whole row sink statistics"  # a label of the official protocol's pair records

# %% [markdown]
# ## The texts
#
# The official code (`DataManager` in its `data_utils/data_manager.py`) reads each document
# sentence by sentence into a buffer; as soon as the buffer holds 50 words, its first 50 words
# are one text and the buffer is emptied. A text therefore starts at a sentence start and never
# crosses a document; the rest of an overflowing sentence and the document's tail are dropped.
# The paper cut OntoNotes this way; we cut the documents of UD English EWT, whose words are
# tokenised like OntoNotes' ("do n't"). Each text is one class.

# %%
texts = similarity_texts(cfg.num_texts)
counts = text_counts(cfg.num_texts)
print(f"{len(texts)} texts of {len(texts[0].text.split())} words; the first begins: {texts[0].text[:100]!r}")
print(f"{counts.documents} EWT documents read, {counts.documents_skipped} shorter than one text")

# %% [markdown]
# Every model reads every text once; its attention gives OLA of orders 1 to 3 and the rollout
# (chapter {doc}`01_derivation`), and a second pass gives ALTI, a contribution method we compare
# with. Each map is then resized to 50 x 50 pixels, as the paper does, with the attention sinks
# (columns that take most of the attention, chapter {doc}`02_qualitative`) cleaned by the official
# rule. The maps are cached, so this is fast after the first run.

# %% tags=["hide-input"]
CHANNELS = ("order1", "order2", "order3", "rollout", "alti")
groups = {"causal": cfg.causal, "encoder": cfg.encoders}
names = [name for kind in groups.values() for name in kind]
with watch("OLA (extraction or cache)"):
    for name in names:
        token_maps(name, [t.text for t in texts], CHANNELS[:4], device=device, workers=workers)
with watch("ALTI (extraction or cache)"):
    tokens = {name: token_maps(name, [t.text for t in texts], CHANNELS, device=device, workers=workers)
              for name in names}
official_maps = {"align": "resize", "sinks": "clean", "size": cfg.size, "sink_stats": "row"}

# %% [markdown]
# ## SSIM of two maps
#
# SSIM {cite}`wang2004ssim` compares two images $x$ and $y$ window by window. Around each pixel,
# a Gaussian window (standard deviation 1.5 pixels, 11 taps) gives the local means $\mu_x,
# \mu_y$, variances $\sigma_x^2, \sigma_y^2$ and covariance $\sigma_{xy}$; then
#
# $$
# \mathrm{SSIM}(x, y) = \operatorname{mean}_{\text{pixels}}
# \frac{(2\mu_x\mu_y + C_1)(2\sigma_{xy} + C_2)}{(\mu_x^2 + \mu_y^2 + C_1)(\sigma_x^2 + \sigma_y^2 + C_2)},
# $$
#
# with $C_1 = (0.01 R)^2$ and $C_2 = (0.03 R)^2$, the mean taken over the pixels whose window lies
# inside the image. The first factor compares brightness, the second structure; both are 1 for
# identical windows. $R$ is the range of the values: like the
# official script, we take the larger of the two maps' max - min. Here it is in a few lines:

# %%
def ssim(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    t = torch.arange(-5, 6, dtype=x.dtype)
    g = torch.exp(-0.5 * (t / 1.5) ** 2)
    window = (g[:, None] * g[None, :] / g.sum() ** 2)[None, None]  # 11 x 11 Gaussian, sums to 1
    blur = lambda a: F.conv2d(a[None, None], window)[0, 0]  # local mean, only where the window fits  # noqa: E731
    mx, my = blur(x), blur(y)
    vx, vy, cxy = blur(x * x) - mx**2, blur(y * y) - my**2, blur(x * y) - mx * my
    r = torch.maximum(x.max() - x.min(), y.max() - y.min())
    c1, c2 = (0.01 * r) ** 2, (0.03 * r) ** 2
    return ((2 * mx * my + c1) * (2 * cxy + c2) / ((mx**2 + my**2 + c1) * (vx + vy + c2))).mean()

# %% [markdown]
# Take one pair of models: the first causal model is the source (its maps form the gallery),
# the second the target (its maps are the queries), first-order OLA. Our function, the
# package's batched `olacore.similarity.pairwise_ssim` and scikit-image's `structural_similarity`
# must agree on every pair we try.

# %%
source, target = cfg.causal[0], cfg.causal[1]
pair_maps = {name: make_maps(tokens[name], words=texts, **official_maps) for name in (source, target)}
order1 = pair_maps[source].channels.index("order1")
gallery = pair_maps[source].stack()[:, order1]  # (texts, 50, 50): one map per text
queries = pair_maps[target].stack()[:, order1]
matrix = pairwise_ssim(queries, gallery, None)  # (queries, gallery), in the maps' float32
for i, j in [(0, 0), (0, 1), (1, 0)]:
    q, g = queries[i].double(), gallery[j].double()
    ours = ssim(q, g).item()
    scikit = structural_similarity(q.numpy(), g.numpy(), gaussian_weights=True, sigma=1.5, use_sample_covariance=False,
                                   data_range=max(q.max() - q.min(), g.max() - g.min()).item())
    print(f"query {i}, gallery {j}: ours {ours:.6f}, olacore {matrix[i, j]:.6f}, scikit-image {scikit:.6f}")
    assert abs(ours - scikit) < 1e-9 and abs(ours - matrix[i, j]) < 1e-5  # float64 vs float64; vs float32

# %% tags=["remove-input"]
same_text = torch.eye(len(matrix), dtype=torch.bool)
fig, ax = plt.subplots(figsize=(4.5, 3.8))
image = ax.imshow(matrix, cmap="viridis")
ax.set(xlabel=f"gallery: {source}, text", ylabel=f"query: {target}, text", title="SSIM, order 1")
fig.colorbar(image, ax=ax, label="SSIM")
show_figure(fig, "fig-ssim-matrix", f"SSIM between the order-1 maps of {target} (rows: queries) and {source} "
            f"(columns: gallery) for {len(matrix)} texts, maps resized to {cfg.size} x {cfg.size}, sinks cleaned; "
            "the diagonal pairs each text with itself. Colour: SSIM (no unit).")
glue("same-ssim", float(matrix[same_text].mean()), display=False)
glue("other-ssim", float(matrix[~same_text].mean()), display=False)

# %% [markdown]
# In {numref}`fig-ssim-matrix` the diagonal holds the pairs of the same text: on average
# {glue:text}`same-ssim:.3f` against {glue:text}`other-ssim:.3f` for two different texts.

# %% [markdown]
# ## Hits@k from the SSIM matrix
#
# Row $i$ of the matrix ranks every gallery map for query $i$. The right answer is the
# diagonal entry; its rank is one plus the number of other entries at least as high (a tie
# counts against the query). Hits@k is the share of queries whose rank is at most $k$:

# %%
rank = (matrix >= matrix.diagonal()[:, None]).sum(1)
hits = {k: (rank <= k).double().mean().item() for k in (1, 5)}
print(f"Hits@1 {100 * hits[1]:.1f} %, Hits@5 {100 * hits[5]:.1f} %; olacore.similarity.hits_at_k: {hits_at_k(matrix, (1, 5))}")
assert hits == hits_at_k(matrix, (1, 5))

# %% [markdown]
# With $N$ texts, a random ranking puts the right one first with probability $1/N$ and in the
# top five with $5/N$: that is chance.

# %% [markdown]
# ## Every pair of models
#
# `olacore.similarity.retrieval_grid` does the two steps above for every ordered (source, target)
# pair of models of the same kind (causal models with causal models, encoders with encoders)
# and every channel. Our by-hand pair must be one of its rows.

# %%
with watch("SSIM retrieval"):
    faithful = retrieval_grid(tokens, groups, {"resize, clean": official_maps}, words=texts)
row = faithful.query("source == @source and target == @target and channel == 'order1'").iloc[0]
assert (row["hits@1"], row["hits@5"]) == (hits[1], hits[5])
chance1, chance5 = chance_hits(len(texts), 1), chance_hits(len(texts), 5)

# %% tags=["remove-input"]
pivot = faithful.pivot_table(index=["group", "source", "target"], columns="channel", values=["hits@1", "hits@5"]) * 100
show_table(pivot, "tbl-retrieval", "SSIM retrieval under the official protocol (official texts, maps resized to "
           "50 x 50, sinks cleaned with whole-row statistics): Hits@1 and Hits@5 (%) for every ordered (source, target) "
           f"pair of the same kind, {len(texts)} texts (chance: Hits@1 {100 * chance1:.1f} %, "
           f"Hits@5 {100 * chance5:.1f} %).", decimals=1)

# %% tags=["remove-input"]
fig = hits_heatmaps(faithful, groups, CHANNELS, title=f"Hits@1 % (official protocol; chance {100 * chance1:.1f} %)")
show_figure(fig, "fig-retrieval-heatmaps", f"Hits@1 (%) of SSIM retrieval under the official protocol for every "
            f"ordered pair of models of the same kind ({len(texts)} texts, maps {cfg.size} x {cfg.size}, sinks cleaned; "
            f"chance {100 * chance1:.1f} %): one row of panels per channel, one column per kind of model; in a panel, "
            "rows are the source (gallery) model, columns the target (query) model.")

# %% [markdown]
# ## Ours beside the paper
#
# The paper reports first-order retrieval for four pairs of its causal models (1000 texts).
# Each of our causal pairs stands beside the paper's pair of the same families, where it has
# one: our Qwen2.5 for its Qwen2, Gemma-3 for Gemma-2, SmolLM2 (a Llama-architecture model) for
# Llama-3.2. The paper reports nothing for encoders.

# %% tags=["remove-input"]
published = paper_retrieval()
causal_pairs = faithful[faithful["group"].eq("causal") & faithful["channel"].eq("order1")]


def paper_hits(s: str, t: str, metric: str) -> float:
    """The paper's Hits@k (%) for its pair of the same families as ours, NaN where it reports none."""
    keys = retrieval_keys(s, t, metric)
    return float(np.mean([published_value(k) for k in keys])) if keys else np.nan


beside = pd.DataFrame([{"source": r["source"], "target": r["target"], "ours Hits@1 %": 100 * r["hits@1"],
                        "paper Hits@1 %": paper_hits(r["source"], r["target"], "hits@1"),
                        "ours Hits@5 %": 100 * r["hits@5"], "paper Hits@5 %": paper_hits(r["source"], r["target"], "hits@5")}
                       for _, r in causal_pairs.iterrows()]).set_index(["source", "target"])
beside.loc[("mean over pairs", ""), :] = beside.mean()
show_table(beside, "tbl-retrieval-pairs", f"First-order SSIM retrieval between causal models under the official "
           f"protocol, ours ({len(texts)} texts; chance Hits@1 {100 * chance1:.1f} %) beside the paper's pair of the "
           "same families (1000 texts, its models; chance 0.1 %); the paper's mean row is over the pairs it reports.",
           decimals=1, missing="the paper reports no pair of these families")

# %% tags=["remove-input"]
for _, r in causal_pairs.iterrows():  # every causal pair, with the published numbers of the same families
    for metric in ("hits@1", "hits@5"):
        chance = chance1 if metric == "hits@1" else chance5
        results.add(f"retrieval/causal/{r['source']}->{r['target']}/order1/{metric}/{OFFICIAL_TAG}",
                    f"{metric}, {r['source']} -> {r['target']}, order 1, {OFFICIAL_TAG} sink statistics",
                    100 * r[metric], chance=100 * chance, protocol="official", verdict=verdict(r[metric], chance),
                    paper_keys=retrieval_keys(r["source"], r["target"], metric),
                    subject=f"{r['source']} -> {r['target']}", anchor="tbl-retrieval-pairs")
results.add_table(PAIRS_TABLE, pairs_rows(causal_pairs, OFFICIAL))  # the same numbers as typed rows: a5 reads them
for kind in groups:
    for channel in ("order1", "order2", "rollout", "alti"):
        value = mean_hits(faithful, group=kind, channel=channel)
        published_mean = (kind, channel) == ("causal", "order1")  # the pairs' own rows carry each published pair
        results.add(f"retrieval/{kind}/{channel}/hits@1", f"same-order OLA retrievable across {kind} models (SSIM Hits@1, "
                    f"{channel}, mean over pairs{'; paper: the mean of its 4 causal pairs' if published_mean else ''})",
                    100 * value, chance=100 * chance1, verdict=verdict(value, chance1), protocol="official",
                    paper=published["hits@1"].mean() if published_mean else None, anchor="tbl-retrieval")
first, roll, alti = (mean_hits(faithful, group="causal", channel=c) for c in ("order1", "rollout", "alti"))
results.add("retrieval/causal/order1-minus-rollout", "1st-order OLA is more similar across causal models than rollout "
            "(SSIM Hits@1)", 100 * (first - roll), unit="points", verdict=better(first, roll), anchor="tbl-retrieval")
_ = results.add("retrieval/causal/order1-minus-alti", "1st-order OLA is more similar across causal models than ALTI "
            "(SSIM Hits@1)", 100 * (first - alti), unit="points", verdict=better(first, alti), protocol="official",
            anchor="tbl-retrieval")

# %% [markdown]
# ## Verdicts
#
# Each claim gets one word by the rules of {ref}`claims`: the measured rate against chance, or
# the sign of a difference of two rates.

# %% tags=["remove-input"]
headline = [r for r in results.records if "->" not in r.key]
show_table(pd.DataFrame([{"claim": r.claim, "ours": r.value, "unit": r.unit, "chance %": r.chance, "paper": r.paper,
                          "verdict": r.verdict} for r in headline]),
           "tbl-verdicts", "Verdicts on the retrieval claims (rules: the page on how claims are judged): our Hits@1 "
           "and chance (%), official protocol, with the paper's number where it has one. Points: differences of two "
           "rates.", decimals=1, missing="no number")
by_key = {r.key: r for r in results.records}
glue("n-texts", len(texts), display=False)
glue("chance1", float(100 * chance1), display=False)
glue("pair-source", Markdown(source), display=False)
glue("pair-target", Markdown(target), display=False)
glue("pair-hits1", float(100 * hits[1]), display=False)
glue("pair-hits5", float(100 * hits[5]), display=False)
for kind in groups:
    glue(f"{kind}-order1", float(by_key[f"retrieval/{kind}/order1/hits@1"].value), display=False)
    glue(f"{kind}-order1-verdict", Markdown(by_key[f"retrieval/{kind}/order1/hits@1"].verdict), display=False)
    glue(f"{kind}-order1-x-chance", float(by_key[f"retrieval/{kind}/order1/hits@1"].value / (100 * chance1)), display=False)
    glue(f"{kind}-rollout", float(by_key[f"retrieval/{kind}/rollout/hits@1"].value), display=False)
glue("paper-causal-order1", float(published["hits@1"].mean()), display=False)
glue("causal-order1-hits5", float(100 * mean_hits(faithful, "hits@5", group="causal", channel="order1")), display=False)
glue("causal-alti", float(100 * alti), display=False)


def points_beside(a: float, b: float) -> Markdown:
    """'x points above' / 'x points below' / 'level with': rate a against rate b (fractions)."""
    return Markdown(f"{abs(100 * (a - b)):.1f} points {'above' if a > b else 'below'}" if a != b else "level with")


glue("rollout-vs", points_beside(first, roll), display=False)
glue("alti-vs", points_beside(first, alti), display=False)

# %% [markdown]
# ## Summary
#
# On one pair ({glue:md}`pair-target` queried against {glue:md}`pair-source`), SSIM of
# first-order OLA found the right text first for {glue:text}`pair-hits1:.1f` % of the
# {glue:text}`n-texts` texts, and among the top five for {glue:text}`pair-hits5:.1f` %, where
# chance is {glue:text}`chance1:.1f` %. Over every pair of causal models, first-order Hits@1
# averages {glue:text}`causal-order1:.1f` % (Hits@5 {glue:text}`causal-order1-hits5:.1f` %),
# {glue:text}`causal-order1-x-chance:.1f` times chance: the verdict is
# **{glue:md}`causal-order1-verdict`**. The paper's four causal pairs average
# {glue:text}`paper-causal-order1:.1f` % among 1000 texts; our models are 3 to 70 times smaller
# and we rank among fewer texts, so compare each number with its own chance level rather than
# the two directly. Between the
# encoders, first-order Hits@1 is {glue:text}`encoder-order1:.1f` %
# (**{glue:md}`encoder-order1-verdict`**).
#
# The order matters. Rollout, which mixes all orders, reaches {glue:text}`causal-rollout:.1f` %
# across causal models, so first-order OLA sits {glue:md}`rollout-vs` it; ALTI reaches
# {glue:text}`causal-alti:.1f` % (first order {glue:md}`alti-vs` it). A map of one
# order keeps what is specific to the text; a mixture of orders looks alike for every text, as
# chapter {doc}`02_qualitative` showed by eye.
#
# Retrieval selects nothing and trains nothing, so these numbers depend only on the models, the
# texts and the map recipe. {doc}`a2_map_variants` changes the recipe (word pooling instead of
# resizing, raw sinks, other sink statistics, other texts) and {doc}`a3_more_models` adds a larger
# model and a third encoder family. The next chapter, {doc}`04_proxy`, asks the same question
# with a trained network instead of SSIM.

# %% tags=["remove-input"]
results.save()
print(watch.report())

# %% [markdown]
# ## Exercises
#
# ```{exercise} Retrieval the other way round
# :label: ex-03-swap
# Swap the roles of the two models of the by-hand pair (the second causal model's maps are now
# the gallery), build the SSIM matrix for orders 1 and 2, and compute Hits@1 and Hits@5 yourself
# from the rank of the right text in each row. Is retrieval symmetric in source and target?
# ```
#
# ```{solution-start} ex-03-swap
# :class: dropdown
# ```

# %%
for channel in ("order1", "order2"):
    index = pair_maps[source].channels.index(channel)
    swapped = pairwise_ssim(pair_maps[source].stack()[:, index], pair_maps[target].stack()[:, index], None)
    rank = (swapped >= swapped.diagonal()[:, None]).sum(1)
    print(f"{channel}: Hits@1 {100 * (rank <= 1).double().mean():.1f} %, Hits@5 {100 * (rank <= 5).double().mean():.1f} %")

# %% [markdown]
# The numbers equal the row (source {glue:md}`pair-target`, target {glue:md}`pair-source`)
# of {numref}`tbl-retrieval`. SSIM itself is symmetric, but Hits@k is not: swapping the models
# transposes the matrix, and the ranks are taken along the other axis.
#
# ```{solution-end}
# ```
#
# ```{exercise} Where the sink statistics are taken
# :label: ex-03-sinks
# The official sink rule zeroes, in each row, the maximum and every entry above mean + 3
# standard deviations, with the statistics over the whole row, including the zeros above a
# causal map's diagonal. Count, on the target model's first three texts, how many entries are
# flagged when the statistics are taken over the causal part of each row only.
# ```
#
# ```{solution-start} ex-03-sinks
# :class: dropdown
# ```

# %%
from olacore.maps import sink_flags

for item in tokens[target][:3]:  # first three texts, token level, raw
    m = item.maps[item.channels.index("order1")]
    row, causal = (sink_flags(m, causal=True, stats=s) for s in ("row", "causal"))
    print(f"{m.shape[0]} rows: flagged {int(row.sum())} (whole row) / {int(causal.sum())} (causal part), "
          f"by one rule only {int((row ^ causal).sum())}")

# %% [markdown]
# Both rules flag the row maximum, mostly the first token of a causal model. Over the whole
# row, the zeros above the diagonal pull the mean and standard deviation down, most in the
# early rows, so the whole-row rule flags a few more entries. {doc}`a2_map_variants` measures
# what that changes in retrieval.
#
# ```{solution-end}
# ```
