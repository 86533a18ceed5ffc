"""`groundkit sweep`: quality against context cost, the Pareto frontier and the best per budget, checked by hand."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from groundkit.reports.sides import read_side, resolve_revision
from groundkit.reports.stats import paired_stats
from groundkit.reports.sweep_view import WIDTH, Point, frontier, sweep_view, varied_params
from tests.dvc_helpers import run


def _point(name: str, cost: float, quality: float) -> Point:
    return Point(SimpleNamespace(name=name), quality, (None, None), cost, {})


def test_the_frontier_is_what_no_other_point_dominates():
    points = [_point("a", 1000, 0.30), _point("b", 2000, 0.50), _point("c", 2000, 0.45), _point("d", 4000, 0.50),
              _point("e", 8000, 0.70), _point("f", 500, 0.20), _point("g", 500, 0.20)]
    frontier(points)
    # c: b reads as much and ranks better; d: b ranks as well for less; f and g tie, neither dominates the other.
    assert [p.config.name for p in points if p.frontier] == ["a", "b", "e", "f", "g"]


def _side(label: str, params: dict) -> SimpleNamespace:
    return SimpleNamespace(label=label, metadata={"params": params})


def test_the_varied_params_are_those_that_differ_chunk_size_first():
    sides = [_side("a", {"chunk": {"size": 800, "overlap": 0, "strategy": "fixed"}, "score": {"min_overlap": 0.0}}),
             _side("b", {"chunk": {"size": 400, "overlap": 0, "strategy": "fixed"}, "score": {"min_overlap": 0.5}}),
             _side("c", {"chunk": {"size": 800, "overlap": 0, "strategy": "document"}, "bm25": {"k1": 1.2}})]
    # min_overlap groups the configurations rather than telling them apart; bm25 appears in one run only.
    assert varied_params(sides) == ["chunk.size", "bm25.k1", "chunk.strategy"]


@pytest.fixture(scope="module")
def viewed(sweep_clone, tmp_path_factory):
    """The view of the sweep clone (the committed run, s400 and s1200 with overlap 100), and the CLI's output."""
    out = tmp_path_factory.mktemp("sweep") / "view"
    cwd = Path.cwd()
    os.chdir(sweep_clone.repo)
    try:
        view = sweep_view(Path.cwd())
        printed = run(["groundkit", "sweep", "--out", str(out)], sweep_clone.repo)
    finally:
        os.chdir(cwd)
    return view, printed, out


def test_each_point_is_its_revisions_committed_figures(viewed, sweep_clone):
    view, _, _ = viewed
    assert view.params == ["chunk.size", "chunk.overlap"] and view.quality == "ndcg@10" and view.cost == "chars@10"
    (group,) = view.groups
    points = {p.config.name: p for p in group.points}
    assert set(points) == {"s400", "s1200", next(n for n in points if n not in ("s400", "s1200"))}
    for name, point in points.items():
        revision = resolve_revision(name if name in ("s400", "s1200") else "HEAD", sweep_clone.repo)
        detail = json.loads(run(["git", "show", f"{revision}:metrics/detail.json"], sweep_clone.repo).stdout)
        answerable = detail["answerable"]
        assert point.quality == pytest.approx(answerable["ndcg@10"], abs=1e-6)
        assert point.cost == pytest.approx(answerable["chars@10"], abs=1e-6)
        assert point.quality_ci[0] < point.quality < point.quality_ci[1]
        for budget in ("coverage@500chars", "coverage@1000chars", "coverage@2000chars"):
            assert point.budgets[budget][0] == pytest.approx(answerable[budget], abs=1e-6)
    assert points["s1200"].config.params == {"chunk.size": 1200, "chunk.overlap": 100}


def test_each_budget_names_the_best_and_tests_it_against_the_runner_up(viewed, sweep_clone):
    view, _, _ = viewed
    (group,) = view.groups
    sides = {p.config.name: read_side(p.config.name if p.config.name in ("s400", "s1200") else "HEAD",
                                      cwd=sweep_clone.repo) for p in group.points}
    raw = []
    for answer in group.answers:
        means = {name: float(np.mean(_values(side, answer.metric))) for name, side in sides.items()}
        ranked = sorted(means, key=lambda name: (-means[name], name))
        assert [answer.best.config.name, answer.runner_up.config.name] == ranked[:2] or \
            means[ranked[0]] == means[ranked[1]]
        assert answer.delta == pytest.approx(means[answer.best.config.name] - means[answer.runner_up.config.name])
        low, high, p = paired_stats(_values(sides[answer.runner_up.config.name], answer.metric),
                                    _values(sides[answer.best.config.name], answer.metric))
        assert (answer.ci, answer.p_value) == ((low, high), p)
        raw.append(p)
    # Holm over the three budgets the runs computed.
    assert [a.p_adjusted for a in group.answers] == pytest.approx(list(multipletests(raw, method="holm")[1]))


def _values(side, metric: str) -> np.ndarray:
    ids = sorted(q for q, i in side.per_query.position.items() if side.per_query.categories[i] != "no_answer")
    table = side.per_query
    return np.array([table.values[table.position[q], table.metric_names.index(metric)] for q in ids])


def test_the_command_prints_within_100_columns_and_writes_the_page_and_the_csv(viewed):
    view, printed, out = viewed
    lines = printed.stdout.splitlines()
    assert max(map(len, lines)) <= WIDTH
    assert lines[0].startswith("groundkit sweep: 3 configurations of ")
    # The table's header names the params that tell the configurations apart, then the two axes.
    assert any(line.split()[:4] == ["size", "overlap", "ndcg@10", "95%"] and "chars@10" in line for line in lines)
    assert "coverage@1000chars: " in printed.stdout and "tied with the best" in printed.stdout
    assert "is unlikely to be detected (80% power) once every pair is compared" in printed.stdout
    assert "dvc plots show" in printed.stderr and "queued-exp: queued, not run yet" in printed.stderr
    csv = (out / "sweep.csv").read_text(encoding="utf-8").splitlines()
    assert csv[0].split(",")[:8] == ["experiment", "chunk_size", "chunk_overlap", "min_overlap", "ndcg@10",
                                     "ndcg@10_low", "ndcg@10_high", "chars@10"]
    assert len(csv) == 4 and csv[0].endswith(",series,frontier")
    page = (out / "sweep.html").read_text(encoding="utf-8")
    # One chart of the quality, one per budget answered: three points on each.
    assert page.count('class="point"') == 3 * (1 + len(view.groups[0].answers)) == 12
    assert "Pareto frontier" in page and "<script" not in page


def test_a_second_sweep_needs_force_and_replaces_only_its_own_files(viewed, sweep_clone):
    _, _, out = viewed
    (out / "notes.txt").write_text("mine\n", encoding="utf-8")
    refused = run(["groundkit", "sweep", "--out", str(out)], sweep_clone.repo, check=False)
    assert refused.returncode == 1 and "--force" in refused.stderr
    run(["groundkit", "sweep", "--out", str(out), "--force"], sweep_clone.repo)
    assert (out / "notes.txt").read_text(encoding="utf-8") == "mine\n"


@pytest.mark.parametrize(("args", "fragment"), [
    (["--quality", "ndgc@10"], "'ndgc@10' is not a metric groundkit reports"),
    (["--quality", "coverage@1000chars"], "is not a quality read at a rank"),
    (["--budget-measure", "coverag"], "'coverag' is not a measure groundkit reports"),
    (["--alpha", "1.5"], "--alpha"),
    (["--correction", "bonferroni"], "--correction"),
])
def test_bad_options_are_one_message(sweep_clone, tmp_path, args, fragment):
    result = run(["groundkit", "sweep", "--out", str(tmp_path / "v"), *args], sweep_clone.repo, check=False)
    assert result.returncode == 1 and fragment in result.stderr and "fix:" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "v").exists()


def _config(params: dict, varied: list[str]):
    from groundkit.reports.sweep_view import Config, _flat

    side = _side("rev", params)
    return Config("rev", {key: _flat(params).get(key) for key in varied}, side)


def test_labels_name_the_strategy_its_sizes_and_context_and_say_tokens():
    varied = ["chunk.size", "chunk.context", "chunk.strategy"]
    recursive = {"chunk": {"strategy": "recursive", "size": 400, "overlap": 40, "context": "headings"}}
    assert _config(recursive, [*varied, "chunk.overlap"]).label == \
        "size=400 context=headings strategy=recursive overlap=40"
    # run.json leaves an unset context out: it reads as none
    assert _config({"chunk": {"strategy": "sentence", "size": 800, "overlap": 0}}, varied).label == \
        "size=800 context=none strategy=sentence"
    assert _config({"chunk": {"strategy": "tokens", "size": 256, "overlap": 32}}, [*varied, "chunk.overlap"]).label \
        == "size=256 tokens context=none strategy=tokens overlap=32 tokens"
    # the strategy need not vary for the unit to be said
    assert _config({"chunk": {"strategy": "tokens", "size": 128, "overlap": 0}}, ["chunk.size"]).label == \
        "size=128 tokens"
    # an adapter's sizes are its options; chunk.size is not its own, and is not shown
    adapter = {"chunk": {"strategy": "langchain:RecursiveCharacterTextSplitter", "size": 800, "overlap": 0,
                         "options": {"chunk_size": 300, "separators": ["\n\n", " "]}}}
    assert _config(adapter, ["chunk.size", "chunk.strategy", "chunk.options.chunk_size",
                             "chunk.options.separators"]).label == (
        'strategy=langchain:RecursiveCharacterTextSplitter chunk_size=300 separators=["\\n\\n", " "]')
    assert _config({"chunk": {"strategy": "document", "size": 800, "overlap": 0}}, varied).label == \
        "context=none strategy=document"
