"""Likelihood-ranking zero-shot RE (olacore.zeroshot.likelihood) on a tiny random-weight causal LM."""

from __future__ import annotations

import dataclasses
import re

import pytest
import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from olacore.corpora import SEMEVAL_LABELS, RelationExample, join_words
from olacore.store import TensorStore
from olacore.zeroshot import build_prompt, instructions, likelihood_zero_shot, rank_labels, zero_shot_scores
from olacore.zeroshot.generate import GenerativeLM
from olacore.zeroshot.likelihood import candidate_texts


def relation(words: str, e1, e2, label: str, sent_id: str) -> RelationExample:
    text, spans = join_words(words.split())
    return RelationExample(sent_id, text, tuple(words.split()), spans, e1, e2, label)


EXAMPLES = [
    relation("The burst has been caused by water hammer pressure .", (1, 2), (6, 9), "Cause-Effect(e2,e1)", "1"),
    relation("The cup holds a little tea .", (1, 2), (5, 6), "Content-Container(e2,e1)", "2"),
    relation("A wheel is part of the car .", (1, 2), (6, 7), "Component-Whole(e1,e2)", "3"),
    relation("He saw the dog .", (0, 1), (3, 4), "Other", "4"),
    relation("The tea went into the cup .", (1, 2), (5, 6), "Entity-Destination(e1,e2)", "5"),
]
_WORDS = re.compile(r"\w+|[^\w\s]+")


def _tokenizer(chat: bool) -> PreTrainedTokenizerFast:
    """A word-level fast tokenizer over every word of the prompts and labels (plus ChatML markers)."""
    texts = [instructions("re", x) for x in EXAMPLES] + list(SEMEVAL_LABELS) + ["Label :", "user assistant"]
    vocabulary = {"[UNK]": 0, "<|im_start|>": 1, "<|im_end|>": 2, "<pad>": 3}
    for word in sorted({w for t in texts for w in _WORDS.findall(t)}):
        vocabulary.setdefault(word, len(vocabulary))
    backend = Tokenizer(models.WordLevel(vocabulary, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", eos_token="<|im_end|>",
                                        pad_token="<pad>")
    if chat:
        tokenizer.chat_template = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
                                   "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    return tokenizer


def _tiny_lm(chat: bool = True, seed: int = 0) -> GenerativeLM:
    tokenizer = _tokenizer(chat)
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
                         pad_token_id=tokenizer.pad_token_id)
    model = LlamaForCausalLM(config).eval().requires_grad_(False)
    with torch.no_grad():  # larger logits than the default init, so that the labels' scores differ clearly
        model.lm_head.weight.mul_(20)
    return GenerativeLM("tiny-llama", tokenizer, model, torch.device("cpu"), f"test:tiny-llama:{seed}:{chat}",
                        frozenset({tokenizer.eos_token_id}))


@pytest.fixture(scope="module")
def tiny():
    return _tiny_lm()


def brute_force(lm: GenerativeLM, prompt: str, continuation: str, add_special_tokens: bool) -> tuple[float, int]:
    """log p(continuation | prompt) by one full forward of the concatenation, no cache, no padding."""
    head = lm.tokenizer(prompt, add_special_tokens=add_special_tokens)["input_ids"]
    tail = lm.tokenizer(continuation, add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logits = lm.model(input_ids=torch.tensor([head + tail])).logits[0].double()
    logprobs = torch.log_softmax(logits, -1)
    return float(sum(logprobs[len(head) + t - 1, token] for t, token in enumerate(tail))), len(tail)


@pytest.mark.parametrize("chat", [True, False])
def test_rank_labels_equals_brute_force(chat, one_thread):
    lm = _tiny_lm(chat)
    form = "chat" if chat else "plain"
    prompts = [build_prompt(lm.tokenizer, "re", x, form) for x in EXAMPLES]
    candidates = candidate_texts(form)
    assert len(set(len(lm.tokenizer(c, add_special_tokens=False)["input_ids"]) for c in candidates)) > 1  # lengths differ
    sums, lengths, seconds = rank_labels(lm, prompts, candidates, add_special_tokens=not chat, batch_size=2)
    assert sums.shape == (len(EXAMPLES), len(SEMEVAL_LABELS)) and len(seconds) == len(EXAMPLES)
    for i, prompt in enumerate(prompts):
        reference = [brute_force(lm, prompt, c, not chat) for c in candidates]
        assert lengths.tolist() == [n for _, n in reference]
        assert sums[i].tolist() == pytest.approx([s for s, _ in reference], abs=1e-4)
        assert int(sums[i].argmax()) == max(range(len(reference)), key=lambda j: reference[j][0])
        mean = [s / n for s, n in reference]
        assert int((sums[i] / lengths).argmax()) == max(range(len(mean)), key=mean.__getitem__)


def test_likelihood_zero_shot_predicts_the_arg_max_never_fails_and_reads_back(tiny, tmp_path, one_thread):
    store = TensorStore(tmp_path)
    first = likelihood_zero_shot(tiny, EXAMPLES, store=store, progress=False, scoring="sum")
    assert (~first["cached"]).all() and (first["status"] == "ok").all() and first["label"].isin(SEMEVAL_LABELS).all()
    for x, row in zip(EXAMPLES, first.itertuples()):
        prompt = build_prompt(tiny.tokenizer, "re", x, "chat")
        reference = [brute_force(tiny, prompt, c, False)[0] for c in candidate_texts("chat")]
        assert row.label == SEMEVAL_LABELS[max(range(len(reference)), key=reference.__getitem__)]
        assert row.score == pytest.approx(max(reference), abs=1e-4)
        assert row.gold_rank == 1 + sum(r > reference[SEMEVAL_LABELS.index(x.label)] for r in reference)
    scores = zero_shot_scores(first, "re")
    assert scores["unparseable"] == 0 and scores["accuracy"] == pytest.approx(first["correct"].mean())
    again = likelihood_zero_shot(tiny, EXAMPLES, store=store, progress=False, scoring="sum")
    assert again["cached"].all() and again["label"].tolist() == first["label"].tolist()
    assert again["score"].tolist() == pytest.approx(first["score"].tolist())
    mean = likelihood_zero_shot(tiny, EXAMPLES, store=store, progress=False, scoring="mean")  # same entries
    assert mean["cached"].all() and (mean["scoring"] == "mean").all()
    other = dataclasses.replace(tiny, fingerprint=tiny.fingerprint + ":perturbed")
    assert (~likelihood_zero_shot(other, EXAMPLES[:1], store=store, progress=False)["cached"]).all()
    plain = likelihood_zero_shot(tiny, EXAMPLES[:1], store=store, progress=False, form="plain")
    assert (~plain["cached"]).all() and plain["form"].iloc[0] == "plain"


def test_encoders_and_bad_arguments_are_refused(tiny):
    with pytest.raises(ValueError, match="encoder"):
        likelihood_zero_shot("minilm-l6", EXAMPLES)
    with pytest.raises(ValueError, match="scoring"):
        likelihood_zero_shot(tiny, EXAMPLES, scoring="max")
    with pytest.raises(ValueError, match="RelationExample"):
        likelihood_zero_shot(tiny, ["a sentence"])
