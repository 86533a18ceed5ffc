"""The error contract shared by the ``groundkit`` command and the DVC stage scripts.

Errors groundkit can explain print as one message and exit 1; anything else
is a bug and says so in one line (exit 3). ``--debug`` adds the traceback.
An ``OSError`` is the environment speaking (a full disk, a read-only mount),
not a bug: it prints as the path and the system's reason, exit 1. SIGTERM
unwinds like an exception, so temporary files and scratch folders are
removed, and exits 143 as an unhandled SIGTERM would.
Kept apart from cli.py so that adding a subcommand does not invalidate every
DVC stage.
"""

from __future__ import annotations

import errno
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from types import FrameType

from groundkit.errors import GroundkitError, Terminated
from groundkit.inputs.text import terminal_text

EXIT_ERROR = 1
EXIT_INTERNAL = 3
EXIT_TERMINATED = 128 + signal.SIGTERM

_OS_FIXES = {
    errno.ENOSPC: "free some space on that file system, or write somewhere else",
    errno.EDQUOT: "free some space within your quota, or write somewhere else",
    errno.EROFS: "that file system is mounted read-only; write somewhere else",
    errno.EACCES: "check the permissions of that path, or write somewhere else",
    errno.EPERM: "check the permissions of that path, or write somewhere else",
    errno.EFBIG: "the file grew past the file size limit (ulimit -f); raise it or write somewhere else",
    errno.ENOTDIR: "a part of that path is a file, not a folder; choose another path",
    errno.ENOENT: "check that the path exists",
}


def _terminate(signum: int, frame: FrameType | None) -> None:
    # A second SIGTERM must not cut the cleanup that the first one started.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise Terminated


def describe_os_error(exc: OSError) -> str:
    """``PATH: reason`` (and a fix where one is known) for an error of the file system."""
    reason = exc.strerror or str(exc)
    paths = [os.fsdecode(p) if isinstance(p, str | bytes) else str(p)
             for p in (exc.filename, exc.filename2) if p is not None]
    message = f"{' -> '.join(paths)}: {reason}" if paths else reason
    fix = _OS_FIXES.get(exc.errno) if exc.errno is not None else None
    return f"{message}\n  fix: {fix}" if fix else message


def _shown(message: str) -> str:
    """A message for the terminal: its lines kept, any text it quotes from outside escaped
    (groundkit/inputs/text.py)."""
    return "\n".join(terminal_text(line) for line in message.split("\n"))


def guarded(main: Callable[[Sequence[str] | None], int], argv: Sequence[str] | None = None) -> int:
    """Run ``main``, turning a GroundkitError into one message on stderr and exit status 1."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    if debug:
        args.remove("--debug")
    # Signal handlers can only be set from the main thread; elsewhere SIGTERM keeps its old meaning.
    catch_term = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if catch_term else None
    try:
        return main(args)
    except GroundkitError as exc:
        if debug:
            traceback.print_exc()
        print(f"error: {_shown(str(exc))}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Terminated:
        print("terminated by SIGTERM; temporary files were removed", file=sys.stderr)
        return EXIT_TERMINATED
    except OSError as exc:
        if debug:
            traceback.print_exc()
        print(f"error: {_shown(describe_os_error(exc))}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:
        if debug:
            traceback.print_exc()
        else:
            print(
                f"internal error: {type(exc).__name__}: {_shown(str(exc))}\n"
                "  this is a bug in groundkit; re-run with --debug for a traceback and report it",
                file=sys.stderr,
            )
        return EXIT_INTERNAL
    finally:
        if catch_term:
            signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
