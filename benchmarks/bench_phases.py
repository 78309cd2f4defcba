"""Benchmark: each phase of the book against this machine (``make bench``).

Usage::

    python benchmarks/bench_phases.py [--quick] [--out book/generated] [--models minilm-l6 smollm2-135m]
                                      [--repeats 2] [--note "The machine was shared with ..."]

Measures this machine's attainable fp32 rate on one thread (:func:`measure.attainable_rate`: ``torch.mm``
of 1024 x 1024 matrices, best CPU seconds of five), then for each phase of the book (extraction, ALTI, adapters, proxy,
zero-shot) one representative unit of real work: its FLOPs as torch's own counter finds them, its CPU seconds on
one thread (best of ``--repeats``), the achieved rate and its share of the attainable rate, and the rate its products
reach alone at their own shapes (:func:`measure.measure_phase`). Extraction is measured twice, one text per call and all texts in one
call of :func:`olacore.extraction.extract_attention`, so whatever batching it does shows as the difference.

Writes ``<out>/bench.json`` (the record) and ``<out>/bench.md`` (the table ``book/compute.md`` shows under
"Against the machine"), and prints the table. Everything is a ratio from one run; nothing is asserted. Default
size: about two to three minutes on an idle 2-core machine; ``--quick`` (minilm-l6 and a few prompts of
smollm2-135m, the smallest units): seconds, for the tests.

The other scripts here time one method against another in one run: ``bench_ola.py`` (recurrence against
enumeration), ``bench_ssim.py`` (batched SSIM against scikit-image), ``bench_alti.py`` (ALTI against extraction,
and how far its rollout agrees with OLA), ``bench_toa.py`` (the adapter's backbones and heads),
``bench_zeroshot.py`` (prefix cache and batching against ``model.generate``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))  # measure.py, also when this file is loaded by the tests
sys.path.insert(1, str(ROOT / "notebooks"))  # chapter_code.zeroshot, the zero-shot unit's decoding

from measure import (adapter_unit, attainable_rate, bench_table, bench_texts, extraction_units,  # noqa: E402
                     machine_description, measure_phase, proxy_unit, zero_shot_unit)
from olacore.store import atomic_write_text  # noqa: E402
from olacore.zoo import ZOO  # noqa: E402
JSON_NAME, TABLE_NAME = "bench.json", "bench.md"

#: (models, texts, adapter sentences, proxy steps, zero-shot prompts, repeats) per size.
SIZES = {
    "default": (("minilm-l6", "smollm2-135m"), 16, 64, 20, 8, 2),
    "quick": (("minilm-l6",), 2, 8, 2, 1, 1),
}


def built_models(names) -> list[str]:
    """The models of ``names`` whose offline copy is built (the others are left out, and said so)."""
    from olacore.zoo import is_built

    kept = [name for name in names if is_built(name)]
    for name in sorted(set(names) - set(kept)):
        print(f"{name}: not built, left out (python scripts/build_zoo.py {name})", file=sys.stderr)
    return kept


def run(quick: bool = False, repeats: int | None = None, note: str = "", models: list[str] | None = None) -> dict:
    """Measure every phase; return the JSON-able record (:func:`measure.bench_table` reads it).
    ``models``: those whose extraction and ALTI are measured (default: the size's)."""
    default_models, num_texts, sentences, steps, prompts, default_repeats = SIZES["quick" if quick else "default"]
    models, repeats = models or default_models, repeats or default_repeats
    started = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    size = 1024
    attainable = attainable_rate(size, repeats=5)
    print(f"attainable: {attainable:.1f} GFLOP/s (torch.mm {size}^3, fp32, one thread, best of 5)", flush=True)
    texts = bench_texts(num_texts)
    units = []
    for name in built_models(models):
        units += extraction_units(name, texts)
    units.append(adapter_unit(sentences))
    units.append(proxy_unit(steps))
    if built_models(["smollm2-135m"]):
        units.append(zero_shot_unit("smollm2-135m", prompts))
    rows = []
    for phase, unit, function in units:
        cost = measure_phase(phase, unit, function, repeats)
        rows.append(asdict(cost))
        print(f"{phase:10s} {cost.flops / 1e9:8.2f} GFLOP {cost.cpu_seconds:7.2f} CPU s "
              f"{cost.gflops_per_second:6.1f} GFLOP/s {cost.share(attainable):5.0%}  products alone "
              f"{cost.products_gflops_per_second:6.1f} GFLOP/s  {unit}", flush=True)
    return {
        "measured_at": started,
        "machine": machine_description(),
        "torch": torch.__version__,
        "load_average": load,
        "note": note,
        "quick": quick,
        "repeats": repeats,
        "attainable_gflops": attainable,
        "attainable_how": f"torch.mm of two {size} x {size} float32 matrices, best of 5",
        "rows": rows,
    }


def write(record: dict, out: Path) -> Path:
    """Write ``<out>/bench.json`` and ``<out>/bench.md``; return the table's path."""
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / JSON_NAME, json.dumps(record, indent=1))
    return atomic_write_text(out / TABLE_NAME, bench_table(record))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the smallest units (seconds; for the tests)")
    parser.add_argument("--out", type=Path, default=ROOT / "book" / "generated")
    parser.add_argument("--repeats", type=int, default=None, help="timed runs per unit, best kept")
    parser.add_argument("--models", nargs="+", default=None,
                        help="models whose extraction and ALTI are measured (default minilm-l6 smollm2-135m; "
                             "qwen2.5-0.5b adds about a minute)")
    parser.add_argument("--note", default="", help="a sentence for the table's caption (e.g. who else used the machine)")
    args = parser.parse_args(argv)
    if args.repeats is not None and args.repeats < 1:
        parser.error(f"--repeats must be at least 1; got {args.repeats}")
    unknown = [name for name in args.models or () if name not in ZOO]
    if unknown:
        parser.error(f"--models: {unknown} are not zoo models; choose from {sorted(ZOO)}")
    record = run(args.quick, args.repeats, args.note, args.models)
    path = write(record, args.out)
    print(f"\n{bench_table(record)}\nwritten: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
