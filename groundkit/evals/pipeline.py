"""The six steps of an evaluation, each reading and writing artifact files.

The DVC stage scripts in stages/ and the in-process runner call these same
functions, so `dvc repro` and `groundkit run` cannot drift apart. Every
function takes its input and output paths as arguments; none is hard-coded.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

# Each stage runs in a fresh interpreter, and under `dvc repro` start-up is a
# large share of a stage's time: a step imports what it alone needs, inside
# the function, so that no stage pays for another's modules (numpy above all).
from groundkit.artifacts import atomic_write_lines, atomic_write_text, dumps_json, model_line, read_json, read_models

if TYPE_CHECKING:
    from groundkit.bm25 import BM25Index
    from groundkit.chunking import ChunkParams
    from groundkit.contracts import Chunk
    from groundkit.evals.audit import AuditParams, AuditReport
    from groundkit.evals.spans import ResolvedJudgment
    from groundkit.params import BM25Params, Params, RetrieveParams


def validate_judgments(
    judgments: Path, corpus_root: Path, params: AuditParams, out_validation: Path, out_audit: Path
) -> AuditReport:
    """Check the judgments file, audit it against the corpus, and record the input hashes."""
    from groundkit.documents import corpus_hash, file_hash, load_corpus
    from groundkit.evals.audit import audit, check_audit
    from groundkit.evals.corpus import Category, load_judgments

    loaded = load_judgments(judgments)
    report = audit(load_corpus(corpus_root), loaded)
    check_audit(report, params, str(judgments))
    counts = {c.value: sum(1 for j in loaded if j.category is c) for c in Category}
    validation = {
        "judgments": len(loaded),
        "by_category": counts,
        "judgments_hash": file_hash(judgments),
        "corpus_hash": corpus_hash(corpus_root),
    }
    atomic_write_text(out_audit, dumps_json(report.model_dump(mode="json")))
    atomic_write_text(out_validation, dumps_json(validation))
    return report


def resolve_spans(corpus_root: Path, judgments: Path, out_documents: Path, out_spans: Path) -> list[ResolvedJudgment]:
    """Load the corpus and resolve every gold quote; write the corpus snapshot and the spans."""
    from groundkit.documents import load_corpus
    from groundkit.evals.corpus import load_judgments
    from groundkit.evals.spans import resolve_judgments

    documents = load_corpus(corpus_root)
    loaded = load_judgments(judgments)
    resolved = resolve_judgments(
        loaded, {d.path: d for d in documents}, judgments_path=judgments, corpus_root=corpus_root
    )
    # Spans first: the documents snapshot is what unblocks chunking, so it is written last.
    atomic_write_lines(out_spans, (model_line(r) for r in resolved))
    atomic_write_lines(out_documents, (model_line(d) for d in documents))
    return resolved


def chunk(documents: Path, params: ChunkParams, out_chunks: Path) -> list[Chunk]:
    """Chunk the validated corpus snapshot."""
    from groundkit.chunking import chunk_documents
    from groundkit.contracts import Document

    chunks = chunk_documents(read_models(documents, Document, producer="resolve-spans"), params)
    atomic_write_lines(out_chunks, (model_line(c) for c in chunks))
    return chunks


def index(chunks: Path, params: BM25Params, out_index: Path) -> BM25Index:
    """Build and save the BM25 index over the chunks."""
    from groundkit.bm25 import BM25Index
    from groundkit.contracts import Chunk

    built = BM25Index.build(read_models(chunks, Chunk, producer="chunk"), k1=params.k1, b=params.b)
    built.save(out_index)
    return built


def retrieve(index_dir: Path, spans: Path, params: RetrieveParams, out_run: Path) -> dict[str, list[tuple[str, float]]]:
    """Retrieve for every judgment's query and write a TREC run."""
    from groundkit._progress import track
    from groundkit.bm25 import BM25Index
    from groundkit.evals.spans import ResolvedJudgment
    from groundkit.evals.trec import run_lines

    loaded = BM25Index.load(index_dir)
    judgments = read_models(spans, ResolvedJudgment, producer="resolve-spans")
    rankings = {j.query_id: loaded.search(j.query, params.depth)
                for j in track(judgments, desc="retrieve", unit="query")}
    atomic_write_lines(out_run, run_lines(rankings))
    return rankings


def score(
    spans: Path,
    chunks: Path,
    run: Path,
    validation: Path,
    params: Params,
    *,
    out_qrels: Path,
    out_metrics: Path,
    out_per_query: Path,
    out_run_metadata: Path,
) -> dict[str, object]:
    """Derive qrels, score the run, and write metrics.json, per-query rows and run metadata."""
    from groundkit import __version__
    from groundkit.contracts import Chunk
    from groundkit.errors import ArtifactError
    from groundkit.evals.schema import RunMetadata
    from groundkit.evals.scoring import score_rankings
    from groundkit.evals.spans import ResolvedJudgment
    from groundkit.evals.trec import qrels_lines, read_run

    judgments = read_models(spans, ResolvedJudgment, producer="resolve-spans")
    chunk_list = read_models(chunks, Chunk, producer="chunk")
    rankings = read_run(run, [j.query_id for j in judgments], {c.chunk_id for c in chunk_list})
    for query_id, ranking in rankings.items():
        if len(ranking) > params.retrieve.depth:
            raise ArtifactError(run, f"query {query_id!r} has {len(ranking)} results, more than retrieve.depth",
                                fix="re-run the retrieve stage")
    inputs = read_json(validation, producer="validate-judgments")
    try:
        metadata = RunMetadata(
            corpus_hash=inputs["corpus_hash"],
            judgments_hash=inputs["judgments_hash"],
            params=params.result_params(),
            groundkit_version=__version__,
        )
    except (KeyError, TypeError, ValueError):
        raise ArtifactError(validation, "lacks the input hashes", fix="re-run the validate-judgments stage") from None
    result, qrels = score_rankings(
        judgments, chunk_list, {q: [c for c, _ in r] for q, r in rankings.items()}, params.score.ks
    )
    summary = result.summary()
    atomic_write_lines(out_qrels, qrels_lines(qrels))
    atomic_write_text(out_per_query, result.per_query_csv())
    atomic_write_text(out_run_metadata, dumps_json(metadata.model_dump(mode="json")))
    atomic_write_text(out_metrics, dumps_json(summary))
    return summary
