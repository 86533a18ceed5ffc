"""`groundkit compare` between two runs scored under two label sets: PPI++ on the per-query paired differences,
checked against ppi_py on the differences read back from per_query.csv."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate, ppi_mean_pval

from groundkit.cli import main
from groundkit.corpus.judgments import Category
from groundkit.scoring.ppi import ALPHA, minimum_detectable_effect
from groundkit.scoring.schema import QueryResult, StageResult, read_per_query

METRICS = ["recall@10", "ndcg@10", "chars@10"]
DIRECTED = ["recall@10", "ndcg@10"]
QUERIES, LABELLED = 160, 50


def _truth(rng: np.random.Generator, shift: float) -> np.ndarray:
    """Per-query (recall@10, ndcg@10) of one chunk size under the person's labels."""
    ranks = rng.integers(1, 16, QUERIES) + shift
    hit = (ranks <= 10).astype(float)
    return np.stack([hit, hit / np.log2(1 + np.maximum(ranks, 1))], axis=1)


def _side(folder: Path, truth: np.ndarray, judged: np.ndarray, labelled: np.ndarray, empty: np.ndarray,
          size: int) -> Path:
    queries = []
    for i in range(QUERIES):
        category = Category.NO_ANSWER if empty[i] else Category.FACTOID  # the judge found nothing relevant
        metrics = {} if empty[i] else {"recall@10": judged[i, 0], "ndcg@10": judged[i, 1], "chars@10": 8000.0}
        human = dict(zip(DIRECTED, truth[i].tolist(), strict=True)) if labelled[i] else None
        queries.append(QueryResult(query_id=f"q{i:03d}", query=f"question {i}", category=category, retrieved=10,
                                   gold_chunks=0 if empty[i] else 1, first_gold_rank=None, metrics=metrics,
                                   human_metrics=human))
    result = StageResult(measures=METRICS, queries=queries, human_measures=DIRECTED)
    folder.mkdir(parents=True)
    (folder / "per_query.csv").write_text(result.per_query_csv(), encoding="utf-8")
    metadata = {"corpus_hash": "c" * 64, "judgments_hash": "j" * 64, "groundkit_version": "0.1.0",
                "params": {"chunk": {"size": size}}}
    (folder / "run.json").write_text(json.dumps(metadata), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def two_chunk_sizes(tmp_path_factory) -> tuple[Path, Path]:
    rng = np.random.default_rng(40)
    labelled = np.zeros(QUERIES, dtype=bool)
    labelled[rng.choice(QUERIES, LABELLED, replace=False)] = True
    empty = rng.random(QUERIES) < 0.1
    root = tmp_path_factory.mktemp("two_labels")
    sides = []
    for shift, size in ((0.0, 800), (-1.5, 400)):
        truth = _truth(rng, shift)
        # A lenient judge: on a third of the queries it credits a passage at rank 1-5 the person did not.
        lenient = rng.random(QUERIES) < 0.33
        judged = truth.copy()
        credited = 1 / np.log2(1 + rng.integers(1, 6, QUERIES))
        judged[:, 0] = np.where(lenient, 1.0, truth[:, 0])
        judged[:, 1] = np.where(lenient, np.maximum(truth[:, 1], credited), truth[:, 1])
        sides.append(_side(root / str(size), truth, judged, labelled, empty, size))
    return sides[0], sides[1]


def _differences(baseline: Path, candidate: Path, metric: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Y, Yhat, Yhat_unlabelled) of the paired differences, read back as compare reads them."""
    tables = [read_per_query((side / "per_query.csv").read_text(encoding="utf-8"), "per_query.csv")
              for side in (baseline, candidate)]
    machine = [np.nan_to_num(t.values[:, t.metric_names.index(metric)], nan=0.0) for t in tables]
    human = [t.human_values[:, t.human_names.index(metric)] for t in tables]
    d_machine, d_human = machine[1] - machine[0], human[1] - human[0]
    labelled = ~np.isnan(d_human)
    return d_human[labelled], d_machine[labelled], d_machine[~labelled]


def test_the_ppi_delta_interval_and_p_value_equal_ppi_py_on_the_differences(two_chunk_sizes, capsys):
    baseline, candidate = two_chunk_sizes
    assert main(["compare", str(baseline), str(candidate), "--metric", "ndcg@10", "--metric", "recall@10",
                 "--json"]) in (0, 1)
    report = json.loads(capsys.readouterr().out)
    ppi = report["two_label_sets"]
    assert (ppi["n"], ppi["N"]) == (LABELLED, QUERIES - LABELLED)
    overall = {s["metric"]: s for s in report["overall"]}
    for metric in DIRECTED:
        Y, Yhat, Yhat_u = _differences(baseline, candidate, metric)
        figures = ppi["metrics"][metric]
        expected = float(ppi_mean_pointestimate(Y, Yhat, Yhat_u)[0])
        low, high = ppi_mean_ci(Y, Yhat, Yhat_u, alpha=ALPHA)
        assert figures["delta"] == pytest.approx(expected, abs=1e-9)
        assert figures["ci95"] == pytest.approx([float(low[0]), float(high[0])], abs=1e-9)
        p_value = float(ppi_mean_pval(Y, Yhat, Yhat_u, lam=figures["lambda"])[0])
        assert figures["p_value"] == pytest.approx(p_value, abs=1e-9)
        # The overall row, the gate and the MDE read the PPI figures.
        row = overall[metric]
        assert (row["delta"], row["ci95"], row["p_value"]) == (figures["delta"], figures["ci95"], figures["p_value"])
        # The row's test rests on the person's sample: it counts the queries they labelled.
        assert row["queries"] == LABELLED and row["effect_size_dz"] is None
        assert row["wins"] + row["ties"] + row["losses"] == LABELLED
        se = (high[0] - low[0]) / (2 * 1.959963984540054)
        assert figures["mde"] == pytest.approx(minimum_detectable_effect(float(se)), abs=1e-9)
        mde = {d["metric"]: d for d in report["detectable"] if d["category"] == "all"}[metric]
        assert mde["mde"] == figures["mde"] and (mde["queries"], mde["labelled"]) == (QUERIES, LABELLED)
        # The judge alone: its mean difference over every query, marked biased.
        assert figures["machine_only"] == {"delta": pytest.approx(float(np.mean(np.concatenate([Yhat, Yhat_u])))),
                                           "biased": True}
    # Holm over the two gated PPI p-values.
    p = sorted(ppi["metrics"][m]["p_value"] for m in DIRECTED)
    adjusted = sorted(report["gate"]["p_adjusted"].values())
    assert adjusted[0] == pytest.approx(min(1.0, 2 * p[0])) and adjusted[1] == pytest.approx(max(adjusted[0], p[1]))
    # The context read (chars@10) does not depend on the labels: its row stays the bootstrap's.
    assert "chars@10" not in ppi["metrics"] and overall["chars@10"]["effect_size_dz"] is None
    assert math.isfinite(overall["chars@10"]["baseline"])


@pytest.mark.parametrize("correction", ["holm", "bh", "none"])
def test_a_ppi_row_is_marked_exactly_when_its_deciding_normal_interval_excludes_0(two_chunk_sizes, capsys,
                                                                                  correction):
    # Issue 41 with two label sets: the PPI rows decide, and their deciding interval is PPI's normal interval at the
    # row's (corrected) level, so the mark agrees with it, and it agrees with the corrected p-value.
    from statistics import NormalDist

    baseline, candidate = two_chunk_sizes
    main(["compare", str(baseline), str(candidate), "--metric", "ndcg@10,recall@10", "--correction", correction,
          "--json"])
    report = json.loads(capsys.readouterr().out)
    ppi = report["two_label_sets"]["metrics"]
    for row in report["overall"]:
        low, high = row["ci"]
        # An end open at 0 ("(0, U]", Holm's rejected row) excludes it too.
        assert row["significant"] == (low > 0 or high < 0 or row["ci_bounds"] != "[]")
        if row["metric"] in ppi:
            figures = ppi[row["metric"]]
            if row["ci_bounds"] == "[]":
                half = NormalDist().inv_cdf(1 - (1 - row["ci_level"]) / 2) * figures["std_error"]
                assert row["ci"] == pytest.approx([figures["delta"] - half, figures["delta"] + half], abs=1e-12)
                assert row["significant"] == (row["ci"][0] > 0 or row["ci"][1] < 0)
            if correction == "none":
                assert row["significant"] == (figures["p_value"] < 0.05)
                assert row["ci_level"] == pytest.approx(0.95)


def test_the_markdown_report_says_what_the_rows_are(two_chunk_sizes, capsys):
    baseline, candidate = two_chunk_sizes
    main(["compare", str(baseline), str(candidate), "--metric", "ndcg@10"])
    out = capsys.readouterr().out
    assert f"**Two label sets**: {LABELLED} queries labelled by a person, {QUERIES - LABELLED} by the judge" in out


def test_one_label_set_against_two_is_refused(two_chunk_sizes, tmp_path, capsys):
    baseline, candidate = two_chunk_sizes
    plain = tmp_path / "plain"
    plain.mkdir()
    text = (candidate / "per_query.csv").read_text(encoding="utf-8")
    header = text.splitlines()[0].split(",")
    keep = [i for i, name in enumerate(header) if not name.startswith("human.")]
    rows = [",".join(line.split(",")[i] for i in keep) for line in text.splitlines()]
    (plain / "per_query.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (plain / "run.json").write_text((candidate / "run.json").read_text(encoding="utf-8"), encoding="utf-8")
    assert main(["compare", str(baseline), str(plain)]) == 1
    err = capsys.readouterr().err
    assert "was scored under one label set" in err and "fix: score both sides" in err


def test_labels_on_other_queries_are_refused(two_chunk_sizes, tmp_path, capsys):
    baseline, candidate = two_chunk_sizes
    other = tmp_path / "other"
    other.mkdir()
    lines = (candidate / "per_query.csv").read_text(encoding="utf-8").splitlines()
    unlabelled = next(i for i, line in enumerate(lines) if ",factoid," in line and line.endswith(",,"))
    lines[unlabelled] = lines[unlabelled][:-2] + ",1.000000,1.000000"
    (other / "per_query.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (other / "run.json").write_text((candidate / "run.json").read_text(encoding="utf-8"), encoding="utf-8")
    assert main(["compare", str(baseline), str(other)]) == 1
    assert "has a person's labels on other queries than the baseline" in capsys.readouterr().err


def test_several_candidates_read_the_ppi_figures_each_as_alone(two_chunk_sizes, tmp_path, capsys):
    baseline, candidate = two_chunk_sizes
    same = tmp_path / "same"
    same.mkdir()
    for name in ("per_query.csv", "run.json"):
        (same / name).write_bytes((baseline / name).read_bytes())
    main(["compare", str(baseline), str(candidate), "--metric", "ndcg@10,recall@10", "--json"])
    pair = {s["metric"]: s for s in json.loads(capsys.readouterr().out)["overall"]}
    main(["compare", str(baseline), str(candidate), str(same), "--metric", "ndcg@10,recall@10", "--json"])
    report = json.loads(capsys.readouterr().out)
    moved, unmoved = ({s["metric"]: s for s in c["overall"]} for c in report["candidates"])
    # Issue 41: a gated row's deciding interval is at the level its correction gives it, and the family is larger
    # among several candidates (4 tests, not 2), so that interval (and its mark) may differ from the pair's; the
    # PPI figures themselves (delta, raw interval, p-value) are the same.
    decided = {"p_adjusted", "ci", "ci_level", "ci_bounds", "significant"}
    for metric in DIRECTED:
        skip = decided if metric in ("ndcg@10", "recall@10") else {"p_adjusted"}
        assert {k: v for k, v in moved[metric].items() if k not in skip} == \
            {k: v for k, v in pair[metric].items() if k not in skip}
        # No difference anywhere: PPI's delta and interval are 0, its p-value 1.
        assert (unmoved[metric]["delta"], unmoved[metric]["ci95"], unmoved[metric]["p_value"]) == (0.0, [0.0, 0.0],
                                                                                                     1.0)


def test_the_api_frame_carries_the_human_columns(two_chunk_sizes):
    import groundkit as gk

    baseline, _ = two_chunk_sizes
    frame = gk.load_results(str(baseline)).per_query
    table = read_per_query((baseline / "per_query.csv").read_text(encoding="utf-8"), "per_query.csv")
    assert [c for c in frame.columns if c.startswith("human.")] == ["human.recall@10", "human.ndcg@10"]
    assert np.array_equal(frame["human.ndcg@10"].to_numpy(), table.human_values[:, 1], equal_nan=True)
    assert int(frame["human.ndcg@10"].notna().sum()) == LABELLED


def _judge_sees_no_change(root: Path, labelled: int, total: int = 40) -> tuple[Path, Path]:
    """Two sides whose judge scores every query the same (its paired differences all 0) and whose person, on the
    first ``labelled`` queries, finds the candidate 0.5 better and 0.5 worse in turn (mean 0, SD 0.5, ddof 0).

    The judge tells nothing, so PPI's lambda is 0 and its estimate is the person's mean: standard error
    0.5 / sqrt(labelled), which times sqrt(labelled) is 0.5. The judge's differences have no spread at all.
    """
    sides = []
    for name, person in (("base", [0.5] * labelled), ("cand", [(1.0, 0.0)[i % 2] for i in range(labelled)])):
        queries = [QueryResult(query_id=f"q{i:03d}", query=f"question {i}", category=Category.FACTOID, retrieved=10,
                               gold_chunks=1, first_gold_rank=None,
                               metrics={"recall@10": 1.0, "ndcg@10": 0.5, "chars@10": 8000.0},
                               human_metrics={"recall@10": 1.0, "ndcg@10": person[i]} if i < labelled else None)
                   for i in range(total)]
        folder = root / name
        folder.mkdir(parents=True)
        result = StageResult(measures=METRICS, queries=queries, human_measures=DIRECTED)
        (folder / "per_query.csv").write_text(result.per_query_csv(), encoding="utf-8")
        (folder / "run.json").write_text(json.dumps({"corpus_hash": "c" * 64, "judgments_hash": "j" * 64,
                                                     "groundkit_version": "0.1.0", "params": {}}), encoding="utf-8")
        sides.append(folder)
    return sides[0], sides[1]


def test_too_few_queries_for_a_ppi_row_counts_the_person_labelled_and_reads_its_standard_error(tmp_path, capsys):
    # 12 labelled of 40. The one-sided 95% bound is normal (PPI's), so by hand, with the effective SD 0.5:
    # n = ((z_0.95 + z_0.8) * 0.5 / 0.1)**2 = ((1.644854 + 0.841621) * 5)**2 = 154.56, rounded up to 155.
    # The judge's differences over all 40 queries have SD 0: read from them, the rule could name no number.
    baseline, candidate = _judge_sees_no_change(tmp_path, labelled=12)
    assert main(["compare", str(baseline), str(candidate), "--metric", "ndcg@10", "--non-inferiority",
                 "ndcg@10=0.1", "--json"]) == 4
    report = json.loads(capsys.readouterr().out)
    (line,) = report["gate"]["lines"]
    # Lower bound 0 - 1.644854 * 0.5 / sqrt(12) = -0.2374, not above -0.1.
    assert line["text"] == ("delta +0.0000, one-sided 95% lower bound -0.2374 not above -0.1; too few queries: 12 "
                            "queries labelled by a person, and a candidate equal to the baseline passes this margin "
                            "with 80% power only from about 155 (PPI standard error x sqrt(n) 0.5000); label more "
                            "queries or widen the margin")
    ndcg = {s["metric"]: s for s in report["overall"]}["ndcg@10"]
    assert ndcg["queries"] == 12 and ndcg["significant"] is False and report["gate"]["untested"] == {}


def test_a_ppi_row_under_ten_labelled_queries_says_so_wherever_it_is_described(tmp_path, capsys):
    # 8 labelled of 40 machine-judged queries: 40 answerable pairs, but the PPI row's test rests on the 8, so it is
    # not tested, and every reason counts the 8 (not the 40) and names the person's labels.
    baseline, candidate = _judge_sees_no_change(tmp_path, labelled=8)
    assert main(["compare", str(baseline), str(candidate), "--metric", "ndcg@10", "--non-inferiority",
                 "ndcg@10=0.1", "--json"]) == 4
    report = json.loads(capsys.readouterr().out)
    few = ("fewer than 10 queries labelled by a person: groundkit claims no significance below 10 (PPI's normal "
           "interval takes its spread from the person's labels, which so few cannot estimate)")
    assert report["gate"]["untested"] == {"ndcg@10": f"8 queries labelled by a person; {few}"}
    assert report["gate"]["notes"] == [f"only 8 queries labelled by a person, {few}"]
    (line,) = report["gate"]["lines"]
    assert line["text"].startswith("no lower bound with 8 queries labelled by a person, so no evidence the drop is "
                                   "smaller than 0.1; too few queries: 8 queries labelled by a person, and a candidate "
                                   "equal to the baseline passes this margin with 80% power only from about 155 ")
    assert report["verdict"] == "untested"
    main(["compare", str(baseline), str(candidate), "--metric", "ndcg@10", "--format", "text"])
    text = capsys.readouterr().out
    words = " ".join(text.split())  # unwrapped
    assert words.startswith(f"groundkit compare: {baseline} -> {candidate}, paired over 40 answerable queries ")
    assert "ndcg@10         0.5000     0.5000  +0.0000  n/a (8 labelled; < 10)" in text
    # MDE from PPI's standard error 0.5 / sqrt(8): (1.959964 + 0.841621) * 0.176777 = 0.4953.
    assert ("These 40 machine-judged queries (8 labelled by a person) can detect a change of about 0.4953 in "
            "ndcg@10") in words
    assert "Two label sets: 8 queries labelled by a person, 32 by the judge alone." in words
