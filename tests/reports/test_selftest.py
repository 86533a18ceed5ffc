"""`groundkit compare --self-test` on the committed corpus: the default gate's false alarms stay within alpha."""

from __future__ import annotations

import pytest

from groundkit.cli import main
from groundkit.reports.compare import compare
from groundkit.reports.selftest import self_test
from groundkit.reports.sides import read_side
from tests.dvc_helpers import REPO


@pytest.fixture(scope="module")
def smaller_chunks(tmp_path_factory):
    """The committed corpus and judgments run with 400-character chunks: a real candidate for the committed run."""
    out = tmp_path_factory.mktemp("selftest") / "run-400"
    assert main(["run", "--corpus", str(REPO / "evals" / "corpus"), "--judgments",
                 str(REPO / "evals" / "judgments.jsonl"), "--params", str(REPO / "params.yaml"), "--set",
                 "chunk.size=400", "--out", str(out)]) == 0
    return out


def test_the_default_gate_raises_false_alarms_at_most_alpha_on_the_committed_corpus(smaller_chunks, capsys):
    capsys.readouterr()
    baseline = read_side(str(REPO / "metrics"), cwd=REPO)
    candidate = read_side(str(smaller_chunks), cwd=REPO)
    result = compare(baseline, candidate)
    test = self_test(result)
    assert test.queries == 144 and test.replications == 1000 and test.gate == ["ndcg@10", "coverage@1000chars"]
    assert test.false_alarm <= 0.05 + 0.01
    # Each metric alone, under the null, rejects near alpha (1,000 replications: one standard error is 0.007).
    for metric, rate in test.rates.items():
        assert abs(rate - 0.05) <= 0.03, (metric, rate)
    # A drop of the report's MDE (sized for 80% power, and cautious) is caught at least that often.
    assert all(power is not None and power >= 0.8 for _, power in test.power.values()), test.power
    assert main(["compare", str(REPO / "metrics"), str(smaller_chunks), "--self-test"]) == 0
    out = capsys.readouterr().out
    assert f"default gate false-alarm rate: {test.false_alarm:.3f} (expected at most alpha 0.05): ok" in out
    assert max(len(line) for line in out.splitlines() if not line.startswith(("baseline: ", "candidate: "))) <= 100


def test_self_test_needs_one_candidate(smaller_chunks, capsys):
    capsys.readouterr()
    metrics = str(REPO / "metrics")
    assert main(["compare", metrics, str(smaller_chunks), metrics, "--self-test"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: --self-test: needs one candidate, got 2") and "\n  fix: " in err
