import pytest

from groundkit.config import AuditParams, TokenizeParams
from groundkit.corpus.audit import audit, check_audit
from groundkit.corpus.judgments import GoldSpan, Judgment
from groundkit.corpus.passage import Document
from groundkit.errors import JudgmentsError

DOCS = [
    Document(path="a.md", text="snapshot isolation reads a consistent view"),
    Document(path="b.md", text="backup snapshot retention is thirty days"),
    Document(path="c.md", text="replica snapshot transfer rate"),
]


def judgment(qid: str, query: str, doc: str = "a.md", category: str = "factoid") -> Judgment:
    gold = [] if category == "no_answer" else [GoldSpan(document=doc, quote="snapshot")]
    return Judgment(query_id=qid, query=query, category=category, gold=gold)


def test_competing_documents_and_trivial_rule():
    report = audit(DOCS, [
        judgment("q1", "snapshot view"),        # rarest token 'view' only in gold a.md: trivial
        judgment("q2", "snapshot retention", "b.md"),  # 'retention' only in b.md: trivial
        judgment("q3", "snapshot rate days", "c.md"),  # 'rate' (c) and 'days' (b) tie at df 1; 'rate' is gold-only
        judgment("q4", "snapshot", "a.md"),     # df 3, others compete: not trivial
        judgment("q5", "view", "b.md"),         # gold b.md, token only in a.md: competing 1, not trivial
    ])
    rows = {r.query_id: r for r in report.judgments}
    assert rows["q1"].trivial and rows["q1"].competing_documents == 2
    assert rows["q2"].trivial
    assert rows["q3"].trivial
    assert not rows["q4"].trivial and rows["q4"].competing_documents == 2
    assert not rows["q5"].trivial and rows["q5"].competing_documents == 1
    assert report.trivial_share == pytest.approx(3 / 5)
    assert report.median_competing_documents == 2


def test_no_answer_sharing_a_token_fails():
    report = audit(DOCS, [judgment("q9", "sourdough snapshot", category="no_answer")])
    with pytest.raises(JudgmentsError, match=r"'snapshot' \(in a\.md, b\.md, c\.md\)"):
        check_audit(report, AuditParams(), "judgments.jsonl")


def test_trivial_share_over_limit_fails():
    report = audit(DOCS, [judgment("q1", "snapshot view"), judgment("q4", "snapshot")])
    check_audit(report, AuditParams(max_trivial_share=0.5), "j")
    with pytest.raises(JudgmentsError, match=r"50\.0% of answerable judgments are trivial"):
        check_audit(report, AuditParams(max_trivial_share=0.4), "j")


def test_whole_document_gold_counts_its_document_as_gold():
    whole = Judgment(query_id="q1", query="snapshot view", category="factoid",
                     gold=[GoldSpan(document="a.md", whole_document=True)])
    (row,) = audit(DOCS, [whole]).judgments
    assert (row.competing_documents, row.rarest_token, row.trivial) == (2, "view", True)


def test_audit_uses_the_index_tokenizer():
    # "snapshots" shares no token with the corpus until it is stemmed to "snapshot".
    query = [judgment("q9", "snapshots", category="no_answer")]
    assert audit(DOCS, query).no_answer_leaks == []
    stemmed = audit(DOCS, query, TokenizeParams(stemmer="english"))
    assert stemmed.no_answer_leaks[0].tokens == {"snapshot": ["a.md", "b.md", "c.md"]}
    # With stopwords dropped, "a" (only in a.md) no longer makes a.md compete for a b.md judgment.
    assert audit(DOCS, [judgment("q2", "a thirty", "b.md")]).judgments[0].competing_documents == 1
    assert audit(DOCS, [judgment("q2", "a thirty", "b.md")], TokenizeParams(stopwords="en")).judgments[
        0].competing_documents == 0
