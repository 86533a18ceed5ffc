"""Faults under real DVC: a stage killed mid-write, and queued or --temp experiments that must run their own code.

The kill is injected, not raced: a ``sitecustomize`` module on PYTHONPATH wraps ``os.replace`` in the
one stage process named by GROUNDKIT_TEST_KILL_STAGE and sends that process SIGKILL at the instant the
stage would rename its finished temporary file into place, which is the last moment a non-atomic writer
would have left a half-written output behind.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from tests.dvc_helpers import REPO, clone_working_tree, repro, run, wait_for_queue

pytestmark = pytest.mark.integration

SITECUSTOMIZE = '''
import os, signal, sys

_stage = os.environ.get("GROUNDKIT_TEST_KILL_STAGE")
if _stage and sys.argv[0].endswith("stages/stage.py") and sys.argv[1:2] == [_stage]:
    _replace = os.replace

    def _replace_then_die(src, dst, *args, **kwargs):
        if os.path.basename(str(dst)) == os.environ["GROUNDKIT_TEST_KILL_TARGET"]:
            os.kill(os.getpid(), signal.SIGKILL)
        return _replace(src, dst, *args, **kwargs)

    os.replace = _replace_then_die
'''


@pytest.fixture(scope="module")
def killer(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("inject")
    (directory / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    return directory


@pytest.mark.parametrize(("stage", "target", "output"), [
    ("chunk", "chunks.jsonl", "build/chunks.jsonl"),
    ("index", "index", "build/index"),
    ("retrieve", "run.trec", "build/run.trec"),
])
def test_stage_killed_mid_write_leaves_nothing_a_later_stage_reads(killer, tmp_path, stage, target, output):
    repo = clone_working_tree(tmp_path / "repo")
    committed = (repo / "metrics" / "metrics.json").read_bytes()

    ran, result = repro(repo, check=False, PYTHONPATH=str(killer), GROUNDKIT_TEST_KILL_STAGE=stage,
                        GROUNDKIT_TEST_KILL_TARGET=target)
    assert result.returncode != 0
    assert stage in ran and "score" not in ran
    # The kill really landed mid-write: the finished temporary copy is there, the output is not.
    leftovers = [p.name for p in (repo / "build").iterdir() if p.name.startswith(f".{target}.")]
    assert leftovers, "the injected kill did not fire"
    assert not (repo / output).exists()

    # A later stage run on its own refuses to go on without the output.
    downstream = {"chunk": "index", "index": "retrieve", "retrieve": "score"}[stage]
    _, alone = repro(repo, "--single-item", downstream, check=False)
    assert alone.returncode != 0 and output in alone.stdout + alone.stderr

    ran, _ = repro(repo)
    assert stage in ran and "score" in ran
    assert (repo / "metrics" / "metrics.json").read_bytes() == committed
    assert run(["git", "status", "--porcelain", "metrics", "dvc.lock"], repo).stdout == ""


def _exp_metrics(repo: Path) -> dict[str, dict]:
    """Experiment name -> the headline metrics.json, from `dvc exp show --json`."""
    shown = json.loads(run(["dvc", "exp", "show", "--json"], repo).stdout)
    found = {}
    for commit in shown:
        for exp in commit.get("experiments") or []:
            for revision in exp.get("revs", []):
                data = revision.get("data") or {}
                metrics = (data.get("metrics") or {}).get("metrics/metrics.json", {}).get("data")
                if revision.get("name") and metrics:
                    found[revision["name"]] = metrics
    return found


# An empty PYTHONPATH is no PYTHONPATH to Python, so a stage sees what a user's shell gives it: the
# installed groundkit (here an editable install of another checkout), never the tree under test.
INSTALLED_ONLY = {"PYTHONPATH": ""}

# Appended to the vectorised provider (which scores mrr), these later definitions are the ones it calls.
MRR_IS_ZERO = "\n\ndef _reciprocal_rank(r, k):\n    return np.zeros(r.n)\n\n\nVECTORISED = VectorisedProvider()\n"
METRICS_PY = Path("groundkit/scoring/providers/vectorised.py")


def _committed_metrics(repo: Path) -> dict:
    return json.loads(run(["git", "show", "HEAD:metrics/metrics.json"], repo).stdout)


@pytest.fixture(scope="module")
def queue_drained(tmp_path_factory) -> tuple[Path, dict[int, dict]]:
    """A clone where a chunk size is queued with an experiment that edits groundkit, and what that size gives
    run alone.

    Alone is ``groundkit run`` in a folder of its own, which writes the pipeline's metrics.json byte for byte
    (tests/pipeline/test_dvc.py); it also leaves DVC's run cache empty, so the queue runs every stage itself.
    The code edit is queued and then reverted in the workspace before the queue starts, so only the
    experiment's own copy of the tree holds it.
    """
    repo = clone_working_tree(tmp_path_factory.mktemp("queue") / "repo")
    sizes = (300,)  # not the committed 800: the queue runs it side by side (-j 2) with the code edit

    alone = {}
    for size in sizes:
        out = tmp_path_factory.mktemp(f"alone-{size}") / "run"
        run(["groundkit", "run", "--corpus", "evals/corpus", "--judgments", "evals/judgments.jsonl", "--params",
             "params.yaml", "--set", f"chunk.size={size}", "--out", str(out)], repo, **INSTALLED_ONLY)
        alone[size] = json.loads((out / "metrics.json").read_text(encoding="utf-8"))

    for size in sizes:
        run(["dvc", "exp", "run", "--queue", "-S", f"chunk.size={size}", "-n", f"size-{size}"], repo)
    with (repo / METRICS_PY).open("a", encoding="utf-8") as handle:
        handle.write(MRR_IS_ZERO)
    run(["dvc", "exp", "run", "--queue", "-n", "own-code"], repo)
    run(["git", "checkout", "--", str(METRICS_PY)], repo)

    run(["dvc", "queue", "start", "-j", "2"], repo, **INSTALLED_ONLY)
    status = wait_for_queue(repo, [*(f"size-{size}" for size in sizes), "own-code"],
                            lambda: run(["dvc", "queue", "status"], repo).stdout)
    assert "Failed" not in status, status + run(["dvc", "queue", "logs", "size-300"], repo, check=False).stdout
    return repo, alone


def test_queued_experiments_equal_running_each_alone(queue_drained):
    repo, alone = queue_drained
    queued = _exp_metrics(repo)
    for size, metrics in alone.items():
        assert queued[f"size-{size}"] == metrics, size
    # The queued size must really give other results than the committed one, or the comparison proves nothing.
    assert all(metrics != _committed_metrics(repo) for metrics in alone.values())


def test_queued_experiment_measures_its_own_code(queue_drained):
    repo, _ = queue_drained
    committed = _committed_metrics(repo)
    assert committed["mrr"] > 0
    refs = run(["git", "for-each-ref", "--format=%(refname)", "refs/exps"], repo).stdout.split()
    (ref,) = [r for r in refs if r.endswith("/own-code")]
    assert run(["git", "show", f"{ref}:{METRICS_PY}"], repo).stdout.endswith(MRR_IS_ZERO)

    own = _exp_metrics(repo)["own-code"]
    assert own["mrr"] == 0.0
    assert own["recall@10"] == committed["recall@10"]  # only mrr was edited
    assert _committed_metrics(repo) == json.loads((repo / "metrics" / "metrics.json").read_text(encoding="utf-8"))
    assert run(["git", "status", "--porcelain", "groundkit", "metrics"], repo).stdout == ""


def test_temp_and_workspace_runs_measure_their_own_code(queue_drained):
    repo, _ = queue_drained
    committed = _committed_metrics(repo)
    with (repo / METRICS_PY).open("a", encoding="utf-8") as handle:
        handle.write(MRR_IS_ZERO)
    try:
        run(["dvc", "exp", "run", "--temp", "-n", "temp-own-code"], repo, **INSTALLED_ONLY)
        assert _exp_metrics(repo)["temp-own-code"]["mrr"] == 0.0
        # A --temp run leaves the workspace alone; a plain repro there runs the edited code too.
        assert json.loads((repo / "metrics" / "metrics.json").read_text(encoding="utf-8")) == committed
        repro(repo, **INSTALLED_ONLY)
        assert json.loads((repo / "metrics" / "metrics.json").read_text(encoding="utf-8"))["mrr"] == 0
    finally:
        run(["git", "checkout", "--", "."], repo)


def test_a_stage_refuses_groundkit_imported_from_another_tree(tmp_path):
    """Something imports groundkit before the stage can choose its own tree: the stage stops, naming both."""
    tree = tmp_path / "tree"
    for folder in ("stages", "groundkit"):
        shutil.copytree(REPO / folder, tree / folder, ignore=shutil.ignore_patterns("__pycache__"))
    inject = tmp_path / "inject"
    inject.mkdir()
    (inject / "sitecustomize.py").write_text("import groundkit\n", encoding="utf-8")

    result = run([sys.executable, "stages/stage.py", "chunk", "--help"], tree, check=False,
                 PYTHONPATH=os.pathsep.join([str(inject), str(REPO)]))
    assert result.returncode == 1
    assert result.stderr.startswith("error: stage.py runs in ")
    assert f"imported groundkit from {REPO / 'groundkit'}" in result.stderr and "fix:" in result.stderr
    assert "Traceback" not in result.stderr
    assert run([sys.executable, "stages/stage.py", "chunk", "--help"], tree, **INSTALLED_ONLY).returncode == 0
