"""Durability of a run's artifacts: synced in the background inside its scratch folder, all before publishing."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest


def _evals_run(out: Path) -> None:
    from groundkit.config import load_params
    from groundkit.pipeline.runner import run

    repo = Path(__file__).resolve().parent.parent
    run(repo / "evals" / "corpus", repo / "evals" / "judgments.jsonl", load_params(repo / "params.yaml"), out)


def test_every_file_of_a_run_is_durable_before_any_is_published(tmp_path, monkeypatch):
    """Artifacts skip their own fsync inside a run's scratch folder, so the folder must be synced before its rename."""
    import groundkit.artifacts.atomic as artifacts
    import groundkit.artifacts.outputs as outputs

    synced: list[str] = []
    real_fsync, real_commit = artifacts._fsync_path, outputs._commit

    def fsync_path(path: str) -> None:
        real_fsync(path)
        synced.append(Path(path).name)

    def commit(scratch: Path, *args, **kwargs) -> None:
        files = [p.name for p in scratch.rglob("*") if p.is_file()]
        assert "run.trec" in files and "manifest.json" in files  # the index's own files too
        assert set(files) <= set(synced), set(files) - set(synced)
        real_commit(scratch, *args, **kwargs)

    monkeypatch.setattr(artifacts, "_fsync_path", fsync_path)
    monkeypatch.setattr(outputs, "_commit", commit)
    _evals_run(tmp_path / "out")
    assert (tmp_path / "out" / "metrics.json").is_file()


def test_a_failed_background_fsync_fails_the_run_and_publishes_nothing(tmp_path, monkeypatch):
    """An fsync error is told once, to the thread that asked: it must reach the user, not vanish with the thread."""
    import errno

    import groundkit.artifacts.atomic as artifacts

    real_fsync, failed = artifacts._fsync_path, []

    def fsync_path(path: str) -> None:
        if Path(path).name == "run.trec" and not failed:  # once, as the kernel tells it: a second fsync succeeds
            failed.append(path)
            raise OSError(errno.EIO, "Input/output error", path)
        real_fsync(path)

    monkeypatch.setattr(artifacts, "_fsync_path", fsync_path)
    with pytest.raises(OSError, match="Input/output error") as failure:
        _evals_run(tmp_path / "out")
    assert failure.value.filename == str(tmp_path / "out" / "run.trec")  # the artifact, not the scratch file
    assert not (tmp_path / "out").exists()
    assert not [t for t in threading.enumerate() if t.name == "groundkit-fsync"]


def test_artifacts_in_a_scratch_folder_are_synced_in_the_background(tmp_path, monkeypatch):
    """Directly inside the folder or deeper, an artifact's fsync is the background thread's, not the writer's."""
    import os

    import groundkit.artifacts.atomic as artifacts
    from groundkit.artifacts.atomic import atomic_directory, atomic_write_text, synced_later

    callers: list[tuple[str, str]] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        callers.append((threading.current_thread().name, os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    monkeypatch.setattr(artifacts.os, "fsync", fsync)
    with synced_later(tmp_path) as sync:
        atomic_write_text(tmp_path / "run.trec", "q1 Q0 a 1 1.0 t\n", seal=True)
        with atomic_directory(tmp_path / "index") as folder:
            (folder / "manifest.json").write_text("{}\n", encoding="utf-8")
        sync()
    names = {Path(path).name: thread for thread, path in callers}
    assert names == {"run.trec": "groundkit-fsync", "run.trec.sha256": "groundkit-fsync",
                     "manifest.json": "groundkit-fsync"}
    atomic_write_text(tmp_path / "outside.txt", "x\n")  # no scratch folder: synced by the writer, at once
    assert callers[-1][0] == threading.current_thread().name
