"""TREC run and qrels files, the formats trec_eval and ir_measures read.

Run: ``query_id Q0 passage_id rank score tag``, ranks 1..n per query in
groundkit's order, the tag being the retriever kind's (see retrieval/kinds.py).
A run that gave ranks and no scores (an external run) writes ``-rank`` in the
score column: the column must hold a number, trec_eval and ir_measures order
by it, and ``-rank`` orders exactly as the ranks do while no reader can take it
for a similarity the other system computed. Qrels: ``query_id 0 chunk_id grade``, the grade being
1 unless the judgments give grades (see scoring/score.py for a passage's grade). An external run's qrels
also hold placeholder ids ``gold-<hex>`` standing for gold spans, enough to
bring each answerable query's relevant count up to groundkit's ideal count
(see ``scoring.score.score_run``). No run contains them; they keep every
answerable query in the file and give trec_eval groundkit's ideal DCG.

groundkit reads the rank column, never re-sorting by score; trec_eval sorts by
score and breaks ties by docno, so the two agree whenever a query's scores
are distinct.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from groundkit.artifacts.atomic import atomic_write_text
from groundkit.artifacts.lines import artifact_bytes, decoded
from groundkit.errors import ArtifactError

if TYPE_CHECKING:
    import numpy as np

Ranking = list[tuple[str, float]]


def _as_read(ranking: Sequence[tuple[str, float | None]]) -> Sequence[tuple[str, float]]:
    """``ranking`` as :func:`read_run` parses its lines back: ``(str, float)`` pairs, a score of None as ``-rank``.

    A ranking that already is such pairs (a search's) is returned as it is, checked in three passes in C.
    """
    if set(map(type, ranking)) == {tuple} and set(map(type, map(_SCORE, ranking))) == {float} \
            and set(map(type, map(_ID, ranking))) == {str}:
        return ranking  # type: ignore[return-value]  # every score is a float, checked just above
    scores = [float(-rank if score is None else score) for rank, (_, score) in enumerate(ranking, start=1)]
    return list(zip(map(str, map(_ID, ranking)), scores, strict=True))


def _columns(pairs: Sequence[tuple[str, float]]) -> tuple[list[str], list[float], np.ndarray]:
    """The ids and scores of ``pairs`` (as :func:`_as_read` gives them), and the scores as a float64 array.

    Columns by itemgetter: half the cost of ``zip(*pairs)``, which passes a thousand pairs as arguments.
    """
    import numpy as np  # here, not at the top: the score stage reads runs, and starts without numpy

    ids, scores = list(map(_ID, pairs)), list(map(_SCORE, pairs))
    return ids, scores, np.fromiter(scores, dtype=np.float64, count=len(scores))


def _query_text(query_id: str, ids: list[str], scores: list[float], values: np.ndarray, tag: str) -> str:
    """The lines of one query's ranking, given as :func:`_columns`, as one text, each line
    ``query_id Q0 passage_id rank score tag`` ending in LF: the middle of each line is joined in C, the
    query's head and the tag put between lines once (a depth-1000 run is 300,000 lines)."""
    head, tail = f"{query_id} Q0 ", f" {tag}\n"
    middles = map("".join, zip(ids, _ranks(len(ids)), score_texts(scores, values), strict=True))
    return f"{head}{(tail + head).join(middles)}{tail}"


def score_texts(scores: list[float], values: np.ndarray | None = None) -> Sequence[str]:
    """``repr`` of each score, the same text (tests/retrieval/test_trec.py compares millions), four times faster.

    Where every score is finite and zero or of magnitude within [1e-4, 1e16), the range in which ``repr``
    writes no exponent, orjson writes them all in one call: like ``repr``, it writes the shortest digits that
    read back as the same float, the closest to it where several are as short. Outside that range the two
    write exponents differently (``1e-05`` against ``1e-5``), so such a ranking goes through ``repr``. A
    depth-1000 run writes 300,000 scores; ``repr`` was half of writing the run. orjson comes with DVC.
    ``values``, when given, is ``scores`` as a float64 array.
    """
    if not scores:
        return []
    import numpy as np  # see _columns
    import orjson

    if values is None:
        values = np.fromiter(scores, dtype=np.float64, count=len(scores))
    magnitudes = np.abs(values)
    if bool(np.all(((magnitudes >= 1e-4) & (magnitudes < 1e16)) | (values == 0))):  # NaN fails both tests
        return orjson.dumps(scores)[1:-1].decode("ascii").split(",")
    return list(map(repr, scores))


def _ranks(depth: int) -> list[str]:
    """``[" 1 ", " 2 ", ..., f" {depth} "]``: the rank column with the spaces around it."""
    global _RANK_COLUMN
    if len(_RANK_COLUMN) < depth:
        _RANK_COLUMN = [f" {rank} " for rank in range(1, max(depth, 2 * len(_RANK_COLUMN)) + 1)]  # one rebinding
    return _RANK_COLUMN[:depth]


_RANK_COLUMN: list[str] = []


def write_run(path: str | Path, rankings: Mapping[str, Sequence[tuple[str, float | None]]], tag: str) -> Written:
    """Write and seal a TREC run, queries in the mapping's order; return the digest of the bytes written and
    the rankings as :func:`read_run` parses them back (before it checks their ids against what it knows).

    A score is written as the shortest text that reads back as the same float (Python's ``repr``):
    rounding to a fixed number of decimals would make scores that differ only past the last decimal
    look tied, and trec_eval or ir_measures would then order them by document id, not as ranked. A score
    of None is written as ``-rank``. Ids must hold no whitespace (query ids, content ids and run tags do
    not), or the file would not have six columns.

    It writes only what :func:`read_run` accepts: every ranking's ids distinct and its scores finite and
    never rising. Retrievers' results are ordered and checked before they get here, so a ranking that is
    not is a fault of groundkit's (a ValueError), not a file to be refused later.
    """
    import numpy as np  # see _columns

    blocks: list[str] = []
    as_read: dict[str, tuple[tuple[str, float], ...]] = {}
    for query_id, ranking in rankings.items():
        if ranking:
            pairs = _as_read(ranking)
            as_read[query_id] = tuple(pairs)
            ids, scores, values = _columns(pairs)
            if len(set(ids)) != len(ids) or not bool(np.isfinite(values).all()) \
                    or bool((values[1:] > values[:-1]).any()):
                raise ValueError(f"the ranking of query {query_id!r} repeats a passage, or its scores are not finite "
                                 "and falling")
            blocks.append(_query_text(query_id, ids, scores, values, tag))
    digest = atomic_write_text(path, "".join(blocks), seal=True)
    assert digest is not None
    return Written(digest, as_read)


class Written(NamedTuple):
    """What :func:`write_run` wrote: the SHA-256 of the file, and its rankings as ``(str, float)`` pairs (a score of
    None as ``-rank``), queries with no result left out."""

    digest: str
    rankings: dict[str, tuple[tuple[str, float], ...]]


_ID, _SCORE = operator.itemgetter(0), operator.itemgetter(1)


def qrels_lines(qrels: Mapping[str, Mapping[str, int]]) -> Iterable[str]:
    """Lines of a TREC qrels file, ids sorted within each query; a query with no id writes no line."""
    for query_id, grades in qrels.items():
        for chunk_id in sorted(grades):
            yield f"{query_id} 0 {chunk_id} {grades[chunk_id]}"


def read_run(
    path: str | Path,
    query_ids: Sequence[str],
    passage_ids: set[str] | None = None,
    *,
    listed_in: str = "chunks.jsonl",
    producer: str = "retrieve",
) -> dict[str, Ranking]:
    """Parse and check a run written by the ``producer`` stage.

    Every query in ``query_ids`` gets an entry (empty when nothing was
    retrieved). Ranks must run 1..n in file order and scores must not rise
    (they may be zero or negative: a cosine can be). Every id must be one of
    ``passage_ids`` (those of the file ``listed_in``), at most once per query.
    """
    path = Path(path)
    data, _ = artifact_bytes(path, producer, sealed=True)
    parsed = parse_run(path, decoded(path, data, producer), query_ids, passage_ids, listed_in, producer)
    return {query_id: list(ranking) for query_id, ranking in parsed.items()}


def knows(rankings: Mapping[str, Sequence[tuple[str, float]]], query_ids: Sequence[str],
          passage_ids: set[str] | None) -> bool:
    """Whether every query of ``rankings`` is one of ``query_ids`` and every passage one of ``passage_ids``:
    what :func:`parse_run` checks of a run's ids besides their form (None: the passages are not known)."""
    return passage_ids is not None and set(query_ids).issuperset(rankings) and \
        all(passage_ids.issuperset(map(_ID, ranking)) for ranking in rankings.values())


def parse_run(path: Path, text: str, query_ids: Sequence[str], passage_ids: set[str] | None, listed_in: str,
               producer: str) -> dict[str, tuple[tuple[str, float], ...]]:
    fix = f"delete it and re-run the {producer} stage (dvc repro -f -s {producer})"
    known = set(query_ids)
    rankings: dict[str, Ranking] = {q: [] for q in query_ids}
    seen_done: set[str] = set()
    current: str | None = None
    ranked: set[str] = set()  # ids of the current query: a set, since a ranking may be 100,000 deep
    for number, line in enumerate(text.split("\n")[:-1], start=1):
        parts = line.split(" ")
        if len(parts) != 6 or parts[1] != "Q0":
            raise ArtifactError(path, "is not a six-column TREC run line", line=number, fix=fix)
        query_id, _, chunk_id, rank_text, score_text, _tag = parts
        if query_id not in known:
            raise ArtifactError(path, f"names unknown query {query_id!r}", line=number, fix=fix)
        if query_id != current:
            if query_id in seen_done:
                raise ArtifactError(path, f"query {query_id!r} appears in two separate blocks", line=number, fix=fix)
            if current is not None:
                seen_done.add(current)
            current, ranked = query_id, set()
        try:
            rank, score = int(rank_text), float(score_text)
        except ValueError:
            raise ArtifactError(path, "rank or score is not a number", line=number, fix=fix) from None
        ranking = rankings[query_id]
        if rank != len(ranking) + 1:
            expected = len(ranking) + 1
            raise ArtifactError(path, f"rank {rank} out of sequence (expected {expected})", line=number, fix=fix)
        if ranking and score > ranking[-1][1]:
            raise ArtifactError(path, "score rises within a query's ranking", line=number, fix=fix)
        if not math.isfinite(score):
            raise ArtifactError(path, "score is not a finite number", line=number, fix=fix)
        if passage_ids is not None and chunk_id not in passage_ids:
            raise ArtifactError(path, f"names passage {chunk_id!r}, which is not in {listed_in}", line=number, fix=fix)
        if chunk_id in ranked:
            raise ArtifactError(path, f"passage {chunk_id!r} is ranked twice for {query_id!r}", line=number, fix=fix)
        ranked.add(chunk_id)
        ranking.append((chunk_id, score))
    return {query_id: tuple(ranking) for query_id, ranking in rankings.items()}
