"""Reading results: ``compare``, ``report`` and ``sweep-plot``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from groundkit.cli._common import names

REGRESSION_EXIT = 4
"""compare's exit status when a gated metric regressed (--fail-on-regression)."""

def _compare_gate() -> list[str]:
    """compare's --metric default, named by the measure registry: what the verdict judges by."""
    from groundkit.reports.gate import DEFAULT_GATE

    return list(DEFAULT_GATE)

def _sweep_metrics() -> list[str]:
    """sweep-plot's --metric default: the columns of its table."""
    return ["recall@1", "recall@10", "ndcg@10", "chars@10", "recall@1000chars", "coverage@1000chars"]

def _option(name: str, text: str, kind: type[int] | type[float], expected: str, fix: str) -> float:
    from groundkit.errors import CompareError

    try:
        value = kind(text)
    except (TypeError, ValueError):
        raise CompareError(name, f"{text!r} is not {expected}", fix=fix) from None
    return value

def parse_options(alpha: str, max_drop: str, top: str) -> tuple[float, float, int]:
    """``--alpha``, ``--max-drop`` and ``--top`` from the command line, each checked."""
    from groundkit.errors import CompareError
    from groundkit.reports.compare import check_alpha, check_max_drop

    number = _option("--alpha", alpha, float, "a number", "give a significance level such as 0.05")
    drop = _option("--max-drop", max_drop, float, "a number", "give the largest drop to tolerate, e.g. 0.01")
    count = int(_option("--top", top, int, "a whole number", "give how many queries to list, e.g. 15"))
    if count < 0:
        raise CompareError("--top", f"must be 0 or more, got {count}", fix="give how many queries to list, e.g. 15")
    return check_alpha(number), check_max_drop(drop), count

def repository_gate(cwd: Any) -> Any:
    """The ``gate`` section of params.yaml in ``cwd`` (config.GateParams), or its defaults where there is none.

    Only that section is read: a problem elsewhere in params.yaml is the stages' to report, not compare's.
    """
    from pathlib import Path

    from pydantic import ValidationError

    from groundkit.config.gate import GateParams
    from groundkit.config.params_file import read_params_file
    from groundkit.errors import ParamsError
    from groundkit.inputs.validation import describe

    path = Path(cwd) / "params.yaml"
    if not path.is_file():
        return GateParams()
    section = read_params_file(path).get("gate") or {}
    try:
        return GateParams.model_validate(section)
    except ValidationError as exc:
        key, problem = describe(exc, "gate.", model=GateParams)
        raise ParamsError(path, problem, key=key or "gate",
                          fix="see the gate section groundkit init writes: metrics (a list), max_drop (a number, 0 "
                              "or more), non_inferiority (metric: margin)") from None


def _cmd_compare(args: argparse.Namespace) -> int:
    from pathlib import Path

    from groundkit.errors import CompareError
    from groundkit.reports.compare import check_correction, compare
    from groundkit.reports.compare_terminal import render, unshown_left_out
    from groundkit.reports.sides import experiment_sides, read_side
    from groundkit.reports.verdict import parse_margins

    cwd = Path.cwd()
    settings = repository_gate(cwd)
    alpha, max_drop, top = parse_options(args.alpha, str(settings.max_drop) if args.max_drop is None
                                         else args.max_drop, args.top)
    correction = check_correction(args.correction)
    margins = parse_margins(args.non_inferiority) if args.non_inferiority else dict(settings.non_inferiority)
    if args.experiments and args.candidates:
        raise CompareError("--experiments", f"is given with candidates ({', '.join(args.candidates)})",
                           fix="name the candidates, or pass --experiments alone to compare every experiment of "
                           "the current commit")
    if not args.experiments and not args.candidates:
        raise CompareError("candidate", "is missing: compare needs a baseline and at least one candidate",
                           fix="add a revision, experiment name or results folder after the baseline, or pass "
                           "--experiments")
    repeated = sorted({c for c in args.candidates if args.candidates.count(c) > 1})
    if repeated:
        raise CompareError(repeated[0], "is given twice as a candidate; it would count twice in the correction",
                           fix="name each candidate once")
    baseline = read_side(args.baseline, cwd=cwd, metrics_dir=args.metrics_dir)
    left_out: list[tuple[str, str]] = []
    if args.experiments:
        candidates, left_out = experiment_sides(cwd, baseline, args.baseline, metrics_dir=args.metrics_dir)
        if not candidates:
            shown = "; ".join(f"{name}: {why}" for name, why in left_out) or "none listed"
            raise CompareError("--experiments", f"finds no experiment of the current commit to compare ({shown})",
                               fix="run some first, e.g. dvc exp run --queue -S 'chunk.size=400,1200' && "
                               "dvc queue start")
    else:
        candidates = [read_side(spec, cwd=cwd, metrics_dir=args.metrics_dir) for spec in args.candidates]
    output = _compare_format(args)
    gate = names(args.metric) or list(settings.metrics) or None  # None: the default gate, less what is not reported
    options = {"gate": gate, "alpha": alpha, "max_drop": max_drop, "allow_corpus_change": args.allow_corpus_change,
               "correction": correction, "non_inferiority": margins}
    if args.self_test:
        if len(candidates) != 1:
            raise CompareError("--self-test", f"needs one candidate, got {len(candidates)}",
                               fix="name one candidate: groundkit compare BASELINE CANDIDATE --self-test")
        from groundkit.reports.selftest import render as render_self_test
        from groundkit.reports.selftest import self_test

        result = compare(baseline, candidates, **options)
        print(render_self_test(self_test(result), {"baseline": baseline.label, "candidate": candidates[0].label}),
              end="")
        return 0
    result = compare(baseline, candidates, left_out=left_out, **options)
    report = render(result, output, top=top)
    for name, why in unshown_left_out(result):
        print(f"left out of --experiments: {name}: {why}", file=sys.stderr)
    for note in result.gate_notes:
        print(f"note: {note}", file=sys.stderr)
    print(report, end="")
    several = len(result.candidates) > 1  # a metric is named with its candidate among several
    if args.fail_on_regression:
        for r in result.candidates:
            for metric, why in r.untested.items():
                shown = f"{metric} ({r.side.label})" if several else metric
                print(f"note: --fail-on-regression cannot gate on {shown}: no paired test ({why})", file=sys.stderr)
    # The regression rule gates only with --fail-on-regression; non-inferiority when --non-inferiority is given, or
    # with --fail-on-regression when params.yaml's gate section sets margins (a plain compare then only reports them).
    gating = {"regression": args.fail_on_regression, "non-inferiority": args.fail_on_regression or bool(
        args.non_inferiority)}
    lines = [line for r in result.candidates for line in r.gate_lines if gating[line.rule]]
    for line in lines:
        print(line.line(), file=sys.stderr)
    return REGRESSION_EXIT if any(not line.passed for line in lines) else 0

def _compare_format(args: argparse.Namespace) -> str:
    """text on a terminal, Markdown when piped (the pull-request script's comment); --json is --format json."""
    from groundkit.errors import CompareError
    from groundkit.reports.compare_terminal import FORMATS

    if args.format is not None and args.format not in FORMATS:
        raise CompareError("--format", f"{args.format!r} is not a format compare writes",
                           fix=f"use one of {', '.join(FORMATS)}")
    if args.json and args.format not in (None, "json"):
        raise CompareError("--json", f"is given with --format {args.format}", fix="give one of them")
    if args.json:
        return "json"
    return args.format or ("text" if sys.stdout.isatty() else "md")

def _cmd_report(args: argparse.Namespace) -> int:
    from pathlib import Path

    from groundkit.artifacts.atomic import atomic_write_text
    from groundkit.artifacts.outputs import check_file
    from groundkit.errors import CompareError
    from groundkit.reports.compare import check_alpha
    from groundkit.reports.html import is_report, report

    alpha = parse_options(args.alpha, "0", "0")[0]
    if not (args.top_k.isascii() and args.top_k.isdigit() and int(args.top_k) > 0):
        raise CompareError("--top-k", f"{args.top_k!r} is not a whole number from 1",
                           fix="give how many passages to show per query, e.g. 10")
    check_file(Path(args.out), command="report", what="a groundkit report", force=args.force, recognise=is_report,
               inputs={})
    page = report(args.run, args.baseline, cwd=Path.cwd(), metrics_dir=args.metrics_dir,
                  gate=names(args.metric) or None, alpha=check_alpha(alpha),
                  allow_corpus_change=args.allow_corpus_change, top_k=int(args.top_k))
    atomic_write_text(Path(args.out), page)
    print(f"report written to {args.out} ({len(page.encode('utf-8')) / 1024:.0f} KiB)")
    return 0

def _cmd_sweep_plot(args: argparse.Namespace) -> int:
    from pathlib import Path

    from groundkit.artifacts.outputs import check_file
    from groundkit.reports.sweep import plot_column, sweep_table

    def is_sweep_table(path: Path) -> bool:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            return False
        return bool(lines) and lines[0].startswith("experiment,") and len({line.count(",") for line in lines}) == 1

    check_file(Path(args.out), command="sweep-plot", what="a sweep table", inputs={}, force=args.force,
               recognise=is_sweep_table)
    params = names(args.param) or ["chunk.size", "chunk.overlap"]
    metrics = names(args.metric) or _sweep_metrics()
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

def _cmd_sweep(args: argparse.Namespace) -> int:
    from pathlib import Path

    from groundkit.artifacts.atomic import atomic_write_text
    from groundkit.artifacts.lines import csv_text
    from groundkit.artifacts.outputs import output_folder
    from groundkit.reports.sweep_page import render
    from groundkit.reports.sweep_view import csv_rows, render_text, sweep_view

    alpha = parse_options(args.alpha, "0", "0")[0]
    with output_folder(args.out, command="sweep", artifacts=SWEEP_ARTIFACTS, inputs={}, force=args.force) as scratch:
        view = sweep_view(Path.cwd(), quality=args.quality, budget_measure=args.budget_measure,
                          params=names(args.param), alpha=alpha, correction=args.correction,
                          metrics_dir=args.metrics_dir)
        columns, rows = csv_rows(view)
        atomic_write_text(scratch / "sweep.csv", csv_text(rows, columns))
        atomic_write_text(scratch / "sweep.html", render(view))
    print(render_text(view), end="")
    for name, reason in view.left_out:
        print(f"left out: {name}: {reason}", file=sys.stderr)
    print(f"\nwritten to {args.out}/sweep.html and sweep.csv; draw the CSV with:\n  dvc plots show "
          f"{args.out}/sweep.csv -x {view.cost} -y {view.quality} --template scatter", file=sys.stderr)
    return 0

SWEEP_ARTIFACTS = ("sweep.csv", "sweep.html")

def add(commands: Any) -> None:
    """Add this module's subcommands."""
    cmp = commands.add_parser(
        "compare", help="pair runs query by query: deltas, 95%% CIs, corrected p-values, effect sizes, a verdict",
        description="Compare a baseline with one candidate (the full report) or several (one table of the gated "
        "metrics, their p-values corrected together). Each side is a git revision or DVC experiment name (its "
        "committed metrics/), or a folder with per_query.csv and run.json (`groundkit run --out`, or a "
        "workspace's metrics/).",
    )
    cmp.add_argument("baseline", help="revision, experiment name or results folder")
    cmp.add_argument("candidates", nargs="*", metavar="candidate",
                     help="one or more revisions, experiment names or results folders")
    cmp.add_argument("--experiments", action="store_true",
                     help="compare every experiment of the current commit (`dvc exp show`) with the baseline")
    cmp.add_argument("--correction", default="holm",
                     help="correction of the gated p-values for testing several: holm (default), bh "
                     "(Benjamini-Hochberg) or none")
    cmp.add_argument("--metric", action="append", default=[], metavar="NAME[,NAME]",
                     help="metrics the verdict and --fail-on-regression look at, each counted once; not chars@k, "
                     f"which is neither better nor worse by itself (default {', '.join(_compare_gate())})")
    # Numbers are checked by compare itself, so a bad one gets the same one-line error as any input.
    cmp.add_argument("--alpha", default="0.05", help="significance level, between 0 and 1 (default 0.05)")
    cmp.add_argument("--max-drop", default=None,
                     help="a significant drop no larger than this is tolerated (default: params.yaml's gate.max_drop, "
                     "else 0)")
    cmp.add_argument("--fail-on-regression", action="store_true",
                     help=f"exit {REGRESSION_EXIT} if a --metric of any candidate fell significantly (its corrected "
                     "interval excludes 0), not only with less context read, by more than --max-drop")
    cmp.add_argument("--non-inferiority", action="append", default=[], metavar="METRIC=MARGIN[,METRIC=MARGIN]",
                     help=f"exit {REGRESSION_EXIT} unless, for every METRIC, the one-sided (1 - alpha) lower bound of "
                     "the paired delta lies above -MARGIN (the margin in the metric's units; default: params.yaml's "
                     "gate.non_inferiority)")
    cmp.add_argument("--self-test", action="store_true",
                     help="run the gate on null replications of this comparison (differences re-centred at 0, "
                     "queries resampled) and print its false-alarm rate, each metric's test rate and the power at "
                     "the MDE")
    cmp.add_argument("--format", default=None, metavar="text|md|json",
                     help="plain text within 100 columns, verdict first (the default on a terminal); Markdown for a "
                     "pull request's comment (the default when piped); or JSON")
    cmp.add_argument("--json", action="store_true", help="the same as --format json")
    cmp.add_argument("--top", default="15", help="queries listed per direction (default 15)")
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
                     help=f"metrics of the verdict, as in compare (default {', '.join(_compare_gate())})")
    rep.add_argument("--alpha", default="0.05", help="significance level, between 0 and 1 (default 0.05)")
    rep.add_argument("--top-k", default="10", help="passages shown per query and run (default 10)")
    rep.add_argument("--allow-corpus-change", action="store_true",
                     help="compare runs scored over different corpora (different corpus_hash)")
    rep.add_argument("--metrics-dir", default="metrics", help="where a revision keeps per_query.csv and run.json")
    rep.set_defaults(handler=_cmd_report)

    view = commands.add_parser(
        "sweep", help="read a sweep: quality against context cost, the Pareto frontier, the best per context budget",
        description="Reads the current commit and its DVC experiments (as sweep-plot collects them) and prints, "
        "within 100 columns, each configuration's quality with its 95%% interval against the context it hands a "
        "reader, the Pareto frontier, and at each budget the best configuration by a size-fair measure, its "
        "difference from the runner-up and whether it is significant after correction. --out gets sweep.html (the "
        "chart) and sweep.csv (for dvc plots show).")
    view.add_argument("--quality", default="ndcg@10",
                      help="the quality measured at a rank; its cost is chars@k at the same k (default ndcg@10)")
    view.add_argument("--budget-measure", default="coverage",
                      help="the size-fair measure that picks the best configuration at each budget the runs "
                      "computed (default coverage: the share of the gold a window of that many characters holds)")
    view.add_argument("--param", action="append", default=[], metavar="KEY[,KEY]",
                      help="params that tell configurations apart, the first ordering each series (default: those "
                      "that differ between the runs)")
    view.add_argument("--alpha", default="0.05", help="significance level, between 0 and 1 (default 0.05)")
    view.add_argument("--correction", default="holm",
                      help="correction over the budgets answered: holm (default), bh or none")
    view.add_argument("--out", default="build/sweep", help="folder for sweep.html and sweep.csv (default build/sweep)")
    view.add_argument("--force", action="store_true", help="replace what an earlier sweep wrote to --out")
    view.add_argument("--metrics-dir", default="metrics", help="where a revision keeps per_query.csv and run.json")
    view.set_defaults(handler=_cmd_sweep)

    sweep = commands.add_parser(
        "sweep-plot", help="one row per DVC experiment (params against metrics) as CSV for `dvc plots show`")
    sweep.add_argument("--param", action="append", default=[], metavar="KEY[,KEY]",
                       help="params.yaml keys to tabulate, the first is the x axis (default chunk.size,chunk.overlap)")
    sweep.add_argument("--metric", action="append", default=[], metavar="NAME[,NAME]",
                       help=f"answerable metrics to tabulate (default {', '.join(_sweep_metrics())})")
    sweep.add_argument("--out", default="build/sweep.csv", help="CSV to write (default build/sweep.csv)")
    sweep.add_argument("--force", action="store_true", help="replace the table of an earlier sweep-plot at --out")
    sweep.set_defaults(handler=_cmd_sweep_plot)
