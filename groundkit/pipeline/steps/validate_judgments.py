"""Step validate-judgments: check the judgments, audit them against the corpus, record the input hashes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from groundkit.artifacts.atomic import atomic_write_text
from groundkit.artifacts.lines import dumps_json
from groundkit.corpus.audit import audit, check_audit, render
from groundkit.corpus.judgments import Category, Judgment, Origin
from groundkit.errors import JudgmentsError

if TYPE_CHECKING:
    from groundkit.config import AuditParams, CorpusParams, Params, TokenizeParams
    from groundkit.corpus.audit import AuditReport
    from groundkit.pipeline.store import Store



def run(
    judgments: Path,
    corpus_root: Path,
    machine_judgments: Path | None,
    params: AuditParams,
    out_validation: Path,
    out_audit: Path,
    *,
    store: Store,
    tokenizer: TokenizeParams | None = None,
    selection: CorpusParams | None = None,
) -> AuditReport:
    """Check the judgments file, audit it against the corpus (with the index's tokenizer), record the hashes.

    ``selection`` holds the corpus.include and corpus.exclude patterns that say which files are documents.
    ``machine_judgments`` (``corpus.machine_judgments``, or None) must hold machine judgments only, each
    asking the same question as a person's judgment of the same query id; its hash is recorded beside the
    others. The audit covers the person's judgments: a judge's quotes are checked when they resolve.
    """

    loaded, judgments_hash = store.judgments(judgments)  # the hash of the very bytes checked
    machine = next((j for j in loaded if j.origin is Origin.MACHINE), None)
    if machine is not None:  # a machine label never silently becomes a person's
        raise JudgmentsError(judgments, f"holds {machine.query_id!r}, a machine judgment (\"origin\": \"machine\"); "
                             "corpus.judgments holds a person's judgments only", line=machine.line or None,
                             fix="name the machine judgments file in corpus.machine_judgments instead; its scores "
                                 "are kept apart from the person's")
    machine_hash = None if machine_judgments is None else check_machine(machine_judgments, loaded, store)
    documents, corpus_hash = store.corpus(corpus_root, selection)  # and of those audited
    report = audit(documents, loaded, tokenizer, tokenize=store.tokenizer(tokenizer))
    # The report is the evidence for whatever the check decides, so it is written first.
    atomic_write_text(out_audit, dumps_json(report.model_dump(mode="json")))
    check_audit(report, params, str(judgments))
    counts = {c.value: sum(1 for j in loaded if j.category is c) for c in Category}
    validation = {
        "judgments": len(loaded),
        "by_category": counts,
        "judgments_hash": judgments_hash,
        "corpus_hash": corpus_hash,
    }
    if machine_hash is not None:  # absent otherwise: the file of a pipeline without machine labels is unchanged
        validation["machine_judgments_hash"] = machine_hash
    atomic_write_text(out_validation, dumps_json(validation))
    return report


def check_machine(path: Path, human: Sequence[Judgment], store: Store) -> str:
    """Check the machine judgments file against the person's; return its SHA-256.

    A judgment written by a person there is refused (it would be scored as the judge's), and so is a query id
    whose question differs from the person's judgment of that id (the two label sets would score two
    questions as one).
    """
    loaded, digest = store.judgments(path)
    person = next((j for j in loaded if j.origin is not Origin.MACHINE), None)
    if person is not None:
        raise JudgmentsError(path, f"holds {person.query_id!r}, a person's judgment (no \"origin\": \"machine\"); "
                             "corpus.machine_judgments holds a judge's judgments only", line=person.line or None,
                             fix="move a person's judgments to corpus.judgments; this file is what groundkit "
                                 "judgments judge or propose wrote")
    asked = {j.query_id: j.query for j in human}
    for judgment in loaded:
        if judgment.query_id in asked and asked[judgment.query_id] != judgment.query:
            raise JudgmentsError(path, f"asks {judgment.query!r} under the query id {judgment.query_id!r}, which "
                                 f"corpus.judgments asks as {asked[judgment.query_id]!r}", line=judgment.line or None,
                                 fix="a query id names one question in both files: keep the text the person "
                                     "judged, or give the other question its own id")
    return digest


def summary(report: AuditReport, params: Params) -> str:
    """The audit table and findings: what a person reads before trusting the judgments."""
    return render(report, params.audit)
