"""DVC stage retrieve: rank chunks for every judgment's query and write a TREC run."""

import argparse
import sys
from pathlib import Path

from groundkit._guard import guarded
from groundkit.evals import pipeline
from groundkit.params import load_params


def main(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--params", required=True)
    parser.add_argument("--index", required=True)
    parser.add_argument("--spans", required=True, help="gold_spans.jsonl (holds the queries)")
    parser.add_argument("--out", required=True, help="TREC run file")
    args = parser.parse_args(argv)
    params = load_params(args.params)
    rankings = pipeline.retrieve(Path(args.index), Path(args.spans), params.retrieve, Path(args.out))
    empty = sum(1 for r in rankings.values() if not r)
    print(f"retrieve: {len(rankings)} queries, {empty} with no result", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(guarded(main))
