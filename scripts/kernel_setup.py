"""Run in each chapter's kernel before its first cell (``--IPKernelApp.exec_files``) by the runner.

It gives every matplotlib figure a plain-text description built from the figure's own titles
and axis labels ("Figure: <suptitle>. Panels: <axes titles>."). The text travels in the
figure's ``text/plain`` output beside its PNG; the book's Sphinx extension
(``scripts/book_ext.py``) turns it into the image's alt text. Nothing else in the kernel
changes, and no name is left in the notebook's namespace.
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
