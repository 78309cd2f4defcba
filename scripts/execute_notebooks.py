"""Execute the jupytext notebook sources with papermill.

Usage::

    python scripts/execute_notebooks.py [--profile default] [--out book/generated] [NOTEBOOK.py ...]

With no notebook named, every ``notebooks/*.py`` runs in order. Each source is converted to
``.ipynb`` with jupytext, executed by papermill with ``-p profile PROFILE`` (and any
``-p NAME VALUE`` given), and written to the output folder, where the book picks it up.
Stops at the first notebook that fails, naming it, with a non-zero exit status.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import jupytext
import papermill

ROOT = Path(__file__).resolve().parent.parent


def execute(source: Path, out_dir: Path, parameters: dict) -> Path:
    """Convert ``source`` to a notebook, execute it with ``parameters``, return the output path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    # Progress bars are for interactive use; in the published pages they are noise. The
    # runner shows cell-by-cell progress instead.
    os.environ.setdefault("TQDM_DISABLE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("PYTHONWARNINGS", "ignore:IProgress not found")
    os.environ["OLACORE_RESULTS"] = str(out_dir / "results")  # olacore.results: each chapter's numbers
    notebook = jupytext.read(source)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    raw = out_dir / f"{source.stem}.source.ipynb"
    jupytext.write(notebook, raw)
    known = papermill.inspect_notebook(str(raw))
    unknown = sorted(set(parameters) - set(known))
    if unknown:
        raw.unlink(missing_ok=True)
        raise ValueError(f"{source.name} has no parameter {', '.join(unknown)}; its parameters are: {', '.join(known)}")
    target = out_dir / f"{source.stem}.ipynb"
    try:
        papermill.execute_notebook(
            str(raw), str(target), parameters=parameters, kernel_name="python3", cwd=str(ROOT),
            progress_bar=sys.stderr.isatty(), log_output=False,
        )
    finally:
        raw.unlink(missing_ok=True)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="*", type=Path, help="jupytext sources (default: notebooks/*.py)")
    parser.add_argument("--profile", default="default", choices=["smoke", "default", "paper"])
    parser.add_argument("--out", type=Path, default=ROOT / "book" / "generated")
    parser.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                        help="extra papermill parameter (value parsed as Python literal when possible)")
    args = parser.parse_args(argv)
    import ast

    parameters = {"profile": args.profile}
    for name, value in args.parameter:
        if name == "profile":
            parser.error("set the profile with --profile, not -p profile")
        try:
            parameters[name] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            parameters[name] = value
    sources = args.notebooks or sorted((ROOT / "notebooks").glob("[0-9]*.py"))
    for source in sources:
        start = time.perf_counter()
        print(f"[execute] {source.name} (profile={args.profile}) ...", flush=True)
        try:
            execute(source, args.out, parameters)
        except Exception as error:  # papermill raises PapermillExecutionError with the cell
            print(f"\nNOTEBOOK FAILED: {source} (profile={args.profile})\n{error}", file=sys.stderr)
            return 1
        print(f"[execute] {source.name} done in {time.perf_counter() - start:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
