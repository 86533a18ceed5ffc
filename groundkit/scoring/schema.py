"""The records a run produces: its metadata and its per-query and aggregate results."""

from __future__ import annotations

import csv
import io
from collections import Counter
from typing import Any

from pydantic import Field

from groundkit._models import Record
from groundkit.corpus.judgments import Category
from groundkit.scoring.measures import MEASURES

PER_QUERY_FIELDS = ("query_id", "query", "category", "retrieved", "gold_chunks", "first_gold_rank", "abstained")
"""The columns of per_query.csv before the metrics; every column after them is a metric name of the registry."""


class ExternalRunFile(Record):
    """The external run file a result scored: its name (never a path, so run.json stays portable) and content."""

    name: str
    sha256: str


class RunMetadata(Record):
    """What a run measured: which corpus, which judgments, which parameters, which code.

    Runs are comparable exactly when both hashes match. They are SHA-256 over
    raw file bytes, so they are stable across machines only with LF checkouts
    (``* text=auto eol=lf`` in .gitattributes). ``external_run`` identifies the
    scored file of an external run, and is None (left out of run.json) for the rest.
    """

    corpus_hash: str
    judgments_hash: str
    params: dict[str, Any]
    groundkit_version: str
    external_run: ExternalRunFile | None = None

    def document(self) -> dict[str, Any]:
        """The run.json document; without ``external_run`` when there is none, so other runs' files keep their bytes."""
        return self.model_dump(mode="json", exclude={"external_run"} if self.external_run is None else None)


class QueryResult(Record):
    """One query's outcome. ``metrics`` is empty for no_answer queries."""

    query_id: str
    query: str
    category: Category
    retrieved: int
    gold_chunks: int
    first_gold_rank: int | None
    metrics: dict[str, float]

    @property
    def answerable(self) -> bool:
        return self.category is not Category.NO_ANSWER


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


class StageResult(Record):
    """All query results of one run, and the aggregates metrics.json reports."""

    ks: list[int]
    budgets: list[int] = Field(default_factory=list)
    queries: list[QueryResult]

    @property
    def metric_names(self) -> list[str]:
        """The registry's metric names at this run's cut-offs, in report order (see ``Registry.names``)."""
        return MEASURES.names(self.ks, self.budgets)

    @property
    def no_answer_abstained_count(self) -> int:
        """no_answer queries whose retrieval returned an empty list: the only abstention signal."""
        return sum(1 for q in self.queries if not q.answerable and q.retrieved == 0)

    def _answerable_block(self, queries: list[QueryResult]) -> dict[str, Any]:
        block: dict[str, Any] = {"queries": len(queries)}
        if queries:
            for name in self.metric_names:
                block[name] = _mean([q.metrics[name] for q in queries])
        block["false_abstentions"] = sum(1 for q in queries if q.retrieved == 0)
        return block

    @staticmethod
    def _no_answer_block(queries: list[QueryResult]) -> dict[str, Any]:
        abstained = sum(1 for q in queries if q.retrieved == 0)
        block: dict[str, Any] = {"queries": len(queries), "abstained": abstained}
        if queries:
            block["abstention_rate"] = abstained / len(queries)
        return block

    def summary(self) -> dict[str, Any]:
        """The metrics.json document."""
        answerable = [q for q in self.queries if q.answerable]
        no_answer = [q for q in self.queries if not q.answerable]
        by_category: dict[str, Any] = {}
        present = Counter(q.category for q in self.queries)
        for category in Category:
            if not present[category]:
                continue
            members = [q for q in self.queries if q.category is category]
            if category is Category.NO_ANSWER:
                by_category[category.value] = self._no_answer_block(members)
            else:
                by_category[category.value] = self._answerable_block(members)
        return {
            "answerable": self._answerable_block(answerable),
            "no_answer": self._no_answer_block(no_answer),
            "by_category": by_category,
        }

    def per_query_csv(self) -> str:
        """One row per query, in judgment order, for ``dvc plots`` and for comparing runs."""
        names = self.metric_names  # the registry's list, worked out once rather than once a row
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow([*PER_QUERY_FIELDS, *names])
        for q in self.queries:
            abstained = "" if q.answerable else int(q.retrieved == 0)
            metrics = [f"{q.metrics[name]:.6f}" if q.answerable else "" for name in names]
            writer.writerow([q.query_id, q.query, q.category.value, q.retrieved, q.gold_chunks,
                             q.first_gold_rank or "", abstained, *metrics])
        return out.getvalue()
