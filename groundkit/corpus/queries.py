"""Queries nobody labelled: a query log to rank passages for (``groundkit run --queries``) and to judge.

Two forms, told apart by the first non-blank line:

* JSONL: one object a line with ``query_id`` and ``query``; other keys are ignored, so a judgments file
  works too. Ids follow the judgments' rule (they are written into TREC files).
* Plain text: one query a line. A query's id is ``q`` plus the first 10 hex digits of the SHA-256 of its
  text (UTF-8, the line without its line break and surrounding whitespace), so the same log gives the
  same ids whatever its order. A query written twice is one query.

Queries are returned sorted by id, the order a judgments file keeps.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from groundkit.corpus.judgments import QUERY_ID, Category, Judgment
from groundkit.errors import JSONLineError, JudgmentsError
from groundkit.inputs.jsonline import loads_line
from groundkit.inputs.suggest import near_path_text
from groundkit.inputs.text import decode_utf8_lf

ID_DIGITS = 10


@dataclass(frozen=True)
class Query:
    """One query to rank and judge."""

    query_id: str
    query: str


def query_id_of(text: str) -> str:
    """A plain query's id: ``q`` and the first 10 hex digits of the SHA-256 of its text."""
    return "q" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:ID_DIGITS]


def read_queries(path: str | Path) -> list[Query]:
    """The queries of a JSONL or plain-text file, sorted by id.

    Raises:
        JudgmentsError: naming the line: bad JSON, a missing or empty field, an id unfit for a TREC file,
            one id for two texts; or a file without queries.
    """
    path = Path(path)
    if not path.is_file():
        raise JudgmentsError(path, f"queries file does not exist{near_path_text(path)}",
                             fix="name a JSONL file (query_id, query) or a text file with one query a line")
    text = decode_utf8_lf(path, path.read_bytes(), error=JudgmentsError, hashed_as="the queries' ids")
    lines = text.split("\n")
    first = next((line for line in lines if line.strip()), None)
    if first is None:
        raise JudgmentsError(path, "holds no queries (the file is empty or blank)", fix="write one query a line")
    read = _jsonl if first.lstrip().startswith("{") else _plain
    found: dict[str, tuple[str, int]] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        query_id, query = read(path, number, line)
        if query_id in found and found[query_id][0] != query:
            raise JudgmentsError(path, f"query_id {query_id!r} names two different queries (first on line "
                                 f"{found[query_id][1]})", line=number, fix="give every query its own id")
        found.setdefault(query_id, (query, number))
    return [Query(query_id, found[query_id][0]) for query_id in sorted(found)]


def _plain(path: Path, number: int, line: str) -> tuple[str, str]:
    query = line.strip()
    return query_id_of(query), query


def _jsonl(path: Path, number: int, line: str) -> tuple[str, str]:
    fix = 'write one object a line: {"query_id": "q1", "query": "..."} (or a text file with one query a line)'
    try:
        raw = loads_line(line)
    except JSONLineError as exc:
        raise JudgmentsError(path, exc.problem, line=number, fix=fix) from None
    if not isinstance(raw, dict):
        raise JudgmentsError(path, "is not a JSON object", line=number, fix=fix)
    query_id, query = raw.get("query_id"), raw.get("query")
    for key, value in (("query_id", query_id), ("query", query)):
        if not isinstance(value, str) or not value.strip():
            raise JudgmentsError(path, f"{key} is {json.dumps(value)}, not a non-empty string", line=number,
                                 key=key, fix=fix)
    assert isinstance(query_id, str) and isinstance(query, str)
    if not QUERY_ID.match(query_id):
        raise JudgmentsError(path, f"query_id {query_id!r} holds a character a TREC file cannot carry", line=number,
                             key="query_id", fix="use letters, digits, '.', '_', ':' or '-', starting with a "
                                                 "letter or digit")
    return query_id, query


def as_judgments(queries: list[Query]) -> list[Judgment]:
    """The queries as judgments without gold: what the pipeline's steps rank (``no_answer``, nothing to score)."""
    return [Judgment(query_id=q.query_id, query=q.query, category=Category.NO_ANSWER, gold=[]) for q in queries]
