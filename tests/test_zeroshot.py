"""Zero-shot prompting (chapter_code.zeroshot, chapter 07 and appendix a5): prompts, parsers, scores, cache keys,
and one real generation."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest
import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from olacore.corpora import SEMEVAL_LABELS, WNUT17_TYPES, NERSentence, RelationExample, join_words
from olacore.store import TensorStore

from chapter_code.zeroshot import (
    PROMPTS,
    WNUT17_TYPES_IN_PROMPT,
    answer_identity,
    answer_keys,
    build_prompt,
    instructions,
    load_generator,
    load_tokenizer,
    parse_entities,
    parse_relation,
    prompt_form,
    semeval_macro_f1,
    tokenize_prompts,
    zero_shot_scores,
)


def relation(words: str, e1: tuple[int, int], e2: tuple[int, int], label: str, sent_id: str = "1") -> RelationExample:
    text, spans = join_words(words.split())
    return RelationExample(sent_id, text, tuple(words.split()), spans, e1, e2, label)


def sentence(words: str, tags: str | None = None, sent_id: str = "test-0") -> NERSentence:
    split = tuple(words.split())
    text, spans = join_words(split)
    return NERSentence(sent_id, text, split, spans, tuple(tags.split()) if tags else ("O",) * len(split))


@pytest.fixture(scope="module")
def chat_tokenizer():
    """A real (tiny, word-level) fast tokenizer carrying a chat template of the ChatML kind."""
    vocabulary = {"[UNK]": 0, "<|im_start|>": 1, "<|im_end|>": 2}
    backend = Tokenizer(models.WordLevel(vocabulary, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", eos_token="<|im_end|>")
    tokenizer.chat_template = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
                               "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    return tokenizer


@pytest.fixture(scope="module")
def plain_tokenizer(chat_tokenizer):
    tokenizer = chat_tokenizer.__class__(tokenizer_object=chat_tokenizer.backend_tokenizer, unk_token="[UNK]")
    tokenizer.chat_template = None
    return tokenizer


EXAMPLE_RE = relation("The burst has been caused by water hammer pressure .", (1, 2), (6, 9), "Cause-Effect(e2,e1)")
EXAMPLE_NER = sentence("Justin Bieber sang in Paris and Paris loved it", "B-person I-person O O B-location O B-location O O")


# --------------------------------------------------------------------------------- prompts

def test_re_prompt_lists_every_label_once_and_names_both_entities():
    text = instructions("re", EXAMPLE_RE)
    lines = text.splitlines()
    for label in SEMEVAL_LABELS:
        assert sum(line.startswith(label + ":") for line in lines) == 1, label
    assert "Sentence: The burst has been caused by water hammer pressure ." in lines
    assert "e1: burst" in lines and "e2: water hammer pressure" in lines
    assert "Cause-Effect(e2,e1): e2 causes e1" in lines and "Other: none of these relations holds" in lines
    assert text.startswith(PROMPTS["re"].head)  # the shared prefix is the same for every example


def test_ner_prompt_lists_the_six_types():
    text = instructions("ner", EXAMPLE_NER)
    assert sorted(WNUT17_TYPES_IN_PROMPT) == sorted(WNUT17_TYPES)
    for kind in WNUT17_TYPES:
        assert kind in text
    assert text.endswith("Sentence: Justin Bieber sang in Paris and Paris loved it")
    assert "<type>: <entity text>" in text and "write none" in text


def test_chat_form_uses_the_template_and_plain_form_the_cue(chat_tokenizer, plain_tokenizer):
    assert prompt_form(chat_tokenizer) == "chat" and prompt_form(plain_tokenizer) == "plain"
    assert prompt_form(chat_tokenizer, "plain") == "plain"
    chat = build_prompt(chat_tokenizer, "re", EXAMPLE_RE, "chat")
    assert chat == f"<|im_start|>user\n{instructions('re', EXAMPLE_RE)}<|im_end|>\n<|im_start|>assistant\n"
    plain = build_prompt(plain_tokenizer, "ner", EXAMPLE_NER, "plain")
    assert plain == instructions("ner", EXAMPLE_NER) + "\nEntities:\n"
    assert build_prompt(plain_tokenizer, "re", EXAMPLE_RE, "plain").endswith("e2: water hammer pressure\nLabel:")


def test_prompt_errors(chat_tokenizer, plain_tokenizer):
    with pytest.raises(ValueError, match="chat template"):
        prompt_form(plain_tokenizer, "chat")
    with pytest.raises(ValueError, match="form must be"):
        prompt_form(chat_tokenizer, "json")
    with pytest.raises(ValueError, match="RelationExample"):
        instructions("re", EXAMPLE_NER)
    with pytest.raises(ValueError, match="NERSentence"):
        instructions("ner", EXAMPLE_RE)
    with pytest.raises(ValueError, match="unknown zero-shot task"):
        instructions("pos", EXAMPLE_NER)


def test_encoders_are_refused_before_any_loading():
    with pytest.raises(ValueError, match="encoder"):
        load_generator("minilm-l6")
    with pytest.raises(ValueError, match="encoder"):
        load_tokenizer("mpnet-base")


# --------------------------------------------------------------------------------- RE parser

@pytest.mark.parametrize("answer, label", [
    ("Cause-Effect(e1,e2)", "Cause-Effect(e1,e2)"),
    ("cause-effect(e1,e2)", "Cause-Effect(e1,e2)"),
    ("Cause Effect (e1, e2)", "Cause-Effect(e1,e2)"),
    ("CAUSE_EFFECT( E1 , E2 )", "Cause-Effect(e1,e2)"),
    ("CauseEffect(e2,e1)", "Cause-Effect(e2,e1)"),
    ("Cause-Effect e1->e2", "Cause-Effect(e1,e2)"),
    ("Cause-Effect (e2 -> e1)", "Cause-Effect(e2,e1)"),
    ("Instrument-Agency e2→e1", "Instrument-Agency(e2,e1)"),
    ("Entity-Origin e1 => e2", "Entity-Origin(e1,e2)"),
    ("Entity-Destination [e1,e2]", "Entity-Destination(e1,e2)"),
    ("Message-Topic(e1 to e2)", "Message-Topic(e1,e2)"),
    ("**Component-Whole(e2,e1)**", "Component-Whole(e2,e1)"),
    ("The relation is Member-Collection(e1,e2).", "Member-Collection(e1,e2)"),
    ("Answer:\nProduct-Producer(e2,e1)", "Product-Producer(e2,e1)"),
    ("\n\n  Content-Container(e1,e2)", "Content-Container(e1,e2)"),
    ("Cause-Effect(e1,e2): e1 causes e2", "Cause-Effect(e1,e2)"),
    ("Cause-Effect(e1,e2), i.e. Cause-Effect(e1,e2)", "Cause-Effect(e1,e2)"),
    ("Cause-Effect(e1,e2)\nComponent-Whole(e1,e2)\nComponent-Whole(e2,e1)", "Cause-Effect(e1,e2)"),  # first line
    ("Other", "Other"),
    ("other.", "Other"),
    ("Answer: Other", "Other"),
    ('"Other"', "Other"),
    ("The relation is other", "Other"),
    ("Other (none of these relations holds)", "Other"),
])
def test_relation_parser_reads_labels(answer, label):
    parsed = parse_relation(answer)
    assert (parsed.label, parsed.status) == (label, "ok")


@pytest.mark.parametrize("answer, status", [
    ("Cause-Effect(e1,e2) or Component-Whole(e2,e1)", "ambiguous"),
    ("Cause-Effect(e1,e2) Cause-Effect(e2,e1)", "ambiguous"),
    ("Cause-Effect(e1,e2), not Other", "ambiguous"),
    ("Component-Whole(e1,e2) and Message-Topic", "ambiguous"),
    ("Cause-Effect or Component-Whole", "ambiguous"),
    ("Cause-Effect(e1,e2) or Effect-Cause(e1,e2)", "ambiguous"),
    ("Cause-Effect", "no_direction"),
    ("a cause effect relation", "no_direction"),
    ("Cause-Effect, e1 is the cause", "no_direction"),
    ("Effect-Cause(e1,e2)", "outside"),
    ("Whole-Component", "outside"),
    ("Cause-Effect(e1,e1)", "outside"),
    ("Cause-Effect(e1,e3)", "outside"),
    ("Part-Whole(e1,e2)", "outside"),
    ("Location(e1,e2)", "outside"),
    ("7", "no_label"),
    ("The solute was placed inside a beaker.", "no_label"),
    ("the other entity is a beaker", "no_label"),
    ("Answer:", "empty"),
    ("", "empty"),
    ("   \n  ", "empty"),
])
def test_relation_parser_never_guesses(answer, status):
    parsed = parse_relation(answer)
    assert parsed.status == status and parsed.label is None


def test_relation_parser_names_what_it_saw():
    assert parse_relation("Cause-Effect(e1,e2) or Component-Whole").named == ("Cause-Effect(e1,e2)", "Component-Whole")
    assert parse_relation(None).status == "empty"


# --------------------------------------------------------------------------------- NER parser

WORDS = "Justin Bieber sang in Paris and Paris loved it".split()


def entities(answer, words=WORDS):
    parsed = parse_entities(answer, words)
    assert len(parsed.tags) == len(words)
    return parsed


@pytest.mark.parametrize("answer", [
    "person: Justin Bieber\nlocation: Paris",
    "PERSON: justin bieber\nLocation: PARIS",
    "Justin Bieber: person\nParis: location",
    "Justin Bieber (person)\nParis (location)",
    "(Justin Bieber, person)\n(Paris, location)",
    "(Justin Bieber, person), (Paris, location)",
    "- person: Justin Bieber\n- location: Paris.",
    "1. person: \"Justin Bieber\"\n2. locations: Paris",
    "Entities:\nperson | Justin Bieber\nlocation - Paris",
    "**person**: Justin Bieber\nlocation: Paris",
])
def test_entity_parser_reads_the_forms(answer):
    parsed = entities(answer)
    assert parsed.status == "ok"
    assert parsed.tags == ("B-person", "I-person", "O", "O", "B-location", "O", "B-location", "O", "O")
    assert parsed.entities == ((0, 2, "person"), (4, 5, "location"), (6, 7, "location"))


def test_entity_parser_types_and_lists():
    words = "I watched Star Wars on my iPhone with Ann and Bob".split()
    parsed = entities("Creative Work: Star Wars\nproduct: iPhone\nperson: Ann, Bob", words)
    assert parsed.status == "ok"
    assert parsed.entities == ((2, 4, "creative-work"), (6, 7, "product"), (8, 9, "person"), (10, 11, "person"))
    assert parsed.tags[2:4] == ("B-creative-work", "I-creative-work")


@pytest.mark.parametrize("answer", ["none", "None.", "No entities.", "There are no named entities in this sentence."])
def test_entity_parser_none(answer):
    parsed = entities(answer)
    assert parsed.status == "none" and set(parsed.tags) == {"O"} and parsed.entities == ()


def test_entity_parser_counts_problems():
    parsed = entities("organization: Apple")
    assert parsed.status == "unparseable" and parsed.problems["outside_type"] == 1
    parsed = entities("person: Justin Bieber\ncorporate: Paris")
    assert parsed.status == "partial" and parsed.problems["outside_type"] == 1 and len(parsed.entities) == 1
    parsed = entities("person: Barack Obama")
    assert parsed.status == "ok" and parsed.problems["not_in_sentence"] == 1 and parsed.entities == ()
    parsed = entities("person: Justin Bieber\nperson: Bieber")
    assert parsed.problems["overlap"] == 1 and parsed.entities == ((0, 2, "person"),)
    parsed = entities("I think the sentence is about music")
    assert parsed.status == "unparseable" and parsed.problems["bad_line"] == 1
    parsed = entities("person:\nlocation: Paris")
    assert parsed.status == "partial" and parsed.problems["bad_line"] == 1
    parsed = entities("person: Justin Bieber\nperson: location")
    assert parsed.status == "partial" and parsed.problems["bad_line"] == 1
    assert entities("").status == "empty" and entities("\n  \n").status == "empty"
    assert entities("Entities:").status == "unparseable"


# --------------------------------------------------------------------------------- scores

def test_semeval_macro_f1_by_hand():
    gold = ["Cause-Effect(e1,e2)", "Cause-Effect(e2,e1)", "Component-Whole(e1,e2)", "Other"]
    predicted = ["Cause-Effect(e1,e2)", "Cause-Effect(e1,e2)", None, "Component-Whole(e1,e2)"]
    macro, table = semeval_macro_f1(gold, predicted)
    cause = table.set_index("type").loc["Cause-Effect"]
    assert (cause.tp, cause.predicted, cause.gold) == (1, 2, 2) and cause.f1 == pytest.approx(0.5)
    whole = table.set_index("type").loc["Component-Whole"]
    assert (whole.tp, whole.predicted, whole.gold, whole.f1) == (0, 1, 1, 0.0)
    assert len(table) == 9 and macro == pytest.approx(0.5 / 9)
    assert semeval_macro_f1(gold[:3], gold[:3])[1]["f1"].tolist()[:2] == [1.0, 1.0]


def test_zero_shot_scores_re_counts_unparseable_as_wrong():
    rows = pd.DataFrame({
        "model": ["m"] * 5,
        "gold": ["Other", "Other", "Cause-Effect(e1,e2)", "Cause-Effect(e1,e2)", "Member-Collection(e2,e1)"],
        "label": ["Other", None, "Cause-Effect(e1,e2)", None, "Member-Collection(e1,e2)"],
        "status": ["ok", "no_label", "ok", "no_direction", "ok"],
    })
    scores = zero_shot_scores(rows, "re")
    assert scores["accuracy"] == pytest.approx(2 / 5) and scores["majority_accuracy"] == pytest.approx(2 / 5)
    assert (scores["unparseable"], scores["unparseable_share"], scores["outside_label_set"]) == (2, 0.4, 1)
    assert scores["statuses"] == {"ok": 3, "no_label": 1, "no_direction": 1}
    # Cause-Effect: tp 1 of 1 predicted, 2 gold -> F1 2/3; Member-Collection: 0
    assert scores["macro_f1"] == pytest.approx((2 / 3) / 9)


def test_zero_shot_scores_ner_is_seqeval_entity_f1():
    rows = pd.DataFrame({
        "model": ["m", "m"],
        "gold": [("B-person", "I-person", "O"), ("B-location", "O")],
        "tags": [("B-person", "I-person", "O"), ("B-person", "O")],
        "status": ["ok", "unparseable"],
        "entities": [1, 1], "outside_type": [0, 1], "not_in_sentence": [0, 0],
    })
    scores = zero_shot_scores(rows, "ner")
    assert scores["precision"] == 0.5 and scores["recall"] == 0.5 and scores["f1"] == pytest.approx(0.5)
    assert (scores["unparseable"], scores["gold_entities"], scores["outside_type"]) == (1, 2, 1)
    with pytest.raises(ValueError, match="several models"):
        zero_shot_scores(rows.assign(model=["a", "b"]), "ner")
    with pytest.raises(ValueError, match="unknown"):
        zero_shot_scores(rows, "pos")


# --------------------------------------------------------------------------------- cache keys

def test_answer_keys_change_with_model_prompt_task_form_and_device(tmp_path):
    store = TensorStore(tmp_path)
    keys = lambda fp="zoo:a:1", task="re", form="chat", prompt="prompt", text="text", device="cpu": answer_keys(  # noqa: E731
        store, fp, task, form, [prompt], [text], device=device)
    base = keys()
    assert base == keys()
    for changed in (keys(fp="zoo:b:1"), keys(prompt="prompt v2"), keys(text="other text"), keys(task="ner"),
                    keys(form="plain"), keys(device="cuda")):
        assert changed != base


def test_answer_keys_name_the_fixed_batch_and_the_shared_prefix(tmp_path):
    store = TensorStore(tmp_path)
    prompts, texts = ["p0", "p1", "p2"], ["t0", "t1", "t2"]
    keys = answer_keys(store, "zoo:a:1", "re", "chat", prompts, texts, device="cpu", batch_size=2, shared=5)
    # p2 is alone in the second batch: asking for it alone is the same batch; p0 alone is not
    assert answer_keys(store, "zoo:a:1", "re", "chat", prompts[2:], texts[2:], device="cpu", batch_size=2,
                       shared=5) == keys[2:]
    assert answer_keys(store, "zoo:a:1", "re", "chat", prompts[:1], texts[:1], device="cpu", batch_size=2,
                       shared=5)[0] != keys[0]
    assert answer_keys(store, "zoo:a:1", "re", "chat", prompts, texts, device="cpu", batch_size=2, shared=4) != keys
    assert answer_keys(store, "zoo:a:1", "re", "chat", prompts, texts, device="cpu", batch_size=3, shared=5) != keys


# --------------------------------------------------------------------------------- real generation

@pytest.fixture(scope="module")
def smollm():
    return load_generator("smollm2-135m", device="cpu")


@pytest.mark.slow
def test_real_zoo_models_get_their_forms():
    from chapter_code.zeroshot import prompt_forms

    table = prompt_forms(["smollm2-135m", "qwen2.5-0.5b", "gemma-3-270m"]).set_index("model")
    assert table["form"].to_dict() == {"smollm2-135m": "chat", "qwen2.5-0.5b": "chat", "gemma-3-270m": "plain"}
    gemma = load_tokenizer("gemma-3-270m")
    prompt = build_prompt(gemma, "re", EXAMPLE_RE, prompt_form(gemma))
    assert prompt == instructions("re", EXAMPLE_RE) + "\nLabel:" and gemma(prompt)["input_ids"][0] == gemma.bos_token_id
    qwen_tokenizer = load_tokenizer("qwen2.5-0.5b")
    qwen = build_prompt(qwen_tokenizer, "ner", EXAMPLE_NER, prompt_form(qwen_tokenizer))
    assert qwen.startswith("<|im_start|>system\n") and qwen.endswith(f"{instructions('ner', EXAMPLE_NER)}<|im_end|>\n<|im_start|>assistant\n")


@pytest.mark.slow
def test_batched_greedy_equals_generate(smollm, one_thread):
    """The prefix-cached, left-padded batch decodes exactly what ``model.generate`` decodes greedily."""
    from chapter_code.zeroshot import generate_greedy

    examples = [EXAMPLE_RE, relation("The cup holds a little tea .", (1, 2), (5, 6), "Content-Container(e2,e1)")]
    prompts = [build_prompt(smollm.tokenizer, "re", x, "chat") for x in examples]
    made = generate_greedy(smollm, prompts, max_new_tokens=8, add_special_tokens=False, batch_size=2)
    for prompt, generation in zip(prompts, made):
        encoded = smollm.tokenizer(prompt, add_special_tokens=False, return_tensors="pt")
        out = smollm.model.generate(**encoded, max_new_tokens=8, do_sample=False, eos_token_id=sorted(smollm.end_ids),
                                    pad_token_id=smollm.tokenizer.pad_token_id)
        reference = [t for t in out[0, encoded["input_ids"].shape[1]:].tolist() if t not in smollm.end_ids]
        assert list(generation.tokens) == reference
        assert generation.finish in {"eos", "length"} and generation.prompt_tokens == encoded["input_ids"].shape[1]


@pytest.mark.slow
def test_zero_shot_reads_answers_back_and_never_reuses_a_changed_prompt_or_model(smollm, tmp_path, monkeypatch,
                                                                               one_thread):
    from chapter_code.zeroshot import zero_shot

    store = TensorStore(tmp_path)
    examples = [EXAMPLE_RE, relation("The cup holds a little tea .", (1, 2), (5, 6), "Content-Container(e2,e1)", "2")]
    first = zero_shot(smollm, "re", examples, store=store, progress=False)
    assert list(first.columns[:4]) == ["model", "form", "id", "text"] and len(first) == 2
    assert (~first["cached"]).all() and set(first["form"]) == {"chat"}
    assert first["status"].isin(["ok", "ambiguous", "no_direction", "outside", "no_label", "empty"]).all()
    assert ((first["label"] == first["gold"]) == first["correct"]).all()
    again = zero_shot("smollm2-135m", "re", examples, store=store, progress=False)  # by name: no weights loaded
    assert again["cached"].all() and again["answer"].tolist() == first["answer"].tolist()
    other_model = dataclasses.replace(smollm, fingerprint=smollm.fingerprint + ":perturbed")
    assert (~zero_shot(other_model, "re", examples[:1], store=store, progress=False)["cached"]).all()
    monkeypatch.setitem(PROMPTS, "re", dataclasses.replace(PROMPTS["re"], head=PROMPTS["re"].head + "Be brief.\n\n"))
    assert (~zero_shot(smollm, "re", examples[:1], store=store, progress=False)["cached"]).all()


FOUR_RE = [EXAMPLE_RE, relation("The cup holds a little tea .", (1, 2), (5, 6), "Content-Container(e2,e1)", "2"),
           relation("A spark caused the fire in the old barn .", (1, 2), (4, 5), "Cause-Effect(e1,e2)", "3"),
           relation("The committee was formed by ten members .", (1, 2), (6, 7), "Member-Collection(e2,e1)", "4")]


def _answers(rows: pd.DataFrame) -> list:
    return rows[["id", "answer", "finish", "label"]].values.tolist()


@pytest.mark.slow
def test_a_resumed_zero_shot_run_answers_as_a_cold_one(smollm, tmp_path):
    """Batches are fixed by the prompt list: with answers of other batches, or of another list, cached, every answer
    is the cold run's."""
    import shutil

    from chapter_code.zeroshot import zero_shot

    cold = zero_shot(smollm, "re", FOUR_RE, batch_size=2, store=TensorStore(tmp_path / "cold"), progress=False)
    assert (~cold["cached"]).all()
    # half the answers kept (one in each batch), the rest lost: the batches are decoded whole again
    shutil.copytree(tmp_path / "cold", tmp_path / "half")
    half = TensorStore(tmp_path / "half")
    name, tokenizer, fingerprint = answer_identity(smollm)
    prompts = [build_prompt(tokenizer, "re", x, "chat") for x in FOUR_RE]
    keys = answer_keys(half, fingerprint, "re", "chat", prompts, [x.text for x in FOUR_RE], device="cpu",
                       batch_size=2, shared=tokenize_prompts(tokenizer, prompts, False)[1])
    for key in keys[1::2]:
        half.path(key).unlink()
    assert _answers(zero_shot(smollm, "re", FOUR_RE, batch_size=2, store=half, progress=False)) == _answers(cold)
    # the first half asked before (another list: another shared prefix and batches), then all of them
    resumed = TensorStore(tmp_path / "resumed")
    zero_shot(smollm, "re", FOUR_RE[:2], batch_size=2, store=resumed, progress=False)
    again = zero_shot(smollm, "re", FOUR_RE, batch_size=2, store=resumed, progress=False)
    assert _answers(again) == _answers(cold)
    assert zero_shot(smollm, "re", FOUR_RE, batch_size=2, store=resumed, progress=False)["cached"].all()


@pytest.mark.slow
def test_zero_shot_on_two_workers_equals_one(tmp_path):
    """Each batch runs on the fixed thread count: two worker processes answer as this process does."""
    from chapter_code.zeroshot import zero_shot

    here = zero_shot("smollm2-135m", "re", FOUR_RE, batch_size=2, device="cpu", workers=1,
                     store=TensorStore(tmp_path / "one"), progress=False)
    spread = zero_shot("smollm2-135m", "re", FOUR_RE, batch_size=2, device="cpu", workers=2,
                       store=TensorStore(tmp_path / "two"), progress=False)
    assert _answers(here) == _answers(spread) and (~spread["cached"]).all()
    one, two = TensorStore(tmp_path / "one"), TensorStore(tmp_path / "two")
    keys = sorted(path.stem for path in (tmp_path / "one").rglob("*.safetensors"))
    assert len(keys) == 4 and keys == sorted(path.stem for path in (tmp_path / "two").rglob("*.safetensors"))
    assert all(torch.equal(one.get(key)[0]["tokens"], two.get(key)[0]["tokens"]) for key in keys)
