"""DVC stage retrieve: rank chunks for every judgment's query (or read an external run) and write a TREC run."""

import argparse
import sys
from pathlib import Path

import _own_tree  # noqa: F401  (first: groundkit must come from this tree)

from groundkit._guard import guarded
from groundkit.config import load_params
from groundkit.pipeline.steps import retrieve as retrieve_step


def main(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--params", required=True)
    parser.add_argument("--chunks", required=True)
    parser.add_argument("--documents", required=True, help="documents.jsonl (an external run's text is located there)")
    parser.add_argument("--index", required=True)
    parser.add_argument("--embeddings", required=True)
    parser.add_argument("--spans", required=True, help="gold_spans.jsonl (holds the queries)")
    parser.add_argument("--run", required=True, help="the external run (read only when retrieve.retriever is external)")
    parser.add_argument("--out", required=True, help="TREC run file")
    parser.add_argument("--passages-out", required=True, help="an external run's passages (JSONL)")
    args = parser.parse_args(argv)
    # dvc.yaml passes ${retrieve.run}, the same key the params model reads, so the override changes nothing
    # but makes the command line, which DVC tracks, the path the stage reads.
    params = load_params(args.params, [f"retrieve.run={args.run}"])
    ranked = retrieve_step.run(
        Path(args.chunks), Path(args.documents), Path(args.index), Path(args.embeddings), Path(args.spans), params,
        out_run=Path(args.out), out_passages=Path(args.passages_out),
    )
    empty = sum(1 for r in ranked.rankings.values() if not r)
    print(f"retrieve ({params.retrieve.retriever}): {len(ranked.rankings)} queries, {empty} with no result",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(guarded(main))
