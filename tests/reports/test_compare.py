"""`groundkit compare`: the paired statistics by hand and by enumeration, and the command end to end."""

from __future__ import annotations

import itertools
import json
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from groundkit.cli import main
from groundkit.reports.compare import BLOCK_VALUES, RESAMPLES, SEED, _sign_flip_null, paired_stats, paired_stats_many
from tests.bad_inputs import COMPARE_CASES, write_compare_pair
from tests.conftest import write_tiny_corpus
from tests.dvc_helpers import REPO, clone_working_tree, env, run


def test_identical_runs_have_no_difference():
    values = np.array([0.0, 1.0, 0.5, 0.25])
    assert paired_stats(values, values.copy()) == (0.0, 0.0, 1.0)


def test_constant_improvement_by_hand():
    # Ten queries, each up by exactly 0.1. Of the 2**10 sign patterns only "all +" and "all -" reach
    # |mean| = 0.1, so the exact two-sided p is 2 / 1024; every bootstrap resample has mean 0.1.
    base = np.zeros(10)
    low, high, p_value = paired_stats(base, base + 0.1)
    assert p_value == pytest.approx(2 / 1024)
    assert low == pytest.approx(0.1) and high == pytest.approx(0.1)


def test_randomization_p_equals_full_enumeration():
    rng = np.random.default_rng(7)
    base = rng.integers(0, 2, 12).astype(float)
    cand = rng.integers(0, 2, 12).astype(float)
    d = cand - base
    observed = abs(d.mean())
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=d.size)))
    # 4096 patterns: fewer than the resample count, so scipy must enumerate them all too.
    exact = np.mean(np.abs((signs * d).mean(axis=1)) >= observed - 1e-12)
    assert paired_stats(base, cand)[2] == pytest.approx(exact)


def test_bootstrap_interval_agrees_with_the_normal_approximation():
    rng = np.random.default_rng(3)
    base = rng.random(400)
    cand = base + rng.normal(0.05, 0.2, 400)
    d = cand - base
    low, high, _ = paired_stats(base, cand)
    half = 1.96 * d.std(ddof=1) / np.sqrt(d.size)
    assert low < d.mean() < high
    assert low == pytest.approx(d.mean() - half, abs=0.2 * half)
    assert high == pytest.approx(d.mean() + half, abs=0.2 * half)


def _scipy_stats(base: np.ndarray, cand: np.ndarray) -> tuple[float, float, float]:
    """The interval and p-value straight from scipy, as compare computed them before it worked in blocks."""
    from scipy import stats

    d = cand - base
    interval = stats.bootstrap((d,), np.mean, n_resamples=RESAMPLES, confidence_level=0.95, method="percentile",
                               vectorized=True, rng=np.random.default_rng(SEED)).confidence_interval
    test = stats.permutation_test((cand, base), lambda c, b, axis: np.mean(c - b, axis=axis),
                                  permutation_type="samples", vectorized=True, n_resamples=RESAMPLES,
                                  alternative="two-sided", rng=np.random.default_rng(SEED))
    return float(interval.low), float(interval.high), float(test.pvalue)


@pytest.mark.parametrize("queries", [5, 13, 14, 60, 144])
def test_blocked_statistics_equal_scipy_to_the_last_bit(queries):
    # Metric-like values: a third of the queries unchanged, hit-rate-like 0/1 moves and graded moves;
    # 5 and 13 queries take the exact enumeration, 14 and more the random sign flips.
    rng = np.random.default_rng(queries)
    base = np.round(rng.random((3, queries)), 6)
    cand = base.copy()
    cand[0] = rng.integers(0, 2, queries)
    base[0] = rng.integers(0, 2, queries)
    cand[1] = np.where(rng.random(queries) < 0.33, base[1], np.round(rng.random(queries), 6))
    cand[2] = base[2] + 0.1
    # A block of 1,000 values forces many blocks (and a short last one), unlike scipy's single batch.
    blocked = paired_stats_many(base, cand, block_values=1000)
    for row in range(3):
        assert blocked[row] == _scipy_stats(base[row], cand[row])


def test_sign_flip_means_add_the_queries_in_order():
    # scipy adds a resample's queries one after another; past numpy's 8,192-element buffer a reduction
    # over a transposed array adds them in another order, so check a long one against Python's sum,
    # which adds left to right. A query's sign flips when the low bit of its 32-bit draw is 0.
    queries = 10_000
    d = np.round(np.random.default_rng(11).normal(0, 0.3, queries), 6)
    null = _sign_flip_null(d[None], SEED, 3, BLOCK_VALUES)[0]
    words = np.random.default_rng(SEED).integers(0, 2**32, (3, queries), dtype=np.uint32)
    for r in range(3):
        expected = sum(-float(x) if w & 1 == 0 else float(x) for x, w in zip(d, words[r], strict=True)) / queries
        assert null[r] == expected


def test_fewer_than_two_queries_have_no_interval_and_no_test():
    assert paired_stats(np.array([0.2]), np.array([0.9])) == (None, None, None)
    assert paired_stats(np.array([]), np.array([])) == (None, None, None)


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
    assert report["gate"]["untested"] == {}


def _add_column(folder: Path, name: str, value: str) -> None:
    """Append a metric column holding ``value`` for every answerable query (empty for no_answer)."""
    path = folder / "per_query.csv"
    header, *rows = path.read_text(encoding="utf-8").splitlines()
    rows = [row + ("," if ",no_answer," in row else f",{value}") for row in rows]
    path.write_text("\n".join([f"{header},{name}", *rows]) + "\n", encoding="utf-8")


def test_a_registered_measure_is_compared_like_any_other(tmp_path, capsys, throwaway_measure):
    baseline, candidate = write_compare_pair(tmp_path)
    _add_column(baseline, "hits@3", "1.000000")
    _add_column(candidate, "hits@3", "2.000000")
    assert main(["compare", str(baseline), str(candidate), "--metric", "hits@3", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    hits = {s["metric"]: s for s in report["overall"]}["hits@3"]
    # Six answerable queries, each one gold id more: delta +1 everywhere, an interval of width 0, and
    # the exact sign-flip p-value 2 / 2**6 (only all-plus and all-minus are as extreme).
    assert (hits["queries"], hits["baseline"], hits["candidate"], hits["delta"]) == (6, 1.0, 2.0, 1.0)
    assert hits["ci95"] == [1.0, 1.0] and hits["p_value"] == pytest.approx(2 / 64)
    assert report["verdict"] == "better"


def test_a_column_no_measure_names_is_refused(tmp_path, capsys):
    baseline, candidate = write_compare_pair(tmp_path)
    _add_column(baseline, "hits@3", "1.000000")
    assert main(["compare", str(baseline), str(candidate)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "baseline/per_query.csv:1: has the column 'hits@3'" in err
    assert "the metrics are recall@k, mrr, ndcg@k, chars@k, recall@Nchars" in err and "\n  fix: " in err


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
    # the blocked statistics stay near 400 MiB of address space, interpreter, numpy and scipy included.
    # Baseline MRR 0.5 everywhere; the candidate finds the answer first for every fourth query:
    # 25,000 differences of +0.5, so the mean rises by exactly 0.125, no sign flip of them comes near
    # (p = 2 / 10,001), and the 95% interval is 0.125 +- 1.96 * 0.5 * sqrt(0.25 * 0.75 / 100,000).
    queries = 100_000
    for name, step in (("baseline", 0), ("candidate", 4)):
        side = tmp_path / name
        side.mkdir()
        rows = "".join(f"q{i:06d},factoid,1,,{1.0 if step and i % step == 0 else 0.5:.6f}\n" for i in range(queries))
        (side / "per_query.csv").write_text("query_id,category,first_gold_rank,abstained,mrr\n" + rows)
        (side / "run.json").write_text(json.dumps({"corpus_hash": "c", "judgments_hash": "j", "params": {}}))
    threads = {name: "1" for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    result = subprocess.run(
        [sys.executable, "-m", "groundkit.cli", "compare", "baseline", "candidate", "--metric", "mrr", "--json"],
        cwd=tmp_path, env=env(PYTHONPATH=str(REPO), **threads), preexec_fn=_limit_address_space,
        capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    mrr = json.loads(result.stdout)["overall"][0]
    assert (mrr["queries"], mrr["baseline"], mrr["candidate"], mrr["delta"]) == (queries, 0.5, 0.625, 0.125)
    assert mrr["p_value"] == pytest.approx(2 / 10_001)
    half = 1.96 * 0.5 * np.sqrt(0.25 * 0.75 / queries)
    assert mrr["ci95"][0] == pytest.approx(0.125 - half, abs=0.1 * half)
    assert mrr["ci95"][1] == pytest.approx(0.125 + half, abs=0.1 * half)


def groundkit(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["groundkit", *args], capture_output=True, text=True, env=env(), cwd=cwd, check=False)


@pytest.fixture(scope="module")
def experiments(tmp_path_factory) -> Path:
    """A clone with the committed baseline at HEAD and a DVC experiment with small chunks."""
    repo = clone_working_tree(tmp_path_factory.mktemp("compare") / "repo")
    run(["dvc", "exp", "run", "-S", "chunk.size=200", "-n", "small-chunks"], repo)
    run(["git", "checkout", "--", "."], repo)
    return repo


def test_compare_revision_against_experiment(experiments):
    result = groundkit("compare", "HEAD", "small-chunks", "--json", cwd=experiments)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["params_changed"] == {"chunk.size": [800, 200]}
    overall = {s["metric"]: s for s in report["overall"]}
    committed = json.loads((experiments / "metrics" / "detail.json").read_text())["answerable"]
    assert overall["ndcg@10"]["baseline"] == pytest.approx(committed["ndcg@10"], abs=1e-6)
    assert overall["ndcg@10"]["queries"] == 144
    assert overall["ndcg@10"]["delta"] < 0 and overall["ndcg@10"]["p_value"] < 0.05
    assert report["verdict"] == "worse"
    assert set(report["by_category"]) == {"boundary", "factoid", "lexical_gap", "multi_passage"}
    assert report["worse"] and all(
        (w["rank_after"] or 10**9) > (w["rank_before"] or 10**9) for w in report["worse"])

    again = groundkit("compare", "HEAD", "small-chunks", "--json", cwd=experiments)
    assert again.stdout == result.stdout  # seeded: the same report every time


def test_fail_on_regression_gates_ci(experiments):
    gated = groundkit("compare", "HEAD", "small-chunks", "--fail-on-regression", "--metric", "ndcg@10,recall@5",
                      cwd=experiments)
    assert gated.returncode == 4
    assert "**Verdict: worse**" in gated.stdout and "regression: recall@5, ndcg@10" in gated.stderr
    tolerated = groundkit("compare", "HEAD", "small-chunks", "--fail-on-regression", "--max-drop", "0.5",
                          cwd=experiments)
    assert tolerated.returncode == 0
    improved = groundkit("compare", "small-chunks", "HEAD", "--fail-on-regression", cwd=experiments)
    assert improved.returncode == 0 and "**Verdict: better**" in improved.stdout


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
