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
from groundkit.scoring.measures import BUDGET_RECALL, CHARS, NDCG, RECALL

# --metric defaults, named by the measure registry: the verdict of compare, and the columns of sweep-plot.
COMPARE_GATE = [NDCG.label(10)]
SWEEP_METRICS = [RECALL.label(1), RECALL.label(10), NDCG.label(10), CHARS.label(10), BUDGET_RECALL.label(1000)]


def _cmd_run(args: argparse.Namespace) -> int:
    from groundkit.config import load_params
    from groundkit.pipeline.runner import run

    overrides = list(args.set)
    if getattr(args, "run_file", None) is not None:
        # score-run is `run` with the retrieve stage reading the given file: one code path for both.
        # retrieve.run is one of params.PATH_KEYS, so the path is taken verbatim, never parsed as YAML.
        overrides += ["retrieve.retriever=external", f"retrieve.run={args.run_file}"]
    params = load_params(args.params, overrides)
    summary = run(args.corpus, args.judgments, params, args.out, force=args.force, command=args.command,
                  inputs={"the params file": args.params})
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
    from groundkit.config import load_params
    from groundkit.corpus.audit import audit, check_audit, render_table
    from groundkit.corpus.documents import load_corpus
    from groundkit.corpus.judgments import load_judgments
    from groundkit.corpus.spans import resolve_judgments

    params = load_params(args.params, args.set)
    if args.out:
        _check_report(args)
    judgments = load_judgments(args.judgments)
    documents = load_corpus(args.corpus)
    # A label that no longer resolves is the first thing an audit must catch.
    resolve_judgments(judgments, {d.path: d for d in documents}, judgments_path=args.judgments,
                      corpus_root=args.corpus)
    report = audit(documents, judgments, params.tokenize)
    print(render_table(report))
    check_audit(report, params.audit, str(args.judgments))
    if args.out:
        atomic_write_text(Path(args.out), dumps_json(report.model_dump(mode="json")))
    return 0


def _check_report(args: argparse.Namespace) -> None:
    """Refuse an audit --out that is an input or a file the audit did not write, before the audit runs."""
    from pathlib import Path

    from groundkit._outputs import check_file
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


REGRESSION_EXIT = 4


def _names(values: list[str]) -> list[str]:
    """Names given as repeated options and/or comma-separated lists: ``--metric a,b --metric c``."""
    return [name.strip() for value in values for name in value.split(",") if name.strip()]


def _cmd_compare(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from groundkit.reports.compare import compare, parse_options, read_side, render_markdown, to_json

    alpha, max_drop, top = parse_options(args.alpha, args.max_drop, args.top)
    cwd = Path.cwd()
    baseline = read_side(args.baseline, cwd=cwd, metrics_dir=args.metrics_dir)
    candidate = read_side(args.candidate, cwd=cwd, metrics_dir=args.metrics_dir)
    gate = _names(args.metric) or COMPARE_GATE
    result = compare(baseline, candidate, gate=gate, alpha=alpha, max_drop=max_drop,
                     allow_corpus_change=args.allow_corpus_change)
    if args.json:
        print(json.dumps(to_json(result), indent=2, sort_keys=True))
    else:
        print(render_markdown(result, top=top), end="")
    if args.fail_on_regression and result.untested:
        for metric, why in result.untested.items():
            print(f"note: --fail-on-regression cannot gate on {metric}: no paired test ({why})", file=sys.stderr)
    if args.fail_on_regression and result.regressions:
        print(f"regression: {', '.join(result.regressions)} dropped significantly (p < {alpha}) by more "
              f"than {max_drop}", file=sys.stderr)
        return REGRESSION_EXIT
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from pathlib import Path

    from groundkit._outputs import check_file
    from groundkit.artifacts import atomic_write_text
    from groundkit.errors import CompareError
    from groundkit.reports.compare import check_alpha, parse_options
    from groundkit.reports.html import is_report, report

    alpha = parse_options(args.alpha, "0", "0")[0]
    if not (args.top_k.isascii() and args.top_k.isdigit() and int(args.top_k) > 0):
        raise CompareError("--top-k", f"{args.top_k!r} is not a whole number from 1",
                           fix="give how many passages to show per query, e.g. 10")
    check_file(Path(args.out), command="report", what="a groundkit report", force=args.force, recognise=is_report,
               inputs={})
    page = report(args.run, args.baseline, cwd=Path.cwd(), metrics_dir=args.metrics_dir,
                  gate=_names(args.metric) or COMPARE_GATE, alpha=check_alpha(alpha),
                  allow_corpus_change=args.allow_corpus_change, top_k=int(args.top_k))
    atomic_write_text(Path(args.out), page)
    print(f"report written to {args.out} ({len(page.encode('utf-8')) / 1024:.0f} KiB)")
    return 0


def _cmd_sweep_plot(args: argparse.Namespace) -> int:
    from pathlib import Path

    from groundkit._outputs import check_file
    from groundkit.reports.sweep import plot_column, sweep_table

    def is_sweep_table(path: Path) -> bool:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            return False
        return bool(lines) and lines[0].startswith("experiment,") and len({line.count(",") for line in lines}) == 1

    check_file(Path(args.out), command="sweep-plot", what="a sweep table", inputs={}, force=args.force,
               recognise=is_sweep_table)
    params = _names(args.param) or ["chunk.size", "chunk.overlap"]
    metrics = _names(args.metric) or SWEEP_METRICS
    table, left_out = sweep_table(Path.cwd(), params, Path(args.out), metrics)
    print(table, end="")
    if left_out:
        print(f"left out {len(left_out)} (not comparable with this commit's run, or no result of their own):",
              file=sys.stderr)
        for name, reason in left_out:
            print(f"  {name}: {reason}", file=sys.stderr)
    print(f"\nwritten to {args.out}; draw it with:\n  dvc plots show {args.out} -x {plot_column(params[0])} "
          f"-y {metrics[-1]} --template scatter", file=sys.stderr)
    return 0


def _cmd_import_beir(args: argparse.Namespace) -> int:
    from groundkit.corpus.beir import MANIFEST as MANIFEST_NAME
    from groundkit.corpus.beir import import_beir

    manifest = import_beir(args.dataset, args.out, split=args.split, drop_empty=args.drop_empty, force=args.force,
                           strict=args.strict, keep_identical_ids=args.keep_identical_ids)
    print(
        f"{manifest['documents']} documents, {manifest['judgments']} judgments "
        f"({manifest['relevant_pairs']} relevant documents) written to {args.out}"
    )
    notes = []
    if manifest["max_score"] > 1:
        notes.append(f"qrels are graded (up to {manifest['max_score']}); the grades are kept as nDCG's gains")
    skipped = {reason: n for reason, n in manifest["qrels_skipped"].items() if n}
    if skipped:
        counts = ", ".join(f"{n} {reason.replace('_', ' ')}" for reason, n in skipped.items())
        left = len(manifest["queries_left_without_relevant"])
        notes.append(f"{sum(skipped.values())} qrels skipped ({counts}), {left} queries left without a relevant "
                     f"document; listed in {MANIFEST_NAME} (--strict refuses them)")
    if manifest["identical_ids"]:
        how = "excluded from their own runs, as BEIR does" if manifest["identical_ids_excluded"] else "kept"
        notes.append(f"{len(manifest['identical_ids'])} queries share their id with a document: {how}")
    if manifest["documents_renamed"]:
        notes.append(f"{len(manifest['documents_renamed'])} document ids are not plain file names: their files are "
                     f"percent-encoded (listed in {MANIFEST_NAME})")
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    return 0


def _cmd_export_beir(args: argparse.Namespace) -> int:
    from groundkit.reports.beir_export import export_beir

    counts = export_beir(args.run, args.import_dir, args.out, force=args.force)
    print(f"{counts['queries']} queries, {counts['documents_ranked']} ranked documents and {counts['qrels']} qrels "
          f"with BEIR ids written to {args.out} (run.trec, qrels.trec)")
    return 0


def _add_inputs(parser: argparse.ArgumentParser, *, params_help: str, set_example: str) -> None:
    """The options every command that reads a corpus shares: --corpus, --judgments, --params, --set."""
    parser.add_argument("--corpus", required=True, help="directory of documents")
    parser.add_argument("--judgments", required=True, help="judgments JSONL file")
    parser.add_argument("--params", default=None, help=params_help)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help=f"override a parameter, e.g. --set {set_example} (repeatable)")


FORCE_HELP = ("replace the artifacts of an earlier run of this command in --out; other files there are kept "
              "(without it an --out groundkit wrote before is refused)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="groundkit", description="Reproducible retrieval evaluation anchored on verbatim gold quotes."
    )
    parser.add_argument("--debug", action="store_true", help="show a traceback on error")
    parser.add_argument("--version", action="version", version=f"groundkit {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="run the whole evaluation in-process into --out")
    _add_inputs(run, params_help="params.yaml (defaults when omitted)", set_example="chunk.size=400")
    run.add_argument("--out", required=True, help="output directory for the artifacts")
    run.add_argument("--force", action="store_true", help=FORCE_HELP)
    run.set_defaults(handler=_cmd_run)

    score_run = commands.add_parser(
        "score-run", help="score a run produced by another system (JSONL of ranked passages) into --out",
        description="Score an external run: one JSON object per line with query_id, rank, document and either "
                    "start/end character offsets or the passage text (see examples/README.md).",
    )
    score_run.add_argument("run_file", metavar="RUN.jsonl", help="the external run")
    _add_inputs(score_run, params_help="params.yaml (for score.ks and retrieve.depth)", set_example="score.ks=[1,5]")
    score_run.add_argument("--out", required=True, help="output directory for the artifacts")
    score_run.add_argument("--force", action="store_true", help=FORCE_HELP)
    score_run.set_defaults(handler=_cmd_run)

    audit = commands.add_parser("audit", help="measure whether the corpus can tell retrievers apart")
    _add_inputs(audit, params_help="params.yaml (for audit.max_trivial_share)",
                set_example="audit.max_trivial_share=0.2")
    audit.add_argument("--out", default=None, help="write the full JSON report here")
    audit.add_argument("--force", action="store_true", help="replace the report of an earlier audit at --out")
    audit.set_defaults(handler=_cmd_audit)

    cmp = commands.add_parser(
        "compare", help="pair two runs query by query: deltas, 95%% CIs, p-values, moved queries, a verdict",
        description="Each side is a git revision or DVC experiment name (its committed metrics/), or a folder "
        "with per_query.csv and run.json (`groundkit run --out`, or a workspace's metrics/).",
    )
    cmp.add_argument("baseline", help="revision, experiment name or results folder")
    cmp.add_argument("candidate", help="revision, experiment name or results folder")
    cmp.add_argument("--metric", action="append", default=[], metavar="NAME[,NAME]",
                     help="metrics the verdict and --fail-on-regression look at "
                     f"(default {', '.join(COMPARE_GATE)})")
    # Numbers are checked by compare itself, so a bad one gets the same one-line error as any input.
    cmp.add_argument("--alpha", default="0.05", help="significance level, between 0 and 1 (default 0.05)")
    cmp.add_argument("--max-drop", default="0",
                     help="a significant drop no larger than this is tolerated (default 0)")
    cmp.add_argument("--fail-on-regression", action="store_true",
                     help=f"exit {REGRESSION_EXIT} if a --metric dropped significantly by more than --max-drop")
    cmp.add_argument("--json", action="store_true", help="print the report as JSON")
    cmp.add_argument("--top", default="15", help="queries listed per direction in Markdown (default 15)")
    cmp.add_argument("--allow-corpus-change", action="store_true",
                     help="compare runs scored over different corpora (different corpus_hash); the report says so")
    cmp.add_argument("--metrics-dir", default="metrics", help="where a revision keeps per_query.csv and run.json")
    cmp.set_defaults(handler=_cmd_compare)

    rep = commands.add_parser(
        "report", help="write one self-contained HTML page: charts, per-query table, gold quotes and passages",
        description="RUN and BASE are what compare accepts: a git revision or DVC experiment name, or a folder "
        "with per_query.csv and run.json. The passages come from the run's artifacts: a `groundkit run` folder, "
        "a workspace's build/, or for a revision the local DVC cache.",
    )
    rep.add_argument("run", help="revision, experiment name or results folder")
    rep.add_argument("--baseline", default=None, help="compare against this side (revision, experiment or folder)")
    rep.add_argument("--out", required=True, help="the HTML file to write")
    rep.add_argument("--force", action="store_true", help="replace a report written earlier at --out")
    rep.add_argument("--metric", action="append", default=[], metavar="NAME[,NAME]",
                     help=f"metrics of the verdict, as in compare (default {', '.join(COMPARE_GATE)})")
    rep.add_argument("--alpha", default="0.05", help="significance level, between 0 and 1 (default 0.05)")
    rep.add_argument("--top-k", default="10", help="passages shown per query and run (default 10)")
    rep.add_argument("--allow-corpus-change", action="store_true",
                     help="compare runs scored over different corpora (different corpus_hash)")
    rep.add_argument("--metrics-dir", default="metrics", help="where a revision keeps per_query.csv and run.json")
    rep.set_defaults(handler=_cmd_report)

    sweep = commands.add_parser(
        "sweep-plot", help="one row per DVC experiment (params against metrics) as CSV for `dvc plots show`")
    sweep.add_argument("--param", action="append", default=[], metavar="KEY[,KEY]",
                       help="params.yaml keys to tabulate, the first is the x axis (default chunk.size,chunk.overlap)")
    sweep.add_argument("--metric", action="append", default=[], metavar="NAME[,NAME]",
                       help=f"answerable metrics to tabulate (default {', '.join(SWEEP_METRICS)})")
    sweep.add_argument("--out", default="build/sweep.csv", help="CSV to write (default build/sweep.csv)")
    sweep.add_argument("--force", action="store_true", help="replace the table of an earlier sweep-plot at --out")
    sweep.set_defaults(handler=_cmd_sweep_plot)

    beir = commands.add_parser("import-beir", help="turn a BEIR dataset into a corpus folder and judgments")
    beir.add_argument("dataset", help="BEIR dataset folder (corpus.jsonl, queries.jsonl, qrels/)")
    beir.add_argument("--out", required=True, help="output folder: corpus/, judgments.jsonl, beir-import.json")
    beir.add_argument("--force", action="store_true", help=FORCE_HELP)
    beir.add_argument("--split", default="test", help="qrels split to import (qrels/SPLIT.tsv; default test)")
    beir.add_argument("--drop-empty", action="store_true",
                      help="leave out documents with neither title nor text (and the qrels naming them) instead of "
                      "failing")
    beir.add_argument("--strict", action="store_true",
                      help="refuse qrels naming a query or document the dataset lacks (default: skip and list them)")
    beir.add_argument("--keep-identical-ids", action="store_true",
                      help="let a query's run return the document with the query's own id (BEIR drops it)")
    beir.set_defaults(handler=_cmd_import_beir)

    export = commands.add_parser(
        "export-beir", help="write a run over an imported BEIR dataset as document-level TREC files with BEIR ids")
    export.add_argument("run", help="the --out folder of `groundkit run` (or score-run) on the import")
    export.add_argument("--import", dest="import_dir", required=True, help="the folder import-beir wrote")
    export.add_argument("--out", required=True, help="output folder: run.trec, qrels.trec")
    export.add_argument("--force", action="store_true", help=FORCE_HELP)
    export.set_defaults(handler=_cmd_export_beir)
    return parser


def _version() -> str:
    from groundkit import __version__

    return __version__


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.handler(args))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``groundkit`` console script."""
    return guarded(_main, argv)


if __name__ == "__main__":
    sys.exit(main())
