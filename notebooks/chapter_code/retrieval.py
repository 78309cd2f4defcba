"""Chapter 03's retrieval pairs table, kept for chapter 07 and appendix a5 (read by
:func:`chapter_code.transfer.similarity_hits`)."""

from __future__ import annotations

from typing import Any

import pandas as pd

__all__ = ["PAIRS_TABLE", "PAIRS_COLUMNS", "pairs_rows"]


#: The table chapter 03 keeps for later chapters (rows: :func:`pairs_rows`).
PAIRS_TABLE = "retrieval pairs"
PAIRS_COLUMNS = ("kind", "source", "target", "channel", "protocol", "hits@1", "hits@5")


def pairs_rows(table: pd.DataFrame, protocol: str) -> list[dict[str, Any]]:
    """:data:`PAIRS_COLUMNS` rows (hits in percent) of :func:`olacore.similarity.retrieval_grid` rows under
    ``protocol``."""
    kept = table.rename(columns={"group": "kind"}).assign(protocol=protocol,
                                                          **{m: 100 * table[m] for m in ("hits@1", "hits@5")})
    return kept[list(PAIRS_COLUMNS)].to_dict("records")

