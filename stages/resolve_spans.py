"""DVC stage resolve-spans: resolve every gold quote to one span before any chunking starts."""

import argparse
import sys
from pathlib import Path

import _own_tree  # noqa: F401  (first: groundkit must come from this tree)

from groundkit._guard import guarded
from groundkit.config import load_params
from groundkit.pipeline.steps import resolve_spans as resolve_spans_step


def main(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--params", required=True)
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--judgments", required=True)
    parser.add_argument("--documents-out", required=True)
    parser.add_argument("--spans-out", required=True)
    args = parser.parse_args(argv)
    load_params(args.params)
    resolved = resolve_spans_step.run(
        Path(args.corpus), Path(args.judgments), Path(args.documents_out), Path(args.spans_out)
    )
    spans = sum(len(r.spans) for r in resolved)
    print(f"resolve-spans: {spans} gold quotes resolved exactly once", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(guarded(main))
