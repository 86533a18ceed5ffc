"""The steps of an evaluation, each reading and writing artifact files.

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
    from groundkit.config import BM25Params, Params
    from groundkit.corpus.audit import AuditParams, AuditReport
    from groundkit.corpus.chunking import ChunkParams
    from groundkit.corpus.passage import Chunk
    from groundkit.corpus.spans import ResolvedJudgment
    from groundkit.corpus.tokenizing import TokenizeParams
    from groundkit.retrieval.bm25 import BM25Index
    from groundkit.scoring.schema import ExternalRunFile


def validate_judgments(
    judgments: Path,
    corpus_root: Path,
    params: AuditParams,
    out_validation: Path,
    out_audit: Path,
    *,
    tokenizer: TokenizeParams | None = None,
) -> AuditReport:
    """Check the judgments file, audit it against the corpus (with the index's tokenizer), record the hashes."""
    from groundkit.corpus.audit import audit, check_audit
    from groundkit.corpus.documents import corpus_hash, file_hash, load_corpus
    from groundkit.corpus.judgments import Category, load_judgments

    loaded = load_judgments(judgments)
    report = audit(load_corpus(corpus_root), loaded, tokenizer)
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
    from groundkit.corpus.documents import load_corpus
    from groundkit.corpus.judgments import load_judgments
    from groundkit.corpus.spans import resolve_judgments

    documents = load_corpus(corpus_root)
    loaded = load_judgments(judgments)
    resolved = resolve_judgments(
        loaded, {d.path: d for d in documents}, judgments_path=judgments, corpus_root=corpus_root
    )
    # Spans first: the documents snapshot is what unblocks chunking, so it is written last.
    atomic_write_lines(out_spans, (model_line(r) for r in resolved), seal=True)
    atomic_write_lines(out_documents, (model_line(d) for d in documents), seal=True)
    return resolved


def chunk(documents: Path, params: ChunkParams, out_chunks: Path) -> list[Chunk]:
    """Chunk the validated corpus snapshot."""
    from groundkit.corpus.chunking import chunk_documents
    from groundkit.corpus.passage import Document

    chunks = chunk_documents(read_models(documents, Document, producer="resolve-spans"), params)
    atomic_write_lines(out_chunks, (model_line(c) for c in chunks), seal=True)
    return chunks


def index(chunks: Path, params: BM25Params, out_index: Path, *, tokenizer: TokenizeParams | None = None) -> BM25Index:
    """Build and save the BM25 index over the chunks; the manifest records the tokenizer."""
    from groundkit.corpus.passage import Chunk
    from groundkit.retrieval.bm25 import BM25Index

    built = BM25Index.build(
        read_models(chunks, Chunk, producer="chunk"), k1=params.k1, b=params.b, tokenizer=tokenizer
    )
    built.save(out_index)
    return built


def embed(chunks: Path, params: Params, out_embeddings: Path, *, progress: bool = False) -> dict[str, object]:
    """Embed the chunks when the retriever needs it; otherwise write a manifest saying none were needed.

    The second case never imports torch, which is what keeps the default BM25
    pipeline free of the dense extra.
    """
    from groundkit.corpus.passage import Chunk
    from groundkit.retrieval.dense import save_embeddings

    chunk_list = read_models(chunks, Chunk, producer="chunk") if params.retrieve.needs_embeddings else []
    dense = params.dense if params.retrieve.needs_embeddings else None
    return save_embeddings(out_embeddings, chunk_list, dense, progress=progress)


def retrieve(
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
    from groundkit._progress import track
    from groundkit.corpus.passage import Chunk, Document
    from groundkit.corpus.spans import ResolvedJudgment
    from groundkit.retrieval.trec import run_lines, run_tag

    judgments = read_models(spans, ResolvedJudgment, producer="resolve-spans")
    depth = params.retrieve.depth
    passages: dict[str, Chunk] = {}
    if params.retrieve.retriever == "external":
        from groundkit.retrieval.external import read_external_run

        documents_by_path = {d.path: d for d in read_models(documents, Document, producer="resolve-spans")}
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
        chunk_list = [] if bm25 else read_models(chunks, Chunk, producer="chunk")
        retriever = build_retriever(params, chunk_list, index_dir, embeddings_dir)
        rankings = {j.query_id: retriever.search(j.query, depth)
                    for j in track(judgments, desc="retrieve", unit="query")}
    ordered = sorted(passages.values(), key=lambda p: (p.document, p.start_offset, p.end_offset))
    atomic_write_lines(out_passages, (model_line(p) for p in ordered), seal=True)
    atomic_write_lines(out_run, run_lines(rankings, run_tag(params.retrieve.retriever)), seal=True)
    return rankings


def score(
    spans: Path,
    chunks: Path,
    run: Path,
    passages: Path,
    validation: Path,
    params: Params,
    *,
    out_qrels: Path,
    out_metrics: Path,
    out_per_query: Path,
    out_run_metadata: Path,
    out_plots: Path,
) -> dict[str, object]:
    """Derive qrels, score the run, and write metrics.json, per-query rows, plot data and run metadata."""
    from groundkit import __version__
    from groundkit.artifacts import atomic_directory, csv_text
    from groundkit.corpus.passage import Chunk
    from groundkit.corpus.spans import ResolvedJudgment
    from groundkit.errors import ArtifactError
    from groundkit.retrieval.trec import qrels_lines, read_run
    from groundkit.scoring.schema import RunMetadata
    from groundkit.scoring.score import budget_curve, hit_rate_curve, score_passages, score_rankings

    judgments = read_models(spans, ResolvedJudgment, producer="resolve-spans")
    external = params.retrieve.retriever == "external"
    # An external run ranks its own passages; every other retriever ranks the chunks.
    items = read_models(passages if external else chunks, Chunk, producer="retrieve" if external else "chunk")
    rankings = read_run(run, [j.query_id for j in judgments], {c.chunk_id for c in items})
    for query_id, ranking in rankings.items():
        if len(ranking) > params.retrieve.depth:
            raise ArtifactError(run, f"query {query_id!r} has {len(ranking)} results, more than retrieve.depth",
                                fix="re-run the retrieve stage")
    inputs = read_json(validation, producer="validate-judgments")
    external_run = _external_run_file(Path(params.retrieve.run)) if external else None
    try:
        metadata = RunMetadata(
            corpus_hash=inputs["corpus_hash"],
            judgments_hash=inputs["judgments_hash"],
            params=params.result_params(),
            groundkit_version=__version__,
            external_run=external_run,
        )
    except (KeyError, TypeError, ValueError):
        raise ArtifactError(validation, "lacks the input hashes", fix="re-run the validate-judgments stage") from None
    by_id = {c.chunk_id: c for c in items}
    ranked = {q: [by_id[c] for c, _ in r] for q, r in rankings.items()}
    if external:
        result, qrels = score_passages(judgments, ranked, params.score.ks, params.score.budgets)
    else:
        result, qrels = score_rankings(
            judgments, items, {q: [c for c, _ in r] for q, r in rankings.items()}, params.score.ks, params.score.budgets
        )
    summary = result.summary()
    ks = params.score.ks
    bars = list(dict.fromkeys([f"recall@{ks[0]}", f"recall@{ks[-1]}", f"ndcg@{ks[-1]}"]))
    categories = [{"category": name, **{m: block[m] for m in bars}}
                  for name, block in summary["by_category"].items() if "mrr" in block]
    with atomic_directory(out_plots) as plots:
        curves = {
            "hit_rate.csv": csv_text(hit_rate_curve(result, params.retrieve.depth), ["k", "recall"]),
            "budget.csv": csv_text(budget_curve(judgments, ranked), ["budget_chars", "recall"]),
            "categories.csv": csv_text(categories, ["category", *bars]),
        }
        for name, text in curves.items():
            (plots / name).write_text(text, encoding="utf-8", newline="\n")
    atomic_write_lines(out_qrels, qrels_lines(qrels))
    atomic_write_text(out_per_query, result.per_query_csv())
    atomic_write_text(out_run_metadata, dumps_json(metadata.document()))
    atomic_write_text(out_metrics, dumps_json(summary))
    return summary


def _external_run_file(path: Path) -> ExternalRunFile:
    """Name and SHA-256 of the external run being scored: run.json says which file it measured, not where it lay."""
    from groundkit.artifacts import file_sha256
    from groundkit.errors import RunFileError
    from groundkit.scoring.schema import ExternalRunFile

    try:
        digest = file_sha256(path)
    except OSError as exc:
        raise RunFileError(path, f"cannot be read to record its SHA-256 in run.json ({exc.strerror})",
                           fix="keep the run file (retrieve.run) in place until scoring is done") from None
    return ExternalRunFile(name=path.name, sha256=digest)
