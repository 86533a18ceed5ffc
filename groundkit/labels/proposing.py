"""``groundkit judgments propose``: questions from passages, for a team with no query log.

Passages are the corpus's chunks (``chunk`` params, as a run cuts them), drawn with ``random.Random(seed)``
across documents: the documents in a shuffled order, one chunk drawn from each in turn (without
replacement) until ``n`` are drawn, so a few long documents cannot fill the sample. The judge proposes
a question and a verbatim quote for each (cached by content, as judgments are); a proposal is kept only
when its quote resolves inside its passage (exactly, extended as ``judge`` extends quotes), and written as
a machine judgment whose id is that of the question as a plain query (``q`` + 10 hex digits of its
SHA-256). A question proposed twice is kept once.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from groundkit.corpus.judgments import Category, GoldSpan, Judgment, Origin
from groundkit.corpus.passage import Document, Excerpt
from groundkit.corpus.queries import query_id_of
from groundkit.errors import JudgeError, JudgeFault
from groundkit.labels.cache import Cache, cache_key
from groundkit.labels.judges import Judge, Proposal
from groundkit.labels.judging import resolve_quote


@dataclass
class ProposeTally:
    drawn: int = 0
    calls: int = 0
    cache_hits: int = 0
    tokens: int = 0
    none: int = 0
    kept: int = 0
    discarded: int = 0
    repeated: int = 0
    notes: list[str] = field(default_factory=list)


def draw(passages: Sequence[Excerpt], n: int, seed: int) -> list[Excerpt]:
    """``n`` passages (all, if fewer) spread across documents, as the module docstring says."""
    rng = random.Random(seed)
    by_document: dict[str, list[Excerpt]] = {}
    for passage in passages:
        by_document.setdefault(passage.document, []).append(passage)
    order = sorted(by_document)
    rng.shuffle(order)
    drawn: list[Excerpt] = []
    while len(drawn) < n and order:
        for document in list(order):
            if len(drawn) == n:
                break
            left = by_document[document]
            drawn.append(left.pop(rng.randrange(len(left))))
            if not left:
                order.remove(document)
    return drawn


def propose(judge: Judge, cache: Cache, drawn: Sequence[Excerpt], corpus: Mapping[str, Document],
            category: Category, tally: ProposeTally, progress: Callable[[], Any]) -> list[Judgment]:
    """Ask for a question about each drawn passage (or take it from the cache); the kept ones as judgments."""
    found: dict[str, Judgment] = {}
    bar = progress()
    try:
        for passage in drawn:
            proposal = _asked(judge, cache, passage, tally)
            bar.update(1)
            if proposal is None:
                tally.none += 1
                continue
            place = f"passage {passage.document} [{passage.start}, {passage.end})"
            span = resolve_quote(corpus[passage.document], passage, proposal.quote)
            if isinstance(span, str):
                tally.discarded += 1
                tally.notes.append(f"{place}: the proposed quote is {span.replace('_', ' ')}: discarded")
                continue
            start, end, _ = span
            query_id = query_id_of(proposal.query)
            if query_id in found:
                tally.repeated += 1
                continue
            tally.kept += 1
            found[query_id] = Judgment(
                query_id=query_id, query=proposal.query, category=category,
                gold=[GoldSpan(document=passage.document, quote=corpus[passage.document].text[start:end])],
                origin=Origin.MACHINE, judge=judge.id, prompt_sha256=judge.propose_sha256)
    finally:
        bar.close()
    return [found[query_id] for query_id in sorted(found)]


def _asked(judge: Judge, cache: Cache, passage: Excerpt, tally: ProposeTally) -> Proposal | None:
    key = cache_key("propose", judge.id, judge.propose_sha256, passage.text)
    asked = {"passage": passage.text}
    entry = cache.get(key, asked)
    if entry is not None:
        tally.cache_hits += 1
        answer = entry["answer"]
        return None if answer["query"] is None else Proposal(answer["query"], answer["quote"])
    try:
        proposal, tokens = judge.propose(passage.text)
    except JudgeFault as fault:
        raise JudgeError(judge.scrub(f"judge {judge.id!r} proposing for passage {passage.document} "
                                     f"[{passage.start}, {passage.end}): {fault.problem}"),
                         fix=judge.scrub(fault.fix)) from None
    cache.put(key, asked, {"query": proposal.query if proposal else None,
                           "quote": proposal.quote if proposal else None}, tokens)
    tally.calls += 1
    tally.tokens += tokens
    return proposal
