"""The syntax chapter (06, appendix a4; paper section 4.3): its EWT data sets and the readings of its grid of adapters.

The chapter trains one adapter per (data set, input, seed) (:func:`olacore.toa.train.train_adapters`) on the data of
:func:`syntax_datasets`; the functions here turn its table into seed summaries, the raw-layer baseline, the
causal-map analysis, the claims' verdicts (:func:`olacore.report.claim_verdict`) and the report's numbers.

**The paper's table** (:func:`olacore.report.paper_syntax`: BERT-, RoBERTa-, ELECTRA-base, UAS / LAS per OLA order and
rollout) has none of our models: each of our encoder numbers stands beside every paper encoder's number of the
same channel and metric (keys ``syntax/<paper model>/<channel>/<metric>``), under the held-out protocol (checkpoint
chosen on dev; the official configs select on test). The causal LMs have no published syntax number.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np
import pandas as pd

from olacore.corpora import evenly_spread
from olacore.maps import sink_flags
from olacore.plots import TEXT
from olacore.profiles import SyntaxSettings
from olacore.report import FAILS, GOAL, HOLDS, MARGIN, WEAK, better, claim_verdict, paper_syntax
from olacore.results import HELD_OUT, ChapterResults
from olacore.settings import cpu_workers
from olacore.store import TensorStore
from olacore.toa.data import SYNTAX_GRID, InputSpec, TaskData, syntax_data
from olacore.toa.train import attachment_words, paired_bootstrap_se

if TYPE_CHECKING:
    import torch

    from olacore.corpora import UDSentence

__all__ = ["SCORE_COLUMNS", "DataSet", "grid_datasets", "grid_cells", "syntax_splits", "subset_splits",
           "syntax_datasets", "grid_table", "summary", "layer_screen", "layer_cells", "best_layer", "syntax_verdicts",
           "learning_curve", "head_directions", "direction_table", "wide_table", "parse_examples",
           "baseline_table", "data_reports", "grid_plan", "PAPER_INPUTS", "syntax_paper_numbers",
           "syntax_keys", "main_data_sets", "record_syntax", "record_rows", "paired_margin", "draw_arcs"]

SCORE_COLUMNS = ("uas", "las", "uas_nopunct", "las_nopunct")


@dataclass(frozen=True)
class DataSet:
    """One data set of the syntax grid: ``model``'s EWT splits (``None``: the chapter's), the channel
    ``sources`` it carries, or its ``random_init`` twin; ``name`` is its row label (``"minilm-l6 [ALTI subset]"``)."""

    name: str
    model: str
    num_train: int | None = None
    num_dev: int | None = None
    num_test: int | None = None
    sources: tuple[str, ...] = ("ola",)
    random_init: bool = False


def grid_datasets(settings: SyntaxSettings) -> dict[str, DataSet]:
    """Every data set the grid of ``settings`` trains on, by name."""
    out: dict[str, DataSet] = {}
    for model in settings.models:
        sources = ("ola",)
        if model in settings.alti_models and settings.alti_subset is None:
            sources += ("alti",)
        if model in settings.layer_models:
            sources += ("attention",)
        out[model] = DataSet(model, model, sources=sources)
    for model in settings.alti_models:
        if settings.alti_subset is not None:
            name = f"{model} [ALTI subset]"
            out[name] = DataSet(name, model, *settings.alti_subset, sources=("ola", "alti"))
    for model in settings.curve_models:
        for size in settings.curve_sizes:
            if settings.num_train is None or size < settings.num_train:
                out[f"{model} [train {size}]"] = DataSet(f"{model} [train {size}]", model, num_train=size)
    for model in settings.random_init:
        out[f"{model} [random init]"] = DataSet(f"{model} [random init]", model, random_init=True)
    return out


def grid_cells(settings: SyntaxSettings) -> list[tuple[str, str, int]]:
    """Every ``(data set, input name, seed)`` of the grid of ``settings`` (best-layer cells come later)."""
    first = settings.seeds[0]
    out = []
    for model in settings.models:
        inputs = [i for i in SYNTAX_GRID if i != "ALTI"] if model in settings.full_grid else list(settings.basic_inputs)
        if model in settings.alti_models and settings.alti_subset is None:
            inputs.append("ALTI")
        for name in inputs:
            seeds = settings.seeds if model in settings.full_grid and name in settings.seed_inputs else settings.seeds[:1]
            out += [(model, name, seed) for seed in seeds]
    for name, dataset in grid_datasets(settings).items():
        if name == dataset.model:
            continue
        inputs = ["order 1", "ALTI"] if "alti" in dataset.sources else ["order 1"]
        out += [(name, i, first) for i in inputs]
    return out


def syntax_splits(settings: SyntaxSettings) -> dict[str, list[Any]]:
    """The EWT sentences of the chapter (:func:`olacore.corpora.ewt_splits`): ``train``, ``dev``, ``test`` and, with
    ``settings.long_sentences``, ``test_long`` (> 30 words; at most ``settings.num_test`` of them, spread evenly)."""
    from olacore.corpora import ewt_splits

    splits = ewt_splits(settings.num_train, settings.num_dev, settings.num_test)
    if not settings.long_sentences:
        splits.pop("test_long", None)
    elif settings.num_test is not None and settings.num_test < len(splits["test_long"]):
        splits["test_long"] = evenly_spread(splits["test_long"], settings.num_test)
    return splits


def subset_splits(splits: Mapping[str, Sequence[Any]], num_train: int | None = None, num_dev: int | None = None,
                  num_test: int | None = None) -> dict[str, list[Any]]:
    """The first ``num_train`` / ``num_dev`` sentences and ``num_test`` spread over test (``None``: whole);
    ``test_long`` only when nothing is cut."""
    out = {"train": list(splits["train"])[:num_train], "dev": list(splits["dev"])[:num_dev],
           "test": evenly_spread(splits["test"], num_test)}
    if "test_long" in splits and num_train is None and num_dev is None and num_test is None:
        out["test_long"] = list(splits["test_long"])
    return out


def syntax_datasets(settings: SyntaxSettings, splits: Mapping[str, Sequence[Any]], *, workers: int | None = None,
                    device: str | None = None, progress: bool = False, store: TensorStore | None = None,
                    ) -> dict[str, dict[str, TaskData]]:
    """Every data set of :func:`grid_datasets`: ``{name: {split: TaskData}}`` (maps cached).

    A data set's splits are :func:`subset_splits` of ``splits`` (:func:`syntax_splits`) at its sizes; a random-init
    data set's model is the zoo model's twin, by name (:func:`olacore.loading.twin_name`, seed 0: initialised once and
    kept, loaded only where maps are missing, by each worker). Texts shared between data sets are extracted once.

    Args:
        workers: extraction processes (default one per core on a CPU).
        device, progress, store: as for :func:`syntax_data`.
    """
    from olacore.loading import twin_name

    workers = workers or cpu_workers(device)
    out = {}
    for name, dataset in grid_datasets(settings).items():
        model = twin_name(dataset.model, seed=0) if dataset.random_init else dataset.model
        chosen = subset_splits(splits, dataset.num_train, dataset.num_dev, dataset.num_test)
        out[name] = syntax_data(model, chosen, settings, sources=dataset.sources, workers=workers, device=device,
                                progress=progress, store=store)
    return out


def grid_table(adapters: Mapping[tuple[str, str, int], Any], data: Mapping[str, Mapping[str, TaskData]]) -> pd.DataFrame:
    """The grid's table: one row per cell ``(data set, input, seed)`` of ``adapters`` (trained DP adapters), its
    test scores (scored once) and training record.

    Returns:
        columns ``model`` (data set), ``kind``, ``input``, ``seed``, ``train`` (sentences), ``epoch`` (kept),
        ``dev_uas``, ``dev_las``, :data:`SCORE_COLUMNS`, ``long_uas`` / ``long_las`` where the data set has a
        ``test_long`` split, ``train_seconds``, ``sentences_per_second``, ``words``.
    """
    rows = []
    for (name, input_name, seed), adapter in adapters.items():
        scores = adapter.evaluate(data[name]["test"])
        row = {"model": name, "kind": "causal" if data[name]["test"].causal else "encoder", "input": input_name,
               "seed": seed, "train": len(data[name]["train"]), "epoch": adapter.record["best_epoch"],
               "dev_uas": adapter.record["dev"]["uas"], "dev_las": adapter.record["dev"]["las"],
               **{k: scores[k] for k in SCORE_COLUMNS}}
        if len(data[name].get("test_long", ())):  # the paper profile also scores the long sentences
            long = adapter.evaluate(data[name]["test_long"])
            row.update(long_uas=long["uas"], long_las=long["las"])
        row.update(train_seconds=adapter.record["train_seconds"],
                   sentences_per_second=adapter.record["sentences_per_second"], words=scores["words"])
        rows.append(row)
    return pd.DataFrame(rows)


def summary(table: pd.DataFrame, columns: Sequence[str] = ("uas", "las")) -> pd.DataFrame:
    """Mean, standard deviation (n - 1) and number of seeds of ``columns`` per model and input."""
    grouped = table.groupby(["model", "input"], sort=False)[list(columns)]
    out = grouped.agg(["mean", "std", "count"])
    out.columns = [f"{column}_{stat}" for column, stat in out.columns]
    return out.reset_index()


def paired_margin(first: Sequence[Any], second: Sequence[Any], data: TaskData) -> dict[str, dict[str, float]]:
    """The UAS and LAS margins of adapters ``first`` over adapters ``second`` on the same
    sentences, each with its standard error over those sentences.

    Each list holds one DP adapter per seed; a sentence's right words are averaged over its list's seeds (words scored
    as by :func:`olacore.toa.train.score`, punctuation included). ``se``: a paired bootstrap over sentences
    (:func:`olacore.toa.train.paired_bootstrap_se`), the spread of a new draw of test sentences, not the seed spread.

    Args:
        data: test data of their task and kind.

    Returns:
        ``{"uas": {...}, "las": {...}}``, each ``{"margin", "se"}`` (points; ``se`` NaN for one
        sentence) and ``{"sentences", "words"}``.

    Raises:
        ValueError: an empty list, or no scored word.
    """
    if not first or not second:
        raise ValueError(f"paired_margin needs adapters on both sides; got {len(first)} and {len(second)}")

    def right(adapters: Sequence[Any]) -> np.ndarray:
        """Per sentence, scored words, right heads and right labelled heads, averaged over ``adapters``: (N, 3)."""
        counts = np.zeros((len(data.items), 3))
        for adapter in adapters:
            lists = attachment_words(data.items, adapter.predict(data), adapter.vocab)
            for i, (gold_heads, gold_rels, heads, rels, _) in enumerate(zip(*lists)):
                head_ok = [g == p for g, p in zip(gold_heads, heads)]
                counts[i] += len(gold_heads), sum(head_ok), sum(h and g == p for h, g, p in zip(head_ok, gold_rels, rels))
        return counts / len(adapters)

    ours, theirs = right(first), right(second)
    kept = ours[:, 0] > 0
    if not kept.any():
        raise ValueError("paired_margin: no scored word in the data")
    ours, theirs = ours[kept], theirs[kept]
    words, n = ours[:, 0], int(kept.sum())
    margins = {}
    for column, metric in enumerate(("uas", "las"), start=1):
        share = (ours[:, column] - theirs[:, column]).sum() / words.sum()
        se = paired_bootstrap_se(ours, theirs, lambda c: 100.0 * c[..., column] / c[..., 0])
        margins[metric] = {"margin": 100.0 * share, "se": se, "sentences": n, "words": int(words.sum())}
    return margins


def layer_screen(data: TaskData) -> pd.DataFrame:
    """Score every raw attention layer as a parser on its own, with no training (to choose one on dev).

    Per layer: head-averaged attention, sink entries removed (:func:`olacore.maps.sink_flags`, ``stats="causal"``),
    made symmetric (``A + A^T``), the diagonal left out; a word's predicted head is the word it shares most attention
    with. Score: the share of words (root words and heads beyond the cut left out) whose predicted head is gold, the
    undirected "attention attaches to the head" reading of Clark et al. (2019). Meant for dev (see :func:`layer_cells`).

    Args:
        data: DP task data with ``"attention"`` records (:func:`syntax_data`, ``sources=("ola", "attention")``).

    Returns:
        columns ``layer`` (1 nearest the input), ``input`` (``"layer <n>"``), ``attachment`` (percent), ``words``
        (scored), sorted by ``layer``.

    Raises:
        ValueError: the data carries no attention records.
    """
    records = data.sources.get("attention")
    if records is None:
        raise ValueError(f"{data.model} {data.split}: no attention records; build it with sources=('ola', 'attention')")
    layers = records[0].attentions.shape[0] if records else 0
    hits, words = np.zeros(layers), 0
    for layer in range(1, layers + 1):
        spec = InputSpec((f"layer{layer}",))
        for maps, item in zip(data.raw(spec), data.items):
            grid = maps[0].masked_fill(sink_flags(maps[0], data.causal, stats="causal"), 0.0)
            both = (grid + grid.T).fill_diagonal_(-1.0)
            guess = both.argmax(-1).tolist()
            scored = [(w, h) for w, h in enumerate(item.heads) if h >= 0 and h != item.word_tokens[w]]
            hits[layer - 1] += sum(guess[item.word_tokens[w]] == h for w, h in scored)
            words += len(scored) if layer == 1 else 0
    return pd.DataFrame({"layer": range(1, layers + 1), "input": [f"layer {n}" for n in range(1, layers + 1)],
                         "attachment": 100.0 * hits / max(words, 1), "words": words})


def layer_cells(screens: Mapping[str, pd.DataFrame], seed: int = 0) -> list[tuple[str, str, int]]:
    """The best-single-layer cells: for each model, the layer of highest :func:`layer_screen` score (on its *dev*
    split, never test), seed ``seed``."""
    out = []
    for model, screen in screens.items():
        ranked = screen.sort_values(["attachment", "layer"], ascending=[False, True])
        out += [(model, name, seed) for name in ranked["input"].head(1)]
    return out


def baseline_table(table: pd.DataFrame, models: Sequence[str]) -> pd.DataFrame:
    """Per model (seed-0 cells): order 1 beside its baselines, in test UAS (percent).

    Returns:
        columns ``model``, ``order 1``, ``distance``, ``order 1 - distance``, ``random init``
        (order 1 of the ``"<model> [random init]"`` data set), ``best layer`` (its name, chosen
        on dev: :func:`best_layer`) and ``best layer score``; NaN / ``""`` where not run.
    """
    first = table[table["seed"] == table["seed"].min()]
    layers = best_layer(first).set_index("model")

    def value(model: str, name: str) -> float:
        found = first[(first["model"] == model) & (first["input"] == name)]["uas"]
        return float(found.iloc[0]) if len(found) else float("nan")

    rows = []
    for model in models:
        order1, distance = value(model, "order 1"), value(model, "distance")
        rows.append({"model": model, "order 1": order1, "distance": distance, "order 1 - distance": order1 - distance,
                     "random init": value(f"{model} [random init]", "order 1"),
                     "best layer": layers.loc[model, "input"] if model in layers.index else "",
                     "best layer score": float(layers.loc[model, "uas"]) if model in layers.index else float("nan")})
    return pd.DataFrame(rows)


def grid_plan(settings: Any) -> pd.DataFrame:
    """What the grid of a profile runs, per data set (:func:`grid_cells`).

    Returns:
        columns ``data set``, ``model``, ``train``, ``dev``, ``test`` (sentences), ``inputs`` (comma-separated),
        ``seeds`` (with the inputs of each set of seeds, where they differ), ``adapters``; the best-layer cells are
        added once a layer is chosen on dev.
    """
    sets = grid_datasets(settings)
    rows = []
    for name, dataset in sets.items():
        cells = [(i, s) for m, i, s in grid_cells(settings) if m == name]
        if not cells:
            continue
        size = {split: getattr(dataset, f"num_{split}") or getattr(settings, f"num_{split}")
                for split in ("train", "dev", "test")}
        seeds_of: dict[str, list[int]] = {}
        for input_name, seed in cells:
            seeds_of.setdefault(input_name, []).append(seed)
        by_seeds: dict[str, list[str]] = {}
        for input_name, seeds in seeds_of.items():
            by_seeds.setdefault(", ".join(map(str, sorted(seeds))), []).append(input_name)
        rows.append({"data set": name, "model": dataset.model, **size, "inputs": ", ".join(seeds_of),
                     "seeds": next(iter(by_seeds)) if len(by_seeds) == 1 else
                     "; ".join(f"{seeds} ({', '.join(inputs)})" for seeds, inputs in by_seeds.items()),
                     "adapters": len(cells)})
    return pd.DataFrame(rows)


def data_reports(data: Mapping[str, Any], levels: Sequence[str] = ("data set", "split"),
                 counts: Sequence[str] = ("words", "words beyond cut", "heads beyond cut")) -> pd.DataFrame:
    """What alignment and the length cut did (:class:`olacore.toa.data.TaskReport`), one row per
    :class:`~olacore.toa.data.TaskData` of ``data``, nested one mapping per name of ``levels``
    (``{data set: {split: TaskData}}``; transfer: ``{task: {model: {split: TaskData}}}``).

    Returns:
        columns: the names of ``levels``, then ``sentences``, ``kept``, ``not aligned``, ``cut`` (sentences longer
        than the cut) and the report's counts named in ``counts`` (e.g. ``words beyond cut``, ``dropped beyond cut``).
    """
    found = [((), data)]
    for _ in levels:
        found = [(keys + (name,), inner) for keys, node in found for name, inner in node.items()]
    rows = [{**dict(zip(levels, keys)), "sentences": d.report.sentences, "kept": d.report.kept,
             "not aligned": len(d.report.unaligned), "cut": d.report.cut_sentences,
             **{name: getattr(d.report, name.replace(" ", "_")) for name in counts}} for keys, d in found]
    return pd.DataFrame(rows)


def best_layer(table: pd.DataFrame) -> pd.DataFrame:
    """Per model, the ``"layer <n>"`` row of the grid whose adapter has the best *dev* LAS
    (the candidates of :func:`layer_cells`; test is read only for the chosen one)."""
    layers = table[table["input"].str.match(r"^layer \d+$")]
    if layers.empty:
        return layers.copy()
    chosen = layers.loc[layers.groupby("model", sort=False)["dev_las"].idxmax()]
    return chosen.reset_index(drop=True)


#: The chapter's claims: (claim, reference input, other inputs, which data sets).
CLAIMS = (
    ("first order beats higher orders and rollout", "order 1", ("order 2", "order 3", "rollout")),
    ("OLA carries syntax beyond distance", "order 1", ("distance",)),
    ("first-order OLA beats ALTI", "order 1", ("ALTI",)),
)


def syntax_verdicts(table: pd.DataFrame) -> pd.DataFrame:
    """Every claim's verdict, per model (data set) and compared input, from the grid's table.

    Each row pairs the reference with one other input: the paired test-UAS differences over the seeds both ran,
    judged by :func:`olacore.report.claim_verdict` (:data:`~olacore.report.MARGIN`); ``overall`` is the claim's
    worst verdict for the model. ``goal_met`` (distance claim only): order 1 is at least
    :data:`~olacore.report.GOAL` points above the distance-only baseline.

    Returns:
        columns ``claim``, ``model``, ``other``, ``seeds``, ``mean_diff``, ``min_diff``, ``verdict``, ``overall``,
        ``goal_met`` (``None`` outside the distance claim).
    """
    rank = {FAILS: 0, WEAK: 1, HOLDS: 2}
    rows = []
    for claim, reference, others in CLAIMS:
        for model, group in table.groupby("model", sort=False):
            by_seed = group.pivot_table(index="seed", columns="input", values="uas")
            found = []
            for other in others:
                if reference not in by_seed or other not in by_seed:
                    continue
                diffs = (by_seed[reference] - by_seed[other]).dropna()
                if diffs.empty:
                    continue
                mean = float(diffs.mean())
                found.append({"claim": claim, "model": model, "other": other, "seeds": len(diffs), "mean_diff": mean,
                              "min_diff": float(diffs.min()), "verdict": claim_verdict(diffs, MARGIN),
                              "goal_met": bool(mean >= GOAL) if other == "distance" else None})
            if found:
                overall = min((f["verdict"] for f in found), key=rank.get)
                rows += [{**f, "overall": overall} for f in found]
    return pd.DataFrame(rows, columns=["claim", "model", "other", "seeds", "mean_diff", "min_diff", "verdict", "overall",
                                       "goal_met"])


def learning_curve(table: pd.DataFrame, models: Sequence[str], input_name: str = "order 1") -> pd.DataFrame:
    """Test UAS / LAS of ``input_name`` against training sentences, for each model: its main data set
    and its ``"<model> [train <n>]"`` data sets (same dev and test), first seed.

    Returns:
        columns ``model``, ``train``, ``uas``, ``las``, sorted by model and size.
    """
    rows = []
    for model in models:
        names = [model] + [m for m in table["model"].unique() if str(m).startswith(f"{model} [train ")]
        picked = table[table["model"].isin(names) & (table["input"] == input_name)]
        picked = picked[picked["seed"] == picked["seed"].min()]
        rows += [{"model": model, "train": int(r["train"]), "uas": r["uas"], "las": r["las"]} for _, r in picked.iterrows()]
    return pd.DataFrame(rows, columns=["model", "train", "uas", "las"]).sort_values(["model", "train"], kind="stable",
                                                                                    ignore_index=True)


def head_directions(adapter: Any, data: Any) -> pd.DataFrame:
    """Where the gold heads lie and how well the adapter finds each kind (greedy heads, test once).

    A scored word's gold head is to its *left*, to its *right*, or the word is the *root* (official convention: it
    points to itself). A causal LM's row of a word holds only its left context; the mirrored map puts the later words'
    attention to it in the upper triangle, so a right head is seen only through what the head attends to.

    Args:
        adapter, data: a trained DP adapter (:class:`olacore.toa.train.TrainedAdapter`) and DP task data of its kind.

    Returns:
        one row per direction (``left``, ``right``, ``root``): ``words``, ``share`` (percent of the scored words) and
        ``uas`` (percent of them with the right predicted head).
    """
    predictions = adapter.predict(data)
    counts = {d: [0, 0] for d in ("left", "right", "root")}
    for item, predicted in zip(data.items, predictions):
        for w, head in enumerate(item.heads):
            if head < 0:
                continue
            row = item.word_tokens[w]
            direction = "root" if head == row else ("left" if head < row else "right")
            counts[direction][0] += 1
            counts[direction][1] += int(predicted["heads"][w]) == head
    total = max(1, sum(c[0] for c in counts.values()))
    return pd.DataFrame([{"direction": d, "words": n, "share": 100.0 * n / total,
                          "uas": 100.0 * right / n if n else float("nan")} for d, (n, right) in counts.items()])


def direction_table(adapters: Mapping[tuple[str, str, int], Any], data: Mapping[str, Mapping[str, Any]],
                    cells: Sequence[tuple[str, str, int]], split: str = "test") -> pd.DataFrame:
    """:func:`head_directions` of several grid cells on their own data set's ``split``.

    Returns:
        columns ``model``, ``input``, ``direction``, ``words``, ``share``, ``uas``.
    """
    frames = [head_directions(adapters[cell], data[cell[0]][split]).assign(model=cell[0], input=cell[1])
              for cell in cells]
    columns = ["model", "input", "direction", "words", "share", "uas"]
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)


def wide_table(table: pd.DataFrame, models: Sequence[str], inputs: Sequence[str],
               metrics: Sequence[str] = ("uas", "las")) -> pd.DataFrame:
    """Mean over seeds of ``metrics`` per model (rows, in ``models`` order) and input (columns
    ``(metric, input)``, in ``inputs`` order); NaN where a cell did not run."""
    means = summary(table[table["model"].isin(models) & table["input"].isin(inputs)], metrics)
    wide = means.pivot_table(index="model", columns="input", values=[f"{m}_mean" for m in metrics], sort=False)
    wide.columns = [(metric.removesuffix("_mean"), name) for metric, name in wide.columns]
    ordered = [(m, i) for m in metrics for i in inputs if (m, i) in wide.columns]
    wide = wide.reindex(index=[m for m in models if m in wide.index], columns=ordered)
    wide.columns = pd.MultiIndex.from_tuples(ordered)
    return wide


def parse_examples(adapter: Any, data: Any, sentences: Sequence[Any], count: int = 2, min_words: int = 8,
                   max_words: int = 16, channel: str = "order1") -> list[dict[str, Any]]:
    """Test sentences with the adapter's heads, for :func:`draw_arcs`.

    Args:
        adapter, data: a DP adapter and word-grid task data of the same kind.
        sentences: the word-level sources of ``data`` (:class:`olacore.corpora.UDSentence`, matched by ``sent_id``).
        count: sentences to return (the first ones of ``min_words``..``max_words`` words, none cut).
        channel: the map to draw (raw, on the word grid).

    Returns:
        ``[{"sentence", "map" (W, W), "predicted" (1-based heads, 0 = root)}]``.

    Raises:
        ValueError: token-grid data (its rows are tokens, not words).
    """
    if data.grid != "words":
        raise ValueError("parse_examples draws word-grid data; build it with grid='words'")
    by_id = {s.sent_id: s for s in sentences}
    picked = [i for i, item in enumerate(data.items) if item.sent_id in by_id
              and min_words <= len(by_id[item.sent_id].words) <= max_words and len(item.heads) == len(by_id[item.sent_id].words)
              and len(set(item.positions)) == len(item.positions)][:count]
    predictions = adapter.predict(data)
    maps = data.raw(InputSpec((channel,)))
    out = []
    for i in picked:
        heads = [int(h) for h in predictions[i]["heads"]]
        out.append({"sentence": by_id[data.items[i].sent_id], "map": maps[i][0],
                    "predicted": [0 if h == w else h + 1 for w, h in enumerate(heads)]})
    return out


#: Our input names of the paper's table rows (its channels).
PAPER_INPUTS = {"order 1": "order1", "order 2": "order2", "order 3": "order3", "rollout": "rollout"}


def syntax_keys(input_name: str, metric: str, kind: str) -> list[str]:
    """The report keys (:func:`olacore.report.published`) one of our numbers stands beside:
    every paper encoder's ``input_name`` and ``metric`` (``"uas"``/``"las"``) for an encoder of
    ours, none for a causal LM or an input the paper did not run."""
    if kind != "encoder" or input_name not in PAPER_INPUTS or metric not in ("uas", "las"):
        return []
    return [f"syntax/{model}/{PAPER_INPUTS[input_name]}/{metric}" for model in paper_syntax()["model"].unique()]


def syntax_paper_numbers(table: pd.DataFrame) -> pd.DataFrame:
    """Our numbers beside the paper's syntax table, for :func:`olacore.report.paper_comparison`
    (section ``"syntax"``): mean UAS / LAS of each main encoder data set (:func:`main_data_sets`) on each of the
    paper's inputs, with the keys of :func:`syntax_keys`.

    Returns:
        columns ``subject`` (data set), ``input``, ``metric``, ``value`` (percent), ``paper_keys``.
    """
    kinds = dict(zip(table["model"], table["kind"]))
    main = main_data_sets(table["model"])
    means = summary(table[table["model"].isin(main) & table["input"].isin(list(PAPER_INPUTS))])
    rows = [{"subject": r["model"], "input": r["input"], "metric": metric, "value": r[f"{metric}_mean"],
             "paper_keys": syntax_keys(r["input"], metric, kinds[r["model"]])}
            for _, r in means.iterrows() for metric in ("uas", "las")]
    return pd.DataFrame(rows, columns=["subject", "input", "metric", "value", "paper_keys"])


def main_data_sets(names: Sequence[str]) -> list[str]:
    """The data sets that are a zoo model's main run (``"minilm-l6"``), not a smaller or control
    one (``"minilm-l6 [ALTI subset]"``, ``"... [train 125]"``, ``"... [random init]"``)."""
    return [name for name in dict.fromkeys(names) if " [" not in str(name)]


def record_syntax(results: ChapterResults, table: pd.DataFrame, verdicts: pd.DataFrame, *, anchor: str = "",
                  note: str = "") -> None:
    """Record every cell of the grid (mean over seeds) and every verdict in ``results``.

    Keys: ``syntax/<data set>/<input>/<metric>`` (percent; ``uas``, ``las``, ``uas_nopunct``, ``las_nopunct``) and
    ``verdict/<claim>/<data set>/<other input>`` (the mean paired difference, points). A main data set's
    (:func:`main_data_sets`) encoder number of a paper input carries the keys of :func:`syntax_keys`, the protocol
    ``"held-out"`` and, as its verdict, whether it beats the same model's distance-only baseline.

    Raises:
        ValueError: a number is NaN or a key repeats (:meth:`ChapterResults.add`).
    """
    metrics = ("uas", "las", "uas_nopunct", "las_nopunct")
    means = summary(table, metrics)
    kinds = dict(zip(table["model"], table["kind"]))
    main = set(main_data_sets(table["model"]))
    for _, r in means.iterrows():
        model, name = r["model"], r["input"]
        distance = means[(means["model"] == model) & (means["input"] == "distance")]
        for metric in metrics:
            details: dict[str, Any] = {"anchor": anchor, "subject": model,
                                       "note": f"mean of {int(r[metric + '_count'])} seed(s); {note}".strip("; ")}
            keys = syntax_keys(name, metric, kinds[model]) if model in main else []
            if keys:
                details.update(paper_keys=keys, protocol=HELD_OUT)
                if not distance.empty:
                    details["verdict"] = better(r[metric + "_mean"], distance[metric + "_mean"].iloc[0])
            results.add(f"syntax/{model}/{name}/{metric}", f"test {metric.upper().replace('_NOPUNCT', ' without punct.')}"
                        f", DP adapter on {name}, {model}", r[metric + "_mean"], **details)
    for _, v in verdicts.iterrows():
        results.add(f"verdict/{v['claim']}/{v['model']}/{v['other']}", f"{v['claim']}: order 1 - {v['other']}, "
                    f"{v['model']} (UAS points, {v['seeds']} seed(s))", v["mean_diff"], unit="points",
                    verdict=v["verdict"], anchor=anchor, subject=v["model"])


def record_rows(results: ChapterResults, frame: pd.DataFrame, prefix: str, keys: Sequence[str], values: Sequence[str],
                claim: str, unit: str = "%", anchor: str = "") -> None:
    """Record ``values`` of every row of ``frame`` as ``<prefix>/<key values>/<value column>``
    (NaN cells are skipped: a cell that did not run is not a number).

    Raises:
        ValueError: a key repeats (:meth:`ChapterResults.add`).
    """
    for _, row in frame.iterrows():
        where = "/".join(str(row[k]) for k in keys)
        for column in values:
            value = row[column]
            if value is None or pd.isna(value):
                continue
            results.add(f"{prefix}/{where}/{column}", f"{claim}: {column}, {where.replace('/', ', ')}", float(value),
                        unit=unit, anchor=anchor, subject=str(row[keys[0]]))


def draw_arcs(
    ax,
    word_map: torch.Tensor | np.ndarray,
    sentence: "UDSentence",
    predicted_heads: Sequence[int],
    title: str | None = None,
):
    """Gold (circles) and predicted (crosses) heads, ``W`` 1-based (0 = root), over a ``(W, W)`` word map on ``ax``.

    Raises:
        ValueError: the map or the heads do not fit the sentence.
    """
    m = np.asarray(word_map, dtype=float)
    n = len(sentence)
    if m.shape != (n, n) or len(predicted_heads) != n:
        raise ValueError(f"map {m.shape} / {len(predicted_heads)} heads do not fit a {n}-word sentence")
    ax.imshow(m, cmap="Greys", vmin=0, vmax=max(float(np.quantile(m, 0.98)), 1e-9))
    gold = [(i, h - 1) for i, h in enumerate(sentence.heads) if h > 0]
    pred = [(i, h - 1) for i, h in enumerate(predicted_heads) if h > 0]
    if gold:
        ax.scatter([j for _, j in gold], [i for i, _ in gold], s=140, facecolors="none", edgecolors="tab:green", linewidths=2, label="gold head")
    if pred:
        ax.scatter([j for _, j in pred], [i for i, _ in pred], s=80, marker="x", color="tab:orange", linewidths=2, label="predicted head")
    ax.set_xticks(range(n))
    ax.set_yticks(range(n))
    ax.set_xticklabels(sentence.words, rotation=90, fontsize=7, **TEXT)
    ax.set_yticklabels(sentence.words, fontsize=7, **TEXT)
    ax.set_xlabel("head (key word)")
    ax.set_ylabel("dependent (query word)")
    gold_root = [sentence.words[i] for i, h in enumerate(sentence.heads) if h == 0]
    pred_root = [sentence.words[i] for i, h in enumerate(predicted_heads) if h == 0]
    ax.set_title(f"{title + ': ' if title else ''}root gold={gold_root} pred={pred_root}", fontsize=8, **TEXT)
    ax.legend(loc="upper right", fontsize=7)
    return ax
