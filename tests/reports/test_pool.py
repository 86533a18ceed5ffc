"""groundkit pool: the unjudged top passages of several runs, a review sheet, and judged@k."""

from __future__ import annotations

import csv
import io
import json
import random
from pathlib import Path

import pytest

from groundkit.cli import main
from groundkit.corpus.judgments import Category
from groundkit.corpus.passage import Excerpt
from groundkit.corpus.spans import ResolvedJudgment, ResolvedSpan
from groundkit.errors import ReviewError
from groundkit.reports.pool import COLUMNS, Mark, RankedRun, judged_at, pool, read_marks, review_csv
from tests.conftest import write_judgments, write_tiny_corpus

TEXT = "alpha beta gamma delta epsilon zeta eta theta iota kappa"


def passage(start: int, end: int, document: str = "d.md") -> Excerpt:
    return Excerpt(document=document, start=start, end=end, text=TEXT[start:end])


def gold(query_id: str, *spans: tuple[int, int]) -> ResolvedJudgment:
    return ResolvedJudgment(query_id=query_id, query=f"query {query_id}", category=Category.FACTOID,
                            spans=[ResolvedSpan(document="d.md", quote=TEXT[s:e], start=s, end=e) for s, e in spans])


P1, P2, P3, P4 = passage(0, 10), passage(11, 22), passage(23, 36), passage(37, 48)


def test_pool_by_hand():
    judgment = gold("q1", (6, 10))  # 'beta' lies in P1 only
    a = RankedRun("a", {"q1": [P1, P2, P3]})
    b = RankedRun("b", {"q1": [P3, P4, P1]})
    result = pool([a, b], [judgment], depth=2)
    # a's top 2: P1 (gold), P2; b's top 2: P3, P4. P3 is a's third, past the depth.
    assert [(c.passage.start, c.ranks) for c in result.candidates["q1"]] == [(23, {"b": 1}), (11, {"a": 2}),
                                                                               (37, {"b": 2})]
    assert result.judged == {"a": {"judged": 0.5, "queries": 1}, "b": {"judged": 0.0, "queries": 1}}

    marks = {("q1", "d.md", 23, 36): Mark(P3.text, True, ""),          # reviewed: counts for b
             ("q1", "d.md", 37, 48): Mark(P4.text, False, "unsure"),   # a note only: counts for nothing
             ("q1", "d.md", 11, 22): Mark("other text", True, "")}     # the passage changed: dropped
    result = pool([a, b], [judgment], depth=2, marks=marks)
    assert result.judged["b"] == {"judged": 0.5, "queries": 1}
    assert result.judged["a"] == {"judged": 0.5, "queries": 1}
    assert result.stale_marks == 1
    rows = list(csv.DictReader(review_csv(result).splitlines()))
    assert [(r["start"], r["runs"], r["reviewed"], r["note"]) for r in rows] == [
        ("23", "b:1", "yes", ""), ("11", "a:2", "", ""), ("37", "b:2", "", "unsure")]


def test_overlapping_passages_of_two_chunkings_are_one_row_read_once():
    # Two chunkings of TEXT (56 characters): a cuts "gamma delta" [11, 22) and "theta iota" [40, 50); b cuts
    # "beta gamma" [6, 16) and "iota kappa" [46, 56). Each of a's passages overlaps one of b's.
    assert len(TEXT) == 56
    a = RankedRun("a", {"q1": [passage(11, 22), passage(40, 50)]})
    b = RankedRun("b", {"q1": [passage(6, 16), passage(46, 56)]})
    judgment = gold("q1", (0, 5))  # 'alpha': in no ranked passage
    result = pool([a, b], [judgment], depth=2)
    assert [(c.passage.start, c.passage.end, c.passage.text, c.ranks) for c in result.candidates["q1"]] == [
        (6, 22, "beta gamma delta", {"a": 1, "b": 1}), (40, 56, "theta iota kappa", {"a": 2, "b": 2})]
    # One mark on a row counts for every passage inside it, whichever run ranked it.
    marks = {("q1", "d.md", 6, 22): Mark("beta gamma delta", True, "")}
    assert pool([a, b], [judgment], depth=2, marks=marks).judged == {"a": {"judged": 0.5, "queries": 1},
                                                                    "b": {"judged": 0.5, "queries": 1}}
    # Passages that only touch (no shared character) stay apart, as they do under the relevance rule.
    c = RankedRun("c", {"q1": [passage(6, 10), passage(11, 16)]})
    assert [(r.passage.start, r.passage.end) for r in pool([c], [judgment], depth=2).candidates["q1"]] == [
        (6, 10), (11, 16)]


def test_a_run_that_retrieved_nothing_for_a_query_is_not_averaged_over_it():
    a = RankedRun("a", {"q1": [P1], "q2": []})
    assert judged_at(a, [gold("q1", (0, 3)), gold("q2", (0, 3))], depth=10) == {"q1": 1.0}


def test_judged_at_k_agrees_with_ir_measures():
    import ir_measures

    rng = random.Random(7)
    passages = [passage(s, s + 5) for s in range(0, 50, 5)]
    judgments = [gold(f"q{i}", (rng.randrange(0, 45), rng.randrange(46, 50))) for i in range(8)]
    reviewed = {(j.query_id, p.document, p.start, p.end) for j in judgments for p in rng.sample(passages, 3)}
    run = RankedRun("r", {j.query_id: rng.sample(passages, rng.randrange(1, 10)) for j in judgments})
    ours = judged_at(run, judgments, 5, reviewed)

    def pid(p: Excerpt) -> str:
        return f"{p.start}-{p.end}"

    qrels = [ir_measures.Qrel(q, pid(p), 0) for q, _, s, e in reviewed for p in passages if (p.start, p.end) == (s, e)]
    qrels += [ir_measures.Qrel(j.query_id, pid(p), 1) for j in judgments for p in passages
              if any(p.overlaps(span) for span in j.spans)]
    scored = [ir_measures.ScoredDoc(q, pid(p), -rank) for q, ranked in run.rankings.items()
              for rank, p in enumerate(ranked)]
    reference = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.Judged @ 5], qrels, scored)}
    assert reference and ours == pytest.approx(reference)


def test_read_marks_refuses_a_sheet_it_cannot_trust(tmp_path):
    path = tmp_path / "review.csv"
    header = ",".join(COLUMNS)
    path.write_text(f"{header}\nq1,d.md,0,10,1,a:1,x,,query,text\n", encoding="utf-8")
    with pytest.raises(ReviewError, match="reviewed is 'x'") as info:
        read_marks(path)
    assert (info.value.line, info.value.key) == (2, "reviewed")
    path.write_text("query_id,document\nq1,d.md\n", encoding="utf-8")
    with pytest.raises(ReviewError, match="not those pool writes"):
        read_marks(path)
    path.write_text(f"{header}\nq1,d.md,zero,10,1,a:1,yes,,query,text\n", encoding="utf-8")
    with pytest.raises(ReviewError, match="start or end is not a whole number"):
        read_marks(path)
    path.write_text(f'{header}\nq1,d.md,0,10,1,a:1,yes,"a, note",query,"two\nlines"\n', encoding="utf-8")
    assert read_marks(path) == {("q1", "d.md", 0, 10): Mark("two\nlines", True, "a, note")}


# --- the command, on runs groundkit wrote


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """The tiny corpus, two `groundkit run` folders (chunks of 60 and 120 characters) and an external run."""
    root = tmp_path_factory.mktemp("pool")
    corpus, judgments = write_tiny_corpus(root / "corpus", root / "judgments.jsonl")
    for name, size in (("small", 60), ("large", 120)):
        assert main(["run", "--corpus", str(corpus), "--judgments", str(judgments), "--set", f"chunk.size={size}",
                     "--out", str(root / name)]) == 0
    write_judgments(root / "other.jsonl", [  # JSON lines, as external runs are written too
        {"query_id": "q1", "rank": 1, "document": "isolation.md", "start": 0, "end": 30},
        {"query_id": "q1", "rank": 2, "document": "ops/backup.md", "text": "Incremental backups run hourly"}])
    return root


def rows_of(sheet: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(sheet.read_text(encoding="utf-8"), newline="")))


def command(root: Path, out: str, *names: str, extra: tuple[str, ...] = ()) -> list[str]:
    return ["pool", *(str(root / n) for n in names), "--depth", "3", "--out", str(root / out), *extra]


def test_pool_writes_the_sheet_and_carries_marks_over(runs, capsys):
    assert main(command(runs, "review", "small", "large")) == 0
    printed = capsys.readouterr().out
    assert "small  judged " in printed and "in the top 3, over" in printed and "large  judged " in printed
    sheet = runs / "review" / "review.csv"
    rows = rows_of(sheet)
    assert rows and list(rows[0]) == COLUMNS
    spans = {json.loads(line)["query_id"]: json.loads(line)["spans"]
             for line in (runs / "small" / "gold_spans.jsonl").read_text().splitlines()}
    for row in rows:  # every pooled passage is text of its document that overlaps no gold span
        document = (runs / "corpus" / row["document"]).read_text(encoding="utf-8")
        start, end = int(row["start"]), int(row["end"])
        assert document[start:end] == row["text"]
        assert not any(s["document"] == row["document"] and s["start"] < end and start < s["end"]
                       for s in spans[row["query_id"]])
    markdown = (runs / "review" / "review.md").read_text(encoding="utf-8")
    assert all(f"## {q}: " in markdown for q in {r["query_id"] for r in rows})
    before = json.loads((runs / "review" / "judged.json").read_text())

    # Same inputs, another folder: the same bytes.
    assert main(command(runs, "again", "small", "large")) == 0
    for name in ("review.md", "review.csv", "judged.json"):
        assert (runs / "again" / name).read_bytes() == (runs / "review" / name).read_bytes()

    assert main(command(runs, "review", "small", "large")) == 1
    assert "pass --force" in capsys.readouterr().err
    text = sheet.read_text(encoding="utf-8")
    marked = text.replace(f",{rows[0]['runs']},,,", f",{rows[0]['runs']},yes,checked,", 1)
    assert marked != text
    sheet.write_text(marked, encoding="utf-8")
    assert main(command(runs, "review", "small", "large", extra=("--force",))) == 0
    after = json.loads((runs / "review" / "judged.json").read_text())
    assert after["reviewed"] == 1 and before["reviewed"] == 0
    assert sum(r["judged"] for r in after["runs"].values()) > sum(r["judged"] for r in before["runs"].values())
    kept = rows_of(sheet)
    assert [(r["reviewed"], r["note"]) for r in kept if r["reviewed"]] == [("yes", "checked")]


def test_once_every_row_is_marked_the_pool_says_so(runs, capsys):
    assert main(command(runs, "done", "small", "large")) == 0
    first = capsys.readouterr().out.splitlines()[-1]
    sheet = runs / "done" / "review.csv"
    rows = rows_of(sheet)
    assert first.startswith(f"{len(rows)} passages pooled, {len(rows)} to review: ")
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows({**row, "reviewed": "yes"} for row in rows)
    sheet.write_text(buffer.getvalue(), encoding="utf-8")
    assert main(command(runs, "done", "small", "large", extra=("--force",))) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith(f"{len(rows)} passages pooled, all reviewed: ")


def test_pooling_again_smaller_or_with_fewer_runs_keeps_every_mark(runs, capsys):
    assert main(command(runs, "shrink", "small", "large")) == 0
    sheet = runs / "shrink" / "review.csv"
    rows = rows_of(sheet)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows({**row, "reviewed": "yes" if i % 2 else "", "note": f"note {i}"} for i, row in enumerate(rows))
    sheet.write_text(buffer.getvalue(), encoding="utf-8")
    marked = {(r["query_id"], r["document"], r["start"], r["end"]): (r["reviewed"], r["note"], r["text"])
              for r in rows_of(sheet)}
    assert len(marked) == len(rows) >= 3
    capsys.readouterr()

    for extra, names in ((("--depth", "1"), ("small", "large")), ((), ("small",))):
        assert main([*command(runs, "shrink", *names, extra=("--force",)), *extra]) == 0
        kept = {(r["query_id"], r["document"], r["start"], r["end"]): (r["reviewed"], r["note"], r["text"])
                for r in rows_of(sheet) if r["reviewed"] or r["note"]}
        assert kept == marked  # every mark and note, pooled or not
        unpooled = [r for r in rows_of(sheet) if not r["runs"]]
        assert unpooled and all(r["best_rank"] == "" for r in unpooled)
        figures = json.loads((runs / "shrink" / "judged.json").read_text())
        # Rows pooled now: a smaller pool's passages merge into other rows, unmarked (the text read is not the same).
        assert figures["kept_unpooled"] == len(unpooled) and figures["pooled"] == len(rows_of(sheet)) - len(unpooled)
        err = capsys.readouterr().err
        assert f"note: {len(unpooled)} earlier mark(s) on passages no longer pooled kept at the end of" in err
    # Pooled as at first again: the sheet as the reviewer left it, byte for byte.
    text = sheet.read_text(encoding="utf-8")
    assert main(command(runs, "shrink", "small", "large", extra=("--force",))) == 0
    assert sheet.read_text(encoding="utf-8") == buffer.getvalue() and text != buffer.getvalue()


def test_pool_reads_an_external_run_against_the_current_judgments(runs, capsys):
    inputs = ("--corpus", str(runs / "corpus"), "--judgments", str(runs / "judgments.jsonl"))
    assert main(command(runs, "mixed", "small", "other.jsonl", extra=inputs)) == 0
    rows = rows_of(runs / "mixed" / "review.csv")
    # other.jsonl ranks isolation.md's first 30 characters first for q1, and then q1's gold quote.
    assert ("q1", "isolation.md", "0", "30", "other:1") in {
        (r["query_id"], r["document"], r["start"], r["end"], r["runs"]) for r in rows}
    assert json.loads((runs / "mixed" / "judged.json").read_text())["runs"]["other"] == {
        "judged": 0.5, "queries": 1}

    for name, message in (("other.jsonl", "is read as an external run (JSONL), which needs the corpus"),
                          ("corpus", "is a folder without run.trec"), ("missing", "missing: does not exist")):
        assert main(command(runs, "nope", "small", name)) == 1
        assert message in capsys.readouterr().err
    assert not (runs / "nope").exists()


def test_pool_refuses_runs_of_another_corpus(runs, tmp_path, capsys):
    import shutil

    corpus = tmp_path / "corpus"
    shutil.copytree(runs / "corpus", corpus)
    (corpus / "isolation.md").write_text("Snapshot isolation, edited.\nWrite skew is possible under it.\n",
                                         encoding="utf-8")
    assert main(["pool", str(runs / "small"), "--depth", "3", "--out", str(tmp_path / "out"), "--corpus",
                 str(corpus), "--judgments", str(runs / "judgments.jsonl")]) == 1
    err = capsys.readouterr().err
    assert "documents.jsonl: is another version of the corpus than --corpus" in err
    assert not (tmp_path / "out").exists()
