"""`groundkit compare` end to end: two runs, several, bad input, a real DVC repository (statistics: test_stats.py)."""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from groundkit.cli import main
from tests.bad_inputs import COMPARE_CASES, write_compare_pair
from tests.conftest import write_tiny_corpus
from tests.dvc_helpers import REPO, copy_of, env, run


def test_every_refused_compare_input_is_named_by_its_side_or_option():
    refused = {name: case for name, case in COMPARE_CASES.items() if case.exit == 1}
    assert refused  # the catalogue holds refusals, not only reports
    for name, case in refused.items():
        assert case.stream == "stderr", name
        assert case.where.startswith(("baseline", "candidate", "--")), (name, case.where)


@pytest.mark.parametrize("name", sorted(COMPARE_CASES))
def test_bad_compare_input_fails_cleanly(tmp_path, capsys, monkeypatch, name):
    case = COMPARE_CASES[name]
    baseline, candidate = write_compare_pair(tmp_path)
    case.damage(baseline, candidate)
    monkeypatch.chdir(tmp_path)  # not a git repository: a missing folder cannot be taken for a revision
    code = main(["compare", str(baseline), str(candidate), *case.args])
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err
    assert code == case.exit, err
    if case.exit == 1:
        assert err.startswith("error: ") and err.count("error: ") == 1, err
        assert case.where in err and case.what in err, err
        assert "\n  fix: " in err, err
        assert out == ""  # no report from runs that cannot be compared
    else:
        shown = out if case.stream == "stdout" else err
        assert case.where in shown and case.what in shown, shown


def test_one_query_category_has_null_statistics_in_json(tmp_path, capsys):
    baseline, candidate = write_compare_pair(tmp_path)
    COMPARE_CASES["one query in a category"].damage(baseline, candidate)
    assert main(["compare", str(baseline), str(candidate), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    ndcg = {s["metric"]: s for s in report["by_category"]["boundary"]}["ndcg@10"]
    # q1 alone: first gold rank 1 -> 2, so nDCG@10 goes from 1 to 1 / log2(3).
    assert ndcg["queries"] == 1 and ndcg["ci95"] is None and ndcg["p_value"] is None
    assert ndcg["baseline"] == 1.0 and ndcg["candidate"] == pytest.approx(0.630930)
    assert ndcg["ci"] is None and ndcg["significant"] is False
    # Six answerable queries overall: a p-value, but no interval and no claim below ten.
    assert report["gate"]["untested"]["ndcg@10"].startswith("6 answerable queries; fewer than 10 paired queries")
    assert report["verdict"] == "untested"


def _grow(*folders: Path) -> None:
    """Double the answerable queries of each side: q1..q6 again as q1b..q6b, the same values."""
    for folder in folders:
        path = folder / "per_query.csv"
        header, *rows = path.read_text(encoding="utf-8").splitlines()
        again = [row.replace(row.split(",")[0], row.split(",")[0] + "b", 1).replace(
            f"query {row.split(',')[0]}", f"query {row.split(',')[0]}b", 1) for row in rows if ",no_answer," not in row]
        path.write_text("\n".join([header, *rows, *again]) + "\n", encoding="utf-8")


def _add_values(folder: Path, name: str, values: list[str]) -> None:
    """Append a metric column with one value per answerable query, in file order (empty for no_answer)."""
    path = folder / "per_query.csv"
    header, *rows = path.read_text(encoding="utf-8").splitlines()
    given = iter(values)
    rows = [row + ("," if ",no_answer," in row else f",{next(given)}") for row in rows]
    path.write_text("\n".join([f"{header},{name}", *rows]) + "\n", encoding="utf-8")


def _add_column(folder: Path, name: str, value: str) -> None:
    """Append a metric column holding ``value`` for every answerable query (empty for no_answer)."""
    path = folder / "per_query.csv"
    header, *rows = path.read_text(encoding="utf-8").splitlines()
    rows = [row + ("," if ",no_answer," in row else f",{value}") for row in rows]
    path.write_text("\n".join([f"{header},{name}", *rows]) + "\n", encoding="utf-8")


def test_a_registered_measure_is_compared_like_any_other(tmp_path, capsys, throwaway_measure):
    baseline, candidate = write_compare_pair(tmp_path)
    _grow(baseline, candidate)
    _add_column(baseline, "hits@3", "1.000000")
    _add_column(candidate, "hits@3", "2.000000")
    assert main(["compare", str(baseline), str(candidate), "--metric", "hits@3", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    hits = {s["metric"]: s for s in report["overall"]}["hits@3"]
    # Twelve answerable queries, each one gold id more: delta +1 everywhere, intervals of width 0 (every subset
    # mean is 1), and the exact sign-flip p-value 2 / 2**12 (only all-plus and all-minus are as extreme).
    assert (hits["queries"], hits["baseline"], hits["candidate"], hits["delta"]) == (12, 1.0, 2.0, 1.0)
    assert hits["ci95"] == [1.0, 1.0] and hits["p_value"] == pytest.approx(2 / 4096)
    assert (hits["ci"], hits["ci_level"], hits["ci_bounds"], hits["significant"]) == ([1.0, 1.0], 0.95, "[]", True)
    assert report["verdict"] == "better"


def test_a_column_no_measure_names_is_refused(tmp_path, capsys):
    baseline, candidate = write_compare_pair(tmp_path)
    _add_column(baseline, "hits@3", "1.000000")
    assert main(["compare", str(baseline), str(candidate)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "baseline/per_query.csv:1: has the column 'hits@3'" in err
    assert "the measures are chars@k, coverage@k|coverage@Nchars" in err and "\n  fix: " in err


def _json(capsys, *args: str) -> dict:
    assert main(["compare", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_two_run_report_adds_effect_sizes_counts_and_what_can_be_detected(tmp_path, capsys):
    baseline, candidate = write_compare_pair(tmp_path)
    report = _json(capsys, str(baseline), str(candidate), "--metric", "mrr")
    mrr = {s["metric"]: s for s in report["overall"]}["mrr"]
    # MRR per answerable query, baseline 1, 0.333333, 0, 0.5, 0.166667, 1 and candidate 0.5, 1, 0.25,
    # 0.5, 0, 1: deltas -0.5, 0.666667, 0.25, 0, -0.166667, 0. Two up, two the same, two down; mean
    # 0.25 / 6, squared deviations summing to 0.774306, SD sqrt(0.774306 / 5) = 0.393524, d_z 0.105881.
    assert (mrr["wins"], mrr["ties"], mrr["losses"]) == (2, 2, 2)
    assert mrr["effect_size_dz"] == pytest.approx(0.105881, abs=1e-6)
    # One gated metric: the correction has nothing to correct.
    assert report["gate"]["correction"] == "holm" and report["gate"]["tests"] == 1
    assert report["gate"]["p_adjusted"] == {"mrr": mrr["p_value"]}
    detectable = {(d["metric"], d["category"]): d for d in report["detectable"]}
    overall = detectable[("mrr", "all")]
    # Baseline SD 0.421637 (squared deviations from 0.5 sum to 0.888889); the sign-flip test's threshold
    # with 6 queries is 1.959964 * sqrt(5 / (6 - 1.959964**2)) = 2.982998, so the MDE is
    # (2.982998 + 0.841621) * sqrt(2) * 0.421637 / sqrt(6) = 0.931036.
    assert (overall["queries"], overall["baseline"]) == (6, 0.5)
    assert overall["sd"] == pytest.approx(0.421637, abs=1e-6) and overall["mde"] == pytest.approx(0.931036, abs=1e-6)
    # Three queries per category: 8 sign patterns, so no p-value can go below 2 / 8.
    factoid = detectable[("mrr", "factoid")]
    assert factoid["mde"] is None and "smallest p-value the test can give is 0.25" in factoid["note"]


def test_one_query_category_detects_nothing_and_says_so(tmp_path, capsys):
    baseline, candidate = write_compare_pair(tmp_path)
    COMPARE_CASES["one query in a category"].damage(baseline, candidate)
    assert main(["compare", str(baseline), str(candidate)]) == 0
    out = capsys.readouterr().out
    assert "| ndcg@10 | boundary | 1 | 1.0000 | n/a | n/a (1 answerable query; a paired test needs at least two) |" \
        in out
    assert "With 6 answerable queries these judgments can detect a change of about " in out


def test_the_verdict_uses_corrected_p_values(tmp_path, capsys, throwaway_measure):
    baseline, candidate = write_compare_pair(tmp_path)
    _grow(baseline, candidate)
    _add_values(baseline, "hits@3", ["1.000000"] * 12)
    _add_values(candidate, "hits@3", ["2.000000"] * 10 + ["0.000000"] * 2)
    both = [str(baseline), str(candidate), "--metric", "hits@3,ndcg@10"]
    # hits@3 rises by 1 on ten of twelve queries and falls by 1 on two: of the 2**12 sign patterns, those with at
    # most two or at least ten minus signs are as extreme, p = 2 * (1 + 12 + 66) / 4096 = 0.0386 alone,
    # significant at 0.05. Tested with ndcg@10 (p far above 0.05), Holm doubles the smaller p: 0.0771; BH too.
    alone = _json(capsys, *both, "--correction", "none")
    hits = {s["metric"]: s for s in alone["overall"]}["hits@3"]
    ndcg = {s["metric"]: s for s in alone["overall"]}["ndcg@10"]
    assert hits["p_value"] == pytest.approx(158 / 4096) and ndcg["p_value"] > 0.0771
    assert alone["verdict"] == "better" and alone["gate"]["p_adjusted"]["hits@3"] == pytest.approx(158 / 4096)
    # Its interval at 95% excludes 0; corrected, at 97.5%, it does not: the mark follows the interval.
    assert hits["ci"][0] > 0 and hits["ci_level"] == 0.95 and hits["significant"]
    for correction in ("holm", "bh"):
        report = _json(capsys, *both, "--correction", correction)
        corrected = {s["metric"]: s for s in report["overall"]}["hits@3"]
        assert report["gate"]["p_adjusted"]["hits@3"] == pytest.approx(316 / 4096), correction
        assert corrected["ci"][0] <= 0 <= corrected["ci"][1] and corrected["ci_level"] == 0.975, correction
        assert report["verdict"] == "no significant change", correction
    assert main(["compare", *both]) == 0
    out = capsys.readouterr().out
    assert "**Verdict: no significant change**: no gated metric moved significantly. At alpha = 0.05 on hits@3, " \
           "ndcg@10, Holm-corrected over 2 tests (" in out
    assert "hits@3 +0.6667 [" in out and "97.5%, p = 0.0386, corrected p = 0.0771)" in out
    # The gate follows: the drop fails CI uncorrected, not once corrected.
    reversed_sides = [str(candidate), str(baseline), "--metric", "hits@3,ndcg@10", "--fail-on-regression"]
    assert main(["compare", *reversed_sides, "--correction", "none"]) == 4
    assert "hits@3" in capsys.readouterr().err
    assert main(["compare", *reversed_sides]) == 0


def test_several_candidates_in_one_table(tmp_path, capsys):
    from statsmodels.stats.multitest import multipletests

    baseline, candidate = write_compare_pair(tmp_path)
    same = shutil.copytree(baseline, tmp_path / "same")  # a candidate that changes nothing
    pair = _json(capsys, str(baseline), str(candidate))
    report = _json(capsys, str(baseline), str(candidate), str(same), "--metric", "ndcg@10,mrr")
    assert [c["candidate"] for c in report["candidates"]] == [str(candidate), str(same)]
    moved, unmoved = ({s["metric"]: s for s in c["overall"]} for c in report["candidates"])
    # The candidates share the resampling's draws: each row is what the two-run compare shows.
    two_run = {s["metric"]: s for s in pair["overall"]}
    for metric in ("ndcg@10", "mrr"):
        # The deciding interval is the family's (four tests here, one there); everything else is the same.
        decided = {"p_adjusted", "ci", "ci_level", "ci_bounds", "significant"}
        assert {k: v for k, v in moved[metric].items() if k not in decided} == \
            {k: v for k, v in two_run[metric].items() if k not in decided}
        assert (unmoved[metric]["delta"], unmoved[metric]["p_value"]) == (0.0, 1.0)
        assert (unmoved[metric]["wins"], unmoved[metric]["ties"], unmoved[metric]["losses"]) == (0, 6, 0)
        assert unmoved[metric]["effect_size_dz"] is None
    raw = [moved["ndcg@10"]["p_value"], moved["mrr"]["p_value"], 1.0, 1.0]
    expected = multipletests(raw, method="holm")[1]
    adjusted = [moved["ndcg@10"]["p_adjusted"], moved["mrr"]["p_adjusted"], unmoved["ndcg@10"]["p_adjusted"],
                unmoved["mrr"]["p_adjusted"]]
    assert adjusted == pytest.approx(list(expected))
    assert report["gate"] == {"metrics": ["ndcg@10", "mrr"], "alpha": 0.05, "max_drop": 0.0, "correction": "holm",
                              "tests": 4, "non_inferiority": {},
                              "notes": ["only 6 paired queries, fewer than 10 paired queries: groundkit claims no "
                                        "significance below 10 (the sign-flip test's interval leans on the symmetry "
                                        "of the differences, which so few cannot show)"]}
    assert [c["verdict"] for c in report["candidates"]] == ["untested"] * 2  # six queries: no claim
    gated_pair = _json(capsys, str(baseline), str(candidate), "--metric", "ndcg@10,mrr")
    key = lambda d: (d["metric"], d["category"])  # noqa: E731
    assert sorted(report["detectable"], key=key) == sorted(gated_pair["detectable"], key=key)
    assert main(["compare", str(baseline), str(candidate), str(same)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"## groundkit compare: `{baseline}` against 2 candidates\n")
    assert "Holm-corrected over 2 tests (2 candidates x 1 metric)" in out
    assert "Left out of" not in out
    from groundkit.reports.compare import compare
    from groundkit.reports.compare_text import render_markdown
    from groundkit.reports.sides import read_side

    sides = [read_side(str(p), cwd=tmp_path) for p in (baseline, candidate, same)]
    # The default gate, less coverage@1000chars, which these hand-written results do not report (and say so).
    shown = render_markdown(compare(sides[0], sides[1:], gate=None, left_out=[("pending", "queued, not run yet")]))
    assert shown == out.replace("\n**Verdict", "\nLeft out of `--experiments`: pending: queued, not run yet.\n\n"
                                "**Verdict")
    assert "Note: coverage@1000chars is left out of the default gate: " in out
    # Issue 41: the deciding CI column comes first (none below 10 queries), the raw bootstrap interval beside it.
    assert f"| `{same}` | \\(none\\) | ndcg@10 | 0.5812 | 0.5812 | +0.0000 | n/a (6 queries; < 10) | " \
           "[+0.0000, +0.0000] | 1.0000 | 1.0000 | n/a | 0/6/0 |" in out


def test_one_candidate_is_the_case_n_equals_one_and_the_result_is_frozen(tmp_path):
    import dataclasses

    from groundkit.reports.compare import compare
    from groundkit.reports.sides import read_side

    baseline, candidate = write_compare_pair(tmp_path)
    same = shutil.copytree(baseline, tmp_path / "same")
    base, cand, unmoved = (read_side(str(p), cwd=tmp_path) for p in (baseline, candidate, same))
    alone, listed, two = compare(base, cand), compare(base, [cand]), compare(base, [cand, unmoved])
    assert alone == listed and len(alone.candidates) == 1 and alone.verdict == alone.candidates[0].verdict
    # Its row among several has the same statistics (shared draws); only the correction is over more tests.
    assert two.candidates[0].overall == alone.candidates[0].overall
    assert (alone.tests, two.tests) == (len(alone.gate), 2 * len(alone.gate))
    with pytest.raises(dataclasses.FrozenInstanceError):
        alone.verdict = "better"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        alone.candidates[0].overall[0].delta = 1.0  # type: ignore[misc]


def test_a_metric_named_twice_is_one_test_in_the_correction(tmp_path, capsys):
    baseline, candidate = write_compare_pair(tmp_path)
    same = shutil.copytree(baseline, tmp_path / "same")
    once = _json(capsys, str(baseline), str(candidate), str(same), "--metric", "mrr")
    twice = _json(capsys, str(baseline), str(candidate), str(same), "--metric", "mrr,mrr", "--metric", "mrr")
    assert twice == once
    assert once["gate"]["metrics"] == ["mrr"] and once["gate"]["tests"] == 2
    assert _json(capsys, str(baseline), str(candidate), "--metric", "mrr,mrr") == \
        _json(capsys, str(baseline), str(candidate), "--metric", "mrr")


@pytest.mark.parametrize("factor", ["0.5", "2.0"], ids=["halved", "doubled"])
def test_the_context_a_ranking_costs_gates_no_verdict(tmp_path, capsys, factor):
    # Every answerable query reads 1,000 characters in its top 10 in the baseline and half (or twice) as many in the
    # candidate: six equal deltas, p = 2/64, significant. Halving the context is no regression, doubling it no
    # improvement: chars@10 is neither better nor worse by itself, and is refused as a gate metric.
    baseline, candidate = write_compare_pair(tmp_path)
    _add_column(baseline, "chars@10", "1000.000000")
    _add_column(candidate, "chars@10", f"{1000 * float(factor):.6f}")
    code = main(["compare", str(baseline), str(candidate), "--metric", "chars@10", "--fail-on-regression"])
    out, err = capsys.readouterr()
    assert (code, out) == (1, "")
    assert err.startswith("error: --metric: chars@10 (characters of context in the top k passages) is neither "
                          "better nor worse by itself, so no verdict can be gated on it\n  fix: "), err
    # Ungated, its delta is reported as it is.
    report = _json(capsys, str(baseline), str(candidate))
    chars = {s["metric"]: s for s in report["overall"]}["chars@10"]
    assert (chars["delta"], chars["p_value"]) == (1000 * float(factor) - 1000, pytest.approx(2 / 64))


@pytest.mark.parametrize(("args", "where", "what"), [
    ([], "candidate", "is missing: compare needs a baseline and at least one candidate"),
    (["{candidate}", "{candidate}"], "candidate", "is given twice as a candidate"),
])
def test_refused_candidate_lists(tmp_path, capsys, args, where, what):
    baseline, candidate = write_compare_pair(tmp_path)
    assert main(["compare", str(baseline), *(a.format(candidate=candidate) for a in args)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: ") and err.count("error: ") == 1 and "\n  fix: " in err
    assert where in err.splitlines()[0] and what in err


@pytest.fixture
def tiny_runs(tmp_path) -> dict[str, Path]:
    """`groundkit run` over the tiny corpus and over the same corpus with one more document."""
    corpus, judgments = write_tiny_corpus(tmp_path / "corpus", tmp_path / "judgments.jsonl")
    grown = tmp_path / "grown"
    shutil.copytree(corpus, grown)
    (grown / "extra.md").write_text("A note on compaction and tombstones.\n", encoding="utf-8")
    runs = {}
    for name, root in (("same", corpus), ("grown", grown)):
        runs[name] = tmp_path / f"run-{name}"
        assert main(["run", "--corpus", str(root), "--judgments", str(judgments), "--set",
                     "audit.max_trivial_share=1.0", "--out", str(runs[name])]) == 0
    return runs


def test_compare_refuses_a_changed_corpus_unless_allowed(tiny_runs, capsys):
    capsys.readouterr()
    same, grown = tiny_runs["same"], tiny_runs["grown"]
    hashes = [json.loads((p / "run.json").read_text())["corpus_hash"][:12] for p in (same, grown)]
    assert hashes[0] != hashes[1]
    assert main(["compare", str(same), str(grown)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("error: ") == 1
    assert f"grown/run.json: was scored on a different corpus than the baseline (corpus_hash {hashes[0]} vs " \
           f"{hashes[1]})" in err and "--allow-corpus-change" in err

    assert main(["compare", str(same), str(grown), "--allow-corpus-change"]) == 0
    out = capsys.readouterr().out
    assert f"**Corpus changed** (`--allow-corpus-change`): corpus_hash `{hashes[0]}` → `{hashes[1]}`" in out
    assert main(["compare", str(same), str(grown), "--allow-corpus-change", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["corpus_change"] == {"baseline": hashes[0], "candidate": hashes[1]}
    assert main(["compare", str(same), str(same), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["corpus_change"] is None


def _limit_address_space() -> None:
    cap = 1 << 30
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


def test_100k_queries_fit_in_one_gib_of_address_space(tmp_path):
    # One scipy call over all queries at once needs a 10,000 x 100,000 array of int64 indices (7.45 GiB);
    # the blocked statistics stay under this 1 GiB cap, interpreter, numpy, scipy and both threads included.
    # Baseline MRR 0.5 everywhere; the candidate finds the answer first for every fourth query:
    # 25,000 differences of +0.5, so the mean rises by exactly 0.125, no sign flip of them comes near
    # (p = 2 / 10,001), and the 95% interval is 0.125 +- 1.96 * 0.5 * sqrt(0.25 * 0.75 / 100,000).
    queries = 100_000
    for name, step in (("baseline", 0), ("candidate", 4)):
        side = tmp_path / name
        side.mkdir()
        values = [f"{1.0 if step and i % step == 0 else 0.5:.6f}" for i in range(queries)]
        rows = "".join(f"q{i:06d},factoid,1,,{v},{v}\n" for i, v in enumerate(values))
        (side / "per_query.csv").write_text("query_id,category,first_gold_rank,abstained,mrr,ndcg@10\n" + rows)
        (side / "run.json").write_text(json.dumps({"corpus_hash": "c", "judgments_hash": "j", "params": {}}))
    threads = {name: "1" for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    result = subprocess.run(
        [sys.executable, "-m", "groundkit.cli", "compare", "baseline", "candidate", "--metric", "mrr", "--json"],
        cwd=tmp_path, env=env(PYTHONPATH=str(REPO), **threads), preexec_fn=_limit_address_space,
        capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    mrr = report["overall"][0]
    assert (mrr["queries"], mrr["baseline"], mrr["candidate"], mrr["delta"]) == (queries, 0.5, 0.625, 0.125)
    # The one category holds every query: its row (nDCG at the deepest k) is the overall one, resampled once for
    # the report, not once more for the category.
    ndcg = next(row for row in report["overall"] if row["metric"] == "ndcg@10")
    assert {key: value for key, value in ndcg.items() if key != "metric"} == \
        {key: value for key, value in mrr.items() if key != "metric"}
    assert report["by_category"] == {"factoid": [ndcg]}
    assert mrr["p_value"] == pytest.approx(2 / 10_001)
    half = 1.96 * 0.5 * np.sqrt(0.25 * 0.75 / queries)
    assert mrr["ci95"][0] == pytest.approx(0.125 - half, abs=0.1 * half)
    assert mrr["ci95"][1] == pytest.approx(0.125 + half, abs=0.1 * half)


def groundkit(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["groundkit", *args], capture_output=True, text=True, env=env(), cwd=cwd, check=False)


@pytest.fixture(scope="module")
def experiments(sweep_clone, tmp_path_factory) -> Path:
    """A copy of the session's sweep clone: the committed baseline at HEAD, experiments s400 (chunks of 400
    characters) and s1200 (1200, 100 shared), queued-exp (queued, never run); and one experiment more that only
    moves the work to the Ray engine (no stage declares execution: DVC re-runs nothing, and Ray never starts)."""
    repo = copy_of(sweep_clone.repo, tmp_path_factory.mktemp("compare") / "repo")
    run(["dvc", "exp", "run", "-q", "-S", "execution.engine=ray", "-n", "on-ray"], repo)
    run(["git", "checkout", "--", "."], repo)  # the workspace back at the commit
    return repo


def test_compare_revision_against_experiment(experiments):
    result = groundkit("compare", "HEAD", "s400", "--json", cwd=experiments)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["params_changed"] == {"chunk.size": [800, 400]}
    overall = {s["metric"]: s for s in report["overall"]}
    committed = json.loads((experiments / "metrics" / "detail.json").read_text())["answerable"]
    assert overall["ndcg@10"]["baseline"] == pytest.approx(committed["ndcg@10"], abs=1e-6)
    assert overall["ndcg@10"]["queries"] == 144
    assert overall["ndcg@10"]["delta"] < 0 and overall["ndcg@10"]["p_value"] < 0.05
    # 400-character chunks read half the context at 10, and hold as much gold within 1,000 characters:
    # nDCG@10 fell only with the context, a trade and not a loss.
    assert overall["chars@10"]["delta"] < 0 and overall["chars@10"]["p_value"] < 0.05
    assert overall["coverage@1000chars"]["p_value"] > 0.05
    assert report["verdict"] == "traded" and report["context"]["ndcg@10"]["traded"]
    assert set(report["by_category"]) == {"boundary", "factoid", "lexical_gap", "multi_passage"}
    assert report["worse"] and all(
        (w["rank_after"] or 10**9) > (w["rank_before"] or 10**9) for w in report["worse"])

    again = groundkit("compare", "HEAD", "s400", "--json", cwd=experiments)
    assert again.stdout == result.stdout  # seeded: the same report every time


def test_fail_on_regression_gates_ci(experiments):
    gated = groundkit("compare", "HEAD", "s400", "--fail-on-regression", "--metric", "ndcg@10,recall@5",
                      cwd=experiments)
    # Both fell only with less context read: traded, and the gate agrees with the verdict, passing with a note.
    assert gated.returncode == 0, gated.stderr
    assert "**Verdict: traded**" in gated.stdout
    assert "gate passed: ndcg@10, rule regression: fell only with less context read (chars@10)" in gated.stderr
    # Asked for evidence that nDCG@10 lost less than 0.01, the gate fails, naming the metric and the rule.
    proven = groundkit("compare", "HEAD", "s400", "--non-inferiority", "ndcg@10=0.01", cwd=experiments)
    assert proven.returncode == 4 and "gate failed: ndcg@10, rule non-inferiority: delta -" in proven.stderr
    improved = groundkit("compare", "s400", "HEAD", "--fail-on-regression", cwd=experiments)
    # The other way round nDCG@10 rises only with twice the context read: traded, and no regression.
    assert improved.returncode == 0 and "**Verdict: traded**: ndcg@10 rose only with more context read" in \
        improved.stdout


def test_compare_refuses_different_judgments(experiments, tmp_path):
    judgments = tmp_path / "judgments.jsonl"
    lines = (experiments / "evals" / "judgments.jsonl").read_text().splitlines()
    judgments.write_text("\n".join(lines[:-1]) + "\n")  # one no_answer judgment fewer
    out = tmp_path / "fewer"
    ran = groundkit("run", "--corpus", "evals/corpus", "--judgments", str(judgments), "--params", "params.yaml",
                    "--out", str(out), cwd=experiments)
    assert ran.returncode == 0, ran.stderr
    refused = groundkit("compare", "HEAD", str(out), cwd=experiments)
    assert refused.returncode == 1
    assert "different judgments" in refused.stderr and "fix:" in refused.stderr
    unknown = groundkit("compare", "HEAD", "no-such-thing", cwd=experiments)
    assert unknown.returncode == 1 and "neither a directory, a git revision nor a DVC experiment" in unknown.stderr


def test_compare_every_experiment_of_the_commit(experiments):
    result = groundkit("compare", "HEAD", "--experiments", "--json", cwd=experiments)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    # Sorted by the parameters they change, in their names' order: chunk.overlap (100 for s1200, unchanged for
    # s400), then chunk.size.
    assert [c["candidate"] for c in report["candidates"]] == ["s1200", "s400"]
    assert [c["params_changed"] for c in report["candidates"]] == [
        {"chunk.overlap": [0, 100], "chunk.size": [800, 1200]}, {"chunk.size": [800, 400]}]
    rows = [s for c in report["candidates"] for s in c["overall"]]
    assert [s["metric"] for s in rows] == ["ndcg@10", "coverage@1000chars"] * 2  # the default gate
    for name, stats in zip(("s1200", "s400"), (rows[:2], rows[2:]), strict=True):
        alone = json.loads(groundkit("compare", "HEAD", name, "--json", cwd=experiments).stdout)
        for row in stats:
            decided = {"p_adjusted", "ci", "ci_level", "ci_bounds", "significant"}
            assert {k: v for k, v in row.items() if k not in decided} == \
                {k: v for k, v in {s["metric"]: s for s in alone["overall"]}[row["metric"]].items()
                 if k not in decided}
    # Holm over four tests (two candidates x two metrics), by hand: the i-th smallest p times (5 - i), and never
    # below the one before.
    order = sorted(range(4), key=lambda i: rows[i]["p_value"])
    expected, running = [0.0] * 4, 0.0
    for position, i in enumerate(order):
        running = max(running, min(1.0, (4 - position) * rows[i]["p_value"]))
        expected[i] = running
    assert [r["p_adjusted"] for r in rows] == pytest.approx(expected)
    # Smaller chunks lose nDCG@10 only with the context they no longer read; larger ones change nothing the
    # judgments can see: neither is worse where it counts, at 1,000 characters.
    assert [c["verdict"] for c in report["candidates"]] == ["no significant change", "traded"]
    assert report["candidates"][1]["context"]["ndcg@10"]["traded"]
    # The engine-only experiment is no candidate (four tests in the correction, not six), and the report says so;
    # so is the queued one.
    assert report["verdict"] == "1 traded, 1 no significant change" and report["left_out"] == [
        {"experiment": "queued-exp", "reason": "queued, not run yet"},
        {"experiment": "on-ray", "reason": "its results are the baseline's, byte for byte (per_query.csv and "
                                           "metrics.json): it changes no number (execution.engine, say)"}]

    shown = groundkit("compare", "HEAD", "--experiments", "--fail-on-regression", cwd=experiments)
    assert shown.returncode == 0, shown.stderr  # traded: the gate passes, and says why
    assert "gate passed: ndcg@10 (s400), rule regression: fell only with less context read" in shown.stderr
    assert shown.stdout.startswith("## groundkit compare: `HEAD` against 2 candidates\n")
    assert "their p-values and CIs are Holm-corrected over 4 tests (2 candidates x 2 metrics)" in shown.stdout
    assert "| ndcg@10 | all | 144 | " in shown.stdout
    assert "With 144 answerable queries these judgments can detect a change of about " in shown.stdout
    # The experiments' names are outside text, backslash-escaped in Markdown (on\-ray renders as on-ray).
    assert "Left out of `--experiments`: queued\\-exp: queued, not run yet; on\\-ray: its results are the " \
           "baseline's, byte for byte" in shown.stdout


def test_experiments_leave_out_the_baseline(experiments):
    # s400 is the baseline here, so it is left out; on-ray, whose results are HEAD's and not s400's, stays a
    # candidate beside s1200 (sorted as above: s1200 changes chunk.overlap, on-ray does not).
    result = groundkit("compare", "s400", "--experiments", "--json", cwd=experiments)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert [c["candidate"] for c in report["candidates"]] == ["s1200", "on-ray"]
    assert report["left_out"] == [{"experiment": "queued-exp", "reason": "queued, not run yet"},
                                  {"experiment": "s400", "reason": "is the baseline"}]


def test_several_candidates_name_the_runs_tied_with_the_best_and_each_gate_line(tmp_path, capsys):
    # Issue 41 in the one table over N: per gated metric, Hsu's MCB names the runs tied with the best (the baseline
    # among them), and each candidate's gate lines name its metric and rule; the mark follows the deciding interval.
    baseline, candidate = write_compare_pair(tmp_path)
    same = shutil.copytree(baseline, tmp_path / "same")
    _grow(baseline, candidate, same)
    args = [str(baseline), str(candidate), str(same), "--metric", "ndcg@10"]
    report = _json(capsys, *args)
    ties = report["tied_with_best"]["ndcg@10"]
    assert set(ties["tied"]) <= {str(baseline), str(candidate), str(same)} and ties["best"] in ties["tied"]
    for c in report["candidates"]:
        row = c["overall"][0]
        low, high = row["ci"]
        assert row["significant"] == ((low is not None and low > 0) or (high is not None and high < 0)
                                      or row["ci_bounds"] != "[]")
        assert all(line["rule"] == "regression" for line in c["gate_lines"])
    assert main(["compare", *args, "--format", "md"]) == 0
    out = capsys.readouterr().out
    assert "| candidate | changes | metric | baseline | candidate | delta | CI (decides) | raw 95% CI | p " in out
    assert "Tied with the best (Hsu's multiple comparison with the best" in out
    assert main(["compare", *args, "--format", "text"]) == 0
    assert "Tied with the best" in capsys.readouterr().out
