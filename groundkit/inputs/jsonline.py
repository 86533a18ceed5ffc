"""One strict JSON reader for the line-oriented files users write (judgments, external runs, BEIR records).

``json.loads`` accepts things that later break groundkit far from the line that caused them, or
that silently change a value:

* a key written twice in one object (``{"query": "a", "query": "b"}``) keeps the last value;
* a lone surrogate escape (``"\\ud800"``) decodes to a string that cannot be written back as UTF-8;
* ``NaN``, ``Infinity`` and ``1e400`` (which overflows to infinity) are not JSON numbers a record can use;
* very deep nesting raises ``RecursionError``, and an integer of thousands of digits ``ValueError``
  (Python's int-to-string limit), neither of which is a ``JSONDecodeError``.

``loads_line`` turns each of these into :class:`JSONLineError`, a one-sentence problem that the
caller wraps in its own ``InputError`` with the file and line.
"""

from __future__ import annotations

import json
import math
import unicodedata
from typing import Any

from groundkit.errors import JSONLineError


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    record: dict[str, Any] = {}
    for key, value in pairs:
        if key in record:
            raise JSONLineError(f"key {key!r} appears twice in one object; JSON keeps only the last value, so "
                                "one of them would be silently ignored")
        record[key] = value
    return record


def _no_constants(name: str) -> Any:
    raise JSONLineError(f"{name} is not a JSON number; write a finite number")


def _check_values(value: Any) -> None:
    """Refuse lone surrogates (they cannot be encoded as UTF-8) and non-finite floats, iteratively."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            raise JSONLineError("a number is too large to represent (it overflows to infinity); write a finite number")
        if isinstance(item, str):
            if item.isascii():
                continue
            try:
                item.encode("utf-8")  # in C: a whole SQuAD file's text is checked in milliseconds
                continue
            except UnicodeEncodeError:
                pass
            for position, char in enumerate(item):
                if "\ud800" <= char <= "\udfff":
                    raise JSONLineError(
                        f"a string holds a lone surrogate U+{ord(char):04X} (an escape like \\ud800 without its "
                        f"pair) at position {position + 1}; it is not a character and cannot be written as UTF-8")
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def loads_line(line: str) -> Any:
    """Parse one JSON value strictly.

    Raises:
        JSONLineError: invalid JSON, a duplicate key, a lone surrogate, nesting too deep, or a number
            Python cannot hold; the message is one sentence without the file or line.
    """
    try:
        value = json.loads(line, object_pairs_hook=_no_duplicate_keys, parse_constant=_no_constants)
    except JSONLineError:
        raise
    except json.JSONDecodeError as exc:
        # A whole-file document (a SQuAD file) spans lines; a JSONL line is always line 1 of itself.
        place = f"line {exc.lineno}, column {exc.colno}" if exc.lineno > 1 else f"column {exc.colno}"
        raise JSONLineError(f"invalid JSON: {exc.msg} ({place})") from None
    except RecursionError:
        raise JSONLineError("JSON nested too deeply to read; a record is a flat object") from None
    except ValueError:  # an integer longer than Python's int-to-string limit (4300 digits by default)
        raise JSONLineError("a number has thousands of digits, more than can be read; write a number of "
                            "ordinary size") from None
    _check_values(value)
    return value


def describe_char(char: str) -> str:
    """``U+00A0 NO-BREAK SPACE``: a character as a person can look it up."""
    return f"U+{ord(char):04X} {unicodedata.name(char, 'unnamed character')}"
