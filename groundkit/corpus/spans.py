"""Resolving gold quotes to character spans, and spans to relevant passages.

A quote must occur exactly once in its document's current text. Zero and
several matches are both errors: the first means the label broke (the
document was edited, or the quote is not verbatim), the second means the
label is ambiguous. Both fail the run before any chunking or indexing.
A whole-document gold span resolves to the document's text without its
leading and trailing whitespace, which is exactly what a chunk of the whole
document holds (chunks never begin or end with whitespace), so every chunk of
its document is relevant and the report sees the span held whole.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from pydantic import Field, model_validator

from groundkit.artifacts.models import StrictRecord
from groundkit.corpus.judgments import Category, GoldSpan, Judgment, Sample
from groundkit.corpus.passage import (
    LISTED,
    Document,
    Excerpt,
    NotOnce,
    Passage,
    PassageLocator,
    is_corpus_relative,
    locate_once,
)
from groundkit.errors import SpanError
from groundkit.inputs.suggest import did_you_mean


def _is_one(grade: int) -> bool:
    return grade == 1


def _is_empty(names: list[str]) -> bool:
    return not names


class ResolvedSpan(Passage):
    """A gold quote located as ``[start, end)`` in its document's text; ``quote`` is None for a whole document.

    ``grade`` is the quote's relevance grade; like an empty ``exclude_documents`` of a judgment, a grade
    of 1 is not written, so binary judgments give the same gold_spans.jsonl as before grades existed.
    """

    quote: str | None
    grade: int = Field(default=1, ge=1, exclude_if=_is_one)

    @model_validator(mode="after")
    def _span_fits_quote(self) -> ResolvedSpan:
        # A hand-edited offset in gold_spans.jsonl would silently move relevance; the length catches most edits.
        if self.quote is not None and self.end - self.start != len(self.quote):
            raise ValueError(f"span [{self.start}, {self.end}) is not as long as its quote ({len(self.quote)})")
        return self


class ResolvedJudgment(StrictRecord):
    """A judgment whose every gold quote has been located; one line of build/gold_spans.jsonl."""

    query_id: str
    query: str
    category: Category
    spans: list[ResolvedSpan]
    exclude_documents: list[str] = Field(default_factory=list, exclude_if=_is_empty)
    sample: Sample | None = Field(default=None, exclude_if=lambda value: value is None)
    """A person's judgment drawn by ``groundkit judgments sample``: the drawing's record (the intervals of two
    label sets assume one); absent from the line otherwise."""


class JudgedPassage(StrictRecord):
    """A passage a judge was asked about for a query (a row of ``NAME.pool.jsonl``): one line of
    build/machine_spans/pool.jsonl. A passage ranked inside it was seen by the judge (judged@k)."""

    query_id: str
    document: str
    start: int
    end: int


def read_pool(path: Path, documents: Mapping[str, Document], query_ids: set[str]) -> list[JudgedPassage]:
    """The judge's pool at ``path``, each row checked against the corpus and the machine judgments; in offset
    order, each (query, passage) once.

    Raises:
        JudgmentsError: a row that is not a JSON object with ``query_id``, ``document``, ``start`` and ``end``, or
            names a query the machine judgments do not hold, a document not in the corpus, or a span outside it.
    """
    from groundkit.errors import JudgmentsError
    from groundkit.inputs.jsonline import JSONLineError, loads_line

    fix = "the pool is what groundkit judgments judge wrote beside the machine judgments: judge again to write both"
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise JudgmentsError(path, f"cannot be read ({getattr(exc, 'strerror', None) or exc})", fix=fix) from None
    found: set[tuple[str, str, int, int]] = set()
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = loads_line(line)
        except JSONLineError as exc:
            raise JudgmentsError(path, f"is not a pool row: {exc.problem}", line=number, fix=fix) from None
        if not isinstance(row, dict):
            raise JudgmentsError(path, "is not a pool row (a JSON object)", line=number, fix=fix)
        query_id, document, start, end = (row.get(k) for k in ("query_id", "document", "start", "end"))
        if not (isinstance(query_id, str) and isinstance(document, str) and type(start) is int and type(end) is int):
            raise JudgmentsError(path, "needs query_id and document (strings), start and end (integers)",
                                 line=number, fix=fix)
        if query_id not in query_ids:
            raise JudgmentsError(path, f"pools {query_id!r}, a query the machine judgments do not hold", line=number,
                                 fix=fix)
        if document not in documents or not 0 <= start < end <= len(documents[document].text):
            raise JudgmentsError(path, f"pools {document!r} [{start}, {end}), which is not a passage of the corpus",
                                 line=number, fix=fix)
        found.add((query_id, document, start, end))
    return [JudgedPassage(query_id=q, document=d, start=s, end=e) for q, d, s, e in sorted(found)]


def resolve_gold_span(
    judgment: Judgment,
    gold: GoldSpan,
    document: Document,
    *,
    judgments_path: str | Path = "judgments.jsonl",
) -> ResolvedSpan:
    """Locate ``gold.quote`` in ``document`` as a ``[start, end)`` span.

    Raises:
        SpanError: the quote occurs zero times or more than once.
    """
    if gold.quote is None:
        # What a chunk can hold: no document is only whitespace (the corpus loader refuses one), so it is not empty.
        text = document.text
        start = len(text) - len(text.lstrip())
        return ResolvedSpan(document=gold.document, quote=None, start=start, end=len(text.rstrip()), grade=gold.grade)
    quote, text = gold.quote, document.text
    where = f"judgment {judgment.query_id!r}, document {gold.document!r}"
    if len(quote) > len(text):
        raise SpanError(
            judgments_path,
            f"{where}: the quote ({len(quote)} characters) is longer than the document ({len(text)} characters)",
            fix="quote a short passage of the document, not more than the document",
            line=judgment.line or None,
        )
    found = locate_once(document, quote)
    if isinstance(found, NotOnce) and found.count == 0:
        raise SpanError(
            judgments_path,
            f"{where}: quote not found: {quote!r}; {found.detail}",
            fix="copy the quote character for character from the document's current text",
            line=judgment.line or None,
        )
    if isinstance(found, NotOnce):
        listed = "at" if found.count <= LISTED else "first at"
        raise SpanError(
            judgments_path,
            f"{where}: quote occurs {found.count} times, {listed} {found.detail}: {quote!r}",
            fix="lengthen the quote with neighbouring words until it occurs exactly once",
            line=judgment.line or None,
        )
    return ResolvedSpan(document=gold.document, quote=quote, start=found.start, end=found.end, grade=gold.grade)


def _check_document_path(judgment: Judgment, name: str, judgments_path: str | Path, key: str) -> None:
    if not is_corpus_relative(name):
        raise SpanError(
            judgments_path,
            f"judgment {judgment.query_id!r}: document {name!r} is not a corpus-relative path "
            "(absolute paths and '..' would escape the corpus root)",
            fix="write the path relative to the corpus root, e.g. 'storage/compaction.md'",
            line=judgment.line or None,
            key=key,
        )


def _missing_document(
    judgment: Judgment, name: str, judgments_path: str | Path, corpus_root: str | Path, key: str,
    documents: Iterable[str] = (),
) -> SpanError:
    what = "is a directory, not a file," if (Path(corpus_root) / name).is_dir() else "is not a file"
    return SpanError(
        judgments_path,
        f"judgment {judgment.query_id!r}: document {name!r} {what} in the corpus root "
        f"{Path(corpus_root).as_posix()!r}{did_you_mean(name, documents)}",
        fix="name one document by its path relative to the corpus root (case-sensitive), or add the document",
        line=judgment.line or None,
        key=key,
    )


def resolve_judgments(
    judgments: Sequence[Judgment],
    documents: Mapping[str, Document],
    *,
    judgments_path: str | Path = "judgments.jsonl",
    corpus_root: str | Path = "corpus",
) -> list[ResolvedJudgment]:
    """Resolve every gold quote of every judgment.

    Raises:
        SpanError: every quote that does not resolve (and every document a judgment names that is not in the
            corpus), in one message: one edit of a document often breaks several, and ``judgments repair``
            proposes the new text of all of them.
    """
    resolved = []
    broken: list[SpanError] = []
    for judgment in judgments:
        spans = []
        for gold in judgment.gold:
            try:
                _check_document_path(judgment, gold.document, judgments_path, "gold.document")
                document = documents.get(gold.document)
                if document is None:
                    raise _missing_document(judgment, gold.document, judgments_path, corpus_root, "gold.document",
                                            documents)
                spans.append(resolve_gold_span(judgment, gold, document, judgments_path=judgments_path))
            except SpanError as exc:
                broken.append(exc)
        # An excluded document that is not in the corpus would exclude nothing: a typo must not pass silently.
        for name in judgment.exclude_documents:
            try:
                _check_document_path(judgment, name, judgments_path, "exclude_documents")
                if name not in documents:
                    raise _missing_document(judgment, name, judgments_path, corpus_root, "exclude_documents",
                                            documents)
            except SpanError as exc:
                broken.append(exc)
        if not broken:
            resolved.append(ResolvedJudgment(query_id=judgment.query_id, query=judgment.query,
                                             category=judgment.category, spans=spans,
                                             exclude_documents=judgment.exclude_documents, sample=judgment.sample))
    if broken:
        raise _unresolved(broken, judgments_path, corpus_root)
    return resolved


def _unresolved(broken: Sequence[SpanError], judgments_path: str | Path, corpus_root: str | Path) -> SpanError:
    """One error for every quote that does not resolve, naming ``judgments repair`` where it can help."""
    repair = (f"`groundkit judgments repair --corpus {Path(corpus_root).as_posix()} --judgments "
              f"{Path(judgments_path).as_posix()}` proposes the current text of each quote a document edit broke "
              "(--write applies those close enough)")
    quotes = [e for e in broken if e.key is None]  # a quote's own problem; a key names a document path
    if len(broken) == 1:
        (error,) = broken
        fix = f"{error.fix}; or {repair}" if quotes else error.fix
        return SpanError(error.path, error.problem, fix=fix, line=error.line, key=error.key)
    what = "gold quotes" if len(quotes) == len(broken) else "gold quotes and document names"
    listing = "".join(f"\n  {f'line {e.line}: ' if e.line else ''}{e.problem}" for e in broken)
    return SpanError(judgments_path, f"{len(broken)} {what} do not resolve:{listing}",
                     line=broken[0].line,
                     fix=f"{repair}; or copy each quote character for character from its document's current "
                         "text, and name documents by their path relative to the corpus root")


def graded_passages(spans: Iterable[ResolvedSpan], locator: PassageLocator) -> dict[str, int]:
    """The relevant passages among the locator's and their grades: the highest grade of a span each overlaps."""
    grades: dict[str, int] = {}
    for span in spans:
        for passage in locator.overlapping(span):
            if span.grade > grades.get(passage.passage_id, 0):
                grades[passage.passage_id] = span.grade
    return grades


def relevant_passage_ids(
    resolved: Iterable[ResolvedJudgment], passages: Iterable[Excerpt]
) -> dict[str, dict[str, int]]:
    """Passage-level qrels: every passage overlapping a gold span of the query, with its grade."""
    locator = PassageLocator(passages)
    return {judgment.query_id: graded_passages(judgment.spans, locator) for judgment in resolved}
