"""The readout of a run's results: what `groundkit run` and the score stage print, within 100 columns."""

from __future__ import annotations

import json
import re

from groundkit.config import load_params
from groundkit.pipeline.steps import score as score_step
from groundkit.scoring.cautions import unanswered
from groundkit.scoring.readout import readout
from tests.conftest import REPO

COMMITTED = json.loads((REPO / "metrics" / "detail.json").read_text(encoding="utf-8"))
HEADLINE = list(json.loads((REPO / "metrics" / "metrics.json").read_text(encoding="utf-8")))


def shown_figures(lines: list[str]) -> dict[str, str]:
    """Every ``name value`` pair of the figure rows, a family's cut-offs joined to its label (``recall`` + ``@5``)."""
    figures, label = {}, ""
    width = len(lines[0]) - len(lines[0].lstrip(" ").split(" ", 1)[1].lstrip(" "))  # the label column
    for line in lines:
        label = line[:width].strip() or label  # a wrapped row keeps the label of its first line
        for name, value in re.findall(r"(\S+ +)?(\d+\.\d{4})", line[width:]):
            figures[name.strip() if label == "headline" else label + name.strip()] = value
    return figures


def test_the_committed_results_read_in_aligned_lines():
    lines = readout(COMMITTED, HEADLINE)
    assert lines == [
        "answerable   queries 144  false_abstentions  0  unreachable          0",
        "no_answer    queries  18  abstained         18  abstention_rate 1.0000  separability 1.0000",
        "headline     coverage@1000chars 0.3150  mrr 0.5114  ndcg@10 0.5221  recall@10 0.7847",
        "chars        @1         778.9514  @3         2353.6458  @5         3906.1111  @10       7774.2153",
        "coverage     @1           0.2724  @3            0.5010  @5            0.5942  @10          0.7159",
        "             @500chars    0.1814  @2000chars    0.4487",
        "iou          @1           0.0307  @3            0.0199  @5            0.0142  @10          0.0087",
        "             @500chars    0.0298  @1000chars    0.0286  @2000chars    0.0212",
        "ndcg         @1           0.3819  @3            0.4333  @5            0.4785",
        "precision    @1           0.0320  @3            0.0200  @5            0.0143  @10          0.0087",
        "             @500chars    0.0317  @1000chars    0.0295  @2000chars    0.0214",
        "recall       @1           0.3819  @3            0.5833  @5            0.6736  @500chars    0.2500",
        "             @1000chars   0.4236  @2000chars    0.5347",
        "span_recall  @1           0.3391  @3            0.5428  @5            0.6331  @10          0.7465",
    ]


def test_every_figure_of_the_detail_is_shown_once_within_100_columns():
    # Twelve rank cut-offs and five budgets: three times the committed figures, wrapped, none left out.
    answerable = dict(COMMITTED["answerable"])
    for k in (2, 4, 6, 7, 8, 9, 20, 50):
        for stem in ("recall", "ndcg", "chars"):
            answerable[f"{stem}@{k}"] = 1000.0 * k if stem == "chars" else k / 100
    answerable["recall@4000chars"] = answerable["recall@8000chars"] = 0.9
    answerable["hits@10"] = 0.125  # a measure the readout has never heard of
    lines = readout({**COMMITTED, "answerable": answerable}, ["ndcg@10"])
    assert max(map(len, lines)) <= 100
    floats = {k: f"{v:.4f}" for k, v in answerable.items() if isinstance(v, float)}
    assert shown_figures(lines[2:]) == floats
    assert len(lines) > 6  # the rows wrapped
    # A wrapped row's continuation lines up under its first line: same column starts.
    recall = next(line for line in lines if line.startswith("recall"))
    after = lines[lines.index(recall) + 1]
    assert after.startswith(" " * len("span_recall  ") + "@")
    assert [m.start() for m in re.finditer(r"  @", after)] == [m.start() for m in re.finditer(r"  @", recall)][
        :after.count("  @")]


def test_the_score_stage_prints_the_readout_not_a_dict():
    params = load_params(REPO / "params.yaml")
    shown = score_step.summary(COMMITTED, params).splitlines()
    assert shown[0] == "score:"
    assert shown[1:] == ["  " + line for line in readout(COMMITTED, HEADLINE, width=98)]
    assert max(map(len, shown)) <= 100 and "{" not in "".join(shown)


def test_a_run_that_answers_few_queries_is_warned_about_with_the_count():
    partial = {**COMMITTED, "answerable": {**COMMITTED["answerable"], "false_abstentions": 143}}
    warning = unanswered(partial)
    assert warning is not None
    assert warning.startswith("the run answers 1 of 144 answerable queries: 143 retrieved nothing ")
    assert unanswered(COMMITTED) is None
    params = load_params(REPO / "params.yaml")
    assert score_step.summary(partial, params).splitlines()[-1] == "warning: " + warning
