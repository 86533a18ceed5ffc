"""What the subcommands share: input options, lists of names, the corpus by path."""

from __future__ import annotations

import argparse
from typing import Any

FORCE_HELP = ("replace the artifacts of an earlier run of this command in --out; other files there are kept "
              "(without it an --out groundkit wrote before is refused)")

def names(values: list[str]) -> list[str]:
    """Names given as repeated options and/or comma-separated lists: ``--metric a,b --metric c``."""
    return [name.strip() for value in values for name in value.split(",") if name.strip()]

def add_inputs(parser: argparse.ArgumentParser, *, params_help: str, set_example: str, queries: bool = False) -> None:
    """The options every command that reads a corpus shares: --corpus, --judgments, --params, --set.

    ``queries``: --queries may stand in for --judgments (``run``: rank queries nobody labelled, score nothing).
    """
    parser.add_argument("--corpus", required=True, help="directory of documents")
    if queries:
        given = parser.add_mutually_exclusive_group(required=True)
        given.add_argument("--judgments", help="judgments JSONL file")
        given.add_argument("--queries", help="queries nobody labelled instead of judgments: JSONL with query_id and "
                           "query (a judgments file works too), or one query a line (ids: q + 10 hex digits of the "
                           "SHA-256 of the text); writes the run without scores")
    else:
        parser.add_argument("--judgments", required=True, help="judgments JSONL file")
    parser.add_argument("--params", default=None, help=params_help)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help=f"override a parameter, e.g. --set {set_example} (repeatable)")

def add_selection(parser: argparse.ArgumentParser, params_help: str | None = None) -> None:
    """--params and --set for a command that reads a corpus but runs nothing: corpus.include and corpus.exclude
    say which files are documents, as in a run."""
    parser.add_argument("--params", default=None,
                        help=params_help or "params.yaml whose corpus.include and corpus.exclude say which files are "
                                            "documents (default: every file under --corpus)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a parameter, e.g. --set \"corpus.exclude=['*.pdf']\" (repeatable)")


def corpus_by_path(root: str, args: argparse.Namespace | None = None) -> dict[str, Any]:
    """The documents under ``root`` that the corpus.include and corpus.exclude of ``args``' params select."""
    from groundkit.config import load_params
    from groundkit.corpus.documents import load_corpus
    from groundkit.scoring.measures import metrics_of

    params = load_params(args.params, args.set) if args is not None else None
    if params is not None:
        metrics_of(params)  # a misspelt measure is refused by every command that reads params.yaml
    selection = params.corpus if params is not None else None
    include, exclude = (selection.include, selection.exclude) if selection is not None else ((), ())
    return {d.path: d for d in load_corpus(root, include=include, exclude=exclude)}


def categories() -> list[Any]:
    from groundkit.corpus.categories import Category

    return list(Category)
