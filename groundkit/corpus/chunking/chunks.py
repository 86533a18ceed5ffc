"""Chunks from spans: every strategy's ``[start, end)`` spans of each document, as Chunk records.

Offsets always index the document's own text, so ``text[start:end]`` is the chunk and any gold span can be
tested for overlap without re-tokenizing.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from groundkit.artifacts.models import assembled
from groundkit.console.progress import track
from groundkit.corpus.chunking.context import CONTEXTS
from groundkit.corpus.chunking.fixed import fixed_spans, whole_span
from groundkit.corpus.passage import Chunk, Document, content_id

if TYPE_CHECKING:
    from groundkit.config import ChunkParams

def _chunk(document: str, start: int, end: int, text: str, prefix: str = "") -> Chunk:
    """The chunk ``text`` is, at ``[start, end)`` of ``document``, built without validating it again.

    Each strategy cuts ``text`` as ``document_text[start:end]`` with ``start < end`` from a validated
    document (a chunker groundkit did not write is checked first: checked.py), so every check of Chunk holds
    by construction, and the id is derived as Chunk derives it; tests/corpus/test_chunking.py compares every
    chunk of every strategy with a validated one. Validating cost a quarter of the chunk stage on SciFact.
    """
    return assembled(Chunk, {"document": document, "start": start, "end": end, "text": text,
                             "passage_id": content_id(document, start, end, text), "prefix": prefix})


def chunk_fixed(document: Document, size: int, overlap: int) -> Iterator[Chunk]:
    """The ``fixed`` strategy's chunks of ``document`` (groundkit/corpus/chunking/fixed.py)."""
    text = document.text
    for start, end in fixed_spans(text, size, overlap):
        yield _chunk(document.path, start, end, text[start:end])


def chunk_whole(document: Document) -> Iterator[Chunk]:
    """The document as one chunk, without leading or trailing whitespace."""
    text = document.text
    for start, end in whole_span(text):
        yield _chunk(document.path, start, end, text[start:end])


def chunk_documents(documents: Iterable[Document], params: ChunkParams) -> list[Chunk]:
    """Chunk every document; the result is ordered by (document path, start_offset).

    A chunker groundkit did not write (``python:``, a library's) has every document's chunks checked before
    this returns, so a failure leaves nothing written.
    """
    splitter = params.kind.build(params)
    context = CONTEXTS[params.context]
    chunks: list[Chunk] = []
    ordered = sorted(documents, key=lambda d: d.path)
    for document in track(ordered, desc="chunk", unit="doc"):
        text, path = document.text, document.path
        spans = splitter.spans(text, path)
        if context is None:
            chunks.extend(_chunk(path, start, end, text[start:end]) for start, end in spans)
        else:
            chunks.extend(_chunk(path, start, end, text[start:end], prefix)
                          for (start, end), prefix in zip(spans, context(text, path, spans), strict=True))
    return chunks
