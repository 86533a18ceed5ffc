""""Did you mean": the known name, or the existing path, nearest to one that was misspelt.

Used where a typo is the likely reason a name is unknown: a params key, a judgments file, a corpus
folder, a document. Only a close match is offered (difflib's ratio of at least 0.6); with none, the
message says nothing more.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable
from pathlib import Path

CUTOFF = 0.6
"""The least similarity (difflib's ratio, 2M / T) a name needs to be offered."""

LISTED = 10_000
"""A folder with more entries than this is not searched for a near name: the typo is not worth the listing."""


def nearest(name: str, known: Iterable[str]) -> str | None:
    """The name of ``known`` closest to ``name``, if one is close."""
    near = difflib.get_close_matches(name, sorted(set(known)), n=1, cutoff=CUTOFF)
    return near[0] if near else None


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``; did you mean 'X'?`` for the closest known name, or nothing."""
    near = nearest(name, known)
    return f"; did you mean {near!r}?" if near is not None else ""


def near_path(path: str | Path) -> Path | None:
    """An existing path that ``path`` (which does not exist) is one typo or more away from, part by part.

    From the root down, each part that does not exist is replaced by the closest name in its folder;
    the result is offered only if it exists.
    """
    given = Path(path)
    current = Path(given.anchor) if given.is_absolute() else Path()
    changed = False
    for part in given.parts[1:] if given.is_absolute() else given.parts:
        candidate = current / part
        if part in (".", "..") or os.path.lexists(candidate):
            current = candidate
            continue
        try:
            with os.scandir(current if str(current) else ".") as listing:
                names = [entry.name for _, entry in zip(range(LISTED + 1), listing, strict=False)]
        except OSError:
            return None
        if len(names) > LISTED:
            return None
        near = nearest(part, (n for n in names if n.startswith(".") == part.startswith(".")))
        if near is None:
            return None
        current, changed = current / near, True
    return current if changed and current.exists() else None


def near_path_text(path: str | Path) -> str:
    """``; did you mean 'X'?`` for :func:`near_path`, or nothing."""
    near = near_path(path)
    return f"; did you mean {near.as_posix()!r}?" if near is not None else ""
