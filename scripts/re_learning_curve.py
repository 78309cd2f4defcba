"""Size relation extraction on dev, never on test: dev accuracy of one model's RE adapter per training size.

Chapter 07's RE sizes (``olacore.profiles.TransferSettings.re``) were chosen with this script; the
measured points are in book/design.md. It trains one adapter per (training sentences, epochs)
point exactly as the chapter does (its adapter, its training and augmentation, seed 0), picks the
checkpoint on SemEval dev (the whole 800-example dev split drawn from SemEval's training file by
default) and prints one JSON line per point: the dev accuracy and macro-F1 of the kept epoch, the
dev curve, and the seconds spent.
The test split is never read.

    python scripts/re_learning_curve.py                      # smollm2-135m, 1000x20 2000x10 2000x20 4000x10
    python scripts/re_learning_curve.py --model minilm-l6 --point 2000 20
    python scripts/re_learning_curve.py --point 1000 20 --batch-size 4
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import torch

from olacore.profiles import TaskSizes, settings
from olacore.toa.data import TOA_INPUT, input_spec
from olacore.toa.train import make_job, train_adapters
from olacore.zoo import ZOO

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))  # chapter 07's own code
from chapter_code.transfer import task_data, task_splits  # noqa: E402

DEFAULT_POINTS = ((1000, 20), (2000, 10), (2000, 20), (4000, 10))
SEMEVAL_TRAIN = 7200  # SemEval's 8,000 training sentences less the 800 of the dev split


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="smollm2-135m", help="a zoo model (olacore models lists them)")
    parser.add_argument("--point", nargs=2, type=int, action="append", metavar=("TRAIN", "EPOCHS"),
                        help="training sentences and epochs (repeatable; default: "
                             + " ".join(f"{n}x{e}" for n, e in DEFAULT_POINTS) + ")")
    parser.add_argument("--dev", type=int, default=800, help="dev sentences the checkpoint is chosen on (at most 800)")
    parser.add_argument("--batch-size", type=int, default=None,
                        help="sentences per optimiser step (default: the chapter's)")
    parser.add_argument("--lr", type=float, default=None, help="AdamW peak learning rate (default: the chapter's)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (pinned, so times compare)")
    args = parser.parse_args(argv)
    if args.model not in ZOO:
        parser.error(f"--model {args.model!r} is not a zoo model; choose one of {', '.join(ZOO)}")
    points = [tuple(p) for p in args.point] if args.point else list(DEFAULT_POINTS)
    bad = [p for p in points if not (0 < p[0] <= SEMEVAL_TRAIN and p[1] > 0)]
    if bad:
        parser.error(f"--point {bad[0][0]} {bad[0][1]}: training sentences must be 1..{SEMEVAL_TRAIN} and epochs positive")
    if args.batch_size is not None and args.batch_size <= 0:
        parser.error(f"--batch-size {args.batch_size}: choose a positive number of sentences per step")
    if args.lr is not None and not 0 < args.lr < float("inf"):
        parser.error(f"--lr {args.lr}: choose a positive learning rate")
    if args.threads < 1:
        parser.error(f"--threads {args.threads}: choose at least one thread")
    if not 0 < args.dev <= 800:
        parser.error(f"--dev {args.dev}: the dev split has 800 sentences; choose 1..800")
    torch.set_num_threads(args.threads)

    kind = ZOO[args.model].kind
    base = settings("transfer", "default", tasks=("re",), control_models=(), zero_shot_models=(),
                    causal=(args.model,) if kind == "causal" else (), encoders=(args.model,) if kind == "encoder" else ())
    for num_train, epochs in points:
        chapter = dataclasses.replace(base, re=TaskSizes(num_train, args.dev, base.re.test, epochs=epochs))
        start = time.perf_counter()
        splits = task_splits("re", chapter)
        splits = {"train": splits["train"], "dev": splits["dev"]}  # test is never read
        data = task_data("re", chapter, [args.model], splits=splits, workers=1)[args.model]
        maps_s = time.perf_counter() - start
        training = chapter.training_for("re")
        if args.batch_size is not None:
            training = dataclasses.replace(training, batch_size=args.batch_size)
        if args.lr is not None:
            training = dataclasses.replace(training, lr=args.lr)
        job = make_job(data["train"], data["dev"], input_spec(TOA_INPUT), chapter.syntax.adapter, training, seed=0)
        adapter = train_adapters([job], workers=1, progress=False)[0]
        record = adapter.record
        print(json.dumps({
            "model": args.model, "train": num_train, "epochs": epochs, "batch_size": training.batch_size, "lr": training.lr, "dev": len(data["dev"]),
            "best_epoch": record["best_epoch"], "dev_accuracy": round(record["dev"]["accuracy"], 2),
            "dev_macro_f1": round(record["dev"]["macro_f1"], 2),
            "dev_curve": [round(h["dev_accuracy"], 1) for h in record["history"]],
            "maps_s": round(maps_s), "train_s": round(time.perf_counter() - start - maps_s),
        }), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
