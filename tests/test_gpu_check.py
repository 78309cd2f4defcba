"""``make gpu-check`` on a machine without CUDA: the CPU parts run, one line says CUDA is absent,
the report is written and the exit status is 0 (scripts/gpu_check.py)."""

from __future__ import annotations

import importlib.util
import json

import pytest
import torch

from conftest import ROOT


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the path of a machine without CUDA")
def test_gpu_check_without_cuda_runs_the_cpu_parts(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "scripts" / "gpu_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--out", str(tmp_path / "report.json")]) == 0
    assert "CUDA is absent" in capsys.readouterr().out
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["cuda"] is False and report["gpu"] is None
    assert report["cuda_tests"]["exit_status"] in (0, 5)  # all skipped (0) or none collected (5)
    assert report["ola"]["speedup_over_enumeration"] > 1
    assert report["ssim"]["microseconds_per_pair"] > 0
    assert report["extraction"]["models"]["minilm-l6"]["tokens_per_second"] > 0
    assert "chapter_03_cuda" not in report
