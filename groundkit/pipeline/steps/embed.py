"""Step embed: the dense embeddings of the chunks, or a manifest saying none were needed."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from groundkit.artifacts import read_models
from groundkit.corpus.passage import Chunk
from groundkit.pipeline.stages import CHUNKS, written_by
from groundkit.retrieval.dense import Encoder, save_embeddings

if TYPE_CHECKING:
    from groundkit.config import Params



def run(chunks: Path, params: Params, out_embeddings: Path, *, progress: bool = True) -> dict[str, object]:
    """Embed the chunks when the retriever needs it; otherwise write a manifest saying none were needed.

    The second case never imports torch, which is what keeps the default BM25
    pipeline free of the dense extra.
    """

    chunk_list = read_models(chunks, Chunk, producer=written_by(CHUNKS)) if params.retrieve.needs_embeddings else []
    dense = params.dense if params.retrieve.needs_embeddings else None
    # Built here, not inside save_embeddings, so that a missing model names the params file actually read.
    encoder = Encoder(params.dense, source=params.source) if dense is not None else None
    return save_embeddings(out_embeddings, chunk_list, dense, encoder, progress=progress)


def summary(manifest: dict[str, object], params: Params) -> str:
    """What the stage did, in a line."""
    if manifest["embedded"]:
        return f"embed: {manifest['num_chunks']} chunks, dim {manifest['dim']}, {manifest['model_version']}"
    return f"embed: skipped, retriever {params.retrieve.retriever!r} uses no embeddings"
