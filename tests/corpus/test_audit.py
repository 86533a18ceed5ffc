import json

import pytest

from groundkit.cli import main
from groundkit.config import AuditParams, TokenizeParams
from groundkit.corpus.audit import AuditReport, DuplicatedQuote, audit, check_audit, findings
from groundkit.corpus.judgments import GoldSpan, Judgment
from groundkit.corpus.passage import Document
from groundkit.errors import JudgmentsError
from tests.conftest import write_judgments

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
    # The give-away is named, not the first of the tied tokens in alphabetical order ('days').
    assert (rows["q3"].trivial, rows["q3"].rarest_token, rows["q3"].rarest_token_documents) == (True, "rate", 1)
    assert not rows["q4"].trivial and rows["q4"].competing_documents == 2
    assert not rows["q5"].trivial and rows["q5"].competing_documents == 1
    assert rows["q5"].rarest_token == "view"
    assert report.trivial_share == pytest.approx(3 / 5)
    assert report.trivial_query_ids == ["q1", "q2", "q3"]
    assert report.median_competing_documents == 2


def test_the_reported_token_is_the_one_that_makes_the_judgment_trivial():
    # The case of issue 15: 'how' and 'overnight' both occur in one document, but only 'overnight' in the gold one.
    docs = [Document(path="nightly.md", text="Backups run overnight and finish by morning."),
            Document(path="howto.md", text="This page shows how snapshots are stored."),
            Document(path="replicas.md", text="Backups run on every replica.")]
    gold = [GoldSpan(document="nightly.md", quote="Backups run overnight")]
    (row,) = audit(docs, [Judgment(query_id="q1", query="how do backups run overnight", category="factoid",
                                   gold=gold)]).judgments
    assert (row.rarest_token, row.rarest_token_documents, row.trivial) == ("overnight", 1, True)
    # Both give-aways: the content word is named before the function word, though 'how' sorts first.
    docs[1] = Document(path="howto.md", text="This page shows where snapshots are stored.")
    docs[0] = Document(path="nightly.md", text="How backups run overnight, and finish by morning.")
    (row,) = audit(docs, [Judgment(query_id="q1", query="how do backups run overnight", category="factoid",
                                   gold=[GoldSpan(document="nightly.md", quote="backups run overnight")])]).judgments
    assert (row.rarest_token, row.trivial) == ("overnight", True)


def test_a_query_sharing_no_token_with_the_corpus_is_not_trivial():
    (row,) = audit(DOCS, [judgment("q1", "anomaly between writers")]).judgments
    assert (row.trivial, row.rarest_token, row.competing_documents) == (False, None, 0)


def test_competing_documents_count_content_words_only():
    docs = [Document(path=f"{name}.md", text=text) for name, text in (
        ("a", "the range is split when it grows"), ("b", "the lease of the range moves"),
        ("c", "the clock is a hybrid one"), ("d", "what the node does with the disk"))]
    # 'what', 'does', 'the' and 'is' are function words: only 'range' (in a and b) and 'clock' (in c) count.
    query = Judgment(query_id="q1", query="what does the range clock do", category="factoid",
                     gold=[GoldSpan(document="a.md", quote="range is split")])
    (row,) = audit(docs, [query]).judgments
    assert row.competing_documents == 2  # b (range) and c (clock); every document shares 'the'


def test_gold_quotes_found_in_another_document_are_reported():
    docs = [Document(path="a.md", text="Backups keep 30 days of history.\nRestore from any point."),
            Document(path="b.md", text="Note: backups keep 30 days of history, like logs."),
            Document(path="c.md", text="Copies keep 30 days of history."),
            Document(path="d.md", text="Old backups keep\n30   days of nothing.")]
    judgments = [
        Judgment(query_id="q1", query="how long are backups kept", category="factoid",
                 gold=[GoldSpan(document="a.md", quote="keep 30 days of history")]),
        Judgment(query_id="q2", query="backup history", category="multi_passage",
                 gold=[GoldSpan(document="a.md", quote="Backups keep 30 days"),
                       GoldSpan(document="a.md", quote="Restore from any point")]),
        # Cut mid-word at both ends: the first and last words are not whole words of any document.
        Judgment(query_id="q3", query="retention", category="factoid",
                 gold=[GoldSpan(document="a.md", quote="ckups keep 30 da")]),
    ]
    found = [(d.query_id, d.quote, d.also_in, d.match) for d in audit(docs, judgments).duplicated_quotes]
    assert found == [
        ("q1", "keep 30 days of history", "b.md", "verbatim"),
        ("q1", "keep 30 days of history", "c.md", "verbatim"),
        ("q2", "Backups keep 30 days", "b.md", "normalised"),
        ("q2", "Backups keep 30 days", "d.md", "normalised"),
        ("q3", "ckups keep 30 da", "b.md", "verbatim"),
        ("q3", "ckups keep 30 da", "d.md", "normalised"),
    ]


def test_a_duplicate_already_gold_in_the_same_judgment_is_not_flagged():
    # Issue 35 item 10: the finding advises "add it as a gold quote too"; once that is done it must go quiet.
    docs = [Document(path="a.md", text="Backups keep 30 days of history."),
            Document(path="b.md", text="Note: backups keep 30 days of history, like logs."),
            Document(path="c.md", text="Copies keep 30 days of history."),
            Document(path="d.md", text="Old BACKUPS keep\n30   days of history.")]
    judgments = [
        # b.md's occurrence is gold as the same quote, d.md's as the text it holds there (normalised equal), c.md's
        # as a whole document; the same quote is still flagged for q2, which made none of them gold.
        Judgment(query_id="q1", query="how long are backups kept", category="multi_passage",
                 gold=[GoldSpan(document="a.md", quote="keep 30 days of history"),
                       GoldSpan(document="b.md", quote="keep 30 days of history"),
                       GoldSpan(document="c.md", whole_document=True),
                       GoldSpan(document="d.md", quote="keep\n30   days of history")]),
        Judgment(query_id="q2", query="backup history", category="factoid",
                 gold=[GoldSpan(document="a.md", quote="keep 30 days of history")]),
    ]
    found = [(d.query_id, d.document, d.also_in, d.match) for d in audit(docs, judgments).duplicated_quotes]
    assert found == [("q2", "a.md", "b.md", "verbatim"), ("q2", "a.md", "c.md", "verbatim"),
                     ("q2", "a.md", "d.md", "normalised")]


def test_no_answer_sharing_a_token_fails_whatever_the_gate_under_error():
    report = audit(DOCS, [judgment("q9", "sourdough snapshot", category="no_answer")])
    for params in (AuditParams(no_answer_shares_words="error"),
                   AuditParams(no_answer_shares_words="error", max_trivial_share=1.0)):
        with pytest.raises(JudgmentsError, match=r"'snapshot' \(in a\.md, b\.md, c\.md\)"):
            check_audit(report, params, "judgments.jsonl")


def test_no_answer_sharing_words_is_a_warning_by_default_and_an_error_when_asked():
    # Issue 35 item 9: imported SQuAD 2.0 data, and a team's natural unanswerable question, share words with the
    # corpus; the default refused them at audit and dvc repro after judgments check had passed them.
    report = audit(DOCS, [judgment("q9", "sourdough snapshot", category="no_answer")])
    assert AuditParams().no_answer_shares_words == "warn"
    check_audit(report, AuditParams(), "judgments.jsonl")  # no error
    assert [line for line in findings(report, AuditParams()) if line.startswith("no_answer sharing words")] == [
        "no_answer sharing words: 1 no_answer judgment(s) share a word with the corpus (q9): BM25 returns something "
        "for them, so abstention (\"returned nothing\") cannot be measured for them; read no_answer.separability "
        "(audit.no_answer_shares_words: warn; error refuses them)"]
    strict = AuditParams(no_answer_shares_words="error")
    with pytest.raises(JudgmentsError, match=r"audit\.no_answer_shares_words: warn and read no_answer\.separability"):
        check_audit(report, strict, "judgments.jsonl")
    clean = audit(DOCS, [judgment("q9", "sourdough", category="no_answer")])
    assert not any(line.startswith("no_answer") for line in findings(clean, AuditParams()))


def test_trivial_share_fails_only_above_a_gate_that_is_set():
    report = audit(DOCS, [judgment("q1", "snapshot view"), judgment("q4", "snapshot")])
    check_audit(report, AuditParams(), "j")  # no gate by default: a finding, not an error
    check_audit(report, AuditParams(max_trivial_share=0.5), "j")
    with pytest.raises(JudgmentsError, match=r"50\.0% of answerable judgments are trivial, above the gate "
                       r"audit\.max_trivial_share = 0\.4: q1 \('view'\)") as info:
        check_audit(report, AuditParams(max_trivial_share=0.4), "j")
    assert "set it to null" in info.value.fix


def test_findings_in_words():
    report = audit(DOCS, [judgment("q1", "snapshot view"), judgment("q4", "snapshot"),
                          Judgment(query_id="q5", query="backup days", category="factoid",
                                   gold=[GoldSpan(document="b.md", quote="thirty days")])])
    report = report.model_copy(update={"duplicated_quotes": [DuplicatedQuote(
        query_id="q5", line=3, document="b.md", quote="thirty days", also_in="c.md", match="normalised")]})
    assert findings(report, AuditParams()) == [
        "trivial: 2 of 3 answerable judgments (66.7%) hold a word found only in their gold documents, so keyword "
        "search finds them by that word alone: q1 ('view'), q5 ('backup')",
        "competing documents: a query shares a content word with a median of 2 non-gold documents of 3",
        "duplicated quotes: 1 gold quote(s) also occur in another document, where a retrieved passage counts as "
        "not relevant (add it as a gold quote too, or reword): q5 'thirty days' (b.md) also in c.md (normalised)",
        "gate: none (audit.max_trivial_share is null): these findings fail nothing",
    ]
    assert findings(report, AuditParams(max_trivial_share=0.5))[-1] == (
        "gate: audit.max_trivial_share = 0.5; trivial share 66.7% is above it: the run fails")


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
    # Content words are stemmed like the index's tokens: "snapshots" competes only once stemmed.
    plural = [judgment("q2", "snapshots retention", "b.md")]
    assert audit(DOCS, plural).judgments[0].competing_documents == 0
    assert audit(DOCS, plural, TokenizeParams(stemmer="english")).judgments[0].competing_documents == 2


# --- groundkit audit


@pytest.fixture
def easy(tmp_path):
    (tmp_path / "corpus").mkdir()
    for document in DOCS:
        (tmp_path / "corpus" / document.path).write_text(document.text + "\n", encoding="utf-8")
    write_judgments(tmp_path / "j.jsonl", [
        {"query_id": "q1", "query": "snapshot view", "category": "factoid",
         "gold": [{"document": "a.md", "quote": "snapshot isolation"}]},
        {"query_id": "q2", "query": "snapshot", "category": "factoid",
         "gold": [{"document": "b.md", "quote": "backup snapshot"}]}])
    return ["--corpus", str(tmp_path / "corpus"), "--judgments", str(tmp_path / "j.jsonl")]


def test_audit_prints_findings_and_writes_the_report_even_when_the_gate_fails(easy, tmp_path, capsys):
    out = tmp_path / "audit.json"
    assert main(["audit", *easy, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "audit: trivial: 1 of 2 answerable judgments (50.0%)" in printed
    assert "audit: gate: none" in printed
    first = out.read_bytes()
    assert AuditReport.model_validate_json(first).trivial_query_ids == ["q1"]

    out.unlink()
    assert main(["audit", *easy, "--set", "audit.max_trivial_share=0.25", "--out", str(out)]) == 1
    assert "above the gate audit.max_trivial_share = 0.25" in capsys.readouterr().err
    assert out.read_bytes() == first


def test_audit_writes_no_report_when_an_input_is_broken(easy, tmp_path, capsys):
    judgments = tmp_path / "j.jsonl"
    records = [json.loads(line) for line in judgments.read_text().splitlines()]
    records[1]["gold"][0]["quote"] = "not in the document"
    write_judgments(judgments, records)
    out = tmp_path / "audit.json"
    assert main(["audit", *easy, "--out", str(out)]) == 1
    assert "quote not found" in capsys.readouterr().err
    assert not out.exists()


def test_judgments_check_audit_and_run_agree_on_a_no_answer_query_sharing_words(tmp_path, monkeypatch, capsys):
    # Issue 35 item 9: "what is the capital of Mongolia" passed judgments check (what CI runs), then failed at
    # audit and dvc repro. All three read audit.no_answer_shares_words now: the repository's params.yaml, or
    # --params; by default (warn) all three pass and say why abstention says nothing for it.
    import yaml

    from tests.conftest import write_tiny_corpus

    corpus, judgments = write_tiny_corpus(tmp_path / "corpus", tmp_path / "judgments.jsonl")
    text = judgments.read_text(encoding="utf-8").replace("sourdough hydration ratio", "how often does a snapshot run")
    judgments.write_text(text, encoding="utf-8")
    inputs = ["--corpus", str(corpus), "--judgments", str(judgments)]
    monkeypatch.chdir(tmp_path)

    assert main(["judgments", "check", *inputs]) == 0  # no params.yaml here: the default, warn
    assert "warning: 1 no_answer judgment(s) share a word with the corpus (q4)" in capsys.readouterr().err
    assert main(["audit", *inputs]) == 0
    assert "no_answer sharing words: 1 no_answer judgment(s)" in capsys.readouterr().out.replace("\n  ", " ")
    assert main(["run", *inputs, "--out", str(tmp_path / "out")]) == 0
    assert "(q4): BM25 returns something" in capsys.readouterr().err.replace("\n  ", " ")

    (tmp_path / "params.yaml").write_text(yaml.safe_dump({"audit": {"no_answer_shares_words": "error"}}),
                                          encoding="utf-8")
    for command in (["judgments", "check", *inputs], ["audit", *inputs, "--params", "params.yaml"],
                    ["run", *inputs, "--params", "params.yaml", "--out", str(tmp_path / "refused")]):
        assert main(command) == 1, command
        err = capsys.readouterr().err
        assert "no_answer judgment 'q4' shares tokens with the corpus: " in err and "'snapshot' (in" in err, err
    assert main(["judgments", "check", *inputs, "--params", str(tmp_path / "missing.yaml")]) == 1  # --params wins
    capsys.readouterr()
    assert main(["judgments", "check", *inputs, "--set", "audit.no_answer_shares_words=warn"]) == 0
