"""olacore.toa: adapter input, network and heads, task data, training, caching, bad input."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pytest
import torch

from olacore.corpora import NERSentence, RelationExample, join_words
from olacore.maps import sink_flags
from olacore.store import TensorStore
from olacore.augment import Augmentation, augment, fake_sinks, map_noise
from olacore.toa.data import (DISTANCE_CHANNELS, IGNORE, SPECIAL, InputSpec, LabelVocab, TaskItem,
                              build_input, build_task_data, distance_input, encode_items, raw_maps,
                              stack_channels)
from olacore.toa.model import AdapterConfig, ToaModel
from chapter_code.transfer import counts_score, sentence_counts
from olacore.toa.train import TrainConfig, TrainedAdapter, make_job, train_adapters
from olacore.corpora import UDSentence


@dataclass
class FakeRecord:
    """What the TOA code reads from an OLA record (olacore.pipeline.OLAResult)."""

    text: str
    offsets: list
    is_causal: bool
    orders: torch.Tensor
    rollout: torch.Tensor

    @property
    def tokens(self):
        return [self.text[a:b] or "<s>" for a, b in self.offsets]


def stochastic(generator, size, causal=False, channels=1):
    logits = torch.randn(channels, size, size, generator=generator) * 2
    if causal:
        logits = logits.masked_fill(~torch.ones(size, size, dtype=torch.bool).tril(), float("-inf"))
    return logits.softmax(-1)


# ---------------------------------------------------------------------------------------------
# Input
# ---------------------------------------------------------------------------------------------


def _reference_mask(row_values, interested, num_std, ddof):
    values = [row_values[j] for j in interested]
    n = len(values)
    mean = sum(values) / n
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / max(n - ddof, 1e-10))
    top = max(values)
    return {j for j in interested if row_values[j] > mean + num_std * std or row_values[j] == top}


@pytest.mark.parametrize("causal", [False, True])
def test_sink_mask_is_the_official_one_sample_std_and_every_tie(causal):
    generator = torch.Generator().manual_seed(0)
    maps = stochastic(generator, 9, causal, channels=6).double()
    for num_std in (3.0, 1.0):
        flags = sink_flags(maps, causal, num_std, stats="causal")
        differs_from_population = False
        for c in range(maps.shape[0]):
            for i in range(9):
                interested = range(i + 1) if causal else range(9)
                row = maps[c, i].tolist()
                expected = _reference_mask(row, interested, num_std, ddof=1)
                assert set(torch.nonzero(flags[c, i]).flatten().tolist()) == expected
                differs_from_population |= expected != _reference_mask(row, interested, num_std, ddof=0)
        if num_std == 1.0:
            assert differs_from_population  # the test would catch a population-std version
    ties = sink_flags(torch.tensor([[0.4, 0.4, 0.2], [0.2, 0.5, 0.3], [0.1, 0.1, 0.8]]), causal=False, stats="causal")
    assert ties[0].tolist() == [True, True, False]
    first_row = sink_flags(torch.tensor([[1.0, 0.0], [0.3, 0.7]]), causal=True, stats="causal")
    assert first_row.tolist() == [[True, False], [False, True]]


def test_official_stack_normalised_and_mirrored():
    generator = torch.Generator().manual_seed(1)
    orders = torch.cat([torch.eye(5)[None], stochastic(generator, 5, True, channels=2)])
    out = stack_channels(orders[[1, 2]], causal=True)  # the official input: orders 1 and 2
    assert out.shape == (4, 5, 5) and out.dtype == torch.float32
    assert torch.allclose(out, out.transpose(-1, -2))  # a CLM's stack is mirrored
    lower = out.tril()
    assert torch.allclose(lower[:2], orders[1:].float().tril(), atol=1e-6)  # raw orders 1, 2 (rows already sum to 1)
    clean = orders[1:].float().masked_fill(sink_flags(orders[1:].float(), True, stats="causal"), 0)
    clean = clean / (clean.sum(-1, keepdim=True) + 1e-10)
    assert torch.allclose(lower[2:], clean.tril(), atol=1e-6)
    sums = lower.sum(-1)
    assert torch.allclose(sums[:2], torch.ones(2, 5), atol=1e-5)
    assert torch.all(((sums[2:] - 1).abs() < 1e-5) | (sums[2:] == 0))
    assert sums[2:, 0].abs().sum() == 0  # the first row of a causal map is all sink
    encoder = stack_channels(stochastic(generator, 5, False, 2), causal=False)
    assert not torch.allclose(encoder, encoder.transpose(-1, -2))
    assert torch.allclose(encoder.sum(-1), torch.ones(4, 5), atol=1e-5)


def test_build_input_takes_any_channel_by_name_and_cuts():
    generator = torch.Generator().manual_seed(2)
    record = FakeRecord("a b c d e f", [(0, 1)] * 6, False,
                        torch.cat([torch.eye(6)[None], stochastic(generator, 6, channels=3)]), stochastic(generator, 6)[0])
    spec = InputSpec(("order3", "rollout"))
    assert spec.num_channels == 4 and spec.label == "order 3+rollout"
    full = build_input(raw_maps(record, spec, 6), spec, False)
    assert full.shape == (4, 6, 6)
    assert build_input(raw_maps(record, spec, 4), spec, False).shape == (4, 4, 4)
    order1 = InputSpec(("order1",))
    assert torch.allclose(build_input(raw_maps(record, order1, 6), order1, False),
                          stack_channels(record.orders[1:2], False))
    spec = InputSpec(("distance",))
    distance = build_input(raw_maps(record, spec, 4), spec, False)
    assert distance.shape == (DISTANCE_CHANNELS, 4, 4) and torch.equal(distance, distance_input(4))
    assert InputSpec().label == "order 1+2" and InputSpec().num_channels == 4


def test_distance_input_encodes_offsets_only():
    d = distance_input(5)
    assert d.shape == (DISTANCE_CHANNELS, 5, 5) and float(d.min()) >= 0 and float(d.max()) <= 1
    assert d[3, 1, 2] == 1 and d[3, 2, 1] == 0  # the "j - i = +1" indicator
    assert torch.equal(d[:, 0, 1], d[:, 3, 4])  # depends on j - i only (and on T)


def test_augmentations_keep_rows_stochastic_and_causal_zeros():
    generator = torch.Generator().manual_seed(3)
    maps = stochastic(generator, 7, causal=True, channels=2)
    for out in (fake_sinks(maps, True, 2, generator), map_noise(maps, True, 0.2, generator)):
        assert torch.allclose(out.sum(-1), torch.ones(2, 7), atol=1e-5)
        assert out.triu(1).abs().sum() == 0 and float(out.min()) >= 0
    assert torch.equal(augment(maps, True, Augmentation(sink_p=0, noise_p=0), generator), maps)
    with pytest.raises(ValueError):
        Augmentation(sink_p=1.5)


# ---------------------------------------------------------------------------------------------
# Network and heads
# ---------------------------------------------------------------------------------------------


def test_configs_refuse_non_positive_sizes_with_the_field_name():
    for field, value in (("dim", 0), ("depth", -1), ("heads", 0), ("arc_dim", 0), ("ffn_mult", 1.5)):
        with pytest.raises(ValueError, match=field):
            AdapterConfig(**{field: value})
    with pytest.raises(ValueError, match="divide"):
        AdapterConfig(dim=30, heads=4)
    with pytest.raises(ValueError, match="backbone"):
        AdapterConfig(backbone="unet")
    with pytest.raises(ValueError, match="ffn_kernel"):
        AdapterConfig(ffn_kernel=1)
    with pytest.raises(ValueError, match="input_transform"):
        AdapterConfig(input_transform="sqrt")
    with pytest.raises(ValueError, match="epochs"):
        TrainConfig(epochs=0)
    with pytest.raises(ValueError, match="lr"):
        TrainConfig(lr=0.0)


def _padded_pair(channels, short=5, long=9, seed=4):
    generator = torch.Generator().manual_seed(seed)
    a, b = torch.rand(channels, short, short, generator=generator), torch.rand(channels, long, long, generator=generator)
    batch = torch.zeros(2, channels, long, long)
    batch[0, :, :short, :short], batch[1] = a, b
    batch[0, :, short:, :] = 7.0  # junk in the padding must not matter either
    return a, batch, torch.tensor([short, long])


@pytest.mark.parametrize("task", ["tokens", "relation", "dependency"])
@pytest.mark.parametrize("config", [AdapterConfig(dim=16, heads=2),
                                    AdapterConfig(dim=16, heads=2, local_mix=False, input_transform="none",
                                                  pair_scores=False)])
def test_padding_does_not_change_a_sentence_and_shapes(task, config):
    torch.manual_seed(0)
    model = ToaModel(task, 3, 6, config).eval()
    if task == "dependency":  # the biaffine weights start at zero: give them values
        for parameter in model.head.parameters():
            torch.nn.init.normal_(parameter, std=0.3)
    a, batch, lengths = _padded_pair(3)
    extra = {"spans": torch.tensor([[0, 2, 3, 5], [1, 2, 4, 8]])} if task == "relation" else {}
    with torch.no_grad():
        alone = model(a[None], torch.tensor([5]), **({k: v[:1] for k, v in extra.items()}))
        together = model(batch, lengths, **extra)
    if task == "tokens":
        assert together["logits"].shape == (2, 9, 6)
        assert torch.allclose(alone["logits"][0], together["logits"][0, :5], atol=1e-5)
    elif task == "relation":
        assert together["logits"].shape == (2, 6)
        assert torch.allclose(alone["logits"][0], together["logits"][0], atol=1e-5)
    else:
        assert together["arc"].shape == (2, 9, 9) and together["rel"].shape == (2, 9, 9, 6)
        assert torch.allclose(alone["arc"][0], together["arc"][0, :5, :5], atol=1e-4)
        assert torch.isinf(together["arc"][0, :, 5:]).all()  # padded tokens are never heads
        assert torch.allclose(alone["rel"][0], together["rel"][0, :5, :5], atol=1e-4)


def test_the_adapters_attention_is_torchs_masked_scaled_dot_product_attention():
    from torch.nn.functional import scaled_dot_product_attention
    from olacore.toa.model import _attend
    torch.manual_seed(0)
    batch, rows, length, dim, heads = 3, 7, 7, 16, 2
    x = torch.randn(batch, rows, length, dim)
    norm, qkv, out = torch.nn.LayerNorm(dim), torch.nn.Linear(dim, 3 * dim), torch.nn.Linear(dim, dim)
    valid = torch.arange(length)[None, :] < torch.tensor([7, 5, 3])[:, None]
    q, k, v = qkv(norm(x)).reshape(batch * rows, length, 3, heads, dim // heads).permute(2, 0, 3, 1, 4)
    mask = valid[:, None, :].expand(batch, rows, length).reshape(batch * rows, 1, 1, length)
    reference = out(scaled_dot_product_attention(q, k, v, attn_mask=mask).transpose(1, 2).reshape(x.shape))
    assert torch.allclose(_attend(x, norm, qkv, out, heads, valid), reference, atol=1e-6)


def test_the_official_package_backbone_leaks_padding():
    torch.manual_seed(0)
    model = ToaModel("tokens", 3, 4, AdapterConfig(dim=16, heads=2, backbone="package")).eval()
    a, batch, lengths = _padded_pair(3)
    batch[0, :, 5:, :] = 0.0
    batch[0, :, :, 5:] = 0.0
    with torch.no_grad():
        alone = model(a[None], torch.tensor([5]))["logits"][0]
        together = model(batch, lengths)["logits"][0, :5]
    assert (alone - together).abs().max() > 1e-3


# ---------------------------------------------------------------------------------------------
# Task data
# ---------------------------------------------------------------------------------------------

#   text: "The dog barks."   tokens: [CLS] The dog bar ks . [SEP]
_TEXT = "The dog barks."
_OFFSETS = [(0, 0), (0, 3), (4, 7), (8, 11), (11, 13), (13, 14), (0, 0)]


def _ud(sent_id="s1", text=_TEXT, spans=((0, 3), (4, 7), (8, 13), (13, 14))):
    return UDSentence(sent_id, text, ("The", "dog", "barks", "."), tuple(spans), (2, 3, 0, 3),
                      ("det", "nsubj", "root", "punct"), ("DET", "NOUN", "VERB", "PUNCT"), ("DT", "NN", "VBZ", "."))


def _record(text=_TEXT, offsets=_OFFSETS, causal=False, seed=0):
    generator = torch.Generator().manual_seed(seed)
    size = len(offsets)
    orders = torch.cat([torch.eye(size)[None], stochastic(generator, size, causal, channels=2)])
    return FakeRecord(text, list(offsets), causal, orders, stochastic(generator, size, causal)[0])


def test_dependency_items_use_first_subtokens_and_the_root_points_to_itself():
    data = build_task_data("dp", "toy", [_ud()], records=[_record()])
    item = data.items[0]
    assert item.word_tokens == (1, 2, 3, 5)
    assert item.heads == (2, 3, 3, 3)  # the root word "barks" heads itself
    assert item.gold_heads == (2, 3, 0, 3) and item.punct == (False, False, False, True)
    cut = build_task_data("dp", "toy", [_ud()], records=[_record()], max_tokens=3)
    assert cut.items[0].word_tokens == (1, 2) and cut.items[0].heads == (2, -1)
    assert (cut.report.words_beyond_cut, cut.report.heads_beyond_cut, cut.report.cut_sentences) == (2, 1, 1)


def test_a_job_refuses_train_and_dev_of_another_task_or_grid():
    tokens = build_task_data("dp", "toy", [_ud()], records=[_record()])
    words = build_task_data("dp", "toy", [_ud()], records=[_record()], grid="words")
    tags = build_task_data("pos", "toy", [_ud()], records=[_record()])
    for dev in (words, tags):
        with pytest.raises(ValueError, match="grid") as error:
            make_job(tokens, dev, InputSpec(), SMALL, TrainConfig(epochs=1))
        assert dev.task in str(error.value) and dev.grid in str(error.value)


def test_the_word_grid_keeps_first_subtokens_and_indexes_by_word():
    record = _record()
    data = build_task_data("dp", "toy", [_ud()], records=[record], grid="words")
    item = data.items[0]
    assert item.positions == (1, 2, 3, 5) and item.num_tokens == 4
    assert item.word_tokens == (0, 1, 2, 3) and item.heads == (1, 2, 2, 2)
    raw = data.raw(InputSpec(("order1",)))[0]
    assert torch.equal(raw[0], record.orders[1][[1, 2, 3, 5]][:, [1, 2, 3, 5]])
    assert data.inputs(InputSpec())[0].shape == (4, 4, 4)
    pos = build_task_data("pos", "toy", [_ud()], records=[record], grid="words").items[0]
    assert pos.token_labels == ("DT", "NN", "VBZ", ".") and pos.word_tokens == (0, 1, 2, 3)
    words = ("Paris", "is", "big", "Bob")
    text, spans = join_words(words)
    offsets = [(0, 3), (3, 5), (6, 8), (9, 12), (13, 16)]
    relation = RelationExample("r1", text, words, spans, (0, 1), (3, 4), "Other")
    assert build_task_data("re", "toy", [relation], records=[_record(text, offsets)], grid="words").items[0].spans == (0, 1, 3, 4)


def test_pos_labels_every_subtoken_and_special_tokens_get_their_class():
    data = build_task_data("pos", "toy", [_ud()], records=[_record()])
    assert data.items[0].token_labels == (SPECIAL, "DT", "NN", "VBZ", "VBZ", ".", SPECIAL)
    assert data.items[0].word_labels == ("DT", "NN", "VBZ", ".")


def test_unalignable_sentences_are_named_and_counted_not_kept():
    broken = _record(offsets=[(0, 0), (0, 3), (4, 7), (13, 14), (0, 0)])  # "barks" lost by the tokenizer
    data = build_task_data("dp", "toy", [_ud("good"), _ud("bad")], records=[_record(), broken])
    assert [item.sent_id for item in data.items] == ["good"]
    assert data.report.unaligned[0][0] == "bad"


def test_ner_and_relation_items_and_what_the_cut_drops():
    words = ("Paris", "is", "big", "Bob")
    text, spans = join_words(words)
    offsets = [(0, 3), (3, 5), (6, 8), (9, 12), (13, 16)]
    ner = NERSentence("n1", text, words, spans, ("B-location", "O", "O", "B-person"))
    data = build_task_data("ner", "toy", [ner], records=[_record(text, offsets)], max_tokens=4)
    assert data.items[0].token_labels == ("B-location", "B-location", "O", "O")  # B- repeats on sub-tokens
    assert data.items[0].word_labels == ("B-location", "O", "O")
    assert data.report.entities_beyond_cut == 1
    relation = RelationExample("r1", text, words, spans, (0, 1), (3, 4), "Other")
    kept = build_task_data("re", "toy", [relation], records=[_record(text, offsets)])
    assert kept.items[0].spans == (0, 2, 4, 5) and kept.items[0].label == "Other"
    dropped = build_task_data("re", "toy", [relation], records=[_record(text, offsets)], max_tokens=4)
    assert len(dropped) == 0 and dropped.report.dropped_beyond_cut == 1


def test_sentence_counts_of_token_tasks_sum_to_their_score():
    from olacore.toa.train import score

    words = ("Paris", "is", "big", "Bob")
    text, spans = join_words(words)
    offsets = [(0, 3), (3, 5), (6, 8), (9, 12), (13, 16)]
    ner = NERSentence("n1", text, words, spans, ("B-location", "O", "O", "B-person"))
    data = {"ner": build_task_data("ner", "toy", [ner, replace(ner, sent_id="n2")], records=[_record(text, offsets)] * 2),
            "pos": build_task_data("pos", "toy", [_ud("a"), _ud("b")], records=[_record(), _record()])}
    rng = np.random.default_rng(0)
    for task, d in data.items():
        vocab = LabelVocab.from_labels(d.labels())
        for _ in range(20):  # random taggers: right and wrong words, found and missed entities
            guesses = [{"labels": rng.integers(0, len(vocab), item.num_tokens)} for item in d.items]
            counts = sentence_counts(task, d.items, guesses, vocab)
            expected = score(task, d.items, guesses, vocab)["f1" if task == "ner" else "accuracy"]
            assert counts_score(task, counts.sum(0)) == pytest.approx(expected), task


def test_label_vocabulary_counts_unknown_labels():
    vocab = LabelVocab.from_labels(["b", "a", "b"])
    assert vocab.labels == ("a", "b") and vocab.index("c") == IGNORE and vocab.index(None) == IGNORE
    items = [TaskItem("x", "x", 3, token_labels=("a", None, "c"))]
    targets, unknown = encode_items(items, "tokens", vocab)
    assert targets[0]["labels"].tolist() == [0, IGNORE, IGNORE] and unknown == 1


# ---------------------------------------------------------------------------------------------
# Training, evaluation, caching
# ---------------------------------------------------------------------------------------------


def _toy_parsing(count, seed, relation="dep", causal=False):
    """Sentences whose map plants each word's head as its row's peak (1 token per word)."""
    rng = np.random.default_rng(seed)
    sources, records = [], []
    for index in range(count):
        size = int(rng.integers(5, 9))
        words = tuple(f"w{k}" for k in range(size))
        text, spans = join_words(words)
        root = int(rng.integers(size))
        heads = [0 if w == root else int(rng.choice([h for h in range(size) if h != w])) + 1 for w in range(size)]
        planted = rng.random((size, size)) * 0.2
        for w, head in enumerate(heads):
            planted[w, (head - 1) if head else w] += 3.0
        planted = torch.tensor(planted / planted.sum(1, keepdims=True), dtype=torch.float32)
        orders = torch.stack([torch.eye(size), planted, planted @ planted])
        records.append(FakeRecord(text, list(spans), causal, orders, planted))
        sources.append(UDSentence(f"t{index}", text, words, spans, tuple(heads), (relation,) * size, ("X",) * size))
    return build_task_data("dp", "toy", sources, records=records, max_tokens=None)


SMALL = AdapterConfig(dim=16, depth=1, heads=2, arc_dim=16, rel_dim=8, mlp_dropout=0.0)


def test_tiny_end_to_end_training_beats_chance():
    train, dev, test = _toy_parsing(96, 0), _toy_parsing(24, 1), _toy_parsing(40, 2)
    job = make_job(train, dev, InputSpec(("order1",)), SMALL, TrainConfig(epochs=8, lr=5e-3, batch_size=8), seed=0)
    adapter = TrainedAdapter.from_stored(*job.train())
    scores = adapter.evaluate(test)
    chance = 100.0 * np.mean([1 / item.num_tokens for item in test.items])
    assert scores["uas"] > chance + 30
    counts = sentence_counts("dp", test.items, adapter.predict(test), adapter.vocab)  # what a bootstrap resamples
    assert counts.shape == (len(test), 2) and counts_score("dp", counts.sum(0)) == pytest.approx(scores["uas"])
    assert adapter.record["best_epoch"] >= 1 and adapter.record["dev"]["las"] == max(
        h["dev_las"] for h in adapter.record["history"])


def test_training_with_the_official_augmentations_runs_and_changes_the_adapter():
    train, dev = _toy_parsing(16, 13), _toy_parsing(8, 14)
    plain = make_job(train, dev, InputSpec(("order1",)), SMALL, TrainConfig(epochs=1), seed=0)
    noisy = make_job(train, dev, InputSpec(("order1",)), SMALL,
                     TrainConfig(epochs=1, augment=Augmentation(sink_p=1.0, noise_p=1.0)), seed=0)
    assert plain.key() != noisy.key()
    weights_plain, _ = plain.train()
    weights_noisy, record = noisy.train()
    assert record["training"]["augment"]["sink_p"] == 1.0
    assert any(not torch.equal(weights_plain[k], weights_noisy[k]) for k in weights_plain)


def test_stored_adapters_are_reused_only_for_the_same_training(tmp_path):
    store = TensorStore(tmp_path)
    train, dev = _toy_parsing(16, 3), _toy_parsing(8, 4)
    spec, quick = InputSpec(("order1",)), TrainConfig(epochs=1, batch_size=8)
    job = make_job(train, dev, spec, SMALL, quick, seed=0)
    first = train_adapters([job], store=store, progress=False)[0]
    again = train_adapters([make_job(train, dev, spec, SMALL, quick, seed=0)], store=store, progress=False)[0]
    assert again.record["seconds"] == first.record["seconds"]  # read back, not trained again
    longer = make_job(train, dev, spec, SMALL, replace(quick, epochs=2), seed=0)
    wider = make_job(train, dev, spec, replace(SMALL, dim=8), quick, seed=0)
    other_seed = make_job(train, dev, spec, SMALL, quick, seed=1)
    train.records[0].orders[1] = train.records[0].orders[1].flip(-1)  # the data changed
    changed = make_job(train, dev, spec, SMALL, quick, seed=0)
    keys = {j.key() for j in (job, longer, wider, other_seed, changed)}
    assert len(keys) == 5
    fresh = train_adapters([longer, wider, changed], store=store, progress=False)
    assert fresh[0].record["training"]["epochs"] == 2 and len(fresh[0].record["history"]) == 2
    assert fresh[1].record["adapter"]["dim"] == 8
    assert fresh[2].record["seconds"] != first.record["seconds"]


def test_bad_input_is_refused_or_counted():
    train, dev = _toy_parsing(8, 5), _toy_parsing(4, 6)
    spec = InputSpec(("order1",))
    # a test label the training never saw: counted, scored as wrong, no crash
    adapter = TrainedAdapter.from_stored(*make_job(train, dev, spec, SMALL, TrainConfig(epochs=1)).train())
    unseen = _toy_parsing(4, 7, relation="unseen")
    scores = adapter.evaluate(unseen)
    assert scores["unknown_labels"] == sum(len(item.word_labels) for item in unseen.items) and scores["las"] == 0.0
    # another kind of model, another task
    with pytest.raises(ValueError, match="one kind"):
        adapter.evaluate(_toy_parsing(4, 8, causal=True))
    with pytest.raises(ValueError, match="trained for"):
        adapter.evaluate(replace(unseen, task="pos"))


# ---------------------------------------------------------------------------------------------
# Settings and tables
# ---------------------------------------------------------------------------------------------


def test_settings_are_validated_and_list_the_grid():
    from olacore.profiles import settings
    from olacore.toa.data import SYNTAX_GRID

    from chapter_code.syntax import grid_cells

    default = settings("syntax", "default")
    cells = grid_cells(default)
    assert len(cells) == len(set(cells))
    full = {(m, i) for m, i, _ in cells if m == "minilm-l6"}
    assert full == {("minilm-l6", name) for name in SYNTAX_GRID if name != "ALTI"}  # ALTI runs on a subset:
    assert {i for m, i, _ in cells if m == "minilm-l6 [ALTI subset]"} == {"order 1", "ALTI"}
    assert {i for m, i, _ in cells if m == "qwen2.5-0.5b"} == set(default.basic_inputs)
    assert sum(1 for m, i, _ in cells if (m, i) == ("minilm-l6", "order 3")) == len(default.seeds)
    with pytest.raises(ValueError, match="unknown profile"):
        settings("syntax", "huge")
    for override, names in (({"num_train": 0}, ["SyntaxSettings.num_train"]),
                            ({"full_grid": ("bert-base-cased",)}, ["SyntaxSettings.full_grid", "bert-base-cased"]),
                            ({"basic_inputs": ("order 9",)}, ["SyntaxSettings.basic_inputs[0]", "order 9"])):
        with pytest.raises(ValueError) as refused:
            settings("syntax", "default", **override)
        assert all(name in str(refused.value) for name in names), refused.value


def test_gap_and_order_tables_from_a_hand_made_grid():
    import pandas as pd

    from chapter_code.syntax import baseline_table, summary, syntax_verdicts
    from olacore.report import HOLDS, WEAK

    rows = []
    for seed, (o1, o3, roll) in enumerate([(60, 50, 40), (62, 55, 45), (58, 59, 41)]):
        rows += [{"model": "m", "input": "order 1", "seed": seed, "uas": o1, "las": o1 / 2},
                 {"model": "m", "input": "order 3", "seed": seed, "uas": o3, "las": o3 / 2},
                 {"model": "m", "input": "rollout", "seed": seed, "uas": roll, "las": roll / 2}]
    rows.append({"model": "m", "input": "distance", "seed": 0, "uas": 30, "las": 8})
    table = pd.DataFrame(rows)
    assert baseline_table(table, ["m"]).loc[0, "order 1 - distance"] == pytest.approx(30.0)
    compared = syntax_verdicts(table).set_index("other")
    assert compared.loc["order 3", "mean_diff"] == pytest.approx((10 + 7 - 1) / 3)
    assert compared.loc["order 3", "verdict"] == WEAK and compared.loc["rollout", "verdict"] == HOLDS
    assert compared.loc["rollout", "min_diff"] == pytest.approx(17.0) and compared.loc["rollout", "seeds"] == 3
    assert compared.loc["distance", "seeds"] == 1 and compared.loc["distance", "goal_met"]
    means = summary(table).set_index("input")
    assert means.loc["order 1", "uas_mean"] == pytest.approx(60.0) and means.loc["order 1", "uas_count"] == 3
    assert means.loc["order 1", "uas_std"] == pytest.approx(2.0)


def test_an_adapter_refuses_data_on_another_grid(tmp_path):
    store = TensorStore(tmp_path)
    train, dev = _toy_parsing(16, 9), _toy_parsing(8, 10)
    adapter = train_adapters([make_job(train, dev, InputSpec(("order1",)), SMALL, TrainConfig(epochs=1))],
                             store=store, progress=False)[0]
    words = build_task_data("dp", "toy", [_ud()], records=[_record()], grid="words")
    with pytest.raises(ValueError, match="grid"):
        adapter.evaluate(words)


def test_adapter_key_changes_with_everything_that_changes_the_weights():
    train, dev = _toy_parsing(8, 1), _toy_parsing(4, 2)
    spec = InputSpec(("order1",))

    def key(**change):
        options = {"train": train, "dev": dev, "spec": spec, "adapter": SMALL, "training": TrainConfig(epochs=1),
                   "seed": 0, **change}
        return make_job(options.pop("train"), options.pop("dev"), options.pop("spec"), **options).key()

    base = key()
    assert key() == base and make_job(train, dev, spec, SMALL, TrainConfig(epochs=1), model="a label").key() == base
    changed = {
        "seed": key(seed=1),
        "data": key(train=_toy_parsing(8, 3)),
        "dev data": key(dev=_toy_parsing(4, 4)),
        "input": key(spec=InputSpec(("order1", "order2"))),
        "adapter config": key(adapter=replace(SMALL, mlp_dropout=0.5)),
        "training": key(training=TrainConfig(epochs=2)),
    }
    changed["backbone"] = key(adapter=replace(SMALL, backbone="package", local_mix=False))
    keys = [base, *changed.values()]
    assert len(set(keys)) == len(keys), changed


def test_dev_curves_script_reads_the_trained_adapters_curves(tmp_path, capsys):
    """scripts/dev_curves.py (the compute page's "what epochs buy"): it finds a trained adapter in
    a cache and reports the epoch its checkpoint was chosen at, as the adapter's own record says."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "scripts" / "dev_curves.py"
    spec = importlib.util.spec_from_file_location("dev_curves", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    train, dev = _toy_parsing(24, 21), _toy_parsing(8, 22)
    job = make_job(train, dev, InputSpec(("order1",)), SMALL, TrainConfig(epochs=4, lr=5e-3, batch_size=8), seed=0)
    adapter = train_adapters([job], store=TensorStore(tmp_path / "tensors"), progress=False)[0]
    (tmp_path / "tensors" / "zz").mkdir()
    (tmp_path / "tensors" / "zz" / "damaged.safetensors").write_bytes(b"not a safetensors file")
    assert script.main(["--cache", str(tmp_path), "--fewer", "2"]) == 0
    printed = capsys.readouterr()
    assert "damaged.safetensors" in printed.err  # skipped and named, not fatal
    row = next(line for line in printed.out.splitlines() if line.startswith("| dp |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1:5] == ["24", "4", "1", str(adapter.record["best_epoch"])]
    kept = int(adapter.record["best_epoch"] <= 2)
    assert cells[6].startswith(f"2: {kept}/1,")
    with pytest.raises(SystemExit):
        script.main(["--cache", str(tmp_path / "nowhere")])
    assert "OLACORE_CACHE" in capsys.readouterr().err
