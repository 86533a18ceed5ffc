"""Warnings about results that are numbers but measure little: each a line of text, or None when all is well.

They are printed to stderr (``warning: ...``, one line each) by the stage or command that computed
the results, and they never change an artifact: the same inputs give the same bytes, warned or not.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from groundkit.scoring.measures import MEASURES, Cut, Cutoff

RECALL = MEASURES["recall"]

PREFIX = "warning: "


def unanswered(detail: Mapping[str, Any]) -> str | None:
    """A run that retrieved nothing for some answerable queries (a partial external run, a broken retriever)."""
    answerable = detail.get("answerable", {})
    queries, empty = answerable.get("queries", 0), answerable.get("false_abstentions", 0)
    if not queries or not empty:
        return None
    return (f"the run answers {queries - empty} of {queries} answerable queries: {empty} retrieved nothing and "
            f"score{'s' if empty == 1 else ''} 0 on every measure (false_abstentions in detail.json; a query that "
            "shares no word with the corpus, or a run file that leaves queries out)")


def unreachable(detail: Mapping[str, Any], min_overlap: float) -> str | None:
    """Answerable queries that no passage is relevant to under ``score.min_overlap``: every rank measure is 0."""
    answerable = detail.get("answerable", {})
    queries, none = answerable.get("queries", 0), answerable.get("unreachable", 0)
    if not none:
        return None
    return (f"{none} of {queries} answerable queries have no passage holding {min_overlap:.0%} of a gold quote "
            f"(score.min_overlap = {min_overlap:g}), so they score 0 on every measure at k: the chunks cut their "
            "quotes smaller than the rule asks (unreachable in detail.json); lower score.min_overlap, or use larger "
            "chunks")


def few_chunks(chunks: int, *, depth: int, largest_k: int) -> str | None:
    """A corpus cut into so few chunks that a ranking holds most or all of it."""
    if largest_k and chunks <= largest_k:
        hit_rate = RECALL.label(Cut(Cutoff.RANK, largest_k))
        return (f"the corpus has {chunks} chunk{'s' if chunks != 1 else ''}, no more than the largest cut-off "
                f"(k = {largest_k}): {hit_rate} is 1.0 for any query that retrieves them all, whatever "
                "the ranking; add documents, or use smaller chunks")
    if chunks < depth:
        return (f"the corpus has {chunks} chunks, fewer than retrieve.depth ({depth}): a ranking can hold the whole "
                "corpus, so deep cut-offs measure little; add documents, or use smaller chunks")
    return None


def two_labels(detail: Mapping[str, Any]) -> list[str]:
    """Under two label sets, what the prediction-powered estimate's reader must know (detail.json's
    ``ppi.warnings``: labels not drawn at random, too few of them, a judge that agrees poorly); none otherwise."""
    ppi = detail.get("ppi")
    return [str(w) for w in ppi.get("warnings", [])] if isinstance(ppi, dict) else []
