"""olacore.workers: jobs in spawned processes, results in order; tensors travel by value."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from olacore.workers import by_value, run_in_processes


def test_results_come_back_in_job_order():
    assert run_in_processes(math.sqrt, [16.0, 1.0, 9.0], workers=2, progress=False) == [4.0, 1.0, 3.0]
    assert run_in_processes(math.sqrt, [], workers=2, progress=False) == []
    with pytest.raises(ValueError, match="workers"):
        run_in_processes(math.sqrt, [1.0], workers=0)


def test_by_value_round_trips_exactly():
    tensors = [torch.rand(3, 4, 4), torch.arange(5, dtype=torch.float64)]
    arrays = by_value(tensors)
    assert all(isinstance(a, np.ndarray) for a in arrays)
    for tensor, array in zip(tensors, arrays):
        assert torch.equal(torch.as_tensor(array), tensor)
