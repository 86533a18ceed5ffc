"""Text from a corpus, a query log or a model, made safe where it goes: a terminal line and a sheet cell.

Two small rules of issue 35 ("Never silently wrong, round 3", item 6), kept here until they are unified
with the escaping module groundkit/inputs/text.py gains there; the behaviour is the same.
"""

from __future__ import annotations

import unicodedata

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r", "'")
"""A cell starting with one of these is taken for a formula (or a quoted one) by spreadsheets."""


def neutral_cell(text: str) -> str:
    """A sheet cell that no spreadsheet runs: an apostrophe before a leading = + - @ TAB CR or apostrophe.

    The apostrophe before an apostrophe keeps the rule reversible: :func:`read_cell` takes exactly one off.
    """
    return "'" + text if text.startswith(FORMULA_PREFIXES) else text


def read_cell(text: str) -> str:
    """The text :func:`neutral_cell` was given back from its cell."""
    if text.startswith("'") and text[1:].startswith(FORMULA_PREFIXES):
        return text[1:]
    return text


def on_terminal(text: str) -> str:
    """``text`` with every control character (ESC, CR, a line break...) shown as an escape, never sent raw."""
    if not any(unicodedata.category(c) == "Cc" for c in text):
        return text
    return "".join(c.encode("unicode_escape").decode("ascii") if unicodedata.category(c) == "Cc" else c
                   for c in text)
