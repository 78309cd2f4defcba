"""Code that one chapter (and its appendix) reads and nothing else: the chapter's own tables, figures and readings.

The package :mod:`olacore` holds what several chapters share (models, OLA, the cached pipeline, the
experiments' training loops, the verdict rules). What only one chapter needs lives here, one module per idea,
beside the chapters that import it, so that the package stays small and a chapter's reader finds its helpers
next to it:

- :mod:`chapter_code.explorer`: chapter 02's interactive order explorer (plotly, no kernel needed).
- :mod:`chapter_code.qualitative`: chapter 02's same-text SSIM gap.
- :mod:`chapter_code.retrieval`: chapter 03's Hits@1 heatmaps (and appendix a3's) and the retrieval pairs table it
  keeps for chapter 07 and appendix a5.
- :mod:`chapter_code.proxy`: chapter 04's proxy summary table and training curve (appendix a1 reads its cells).
- :mod:`chapter_code.controls`: chapter 05's control models (random init, shuffled layers, noise) and their tables.
- :mod:`chapter_code.syntax`: chapter 06's EWT data sets, the readings of its grid (and appendix a4's) and its
  dependency-arc figure.
- :mod:`chapter_code.transfer`: chapter 07's transfer data, bounds and readings (and appendix a5's).
- :mod:`chapter_code.zeroshot`: the zero-shot prompting baseline of chapter 07 and appendix a5 (prompts, greedy
  decoding, answer parsers, scores), run by :func:`chapter_code.transfer.zero_shot_rows`.
- :mod:`chapter_code.official_protocol`: appendix a1's table, curves and selection plot of the official protocol.
- :mod:`chapter_code.report`: the report page's table of every published number, its reproduction rule, and the
  intro's claims-at-a-glance table.

A chapter imports them as ``from chapter_code.controls import ...``: ``notebooks/`` must be on the path. It is
when Jupyter opens a chapter from ``notebooks/`` (its folder is the working directory), under
``scripts/execute_notebooks.py`` (which puts ``notebooks/`` on the kernel's ``PYTHONPATH``) and in the tests
(``tests/conftest.py``); elsewhere (a chapter opened from ``book/generated/``, a script), start from the repository
root with ``PYTHONPATH="$PWD/notebooks"`` (an absolute path: a kernel resolves a relative one against its own
folder). Their code is in the cache keys of what they make (:func:`olacore.store.code_digest` reads this folder
too: chapter 05's perturbed models carry it in their fingerprints, the zero-shot answers in their keys), and the
runner re-executes the chapters when a file here changes.
"""
