"""DVC stage validate-judgments: check judgments.jsonl, audit it, and record the input hashes."""

import argparse
import sys
from pathlib import Path

import _own_tree  # noqa: F401  (first: groundkit must come from this tree)

from groundkit._guard import guarded
from groundkit.config import load_params
from groundkit.corpus.audit import render_table
from groundkit.pipeline.steps import validate_judgments as validate_judgments_step


def main(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--params", required=True)
    parser.add_argument("--judgments", required=True)
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--out", required=True, help="validation report (JSON)")
    parser.add_argument("--audit-out", required=True, help="corpus audit report (JSON)")
    args = parser.parse_args(argv)
    params = load_params(args.params)
    report = validate_judgments_step.run(
        Path(args.judgments), Path(args.corpus), params.audit, Path(args.out), Path(args.audit_out),
        tokenizer=params.tokenize,
    )
    print(render_table(report), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(guarded(main))
