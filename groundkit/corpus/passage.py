"""Documents and passages: the records relevance is decided on.

A :class:`Passage` is a ``[start, end)`` character range of one document. A
resolved gold span, a chunk and a passage of an external run are all
passages, and this module holds the one copy of what relevance rests on:
the overlap rule (:meth:`Passage.overlaps`), locating a text that must occur
exactly once (:func:`locate_once`, with hints when it almost occurs) and the
check that a document name is a safe corpus-relative path.

Identity is derived from content rather than drawn at random, so the same
corpus and parameters always produce the same ids and byte-identical
artifacts, which is what lets DVC cache stages by content hash.
"""

from __future__ import annotations

import bisect
import hashlib
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from operator import attrgetter
from pathlib import PurePosixPath
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from groundkit.artifacts.models import StrictRecord
from groundkit.inputs.jsonline import describe_char

ID_HEX_CHARS = 16


def content_id(*parts: str | int) -> str:
    """Return a short, stable id: the first 16 hex digits of SHA-256 over ``parts``.

    Parts are joined with NUL, which cannot occur in a path and is rejected in
    document text, so distinct part lists cannot collide by concatenation.
    """
    payload = "\0".join(str(part) for part in parts).encode("utf-8")
    return hashlib.sha256(payload).hexdigest()[:ID_HEX_CHARS]


class Document(StrictRecord):
    """One corpus document.

    Attributes:
        path: Corpus-relative POSIX path; the name judgments use.
        text: The full text, exactly as read (UTF-8, LF line endings).
        document_id: ``content_id(path, text)``.
    """

    path: str = Field(min_length=1)
    text: str
    document_id: str = ""

    @model_validator(mode="before")
    @classmethod
    def _derive_id(cls, data: object) -> object:
        # Derived or checked here, in one hashing: a path or text of another type fails validation anyway.
        if isinstance(data, dict) and isinstance(data.get("path"), str) and isinstance(data.get("text"), str):
            expected = content_id(data["path"], data["text"])
            if not data.get("document_id"):
                return {**data, "document_id": expected}
            if data["document_id"] != expected:
                raise ValueError(f"document_id {data['document_id']!r} does not match its content "
                                 f"(expected {expected!r})")
        return data


class Passage(StrictRecord):
    """The characters ``[start, end)`` of one document.

    Attributes:
        document: Corpus-relative path of the document.
        start: First character of the passage in the document text.
        end: One past the last character; ``start < end``.
    """

    document: str = Field(min_length=1)
    start: int = Field(ge=0)
    end: int = Field(gt=0)

    @model_validator(mode="after")
    def _non_empty(self) -> Passage:
        if self.start >= self.end:
            raise ValueError(f"[{self.start}, {self.end}) is not a non-empty range (start < end)")
        return self

    @property
    def length(self) -> int:
        """Characters in the passage."""
        return self.end - self.start

    @property
    def prefix_length(self) -> int:
        """Characters a reader reads before the passage's own (a chunk's context prefix); 0 for a plain passage."""
        return 0

    @property
    def read_length(self) -> int:
        """Characters a reader reads of the passage: its prefix, then its own. What chars@k and budgets count."""
        return self.prefix_length + self.end - self.start

    def overlaps(self, other: Passage, *, within: int | None = None) -> bool:
        """The relevance rule: True if both lie in the same document and share at least one character.

        ``within`` reads only this passage's first ``within`` characters (``within`` >= 1), as a reader
        whose context window cuts it does: no smaller passage is built, since a budget walk asks this of
        every passage it reads.
        """
        end = self.end if within is None or self.start + within > self.end else self.start + within
        return self.document == other.document and self.start < other.end and other.start < end


@cache
def _field_key(model: type[BaseModel], name: str) -> str:
    """The key a field has in the model's JSON: its alias if it has one."""
    return model.model_fields[name].alias or name


@cache
def _keys(model: type[BaseModel]) -> tuple[tuple[str, str], ...]:
    """``(name, JSON key)`` of an excerpt's document, start, end, text and passage_id fields."""
    return tuple((name, _field_key(model, name)) for name in ("document", "start", "end", "text", "passage_id"))


class Excerpt(Passage):
    """A passage with its text, named by content: what a ranking ranks.

    Attributes:
        text: ``document.text[start:end]``.
        passage_id: ``content_id(document, start, end, text)``, so a passage of an
            external run that equals one of groundkit's chunks gets that chunk's id.
    """

    text: str = Field(min_length=1)
    passage_id: str = ""

    @model_validator(mode="before")
    @classmethod
    def _derive_id(cls, data: Any) -> Any:
        # Derived or checked here, in one hashing, when the parts have their types (else validation fails anyway).
        if isinstance(data, dict):
            # Each field under its JSON key (an alias, for a chunk) or its name.
            document, start, end, text, given = (data.get(key, data.get(name, "")) for name, key in _keys(cls))
            if not (isinstance(document, str) and type(start) is int and type(end) is int and isinstance(text, str)):
                return data
            if end - start != len(text):
                raise ValueError(f"offsets [{start}, {end}) do not match a text of {len(text)} characters")
            expected, key = content_id(document, start, end, text), _field_key(cls, "passage_id")
            if not given:
                return {**data, key: expected}
            if given != expected:
                raise ValueError(f"{key} {given!r} does not match its content (expected {expected!r})")
        return data


class Chunk(Excerpt):
    """A passage the chunk stage cut: an excerpt whose fields chunks.jsonl and ``python:`` plugins know by older names.

    Attributes:
        start_offset: ``start`` (chunks.jsonl's key, kept so chunk files and ids stay as they were).
        end_offset: ``end``.
        chunk_id: ``passage_id``.
        prefix: The context indexed and read before the chunk's text (``chunk.context``: its document's title
            or the headings above it, then a line break); never part of the document, so never gold. Empty
            (and absent from chunks.jsonl) without one.
    """

    model_config = ConfigDict(serialize_by_alias=True, validate_by_alias=True, validate_by_name=True)

    start: int = Field(ge=0, alias="start_offset")
    end: int = Field(gt=0, alias="end_offset")
    passage_id: str = Field(default="", alias="chunk_id")
    prefix: str = Field(default="", exclude_if=lambda prefix: not prefix)

    @property
    def prefix_length(self) -> int:
        return len(self.prefix)

    @property
    def indexed_text(self) -> str:
        """What retrievers index and embed: the prefix, then the text."""
        return self.prefix + self.text if self.prefix else self.text

    @property
    def start_offset(self) -> int:
        return self.start

    @property
    def end_offset(self) -> int:
        return self.end

    @property
    def chunk_id(self) -> str:
        return self.passage_id


P = TypeVar("P", bound=Passage)
_OFFSETS = attrgetter("start", "end")


class PassageLocator:
    """Finds the passages of a fixed set that overlap a given one, without scanning the whole set."""

    def __init__(self, passages: Iterable[P]) -> None:
        self._by_doc: dict[str, list[Passage]] = {}
        for passage in passages:
            self._by_doc.setdefault(passage.document, []).append(passage)
        self._starts: dict[str, list[int]] = {}
        self._max_len: dict[str, int] = {}
        for doc, items in self._by_doc.items():
            if len(items) == 1:  # a document chunked whole (a BEIR corpus): 5,183 sorts of one passage cost more
                self._starts[doc], self._max_len[doc] = [items[0].start], items[0].end - items[0].start
                continue
            items.sort(key=_OFFSETS)
            self._starts[doc] = [p.start for p in items]
            self._max_len[doc] = max(p.end - p.start for p in items)

    def overlapping(self, target: Passage) -> list[Any]:
        """The passages of ``target.document`` that overlap ``target``, in offset order."""
        items = self._by_doc.get(target.document, [])
        if not items:
            return []
        starts = self._starts[target.document]
        # A passage starting before target.start - max_len cannot reach the target.
        lo = bisect.bisect_left(starts, target.start - self._max_len[target.document])
        hi = bisect.bisect_left(starts, target.end)
        return [p for p in items[lo:hi] if p.overlaps(target)]


def is_corpus_relative(name: str) -> bool:
    """Whether a document name is a relative POSIX path that stays inside the corpus root.

    Absolute paths, ``..`` and backslashes are refused: each could name a file outside the corpus.
    """
    path = PurePosixPath(name)
    return not (path.is_absolute() or ".." in path.parts or "\\" in name)


LISTED = 5
"""How many places an ambiguous text lists: a short word occurs tens of thousands of times in a long document."""


@dataclass(frozen=True)
class NotOnce:
    """Why a text does not occur exactly once in a document.

    Attributes:
        count: 0 when it does not occur, else the number of (possibly overlapping) occurrences.
        detail: For 0, a hint at the near miss; otherwise the first ``LISTED`` places, as
            ``line:col L:C (offset N), ...`` followed by ``and K more`` when there are more.
    """

    count: int
    detail: str


def locate_once(document: Document, text: str) -> Passage | NotOnce:
    """The passage of ``document`` that ``text`` is, if ``text`` occurs exactly once; why not otherwise.

    Overlapping occurrences count: ``"aa"`` occurs twice in ``"aaa"``.
    """
    body = document.text
    first = body.find(text)
    if first < 0:
        return NotOnce(0, near_miss(text, body))
    starts, count = [first], 1
    nxt = body.find(text, first + 1)
    while nxt >= 0:
        count += 1
        if len(starts) < LISTED:
            starts.append(nxt)
        nxt = body.find(text, nxt + 1)
    if count == 1:
        return Passage(document=document.path, start=first, end=first + len(text))
    places = ", ".join(f"line:col {place} (offset {s})" for place, s in zip(_line_cols(body, starts), starts,
                                                                          strict=True))
    return NotOnce(count, places if count == len(starts) else f"{places} and {count - len(starts)} more")


def line_col(text: str, offset: int) -> str:
    """``line:col`` (both 1-based) of character ``offset`` of ``text``."""
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return f"{line}:{col}"


def _line_cols(text: str, offsets: Sequence[int]) -> list[str]:
    """``line:col`` of each of the ascending ``offsets``, counting newlines in one pass over the text."""
    places, line, counted = [], 1, 0
    for offset in offsets:
        line += text.count("\n", counted, offset)
        counted = offset
        column = offset - text.rfind("\n", 0, offset)
        places.append(f"{line}:{column}")
    return places


_CURLY = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-"})
_SPACE = re.compile(r"\s+")


# Characters that are invisible, or that render like a plainer one, slip unnoticed into a quote copied
# from a PDF or a web page (or into the document). Invisible ones stand for nothing; the others for their
# plain form, which for ligatures, no-break spaces and the like is the character's NFKC form.
_INVISIBLE = frozenset("\u00ad\u200b\u200c\u200d\u200e\u200f\u2060\ufeff")
_PLAIN = {"\u2010": "-", "\u2011": "-", "\u2212": "-"}


def _plain(char: str) -> str:
    if char in _INVISIBLE:
        return ""
    return _PLAIN.get(char) or unicodedata.normalize("NFKC", char)


def _odd_characters(text: str) -> dict[str, str]:
    """The invisible and look-alike characters ``text`` holds, each mapped to its plain form."""
    return {char: plain for char in set(text) if (plain := _plain(char)) != char}


def _odd_in_span(text: str, odd: Mapping[str, str], start: int, end: int) -> list[tuple[int, str]]:
    """``(offset, character)`` of each odd character of ``text`` whose plain form falls in ``[start, end)``.

    ``start`` and ``end`` are offsets in the plain text; the walk over the odd characters maps them back.
    """
    found: list[tuple[int, str]] = []
    shift = 0  # plain offset minus original offset, up to the current character
    for match in re.finditer(f"[{re.escape(''.join(sorted(odd)))}]", text):
        char, at = match.group(), match.start() + shift
        if at >= end:
            break
        width = len(odd[char])
        # A character that stands for nothing sits between two plain ones: inside only if strictly within.
        if (width and at + width > start) or (not width and at > start):
            found.append((match.start(), char))
        shift += width - 1
    return found


def _odd_characters_hint(quote: str, text: str) -> str | None:
    """Name the invisible or look-alike characters that alone keep ``quote`` out of ``text``, and where they are."""
    quote_odd, text_odd = _odd_characters(quote), _odd_characters(text)
    if not quote_odd and not text_odd:
        return None
    plain_quote = quote.translate(str.maketrans(quote_odd))
    at = (text.translate(str.maketrans(text_odd)) if text_odd else text).find(plain_quote)
    if at < 0:
        return None
    in_text = _odd_in_span(text, text_odd, at, at + len(plain_quote)) if text_odd else []
    notes = []
    for position, char in enumerate(quote, start=1):
        if char in quote_odd and char not in {c for _, c in in_text}:
            plain = quote_odd[char]
            notes.append(f"the quote holds {describe_char(char)} at position {position}, "
                         + (f"where the document has {plain!r}" if plain else "which the document does not have"))
    for offset, char in in_text:
        if char not in quote:
            plain = text_odd[char]
            notes.append(f"the document holds {describe_char(char)} at line:col {line_col(text, offset)} "
                         f"(offset {offset}), " + (f"where the quote has {plain!r}" if plain else
                                                   "which the quote leaves out"))
    listed = "; ".join(notes[:LISTED]) + (f"; and {len(notes) - LISTED} more" if len(notes) > LISTED else "")
    return (
        "it matches only if invisible and look-alike characters are ignored"
        + (f": {listed}" if notes else "")
        + "; the quote must be verbatim, so copy it from the document's text, not from a rendered copy"
    )


def near_miss(quote: str, text: str) -> str:
    """Explain why a quote that is not in the text almost is, if it almost is."""
    for form in ("NFC", "NFD"):
        if unicodedata.normalize(form, quote) != quote and unicodedata.normalize(form, quote) in text:
            return (
                f"it matches only after Unicode normalisation ({form}): the quote and the document "
                "encode an accented character differently; copy the quote from the document verbatim"
            )
    if unicodedata.normalize("NFC", quote) in unicodedata.normalize("NFC", text):
        return "it matches only after Unicode normalisation (NFC); copy the quote from the document verbatim"
    odd = _odd_characters_hint(quote, text)
    if odd is not None:
        return odd
    if quote.translate(_CURLY) in text.translate(_CURLY):
        return (
            "it matches only if curly quotes or dashes are treated as straight ones; "
            "the quote must be verbatim, so copy its punctuation from the document"
        )
    if _SPACE.sub(" ", quote) in _SPACE.sub(" ", text):
        return (
            "it matches only if whitespace is collapsed (a line break or double space differs); "
            "the quote must be verbatim, including line breaks"
        )
    if quote.lower() in text.lower():
        return "it matches only case-insensitively; the quote must be verbatim, including case"
    return "check that the document was not edited since the quote was written"
