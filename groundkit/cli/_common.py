"""What the subcommands share: input options, lists of names, the corpus by path."""

from __future__ import annotations

import argparse
from typing import Any

FORCE_HELP = ("replace the artifacts of an earlier run of this command in --out; other files there are kept "
              "(without it an --out groundkit wrote before is refused)")

def names(values: list[str]) -> list[str]:
    """Names given as repeated options and/or comma-separated lists: ``--metric a,b --metric c``."""
    return [name.strip() for value in values for name in value.split(",") if name.strip()]

def add_inputs(parser: argparse.ArgumentParser, *, params_help: str, set_example: str) -> None:
    """The options every command that reads a corpus shares: --corpus, --judgments, --params, --set."""
    parser.add_argument("--corpus", required=True, help="directory of documents")
    parser.add_argument("--judgments", required=True, help="judgments JSONL file")
    parser.add_argument("--params", default=None, help=params_help)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help=f"override a parameter, e.g. --set {set_example} (repeatable)")

def corpus_by_path(root: str) -> dict[str, Any]:
    from groundkit.corpus.documents import load_corpus

    return {d.path: d for d in load_corpus(root)}


def categories() -> list[Any]:
    from groundkit.corpus.judgments import Category

    return list(Category)
