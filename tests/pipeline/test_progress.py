"""Progress bars: drawn on stderr when it is a terminal (a real pty), nothing at all otherwise."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from groundkit.console import progress as _progress

# Chunk, index and retrieve on a small corpus, with the bar delay at zero so
# that a bar would be drawn however quickly the steps finish.
SCRIPT = """
import sys
from pathlib import Path
from groundkit.console import progress as _progress
from groundkit.artifacts.atomic import atomic_write_lines
from groundkit.artifacts.lines import model_line
from groundkit.config import ChunkParams
from groundkit.corpus.passage import Document
from groundkit.pipeline.steps import chunk as chunk_step, embed as embed_step
from groundkit.pipeline.steps import index as index_step, retrieve as retrieve_step
from groundkit.config import load_params
from groundkit.pipeline.store import Store

_progress.DELAY_S = 0
store = Store()
work = Path(sys.argv[1])
documents = [Document(path=f"d{i}.md", text=f"alpha beta gamma {i} " * 40) for i in range(5)]
atomic_write_lines(work / "documents.jsonl", (model_line(d) for d in documents), seal=True)
chunk_step.run(work / "documents.jsonl", ChunkParams(size=100), work / "chunks.jsonl", work / "chunking.json",
               store=store)
params = load_params(None, ["retrieve.depth=10"])
index_step.run(work / "chunks.jsonl", params.bm25, work / "index", store=store)
embed_step.run(work / "chunks.jsonl", params, work / "embeddings", store=store)
atomic_write_lines(work / "spans.jsonl",
                   ['{"category": "factoid", "query": "alpha", "query_id": "q1", "spans": []}'], seal=True)
(work / "machine_spans").mkdir()
atomic_write_lines(work / "machine_spans" / "spans.jsonl", [], seal=True)
retrieve_step.run(work / "chunks.jsonl", work / "documents.jsonl", work / "index", work / "embeddings",
                  work / "spans.jsonl", work / "machine_spans", params, out_run=work / "run.trec",
                  out_passages=work / "passages.jsonl", store=store)
print("done")
"""


def _run_with_stderr_on_a_pty(args: list[str]) -> tuple[int, bytes]:
    controller, terminal = pty.openpty()
    # A fresh pty is 0 columns wide, in which tqdm draws nothing; a real terminal has a size.
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    with subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=terminal, stdin=subprocess.DEVNULL) as process:
        os.close(terminal)
        output = bytearray()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                data = os.read(controller, 4096)
            except OSError:  # EIO: the child closed its end of the terminal
                break
            if not data:
                break
            output += data
        returncode = process.wait(timeout=60)
    os.close(controller)
    return returncode, bytes(output)


def test_bars_are_drawn_on_a_terminal(tmp_path: Path):
    returncode, output = _run_with_stderr_on_a_pty([sys.executable, "-c", SCRIPT, str(tmp_path)])
    assert returncode == 0, output.decode(errors="replace")
    for step in (b"chunk:", b"index:", b"retrieve:"):
        assert step in output, output.decode(errors="replace")
    assert b"0/5 [" in output  # the chunk bar counts the five documents
    assert output.endswith(b"\r")  # bars are cleared (leave=False), not left behind in the log
    assert (tmp_path / "run.trec").read_text(encoding="utf-8").startswith("q1 Q0 ")


def test_nothing_extra_is_written_when_stderr_is_not_a_terminal(tmp_path: Path):
    result = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True, check=False)
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    assert result.stderr == b""
    assert result.stdout == b"done\n"


def test_track_hands_back_the_iterable_itself_without_a_terminal(capsys: pytest.CaptureFixture[str]):
    items = [1, 2, 3]
    assert not _progress.enabled()  # pytest captures stderr: not a terminal
    assert _progress.track(items, desc="x") is items
    with _progress.bar(total=3, desc="x") as progress:
        progress.update(3)
    assert capsys.readouterr().err == ""
