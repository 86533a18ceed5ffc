"""Step index: build the BM25 index over the chunks."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from groundkit.artifacts import iter_models
from groundkit.corpus.passage import Chunk
from groundkit.pipeline.stages import CHUNKS, written_by
from groundkit.retrieval.bm25 import IndexSummary, write_index

if TYPE_CHECKING:
    from groundkit.config import BM25Params, Params, TokenizeParams



def run(chunks: Path, params: BM25Params, out_index: Path, *, tokenizer: TokenizeParams | None = None
        ) -> IndexSummary:
    """Build the BM25 index over the chunks, streaming them; the manifest records the tokenizer.

    The chunks are read one line at a time and never held together, so the index of a corpus larger
    than memory can be built (bm25.write_index spills what it counted to disk).
    """
    records = ((c.chunk_id, c.document, c.start_offset, c.text)
               for c in iter_models(chunks, Chunk, producer=written_by(CHUNKS)))
    return write_index(records, out_index, k1=params.k1, b=params.b, tokenizer=tokenizer)


def summary(built: IndexSummary, params: Params) -> str:
    """What the stage did, in a line."""
    return f"index: {built.num_chunks} chunks, {built.vocab_size} terms"
