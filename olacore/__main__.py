"""Command line (python -m olacore, or the olacore command): draw or print the OLA orders of any text for any
model, or list the model zoo.

    python -m olacore ola --model NAME --text "..." --max-order K [--words] [--out FIG.png] [--json]

NAME is a zoo name (see python -m olacore models), a Hugging Face id or a local model folder. --words pools token
maps onto words (runs of word characters, and each punctuation mark on its own). --json prints
{"model", "tokens", "labels", "orders"}: the tokens as the tokenizer writes them, their labels (the characters each
covers in the text, as in the figures) and orders 0..K as nested lists. --out writes a figure; its suffix picks the
format.
"""

from __future__ import annotations

import argparse
import json
import sys

#: Suffixes ``--out`` accepts (lower or upper case): formats matplotlib writes without LaTeX or
#: extra libraries. Checked before any work, so a typo costs no model loading.
FIGURE_SUFFIXES = (".png", ".pdf", ".svg", ".svgz", ".eps", ".ps", ".jpg", ".jpeg", ".tif", ".tiff", ".webp")


def _check_options(args: argparse.Namespace) -> None:
    """Refuse bad ``ola`` options before any model is looked up, loaded or run.

    Raises:
        ValueError: an empty ``--model``; an empty, whitespace-only or invisible ``--text`` (as
            :func:`olacore.extraction.check_texts`), or one without words under ``--words``; an ``--out`` whose suffix
            is not one of :data:`FIGURE_SUFFIXES` (or that has none: an empty one) or whose folder does not exist.
    """
    from pathlib import Path

    from olacore.texts import word_spans
    from olacore.extraction import check_texts

    if not args.model.strip():
        raise ValueError("--model is empty; give a zoo name (python -m olacore models), a Hugging Face id or a folder")
    if not args.text.strip():
        raise ValueError('--text is empty; give the text to analyse, e.g. --text "The cat sat on the mat."')
    check_texts([args.text])  # invisible characters only: "texts[0]" reads "--text" (main)
    if args.words and not word_spans(args.text):
        raise ValueError(f"--text {args.text!r} has no word (no letter, digit or punctuation mark) to pool "
                         "onto; leave out --words to see its tokens")
    if args.out is not None:
        out = Path(args.out).expanduser()
        if out.suffix.lower() not in FIGURE_SUFFIXES:
            found = f"unsupported suffix {out.suffix!r}" if out.suffix else "no suffix"
            raise ValueError(f"--out {args.out!r}: {found}; end the path with .png, .pdf or .svg "
                             f"(also accepted: {', '.join(FIGURE_SUFFIXES[3:])})")
        if not out.parent.is_dir():
            raise ValueError(f"--out {args.out}: folder {out.parent} does not exist; create it first")


def _ola_command(args: argparse.Namespace) -> int:
    _check_options(args)
    from olacore.pipeline import cached_ola
    from olacore.plots import draw_maps, token_labels
    from olacore.texts import pool_to_words, word_spans

    (result,) = cached_ola(args.model, [args.text], args.max_order, device=args.device)
    orders, tokens, labels = result.orders, list(result.tokens), token_labels(result)
    if args.words:
        spans = word_spans(args.text)
        orders = pool_to_words(orders.double(), result.offsets, spans).float()
        tokens = labels = [args.text[start:end] for start, end in spans]
    if args.json:
        print(json.dumps({"model": args.model, "tokens": tokens, "labels": labels, "orders": orders.tolist()}))
    if args.out:
        panels = {f"order {k}": orders[k] for k in range(1, args.max_order + 1)} or {"order 0": orders[0]}
        title = args.text if len(args.text) <= 160 else args.text[:159] + "…"  # draw_maps wraps it
        figure = draw_maps({args.model: panels}, labels={args.model: labels}, title=title)
        figure.savefig(args.out, dpi=120)
        print(f"wrote {args.out}", file=sys.stderr)
    if not args.json and not args.out:
        print(f"{args.model}: {len(labels)} {'words' if args.words else 'tokens'}, "
              f"orders 0..{args.max_order} computed; add --out FIG.png or --json to see them")
    return 0


def _models_command(args: argparse.Namespace) -> int:
    from olacore.zoo import ZOO, is_built

    print(f"{'name':20s} {'kind':8s} {'layers x heads (kv)':20s} {'licence':19s} {'built':6s} source")
    for spec in ZOO.values():
        shape = f"{spec.num_layers} x {spec.num_heads} ({spec.num_kv_heads})"
        how = (f"{len(spec.packages)} wheels downloaded when built" if spec.delivery == "download"
               else "requirements-models.txt")
        where = "" if spec.in_book else "; outside the grids: read only where a chapter's settings name it"
        print(f"{spec.name:20s} {spec.kind:8s} {shape:20s} {spec.licence:19s} {'yes' if is_built(spec.name) else 'no':6s} "
              f"{spec.checkpoint} ({how}{where})")
    print("Build a model once with: python scripts/build_zoo.py NAME (`make models`: every model the book reads)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    # The module docstring is the description: plain text (no reST markup), as argparse prints it verbatim.
    parser = argparse.ArgumentParser(prog="python -m olacore", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    ola = commands.add_parser("ola", help="compute (and draw) the OLA orders of a text")
    ola.add_argument("--model", required=True, help="zoo name, Hugging Face id or model folder")
    ola.add_argument("--text", required=True, help="the text to analyse (not empty)")
    ola.add_argument("--max-order", type=int, default=3, help="highest OLA order K (default 3)")
    ola.add_argument("--words", action="store_true",
                     help="pool token maps onto words (runs of word characters, each punctuation mark on its own)")
    ola.add_argument("--out", help="write a figure of orders 1..K to this path; the suffix picks the format: "
                                   ".png, .pdf, .svg (also .svgz, .eps, .ps, .jpg, .jpeg, .tif, .tiff, .webp)")
    ola.add_argument("--json", action="store_true", help="print the maps as JSON on stdout")
    ola.add_argument("--device", default=None, help="cpu, cuda, ... (default: cuda if available)")
    ola.set_defaults(run=_ola_command)
    models = commands.add_parser("models", help="list the offline model zoo (kind, shape, licence, source, built or not)")
    models.set_defaults(run=_models_command)
    return parser


def _one_line_warnings() -> None:
    """Show each warning as one ``warning: ...`` line on stderr; a cache that keeps nothing, once."""
    import warnings

    from olacore.store import CacheNotKeptWarning

    seen: set = set()

    def show(message, category, filename, lineno, file=None, line=None):
        key = category if issubclass(category, CacheNotKeptWarning) else (category, str(message))
        if key not in seen:
            seen.add(key)
            print(f"warning: {' '.join(str(message).split())}", file=sys.stderr)

    warnings.showwarning = show


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status (2 with a one-line message on bad input).

    A cache that cannot be written is no error: the result is printed with one ``warning:`` line.
    """
    args = build_parser().parse_args(argv)
    _one_line_warnings()
    try:
        return args.run(args)
    except BrokenPipeError:  # e.g. `... --json | head`: the reader left, nothing to report
        sys.stderr.close()
        return 0
    except (ValueError, ImportError, RuntimeError, OSError, MemoryError) as error:
        # The library speaks of a list of texts and of max_order; here they are options.
        message = str(error).replace("texts[0]", "--text").replace("max_order", "--max-order")
        if not isinstance(error, ImportError):  # the pip line of a missing zoo package stands on its own line
            message = " ".join(message.split())
        print(f"error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
