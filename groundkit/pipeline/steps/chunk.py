"""Step chunk: split the corpus snapshot into chunks."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from groundkit._atomic import atomic_write_text
from groundkit._lines import dumps_json
from groundkit.corpus.chunking import chunk_documents
from groundkit.corpus.passage import Chunk, Document
from groundkit.pipeline.stages import DOCUMENTS, written_by

if TYPE_CHECKING:
    from groundkit.config import ChunkParams, Params
    from groundkit.pipeline.store import Store



def run(documents: Path, params: ChunkParams, out_chunks: Path, out_chunking: Path, *, store: Store) -> list[Chunk]:
    """Chunk the validated corpus snapshot; record the chunk params used, for the score stage to check."""

    chunks = chunk_documents(store.read_models(documents, Document, producer=written_by(DOCUMENTS)), params)
    store.write_models(out_chunks, chunks, Chunk)
    atomic_write_text(out_chunking, dumps_json({"chunk": params.model_dump(mode="json")}))
    return chunks


def summary(chunks: list[Chunk], params: Params) -> str:
    """What the stage did, in a line."""
    return f"chunk: {len(chunks)} chunks"
