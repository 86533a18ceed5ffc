"""Step retrieve: rank passages for every query with the configured retriever (or read its run)."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

from groundkit.artifacts import atomic_directory, read_models, write_models
from groundkit.corpus.passage import Chunk, Document, Excerpt
from groundkit.corpus.spans import ResolvedJudgment
from groundkit.execution import open_engine
from groundkit.pipeline.stages import CHUNKS, DOCUMENTS, GOLD_SPANS, PASSAGES_FILE, written_by
from groundkit.retrieval.kinds import Run, Sources, kind_of
from groundkit.retrieval.registry import retrieve
from groundkit.retrieval.trec import write_run

if TYPE_CHECKING:
    from groundkit.config import Params
    from groundkit.retrieval.bm25 import BM25Index
    from groundkit.retrieval.kinds import Ranking



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
    with ExitStack() as opened:
        def search_index(index: BM25Index, queries: Sequence[str], depth: int) -> list[Ranking]:
            # The engine is opened (Ray connected) only when a BM25 index is searched on its own.
            return opened.enter_context(open_engine(params.execution)).search(index, queries, depth)

        ranked = retrieve(params, sources, [(j.query_id, j.query) for j in judgments], search_index=search_index)
    excluded = {j.query_id: frozenset(j.exclude_documents) for j in judgments if j.exclude_documents}
    if excluded:
        # Applied to the run itself, so the exported run.trec scores the same in ir_measures as here.
        kind = kind_of(params.retrieve.retriever)
        ranked = ranked.excluding(excluded, sources.chunks() if kind.searches else ranked.passages)
    with atomic_directory(out_passages) as folder:
        write_models(folder / PASSAGES_FILE, ranked.passages, Excerpt)
    write_run(out_run, ranked.rankings, kind_of(params.retrieve.retriever).run_tag)
    return ranked


def summary(ranked: Run, params: Params) -> str:
    """What the stage did, in a line."""
    empty = sum(1 for r in ranked.rankings.values() if not r)
    return f"retrieve ({params.retrieve.retriever}): {len(ranked.rankings)} queries, {empty} with no result"
