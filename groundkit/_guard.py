"""The error contract shared by the ``groundkit`` command and the DVC stage scripts.

Errors groundkit can explain print as one message and exit 1; anything else
is a bug and says so in one line (exit 3). ``--debug`` adds the traceback.
Kept apart from cli.py so that adding a subcommand does not invalidate every
DVC stage.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable, Sequence

from groundkit.errors import GroundkitError

EXIT_ERROR = 1
EXIT_INTERNAL = 3


def guarded(main: Callable[[Sequence[str] | None], int], argv: Sequence[str] | None = None) -> int:
    """Run ``main``, turning a GroundkitError into one message on stderr and exit status 1."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    if debug:
        args.remove("--debug")
    try:
        return main(args)
    except GroundkitError as exc:
        if debug:
            traceback.print_exc()
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if debug:
            traceback.print_exc()
        else:
            print(
                f"internal error: {type(exc).__name__}: {exc}\n"
                "  this is a bug in groundkit; re-run with --debug for a traceback and report it",
                file=sys.stderr,
            )
        return EXIT_INTERNAL
