"""Step chunk: split the corpus snapshot into chunks."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from groundkit.corpus.chunking import chunk_documents
from groundkit.corpus.passage import Chunk, Document
from groundkit.pipeline.provenance import Provenance
from groundkit.pipeline.stages import CHUNKING, DOCUMENTS, written_by
from groundkit.scoring.cautions import PREFIX, few_chunks

if TYPE_CHECKING:
    from groundkit.config import ChunkParams, Params
    from groundkit.pipeline.store import Store



def run(documents: Path, params: ChunkParams, out_chunks: Path, out_chunking: Path, *, store: Store) -> list[Chunk]:
    """Chunk the validated corpus snapshot; record the chunk params used, for the score stage to check."""

    chunks = chunk_documents(store.read_models(documents, Document, producer=written_by(DOCUMENTS)), params)
    store.write_models(out_chunks, chunks, Chunk)
    store.write_provenance(out_chunking, Provenance(stage=written_by(CHUNKING),
                                                    inputs={"documents": store.sha256(documents)},
                                                    params={"chunk": params.recorded()}))
    return chunks


def summary(chunks: list[Chunk], params: Params) -> str:
    """What the stage did, in a line, and a warning when the chunks are too few for the cut-offs to measure much."""
    warning = caution(len(chunks), params)
    return f"chunk: {len(chunks)} chunks" + (f"\n{PREFIX}{warning}" if warning else "")


def caution(chunks: int, params: Params) -> str | None:
    """The warning about ``chunks`` chunks, when a retriever ranks them (an external run ranks passages of its own)."""
    if not params.retrieve.kind.ranks_chunks:
        return None
    return few_chunks(chunks, depth=params.retrieve.depth, largest_k=params.score.deepest_rank)
