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
# # From rollout to Order-Level Attention
#
# This chapter derives Order-Level Attention (OLA) from Attention Rollout, checks every
# identity on the attention of a real language model, and measures what the recurrence
# used by `olacore` saves over enumerating the terms one by one, as the official code of
# {cite}`liang2025olas` does (`combine_attention_orders` in its `models/ola_utils.py`).
#
# :::{admonition} What you will learn
# :class: tip
# - how Attention Rollout splits into orders, and what the $k$-th Order-Level Attention is;
# - why a recurrence computes every order in about $N K$ matrix products instead of $\binom{N}{k}$;
# - how to check the identities (recurrence, rollout as a mixture of orders, row sums) on a
#   real model's attention;
# - where each order puts its mass, and why rollout is dominated by the attention sink.
# :::
#
# What differs from the paper, and why: {ref}`departures`.
#
# ## The expansion
#
# Let $A^{(n)}$ be the attention of layer $n$ of an $N$-layer model, averaged over heads:
# a $T \times T$ row-stochastic matrix (row $i$ says how token $i$ spreads its attention
# over the tokens), layer 1 nearest the input. Attention Rollout {cite}`abnar2020quantifying`
# accounts for the residual connection by adding the identity to every layer and
# multiplying the layers, last on the left:
#
# $$
# R = (A^{(N)} + I)\,(A^{(N-1)} + I) \cdots (A^{(1)} + I).
# $$
#
# Multiplying out gives $2^N$ terms. Each term picks, in every layer, either the attention
# or the residual path; a term that picks attention in layers $j_1 < \dots < j_k$ is the
# product $A^{(j_k)} \cdots A^{(j_1)}$: information that travelled through exactly $k$
# attention operations. Grouping the terms by this number $k$, the **order**,
#
# $$
# \begin{aligned}
# R &= \sum_{k=0}^{N} \sum_{j_1 < \dots < j_k} A^{(j_k)} \cdots A^{(j_1)} \\
#   &= \sum_{k=0}^{N} \binom{N}{k}\, \mathrm{OLA}_k , \\
# \mathrm{OLA}_k &= \binom{N}{k}^{-1} \sum_{j_1 < \dots < j_k} A^{(j_k)} \cdots A^{(j_1)} .
# \end{aligned}
# $$
#
# $\mathrm{OLA}_0 = I$, $\mathrm{OLA}_1$ is the plain mean of the layers' attention, and
# $\mathrm{OLA}_k$ is the mean of all paths through $k$ attention layers. Because it is an
# average of products of row-stochastic matrices, every $\mathrm{OLA}_k$ is row-stochastic,
# and for a causal model, lower-triangular. The row-stochastic rollout of Abnar and Zuidema,
# $\prod_n (A^{(n)}/2 + I/2)$, is the binomial mixture $\sum_k \binom{N}{k} \mathrm{OLA}_k / 2^N$:
# it is dominated by the orders near $N/2$, which is one reason rollout looks alike for
# every text (the paper's section 3).
#
# ## A recurrence instead of $\binom{N}{k}$ products
#
# Enumerating the subsets costs $\sum_{k \le K} k \binom{N}{k}$ matrix products (counting, as
# the table at the end of this chapter does, $k$ products for a subset of $k$ layers): for
# $N = 24$, $K = 3$ that is 2,324 subsets of one to three layers and 6,648 products. The sums of ordered products obey the recurrence of
# elementary symmetric polynomials: adding layer $n$ to a model of $n-1$ layers, a path of
# order $k$ either skips layer $n$ or ends with it. Normalising as we go, with
# $M_k^{(n)}$ the $k$-th order OLA of the first $n$ layers,
#
# $$
# \begin{aligned}
# M_k^{(n)} &= \frac{n-k}{n} M_k^{(n-1)} + \frac{k}{n} A^{(n)} M_{k-1}^{(n-1)}, \\
# M_0^{(n)} &= I,
# \end{aligned}
# $$
#
# a convex combination, so rows stay stochastic and nothing overflows even when
# $\binom{N}{k}$ exceeds the float range. All orders up to $K$ cost about $N K$ products.
# `olacore.order_level_attention` implements it; `olacore.order_level_attention_bruteforce`
# is the enumeration, kept as the reference.

# %% tags=["parameters"]
profile = "default"  # smoke, default or paper: sets every size
model: str | None = None  # a zoo name, Hugging Face id or folder; None: the profile's choice

# %% tags=["hide-input"]
import math

import matplotlib.pyplot as plt
import pandas as pd
import torch

import olacore
from olacore import cached_attention, cached_ola, channel_label, mass_profile, token_maps
from olacore.plots import draw_maps, show_figure, show_table, token_labels
from olacore.profiles import settings
from olacore.results import ChapterResults, Stopwatch

cfg = settings("derivation", profile)
model = model or cfg.model
watch = Stopwatch("01_derivation")
results = ChapterResults("01_derivation", profile)
torch.set_num_threads(2)
print(f"profile={profile}, model={model}")

# %% [markdown]
# ## Checking the identities on a real model
#
# We take the attention of a real pretrained model on one sentence of UD English EWT and
# check, in float64, that the recurrence equals enumeration (orders up to 3), that the
# binomial mixture of all $N + 1$ orders gives back rollout, that rows sum to one and that a
# causal model's orders stay lower-triangular.

# %%
text = "The preacher at the mosque said that the killing would cause trouble for years to come."
with watch("extract attention"):
    (extraction,) = cached_attention(model, [text])
# The model's softmax runs in float32 (rows sum to 1 within ~1e-7); in float64, with rows
# renormalised, the identities must hold to rounding (1e-10).
attn = extraction.attentions.double()
print(f"float32 row sums deviate from 1 by at most {(attn.sum(-1) - 1).abs().max().item():.1e}")
attn = attn / attn.sum(-1, keepdim=True)
num_layers, size = attn.shape[0], attn.shape[-1]
causal = bool(torch.equal(attn, attn.tril()))
print(f"{model}: N = {num_layers} layers, T = {size} tokens, causal = {causal}")
print("tokens:", extraction.tokens)

# %%
with watch("identities"):
    max_check = min(3, num_layers)
    fast = olacore.order_level_attention(attn, max_check)
    slow = olacore.order_level_attention_bruteforce(attn, max_check)
    every_order = olacore.order_level_attention(attn, num_layers)
    rollout = olacore.attention_rollout(attn)
checks = pd.DataFrame(
    [
        ("recurrence vs enumeration, orders 0..3", (fast - slow).abs().max().item()),
        ("sum_k C(N,k) OLA_k / 2^N vs rollout", (olacore.rollout_from_orders(every_order, num_layers) - rollout).abs().max().item()),
        ("rows of every order sum to 1", (every_order.sum(-1) - 1).abs().max().item()),
        ("OLA_1 vs mean of the layers", (every_order[1] - attn.mean(0)).abs().max().item()),
        ("upper triangle of every order (causal: 0)", every_order.triu(1).abs().max().item() if causal else float("nan")),
    ],
    columns=["identity", "max abs deviation"],
)
show_table(checks, "tbl-identities", "The OLA identities on the real attention of one sentence (float64): largest absolute deviation.",
           missing="a check that does not apply (the model is not causal)", formats={"max abs deviation": ".1e"})

# %% tags=["remove-input"]
assert checks["max abs deviation"].fillna(0).max() < 1e-10, "an OLA identity fails on real attention"
for identity, deviation in checks.dropna().itertuples(index=False):
    results.add(f"identity/{identity}", identity, deviation, unit="max abs deviation")

# %% [markdown]
# ## What each order looks like
#
# Order 1 is the plain layer average: some mass near the diagonal and on related tokens,
# and, for a causal model, already much on the first token. As the order grows, paths pass
# through more attention layers and the mass drifts further towards the token that every
# layer attends to, the attention sink {cite}`xiao2024sinks`, and away from the diagonal
# (the table below measures both). Rollout, a binomial mixture centred on order $N/2$, takes
# on the profile of the middle orders, sink included: the text-specific structure lives in the
# low orders.

# %%
shown = [k for k in (1, 2, 3, num_layers // 2, num_layers) if k <= num_layers]
panels = {f"order {k}": every_order[k] for k in dict.fromkeys(shown)}
panels["rollout"] = rollout
with watch("figures"):
    fig = draw_maps({model: panels}, labels={model: token_labels(extraction)}, title=text)
show_figure(fig, "fig-order-maps", f"Order-level attention of {model} ({num_layers} layers) on one sentence of "
            f"{size} tokens: orders {', '.join(str(k) for k in dict.fromkeys(shown))} and rollout. Row i of a map is "
            "query token i, column j key token j; colour: the weight of token j in row i (every row sums to 1), "
            "each panel on its own scale, clipped at its 99th percentile.")

# %%
profile_of_orders = mass_profile(every_order)
per_order = pd.DataFrame(
    {
        "order k": range(num_layers + 1),
        "mean |i - j| (tokens)": profile_of_orders["mean |i - j| (tokens)"].numpy(),
        "mass on first token": profile_of_orders["mass on first token"].numpy(),
        "weight C(N,k)/2^N in rollout": [math.comb(num_layers, k) / 2**num_layers for k in range(num_layers + 1)],
    }
)
fig, axes = plt.subplots(1, 3, figsize=(9, 2.8), constrained_layout=True)
for ax, column in zip(axes, per_order.columns[1:]):
    ax.plot(per_order["order k"], per_order[column], marker="o", markersize=3)
    ax.set_xlabel("order k")
    ax.set_title(column, fontsize=10)
show_figure(fig, "fig-order-profile", f"Where order k puts its mass, k = 0 to {num_layers} ({model}, the sentence "
            f"above, {size} tokens): the mean distance |i - j| between query and key (tokens), the share of each row on "
            "the first token (fraction of 1), and the weight C(N, k) / 2^N of order k in rollout.")
show_table(per_order.head(6), "tbl-order-profile", "Where the first orders put their mass, and the weight of each order in rollout.",
           decimals=3)

# %% [markdown]
# ## ALTI: contributions measured on the layer outputs, not on the attention weights
#
# OLA and rollout read only the attention probabilities. ALTI {cite}`ferrando2022alti`, the
# paper's second baseline, reads what each layer actually computes. For layer $n$ and query
# token $i$ it writes the attention block's output $y_i$ as a sum of one *transformed vector*
# $T_i(x_j)$ per input token $j$ (the value vectors weighted by the attention, passed through
# the output projection and the layer norm, plus the residual on the diagonal), and scores
# token $j$ by how much closer $y_i$ is to zero without it,
# $c_{ij} = \max(0, \lVert y_i \rVert_1 - \lVert y_i - T_i(x_j) \rVert_1)$, normalised per row.
# A token with a large attention weight but a small value vector contributes little, and the
# residual, which rollout adds as a fixed identity, gets its measured share. The layers are
# then multiplied like rollout, without the added identity (the residual is already inside
# each layer's matrix). `olacore.alti` computes it from one forward pass with hooks, for
# pre-norm (SmolLM2, Qwen2.5), Gemma's sandwich norm and post-norm encoders (MiniLM, MPNet),
# and the tests check on every zoo model that the transformed vectors add up to the model's
# own block output within float32 rounding (the module docstring says where we follow the
# authors' code and where we differ).
#
# The same sentence through a causal model and an encoder, low orders beside ALTI:

# %%
alti_channels = ("order1", "order2", "order3", "rollout", "alti")
with watch("ALTI maps"):
    alti_rows = {name: token_maps(name, [text], alti_channels)[0] for name in cfg.alti_models}
fig = draw_maps({name: {channel_label(c): m for c, m in zip(row.channels, row.maps)} for name, row in alti_rows.items()},
                labels={name: token_labels(row) for name, row in alti_rows.items()}, title=text)
show_figure(fig, "fig-alti-maps", "Orders 1 to 3, rollout and ALTI of the same sentence for "
            + " and ".join(f"{name} ({len(row.tokens)} tokens)" for name, row in alti_rows.items())
            + ": row i is query token i, column j key token j; colour: the weight (or ALTI contribution) of token j "
            "in row i (rows sum to 1), each panel on its own scale, clipped at its 99th percentile.")


# %%
alti_profile = pd.DataFrame(
    [{"model": name, "channel": channel_label(c), **{k: v.item() for k, v in mass_profile(m).items()}}
     for name, row in alti_rows.items() for c, m in zip(row.channels, row.maps)]
).set_index(["model", "channel"])
for name in cfg.alti_models:
    alti_row, first = alti_profile.loc[(name, "ALTI")], alti_profile.loc[(name, "order 1")]
    print(f"{name}: ALTI puts {alti_row['mass on the diagonal']:.2f} of a row on the diagonal "
          f"(order 1: {first['mass on the diagonal']:.2f}) and {alti_row['mass on first token']:.2f} on the first token "
          f"(order 1: {first['mass on first token']:.2f}).")
show_table(alti_profile, "tbl-alti-profile", "Where each map puts the mass of a row, per model: order 1 to 3, rollout and ALTI.",
           decimals=3)

# %% [markdown]
# The table says, per model, where each map puts its mass; the lines above it compare ALTI
# with order 1. On this sentence ALTI keeps more
# of each row on the diagonal, because the residual stream carries much of each token's own
# vector and ALTI measures that share instead of leaving it out (OLA) or fixing it at one
# half per layer (rollout); and it puts much less on the first token, because an attention
# sink draws weight while its value vector contributes little to the output. Where ALTI and
# first-order OLA differ off the diagonal is what the quantitative chapter tests: the
# paper's visual-proxy table has an ALTI row, below first-order OLA for every target model.

# %% tags=["remove-input"]
for (name, channel), row in alti_profile.iterrows():
    for column, value in row.items():
        results.add(f"map profile/{name}/{channel}/{column}", f"{column}, {channel}, {name}", value)

# %% [markdown]
# ## What the recurrence saves
#
# Both methods run on the same random causal row-stochastic maps, batch and threads (two CPU
# threads here). Each is called once untimed, so that one-time costs (memory allocation,
# thread start-up, first-call dispatch) fall on neither, then timed a few times (the slow
# enumeration a third as often), and the fastest call is kept: other processes can only add
# time, so the minimum is the closest to the cost of the computation itself. The recurrence
# is also set against $N \cdot K$ bare batched products, an upper bound on the products it
# performs: that ratio says how much its bookkeeping costs beyond the products.

# %%
import time


def best_seconds(function, repeats):
    """The fastest of `repeats` timed calls, after one untimed call that pays the one-time costs."""
    function()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def time_ola(num_layers, max_order, size, batch, repeats):
    """Seconds per batch of random causal row-stochastic maps (N, T, T): the recurrence, enumeration
    (a third of the calls), and N * K bare products of the batch's first-layer maps (at least as many as
    the recurrence performs)."""
    logits = torch.randn(batch, num_layers, size, size, generator=torch.Generator().manual_seed(0))
    attn = logits.masked_fill(~torch.ones(size, size, dtype=torch.bool).tril(), float("-inf")).softmax(-1)
    operand = attn[:, 0]

    def bare_products():
        out = operand
        for _ in range(num_layers * max_order):
            out = operand @ out
        return out  # unused: only the time counts

    return {
        "recurrence": best_seconds(lambda: olacore.order_level_attention(attn, max_order), repeats),
        "enumeration": best_seconds(lambda: olacore.order_level_attention_bruteforce(attn, max_order),
                                    max(1, repeats // 3)),
        "bare products": best_seconds(bare_products, repeats),
    }


# %%
rows = []
with watch("timings"):
    for num in cfg.bench_layers:
        for k in cfg.bench_orders:
            timing = time_ola(num, k, cfg.bench_size, cfg.bench_batch, repeats=cfg.bench_repeats)
            rows.append(
                {
                    "N": num, "K": k,
                    "products, enumeration": sum(j * math.comb(num, j) for j in range(1, k + 1)),
                    "products, recurrence": sum(min(n, k) - 1 for n in range(1, num + 1)),
                    "enumeration (ms)": 1e3 * timing["enumeration"],
                    "recurrence (ms)": 1e3 * timing["recurrence"],
                    "speed-up": timing["enumeration"] / timing["recurrence"],
                    "recurrence / bare N*K products": timing["recurrence"] / timing["bare products"],
                }
            )
costs = pd.DataFrame(rows)
show_table(costs, "tbl-ola-costs", f"Matrix products and time per batch, enumeration against the recurrence (T = {cfg.bench_size} "
           f"tokens, batch {cfg.bench_batch}, float32, {torch.get_num_threads()} threads; each time the fastest of "
           f"{cfg.bench_repeats} call{'s' if cfg.bench_repeats > 1 else ''} ({max(1, cfg.bench_repeats // 3)} for the "
           f"enumeration) after one untimed warm-up call).",
           decimals=2)

# %%
fig, ax = plt.subplots(figsize=(6, 3.5), constrained_layout=True)
for k, group in costs.groupby("K"):
    line, = ax.plot(group["N"], group["enumeration (ms)"], marker="o", label=f"enumeration, K={k}")
    ax.plot(group["N"], group["recurrence (ms)"], marker="s", linestyle="--", color=line.get_color(), label=f"recurrence, K={k}")
ax.set_yscale("log")
ax.set_xlabel("layers N")
ax.set_ylabel("ms per batch")
ax.legend(fontsize=7, ncol=2)
show_figure(fig, "fig-ola-costs", f"Milliseconds per batch (log scale) against the number of layers N, enumeration "
            f"(solid) and the recurrence (dashed), for orders K = {', '.join(str(k) for k in cfg.bench_orders)} "
            f"(T = {cfg.bench_size} tokens, batch {cfg.bench_batch}, float32, {torch.get_num_threads()} threads).")

# %% [markdown]
# The enumeration grows like $\binom{N}{K}$, the recurrence like $N K$, so the gap widens
# with depth and order (the paper's models have 24 to 42 layers), and it is what lets the later chapters compute every order of every text of
# five models on a laptop-class CPU. (The recurrence needs fewer products than the $N K$
# bound, because order 1 needs none and early layers have fewer orders to update.)

# %% tags=["remove-cell"]
for _, row in costs.iterrows():
    results.add(f"speed-up/N={row['N']}/K={row['K']}", f"recurrence over enumeration, N={row['N']}, K={row['K']}",
                row["speed-up"], unit="x")
results.save()
print(watch.report())

# %% tags=["remove-cell"]
# the numbers the summary reads, glued from this run
from IPython.display import Markdown
from myst_nb import glue

glue("01-model", Markdown(f"`{model}`"), display=False)
glue("01-layers", num_layers, display=False)
glue("01-tokens", size, display=False)
glue("01-deviation", float(checks["max abs deviation"].max()), display=False)
sink = per_order.set_index("order k")["mass on first token"]
peak = int(sink.loc[1:].idxmax())
glue("01-sink-order1", float(100 * sink.loc[1]), display=False)
glue("01-sink-order-last", float(100 * sink.loc[num_layers]), display=False)
glue("01-sink-peak", Markdown(
    f"the share grows with the order up to order {num_layers}" if peak == num_layers else
    f"the share peaks at order {peak} ({100 * sink.loc[peak]:.0f} %) and falls after it"), display=False)
glue("01-rollout-low-orders", float(100 * per_order.loc[1:3, "weight C(N,k)/2^N in rollout"].sum()), display=False)
largest = costs.sort_values(["N", "K"]).iloc[-1]
glue("01-bench-N", int(largest["N"]), display=False)
glue("01-bench-K", int(largest["K"]), display=False)
speed_up = float(largest["speed-up"])
glue("01-speed-up", Markdown(f"ran {speed_up:.1f} times faster" if speed_up >= 1 else
                             f"ran {1 / speed_up:.1f} times slower: at this size the bookkeeping costs more than the "
                             "products it saves"), display=False)
glue("01-products", int(largest["products, enumeration"]), display=False)
glue("01-products-recurrence", int(largest["products, recurrence"]), display=False)

# %% [markdown]
# ## Summary
#
# Rollout multiplies out into $2^N$ paths, and grouping them by the number of attention
# layers they pass through gives the orders: $\mathrm{OLA}_k$ is the mean of the paths through
# exactly $k$ layers. On {glue:md}`01-model` ({glue:text}`01-layers` layers, one sentence of
# {glue:text}`01-tokens` tokens) every identity of the derivation holds: the largest deviation
# in {numref}`tbl-identities` is {glue:text}`01-deviation:.1e`, float64 rounding.
#
# The orders differ in where they put their mass ({numref}`fig-order-profile`): order 1 puts
# {glue:text}`01-sink-order1:.0f` % of a row on the first token, order {glue:text}`01-layers`
# puts {glue:text}`01-sink-order-last:.0f` %, and in between {glue:md}`01-sink-peak`. Rollout
# weighs order $k$ by $\binom{N}{k}/2^N$, so orders 1 to 3 together make up
# {glue:text}`01-rollout-low-orders:.1f` % of it here, and the deeper the model, the less: the middle orders take over, and with them
# the sink (the third exercise computes the share at the paper's depths).
#
# The recurrence is what makes the orders affordable: at $N =$ {glue:text}`01-bench-N` and
# $K =$ {glue:text}`01-bench-K` it needs {glue:text}`01-products-recurrence` matrix products
# where the enumeration needs {glue:text}`01-products`, and it {glue:md}`01-speed-up`
# ({numref}`tbl-ola-costs`).


# %% [markdown]
# ## Exercises
#
# Each solution runs with this page (at the `smoke` profile in the tests); the commands in them
# run from the repository root once the environment is installed (`make env`). Runs with `--out`
# write to a folder of your own and leave the book's `book/generated/` alone.
#
# ```{exercise} The expansion for three layers, by hand
# :label: ex-01-expansion
# Take $N = 3$ random row-stochastic layers $A^{(1)}, A^{(2)}, A^{(3)}$ of $T = 5$ tokens. Write
# out $\mathrm{OLA}_1$, $\mathrm{OLA}_2$ and $\mathrm{OLA}_3$ from the definition (which ordered
# products, divided by which binomial coefficient), compare them with
# `olacore.order_level_attention`, then code the recurrence for $M_k^{(n)}$ yourself, one layer at
# a time, and check that it lands on the same matrices. What happens if you write the products
# in the wrong order ($A^{(1)} A^{(2)}$ instead of $A^{(2)} A^{(1)}$)?
# ```
#
# ```{solution-start} ex-01-expansion
# :class: dropdown
# ```

# %%
generator = torch.Generator().manual_seed(0)
A = torch.rand(3, 5, 5, dtype=torch.float64, generator=generator).softmax(-1)  # N = 3 layers of T = 5 tokens
A1, A2, A3 = A
ola = olacore.order_level_attention(A, 3)                  # (4, 5, 5): orders 0..3

# the expansion, term by term: C(3,1) = 3 single layers, C(3,2) = 3 ordered pairs, one triple
by_hand = [torch.eye(5, dtype=torch.float64), (A1 + A2 + A3) / 3, (A2 @ A1 + A3 @ A1 + A3 @ A2) / 3, A3 @ A2 @ A1]
print("enumeration:", [f"{(ola[k] - by_hand[k]).abs().max():.1e}" for k in range(4)])

# the recurrence M_k^(n) = (n-k)/n M_k^(n-1) + k/n A^(n) M_{k-1}^(n-1)
I = torch.eye(5, dtype=torch.float64)
M = [I] + [torch.zeros_like(I)] * 3                        # M_0..M_3 of a model with no layer yet
for n, An in enumerate(A, start=1):
    M = [I] + [(n - k) / n * M[k] + k / n * An @ M[k - 1] for k in range(1, 4)]
print("recurrence:", [f"{(ola[k] - M[k]).abs().max():.1e}" for k in range(4)])
print("wrong order, order 2:", f"{(ola[2] - (A1 @ A2 + A1 @ A3 + A2 @ A3) / 3).abs().max():.1e}")

# %% [markdown]
# Both deviations are at float64 rounding. Swapping the products gives a deviation of the size
# of the entries themselves: matrix products do not commute, and the later layer multiplies
# from the left because it acts on the output of the earlier one. The package's
# `order_level_attention_bruteforce` (in `olacore`) is the same enumeration written for any $N$.
#
# ```{solution-end}
# ```
#
# ```{exercise} The chapter on the other kind of model
# :label: ex-01-other-kind
# The chapter ran on the model printed in its first cell (at the `default` profile a causal LM,
# SmolLM2-135M). Run it on a model of the other kind with the notebook parameter `model` (an
# encoder such as `minilm-l6`, or a causal LM such as `smollm2-135m` if this page ran on an
# encoder), and compare the identity table ({numref}`tbl-identities`) and the mass profile
# ({numref}`tbl-order-profile`) with this page. Then compute the orders of a sentence of your
# own and check in a few lines that every order of a causal LM is lower-triangular and
# row-stochastic.
# ```
#
# ```{solution-start} ex-01-other-kind
# :class: dropdown
# ```
#
# The chapter on another model, from the command line:
#
# ```bash
# .venv/bin/python scripts/execute_notebooks.py notebooks/01_derivation.py --profile smoke \
#     -p model minilm-l6 --out /tmp/my-run
# ```
#
# A sentence of your own, on the chapter's model (the command line gives the same orders with
# `python -m olacore ola --model <model> --max-order 3 --json --text "..."`):

# %%
(mine,) = cached_ola(model, ["The preacher at the mosque said that the killing would cause trouble."], 3,
                     progress=False)
orders = mine.orders                                       # (K + 1, T, T), orders 0..K
print("largest entry above the diagonal:", orders.triu(1).abs().max().item())
print("rows sum to 1 within:", (orders.sum(-1) - 1).abs().max().item())
print("mean mass on the first token, orders 1..K:", orders[1:, 1:, 0].mean(-1).tolist())

# %% [markdown]
# In the new run the last row of the identity table (the upper triangle of every order) is
# exactly zero for a causal LM and a dash for an encoder, whose attention looks both ways. The
# other identities hold to rounding for either kind: they are algebra, not a property of the
# model. These orders are raw (no sink cleaning): for the causal LM the mass on the first token
# grows with the order, more than for an encoder (compare the "mass on first token" column of
# the two runs' mass profiles); the attention sink takes over the higher orders.
#
# ```{solution-end}
# ```
#
# ```{exercise} Which orders is rollout made of?
# :label: ex-01-rollout
# Rollout is the binomial mixture $\sum_k \binom{N}{k} \mathrm{OLA}_k / 2^N$. For the model of
# this chapter (its $N$ is printed just above the identity table), which order has the largest
# weight, and what share of rollout do orders 1 to 3 carry together? Check your weights against
# the last column of {numref}`tbl-order-profile`, then repeat for $N = 24$ and $N = 42$, the
# depths of the paper's causal models.
# ```
#
# ```{solution-start} ex-01-rollout
# :class: dropdown
# ```

# %%
(extraction,) = cached_attention(model, ["Any text will do."], progress=False)  # the chapter's model
for N in (extraction.attentions.shape[0], 24, 42):
    weights = [math.comb(N, k) / 2**N for k in range(N + 1)]
    print(f"N = {N}: largest weight at order {max(range(N + 1), key=weights.__getitem__)}, "
          f"orders 1-3 carry {100 * sum(weights[1:4]):.3g} % of rollout")

# %% [markdown]
# The weights peak at $k = N/2$ and the low orders' share falls steeply with depth: in a deep
# model rollout is almost entirely made of orders near the middle, where every path has passed
# through many layers and the maps look alike for every text. That is the paper's reason to
# split rollout by order, and it is why the low orders of this chapter's figures are the ones
# that still look like the sentence.
#
# ```{solution-end}
# ```
