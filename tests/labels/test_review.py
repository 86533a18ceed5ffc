"""``judgments sample``, ``review --apply`` and ``agreement``: kappa checked against scikit-learn, sheets against
formulas, the person's labels kept apart from the machine's."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import random

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from examples.judge_example import make_judge
from groundkit.cli import main
from groundkit.corpus.judgments import Origin, load_judgments
from groundkit.labels._safe import neutral_cell, read_cell
from groundkit.labels.sheet import COLUMNS
from groundkit.scoring.agreement import Pair, agreement, kappa
from tests.conftest import REPO, write_tiny_corpus


@pytest.mark.parametrize("seed", range(5))
def test_kappa_and_weighted_kappa_agree_with_scikit_learn(seed):
    rng = random.Random(seed)
    a = [rng.choice([0, 0, 1, 2, 3]) for _ in range(60)]
    b = [x if rng.random() < 0.6 else rng.choice([0, 1, 2, 3]) for x in a]
    binary_a, binary_b = [int(x > 0) for x in a], [int(x > 0) for x in b]
    assert kappa(binary_a, binary_b) == pytest.approx(cohen_kappa_score(binary_a, binary_b), abs=1e-12)
    assert kappa(a, b) == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
    assert kappa(a, b, weights="quadratic") == pytest.approx(
        cohen_kappa_score(a, b, weights="quadratic", labels=[0, 1, 2, 3]), abs=1e-12)


def test_kappa_worked_by_hand_and_undefined_when_chance_explains_everything():
    # 10 pairs: both yes 4, judge yes person no 1, judge no person yes 1, both no 4.
    # p_o = 0.8, p_e = 0.5 * 0.5 + 0.5 * 0.5 = 0.5, kappa = (0.8 - 0.5) / 0.5 = 0.6.
    judge = [1] * 5 + [0] * 5
    person = [1, 1, 1, 1, 0, 1, 0, 0, 0, 0]
    assert kappa(judge, person) == pytest.approx(0.6)
    assert kappa([1, 1, 1], [1, 1, 1]) is None  # one class on both sides: p_e = 1


def test_agreement_counts_the_confusion_matrix_quotes_moved_and_a_seeded_interval():
    found = [Pair(f"q{i // 2}", j, p, same) for i, (j, p, same) in enumerate(
        [(2, 2, True), (0, 0, True), (1, 2, False), (0, 0, True), (2, 0, False), (0, 1, False),
         (3, 3, True), (0, 0, True), (0, 0, True), (1, 1, True)])]
    result = agreement(found, replicates=500, seed=3)
    assert result.confusion == ((4, 1), (1, 4)) and result.pairs == 10 and result.queries == 5
    assert result.kappa == pytest.approx(0.6)
    assert result.quotes_moved == pytest.approx(1 / 4) and result.both_relevant == 4
    assert result.weighted_kappa == pytest.approx(cohen_kappa_score(
        [p.judge for p in found], [p.person for p in found], weights="quadratic", labels=[0, 1, 2, 3]))
    assert result.low is not None and result.low <= result.kappa <= result.high
    again = agreement(found, replicates=500, seed=3)
    assert (again.low, again.high) == (result.low, result.high)
    # The interval is a percentile of kappas over queries drawn with replacement: recompute it independently.
    rng = np.random.default_rng(3)
    groups = [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]]
    values = []
    for _ in range(500):
        drawn = [i for g in rng.integers(0, 5, size=5) for i in groups[g]]
        a, b = [int(found[i].judge > 0) for i in drawn], [int(found[i].person > 0) for i in drawn]
        if len(set(a)) > 1 or len(set(b)) > 1:
            value = cohen_kappa_score(a, b) if len(set(a) | set(b)) > 1 else None
            if value is not None and not np.isnan(value):
                values.append(value)
    assert result.low == pytest.approx(np.percentile(values, 2.5))
    assert result.high == pytest.approx(np.percentile(values, 97.5))


@pytest.mark.parametrize(("text", "cell"), [
    ("=SUM(A1)", "'=SUM(A1)"), ("+1", "'+1"), ("-1", "'-1"), ("@cmd", "'@cmd"), ("\tx", "'\tx"), ("\rx", "'\rx"),
    ("'quoted", "''quoted"), ("plain = text", "plain = text"), ("", ""),
])
def test_sheet_cells_are_neutralised_and_read_back_exactly(text, cell):
    assert neutral_cell(text) == cell
    assert read_cell(neutral_cell(text)) == text


@pytest.fixture
def flow(tmp_path, monkeypatch):
    """The tiny corpus ranked and judged by the example judge: the machine judgments to sample from."""
    monkeypatch.chdir(REPO)
    corpus, judgments = write_tiny_corpus(tmp_path / "corpus", tmp_path / "judgments.jsonl")
    # A query whose text a spreadsheet would take for a formula.
    lines = judgments.read_text().splitlines()
    record = json.loads(lines[0])
    record["query"] = "=how often do incremental backups run"
    lines[0] = json.dumps(record)
    judgments.write_text("\n".join(lines) + "\n")
    params = tmp_path / "params.yaml"
    params.write_text(f"judge:\n  options: {{judgments: '{judgments}', false_positive_rate: 0.3, "
                      "false_negative_rate: 0.3}\n", encoding="utf-8")
    assert main(["run", "--corpus", str(corpus), "--queries", str(judgments), "--out", str(tmp_path / "run"),
                 "--set", "chunk.size=60"]) == 0
    machine = tmp_path / "machine.jsonl"
    assert main(["judgments", "judge", "--queries", str(judgments), "--run", str(tmp_path / "run"), "--depth", "5",
                 "--corpus", str(corpus), "--out", str(machine), "--params", str(params),
                 "--judge", "python:examples.judge_example:make_judge"]) == 0
    return corpus, judgments, machine


def _grade(sheet_path, judgments):
    """Fill the sheet as a careful person would: the example judge's answers without its errors."""
    truth = make_judge({"judgments": str(judgments), "false_positive_rate": 0, "false_negative_rate": 0})
    rows = list(csv.DictReader(io.StringIO(sheet_path.read_text(encoding="utf-8"), newline="")))
    for row in rows:
        answer = truth.truth(read_cell(row["query"]), read_cell(row["passage"]))
        row["grade"] = str(answer["grade"])
        row["quote"] = neutral_cell(answer["quote"] or "")
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    sheet_path.write_text(buffer.getvalue(), encoding="utf-8")
    return rows


def test_sample_review_writes_human_judgments_with_their_drawing_and_prints_the_agreement(flow, tmp_path, capsys):
    corpus, judgments, machine = flow
    before = machine.read_bytes()
    sheet = tmp_path / "sheet.csv"
    assert main(["judgments", "sample", "--machine", str(machine), "--n", "3", "--seed", "5", "--out", str(sheet)]) == 0
    assert "3 of 4 machine-judged queries drawn (seed 5" in capsys.readouterr().out
    text = sheet.read_text(encoding="utf-8")
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    ids = sorted(j.query_id for j in load_judgments(machine))
    pooled = {json.loads(line)["query_id"] for line in machine.with_name("machine.pool.jsonl").read_text().splitlines()}
    assert list(dict.fromkeys(r["query_id"] for r in rows)) == [q for q in random.Random(5).sample(ids, 3)
                                                                if q in pooled]  # in drawing order
    digest = hashlib.sha256(before).hexdigest()
    assert {(r["seed"], r["of"], r["n"]) for r in rows} == {("5", digest, "3")}
    assert all(not r["grade"] and not r["quote"] and not r["note"] for r in rows)
    assert all(not r["query"].startswith("=") for r in rows)  # the formula is neutralised
    graded = _grade(sheet, judgments)
    human = tmp_path / "human.jsonl"
    assert main(["judgments", "review", "--apply", str(sheet), "--machine", str(machine), "--corpus", str(corpus),
                 "--judgments", str(human)]) == 0
    printed = capsys.readouterr().out
    assert machine.read_bytes() == before  # the machine labels untouched
    written = load_judgments(human)
    drawn = sorted(random.Random(5).sample(ids, 3))
    assert [j.query_id for j in written] == drawn
    assert all(j.origin is Origin.HUMAN and j.sample is not None and (j.sample.seed, j.sample.of, j.sample.n) ==
               (5, digest, 3) for j in written)
    # Kappa over the sheet's pairs, independently: relevant when the person or the judge has a resolved quote there.
    pool = [json.loads(line) for line in machine.with_name("machine.pool.jsonl").read_text().splitlines()]
    by_place = {(r["query_id"], r["document"], r["start"]): r for r in pool}
    judge = [int(by_place[(r["query_id"], r["document"], int(r["start"]))]["outcome"] == "relevant")
             for r in graded]
    person = [int(int(r["grade"]) > 0) for r in graded]
    expected = cohen_kappa_score(judge, person)
    assert f"Cohen's kappa {expected:.3f}, 95% bootstrap interval [" in printed
    matrix = [line.split()[-2:] for line in printed.splitlines() if line.strip().startswith("judge: ")]
    pairs = list(zip(judge, person, strict=True))
    assert matrix == [[str(pairs.count((1, 1))), str(pairs.count((1, 0)))],
                      [str(pairs.count((0, 1))), str(pairs.count((0, 0)))]]
    # Applying the same sheet again replaces what it wrote; a hand-written judgment of a drawn query is refused.
    assert main(["judgments", "review", "--apply", str(sheet), "--machine", str(machine), "--corpus", str(corpus),
                 "--judgments", str(human)]) == 0
    assert load_judgments(human) == written
    capsys.readouterr()
    assert main(["judgments", "review", "--apply", str(sheet), "--machine", str(machine), "--corpus", str(corpus),
                 "--judgments", str(judgments)]) == 1
    err = capsys.readouterr().err
    assert "already holds query" in err and "(written by hand)" in err


@pytest.mark.parametrize(("edit", "message"), [
    (lambda row: row.update(grade=""), "grade is '', not a whole number from 0 to 3"),
    (lambda row: row.update(grade="4"), "grade is '4', not a whole number from 0 to 3"),
    (lambda row: row.update(grade="2", quote=""), "grade 2 without a quote"),
    (lambda row: row.update(grade="0", quote="x"), "a quote with grade 0"),
    (lambda row: row.update(grade="1", quote="words the passage never held"), "is not verbatim in the passage"),
    (lambda row: row.update(seed="6"), "holds rows of two drawings"),
    (lambda row: row.update(passage=row["passage"] + "!"), "which the corpus no longer holds"),
])
def test_a_badly_graded_sheet_is_refused_naming_its_line_and_nothing_is_written(flow, tmp_path, capsys, edit,
                                                                               message):
    corpus, judgments, machine = flow
    sheet = tmp_path / "sheet.csv"
    assert main(["judgments", "sample", "--machine", str(machine), "--n", "2", "--seed", "1", "--out", str(sheet)]) == 0
    rows = _grade(sheet, judgments)
    edit(rows[-1])
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    sheet.write_text(buffer.getvalue(), encoding="utf-8")
    human = tmp_path / "human.jsonl"
    capsys.readouterr()
    assert main(["judgments", "review", "--apply", str(sheet), "--machine", str(machine), "--corpus", str(corpus),
                 "--judgments", str(human)]) == 1
    err = capsys.readouterr().err
    assert message in err and f"{sheet}:" in err and "Traceback" not in err
    assert not human.exists()


def test_a_sheet_drawn_from_other_machine_judgments_is_refused(flow, tmp_path, capsys):
    corpus, judgments, machine = flow
    sheet = tmp_path / "sheet.csv"
    assert main(["judgments", "sample", "--machine", str(machine), "--n", "2", "--seed", "1", "--out", str(sheet)]) == 0
    _grade(sheet, judgments)
    machine.write_text(machine.read_text().replace('"grade": 2', '"grade": 3'), encoding="utf-8")
    capsys.readouterr()
    assert main(["judgments", "review", "--apply", str(sheet), "--machine", str(machine), "--corpus", str(corpus),
                 "--judgments", str(tmp_path / "human.jsonl")]) == 1
    assert "was drawn from machine judgments with SHA-256" in capsys.readouterr().err
