"""Resolving gold quotes to character spans, and spans to relevant chunks.

A quote must occur exactly once in its document's current text. Zero and
several matches are both errors: the first means the label broke (the
document was edited, or the quote is not verbatim), the second means the
label is ambiguous. Both fail the run before any chunking or indexing.
A whole-document gold span resolves to ``[0, len(text))``, so every chunk
of its document is relevant.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath

from pydantic import model_validator

from groundkit._json import describe_char
from groundkit._models import StrictRecord
from groundkit.corpus.judgments import Category, GoldSpan, Judgment
from groundkit.corpus.passage import Chunk, Document
from groundkit.errors import SpanError


class ResolvedSpan(StrictRecord):
    """A gold quote located as ``[start, end)`` in its document's text; ``quote`` is None for a whole document."""

    document: str
    quote: str | None
    start: int
    end: int

    @model_validator(mode="after")
    def _span_fits_quote(self) -> ResolvedSpan:
        # A hand-edited offset in gold_spans.jsonl would silently move relevance; the length catches most edits.
        if self.quote is None:
            if self.start != 0 or self.end <= 0:
                raise ValueError(f"a whole-document span must start at 0 and be non-empty, not [{self.start}, "
                                 f"{self.end})")
        elif self.start < 0 or self.end - self.start != len(self.quote):
            raise ValueError(f"span [{self.start}, {self.end}) is not as long as its quote ({len(self.quote)})")
        return self


class ResolvedJudgment(StrictRecord):
    """A judgment whose every gold quote has been located; one line of build/gold_spans.jsonl."""

    query_id: str
    query: str
    category: Category
    spans: list[ResolvedSpan]


_CURLY = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-"})
_SPACE = re.compile(r"\s+")


# Characters that are invisible, or that render like a plainer one, slip unnoticed into a quote copied
# from a PDF or a web page (or into the document). Invisible ones stand for nothing; the others for their
# plain form, which for ligatures, no-break spaces and the like is the character's NFKC form.
_INVISIBLE = frozenset("\u00ad\u200b\u200c\u200d\u200e\u200f\u2060\ufeff")
_PLAIN = {"\u2010": "-", "\u2011": "-", "\u2212": "-"}
# An ambiguous quote lists this many places: a short word occurs tens of thousands of times in a long document.
_LISTED = 5


def _line_col(text: str, offset: int) -> str:
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return f"{line}:{col}"


def _line_cols(text: str, offsets: Sequence[int]) -> list[str]:
    """``line:col`` of each of the ascending ``offsets``, counting newlines in one pass over the text."""
    places, line, counted = [], 1, 0
    for offset in offsets:
        line += text.count("\n", counted, offset)
        counted = offset
        column = offset - text.rfind("\n", 0, offset)
        places.append(f"{line}:{column}")
    return places


def _plain(char: str) -> str:
    if char in _INVISIBLE:
        return ""
    return _PLAIN.get(char) or unicodedata.normalize("NFKC", char)


def _odd_characters(text: str) -> dict[str, str]:
    """The invisible and look-alike characters ``text`` holds, each mapped to its plain form."""
    return {char: plain for char in set(text) if (plain := _plain(char)) != char}


def _odd_in_span(text: str, odd: Mapping[str, str], start: int, end: int) -> list[tuple[int, str]]:
    """``(offset, character)`` of each odd character of ``text`` whose plain form falls in ``[start, end)``.

    ``start`` and ``end`` are offsets in the plain text; the walk over the odd characters maps them back.
    """
    found: list[tuple[int, str]] = []
    shift = 0  # plain offset minus original offset, up to the current character
    for match in re.finditer(f"[{re.escape(''.join(sorted(odd)))}]", text):
        char, at = match.group(), match.start() + shift
        if at >= end:
            break
        width = len(odd[char])
        # A character that stands for nothing sits between two plain ones: inside only if strictly within.
        if (width and at + width > start) or (not width and at > start):
            found.append((match.start(), char))
        shift += width - 1
    return found


def _odd_characters_hint(quote: str, text: str) -> str | None:
    """Name the invisible or look-alike characters that alone keep ``quote`` out of ``text``, and where they are."""
    quote_odd, text_odd = _odd_characters(quote), _odd_characters(text)
    if not quote_odd and not text_odd:
        return None
    plain_quote = quote.translate(str.maketrans(quote_odd))
    at = (text.translate(str.maketrans(text_odd)) if text_odd else text).find(plain_quote)
    if at < 0:
        return None
    in_text = _odd_in_span(text, text_odd, at, at + len(plain_quote)) if text_odd else []
    notes = []
    for position, char in enumerate(quote, start=1):
        if char in quote_odd and char not in {c for _, c in in_text}:
            plain = quote_odd[char]
            notes.append(f"the quote holds {describe_char(char)} at position {position}, "
                         + (f"where the document has {plain!r}" if plain else "which the document does not have"))
    for offset, char in in_text:
        if char not in quote:
            plain = text_odd[char]
            notes.append(f"the document holds {describe_char(char)} at line:col {_line_col(text, offset)} "
                         f"(offset {offset}), " + (f"where the quote has {plain!r}" if plain else
                                                   "which the quote leaves out"))
    listed = "; ".join(notes[:_LISTED]) + (f"; and {len(notes) - _LISTED} more" if len(notes) > _LISTED else "")
    return (
        "it matches only if invisible and look-alike characters are ignored"
        + (f": {listed}" if notes else "")
        + "; the quote must be verbatim, so copy it from the document's text, not from a rendered copy"
    )


def _near_miss(quote: str, text: str) -> str:
    """Explain why a quote that is not in the text almost is, if it almost is."""
    for form in ("NFC", "NFD"):
        if unicodedata.normalize(form, quote) != quote and unicodedata.normalize(form, quote) in text:
            return (
                f"it matches only after Unicode normalisation ({form}): the quote and the document "
                "encode an accented character differently; copy the quote from the document verbatim"
            )
    if unicodedata.normalize("NFC", quote) in unicodedata.normalize("NFC", text):
        return "it matches only after Unicode normalisation (NFC); copy the quote from the document verbatim"
    odd = _odd_characters_hint(quote, text)
    if odd is not None:
        return odd
    if quote.translate(_CURLY) in text.translate(_CURLY):
        return (
            "it matches only if curly quotes or dashes are treated as straight ones; "
            "the quote must be verbatim, so copy its punctuation from the document"
        )
    if _SPACE.sub(" ", quote) in _SPACE.sub(" ", text):
        return (
            "it matches only if whitespace is collapsed (a line break or double space differs); "
            "the quote must be verbatim, including line breaks"
        )
    if quote.lower() in text.lower():
        return "it matches only case-insensitively; the quote must be verbatim, including case"
    return "check that the document was not edited since the quote was written"


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
    first = text.find(quote)
    if first < 0:
        raise SpanError(
            judgments_path,
            f"{where}: quote not found: {quote!r}; {_near_miss(quote, text)}",
            fix="copy the quote character for character from the document's current text",
            line=judgment.line or None,
        )
    # Overlapping matches count: "aa" is ambiguous in "aaa". Only the first few places get a line:col.
    starts, count = [first], 1
    nxt = text.find(quote, first + 1)
    while nxt >= 0:
        count += 1
        if len(starts) < _LISTED:
            starts.append(nxt)
        nxt = text.find(quote, nxt + 1)
    if count > 1:
        line_cols = _line_cols(text, starts)
        places = ", ".join(f"line:col {place} (offset {s})" for place, s in zip(line_cols, starts, strict=True))
        listed = f"at {places}" if count == len(starts) else f"first at {places} and {count - len(starts)} more"
        raise SpanError(
            judgments_path,
            f"{where}: quote occurs {count} times, {listed}: {quote!r}",
            fix="lengthen the quote with neighbouring words until it occurs exactly once",
            line=judgment.line or None,
        )
    return ResolvedSpan(document=gold.document, quote=quote, start=first, end=first + len(quote))


def _check_document_path(judgment: Judgment, gold: GoldSpan, judgments_path: str | Path) -> None:
    path = PurePosixPath(gold.document)
    if path.is_absolute() or ".." in path.parts or "\\" in gold.document:
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


def chunk_overlaps_span(chunk: Chunk, span: ResolvedSpan) -> bool:
    """True if the chunk and the span share at least one character of the same document."""
    return chunk.document == span.document and chunk.start_offset < span.end and span.start < chunk.end_offset


class ChunkLocator:
    """Finds the chunks overlapping a span without scanning the whole corpus."""

    def __init__(self, chunks: Iterable[Chunk]) -> None:
        self._by_doc: dict[str, list[Chunk]] = {}
        for chunk in chunks:
            self._by_doc.setdefault(chunk.document, []).append(chunk)
        self._starts: dict[str, list[int]] = {}
        for doc, items in self._by_doc.items():
            items.sort(key=lambda c: (c.start_offset, c.end_offset))
            self._starts[doc] = [c.start_offset for c in items]
        self._max_len = {doc: max(c.end_offset - c.start_offset for c in items) for doc, items in self._by_doc.items()}

    def overlapping(self, span: ResolvedSpan) -> list[Chunk]:
        """Chunks of ``span.document`` that overlap ``span``, in offset order."""
        items = self._by_doc.get(span.document, [])
        if not items:
            return []
        starts = self._starts[span.document]
        # A chunk starting before span.start - max_len cannot reach the span.
        lo = bisect.bisect_left(starts, span.start - self._max_len[span.document])
        hi = bisect.bisect_left(starts, span.end)
        return [c for c in items[lo:hi] if chunk_overlaps_span(c, span)]


def relevant_chunk_ids(resolved: Iterable[ResolvedJudgment], chunks: Iterable[Chunk]) -> dict[str, set[str]]:
    """Derive chunk-level qrels: every chunk overlapping any gold span of the query is relevant."""
    locator = ChunkLocator(chunks)
    qrels: dict[str, set[str]] = {}
    for judgment in resolved:
        ids: set[str] = set()
        for span in judgment.spans:
            ids.update(c.chunk_id for c in locator.overlapping(span))
        qrels[judgment.query_id] = ids
    return qrels
