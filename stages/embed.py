"""DVC stage embed: embed the chunks for the dense and hybrid retrievers (a manifest only for the others)."""

import argparse
import sys
from pathlib import Path

import _own_tree  # noqa: F401  (first: groundkit must come from this tree)

from groundkit._guard import guarded
from groundkit.config import load_params
from groundkit.pipeline.steps import embed as embed_step


def main(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--params", required=True)
    parser.add_argument("--chunks", required=True)
    parser.add_argument("--out", required=True, help="embeddings directory")
    args = parser.parse_args(argv)
    params = load_params(args.params)
    manifest = embed_step.run(Path(args.chunks), params, Path(args.out), progress=True)
    if manifest["embedded"]:
        print(f"embed: {manifest['num_chunks']} chunks, dim {manifest['dim']}, {manifest['model_version']}",
              file=sys.stderr)
    else:
        print(f"embed: skipped, retriever {params.retrieve.retriever!r} uses no embeddings", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(guarded(main))
