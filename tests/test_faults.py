"""Faults under real DVC: a stage killed by SIGKILL mid-write, and experiments run from DVC's queue.

The kill is injected, not raced: a ``sitecustomize`` module on PYTHONPATH wraps ``os.replace`` in the
one stage process named by GROUNDKIT_TEST_KILL_STAGE and sends that process SIGKILL at the instant the
stage would rename its finished temporary file into place, which is the last moment a non-atomic writer
would have left a half-written output behind.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.dvc_helpers import clone_working_tree, repro, run

pytestmark = pytest.mark.integration

SITECUSTOMIZE = '''
import os, signal, sys

_stage = os.environ.get("GROUNDKIT_TEST_KILL_STAGE")
if _stage and sys.argv and sys.argv[0].endswith(f"stages/{_stage}.py"):
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
    """Experiment name -> metrics.json contents, from `dvc exp show --json`."""
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


def test_queued_experiments_equal_running_each_alone(tmp_path):
    repo = clone_working_tree(tmp_path / "repo")
    sizes = (300, 500, 1200, 1600)

    alone = {}
    for size in sizes:
        run(["dvc", "exp", "run", "-S", f"chunk.size={size}"], repo)
        alone[size] = json.loads((repo / "metrics" / "metrics.json").read_text(encoding="utf-8"))
    run(["git", "checkout", "--", "."], repo)  # back to the committed params before queueing

    for size in sizes:
        run(["dvc", "exp", "run", "--queue", "-S", f"chunk.size={size}", "-n", f"size-{size}"], repo)
    run(["dvc", "queue", "start", "-j", "2"], repo)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        status = run(["dvc", "queue", "status"], repo).stdout
        if "Queued" not in status and "Running" not in status:
            break
        time.sleep(2)
    else:
        raise AssertionError(f"the queue did not drain within 10 minutes:\n{status}")
    assert "Failed" not in status, status + run(["dvc", "queue", "logs", "size-300"], repo, check=False).stdout

    queued = _exp_metrics(repo)
    for size in sizes:
        assert queued[f"size-{size}"] == alone[size], size
    # Different chunk sizes must really give different results, or the comparison above proves nothing.
    assert len({json.dumps(alone[s], sort_keys=True) for s in sizes}) == len(sizes)
