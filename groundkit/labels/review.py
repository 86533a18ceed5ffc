"""``judgments sample`` and ``judgments review --apply``: a person checks a random sample of the machine labels.

``sample`` draws from the machine judgments file and writes the sheet (groundkit/labels/sheet.py).
``review --apply`` reads the graded sheet back and writes, for each sampled query, a person's judgment
into the human judgments file: its gold is the quotes graded 1 or more, each resolved exactly inside its
passage (extended as the judge's quotes are when the document repeats them), with ``"origin": "human"``
and ``"sample": {"seed", "of", "n"}``; a sampled query with nothing graded relevant is a ``no_answer``.
The machine labels are never touched. Applying the same sheet again replaces the judgments it wrote; a
query the human file already holds for another reason (written by hand, or by another drawing) is refused.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groundkit.corpus.judgments import Category, GoldSpan, Judgment, Origin, Sample, parse_judgments, pool_path
from groundkit.corpus.passage import Document, Excerpt
from groundkit.errors import ReviewError
from groundkit.labels.judging import resolve_quote
from groundkit.labels.sheet import Sheet, draw


@dataclass(frozen=True)
class Machine:
    """A machine judgments file read whole: its judgments, its SHA-256 and its pool rows."""

    path: Path
    judgments: list[Judgment]
    sha256: str
    rows: list[dict[str, Any]]


def read_machine(path: str | Path) -> Machine:
    """The machine judgments at ``path`` (every one ``origin: machine``) and the pool written beside them.

    Raises:
        JudgmentsError: the file is not a judgments file; ReviewError: a judgment is a person's, or the pool
            file is missing or is not the one ``judgments judge`` wrote with it.
    """
    from groundkit.corpus.judgments import judgments_bytes

    path = Path(path)
    data = judgments_bytes(path)
    judgments = parse_judgments(path, data)
    person = next((j for j in judgments if j.origin is not Origin.MACHINE), None)
    if person is not None:
        raise ReviewError(path, f"holds {person.query_id!r}, a person's judgment (no \"origin\": \"machine\")",
                          line=person.line, fix="name the machine judgments file `groundkit judgments judge` wrote")
    pool = pool_path(path)
    if not pool.is_file():
        raise ReviewError(pool, "is missing: the pool `judgments judge` writes beside its machine judgments",
                          fix=f"run `groundkit judgments judge ... --out {path}` again (its answers are cached)")
    rows = []
    for number, line in enumerate(pool.read_text(encoding="utf-8").splitlines(), start=1):
        try:
            rows.append(json.loads(line))
        except ValueError:
            raise ReviewError(pool, "is not JSONL", line=number, fix="run judgments judge again") from None
    ids = {j.query_id for j in judgments}
    stray = sorted({str(r.get("query_id")) for r in rows} - ids)
    if stray:
        raise ReviewError(pool, f"pools query {stray[0]!r}, which {path} does not judge: it belongs to other machine "
                          "judgments", fix="run judgments judge again, writing both files")
    return Machine(path, judgments, hashlib.sha256(data).hexdigest(), rows)


def applied(sheet_path: Path, sheet: Sheet, machine: Machine, corpus: Mapping[str, Document]) -> list[Judgment]:
    """The person's judgments the graded sheet holds, one per sampled query, sorted by id.

    Raises:
        ReviewError: naming the sheet's line: the machine judgments changed since the drawing, a row names a
            passage the corpus no longer holds, a quote is not verbatim in its passage.
    """
    if sheet.of != machine.sha256:
        raise ReviewError(sheet_path, f"was drawn from machine judgments with SHA-256 {sheet.of[:12]}..., not "
                          f"{machine.path} as it is now ({machine.sha256[:12]}...)",
                          fix="apply it with the machine judgments it was drawn from, or draw a new sample")
    drawn = draw([j.query_id for j in machine.judgments], sheet.n, sheet.seed)
    if any(q not in drawn for q in sheet.drawn):
        raise ReviewError(sheet_path, "holds queries the drawing recorded in it does not draw (rows edited?)",
                          fix="keep the rows judgments sample wrote; grade them, add or remove none")
    spans: dict[str, dict[tuple[str, int, int], int]] = {q: {} for q in drawn}
    for row in sheet.rows:
        document = corpus.get(row.document)
        if document is None or document.text[row.start:row.end] != row.passage:
            raise ReviewError(sheet_path, f"row of query {row.query_id} names passage {row.document} "
                              f"[{row.start}, {row.end}), which the corpus no longer holds as the sheet shows it",
                              line=row.line, fix="review against the corpus the sample was drawn from")
        if not row.grade:
            continue
        passage = Excerpt(document=row.document, start=row.start, end=row.end, text=row.passage)
        found = resolve_quote(document, passage, row.quote)
        if isinstance(found, str):
            what = "is not verbatim in the passage" if found == "not_verbatim" else \
                "occurs more than once in the document and cannot be made unique inside the passage"
            raise ReviewError(sheet_path, f"the quote of query {row.query_id} {what}", line=row.line, key="quote",
                              fix="copy the quote character for character from the passage cell")
        key = (row.document, found[0], found[1])
        spans[row.query_id][key] = max(spans[row.query_id].get(key, 0), row.grade)
    category = {j.query_id: j.category for j in machine.judgments}
    sample = Sample(seed=sheet.seed, of=sheet.of, n=sheet.n)
    made = []
    for query_id in sorted(drawn):
        query = next(j.query for j in machine.judgments if j.query_id == query_id)
        gold = [GoldSpan(document=d, quote=corpus[d].text[s:e], grade=g) for (d, s, e), g in
                sorted(spans[query_id].items())]
        kind = Category.NO_ANSWER if not gold else (
            Category.FACTOID if category[query_id] is Category.NO_ANSWER else category[query_id])
        made.append(Judgment(query_id=query_id, query=query, category=kind, gold=gold, origin=Origin.HUMAN,
                             sample=sample))
    return made


def merged_into(path: Path, existing: Sequence[Judgment], made: Sequence[Judgment]) -> list[Judgment]:
    """``existing`` with ``made`` in place: a judgment of the same drawing is replaced, any other refused."""
    new = {j.query_id: j for j in made}
    kept = []
    for judgment in existing:
        if judgment.query_id not in new:
            kept.append(judgment)
            continue
        other = judgment.sample
        if other is None or (other.seed, other.of) != (new[judgment.query_id].sample.seed,  # type: ignore[union-attr]
                                                       new[judgment.query_id].sample.of):  # type: ignore[union-attr]
            why = "written by hand" if other is None else "drawn by another sample"
            raise ReviewError(path, f"already holds query {judgment.query_id!r} ({why})", line=judgment.line,
                              fix="write the sample's judgments into another file (--judgments), or draw from "
                                  "machine judgments of queries nobody labelled")
    return sorted([*kept, *made], key=lambda j: j.query_id)
