"""Zero-shot generation: batched greedy decoding with the shared prompt prefix cached, against ``model.generate``.

One run, same prompts (evenly spread SemEval dev examples, the RE prompt), same thread count:
per-example ``model.generate`` (greedy, no prefix reuse), :func:`chapter_code.zeroshot.generate_greedy`
with batch size 1 (prefix cache only) and with batch sizes 8 and 16 (prefix cache + batching). Prints
seconds per answer, the ratios, and how many answers agree token for token with ``generate``.
Reported, never asserted.

    python benchmarks/bench_zeroshot.py [model] [number of prompts] [threads]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))  # chapter 07's own code

from olacore.corpora import evenly_spread, read_semeval  # noqa: E402

from chapter_code.zeroshot import PROMPTS, build_prompt, generate_greedy, load_generator, prompt_form  # noqa: E402


def main(model: str = "smollm2-135m", count: int = 16, threads: int = 1) -> None:
    torch.set_num_threads(threads)
    lm = load_generator(model, device="cpu")
    form = prompt_form(lm.tokenizer)
    spec = PROMPTS["re"]
    prompts = [build_prompt(lm.tokenizer, "re", x, form) for x in evenly_spread(read_semeval("dev").items, count)]
    special = form == "plain"
    start = time.perf_counter()
    reference = []
    for prompt in prompts:
        encoded = lm.tokenizer(prompt, add_special_tokens=special, return_tensors="pt")
        out = lm.model.generate(**encoded, max_new_tokens=spec.max_new_tokens, do_sample=False,
                                eos_token_id=sorted(lm.end_ids), pad_token_id=lm.tokenizer.pad_token_id)
        reference.append([t for t in out[0, encoded["input_ids"].shape[1]:].tolist() if t not in lm.end_ids])
    plain = (time.perf_counter() - start) / len(prompts)
    timings = {}
    for batch in (1, 8, 16):
        start = time.perf_counter()
        made = generate_greedy(lm, prompts, max_new_tokens=spec.max_new_tokens, add_special_tokens=special,
                               batch_size=batch)
        timings[batch] = (time.perf_counter() - start) / len(prompts)
        # no stop strings on either side: both decode until an end-of-turn token or the limit
        agree = sum(list(g.tokens) == r for g, r in zip(made, reference))
        print(f"batch {batch}: {timings[batch]:.3f} s/answer, {agree}/{len(prompts)} answers agree with generate")
    print(f"{model}, {len(prompts)} RE prompts ({form} form), {threads} thread(s): model.generate {plain:.3f} s/answer; "
          f"prefix cache {plain / timings[1]:.2f}x faster; prefix cache + batch 8 {plain / timings[8]:.2f}x, "
          f"batch 16 {plain / timings[16]:.2f}x faster")


if __name__ == "__main__":
    main(*(cast(value) for cast, value in zip((str, int, int), sys.argv[1:])))
