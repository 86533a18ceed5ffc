"""Atomic, sealed artifact files and their lines: what a writer writes, what a reader accepts and refuses."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess

import pytest

from groundkit.artifacts.atomic import atomic_directory, atomic_write_lines
from groundkit.artifacts.lines import model_line, read_lines, reads_back_equal
from groundkit.artifacts.seals import seal_path
from groundkit.corpus.passage import Chunk, Document
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


def test_a_model_line_escapes_every_character_as_json_does():
    """The fast writer must give json.dumps's bytes for every code point a document can hold."""
    characters = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    for start in range(0, len(characters), 50_000):
        text = "".join(characters[start:start + 50_000])
        document = Document(path="p", text=text)
        expected = json.dumps({"document_id": document.document_id, "path": "p", "text": text},
                              sort_keys=True, ensure_ascii=False)
        assert model_line(document) == expected
    chunk = Chunk(document="a", start_offset=3, end_offset=4, text="\x00")
    assert model_line(chunk) == json.dumps(chunk.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)


def test_which_models_read_back_equal_from_their_lines():
    """model_line rounds floats, so a model with one (or with Any, which may hold one) does not read back equal."""
    from groundkit.artifacts.models import Record
    from groundkit.corpus.audit import AuditReport, JudgmentAudit
    from groundkit.corpus.spans import ResolvedJudgment

    assert reads_back_equal(Chunk) and reads_back_equal(ResolvedJudgment) and reads_back_equal(JudgmentAudit)
    assert not reads_back_equal(AuditReport)  # trivial_share: float

    class Scored(Record):
        name: str
        score: float

    class Loose(Record):
        extra: dict[str, object]

    assert not reads_back_equal(Scored) and not reads_back_equal(Loose)
