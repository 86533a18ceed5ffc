"""The corpus audit: does this corpus and these judgments measure anything?

Integrity checks (every quote resolves once, ids ascend) pass just as well
on a corpus of lexically disjoint documents, where any keyword identifies
the right document and BM25 wins by construction. The audit measures what
they cannot, under the same tokenizer the index uses:

* competing documents: for each answerable judgment, how many documents
  outside its gold set share at least one token with the query;
* trivial judgments: no competing document at all, or the query's rarest
  token (lowest document frequency) occurs only in gold documents;
* no_answer queries must share no token with the corpus, because abstention
  is measured as "retrieval returned nothing" (no score threshold).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from groundkit._models import Record
from groundkit.config import AuditParams, TokenizeParams
from groundkit.corpus.judgments import Category, Judgment
from groundkit.corpus.passage import Document
from groundkit.corpus.tokenizing import make_tokenizer
from groundkit.errors import JudgmentsError


class JudgmentAudit(Record):
    """The audit of one answerable judgment."""

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


class AuditReport(Record):
    """The whole audit; written as build/audit.json."""

    documents: int
    answerable: int
    trivial: int
    trivial_share: float
    trivial_query_ids: list[str]
    median_competing_documents: float
    no_answer_leaks: list[NoAnswerLeak]
    judgments: list[JudgmentAudit]


def audit(
    documents: Sequence[Document], judgments: Sequence[Judgment], tokenizer: TokenizeParams | None = None
) -> AuditReport:
    """Audit ``judgments`` against ``documents`` (no_answer leaks included, nothing raised).

    ``tokenizer`` must be the index's: a stemmer can make a no_answer query
    share a token with the corpus, and stopwords can remove the only one.
    A whole-document gold span counts the same as a quote: its document is gold.
    """
    tokenize = make_tokenizer(tokenizer)
    postings: dict[str, set[str]] = {}
    for document in documents:
        for token in set(tokenize(document.text)):
            postings.setdefault(token, set()).add(document.path)

    rows: list[JudgmentAudit] = []
    leaks: list[NoAnswerLeak] = []
    for judgment in judgments:
        tokens = sorted(set(tokenize(judgment.query)))
        if judgment.category is Category.NO_ANSWER:
            shared = [t for t in tokens if t in postings]
            if shared:
                leaks.append(NoAnswerLeak(query_id=judgment.query_id, line=judgment.line,
                                          tokens={t: sorted(postings[t])[:3] for t in shared}))
            continue
        gold = {g.document for g in judgment.gold}
        present = [t for t in tokens if t in postings]
        competing = set().union(*(postings[t] for t in present)) - gold if present else set()
        rarest, rarest_docs, trivial = None, 0, True
        if present:
            low = min(len(postings[t]) for t in present)
            rarest_tokens = [t for t in present if len(postings[t]) == low]
            rarest, rarest_docs = rarest_tokens[0], low
            trivial = not competing or any(postings[t] <= gold for t in rarest_tokens)
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
        no_answer_leaks=leaks,
        judgments=rows,
    )


def check_audit(report: AuditReport, params: AuditParams, judgments_path: str) -> None:
    """Raise if a no_answer query shares a token with the corpus or too many judgments are trivial."""
    if report.no_answer_leaks:
        first = report.no_answer_leaks[0]
        shown = ", ".join(f"{t!r} (in {', '.join(docs)})" for t, docs in first.tokens.items())
        raise JudgmentsError(
            judgments_path,
            f"no_answer judgment {first.query_id!r} shares tokens with the corpus: {shown}; it would "
            f"retrieve something and count as a failed abstention "
            f"({len(report.no_answer_leaks)} such judgment(s) in all)",
            fix="reword the query with words that occur nowhere in the corpus (see evals/README.md)",
            line=first.line or None,
        )
    if report.trivial_share > params.max_trivial_share:
        raise JudgmentsError(
            judgments_path,
            f"{report.trivial_share:.1%} of answerable judgments are trivial (limit audit.max_trivial_share = "
            f"{params.max_trivial_share:.0%}): {', '.join(report.trivial_query_ids[:10])}",
            fix="reword those queries so their words also occur in competing documents (the distractor rule)",
        )


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
        f"median competing documents {report.median_competing_documents:g} of {report.documents}; "
        f"no_answer leaks {len(report.no_answer_leaks)}"
    )
    return "\n".join(lines)
