"""The ``sentence`` strategy: whole sentences packed up to ``chunk.size`` characters, overlapping by whole sentences.

Sentence boundaries. A sentence ends:

* after a run of ``.``, ``!``, ``?`` or ``…``, with any closing quotes or brackets right after it
  (``"``, ``'``, ``)``, ``]`` and their typographic forms), when whitespace follows and the next
  non-space character is not a lowercase letter, and the run is not a ``.`` ending an abbreviation: a
  word in ``ABBREVIATIONS`` (or ``chunk.options.abbreviations``), a single letter (an initial:
  ``J. Smith``), or a word with a period inside it (``e.g.``, ``U.S.``);
* at a blank line (a paragraph break), always; at the end of a Markdown heading's line; and at a line
  break after which a Markdown block starts (a heading, a list item, a quote, a table row, a code fence).

A decimal (``3.14``) or a version (``v1.2.3``) has no whitespace after its periods, so never ends a
sentence; neither does an ellipsis followed by a lowercase word.

Packing: a chunk is the span from its first sentence's start to its last one's end, as many whole
sentences as fit in ``chunk.size`` characters; the next chunk starts with the last whole sentences of the
previous one that fit in ``chunk.overlap`` characters (never all of them). A sentence longer than
``chunk.size`` is a chunk of its own, split as the ``recursive`` strategy splits (recursive.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from groundkit.corpus.chunking.kinds import Span, Splitter
from groundkit.corpus.chunking.recursive import RecursiveSplitter

if TYPE_CHECKING:
    from groundkit.config import ChunkParams
    from groundkit.corpus.chunking.kinds import ChunkerKind

ABBREVIATIONS = frozenset({
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "vs", "etc", "al", "fig", "figs", "eq", "eqs", "ref",
    "refs", "no", "nos", "vol", "vols", "pp", "p", "ch", "sec", "cf", "approx", "ca", "inc", "ltd", "co", "corp",
    "dept", "est", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "gen",
    "gov", "rev", "resp", "e.g", "i.e", "viz", "ie", "eg", "min", "max", "avg", "incl",
})
"""Words after which a period does not end a sentence (compared lowercased, without the period)."""

_END = re.compile(r"[.!?\u2026]+[\"')\]\u201d\u2019]*(?=\s)")
_BLOCK_START = re.compile(r"\n[ \t]*(?:#{1,6}\s|[-*+]\s|\d{1,9}[.)]\s|>|\||```|~~~)")
_PARAGRAPH = re.compile(r"\n[ \t]*\n")
_HEADING_LINE = re.compile(r"^[ \t]{0,3}#{1,6}[ \t][^\n]*", re.MULTILINE)
_WORD_BEFORE = re.compile(r"(\S+)\Z")


def sentence_ends(text: str, abbreviations: frozenset[str] = ABBREVIATIONS) -> list[int]:
    """The offsets where a sentence ends (the end of its last character), in order, by the rules above."""
    ends: set[int] = set()
    n = len(text)
    for match in _END.finditer(text):
        end = match.end()
        nxt = end
        while nxt < n and text[nxt].isspace():
            nxt += 1
        if nxt < n and text[nxt].islower():
            continue
        if text[match.start():end].rstrip("\"')]\u201d\u2019") == ".":
            word = _WORD_BEFORE.search(text, 0, match.start())
            if word is not None:
                before = word.group(1).lstrip("\"'([\u201c\u2018")
                if len(before) == 1 and before.isalpha():
                    continue  # an initial
                if before.lower() in abbreviations or ("." in before and before.replace(".", "").isalpha()):
                    continue
        ends.add(end)
    for pattern in (_PARAGRAPH, _BLOCK_START):
        for match in pattern.finditer(text):
            cut = match.start()
            while cut > 0 and text[cut - 1].isspace():
                cut -= 1
            if cut > 0:
                ends.add(cut)
    ends.update(match.end() for match in _HEADING_LINE.finditer(text))
    return sorted(ends)


def sentences(text: str, abbreviations: frozenset[str] = ABBREVIATIONS) -> list[Span]:
    """The sentences of ``text`` as spans without surrounding whitespace."""
    spans: list[Span] = []
    start = 0
    for end in [*sentence_ends(text, abbreviations), len(text)]:
        a, b = start, end
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if b > a:
            spans.append((a, b))
        start = max(start, end)
    return spans


@dataclass(frozen=True)
class SentenceSplitter:
    size: int
    overlap: int
    abbreviations: frozenset[str] = ABBREVIATIONS

    def spans(self, text: str, document: str = "") -> list[Span]:
        chunks: list[Span] = []
        found = sentences(text, self.abbreviations)
        long = RecursiveSplitter(self.size, self.overlap)
        i, n = 0, len(found)
        while i < n:
            start, end = found[i]
            if end - start > self.size:
                chunks.extend(long.split_span(text, start, end))
                i += 1
                continue
            j = i + 1
            while j < n and found[j][1] - start <= self.size:
                j += 1
            chunks.append((start, found[j - 1][1]))
            if j >= n:
                break
            # Overlap: the last whole sentences of this chunk that fit in `overlap`, never the whole chunk.
            # The next chunk must reach sentence j, or it would end inside this one.
            k = j
            if found[j][1] - found[j][0] <= self.size:
                while k - 1 > i and found[j - 1][1] - found[k - 1][0] <= self.overlap \
                        and found[j][1] - found[k - 1][0] <= self.size:
                    k -= 1
            i = k
        return chunks


def build(kind: ChunkerKind, params: ChunkParams) -> Splitter:
    extra = frozenset(word.lower().rstrip(".") for word in params.options.get("abbreviations", []))
    return SentenceSplitter(params.size, params.overlap, ABBREVIATIONS | extra)
