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

Inside :func:`shared_reads` (``groundkit run`` evaluates in one process), an artifact read a second
time with the same reader and arguments is not parsed again: its bytes are still read and hashed,
and the parse of identical bytes is reused. DVC's stages are processes of their own and share nothing.

Everything written here gets the permissions a plain ``open()`` or
``mkdir()`` would give under the caller's umask (``tempfile`` would make it
private to its owner, unreadable by a teammate or a CI artifact store), and an
``OSError`` names the artifact, not the temporary file it was written through.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import math
import os
import secrets
import shutil
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

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
    """SHA-256 of a file's bytes, read in 1 MiB blocks so large arrays never sit in memory twice."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def seal_path(path: str | Path) -> Path:
    """Where the seal of artifact ``path`` lives: ``NAME.sha256`` beside it."""
    path = Path(path)
    return path.with_name(f"{path.name}.sha256")


def atomic_write_text(path: str | Path, text: str, *, seal: bool = False) -> None:
    """Write ``text`` (UTF-8, LF) to ``path`` via a temporary file and a rename.

    With ``seal``, also write ``NAME.sha256`` so that readers can tell a complete file from a truncated one.
    """
    path = Path(path)
    _atomic_write(path, text)
    if seal:
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        _atomic_write(seal_path(path), f"{digest}  {path.name}\n")


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


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = new_file(path.parent, f".{path.name}.", ".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise relocated(exc, tmp, path) from exc
        raise


def atomic_write_lines(path: str | Path, lines: Iterable[str], *, seal: bool = False) -> None:
    """Write one record per line, each terminated by LF (and the seal, with ``seal``)."""
    atomic_write_text(path, "".join(f"{line}\n" for line in lines), seal=seal)


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
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError):
            raise relocated(exc, tmp, path) from exc
        raise


def model_line(model: BaseModel) -> str:
    """One model as canonical single-line JSON."""
    return json.dumps(round_floats(model.model_dump(mode="json")), sort_keys=True, ensure_ascii=False)


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


# (sha256 of the bytes, the reader's key) -> what the reader made of them; None outside shared_reads().
_parses: dict[tuple[str, Any], Any] | None = None


@contextlib.contextmanager
def shared_reads() -> Iterator[None]:
    """Within the block, reuse the parse of an artifact whose bytes, reader and arguments were seen before.

    Each step of a run re-reads what the step before it wrote, as a DVC stage must; in one process
    the second parse of the same bytes is waste (on a BEIR collection at depth 1000, re-reading the
    run costs more than retrieving it). The bytes are still read, hashed and checked every time, so
    a file changed in between is parsed afresh. Readers hand out copies of their containers.
    """
    global _parses
    outer = _parses
    _parses = {} if outer is None else outer
    try:
        yield
    finally:
        _parses = outer


def parsed(path: str | Path, producer: str, parse: Callable[[Path, str], T], key: Any, *, sealed: bool = True) -> T:
    """``parse(path, text)`` of a checked artifact, reused for identical bytes and ``key`` inside :func:`shared_reads`.

    ``key`` must hold every argument ``parse`` depends on besides the text (hashable).
    """
    path = Path(path)
    data, digest = _artifact_bytes(path, producer, sealed)
    if _parses is None:
        return parse(path, _decoded(path, data, producer))
    memo = (digest or hashlib.sha256(data).hexdigest(), key)  # a sealed file's bytes were hashed already
    if memo not in _parses:
        _parses[memo] = parse(path, _decoded(path, data, producer))
    result: T = _parses[memo]
    return result


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
    _check_seal(path, None, producer)
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


def read_json(path: str | Path, *, producer: str) -> Any:
    """Read a JSON artifact."""
    path = Path(path)
    text = _artifact_text(path, producer)
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
