"""Decoding the text files users write (documents, judgments, external runs) into stable, comparable strings.

One policy for all of them: UTF-8, no byte order mark, LF line endings. Each
of these files is hashed over its raw bytes (corpus_hash, judgments_hash, the
external run's SHA-256 in run.json), so repairing a file silently would let
two runs that read different bytes claim the same input. Refusing costs the
user one re-save, and the message says how.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from groundkit.errors import InputError

BOM = b"\xef\xbb\xbf"


def decode_utf8_lf(path: str | Path, data: bytes, *, error: type[InputError], hashed_as: str) -> str:
    """Decode UTF-8 without BOM and with LF line endings, or raise ``error`` naming the line.

    All three are rejected rather than repaired because ``hashed_as`` (corpus_hash or
    judgments_hash) is taken over the raw bytes: a silent repair would compare
    runs whose inputs differ.
    """
    if data.startswith(BOM):
        raise bom_error(path, error)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_utf8(path, error, data[exc.start], exc.start, data.count(b"\n", 0, exc.start) + 1) from None
    if "\r" in text:
        raise _carriage_return(path, error, hashed_as, text.count("\n", 0, text.index("\r")) + 1)
    return text


def utf8_lf_lines(path: str | Path, handle: BinaryIO, *, error: type[InputError],
                  hashed_as: str) -> Iterator[tuple[int, str]]:
    """Each line's number and text (without its LF), decoded one at a time under :func:`decode_utf8_lf`'s policy.

    For files read as a stream: a bad line near the top is reported without reading the rest.
    """
    offset = 0
    for number, raw in enumerate(handle, start=1):
        # A multi-byte UTF-8 character never contains the byte 0x0a, so splitting bytes at LF is safe.
        data = raw.removesuffix(b"\n")
        if number == 1 and data.startswith(BOM):
            raise bom_error(path, error)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _not_utf8(path, error, data[exc.start], offset + exc.start, number) from None
        if "\r" in text:
            raise _carriage_return(path, error, hashed_as, number)
        offset += len(raw)
        yield number, text


def bom_error(path: str | Path, error: type[InputError]) -> InputError:
    """The refusal of a file that starts with a byte order mark: every reader of text files says it alike."""
    return error(path, "starts with a UTF-8 byte order mark, which would become part of the text",
                 fix="save the file as UTF-8 without BOM", line=1)


def _not_utf8(path: str | Path, error: type[InputError], byte: int, offset: int, line: int) -> InputError:
    return error(path, f"is not valid UTF-8 (byte 0x{byte:02x} at offset {offset})",
                 fix="re-encode the file as UTF-8", line=line)


def _carriage_return(path: str | Path, error: type[InputError], hashed_as: str, line: int) -> InputError:
    return error(
        path,
        f"has CRLF (or CR) line endings; character offsets and {hashed_as} would then depend on "
        "the checkout's line-ending settings, so runs would not compare across machines",
        fix="convert it to LF (e.g. `sed -i 's/\\r$//' FILE`) and keep "
        "`* text=auto eol=lf` in .gitattributes so git checks it out with LF everywhere",
        line=line,
    )
