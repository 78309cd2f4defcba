"""Figures (olacore.plots): the dependency-arc overlay checks its inputs."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from olacore.plots import draw_arcs  # noqa: E402
from olacore.ud import UDSentence  # noqa: E402


def test_draw_arcs_marks_gold_and_predicted_heads():
    sentence = UDSentence("t", "w0 w1 w2", ("w0", "w1", "w2"), ((0, 2), (3, 5), (6, 8)), (2, 0, 2),
                          ("dep", "root", "dep"), ("NOUN", "VERB", "NOUN"))
    fig, ax = plt.subplots()
    draw_arcs(ax, torch.rand(3, 3), sentence, [2, 0, 1], title="toy")
    assert ax.get_title() == "toy: root gold=['w1'] pred=['w1']"
    gold, predicted = (np.asarray(c.get_offsets()) for c in ax.collections)
    # markers sit at (column = head - 1, row = dependent)
    assert sorted(map(tuple, gold.tolist())) == [(1.0, 0.0), (1.0, 2.0)]
    assert sorted(map(tuple, predicted.tolist())) == [(0.0, 2.0), (1.0, 0.0)]
    with pytest.raises(ValueError, match="do not fit"):
        draw_arcs(ax, torch.rand(2, 2), sentence, [2, 0, 1])
    with pytest.raises(ValueError, match="do not fit"):
        draw_arcs(ax, torch.rand(3, 3), sentence, [2, 0])
    plt.close(fig)
