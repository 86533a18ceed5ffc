"""DVC stage chunk: split the validated corpus snapshot into chunks."""

import argparse
import sys
from pathlib import Path

import _own_tree  # noqa: F401  (first: groundkit must come from this tree)

from groundkit._guard import guarded
from groundkit.config import load_params
from groundkit.pipeline.steps import chunk as chunk_step


def main(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--params", required=True)
    parser.add_argument("--documents", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    params = load_params(args.params, args.set)
    chunks = chunk_step.run(Path(args.documents), params.chunk, Path(args.out))
    print(f"chunk: {len(chunks)} chunks", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(guarded(main))
