"""Step validate-judgments: check the judgments, audit them against the corpus, record the input hashes."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from groundkit.artifacts.atomic import atomic_write_text
from groundkit.artifacts.lines import dumps_json
from groundkit.corpus.audit import audit, check_audit, render
from groundkit.corpus.judgments import Category, Origin
from groundkit.errors import JudgmentsError

if TYPE_CHECKING:
    from groundkit.config import AuditParams, CorpusParams, Params, TokenizeParams
    from groundkit.corpus.audit import AuditReport
    from groundkit.pipeline.store import Store



def run(
    judgments: Path,
    corpus_root: Path,
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
    """

    loaded, judgments_hash = store.judgments(judgments)  # the hash of the very bytes checked
    machine = next((j for j in loaded if j.origin is Origin.MACHINE), None)
    if machine is not None:  # a machine label never silently becomes a person's
        raise JudgmentsError(judgments, f"holds {machine.query_id!r}, a machine judgment (\"origin\": \"machine\"); "
                             "corpus.judgments holds a person's judgments only", line=machine.line or None,
                             fix="name the machine judgments file in corpus.machine_judgments instead; its scores "
                                 "are kept apart from the person's")
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
    atomic_write_text(out_validation, dumps_json(validation))
    return report


def summary(report: AuditReport, params: Params) -> str:
    """The audit table and findings: what a person reads before trusting the judgments."""
    return render(report, params.audit)
