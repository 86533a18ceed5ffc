"""Step retrieve: rank passages for every query with the configured retriever (or read its run)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from groundkit.artifacts.atomic import atomic_directory
from groundkit.artifacts.seals import file_sha256
from groundkit.corpus.passage import Chunk, Document, Excerpt
from groundkit.corpus.spans import ResolvedJudgment
from groundkit.errors import RunFileError
from groundkit.execution import lazy_engine
from groundkit.pipeline.provenance import Provenance
from groundkit.pipeline.stages import (
    CHUNKS,
    DOCUMENTS,
    GOLD_SPANS,
    MACHINE_SPANS,
    MACHINE_SPANS_FILE,
    PASSAGES,
    PASSAGES_FILE,
    RUN_PARAMS_FILE,
    written_by,
)
from groundkit.retrieval.kinds import Need
from groundkit.retrieval.ports import Run, Sources
from groundkit.retrieval.rankers import build

if TYPE_CHECKING:
    from groundkit.config import Params
    from groundkit.pipeline.store import Store


def run(
    chunks: Path,
    documents: Path,
    index_dir: Path,
    embeddings_dir: Path,
    spans: Path,
    machine_spans: Path,
    params: Params,
    *,
    out_run: Path,
    out_passages: Path,
    store: Store,
) -> Run:
    """Rank passages for every judgment's query with the retriever ``retrieve.retriever`` names.

    Writes a TREC run and a folder holding ``passages.jsonl``: the passages ranked that
    are not chunks (an external run's), empty when the chunks are what was ranked, and
    ``params.json``: the params the run was ranked with (see :func:`ranked_with`). A
    judgment's ``exclude_documents`` leave its ranking here, before the run is written. The queries are the
    person's, then those only a judge labelled (``corpus.machine_judgments``), so both label sets score one run.
    """

    judgments = queries_of(store, spans, machine_spans)
    sources = Sources(
        chunks=lambda: store.read_models(chunks, Chunk, producer=written_by(CHUNKS)),
        documents=lambda: store.read_models(documents, Document, producer=written_by(DOCUMENTS)),
        index_dir=index_dir,
        embeddings_dir=embeddings_dir,
        digest=store.sha256,
    )
    kind = params.retrieve.kind
    external = Path(params.retrieve.run) if Need.RUN_FILE in kind.needs else None
    # Hashed before and after it is read: run.json reports the SHA-256 of the very bytes ranked.
    before = _run_file_sha256(external) if external is not None and external.is_file() else None
    # The engine connects (a Ray cluster) only if the kind hands it work.
    with lazy_engine(params.execution) as engine:
        ranked = build(kind, sources, params, engine).rank([(j.query_id, j.query) for j in judgments],
                                                          params.retrieve.depth)
    if external is not None and (before is None or _run_file_sha256(external) != before):
        raise RunFileError(external, "changed while the retrieve stage read it", fix="run the stage again (dvc "
                           "repro -f -s retrieve && dvc repro; with groundkit run: run it again)")
    excluded = {j.query_id: frozenset(j.exclude_documents) for j in judgments if j.exclude_documents}
    if excluded:
        # Applied to the run itself, so the exported run.trec scores the same in ir_measures as here.
        ranked = ranked.excluding(excluded, sources.chunks() if kind.ranks_chunks else ranked.passages)
    with atomic_directory(out_passages) as folder:
        store.write_models(folder / PASSAGES_FILE, ranked.passages, Excerpt)
        store.write_provenance(folder / RUN_PARAMS_FILE, ranked_with(params, before))
    store.write_run(out_run, ranked.rankings, kind.run_tag)
    return ranked


def queries_of(store: Store, spans: Path, machine_spans: Path) -> list[ResolvedJudgment]:
    """The judgments whose queries a run ranks: the person's, then each query id only the judge labelled."""
    judgments = store.read_models(spans, ResolvedJudgment, producer=written_by(GOLD_SPANS))
    person = {j.query_id for j in judgments}
    machine = store.read_models(machine_spans / MACHINE_SPANS_FILE, ResolvedJudgment,
                                producer=written_by(MACHINE_SPANS))
    return [*judgments, *(j for j in machine if j.query_id not in person)]


def ranked_with(params: Params, run_sha256: str | None) -> Provenance:
    """What the run was ranked with, as run.json reports it: every params section the retriever's numbers depend
    on but the chunk params (the chunk stage records those) and score's own, and the external run file's SHA-256
    under its name. BM25's and the tokenizer's are the index's (bm25.load_for checked them), dense's the
    embeddings'.
    """
    sections = {name: section for name, section in params.result_params().items() if name not in ("chunk", "score")}
    inputs = {Path(params.retrieve.run).name: run_sha256} if run_sha256 is not None else {}
    return Provenance(stage=written_by(PASSAGES), inputs=inputs, params=sections)


def _run_file_sha256(path: Path) -> str:
    try:
        return file_sha256(path)
    except OSError as exc:
        raise RunFileError(path, f"cannot be read ({exc.strerror})",
                           fix="check retrieve.run in params.yaml and the file's permissions") from None


def summary(ranked: Run, params: Params) -> str:
    """What the stage did, in a line."""
    empty = sum(1 for r in ranked.rankings.values() if not r)
    return f"retrieve ({params.retrieve.retriever}): {len(ranked.rankings)} queries, {empty} with no result"
