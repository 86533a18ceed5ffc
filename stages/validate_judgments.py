"""DVC stage validate-judgments: check judgments.jsonl and record the input hashes."""

import argparse
import sys
from pathlib import Path

from groundkit.cli import guarded
from groundkit.evals import pipeline
from groundkit.params import load_params


def main(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--params", required=True)
    parser.add_argument("--judgments", required=True)
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--out", required=True, help="validation report (JSON)")
    args = parser.parse_args(argv)
    load_params(args.params)
    report = pipeline.validate_judgments(Path(args.judgments), Path(args.corpus), Path(args.out))
    print(f"validate-judgments: {report['judgments']} judgments OK", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(guarded(main))
