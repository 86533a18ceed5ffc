"""Text from outside (documents, judgments, queries, runs): decoded strictly on the way in, data on the way out.

In. One policy for every text file users write: UTF-8, no byte order mark, LF line endings. Each of these files
is hashed over its raw bytes (corpus_hash, judgments_hash, the external run's SHA-256 in run.json), so repairing
a file silently would let two runs that read different bytes claim the same input. Refusing costs the user one
re-save, and the message says how.

Out. Text from a corpus, a query or a model is data wherever groundkit writes it; it is not refused at load,
because imported datasets hold such characters. Three rules, one per medium, each a pure function:

* Markdown (:func:`markdown_text`): line breaks and control characters become a space; ``&``, ``<`` and ``>``
  become entities; every other ASCII punctuation character (those CommonMark lets a backslash escape) is
  backslash-escaped; an ``@`` is followed by a zero-width space, so it cannot start a mention. Text in a code
  span goes through :func:`markdown_code`.
* A terminal (:func:`terminal_text`): C0 and C1 controls (U+009B is a CSI too), DEL and the bidirectional
  overrides and isolates (U+202A to U+202E, U+2066 to U+2069) are written as Python's ``repr`` writes them
  (``\\x1b``, ``\\n``, ``\\u202e``); everything else is left as it is.
* A sheet (:func:`sheet_cell`, read back by :func:`sheet_value`; :func:`sheet_csv` writes a whole CSV): a cell
  that begins with ``=``, ``+``, ``-``, ``@``, TAB, CR or an apostrophe gets one apostrophe in front, so no
  spreadsheet reads it as a formula; the read-back removes exactly one leading apostrophe, so every cell
  round-trips byte for byte.
"""

from __future__ import annotations

import csv
import io
import re
import textwrap
from collections.abc import Iterable, Iterator, Sequence
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


def check_utf8_lf(path: str | Path, data: bytes, *, error: type[InputError], hashed_as: str) -> None:
    """:func:`decode_utf8_lf`'s checks without keeping the text: ASCII bytes without CR pass without decoding."""
    if not data.isascii() or b"\r" in data:
        decode_utf8_lf(path, data, error=error, hashed_as=hashed_as)


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


# --- out: text from outside shown as data --------------------------------------------------------------------------

_BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_CONTROLS = "".join(map(chr, [*range(0x20), 0x7F, *range(0x80, 0xA0)])) + _BIDI
"""What never reaches a terminal or Markdown raw: C0, DEL, C1 and the bidirectional overrides and isolates."""

_TERMINAL = {ord(c): repr(c)[1:-1] for c in _CONTROLS}
_MARKDOWN: dict[int, str] = {ord(c): " " for c in _CONTROLS + "\u2028\u2029"}
_MARKDOWN.update({ord(c): f"\\{c}" for c in "!\"#$%'()*+,-./:;=?[\\]^_`{|}~"})
_MARKDOWN.update({ord("&"): "&amp;", ord("<"): "&lt;", ord(">"): "&gt;", ord("@"): "\\@\u200b"})

SHEET_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "'")
"""The first characters that make a spreadsheet read a cell as a formula (the apostrophe: so that it round-trips)."""


def terminal_text(text: str) -> str:
    """``text`` safe to print: control and bidirectional characters written as ``repr`` writes them."""
    return text.translate(_TERMINAL)


TERMINAL_WIDTH = 100
"""The columns every line groundkit prints fits in."""


def terminal_lines(text: str, width: int = TERMINAL_WIDTH) -> list[str]:
    """``text`` (one message) escaped as :func:`terminal_text` escapes it, as lines of at most ``width`` columns,
    continued lines indented two spaces.

    Words are not broken: a path longer than a line stays whole on a line of its own, so it can still be copied.
    """
    return textwrap.wrap(terminal_text(text), width, subsequent_indent="  ", break_long_words=False,
                         break_on_hyphens=False, replace_whitespace=False, drop_whitespace=True) or [""]


def markdown_text(text: str) -> str:
    """``text`` as Markdown that renders as exactly this text (line breaks and controls as spaces), no markup."""
    return text.translate(_MARKDOWN)


def markdown_code(text: str) -> str:
    """``text`` as a Markdown code span: fenced by more backticks than it holds in a row, controls as spaces."""
    plain = text.translate({ord(c): " " for c in _CONTROLS + "\u2028\u2029"})
    longest = max((len(run) for run in re.findall("`+", plain)), default=0)
    fence = "`" * (longest + 1)
    padded = f" {plain} " if plain.startswith("`") or plain.endswith("`") or not plain.strip() else plain
    return f"{fence}{padded}{fence}"


def sheet_cell(text: str) -> str:
    """``text`` as a spreadsheet cell: one apostrophe in front when it begins like a formula (or an apostrophe)."""
    return "'" + text if text.startswith(SHEET_FORMULA_STARTS) else text


def sheet_value(cell: str) -> str:
    """What :func:`sheet_cell` was given: the cell less exactly one leading apostrophe."""
    return cell[1:] if cell.startswith("'") else cell


def sheet_csv(rows: Iterable[Sequence[object]]) -> str:
    """A CSV sheet (RFC 4180 quoting, LF line ends), every text cell through :func:`sheet_cell`; numbers as they are.

    Read it back with ``csv.reader(io.StringIO(text, newline=""))`` and :func:`sheet_value` on each text cell. A
    cell holding CR is quoted: ``csv.writer`` quotes only the characters of its line terminator, and a bare CR
    left unquoted would end the row for every reader.
    """
    out = []
    for row in rows:
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="\r\n").writerow([sheet_cell(c) if isinstance(c, str) else c for c in row])
        out.append(buffer.getvalue()[:-2] + "\n")
    return "".join(out)
