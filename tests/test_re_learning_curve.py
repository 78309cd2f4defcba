"""scripts/re_learning_curve.py, the dev-only sizing of chapter 07's relation extraction."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "re_learning_curve.py"


def _script():
    spec = importlib.util.spec_from_file_location("re_learning_curve", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("argv, named", [(["--model", "no-such-model"], "no-such-model"),
                                         (["--point", "0", "5"], "--point"),
                                         (["--dev", "900"], "--dev"),
                                         (["--batch-size", "0"], "--batch-size"),
                                         (["--lr", "-1"], "--lr"), (["--lr", "inf"], "--lr"),
                                         (["--threads", "0"], "--threads")])
def test_bad_arguments_are_refused_by_name(argv, named, capsys):
    with pytest.raises(SystemExit):
        _script().main(argv)
    assert named in capsys.readouterr().err


@pytest.mark.slow
def test_one_point_trains_on_dev_and_prints_its_record(capsys):
    assert _script().main(["--model", "minilm-l6", "--point", "24", "2", "--dev", "16", "--batch-size", "4"]) == 0
    record = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (record["model"], record["train"], record["epochs"], record["dev"], record["batch_size"]) == \
        ("minilm-l6", 24, 2, 16, 4)
    assert len(record["dev_curve"]) == 2 and record["best_epoch"] in (1, 2)
    assert 0 <= record["dev_accuracy"] <= 100
