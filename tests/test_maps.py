"""Map alignment: resize, word pooling, sink cleaning (DESIGN.md section 2)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings, strategies as st

from conftest import random_attention
from olacore.maps import clean_sinks, mirror_causal, pool_to_words, resize_maps, word_assignment


def test_resize_shape_and_constant_map_stays_constant():
    maps = torch.full((2, 3, 17, 17), 0.25)
    out = resize_maps(maps, 50)
    assert out.shape == (2, 3, 50, 50)
    torch.testing.assert_close(out, torch.full_like(out, 0.25))


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
    with pytest.raises(ValueError, match="overlap no token"):
        word_assignment([(0, 3)], [(0, 3), (4, 7)])


def test_clean_sinks_removes_the_sink_column_and_renormalises():
    size = 8
    maps = torch.full((size, size), 0.02).tril()
    maps[:, 0] = 1.0
    maps = maps / maps.sum(-1, keepdim=True)
    cleaned = clean_sinks(maps, causal=True)
    assert torch.all(cleaned[1:, 0] == 0)
    assert torch.all(cleaned[0] == 0)  # the first causal row only had its sink
    torch.testing.assert_close(cleaned[1:].sum(-1), torch.ones(size - 1))
    assert torch.equal(cleaned, cleaned.tril())


def test_clean_sinks_bidirectional_uses_whole_row():
    maps = torch.tensor([[0.1, 0.2, 0.7], [0.3, 0.3, 0.4], [0.25, 0.5, 0.25]])
    cleaned = clean_sinks(maps, causal=False)
    assert cleaned[0, 2] == 0 and cleaned[2, 1] == 0
    torch.testing.assert_close(cleaned.sum(-1), torch.ones(3))


def test_mirror_causal_is_symmetric():
    maps = torch.rand(3, 5, 5).tril()
    mirrored = mirror_causal(maps)
    torch.testing.assert_close(mirrored, mirrored.transpose(-1, -2))
    torch.testing.assert_close(mirrored.tril(), maps)


def test_word_spans_keep_invisible_characters_with_their_word():
    from olacore.maps import word_spans

    text = "I \u2764\ufe0f caf\u0065\u0301 \u200b ok."
    assert [text[a:b] for a, b in word_spans(text)] == ["I", "\u2764\ufe0f", "cafe\u0301", "ok", "."]
