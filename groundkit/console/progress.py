"""Progress bars for long steps: on stderr when it is a terminal, nothing otherwise.

A DVC stage run from a terminal shows how far chunking, indexing or retrieval
has got; the same stage run by CI, by a test or with stderr redirected writes
nothing extra, so logs and captured output stay exactly as before. tqdm is
imported only when a bar is actually drawn, keeping it off every stage's
import path.

Use :func:`track` to wrap an iterable, or :func:`bar` for work counted in
blocks (``with bar(total=n, desc="index") as b: ... b.update(k)``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

# A bar appears only once a step has run this long, so quick steps on a small
# corpus stay silent even on a terminal. Tests set it to 0.
DELAY_S = 0.5


def enabled() -> bool:
    """True when stderr is a terminal (the only case in which bars are drawn)."""
    stream = sys.stderr
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stream
        return False


class _Silent:
    """Stands in for a tqdm bar when there is no terminal: accepts updates, draws nothing."""

    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self) -> _Silent:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def _tqdm(**kwargs: Any) -> Any:
    from tqdm import tqdm  # imported lazily: only a terminal session pays for it

    return tqdm(file=sys.stderr, delay=DELAY_S, leave=False, dynamic_ncols=True, **kwargs)


def bar(*, total: int | None, desc: str, unit: str = "it") -> Any:
    """A bar to ``update(n)`` by hand (a context manager), or a silent stand-in."""
    if not enabled():
        return _Silent()
    return _tqdm(total=total, desc=desc, unit=unit)


def track(iterable: Iterable[T], *, desc: str, total: int | None = None, unit: str = "it") -> Iterator[T] | Iterable[T]:
    """``iterable`` itself, wrapped in a bar when stderr is a terminal."""
    if not enabled():
        return iterable
    return _tqdm(iterable=iterable, total=total, desc=desc, unit=unit)
