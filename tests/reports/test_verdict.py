"""The closed vocabulary of verdicts, the gate that agrees with it, and the non-inferiority rule."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from groundkit.errors import CompareError
from groundkit.reports.inference import queries_for_non_inferiority
from groundkit.reports.paired import paired_rows
from groundkit.reports.verdict import (
    VERDICT_TABLE,
    VERDICTS,
    decide,
    non_inferiority_lines,
    parse_margins,
    regression_lines,
    verdict_passes,
)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "statistics.md"


@dataclass
class Row:
    metric: str
    delta: float
    significant: bool


def _decide(rows: list[Row], costs: dict[str, Row] | None = None, max_drop: float = 0.0):
    return decide(rows, {}, max_drop, costs)


# One fixture per word. The context read at 10 is chars@10; coverage@1000chars is size-fair (never traded).
CUT = Row("chars@10", -4000.0, True)
MORE = Row("chars@10", +4000.0, True)
FIXTURES = {
    "better": ([Row("ndcg@10", 0.05, True), Row("coverage@1000chars", 0.0, False)], {}),
    "worse": ([Row("ndcg@10", -0.05, True), Row("coverage@1000chars", 0.01, False)], {}),
    # The newcomer's 200/100 against 800/0: nDCG@10 fell with a significant cut in context read, coverage fell too
    # but not significantly: traded, not mixed, and the gate passes.
    "traded": ([Row("ndcg@10", -0.15, True), Row("coverage@1000chars", -0.03, False)], {"ndcg@10": CUT}),
    "mixed": ([Row("ndcg@10", 0.05, True), Row("coverage@1000chars", -0.04, True)], {}),
    "no significant change": ([Row("ndcg@10", 0.01, False), Row("coverage@1000chars", -0.01, False)], {}),
    "untested": ([], {}),
}


@pytest.mark.parametrize("word", VERDICTS)
def test_each_verdict_word_on_a_fixture_built_for_it(word):
    rows, costs = FIXTURES[word]
    decision = _decide(rows, costs)
    assert decision.verdict == word
    # The verdict and the regression rule never contradict: a verdict the table passes has no failure.
    failed = [line for line in regression_lines(decision, {r.metric: r.delta for r in rows}, 0.0, 0.05)
              if not line.passed]
    assert (not failed) == verdict_passes(word), (word, failed)
    for line in failed:
        assert line.metric in line.line() and "rule regression" in line.line()


def test_a_traded_fall_passes_with_a_note_naming_the_cost():
    rows, costs = FIXTURES["traded"]
    decision = _decide(rows, costs)
    assert decision.traded == {"ndcg@10": "chars@10"} and decision.regressions == []
    (line,) = regression_lines(decision, {r.metric: r.delta for r in rows}, 0.0, 0.05)
    assert line.passed and "fell only with less context read (chars@10)" in line.text


def test_a_size_fair_fall_beside_a_trade_is_worse_not_traded():
    decision = _decide([Row("ndcg@10", -0.15, True), Row("coverage@1000chars", -0.05, True)], {"ndcg@10": CUT})
    assert decision.verdict == "worse" and decision.regressions == ["coverage@1000chars"]


def test_a_rise_bought_with_more_context_is_traded_not_better():
    assert _decide([Row("ndcg@10", 0.1, True)], {"ndcg@10": MORE}).verdict == "traded"


def test_a_fall_within_the_allowed_drop_passes_and_says_so():
    rows = [Row("ndcg@10", -0.004, True)]
    decision = _decide(rows, max_drop=0.01)
    assert decision.verdict == "worse" and decision.regressions == [] and decision.tolerated == ["ndcg@10"]
    (line,) = regression_lines(decision, {"ndcg@10": -0.004}, 0.01, 0.05)
    assert line.passed and "within --max-drop 0.01" in line.text


def test_the_guide_holds_the_verdict_table():
    # docs/statistics.md's table: one row per word, its gate column as VERDICT_TABLE says.
    text = DOCS.read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| \*\*(.+?)\*\* \| .+? \| (passes|fails) \|$", text, flags=re.M))
    assert rows == {word: "passes" if passes else "fails" for word, (_, passes) in VERDICT_TABLE.items()}


# --- non-inferiority -------------------------------------------------------------------------------


def _row(differences: np.ndarray, metric: str = "ndcg@10"):
    base = np.full((1, differences.size), 0.5)
    return paired_rows([metric], base, [np.round(base + differences, 6)])[0][0]


def test_a_planted_drop_of_twice_the_margin_fails():
    rng = np.random.default_rng(5)
    row = _row(rng.normal(-0.04, 0.05, 200))  # margin 0.02: a true drop of 0.04
    (line,) = non_inferiority_lines({"ndcg@10": row}, {"ndcg@10": 0.02}, 0.05)
    assert not line.passed and "not above -0.02" in line.text and line.rule == "non-inferiority"


def test_a_noise_only_candidate_passes_in_four_of_five_seeds_at_the_queries_the_tool_asks_for():
    # The tool's n from a pilot with the noise's SD, then 200 seeds of that many queries: a candidate that differs
    # from the baseline only by zero-mean noise must pass in at least 80% of them.
    sd, margin = 0.1, 0.03
    pilot = _row(np.random.default_rng(0).normal(0, sd, 400))
    needed = queries_for_non_inferiority(pilot.sd, margin, 0.05)
    assert needed == pytest.approx(((1.644854 + 0.841621) * sd / margin) ** 2, rel=0.15)
    passed = 0
    for seed in range(200):
        row = _row(np.random.default_rng(1000 + seed).normal(0, sd, needed))
        passed += non_inferiority_lines({"ndcg@10": row}, {"ndcg@10": margin}, 0.05)[0].passed
    assert passed >= 160, passed


def test_twenty_one_queries_and_a_margin_of_two_hundredths_are_too_few_and_say_how_many():
    rng = np.random.default_rng(21)
    row = _row(rng.normal(0, 0.15, 21))
    (line,) = non_inferiority_lines({"ndcg@10": row}, {"ndcg@10": 0.02}, 0.05)
    needed = queries_for_non_inferiority(row.sd, 0.02, 0.05)
    # By hand: n = ((t_0.95 + t_0.8) * SD / margin)**2 at n - 1 degrees of freedom, rounded up: a fixed point.
    from scipy.stats import t

    assert needed == int(np.ceil(((t.ppf(0.95, needed - 1) + t.ppf(0.8, needed - 1)) * row.sd / 0.02) ** 2))
    assert needed > 21 and "too few queries: 21 answerable queries, and" in line.text
    assert f"only from about {needed} (SD of the paired differences {row.sd:.4f})" in line.text


@pytest.mark.parametrize(("given", "what"), [
    (["ndcg@10"], "is not METRIC=MARGIN"), (["ndcg@10=abc"], "is not a number"),
    (["ndcg@10=-0.1"], "above 0"), (["ndcg@10=nan"], "above 0"), (["=0.1"], "is not METRIC=MARGIN"),
])
def test_bad_margins_are_refused_by_name(given, what):
    with pytest.raises(CompareError) as caught:
        parse_margins(given)
    assert "--non-inferiority" in str(caught.value) and what in str(caught.value)


def test_margins_parse_from_several_options():
    assert parse_margins(["ndcg@10=0.02,recall@5=0.05", "mrr=0.1"]) == {"ndcg@10": 0.02, "recall@5": 0.05, "mrr": 0.1}
