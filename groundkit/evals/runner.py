"""Run the whole evaluation in-process, against a throwaway index.

The runner calls the same step functions as the DVC stages, in the same
order, inside a temporary directory, and copies the finished artifacts into
``--out`` only when every step has succeeded: a failed run leaves nothing
behind. It never touches the repository tree.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from groundkit.evals import pipeline
from groundkit.params import Params

ARTIFACTS = (
    "validation.json",
    "audit.json",
    "documents.jsonl",
    "documents.jsonl.sha256",
    "gold_spans.jsonl",
    "gold_spans.jsonl.sha256",
    "chunks.jsonl",
    "chunks.jsonl.sha256",
    "index",
    "embeddings",
    "run.trec",
    "run.trec.sha256",
    "passages.jsonl",
    "qrels.trec",
    "metrics.json",
    "per_query.csv",
    "run.json",
    "plots",
)


def run(corpus: str | Path, judgments: str | Path, params: Params, out: str | Path) -> dict[str, object]:
    """Evaluate ``judgments`` on ``corpus`` with ``params``; write artifacts into ``out``.

    Returns:
        The metrics.json document.
    """
    corpus, judgments, out = Path(corpus), Path(judgments), Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".groundkit-run-", dir=out.parent) as scratch:
        work = Path(scratch)
        pipeline.validate_judgments(judgments, corpus, params.audit, work / "validation.json", work / "audit.json",
                                    tokenizer=params.tokenize)
        pipeline.resolve_spans(corpus, judgments, work / "documents.jsonl", work / "gold_spans.jsonl")
        pipeline.chunk(work / "documents.jsonl", params.chunk, work / "chunks.jsonl")
        pipeline.index(work / "chunks.jsonl", params.bm25, work / "index", tokenizer=params.tokenize)
        pipeline.embed(work / "chunks.jsonl", params, work / "embeddings", progress=True)
        pipeline.retrieve(work / "chunks.jsonl", work / "documents.jsonl", work / "index", work / "embeddings",
                          work / "gold_spans.jsonl", params, out_run=work / "run.trec",
                          out_passages=work / "passages.jsonl")
        summary = pipeline.score(
            work / "gold_spans.jsonl",
            work / "chunks.jsonl",
            work / "run.trec",
            work / "passages.jsonl",
            work / "validation.json",
            params,
            out_qrels=work / "qrels.trec",
            out_metrics=work / "metrics.json",
            out_per_query=work / "per_query.csv",
            out_run_metadata=work / "run.json",
            out_plots=work / "plots",
        )
        out.mkdir(parents=True, exist_ok=True)
        for name in ARTIFACTS:
            target = out / name
            if target.is_dir():
                shutil.rmtree(target)
            os.replace(work / name, target)
    return summary
