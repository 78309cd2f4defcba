"""What the epochs of the cached TOA adapters buy on dev: the measurement behind the book's page
"Design decisions" (book/design.md: cut only what buys nothing, measured on dev, never on test).

Every trained adapter's record (:class:`olacore.toa.train.AdapterJob` ``train``) keeps its dev
score after each epoch and the wall seconds of its training, so the cache already holds each
run's learning curve. This script reads those records (entry headers only, no tensor) and prints,
per experiment (task, training sentences, epochs): the epochs the checkpoints were chosen at, the
recorded seconds, and for fewer epochs ``N`` how many checkpoints would stay where they are and
the largest loss of dev score. Read off the full runs, this is indicative only: the learning rate
warms up over the first 10 % of *all* steps and decays to 0 at the last one
(:func:`olacore.toa.train.optimiser_for`), so an ``N``-epoch run is not the first ``N`` epochs of a
longer one.

    .venv/bin/python scripts/dev_curves.py                  # the default cache ($OLACORE_CACHE)
    .venv/bin/python scripts/dev_curves.py --cache DIR --fewer 3 5 15
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

from safetensors import safe_open

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from olacore.settings import cache_dir  # noqa: E402
from olacore.toa.train import SELECTION  # noqa: E402


RECORD_FIELDS = ("task", "train_size", "training", "best_epoch", "history", "seconds")


def adapter_records(tensors: Path) -> tuple[list[dict], list[Path]]:
    """The record of every TOA adapter entry under ``tensors`` (the store's folder), and the
    entries that could not be read (damaged or foreign files: the store itself rebuilds those)."""
    records, unreadable = [], []
    for path in sorted(tensors.glob("*/*.safetensors")):
        try:
            with safe_open(str(path), "pt") as entry:
                meta = json.loads((entry.metadata() or {}).get("olacore", "{}"))
        except Exception:  # a truncated or foreign file: counted, never fatal
            unreadable.append(path)
            continue
        if isinstance(meta, dict) and all(field in meta for field in RECORD_FIELDS):
            records.append(meta)
    return records, unreadable


def curve(record: dict) -> list[float]:
    """Dev score of the checkpoint-selection metric after each epoch."""
    return [h[f"dev_{SELECTION[record['task']]}"] for h in record["history"]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, help="the cache folder (default: $OLACORE_CACHE or ~/.cache/olacore)")
    parser.add_argument("--fewer", type=int, nargs="+", default=[3, 5, 10, 15, 17],
                        help="epoch counts to read off the curves (those below each run's own are shown)")
    args = parser.parse_args(argv)
    tensors = (args.cache.expanduser() / "tensors") if args.cache else cache_dir("tensors", create=False)
    if not tensors.is_dir():
        parser.error(f"no tensor cache at {tensors}: give --cache, the folder OLACORE_CACHE points to")
    if any(n < 1 for n in args.fewer):
        parser.error("--fewer takes epoch counts of at least 1")
    groups = defaultdict(list)
    records, unreadable = adapter_records(tensors)
    if unreadable:
        print(f"{len(unreadable)} entries could not be read and were skipped (e.g. {unreadable[0]})", file=sys.stderr)
    for record in records:
        groups[record["task"], record["train_size"], record["training"]["epochs"]].append(record)
    if not groups:
        print(f"no trained adapter in {tensors}")
        return 0
    print("Dev loss in points of each task's checkpoint metric (DP LAS, POS accuracy, NER/WNUT F1, RE macro-F1); "
          "runs of other settings with the same task, size and epochs share a row.\n")
    print("| task | train sentences | epochs | adapters | chosen at epoch | recorded s | fewer epochs: checkpoints kept, "
          "largest dev loss (points), seconds saved |")
    print("|---|---:|---:|---:|---|---:|---|")
    for (task, size, epochs), records in sorted(groups.items()):
        seconds = sum(r["seconds"] for r in records)
        cuts = []
        for n in sorted(n for n in set(args.fewer) if n < epochs):
            kept = sum(r["best_epoch"] <= n for r in records)
            loss = max(max(curve(r)) - max(curve(r)[:n]) for r in records)
            cuts.append(f"{n}: {kept}/{len(records)}, {loss:.1f}, {seconds * (epochs - n) / epochs:,.0f}")
        chosen = ", ".join(str(e) for e in sorted(r["best_epoch"] for r in records))
        print(f"| {task} | {size} | {epochs} | {len(records)} | {chosen} | {seconds:,.0f} | {'; '.join(cuts) or '-'} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
