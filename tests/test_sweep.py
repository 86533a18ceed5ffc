"""`groundkit sweep-plot`: rows from `dvc exp show --json`, one per experiment, sorted by the params."""

from __future__ import annotations

import pytest

from groundkit.evals.sweep import SweepError, experiment_rows


def _entry(rev: str, name: str | None, size: int, ndcg: float) -> dict:
    return {
        "rev": rev,
        "name": name,
        "data": {
            "params": {"params.yaml": {"data": {"chunk": {"size": size, "overlap": 0}}}},
            "metrics": {"metrics/metrics.json": {"data": {"answerable": {"ndcg@10": ndcg, "queries": 144}}}},
        },
    }


SHOWN = [
    {"rev": "workspace", "name": None, "data": {}},
    {
        **_entry("a" * 40, "main", 800, 0.52),
        "experiments": [
            {"revs": [_entry("b" * 40, "big", 2000, 0.63)]},
            {"revs": [_entry("c" * 40, "small", 200, 0.31)]},
            {"revs": [{"rev": "d" * 40, "name": "failed", "data": {}}]},  # a failed run has no metrics
        ],
    },
]


def test_rows_are_one_per_experiment_sorted_by_the_parameter():
    rows = experiment_rows(SHOWN, ["chunk.size"])
    assert [(r["experiment"], r["chunk.size"], r["ndcg@10"]) for r in rows] == [
        ("small", 200, 0.31), ("main", 800, 0.52), ("big", 2000, 0.63)]


def test_unknown_parameter_is_named():
    with pytest.raises(SweepError, match=r"chunk\.sise"):
        experiment_rows(SHOWN, ["chunk.sise"])
