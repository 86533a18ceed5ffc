"""External runs: ranked passages produced by any other system, scored by groundkit.

A run file is JSONL, one retrieved passage per line::

    {"query_id": "q001", "rank": 1, "document": "snapshots/backup-snapshots.md", "start": 120, "end": 480}
    {"query_id": "q001", "rank": 2, "document": "leases/lease-basics.md", "text": "A lease is held by ..."}

``rank`` is 1-based and consecutive per query (lines may come in any order);
``document`` is a corpus-relative path; a passage is given either by character
offsets ``start``/``end`` (``[start, end)`` in the document's text) or by its
``text``, which must occur exactly once in the document and is located to
recover the offsets. A passage is relevant when it overlaps a gold span (the
rule groundkit applies to its own chunks). A query the run does not mention
retrieved nothing: it is scored as an abstention, like groundkit's own.

The whole file is checked before anything is scored; the first bad line stops
the run with its file and line. A file whose every line gives its passage by
offsets is read and checked in bulk (:func:`_read_offsets`); any other file,
and any file the bulk reader finds wrong in any way, is read one line at a
time, which is what names the bad line: a bad line near the top of a huge file
is reported without reading the rest. A file without a single passage is
refused: it would score every query as a miss.
The file is UTF-8 with LF line endings and no byte order mark, like every
file a user hands groundkit (groundkit/inputs/text.py says why).

Of the kinds of retriever, ``external`` is the one that reads instead of
searching: its :class:`RunReader` turns the file into a run of passages, keeping
each query's first ``retrieve.depth``. The run has ranks and no scores, and the
TREC run file says so (see groundkit/retrieval/trec.py).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groundkit.artifacts.models import assembled
from groundkit.corpus.passage import (
    Document,
    Excerpt,
    NotOnce,
    Passage,
    content_id,
    is_corpus_relative,
    locate_once,
)
from groundkit.errors import JSONLineError, RunFileError
from groundkit.inputs.jsonline import loads_line
from groundkit.inputs.suggest import near_path_text
from groundkit.inputs.text import decode_utf8_lf, utf8_lf_lines
from groundkit.retrieval.ports import Run

if TYPE_CHECKING:
    from groundkit.config import Params
    from groundkit.retrieval.kinds import RetrieverKind
    from groundkit.retrieval.ports import Engine, Sources

FIELDS = ("query_id", "rank", "document", "start", "end", "text")
FORMAT_FIX = ('each line is {"query_id": str, "rank": int, "document": "<corpus-relative path>"} plus either '
              '"start" and "end" (character offsets) or "text" (the passage, verbatim); see docs/external-runs.md in '
              "groundkit's guide")


def _fail(path: Path, number: int, problem: str, fix: str = FORMAT_FIX, key: str | None = None) -> RunFileError:
    return RunFileError(path, problem, line=number, fix=fix, key=key)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _show(value: object, limit: int = 60) -> str:
    """``repr`` of a value from the file, cut short: a message quotes a 400-digit rank or a long list by its head."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({type(value).__name__} of {len(text)} characters)"


def _locate(path: Path, number: int, document: Document, text: str) -> Passage:
    if not text.strip():
        raise _fail(path, number, "text is empty", key="text")
    found = locate_once(document, text)
    if isinstance(found, NotOnce) and found.count == 0:
        raise _fail(path, number, f"text not found in {document.path!r}: {text[:80]!r}"
                    f"{'...' if len(text) > 80 else ''}; {found.detail}",
                    fix="give the passage verbatim as the corpus holds it, or give start/end offsets instead",
                    key="text")
    if isinstance(found, NotOnce):
        raise _fail(path, number, f"text occurs {found.count} times in {document.path!r}, at {found.detail}, so "
                    "its position is ambiguous",
                    fix="give start/end offsets for this passage instead of its text", key="text")
    return found


def _passage(path: Path, number: int, record: dict, documents: Mapping[str, Document]) -> Excerpt:
    name = record["document"]
    if not isinstance(name, str) or not name:
        raise _fail(path, number, f"document must be a non-empty string, got {_show(name)}", key="document")
    if not is_corpus_relative(name):
        raise _fail(path, number, f"document {name!r} is not a corpus-relative path",
                    fix="write the path relative to the corpus root, e.g. 'storage/compaction.md'", key="document")
    document = documents.get(name)
    if document is None:
        raise _fail(path, number, f"document {name!r} is not a file in the corpus",
                    fix="use the corpus-relative path (case-sensitive) of a document in the corpus", key="document")
    has_offsets = "start" in record or "end" in record
    if has_offsets and "text" in record:
        raise _fail(path, number, "has both offsets and text; give one or the other")
    if not has_offsets and "text" not in record:
        raise _fail(path, number, "has neither start/end offsets nor text")
    if has_offsets:
        if "start" not in record or "end" not in record:
            raise _fail(path, number, "gives only one of start and end", key="start" if "start" in record else "end")
        start, end = record["start"], record["end"]
        if not (_is_int(start) and _is_int(end)):
            raise _fail(path, number, f"start and end must be integers, got {_show(start)} and {_show(end)}")
        if not 0 <= start < end <= len(document.text):
            raise _fail(path, number, f"offsets [{_show(start)}, {_show(end)}) are not a non-empty range inside "
                        f"{name!r} (0 <= start < end <= {len(document.text)})",
                        fix="offsets count characters (not bytes) of the document's text, end exclusive")
    else:
        text = record["text"]
        if not isinstance(text, str):
            raise _fail(path, number, f"text must be a string, got {_show(text)}", key="text")
        located = _locate(path, number, document, text)
        start, end = located.start, located.end
    return Excerpt(document=name, start=start, end=end, text=document.text[start:end])


EMPTY_FIX = ("write one JSON line per retrieved passage (see the guide's docs/external-runs.md); if this is the file "
             "you meant, the system that wrote it produced nothing or was cut off before its first line")


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """Each line's number and text, decoded one line at a time under the policy of every file users hand us."""
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise RunFileError(path, f"cannot be read ({exc.strerror})", fix="check the file's permissions") from None
    with handle:
        yield from utf8_lf_lines(path, handle, error=RunFileError, hashed_as="the run's SHA-256 in run.json")


def read_external_run(
    path: str | Path, documents: Mapping[str, Document], query_ids: Sequence[str]
) -> dict[str, list[Excerpt]]:
    """Parse and check an external run; every query in ``query_ids`` gets a (possibly empty) ranking.

    Raises:
        RunFileError: naming the line of the first problem, or the file when it holds no passage.
    """
    path = Path(path)
    if not path.is_file():
        problem = "is a directory, not a run file" if path.is_dir() else \
            f"run file does not exist{near_path_text(path)}"
        raise RunFileError(path, problem, fix="check the path (retrieve.run or score-run's RUN)")
    bulk = _read_offsets(path, documents, query_ids)
    return bulk if bulk is not None else _read_line_by_line(path, documents, query_ids)


def _read_line_by_line(path: Path, documents: Mapping[str, Document],
                       query_ids: Sequence[str]) -> dict[str, list[Excerpt]]:
    """:func:`read_external_run` one line at a time: any run file, the first bad line named."""
    known = set(query_ids)
    by_query: dict[str, dict[int, tuple[int, Excerpt]]] = {}
    for number, line in _lines(path):
        if not line.strip():
            continue
        try:
            record = loads_line(line)
        except JSONLineError as exc:
            raise _fail(path, number, exc.problem) from None
        if not isinstance(record, dict):
            raise _fail(path, number, f"expected a JSON object, got {type(record).__name__}")
        unknown = sorted(set(record) - set(FIELDS))
        if unknown:
            raise _fail(path, number, f"unknown field {_show(unknown[0])} (a typo?)", key=unknown[0])
        for field in ("query_id", "rank", "document"):
            if field not in record:
                raise _fail(path, number, f"{field} is required but missing", key=field)
        query_id, rank = record["query_id"], record["rank"]
        if not isinstance(query_id, str):
            raise _fail(path, number, f"query_id must be a string, got {_show(query_id)}",
                        fix="use the query_id values of the judgments file, as JSON strings", key="query_id")
        if query_id not in known:
            raise _fail(path, number, f"query_id {_show(query_id)} is not a query of the judgments",
                        fix="use the query_id values of the judgments file", key="query_id")
        if not _is_int(rank) or rank < 1:
            raise _fail(path, number, f"rank must be an integer from 1, got {_show(rank)}", key="rank")
        ranks = by_query.setdefault(query_id, {})
        if rank in ranks:
            raise _fail(path, number,
                        f"query {query_id!r} has rank {_show(rank)} twice (first on line {ranks[rank][0]})",
                        fix="number each query's passages 1, 2, 3, ... without repeats", key="rank")
        passage = _passage(path, number, record, documents)
        for other_line, other in ranks.values():
            if other.passage_id == passage.passage_id:
                raise _fail(path, number, f"query {query_id!r} ranks the same passage twice (also line {other_line})",
                            fix="list each passage once per query")
        ranks[rank] = (number, passage)
    if not by_query:
        raise RunFileError(path, "holds no passages (it is empty or blank), so no query was answered and every "
                           "answerable query would score 0", fix=EMPTY_FIX)
    rankings: dict[str, list[Excerpt]] = {q: [] for q in query_ids}
    for query_id, ranks in by_query.items():
        ordered = sorted(ranks)
        for expected, rank in enumerate(ordered, start=1):
            if rank != expected:
                raise _fail(path, ranks[rank][0], f"query {query_id!r} has rank {_show(rank)} but no rank {expected}",
                            fix="number each query's passages 1, 2, 3, ... without gaps", key="rank")
        rankings[query_id] = [ranks[rank][1] for rank in ordered]
    return rankings


OFFSET_FIELDS = ("query_id", "rank", "document", "start", "end")
_KEY = re.compile(r'"[ \t]*:')
FIRST_LINE_BYTES = 1 << 20


def _read_offsets(path: Path, documents: Mapping[str, Document],
                  query_ids: Sequence[str]) -> dict[str, list[Excerpt]] | None:
    """The run of a file whose every line gives a passage by offsets, read and checked in bulk; else None.

    None for any other file, and for one that breaks any rule of :func:`read_external_run`: the line-by-line
    reader then reads it and names the first bad line. So the two accept the same files with the same result
    and refuse the rest with the same messages (tests/retrieval/test_external.py holds them to it). The bulk
    reader checks columns at once where the line reader checks each line, and builds each distinct passage
    once, unvalidated (``assembled``), from offsets it has checked.
    """
    import numpy as np  # here, not at the top: most stages that import this module never read a run
    import orjson
    import pandas as pd

    try:
        with path.open("rb") as handle:  # a first line of something else: the line reader stops there at once
            first = handle.readline(FIRST_LINE_BYTES)
        if not _offsets_line(orjson, first):
            return None
        text = decode_utf8_lf(path, path.read_bytes(), error=RunFileError, hashed_as="the run's SHA-256")
    except (OSError, RunFileError):
        return None
    lines = [line for line in text.split("\n") if line.strip()]
    try:
        records = [orjson.loads(line) for line in lines]
        # Every record has exactly these keys, each written once: a key given twice keeps one value in a dict
        # (the line reader refuses it), so the file must hold no more keys than the records do.
        columns = {field: [record[field] for record in records] for field in OFFSET_FIELDS}
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None
    if not records or _keys_written(text) != len(OFFSET_FIELDS) * len(records) or \
            any(set(map(type, columns[f])) != {t} for f, t in zip(OFFSET_FIELDS, (str, int, str, int, int),
                                                                 strict=True)):
        return None
    queries, names = columns["query_id"], columns["document"]
    by_name = {name: documents.get(name) for name in set(names)}
    if not set(queries) <= set(query_ids) or any(
            document is None or not is_corpus_relative(name) for name, document in by_name.items()):
        return None
    try:
        rank, start, end = (np.array(columns[f], dtype=np.int64) for f in ("rank", "start", "end"))
    except OverflowError:
        return None
    query_codes, _ = pd.factorize(np.array(queries, dtype=object))
    document_codes, distinct = pd.factorize(np.array(names, dtype=object))
    lengths = np.array([len(by_name[name].text) for name in distinct], dtype=np.int64)  # type: ignore[union-attr]
    if not bool(((0 <= start) & (start < end) & (end <= lengths[document_codes])).all()):
        return None
    # Each query's ranks, in order, must be 1, 2, 3, ...: none repeated, none missing, none below 1.
    order = np.lexsort((rank, query_codes))
    opens = np.concatenate(([True], query_codes[order][1:] != query_codes[order][:-1]))
    rows = np.arange(len(order))
    if not bool((rank[order] == rows - np.maximum.accumulate(np.where(opens, rows, 0)) + 1).all()):
        return None
    if bool(pd.DataFrame({"q": query_codes, "d": document_codes, "s": start, "e": end}).duplicated().any()):
        return None  # a query ranks one passage twice
    # Each distinct passage is built once, then handed to every query that ranks it, in rank order.
    frame = pd.DataFrame({"d": document_codes, "s": start, "e": end})
    passage_codes = frame.groupby(["d", "s", "e"], sort=False).ngroup().to_numpy()
    firsts = np.flatnonzero(np.concatenate(([True], np.diff(np.sort(passage_codes)) != 0)))
    first_row = np.empty(len(firsts), dtype=np.int64)
    first_row[passage_codes[::-1]] = np.arange(len(passage_codes))[::-1]  # the first row of each passage
    made = np.empty(len(first_row), dtype=object)
    for code, row in enumerate(first_row.tolist()):
        name, begin, stop = names[row], columns["start"][row], columns["end"][row]
        text_of = by_name[name].text[begin:stop]  # type: ignore[union-attr]
        made[code] = assembled(Excerpt, {"document": name, "start": begin, "end": stop, "text": text_of,
                                         "passage_id": content_id(name, begin, stop, text_of)})
    ranked = made[passage_codes[order]].tolist()
    bounds = [*np.flatnonzero(opens).tolist(), len(order)]
    rankings: dict[str, list[Excerpt]] = {query_id: [] for query_id in query_ids}
    for at, until in itertools.pairwise(bounds):
        rankings[queries[order[at]]] = ranked[at:until]
    return rankings


def _keys_written(text: str) -> int:
    """How many times a key is written in ``text`` (at least: a string holding ``":`` counts as one more).

    Each key ends with a quote, then a colon, perhaps with spaces or tabs between; without such spaces anywhere
    (json.dumps writes none), counting ``":`` in C is enough, and the pattern is read only otherwise.
    """
    if " :" not in text and "\t:" not in text:
        return text.count('":')
    return len(_KEY.findall(text))


def _offsets_line(orjson: Any, line: bytes) -> bool:
    """Whether ``line`` is a passage given by offsets, which the bulk reader reads (others go line by line)."""
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return isinstance(record, dict) and set(record) == set(OFFSET_FIELDS)


class RunReader:
    """The ``external`` kind: the run ``retrieve.run`` holds, read instead of retrieving."""

    def __init__(self, path: str | Path, sources: Sources) -> None:
        self.path, self.sources = path, sources

    def rank(self, queries: Sequence[tuple[str, str]], depth: int) -> Run:
        """The run cut to ``depth`` per query, as passage ids without scores, and the passages it ranks."""
        documents = {d.path: d for d in self.sources.documents()}
        rankings: dict[str, list[tuple[str, float | None]]] = {}
        passages: dict[str, Excerpt] = {}
        for query_id, ranked in read_external_run(self.path, documents, [q for q, _ in queries]).items():
            rankings[query_id] = [(p.passage_id, None) for p in ranked[:depth]]
            passages.update((p.passage_id, p) for p in ranked[:depth])
        return Run(rankings, sorted(passages.values(), key=lambda p: (p.document, p.start, p.end)))


def ranker(kind: RetrieverKind, sources: Sources, params: Params, engine: Engine) -> RunReader:
    """The ``external`` kind's ranker: it reads ``retrieve.run``."""
    return RunReader(params.retrieve.run, sources)
