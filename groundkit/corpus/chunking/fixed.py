"""The ``fixed`` and ``document`` strategies: character windows that never cut a word, or the whole document.

Chunks never begin or end with whitespace and never cut a word in half (a word is a maximal run of
non-whitespace characters).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from groundkit.corpus.chunking.kinds import Span, Splitter

if TYPE_CHECKING:
    from groundkit.config import ChunkParams
    from groundkit.corpus.chunking.kinds import ChunkerKind


def skip_space(text: str, i: int) -> int:
    n = len(text)
    while i < n and text[i].isspace():
        i += 1
    return i


def trim_space(text: str, start: int, end: int) -> int:
    while end > start and text[end - 1].isspace():
        end -= 1
    return end


def _window_end(text: str, start: int, size: int) -> int:
    """End of the window starting at ``start``, pulled back to a word boundary."""
    n = len(text)
    end = min(start + size, n)
    if end == n or text[end].isspace() or text[end - 1].isspace():
        return end
    cut = end - 1
    while cut > start and not text[cut].isspace():
        cut -= 1
    if cut > start:
        return cut
    # A single word longer than the window: keep it whole rather than split it.
    while end < n and not text[end].isspace():
        end += 1
    return end


def _next_start(text: str, start: int, end: int, overlap: int) -> int:
    if overlap == 0:
        return skip_space(text, end)
    nxt = max(end - overlap, start + 1)
    # Move forward to the start of a word so the overlap never begins mid-word.
    while nxt < end and not text[nxt - 1].isspace():
        nxt += 1
    nxt = skip_space(text, nxt)
    return nxt if nxt < end else skip_space(text, end)


def fixed_spans(text: str, size: int, overlap: int) -> Iterator[Span]:
    """Windows of at most ``size`` characters (longer only for a single longer word).

    Each window ends past the one before it. With a large overlap, a window moved forward by a word can
    be pulled back to the previous one's last word boundary and end where it ended: it holds nothing the
    previous window does not, so it is skipped rather than emitted (it would add a near-duplicate to every
    ranking and a relevant chunk to nDCG's ideal).
    """
    n = len(text)
    start = skip_space(text, 0)
    last_end = -1
    while start < n:
        end = _window_end(text, start, size)
        trimmed = trim_space(text, start, end)
        if trimmed > last_end:
            yield start, trimmed
            last_end = trimmed
        if end >= n:
            return
        start = _next_start(text, start, trimmed, overlap)


def whole_span(text: str) -> list[Span]:
    """The document as one span, without leading or trailing whitespace (none for a blank document)."""
    start = skip_space(text, 0)
    end = trim_space(text, start, len(text))
    return [(start, end)] if end > start else []


@dataclass(frozen=True)
class _Fixed:
    size: int
    overlap: int

    def spans(self, text: str, document: str) -> list[Span]:
        return list(fixed_spans(text, self.size, self.overlap))


class _Whole:
    def spans(self, text: str, document: str) -> list[Span]:
        return whole_span(text)


def build(kind: ChunkerKind, params: ChunkParams) -> Splitter:
    return _Fixed(params.size, params.overlap)


def build_whole(kind: ChunkerKind, params: ChunkParams) -> Splitter:
    return _Whole()
