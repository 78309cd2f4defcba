"""The CUDA path: every computation that takes a device gives the CPU's result on a GPU.

Skipped on machines without CUDA (``make gpu-check`` runs them where there is one, and
reports that they were skipped where there is not).
"""

from __future__ import annotations

import pytest
import torch

from conftest import random_attention
from olacore.ola import attention_rollout, order_level_attention
from olacore.similarity import pairwise_ssim

pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]


@pytest.mark.parametrize("dtype, tolerance", [(torch.float32, 1e-5), (torch.float64, 1e-12)])
def test_ola_and_rollout_on_cuda_equal_cpu(dtype, tolerance):
    attn = random_attention(torch.Generator().manual_seed(2), 3, 16, 40, True, dtype=dtype)
    for function in (lambda a: order_level_attention(a, 3), attention_rollout):
        on_gpu = function(attn.cuda()).cpu()
        assert on_gpu.dtype == dtype
        torch.testing.assert_close(on_gpu, function(attn), atol=tolerance, rtol=0)


@pytest.mark.parametrize("dtype, tolerance", [(torch.float32, 1e-5), (torch.float64, 1e-12)])
def test_pairwise_ssim_on_cuda_equals_cpu(dtype, tolerance):
    generator = torch.Generator().manual_seed(3)
    queries = torch.rand(7, 50, 50, generator=generator, dtype=dtype) ** 4
    gallery = torch.rand(9, 50, 50, generator=generator, dtype=dtype) ** 4
    for data_range in (1.0, None):
        on_gpu = pairwise_ssim(queries.cuda(), gallery.cuda(), data_range).cpu()
        torch.testing.assert_close(on_gpu, pairwise_ssim(queries, gallery, data_range), atol=tolerance, rtol=0)


@pytest.mark.slow
def test_extraction_on_cuda_equals_cpu():
    from olacore.extraction import extract_attention
    from olacore.loading import load_model

    texts = ["The committee approved the new budget.", "Why would anyone buy a car that breaks down?"]
    on_cpu = extract_attention(load_model("minilm-l6", device="cpu"), texts, progress=False)
    on_gpu = extract_attention(load_model("minilm-l6", device="cuda"), texts, progress=False)
    for a, b in zip(on_cpu, on_gpu):
        assert a.tokens == b.tokens
        torch.testing.assert_close(b.attentions, a.attentions, atol=1e-5, rtol=0)


def test_one_adapter_training_epoch_runs_on_cuda():
    from test_toa import SMALL, _toy_parsing

    from olacore.toa.data import InputSpec
    from olacore.toa.train import TrainConfig, TrainedAdapter, make_job

    train, dev = _toy_parsing(16, 0), _toy_parsing(8, 1)
    job = make_job(train, dev, InputSpec(("order1",)), SMALL, TrainConfig(epochs=1, device="cuda"), seed=0)
    weights, record = job.train()
    assert all(torch.isfinite(w).all() for w in weights.values())
    assert TrainedAdapter.from_stored(weights, record).evaluate(dev)["uas"] >= 0
