"""What a chunker groundkit did not write returns, checked and turned into spans of the document.

A ``python:`` chunker's ``split(text)`` and a library adapter return, per document, a list whose items are
each either a character span ``(start, end)`` or a chunk's text. groundkit accepts them only when every
chunk is verbatim text of the document, in document order:

* a span must satisfy ``0 <= start < end <= len(text)``;
* a text is located exactly: the first occurrence that starts after the previous chunk's start and ends
  after its end (the first chunk: the first occurrence), so a short chunk is never taken for text inside
  the chunk before it; a text the document does not hold fails;
* a library's own offsets (:class:`Located`) are used where ``text[start:end]`` is the chunk and the order
  holds, else the chunk is located as a text;
* a chunk may not be empty or whitespace only; each chunk starts after the previous one's start and
  ends after its end (a chunk that starts earlier is out of order, one that ends inside the previous one
  overlaps it backwards and would add a duplicate to every ranking).

Any failure is one ChunkerError naming the document, the chunk's index (from 0) and a snippet of it, and
raised before anything is written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

from groundkit.corpus.chunking.kinds import Span
from groundkit.errors import ChunkerError, Terminated

_SHOWN = 60  # characters of a chunk shown in a message: enough to find it in the document

FROM_OUTSIDE = (KeyboardInterrupt, Terminated)
"""Exceptions that reach a chunker's code from outside it; they end the run as they would anywhere."""

CONTRACT = ("split(text) returns, in document order, (start, end) character spans of text or chunk texts that "
            "occur in it verbatim")


@dataclass(frozen=True)
class Located:
    """A chunk's text with the start a library reported for it (checked before it is used)."""

    text: str
    start: int | None


def shown(value: object, limit: int = _SHOWN) -> str:
    """``repr`` of a value a chunker made, cut at ``limit`` characters (its own ``__repr__`` may fail)."""
    try:
        text = repr(value)
    except FROM_OUTSIDE:
        raise
    except BaseException:
        text = f"<{type(value).__name__} that cannot be shown>"
    return text if len(text) <= limit else text[:limit] + "..."


def _snippet(text: str) -> str:
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN] + "...")


@dataclass(frozen=True)
class Checker:
    """Checks the chunks of one chunker, named ``spec``, configured in the params file ``source``."""

    spec: str
    source: str
    fix: str = f"fix the chunker: {CONTRACT}"

    def fail(self, problem: str, fix: str | None = None) -> NoReturn:
        raise ChunkerError(self.source, f"chunker {self.spec!r}: {problem}", key="chunk.strategy",
                           fix=fix or self.fix)

    def spans(self, returned: object, text: str, document: str) -> list[Span]:
        """``returned`` (what the chunker gave for ``text``) as checked spans of the document ``document``."""
        if isinstance(returned, str | bytes | Mapping) or not isinstance(returned, Iterable):
            self.fail(f"returned {type(returned).__name__} for the document {document!r}, not a list of spans or "
                      "texts")
        spans: list[Span] = []
        previous: Span | None = None
        for index, item in enumerate(returned):
            span = self._span(item, text, document, index, previous)
            if previous is not None:
                where = f"document {document!r}, chunk {index} {_snippet(text[span[0]:span[1]])}"
                if span[0] <= previous[0]:
                    self.fail(f"{where} starts at {span[0]}, not after chunk {index - 1}'s start {previous[0]}: "
                              "chunks are out of order")
                if span[1] <= previous[1]:
                    self.fail(f"{where} [{span[0]}, {span[1]}) ends inside chunk {index - 1} [{previous[0]}, "
                              f"{previous[1]}): it overlaps backwards")
            spans.append(span)
            previous = span
        return spans

    def _span(self, item: Any, text: str, document: str, index: int, previous: Span | None) -> Span:
        where = f"document {document!r}, chunk {index}"
        after = previous[0] + 1 if previous is not None else 0
        past = previous[1] if previous is not None else 0
        if isinstance(item, Located):
            start = item.start
            if isinstance(start, int) and 0 <= start and text[start:start + len(item.text)] == item.text \
                    and start >= after and start + len(item.text) > past and item.text:
                return self._non_empty((start, start + len(item.text)), text, where)
            item = item.text
        if isinstance(item, str):
            if not item:
                self.fail(f"{where} is empty")
            start = text.find(item, after)
            while 0 <= start and start + len(item) <= past:
                start = text.find(item, start + 1)
            if start < 0:
                found = text.find(item) >= 0
                problem = ("occurs in the document only before the previous chunk's end (chunks must come in "
                           "document order)" if found else "is not text of the document")
                self.fail(f"{where} {_snippet(item)} {problem}",
                          None if found else "chunks must be verbatim text of the document: a chunker that "
                          "rewrites text (strips headings, joins lines, adds metadata) cannot be scored "
                          "against quote-anchored labels; return (start, end) spans, or use a built-in strategy")
            return self._non_empty((start, start + len(item)), text, where)
        if isinstance(item, tuple | list) and len(item) == 2 and all(
                type(value) is int for value in item):
            start, end = item
            if not 0 <= start < end <= len(text):
                problem = "is empty" if start == end else f"is out of range for a text of {len(text)} characters"
                self.fail(f"{where}: the span ({start}, {end}) {problem}")
            return self._non_empty((start, end), text, where)
        self.fail(f"{where} is {shown(item)}, neither a (start, end) pair of ints nor a str")

    def _non_empty(self, span: Span, text: str, where: str) -> Span:
        if text[span[0]:span[1]].isspace():
            self.fail(f"{where} {_snippet(text[span[0]:span[1]])} holds nothing but whitespace, an empty chunk")
        return span
