"""Run the whole evaluation in-process, against a throwaway index.

The runner calls the same step functions as the DVC stages, in the same
order, inside a scratch folder, and moves the finished artifacts into
``--out`` only when every step has succeeded: a failed or terminated run
leaves nothing behind. It never touches the repository tree, and writes into
an existing folder only on the terms of groundkit/_outputs.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from groundkit._outputs import output_folder
from groundkit.config import Params
from groundkit.pipeline.steps import chunk as chunk_step
from groundkit.pipeline.steps import embed as embed_step
from groundkit.pipeline.steps import index as index_step
from groundkit.pipeline.steps import resolve_spans as resolve_spans_step
from groundkit.pipeline.steps import retrieve as retrieve_step
from groundkit.pipeline.steps import score as score_step
from groundkit.pipeline.steps import validate_judgments as validate_judgments_step
from groundkit.retrieval.kinds import kind_of

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
    "passages.jsonl.sha256",
    "qrels.trec",
    "metrics.json",
    "per_query.csv",
    "run.json",
    "plots",
)


def run(
    corpus: str | Path, judgments: str | Path, params: Params, out: str | Path, *, force: bool = False,
    command: str = "run", inputs: Mapping[str, str | Path | None] | None = None,
) -> dict[str, object]:
    """Evaluate ``judgments`` on ``corpus`` with ``params``; write artifacts into ``out``.

    Args:
        force: Replace the artifacts of an earlier run in ``out`` (other files there are kept).
        command: The command writing ``out``, recorded in its ``.groundkit-output`` marker.
        inputs: Further input files ``out`` must stay clear of, by description (the params file).

    Returns:
        The metrics.json document.

    Raises:
        OutputError: if ``out`` is, contains or lies inside an input, or holds files groundkit did not write.
    """
    corpus, judgments = Path(corpus), Path(judgments)
    sources: dict[str, str | Path | None] = {"the corpus folder": corpus, "the judgments file": judgments,
                                             **(inputs or {})}
    if not kind_of(params.retrieve.retriever).searches:
        sources["the run file"] = params.retrieve.run
    with output_folder(out, command=command, artifacts=ARTIFACTS, inputs=sources, force=force) as work:
        validate_judgments_step.run(judgments, corpus, params.audit, work / "validation.json", work / "audit.json",
                                    tokenizer=params.tokenize)
        resolve_spans_step.run(corpus, judgments, work / "documents.jsonl", work / "gold_spans.jsonl")
        chunk_step.run(work / "documents.jsonl", params.chunk, work / "chunks.jsonl")
        index_step.run(work / "chunks.jsonl", params.bm25, work / "index", tokenizer=params.tokenize)
        embed_step.run(work / "chunks.jsonl", params, work / "embeddings", progress=True)
        retrieve_step.run(work / "chunks.jsonl", work / "documents.jsonl", work / "index", work / "embeddings",
                          work / "gold_spans.jsonl", params, out_run=work / "run.trec",
                          out_passages=work / "passages.jsonl")
        summary = score_step.run(
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
    return summary
