"""`groundkit compare`: the paired statistics by hand and by enumeration, and the command end to end."""

from __future__ import annotations

import itertools
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from groundkit.evals.compare import paired_stats
from tests.dvc_helpers import clone_working_tree, env, run


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
    committed = json.loads((experiments / "metrics" / "metrics.json").read_text())["answerable"]
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
