"""``python:MODULE:FACTORY`` chunkers: the user's own code, its chunks checked by groundkit.

The contract::

    def FACTORY(options: dict) -> Chunker: ...

    class Chunker(Protocol):
        def split(self, text: str) -> list[tuple[int, int]] | list[str]: ...

groundkit imports MODULE (the current directory first, then the installed packages), calls
``FACTORY(options)`` once with ``chunk.options`` (a copy), and ``split(text)`` once per document, in
path order. Each returned item is a character span ``(start, end)`` of ``text`` or a chunk's text;
groundkit/corpus/chunking/checked.py checks them. Whatever leaves the user's code other than a return (an
exception, a ``sys.exit``) becomes one ChunkerError naming the step (the import, the factory, or the
document being split). ``chunk.size`` and ``chunk.overlap`` are not the plugin's: it reads its own options.

The module is a dependency of the chunk stage, as a ``python:`` retriever's is of the retrieve stage: in
a repository set up by ``groundkit init`` the stage lists the repository's own code (``--code``) and
refuses to run a module of the repository that is not among it (groundkit/pipeline/entry.py).
"""

from __future__ import annotations

import copy
import importlib
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groundkit.corpus.chunking.checked import FROM_OUTSIDE, Checker, shown
from groundkit.corpus.chunking.kinds import Python, Span, Splitter
from groundkit.errors import ChunkerError

if TYPE_CHECKING:
    from groundkit.config import ChunkParams
    from groundkit.corpus.chunking.kinds import ChunkerKind


@contextmanager
def user_code(checker: Checker, step: str, fix: str) -> Iterator[None]:
    """Run a chunker's own code; anything but a normal return becomes one ChunkerError naming ``step``."""
    try:
        yield
    except FROM_OUTSIDE:
        raise
    except ChunkerError:
        raise
    except SystemExit as exc:
        checker.fail(f"{step} tried to end the process (SystemExit with code {shown(exc.code)}); chunker code must "
                     "return or raise, never exit", "remove the sys.exit() call from the chunker's code")
    except BaseException as exc:
        detail = shown(str(exc), limit=300) if str(exc) else ""
        checker.fail(f"{step} raised {type(exc).__name__}" + (f": {detail}" if detail else ""), fix)


def load(kind: Python, checker: Checker) -> Callable[[dict[str, Any]], Any]:
    """Import the factory ``python:MODULE:FACTORY`` names."""
    added = str(Path.cwd())
    sys.path.insert(0, added)  # like `python -m`: a module next to params.yaml is found
    try:
        with user_code(checker, f"importing module {kind.module!r}",
                       "put the module in the current directory or on PYTHONPATH, or install it; if it is there, "
                       "fix the error its import raises (--debug shows the traceback)"):
            module = importlib.import_module(kind.module)
            factory = getattr(module, kind.factory, None)
    finally:
        if added in sys.path:
            sys.path.remove(added)
    if not callable(factory):
        checker.fail(f"module {kind.module!r} has no callable {kind.factory!r}",
                     "name a function (or class) taking (options) that returns an object with split(text)")
    return factory


class PluginSplitter:
    """A user's chunker: ``split(text)`` called per document, what it returns checked."""

    def __init__(self, inner: Any, checker: Checker) -> None:
        self._checker = checker
        with user_code(checker, "looking up split() on what the factory returned", "fix the chunker class"):
            split = getattr(inner, "split", None)
        if not callable(split):
            checker.fail(f"the factory returned {type(inner).__name__}, which has no split(text) method")
        self._split = split

    def spans(self, text: str, document: str) -> list[Span]:
        step = f"split() of the document {document!r}"
        with user_code(self._checker, step, "fix the chunker; re-run with --debug for its traceback"):
            returned = self._split(text)
            if not isinstance(returned, str | bytes | dict) and hasattr(returned, "__iter__"):
                returned = list(returned)  # a generator runs here, where its failure is reported
        return self._checker.spans(returned, text, document)


def build(kind: ChunkerKind, params: ChunkParams) -> Splitter:
    """The ``python:`` kind: the factory imported by name, called once with a copy of ``chunk.options``."""
    if not isinstance(kind, Python):
        raise TypeError(f"the python: builder was handed the {kind.name} chunker")
    checker = Checker(kind.spec, params.source)
    factory = load(kind, checker)
    with user_code(checker, "the factory", "fix the factory; re-run with --debug for its traceback"):
        made = factory(copy.deepcopy(dict(params.options)))
    return PluginSplitter(made, checker)
