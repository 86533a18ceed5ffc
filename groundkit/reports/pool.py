"""Pooling: the passages several runs rank high that no gold quote covers, for a person to review.

A passage a retriever returns is scored not relevant unless it overlaps a gold span. When the
labels miss a passage that does answer the query (the fact stated again in another document),
every retriever that finds it is penalised. TREC's answer is pooling: take the top ``depth``
results of several runs, and have a person judge every one nobody judged yet. Here that is:

* ``review.md`` and ``review.csv``: per query, each passage of the runs' top ``depth`` that
  overlaps no gold span, with the runs and ranks that returned it and its text. Passages of one
  document that overlap (the same text cut by two chunkings, or two overlapping windows) are one
  row: the text they cover together, read once, with every run that ranked a part of it. A
  reviewer who finds the answer in one adds a gold quote to the judgments (``groundkit judgments
  add``); either way, they mark it reviewed: ``yes`` in the ``reviewed`` column of review.csv
  (empty: not yet). A ``note`` column is free text.
* ``judged.json``: for each run, ``judged`` (judged@k, k being ``depth``), the mean over queries that retrieved
  anything of the share of the top k passages (or of all, if fewer) that overlap a gold span or
  lie in a row marked reviewed. 1.0 means every passage that run showed a reader was looked at by someone.

Pooling again into the same ``--out`` (with ``--force``) carries the marks and notes of its
review.csv over, so a review is never lost: onto the passages still in the pool, and, for passages
no longer pooled (a smaller ``--depth``, fewer runs, a gold quote added since), as rows at the end
of review.csv without ranks, where a later pool that brings the passage back finds them. Only a mark
whose passage is pooled again with another text (the document was edited) is dropped, and counted.

A run is a folder groundkit wrote (``groundkit run`` or ``score-run`` ``--out``, or a DVC
workspace's ``build/``: run.trec with chunks.jsonl, passages/passages.jsonl and gold_spans.jsonl beside
it) or an external run file (JSONL, the format of ``score-run``), which needs the corpus and
the judgments to be read.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from groundkit.artifacts.lines import dumps_json, read_models
from groundkit.corpus.passage import Chunk, Document, Excerpt, Passage
from groundkit.corpus.spans import ResolvedJudgment
from groundkit.errors import ReviewError
from groundkit.inputs.text import markdown_code, markdown_text, sheet_csv, sheet_value
from groundkit.pipeline.stages import CHUNKS, DOCUMENTS, GOLD_SPANS, PASSAGES, PASSAGES_FILE, RUN, written_by
from groundkit.retrieval.external import read_external_run
from groundkit.retrieval.trec import read_run

REVIEW_MD = "review.md"
REVIEW_CSV = "review.csv"
JUDGED = "judged.json"
ARTIFACTS = (REVIEW_MD, REVIEW_CSV, JUDGED)
COLUMNS = ["query_id", "document", "start", "end", "best_rank", "runs", "reviewed", "note", "query", "text"]
REVIEWED = "yes"
"""What the ``reviewed`` column holds once a person has judged the passage; empty until then."""

Key = tuple[str, str, int, int]
"""A pooled passage: (query_id, document, start, end)."""


@dataclass(frozen=True)
class Mark:
    """A reviewer's mark on a pooled passage, as review.csv holds it."""

    text: str
    reviewed: bool
    note: str


@dataclass(frozen=True)
class RankedRun:
    """A run to pool: its name and, per query, the passages it ranked, best first."""

    name: str
    rankings: Mapping[str, Sequence[Excerpt]]


@dataclass
class Candidate:
    """A pooled passage, the text of one or more overlapping passages a run ranked: the runs that ranked a part
    of it, and their best rank."""

    passage: Excerpt
    ranks: dict[str, int] = field(default_factory=dict)

    @property
    def best_rank(self) -> int:
        return min(self.ranks.values())

    def absorb(self, other: Candidate) -> None:
        """Take in ``other``, a passage of the same document that overlaps this one."""
        a, b = sorted((self.passage, other.passage), key=lambda p: (p.start, p.end))
        text = a.text + b.text[a.end - b.start:] if b.end > a.end else a.text
        self.passage = Excerpt(document=a.document, start=a.start, end=max(a.end, b.end), text=text)
        for name, rank in other.ranks.items():
            self.ranks[name] = min(rank, self.ranks.get(name, rank))


def merged(candidates: Sequence[Candidate]) -> list[Candidate]:
    """The candidates of one query with every group of overlapping passages of a document made one.

    The overlap is the relevance rule's (a shared character), so one review covers every passage a later gold
    quote in that text would make relevant; runs are kept in the order they first ranked a part.
    """
    by_document: dict[str, list[Candidate]] = {}
    for candidate in candidates:
        by_document.setdefault(candidate.passage.document, []).append(candidate)
    out: list[Candidate] = []
    for group in by_document.values():
        group.sort(key=lambda c: (c.passage.start, c.passage.end))
        current = Candidate(group[0].passage, dict(group[0].ranks))
        for candidate in group[1:]:
            if candidate.passage.start < current.passage.end:
                current.absorb(candidate)
            else:
                out.append(current)
                current = Candidate(candidate.passage, dict(candidate.ranks))
        out.append(current)
    return out


@dataclass(frozen=True)
class Pool:
    """What ``pool`` found: the candidates per query, judged@k per run, and the earlier marks.

    ``marks`` are those on passages of this pool; ``carried`` those on passages it no longer holds, kept
    as they were; ``stale_marks`` counts the marks dropped because their passage's text changed.
    """

    depth: int
    queries: Sequence[ResolvedJudgment]
    candidates: Mapping[str, Sequence[Candidate]]
    judged: Mapping[str, dict[str, float | int]]
    marks: Mapping[Key, Mark]
    stale_marks: int
    carried: Mapping[Key, Mark] = field(default_factory=dict)


def run_name(path: Path) -> str:
    """A run's name in the sheet: its folder's name, or its file name without the extension."""
    return path.name if path.is_dir() else path.stem


def is_run_folder(path: Path) -> bool:
    return path.is_dir() and (path / RUN.name).is_file()


@dataclass(frozen=True)
class RunFolder:
    """A run folder groundkit wrote: its ranked passages, and the gold spans and documents it was scored on."""

    run: RankedRun
    spans: list[ResolvedJudgment]
    document_ids: frozenset[str]


def read_folder(path: Path) -> RunFolder:
    """Read a run folder groundkit wrote (every file checked against its seal)."""
    documents = read_models(path / DOCUMENTS.name, Document, producer=written_by(DOCUMENTS))
    spans = read_models(path / GOLD_SPANS.name, ResolvedJudgment, producer=written_by(GOLD_SPANS))
    by_id: dict[str, Excerpt] = {}
    for file, artifact, model in ((path / CHUNKS.name, CHUNKS, Chunk),
                                  (path / PASSAGES.name / PASSAGES_FILE, PASSAGES, Excerpt)):
        by_id.update((p.passage_id, p) for p in read_models(file, model, producer=written_by(artifact)))
    rankings = read_run(path / RUN.name, [j.query_id for j in spans], set(by_id),
                        listed_in=f"{CHUNKS.name} or {PASSAGES_FILE}", producer=written_by(RUN))
    ranked = {q: [by_id[passage_id] for passage_id, _ in ranking] for q, ranking in rankings.items()}
    return RunFolder(RankedRun(run_name(path), ranked), spans, frozenset(d.document_id for d in documents))


def read_external(path: Path, documents: Mapping[str, Document], query_ids: Sequence[str]) -> RankedRun:
    """An external run file (JSONL), read and checked as score-run reads it."""
    return RankedRun(run_name(path), read_external_run(path, documents, query_ids))


def _overlaps_gold(passage: Passage, judgment: ResolvedJudgment) -> bool:
    return any(passage.overlaps(span) for span in judgment.spans)


def pool(runs: Sequence[RankedRun], judgments: Sequence[ResolvedJudgment], depth: int,
         marks: Mapping[Key, Mark] | None = None) -> Pool:
    """Pool the top ``depth`` of ``runs`` for every judgment; ``marks`` are an earlier sheet's marks."""
    marks = marks or {}
    kept: dict[Key, Mark] = {}
    stale = 0
    candidates: dict[str, list[Candidate]] = {}
    judged: dict[str, dict[str, float | int]] = {}
    pooled: set[Key] = set()
    for judgment in judgments:
        found: dict[Key, Candidate] = {}
        for run in runs:
            for rank, passage in enumerate(run.rankings.get(judgment.query_id, ())[:depth], start=1):
                if _overlaps_gold(passage, judgment):
                    continue
                key = (judgment.query_id, passage.document, passage.start, passage.end)
                found.setdefault(key, Candidate(passage)).ranks.setdefault(run.name, rank)
        rows = merged(list(found.values()))
        for candidate in rows:
            key = (judgment.query_id, candidate.passage.document, candidate.passage.start, candidate.passage.end)
            pooled.add(key)
            mark = marks.get(key)
            if mark is None:
                continue
            if mark.text == candidate.passage.text:
                kept[key] = mark
            else:
                stale += 1
        candidates[judgment.query_id] = sorted(
            rows, key=lambda c: (c.best_rank, -len(c.ranks), c.passage.document, c.passage.start))
    reviewed = {key for key, mark in kept.items() if mark.reviewed}
    for run in runs:
        shares = judged_at(run, judgments, depth, reviewed)
        judged[run.name] = {"judged": sum(shares.values()) / len(shares) if shares else 0.0, "queries": len(shares)}
    carried = {key: marks[key] for key in sorted(marks) if key not in pooled}
    return Pool(depth, judgments, candidates, judged, kept, stale, carried)


def judged_at(run: RankedRun, judgments: Sequence[ResolvedJudgment], depth: int,
              reviewed: set[Key] | frozenset[Key] = frozenset()) -> dict[str, float]:
    """judged@depth of each query ``run`` retrieved anything for: the share of its top ``depth`` passages (all
    of them, if fewer) that overlap a gold span or lie within a row marked reviewed (ir_measures' ``Judged@k``)."""
    rows: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for query_id, document, start, end in reviewed:
        rows.setdefault((query_id, document), []).append((start, end))
    shares: dict[str, float] = {}
    for judgment in judgments:
        top = run.rankings.get(judgment.query_id, ())[:depth]
        if top:
            seen = sum(1 for p in top if _overlaps_gold(p, judgment) or any(
                start <= p.start and p.end <= end for start, end in rows.get((judgment.query_id, p.document), ())))
            shares[judgment.query_id] = seen / len(top)
    return shares


def read_marks(path: Path) -> dict[Key, Mark]:
    """The marks of a review.csv that ``pool`` wrote and a person may have edited since.

    Raises:
        ReviewError: the file is not such a sheet, or a ``reviewed`` cell is neither empty nor ``yes``.
    """
    fix = f"keep the columns pool wrote; in `reviewed` write {REVIEWED} or leave it empty"
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise ReviewError(path, "is not valid UTF-8", fix="save the sheet as UTF-8") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    if reader.fieldnames != COLUMNS:
        raise ReviewError(path, f"has the columns {reader.fieldnames}, not those pool writes ({', '.join(COLUMNS)})",
                          line=1, fix=fix)
    marks: dict[Key, Mark] = {}
    for written in reader:
        line = reader.line_num
        row = {k: v if v is None or k is None else sheet_value(v) for k, v in written.items()}
        if None in row or any(value is None for value in row.values()):
            raise ReviewError(path, "does not have one cell per column", line=line, fix=fix)
        reviewed = row["reviewed"].strip()
        if reviewed not in ("", REVIEWED):
            raise ReviewError(path, f"reviewed is {row['reviewed']!r}", line=line, key="reviewed",
                              fix=f"write {REVIEWED} once the passage is judged, or leave the cell empty")
        try:
            key = (row["query_id"], row["document"], int(row["start"]), int(row["end"]))
        except ValueError:
            raise ReviewError(path, "start or end is not a whole number", line=line, fix=fix) from None
        if reviewed or row["note"]:
            marks[key] = Mark(row["text"], bool(reviewed), row["note"])
    return marks


def review_csv(result: Pool) -> str:
    """review.csv: one row per pooled passage (RFC 4180 quoting, LF line ends), each text cell a sheet cell
    (groundkit/inputs/text.py: a cell beginning like a formula gets an apostrophe, which :func:`read_marks` removes)."""
    query = {j.query_id: j.query for j in result.queries}
    rows: list[list[object]] = [list(COLUMNS)]
    for query_id, found in result.candidates.items():
        for c in found:
            key = (query_id, c.passage.document, c.passage.start, c.passage.end)
            mark = result.marks.get(key, Mark("", False, ""))
            rows.append([query_id, c.passage.document, c.passage.start, c.passage.end, c.best_rank,
                         _ranks(c), REVIEWED if mark.reviewed else "", mark.note, query[query_id], c.passage.text])
    for (query_id, document, start, end), mark in result.carried.items():
        # No longer pooled: no rank, no run; kept for the pool that brings the passage back.
        rows.append([query_id, document, start, end, "", "", REVIEWED if mark.reviewed else "", mark.note,
                     query.get(query_id, ""), mark.text])
    return sheet_csv(rows)


def _ranks(candidate: Candidate) -> str:
    return " ".join(f"{name}:{rank}" for name, rank in candidate.ranks.items())


def _quoted(text: str) -> str:
    """A passage as a Markdown block quote, line by line, each line plain text (groundkit/inputs/text.py)."""
    return "\n".join(f"> {markdown_text(line)}" if line else ">" for line in text.split("\n"))


def review_markdown(result: Pool) -> str:
    """review.md: the same passages as review.csv, per query under its gold quotes, to read."""
    runs = markdown_text(", ".join(result.judged))
    lines = [f"# Pool review: top {result.depth} of {runs}", "",
             f"Each passage below was ranked in the top {result.depth} by at least one run and overlaps no gold "
             "quote. If it answers the query, add a gold quote for it (`groundkit judgments add`); either way, mark "
             f"it reviewed: `{REVIEWED}` in the `reviewed` column of {REVIEW_CSV}.", ""]
    if result.carried:
        lines += [f"{len(result.carried)} earlier mark(s) on passages this pool no longer holds are kept, as "
                  f"rows without ranks at the end of {REVIEW_CSV}.", ""]
    lines.append(f"| run | judged (top {result.depth}) | queries |")
    lines.append("| --- | --- | --- |")
    for name, figures in result.judged.items():
        lines.append(f"| {markdown_text(name)} | {figures['judged']:.4f} | {figures['queries']} |")
    for judgment in result.queries:
        found = result.candidates[judgment.query_id]
        if not found:
            continue
        lines += ["", f"## {markdown_text(judgment.query_id)}: {markdown_text(judgment.query)}", ""]
        for span in judgment.spans:
            what = "the whole document" if span.quote is None else markdown_text(json.dumps(span.quote,
                                                                                             ensure_ascii=False))
            lines.append(f"- gold: {markdown_code(span.document)}: {what}")
        for number, c in enumerate(found, start=1):
            key = (judgment.query_id, c.passage.document, c.passage.start, c.passage.end)
            done = " (reviewed)" if (m := result.marks.get(key)) is not None and m.reviewed else ""
            lines += ["", f"### {number}. {markdown_code(c.passage.document)} \\[{c.passage.start}, {c.passage.end}): "
                      f"{markdown_text(_ranks(c))}{done}", "", _quoted(c.passage.text)]
    return "\n".join(lines) + "\n"


def judged_json(result: Pool) -> str:
    """judged.json: the depth, judged@k per run, and the size of the pool."""
    pooled = sum(len(found) for found in result.candidates.values())
    reviewed = sum(1 for m in result.marks.values() if m.reviewed)
    return dumps_json({"depth": result.depth, "runs": result.judged, "pooled": pooled, "reviewed": reviewed,
                       "stale_marks": result.stale_marks, "kept_unpooled": len(result.carried)})

