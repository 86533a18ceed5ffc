"""Lines and records: the deterministic text of every artifact, and the strict readers of it.

Writers are deterministic: sorted keys, floats at ``FLOAT_DIGITS`` decimals, LF line endings. Readers
validate every record and report the line of the first bad one: an artifact that was truncated or edited
by hand is an error, not something to skip. A line-oriented artifact a later stage reads is sealed
(groundkit/artifacts/seals.py) and checked against its seal before any record is handed out.

These are the plain readers and writers: each read hashes and parses the file. One ``groundkit run``
reads through its store instead (groundkit/pipeline/store.py), which hands back what the run itself
wrote.
"""

from __future__ import annotations

import enum
import json
import math
import types
import typing
from collections.abc import Iterable, Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import to_json

from groundkit.artifacts.atomic import atomic_write_bytes
from groundkit.artifacts.seals import Digest, check_seal, file_sha256
from groundkit.errors import ArtifactError
from groundkit.inputs.validation import describe

M = TypeVar("M", bound=BaseModel)

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


_LINE = json.JSONEncoder(sort_keys=True, ensure_ascii=False)  # json.dumps would build one per call
_SCALARS = (str, int, bool, type(None))


def model_line(model: BaseModel) -> str:
    """One model as canonical single-line JSON: keys sorted, ``", "`` and ``": "`` between them, non-ASCII
    characters as themselves, floats rounded to ``FLOAT_DIGITS`` (and refused if not finite).

    A record of strings and integers only (a document, a chunk) is written a value at a time by
    pydantic-core's serializer, which escapes strings exactly as ``json`` does (tests/test_lines.py
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
    if not reads_back_equal(type(model)):
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



def model_lines(records: Iterable[BaseModel]) -> bytes:
    """Records as the text of a JSONL artifact: one :func:`model_line` each, LF-terminated, UTF-8."""
    pieces: list[bytes] = []
    for record in records:
        pieces += _model_pieces(record)
        pieces.append(b"\n")
    return b"".join(pieces)


def write_models(path: str | Path, records: Sequence[M], model: type[M]) -> str:
    """Write ``records`` as a sealed JSONL artifact of ``model``; return the digest of the bytes written."""
    digest = atomic_write_bytes(path, model_lines(records), seal=True)  # a corpus's text is copied once
    assert digest is not None
    return digest


@cache
def reads_back_equal(model: type[BaseModel]) -> bool:
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
        return isinstance(annotation, type) and issubclass(annotation, BaseModel) and reads_back_equal(annotation)

    return all(plain(field.annotation) for field in model.model_fields.values())


_CONTAINERS = (list, tuple, dict, set, frozenset, typing.Union, types.UnionType)


def artifact_bytes(path: Path, producer: str, *, sealed: bool) -> tuple[bytes, str | None]:
    """The artifact's bytes, and their SHA-256 when ``sealed`` (checked against the seal)."""
    if not path.is_file():
        raise ArtifactError(path, "artifact is missing", fix=f"run the {producer} stage first (dvc repro)")
    data = path.read_bytes()
    return data, check_seal(path, data, producer) if sealed else None


def decoded(path: Path, data: bytes, producer: str) -> str:
    """An artifact's bytes as text: UTF-8, ending in a newline (or empty)."""
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


def read_text(path: str | Path, producer: str, *, sealed: bool = False) -> str:
    """An artifact's text, checked against its seal with ``sealed``."""
    path = Path(path)
    return decoded(path, artifact_bytes(path, producer, sealed=sealed)[0], producer)


def read_models(path: str | Path, model: type[M], *, producer: str, sealed: bool = True) -> list[M]:
    """Read a sealed JSONL artifact of ``model`` records, failing on the first bad line."""
    path = Path(path)
    return list(parse_models(path, read_text(path, producer, sealed=sealed), model, producer))


def parse_models(path: Path, text: str, model: type[M], producer: str) -> tuple[M, ...]:
    """The records of an artifact's text, each validated; the first bad one is an error naming its line."""
    records = []
    for number, line in enumerate(text.split("\n")[:-1], start=1):
        try:
            records.append(model.model_validate_json(line))
        except ValidationError as exc:
            raise _bad_record(path, exc, producer, number) from None
    return tuple(records)  # records are frozen models: a tuple of them can be shared


def _bad_record(path: Path, exc: ValidationError, producer: str, number: int) -> ArtifactError:
    key, problem = describe(exc)
    return ArtifactError(
        path,
        f"record is invalid ({f'{key}: ' if key else ''}{problem}); the artifact was truncated or edited by hand",
        fix=f"delete it and re-run the {producer} stage (dvc repro -f -s {producer})",
        line=number,
    )


def iter_models(path: str | Path, model: type[M], *, producer: str, digest: Digest = file_sha256) -> Iterator[M]:
    """:func:`read_models` one record at a time, for artifacts too large to hold.

    The seal is checked first, reading the file in blocks, so a truncated or edited file fails
    before any record is handed out, with the same messages as :func:`read_models`.
    """
    path = Path(path)
    if not path.is_file():
        raise ArtifactError(path, "artifact is missing", fix=f"run the {producer} stage first (dvc repro)")
    check_seal(path, None, producer, digest)
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
                raise _bad_record(path, exc, producer, number) from None


def read_json(path: str | Path, *, producer: str, sealed: bool = False) -> Any:
    """Read a JSON artifact (checked against its seal first, with ``sealed``)."""
    path = Path(path)
    text = read_text(path, producer, sealed=sealed)
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
    return read_text(path, producer, sealed=sealed).split("\n")[:-1]

