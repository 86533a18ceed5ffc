"""The ranker of a retriever that searches one query at a time (dense, hybrid, a python: retriever)."""

from __future__ import annotations

from collections.abc import Sequence

from groundkit.console.progress import track
from groundkit.retrieval.ports import Retriever, Run


class Searching:
    """Asks ``retriever.search(query, depth)`` for every query, in order, with a progress bar."""

    def __init__(self, retriever: Retriever) -> None:
        self.retriever = retriever

    def rank(self, queries: Sequence[tuple[str, str]], depth: int) -> Run:
        rankings: dict[str, list[tuple[str, float | None]]] = {
            query_id: list(self.retriever.search(query, depth))
            for query_id, query in track(queries, desc="retrieve", unit="query")
        }
        return Run(rankings, [])
