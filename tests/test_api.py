"""The Python API: DataFrames that equal per_query.csv, retrievers as objects, the guide's block as written."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import re
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest

import groundkit as gk
from groundkit.errors import RetrieverError
from tests.conftest import REPO, write_tiny_corpus

AUDIT_OFF = {"audit.max_trivial_share": 1.0}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("notebook")
    corpus, judgments = write_tiny_corpus(root / "corpus", root / "judgments.jsonl")
    return {"corpus": corpus, "judgments": judgments, "root": root,
            "small": gk.evaluate(corpus, judgments, set={**AUDIT_OFF, "chunk.size": 60}, out=root / "small")}


def test_per_query_is_per_query_csv(tiny):
    results = tiny["small"]
    with (results.folder / "per_query.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    frame = results.per_query
    assert list(frame.index) == [r["query_id"] for r in rows] == ["q1", "q2", "q3", "q4"]
    assert list(frame["category"]) == ["factoid", "multi_passage", "lexical_gap", "no_answer"]
    assert frame["first_gold_rank"].tolist() == [1, 1, pd.NA, pd.NA]
    assert frame["abstained"].tolist() == [False, False, False, True]
    assert frame.loc["q2", "ndcg@10"] == float(rows[1]["ndcg@10"])
    assert frame.loc["q4"].isna()["mrr"]  # no gold, no metric


def test_by_category_and_metrics_are_means_of_the_answerable_queries(tiny):
    results = tiny["small"]
    table = results.by_category
    assert list(table.index) == ["factoid", "lexical_gap", "multi_passage"]
    assert table["queries"].tolist() == [1, 1, 1]
    assert table.loc["lexical_gap", "recall@10"] == 0.0
    # q1 and q2 find gold at rank 1, q3 never: MRR (1 + 1 + 0) / 3.
    assert results.metrics["mrr"] == pytest.approx(2 / 3)
    detail = json.loads((results.folder / "detail.json").read_text(encoding="utf-8"))["answerable"]
    assert results.metrics["ndcg@10"] == pytest.approx(detail["ndcg@10"], abs=1e-6)


class Fixed:
    """Ranks the same two chunks for every query: the chunk holding q1's gold quote, then the one holding q3's."""

    def __init__(self, chunks) -> None:
        first = [c for c in chunks if c.document == "ops/backup.md" and c.start <= 67 < c.end]
        second = [c for c in chunks if c.document == "isolation.md" and c.start <= 62 < c.end]
        self.ids = [first[0].chunk_id, second[0].chunk_id]

    def search(self, query, depth):
        return [(chunk_id, 2.0 - i) for i, chunk_id in enumerate(self.ids[:depth])]


def test_a_retriever_factory_or_object_is_evaluated_like_a_python_plugin(tiny):
    results = gk.evaluate(tiny["corpus"], tiny["judgments"], lambda chunks, options: Fixed(chunks),
                          set={**AUDIT_OFF, "chunk.size": 60})
    # q1's gold at rank 1, q3's at rank 2, q2's never: MRR (1 + 0 + 1/2) / 3; q4 gets passages, no abstention.
    assert results.metrics["mrr"] == pytest.approx(0.5)
    assert results.per_query["first_gold_rank"].tolist() == [1, pd.NA, 2, pd.NA]
    assert results.per_query.loc["q4", "abstained"] == False  # noqa: E712  (numpy bool)
    params = json.loads((results.folder / "run.json").read_text(encoding="utf-8"))["params"]
    # run.json names where the factory was written; nothing was imported or planted to reach it.
    assert params["retrieve"]["retriever"] == (
        "python:tests.test_api:test_a_retriever_factory_or_object_is_evaluated_like_a_python_plugin.<locals>.<lambda>")
    assert not any(name.startswith("groundkit_") for name in sys.modules)

    chunks = gk.load_corpus(tiny["corpus"])  # an object built beforehand works the same
    assert chunks  # the documents; the chunks come from the run, which an object cannot see in advance
    made = Fixed([c for c in _chunks(results.folder)])
    again = gk.evaluate(tiny["corpus"], tiny["judgments"], made, set={**AUDIT_OFF, "chunk.size": 60})
    assert again.per_query["first_gold_rank"].tolist() == [1, pd.NA, 2, pd.NA]
    with pytest.raises(RetrieverError, match="has no search"):
        gk.evaluate(tiny["corpus"], tiny["judgments"], 42, set=AUDIT_OFF)


def _chunks(folder: Path):
    from groundkit.artifacts.lines import read_models

    return read_models(folder / "chunks.jsonl", gk.Chunk, producer="chunk")


def test_compare_runs_is_compare(tiny):
    large = gk.evaluate(tiny["corpus"], tiny["judgments"], set={**AUDIT_OFF, "chunk.size": 200})
    table = gk.compare_runs(large, tiny["small"])
    (expected,) = gk.compare(large.side, [tiny["small"].side], gate=[]).candidates
    row = table.loc[(tiny["small"].name, "ndcg@10")]
    stat = expected.stat("ndcg@10")
    assert (row["baseline"], row["value"], row["delta"]) == (stat.baseline, stat.candidate, stat.delta)
    assert list(table.columns) == ["baseline", "value", "delta", "ci_low", "ci_high", "ci_level", "raw_ci95_low",
                                   "raw_ci95_high", "p_value", "significant"]
    # Three answerable queries: 2^3 sign patterns, fewer than the resamples, so scipy enumerates them exactly.
    assert row["p_value"] == stat.p_value
    # Below ten paired queries nothing is claimed: no deciding interval, never significant.
    assert row["ci_low"] is None and not row["significant"] and row["raw_ci95_low"] == stat.ci_low


def test_results_carry_their_name_into_compare_runs(tiny, tmp_path):
    # Without out= or name=, a run is named by what it ran, not by its temporary folder (groundkit-g96t93m4).
    large = gk.evaluate(tiny["corpus"], tiny["judgments"], set={**AUDIT_OFF, "chunk.size": 200})
    assert large.name == large.side.label == "bm25 audit.max_trivial_share=1.0 chunk.size=200"
    assert large.folder.name.startswith("groundkit-")
    wide = gk.evaluate(tiny["corpus"], tiny["judgments"], set={**AUDIT_OFF, "chunk.size": 200}, name="wide")
    assert (wide.name, wide.side.label) == ("wide", "wide")
    run_file = tmp_path / "theirs.jsonl"
    run_file.write_text('{"query_id": "q1", "rank": 1, "document": "ops/backup.md", "text": "Incremental backups '
                        'run hourly"}\n', encoding="utf-8")
    assert gk.score_file(run_file, tiny["corpus"], tiny["judgments"], set=AUDIT_OFF).name == (
        "theirs.jsonl audit.max_trivial_share=1.0")
    assert gk.score_file(run_file, tiny["corpus"], tiny["judgments"], set=AUDIT_OFF, name="t").name == "t"
    folder = tiny["small"].folder
    assert tiny["small"].name == "small"  # out= names it by its folder
    assert gk.load_results(folder).name == str(folder)
    again = gk.load_results(folder, name="small, again")
    assert (again.name, again.side.label) == ("small, again", "small, again")

    table = gk.compare_runs(wide, tiny["small"], again)
    assert sorted(set(table.index.get_level_values("candidate"))) == ["small", "small, again"]


def test_compare_runs_refuses_two_results_of_one_name(tiny):
    same = gk.load_results(tiny["small"].folder, name="small")
    with pytest.raises(gk.CompareError, match=r"3 results, and 2 of them are named 'small'") as raised:
        gk.compare_runs(gk.load_results(tiny["small"].folder, name="base"), tiny["small"], same)
    assert "name=" in raised.value.fix


@pytest.mark.parametrize("name", ["", "   ", 400, b"bytes"])
def test_a_name_that_is_no_text_is_refused_before_any_work(tiny, tmp_path, name):
    with pytest.raises(gk.InputError, match=r"^name: is .*; a result's name is text that is not empty") as raised:
        gk.evaluate(tiny["corpus"], tiny["judgments"], set=AUDIT_OFF, out=tmp_path / "never", name=name)
    assert "fix: pass name=" in str(raised.value)
    assert not (tmp_path / "never").exists()
    with pytest.raises(gk.InputError, match="a result's name is text"):
        gk.load_results(tiny["small"].folder, name=name)


def test_figures_show_rounded_and_stay_exact(tiny):
    results = tiny["small"]
    # q1 and q2 find gold at rank 1, q3 never: the exact mean is 2/3, shown as reports show it.
    assert results.metrics["mrr"] == 2 / 3
    assert "'mrr': 0.6667" in repr(results.metrics) and "0.6666666" not in repr(results.metrics)
    chars = results.metrics["chars@10"]
    assert f"'chars@10': {chars:.1f}," in repr(results.metrics)  # a count of characters: one decimal, as reports
    assert ", mrr 0.6667" in repr(results) and "0.66666" not in repr(results)
    page = results._repr_html_() + results.metrics._repr_html_()
    assert "<td>0.6667</td>" in page and "0.66666" not in page
    assert isinstance(results.metrics, dict)


def test_report_refuses_a_file_it_did_not_write(tiny):
    mine = tiny["root"] / "mine.html"
    mine.write_text("<p>mine</p>", encoding="utf-8")
    with pytest.raises(gk.OutputError):
        tiny["small"].report(mine)
    assert mine.read_text(encoding="utf-8") == "<p>mine</p>"
    page = tiny["small"].report(tiny["root"] / "page.html")
    assert "groundkit report: small" in page.read_text(encoding="utf-8")


def test_the_guides_block_runs_as_written(tmp_path, monkeypatch):
    text = (REPO / "docs" / "python-api.md").read_text(encoding="utf-8")
    block = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    for name in ("evals", "examples"):
        shutil.copytree(REPO / name, tmp_path / name)
    shutil.copy2(REPO / "params.yaml", tmp_path / "params.yaml")
    monkeypatch.chdir(tmp_path)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(block, "docs/python-api.md", "exec"), {"__name__": "guide"})
    lines = printed.getvalue().splitlines()
    committed = json.loads((REPO / "metrics" / "metrics.json").read_text(encoding="utf-8"))
    assert lines[0] == f"{committed['ndcg@10']:.4f}"
    # `groundkit compare` counts 67 queries whose first gold rank got worse from 800 to 400 characters.
    assert any(line.startswith("67 queries fell, among them q") for line in lines)


def test_a_result_shows_itself_in_one_line_and_as_a_table(tiny):
    results = tiny["small"]
    shown = repr(results)
    headline = json.loads((results.folder / "metrics.json").read_text(encoding="utf-8"))
    figures = ", ".join(f"{name} {value:.4f}" for name, value in headline.items())
    assert shown == (f"<Results 'small': 3 answerable and 1 no_answer queries; {figures}; folder {results.folder}>")
    page = results._repr_html_()
    # One row per metric: the mean over the answerable queries, then per category (one query each here).
    assert page.split("<tbody>")[1].count("<tr><th>") == len(results.side.per_query.metric_names)
    row = re.search(r"<tr><th>mrr</th>(.*?)</tr>", page).group(1)
    assert re.findall(r"<td>([0-9.]+)</td>", row) == [f"{2 / 3:.4f}", "1.0000", "0.0000", "1.0000"]
    assert "<th>factoid (1)</th><th>lexical_gap (1)</th><th>multi_passage (1)</th>" in page


def test_the_temporary_folder_goes_with_its_result(tiny, tmp_path, monkeypatch):
    import gc
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where mkdtemp makes the result's folder
    results = gk.evaluate(tiny["corpus"], tiny["judgments"], set={**AUDIT_OFF, "chunk.size": 60})
    folder = results.folder
    assert folder.parent == tmp_path and (folder / "per_query.csv").is_file()
    # Its folder removed while it lives (by hand, by a cleaner of /tmp): the report says so, and how to keep it.
    shutil.rmtree(folder)
    assert repr(results).endswith(f"folder {folder} (removed)>")
    with pytest.raises(gk.ArtifactError, match="is gone: it held the artifacts of") as info:
        results.report(tmp_path / "page.html")
    assert "out=FOLDER" in info.value.fix and not (tmp_path / "page.html").exists()
    again = gk.evaluate(tiny["corpus"], tiny["judgments"], set={**AUDIT_OFF, "chunk.size": 60})
    kept = again.folder
    del results, again
    gc.collect()
    assert not kept.exists() and list(tmp_path.iterdir()) == []
    # A run that fails leaves no folder behind either.
    with pytest.raises(gk.JudgmentsError):
        gk.evaluate(tiny["corpus"], tmp_path / "missing.jsonl", set=AUDIT_OFF)
    assert list(tmp_path.iterdir()) == []
    # A folder given as out= is the caller's: it stays.
    given = gk.evaluate(tiny["corpus"], tiny["judgments"], set={**AUDIT_OFF, "chunk.size": 60}, out=tmp_path / "mine")
    del given
    gc.collect()
    assert (tmp_path / "mine" / "per_query.csv").is_file()
