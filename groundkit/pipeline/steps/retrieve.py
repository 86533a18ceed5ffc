"""Step retrieve: rank passages for every query with the configured retriever (or read its run)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from groundkit.artifacts import atomic_directory, read_models, write_models
from groundkit.corpus.passage import Chunk, Document, Excerpt
from groundkit.corpus.spans import ResolvedJudgment
from groundkit.execution import lazy_engine
from groundkit.pipeline.stages import CHUNKS, DOCUMENTS, GOLD_SPANS, PASSAGES_FILE, written_by
from groundkit.retrieval.kinds import Run, Sources
from groundkit.retrieval.trec import write_run

if TYPE_CHECKING:
    from groundkit.config import Params


def run(
    chunks: Path,
    documents: Path,
    index_dir: Path,
    embeddings_dir: Path,
    spans: Path,
    params: Params,
    *,
    out_run: Path,
    out_passages: Path,
) -> Run:
    """Rank passages for every judgment's query with the retriever ``retrieve.retriever`` names.

    Writes a TREC run and a folder holding ``passages.jsonl``: the passages ranked that
    are not chunks (an external run's), empty when the chunks are what was ranked. A
    judgment's ``exclude_documents`` leave its ranking here, before the run is written.
    """

    judgments = read_models(spans, ResolvedJudgment, producer=written_by(GOLD_SPANS))
    sources = Sources(
        chunks=lambda: read_models(chunks, Chunk, producer=written_by(CHUNKS)),
        documents=lambda: read_models(documents, Document, producer=written_by(DOCUMENTS)),
        index_dir=index_dir,
        embeddings_dir=embeddings_dir,
    )
    kind = params.retrieve.kind
    # The engine connects (a Ray cluster) only if the kind hands it work.
    with lazy_engine(params.execution) as engine:
        ranked = kind.build(sources, params, engine).rank([(j.query_id, j.query) for j in judgments],
                                                          params.retrieve.depth)
    excluded = {j.query_id: frozenset(j.exclude_documents) for j in judgments if j.exclude_documents}
    if excluded:
        # Applied to the run itself, so the exported run.trec scores the same in ir_measures as here.
        ranked = ranked.excluding(excluded, sources.chunks() if kind.ranks_chunks else ranked.passages)
    with atomic_directory(out_passages) as folder:
        write_models(folder / PASSAGES_FILE, ranked.passages, Excerpt)
    write_run(out_run, ranked.rankings, kind.run_tag)
    return ranked


def summary(ranked: Run, params: Params) -> str:
    """What the stage did, in a line."""
    empty = sum(1 for r in ranked.rankings.values() if not r)
    return f"retrieve ({params.retrieve.retriever}): {len(ranked.rankings)} queries, {empty} with no result"
