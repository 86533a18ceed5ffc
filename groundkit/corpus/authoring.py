"""Writing and keeping judgments: ``groundkit judgments check | fmt | add | repair``.

* ``check`` is what CI runs: the file loads (ids unique and ascending), every
  quote resolves exactly once, and the file is in canonical form.
* ``fmt`` writes the canonical form: one object per line, sorted by
  ``query_id``, each line :meth:`Judgment.to_json`. Formatting a formatted
  file changes no byte, so it is safe in a pre-commit hook.
* ``add`` turns a query, a document and a search string into a judgment: it
  finds the search string in the document, proposes verbatim quotes around it
  that occur exactly once there, and inserts the judgment at its place in the
  file with the next free id, leaving every other line as it was.
* ``repair`` re-anchors quotes that no longer resolve after a document was
  edited: for each, the most similar passage of the document's current text,
  with a word diff and its similarity. ``--write`` applies only proposals at
  or above ``REPAIR_THRESHOLD``; the rest are left for a person, and so is a
  proposal that is not an edit of the quote but another fact: one that
  overlaps another gold quote, one the document already held when the quote
  still resolved, or any proposal for a quote that now occurs in another
  document (the sentence moved there).

Quotes are located with the span resolver (:func:`groundkit.corpus.passage.locate_once`,
behind ``groundkit.corpus.spans``), so a proposal resolves exactly as the pipeline will.
"""

from __future__ import annotations

import bisect
import contextlib
import difflib
import errno
import fcntl
import os
import re
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from groundkit._atomic import atomic_write_text
from groundkit._text import decode_utf8_lf
from groundkit._validation import describe
from groundkit.corpus.audit import normalise
from groundkit.corpus.judgments import GoldSpan, Judgment, load_judgments
from groundkit.corpus.passage import Document, NotOnce, line_col, locate_once
from groundkit.corpus.spans import resolve_judgments
from groundkit.corpus.tokenizing import make_content_tokenizer
from groundkit.errors import JudgmentsError

REPAIR_THRESHOLD = 0.8
"""The similarity at or above which ``repair --write`` applies a proposal.

Similarity is difflib's ratio, 2M / T, with M the characters the old and new quote share (in order)
and T the characters of both. 0.8 lets a few words change in a sentence-long quote (a number, a
unit, a rephrased clause) and refuses a proposal that is mostly other text.
"""

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


def _words(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in _WORD.finditer(text)]


def unique_around(document: Document, start: int, end: int) -> Proposal | None:
    """``[start, end)`` if its text occurs exactly once, else the shortest run of whole words covering it that does.

    Words are added as a person lengthens an ambiguous quote: within its sentence first, fewest
    words first, after the end before the start; across the sentence's ends only if that fails.
    At most ``MAX_EXTRA_WORDS`` are added.
    """
    text, spans = document.text, _words(document.text)
    found = locate_once(document, text[start:end])
    if not isinstance(found, NotOnce):
        return Proposal(document, found.start, found.end)
    starts, ends = [s for s, _ in spans], [e for _, e in spans]
    first = bisect.bisect_right(ends, start)
    if first >= len(spans):
        return None
    last = max(first, bisect.bisect_left(starts, end) - 1)
    left, right = _sentence(text, start, end)
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


def _sentence(text: str, start: int, end: int) -> tuple[int, int]:
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

    For each place ``search`` occurs (at most ``limit``): the shortest unique run of whole words covering
    it, then its whole sentence when that is unique, different and at most ``MAX_SENTENCE`` characters.

    Raises:
        JudgmentsError: ``search`` is empty or does not occur in the document.
    """
    if not search.strip():
        raise JudgmentsError("--search", "is empty", fix="give a few words of the passage that answers the query")
    hits = find(document, search.strip())
    if not hits:
        raise JudgmentsError("--search", f"{search!r} does not occur in {document.path!r}, not even ignoring case "
                             "and line breaks",
                             fix="give words the document holds (case and line breaks may differ), or check --document")
    proposals: list[Proposal] = []
    text = document.text
    for start, end in hits[:limit]:
        # Whole words: a search string may begin or end inside one (punctuation beside it stays out).
        while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
            start -= 1
        while end < len(text) and (text[end].isalnum() or text[end] == "_"):
            end += 1
        shortest = unique_around(document, start, end)
        left, right = _sentence(document.text, start, end)
        sentence = unique_around(document, left, right) if right - left <= MAX_SENTENCE else None
        for proposal in (shortest, sentence):
            if proposal is not None and all(p.quote != proposal.quote for p in proposals):
                proposals.append(proposal)
    return proposals


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
        raise JudgmentsError(option, problem, fix="see `groundkit judgments add --help` and evals/README.md") from None


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


# --- repair


@dataclass(frozen=True)
class Repair:
    """A gold quote of judgment ``query_id`` that does not resolve, and what could replace it.

    Attributes:
        index: Position of the quote in the judgment's gold list.
        problem: Why it does not resolve, as the resolver says it.
        proposal: The nearest unique passage of the current text, or None when there is none to offer.
        similarity: difflib's ratio between the old quote and the proposal (0 without one).
    """

    query_id: str
    line: int
    index: int
    document: str
    quote: str
    problem: str
    proposal: str | None
    similarity: float
    place: str = ""
    held: str = ""
    """Why the proposal is left for a person whatever its similarity (empty: it applies at the threshold)."""

    def applies(self, threshold: float) -> bool:
        return self.proposal is not None and not self.held and self.similarity >= threshold


def similarity(old: str, new: str) -> float:
    """difflib's ratio of two strings: 2M / T (1.0 equal, 0.0 nothing in common)."""
    return difflib.SequenceMatcher(None, old, new, autojunk=False).ratio()


def _trim_to_quote(quote: str, text: str, start: int, end: int) -> tuple[int, int]:
    """Drop punctuation at either end of ``text[start:end]`` that the quote does not have at that end."""
    while end > start + 1 and not text[end - 1].isalnum() and quote[-1:].isalnum():
        end -= 1
    while start < end - 1 and not text[start].isalnum() and quote[:1].isalnum():
        start += 1
    return start, end


def nearest(quote: str, document: Document, *, starts: int = 10) -> tuple[int, int, float] | None:
    """The run of whole words of ``document`` most similar to ``quote``: ``(start, end, similarity)``.

    Windows as long as the quote (in words) are ranked by how many of the quote's words they hold;
    the best ``starts`` are compared by similarity, and the winner's ends are then moved a word at
    a time while that raises the similarity (an edit may lengthen or shorten the passage).
    """
    text, spans = document.text, _words(document.text)
    if not spans:
        return None
    wanted = {w.lower() for w in quote.split()}
    n = min(len(quote.split()), len(spans))
    hits = [0]
    for s, e in spans:
        hits.append(hits[-1] + (text[s:e].lower() in wanted))
    ranked = sorted(range(len(spans) - n + 1), key=lambda i: (-(hits[i + n] - hits[i]), i))[:starts]

    def score(first: int, last: int) -> float:
        return similarity(quote, text[spans[first][0] : spans[last][1]])

    best = max((score(i, i + n - 1), -i, i) for i in ranked)
    value, first, last = best[0], best[2], best[2] + n - 1
    improved = True
    while improved:
        improved = False
        for a, b in ((first - 1, last), (first + 1, last), (first, last + 1), (first, last - 1)):
            if 0 <= a <= b < len(spans) and (candidate := score(a, b)) > value:
                value, first, last, improved = candidate, a, b, True
                break
    first, last = _whole_phrase(quote, text, spans, first, last)
    start, end = _trim_to_quote(quote, text, spans[first][0], spans[last][1])
    return start, end, similarity(quote, text[start:end])


def _whole_phrase(quote: str, text: str, spans: Sequence[tuple[int, int]], first: int, last: int) -> tuple[int, int]:
    """Widen words ``first..last`` to a phrase boundary at an end where the quote's own word was replaced.

    Similarity alone would end "run hourly" -> "run every hour" at "run every": a shorter
    replacement always scores higher. An edited end is instead carried on to the next punctuation,
    line break or function word ("and", "of", ...), where a phrase ends.
    """
    words = quote.split()
    content = make_content_tokenizer()

    def word(i: int) -> str:
        return text[spans[i][0] : spans[i][1]]

    def ends_phrase(i: int) -> bool:
        if i + 1 >= len(spans) or not word(i)[-1].isalnum() or "\n" in text[spans[i][1] : spans[i + 1][0]]:
            return True
        return not content(word(i + 1))

    def starts_phrase(i: int) -> bool:
        if i == 0 or word(i - 1)[-1] in ".!?;:" or "\n" in text[spans[i - 1][1] : spans[i][0]]:
            return True
        return not content(word(i - 1))

    limit = len(words)
    if word(last).lower().rstrip(".,;:!?") != words[-1].lower().rstrip(".,;:!?"):
        for _ in range(limit):
            if ends_phrase(last):
                break
            last += 1
    if word(first).lower() != words[0].lower():
        for _ in range(limit):
            if starts_phrase(first):
                break
            first -= 1
    return first, last


def repairs(judgments: Sequence[Judgment], corpus: Mapping[str, Document], *,
            previous: Mapping[str, str] | None = None) -> list[Repair]:
    """Every gold quote that does not resolve exactly once, with the nearest unique passage where there is one.

    A proposal is only offered for a person to judge (:attr:`Repair.held`) when it is likely another fact than
    the quote's, however similar: when it overlaps a quote of any judgment that still resolves (re-anchoring q1
    on q2's answer), when ``previous`` (a document's text as it was when its quotes resolved, e.g. as git last
    committed it) already held it beside the quote, or when the quote now occurs in another document.
    """
    anchored: dict[str, list[tuple[int, int, str]]] = {}
    for judgment in judgments:
        for index, gold in enumerate(judgment.gold):
            document = corpus.get(gold.document)
            if gold.quote is not None and document is not None:
                located = locate_once(document, gold.quote)
                if not isinstance(located, NotOnce):
                    anchored.setdefault(gold.document, []).append(
                        (located.start, located.end, f"{judgment.query_id}'s gold quote {index + 1}"))
    found: list[Repair] = []
    for judgment in judgments:
        for index, gold in enumerate(judgment.gold):
            if gold.quote is None:
                continue
            common = {"query_id": judgment.query_id, "line": judgment.line, "index": index,
                      "document": gold.document, "quote": gold.quote}
            document = corpus.get(gold.document)
            if document is None:
                found.append(Repair(**common, problem="the document is not in the corpus (renamed or deleted?)",
                                    proposal=None, similarity=0.0))
                continue
            located = locate_once(document, gold.quote)
            if not isinstance(located, NotOnce):
                continue
            if located.count > 1:
                found.append(Repair(**common, problem=f"occurs {located.count} times ({located.detail}); only a "
                                    "person can tell which one was meant", proposal=None, similarity=0.0))
                continue
            near = nearest(gold.quote, document)
            proposal = unique_around(document, near[0], near[1]) if near is not None else None
            if proposal is None:
                found.append(Repair(**common, problem="not found, and no passage of the document is near it",
                                    proposal=None, similarity=0.0))
                continue
            before = None if previous is None else previous.get(gold.document)
            found.append(Repair(**common, problem="not found", proposal=proposal.quote,
                                similarity=similarity(gold.quote, proposal.quote), place=proposal.place,
                                held=_another_fact(gold.quote, proposal, anchored, corpus, before)))
    return found


def _another_fact(quote: str, proposal: Proposal, anchored: Mapping[str, Sequence[tuple[int, int, str]]],
                  corpus: Mapping[str, Document], before: str | None) -> str:
    """Why ``proposal`` is likely not ``quote`` edited but another fact of the document; empty if nothing says so."""
    path = proposal.document.path
    moved = [other for other, document in sorted(corpus.items()) if other != path and quote in document.text]
    if moved:
        return (f"the quote now occurs in {', '.join(moved)}: the sentence moved; if it still answers, point the "
                "gold quote at that document")
    for start, end, label in anchored.get(path, ()):
        if start < proposal.end and proposal.start < end:
            return f"the passage overlaps {label}, another fact of the document"
    if before is not None and before.count(quote) == 1 and proposal.quote in before:
        return ("the document held this passage already when the quote still resolved (as committed): it is "
                "another sentence, not the quote's edited text")
    return ""


def word_diff(old: str, new: str) -> str:
    """``old`` turned into ``new`` word by word, git's ``--word-diff=plain`` style: ``[-gone-]{+added+}``."""
    a, b = old.split(), new.split()
    parts: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            parts.append(" ".join(a[i1:i2]))
            continue
        if i2 > i1:
            parts.append(f"[-{' '.join(a[i1:i2])}-]")
        if j2 > j1:
            parts.append(f"{{+{' '.join(b[j1:j2])}+}}")
    return " ".join(parts)


def apply_repairs(path: str | Path, judgments: Sequence[Judgment], accepted: Sequence[Repair]) -> None:
    """Replace the quotes of ``accepted`` in ``path`` (atomically); lines without a repair stay as they were.

    ``judgments`` must be the file's judgments as read under the same :func:`locked` as this call.
    """
    path = Path(path)
    if not accepted:
        return
    by_line: dict[int, dict[int, str]] = {}
    for repair in accepted:
        if repair.proposal is not None:
            by_line.setdefault(repair.line, {})[repair.index] = repair.proposal
    lines = path.read_text(encoding="utf-8").split("\n")
    for judgment in judgments:
        new = by_line.get(judgment.line)
        if not new:
            continue
        gold = [g.model_copy(update={"quote": new[i]}) if i in new else g for i, g in enumerate(judgment.gold)]
        lines[judgment.line - 1] = judgment.model_copy(update={"gold": gold}).to_json()
    rewrite(path, "\n".join(lines))

