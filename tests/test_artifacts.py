"""Atomic, sealed artifact files: what a reader accepts and what it refuses."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess

import pytest

from groundkit.artifacts import atomic_directory, atomic_write_lines, read_lines, seal_path
from groundkit.errors import ArtifactError


def test_seal_is_sha256sum_format(tmp_path):
    path = tmp_path / "run.trec"
    atomic_write_lines(path, ["a b", "c d"], seal=True)
    assert path.read_bytes() == b"a b\nc d\n"
    # sha256 of b"a b\nc d\n", checked by coreutils rather than by the code under test
    assert shutil.which("sha256sum")
    checked = subprocess.run(["sha256sum", "-c", seal_path(path).name], cwd=tmp_path, capture_output=True, text=True)
    assert checked.returncode == 0 and checked.stdout == "run.trec: OK\n"
    assert read_lines(path, producer="retrieve") == ["a b", "c d"]


def test_reader_refuses_a_file_cut_at_a_line_boundary(tmp_path):
    path = tmp_path / "run.trec"
    atomic_write_lines(path, ["a b", "c d"], seal=True)
    path.write_bytes(b"a b\n")
    with pytest.raises(ArtifactError, match="truncated or edited after the retrieve stage"):
        read_lines(path, producer="retrieve")


def test_reader_refuses_a_file_without_its_seal(tmp_path):
    path = tmp_path / "chunks.jsonl"
    atomic_write_lines(path, ["{}"], seal=True)
    seal_path(path).unlink()
    with pytest.raises(ArtifactError, match=r"has no seal chunks\.jsonl\.sha256"):
        read_lines(path, producer="chunk")


def test_unsealed_reads_still_demand_the_final_newline(tmp_path):
    path = tmp_path / "x.txt"
    path.write_bytes(b"a\nb")
    with pytest.raises(ArtifactError, match="does not end with a newline"):
        read_lines(path, producer="chunk", sealed=False)


@pytest.fixture(params=[(0o022, 0o644, 0o755), (0o077, 0o600, 0o700)], ids=["umask022", "umask077"])
def umask(request):
    """Run the test under a umask; yield it with the file and folder modes plain open() and mkdir() give."""
    value, file_mode, dir_mode = request.param
    previous = os.umask(value)
    try:
        yield file_mode, dir_mode
    finally:
        os.umask(previous)


def test_atomic_writers_give_the_modes_the_umask_gives(tmp_path, umask):
    file_mode, dir_mode = umask
    atomic_write_lines(tmp_path / "run.trec", ["a b"], seal=True)
    with atomic_directory(tmp_path / "index") as folder:
        (folder / "vocab.json").write_text("{}\n")
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in tmp_path.rglob("*")}
    assert modes == {"run.trec": file_mode, "run.trec.sha256": file_mode, "index": dir_mode, "vocab.json": file_mode}


def test_a_run_reuses_a_parse_only_of_the_same_bytes_and_arguments(tmp_path):
    """Inside one run a re-read is not parsed again; a changed file or other arguments are."""
    from groundkit._shared import sharing
    from groundkit.retrieval.trec import read_run

    run = tmp_path / "run.trec"
    atomic_write_lines(run, ["q1 Q0 a 1 2.5 bm25", "q1 Q0 b 2 1.5 bm25"], seal=True)
    with sharing():
        first = read_run(run, ["q1"], {"a", "b"})
        first["q1"].append(("z", 0.0))  # a caller's edit must not reach the next reader
        assert read_run(run, ["q1"], {"a", "b"}) == {"q1": [("a", 2.5), ("b", 1.5)]}
        # Other arguments are another parse: "b" is no longer a known passage.
        with pytest.raises(ArtifactError, match="names passage 'b'"):
            read_run(run, ["q1"], {"a"})
        # Rewritten (and resealed) between two reads: the new bytes are parsed.
        atomic_write_lines(run, ["q1 Q0 b 1 3.0 bm25"], seal=True)
        assert read_run(run, ["q1"], {"a", "b"}) == {"q1": [("b", 3.0)]}
        # Edited after its seal: refused, though identical bytes were parsed before.
        run.write_text("q1 Q0 a 1 2.5 bm25\n", encoding="utf-8")
        with pytest.raises(ArtifactError, match="does not match the SHA-256"):
            read_run(run, ["q1"], {"a", "b"})
