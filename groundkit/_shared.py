"""What one in-process run reads and derives once for all of its steps.

DVC runs each stage in a process of its own, so each stage reads the corpus, parses what the stage
before it wrote, and tokenizes texts again. ``groundkit run`` calls the same steps in one process
(pipeline/runner.py) inside :func:`sharing`, and there that work is done once: a step keeps what it
read or derived in a named table, under a key holding everything the value depends on, and a later
step asking with the same key gets the same value. The tables are:

* ``parses`` (artifacts.py): an artifact's parse, keyed by the SHA-256 of its bytes and the reader;
  the step that wrote the bytes leaves what it wrote there, so that no step parses them at all;
* ``corpus`` (corpus/documents.py): the corpus as read, so every step sees the same snapshot;
* ``judgments`` (corpus/judgments.py): a judgments file's parse, keyed by the SHA-256 of its bytes;
* ``tokens`` (corpus/tokenizing.py): the tokens of a text under a tokenizer, up to a budget;
* ``digests`` (artifacts.py): the SHA-256 of each file the run wrote or hashed, with the file's identity
  (device, inode, size, times), so that an unchanged artifact is checked against its seal unread.

Values in the tables are shared between steps: they are frozen records and tuples, and readers hand
out copies of the containers they return. Each thread has its own tables, so runs in threads of one
process share nothing. Outside the block nothing is kept, so a long-lived process
holds no corpus it has finished with. This module imports only the standard library, so a stage
pays nothing for it.

:func:`fewer_collections` is for any process running steps, in-process or as a DVC stage.
"""

from __future__ import annotations

import contextlib
import contextvars
import gc
import threading
from collections.abc import Iterator
from typing import Any

# Per thread (a ContextVar): two runs in threads of one process must never see each other's tables, and
# when the last block ends nothing may stay behind for a later run to read.
_tables: contextvars.ContextVar[dict[str, dict[Any, Any]] | None] = contextvars.ContextVar("groundkit_shared",
                                                                                            default=None)


@contextlib.contextmanager
def sharing() -> Iterator[None]:
    """Within the block, steps share what they read and derive (see the module's docstring); nests."""
    outer = _tables.get()
    token = _tables.set({} if outer is None else outer)
    try:
        yield
    finally:
        _tables.reset(token)


def table(name: str) -> dict[Any, Any] | None:
    """The run's table ``name`` (created empty on first use), or None outside :func:`sharing`."""
    tables = _tables.get()
    if tables is None:
        return None
    return tables.setdefault(name, {})


YOUNG_COLLECTION = 1_000_000
"""Allocations between two collections of the youngest generation while steps run (CPython's default is 700)."""


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """Within the block, the cyclic garbage collector runs about a thousand times less often.

    A step makes millions of small containers and keeps most of them to its end (a BEIR run at depth
    1000 holds 300,000 ranked pairs), and at CPython's default threshold the collector walks them
    about 800 times a run: a tenth of its time, spent finding no garbage (a SciFact run leaves a few
    hundred objects in cycles). Cycles are still collected, only later. The threshold is the process's:
    blocks in several threads overlap, and the last one to end restores what the first one found.
    """
    global _collecting_less, _threshold_before
    with _threshold_lock:
        if _collecting_less == 0:
            _threshold_before = gc.get_threshold()
            gc.set_threshold(max(YOUNG_COLLECTION, _threshold_before[0]), *_threshold_before[1:])
        _collecting_less += 1
    try:
        yield
    finally:
        with _threshold_lock:
            _collecting_less -= 1
            if _collecting_less == 0:  # the last block out restores what the first one found
                gc.set_threshold(*_threshold_before)


_threshold_lock = threading.Lock()
_collecting_less = 0
_threshold_before: tuple[int, ...] = gc.get_threshold()
