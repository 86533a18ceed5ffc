"""groundkit judgments check | fmt | add | repair, on small corpora whose answers can be read off."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from groundkit.cli import main
from groundkit.corpus.authoring import fmt, next_query_id, propose, shortest, unique_around
from groundkit.corpus.judgments import load_judgments
from groundkit.corpus.passage import Document
from groundkit.corpus.repair import repairs, word_diff
from groundkit.corpus.similarity import REPAIR_THRESHOLD
from groundkit.errors import JudgmentsError

BACKUP = ("Backups take a snapshot of every range.\n"
          "A full backup runs weekly on Sunday night.\n"
          "Incremental backups run hourly and keep 30 days of history.\n"
          "Restores read the newest full backup first.\n")
# One edit of the document, which breaks the quotes of q1, q2 and q3 (q4's sentence is untouched).
EDITED = ("Backups take a snapshot of every range.\n"
          "A full backup runs weekly on Saturday night.\n"
          "Incremental backups run every hour and keep 35 days of history.\n"
          "Restores read the newest full backup first.\n")
RECORDS = [
    {"query_id": "q1", "query": "which night does the full backup run", "category": "factoid",
     "gold": [{"document": "ops/backup.md", "quote": "A full backup runs weekly on Sunday night"}]},
    {"query_id": "q2", "query": "how often do incremental backups run", "category": "multi_passage",
     "gold": [{"document": "ops/backup.md", "quote": "Incremental backups run hourly"},
              {"document": "ops/backup.md", "quote": "keep 30 days of history"}]},
    {"query_id": "q4", "query": "what does a restore read first", "category": "factoid",
     "gold": [{"document": "ops/backup.md", "quote": "Restores read the newest full backup first"}]},
]


def lines_of(records: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


@pytest.fixture
def workspace(tmp_path: Path) -> tuple[Path, Path]:
    corpus = tmp_path / "corpus"
    (corpus / "ops").mkdir(parents=True)
    (corpus / "ops" / "backup.md").write_text(BACKUP, encoding="utf-8")
    (corpus / "leases.md").write_text("A lease is held by one replica.\nThe full backup skips leases.\n",
                                      encoding="utf-8")
    judgments = tmp_path / "judgments.jsonl"
    judgments.write_text(lines_of(RECORDS), encoding="utf-8")
    return corpus, judgments


def args(corpus: Path, judgments: Path) -> list[str]:
    return ["--corpus", str(corpus), "--judgments", str(judgments)]


# --- fmt and check


def test_fmt_sorts_and_canonicalises_and_a_second_run_changes_nothing(tmp_path, capsys):
    path = tmp_path / "j.jsonl"
    messy = ['{"category": "factoid", "gold": [{"quote": "caf\\u00e9 au lait", "document": "b.md"}], '
             '"query": "drinks", "query_id": "q2"}',
             "",
             '{"query_id":"q1","query":"x","category":"no_answer","gold":[]}']
    path.write_text("\n".join(messy) + "\n", encoding="utf-8")
    canonical = ('{"query_id": "q1", "query": "x", "category": "no_answer", "gold": []}\n'
                 '{"query_id": "q2", "query": "drinks", "category": "factoid", '
                 '"gold": [{"document": "b.md", "quote": "café au lait"}]}\n')
    assert main(["judgments", "fmt", "--judgments", str(path)]) == 0
    assert path.read_text(encoding="utf-8") == canonical
    assert "2 judgments rewritten in canonical form" in capsys.readouterr().out
    before = path.stat()
    assert fmt(path) == (2, False)
    assert path.read_text(encoding="utf-8") == canonical
    assert path.stat().st_ino == before.st_ino  # not even replaced by an identical copy


def test_fmt_refuses_what_it_cannot_decide_and_writes_nothing(tmp_path):
    path = tmp_path / "j.jsonl"
    text = lines_of([RECORDS[1], RECORDS[0], RECORDS[1]])
    path.write_text(text, encoding="utf-8")
    with pytest.raises(JudgmentsError, match="duplicate query_id 'q2'") as info:
        fmt(path)
    assert info.value.line == 3
    assert path.read_text(encoding="utf-8") == text


def test_check_passes_a_good_file_and_names_the_line_of_each_kind_of_problem(workspace, capsys):
    corpus, judgments = workspace
    assert main(["judgments", "check", *args(corpus, judgments)]) == 0
    assert "3 judgments; ids unique and ascending, all 4 quotes resolve exactly once, canonical form" in (
        capsys.readouterr().out)

    cases = [
        (lines_of([RECORDS[1], RECORDS[0], RECORDS[2]]), 2, "ids must be in ascending order"),
        (lines_of(RECORDS).replace("Sunday", "Monday"), 1, "quote not found"),
        (lines_of(RECORDS).replace('"query": ', '"query":  ', 1), 1, "not in canonical form"),
        (lines_of(RECORDS[:1]) + "\n" + lines_of(RECORDS[1:]), 2, "is a blank line"),
        (lines_of(RECORDS).rstrip("\n"), 3, "has no line break at its end"),
        (lines_of(RECORDS) + "\n", 4, "is followed by blank lines"),
    ]
    for text, line, message in cases:
        judgments.write_text(text, encoding="utf-8")
        assert main(["judgments", "check", *args(corpus, judgments)]) == 1
        err = capsys.readouterr().err
        assert f"{judgments}:{line}" in err and message in err and "fix:" in err, err
    assert "judgments fmt --judgments" in err


# --- add


def test_proposals_are_whole_words_that_occur_once():
    document = Document(path="b.md", text=BACKUP)
    # 'full backup' occurs twice: for each place, its sentence, then the shortest unique run of words around
    # it, lengthened within its sentence, first after it, then before it.
    assert [p.quote for p in propose(document, "full backup")] == [
        "A full backup runs weekly on Sunday night.", "full backup runs",
        "Restores read the newest full backup first.", "full backup first."]
    # Case and line breaks may differ from the document; the quote is the document's own text.
    assert [p.quote for p in propose(document, "sunday\nNIGHT")] == [
        "A full backup runs weekly on Sunday night.", "Sunday night"]
    # A search string cut inside words proposes the whole words.
    assert propose(document, "ckups ru")[1].quote == shortest(document, "ckups ru").quote == "backups run"
    # A search for the whole sentence: the sentence is the only proposal, and the shortest.
    sentence = "Restores read the newest full backup first."
    assert [p.quote for p in propose(document, sentence)] == [shortest(document, sentence).quote] == [sentence]
    assert unique_around(document, 0, 7).quote == "Backups"  # already unique: kept as it is
    with pytest.raises(JudgmentsError, match=r"does not occur in 'b\.md'"):
        propose(document, "monthly")


def test_next_query_id_follows_the_numbering():
    assert next_query_id(["q001", "q009", "q162"]) == "q163"
    assert next_query_id(["q1", "q2", "q4"]) == "q5"
    assert next_query_id(["ops-7", "ops-12", "x1"]) == "ops-13"
    assert next_query_id(["intro"]) == next_query_id([]) == "q001"


def test_add_inserts_the_judgment_with_the_next_id_and_leaves_other_lines_alone(workspace, capsys):
    corpus, judgments = workspace
    before = judgments.read_text(encoding="utf-8").splitlines()
    common = ["judgments", "add", *args(corpus, judgments), "--query", "which replica holds a lease",
              "--document", "leases.md", "--search", "held by"]
    assert main([*common, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[:2] == ['1. "A lease is held by one replica." (line:col 1:1)',
                                    '2. "held by" (line:col 1:12)']
    assert judgments.read_text(encoding="utf-8").splitlines() == before

    assert main(common) == 0  # the sentence, by default
    new = ('{"query_id": "q5", "query": "which replica holds a lease", "category": "factoid", '
           '"gold": [{"document": "leases.md", "quote": "A lease is held by one replica."}]}')
    assert judgments.read_text(encoding="utf-8").splitlines() == [*before, new]
    assert f"added at {judgments}:4: {new}" in capsys.readouterr().out

    # An id that sorts between others goes between them.
    assert main([*common, "--id", "q3", "--category", "lexical_gap"]) == 0
    lines = judgments.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["query_id"] for line in lines] == ["q1", "q2", "q3", "q4", "q5"]
    assert lines[:2] + lines[3:] == [*before, new]
    assert main(["judgments", "check", *args(corpus, judgments)]) == 0


def test_add_warns_of_the_same_text_in_another_document(workspace, capsys):
    corpus, judgments = workspace
    (corpus / "copy.md").write_text("Note: a lease is held by one replica.\n", encoding="utf-8")
    assert main(["judgments", "add", *args(corpus, judgments), "--query", "q", "--document", "leases.md",
                 "--search", "lease is held", "--dry-run"]) == 0
    shown = capsys.readouterr().out
    # Said of the proposal it concerns, as a question: whether copy.md answers too is the person's call.
    assert ('1. "A lease is held by one replica." (line:col 1:1; also occurs in copy.md; if it answers too, add it '
            "with --to)") in shown
    assert "add those as gold quotes too" not in shown


def test_add_starts_a_new_file_and_takes_no_answer_judgments(tmp_path, workspace, capsys):
    corpus, _ = workspace
    path = tmp_path / "new" / "judgments.jsonl"
    assert main(["judgments", "add", *args(corpus, path), "--query", "bonsai wiring", "--category",
                 "no_answer"]) == 0
    assert path.read_text(encoding="utf-8") == (
        '{"query_id": "q001", "query": "bonsai wiring", "category": "no_answer", "gold": []}\n')


@pytest.mark.parametrize(("extra", "where", "what"), [
    (["--document", "nowhere.md", "--search", "x"], "--document", "is not a document of the corpus"),
    (["--document", "leases.md", "--search", "monthly"], "--search", "does not occur in 'leases.md'"),
    (["--document", "leases.md"], "--search", "is required for a factoid judgment"),
    (["--document", "leases.md", "--search", "lease", "--choose", "9"], "--choose", "there are 4 proposals"),
    (["--document", "leases.md", "--search", "lease", "--id", "q2"], "--id", "'q2' is already used (line 2"),
    (["--document", "leases.md", "--search", "lease", "--id", "a b"], "--id", "query_id must start"),
    (["--category", "no_answer", "--document", "leases.md"], "--category", "has no gold quote"),
])
def test_add_refuses_bad_options_with_one_message(workspace, capsys, extra, where, what):
    corpus, judgments = workspace
    before = judgments.read_bytes()
    assert main(["judgments", "add", *args(corpus, judgments), "--query", "which replica", *extra]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {where}") and what in err and "fix:" in err, err
    assert judgments.read_bytes() == before


def test_add_to_appends_a_quote_to_a_judgment_and_replace_puts_one_in_place_of_another(workspace, capsys):
    corpus, judgments = workspace
    before = judgments.read_text(encoding="utf-8").splitlines()
    to_q4 = ["judgments", "add", *args(corpus, judgments), "--to", "q4"]
    assert main([*to_q4, "--document", "leases.md", "--search", "held by", "--dry-run"]) == 0
    assert judgments.read_text(encoding="utf-8").splitlines() == before
    assert main([*to_q4, "--document", "leases.md", "--search", "held by"]) == 0
    q4 = {"query_id": "q4", "query": "what does a restore read first", "category": "factoid",
          "gold": [{"document": "ops/backup.md", "quote": "Restores read the newest full backup first"},
                   {"document": "leases.md", "quote": "A lease is held by one replica."}]}
    assert judgments.read_text(encoding="utf-8").splitlines() == [*before[:2], json.dumps(q4, ensure_ascii=False)]
    assert capsys.readouterr().out.splitlines()[-1] == f"changed {judgments}:3: {json.dumps(q4)}"

    # Quote 1 replaced by the shortest unique run around "newest full": its grade (here 1) stays.
    assert main([*to_q4, "--replace", "1", "--document", "ops/backup.md", "--search", "newest full",
                 "--shortest"]) == 0
    q4["gold"][0]["quote"] = "newest full"
    assert judgments.read_text(encoding="utf-8").splitlines() == [*before[:2], json.dumps(q4, ensure_ascii=False)]
    assert main(["judgments", "check", *args(corpus, judgments)]) == 0


def test_a_replaced_quote_keeps_its_grade(tmp_path):
    from groundkit.corpus.authoring import Proposal, amended

    path = tmp_path / "j.jsonl"
    path.write_text(lines_of([{"query_id": "q1", "query": "q", "category": "factoid", "gold": [
        {"document": "a.md", "quote": "old words", "grade": 3}]}]), encoding="utf-8")
    document = Document(path="b.md", text="Some new words.\n")
    changed = amended(path, load_judgments(path), "q1", Proposal(document, 5, 14), replace=1)
    assert [(g.document, g.quote, g.grade) for g in changed.gold] == [("b.md", "new words", 3)]
    assert changed.line == 1


@pytest.mark.parametrize(("extra", "where", "what"), [
    (["--to", "q5"], "--to", "'q5' is not a judgment of"),
    (["--to", "qq4"], "--to", "did you mean 'q4'?"),
    (["--to", "q4", "--query", "x"], "--query", "is not taken with --to"),
    (["--to", "q4", "--category", "boundary"], "--category", "is not taken with --to"),
    (["--replace", "1", "--query", "x"], "--replace", "needs --to"),
    (["--to", "q4", "--replace", "2"], "--replace", "is 2; q4 has 1 gold quote"),
    (["--to", "q4", "--search", "newest full backup first"], "--search",
     "q4's gold 1 already quotes part of this passage of ops/backup.md"),
    (["--to", "q4", "--search", "newest", "--shortest", "--choose", "1"], "--shortest", "both pick a proposal"),
    (["--query", "x", "--document", "ops/backup.mdd", "--search", "x"], "--document", "did you mean 'ops/backup.md'?"),
])
def test_add_to_refuses_what_does_not_fit_with_one_message(workspace, capsys, extra, where, what):
    corpus, judgments = workspace
    before = judgments.read_bytes()
    document = [] if "--document" in extra else ["--document", "ops/backup.md"]
    search = [] if "--search" in extra else ["--search", "newest full backup"]
    assert main(["judgments", "add", *args(corpus, judgments), *document, *search, *extra]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {where}") and what in err and "fix:" in err, err
    assert judgments.read_bytes() == before


def test_a_no_answer_judgment_takes_no_quote(tmp_path, workspace, capsys):
    corpus, _ = workspace
    path = tmp_path / "j.jsonl"
    path.write_text(lines_of([{"query_id": "q1", "query": "bonsai", "category": "no_answer", "gold": []}]))
    assert main(["judgments", "add", *args(corpus, path), "--to", "q1", "--document", "leases.md", "--search",
                 "lease"]) == 1
    assert "'q1' is a no_answer judgment (line 1): a gold quote would make it answerable" in capsys.readouterr().err


# --- repair


def test_repair_proposes_the_new_text_of_each_quote_an_edit_broke(workspace, capsys):
    corpus, judgments = workspace
    (corpus / "ops" / "backup.md").write_text(EDITED, encoding="utf-8")
    found = repairs(load_judgments(judgments), {"ops/backup.md": Document(path="ops/backup.md", text=EDITED)})
    assert [(r.query_id, r.index, r.proposal, r.place) for r in found] == [
        ("q1", 0, "A full backup runs weekly on Saturday night", "2:1"),
        ("q2", 0, "Incremental backups run every hour", "3:1"),
        ("q2", 1, "keep 35 days of history", "3:40"),
    ]
    # difflib's ratio 2M/T: 'Sunday' -> 'Saturday' keeps 40 of 41 + 43 characters; 'hourly' -> 'every hour'
    # keeps 28 of 30 + 34 ('hour'); '30' -> '35' keeps 22 of 23 + 23.
    assert [r.similarity for r in found] == pytest.approx([80 / 84, 56 / 64, 44 / 46])
    assert word_diff(found[1].quote, found[1].proposal) == "Incremental backups run [-hourly-] {+every hour+}"

    before = judgments.read_bytes()
    assert main(["judgments", "repair", *args(corpus, judgments)]) == 1  # a dry run: nothing written
    out = capsys.readouterr()
    assert judgments.read_bytes() == before
    assert '  + "Incremental backups run every hour"' in out.out
    assert "similarity 0.875 at line:col 3:1: --write applies it" in out.out
    assert "3 quote(s) do not resolve; --write would apply 3 (similarity at least 0.8) and leave 0 for a person" \
        in out.err

    assert main(["judgments", "repair", *args(corpus, judgments), "--write"]) == 0
    records = [json.loads(line) for line in judgments.read_text(encoding="utf-8").splitlines()]
    assert [g["quote"] for r in records for g in r["gold"]] == [
        "A full backup runs weekly on Saturday night", "Incremental backups run every hour",
        "keep 35 days of history", "Restores read the newest full backup first"]
    assert judgments.read_text(encoding="utf-8").splitlines()[2] == before.decode().splitlines()[2]
    assert main(["judgments", "check", *args(corpus, judgments)]) == 0
    assert main(["judgments", "repair", *args(corpus, judgments)]) == 0
    assert "nothing to repair" in capsys.readouterr().out


def test_repair_proposes_whole_sentences_for_a_quote_that_was_one(tmp_path, capsys):
    # Both sentences are quoted whole. One edit moves "On Sunday nights" to the front; another adds "before
    # pruning" at the end. The nearest run of words used to cut each: "a full backup runs weekly.\nIncremental
    # backups run hourly" (the end of one sentence and the start of the next) and "... 30 days of history".
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    edited = BACKUP.replace("A full backup runs weekly on Sunday night.", "On Sunday nights a full backup runs weekly.")
    edited = edited.replace("of history.", "of history before pruning.")
    (corpus / "backup.md").write_text(edited, encoding="utf-8")
    sentences = ["A full backup runs weekly on Sunday night.", "Incremental backups run hourly and keep 30 days of "
                 "history."]
    judgments = tmp_path / "judgments.jsonl"
    judgments.write_text(lines_of([{"query_id": f"q{i}", "query": "q", "category": "factoid",
                                    "gold": [{"document": "backup.md", "quote": quote}]}
                                   for i, quote in enumerate(sentences, start=1)]), encoding="utf-8")
    found = repairs(load_judgments(judgments), {"backup.md": Document(path="backup.md", text=edited)})
    assert [r.proposal for r in found] == ["On Sunday nights a full backup runs weekly.",
                                           "Incremental backups run hourly and keep 30 days of history before pruning."]
    # The second quote is all of the new sentence but its two added words: 2M/T = 2 x 59 / (59 + 74).
    assert found[1].similarity == pytest.approx(118 / 133)
    assert main(["judgments", "repair", *args(corpus, judgments), "--write"]) == 1
    err = capsys.readouterr().err
    assert "2 quote(s) do not resolve; 1 applied (similarity at least 0.8), 1 left for a person" in err
    assert json.loads(judgments.read_text().splitlines()[1])["gold"][0]["quote"] == found[1].proposal


def test_repair_writes_only_what_reaches_the_threshold(workspace, capsys):
    corpus, judgments = workspace
    rewritten = EDITED.replace("A full backup runs weekly on Saturday night.", "Full copies are taken at weekends.")
    (corpus / "ops" / "backup.md").write_text(rewritten, encoding="utf-8")
    assert main(["judgments", "repair", *args(corpus, judgments), "--write"]) == 1
    out = capsys.readouterr()
    assert f"below {REPAIR_THRESHOLD:g}: left for a person" in out.out
    assert "1 quote(s) still do not resolve" in out.err
    records = [json.loads(line) for line in judgments.read_text(encoding="utf-8").splitlines()]
    assert records[0]["gold"][0]["quote"] == "A full backup runs weekly on Sunday night"  # untouched
    assert records[1]["gold"][0]["quote"] == "Incremental backups run every hour"
    # A stricter threshold leaves the rest alone too.
    assert main(["judgments", "repair", *args(corpus, judgments), "--min-similarity", "0.99", "--write"]) == 1
    assert main(["judgments", "repair", *args(corpus, judgments), "--min-similarity", "2"]) == 1
    assert "--min-similarity: '2' is not a number from 0 to 1" in capsys.readouterr().err


def test_repair_leaves_an_ambiguous_quote_and_a_missing_document_to_a_person(workspace, capsys):
    corpus, judgments = workspace
    (corpus / "ops" / "backup.md").write_text(BACKUP + "Restores read the newest full backup first.\n",
                                              encoding="utf-8")
    (corpus / "ops" / "backup.md").rename(corpus / "ops" / "backups.md")
    found = repairs(load_judgments(judgments), {})
    assert {r.problem for r in found} == {"the document is not in the corpus (renamed or deleted?)"}
    (corpus / "ops" / "backups.md").rename(corpus / "ops" / "backup.md")
    assert main(["judgments", "repair", *args(corpus, judgments), "--write"]) == 1
    out = capsys.readouterr().out
    assert "q4" in out and "occurs 2 times" in out and "no proposal" in out


PRIMARY = "The primary replica answers reads within five milliseconds"
STANDBY = "The standby replica answers reads within fifty milliseconds"  # difflib ratio 68/78 = 0.872 to PRIMARY
REPLICAS = f"Replication notes.\n{PRIMARY}.\n{STANDBY}.\nLeases expire after ten seconds.\n"


def _replica_workspace(root: Path, *, standby_is_gold: bool) -> tuple[Path, Path]:
    corpus = root / "corpus"
    corpus.mkdir(parents=True)
    (corpus / "replicas.md").write_text(REPLICAS, encoding="utf-8")
    (corpus / "leases.md").write_text("A lease is held by one replica.\n", encoding="utf-8")
    records = [{"query_id": "q1", "query": "how fast does the primary answer reads", "category": "factoid",
                "gold": [{"document": "replicas.md", "quote": PRIMARY}]}]
    if standby_is_gold:
        records.append({"query_id": "q2", "query": "how fast does the standby answer reads", "category": "factoid",
                        "gold": [{"document": "replicas.md", "quote": STANDBY}]})
    judgments = root / "judgments.jsonl"
    judgments.write_text(lines_of(records), encoding="utf-8")
    return corpus, judgments


@pytest.mark.parametrize(("moved", "why"), [
    (True, "the quote now occurs in leases.md: the sentence moved"),
    (False, "the passage overlaps q2's gold quote 1, another fact of the document"),
], ids=["moved", "deleted"])
def test_repair_never_reanchors_a_quote_on_another_judgments_gold(tmp_path, capsys, moved, why):
    # q1's sentence leaves replicas.md (moved to leases.md, or deleted); its nearest passage is q2's answer, similar
    # enough (0.872) to pass the threshold, and already q2's gold. Written, q1 would quote q2's fact and check pass.
    corpus, judgments = _replica_workspace(tmp_path, standby_is_gold=True)
    (corpus / "replicas.md").write_text(REPLICAS.replace(f"{PRIMARY}.\n", ""), encoding="utf-8")
    if moved:
        (corpus / "leases.md").write_text(f"A lease is held by one replica.\n{PRIMARY}.\n", encoding="utf-8")
    before = judgments.read_bytes()
    assert main(["judgments", "repair", *args(corpus, judgments), "--write"]) == 1
    out, err = capsys.readouterr()
    assert f'  + "{STANDBY}"' in out and f"similarity 0.872 at line:col 2:1: left for a person: {why}" in out
    assert "1 quote(s) do not resolve; 0 applied" in err and "1 quote(s) still do not resolve" in err
    assert judgments.read_bytes() == before


def test_repair_leaves_a_sentence_the_committed_document_already_held_to_a_person(tmp_path, capsys):
    from tests.dvc_helpers import run

    # No judgment quotes the standby sentence; the committed document shows it was there beside q1's quote.
    corpus, judgments = _replica_workspace(tmp_path, standby_is_gold=False)
    run(["git", "init", "-q", "-b", "main"], tmp_path)
    run(["git", "add", "-A"], tmp_path)
    run(["git", "commit", "-q", "-m", "corpus"], tmp_path)
    (corpus / "replicas.md").write_text(REPLICAS.replace(f"{PRIMARY}.\n", ""), encoding="utf-8")
    before = judgments.read_bytes()
    assert main(["judgments", "repair", *args(corpus, judgments), "--write"]) == 1
    out = capsys.readouterr().out
    assert "left for a person: the document held this passage already when the quote still resolved" in out
    assert judgments.read_bytes() == before
    # An edit of the quote itself is still applied: the edited sentence was not in the committed document.
    (corpus / "replicas.md").write_text(REPLICAS.replace("five milliseconds", "four milliseconds"), encoding="utf-8")
    assert main(["judgments", "repair", *args(corpus, judgments), "--write"]) == 0
    assert json.loads(judgments.read_text())["gold"][0]["quote"] == PRIMARY.replace("five", "four")


def test_rewriting_keeps_a_symlink_a_link_and_the_file_mode(tmp_path):
    real = tmp_path / "real.jsonl"
    real.write_text(lines_of([RECORDS[2], RECORDS[0]]), encoding="utf-8")
    real.chmod(0o640)
    link = tmp_path / "judgments.jsonl"
    link.symlink_to(real)
    assert fmt(link) == (2, True)
    assert link.is_symlink() and (real.stat().st_mode & 0o777) == 0o640
    assert real.read_text(encoding="utf-8") == lines_of([RECORDS[0], RECORDS[2]])


# --- concurrent writers


def test_concurrent_writers_keep_every_line_and_the_id_order(workspace):
    """Commands at once that read, change and write the file back: add (a judgment, or a quote to one), fmt and
    repair --write.

    Five thousand padding judgments (written with their keys out of canonical order, for fmt to rewrite) make
    each read and write take long enough that, unlocked, two commands' read-modify-writes overlapped: one
    rename dropped the other's line, or two adds took the same next id.
    """
    from tests.dvc_helpers import BIN, env

    corpus, judgments = workspace
    padding = [{"category": "no_answer", "gold": [], "query": f"padding {i}", "query_id": f"p{i:05d}"}
               for i in range(5000)]
    judgments.write_text(lines_of(padding + RECORDS), encoding="utf-8")
    added = []

    def add(number: int) -> list[str]:
        added.append(f"which replica holds lease {number}")
        return ["judgments", "add", *args(corpus, judgments), "--query", added[-1], "--document", "leases.md",
                "--search", "lease is held"]

    rounds = [[add(4 * r + i) for i in range(4)] for r in range(3)]
    rounds.append([add(12), add(13), ["judgments", "fmt", "--judgments", str(judgments)],
                   ["judgments", "repair", *args(corpus, judgments), "--write"],
                   ["judgments", "add", *args(corpus, judgments), "--to", "q4", "--document", "leases.md",
                    "--search", "lease is held"]])
    for number, commands in enumerate(rounds):
        if number == len(rounds) - 1:
            (corpus / "ops" / "backup.md").write_text(EDITED, encoding="utf-8")  # q1's and q2's quotes break
        started = [subprocess.Popen([str(BIN / "groundkit"), *command], env=env(), stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True) for command in commands]
        for process, command in zip(started, commands, strict=True):
            out, err = process.communicate()
            assert process.returncode == 0, (command, err)
            assert command[1] != "add" or out.splitlines()[-1].startswith(
                f"changed {judgments}:" if "--to" in command else f"added at {judgments}:"), out

    loaded = load_judgments(judgments)  # ids unique and ascending, or it raises
    assert len(loaded) == len(padding) + len(RECORDS) + len(added)
    assert sorted(j.query for j in loaded if j.query.startswith("which replica holds lease")) == sorted(added)
    assert [j.query_id for j in loaded][-len(added) - len(RECORDS):] == \
        [f"p{i:05d}" for i in range(5000, 5000 + len(added))] + ["q1", "q2", "q4"]
    assert [g.quote for j in loaded if j.query_id in ("q1", "q2", "q4") for g in j.gold] == [
        "A full backup runs weekly on Saturday night", "Incremental backups run every hour", "keep 35 days of history",
        "Restores read the newest full backup first", "A lease is held by one replica."]
    # Canonical, and every quote resolves. The padding shares numbers with the corpus: a warning here, where the
    # repository's params.yaml (run from its root) would refuse it.
    assert main(["judgments", "check", *args(corpus, judgments), "--set", "audit.no_answer_shares_words=warn"]) == 0
