"""Step resolve-spans: snapshot the corpus and resolve every gold quote to a character span."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from groundkit.artifacts.atomic import atomic_directory
from groundkit.artifacts.lines import read_json
from groundkit.corpus.passage import Document
from groundkit.corpus.spans import JudgedPassage, ResolvedJudgment, read_pool, resolve_judgments
from groundkit.errors import ArtifactError, CorpusError, InputError, JudgmentsError
from groundkit.pipeline.provenance import Provenance
from groundkit.pipeline.stages import MACHINE_POOL_FILE, MACHINE_SPANS_FILE, SPAN_SOURCES, VALIDATION, written_by

if TYPE_CHECKING:
    from groundkit.config import CorpusParams, Params
    from groundkit.pipeline.store import Store


def run(corpus_root: Path, judgments: Path, machine_judgments: Path | None, machine_pool: Path | None,
        validation: Path, out_documents: Path, out_spans: Path, out_machine_spans: Path, out_sources: Path, *,
        store: Store, selection: CorpusParams | None = None) -> list[ResolvedJudgment]:
    """Load the corpus and resolve every gold quote; write the corpus snapshot, the spans and what they came from.

    The corpus and the judgments are read here again, after validate-judgments read them: an edit in between
    (an editor's save, a ``judgments add`` while ``dvc repro`` runs) would make spans, and every metric, of
    files no stage checked, under the hashes of the files it did. So what is read here must hash to what
    validation.json recorded, and the hashes go into span_sources.json, which run.json reports.

    The machine judgments (``corpus.machine_judgments``), when named, are resolved the same way into the
    machine spans folder, kept apart from the person's: no machine label becomes a person's. Without them
    the folder holds an empty spans file. The judge's pool (``machine_pool``, where ``groundkit judgments
    judge`` wrote one) is checked and copied beside them, for judged@k and agreement.
    """

    documents, corpus_hash = store.corpus(corpus_root, selection)  # the documents corpus.include/exclude select
    loaded, judgments_hash = store.judgments(judgments)
    checked = read_json(validation, producer=written_by(VALIDATION))
    try:
        recorded = {"corpus_hash": str(checked["corpus_hash"]), "judgments_hash": str(checked["judgments_hash"])}
        if machine_judgments is not None:
            recorded["machine_judgments_hash"] = str(checked["machine_judgments_hash"])
    except (KeyError, TypeError):
        raise ArtifactError(validation, "lacks the input hashes",
                            fix=f"re-run the {written_by(VALIDATION)} stage") from None
    for error, path, key, read in ((JudgmentsError, judgments, "judgments_hash", judgments_hash),
                                   (CorpusError, corpus_root, "corpus_hash", corpus_hash)):
        if read != recorded[key]:
            raise changed_while_running(error, path, recorded[key], read)
    by_path = {d.path: d for d in documents}
    resolved = resolve_judgments(loaded, by_path, judgments_path=judgments, corpus_root=corpus_root)
    inputs = {"corpus": corpus_hash, "judgments": judgments_hash}
    machine: list[ResolvedJudgment] = []
    pool: list[JudgedPassage] | None = None
    if machine_judgments is not None:
        judged, inputs["machine_judgments"] = store.judgments(machine_judgments)
        if inputs["machine_judgments"] != recorded["machine_judgments_hash"]:
            raise changed_while_running(JudgmentsError, machine_judgments, recorded["machine_judgments_hash"],
                                        inputs["machine_judgments"])
        machine = resolve_judgments(judged, by_path, judgments_path=machine_judgments, corpus_root=corpus_root)
        if machine_pool is not None:
            pool = read_pool(machine_pool, by_path, {j.query_id for j in judged})
            inputs["machine_pool"] = store.sha256(machine_pool)
    # Spans first: the documents snapshot is what unblocks chunking, so it is written last.
    store.write_models(out_spans, resolved, ResolvedJudgment)
    with atomic_directory(out_machine_spans) as folder:
        store.write_models(folder / MACHINE_SPANS_FILE, machine, ResolvedJudgment)
        if pool is not None:
            store.write_models(folder / MACHINE_POOL_FILE, pool, JudgedPassage)
    store.write_provenance(out_sources, Provenance(stage=written_by(SPAN_SOURCES), inputs=inputs))
    store.write_models(out_documents, documents, Document)
    return resolved


def changed_while_running(error: type[InputError], path: Path, checked: str, read: str) -> InputError:
    """The refusal of an input that is not the one validate-judgments checked (SHA-256 ``checked``)."""
    stage = written_by(VALIDATION)
    return error(path, f"changed while the pipeline ran: {stage} checked it with SHA-256 {checked[:12]}..., this "
                 f"stage read {read[:12]}...; spans resolved now would be credited to the input it checked",
                 fix=f"check it again and go on: dvc repro -f -s {stage} && dvc repro (with groundkit run: run it "
                     "again)")


def summary(resolved: list[ResolvedJudgment], params: Params) -> str:
    """What the stage did, in a line."""
    return f"resolve-spans: {sum(len(r.spans) for r in resolved)} gold quotes resolved exactly once"
