"""Exporting a run over an imported BEIR dataset as document-level TREC files with the dataset's own ids.

groundkit ranks passages (chunks) and names them by content id, which is what its own qrels.trec and
run.trec hold. To set a run beside published BEIR figures, or beside another system's run on the same
dataset, ``export_beir`` writes:

* ``run.trec``: per query, each document once, at the rank of its best passage, with that passage's
  score (MaxP, the usual passage-to-document rule; with ``chunk.strategy=document`` the run is the
  passage run itself), docno the original BEIR id (:func:`groundkit.corpus.beir.document_id`);
* ``qrels.trec``: the import's judgments with their grades, docno the original BEIR id. It is the
  BEIR qrels file less what the import skipped or dropped (listed in beir-import.json) and less
  scores <= 0, which no measure counts.

Documents a judgment excludes (BEIR's identical-id rule) left the run before it was written, so the
exported run does not hold them either.
"""

from __future__ import annotations

from pathlib import Path

from groundkit.artifacts.atomic import atomic_write_lines
from groundkit.artifacts.lines import read_json, read_models
from groundkit.artifacts.outputs import output_folder
from groundkit.corpus.beir import JUDGMENTS as IMPORT_JUDGMENTS
from groundkit.corpus.beir import MANIFEST as IMPORT_MANIFEST
from groundkit.corpus.beir import document_id
from groundkit.corpus.documents import corpus_hash
from groundkit.corpus.judgments import load_judgments
from groundkit.corpus.passage import Chunk, Excerpt
from groundkit.errors import DatasetError, RunFileError
from groundkit.pipeline.stages import PASSAGES, PASSAGES_FILE
from groundkit.retrieval.trec import read_run

RUN = "run.trec"
QRELS = "qrels.trec"
TAG = "groundkit-maxp"


def export_beir(run_dir: str | Path, import_dir: str | Path, out: str | Path, *, force: bool = False) -> dict[str, int]:
    """Write document-level ``run.trec`` and ``qrels.trec`` with BEIR ids into ``out``.

    ``run_dir`` is the output of ``groundkit run`` (or ``score-run``) on ``import_dir``'s corpus and
    judgments; the corpus hash in its run.json must match the import's corpus.

    Returns:
        Counts: queries, documents ranked, qrels; and the ties trec tools break otherwise than groundkit did:
        ``tied_queries`` (queries whose exported run gives two documents one score), ``tied_documents`` (the
        documents in such ties), ``tied_in_top_10`` (queries with a tie in their top 10) and
        ``first_tied_rank`` (the best rank a tie reaches; 0 without ties).

    Raises:
        DatasetError: ``import_dir`` is not an import, or the run was made on another corpus.
        RunFileError: ``run_dir`` lacks a file of a groundkit run.
    """
    run_dir, import_dir = Path(run_dir), Path(import_dir)
    if not (import_dir / IMPORT_MANIFEST).is_file():
        raise DatasetError(import_dir, f"holds no {IMPORT_MANIFEST}, so it is not a `groundkit import-beir` output",
                           fix="pass the folder import-beir wrote (corpus/, judgments.jsonl, beir-import.json)")
    for name in ("run.json", RUN, "chunks.jsonl"):
        if not (run_dir / name).is_file():
            raise RunFileError(run_dir / name, "is missing: RUN must be the folder of a `groundkit run` or "
                               "`groundkit score-run`", fix="pass the --out folder of groundkit run")
    recorded = read_json(run_dir / "run.json", producer="score").get("corpus_hash")
    actual = corpus_hash(import_dir / "corpus")
    if recorded != actual:
        raise DatasetError(import_dir / "corpus", f"is not the corpus the run measured (its corpus_hash is "
                           f"{actual[:12]}, the run's {str(recorded)[:12]})",
                           fix="export with the import whose corpus/ the run was made on")
    judgments = load_judgments(import_dir / IMPORT_JUDGMENTS)
    document = {c.chunk_id: c.document for c in read_models(run_dir / "chunks.jsonl", Chunk, producer="chunk")}
    passages = run_dir / PASSAGES.name / PASSAGES_FILE
    if passages.is_file():
        document.update((p.passage_id, p.document) for p in read_models(passages, Excerpt, producer="retrieve"))
    rankings = read_run(run_dir / RUN, [j.query_id for j in judgments], set(document),
                        listed_in="chunks.jsonl or passages.jsonl")
    ids = {name: _docno(import_dir, name) for name in set(document.values())}

    run_lines, ranked = [], 0
    ties = {"tied_queries": 0, "tied_documents": 0, "tied_in_top_10": 0, "first_tied_rank": 0}
    for query_id, ranking in rankings.items():
        seen: set[str] = set()
        scores: list[float | None] = []
        for passage_id, score in ranking:
            name = document[passage_id]
            if name not in seen:
                seen.add(name)
                scores.append(score)
                run_lines.append(f"{query_id} Q0 {ids[name]} {len(seen)} {score!r} {TAG}")
        ranked += len(seen)
        _count_ties(scores, ties)
    qrels_lines = [f"{j.query_id} 0 {_docno(import_dir, g.document)} {g.grade}"
                   for j in judgments for g in sorted(j.gold, key=lambda g: document_id(g.document))]
    with output_folder(out, command="export-beir", artifacts=(RUN, QRELS),
                       inputs={"the run folder": run_dir, "the import folder": import_dir}, force=force) as tmp:
        atomic_write_lines(tmp / RUN, run_lines)
        atomic_write_lines(tmp / QRELS, qrels_lines)
    return {"queries": len(rankings), "documents_ranked": ranked, "qrels": len(qrels_lines), **ties}


def _count_ties(scores: list[float | None], ties: dict[str, int]) -> None:
    """Add the ties of one query's exported scores (best first) to ``ties``: trec_eval and ir_measures order equal
    scores by document id, not as groundkit ranked them. A run of ranks only (scores None) has none."""
    def tied_at(rank: int) -> bool:
        score = scores[rank - 1]
        return score is not None and ((rank > 1 and scores[rank - 2] == score) or
                                      (rank < len(scores) and scores[rank] == score))

    tied = [rank for rank in range(1, len(scores) + 1) if tied_at(rank)]
    if not tied:
        return
    ties["tied_queries"] += 1
    ties["tied_documents"] += len(tied)
    ties["tied_in_top_10"] += tied[0] <= 10
    ties["first_tied_rank"] = min(ties["first_tied_rank"] or tied[0], tied[0])


def _docno(import_dir: Path, name: str) -> str:
    """The BEIR id of document ``name``, which a TREC file can hold only without whitespace."""
    try:
        doc_id = document_id(name)
    except ValueError:
        raise DatasetError(import_dir / "corpus" / name, "is not a file name import-beir writes",
                           fix="export a run made on the import's own corpus/") from None
    if not doc_id or any(char.isspace() for char in doc_id):
        raise DatasetError(import_dir / "corpus" / name, f"has the id {doc_id!r}, which a TREC file cannot hold "
                           "(it splits columns on whitespace)",
                           fix="compare at passage level with the run folder's own run.trec and qrels.trec")
    return doc_id
