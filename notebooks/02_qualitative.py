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
# # Same text, different models: OLAS by eye
#
# The central observation of {cite}`liang2025olas` is that the OLA of a given order looks
# alike across *different* language models reading the same text (Order-Level Attention
# Similarity, OLAS), while it differs between texts. This chapter lets you see it: one text
# through every model of the profile (causal models together, encoders together, since the
# paper never mixes the two kinds; at `default` the five of the book's grids and the two
# larger ones, Qwen2.5-1.5B beside its 0.5B sibling and EmbeddingGemma-300M as a third encoder
# family), orders 1 to 3 beside rollout, a second text for contrast, the attention sink before
# and after cleaning, and a first number.
#
# :::{admonition} What you will learn
# :class: tip
# - how to put the maps of models with different tokenizers side by side: pooled onto words,
#   or resized to one grid;
# - what the attention sink is, and what the official sink cleaning removes;
# - how to turn "these maps look alike" into a first number: the SSIM of a map with another
#   model's map of the same text, against other texts;
# - how that number changes with the order, from order 1 to rollout, for causal models and
#   encoders.
# :::
#
# What differs from the paper, and why: {ref}`departures`.

# %% tags=["parameters"]
profile = "default"  # smoke, default or paper: sets every size

# %% tags=["hide-input"]
import torch

from olacore import ZOO, channel_label, token_maps
from olacore.maps import clean_sinks, model_maps
from olacore.plots import draw_maps, show_figure, show_table, token_labels
from olacore.profiles import settings
from olacore.results import ChapterResults, Stopwatch
from olacore.settings import cpu_workers
from olacore.texts import WordText, similarity_texts

from chapter_code.qualitative import same_text_gap

cfg = settings("qualitative", profile)
watch = Stopwatch("02_qualitative")
results = ChapterResults("02_qualitative", profile)
torch.set_num_threads(2)
groups = {"causal": cfg.causal, "encoder": cfg.encoders}
CHANNELS = (*(f"order{k}" for k in range(1, cfg.max_order + 1)), "rollout")
print(f"This run ({profile} profile) draws the causal models {', '.join(cfg.causal)} "
      f"and the encoders {', '.join(cfg.encoders)}.")

# %% [markdown]
# ## One text, every model
#
# Each tokenizer cuts the text differently, so token-level maps differ in size. To put them
# side by side with readable axes we pool each map onto the words of the text (our
# addition, `olacore.texts.pool_to_words`: key tokens of a word summed, query tokens
# averaged, special tokens dropped, rows renormalised). Attention sinks are cleaned first, as
# the paper does before comparing maps (see the sink section below: SmolLM2 and Qwen2.5 add
# no BOS token, so their sink is the first *word* and would hide everything else). Each panel
# has its own colour scale, clipped at its 99th percentile.

# %%
text_a = WordText.of("The committee approved the new budget after a long debate about schools.")
text_b = WordText.of("Why would anyone buy a car that breaks down every winter?")
with watch("OLA of the two texts (cache or models)"):
    words = {name: model_maps(name, [text_a, text_b], CHANNELS, align="words", sinks="clean")
             for names in groups.values() for name in names}
for index, text in enumerate([text_a, text_b]):
    for kind, names in groups.items():
        with watch("figures"):
            fig = draw_maps({n: words[n].panels(index) for n in names}, labels={n: text.words for n in names},
                            title=f"{kind} models: \u201c{text.text}\u201d")
        show_figure(fig, f"fig-words-{kind}-text{index + 1}", f"Word-level maps of text {index + 1} "
                    f"({len(text.words)} words) for the {kind} models ({', '.join(names)}): orders 1 to {cfg.max_order} "
                    "and rollout, sinks cleaned. Row i is query word i, column j key word j; colour: the weight of word "
                    "j in row i (rows sum to 1), each panel on its own scale, clipped at its 99th percentile.")

# %% [markdown]
# Read each figure down a column: for a fixed order, the causal models draw much the same
# picture of the first text at order 1 (the diagonal and the previous word{glue:md}`02-causal-notes`),
# and the second text, a question, draws a different one, again shared across them.
# {glue:md}`02-encoder-notes` How much of this likeness survives the sink cleaning, and how
# much is measurable, is what the SSIM numbers below and the next chapter's retrieval ask.
#
# ## The attention sink, before and after cleaning
#
# Causal models park much of their attention on the first token, whatever the text
# {cite}`xiao2024sinks`. The official preprocessing (`get_outliers_mask` in the official
# `models/ola_utils.py`) zeroes, in every row, every entry equal to the row's maximum and every
# entry above the row's mean plus three (sample) standard deviations, then renormalises
# (`olacore.maps.clean_sinks`). Its similarity scripts (`olas_retrieval.py`,
# `olas_visual_model.py`) take mean and standard deviation over the whole row, the zeros above
# a causal map's diagonal included; so does this book wherever it compares maps. Here the
# token-level maps of one causal model, raw and cleaned.

# %%
sink_model = cfg.causal[0]
(item,) = token_maps(sink_model, [text_a.text], CHANNELS)
raw = dict(zip(CHANNELS, item.maps))
cleaned = dict(zip(CHANNELS, clean_sinks(item.maps, causal=item.causal)))
print("mean attention on the first token (rows 2 to T), raw: "
      + ", ".join(f"{channel_label(k)} {100 * m[1:, 0].mean().item():.1f} %" for k, m in raw.items()))
with watch("figures"):
    fig = draw_maps({"raw": raw, "sinks cleaned": cleaned}, labels={"raw": token_labels(item), "sinks cleaned": token_labels(item)},
                    title=f"{sink_model}: token-level maps")
show_figure(fig, "fig-sink-cleaning", f"Token-level maps of the first text by {sink_model} ({len(item.tokens)} tokens), "
            f"orders 1 to {cfg.max_order} and rollout, raw and with the attention sinks cleaned. Row i is query token i, "
            "column j key token j; colour: the weight of token j in row i (rows sum to 1), each panel on its own "
            "scale, clipped at its 99th percentile.")

# %% [markdown]
# ## A first number: same text against different texts
#
# With the paper's alignment (every token map resized to 50 x 50, sinks cleaned) we compare
# the maps of two models by SSIM {cite}`wang2004ssim` on the first texts of the similarity
# set (50-word chunks of EWT, chapter [SSIM retrieval](03_retrieval.ipynb)). If OLAS
# holds, a map is much more similar to the other model's map *of the same text* than to its
# maps of other texts. The gap between the two means is the effect that the next chapter
# turns into retrieval accuracy.

# %%
texts = similarity_texts(cfg.num_texts)
with watch("OLA of the similarity texts (cache or models)"):
    maps = {name: model_maps(name, texts, CHANNELS, align="resize", sinks="clean", size=cfg.size,
                             workers=1 if name in ZOO and not ZOO[name].in_book else cpu_workers())  # large: one process
            for names in groups.values() for name in names}
with watch("SSIM"):
    first_number = same_text_gap(maps, groups)
show_table(first_number.pivot_table(index=["group", "model pair"], columns="channel", values="gap")
           .rename(columns=channel_label), "tbl-ssim-gap",
           f"Same-text SSIM minus different-text SSIM, per model pair and order ({len(texts)} texts of 50 words; maps "
           f"resized to {cfg.size} x {cfg.size}, sinks cleaned).", decimals=3)

# %%
positive = first_number.assign(positive=first_number["gap"] > 0).pivot_table(
    index="group", columns="channel", values="positive", aggfunc="mean")
show_table(positive.rename(columns=channel_label), "tbl-ssim-positive",
           "Share of model pairs whose same-text SSIM exceeds their different-text SSIM (1 = every pair).", decimals=2)

# %% tags=["remove-input"]
for group in positive.index:
    for channel in positive.columns:
        results.add(f"gap/{group}/{channel}/share-positive", f"share of {group} model pairs whose same-text SSIM "
                    f"exceeds their different-text SSIM ({channel})", 100 * positive.loc[group, channel])

# %%
# Explore the maps yourself: the first text's word-level maps (sinks cleaned, as in the
# first figures) of every model, in one figure that works in the page without a kernel.
# Pick a model in the menu and an order with the buttons; hover a cell to read its query
# word, key word and weight.
from chapter_code.explorer import order_explorer

explorer = order_explorer({name: words[name].panels(0) for name in words}, {name: text_a.words for name in words},
                          title=f"\u201c{text_a.text}\u201d")
show_figure(explorer, "fig-order-explorer", f"Interactive: the word-level maps of text 1 ({len(text_a.words)} words), "
            f"sinks cleaned, of every model ({', '.join(words)}), orders 1 to {cfg.max_order} and rollout; row: query "
            "word, column: key word, colour: weight (rows sum to 1). Choose the model in the menu and the order with "
            "the buttons; hovering a cell shows its words and weight.")

# %% tags=["remove-input"]
# the numbers the summary reads, glued from this run
from IPython.display import Markdown
from myst_nb import glue

# what the eye sees in the word-level figures, said only of the models this run drew
drawn = set(words)
causal_notes = [note for name, note in [("smollm2-135m", "; SmolLM2 adds a column on \u201cthe\u201d")] if name in drawn]
if {"qwen2.5-0.5b", "qwen2.5-1.5b"} <= drawn:
    causal_notes.append("; the two Qwen sizes are hard to tell apart")
glue("02-causal-notes", Markdown("".join(causal_notes)), display=False)
encoder_notes = []
if "mpnet-base" in drawn:
    encoder_notes.append("MPNet's orders 2 and 3 and its rollout collapse into one bright column on the closing "
                         "punctuation mark (every word attends to it)"
                         + (", as EmbeddingGemma's rollout does (on the second text with a second column on "
                            "\u201cWhy\u201d)" if "embeddinggemma-300m" in drawn else ""))
if "minilm-l6" in drawn:
    encoder_notes.append("MiniLM's are flatter and its rollout keeps the diagonal")
glue("02-encoder-notes", Markdown(
    f"The encoders are where the eye sees models part: {', while '.join(encoder_notes)}." if len(encoder_notes) > 1
    else "".join(f"Among the encoders, {note}." for note in encoder_notes)), display=False)
glue("02-num-texts", len(texts), display=False)

for group in groups:
    mine = first_number[first_number["group"] == group]
    for channel in ("order1", "rollout"):
        gaps = mine[mine["channel"] == channel]["gap"]
        glue(f"02-{group}-{channel}", float(gaps.mean()), display=False)
        glue(f"02-{group}-{channel}-range", Markdown(
            f"one pair" if len(gaps) == 1 else f"pairs from {gaps.min():.3f} to {gaps.max():.3f}"), display=False)
        glue(f"02-{group}-{channel}-negative", int((gaps < 0).sum()), display=False)
    glue(f"02-{group}-pairs", int(mine["model pair"].nunique()), display=False)
    by_order = mine.groupby("channel")["gap"].mean().reindex(list(CHANNELS))
    glue(f"02-{group}-trend", Markdown(
        "shrinks from each order to the next" if by_order.is_monotonic_decreasing else
        "does not shrink steadily with the order: " + ", ".join(f"{channel_label(c)} {v:.3f}"
                                                                for c, v in by_order.items())),
        display=False)

# %% tags=["remove-cell"]
results.save()
print(watch.report())

# %% [markdown]
# ## Summary
#
# The maps of one text look alike across models of one kind, and the SSIM gap says by how
# much ({numref}`tbl-ssim-gap`). For the **causal** models the same-text SSIM beats the
# different-text SSIM by {glue:text}`02-causal-order1:.3f` on average at order 1
# ({glue:md}`02-causal-order1-range`); for rollout
# the gap is {glue:text}`02-causal-rollout:.3f`, and {glue:text}`02-causal-rollout-negative`
# of {glue:text}`02-causal-pairs` pairs have a negative one. The mean gap
# {glue:md}`02-causal-trend`. These gaps are small in absolute terms because resized causal
# maps all share the same triangle and diagonal, so different texts already score high. The
# paper splits rollout by order because rollout mixes mostly the middle orders, which look
# alike for every text ({doc}`01_derivation`).
#
# For the **encoders** the gap is {glue:text}`02-encoder-order1:.3f` at order 1
# ({glue:md}`02-encoder-order1-range`) and
# {glue:text}`02-encoder-rollout:.3f` for rollout; it {glue:md}`02-encoder-trend`. A shallow
# encoder's rollout is a binomial mix dominated by low orders, unlike that of the deeper causal
# models. A mean gap says nothing yet about single texts: the next chapter asks how often the
# right text is *retrieved* from this similarity.

# %% [markdown]
# ## Exercises
#
# Each solution runs with this page (at the `smoke` profile in the tests); the commands in them
# run from the repository root once the environment is installed (`make env`). Runs with `--out`
# write to a folder of your own and leave the book's `book/generated/` alone.
#
# ```{exercise} What does sink cleaning do to the first number?
# :label: ex-02-sinks
# The SSIM gap of {numref}`tbl-ssim-gap` is measured on maps with the attention sinks cleaned.
# Measure it for two causal models on the same texts with the sinks left raw. Does the gap
# between same-text and different-text SSIM survive without cleaning, at order 1 and for
# rollout?
# ```
#
# ```{solution-start} ex-02-sinks
# :class: dropdown
# ```

# %%
pair = {"causal": tuple(cfg.causal[:2])}
for sinks in ("clean", "raw"):
    pair_maps = {name: model_maps(name, texts, ("order1", "rollout"), align="resize", sinks=sinks, size=cfg.size,
                                  progress=False) for name in pair["causal"]}
    gap = same_text_gap(pair_maps, pair)
    print(sinks, gap.pivot_table(index="model pair", columns="channel", values="gap").round(3), sep="\n")

# %% [markdown]
# The `clean` rows equal this pair's row of {numref}`tbl-ssim-gap`. With raw maps every causal
# map is dominated by the same bright first-token column, whatever the text, so both the
# same-text and the different-text SSIM rise and the gap between them shrinks: the sink is
# shared by all texts, the text-specific part is what remains after cleaning.
#
# ```{solution-end}
# ```
#
# ```{exercise} Your own sentence, two models
# :label: ex-02-sentence
# Draw the orders of a sentence of your own for two causal models, first with the command
# line (`python -m olacore ola ... --words --out`), then with `olacore` on the word grid with
# the sinks cleaned. Which cells do the two models share at order 1, and what does the command
# line's figure show that the cleaned maps do not?
# ```
#
# ```{solution-start} ex-02-sentence
# :class: dropdown
# ```
#
# From the command line (raw orders, drawn to a file):
#
# ```bash
# .venv/bin/python -m olacore ola --model smollm2-135m --max-order 3 --words --out /tmp/smollm2.png \
#     --text "My neighbour, who plays the violin, moved to Lisbon last spring."
# ```
#
# With `olacore`, cleaned and pooled onto words (`order_explorer` of `chapter_code.explorer`
# draws them as this page's explorer does):

# %%
sentence = WordText.of("My neighbour, who plays the violin, moved to Lisbon last spring.")
order1 = {name: model_maps(name, [sentence], ("order1",), align="words", sinks="clean", progress=False).stack()[0, 0]
          for name in cfg.causal[:2]}  # (words, words): row i, where word i looks
first, second = (m.argmax(-1) for m in order1.values())
for word, a, b in zip(sentence.words, first.tolist(), second.tolist()):
    print(f"{word:>10}: {sentence.words[a]:>10} | {sentence.words[b]:>10}" + ("  (shared)" if a == b else ""))

# %% [markdown]
# At order 1 look for the diagonal and the cell just left of it (each word and the word
# before), and for the commas that close the relative clause. The command line draws the raw
# orders: the first word's column takes most of every row (the attention sink), which the
# cleaned maps remove.
#
# ```{solution-end}
# ```
#
# ```{exercise} More texts for the first number
# :label: ex-02-texts
# {numref}`tbl-ssim-positive` gives the share of model pairs whose same-text SSIM beats their
# different-text SSIM, on the profile's number of texts ({glue:text}`02-num-texts` in this
# run). Re-run the chapter on 80 texts without editing any file, and see whether the shares, and the order at which the
# causal gap vanishes, stay where they are. In the page itself, try half as many.
# ```
#
# ```{solution-start} ex-02-texts
# :class: dropdown
# ```
#
# The settings of every chapter can be overridden from the environment
# (`OLACORE_SETTINGS_OVERRIDES`, a JSON object of chapter and fields; see
# `olacore.profiles.settings`):
#
# ```bash
# OLACORE_SETTINGS_OVERRIDES='{"qualitative": {"num_texts": 80}}' \
#     .venv/bin/python scripts/execute_notebooks.py notebooks/02_qualitative.py --out /tmp/my-run
# ```
#
# Half as many, from the maps this page already made (they are cached per text):

# %%
half = texts[: max(2, len(texts) // 2)]
half_maps = {name: model_maps(name, half, CHANNELS, align="resize", sinks="clean", size=cfg.size, progress=False)
             for names in groups.values() for name in names}
half_gap = same_text_gap(half_maps, groups)
show_table(half_gap.assign(positive=half_gap["gap"] > 0).pivot_table(
    index="group", columns="channel", values="positive", aggfunc="mean").rename(columns=channel_label),
    "tbl-ssim-positive-half", f"On the first {len(half)} texts only: the share of "
    "model pairs whose same-text SSIM exceeds their different-text SSIM (1 = every pair).", decimals=2)

# %% [markdown]
# A mean over more texts has a smaller spread, so a share that moves between the runs was
# resting on few texts; the ordering of the columns (order 1 above order 3 above rollout for
# the causal pairs) is the finding to check.
#
# ```{solution-end}
# ```
