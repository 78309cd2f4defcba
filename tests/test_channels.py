"""The channel vocabulary (olacore.channels), and the promise of issue #8: a new kind of map is one
entry in the vocabulary plus one producer, and every consumer takes it unchanged."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from olacore import channels, pipeline
from olacore.texts import WordText
from olacore.channels import Channel, channel, label, order_channels
from olacore.maps import make_maps
from olacore.pipeline import token_maps
from olacore.augment import BatchAugmentation
from olacore.proxy import ProxyConfig, leave_one_out, proxy_experiment
from olacore.similarity import retrieval_table
from olacore.store import TensorStore


def _record(orders: int = 3, layers: int = 4, size: int = 5):
    generator = torch.Generator().manual_seed(0)
    return SimpleNamespace(orders=torch.rand(orders, size, size, generator=generator),
                           attentions=torch.rand(layers, size, size, generator=generator),
                           rollout=torch.rand(size, size, generator=generator))


def test_orders_layers_and_rollout_name_their_source_and_map():
    record = _record()
    order = channel("order2")
    assert (order.name, order.label, order.source, order.order) == ("order2", "order 2", "ola", 2)
    assert torch.equal(order.take(record), record.orders[2])
    layer = channel("layer3")
    assert (layer.label, layer.source, layer.order) == ("layer 3", "attention", None)
    assert torch.equal(layer.take(record), record.attentions[2])  # layer 1 is nearest the input
    assert torch.equal(channel("rollout").take(record), record.rollout) and channel("rollout").source == "ola"
    assert label("order12") == "order 12" and label("rollout") == "rollout"
    assert channel(order) == order
    with pytest.raises(ValueError, match="max_order"):
        channel("order3").take(record)
    with pytest.raises(ValueError, match="layer 5"):
        channel("layer5").take(record)


@pytest.mark.parametrize("name", ["order", "order-1", "layer0", "Order1", "order 1", ""])
def test_unknown_names_are_refused_with_the_vocabulary(name):
    with pytest.raises(ValueError, match="vocabulary") as info:
        channel(name)
    assert repr(name) in str(info.value)


def test_channel_lists_and_order_names_are_checked():
    assert [c.name for c in channels.channels("order1")] == ["order1"]
    assert [c.name for c in channels.channels(["rollout", "order2"])] == ["rollout", "order2"]
    with pytest.raises(ValueError, match="repeated"):
        channels.channels(["order1", "rollout", "order1"])
    with pytest.raises(ValueError, match="no channel"):
        channels.channels([])
    assert order_channels(1, 2, 10) == ("order1", "order2", "order10")


# ------------------------------------------------------------------------------------------
# Adding a channel: one vocabulary entry, one producer, nothing in the consumers
# ------------------------------------------------------------------------------------------

TEXTS = [
    "The cat sat on the mat while the dog slept.",
    "Extraordinarily long words appear here rather often, indeed.",
    "A b c d e f g h i j k.",
    "Tokenizers split unbelievable words into several pieces.",
    "Short words only: I am, we go, it is so.",
    "Numbers like 12345 and 7 are words too.",
]


def _word_length_source(model, texts, wanted, *, workers, device, progress, store):
    """A made-up producer: attention to a word grows with its length and falls with distance.

    Tokens are a special token and the words (:meth:`WordText.of`); the "model" name sets the
    decay, so two toy models give similar, not equal, maps of a text.
    """
    decay = {"toy-a": 1.0, "toy-b": 1.3, "toy-c": 0.8}[model]
    records = []
    for text in texts:
        words = WordText.of(text)
        lengths = torch.tensor([1.0] + [float(len(w)) for w in words.words])
        position = torch.arange(len(lengths), dtype=torch.float32)
        grid = lengths[None, :] * torch.exp(-decay * (position[:, None] - position[None, :]).abs() / 3)
        records.append(SimpleNamespace(text=text, tokens=["<s>", *words.words], offsets=[(0, 0), *words.spans],
                                       is_causal=False, grid=grid / grid.sum(-1, keepdim=True)))
    return records


def test_a_new_channel_needs_one_entry_and_one_producer(monkeypatch, tmp_path, one_thread):
    # the whole extension (in the package: one line in channels._REGISTRY, one in pipeline._SOURCES):
    monkeypatch.setitem(channels._REGISTRY, "wordlength",
                        Channel("wordlength", "word length", "toy", lambda record: record.grid))
    monkeypatch.setitem(pipeline._SOURCES, "toy", _word_length_source)

    assert label("wordlength") == "word length"
    with pytest.raises(ValueError, match="wordlength"):  # the vocabulary the error lists
        channel("wordlenght")
    # token_maps
    tokens = {m: token_maps(m, TEXTS, ["wordlength"]) for m in ("toy-a", "toy-b", "toy-c")}
    first = tokens["toy-a"][0]
    assert first.channels == ("wordlength",) and first.model == "toy-a" and first.tokens[0] == "<s>"
    assert torch.equal(first.maps[0], _word_length_source("toy-a", TEXTS[:1], [], workers=1, device=None,
                                                          progress=False, store=None)[0].grid)
    # make_maps, every alignment
    words = [WordText.of(t) for t in TEXTS]
    for align in ("resize", "words", "first"):
        maps = make_maps(tokens["toy-a"], align=align, sinks="raw+clean", size=16, words=words)
        assert maps.labels()[:1] == ["word length (raw)"] and maps.select("wordlength").channels == ("wordlength",)
    # raw maps: the official sink rule flags every tie with a row maximum, and these toy rows have ties
    resized = {m: make_maps(t, align="resize", sinks="raw", size=16) for m, t in tokens.items()}
    # retrieval_table
    table = retrieval_table(resized)
    assert set(table["channel"]) == {"wordlength"} and len(table) == 6
    assert (table["hits@1"] == 1.0).all()  # the toy models agree on every text
    # proxy_experiment
    config = ProxyConfig(iterations=4, batch_size=4, lr=0.05, width=4, eval_every=2,
                         augment=BatchAugmentation(noise_p=0.0, sink_p=0.0))
    runs, histories = proxy_experiment(resized, leave_one_out(["toy-a", "toy-b"]), [("wordlength",)], config, [0],
                                       device="cpu", progress=False, store=TensorStore(tmp_path / "proxy"))
    assert runs["channels"].tolist() == ["word length", "word length"] and runs["test_acc"].notna().all()
    assert set(histories) == {("word length", "toy-b", 0), ("word length", "toy-a", 0)}


@pytest.mark.slow
def test_a_channel_of_an_existing_source_needs_no_producer(tmp_path, monkeypatch):
    """ "transpose1" (order 1, keys and queries swapped) reads the OLA source as it is."""
    monkeypatch.setitem(channels._REGISTRY, "transpose1",
                        Channel("transpose1", "order 1 transposed", "ola", lambda record: record.orders[1].T))
    store = TensorStore(tmp_path)
    texts = TEXTS[:4]
    tokens = {m: token_maps(m, texts, ["order1", "transpose1"], store=store, progress=False, device="cpu")
              for m in ("minilm-l6", "mpnet-base")}
    for item in tokens["minilm-l6"]:
        assert torch.equal(item.maps[1], item.maps[0].T)
    resized = {m: make_maps(t, align="resize", sinks="raw", size=16) for m, t in tokens.items()}
    assert resized["mpnet-base"].labels() == ["order 1", "order 1 transposed"]
    table = retrieval_table(resized)
    assert table["channel"].tolist() == ["order1", "transpose1"] * 2
