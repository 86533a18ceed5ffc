"""Step index: build the BM25 index over the chunks."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from groundkit.config import ExecutionParams, TokenizeParams
from groundkit.corpus.passage import Chunk
from groundkit.execution import described, open_engine
from groundkit.pipeline.stages import CHUNKS, written_by
from groundkit.retrieval.bm25 import IndexSummary

if TYPE_CHECKING:
    from groundkit.config import BM25Params, Params
    from groundkit.pipeline.store import Store



def run(chunks: Path, params: BM25Params, out_index: Path, *, store: Store, tokenizer: TokenizeParams | None = None,
        execution: ExecutionParams | None = None) -> IndexSummary:
    """Build the BM25 index over the chunks, streaming them, on the engine ``execution`` names.

    The chunks are read one line at a time and never held together, so the index of a corpus larger
    than memory can be built (bm25.write_index spills what it counted to disk). The manifest records
    the tokenizer.
    """
    records = ((c.chunk_id, c.document, c.start_offset, c.indexed_text)
               for c in store.iter_models(chunks, Chunk, producer=written_by(CHUNKS)))
    tokenizer = tokenizer or TokenizeParams()
    with open_engine(execution or ExecutionParams()) as engine:
        return engine.write_index(records, out_index, params, tokenizer, tokenize=store.tokenizer(tokenizer),
                                  digest_of=store.sha256)


def summary(built: IndexSummary, params: Params) -> str:
    """What the stage did, in a line, and on which engine."""
    return f"index: {built.num_chunks} chunks, {built.vocab_size} terms, on the {described(params.execution)}"
