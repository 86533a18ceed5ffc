"""Reading and writing build artifacts: atomically, deterministically, strictly.

Writers go to a temporary file in the destination directory and rename it
into place, so a stage killed mid-write never leaves a half-written file a
later stage could read. Readers validate every record and report the line of
the first bad one: an artifact that was truncated or edited by hand is an
error, not something to skip.

Line-oriented artifacts that a later stage reads are also *sealed*: a
``NAME.sha256`` file beside them, in ``sha256sum`` format, holds the digest of
the bytes the producing stage wrote. Record checks alone cannot see a file cut
at a line boundary or a line deleted by hand (the rest still parses); the seal
can, and ``sha256sum -c`` checks it without groundkit.

Inside :func:`groundkit._shared.sharing` (``groundkit run`` evaluates in one process), an artifact
is parsed at most once: the parse of identical bytes by the same reader is reused, and the step that
writes a sealed artifact leaves what it wrote (:func:`write_models`, or ``shares``), so that a later
step's read is no parse at all. Every read is checked against the seal: by hashing the bytes, or, for a
file in the run's scratch folder unchanged since this process wrote it, by the digest it recorded then
(:func:`remembered_digest`). DVC's stages are processes of their own and share nothing.

Everything written here gets the permissions a plain ``open()`` or
``mkdir()`` would give under the caller's umask (``tempfile`` would make it
private to its owner, unreadable by a teammate or a CI artifact store), and an
``OSError`` names the artifact, not the temporary file it was written through.
"""

from __future__ import annotations

import contextlib
import enum
import errno
import hashlib
import json
import math
import os
import secrets
import shutil
import stat
import types
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import to_json

from groundkit import _shared
from groundkit._validation import describe
from groundkit.errors import ArtifactError

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")

FLOAT_DIGITS = 6


def round_floats(value: Any) -> Any:
    """Round every float in a JSON-like value to ``FLOAT_DIGITS`` decimals."""
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"refusing to write a non-finite number: {value}")
        return round(value, FLOAT_DIGITS)
    if isinstance(value, dict):
        return {k: round_floats(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [round_floats(v) for v in value]
    return value


def dumps_json(value: Any) -> str:
    """Deterministic JSON: sorted keys, rounded floats, two-space indent, trailing newline."""
    return json.dumps(round_floats(value), sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def csv_text(rows: Iterable[dict[str, Any]], columns: list[str]) -> str:
    """CSV with a header, LF line endings and floats at ``FLOAT_DIGITS`` decimals, for ``dvc plots``."""
    def cell(value: Any) -> str:
        return f"{value:.{FLOAT_DIGITS}f}" if isinstance(value, float) else str(value)

    lines = [",".join(columns)]
    lines.extend(",".join(cell(row[c]) for c in columns) for row in rows)
    return "\n".join(lines) + "\n"


def file_sha256(path: str | Path) -> str:
    """SHA-256 of a file's bytes, read in 1 MiB blocks so large arrays never sit in memory twice.

    Inside :func:`groundkit._shared.sharing`, a file this process wrote or hashed since, and that has not
    changed, is not read again: see :func:`remembered_digest`.
    """
    with Path(path).open("rb") as handle:
        stamp = os.fstat(handle.fileno())
        known = remembered_digest(stamp)
        if known is not None:
            return known
        digest = hashlib.sha256()
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
        # Remembered only if the file did not change while it was read.
        if _identity(os.fstat(handle.fileno())) == _identity(stamp):
            _remember(path, stamp, digest.hexdigest())
    return digest.hexdigest()


def remembered_digest(stamp: os.stat_result) -> str | None:
    """The SHA-256 this run recorded for the file ``stamp`` describes, if it is unchanged since; else None.

    One in-process run writes 60 MB of artifacts (a BEIR collection at depth 1000) and its later steps read
    them back, each step checking the bytes against their seal: hashing them again was a twentieth of the
    run. A file's identity is its device and inode, its size, and its modification and status-change times
    in nanoseconds, the test DVC and git apply before they hash a file. A write to the file moves both
    times (the status-change time cannot be set back from user space), unless it falls in the same clock
    tick as groundkit's own write on a kernel without fine-grained timestamps (Linux before 6.6): a file
    put in its place is another inode. So digests are recorded only inside
    :func:`groundkit._shared.sharing`, and only for files in the run's own scratch folder (see
    :func:`synced_later`), which this process created under a fresh name and no other process writes
    into. Outside it, for input files, and in DVC's stages (a process each), every read hashes.
    """
    digests = _shared.table("digests")
    if digests is None:
        return None
    known = digests.get((stamp.st_dev, stamp.st_ino))
    if known is None or known[0] != _identity(stamp):
        return None
    digest: str = known[1]
    return digest


def _identity(stamp: os.stat_result) -> tuple[int, int, int, int, int]:
    return (stamp.st_dev, stamp.st_ino, stamp.st_size, stamp.st_mtime_ns, stamp.st_ctime_ns)


def _remember(path: str | Path, stamp: os.stat_result, digest: str) -> None:
    """Record ``digest`` for the file at ``path`` as ``stamp`` describes it, if it lies in a scratch folder."""
    digests = _shared.table("digests")
    # Only the run's own scratch folder (synced_later's): no other process writes there, while a user may
    # well edit an input file in the same clock tick as groundkit read it.
    if digests is not None and _syncer_for(Path(path).parent) is not None:
        digests[(stamp.st_dev, stamp.st_ino)] = (_identity(stamp), digest)


def seal_path(path: str | Path) -> Path:
    """Where the seal of artifact ``path`` lives: ``NAME.sha256`` beside it."""
    path = Path(path)
    return path.with_name(f"{path.name}.sha256")


def atomic_write_text(path: str | Path, text: str, *, seal: bool = False,
                      shares: Callable[[], Mapping[Any, Any]] | None = None) -> None:
    """Write ``text`` (UTF-8, LF) to ``path`` via a temporary file and a rename.

    With ``seal``, also write ``NAME.sha256`` so that readers can tell a complete file from a truncated one.
    With ``shares`` too, inside :func:`groundkit._shared.sharing`: ``shares()`` maps reader keys (as
    :func:`parsed` takes them) to what those readers would make of ``text``, and is left for them, so that
    they need not parse it. The caller answers for the equality; the tests check each writer's.
    """
    atomic_write_bytes(path, text.encode("utf-8"), seal=seal, shares=shares)


def atomic_write_bytes(path: str | Path, data: bytes, *, seal: bool = False,
                       shares: Callable[[], Mapping[Any, Any]] | None = None) -> None:
    """:func:`atomic_write_text` of text already encoded (UTF-8, LF)."""
    path = Path(path)
    _atomic_write(path, data)
    if seal:
        digest = hashlib.sha256(data).hexdigest()
        _remember(path, os.stat(path), digest)  # a reader in this run checks the seal without reading it again
        _atomic_write(seal_path(path), f"{digest}  {path.name}\n".encode())
        parses = _shared.table("parses") if shares is not None else None
        if parses is not None and shares is not None:
            parses.update(((digest, key), value) for key, value in shares().items())


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


def atomic_write_lines(path: str | Path, lines: Iterable[str], *, seal: bool = False,
                       shares: Callable[[], Mapping[Any, Any]] | None = None) -> None:
    """Write one record per line, each terminated by LF (and the seal, with ``seal``; see
    :func:`atomic_write_text` for ``shares``)."""
    atomic_write_text(path, "".join(f"{line}\n" for line in lines), seal=seal, shares=shares)


def write_models(path: str | Path, records: Sequence[M], model: type[M]) -> None:
    """Write ``records`` as a sealed JSONL artifact of ``model``, one :func:`model_line` each.

    Inside :func:`groundkit._shared.sharing` the records themselves are left for :func:`read_models` and
    :func:`iter_models`: they were validated when they were made, and a record of a model without float
    fields reads back equal to itself (``model_line`` rounds floats, so a model with one is parsed again).
    """
    shares = None
    if _reads_back_equal(model) and all(type(record) is model for record in records):
        frozen = tuple(records)
        shares = lambda: {model: frozen}  # noqa: E731
    pieces: list[bytes] = []
    for record in records:
        pieces += _model_pieces(record)
        pieces.append(b"\n")
    atomic_write_bytes(path, b"".join(pieces), seal=True, shares=shares)  # a corpus's text is copied once


@cache
def _reads_back_equal(model: type[BaseModel]) -> bool:
    """Whether every field of ``model`` (and of the models inside it) survives ``model_line`` unchanged: it is
    built only of strings, ints, bools, enums, literals, None and models and containers of them (no float,
    which ``model_line`` rounds, and no ``Any``, which could hold one)."""
    def plain(annotation: Any) -> bool:
        origin = typing.get_origin(annotation)
        if origin is typing.Literal:
            return not any(isinstance(value, float) for value in typing.get_args(annotation))
        if origin is not None:
            return origin in _CONTAINERS and all(plain(a) for a in typing.get_args(annotation) if a is not Ellipsis)
        if annotation in (str, int, bool, type(None)):
            return True
        if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
            return True
        return isinstance(annotation, type) and issubclass(annotation, BaseModel) and _reads_back_equal(annotation)

    return all(plain(field.annotation) for field in model.model_fields.values())


_CONTAINERS = (list, tuple, dict, set, frozenset, typing.Union, types.UnionType)


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


_LINE = json.JSONEncoder(sort_keys=True, ensure_ascii=False)  # json.dumps would build one per call
_SCALARS = (str, int, bool, type(None))


def model_line(model: BaseModel) -> str:
    """One model as canonical single-line JSON: keys sorted, ``", "`` and ``": "`` between them, non-ASCII
    characters as themselves, floats rounded to ``FLOAT_DIGITS`` (and refused if not finite).

    A record of strings and integers only (a document, a chunk) is written a value at a time by
    pydantic-core's serializer, which escapes strings exactly as ``json`` does (tests/test_shared.py
    checks every code point) three times faster: a corpus is written twice a run, as documents and chunks.
    """
    return _model_bytes(model).decode("utf-8")


def _model_bytes(model: BaseModel) -> bytes:
    """:func:`model_line`, UTF-8 encoded (a record of scalars is serialised straight to bytes)."""
    return b"".join(_model_pieces(model))


def _model_pieces(model: BaseModel) -> list[bytes]:
    """:func:`_model_bytes` in pieces, for the caller to join with others: a record of scalars is each key
    (with the separators around it, made once per key) and each value serialised."""
    fields = model.model_dump(mode="json")
    if not _reads_back_equal(type(model)):
        return [_LINE.encode(round_floats(fields)).encode("utf-8")]
    if not fields or not all(type(value) in _SCALARS for value in fields.values()):
        return [_LINE.encode(fields).encode("utf-8")]
    pieces = [b"{"]
    for key in sorted(fields):
        pieces += (_KEYS.get(key) or _key(key), to_json(fields[key]), b", ")
    pieces[-1] = b"}"  # the last separator closes the record
    return pieces


def _key(key: str) -> bytes:
    _KEYS[key] = to_json(key) + b": "
    return _KEYS[key]


_KEYS: dict[str, bytes] = {}  # '"key": ' for each key of a record of scalars written so far


def _check_seal(path: Path, data: bytes | None, producer: str) -> str:
    """Compare ``path``'s seal with ``data`` (its bytes) or, when None, the file read in blocks; return the digest."""
    seal = seal_path(path)
    fix = f"delete it and re-run the {producer} stage (dvc repro -f -s {producer})"
    if not seal.is_file():
        raise ArtifactError(path, f"has no seal {seal.name} beside it, so its completeness cannot be checked", fix=fix)
    recorded = seal.read_text(encoding="utf-8", errors="replace").split(" ", 1)[0]
    digest = hashlib.sha256(data).hexdigest() if data is not None else file_sha256(path)
    if digest != recorded:
        raise ArtifactError(
            path,
            f"does not match the SHA-256 in {seal.name}: it was truncated or edited after the {producer} stage "
            "wrote it",
            fix=fix,
        )
    return digest


def parsed(path: str | Path, producer: str, parse: Callable[[Path, str], T], key: Any, *, sealed: bool = True,
           written: tuple[Any, Callable[[Any], T | None]] | None = None) -> T:
    """``parse(path, text)`` of a checked artifact, reused for identical bytes and ``key`` inside sharing.

    ``key`` must hold every argument ``parse`` depends on besides the text (hashable). ``written`` is
    ``(writer_key, check)``: when the step that wrote these very bytes left what it wrote under
    ``writer_key`` (see :func:`atomic_write_text`), ``check(value)`` stands in for the parse; it must apply
    every check ``parse`` applies that the writer does not guarantee, and return None when one fails, so
    that the text is parsed and the error names the line.
    """
    path = Path(path)
    parses = _shared.table("parses")
    if parses is None:
        return parse(path, _decoded(path, _artifact_bytes(path, producer, sealed)[0], producer))
    data: bytes | None = None
    digest = _unchanged_sealed(path, producer) if sealed else None
    if digest is None:
        data, digest = _artifact_bytes(path, producer, sealed)
        digest = digest or hashlib.sha256(data).hexdigest()  # a sealed file's bytes were hashed already
    memo = (digest, key)
    if memo not in parses:
        checked = None
        if written is not None and (digest, written[0]) in parses:
            checked = written[1](parses[(digest, written[0])])
        if checked is None:
            if data is None:  # read now, and checked against the seal as any read is
                data, _ = _artifact_bytes(path, producer, sealed)
            checked = parse(path, _decoded(path, data, producer))
        parses[memo] = checked
    result: T = parses[memo]
    return result


def _unchanged_sealed(path: Path, producer: str) -> str | None:
    """The SHA-256 of a sealed artifact this run wrote and nothing changed since, checked against its seal
    (see :func:`remembered_digest`); None when the file must be read and hashed."""
    try:
        stamp = os.stat(path)
    except OSError:
        return None  # missing, or unreadable: the full read says which, and how to fix it
    if not stat.S_ISREG(stamp.st_mode) or remembered_digest(stamp) is None:
        return None
    return _check_seal(path, None, producer)  # file_sha256 answers from the record: the seal file alone is read


def _artifact_text(path: Path, producer: str, sealed: bool = False) -> str:
    return _decoded(path, _artifact_bytes(path, producer, sealed)[0], producer)


def _artifact_bytes(path: Path, producer: str, sealed: bool) -> tuple[bytes, str | None]:
    """The artifact's bytes, and their SHA-256 when ``sealed`` (checked against the seal)."""
    if not path.is_file():
        raise ArtifactError(path, "artifact is missing", fix=f"run the {producer} stage first (dvc repro)")
    data = path.read_bytes()
    return data, _check_seal(path, data, producer) if sealed else None


def _decoded(path: Path, data: bytes, producer: str) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ArtifactError(
            path, "is not valid UTF-8; it was damaged or edited", fix=f"delete it and re-run the {producer} stage"
        ) from None
    if text and not text.endswith("\n"):
        raise ArtifactError(
            path,
            "does not end with a newline: it was truncated or edited by hand",
            fix=f"delete it and re-run the {producer} stage (dvc repro -f -s {producer})",
            line=text.count("\n") + 1,
        )
    return text


def read_models(path: str | Path, model: type[M], *, producer: str, sealed: bool = True) -> list[M]:
    """Read a sealed JSONL artifact of ``model`` records, failing on the first bad line."""
    return list(parsed(path, producer, lambda path, text: _models(path, text, model, producer), model, sealed=sealed))


def _models(path: Path, text: str, model: type[M], producer: str) -> tuple[M, ...]:
    records = []
    for number, line in enumerate(text.split("\n")[:-1], start=1):
        try:
            records.append(model.model_validate_json(line))
        except ValidationError as exc:
            key, problem = describe(exc)
            raise ArtifactError(
                path,
                f"record is invalid ({f'{key}: ' if key else ''}{problem}); the artifact was truncated or edited "
                "by hand",
                fix=f"delete it and re-run the {producer} stage (dvc repro -f -s {producer})",
                line=number,
            ) from None
    return tuple(records)  # records are frozen models: a tuple of them can be shared


def iter_models(path: str | Path, model: type[M], *, producer: str) -> Iterator[M]:
    """:func:`read_models` one record at a time, for artifacts too large to hold.

    The seal is checked first, reading the file in blocks, so a truncated or edited file fails
    before any record is handed out, with the same messages as :func:`read_models`.
    """
    path = Path(path)
    if not path.is_file():
        raise ArtifactError(path, "artifact is missing", fix=f"run the {producer} stage first (dvc repro)")
    digest = _check_seal(path, None, producer)
    parses = _shared.table("parses")
    if parses is not None and (digest, model) in parses:
        yield from parses[(digest, model)]  # what the writer wrote, in this process
        return
    fix = f"delete it and re-run the {producer} stage (dvc repro -f -s {producer})"
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise ArtifactError(path, "is not valid UTF-8; it was damaged or edited",
                                    fix=f"delete it and re-run the {producer} stage") from None
            if not line.endswith("\n"):
                raise ArtifactError(path, "does not end with a newline: it was truncated or edited by hand", fix=fix,
                                    line=number)
            try:
                yield model.model_validate_json(line)
            except ValidationError as exc:
                key, problem = describe(exc)
                raise ArtifactError(
                    path,
                    f"record is invalid ({f'{key}: ' if key else ''}{problem}); the artifact was truncated or "
                    "edited by hand",
                    fix=fix,
                    line=number,
                ) from None


def read_json(path: str | Path, *, producer: str, sealed: bool = False) -> Any:
    """Read a JSON artifact (checked against its seal first, with ``sealed``)."""
    path = Path(path)
    text = _artifact_text(path, producer, sealed)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ArtifactError(
            path,
            f"is not valid JSON ({exc.msg}); it was truncated or edited by hand",
            fix=f"delete it and re-run the {producer} stage",
            line=exc.lineno,
        ) from None


def read_lines(path: str | Path, *, producer: str, sealed: bool = True) -> list[str]:
    """Read a sealed line-oriented artifact, requiring the final newline."""
    return _artifact_text(Path(path), producer, sealed).split("\n")[:-1]
