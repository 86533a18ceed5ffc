"""The ``groundkit`` command line.

Errors groundkit can explain are printed as one message and exit 1; usage
errors exit 2. A traceback is shown only with ``--debug``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from groundkit._guard import guarded


def _cmd_run(args: argparse.Namespace) -> int:
    from groundkit.evals.runner import run
    from groundkit.params import load_params

    overrides = list(args.set)
    if getattr(args, "run_file", None) is not None:
        # score-run is `run` with the retrieve stage reading the given file: one code path for both.
        overrides += ["retrieve.retriever=external", f"retrieve.run={args.run_file}"]
    params = load_params(args.params, overrides)
    summary = run(args.corpus, args.judgments, params, args.out)
    answerable: dict[str, Any] = summary["answerable"]  # type: ignore[assignment]
    no_answer: dict[str, Any] = summary["no_answer"]  # type: ignore[assignment]
    shown = ", ".join(f"{k}={v:.4f}" for k, v in answerable.items() if isinstance(v, float))
    print(f"answerable ({answerable['queries']}): {shown}")
    print(f"no_answer ({no_answer['queries']}): abstained {no_answer['abstained']}")
    print(f"artifacts written to {args.out}")
    return 0


def _cmd_audit(args: argparse.Namespace) -> int:
    from pathlib import Path

    from groundkit.artifacts import atomic_write_text, dumps_json
    from groundkit.documents import load_corpus
    from groundkit.evals.audit import audit, check_audit, render_table
    from groundkit.evals.corpus import load_judgments
    from groundkit.evals.spans import resolve_judgments
    from groundkit.params import load_params

    params = load_params(args.params, args.set)
    judgments = load_judgments(args.judgments)
    documents = load_corpus(args.corpus)
    # A label that no longer resolves is the first thing an audit must catch.
    resolve_judgments(judgments, {d.path: d for d in documents}, judgments_path=args.judgments,
                      corpus_root=args.corpus)
    report = audit(documents, judgments)
    print(render_table(report))
    check_audit(report, params.audit, str(args.judgments))
    if args.out:
        atomic_write_text(Path(args.out), dumps_json(report.model_dump(mode="json")))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="groundkit", description="Reproducible retrieval evaluation anchored on verbatim gold quotes."
    )
    parser.add_argument("--debug", action="store_true", help="show a traceback on error")
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="run the whole evaluation in-process into --out")
    run.add_argument("--corpus", required=True, help="directory of documents")
    run.add_argument("--judgments", required=True, help="judgments JSONL file")
    run.add_argument("--params", default=None, help="params.yaml (defaults when omitted)")
    run.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                     help="override a parameter, e.g. --set chunk.size=400 (repeatable)")
    run.add_argument("--out", required=True, help="output directory for the artifacts")
    run.set_defaults(handler=_cmd_run)

    score_run = commands.add_parser(
        "score-run", help="score a run produced by another system (JSONL of ranked passages) into --out",
        description="Score an external run: one JSON object per line with query_id, rank, document and either "
                    "start/end character offsets or the passage text (see examples/README.md).",
    )
    score_run.add_argument("run_file", metavar="RUN.jsonl", help="the external run")
    score_run.add_argument("--corpus", required=True, help="directory of documents")
    score_run.add_argument("--judgments", required=True, help="judgments JSONL file")
    score_run.add_argument("--params", default=None, help="params.yaml (for score.ks and retrieve.depth)")
    score_run.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                           help="override a parameter, e.g. --set score.ks=[1,5] (repeatable)")
    score_run.add_argument("--out", required=True, help="output directory for the artifacts")
    score_run.set_defaults(handler=_cmd_run)

    audit = commands.add_parser("audit", help="measure whether the corpus can tell retrievers apart")
    audit.add_argument("--corpus", required=True, help="directory of documents")
    audit.add_argument("--judgments", required=True, help="judgments JSONL file")
    audit.add_argument("--params", default=None, help="params.yaml (for audit.max_trivial_share)")
    audit.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a parameter")
    audit.add_argument("--out", default=None, help="write the full JSON report here")
    audit.set_defaults(handler=_cmd_audit)
    return parser


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.handler(args))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``groundkit`` console script."""
    return guarded(_main, argv)


if __name__ == "__main__":
    sys.exit(main())
