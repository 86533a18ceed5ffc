"""The ``groundkit`` command line.

Errors groundkit can explain are printed as one message and exit 1; usage
errors exit 2. A traceback is shown only with ``--debug``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from groundkit.cli import _datasets, _evaluate, _judgments, _reports, _repository
from groundkit.cli._reports import REGRESSION_EXIT
from groundkit.console.guard import guarded

__all__ = ["REGRESSION_EXIT", "build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="groundkit", description="Reproducible retrieval evaluation anchored on verbatim gold quotes."
    )
    parser.add_argument("--debug", action="store_true", help="show a traceback on error")
    parser.add_argument("--version", action="version", version=f"groundkit {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)
    for module in (_evaluate, _judgments, _reports, _repository, _datasets):
        module.add(commands)
    _say_what_each_does(parser)
    return parser


def _say_what_each_does(parser: argparse.ArgumentParser) -> None:
    """Open every subcommand's help page with what the command does: its line in the list of commands, as a
    sentence, before whatever its description adds (``groundkit run --help`` said nothing of the kind)."""
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        said = {choice.dest: choice.help for choice in action._choices_actions}
        for name, command in action.choices.items():
            line = (said.get(name) or "").replace("%%", "%").strip()
            if line:
                first = line[0].upper() + line[1:] + ("" if line.endswith(".") else ".")
                command.description = f"{first} {command.description}" if command.description else first
            _say_what_each_does(command)


def _version() -> str:
    from groundkit._version import __version__

    return __version__


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.handler(args))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``groundkit`` console script."""
    args = list(sys.argv[1:] if argv is None else argv)
    if [a for a in args if a != "--debug"][:1] == ["stage"]:
        # A DVC stage: start the way stages/stage.py does, without the rest of the command line's parser.
        import os

        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy: see stages/stage.py
        from groundkit.pipeline.entry import main as stage_main

        args.remove("stage")
        return guarded(lambda rest: stage_main(rest, installed=True), args)
    return guarded(_main, args)


if __name__ == "__main__":
    sys.exit(main())
