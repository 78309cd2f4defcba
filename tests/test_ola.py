"""The OLA identities of paper section 3.1 (chapter 01's derivation), on random row-stochastic maps."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings, strategies as st

from conftest import random_attention
from olacore import (
    attention_rollout,
    order_level_attention,
    order_level_attention_bruteforce,
    rollout_from_orders,
)

shapes = st.tuples(
    st.integers(1, 3),  # batch
    st.integers(1, 7),  # layers N
    st.integers(1, 6),  # tokens T
    st.booleans(),  # causal
    st.integers(0, 2**31 - 1),  # seed
)


@settings(max_examples=60, deadline=None)
@given(shapes, st.data())
def test_recurrence_equals_enumeration(shape, data):
    batch, layers, size, causal, seed = shape
    max_order = data.draw(st.integers(0, layers))
    attn = random_attention(torch.Generator().manual_seed(seed), batch, layers, size, causal)
    fast = order_level_attention(attn, max_order)
    slow = order_level_attention_bruteforce(attn, max_order)
    assert fast.shape == (batch, max_order + 1, size, size)
    torch.testing.assert_close(fast, slow, rtol=1e-10, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(shapes)
def test_rollout_is_binomial_mix_of_orders(shape):
    batch, layers, size, causal, seed = shape
    attn = random_attention(torch.Generator().manual_seed(seed), batch, layers, size, causal)
    orders = order_level_attention(attn, layers)
    torch.testing.assert_close(rollout_from_orders(orders, layers), attention_rollout(attn))
    # unnormalised form: prod (A + I) = sum_k C(N, k) OLA_k
    eye = torch.eye(size, dtype=attn.dtype)
    product = eye.expand(batch, size, size)
    for n in range(layers):
        product = (attn[:, n] + eye) @ product
    weights = torch.tensor([math.comb(layers, k) for k in range(layers + 1)], dtype=attn.dtype)
    torch.testing.assert_close((weights.view(-1, 1, 1) * orders).sum(1), product)


@settings(max_examples=40, deadline=None)
@given(shapes)
def test_orders_are_row_stochastic_and_causal_stays_lower_triangular(shape):
    batch, layers, size, causal, seed = shape
    attn = random_attention(torch.Generator().manual_seed(seed), batch, layers, size, causal)
    orders = order_level_attention(attn, layers)
    torch.testing.assert_close(orders.sum(-1), torch.ones(batch, layers + 1, size, dtype=attn.dtype))
    assert (orders >= 0).all()
    if causal:
        assert torch.equal(orders, orders.tril())
    torch.testing.assert_close(orders[:, 0], torch.eye(size, dtype=attn.dtype).expand(batch, size, size))
    torch.testing.assert_close(orders[:, 1], attn.mean(1))


def test_deep_model_high_order_stays_finite_and_stochastic_in_float32():
    # C(64, 32) ~ 1.8e18 would overflow float32 sums if the products were not normalised.
    attn = random_attention(torch.Generator().manual_seed(0), 2, 64, 8, True, dtype=torch.float32)
    orders = order_level_attention(attn, 64)
    assert torch.isfinite(orders).all()
    torch.testing.assert_close(orders.sum(-1), torch.ones(2, 65, 8), atol=1e-4, rtol=0)
    reference = order_level_attention(attn.double(), 64)
    torch.testing.assert_close(orders.double(), reference, atol=1e-5, rtol=0)


def test_extra_leading_dimensions_and_dtype_kept():
    attn = random_attention(torch.Generator().manual_seed(1), 6, 4, 5, False, dtype=torch.float32)
    attn = attn.view(2, 3, 4, 5, 5)
    orders = order_level_attention(attn, 2)
    assert orders.shape == (2, 3, 3, 5, 5) and orders.dtype == torch.float32
    assert attention_rollout(attn).shape == (2, 3, 5, 5)


@pytest.mark.parametrize(
    "tensor, max_order, error, message",
    [
        (torch.rand(3, 4, 5), 1, ValueError, "square"),
        (torch.rand(4, 4), 1, ValueError, "shape"),
        (torch.rand(3, 4, 4), -1, ValueError, "between 0"),
        (torch.rand(3, 4, 4), 4, ValueError, "N=3"),
        (torch.full((3, 4, 4), float("nan")), 1, ValueError, "NaN"),
        (torch.ones(3, 4, 4, dtype=torch.int64), 1, TypeError, "floating"),
        (torch.rand(3, 4, 4), 1.0, TypeError, "int"),
        (torch.rand(3, 4, 4), None, TypeError, "max_order"),
        (torch.rand(3, 4, 4), True, TypeError, "max_order"),
    ],
)
@pytest.mark.parametrize("ola", [order_level_attention, order_level_attention_bruteforce])
def test_bad_input_is_refused_with_a_plain_message(ola, tensor, max_order, error, message):
    with pytest.raises(error, match=message):
        ola(tensor, max_order)


def test_rollout_from_orders_needs_all_orders():
    attn = random_attention(torch.Generator().manual_seed(3), 1, 4, 3, False)
    with pytest.raises(ValueError, match="all 5 orders"):
        rollout_from_orders(order_level_attention(attn, 2), 4)


def test_mass_profile_on_hand_made_maps():
    from olacore.ola import mass_profile

    identity = torch.eye(4)
    sink = torch.zeros(4, 4)
    sink[:, 0] = 1.0
    profile = mass_profile(torch.stack([identity, sink]))
    assert profile["mass on the diagonal"].tolist() == pytest.approx([1.0, 0.25])
    assert profile["mass on first token"].tolist() == pytest.approx([0.25, 1.0])
    # the sink map: rows 0..3 put all mass at distance 0, 1, 2, 3 -> mean 1.5
    assert profile["mean |i - j| (tokens)"].tolist() == pytest.approx([0.0, 1.5])
    with pytest.raises(ValueError, match="maps"):
        mass_profile(torch.ones(3, 4))
