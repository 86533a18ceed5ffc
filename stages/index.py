"""DVC stage index: build the BM25 index over the chunks."""

import argparse
import sys
from pathlib import Path

import _own_tree  # noqa: F401  (first: groundkit must come from this tree)

from groundkit._guard import guarded
from groundkit.config import load_params
from groundkit.pipeline.steps import index as index_step


def main(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--params", required=True)
    parser.add_argument("--chunks", required=True)
    parser.add_argument("--out", required=True, help="index directory")
    args = parser.parse_args(argv)
    params = load_params(args.params)
    built = index_step.run(Path(args.chunks), params.bm25, Path(args.out), tokenizer=params.tokenize)
    print(f"index: {built.num_chunks} chunks, {len(built.vocab)} terms", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(guarded(main))
