"""Step retrieve: rank passages for every query, or read an external run."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from groundkit._progress import track
from groundkit.artifacts import atomic_write_lines, model_line, read_models
from groundkit.corpus.passage import Chunk, Document
from groundkit.corpus.spans import ResolvedJudgment
from groundkit.pipeline.stages import CHUNKS, DOCUMENTS, GOLD_SPANS, written_by
from groundkit.retrieval.trec import run_lines, run_tag

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
) -> dict[str, list[tuple[str, float]]]:
    """Rank chunks for every judgment's query with the configured retriever, or read an external run.

    Writes a TREC run and ``passages.jsonl``: the passages of an external run
    (which are not chunks), empty for every other retriever.
    """

    judgments = read_models(spans, ResolvedJudgment, producer=written_by(GOLD_SPANS))
    depth = params.retrieve.depth
    passages: dict[str, Chunk] = {}
    if params.retrieve.retriever == "external":
        from groundkit.retrieval.external import read_external_run

        documents_by_path = {d.path: d for d in read_models(documents, Document, producer=written_by(DOCUMENTS))}
        external = read_external_run(params.retrieve.run, documents_by_path, [j.query_id for j in judgments])
        rankings: dict[str, list[tuple[str, float]]] = {}
        for query_id, ranked in external.items():
            # An external run carries ranks, not scores; 1/rank keeps its order for trec_eval.
            rankings[query_id] = [(p.chunk_id, 1.0 / rank) for rank, p in enumerate(ranked[:depth], start=1)]
            passages.update((p.chunk_id, p) for p in ranked[:depth])
    else:
        from groundkit.retrieval.registry import build_retriever

        # The BM25 index carries its own rows; only the other retrievers need the chunks themselves.
        bm25 = params.retrieve.retriever == "bm25"
        chunk_list = [] if bm25 else read_models(chunks, Chunk, producer=written_by(CHUNKS))
        retriever = build_retriever(params, chunk_list, index_dir, embeddings_dir)
        rankings = {j.query_id: retriever.search(j.query, depth)
                    for j in track(judgments, desc="retrieve", unit="query")}
    ordered = sorted(passages.values(), key=lambda p: (p.document, p.start_offset, p.end_offset))
    atomic_write_lines(out_passages, (model_line(p) for p in ordered), seal=True)
    atomic_write_lines(out_run, run_lines(rankings, run_tag(params.retrieve.retriever)), seal=True)
    return rankings


def summary(rankings: dict[str, list[tuple[str, float]]], params: Params) -> str:
    """What the stage did, in a line."""
    empty = sum(1 for r in rankings.values() if not r)
    return f"retrieve ({params.retrieve.retriever}): {len(rankings)} queries, {empty} with no result"
