"""`groundkit sweep-plot`: rows from `dvc exp show --json`, one per comparable experiment, sorted by the params."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from groundkit.errors import SweepError
from groundkit.reports.sweep import experiment_rows
from tests.bad_inputs import CORPUS, JUDGMENTS, PARAMS
from tests.dvc_helpers import BIN, copy_of, env, reproduced_clone, run

SAME = {"judgments_hash": "j" * 64, "corpus_hash": "c" * 64}


def _entry(rev: str, name: str | None, size: int, ndcg: float, **extra) -> dict:
    return {
        "rev": rev,
        "name": name,
        "data": {
            "params": {"params.yaml": {"data": {"chunk": {"size": size, "overlap": 0}}}},
            "metrics": {"metrics/metrics.json": {"data": {"answerable": {"ndcg@10": ndcg, "queries": 144}}}},
        },
        **extra,
    }


def _experiment(revision: dict, state: str | None = None) -> dict:
    """An experiment as `dvc exp show --json` lists it; the queue sets ``executor``, `dvc exp run` leaves it null."""
    return {"revs": [revision], "name": revision["name"], "executor": {"state": state} if state else None}


# Shaped like real `dvc exp show --json` output (DVC 3.67): a queued entry has no metrics, a failed
# one carries an error and the commit's own metrics (its stash commit holds the committed metrics/).
SHOWN = [
    {"rev": "workspace", "name": None, "data": {}},
    {
        **_entry("a" * 40, "main", 800, 0.52),
        "experiments": [
            _experiment(_entry("b" * 40, "big", 2000, 0.63), "success"),
            _experiment(_entry("c" * 40, "small", 200, 0.31)),
            _experiment({"rev": "d" * 40, "name": "queued-one", "data": {}}, "queued"),
            _experiment(_entry("e" * 40, "broken", 0, 0.52, error={"msg": "Experiment run failed", "type": ""}),
                        "failed"),
            _experiment(_entry("f" * 40, "fewer-judgments", 800, 0.55), "success"),
            _experiment(_entry("1" * 40, "grown-corpus", 800, 0.49)),
            _experiment(_entry("2" * 40, "rerun", 800, 0.52), "success"),
            _experiment(_entry("3" * 40, "unscored", 600, 0.40)),
            _experiment(_entry("b" * 40, "big-again", 2000, 0.63)),
        ],
    },
]
RUN_JSON = {
    "a" * 40: SAME, "b" * 40: SAME, "c" * 40: SAME, "e" * 40: SAME, "2" * 40: SAME,
    "f" * 40: {**SAME, "judgments_hash": "k" * 64},
    "1" * 40: {**SAME, "corpus_hash": "d" * 64},
}


def _reader(rev: str) -> dict | str:
    return RUN_JSON.get(rev, "no metrics/run.json in its commit")


def test_rows_are_one_per_comparable_experiment_sorted_by_the_parameter():
    sweep = experiment_rows(SHOWN, ["chunk.size"], _reader)
    assert [(r["experiment"], r["chunk.size"], r["ndcg@10"]) for r in sweep.rows] == [
        ("small", 200, 0.31), ("main", 800, 0.52), ("big", 2000, 0.63)]
    assert sweep.left_out == [
        ("queued-one", "queued, not run yet"),
        ("broken", "failed; the metrics DVC shows for it are the commit's own"),
        ("fewer-judgments", "scored on other judgments (judgments_hash kkkkkkkkkkkk, the baseline's jjjjjjjjjjjj)"),
        ("grown-corpus", "scored on another corpus (corpus_hash dddddddddddd, the baseline's cccccccccccc)"),
        ("rerun", "repeats main (same params.yaml and metrics)"),
        ("unscored", "no metrics/run.json in its commit"),
        ("big-again", "the same commit as big"),
    ]
    # What `groundkit compare --experiments` reads: the kept experiments, not the commit, in DVC's order.
    assert sweep.experiments == [("big", "b" * 40), ("small", "c" * 40)]


def test_a_commit_without_run_json_cannot_anchor_a_sweep():
    with pytest.raises(SweepError, match=r"main:metrics/run\.json: cannot be used"):
        experiment_rows(SHOWN, ["chunk.size"], lambda rev: "no metrics/run.json in its commit")


def test_unknown_parameter_is_named():
    with pytest.raises(SweepError, match=r"chunk\.sise"):
        experiment_rows(SHOWN, ["chunk.sise"], _reader)


def test_a_metric_no_measure_names_is_refused_before_dvc_runs(tmp_path, capsys, monkeypatch):
    from groundkit.cli import main

    monkeypatch.chdir(tmp_path)  # no repository here: the name is checked before `dvc exp show` would fail
    assert main(["sweep-plot", "--metric", "ndcg@10,ndgc@10", "--out", "sweep.csv"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: --metric: 'ndgc@10' is not a metric groundkit reports; the measures are "
                          "chars@k, coverage@k|coverage@Nchars") and "\n  fix: " in err
    assert not (tmp_path / "sweep.csv").exists()


@pytest.fixture(scope="module")
def sweep_repo(tmp_path_factory) -> Path:
    """The committed corpus with its results committed (a copy of the session's reproduced clone), and
    experiments DVC runs over it.

    ``small`` changes the chunk size; ``fewer`` scores a second judgments file (the last judgment
    dropped), ``grown`` a corpus with one more document; ``rerun`` repeats the commit's own
    parameters, the way a grid that contains them does; ``pending`` is queued and never run.
    """
    repo = copy_of(reproduced_clone(tmp_path_factory)[0], tmp_path_factory.mktemp("sweep") / "repo")
    lines = (repo / JUDGMENTS).read_text(encoding="utf-8").splitlines()
    (repo / "evals" / "judgments_fewer.jsonl").write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")
    shutil.copytree(repo / CORPUS, repo / "evals" / "corpus_grown")
    (repo / "evals" / "corpus_grown" / "compaction.md").write_text(
        "Compaction merges sorted runs and drops tombstones.\n", encoding="utf-8")
    run(["git", "add", "-A"], repo)
    run(["git", "commit", "-q", "-m", "results, and the sweep's other judgments and corpus"], repo)
    size = yaml.safe_load((repo / PARAMS).read_text(encoding="utf-8"))["chunk"]["size"]
    experiments = {"small": "chunk.size=400", "fewer": "corpus.judgments=evals/judgments_fewer.jsonl",
                   "grown": "corpus.root=evals/corpus_grown", "rerun": f"chunk.size={size}"}
    for name, override in experiments.items():
        run(["dvc", "exp", "run", "-q", "-S", override, "-n", name], repo)
        run(["git", "checkout", "--", "."], repo)  # the next experiment starts from the commit, not from this one
    run(["dvc", "exp", "run", "--queue", "-S", "chunk.size=200", "-n", "pending"], repo)
    return repo


def test_sweep_plot_keeps_comparable_experiments_once_and_says_what_it_left_out(sweep_repo):
    out = sweep_repo / "build" / "sweep.csv"
    result = run(["groundkit", "sweep-plot", "--param", "chunk.size", "--metric", "ndcg@10", "--out", str(out)],
                 sweep_repo)
    table = [line.split(" | ")[0].strip("| ") for line in result.stdout.splitlines()[2:]]
    assert table == ["small", "main"]  # chunk.size 400, then the committed 800; main only once
    # The CSV names chunk.size chunk_size: Vega-Lite would read the dot as a nested field and draw nothing.
    assert out.read_text(encoding="utf-8").splitlines()[0] == "experiment,chunk_size,ndcg@10"
    lines = result.stderr.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("left out 4 "))
    left_out = dict(line.strip().split(": ", 1) for line in lines[start + 1:start + 5])
    assert left_out["fewer"].startswith("scored on other judgments (judgments_hash ")
    assert left_out["grown"].startswith("scored on another corpus (corpus_hash ")
    assert left_out["rerun"] == "repeats main (same params.yaml and metrics)"
    assert left_out["pending"] == "queued, not run yet"
    hashes = json.loads((sweep_repo / "metrics" / "run.json").read_text(encoding="utf-8"))
    assert f"the baseline's {hashes['judgments_hash'][:12]})" in left_out["fewer"]
    assert f"the baseline's {hashes['corpus_hash'][:12]})" in left_out["grown"]


def test_groundkit_run_by_its_path_finds_the_dvc_installed_beside_it(sweep_repo, tmp_path):
    # The environment is not activated: PATH holds the system's folders only, and no dvc command.
    out = tmp_path / "sweep.csv"
    path = "/usr/bin:/bin"
    assert shutil.which("dvc", path=path) is None
    result = subprocess.run([str(BIN / "groundkit"), "sweep-plot", "--param", "chunk.size", "--metric", "ndcg@10",
                             "--out", str(out)], cwd=sweep_repo, env={**env(), "PATH": path}, capture_output=True,
                            text=True, check=False)
    assert result.returncode == 0, result.stderr
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "experiment,chunk_size,ndcg@10"
    assert [line.split(",")[:2] for line in lines[1:]] == [["small", "400"], ["main", "800"]]


def test_compare_experiments_reads_the_same_experiments_and_says_what_it_left_out(sweep_repo):
    # One comparable experiment (small) is left: the two-run report, and stderr lists the others.
    result = run(["groundkit", "compare", "main", "--experiments", "--metric", "ndcg@10"], sweep_repo)
    assert result.stdout.startswith("## groundkit compare: `main` → `small`\n")
    left_out = [line.removeprefix("left out of --experiments: ") for line in result.stderr.splitlines()
                if line.startswith("left out of --experiments: ")]
    assert sorted(name.split(": ")[0] for name in left_out) == ["fewer", "grown", "pending", "rerun"]
    assert "rerun: repeats main (same params.yaml and metrics)" in left_out
