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
# # Appendix: map variants
#
# This appendix checks whether the way the maps and texts are made moves the results: sink statistics over the whole
# row or the causal part, official or stream texts, resizing or word pooling, raw or cleaned sinks.
# It is linked from chapters {doc}`03_retrieval` and {doc}`04_proxy`, which use the official recipe throughout.
#
# **The official recipe** (`DataManager` in the official `data_utils/data_manager.py`, with
# `do_classify_data_generate`): each document is read sentence by sentence into a buffer; as
# soon as the buffer holds 50 words, its first 50 are one text and the buffer is emptied. So a
# text never crosses a document, always starts at a sentence start, the rest of the sentence
# that overflows is dropped, and so is the document's tail; a document shorter than one chunk
# gives none. `ClassifyDataset` (official `data_utils/ola_dataset.py`) joins the words with
# single spaces.
#
# **The stream recipe** (this book's earlier choice, kept as a variant): consecutive 50-word
# chunks of EWT's surface tokens in file order, crossing sentence and document ends, with the
# treebank's own spacing. Both sets have the profile's size; the causal models are also run on
# the stream texts (first order only), to measure what the recipe changes.
#
# **Maps.** Every map is made comparable two ways: the paper's **resize** of the whole token x token
# map to 50 x 50, and our **word pooling** onto the 50 words (no resampling), each with the
# attention sinks left **raw** or **cleaned**. The official retrieval script
# (`olas_retrieval.py`) retrieves on cleaned maps, resized. Its sink rule (`get_outliers_mask`
# in the official `models/ola_utils.py`): in each row, every entry equal to the row maximum and
# every entry above mean + 3 sample standard deviations is zeroed, the row renormalised. The
# statistics run over the **whole row** even for causal models, the structural zeros above
# the diagonal included, because the script builds its dataset without the causal flag
# (`is_casual=False`); only the official TOA path (`OLAModel.forward` in `models/ola_model.py`)
# takes them over the causal part. We run both: whole-row (official) and causal-part statistics.

# %% tags=["parameters"]
profile = "default"  # smoke, default or paper: sets every size
seeds: list[int] | None = None  # None: the profile's seeds
device: str | None = None  # None: CUDA when available, else CPU

# %% tags=["remove-input"]
import numpy as np
import pandas as pd
from myst_nb import glue

from olacore import token_maps
from olacore.maps import make_maps
from olacore.plots import show_table
from olacore.profiles import settings
from olacore.proxy import leave_one_out, proxy_experiment
from olacore.report import published_value, retrieval_keys, verdict
from olacore.results import ChapterResults, Stopwatch
from olacore.settings import cpu_workers
from olacore.similarity import chance_hits, retrieval_grid
from olacore.texts import similarity_texts, text_counts

watch = Stopwatch("a2_map_variants")
cfg = settings("quantitative", profile, seeds=seeds)
results = ChapterResults("a2_map_variants", profile)
workers = cpu_workers(device)
pd.set_option("display.precision", 3)

# %%
CHANNELS = ("order1", "order2", "order3", "rollout", "alti")
groups = {"causal": cfg.causal, "encoder": cfg.encoders}
with watch("texts"):
    texts = similarity_texts(cfg.num_texts)
    stream = similarity_texts(cfg.num_texts, recipe="stream")
    counts = text_counts(cfg.num_texts)
print(f"{len(texts)} texts of 50 words by the official recipe; the first begins: {texts[0].text[:120]!r}")
print(f"EWT documents read: {counts.documents}, of which {counts.documents_skipped} skipped as shorter than one chunk; "
      f"{counts.words_dropped} of their {counts.words_read} words fall in no text (overflowing sentences, document tails)")
print(f"the stream recipe's first text begins: {stream[0].text[:120]!r}")
names = [name for names in groups.values() for name in names]
with watch("OLA and ALTI (extraction or cache)"):
    tokens = {name: token_maps(name, [t.text for t in texts], CHANNELS, device=device, workers=workers)
              for name in names}
with watch("stream texts, order 1, causal models (extraction or cache)"):
    stream_tokens = {name: token_maps(name, [t.text for t in stream], ("order1",), device=device, workers=workers)
                     for name in cfg.causal}
pd.DataFrame([{"model": n, "kind": k, "mean tokens per text (official recipe)": np.mean([len(t.tokens) for t in tokens[n]]),
               "(stream recipe)": np.mean([len(t.tokens) for t in stream_tokens[n]]) if n in stream_tokens else np.nan}
              for k, names_ in groups.items() for n in names_])

# %% [markdown]
# ## Retrieval under every variant
#
# Each target map queries all source maps of the same channel; SSIM as in chapter
# {doc}`03_retrieval`. Causal models are only compared with causal models, encoders with encoders.

# %%
STATS = {"whole-row sink statistics (official)": "row", "causal-part sink statistics": "causal"}
variants = {"resize, clean": {"align": "resize", "sinks": "clean", "size": cfg.size, "sink_stats": "row"},
            "resize, clean, causal-part statistics": {"align": "resize", "sinks": "clean", "size": cfg.size,
                                                      "sink_stats": "causal"},
            "resize, raw": {"align": "resize", "sinks": "raw", "size": cfg.size},
            "words, raw": {"align": "words", "sinks": "raw"},
            "words, clean": {"align": "words", "sinks": "clean"}}
with watch("SSIM retrieval"):
    retrieval = retrieval_grid(tokens, groups, variants, words=texts)
    stream_retrieval = retrieval_grid(stream_tokens, {"causal": cfg.causal},
                                      {label: {"align": "resize", "sinks": "clean", "size": cfg.size, "sink_stats": stats}
                                       for label, stats in STATS.items()}, words=stream)
chance1, chance5 = chance_hits(len(texts), 1), chance_hits(len(texts), 5)
print(f"Chance level with {len(texts)} texts: Hits@1 = {100 * chance1:.1f} %, Hits@5 = {100 * chance5:.1f} %")

# %% [markdown]
# ### Sink statistics and text recipes, pair by pair
#
# First-order Hits@1 (%) of every ordered pair of causal models under both sink statistics and
# both text recipes (maps resized, sinks cleaned), with the paper's number for the pair of
# its models of the same families where it reported one (our Qwen2.5 for its Qwen2, Gemma-3
# for Gemma-2, SmolLM2, a Llama-architecture model, for Llama-3.2).

# %%
protocols = [  # (table, its variant, text recipe, sink statistics)
    (retrieval, "resize, clean", "official texts", "whole row"),
    (retrieval, "resize, clean, causal-part statistics", "official texts", "causal part"),
    (stream_retrieval, "whole-row sink statistics (official)", "stream texts", "whole row"),
    (stream_retrieval, "causal-part sink statistics", "stream texts", "causal part"),
]
by_protocol = pd.concat([
    table[(table["variant"] == variant) & (table["group"] == "causal") & (table["channel"] == "order1")].assign(
        recipe=recipe, stats=stats)
    for table, variant, recipe, stats in protocols])
pair_table = (100 * by_protocol.pivot_table(index=["source", "target"], columns=["recipe", "stats"], values="hits@1",
                                           sort=False))
pair_table[("paper", "Hits@1 (same families)")] = [
    np.mean([published_value(k) for k in retrieval_keys(s, t)]) if retrieval_keys(s, t) else np.nan
    for s, t in pair_table.index]
show_table(pair_table, "tbl-retrieval-protocols", "First-order SSIM retrieval between causal models, Hits@1 (%): "
           "official texts (document-bounded, from sentence starts) or stream texts, sinks cleaned with whole-row "
           "(as the official olas_retrieval.py and olas_visual_model.py) or causal-part statistics; maps resized to 50 x 50; the paper's Hits@1 for "
           "its pair of the same families (1000 texts, its models).", decimals=1)

# %% [markdown]
# ### Resize vs words, raw vs clean sinks
#
# Mean Hits@1 (%) over the ordered pairs of each kind, official texts.

# %%
by_variant = retrieval.groupby(["group", "variant", "channel"])["hits@1"].mean().unstack("channel")[list(CHANNELS)] * 100
show_table(by_variant, "tbl-retrieval-variants", f"SSIM retrieval, Hits@1 (%) averaged over the ordered pairs of each "
           f"kind, official texts ({len(texts)}; chance {100 * chance1:.1f} %), for each way of making the maps: resized "
           "to 50 x 50 or pooled onto the words, sinks raw or cleaned (with whole-row or causal-part statistics).",
           decimals=1)

# %% [markdown]
# ## Sink statistics and text recipes in the proxy
#
# The held-out protocol of chapter {doc}`04_proxy` on first-order maps of the causal models,
# changing one thing at a time: sinks cleaned with causal-part statistics instead of whole-row
# ones, or the stream texts instead of the official ones (the first `proxy_num_texts` of each set).

# %%
n = cfg.proxy_num_texts
proxy_chance = 100 / n
with watch("proxy, order 1, official texts (training or cache)"):
    held_out_order1, _ = proxy_experiment(
        {name: make_maps(tokens[name][:n], align="resize", sinks="clean", size=cfg.proxy_size, sink_stats="row")
         for name in cfg.causal}, leave_one_out(cfg.causal), [("order1",)], cfg.proxy, cfg.seeds, device=device,
        workers=workers)
VARIANTS = {"causal-part sink statistics": (tokens, "causal"), "stream texts": (stream_tokens, "row")}
variant_maps = {f"{label}|{name}": make_maps(source[name][:n], align="resize", sinks="clean", size=cfg.proxy_size,
                                             sink_stats=stats)
                for label, (source, stats) in VARIANTS.items() for name in cfg.causal}
variant_splits = [([f"{label}|{s}" for s in sources], f"{label}|{target}")
                  for label in VARIANTS for sources, target in leave_one_out(cfg.causal)]
with watch("proxy variants: sink statistics, text recipe (training or cache)"):
    both, _ = proxy_experiment(variant_maps, variant_splits, [("order1",)], cfg.proxy, cfg.seeds, device=device,
                               workers=workers)
both[["variant", "target"]] = both["target"].str.split("|", expand=True)
variant_runs = {"official texts, whole-row sink statistics": held_out_order1,
                **{label: both[both["variant"].eq(label)] for label in VARIANTS}}
variant_table = pd.DataFrame({label: 100 * r.groupby("target", sort=False)["test_acc"].mean()
                              for label, r in variant_runs.items()}).T
variant_table["mean over targets"] = variant_table.mean(axis=1)
show_table(variant_table, "tbl-proxy-variants", "Visual proxy, held-out protocol, first-order OLA, causal targets: "
           f"accuracy (%), mean over seeds {list(cfg.seeds)}, official texts with whole-row sink statistics (as "
           "chapter 04_proxy), then one change at a time.", decimals=1)

# %% tags=["remove-input"]
for _, r in by_protocol.iterrows():
    tag = f"{r['recipe']}, {r['stats']} sink statistics"
    if (r["recipe"], r["stats"]) == ("official texts", "whole row"):
        continue  # the official protocol's pairs: recorded by chapter 03_retrieval
    for metric in ("hits@1", "hits@5"):
        results.add(f"retrieval/causal/{r['source']}->{r['target']}/order1/{metric}/{tag}",
                    f"{metric}, {r['source']} -> {r['target']}, order 1, {tag}", 100 * r[metric],
                    chance=100 * (chance1 if metric == "hits@1" else chance5), protocol="",
                    verdict=verdict(r[metric], chance1 if metric == "hits@1" else chance5),
                    paper_keys=[], subject=f"{r['source']} -> {r['target']}", anchor="tbl-retrieval-protocols")
for target in cfg.causal:
    for label, r in variant_runs.items():
        results.add(f"proxy/causal/{target}/order1/honest/{label}", f"proxy accuracy on {target}, order 1, {label}",
                    100 * r[r["target"].eq(target)]["test_acc"].mean(), chance=proxy_chance, anchor="tbl-proxy-variants")
means = by_protocol.groupby(["recipe", "stats"])["hits@1"].mean() * 100
glue("a2-official", float(means[("official texts", "whole row")]), display=False)
glue("a2-causal-part", float(means[("official texts", "causal part")]), display=False)
glue("a2-stream", float(means[("stream texts", "whole row")]), display=False)
order1 = by_variant["order1"]
glue("a2-words-clean", float(order1[("causal", "words, clean")]), display=False)
glue("a2-resize-raw", float(order1[("causal", "resize, raw")]), display=False)
glue("a2-proxy-official", float(variant_table.loc["official texts, whole-row sink statistics", "mean over targets"]),
     display=False)
glue("a2-proxy-causal-part", float(variant_table.loc["causal-part sink statistics", "mean over targets"]), display=False)
glue("a2-proxy-stream", float(variant_table.loc["stream texts", "mean over targets"]), display=False)
glue("a2-chance1", float(100 * chance1), display=False)
glue("a2-proxy-chance", float(proxy_chance), display=False)
results.save()
print(watch.report())

# %% [markdown]
# ## Finding
#
# Over the causal pairs, first-order Hits@1 is {glue:text}`a2-official:.1f` % with the official
# recipe, {glue:text}`a2-causal-part:.1f` % with the sink statistics over the causal part, and
# {glue:text}`a2-stream:.1f` % on the stream texts (chance {glue:text}`a2-chance1:.1f` %).
# Pooling onto words with clean sinks gives {glue:text}`a2-words-clean:.1f` %, resizing with raw
# sinks {glue:text}`a2-resize-raw:.1f` %. In the proxy, the three recipes give
# {glue:text}`a2-proxy-official:.1f` %, {glue:text}`a2-proxy-causal-part:.1f` % and
# {glue:text}`a2-proxy-stream:.1f` % (chance {glue:text}`a2-proxy-chance:.1f` %). How much each
# choice matters is read from the distance between these numbers against the seed spread of
# {numref}`tbl-proxy` and the step of one text in Hits@1.
