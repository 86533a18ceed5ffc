"""The corpus audit: does this corpus and these judgments measure anything?

Integrity checks (every quote resolves once, ids ascend) pass just as well
on a corpus of lexically disjoint documents, where any keyword identifies
the right document and BM25 wins by construction. The audit measures what
they cannot. Its *findings* describe the corpus; they are reported, and
fail a run only where ``audit.max_trivial_share`` says so:

* trivial judgments: among the query's rarest tokens (lowest document
  frequency, under the index's tokenizer, as BM25 sees them) one occurs only
  in gold documents, so keyword search finds the answer by that one word.
  The report names that word, the *give-away*;
* competing documents: for each answerable judgment, how many documents
  outside its gold set share a content word with the query (the index's
  tokenizer less English function words: every document shares "the");
* duplicated quotes: a gold quote that also occurs in another document,
  verbatim or after collapsing whitespace and case, where the same judgment
  does not hold it as gold too. A retriever returning that other passage is
  counted wrong, so the labels are incomplete there.

A no_answer query that shares a token with the corpus is a *leak*: abstention is measured as "retrieval
returned nothing" (no score threshold), and BM25 returns something for it, so its abstention cannot be measured.
``audit.no_answer_shares_words`` says what a leak does: ``warn`` (the default) reports it and points at
``no_answer.separability``; ``error`` refuses the judgments (the golden corpus, written to measure abstention).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from typing import Literal

from groundkit.artifacts.models import Record
from groundkit.config import AuditParams, TokenizeParams
from groundkit.corpus.judgments import Category, Judgment
from groundkit.corpus.passage import Document
from groundkit.corpus.tokenizing import Tokenizer, make_content_tokenizer, make_tokenizer, tokenize
from groundkit.errors import JudgmentsError

SHOWN = 10
"""How many query ids (or quotes) a finding lists before it says how many more there are."""


class JudgmentAudit(Record):
    """The audit of one answerable judgment.

    Attributes:
        competing_documents: Documents outside the gold set sharing a content word with the query.
        rarest_token: The query's rarest token in the corpus; among tokens tied for rarest, the one
            that makes the judgment trivial (occurs only in gold documents) when there is one.
        trivial: Whether ``rarest_token`` occurs only in gold documents.
    """

    query_id: str
    category: Category
    competing_documents: int
    rarest_token: str | None
    rarest_token_documents: int
    trivial: bool


class NoAnswerLeak(Record):
    """A no_answer judgment whose query shares tokens with the corpus (up to 3 documents each)."""

    query_id: str
    line: int
    tokens: dict[str, list[str]]


class DuplicatedQuote(Record):
    """A gold quote of ``document`` that also occurs in ``also_in``: ``verbatim``, or ``normalised``
    (equal once runs of whitespace are one space and case is ignored)."""

    query_id: str
    line: int
    document: str
    quote: str
    also_in: str
    match: Literal["verbatim", "normalised"]


class AuditReport(Record):
    """The whole audit; written as build/audit.json (and by ``groundkit audit --out``)."""

    documents: int
    answerable: int
    trivial: int
    trivial_share: float
    trivial_query_ids: list[str]
    median_competing_documents: float
    duplicated_quotes: list[DuplicatedQuote]
    no_answer_leaks: list[NoAnswerLeak]
    judgments: list[JudgmentAudit]


def _postings(documents: Sequence[Document], tokenize_text: Tokenizer, wanted: set[str]) -> dict[str, list[str]]:
    """The documents holding each of the ``wanted`` tokens, each once, in the order of ``documents`` (only those
    tokens: the audit asks about a query's words, and a corpus has a hundred times more; keeping them all was
    most of the audit's time). Lists, not sets: a set per token cost a sixth of the audit, and its readers
    take any iterable."""
    holders: dict[str, list[str]] = {token: [] for token in wanted}
    for document in documents:
        path = document.path
        for token in wanted.intersection(tokenize_text(document.text)):
            holders[token].append(path)
    return {token: paths for token, paths in holders.items() if paths}


def audit(
    documents: Sequence[Document], judgments: Sequence[Judgment], tokenizer: TokenizeParams | None = None, *,
    tokenize: Tokenizer | None = None,
) -> AuditReport:
    """Audit ``judgments`` against ``documents`` (no_answer leaks included, nothing raised).

    ``tokenizer`` must be the index's: a stemmer can make a no_answer query
    share a token with the corpus, and stopwords can remove the only one.
    A whole-document gold span counts the same as a quote: its document is gold. ``tokenize`` is the
    tokenizer ``tokenizer`` describes, when the caller has one already (a run's store shares its tokens).
    """
    tokenize_index = tokenize or make_tokenizer(tokenizer)
    tokenize_content = make_content_tokenizer(tokenizer)
    postings = _postings(documents, tokenize_index, {t for j in judgments for t in tokenize_index(j.query)})
    if tokenizer is None or tokenizer.stemmer == "none":
        # Without a stemmer a content word is an index token that is not a function word: no second pass.
        content_postings = {t: docs for t, docs in postings.items() if tokenize_content(t)}
    else:
        content_postings = _postings(documents, tokenize_content,
                                     {t for j in judgments for t in tokenize_content(j.query)})
    content_words = set(content_postings)

    rows: list[JudgmentAudit] = []
    leaks: list[NoAnswerLeak] = []
    for judgment in judgments:
        tokens = sorted(set(tokenize_index(judgment.query)))
        if judgment.category is Category.NO_ANSWER:
            shared = [t for t in tokens if t in postings]
            if shared:
                leaks.append(NoAnswerLeak(query_id=judgment.query_id, line=judgment.line,
                                          tokens={t: sorted(postings[t])[:3] for t in shared}))
            continue
        gold = {g.document for g in judgment.gold}
        content = [t for t in set(tokenize_content(judgment.query)) if t in content_postings]
        competing = set().union(*(content_postings[t] for t in content)).difference(gold)
        rarest, rarest_docs, trivial = None, 0, False
        present = [t for t in tokens if t in postings]
        if present:
            rarest_docs = min(len(postings[t]) for t in present)
            tied = [t for t in present if len(postings[t]) == rarest_docs]
            giveaways = [t for t in tied if gold.issuperset(postings[t])]
            trivial = bool(giveaways)
            # Name the word that decides: a give-away if there is one, a content word before a function word.
            candidates = giveaways or tied
            rarest = min(candidates, key=lambda t: (t not in content_words, t))
        rows.append(JudgmentAudit(query_id=judgment.query_id, category=judgment.category,
                                  competing_documents=len(competing), rarest_token=rarest,
                                  rarest_token_documents=rarest_docs, trivial=trivial))

    trivial_ids = [r.query_id for r in rows if r.trivial]
    return AuditReport(
        documents=len(documents),
        answerable=len(rows),
        trivial=len(trivial_ids),
        trivial_share=len(trivial_ids) / len(rows) if rows else 0.0,
        trivial_query_ids=trivial_ids,
        median_competing_documents=statistics.median(r.competing_documents for r in rows) if rows else 0,
        duplicated_quotes=duplicated_quotes(documents, judgments),
        no_answer_leaks=leaks,
        judgments=rows,
    )


_SPACE = re.compile(r"\s+")


def normalise(text: str) -> str:
    """``text`` with every run of whitespace one space, lower-cased: the looser of the two duplicate tests."""
    return _SPACE.sub(" ", text).lower()


def duplicated_quotes(documents: Sequence[Document], judgments: Sequence[Judgment]) -> list[DuplicatedQuote]:
    """Every gold quote that also occurs in another document, verbatim or normalised (see :func:`normalise`).

    A document is searched only if it holds every inner word of the quote (the first and last may be cut
    mid-word), so a quote is compared with the few documents that could hold it, not with all of them.
    """
    if not any(gold.quote is not None for judgment in judgments for gold in judgment.gold):
        return []  # document-level judgments (BEIR): nothing to look for, so no index to build
    words = _postings(documents, tokenize, {w for judgment in judgments for gold in judgment.gold
                                            if gold.quote is not None for w in tokenize(gold.quote)[1:-1]})
    texts = {d.path: d.text for d in documents}
    normalised: dict[str, str] = {}
    found: list[DuplicatedQuote] = []
    for judgment in judgments:
        for gold in judgment.gold:
            if gold.quote is None:
                continue
            inner = tokenize(gold.quote)[1:-1]
            candidates = set(texts) if not inner else set(words.get(inner[0], ())).intersection(
                *(words.get(w, ()) for w in inner[1:]))
            plain = normalise(gold.quote)
            # Where the judgment already holds this text as gold (the finding's own advice, followed), or the
            # whole document, the other occurrence counts as relevant: nothing is missing there.
            covered = {g.document for g in judgment.gold if g.quote is None or plain in normalise(g.quote)}
            for path in sorted(candidates - covered - {gold.document}):
                if gold.quote in texts[path]:
                    match: Literal["verbatim", "normalised"] = "verbatim"
                elif plain in normalised.setdefault(path, normalise(texts[path])):
                    match = "normalised"
                else:
                    continue
                found.append(DuplicatedQuote(query_id=judgment.query_id, line=judgment.line, document=gold.document,
                                             quote=gold.quote, also_in=path, match=match))
    return found


GATE_FIX = ("reword those queries so their words also occur in competing documents (the distractor rule, "
            "the guide's docs/judgments.md); or, if this corpus is meant to be this easy, raise "
            "audit.max_trivial_share or set it to null (report without failing) in params.yaml")


def check_no_answer(report: AuditReport, params: AuditParams, judgments_path: str) -> None:
    """Raise on a no_answer query sharing a token with the corpus when ``audit.no_answer_shares_words`` is
    ``error``; ``judgments check``, ``audit`` and the pipeline all call this one check."""
    if report.no_answer_leaks and params.no_answer_shares_words == "error":
        first = report.no_answer_leaks[0]
        shown = ", ".join(f"{t!r} (in {', '.join(docs)})" for t, docs in first.tokens.items())
        raise JudgmentsError(
            judgments_path,
            f"no_answer judgment {first.query_id!r} shares tokens with the corpus: {shown}; it would "
            f"retrieve something and count as a failed abstention "
            f"({len(report.no_answer_leaks)} such judgment(s) in all; audit.no_answer_shares_words is error)",
            fix="reword the query with words that occur nowhere in the corpus (see the guide's docs/judgments.md); "
                "or, where "
                "unanswerable questions share words by nature (SQuAD 2.0, a team's own questions), set "
                "audit.no_answer_shares_words: warn and read no_answer.separability",
            line=first.line or None,
        )


def no_answer_warning(report: AuditReport) -> str | None:
    """What ``audit.no_answer_shares_words: warn`` says about no_answer queries sharing words; None without any."""
    leaks = report.no_answer_leaks
    if not leaks:
        return None
    shown = ", ".join(leak.query_id for leak in leaks[:SHOWN]) + (f" and {len(leaks) - SHOWN} more"
                                                                    if len(leaks) > SHOWN else "")
    return (f"{len(leaks)} no_answer judgment(s) share a word with the corpus ({shown}): BM25 returns something "
            "for them, so abstention (\"returned nothing\") cannot be measured for them; read "
            "no_answer.separability (audit.no_answer_shares_words: warn; error refuses them)")


def check_audit(report: AuditReport, params: AuditParams, judgments_path: str) -> None:
    """Raise on a no_answer leak under ``audit.no_answer_shares_words: error`` (:func:`check_no_answer`), and when
    the gate is set (``audit.max_trivial_share``) and the share of trivial judgments is above it."""
    check_no_answer(report, params, judgments_path)
    limit = params.max_trivial_share
    if limit is not None and report.trivial_share > limit:
        raise JudgmentsError(
            judgments_path,
            f"{report.trivial_share:.1%} of answerable judgments are trivial, above the gate "
            f"audit.max_trivial_share = {limit:g}: {_trivial_list(report)}",
            fix=GATE_FIX,
        )


def _trivial_list(report: AuditReport) -> str:
    rows = [r for r in report.judgments if r.trivial]
    shown = ", ".join(f"{r.query_id} ({r.rarest_token!r})" for r in rows[:SHOWN])
    return shown + (f" and {len(rows) - SHOWN} more" if len(rows) > SHOWN else "")


def findings(report: AuditReport, params: AuditParams) -> list[str]:
    """The audit's findings in words, one per line, ending with what the gate does with them."""
    lines = []
    if report.trivial:
        lines.append(f"trivial: {report.trivial} of {report.answerable} answerable judgments "
                     f"({report.trivial_share:.1%}) hold a word found only in their gold documents, so keyword "
                     f"search finds them by that word alone: {_trivial_list(report)}")
    else:
        lines.append(f"trivial: none of {report.answerable} answerable judgments")
    lines.append(f"competing documents: a query shares a content word with a median of "
                 f"{report.median_competing_documents:g} non-gold documents of {report.documents}")
    duplicated = report.duplicated_quotes
    if duplicated:
        shown = "; ".join(f"{d.query_id} {_short(d.quote)} ({d.document}) also in {d.also_in} ({d.match})"
                          for d in duplicated[:SHOWN])
        more = f"; and {len(duplicated) - SHOWN} more" if len(duplicated) > SHOWN else ""
        lines.append(f"duplicated quotes: {len(duplicated)} gold quote(s) also occur in another document, where a "
                     f"retrieved passage counts as not relevant (add it as a gold quote too, or reword): "
                     f"{shown}{more}")
    else:
        lines.append("duplicated quotes: none")
    warning = no_answer_warning(report)
    if warning and params.no_answer_shares_words == "warn":
        lines.append(f"no_answer sharing words: {warning}")
    limit = params.max_trivial_share
    if limit is None:
        lines.append("gate: none (audit.max_trivial_share is null): these findings fail nothing")
    else:
        verdict = "above it: the run fails" if report.trivial_share > limit else "within it"
        lines.append(f"gate: audit.max_trivial_share = {limit:g}; trivial share {report.trivial_share:.1%} is "
                     f"{verdict}")
    return lines


def _short(quote: str, limit: int = 60) -> str:
    return repr(quote if len(quote) <= limit else quote[: limit - 3] + "...")


def render_table(report: AuditReport) -> str:
    """A short terminal summary of the audit."""
    lines = [f"{'category':<14} {'queries':>7} {'trivial':>7} {'median competing docs':>21}"]
    for category in Category:
        members = [r for r in report.judgments if r.category is category]
        if not members:
            continue
        median = statistics.median(r.competing_documents for r in members)
        trivial = sum(1 for r in members if r.trivial)
        lines.append(f"{category.value:<14} {len(members):>7} {trivial:>7} {median:>21g}")
    lines.append(
        f"trivial share {report.trivial_share:.1%} of {report.answerable} answerable; "
        f"median competing documents {report.median_competing_documents:g} of {report.documents} (content words); "
        f"duplicated quotes {len(report.duplicated_quotes)}; no_answer leaks {len(report.no_answer_leaks)}"
    )
    return "\n".join(lines)


def render(report: AuditReport, params: AuditParams) -> str:
    """The table and the findings: what ``groundkit audit`` and the validate-judgments stage print."""
    return "\n".join([render_table(report), *(f"audit: {line}" for line in findings(report, params))])
