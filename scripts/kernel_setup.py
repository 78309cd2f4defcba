"""Run in each chapter's kernel before its first cell (``--IPKernelApp.exec_files``) by the runner.

It gives every matplotlib figure a plain-text description built from the figure's own titles
and axis labels ("Figure: <suptitle>. Panels: <axes titles>."). The text travels in the
figure's ``text/plain`` output beside its PNG; the book's Sphinx extension
(``scripts/book_ext.py``) turns it into the image's alt text.

It also starts a daemon thread that samples, every second, the resident memory of the kernel
and all its descendant processes together (Linux ``/proc``), keeping the largest sum in the
module ``_olacore_memory`` (``peak_total``, bytes; 0 where ``/proc`` is missing); the runner's
last cell reads it. Nothing else in the kernel changes, and no name is left in the notebook's
namespace.
"""


def _olacore_register_figure_descriptions():
    def describe(figure, printer, cycle):
        def unique(items):
            return list(dict.fromkeys(item.strip() for item in items if item and item.strip()))

        parts = []
        suptitle = figure.get_suptitle() if hasattr(figure, "get_suptitle") else ""
        if suptitle.strip():
            parts.append(suptitle.strip().rstrip(".") + ".")
        axes = [ax for ax in figure.axes if ax.get_visible() and ax.get_label() != "<colorbar>"]
        titles = unique(ax.get_title() for ax in axes)
        if titles:
            shown = "; ".join(titles[:12]) + ("; ..." if len(titles) > 12 else "")
            parts.append(f"Panels: {shown}.")
        labels = unique(f"{ax.get_xlabel()} against {ax.get_ylabel()}" if ax.get_xlabel() and ax.get_ylabel()
                        else ax.get_xlabel() or ax.get_ylabel() for ax in axes)
        if labels:
            parts.append("Axes: " + "; ".join(labels[:4]) + ".")
        if not parts:
            parts.append(f"{len(axes)} panel{'s' if len(axes) != 1 else ''} without titles.")
        printer.text("Figure: " + " ".join(parts))

    shell = get_ipython()  # noqa: F821 - defined in the kernel
    if shell is None:
        return
    plain = shell.display_formatter.formatters["text/plain"]

    def register(*_):
        # Configuring the inline backend (at the first pyplot import, or by %matplotlib)
        # drops every formatter of Figure: register again before each cell.
        plain.for_type_by_name("matplotlib.figure", "Figure", describe)

    import matplotlib
    import matplotlib.pyplot

    # Load the backend now (matplotlib loads it lazily, at the first figure, and the inline
    # backend's set-up would then drop the description in the middle of a chapter's cell).
    matplotlib.pyplot.switch_backend(matplotlib.get_backend())
    register()
    shell.events.register("pre_run_cell", register)


_olacore_register_figure_descriptions()
del _olacore_register_figure_descriptions


def _olacore_watch_memory(interval: float = 1.0):
    import os
    import sys
    import threading
    import types

    state = types.ModuleType("_olacore_memory")
    state.peak_total = 0
    sys.modules["_olacore_memory"] = state
    if not os.path.isdir(f"/proc/{os.getpid()}/task"):
        return
    page = os.sysconf("SC_PAGE_SIZE")

    def children(pid):
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            return []
        found = []
        for task in tasks:
            try:
                with open(f"/proc/{pid}/task/{task}/children") as handle:
                    found += [int(child) for child in handle.read().split()]
            except OSError:
                pass
        return found

    def resident(pid):
        try:
            with open(f"/proc/{pid}/statm") as handle:
                return int(handle.read().split()[1]) * page
        except (OSError, IndexError, ValueError):
            return 0

    def total():
        seen, todo, size = set(), [os.getpid()], 0
        while todo:
            pid = todo.pop()
            if pid not in seen:
                seen.add(pid)
                size += resident(pid)
                todo += children(pid)
        return size

    def sample():
        while True:
            state.peak_total = max(state.peak_total, total())
            threading.Event().wait(interval)

    threading.Thread(target=sample, name="olacore-memory", daemon=True).start()


_olacore_watch_memory()
del _olacore_watch_memory
