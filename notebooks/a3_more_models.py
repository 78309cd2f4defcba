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
# # Appendix: more models
#
# This appendix checks whether model size changes OLAS (a larger model of one family beside the grid's) and whether
# the encoder claim holds beyond one pair of encoders (a third encoder family).
# It is linked from chapters {doc}`03_retrieval` and {doc}`04_proxy`; both sections run where the profile names the
# extra models (the `default` profile does; at `smoke` only the grid's own per-model numbers below are measured).

# %% tags=["parameters"]
profile = "default"  # smoke, default or paper: sets every size
seeds: list[int] | None = None  # None: the profile's seeds
device: str | None = None  # None: CUDA when available, else CPU

# %% tags=["remove-input"]
import itertools

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display
from myst_nb import glue

from olacore import token_maps
from olacore.maps import make_maps
from olacore.plots import show_figure, show_table
from olacore.profiles import settings
from olacore.proxy import leave_one_out, proxy_experiment
from olacore.report import paper_proxy, published_value, retrieval_keys, verdict
from olacore.results import ChapterResults, Stopwatch
from olacore.settings import cpu_workers
from olacore.similarity import chance_hits, mean_hits, retrieval_grid, retrieval_table
from olacore.texts import similarity_texts

from chapter_code.retrieval import hits_heatmaps

watch = Stopwatch("a3_more_models")
cfg = settings("quantitative", profile, seeds=seeds)
results = ChapterResults("a3_more_models", profile)
workers = cpu_workers(device)
pd.set_option("display.precision", 3)

# %% tags=["hide-input"]
# the grid of chapters 03_retrieval and 04_proxy, read back from the cache: maps, retrieval, first-order proxy runs
CHANNELS = ("order1", "order2", "order3", "rollout", "alti")
groups = {"causal": cfg.causal, "encoder": cfg.encoders}
texts = similarity_texts(cfg.num_texts)
n = cfg.proxy_num_texts
with watch("OLA and ALTI (extraction or cache)"):
    tokens = {name: token_maps(name, [t.text for t in texts], CHANNELS, device=device, workers=workers)
              for kind in groups.values() for name in kind}
variants = {"resize, clean": {"align": "resize", "sinks": "clean", "size": cfg.size, "sink_stats": "row"}}
with watch("SSIM retrieval"):
    faithful = retrieval_grid(tokens, groups, variants, words=texts)
chance1, chance5 = chance_hits(len(texts), 1), chance_hits(len(texts), 5)
proxy_chance = 100 / n
proxy_maps = {name: make_maps(t[:n], align="resize", sinks="clean", size=cfg.proxy_size, sink_stats="row")
              for name, t in tokens.items()}
with watch("proxy, order 1 (training or cache)"):
    runs, _ = proxy_experiment(proxy_maps, leave_one_out(cfg.causal) + leave_one_out(cfg.encoders), [("order1",)],
                               cfg.proxy, cfg.seeds, device=device, workers=workers)

# %% [markdown]
# ## Each grid model's own retrieval
#
# Before adding models: how retrievable is each model of the grid? For every model, the mean
# first-order Hits@1 (official protocol) over the ordered pairs it is part of, as source or
# target, beside its number of layers.

# %%
order1 = faithful[faithful["channel"].eq("order1")]
per_model = pd.DataFrame([{"model": m, "kind": kind, "tokens per text": np.mean([len(t.tokens) for t in tokens[m]]),
                           "mean Hits@1 % over its pairs": 100 * order1[order1["source"].eq(m) | order1["target"].eq(m)]
                           ["hits@1"].mean()} for kind, names in groups.items() for m in names]).set_index("model")
show_table(per_model, "tbl-per-model-retrieval", f"First-order SSIM retrieval under the official protocol, per model of "
           f"the grid: mean Hits@1 (%) over the ordered pairs of its kind that it is part of (as source or target), "
           f"{len(texts)} texts (chance {100 * chance1:.1f} %).", decimals=1)
for m, r in per_model.iterrows():
    results.add(f"size/grid/{m}/order1/hits@1", f"Hits@1 of {m} over the pairs of its kind it is part of, order 1, "
                "official protocol", r["mean Hits@1 % over its pairs"], chance=100 * chance1, protocol="official",
                subject=m, anchor="tbl-per-model-retrieval")

# %% [markdown]
# ## Does model size change OLAS?
#
# The paper's causal models are 1.5B to 9B parameters; the grid of chapters {doc}`03_retrieval` and {doc}`04_proxy` runs 135M to 500M ones.
# Is a larger model of one family more, or less, OLAS-similar to the other families? This
# section adds one larger model of the family of one grid model (the profile's `size_models`:
# at `default` Qwen2.5-Coder-1.5B-Instruct, 28 layers, hidden size 1536, 12 heads, the shape of
# the paper's Qwen2-1.5B-Instruct, beside the grid's Qwen2.5-Coder-0.5B) and measures it the
# way the grid measures its models, so that the two Qwens compare number for number:
#
# - **Retrieval, official protocol**: first-order OLA of the same official texts, maps resized
#   to 50 x 50, sinks cleaned with whole-row statistics (the grid's rows, {numref}`tbl-retrieval`); each Qwen
#   as the source (gallery) and as the target (queries) against each model of the other
#   families, and the two Qwens against each other (the same family at two sizes, as the
#   paper's proxy table has Qwen2 at 1.5B and 7B, its columns Q-1b5 and Q-7b). Chance is
#   1/N for Hits@1 and 5/N for Hits@5, N texts.
# - **Visual proxy, held-out protocol** (chapter {doc}`04_proxy`): first-order maps, both Qwens as targets of a proxy trained
#   on the *same* sources (the grid's other causal models), the profile's seeds, checkpoint
#   chosen on held-out source maps; the smaller Qwen's runs are the grid's, read back from the
#   cache.
#
# **Departures from the paper:** the larger model also runs on dequantised 4-bit weights
# (Q4_K_M), it is the Coder-Instruct variant of Qwen2.5, not Qwen2-1.5B-Instruct, and the
# retrieval ranks among the profile's texts (100 at `default`, 1000 in the paper: Hits@1 chance
# ten times the paper's). Its attention is extracted in one process (its float32
# weights take 6 GB). The paper's numbers beside ours are those of its Qwen2-1.5B with the
# model of our partner's family (Gemma-2-2B for Gemma-3, Llama-3.2-3B for SmolLM2), where it
# reports the pair.

# %%
size_findings: list[str] = []  # sentences for the findings at the end
if not cfg.size_models:
    print(f"This section did not run at the {profile!r} profile: its setting size_models is empty (no larger model "
          "in the profile; the default profile sets one).")
else:
    small, large = cfg.size_models
    partners = [m for m in cfg.causal if m != small]  # the other families: retrieval partners, proxy sources
    with watch(f"size: {large}, order-1 OLA (extraction or cache)"):
        large_tokens = token_maps(large, [t.text for t in texts], ("order1",), device=device, workers=1)
    same_tokens = all(a.tokens == b.tokens for a, b in zip(large_tokens, tokens[small]))
    print(f"{large}: {np.mean([len(t.tokens) for t in large_tokens]):.1f} tokens per text; "
          f"{'the same tokens as' if same_tokens else 'other tokens than'} {small} on every text")
    with watch("size: retrieval"):
        size_maps = {name: make_maps(large_tokens if name == large else tokens[name], words=texts, align="resize",
                                     sinks="clean", size=cfg.size, sink_stats="row").select("order1")
                     for name in [*cfg.causal, large]}
        size_pairs = [pair for model in (small, large) for partner in partners
                      for pair in ((model, partner), (partner, model))] + [(small, large), (large, small)]
        size_retrieval = retrieval_table(size_maps, pairs=size_pairs)
    # the smaller model's pairs are the grid's rows, number for number
    grid_rows = faithful[faithful["group"].eq("causal") & faithful["channel"].eq("order1")].set_index(["source", "target"])
    for s, t in size_pairs[:2 * len(partners)]:
        mine = size_retrieval[size_retrieval["source"].eq(s) & size_retrieval["target"].eq(t)].iloc[0]
        assert (mine["hits@1"], mine["hits@5"]) == tuple(grid_rows.loc[(s, t), ["hits@1", "hits@5"]])

    def size_hits(s: str, t: str, metric: str) -> float:
        """Hits@k (%) of one ordered pair of the size retrieval."""
        return 100 * size_retrieval[size_retrieval["source"].eq(s) & size_retrieval["target"].eq(t)][metric].iloc[0]

    def paper_hits(s: str, t: str, metric: str) -> float:
        """The paper's Hits@k (%) of its pair of the same families, NaN where it reports none."""
        keys = retrieval_keys(s, t, metric)
        return float(np.mean([published_value(k) for k in keys])) if keys else np.nan

    size_rows = {}
    for partner in [*partners, "the other Qwen (same family)"]:
        for role in ("source (gallery)", "target (queries)"):
            row = {}
            for model in (small, large):
                other = partner if partner in partners else (large if model == small else small)
                s, t = (model, other) if role.startswith("source") else (other, model)
                for metric in ("hits@1", "hits@5"):
                    row[(metric.replace("hits", "Hits") + " %", model)] = size_hits(s, t, metric)
                    if model == large:
                        row[(f"paper (Qwen2-1.5B) {metric.replace('hits', 'Hits')} %", "")] = paper_hits(s, t, metric)
            size_rows[(partner, f"Qwen as {role}")] = row
    size_table = pd.DataFrame(size_rows).T.astype(float)
    size_table.index.names = ["partner", "role"]
    size_table[("Hits@1 %", "larger - smaller (points)")] = size_table[("Hits@1 %", large)] - size_table[("Hits@1 %", small)]
    size_table = size_table[[("Hits@1 %", small), ("Hits@1 %", large), ("Hits@1 %", "larger - smaller (points)"),
                             ("Hits@5 %", small), ("Hits@5 %", large), ("paper (Qwen2-1.5B) Hits@1 %", ""),
                             ("paper (Qwen2-1.5B) Hits@5 %", "")]]
    cross_rows = size_table.loc[partners]
    size_table.loc[("mean over the cross-family pairs", ""), :] = cross_rows.mean()
    show_table(size_table, "tbl-size-retrieval", f"Does model size change OLAS? First-order SSIM retrieval under the "
               f"official protocol (official texts, maps resized to {cfg.size} x {cfg.size}, sinks cleaned with "
               f"whole-row statistics), Hits@1 and Hits@5 (%) of {small} and of {large} as the source and as the "
               f"target against each model of another family, and against each other; {len(texts)} texts (chance: "
               f"Hits@1 {100 * chance1:.1f} %, Hits@5 {100 * chance5:.1f} %). Paper: its Qwen2-1.5B with its model of "
               "the partner's family (1000 texts), where it reports the pair.", decimals=1)

# %%
if cfg.size_models:
    labels = [f"{p}\nQwen as {r.split()[0]}" for p, r in size_table.index[:-1]]
    x = np.arange(len(labels))
    fig, ax = plt.subplots(figsize=(1.3 * len(labels) + 1.5, 3.4), constrained_layout=True)
    for offset, model in ((-0.2, small), (0.2, large)):
        ax.bar(x + offset, size_table[("Hits@1 %", model)].iloc[:-1], width=0.4, label=model)
    published_hits = size_table[("paper (Qwen2-1.5B) Hits@1 %", "")].iloc[:-1]
    ax.plot(x + 0.2, published_hits, "kD", ms=5, label="paper, Qwen2-1.5B")
    ax.axhline(100 * chance1, color="grey", ls=":", lw=1, label="chance")
    ax.set_xticks(x, labels, fontsize=7)
    ax.set(ylabel="Hits@1 %", ylim=(0, 100), title="first-order SSIM retrieval, official protocol")
    ax.legend(fontsize=7)
    show_figure(fig, "fig-size-retrieval", f"Hits@1 (%) of first-order SSIM retrieval (official protocol, "
                f"{len(texts)} texts) of {small} and {large} against each model of another family, as the source "
                "(gallery) and as the target (queries), and against each other (the same family at two sizes); black "
                "diamonds: the paper's Qwen2-1.5B with its model of the partner's family; dotted: chance.")

# %% [markdown]
# The proxy: both Qwens are the target of a network trained on the same sources, one run per
# seed. The table gives the mean, the standard deviation and the standard error of the mean
# over seeds (standard deviation / sqrt(seeds)), and every seed's accuracy; the paper's number
# is its proxy on its Qwen2-1.5B (its column Q-1b5).

# %%
if cfg.size_models:
    size_proxy_maps = {**{m: proxy_maps[m] for m in cfg.causal},
                       large: make_maps(large_tokens[:n], align="resize", sinks="clean", size=cfg.proxy_size,
                                        sink_stats="row")}
    with watch("size: proxy, order 1 (training or cache)"):
        size_runs, _ = proxy_experiment(size_proxy_maps, [(partners, small), (partners, large)], [("order1",)],
                                        cfg.proxy, cfg.seeds, device=device, workers=workers)
    grid_small = runs[runs["channels"].eq("order 1") & runs["target"].eq(small)]
    assert size_runs[size_runs["target"].eq(small)]["test_acc"].tolist() == grid_small["test_acc"].tolist()
    paper_q = paper_proxy().loc["order1"]
    size_proxy = pd.DataFrame([
        {"target": target, "sources": " + ".join(partners), "seeds": len(r), "mean %": 100 * r["test_acc"].mean(),
         "std (points)": 100 * r["test_acc"].std(), "s.e. (points)": 100 * r["test_acc"].sem(),
         "per seed %": ", ".join(f"{100 * a:.1f}" for a in r["test_acc"]),
         "paper (Q-1b5) %": paper_q["Q-1b5"] if target == large else np.nan}
        for target, r in size_runs.groupby("target", sort=False)]).set_index("target")
    show_table(size_proxy, "tbl-size-proxy", f"Does model size change OLAS? Visual proxy, held-out protocol, first-order "
               f"OLA: accuracy (%) on {small} and on {large} as targets of a network trained on the same sources, "
               f"{cfg.proxy_num_texts} classes (chance {proxy_chance:.1f} %), seeds {list(cfg.seeds)}: mean, standard "
               "deviation and standard error over seeds, every seed; the paper's proxy on its Qwen2-1.5B (1000 "
               "classes, its protocol).", decimals=1)
    # the computed answer
    mean_small, mean_large = (cross_rows[("Hits@1 %", m)].mean() for m in (small, large))
    mean5_small, mean5_large = (cross_rows[("Hits@5 %", m)].mean() for m in (small, large))
    acc = {m: size_proxy.loc[m] for m in (small, large)}
    gap, proxy_gap = mean_large - mean_small, acc[large]["mean %"] - acc[small]["mean %"]

    def direction(d: float) -> str:
        """'more ... than', 'less ... than' or 'exactly as ... as', by the sign of a difference."""
        return "more" if d > 0 else "less" if d < 0 else "exactly as"

    def than(d: float) -> str:
        return "as" if d == 0 else "than"

    def spread(model: str) -> str:
        """Proxy accuracy of one target, with its standard error where there are seeds to take one over."""
        return f"{acc[model]['mean %']:.1f}" + (f" ± {acc[model]['s.e. (points)']:.1f}" if len(cfg.seeds) > 1 else "")

    seeds_note = (f"mean ± standard error over seeds {list(cfg.seeds)}" if len(cfg.seeds) > 1
                  else f"one seed ({cfg.seeds[0]}): no spread")
    within = (size_hits(small, large, "hits@1"), size_hits(large, small, "hits@1"))
    size_answer = (
        f"By first-order retrieval, {large} is **{direction(gap)} OLAS-similar** to the other families {than(gap)} {small}: "
        f"mean Hits@1 {mean_large:.1f} % against {mean_small:.1f} % over the {len(cross_rows)} cross-family ordered "
        f"pairs ({gap:+.1f} points, where one text is {100 / len(texts):.1f}; Hits@5 {mean5_large:.1f} % against {mean5_small:.1f} %; chance {100 * chance1:.1f} "
        f"/ {100 * chance5:.1f} %). By the proxy trained on {' + '.join(partners)}, it is {direction(proxy_gap)} "
        f"similar {than(proxy_gap)} {small}: {spread(large)} % against {spread(small)} % ({proxy_gap:+.1f} points, {seeds_note}; chance "
        f"{proxy_chance:.1f} %)" + ("; the two measures disagree in direction" if gap * proxy_gap < 0 else "") + ". "
        f"Within the family, the two sizes retrieve each other at Hits@1 {within[0]:.1f} % ({small} the source) "
        f"and {within[1]:.1f} % ({large} the source). The paper's own step in size, its proxy on Qwen2-1.5B and on "
        f"Qwen2-7B as targets: {paper_q['Q-1b5']:.1f} % and {paper_q['Q-7b']:.1f} %.")
    size_findings.append(f"- Model size ({small} against {large}): " + size_answer)
    display(Markdown(size_answer))
    for s, t in size_pairs:
        for metric, chance in (("hits@1", chance1), ("hits@5", chance5)):
            value = size_hits(s, t, metric)
            published_pair = paper_hits(s, t, metric)
            results.add(f"size/retrieval/{s}->{t}/order1/{metric}", f"{metric}, {s} -> {t}, order 1, official protocol "
                        "(model size)", value, chance=100 * chance, protocol="official",
                        verdict=verdict(value / 100, chance), subject=f"{s} -> {t}", anchor="tbl-size-retrieval",
                        paper=None if np.isnan(published_pair) else published_pair)
    for model in (small, large):
        for metric, chance in (("Hits@1", chance1), ("Hits@5", chance5)):
            value = cross_rows[(f"{metric} %", model)].mean()
            results.add(f"size/retrieval/{model}/cross-family/order1/{metric.lower()}",
                        f"{metric} of {model} against the other families (mean over source and target roles), order 1",
                        value, chance=100 * chance, protocol="official", verdict=verdict(value / 100, chance),
                        subject=model, anchor="tbl-size-retrieval")
        row = acc[model]
        results.add(f"size/proxy/{model}/order1/honest", f"proxy accuracy on {model}, order 1, held-out protocol, "
                    f"trained on {' + '.join(partners)} (model size)", row["mean %"], chance=proxy_chance,
                    protocol="held-out", verdict=verdict(row["mean %"] / 100, proxy_chance / 100), subject=model,
                    anchor="tbl-size-proxy", paper=paper_q["Q-1b5"] if model == large else None,
                    note=f"mean over seeds {list(cfg.seeds)}")
        if len(cfg.seeds) > 1:
            results.add(f"size/proxy/{model}/order1/honest/standard-error", f"standard error over seeds of the proxy "
                        f"accuracy on {model}", row["s.e. (points)"], unit="points", subject=model,
                        anchor="tbl-size-proxy")
    results.add("size/retrieval/cross-family/order1/hits@1/larger-minus-smaller", f"Hits@1 against the other "
                f"families, {large} minus {small}", gap, unit="points", anchor="tbl-size-retrieval")
    results.add("size/proxy/order1/larger-minus-smaller", f"proxy accuracy, {large} minus {small} as target",
                proxy_gap, unit="points", protocol="held-out", anchor="tbl-size-proxy")

# %% [markdown]
# ## A third encoder family
#
# The grid's two encoders, MiniLM and MPNet, are sentence-embedding fine-tunes of masked-LM
# encoders: every encoder claim above rests on one pair of models, both ways. The profile's
# `extra_encoders` adds another family (at `default` EmbeddingGemma-300M: a Gemma-3 language
# model made bidirectional and fine-tuned for sentence embeddings, 24 layers, 3 heads, float32
# weights, not quantised), which makes six ordered pairs of encoders. Each pair is measured as
# the grid measures its encoders:
#
# - **Retrieval, official protocol**: every channel (orders 1 to 3, rollout, ALTI) of the same
#   official texts, resized to 50 x 50, sinks cleaned with whole-row statistics; Hits@1
#   chance 1/N.
# - **Visual proxy, held-out protocol** (chapter {doc}`04_proxy`): first-order maps, trained on one encoder and tested on
#   another, for each ordered pair; with one source the checkpoint is chosen on a fixed
#   augmented view of the source's maps. The two pairs of the grid are its runs, read back from
#   the cache.
#
# **Departures from the paper:** the paper's encoders are BERT, RoBERTa and ELECTRA (base,
# masked-LM or replaced-token pretraining); ours are sentence-embedding fine-tunes, and the third
# comes from Gemma-3, a causal language model, made bidirectional rather than pretrained as a
# masked LM. Fewer texts and classes, as above. Each pair is judged by the rate rule of
# {ref}`claims-rate`.

# %%
encoder_findings: list[str] = []
if not cfg.extra_encoders:
    print(f"This section did not run at the {profile!r} profile: its setting extra_encoders is empty (no third "
          "encoder family in the profile; the default profile sets one).")
else:
    encoder_names = [*cfg.encoders, *cfg.extra_encoders]
    with watch("encoder families: OLA and ALTI of the extra encoders (extraction or cache)"):
        encoder_tokens = {**{m: tokens[m] for m in cfg.encoders},
                          **{m: token_maps(m, [t.text for t in texts], CHANNELS, device=device, workers=workers)
                             for m in cfg.extra_encoders}}
    with watch("encoder families: retrieval"):
        encoder_retrieval = retrieval_grid(encoder_tokens, {"encoder": encoder_names},
                                           {"resize, clean": variants["resize, clean"]}, words=texts)
    # the grid's own pairs, number for number
    grid_encoders = faithful[faithful["group"].eq("encoder")].set_index(["source", "target", "channel"])
    for _, r in encoder_retrieval[encoder_retrieval["source"].isin(cfg.encoders)
                                  & encoder_retrieval["target"].isin(cfg.encoders)].iterrows():
        assert r["hits@1"] == grid_encoders.loc[(r["source"], r["target"], r["channel"]), "hits@1"]
    encoder_table = 100 * encoder_retrieval.pivot_table(index=["source", "target"], columns="channel",
                                                        values="hits@1", sort=False)[list(CHANNELS)]
    encoder_table.columns = [f"Hits@1 %, {c}" for c in CHANNELS]
    encoder_table["Hits@5 %, order1"] = 100 * encoder_retrieval[encoder_retrieval["channel"].eq("order1")].set_index(
        ["source", "target"])["hits@5"]
    encoder_table.loc[("mean over the pairs", ""), :] = encoder_table.mean()
    show_table(encoder_table, "tbl-encoder-families", f"A third encoder family: SSIM retrieval under the official "
               f"protocol (official texts, maps resized to {cfg.size} x {cfg.size}, sinks cleaned with whole-row "
               f"statistics), Hits@1 (%) of every channel and Hits@5 (%) of order 1 for every ordered pair of "
               f"{', '.join(encoder_names)}; {len(texts)} texts (chance: Hits@1 {100 * chance1:.1f} %, Hits@5 "
               f"{100 * chance5:.1f} %).", decimals=1)

# %%
if cfg.extra_encoders:
    fig = hits_heatmaps(encoder_retrieval, {"encoder": encoder_names}, ("order1", "rollout", "alti"),
                        title=f"Hits@1 % (official protocol; chance {100 * chance1:.1f} %)")
    show_figure(fig, "fig-encoder-families", f"Hits@1 (%) of SSIM retrieval under the official protocol between the "
                f"encoders {', '.join(encoder_names)} ({len(texts)} texts; chance {100 * chance1:.1f} %): first-order "
                "OLA, rollout and ALTI, one panel each; rows are the source (gallery) model, columns the target "
                "(query) model.")
    encoder_pairs = list(itertools.permutations(encoder_names, 2))
    encoder_proxy_maps = {**{m: proxy_maps[m] for m in cfg.encoders},
                          **{m: make_maps(encoder_tokens[m][:n], align="resize", sinks="clean", size=cfg.proxy_size,
                                          sink_stats="row") for m in cfg.extra_encoders}}
    with watch("encoder families: proxy, order 1 (training or cache)"):
        encoder_runs, _ = proxy_experiment(encoder_proxy_maps, [([s], t) for s, t in encoder_pairs], [("order1",)],
                                           cfg.proxy, cfg.seeds, device=device, workers=workers)
    for s, t in itertools.permutations(cfg.encoders, 2) if len(cfg.encoders) == 2 else ():  # the grid's runs
        assert (encoder_runs[encoder_runs["sources"].eq(s) & encoder_runs["target"].eq(t)]["test_acc"].tolist()
                == runs[runs["channels"].eq("order 1") & runs["target"].eq(t)]["test_acc"].tolist())
    accuracy_of = encoder_runs.groupby(["sources", "target"], sort=False)["test_acc"]
    encoder_proxy = pd.DataFrame({"mean %": 100 * accuracy_of.mean(), "std (points)": 100 * accuracy_of.std(),
                                  "per seed %": accuracy_of.agg(lambda a: ", ".join(f"{100 * v:.1f}" for v in a))})
    encoder_proxy.index.names = ["source (trained on)", "target (tested on)"]
    show_table(encoder_proxy, "tbl-encoder-families-proxy", f"A third encoder family: visual proxy, held-out protocol, "
               f"first-order OLA, trained on one encoder and tested on another, every ordered pair: accuracy (%), "
               f"mean and standard deviation over seeds {list(cfg.seeds)}, {cfg.proxy_num_texts} classes (chance "
               f"{proxy_chance:.1f} %).", decimals=1)
    # the computed answer: the chapter's rule, pair by pair
    first_order = encoder_table["Hits@1 %, order1"].iloc[:-1]
    retrieval_verdicts = {pair: verdict(v / 100, chance1) for pair, v in first_order.items()}
    proxy_verdicts = {pair: verdict(v / 100, proxy_chance / 100) for pair, v in encoder_proxy["mean %"].items()}

    def holding(verdicts: dict) -> str:
        counts = pd.Series(list(verdicts.values())).value_counts()
        return ", ".join(f"{v} on {counts[v]}" for v in counts.index)

    new_pairs = [p for p in encoder_pairs if not set(p) <= set(cfg.encoders)]
    two = mean_hits(faithful, group="encoder", channel="order1")
    encoder_answer = (
        f"Over the {len(encoder_pairs)} ordered pairs of {', '.join(encoder_names)}, first-order retrieval "
        f"{holding(retrieval_verdicts)} of them by the verdict rule (Hits@1 {first_order.min():.1f} to "
        f"{first_order.max():.1f} %, mean {first_order.mean():.1f} %, chance {100 * chance1:.1f} %; the grid's "
        f"{len(encoder_pairs) - len(new_pairs)} pairs: mean {100 * two:.1f} %, "
        f"{verdict(two, chance1)}; the {len(new_pairs)} pairs with {', '.join(cfg.extra_encoders)}: mean "
        f"{first_order.loc[new_pairs].mean():.1f} %), and the proxy {holding(proxy_verdicts)} (accuracy "
        f"{encoder_proxy['mean %'].min():.1f} to {encoder_proxy['mean %'].max():.1f} %, chance {proxy_chance:.1f} %; "
        f"the grid's pairs: mean {encoder_proxy.loc[[p for p in encoder_pairs if p not in new_pairs], 'mean %'].mean():.1f} %"
        f", the new ones: {encoder_proxy.loc[new_pairs, 'mean %'].mean():.1f} %). The encoder claim "
        + (("**holds over every ordered pair**, not only the grid's two." if all(
            v == "holds" for v in [*retrieval_verdicts.values(), *proxy_verdicts.values()]) else
            "**holds, at least weakly, over every ordered pair**, not only the grid's two (weakly: above 5x "
            "chance, short of 50 %).") if all(
            v != "does not hold here" for v in [*retrieval_verdicts.values(), *proxy_verdicts.values()])
           else "**does not hold over every ordered pair**: " + "; ".join(
               f"{s} -> {t} by " + " and ".join(what for what, verdicts in (("retrieval", retrieval_verdicts),
                                                                             ("the proxy", proxy_verdicts))
                                                if verdicts[(s, t)] == "does not hold here")
               for s, t in encoder_pairs if "does not hold here" in (retrieval_verdicts[(s, t)], proxy_verdicts[(s, t)]))
           + " (does not hold here)."))
    encoder_findings.append(f"- A third encoder family ({', '.join(cfg.extra_encoders)}): " + encoder_answer)
    display(Markdown(encoder_answer))
    for (s, t), r in encoder_table.iloc[:-1].iterrows():
        for channel in CHANNELS:
            value = r[f"Hits@1 %, {channel}"]
            results.add(f"encoder-families/retrieval/{s}->{t}/{channel}/hits@1", f"hits@1, {s} -> {t}, {channel}, "
                        "official protocol (three encoder families)", value, chance=100 * chance1, protocol="official",
                        verdict=verdict(value / 100, chance1), subject=f"{s} -> {t}", anchor="tbl-encoder-families")
        results.add(f"encoder-families/retrieval/{s}->{t}/order1/hits@5", f"hits@5, {s} -> {t}, order 1, official "
                    "protocol (three encoder families)", r["Hits@5 %, order1"], chance=100 * chance5, protocol="official",
                    verdict=verdict(r["Hits@5 %, order1"] / 100, chance5), subject=f"{s} -> {t}",
                    anchor="tbl-encoder-families")
        value = encoder_proxy.loc[(s, t), "mean %"]
        results.add(f"encoder-families/proxy/{s}->{t}/order1/honest", f"proxy trained on {s}, accuracy on {t}, order 1, "
                    "held-out protocol", value, chance=proxy_chance, protocol="held-out",
                    verdict=verdict(value / 100, proxy_chance / 100), subject=f"{s} -> {t}",
                    anchor="tbl-encoder-families-proxy", note=f"mean over seeds {list(cfg.seeds)}")
    for channel in CHANNELS:
        value = encoder_table.loc[("mean over the pairs", ""), f"Hits@1 %, {channel}"]
        results.add(f"encoder-families/retrieval/{channel}/hits@1", f"same-order OLA retrievable across the "
                    f"{len(encoder_names)} encoders (SSIM Hits@1, {channel}, mean over {len(encoder_pairs)} pairs)",
                    value, chance=100 * chance1, protocol="official", verdict=verdict(value / 100, chance1),
                    anchor="tbl-encoder-families")
    value = encoder_proxy["mean %"].mean()
    results.add("encoder-families/proxy/order1/accuracy", f"proxy trained on one encoder recognises texts on another "
                f"(order 1, mean over {len(encoder_pairs)} pairs)", value, chance=proxy_chance, protocol="held-out",
                verdict=verdict(value / 100, proxy_chance / 100), anchor="tbl-encoder-families-proxy")
    for what, verdicts in (("retrieval/order1", retrieval_verdicts), ("proxy/order1", proxy_verdicts)):
        results.add(f"encoder-families/{what}/pairs-holding", f"ordered pairs of encoders on which the claim holds "
                    f"({what.replace('/', ', ')}; of {len(encoder_pairs)})",
                    sum(v == "holds" for v in verdicts.values()), unit="pairs", anchor="tbl-encoder-families")

# %% [markdown]
# ## Finding

# %% tags=["remove-input"]
best = per_model["mean Hits@1 % over its pairs"].idxmax()
lines = [f"Over the grid, {best} is the most retrievable model (mean first-order Hits@1 "
         f"{per_model.loc[best, 'mean Hits@1 % over its pairs']:.1f} % over its pairs; chance {100 * chance1:.1f} %)."]
lines += [line[2:] for line in size_findings + encoder_findings]
if not size_findings and not encoder_findings:
    lines.append(f"The sections on a larger model and a third encoder family did not run at the {profile!r} profile "
                 "(no extra models in its settings).")
glue("a3-finding", Markdown("\n\n".join(lines)), display=False)
results.save()
print(watch.report())

# %% [markdown]
# ```{glue:md} a3-finding
# :format: myst
# ```
