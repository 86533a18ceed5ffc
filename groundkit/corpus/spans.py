"""Resolving gold quotes to character spans, and spans to relevant passages.

A quote must occur exactly once in its document's current text. Zero and
several matches are both errors: the first means the label broke (the
document was edited, or the quote is not verbatim), the second means the
label is ambiguous. Both fail the run before any chunking or indexing.
A whole-document gold span resolves to ``[0, len(text))``, so every chunk
of its document is relevant.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from pydantic import model_validator

from groundkit._models import StrictRecord
from groundkit.corpus.judgments import Category, GoldSpan, Judgment
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


class ResolvedSpan(Passage):
    """A gold quote located as ``[start, end)`` in its document's text; ``quote`` is None for a whole document."""

    quote: str | None

    @model_validator(mode="after")
    def _span_fits_quote(self) -> ResolvedSpan:
        # A hand-edited offset in gold_spans.jsonl would silently move relevance; the length catches most edits.
        if self.quote is None:
            if self.start != 0:
                raise ValueError(f"a whole-document span must start at 0, not at {self.start}")
        elif self.end - self.start != len(self.quote):
            raise ValueError(f"span [{self.start}, {self.end}) is not as long as its quote ({len(self.quote)})")
        return self


class ResolvedJudgment(StrictRecord):
    """A judgment whose every gold quote has been located; one line of build/gold_spans.jsonl."""

    query_id: str
    query: str
    category: Category
    spans: list[ResolvedSpan]


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
        return ResolvedSpan(document=gold.document, quote=None, start=0, end=len(document.text))
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
    return ResolvedSpan(document=gold.document, quote=quote, start=found.start, end=found.end)


def _check_document_path(judgment: Judgment, gold: GoldSpan, judgments_path: str | Path) -> None:
    if not is_corpus_relative(gold.document):
        raise SpanError(
            judgments_path,
            f"judgment {judgment.query_id!r}: document {gold.document!r} is not a corpus-relative path "
            "(absolute paths and '..' would escape the corpus root)",
            fix="write the path relative to the corpus root, e.g. 'storage/compaction.md'",
            line=judgment.line or None,
            key="gold.document",
        )


def resolve_judgments(
    judgments: Sequence[Judgment],
    documents: Mapping[str, Document],
    *,
    judgments_path: str | Path = "judgments.jsonl",
    corpus_root: str | Path = "corpus",
) -> list[ResolvedJudgment]:
    """Resolve every gold quote of every judgment; the first failure raises."""
    resolved = []
    for judgment in judgments:
        spans = []
        for gold in judgment.gold:
            _check_document_path(judgment, gold, judgments_path)
            document = documents.get(gold.document)
            if document is None:
                what = "is a directory, not a file," if (Path(corpus_root) / gold.document).is_dir() else (
                    "is not a file")
                raise SpanError(
                    judgments_path,
                    f"judgment {judgment.query_id!r}: document {gold.document!r} {what} in the corpus "
                    f"root {Path(corpus_root).as_posix()!r}",
                    fix="name one document by its path relative to the corpus root (case-sensitive), "
                    "or add the document",
                    line=judgment.line or None,
                    key="gold.document",
                )
            spans.append(resolve_gold_span(judgment, gold, document, judgments_path=judgments_path))
        resolved.append(
            ResolvedJudgment(query_id=judgment.query_id, query=judgment.query, category=judgment.category, spans=spans)
        )
    return resolved


def relevant_passage_ids(resolved: Iterable[ResolvedJudgment], passages: Iterable[Excerpt]) -> dict[str, set[str]]:
    """Passage-level qrels: every passage overlapping any gold span of the query is relevant."""
    locator = PassageLocator(passages)
    qrels: dict[str, set[str]] = {}
    for judgment in resolved:
        ids: set[str] = set()
        for span in judgment.spans:
            ids.update(p.passage_id for p in locator.overlapping(span))
        qrels[judgment.query_id] = ids
    return qrels
