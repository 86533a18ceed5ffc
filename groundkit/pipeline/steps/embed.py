"""Step embed: the dense embeddings of the chunks, or a manifest saying none were needed."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from groundkit.corpus.passage import Chunk
from groundkit.execution import open_engine
from groundkit.pipeline.stages import CHUNKS, written_by
from groundkit.retrieval.embeddings_manifest import save_no_embeddings
from groundkit.retrieval.kinds import Need

if TYPE_CHECKING:
    from groundkit.config import Params
    from groundkit.pipeline.store import Store



def run(chunks: Path, params: Params, out_embeddings: Path, *, store: Store) -> dict[str, object]:
    """Embed the chunks when the retriever needs it, with the engine ``execution`` names; otherwise write a
    manifest saying none were needed.

    The second case never imports torch (nor ray), which is what keeps the default BM25 pipeline free of
    the dense extra.
    """
    if Need.EMBEDDINGS not in params.retrieve.kind.needs:
        return save_no_embeddings(out_embeddings)
    from groundkit.retrieval.dense import Encoder, save_embeddings  # numpy, only when there is something to embed

    chunk_list = store.read_models(chunks, Chunk, producer=written_by(CHUNKS))
    # Built here, not inside save_embeddings, so that a missing model names the params file actually read.
    encoder = Encoder(params.dense, source=params.source)
    with open_engine(params.execution) as engine:
        return save_embeddings(out_embeddings, chunk_list, params.dense, encoder, encode=engine.embed)


def summary(manifest: dict[str, object], params: Params) -> str:
    """What the stage did, in a line."""
    if manifest["embedded"]:
        return f"embed: {manifest['num_chunks']} chunks, dim {manifest['dim']}, {manifest['model_version']}"
    return f"embed: skipped, retriever {params.retrieve.retriever!r} uses no embeddings"
