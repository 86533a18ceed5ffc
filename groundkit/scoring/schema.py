"""The records a run produces: its metadata and its per-query and aggregate results, and the reader of its
per_query.csv beside the writer."""

from __future__ import annotations

import csv
import io
import math
from array import array
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from groundkit.artifacts.models import Record
from groundkit.corpus.judgments import Category
from groundkit.errors import ArtifactError, InputError, MeasureError
from groundkit.scoring.measures import MEASURES
from groundkit.scoring.separability import NAME as SEPARABILITY
from groundkit.scoring.separability import separability

if TYPE_CHECKING:
    import numpy as np

PER_QUERY_FIELDS = ("query_id", "query", "category", "retrieved", "gold_chunks", "first_gold_rank", "abstained",
                    "top_score")
"""The columns of per_query.csv before the metrics; every column after them is a metric name of the registry.

``top_score`` is the score of the query's first result, exactly (the shortest text that reads back as the same
float), empty when it retrieved nothing or its run carried no scores: no_answer.separability is computed from it,
by the score stage and again by compare."""


HUMAN_PREFIX = "human."
"""Starts the per_query.csv column of a metric under a person's labels, beside the metric under a judge's.

Written only when a run is scored under two label sets (``corpus.machine_judgments``): the ``METRIC`` columns
then hold each query's value under the judge's (machine) labels and ``human.METRIC`` its value under the
person's, empty where the person did not label the query. Only directed measures have one: a measure of the
context a ranking costs (``chars@k``) does not depend on the labels."""


def human_column(metric: str) -> str:
    """The per_query.csv column of ``metric`` under a person's labels: ``human.ndcg@10``."""
    return HUMAN_PREFIX + metric


DOCUMENT_LEVEL = "trec-doc-ids"
"""The ``corpus_hash`` of a result of ``groundkit score-trec``, which is not a hash: score-trec reads no corpus, only
a run and qrels that name documents by id. compare refuses to pair such a result with a run over a corpus."""


def document_level(metadata: dict[str, Any]) -> bool:
    """Whether run.json's ``metadata`` is that of a document-level result (``groundkit score-trec``)."""
    return metadata.get("corpus_hash") == DOCUMENT_LEVEL


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
    ``machine_judgments_hash`` is the SHA-256 of ``corpus.machine_judgments`` for a run scored under two label
    sets, None (left out) for the rest; ``judged`` is then judged@k of this run under the judge's labels at each
    rank cut-off scored (None where the judge's pool is unknown), which compare reads for each side.
    """

    corpus_hash: str
    judgments_hash: str
    params: dict[str, Any]
    groundkit_version: str
    external_run: ExternalRunFile | None = None
    machine_judgments_hash: str | None = None
    judged: dict[str, float] | None = None

    def document(self) -> dict[str, Any]:
        """The run.json document; without ``external_run``, ``machine_judgments_hash`` or ``judged`` when there is
        none, so other runs' files keep their bytes."""
        absent = {k for k in ("external_run", "machine_judgments_hash", "judged") if getattr(self, k) is None}
        return self.model_dump(mode="json", exclude=absent or None)


class QueryResult(Record):
    """One query's outcome. ``metrics`` is empty for no_answer queries."""

    query_id: str
    query: str
    category: Category
    retrieved: int
    gold_chunks: int
    first_gold_rank: int | None
    metrics: dict[str, float]
    top_score: float | None = None
    """The score of the first result; None when nothing was retrieved or the run carried no scores."""
    human_metrics: dict[str, float] | None = None
    """Under two label sets: the directed metrics under the person's labels (``metrics`` are the judge's), every
    one 0 where the person found nothing relevant; None where the person did not label the query."""

    @property
    def answerable(self) -> bool:
        return self.category is not Category.NO_ANSWER

    @property
    def ranked_by(self) -> float | None:
        """The top-1 score separability ranks this query by: minus infinity when nothing was retrieved, None
        when the run retrieved something but carried no score."""
        if self.retrieved == 0:
            return -math.inf
        return self.top_score


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


class StageResult(Record):
    """All query results of one run, and the aggregates metrics.json reports."""

    measures: list[str]
    queries: list[QueryResult]
    human_measures: list[str] | None = None
    """Under two label sets, the metrics per_query.csv also gives under the person's labels (``human.``
    columns): the directed ones of ``measures``, in order. None with one label set: no such column."""

    @property
    def metric_names(self) -> list[str]:
        """The metrics computed, in report order (``score.measures``)."""
        return self.measures

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
        # No passage of the chunking is relevant to any gold span (only under score.min_overlap above 0).
        block["unreachable"] = sum(1 for q in queries if q.gold_chunks == 0)
        return block

    @staticmethod
    def _no_answer_block(queries: list[QueryResult], answerable: list[QueryResult]) -> dict[str, Any]:
        abstained = sum(1 for q in queries if q.retrieved == 0)
        block: dict[str, Any] = {"queries": len(queries), "abstained": abstained}
        if queries:
            block["abstention_rate"] = abstained / len(queries)
        # Left out (not available) without queries of both kinds, or when the run carried no scores.
        positives, negatives = [q.ranked_by for q in answerable], [q.ranked_by for q in queries]
        if None not in positives and None not in negatives:
            value = separability(positives, negatives)  # type: ignore[arg-type]  # None was ruled out above
            if value is not None:
                block[SEPARABILITY] = value
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
                by_category[category.value] = self._no_answer_block(members, answerable)
            else:
                by_category[category.value] = self._answerable_block(members)
        return {
            "answerable": self._answerable_block(answerable),
            "no_answer": self._no_answer_block(no_answer, answerable),
            "by_category": by_category,
        }

    def per_query_csv(self) -> str:
        """One row per query, in judgment order, for ``dvc plots`` and for comparing runs."""
        names = self.metric_names  # the registry's list, worked out once rather than once a row
        human = self.human_measures or []
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow([*PER_QUERY_FIELDS, *names, *map(human_column, human)])
        for q in self.queries:
            abstained = "" if q.answerable else int(q.retrieved == 0)
            metrics = [f"{q.metrics[name]:.6f}" if q.answerable else "" for name in names]
            top = "" if q.top_score is None or q.retrieved == 0 else repr(float(q.top_score))
            labelled = [f"{q.human_metrics[name]:.6f}" if q.human_metrics is not None else "" for name in human]
            writer.writerow([q.query_id, q.query, q.category.value, q.retrieved, q.gold_chunks,
                             q.first_gold_rank or "", abstained, top, *metrics, *labelled])
        return out.getvalue()


@dataclass(frozen=True)
class PerQuery:
    """per_query.csv, read: one row per query in file order.

    ``values`` holds one row per query and one column per metric (``metric_names``); rows of no_answer
    queries are NaN, every other cell was checked to be a finite number. ``human_values`` holds the
    ``human.`` columns of a run scored under two label sets, one per name of ``human_names`` (the file's
    directed metrics), NaN where the person did not label the query; None (and ``human_names`` empty) for a
    file without them. ``first_gold_rank`` is infinite
    where no gold was found. ``top_score`` is the first result's score, minus infinity where nothing was
    retrieved, NaN where it is unknown (a file without the column, or a run without scores).
    """

    metric_names: list[str]
    position: dict[str, int]
    lines: list[int]
    categories: list[str]
    queries: list[str]
    first_gold_rank: list[float]
    abstained: list[bool]
    top_score: list[float]
    values: np.ndarray
    human_names: list[str] = field(default_factory=list)
    human_values: np.ndarray | None = None


def _read_rows(text: str, where: str, error: type[InputError]) -> tuple[list[str], Iterator[tuple[int, list[str]]]]:
    """The header, then each row with its first line number; every row has as many cells as the header."""
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
    except csv.Error as exc:
        raise error(where, f"is not valid CSV: {exc}", line=1, fix="re-run the score stage") from None
    if header is None:
        raise error(where, "is empty", fix="re-run the score stage to write it again")

    def rows() -> Iterator[tuple[int, list[str]]]:
        previous = reader.line_num
        try:
            for row in reader:
                if len(row) != len(header):
                    raise error(where, f"has {len(row)} cells in this row, the header has {len(header)}",
                                       line=previous + 1, fix="re-run the score stage; do not edit per_query.csv")
                yield previous + 1, row
                previous = reader.line_num
        except csv.Error as exc:
            raise error(where, f"is not valid CSV: {exc}", line=previous + 1,
                               fix="re-run the score stage to write it again") from None

    return header, rows()


def _metric_columns(header: list[str], where: str, error: type[InputError]) -> tuple[dict[str, int], list[str]]:
    required = ["query_id", "category", "first_gold_rank"]
    missing = [name for name in required if name not in header]
    if missing:
        raise error(where, f"lacks the columns {missing}",
                           fix="re-run the score stage with this version of groundkit")
    seen: set[str] = set()
    for name in header:
        if name in seen:
            raise error(where, f"has the column {name!r} twice", line=1,
                               fix="re-run the score stage; do not edit per_query.csv")
        seen.add(name)
    # A column is a per-query field or a metric the registry can name; anything else is refused, not skipped,
    # so a misspelt or renamed metric cannot vanish from the comparison unnoticed.
    metric_names = [name for name in header if name not in PER_QUERY_FIELDS and not name.startswith(HUMAN_PREFIX)]
    for name in metric_names:
        try:
            MEASURES.parse(name)
        except MeasureError as exc:
            raise error(where, f"has the column {name!r}, neither a per-query field "
                               f"({', '.join(PER_QUERY_FIELDS)}) nor a metric: {exc}", line=1,
                               fix="re-run the score stage with this version of groundkit; do not edit "
                               "per_query.csv") from None
    human = [name for name in header if name.startswith(HUMAN_PREFIX)]
    expected = [human_column(m) for m in metric_names if MEASURES.parse(m).measure.directed]
    if human and human != expected:
        raise error(where, f"has the columns {human}; a run scored under two label sets has "
                           f"{expected or 'none'} (human. and each directed metric of the file, in its order)",
                           line=1, fix="re-run the score stage with this version of groundkit; do not edit "
                           "per_query.csv")
    return {name: i for i, name in enumerate(header)}, metric_names


def read_per_query(text: str, where: str, error: type[InputError] = ArtifactError) -> PerQuery:
    """Parse per_query.csv (as :meth:`StageResult.per_query_csv` writes it), refusing anything else with ``error``
    naming ``where`` and the line: a missing or unknown column, a repeated query, a cell that is not a number."""
    header, rows = _read_rows(text, where, error)
    columns, metric_names = _metric_columns(header, where, error)
    qid, cat, rank_col = columns["query_id"], columns["category"], columns["first_gold_rank"]
    query_col, abstained_col = columns.get("query"), columns.get("abstained")
    top_col, retrieved_col = columns.get("top_score"), columns.get("retrieved")
    metric_cols = [columns[m] for m in metric_names]
    human_names = [name for name in metric_names if human_column(name) in columns]
    human_cols = [columns[human_column(name)] for name in human_names]
    human_values = array("d")
    position: dict[str, int] = {}
    lines: list[int] = []
    categories, queries, ranks, abstained, tops = [], [], [], [], []
    values = array("d")  # row after row; rows are streamed so a large file is never held as strings twice
    missing = [math.nan] * len(metric_names)
    for i, (line, row) in enumerate(rows):
        query_id = row[qid]
        if not query_id:
            raise error(where, "has an empty query_id", line=line,
                               fix="re-run the score stage; do not edit per_query.csv")
        if query_id in position:
            raise error(where, f"repeats query_id {query_id!r} (first on line {lines[position[query_id]]}); "
                               "which of the two rows counts is unknowable", line=line,
                               fix="re-run the score stage; a per_query.csv holds one row per query")
        position[query_id] = i
        lines.append(line)
        categories.append(row[cat])
        queries.append(row[query_col] if query_col is not None else "")
        abstained.append(abstained_col is not None and row[abstained_col] == "1")
        rank = row[rank_col]
        if rank and not (rank.isascii() and rank.isdigit() and int(rank) > 0):
            raise error(where, f"column 'first_gold_rank' of query {query_id!r} holds {rank!r}, "
                               "not a rank (a whole number from 1) or empty", line=line,
                               fix="re-run the score stage; do not edit per_query.csv")
        ranks.append(float(rank) if rank else math.inf)
        tops.append(_top_score(row, top_col, retrieved_col, query_id, where, line, error))
        if human_cols:
            human_values.extend(_human_cells(row, human_names, human_cols, query_id, where, line, error))
        if row[cat] == Category.NO_ANSWER.value:
            values.extend(missing)
            continue
        for name, col in zip(metric_names, metric_cols, strict=True):
            cell = row[col]
            try:
                value = float(cell)
            except ValueError:
                value = math.nan
            if not math.isfinite(value):
                shown = "an empty cell" if not cell.strip() else repr(cell)
                raise error(where, f"column {name!r} of query {query_id!r} holds {shown}, not a "
                                   "finite number", line=line,
                                   fix="re-run the score stage; every answerable query has a number in "
                                   "every metric column")
            values.append(value)
    import numpy as np  # here: the score stage, which writes this file, starts without numpy

    matrix = (np.frombuffer(values, dtype=np.float64) if values else np.empty(0)).reshape(len(lines), len(metric_names))
    human_matrix = None
    if human_cols:
        human_matrix = (np.frombuffer(human_values, dtype=np.float64) if human_values
                        else np.empty(0)).reshape(len(lines), len(human_names))
    return PerQuery(metric_names=metric_names, position=position, lines=lines, categories=categories,
                    queries=queries, first_gold_rank=ranks, abstained=abstained, top_score=tops, values=matrix,
                    human_names=human_names, human_values=human_matrix)


def _human_cells(row: list[str], names: list[str], columns: list[int], query_id: str, where: str, line: int,
                 error: type[InputError]) -> list[float]:
    """One row's ``human.`` cells: all empty (the person did not label the query: NaN) or all finite numbers."""
    cells = [row[col] for col in columns]
    if not any(cells):
        return [math.nan] * len(cells)
    out = []
    for name, cell in zip(names, cells, strict=True):
        try:
            value = float(cell)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            shown = "an empty cell" if not cell.strip() else repr(cell)
            raise error(where, f"column {human_column(name)!r} of query {query_id!r} holds {shown}, not a finite "
                               "number; a query the person labelled has a number in every human. column, one "
                               "they did not has none", line=line,
                        fix="re-run the score stage; do not edit per_query.csv")
        out.append(value)
    return out


def _top_score(row: list[str], top_col: int | None, retrieved_col: int | None, query_id: str, where: str, line: int,
               error: type[InputError]) -> float:
    """One row's top_score, as :class:`PerQuery` holds it; a cell that is not a finite number is refused."""
    retrieved = row[retrieved_col] if retrieved_col is not None else ""
    if retrieved == "0":
        return -math.inf
    cell = row[top_col] if top_col is not None else ""
    if not cell:
        return math.nan
    try:
        value = float(cell)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise error(where, f"column 'top_score' of query {query_id!r} holds {cell!r}, not a finite number",
                    line=line, fix="re-run the score stage; do not edit per_query.csv")
    return value
