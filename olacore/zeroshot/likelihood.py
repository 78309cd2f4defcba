"""Zero-shot relation classification by likelihood ranking: the 19 SemEval labels scored as continuations.

A second zero-shot baseline, not the paper's (its RE table, paper section 4.4, is free generation,
:func:`olacore.zeroshot.zero_shot`, where an answer naming no single label scores as wrong). The same prompt,
then each of the 19 directed labels (exactly the strings the prompt asks the model to copy) is scored as the
answer by the log-probability of its tokens; the prediction is the arg-max, so there is never a parse failure.

``scoring``: ``"sum"`` (log-likelihood) or ``"mean"`` (per token, the default: labels differ in length, ``Other``
1-2 tokens, a directed label 10-13, and a sum favours short ones; not yet compared on dev). Both come from one
cached computation: each prompt runs once, after the KV cache of the instructions every prompt shares, and its KV
cache is copied over the 19 labels. Cost (CPU): about 3x free generation's.
"""

from __future__ import annotations

import copy
import time
from typing import Sequence

import pandas as pd
import torch

from olacore.corpora import SEMEVAL_LABELS, RelationExample
from olacore.settings import resolve_device
from olacore.store import TensorStore, code_digest
from olacore.zeroshot.generate import GenerativeLM, _common_prefix, answer_identity, load_generator
from olacore.zeroshot.prompts import build_prompt, prompt_form

__all__ = ["SCORINGS", "candidate_texts", "rank_labels", "likelihood_keys",
           "likelihood_zero_shot"]

SCORINGS = ("mean", "sum")


def candidate_texts(form: str, labels: Sequence[str] = SEMEVAL_LABELS) -> list[str]:
    """The continuation scored for each label: the label itself after a chat prompt, ``" " + label`` after
    a plain prompt's ``Label:`` cue."""
    return [label if form == "chat" else " " + label for label in labels]


def _pad_id(lm: GenerativeLM) -> int:
    tokenizer = lm.tokenizer
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else next(iter(sorted(lm.end_ids)), 0)


def _left_padded(rows: list[list[int]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(r) for r in rows)
    inputs = torch.full((len(rows), width), pad, dtype=torch.long)
    present = torch.zeros((len(rows), width), dtype=torch.long)
    for r, row in enumerate(rows):
        if row:
            inputs[r, width - len(row):] = torch.tensor(row)
            present[r, width - len(row):] = 1
    return inputs, present


def _repeated(cache, times: int):
    cache = copy.deepcopy(cache)
    if times > 1:
        cache.batch_repeat_interleave(times)
    return cache


def _token_logprobs(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """``log p(target)`` per position: logits ``(..., V)``, targets ``(...)``, float64 out (no ``(..., V)`` copy)."""
    logits = logits.float()
    return (logits.gather(-1, targets[..., None]).squeeze(-1) - logits.logsumexp(-1)).double()


def _shared(model, device, prefix, shared: int, rows: list[list[int]], cands: list[list[int]], pad: int) -> torch.Tensor:
    """Each prompt's suffix once; its KV cache copied over the candidates (``b x K`` rows)."""
    b, k = len(rows), len(cands)
    inputs, present = _left_padded([r[shared:] for r in rows], pad)
    mask = torch.cat([torch.ones((b, shared), dtype=torch.long), present], dim=1)
    positions = shared + (present.cumsum(-1) - 1).clamp(min=0)
    cache = _repeated(prefix, b) if prefix is not None else None
    out = model(input_ids=inputs.to(device), attention_mask=mask.to(device), position_ids=positions.to(device),
                cache=cache, use_cache=True, logits_to_keep=1)
    first = torch.tensor([c[0] for c in cands], device=device)
    scores = _token_logprobs(out.logits[:, -1][:, None, :].expand(b, k, -1), first.expand(b, k)).clone()  # b x K
    longest = max(len(c) for c in cands)
    if longest == 1:
        return scores
    # candidates right-padded; token j (j >= 1) is read off the logits at candidate position j - 1
    feed = torch.full((k, longest - 1), pad, dtype=torch.long)
    given = torch.zeros((k, longest - 1), dtype=torch.long)
    target = torch.full((k, longest - 1), pad, dtype=torch.long)
    for j, c in enumerate(cands):
        feed[j, :len(c) - 1] = torch.tensor(c[:-1])
        given[j, :len(c) - 1] = 1
        target[j, :len(c) - 1] = torch.tensor(c[1:])
    out.cache.batch_repeat_interleave(k)
    mask = torch.cat([mask.repeat_interleave(k, 0), given.repeat(b, 1)], dim=1)
    positions = positions[:, -1:].repeat_interleave(k, 0) + 1 + torch.arange(longest - 1)
    out = model(input_ids=feed.repeat(b, 1).to(device), attention_mask=mask.to(device),
                position_ids=positions.to(device), cache=out.cache, use_cache=True)
    rest = _token_logprobs(out.logits, target.repeat(b, 1).to(device)) * given.repeat(b, 1).to(device)
    return scores + rest.sum(-1).view(b, k)


@torch.inference_mode()
def rank_labels(lm: GenerativeLM, prompts: Sequence[str], candidates: Sequence[str], *, add_special_tokens: bool,
                batch_size: int = 4, progress: bool = False) -> tuple[torch.Tensor, torch.Tensor, list[float]]:
    """Log-likelihood of every candidate continuation of every prompt: ``sum_t log p(c_t | prompt, c_<t)``.

    The prompt is tokenized as in :func:`olacore.zeroshot.generate_greedy`; each candidate alone (no special
    tokens) and appended, so a label is the same token sequence after every prompt.

    Args:
        batch_size: prompts per forward: ``batch_size`` prompt rows, then ``batch_size x len(candidates)``
            candidate rows.

    Returns:
        ``(sums, lengths, seconds)``: ``sums`` float64 ``(n_prompts, n_candidates)`` in nats, ``lengths``
        ``(n_candidates,)`` tokens per candidate, ``seconds`` per prompt (as :class:`Generation`'s).

    Raises:
        ValueError: empty prompts or candidates, a candidate of no token, ``batch_size < 1``.
    """
    from olacore.timing import progress as progress_bar

    if not prompts or any(not p for p in prompts) or not candidates:
        raise ValueError("prompts and candidates must be non-empty lists of non-empty strings")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1; got {batch_size}")
    tokenizer, model, device = lm.tokenizer, lm.model, lm.device
    ids = [tokenizer(p, add_special_tokens=add_special_tokens)["input_ids"] for p in prompts]
    cands = [tokenizer(c, add_special_tokens=False)["input_ids"] for c in candidates]
    if any(not c for c in cands):
        raise ValueError(f"candidate {candidates[[bool(c) for c in cands].index(False)]!r} has no token")
    pad = _pad_id(lm)
    start = time.perf_counter()
    shared = _common_prefix(ids)  # at most the shortest prompt minus one: every prompt keeps a suffix
    prefix = model(input_ids=torch.tensor([ids[0][:shared]], device=device), use_cache=True).cache if shared else None
    prefix_seconds = (time.perf_counter() - start) / len(prompts)
    sums, seconds = [], []
    bar = progress_bar(total=len(prompts), iterable=None, enabled=progress, desc=f"likelihood {lm.name}")
    for first in range(0, len(prompts), batch_size):
        begin = time.perf_counter()
        rows = ids[first:first + batch_size]
        sums.append(_shared(model, device, prefix, shared, rows, cands, pad).cpu())
        seconds += [(time.perf_counter() - begin) / len(rows) + prefix_seconds] * len(rows)
        bar.update(len(rows))
    bar.close()
    return torch.cat(sums), torch.tensor([len(c) for c in cands], dtype=torch.long), seconds


def likelihood_keys(store: TensorStore, fingerprint: str, form: str, prompts: Sequence[str],
                    candidates: Sequence[str], *, device: str) -> list[str]:
    """The store key of each prompt's label scores: model fingerprint, form, prompt, candidate continuations,
    ``device`` (the type) and the :func:`olacore.store.code_digest` of this module and what it imports."""
    code = code_digest(__name__)
    return [store.key(kind="zero-shot-likelihood", model=fingerprint, task="re", form=form, prompt=prompt,
                      candidates=list(candidates), device=device, code=code)
            for prompt in prompts]


def likelihood_zero_shot(model: str | GenerativeLM, examples: Sequence[RelationExample], *, form: str = "auto",
                         scoring: str = "mean", batch_size: int = 4,
                         device: str | torch.device | None = None, progress: bool = True,
                         store: TensorStore | None = None) -> pd.DataFrame:
    """Zero-shot RE by ranking the 19 SemEval labels by the causal LM's likelihood given the prompt.

    Not the paper's baseline (module docstring); no answer is ever unparseable.

    Args:
        model, form, device, store: as :func:`zero_shot`.
        examples: SemEval-2010 Task 8 :class:`RelationExample` records (``read_semeval``).
        scoring: ``"mean"`` (log-probability per label token) or ``"sum"`` (label log-likelihood).

    Returns:
        One row per example, in order, with :func:`zero_shot`'s RE columns (``status`` always ``"ok"``, ``finish``
        ``"likelihood"``), so :func:`olacore.zeroshot.zero_shot_scores` scores it, and ``scoring``, ``score`` (the
        chosen label's mean or summed log-probability, nats), ``gold_rank`` (1 = the gold label scored best).

    Raises:
        ValueError: an encoder or unknown model, bad examples, unknown ``scoring`` or ``form``.
    """
    from olacore.zeroshot.experiment import _check_examples

    if scoring not in SCORINGS:
        raise ValueError(f"scoring must be one of {SCORINGS}; got {scoring!r}")
    examples = _check_examples("re", examples)
    store = store if store is not None else TensorStore()
    name, tokenizer, fingerprint = answer_identity(model)  # refuses encoders
    form = prompt_form(tokenizer, form)
    candidates = candidate_texts(form)
    prompts = [build_prompt(tokenizer, "re", x, form) for x in examples]
    where = model.device.type if isinstance(model, GenerativeLM) else resolve_device(device).type
    keys = likelihood_keys(store, fingerprint, form, prompts, candidates, device=where)
    found: dict[str, dict] = {}
    for key in dict.fromkeys(keys):
        entry = store.get(key)
        if entry is not None:
            found[key] = {"sums": entry[0]["sums"], "lengths": entry[0]["lengths"], "seconds": entry[1]["seconds"],
                          "cached": True}
    first: dict[str, int] = {}
    for i, key in enumerate(keys):
        first.setdefault(key, i)
    missing = [i for key, i in first.items() if key not in found]
    if missing:
        lm = model if isinstance(model, GenerativeLM) else load_generator(name, device=device)
        sums, lengths, seconds = rank_labels(lm, [prompts[i] for i in missing], candidates,
                                             add_special_tokens=form == "plain", batch_size=batch_size,
                                             progress=progress)
        for r, i in enumerate(missing):
            meta = {"seconds": seconds[r], "model": fingerprint, "form": form}
            store.put_or_warn(keys[i], {"sums": sums[r].clone(), "lengths": lengths.clone()}, meta)
            found[keys[i]] = {"sums": sums[r], "lengths": lengths, "seconds": seconds[r], "cached": False}
    rows = []
    for x, key in zip(examples, keys):
        got = found[key]
        values = got["sums"].double() / (got["lengths"].double() if scoring == "mean" else 1.0)
        best = int(values.argmax())
        label = SEMEVAL_LABELS[best]
        gold = SEMEVAL_LABELS.index(x.label) if x.label in SEMEVAL_LABELS else None
        rank = int((values > values[gold]).sum()) + 1 if gold is not None else None
        rows.append({"model": name, "form": form, "id": x.sent_id, "text": x.text,
                     "e1": " ".join(x.words[slice(*x.e1)]), "e2": " ".join(x.words[slice(*x.e2)]),
                     "gold": x.label, "answer": label, "label": label, "status": "ok", "correct": label == x.label,
                     "finish": "likelihood", "seconds": got["seconds"], "cached": got["cached"],
                     "scoring": scoring, "score": float(values[best]), "gold_rank": rank})
    return pd.DataFrame(rows)
