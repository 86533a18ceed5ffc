"""The ``recursive`` strategy: LangChain's RecursiveCharacterTextSplitter, computed on spans.

The algorithm and defaults of langchain-text-splitters 1.x (``RecursiveCharacterTextSplitter`` with
``keep_separator=True``, ``strip_whitespace=True``, ``length_function=len``):

* the separator used is the first of the list that occurs in the text (default ``"\\n\\n"``, ``"\\n"``,
  ``" "``, ``""``; ``""`` splits into characters); ``chunk.options.separators`` overrides the list;
* separators are kept, at the start of the piece that follows them (``keep_separator: end`` keeps them
  at the end of the piece before);
* a piece of ``chunk.size`` characters or more is split again with the separators after the one used;
* neighbouring pieces are merged up to ``chunk.size`` characters; the next chunk starts with the last
  whole pieces of the one before that fit in ``chunk.overlap`` characters;
* each chunk is stripped of surrounding whitespace (a chunk left empty is dropped).

Because separators are kept, the pieces merged into a chunk are adjacent in the document, so a chunk is
the span from its first piece's start to its last piece's end, stripped: no text is ever searched for.
tests/corpus/test_chunkers.py holds the chunks equal to the library's, text for text.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from groundkit.corpus.chunking.kinds import Span, Splitter

if TYPE_CHECKING:
    from groundkit.config import ChunkParams
    from groundkit.corpus.chunking.kinds import ChunkerKind

DEFAULT_SEPARATORS = ("\n\n", "\n", " ", "")


def _pieces(text: str, start: int, end: int, pattern: str, keep_end: bool, regex: bool) -> list[Span]:
    """``text[start:end]`` cut before (or, with ``keep_end``, after) every match of ``pattern``; "" cuts characters.

    As LangChain's ``_split_text_with_regex`` with a kept separator: the pieces are adjacent and cover the
    span; empty ones are dropped.
    """
    if not pattern:
        return [(i, i + 1) for i in range(start, end)]
    cuts = [start]
    # A regular expression sees the piece alone, as LangChain's does (anchors, lookbehind); a literal is
    # searched in place, without copying the piece.
    matches = re.compile(pattern).finditer(text[start:end]) if regex else re.compile(pattern).finditer(text, start, end)
    offset = start if regex else 0
    for match in matches:
        cuts.append(offset + (match.end() if keep_end else match.start()))
    cuts.append(end)
    return [(a, b) for a, b in itertools.pairwise(cuts) if b > a]


@dataclass(frozen=True)
class RecursiveSplitter:
    """LangChain's recursive splitting over ``[start, end)`` spans; see the module docstring."""

    size: int
    overlap: int
    separators: tuple[str, ...] = DEFAULT_SEPARATORS
    keep_end: bool = False
    regex: bool = False

    def spans(self, text: str, document: str = "") -> list[Span]:
        chunks: list[Span] = []
        self._split(text, 0, len(text), self.separators, chunks)
        return chunks

    def split_span(self, text: str, start: int, end: int) -> list[Span]:
        """The chunks of ``text[start:end]`` alone, as document spans (markdown and sentence split inside one)."""
        chunks: list[Span] = []
        self._split(text, start, end, self.separators, chunks)
        return chunks

    def _split(self, text: str, start: int, end: int, separators: tuple[str, ...], out: list[Span]) -> None:
        separator, rest = separators[-1], ()
        for i, candidate in enumerate(separators):
            if not candidate:
                separator = candidate
                break
            pattern = candidate if self.regex else re.escape(candidate)
            found = re.compile(pattern).search(text[start:end]) if self.regex else re.compile(pattern).search(
                text, start, end)
            if found:
                separator, rest = candidate, separators[i + 1:]
                break
        pattern = separator if self.regex or not separator else re.escape(separator)
        good: list[Span] = []
        for piece in _pieces(text, start, end, pattern, self.keep_end, self.regex):
            if piece[1] - piece[0] < self.size:
                good.append(piece)
                continue
            if good:
                self._merge(text, good, out)
                good = []
            if rest:
                self._split(text, piece[0], piece[1], rest, out)
            else:
                self._emit(text, piece[0], piece[1], out)
        if good:
            self._merge(text, good, out)

    def _merge(self, text: str, pieces: list[Span], out: list[Span]) -> None:
        """LangChain's ``_merge_splits`` with an empty separator, on adjacent pieces."""
        size, overlap = self.size, self.overlap
        first = 0  # current chunk: pieces[first:i]
        total = 0
        for i, (a, b) in enumerate(pieces):
            length = b - a
            if total + length > size and i > first:
                self._emit(text, pieces[first][0], pieces[i - 1][1], out)
                while total > overlap or (total + length > size and total > 0):
                    total -= pieces[first][1] - pieces[first][0]
                    first += 1
            total += length
        if first < len(pieces):
            self._emit(text, pieces[first][0], pieces[-1][1], out)

    @staticmethod
    def _emit(text: str, start: int, end: int, out: list[Span]) -> None:
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if end > start:
            out.append((start, end))


def build(kind: ChunkerKind, params: ChunkParams) -> Splitter:
    options = params.options
    return RecursiveSplitter(params.size, params.overlap, tuple(options.get("separators", DEFAULT_SEPARATORS)),
                             options.get("keep_separator", "start") == "end", options.get("is_separator_regex", False))
