"""The pipeline in a repository: ``init``, and ``stage`` (what dvc.yaml runs; dispatched before parsing)."""

from __future__ import annotations

import argparse
from typing import Any


def _cmd_init(args: argparse.Namespace) -> int:
    from pathlib import Path

    from groundkit._version import __version__
    from groundkit.pipeline.adopt import RECORD, Request, default_branch, init, next_steps, summary_lines

    root = Path.cwd()
    fresh = not (root / RECORD).exists()
    request = Request(corpus=args.corpus, judgments=args.judgments, code=tuple(args.code), force=args.force,
                      upgrade=args.upgrade)
    outcome = init(root, request, __version__)
    print(f"groundkit init: groundkit {__version__} in {root.resolve()}")
    for line in summary_lines(outcome):
        print(line)
    if outcome.refused:
        from groundkit.errors import RepositoryError

        listed = ", ".join(outcome.refused)
        raise RepositoryError(listed, "edited since groundkit wrote it, so --upgrade left it as it is, and the "
                              "stages still name the version it was rendered for",
                              fix=f"move your edits elsewhere, delete {listed}, and run groundkit init --upgrade again")
    steps = next_steps(outcome, request, fresh, evaluated=(root / "dvc.lock").exists(), branch=default_branch(root))
    if not steps:
        print(f"nothing upgraded: dvc.yaml, the workflow and its script already run groundkit {__version__}")
        return 0
    print("next:")
    for step in steps:
        print(f"  {step}")
    return 0

def add(commands: Any) -> None:
    """Add this module's subcommands."""
    init = commands.add_parser(
        "init", help="set up groundkit's DVC pipeline in this git repository (dvc.yaml, params.yaml, PR check)",
        description="Run at the root of your git repository. Writes dvc.yaml (every stage runs the installed "
        "groundkit), params.yaml (today's defaults, pointing at --corpus and --judgments), the pull-request "
        "workflow and its script, and ignore lines for the build outputs; runs `dvc init` if needed. It never "
        "overwrites a file it did not write: .groundkit.json records what it wrote.")
    init.add_argument("--corpus", help="the folder of documents, inside the repository (required the first time)")
    init.add_argument("--judgments", help="the judgments JSONL file, inside the repository (required the first time)")
    init.add_argument("--code", action="append", default=[], metavar="PATH",
                      help="a file or folder of your own code a python: retriever imports; the retrieve stage "
                      "depends on it (the retriever params.yaml names is found by itself; repeatable)")
    init.add_argument("--force", action="store_true",
                      help="rewrite the files groundkit wrote that nobody has changed since (never any other)")
    init.add_argument("--upgrade", action="store_true",
                      help="render dvc.yaml, the workflow and its script again for the installed groundkit")
    init.set_defaults(handler=_cmd_init)

    stage = commands.add_parser(
        "stage", help="run one pipeline stage as dvc.yaml calls it (written by groundkit init)", add_help=False)
    stage.set_defaults(handler=None)
