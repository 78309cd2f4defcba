"""Zero-shot prompting of the causal LMs: the paper's only baseline for TOA transfer (paper section 4.4).

The paper compares an adapter trained on one model's OLA, applied unchanged to another, with zero-shot prompting
of the target LM (its RE table: Qwen2-1.5B / Gemma-2-2B / Llama-3.2-3B reach 7.69 / 5.01 / 14.65 % accuracy,
:func:`olacore.paper.toa_relation_extraction`). One module per step:

- :mod:`olacore.zeroshot.prompts`: the fixed RE and NER prompts, in chat or plain form;
- :mod:`olacore.zeroshot.generate`: a causal LM with its LM head, and batched greedy decoding;
- :mod:`olacore.zeroshot.parse`: answer -> relation label, or entity spans and BIO tags, with a status;
- :mod:`olacore.zeroshot.experiment`: cached answers per example, one row each, and scores.
"""

from olacore.zeroshot.experiment import answer_keys, semeval_macro_f1, zero_shot, zero_shot_scores
from olacore.zeroshot.generate import GenerativeLM, Generation, generate_greedy, load_generator, load_tokenizer
from olacore.zeroshot.parse import EntityParse, RelationParse, parse_entities, parse_relation
from olacore.zeroshot.prompts import PROMPTS, build_prompt, instructions, prompt_form, prompt_forms

__all__ = [
    "zero_shot", "zero_shot_scores", "semeval_macro_f1", "answer_keys",
    "GenerativeLM", "Generation", "load_generator", "load_tokenizer", "generate_greedy",
    "parse_relation", "parse_entities", "RelationParse", "EntityParse",
    "PROMPTS", "build_prompt", "instructions", "prompt_form", "prompt_forms",
]
