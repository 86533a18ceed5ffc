"""Writing files atomically: a temporary file or folder beside the destination, renamed into place.

A stage killed mid-write never leaves a half-written file a later stage could read. Everything
written here gets the permissions a plain ``open()`` or ``mkdir()`` would give under the caller's
umask (``tempfile`` would make it private to its owner, unreadable by a teammate or a CI artifact
store), and an ``OSError`` names the artifact, not the temporary file it was written through.

Durability: each file is ``fsync``ed before it is renamed into place, except inside a scratch folder
that :func:`synced_later` covers, where a background thread syncs each file as it is finished and
the folder's owner waits for all of them before publishing the folder (groundkit/artifacts/outputs.py).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import secrets
import shutil
from collections.abc import Callable, Iterable, Iterator
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import TypeVar

from groundkit.artifacts.seals import seal_path, seal_text

T = TypeVar("T")


def atomic_write_text(path: str | Path, text: str, *, seal: bool = False) -> str | None:
    """Write ``text`` (UTF-8, LF) to ``path`` via a temporary file and a rename.

    With ``seal``, also write ``NAME.sha256`` so that readers can tell a complete file from a truncated one,
    and return the digest.
    """
    return atomic_write_bytes(path, text.encode("utf-8"), seal=seal)


def atomic_write_bytes(path: str | Path, data: bytes, *, seal: bool = False) -> str | None:
    """:func:`atomic_write_text` of text already encoded (UTF-8, LF)."""
    path = Path(path)
    _atomic_write(path, data)
    if not seal:
        return None
    digest = hashlib.sha256(data).hexdigest()
    _atomic_write(seal_path(path), seal_text(path, digest).encode())
    return digest


def atomic_write_lines(path: str | Path, lines: Iterable[str], *, seal: bool = False) -> str | None:
    """Write one record per line, each terminated by LF (and the seal, with ``seal``)."""
    return atomic_write_text(path, "".join(f"{line}\n" for line in lines), seal=seal)


def _fresh_names(parent: Path, prefix: str, suffix: str) -> Iterator[Path]:
    for _ in range(100):
        yield parent / f"{prefix}{secrets.token_hex(4)}{suffix}"
    raise FileExistsError(errno.EEXIST, "no unused temporary name", str(parent))


def _create(parent: Path, prefix: str, suffix: str, make: Callable[[Path], T]) -> T:
    for candidate in _fresh_names(parent, prefix, suffix):
        try:
            return make(candidate)
        except FileExistsError:
            continue
        except OSError as exc:
            # The random name means nothing to the user; the directory that refused it does.
            raise OSError(exc.errno, exc.strerror, str(parent)) from exc
    raise AssertionError("unreachable: _fresh_names raises when it runs out")


def new_file(parent: Path, prefix: str, suffix: str = "") -> tuple[int, Path]:
    """Create and open an unused file in ``parent`` with the mode ``open()`` would give (``mkstemp`` gives 0600)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    return _create(parent, prefix, suffix, lambda path: (os.open(path, flags, 0o666), path))


def new_directory(parent: Path, prefix: str, suffix: str = "") -> Path:
    """Create an unused directory in ``parent`` with the mode ``mkdir()`` would give (``mkdtemp`` gives 0700)."""
    def make(path: Path) -> Path:
        path.mkdir(0o777)
        return path

    return _create(parent, prefix, suffix, make)


def relocated(exc: OSError, scratch: Path, final: Path) -> OSError:
    """``exc`` with paths inside ``scratch`` (or none at all) told as the ``final`` path they stand for.

    A user cannot act on the name of a temporary file that is already gone, and a failed ``write()`` names no
    file at all; the artifact being written is the path to report.
    """
    if exc.errno is None:
        return exc

    def tell(name: object) -> object:
        if name is None:
            return str(final)
        text = os.fsdecode(name) if isinstance(name, str | bytes) else str(name)
        inside = os.path.relpath(text, scratch)
        if inside == os.pardir or inside.startswith(os.pardir + os.sep):
            return text
        return str(final) if inside == os.curdir else str(final / inside)

    filename2 = None if exc.filename2 is None else tell(exc.filename2)
    if filename2 == tell(exc.filename):
        filename2 = None
    return OSError(exc.errno, exc.strerror, tell(exc.filename), None, filename2)


# Scratch folders whose files are made durable in the background (see synced_later), by real path.
_syncers: dict[str, _Syncer] = {}


class _Syncer:
    """One thread that ``fsync``s the files it is handed while the caller goes on computing."""

    def __init__(self) -> None:
        import queue
        import threading

        self._queue: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._failure: OSError | None = None
        self.synced: set[str] = set()
        self._thread = threading.Thread(target=self._work, name="groundkit-fsync", daemon=True)
        self._thread.start()

    def _work(self) -> None:
        while (path := self._queue.get()) is not None:
            try:
                _fsync_path(path)
                self.synced.add(path)
            except FileNotFoundError:
                self.synced.discard(path)  # removed since: the final sync_tree syncs whatever is there then
            except OSError as exc:
                # A failed fsync (a full disk the write did not see, an I/O error) is told once, to this
                # descriptor only: a later fsync would succeed with the data lost, so keep it for close().
                self._failure = self._failure or exc

    def add(self, path: str | Path) -> None:
        self._queue.put(os.fspath(path))

    def close(self) -> None:
        """Wait for every file handed over; raise the first ``fsync`` failure."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure


def _fsync_path(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _syncer_for(folder: Path) -> _Syncer | None:
    """The syncer of the scratch folder that ``folder`` is, or lies in; None when there is none."""
    if not _syncers:
        return None
    real = os.path.join(os.path.realpath(folder), "")  # roots end in a separator too
    # A copy: another thread's run may add or drop its own folder meanwhile.
    return next((syncer for root, syncer in list(_syncers.items()) if real.startswith(root)), None)


@contextlib.contextmanager
def synced_later(folder: Path) -> Iterator[Callable[[], None]]:
    """Within the block, files written into ``folder`` are made durable by a background thread, not each in turn.

    For a scratch folder that is published in one rename once every step is done (``_outputs.py``).
    Each artifact's own ``fsync`` made its step wait for the disk (20 times a run); here a thread syncs
    every file as it is finished (the index's arrays too) while the next step computes, and the yielded
    function, called before publishing, syncs every file in the folder and returns when all are durable.
    """
    root = os.path.join(os.path.realpath(folder), "")
    syncer = _syncers[root] = _Syncer()

    def sync() -> None:
        syncer.close()
        sync_tree(folder, skip=syncer.synced)

    try:
        yield sync
    finally:
        del _syncers[root]
        with contextlib.suppress(OSError):  # on the way out after a failure, which is the error to tell
            syncer.close()


def sync_tree(folder: Path, *, skip: AbstractSet[str] = frozenset()) -> None:
    """``fsync`` every regular file under ``folder`` but those in ``skip``: synced since they were last
    written (an artifact is only ever replaced whole, by a rename, never written into)."""
    for parent, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(parent, name)
            if path not in skip and not os.path.islink(path):
                _fsync_path(path)


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = new_file(path.parent, f".{path.name}.", ".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            syncer = _syncer_for(path.parent)
            if syncer is None:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
        if syncer is not None:
            syncer.add(path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise relocated(exc, tmp, path) from exc
        raise


@contextlib.contextmanager
def atomic_directory(path: str | Path) -> Iterator[Path]:
    """Yield a temporary directory that replaces ``path`` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = new_directory(path.parent, f".{path.name}.", ".tmp")
    try:
        yield tmp
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
        os.replace(tmp, path)
        syncer = _syncer_for(path.parent)
        if syncer is not None:
            for parent, _, names in os.walk(path):
                for name in names:
                    syncer.add(os.path.join(parent, name))
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError):
            raise relocated(exc, tmp, path) from exc
        raise
