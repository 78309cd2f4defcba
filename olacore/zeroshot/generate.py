"""A causal LM with its LM head, and batched greedy generation that reuses the KV cache of the shared prompt prefix.

:func:`olacore.loading.load_model` keeps only the base transformer; zero-shot prompting needs the LM head, so
:func:`load_generator` loads ``AutoModelForCausalLM`` itself. :func:`generate_greedy` is plain greedy decoding
(argmax, no sampling, no penalties) in fixed batches (:func:`decode_batch`, on
:data:`olacore.settings.COMPUTE_THREADS` threads), written out rather than ``model.generate`` for CPU speed: the
instructions every prompt starts with (the longest common token prefix) run once per batch, their KV cache repeated
over the batch, the example parts left-padded behind it; :func:`decode_job` runs a batch in a worker process. The answers equal ``model.generate``'s greedy ones up to float rounding
(``tests/test_zeroshot.py``).
"""

from __future__ import annotations

import functools
import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import torch

from olacore.loading import _classify, _hub_call, _local_folder, _quiet_transformers, model_fingerprint, model_kind
from olacore.settings import fixed_threads, resolve_device
from olacore.timing import progress as progress_bar
from olacore.zoo_build import zoo_folder

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

__all__ = ["GenerativeLM", "Generation", "load_tokenizer", "load_generator", "answer_identity", "generate_greedy",
           "tokenize_prompts", "decode_batch", "decode_job", "END_OF_TURN"]

#: Tokens that end an answer when the vocabulary has them (besides the configured EOS ids).
END_OF_TURN = ("<|im_end|>", "<|endoftext|>", "<end_of_turn>", "<|eot_id|>", "<|end|>")


def _source(name: str) -> tuple[str, str]:
    """``(kind, where)``: ``("zoo", folder)``, ``("folder", folder)`` or ``("hub", id)``."""
    kind = _classify(name)
    name = os.fspath(name)
    if kind == "zoo":
        return kind, str(zoo_folder(name))
    if kind == "folder":
        return kind, str(_local_folder(name))
    return kind, name


def _refuse_encoder(name: str) -> None:
    if model_kind(name) != "causal":
        raise ValueError(
            f"{name} is a bidirectional encoder: zero-shot prompting needs a causal LM that generates "
            f"text (in the zoo: smollm2-135m, gemma-3-270m, qwen2.5-0.5b)"
        )


def load_tokenizer(name: str) -> "PreTrainedTokenizerBase":
    """The tokenizer of a causal LM (zoo name, folder or Hugging Face id), without its weights.

    Read once per process and name: callers share the object and must not change it.

    Raises:
        ValueError: unknown model (lists the zoo names), or an encoder.
    """
    _refuse_encoder(name)
    return _read_tokenizer(os.fspath(name))


@functools.lru_cache(maxsize=8)
def _read_tokenizer(name: str) -> "PreTrainedTokenizerBase":
    from transformers import AutoTokenizer

    kind, where = _source(name)
    if kind == "hub":
        return _hub_call(where, AutoTokenizer.from_pretrained)
    with _quiet_transformers():
        return AutoTokenizer.from_pretrained(where)


@dataclass
class GenerativeLM:
    """A causal LM with its LM head (float32, eval mode, no gradients), ready for :func:`generate_greedy`.

    Attributes:
        fingerprint: :func:`olacore.loading.model_fingerprint` of ``name`` (keys cached answers).
        end_ids: token ids that end an answer (configured EOS ids and :data:`END_OF_TURN` tokens).
    """

    name: str
    tokenizer: "PreTrainedTokenizerBase"
    model: "PreTrainedModel"
    device: torch.device
    fingerprint: str
    end_ids: frozenset[int]


def answer_identity(model: "str | GenerativeLM") -> tuple[str, "PreTrainedTokenizerBase", str]:
    """``(name, tokenizer, fingerprint)`` of a causal LM given by name or loaded: what cached answers are
    keyed on, read without loading the weights.

    Raises:
        ValueError: unknown model (lists the zoo names), or an encoder.
    """
    if isinstance(model, GenerativeLM):
        name, tokenizer, fingerprint = model.name, model.tokenizer, model.fingerprint
    else:
        name = os.fspath(model)
        tokenizer, fingerprint = load_tokenizer(name), None
    if fingerprint is None:
        from olacore.loading import model_fingerprint

        fingerprint = model_fingerprint(name)
    return name, tokenizer, fingerprint


def _end_ids(model, tokenizer) -> frozenset[int]:
    ids: set[int] = set()
    for value in (getattr(model.generation_config, "eos_token_id", None), tokenizer.eos_token_id):
        if isinstance(value, int):
            ids.add(value)
        elif value is not None:
            ids.update(int(v) for v in value)
    vocabulary = tokenizer.get_vocab()
    ids.update(vocabulary[token] for token in END_OF_TURN if token in vocabulary)
    return frozenset(ids)


def load_generator(name: str, device: str | torch.device | None = None) -> GenerativeLM:
    """Load a causal LM WITH its LM head for generation (zero-shot prompting): float32, eval mode.

    ``name``: zoo name (its dequantised folder, :func:`olacore.zoo_build.zoo_folder`, built on first use), local
    folder or Hugging Face id (local HF cache first, the hub where reachable).

    Raises:
        ValueError: unknown model, an encoder, or a checkpoint lacking weights (a random LM head would emit noise).
    """
    from transformers import AutoModelForCausalLM

    _refuse_encoder(name)
    kind, where = _source(name)
    tokenizer = load_tokenizer(name)
    kwargs = dict(dtype=torch.float32, output_loading_info=True)
    if kind == "hub":
        model, info = _hub_call(where, AutoModelForCausalLM.from_pretrained, **kwargs)
    else:
        with _quiet_transformers():
            model, info = AutoModelForCausalLM.from_pretrained(where, **kwargs)
    if info.get("missing_keys"):
        raise ValueError(f"{name}: the checkpoint lacks {sorted(info['missing_keys'])[:5]}; its LM head "
                         f"would be random. Rebuild the folder or use a complete checkpoint.")
    device = resolve_device(device)
    model.eval().requires_grad_(False).to(device)
    return GenerativeLM(os.fspath(name), tokenizer, model, device, model_fingerprint(name), _end_ids(model, tokenizer))


@dataclass(frozen=True)
class Generation:
    """One generated answer.

    Attributes:
        text: the decoded answer (special tokens skipped), cut before the first stop string, stripped.
        tokens: the generated token ids (the end-of-turn token not included).
        finish: ``"eos"`` (end-of-turn token), ``"stop"`` (a stop string) or ``"length"`` (``max_new_tokens``).
        seconds: batch time (its shared prefix's pass included) / batch size.
    """

    text: str
    tokens: tuple[int, ...]
    finish: str
    prompt_tokens: int
    seconds: float


def _cut(text: str, stop: Sequence[str]) -> int | None:
    """Index of the first stop string after the first non-blank character, or ``None``."""
    begin = len(text) - len(text.lstrip())
    hits = [i for s in stop if (i := text.find(s, begin + 1 if begin < len(text) else len(text))) >= 0]
    return min(hits) if hits else None


def _common_prefix(sequences: list[list[int]]) -> int:
    shortest = min(len(s) for s in sequences)
    length = 0
    while length < shortest - 1 and all(s[length] == sequences[0][length] for s in sequences):
        length += 1
    return length


def tokenize_prompts(tokenizer: "PreTrainedTokenizerBase", prompts: Sequence[str], add_special_tokens: bool
                     ) -> tuple[list[list[int]], int]:
    """``(token ids of each prompt, shared)``: ``shared`` is the length of the longest token prefix all prompts share
    (at most one less than the shortest prompt), which :func:`decode_batch` runs once per batch."""
    ids = [tokenizer(p, add_special_tokens=add_special_tokens)["input_ids"] for p in prompts]
    return ids, _common_prefix(ids)


@torch.inference_mode()
def decode_batch(lm: GenerativeLM, rows: Sequence[Sequence[int]], shared: int, *, max_new_tokens: int,
                 stop: Sequence[str] = ()) -> list[Generation]:
    """Greedy answers to one batch of tokenized prompts whose first ``shared`` tokens are equal, in order.

    The shared prefix runs once (batch of one), its KV cache repeated over the batch; the rest of each prompt is
    left-padded behind it. Runs on :data:`olacore.settings.COMPUTE_THREADS` torch threads, so an answer depends only
    on its batch and ``shared``, never on the process or machine load.
    """
    tokenizer, model, device = lm.tokenizer, lm.model, lm.device
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else next(iter(sorted(lm.end_ids)), 0)
    with fixed_threads():
        begin = time.perf_counter()
        cache = None
        if shared:
            cache = model(input_ids=torch.tensor([list(rows[0][:shared])], device=device), use_cache=True).cache
        size, width = len(rows), max(len(r) - shared for r in rows)
        inputs = torch.full((size, width), pad, dtype=torch.long)
        present = torch.zeros((size, width), dtype=torch.long)
        for r, row in enumerate(rows):
            suffix = list(row[shared:])
            inputs[r, width - len(suffix):] = torch.tensor(suffix)
            present[r, width - len(suffix):] = 1
        mask = torch.cat([torch.ones((size, shared), dtype=torch.long), present], dim=1).to(device)
        positions = (shared + (present.cumsum(-1) - 1).clamp(min=0)).to(device)
        if cache is not None and size > 1:
            cache.batch_repeat_interleave(size)
        out = model(input_ids=inputs.to(device), attention_mask=mask, position_ids=positions, cache=cache,
                    use_cache=True, logits_to_keep=1)
        generated: list[list[int]] = [[] for _ in rows]
        finish: list[str | None] = [None] * size
        texts = [""] * size
        for step in range(max_new_tokens):
            chosen = out.logits[:, -1].argmax(-1)
            for r, token in enumerate(chosen.tolist()):
                if finish[r]:
                    continue
                if token in lm.end_ids:
                    finish[r] = "eos"
                    continue
                generated[r].append(token)
                if stop:
                    decoded = tokenizer.decode(generated[r], skip_special_tokens=True)
                    cut = _cut(decoded, stop)
                    if cut is not None:
                        finish[r], texts[r] = "stop", decoded[:cut]
                        continue
                if step == max_new_tokens - 1:
                    finish[r] = "length"
            if all(finish):
                break
            mask = torch.cat([mask, torch.ones((size, 1), dtype=torch.long, device=device)], dim=1)
            positions = positions[:, -1:] + 1
            out = model(input_ids=chosen[:, None], attention_mask=mask, position_ids=positions,
                        cache=out.cache, use_cache=True)
        seconds = (time.perf_counter() - begin) / size
    results = []
    for r, row in enumerate(rows):
        text = texts[r] if finish[r] == "stop" else tokenizer.decode(generated[r], skip_special_tokens=True)
        results.append(Generation(text.strip(), tuple(generated[r]), finish[r], len(row), seconds))
    return results


def _worker_generator(name: str, device: str) -> GenerativeLM:
    """The generator of a worker process, kept for its next job as the workers keep models
    (:func:`olacore.workers.kept`: one at a time, keyed with the model's fingerprint)."""
    from olacore.workers import kept

    return kept(("generator", name, device, model_fingerprint(name)), lambda: load_generator(name, device=device))


def decode_job(job: tuple) -> list[Generation]:
    """One batch of :func:`decode_batch` in a worker process: ``(model name, device, rows, shared, max_new_tokens,
    stop)``."""
    name, device, rows, shared, max_new_tokens, stop = job
    return decode_batch(_worker_generator(name, device), rows, shared, max_new_tokens=max_new_tokens, stop=stop)


def generate_greedy(lm: GenerativeLM, prompts: Sequence[str], *, max_new_tokens: int, add_special_tokens: bool,
                    stop: Sequence[str] = (), batch_size: int = 8, progress: bool = False) -> list[Generation]:
    """Greedy answers to ``prompts``, one :class:`Generation` each, in order (:func:`decode_batch` per batch).

    Args:
        prompts: full prompt texts (non-empty), batched in their given order: batch ``j`` holds prompts
            ``j * batch_size`` to ``(j + 1) * batch_size - 1``; every batch starts with the token prefix all of
            ``prompts`` share.
        add_special_tokens: let the tokenizer add its special tokens (plain prompts); ``False`` for chat-template
            prompts, which hold them already.
        stop: strings that end an answer (checked on the decoded answer after each step).

    Raises:
        ValueError: empty prompt list or prompt, ``max_new_tokens`` or ``batch_size`` below 1.
    """
    if not prompts or any(not p for p in prompts):
        raise ValueError("prompts must be a non-empty list of non-empty strings")
    if max_new_tokens < 1 or batch_size < 1:
        raise ValueError(f"max_new_tokens and batch_size must be >= 1; got {max_new_tokens}, {batch_size}")
    ids, shared = tokenize_prompts(lm.tokenizer, prompts, add_special_tokens)
    results: list[Generation] = []
    firsts = range(0, len(prompts), batch_size)
    for first in progress_bar(firsts, enabled=progress, total=len(firsts), desc=f"zero-shot {lm.name}"):
        results += decode_batch(lm, ids[first:first + batch_size], shared, max_new_tokens=max_new_tokens, stop=stop)
    return results
