"""The review sheet of ``judgments sample``: a random sample of machine-judged queries for a person to grade.

The drawing: the machine judgments' query ids, sorted, drawn with ``random.Random(seed).sample(ids, n)``,
a uniform sample without replacement, which the intervals of machine labels assume. Every row records the
drawing: ``draw`` (the query's place in it), ``seed``, ``of`` (the SHA-256 of the machine judgments file)
and ``n``, so a sheet sorted or filtered in a spreadsheet still says where it came from.

One row per sampled query and pooled passage (``NAME.pool.jsonl``), in drawing order: ``query_id``,
``query``, ``document``, ``start``, ``end``, ``passage``, the judge's ``judge_grade`` and ``judge_quote``,
then ``grade``, ``quote`` and ``note``, empty, for the person. Every text cell is neutralised against
spreadsheet formulas (groundkit/labels/_safe.py) and read back exactly.
"""

from __future__ import annotations

import csv
import io
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groundkit.errors import ReviewError
from groundkit.labels._safe import neutral_cell, read_cell

COLUMNS = ["query_id", "query", "document", "start", "end", "passage", "judge_grade", "judge_quote", "grade",
           "quote", "note", "draw", "seed", "of", "n"]
MAX_GRADE = 3


def draw(query_ids: Sequence[str], n: int, seed: int) -> list[str]:
    """``n`` of ``query_ids`` drawn uniformly without replacement, in drawing order."""
    return random.Random(seed).sample(sorted(query_ids), n)


def sheet_text(drawn: Sequence[str], rows: Sequence[Mapping[str, Any]], *, seed: int, of: str) -> str:
    """The sheet (RFC 4180, LF line ends): the pool rows of the drawn queries, in drawing order."""
    by_query: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        by_query.setdefault(str(row["query_id"]), []).append(row)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    for place, query_id in enumerate(drawn, start=1):
        for row in by_query.get(query_id, []):
            quote = row["quote"]
            writer.writerow([neutral_cell(str(v)) for v in (
                query_id, row["query"], row["document"], row["start"], row["end"], row["text"], row["grade"],
                "" if quote is None else quote, "", "", "", place, seed, of, len(drawn))])
    return buffer.getvalue()


@dataclass(frozen=True)
class Graded:
    """One row as the person left it."""

    line: int
    query_id: str
    query: str
    document: str
    start: int
    end: int
    passage: str
    grade: int
    quote: str
    note: str


@dataclass(frozen=True)
class Sheet:
    """A sheet read back: its drawing and its rows."""

    seed: int
    of: str
    n: int
    drawn: list[str]
    rows: list[Graded]


def read_sheet(path: Path) -> Sheet:
    """The sheet at ``path``, every row graded.

    Raises:
        ReviewError: naming the line and column: columns changed, a grade missing or outside 0 to 3, a
            quote without a grade of 1 or more (or the reverse), a drawing that differs from row to row.
    """
    fix = ("grade every row: 0 (does not help) to 3 (answers fully); for 1 or more, copy the shortest verbatim "
           "text of the passage that answers into quote")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise ReviewError(path, "is not valid UTF-8", fix="save the sheet as UTF-8 (CSV)") from None
    except OSError as exc:
        raise ReviewError(path, f"cannot be read ({exc.strerror})", fix="name the sheet judgments sample wrote"
                          ) from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    if reader.fieldnames != COLUMNS:
        raise ReviewError(path, f"has the columns {reader.fieldnames}, not those judgments sample writes "
                          f"({', '.join(COLUMNS)})", line=1, fix="keep the columns and their order; fill in grade, "
                          "quote and note only")
    rows, drawing, drawn = [], None, {}
    for raw in reader:
        line = reader.line_num
        if None in raw or any(value is None for value in raw.values()):
            raise ReviewError(path, "does not have one cell per column", line=line, fix=fix)
        row = {k: read_cell(v) for k, v in raw.items()}
        try:
            ints = {k: int(row[k]) for k in ("start", "end", "draw", "seed", "n")}
        except ValueError:
            raise ReviewError(path, "start, end, draw, seed or n is not a whole number", line=line,
                              fix="leave the columns judgments sample filled as they are") from None
        this = (ints["seed"], row["of"], ints["n"])
        if drawing is None:
            drawing = this
        elif this != drawing:
            raise ReviewError(path, "holds rows of two drawings (seed, of, n differ from the first row's)",
                              line=line, fix="review one sheet of judgments sample at a time")
        drawn[row["query_id"]] = ints["draw"]
        grade_text = row["grade"].strip()
        if not grade_text.isdigit() or int(grade_text) > MAX_GRADE:
            raise ReviewError(path, f"grade is {row['grade']!r}, not a whole number from 0 to {MAX_GRADE}", line=line,
                              key="grade", fix=fix)
        grade, quote = int(grade_text), row["quote"].strip()
        if grade and not quote:
            raise ReviewError(path, f"grade {grade} without a quote", line=line, key="quote", fix=fix)
        if not grade and quote:
            raise ReviewError(path, "a quote with grade 0", line=line, key="grade",
                              fix="grade the passage 1 or more, or clear the quote")
        rows.append(Graded(line, row["query_id"], row["query"], row["document"], ints["start"], ints["end"],
                           row["passage"], grade, quote, row["note"]))
    if drawing is None:
        raise ReviewError(path, "holds no rows", fix="review the sheet judgments sample wrote")
    order = sorted(drawn, key=drawn.__getitem__)
    return Sheet(drawing[0], drawing[1], drawing[2], order, rows)
