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
the run with its file and line. Lines are read one at a time, so a bad line
near the top of a huge file is reported without reading the rest. A file
without a single passage is refused: it would score every query as a miss.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path, PurePosixPath

from groundkit._json import loads_line
from groundkit.corpus.passage import Chunk, Document
from groundkit.corpus.spans import _line_col, _near_miss
from groundkit.errors import JSONLineError, RunFileError

FIELDS = ("query_id", "rank", "document", "start", "end", "text")
FORMAT_FIX = ('each line is {"query_id": str, "rank": int, "document": "<corpus-relative path>"} plus either '
              '"start" and "end" (character offsets) or "text" (the passage, verbatim); see examples/README.md')


def _fail(path: Path, number: int, problem: str, fix: str = FORMAT_FIX, key: str | None = None) -> RunFileError:
    return RunFileError(path, problem, line=number, fix=fix, key=key)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _show(value: object, limit: int = 60) -> str:
    """``repr`` of a value from the file, cut short: a message quotes a 400-digit rank or a long list by its head."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({type(value).__name__} of {len(text)} characters)"


def _locate(path: Path, number: int, document: Document, text: str) -> int:
    if not text.strip():
        raise _fail(path, number, "text is empty", key="text")
    first = document.text.find(text)
    if first < 0:
        raise _fail(path, number, f"text not found in {document.path!r}: {text[:80]!r}"
                    f"{'...' if len(text) > 80 else ''}; {_near_miss(text, document.text)}",
                    fix="give the passage verbatim as the corpus holds it, or give start/end offsets instead",
                    key="text")
    starts = [first]
    nxt = document.text.find(text, first + 1)
    while nxt >= 0 and len(starts) < 5:
        starts.append(nxt)
        nxt = document.text.find(text, nxt + 1)
    if len(starts) > 1:
        places = ", ".join(f"{_line_col(document.text, s)} (offset {s})" for s in starts)
        raise _fail(path, number, f"text occurs {len(starts) if nxt < 0 else 'at least 5'} times in "
                    f"{document.path!r}, at line:col {places}, so its position is ambiguous",
                    fix="give start/end offsets for this passage instead of its text", key="text")
    return first


def _passage(path: Path, number: int, record: dict, documents: Mapping[str, Document]) -> Chunk:
    name = record["document"]
    if not isinstance(name, str) or not name:
        raise _fail(path, number, f"document must be a non-empty string, got {_show(name)}", key="document")
    posix = PurePosixPath(name)
    if posix.is_absolute() or ".." in posix.parts or "\\" in name:
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
        start = _locate(path, number, document, text)
        end = start + len(text)
    return Chunk(document=name, start_offset=start, end_offset=end, text=document.text[start:end])


EMPTY_FIX = ("write one JSON line per retrieved passage (see examples/README.md); if this is the file you meant, "
             "the system that wrote it produced nothing or was cut off before its first line")


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """Each line's number and text (without its LF), decoded one line at a time; a UTF-8 BOM is dropped."""
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise RunFileError(path, f"cannot be read ({exc.strerror})", fix="check the file's permissions") from None
    with handle:
        for number, raw in enumerate(handle, start=1):
            # A multi-byte UTF-8 character never contains the byte 0x0a, so splitting bytes at LF is safe.
            data = raw.removesuffix(b"\n")
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise RunFileError(path, f"is not valid UTF-8 (byte 0x{data[exc.start]:02x})",
                                   fix="write the file as UTF-8", line=number) from None
            yield number, text.removeprefix("\ufeff") if number == 1 else text


def read_external_run(
    path: str | Path, documents: Mapping[str, Document], query_ids: Sequence[str]
) -> dict[str, list[Chunk]]:
    """Parse and check an external run; every query in ``query_ids`` gets a (possibly empty) ranking.

    Raises:
        RunFileError: naming the line of the first problem, or the file when it holds no passage.
    """
    path = Path(path)
    if not path.is_file():
        problem = "is a directory, not a run file" if path.is_dir() else "run file does not exist"
        raise RunFileError(path, problem, fix="check the path (retrieve.run or score-run's RUN)")
    known = set(query_ids)
    by_query: dict[str, dict[int, tuple[int, Chunk]]] = {}
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
            if other.chunk_id == passage.chunk_id:
                raise _fail(path, number, f"query {query_id!r} ranks the same passage twice (also line {other_line})",
                            fix="list each passage once per query")
        ranks[rank] = (number, passage)
    if not by_query:
        raise RunFileError(path, "holds no passages (it is empty or blank), so no query was answered and every "
                           "answerable query would score 0", fix=EMPTY_FIX)
    rankings: dict[str, list[Chunk]] = {q: [] for q in query_ids}
    for query_id, ranks in by_query.items():
        ordered = sorted(ranks)
        for expected, rank in enumerate(ordered, start=1):
            if rank != expected:
                raise _fail(path, ranks[rank][0], f"query {query_id!r} has rank {_show(rank)} but no rank {expected}",
                            fix="number each query's passages 1, 2, 3, ... without gaps", key="rank")
        rankings[query_id] = [ranks[rank][1] for rank in ordered]
    return rankings
