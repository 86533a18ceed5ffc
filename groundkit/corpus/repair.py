"""Re-anchoring gold quotes after a document was edited: ``groundkit judgments repair``.

For each quote that no longer resolves exactly once, the most similar passage of the document's
current text, with a word diff and its similarity. A quote that is a whole sentence (or several) is
proposed as whole sentences again: the edit may have lengthened or shortened it at either end, and a
proposal cut inside a sentence is a fragment no person wrote. ``--write`` applies only proposals at or
above ``REPAIR_THRESHOLD``; the rest are left for a person, and so is a proposal that is not an edit
of the quote but another fact: one that overlaps another gold quote, one the document already held
when the quote still resolved, or any proposal for a quote that now occurs in another document (the
sentence moved there).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from groundkit.corpus.authoring import Proposal, rewrite, sentence, unique_around, words
from groundkit.corpus.judgments import Judgment
from groundkit.corpus.passage import Document, NotOnce, locate_once
from groundkit.corpus.similarity import similarity
from groundkit.corpus.tokenizing import make_content_tokenizer


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
    text, spans = document.text, words(document.text)
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
            if near is not None and is_sentences(gold.quote):
                near = (*whole_sentences(gold.quote, document.text, near[0], near[1]), near[2])
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


_OPENING = "\"'([`*_\u201c\u2018"  # and curly quotes
_CLOSING = "\"')]`*_\u201d\u2019"


def is_sentences(quote: str) -> bool:
    """Whether ``quote`` is one or more whole sentences: it opens with a capital letter or a digit (past any opening
    quote mark or bracket) and closes with a full stop, ``!`` or ``?`` (before any closing one)."""
    body = quote.strip().lstrip(_OPENING).rstrip(_CLOSING)
    return bool(body) and (body[0].isupper() or body[0].isdigit()) and body[-1] in ".!?"


def whole_sentences(quote: str, text: str, start: int, end: int) -> tuple[int, int]:
    """The run of whole sentences of ``text`` around ``[start, end)`` most like ``quote`` (difflib's ratio).

    The nearest run of words stops where adding words stops raising the similarity, so an edit that lengthened
    or shortened the sentence leaves it cut at one end; and it may hold a word of the next sentence. Every run
    of consecutive sentences among those ``[start, end)`` touches is compared with the quote; ties go to the
    shorter run.
    """
    sentences = []
    at = start
    while at < end:
        left, right = sentence(text, at, at + 1)
        if not sentences or (left, right) != sentences[-1]:
            sentences.append((left, right))
        at = max(right, at + 1)
        while at < end and text[at].isspace():
            at += 1
    best = (start, end)
    best_key: tuple[float, int] | None = None
    for i in range(len(sentences)):
        for j in range(i, len(sentences)):
            left, right = sentences[i][0], sentences[j][1]
            key = (similarity(quote, text[left:right]), -(right - left))
            if best_key is None or key > best_key:
                best, best_key = (left, right), key
    return best


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
