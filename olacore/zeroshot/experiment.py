"""The zero-shot experiment: cached answers per example, parsed rows, and the scores beside the paper's.

Every raw answer is kept in a :class:`olacore.store.TensorStore` entry under :func:`answer_keys` (the full
rendered prompt, the device type and the code digest of the prompts and the decoder included), so a changed
prompt, decoder or model is never served an old answer, and a GPU run never a CPU one. :func:`zero_shot_scores`:
RE 19-way accuracy and the official SemEval-2010 Task 8 macro-F1, NER entity-level F1 (seqeval); unparseable
answers score as wrong and are counted.
"""

from __future__ import annotations

import hashlib
import json
from typing import Sequence

import pandas as pd
import torch

from olacore.corpora import SEMEVAL_LABELS, NERSentence, RelationExample
from olacore.settings import check_compute_options, cpu_workers, resolve_device
from olacore.store import TensorStore, code_digest
from olacore.timing import progress as progress_bar
from olacore.zeroshot.generate import (GenerativeLM, answer_identity, decode_batch, decode_job, load_generator,
                                       tokenize_prompts)
from olacore.zeroshot.parse import RELATION_TYPES, parse_entities, parse_relation
from olacore.zeroshot.prompts import PROMPTS, build_prompt, prompt_form

__all__ = ["zero_shot", "zero_shot_scores", "answer_keys", "semeval_macro_f1"]


def _decoding(task: str, form: str) -> dict:
    spec = PROMPTS[task]
    return {"greedy": True, "max_new_tokens": spec.max_new_tokens,
            "stop": list(spec.stop(form)), "end_of_turn": True}


def _batches(count: int, batch_size: int) -> list[range]:
    """The fixed batches of ``count`` distinct prompts: batch ``j`` holds prompts ``j * batch_size`` onwards."""
    return [range(first, min(first + batch_size, count)) for first in range(0, count, batch_size)]


def answer_keys(store: TensorStore, fingerprint: str, task: str, form: str, prompts: Sequence[str],
                texts: Sequence[str], *, device: str, batch_size: int = 16, shared: int = 0) -> list[str]:
    """The store key of each answer: model fingerprint, task, form, decoding, prompt, text, ``device`` (the type:
    ``"cpu"``, ``"cuda"``), the :func:`olacore.store.code_digest` of this module and what it imports (prompts,
    decoder), and what else the answer's bits depend on: the prompts of its fixed batch (``prompts`` are distinct and
    in order, cut into batches of ``batch_size``) and ``shared``, the token prefix run once per batch."""
    decoding, code = _decoding(task, form), code_digest(__name__)
    keys = []
    for batch in _batches(len(prompts), batch_size):
        members = hashlib.sha256(json.dumps([prompts[i] for i in batch], ensure_ascii=False).encode()).hexdigest()
        keys += [store.key(kind="zero-shot-answer", model=fingerprint, task=task, form=form, decoding=decoding,
                           prompt=prompts[i], text=texts[i], device=device, code=code, batch=members, shared=shared)
                 for i in batch]
    return keys


def _check_examples(task: str, examples: Sequence) -> list:
    if task not in PROMPTS:
        raise ValueError(f"unknown zero-shot task {task!r}; choose 're' or 'ner'")
    examples = list(examples)
    if not examples:
        raise ValueError("examples is empty; pass records of olacore.corpora.read_semeval / read_wnut17")
    wanted = RelationExample if task == "re" else NERSentence
    wrong = [i for i, x in enumerate(examples) if not isinstance(x, wanted)]
    if wrong:
        raise ValueError(f"task {task!r} needs {wanted.__name__} records; example {wrong[0]} is "
                         f"{type(examples[wrong[0]]).__name__}")
    return examples


def zero_shot(model: str | GenerativeLM, task: str, examples: Sequence, *, form: str = "auto", batch_size: int = 16,
              device: str | torch.device | None = None, workers: int | None = None, progress: bool = True,
              store: TensorStore | None = None) -> pd.DataFrame:
    """Zero-shot prompting of a causal LM on ``examples``: one parsed row per example (the paper's TOA baseline).

    Args:
        model: a causal LM name (zoo, folder, Hugging Face id; weights loaded only on a cache miss) or a
            :class:`GenerativeLM`.
        task: ``"re"`` (SemEval-2010 Task 8 :class:`RelationExample` records) or ``"ner"`` (WNUT-17
            :class:`NERSentence` records).
        form: ``"auto"`` (chat template where the tokenizer has one, else plain), ``"chat"`` or ``"plain"``.
        batch_size: prompts decoded together (16 measured fastest on the 2-core CPU; book/design.md). The distinct
            prompts, in their given order, are cut into fixed batches of ``batch_size``, each starting with the token
            prefix all of them share; a batch with any answer missing from ``store`` is decoded whole, so an answer
            never depends on what was cached (its key names its batch, :func:`answer_keys`).
        workers: processes decoding the missing batches on a CPU, each loading the model once (default one per core,
            :func:`olacore.settings.cpu_workers`); a :class:`GenerativeLM`, a GPU or a single missing batch runs here.
            Every batch runs on :data:`olacore.settings.COMPUTE_THREADS` threads: the answers are the same for any
            ``workers``.
        store: default ``TensorStore()``.

    Returns:
        One row per example, in order: ``model, form, id, text, gold, answer, status, finish, seconds`` (generation
        cost when made), ``cached`` and, for RE, ``e1, e2, label, correct``; for NER, ``words, tags, entities,
        bad_line, outside_type, not_in_sentence, overlap`` (``gold`` and ``tags`` are BIO tuples).

    Raises:
        ValueError: unknown task, empty or mistyped examples, an encoder or unknown model, ``batch_size`` below 1.
    """
    examples = _check_examples(task, examples)
    check_compute_options(workers, device)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an int >= 1; got {batch_size!r}")
    store = store if store is not None else TensorStore()
    name, tokenizer, fingerprint = answer_identity(model)
    form = prompt_form(tokenizer, form)
    prompts = [build_prompt(tokenizer, task, x, form) for x in examples]
    where = model.device.type if isinstance(model, GenerativeLM) else resolve_device(device).type
    distinct = list(dict.fromkeys(zip(prompts, (x.text for x in examples))))  # a repeated example is asked once
    ids, shared = tokenize_prompts(tokenizer, [p for p, _ in distinct], add_special_tokens=form == "plain")
    keys = answer_keys(store, fingerprint, task, form, [p for p, _ in distinct], [t for _, t in distinct],
                       device=where, batch_size=batch_size, shared=shared)
    answers: dict[str, dict] = {}
    missing = []  # batches with an answer missing: decoded whole
    for batch in _batches(len(distinct), batch_size):
        found = {keys[i]: store.get(keys[i]) for i in batch}
        if any(entry is None for entry in found.values()):
            missing.append(batch)
        else:
            answers.update({key: dict(entry[1], cached=True) for key, entry in found.items()})
    if missing:
        spec = PROMPTS[task]
        stop = _decoding(task, form)["stop"]
        made = _decode(model, name, [[ids[i] for i in batch] for batch in missing], shared, spec.max_new_tokens, stop,
                       device=device, workers=workers, progress=progress)
        for batch, generations in zip(missing, made):
            for i, generation in zip(batch, generations):
                meta = {"answer": generation.text, "finish": generation.finish,
                        "prompt_tokens": generation.prompt_tokens, "seconds": generation.seconds,
                        "model": fingerprint, "task": task, "form": form}
                if keys[i] not in store:
                    store.put_or_warn(keys[i], {"tokens": torch.tensor(generation.tokens, dtype=torch.long)}, meta)
                answers[keys[i]] = dict(meta, cached=False)
    by_example = dict(zip(distinct, keys))
    keys = [by_example[prompt, x.text] for prompt, x in zip(prompts, examples)]
    rows = [_row(task, x, answers[key], name, form) for x, key in zip(examples, keys)]
    return pd.DataFrame(rows)


def _decode(model: str | GenerativeLM, name: str, batches: list[list[list[int]]], shared: int, max_new_tokens: int,
            stop: list[str], *, device, workers: int | None, progress: bool) -> list[list]:
    """:func:`olacore.zeroshot.generate.decode_batch` of each batch of token ids, in order: spread over worker
    processes (:func:`olacore.workers.run_in_processes`, one job per batch) when ``model`` is a name on a CPU and
    more than one batch and worker are at hand, else here."""
    workers = cpu_workers(device) if workers is None else workers
    spread = not isinstance(model, GenerativeLM) and resolve_device(device).type == "cpu" and workers > 1 \
        and len(batches) > 1
    if spread:
        from olacore.workers import run_in_processes  # the pool: it changes no answer (not in the answers' keys)

        jobs = [(name, "cpu", rows, shared, max_new_tokens, stop) for rows in batches]
        return run_in_processes(decode_job, jobs, min(workers, len(jobs)), progress=progress,
                                desc=f"zero-shot {name}")
    lm = model if isinstance(model, GenerativeLM) else load_generator(name, device=device)
    return [decode_batch(lm, rows, shared, max_new_tokens=max_new_tokens, stop=stop)
            for rows in progress_bar(batches, enabled=progress, total=len(batches), desc=f"zero-shot {name}")]


def _row(task: str, example, answer: dict, name: str, form: str) -> dict:
    row = {"model": name, "form": form, "id": example.sent_id, "text": example.text}
    text = answer["answer"]
    if task == "re":
        parsed = parse_relation(text)
        row.update(e1=" ".join(example.words[slice(*example.e1)]), e2=" ".join(example.words[slice(*example.e2)]),
                   gold=example.label, answer=text, label=parsed.label, status=parsed.status,
                   correct=parsed.label == example.label)
    else:
        parsed = parse_entities(text, example.words)
        row.update(words=example.words, gold=example.tags, answer=text, tags=parsed.tags, status=parsed.status,
                   entities=len(parsed.entities), **parsed.problems)
    row.update(finish=answer["finish"], seconds=answer["seconds"], cached=answer["cached"])
    return row


def semeval_macro_f1(gold: Sequence[str], predicted: Sequence[str | None]) -> tuple[float, pd.DataFrame]:
    """The official SemEval-2010 Task 8 score: macro-F1 over the 9 relations, direction taken into account.

    Per relation type, a true positive is a prediction equal to the gold directed label; precision's denominator is
    every prediction of that type (either direction), recall's every gold example of it; ``Other`` is left out of
    the average (its predictions still cost recall). ``None`` predictions are wrong; a type without predictions or
    gold has F1 0.

    Returns:
        ``(macro-F1 in [0, 1], per-type table: type, tp, predicted, gold, precision, recall, f1)``.
    """
    from sklearn.metrics import multilabel_confusion_matrix

    directed = [label for label in SEMEVAL_LABELS if label != "Other"]
    gold = list(gold)
    predicted = ["<none>" if p is None else p for p in predicted]
    # rows: labels; each 2x2 is [[tn, fp], [fn, tp]]
    matrices = multilabel_confusion_matrix(gold, predicted, labels=directed)
    rows = []
    for kind in RELATION_TYPES:
        picked = [i for i, label in enumerate(directed) if label.startswith(kind + "(")]
        tp = int(sum(matrices[i][1, 1] for i in picked))
        n_predicted = tp + int(sum(matrices[i][0, 1] for i in picked))
        n_gold = tp + int(sum(matrices[i][1, 0] for i in picked))
        precision = tp / n_predicted if n_predicted else 0.0
        recall = tp / n_gold if n_gold else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        rows.append((kind, tp, n_predicted, n_gold, precision, recall, f1))
    table = pd.DataFrame(rows, columns=["type", "tp", "predicted", "gold", "precision", "recall", "f1"])
    return float(table["f1"].mean()), table


def zero_shot_scores(rows: pd.DataFrame, task: str) -> dict:
    """Scores of :func:`zero_shot` rows (one model). Unparseable answers count as wrong and are counted.

    Returns:
        RE: ``n, accuracy`` (19-way), ``macro_f1`` (:func:`semeval_macro_f1`), ``majority_accuracy`` (share of the
        most frequent gold label), ``unparseable`` (answers naming no single label), ``unparseable_share``,
        ``outside_label_set`` (among those: a relation without direction or a label-shaped answer outside the 19),
        ``statuses`` (count per status). NER: ``n, f1, precision, recall`` (seqeval, entity level), ``unparseable``
        (answers with no readable line), ``unparseable_share``, ``partial``, ``outside_type``, ``not_in_sentence``,
        ``gold_entities``, ``predicted_entities``, ``statuses``. Shares and scores in [0, 1].

    Raises:
        ValueError: unknown task, empty rows, or rows of several models.
    """
    if task not in PROMPTS:
        raise ValueError(f"unknown zero-shot task {task!r}; choose 're' or 'ner'")
    if len(rows) == 0:
        raise ValueError("no rows to score")
    if rows["model"].nunique() > 1:
        raise ValueError(f"rows of several models ({', '.join(rows['model'].unique())}); score one model at a time")
    n = len(rows)
    statuses = {k: int(v) for k, v in rows["status"].value_counts().items()}
    if task == "re":
        macro, _ = semeval_macro_f1(rows["gold"], [x if isinstance(x, str) else None for x in rows["label"]])
        unparseable = int((rows["status"] != "ok").sum())
        return {"n": n, "accuracy": float((rows["label"] == rows["gold"]).mean()), "macro_f1": macro,
                "majority_accuracy": float(rows["gold"].value_counts().iloc[0] / n),
                "unparseable": unparseable, "unparseable_share": unparseable / n,
                "outside_label_set": int(rows["status"].isin(["outside", "no_direction"]).sum()),
                "statuses": statuses}
    from seqeval.metrics import f1_score, precision_score, recall_score

    gold, predicted = [list(t) for t in rows["gold"]], [list(t) for t in rows["tags"]]
    unparseable = int(rows["status"].isin(["unparseable", "empty"]).sum())
    return {"n": n, "f1": float(f1_score(gold, predicted, zero_division=0)),
            "precision": float(precision_score(gold, predicted, zero_division=0)),
            "recall": float(recall_score(gold, predicted, zero_division=0)),
            "unparseable": unparseable, "unparseable_share": unparseable / n,
            "partial": int((rows["status"] == "partial").sum()),
            "outside_type": int(rows["outside_type"].sum()), "not_in_sentence": int(rows["not_in_sentence"].sum()),
            "gold_entities": int(sum(sum(t.startswith("B-") for t in g) for g in gold)),
            "predicted_entities": int(rows["entities"].sum()), "statuses": statuses}
