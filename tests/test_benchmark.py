"""The FLOP-accounted benchmark (benchmarks/measure.py, benchmarks/bench_phases.py): counts against hand formulas, the
table's contents, and the quick bench end to end. Rates are reported, never asserted."""

from __future__ import annotations

import importlib.util
import json
import math
import re
import sys

import pytest
import torch

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
from measure import (PHASES, PhaseCost, attainable_rate, bench_table, count_flops, counted_products,  # noqa: E402
                     measure_phase)


def load_bench():
    """``benchmarks/bench_phases.py`` as a module (a script, not part of the package)."""
    spec = importlib.util.spec_from_file_location("bench_phases", ROOT / "benchmarks" / "bench_phases.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _table_rows(text: str) -> list[list[str]]:
    return [[cell.strip() for cell in line.split("|")[1:-1]] for line in text.splitlines()
            if line.startswith("| ") and not line.startswith("| phase")]


def test_linear_layer_flops_are_two_m_n_k_forward_and_twice_that_backward():
    m, k, n = 7, 13, 5
    layer = torch.nn.Linear(k, n)
    x = torch.randn(m, k, requires_grad=True)
    assert count_flops(lambda: layer(x)) == 2 * m * n * k
    # backward: the input's gradient (m x n @ n x k) and the weight's (n x m @ m x k), each 2 m n k
    assert count_flops(lambda: layer(x).sum().backward()) == 3 * 2 * m * n * k


def test_convolution_flops_are_two_per_multiply_add():
    batch, c_in, c_out, size, kernel = 2, 3, 4, 6, 3
    conv = torch.nn.Conv2d(c_in, c_out, kernel, padding=1, bias=False)
    x = torch.randn(batch, c_in, size, size)
    assert count_flops(lambda: conv(x)) == 2 * batch * c_out * c_in * kernel**2 * size**2


def test_measure_phase_counts_once_and_times_on_one_thread():
    a, b = torch.randn(64, 32), torch.randn(32, 16)
    threads = []

    def unit():
        threads.append(torch.get_num_threads())
        torch.mm(a, b)

    before = torch.get_num_threads()
    cost = measure_phase("extraction", "a product", unit, repeats=2)
    assert cost.flops == 2 * 64 * 32 * 16
    assert set(threads) == {1} and torch.get_num_threads() == before
    assert cost.cpu_seconds >= 0 and cost.wall_seconds >= 0


@pytest.mark.parametrize("unit", ["linear", "convolution", "attention", "inference"])
def test_the_replayed_products_carry_every_counted_flop(unit):
    torch.manual_seed(0)
    if unit in ("linear", "inference"):
        layers, x = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8)), torch.randn(5, 16)
    elif unit == "convolution":
        layers, x = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.Conv2d(4, 4, 3)), torch.randn(2, 3, 9, 9)
    else:
        layers, x = torch.nn.MultiheadAttention(16, 2, batch_first=True), torch.randn(3, 7, 16)
    x.requires_grad_(unit != "inference")

    def step():
        if unit == "inference":  # composites (linear) reach the counter whole: their products must still be found
            with torch.inference_mode():
                layers(x)
            return
        out = layers(x) if unit != "attention" else layers(x, x, x)[0]
        out.sum().backward()

    replayed = counted_products(step)
    assert sum(times for *_, times in replayed) >= len(replayed) > 0
    assert sum(times * count_flops(lambda: func(*args, **kwargs)) for func, args, kwargs, times in replayed) \
        == count_flops(step)


def test_attainable_rate_is_a_positive_rate_and_refuses_bad_sizes():
    assert 0 < attainable_rate(64, repeats=1) < math.inf
    with pytest.raises(ValueError, match="size"):
        attainable_rate(0)


def test_table_has_a_row_per_unit_with_its_rate_and_share():
    rows = [PhaseCost(phase, f"unit {i}", (i + 1) * 10**9, 0.5, 0.6, 0.25) for i, phase in enumerate(PHASES)]
    record = {"measured_at": "2026-12-03 16:00", "machine": "Test CPU, 2 cores", "torch": "2.x",
              "load_average": 0.5, "note": "Shared with a test.", "quick": False, "repeats": 2,
              "attainable_gflops": 20.0, "attainable_how": "a product", "rows": [vars(r) for r in rows]}
    text = bench_table(record)
    table = _table_rows(text)
    assert [r[0] for r in table] == list(PHASES)
    for i, (_, unit, gflop, cpu, rate, share, alone, share_alone) in enumerate(table):
        assert float(gflop) == i + 1 and float(cpu) == 0.5 and float(rate) == 2 * (i + 1)
        assert float(share.rstrip("%")) == pytest.approx(100 * 2 * (i + 1) / 20.0)
        assert float(alone) == 4 * (i + 1) and share_alone == "50%"
    assert "Shared with a test." in text and "Test CPU, 2 cores" in text and "20.0 GFLOP/s" in text


def test_quick_bench_runs_every_phase_and_writes_its_record(tmp_path):
    bench = load_bench()
    assert bench.main(["--quick", "--out", str(tmp_path), "--note", "Machine shared."]) == 0
    record = json.loads((tmp_path / "bench.json").read_text())
    assert {row["phase"] for row in record["rows"]} == set(PHASES)
    assert record["attainable_gflops"] > 0
    for row in record["rows"]:
        cost = PhaseCost(**row)
        assert cost.flops > 0 and cost.cpu_seconds > 0 and cost.products_seconds > 0
        assert 0 < cost.share(record["attainable_gflops"]) <= 1, row
    table = _table_rows((tmp_path / "bench.md").read_text())
    assert {r[0] for r in table} == set(PHASES)
    assert all(re.fullmatch(r"\d+%", r[5]) and 0 < int(r[5][:-1]) <= 100 for r in table)
