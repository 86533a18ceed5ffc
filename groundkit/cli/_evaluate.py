"""The evaluation commands: ``run``, ``score-run``, ``score-trec`` and ``audit``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from groundkit.cli._common import FORCE_HELP, add_inputs, names


def _cmd_run(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from groundkit.config import load_params
    from groundkit.execution import described
    from groundkit.inputs.text import terminal_lines
    from groundkit.pipeline.runner import run
    from groundkit.pipeline.stages import METRICS
    from groundkit.scoring.cautions import PREFIX
    from groundkit.scoring.readout import headline_names, readout

    overrides = list(args.set)
    if getattr(args, "queries", None) is not None:
        return _rank_queries(args, load_params(args.params, overrides))
    if getattr(args, "run_file", None) is not None:
        # score-run is `run` with the retrieve stage reading the given file: one code path for both.
        # retrieve.run is one of params.PATH_KEYS, so the path is taken verbatim, never parsed as YAML.
        overrides += ["retrieve.retriever=external", f"retrieve.run={args.run_file}"]
    params = load_params(args.params, overrides)
    warnings: list[str] = []
    summary = run(args.corpus, args.judgments, params, args.out, force=args.force, command=args.command,
                  inputs={"the params file": args.params}, warn=warnings.append)
    # The headline is what metrics.json holds, in its order (that of `dvc metrics show`).
    headline = headline_names(json.loads((Path(args.out) / METRICS.name).read_text(encoding="utf-8")))
    # Every line within TERMINAL_WIDTH columns: a long warning or finding wraps, indented, instead of running on.
    for line in [f"retriever {params.retrieve.retriever}, on the {described(params.execution)}",
                 *readout(summary, headline), f"artifacts written to {args.out}"]:
        print("\n".join(terminal_lines(line)))
    for warning in warnings:
        print("\n".join(terminal_lines(PREFIX + warning)), file=sys.stderr)
    _print_findings(args.out, params)
    return 0

def _rank_queries(args: argparse.Namespace, params: Any) -> int:
    """``run --queries``: rank passages for queries nobody labelled; the results folder without scores."""
    from groundkit.execution import described
    from groundkit.pipeline.runner import rank_queries
    from groundkit.scoring.measures import metrics_of

    metrics_of(params)  # a misspelt measure is refused by every command that reads params.yaml
    count = rank_queries(args.corpus, args.queries, params, args.out, force=args.force,
                         inputs={"the params file": args.params})
    print(f"retriever {params.retrieve.retriever}, on the {described(params.execution)}")
    print(f"{count} quer{'y' if count == 1 else 'ies'} ranked, not scored (no judgments): the results folder is "
          f"{args.out}; judge its passages with `groundkit judgments judge --run {args.out} ...`")
    return 0

def _cmd_score_trec(args: argparse.Namespace) -> int:
    from groundkit.config import load_params
    from groundkit.errors import InputError, MeasureError
    from groundkit.scoring.measures import metrics_of
    from groundkit.scoring.trec.measures import default_measures, parse_measures
    from groundkit.scoring.trec.result import counts, score_trec, tie_warning

    params = load_params(args.params, args.set)  # read even when --measures is given: a bad file is still refused
    metrics_of(params)
    measures = names(args.measures) or default_measures(params.score.measures)
    # Named measures headline their deepest cut-offs; the defaults headline score.headline, and set recall.
    wanted = [] if args.measures else [*params.score.headline, *(m for m in measures if m.startswith("set_recall@"))]
    try:
        parse_measures(measures)
    except MeasureError as exc:
        raise InputError("--measures", str(exc), fix="name measures such as ndcg@10,recall@10,mrr,set_recall@100"
                         ) from None
    scored = score_trec(args.run_file, args.qrels, args.out, measures=measures, headline_names=wanted,
                        force=args.force, empty_qrels_as_no_answer=args.empty_qrels_as_no_answer)
    answerable, no_answer = scored.detail["answerable"], scored.detail["no_answer"]
    shown = ", ".join(f"{name}={answerable[name]:.4f}" for name in scored.measures if name in answerable)
    print(f"answerable ({answerable['queries']}): {shown}")
    print(f"no_answer ({no_answer['queries']}): abstained {no_answer['abstained']}")
    for line in counts(scored.scores):
        print(line)
    print(f"artifacts written to {args.out}")
    warning = tie_warning(scored.scores)
    if warning:
        print(f"warning: {warning}", file=sys.stderr)
    return 0

def _print_findings(out: str, params: Any) -> None:
    """The audit's findings of a finished run, on stderr: they inform, the metrics on stdout are the result."""
    from pathlib import Path

    from groundkit.corpus.audit import AuditReport, findings
    from groundkit.inputs.text import terminal_lines
    from groundkit.pipeline.stages import AUDIT

    report = AuditReport.model_validate_json((Path(out) / AUDIT.name).read_bytes())
    for line in findings(report, params.audit):
        print("\n".join(terminal_lines(f"audit: {line}")), file=sys.stderr)

def _cmd_audit(args: argparse.Namespace) -> int:
    from pathlib import Path

    from groundkit.artifacts.atomic import atomic_write_text
    from groundkit.artifacts.lines import dumps_json
    from groundkit.config import load_params
    from groundkit.corpus.audit import audit, check_audit, render
    from groundkit.corpus.documents import load_corpus
    from groundkit.corpus.judgments import load_judgments
    from groundkit.corpus.spans import resolve_judgments
    from groundkit.scoring.measures import metrics_of

    params = load_params(args.params, args.set)
    metrics_of(params)  # a misspelt measure is refused by every command that reads params.yaml
    if args.out:
        _check_report(args)
    judgments = load_judgments(args.judgments)
    documents = load_corpus(args.corpus, include=params.corpus.include, exclude=params.corpus.exclude)
    # A label that no longer resolves is the first thing an audit must catch.
    resolve_judgments(judgments, {d.path: d for d in documents}, judgments_path=args.judgments,
                      corpus_root=args.corpus)
    report = audit(documents, judgments, params.tokenize)
    # Written whatever the check decides: a failed gate is when the report is needed most.
    if args.out:
        atomic_write_text(Path(args.out), dumps_json(report.model_dump(mode="json")))
    print(render(report, params.audit))
    check_audit(report, params.audit, str(args.judgments))
    return 0

def _check_report(args: argparse.Namespace) -> None:
    """Refuse an audit --out that is an input or a file the audit did not write, before the audit runs."""
    from pathlib import Path

    from groundkit.artifacts.outputs import check_file
    from groundkit.corpus.audit import AuditReport

    def is_report(path: Path) -> bool:
        try:
            AuditReport.model_validate_json(path.read_bytes())
        except (OSError, ValueError):
            return False
        return True

    check_file(Path(args.out), command="audit", what="an audit report", force=args.force, recognise=is_report,
               inputs={"the corpus folder": args.corpus, "the judgments file": args.judgments,
                       "the params file": args.params})

def add(commands: Any) -> None:
    """Add this module's subcommands."""
    run = commands.add_parser("run", help="evaluate a retriever on a corpus and judgments: every step of the pipeline "
                              "in this process, without DVC, its artifacts written into --out")
    add_inputs(run, params_help="params.yaml (defaults when omitted)", set_example="chunk.size=400", queries=True)
    run.add_argument("--out", required=True, help="output directory for the artifacts")
    run.add_argument("--force", action="store_true", help=FORCE_HELP)
    run.set_defaults(handler=_cmd_run)

    score_run = commands.add_parser(
        "score-run", help="score a run produced by another system (JSONL of ranked passages) into --out",
        description="Score an external run: one JSON object per line with query_id, rank, document and either "
                    "start/end character offsets or the passage text (see the guide's docs/external-runs.md).",
    )
    score_run.add_argument("run_file", metavar="RUN.jsonl", help="the external run")
    add_inputs(score_run, params_help="params.yaml (for score.measures and retrieve.depth)",
               set_example="score.min_overlap=0.5")
    score_run.add_argument("--out", required=True, help="output directory for the artifacts")
    score_run.add_argument("--force", action="store_true", help=FORCE_HELP)
    score_run.set_defaults(handler=_cmd_run)

    trec = commands.add_parser(
        "score-trec", help="score a TREC run against TREC or BEIR qrels, at document level, into --out",
        description="Score a document-level run as trec_eval reads it (query_id Q0 document_id rank score tag) "
                    "against TREC qrels (query_id 0 document_id grade) or BEIR qrels (query-id, corpus-id, score, "
                    "tab-separated): the same result folder as `groundkit run`, for compare and report.",
    )
    trec.add_argument("run_file", metavar="RUN", help="the TREC run")
    trec.add_argument("--qrels", required=True, help="TREC qrels, or a BEIR qrels .tsv (with or without its header)")
    trec.add_argument("--out", required=True, help="output directory for the results")
    trec.add_argument("--measures", action="append", default=[], metavar="NAME[,NAME]",
                      help="measures to report: recall@k (hit rate), mrr, ndcg@k, set_recall@k (default: those of "
                           "score.measures, and set_recall@100)")
    trec.add_argument("--params", default=None,
                      help="params.yaml (for score.measures and score.headline, when --measures is not given)")
    trec.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                      help="override a parameter, e.g. --set score.headline=[ndcg@10] (repeatable)")
    trec.add_argument("--empty-qrels-as-no-answer", action="store_true",
                      help="make a query whose qrels grade no document above 0 no_answer, left out of the means "
                           "(default: it scores 0 and counts, as trec_eval -c)")
    trec.add_argument("--force", action="store_true", help=FORCE_HELP)
    trec.set_defaults(handler=_cmd_score_trec)

    audit = commands.add_parser("audit", help="measure whether the corpus can tell retrievers apart")
    add_inputs(audit, params_help="params.yaml (for tokenize and the gate audit.max_trivial_share)",
                set_example="audit.max_trivial_share=0.2")
    audit.add_argument("--out", default=None,
                       help="write the full JSON report here (also when the check fails; not when an input is broken)")
    audit.add_argument("--force", action="store_true", help="replace the report of an earlier audit at --out")
    audit.set_defaults(handler=_cmd_audit)
