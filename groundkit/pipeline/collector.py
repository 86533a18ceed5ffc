"""Fewer collections of the cyclic garbage collector while a step runs (in-process or as a DVC stage)."""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

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
