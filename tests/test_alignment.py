"""Aligning token maps (olacore.texts): resize, word pooling, first sub-tokens, word spans."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings, strategies as st
from PIL import Image

from conftest import random_attention
from olacore.texts import (
    WordText,
    first_subtoken_maps,
    first_tokens,
    pool_to_words,
    resize_maps,
    word_assignment,
    word_spans,
)

SIZE = 50
# torch's antialiased bilinear and Pillow's BILINEAR agree to float32 rounding (measured: at most
# 3.2e-7 on maps with entries up to ~0.5); a resize without antialiasing misses by ~1e-1.
PIL_ATOL = 1e-6


def _pil_resize(a: np.ndarray, size: int) -> np.ndarray:
    """The independent reference: Pillow's bilinear resize of a float32 ("F" mode) image."""
    return np.asarray(Image.fromarray(a.astype(np.float32)).resize((size, size), Image.BILINEAR))


def _peaky_map(size: int, seed: int, causal: bool) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    maps = torch.rand(size, size, generator=generator, dtype=torch.float64) ** 4
    if causal:
        maps = maps.tril()
    return (maps / maps.sum(-1, keepdim=True)).float()


@pytest.mark.parametrize("tokens", [17, 37, 73, 131])  # up- and downsampling
@pytest.mark.parametrize("causal", [False, True])
def test_resize_matches_pillow_bilinear(tokens, causal):
    maps = _peaky_map(tokens, seed=tokens, causal=causal)
    reference = _pil_resize(maps.numpy(), SIZE)
    ours = resize_maps(maps, SIZE)
    assert ours.shape == (SIZE, SIZE) and ours.dtype == torch.float32
    np.testing.assert_allclose(ours.numpy(), reference, atol=PIL_ATOL, rtol=0)
    # the check can fail: a nearest-neighbour resize always misses it, and so does a bilinear
    # resize without antialiasing whenever the map shrinks
    flat = maps[None, None]
    nearest = F.interpolate(flat, size=(SIZE, SIZE), mode="nearest")[0, 0].numpy()
    assert np.abs(nearest - reference).max() > 100 * PIL_ATOL
    plain = F.interpolate(flat, size=(SIZE, SIZE), mode="bilinear", align_corners=False, antialias=False)[0, 0].numpy()
    if tokens > SIZE:
        assert np.abs(plain - reference).max() > 100 * PIL_ATOL


def test_resize_keeps_leading_dimensions_and_each_map_apart():
    maps = torch.stack([_peaky_map(29, seed, causal=seed % 2 == 0) for seed in range(6)]).view(2, 3, 29, 29)
    out = resize_maps(maps, SIZE)
    assert out.shape == (2, 3, SIZE, SIZE)
    for index in np.ndindex(2, 3):
        np.testing.assert_allclose(out[index].numpy(), _pil_resize(maps[index].numpy(), SIZE), atol=PIL_ATOL, rtol=0)
    constant = resize_maps(torch.full((2, 17, 17), 0.25), SIZE)
    torch.testing.assert_close(constant, torch.full_like(constant, 0.25))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=6), st.booleans(), st.integers(0, 10_000))
def test_word_pooling_keeps_rows_stochastic(tokens_per_word, causal, seed):
    # words of 3 characters separated by spaces; each word split into its tokens, plus specials
    offsets, spans, position = [(0, 0)], [], 0
    for count in tokens_per_word:
        spans.append((position, position + 3 * count))
        offsets += [(position + 3 * i, position + 3 * (i + 1)) for i in range(count)]
        position += 3 * count + 1
    offsets.append((0, 0))
    maps = random_attention(torch.Generator().manual_seed(seed), 1, 2, len(offsets), causal)[0]
    pooled = pool_to_words(maps, offsets, spans)
    assert pooled.shape == (2, len(spans), len(spans))
    torch.testing.assert_close(pooled.sum(-1), torch.ones(2, len(spans), dtype=maps.dtype))
    if causal:
        assert torch.equal(pooled, pooled.tril())


def test_word_pooling_sums_keys_and_averages_queries():
    # tokens: [BOS] "ab" "cd" | "ef"   words: "abcd" "ef"
    offsets = [(0, 0), (0, 2), (2, 4), (5, 7)]
    maps = torch.tensor(
        [[1.0, 0, 0, 0], [0.5, 0.5, 0, 0], [0.2, 0.2, 0.6, 0], [0.1, 0.3, 0.2, 0.4]]
    )
    pooled = pool_to_words(maps, offsets, [(0, 4), (5, 7)])
    # a word's row: mean of its query rows, key tokens summed per word, BOS mass dropped, renormalised
    # word 0: mean of rows 1, 2 = [0.35, 0.35, 0.3, 0] -> keys per word [0.35 + 0.3, 0]
    expected_row0 = torch.tensor([0.65, 0.0])
    # word 1: row 3 = [0.1, 0.3, 0.2, 0.4] -> keys per word [0.3 + 0.2, 0.4]
    expected_row1 = torch.tensor([0.5, 0.4])
    torch.testing.assert_close(pooled[0], expected_row0 / expected_row0.sum())
    torch.testing.assert_close(pooled[1], expected_row1 / expected_row1.sum())


def test_token_spanning_two_words_is_shared_by_overlap():
    share = word_assignment([(0, 4), (4, 6)], [(0, 2), (2, 6)])
    torch.testing.assert_close(share, torch.tensor([[0.5, 0.0], [0.5, 1.0]], dtype=torch.float64))


def test_word_without_token_is_an_error():
    with pytest.raises(ValueError, match="token"):
        word_assignment([(0, 3)], [(0, 3), (4, 7)])


def test_first_subtoken_maps_take_first_token_rows_and_columns():
    # text "ab cd": tokens [BOS] "a" "b" " cd" -> word 0 first token 1, word 1 first token 3
    offsets = [(0, 0), (0, 1), (1, 2), (3, 5)]
    spans = [(0, 2), (3, 5)]
    maps = torch.arange(16, dtype=torch.float32).view(1, 4, 4)
    assert first_tokens(word_assignment(offsets, spans)) == [1, 3]
    out = first_subtoken_maps(maps, offsets, spans)
    assert torch.equal(out[0], torch.tensor([[5.0, 7.0], [13.0, 15.0]]))
    # the two words of one multi-word token share its first token
    assert first_tokens(word_assignment(offsets, [(0, 2), (0, 2), (3, 5)])) == [1, 1, 3]


def test_word_spans_keep_invisible_characters_with_their_word():
    text = "I \u2764\ufe0f caf\u0065\u0301 \u200b ok."
    assert [text[a:b] for a, b in word_spans(text)] == ["I", "\u2764\ufe0f", "cafe\u0301", "ok", "."]


def test_word_text_of_a_free_text():
    item = WordText.of("Don't panic, it's 4.5 km.")
    assert item.words == ("Don't", "panic", ",", "it's", "4", ".", "5", "km", ".")
    assert [item.text[a:b] for a, b in item.spans] == list(item.words)


@pytest.mark.parametrize("text, words", [
    # issue #13: a soft hyphen inside a word split it into two identical rows
    ("The co\u00adoperation works.", ["The", "co\u00adoperation", "works", "."]),
    # the same kind: every in-word format character or mark, wherever it sits in the word
    ("cafe\u0301s are open", ["cafe\u0301s", "are", "open"]),  # a combining accent mid-word
    ("\u0915\u093f\u0924\u093e\u092c \u0939\u0948", ["\u0915\u093f\u0924\u093e\u092c", "\u0939\u0948"]),  # Hindi vowel signs (Mc)
    ("mi\u200cgo\u2060ing x\ufeffy", ["mi\u200cgo\u2060ing", "x\ufeffy"]),  # ZWNJ, word joiner, ZWNBSP
    ("a\u200eb", ["a\u200eb"]),  # a direction mark
    ("\U0001F468\u200d\U0001F469 hi\U0001F44D\U0001F3FD", ["\U0001F468\u200d\U0001F469", "hi", "\U0001F44D\U0001F3FD"]),
    # what still separates: the zero-width space, controls, spaces, punctuation
    ("a\u200bb c\x07d", ["a", "b", "c", "d"]),
    ("\u00adleading and trailing\u00ad", ["leading", "and", "trailing\u00ad"]),
    ("Don't panic, it's 4.5 km.", ["Don't", "panic", ",", "it's", "4", ".", "5", "km", "."]),
    ("rock 'n' roll", ["rock", "'", "n", "'", "roll"]),
])
def test_word_spans_never_split_a_word_at_a_character_that_belongs_inside_it(text, words):
    spans = word_spans(text)
    assert [text[a:b] for a, b in spans] == words
    assert all(a < b for a, b in spans) and spans == sorted(spans)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(categories=("Ll", "Lu", "Nd")), min_size=1, max_size=6), min_size=1, max_size=5),
       st.sampled_from(["\u00ad", "\u200c", "\u200d", "\u2060", "\u0301", "\u093e", "\ufe0f"]))
def test_inserting_in_word_characters_never_changes_the_number_of_words(words, glue):
    plain = " ".join(words)
    glued = " ".join(word[:1] + glue + word[1:] for word in words)
    assert len(word_spans(glued)) == len(word_spans(plain)) == len(words)
