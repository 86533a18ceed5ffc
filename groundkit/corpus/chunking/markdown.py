"""The ``markdown`` strategy: one chunk per section, a section running from a heading to the next heading.

Headings are ATX headings (``#`` to ``######`` then a space, at most three spaces in) outside fenced code
blocks (````` ``` ````` or ``~~~``). The text before the first heading is a section of its own. A section of
up to ``chunk.size`` characters is one chunk, stripped of surrounding whitespace; a larger one is split
inside it as the ``recursive`` strategy splits (recursive.py, ``chunk.options.separators`` included), with
``chunk.overlap``. :func:`heading_paths` gives, for any offset, the headings above it: the ``headings``
context (context.py) reads them, for every strategy.
"""

from __future__ import annotations

import bisect
import itertools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from groundkit.corpus.chunking.kinds import Span, Splitter
from groundkit.corpus.chunking.recursive import DEFAULT_SEPARATORS, RecursiveSplitter

if TYPE_CHECKING:
    from groundkit.config import ChunkParams
    from groundkit.corpus.chunking.kinds import ChunkerKind

_LINE = re.compile(r"^[ ]{0,3}(?:(#{1,6})(?:[ \t]+(.*?))?[ \t#]*|(```|~~~).*)$", re.MULTILINE)


@dataclass(frozen=True)
class Heading:
    """A heading: where its line starts, its level (1 to 6) and its text (without the ``#`` marks)."""

    start: int
    level: int
    title: str


def headings(text: str) -> list[Heading]:
    """The ATX headings of ``text`` outside fenced code blocks, in order."""
    found: list[Heading] = []
    fence: str | None = None
    for match in _LINE.finditer(text):
        marks, title, opened = match.group(1), match.group(2), match.group(3)
        if opened is not None:
            if fence is None:
                fence = opened
            elif opened == fence:
                fence = None
            continue
        if fence is None and marks is not None:
            found.append(Heading(match.start(), len(marks), (title or "").strip().rstrip("#").strip()))
    return found


class HeadingPaths:
    """The path of headings above any offset of one document (``# A`` then ``## B`` gives ``A > B``)."""

    def __init__(self, text: str) -> None:
        self._starts: list[int] = []
        self._paths: list[tuple[str, ...]] = []
        path: list[Heading] = []
        for heading in headings(text):
            while path and path[-1].level >= heading.level:
                path.pop()
            path.append(heading)
            self._starts.append(heading.start)
            self._paths.append(tuple(h.title for h in path if h.title))

    def at(self, offset: int) -> tuple[str, ...]:
        """The headings whose lines start at or before ``offset``, outermost first."""
        i = bisect.bisect_right(self._starts, offset)
        return self._paths[i - 1] if i else ()


@dataclass(frozen=True)
class MarkdownSplitter:
    size: int
    overlap: int
    separators: tuple[str, ...] = DEFAULT_SEPARATORS

    def spans(self, text: str, document: str = "") -> list[Span]:
        starts = [0, *(h.start for h in headings(text) if h.start > 0), len(text)]
        inner = RecursiveSplitter(self.size, self.overlap, self.separators)
        chunks: list[Span] = []
        for start, end in itertools.pairwise(starts):
            while start < end and text[start].isspace():
                start += 1
            while end > start and text[end - 1].isspace():
                end -= 1
            if end - start > self.size:
                chunks.extend(inner.split_span(text, start, end))
            elif end > start:
                chunks.append((start, end))
        return chunks


def build(kind: ChunkerKind, params: ChunkParams) -> Splitter:
    return MarkdownSplitter(params.size, params.overlap, tuple(params.options.get("separators", DEFAULT_SEPARATORS)))
