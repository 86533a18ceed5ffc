"""Writing and keeping judgments: ``groundkit judgments check | fmt | add`` (``repair`` is groundkit/corpus/repair.py).

* ``check`` is what CI runs: the file loads (ids unique and ascending), every
  quote resolves exactly once, and the file is in canonical form.
* ``fmt`` writes the canonical form: one object per line, sorted by
  ``query_id``, each line :meth:`Judgment.to_json`. Formatting a formatted
  file changes no byte, so it is safe in a pre-commit hook.
* ``add`` turns a query, a document and a search string into a judgment: it
  finds the search string in the document, proposes verbatim quotes around it
  that occur exactly once there (the whole sentence first, then the shortest
  unique run of words), and inserts the judgment at its place in the file with
  the next free id, leaving every other line as it was. Given an existing
  judgment (``--to``), it appends the quote to that judgment's gold, or replaces
  one of its quotes, rewriting only that line.

Quotes are located with the span resolver (:func:`groundkit.corpus.passage.locate_once`,
behind ``groundkit.corpus.spans``), so a proposal resolves exactly as the pipeline will.
"""

from __future__ import annotations

import bisect
import contextlib
import errno
import fcntl
import os
import re
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from groundkit.artifacts.atomic import atomic_write_text
from groundkit.corpus.audit import normalise
from groundkit.corpus.judgments import Category, GoldSpan, Judgment, load_judgments
from groundkit.corpus.passage import Document, NotOnce, line_col, locate_once
from groundkit.corpus.spans import resolve_judgments
from groundkit.errors import JudgmentsError
from groundkit.inputs.suggest import did_you_mean
from groundkit.inputs.text import decode_utf8_lf
from groundkit.inputs.validation import describe

MAX_EXTRA_WORDS = 40
"""The most words ``add`` and ``repair`` add around a passage to make it occur exactly once."""

MAX_SENTENCE = 300
"""The longest sentence ``add`` proposes whole, in characters; a longer one is not a quote but a paragraph."""

_WORD = re.compile(r"\S+")
# A sentence ends at a full stop (or ! ?) before whitespace, at a blank line, or before a line that starts a
# Markdown heading, quote or list item; a line break inside a hard-wrapped paragraph does not end one.
_SENTENCE_END = re.compile(r"[.!?](?=\s)|\n\s*\n|\n(?=[ \t]*(?:[#>*+-]|\d+[.)])\s)")


@contextlib.contextmanager
def locked(path: str | Path) -> Iterator[None]:
    """Hold the write lock of the judgments file ``path`` for one read-modify-write (add, fmt, repair --write).

    Two commands that each read the file, change it and write it back would otherwise both read the old
    text, and the second rename would drop the first one's line. The lock is ``flock`` on the folder that
    holds the file (through a symbolic link, the folder of the file it points at, which :func:`rewrite`
    replaces): the file itself is replaced by a rename, so a lock on it would lock the old copy, and a lock
    file beside it would be a file groundkit leaves in the user's folder. Readers take no lock: every
    write is a rename, so they see the old file or the new one whole. Where the file system offers no
    locks (``flock`` refused), the commands run unlocked, as they did before.
    """
    folder = Path(os.path.realpath(path)).parent
    while not folder.is_dir() and folder != folder.parent:
        folder = folder.parent  # the file's folder does not exist yet: the write will create it
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as exc:
            if exc.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.EBADF, errno.EINVAL):
                raise
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def rewrite(path: Path, text: str) -> None:
    """Replace the judgments file ``path`` by ``text`` atomically, keeping its permissions.

    A symbolic link is followed, so the file it points at is rewritten and the link stays a link.
    """
    target = path.resolve() if path.is_symlink() else path
    mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else None
    atomic_write_text(target, text)
    if mode is not None:
        os.chmod(target, mode)


def canonical_text(judgments: Sequence[Judgment]) -> str:
    """The canonical file: one :meth:`Judgment.to_json` line per judgment, sorted by ``query_id``."""
    return "".join(j.to_json() + "\n" for j in sorted(judgments, key=lambda j: j.query_id))


# --- fmt and check


def fmt(path: str | Path) -> tuple[int, bool]:
    """Rewrite ``path`` in canonical form (atomically, and only if that changes it).

    Returns:
        The number of judgments, and whether the file changed.

    Raises:
        JudgmentsError: a line that does not validate, or an id used twice (nothing is written).
    """
    path = Path(path)
    with locked(path):
        judgments = load_judgments(path, ordered=False)
        text = canonical_text(judgments)
        if path.read_bytes() == text.encode("utf-8"):
            return len(judgments), False
        rewrite(path, text)
        return len(judgments), True


def check_formatted(path: str | Path, judgments: Sequence[Judgment]) -> None:
    """Raise unless ``path`` holds exactly the canonical text of ``judgments`` (already loaded from it)."""
    path = Path(path)
    text = decode_utf8_lf(path, path.read_bytes(), error=JudgmentsError, hashed_as="judgments_hash")
    expected = canonical_text(judgments)
    if text == expected:
        return
    have, want = text.split("\n"), expected.split("\n")
    number = next((i for i, (a, b) in enumerate(zip(have, want, strict=False)) if a != b), None)
    if number is None:  # one is the other plus a line: the final line break is missing, or there is a blank line
        number = min(len(have), len(want)) - 1
        problem = "has no line break at its end" if len(have) < len(want) else "is followed by blank lines"
    elif not have[number].strip():
        problem = "is a blank line"
    else:
        problem = ("is not in canonical form (keys in the order query_id, query, category, gold; one space after "
                   "':' and ','; characters unescaped)")
    raise JudgmentsError(path, f"line {problem}", line=number + 1,
                         fix=f"run `groundkit judgments fmt --judgments {path}` (it rewrites the file in place)")


def check(corpus: Mapping[str, Document], path: str | Path, corpus_root: str | Path) -> list[Judgment]:
    """Everything CI asks of a judgments file: it loads (unique, ascending ids), resolves, and is formatted.

    Raises:
        JudgmentsError | SpanError: the first problem, with its line.
    """
    judgments = load_judgments(path)
    resolve_judgments(judgments, corpus, judgments_path=path, corpus_root=corpus_root)
    check_formatted(path, judgments)
    return judgments


# --- proposing quotes


@dataclass(frozen=True)
class Proposal:
    """A verbatim quote ``[start, end)`` of a document that occurs there exactly once."""

    document: Document
    start: int
    end: int

    @property
    def quote(self) -> str:
        return self.document.text[self.start : self.end]

    @property
    def place(self) -> str:
        """``line:col`` of its first character."""
        return line_col(self.document.text, self.start)


def words(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in _WORD.finditer(text)]


def unique_around(document: Document, start: int, end: int) -> Proposal | None:
    """``[start, end)`` if its text occurs exactly once, else the shortest run of whole words covering it that does.

    Words are added as a person lengthens an ambiguous quote: within its sentence first, fewest
    words first, after the end before the start; across the sentence's ends only if that fails.
    At most ``MAX_EXTRA_WORDS`` are added.
    """
    text, spans = document.text, words(document.text)
    found = locate_once(document, text[start:end])
    if not isinstance(found, NotOnce):
        return Proposal(document, found.start, found.end)
    starts, ends = [s for s, _ in spans], [e for _, e in spans]
    first = bisect.bisect_right(ends, start)
    if first >= len(spans):
        return None
    last = max(first, bisect.bisect_left(starts, end) - 1)
    left, right = sentence(text, start, end)
    lo, hi = min(bisect.bisect_left(starts, left), first), max(bisect.bisect_left(ends, right), last)
    for within in (True, False):
        for total in range(MAX_EXTRA_WORDS + 1):
            for after in range(total, -1, -1):
                a, b = first - (total - after), last + after
                inside = lo <= a and b <= hi
                if a < 0 or b >= len(spans) or inside is not within:
                    continue
                found = locate_once(document, text[spans[a][0] : spans[b][1]])
                if not isinstance(found, NotOnce):
                    return Proposal(document, found.start, found.end)
    return None


def sentence(text: str, start: int, end: int) -> tuple[int, int]:
    """The sentence (or paragraph line) holding ``[start, end)``, without surrounding whitespace."""
    left = 0
    for match in _SENTENCE_END.finditer(text, 0, start):
        left = match.end()
    stop = _SENTENCE_END.search(text, max(start, end - 1))
    right = stop.end() if stop is not None and stop.group().strip() else (stop.start() if stop else len(text))
    while left < right and text[left].isspace():
        left += 1
    while right > left and text[right - 1].isspace():
        right -= 1
    return left, right


def find(document: Document, search: str) -> list[tuple[int, int]]:
    """Where ``search`` occurs in ``document``: verbatim, else ignoring case and the width of whitespace."""
    text, hits = document.text, []
    at = text.find(search)
    while at >= 0:
        hits.append((at, at + len(search)))
        at = text.find(search, at + 1)
    if hits:
        return hits
    pattern = re.compile(r"\s+".join(re.escape(w) for w in search.split()), re.IGNORECASE)
    return [(m.start(), m.end()) for m in pattern.finditer(text)]


def propose(document: Document, search: str, *, limit: int = 5) -> list[Proposal]:
    """Verbatim quotes of ``document`` around ``search`` that occur there exactly once, best first.

    For each place ``search`` occurs (at most ``limit``): its whole sentence, when that is unique (or made so
    with the fewest words around it) and at most ``MAX_SENTENCE`` characters, then the shortest unique run of
    whole words covering it. A quote should hold the sentence (the guide's docs/judgments.md says why); the fragment
    is there for a sentence too long to quote.

    Raises:
        JudgmentsError: ``search`` is empty or does not occur in the document.
    """
    return [proposal for pair in _proposals(document, search, limit) for proposal in pair if proposal is not None]


def shortest(document: Document, search: str) -> Proposal | None:
    """The shortest unique run of whole words around the first place ``search`` occurs (``add --shortest``)."""
    whole, fragment = _proposals(document, search, 1)[0]
    return fragment or whole  # None when the shortest unique run is the sentence itself


def _proposals(document: Document, search: str, limit: int) -> list[tuple[Proposal | None, Proposal | None]]:
    """``(sentence, shortest)`` for each of the first ``limit`` places ``search`` occurs; a proposal already made
    for an earlier place (or equal to its pair's sentence) is None."""
    if not search.strip():
        raise JudgmentsError("--search", "is empty", fix="give a few words of the passage that answers the query")
    hits = find(document, search.strip())
    if not hits:
        raise JudgmentsError("--search", f"{search!r} does not occur in {document.path!r}, not even ignoring case "
                             "and line breaks",
                             fix="give words the document holds (case and line breaks may differ), or check --document")
    found: list[tuple[Proposal | None, Proposal | None]] = []
    seen: set[str] = set()
    text = document.text
    for start, end in hits[:limit]:
        # Whole words: a search string may begin or end inside one (punctuation beside it stays out).
        while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
            start -= 1
        while end < len(text) and (text[end].isalnum() or text[end] == "_"):
            end += 1
        left, right = sentence(text, start, end)
        whole = unique_around(document, left, right) if right - left <= MAX_SENTENCE else None
        pair = []
        for proposal in (whole, unique_around(document, start, end)):
            if proposal is not None and proposal.quote not in seen:
                seen.add(proposal.quote)
                pair.append(proposal)
            else:
                pair.append(None)
        found.append((pair[0], pair[1]))
    return found


def elsewhere(quote: str, document: str, corpus: Mapping[str, Document]) -> list[str]:
    """The other documents holding ``quote`` verbatim or normalised (see ``audit.normalise``)."""
    plain = normalise(quote)
    return [path for path, other in sorted(corpus.items())
            if path != document and (quote in other.text or plain in normalise(other.text))]


# --- add


_NUMBERED = re.compile(r"^(.*?)(\d+)$")


def next_query_id(ids: Sequence[str]) -> str:
    """The id after the highest numbered one, with the same prefix and zero padding (``q041`` -> ``q042``).

    The prefix is the one most ids share; with no numbered id at all, ``q001``.
    """
    numbered = [m for m in map(_NUMBERED.match, ids) if m is not None]
    if not numbered:
        return "q001"
    prefixes = [m[1] for m in numbered]
    prefix = max(sorted(set(prefixes)), key=prefixes.count)
    same = [m for m in numbered if m[1] == prefix]
    width = max(len(m[2]) for m in same)
    number = max(int(m[2]) for m in same) + 1
    taken = set(ids)
    while f"{prefix}{number:0{width}d}" in taken:
        number += 1
    return f"{prefix}{number:0{width}d}"


def read_for_add(path: Path) -> list[Judgment]:
    """The judgments of ``path``; none if it does not exist yet or holds only whitespace."""
    if not path.exists() or (path.is_file() and not path.read_bytes().strip()):
        return []
    return load_judgments(path)


def make_judgment(query_id: str, query: str, category: str, gold: list[GoldSpan]) -> Judgment:
    """A validated judgment from ``add``'s options; a bad value is reported against its option."""
    try:
        return Judgment.model_validate({"query_id": query_id, "query": query, "category": category, "gold": gold})
    except ValidationError as exc:
        key, problem = describe(exc)
        option = {"query_id": "--id", "query": "--query", "category": "--category"}.get(key.split(".")[0], "--search")
        raise JudgmentsError(option, problem,
                             fix="see `groundkit judgments add --help` and the guide's docs/judgments.md") from None


def insert(path: Path, judgments: Sequence[Judgment], new: Judgment) -> int:
    """Write ``new`` into ``path`` at its place in id order, every other line unchanged; return its line number.

    ``judgments`` must be the file's judgments as read under the same :func:`locked` as this call.

    Raises:
        JudgmentsError: ``new``'s id is taken.
    """
    taken = {j.query_id: j.line for j in judgments}
    if new.query_id in taken:
        raise JudgmentsError("--id", f"{new.query_id!r} is already used (line {taken[new.query_id]} of {path})",
                             fix="choose another id, or leave --id out to take the next free one")
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    later = [j.line for j in judgments if j.query_id > new.query_id]
    index = min(later) - 1 if later else len(lines)
    lines.insert(index, new.to_json())
    rewrite(path, "\n".join(lines) + "\n")
    return index + 1


def quotable(path: Path, judgments: Sequence[Judgment], query_id: str) -> Judgment:
    """Judgment ``query_id`` of ``path``, which a quote can be added to.

    Raises:
        JudgmentsError: there is no such judgment, or it is a no_answer one.
    """
    by_id = {j.query_id: j for j in judgments}
    judgment = by_id.get(query_id)
    if judgment is None:
        raise JudgmentsError("--to", f"{query_id!r} is not a judgment of {path}{did_you_mean(query_id, by_id)}",
                             fix="name the query_id of an existing judgment, or leave --to out to add a new one")
    if judgment.category is Category.NO_ANSWER:
        raise JudgmentsError("--to", f"{query_id!r} is a no_answer judgment (line {judgment.line}): a gold quote would "
                             "make it answerable", fix="change its category in the file first, or quote into another "
                             "judgment")
    return judgment


def amended(path: Path, judgments: Sequence[Judgment], query_id: str, quote: Proposal, *,
            replace: int | None = None) -> Judgment:
    """Judgment ``query_id`` of ``path`` with ``quote`` appended to its gold, or put in place of its quote number
    ``replace`` (from 1, keeping that quote's grade); its ``line`` is the judgment's line in the file.

    Raises:
        JudgmentsError: no such judgment, a no_answer one, no quote number ``replace``, or another of its quotes
            that overlaps this one (it would mark no other passage relevant: widen that quote instead).
    """
    judgment = quotable(path, judgments, query_id)
    quotes = list(judgment.gold)
    gold = GoldSpan(document=quote.document.path, quote=quote.quote)
    if replace is not None:
        if not 1 <= replace <= len(quotes):
            raise JudgmentsError("--replace", f"is {replace}; {query_id} has {len(quotes)} gold "
                                 f"quote{'s' if len(quotes) != 1 else ''}",
                                 fix=f"give the number of the quote to replace, 1 to {len(quotes)} in the order "
                                     "of its gold list" if quotes else "leave --replace out to append the quote")
        gold = gold.model_copy(update={"grade": quotes[replace - 1].grade})
    for number, other in enumerate(quotes, start=1):
        if number == replace or other.document != gold.document:
            continue
        where = locate_once(quote.document, other.quote) if other.quote is not None else None
        if other.quote is None or (not isinstance(where, NotOnce) and where.start < quote.end
                                   and quote.start < where.end):
            what = "the whole document" if other.quote is None else "part of this passage"
            raise JudgmentsError("--search", f"{query_id}'s gold {number} already quotes {what} of {gold.document}: "
                                 "a second quote there would mark no other passage relevant",
                                 fix=f"to quote this passage instead, add --replace {number}; else quote another "
                                     "passage")
    if replace is not None:
        quotes[replace - 1] = gold
    else:
        quotes.append(gold)
    changed = Judgment.model_validate({"query_id": judgment.query_id, "query": judgment.query,
                                       "category": judgment.category, "gold": quotes,
                                       "exclude_documents": judgment.exclude_documents})
    changed._line = judgment.line  # where it is written back
    return changed


def replace_line(path: Path, changed: Judgment) -> None:
    """Write ``changed`` over its own line of ``path`` (:func:`amended`'s judgment), every other line unchanged.

    The file must be the one read under the same :func:`locked` as this call.
    """
    lines = path.read_text(encoding="utf-8").split("\n")
    lines[changed.line - 1] = changed.to_json()
    rewrite(path, "\n".join(lines))


# --- repair
