"""Decoding the text files users write (documents, judgments) into stable, comparable strings."""

from __future__ import annotations

from pathlib import Path

from groundkit.errors import InputError


def decode_utf8_lf(path: str | Path, data: bytes, *, error: type[InputError], hashed_as: str) -> str:
    """Decode UTF-8 without BOM and with LF line endings, or raise ``error`` naming the line.

    All three are rejected rather than repaired because ``hashed_as`` (corpus_hash or
    judgments_hash) is taken over the raw bytes: a silent repair would compare
    runs whose inputs differ.
    """
    if data.startswith(b"\xef\xbb\xbf"):
        raise error(
            path,
            "starts with a UTF-8 byte order mark, which would become part of the text",
            fix="save the file as UTF-8 without BOM",
            line=1,
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(
            path,
            f"is not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})",
            fix="re-encode the file as UTF-8",
            line=data.count(b"\n", 0, exc.start) + 1,
        ) from None
    if "\r" in text:
        raise error(
            path,
            f"has CRLF (or CR) line endings; character offsets and {hashed_as} would then depend on "
            "the checkout's line-ending settings, so runs would not compare across machines",
            fix="convert it to LF (e.g. `sed -i 's/\\r$//' FILE`) and keep "
            "`* text=auto eol=lf` in .gitattributes so git checks it out with LF everywhere",
            line=text.count("\n", 0, text.index("\r")) + 1,
        )
    return text
