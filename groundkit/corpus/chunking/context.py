"""``chunk.context``: a prefix indexed and read with each chunk, as contextual retrieval adds one.

* ``none``: no prefix.
* ``title``: the document's title: its first Markdown heading (groundkit/corpus/chunking/markdown.py), or
  its path when it has none.
* ``headings``: the path of Markdown headings above the chunk's start, outermost first, joined by `` > ``
  (for any strategy); a chunk above every heading, or in a document without headings, gets the title.

The prefix is the text, then a line break. A chunk whose text already begins with it (after a heading's
``#`` marks) gets none. The prefix is indexed and embedded, and it is read: it counts in chars@k, in
precision's characters read and against an @Nchars budget; it is never document text, so it never covers
gold (groundkit/scoring/measures/_read.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from groundkit.corpus.chunking.kinds import Span
from groundkit.corpus.chunking.markdown import HeadingPaths, headings

SEPARATOR = " > "


def title(text: str, path: str) -> str:
    """The document's first Markdown heading, or its path when it has none (or only empty ones)."""
    found = next((h.title for h in headings(text) if h.title), None)
    return found or path


def _prefix(context: str, chunk: str) -> str:
    own = chunk.lstrip("#").lstrip(" \t")
    return "" if not context or own.startswith(context) else context + "\n"


def _title(text: str, path: str, spans: Sequence[Span]) -> list[str]:
    name = title(text, path)
    return [_prefix(name, text[start:end]) for start, end in spans]


def _headings(text: str, path: str, spans: Sequence[Span]) -> list[str]:
    paths = HeadingPaths(text)
    name = title(text, path)
    return [_prefix(SEPARATOR.join(paths.at(start)) or name, text[start:end]) for start, end in spans]


CONTEXTS: dict[str, Callable[[str, str, Sequence[Span]], list[str]] | None] = {
    "none": None,
    "title": _title,
    "headings": _headings,
}
"""Each value of ``chunk.context`` and what computes the prefixes of a document's chunks (None: no prefix)."""
