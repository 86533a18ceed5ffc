"""`groundkit score-trec`: the result folder, and compare, report, the Python API and the gate reading it."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import numpy as np
import pytest

import groundkit as gk
from groundkit.cli import REGRESSION_EXIT, main
from groundkit.inputs.text import markdown_text
from groundkit.scoring.schema import DOCUMENT_LEVEL, read_per_query
from groundkit.scoring.trec.files import read_qrels, read_run
from groundkit.scoring.trec.measures import score
from tests.conftest import REPO

QUERIES = [f"t{q:02d}" for q in range(40)]
DOCUMENTS = [f"doc{d}" for d in range(200)]


def _qrels(rng: random.Random) -> dict[str, dict[str, int]]:
    """Graded qrels; t00 grades nothing above 0 (scored 0, as trec_eval -c), t39 is not in any run."""
    qrels = {}
    for query in QUERIES:
        first, *rest = rng.sample(DOCUMENTS, rng.randint(2, 6))
        qrels[query] = {first: 0 if query == "t00" else rng.choice([1, 2, 3]),
                        **{d: 0 if query == "t00" else rng.choice([0, 1, 2, 3]) for d in rest}}
    return qrels


def _run(rng: random.Random, qrels: dict[str, dict[str, int]], *, good: bool) -> list[str]:
    """100 documents per query (and a query the qrels lack); a good run puts the relevant ones near the top."""
    lines = []
    for query in [*QUERIES[:-1], "unjudged"]:
        relevant = [d for d, g in qrels.get(query, {}).items() if g > 0]
        others = [d for d in rng.sample(DOCUMENTS, 100) if d not in relevant]
        ranked = (relevant + others if good else others + relevant)[:100]
        for rank, document in enumerate(ranked, start=1):
            value = 100 - rank if rank != 5 else 100 - 4  # ranks 4 and 5 tie
            lines.append(f"{query} Q0 {document} {rank} {value} run")
    return lines


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("trec")
    rng = random.Random(3)
    qrels = _qrels(rng)
    paths = {"qrels": folder / "qrels.trec", "beir": folder / "test.tsv", "good": folder / "good.run",
             "bad": folder / "bad.run"}
    paths["qrels"].write_text("".join(f"{q} 0 {d} {g}\n" for q, graded in qrels.items() for d, g in graded.items()))
    paths["beir"].write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t{g}\n" for q, graded in qrels.items() for d, g in graded.items()))
    paths["good"].write_text("\n".join(_run(rng, qrels, good=True)) + "\n")
    paths["bad"].write_text("\n".join(_run(rng, qrels, good=False)) + "\n")
    return paths


@pytest.fixture(scope="module")
def results(inputs, tmp_path_factory) -> dict[str, Path]:
    """score-trec of the good and the bad run, the folders of the tests below (each reads, none writes)."""
    folder = tmp_path_factory.mktemp("results")
    out = {}
    for name in ("good", "bad"):
        out[name] = folder / name
        assert main(["score-trec", str(inputs[name]), "--qrels", str(inputs["qrels"]), "--out", str(out[name])]) == 0
    return out


def test_the_result_folder(inputs, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["score-trec", str(inputs["good"]), "--qrels", str(inputs["qrels"]), "--out", str(out)]) == 0
    stdout, stderr = capsys.readouterr()
    assert sorted(p.name for p in out.iterdir()) == [".groundkit-output", "detail.json", "metrics.json",
                                                     "per_query.csv", "run.json"]
    assert "40 queries of the qrels scored, 1 of them missing from the run (scored 0" in stdout
    assert "1 query of the run not in the qrels (left out)" in stdout
    assert ("1 query of the qrels with no document graded above 0: scored 0 and counted in the means, as trec_eval "
            "-c does") in stdout
    assert stderr.startswith("warning: 39 pairs of documents in 39 queries have equal scores")

    metadata = json.loads((out / "run.json").read_text())
    assert metadata["corpus_hash"] == DOCUMENT_LEVEL
    assert metadata["judgments_hash"] == hashlib.sha256(inputs["qrels"].read_bytes()).hexdigest()
    assert metadata["external_run"] == {"name": "good.run",
                                        "sha256": hashlib.sha256(inputs["good"].read_bytes()).hexdigest()}
    assert metadata["params"]["retrieve"] == {"depth": 100}
    assert str(tmp_path) not in (out / "run.json").read_text()

    detail = json.loads((out / "detail.json").read_text())
    assert detail["trec"] == {"queries": 40, "queries_not_in_run": 1, "run_queries_not_in_qrels": 1, "depth": 100,
                              "queries_without_relevant": 1, "empty_qrels_as": "0 (trec_eval -c)",
                              "tied_pairs": 39, "tied_queries": 39, "single_precision_ties": 0}
    assert detail["answerable"]["queries"] == 40 and detail["answerable"]["false_abstentions"] == 1
    assert detail["no_answer"] == {"queries": 0, "abstained": 0}
    assert sorted(detail["by_category"]) == ["factoid"]
    assert json.loads((out / "metrics.json").read_text()) == {
        name: detail["answerable"][name] for name in ("ndcg@10", "recall@10", "mrr", "set_recall@100")}

    # per_query.csv is what compare reads: every measure (set recall too), each query's value to 6 decimals.
    table = read_per_query((out / "per_query.csv").read_text(), "per_query.csv")
    assert table.metric_names == ["recall@1", "recall@3", "recall@5", "recall@10", "mrr", "ndcg@1", "ndcg@3",
                                  "ndcg@5", "ndcg@10", "set_recall@100"]
    scores = score(read_run(inputs["good"]), read_qrels(inputs["qrels"]), table.metric_names)
    assert list(table.position) == scores.query_ids == sorted(QUERIES)
    for j, name in enumerate(table.metric_names):
        np.testing.assert_allclose(table.values[:, j], scores.metrics[name], atol=5e-7)
    assert table.categories.count("no_answer") == 0
    assert table.values[table.position["t00"]].tolist() == [0.0] * len(table.metric_names)
    assert table.first_gold_rank[table.position["t39"]] == float("inf")


def test_the_no_answer_reading_of_empty_qrels_is_asked_for_and_named(inputs, results, tmp_path, capsys):
    # Issue 35 item 1: the old reading stays available, and every output says it was used.
    out = tmp_path / "out"
    assert main(["score-trec", str(inputs["good"]), "--qrels", str(inputs["qrels"]), "--out", str(out),
                 "--empty-qrels-as-no-answer"]) == 0
    stdout = capsys.readouterr().out
    assert "answerable (39):" in stdout
    assert ("1 query of the qrels with no document graded above 0: no_answer (--empty-qrels-as-no-answer), left out "
            "of the means") in stdout
    detail = json.loads((out / "detail.json").read_text())
    assert detail["trec"]["empty_qrels_as"] == "no_answer"
    assert detail["no_answer"] == {"queries": 1, "abstained": 0, "abstention_rate": 0.0}
    assert json.loads((out / "run.json").read_text())["params"]["score"]["empty_qrels_as_no_answer"] is True
    table = read_per_query((out / "per_query.csv").read_text(), "per_query.csv")
    assert table.categories[table.position["t00"]] == "no_answer"
    # The answerable queries score alike under both readings; only the means' denominators differ.
    default = json.loads((results["good"] / "detail.json").read_text())["answerable"]
    assert detail["answerable"]["ndcg@10"] * 39 == pytest.approx(default["ndcg@10"] * 40, abs=1e-4)  # 6 decimals


def test_beir_qrels_score_as_the_same_trec_qrels(inputs, results, tmp_path):
    out = tmp_path / "beir"
    assert main(["score-trec", str(inputs["good"]), "--qrels", str(inputs["beir"]), "--out", str(out)]) == 0
    for name in ("per_query.csv", "detail.json", "metrics.json"):
        assert (out / name).read_bytes() == (results["good"] / name).read_bytes(), name
    hashes = [json.loads((folder / "run.json").read_text())["judgments_hash"] for folder in (out, results["good"])]
    assert hashes[0] != hashes[1]  # other bytes: compare refuses to pair them, as for two judgments files


def test_compare_report_and_the_gate_read_two_results(results, tmp_path, capsys):
    assert main(["compare", str(results["good"]), str(results["bad"]), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    good = read_per_query((results["good"] / "per_query.csv").read_text(), "good")
    bad = read_per_query((results["bad"] / "per_query.csv").read_text(), "bad")
    answerable = [i for i, c in enumerate(good.categories) if c != "no_answer"]
    column = good.metric_names.index("ndcg@10")
    overall = {row["metric"]: row for row in report["overall"]}
    assert overall["ndcg@10"]["delta"] == pytest.approx(
        float((bad.values[answerable, column] - good.values[answerable, column]).mean()), abs=1e-9)
    assert overall["ndcg@10"]["queries"] == 40 and overall["ndcg@10"]["p_value"] < 0.05

    # The pull-request gate: the bad run regresses significantly.
    assert main(["compare", str(results["good"]), str(results["bad"]), "--fail-on-regression", "--metric",
                 "ndcg@10"]) == REGRESSION_EXIT
    capsys.readouterr()

    page = tmp_path / "report.html"
    assert main(["report", str(results["bad"]), "--baseline", str(results["good"]), "--out", str(page)]) == 0
    html = page.read_text(encoding="utf-8")
    assert "document-level result of `groundkit score-trec`" in html and "t01" in html


def test_two_results_gate_on_ndcg_at_10_by_default_and_name_their_run_files(inputs, results, capsys):
    # The default gate's coverage@1000chars reads passages' characters, which a document-level result cannot have:
    # the gate is ndcg@10, with no note telling the user to score again what can never be scored.
    assert main(["compare", str(results["good"]), str(results["bad"]), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["gate"]["metrics"] == ["ndcg@10"] and report["gate"]["notes"] == []
    digests = {name: hashlib.sha256(inputs[name].read_bytes()).hexdigest()[:12] for name in ("good", "bad")}
    assert report["params_changed"] == {"run file": [f"good.run (sha256 {digests['good']})",
                                                     f"bad.run (sha256 {digests['bad']})"]}
    assert main(["compare", str(results["good"]), str(results["bad"]), "--format", "text"]) == 0
    text = capsys.readouterr().out
    assert "coverage@1000chars" not in text and "Changed: no parameter" not in text
    assert f"Changed: run file good.run (sha256 {digests['good']}) -> bad.run (sha256 {digests['bad']})." in text
    assert main(["compare", str(results["good"]), str(results["bad"]), "--format", "md"]) == 0
    # Run file names are outside text: escaped in Markdown (groundkit/inputs/text.py), rendering as written.
    good, bad = (markdown_text(f"{name}.run (sha256 {digests[name]})") for name in ("good", "bad"))
    assert f"Parameters changed: `run file` {good} → {bad}." in capsys.readouterr().out


def test_the_python_api_loads_a_result(results):
    loaded = gk.load_results(results["good"])
    detail = json.loads((results["good"] / "detail.json").read_text())
    assert loaded.per_query.shape[0] == 40
    for name, value in loaded.metrics.items():
        assert value == pytest.approx(detail["answerable"][name], abs=1e-6), name
    bad = gk.load_results(results["bad"])
    assert gk.compare_runs(loaded, bad).loc[bad.name].loc["ndcg@10", "delta"] < 0


def test_compare_refuses_a_document_level_result_beside_a_run_over_a_corpus(results, capsys):
    assert main(["compare", str(REPO / "metrics"), str(results["good"]), "--allow-corpus-change"]) == 1
    stderr = capsys.readouterr().err
    assert "is a document-level result of `groundkit score-trec`, the baseline a run over a corpus" in stderr
    assert "fix:" in stderr and "Traceback" not in stderr


def test_measures_are_chosen_by_name_or_from_score_measures(inputs, tmp_path, capsys):
    out = tmp_path / "named"
    assert main(["score-trec", str(inputs["good"]), "--qrels", str(inputs["qrels"]), "--out", str(out),
                 "--measures", "set_recall@20,ndcg@20", "--measures", "mrr"]) == 0
    assert json.loads((out / "run.json").read_text())["params"]["score"] == {
        "measures": ["mrr", "ndcg@20", "set_recall@20"]}
    assert json.loads((out / "metrics.json").read_text()).keys() == {"mrr", "ndcg@20", "set_recall@20"}
    out = tmp_path / "ks"
    assert main(["score-trec", str(inputs["good"]), "--qrels", str(inputs["qrels"]), "--out", str(out),
                 "--set", "score.measures=[ndcg@2, recall@2, coverage@1000chars]",
                 "--set", "score.headline=[ndcg@2]"]) == 0
    assert json.loads((out / "run.json").read_text())["params"]["score"]["measures"] == [
        "recall@2", "ndcg@2", "set_recall@100"]
    assert json.loads((out / "metrics.json").read_text()).keys() == {"ndcg@2", "set_recall@100"}
    capsys.readouterr()
    assert main(["score-trec", str(inputs["good"]), "--qrels", str(inputs["qrels"]), "--out", str(tmp_path / "no"),
                 "--measures", "chars@10"]) == 1
    stderr = capsys.readouterr().err
    assert stderr.startswith("error: --measures: 'chars@10' is not a measure of a document-level run")
    assert not (tmp_path / "no").exists()


def test_an_out_folder_is_replaced_only_by_score_trec_with_force(inputs, tmp_path, capsys):
    args = ["score-trec", str(inputs["good"]), "--qrels", str(inputs["qrels"]), "--out", str(tmp_path / "out")]
    assert main(args) == 0
    assert main(args) == 1 and "pass --force" in capsys.readouterr().err
    assert main([*args, "--force"]) == 0
    run_folder = tmp_path / "run"
    run_folder.mkdir()
    (run_folder / ".groundkit-output").write_text('{"command": "run", "format": "groundkit-output/1"}\n')
    args[-1] = str(run_folder)
    assert main([*args, "--force"]) == 1
    assert "holds the output of `groundkit run`" in capsys.readouterr().err


@pytest.mark.parametrize(("run", "qrels", "message"), [
    ("q Q0 a 1 x t\n", "q 0 a 1\n", "run.trec:1: score 'x' is not a finite number"),
    ("q Q0 a 1 1 t\n", "q 0 a 2\nq 0 b 0.5\n", "qrels.trec:2: grade '0.5' is not a whole number"),
    ("q Q0 a 1 1 t\n", "q 0 a 0\nq 0 b -2\n", "qrels.trec: grades no document above 0"),
    ("q Q0 a 1 1 t\n", "r 0 a 1\n", "run.trec: names none of the 1 queries of"),
])
def test_bad_input_writes_nothing(tmp_path, capsys, run, qrels, message):
    (tmp_path / "run.trec").write_text(run)
    (tmp_path / "qrels.trec").write_text(qrels)
    out = tmp_path / "results" / "out"
    assert main(["score-trec", str(tmp_path / "run.trec"), "--qrels", str(tmp_path / "qrels.trec"), "--out",
                 str(out)]) == 1
    stderr = capsys.readouterr().err
    assert message in stderr and "fix:" in stderr and "Traceback" not in stderr
    assert not (tmp_path / "results").exists()
