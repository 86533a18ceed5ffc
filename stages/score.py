"""DVC stage score: derive chunk-level qrels from the gold spans and score the run."""

import argparse
import sys
from pathlib import Path

import _own_tree  # noqa: F401  (first: groundkit must come from this tree)

from groundkit._guard import guarded
from groundkit.config import load_params
from groundkit.pipeline.steps import score as score_step


def main(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--params", required=True)
    parser.add_argument("--spans", required=True)
    parser.add_argument("--chunks", required=True)
    parser.add_argument("--run", required=True)
    parser.add_argument("--passages", required=True, help="an external run's passages (from the retrieve stage)")
    parser.add_argument("--validation", required=True)
    parser.add_argument("--qrels-out", required=True)
    parser.add_argument("--metrics-out", required=True)
    parser.add_argument("--per-query-out", required=True)
    parser.add_argument("--run-metadata-out", required=True)
    parser.add_argument("--plots-out", required=True, help="directory for the plot data (CSV)")
    args = parser.parse_args(argv)
    params = load_params(args.params)
    summary = score_step.run(
        Path(args.spans),
        Path(args.chunks),
        Path(args.run),
        Path(args.passages),
        Path(args.validation),
        params,
        out_qrels=Path(args.qrels_out),
        out_metrics=Path(args.metrics_out),
        out_per_query=Path(args.per_query_out),
        out_run_metadata=Path(args.run_metadata_out),
        out_plots=Path(args.plots_out),
    )
    answerable = summary["answerable"]
    print(f"score: {answerable}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(guarded(main))
