"""The index step streams chunks.jsonl: same index as the in-memory build, same refusals as read_models."""

from __future__ import annotations

import hashlib
import json

import pytest

from groundkit.artifacts.atomic import atomic_write_lines
from groundkit.artifacts.lines import iter_models, model_line, read_models
from groundkit.config import BM25Params, TokenizeParams
from groundkit.corpus.passage import Chunk
from groundkit.errors import ArtifactError
from groundkit.pipeline.steps import index as index_step
from groundkit.pipeline.store import Store
from groundkit.retrieval.bm25 import BM25Index


def _chunks() -> list[Chunk]:
    texts = ["Raft elects a leader", "the leader replicates its log", "snapshots bound the log", "Replicas vote"]
    # Two documents of two chunks each, in (document, start_offset) order as the chunk stage writes them.
    return [Chunk(document=f"d{i // 2}.md", start_offset=100 * (i % 2), end_offset=100 * (i % 2) + len(t), text=t)
            for i, t in enumerate(texts)]


def _files(directory) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("tokenizer", [None, TokenizeParams(stopwords="en", stemmer="english")])
def test_the_step_writes_the_bytes_of_the_in_memory_build(tmp_path, tokenizer):
    chunks = _chunks()
    atomic_write_lines(tmp_path / "chunks.jsonl", map(model_line, chunks), seal=True)
    built = index_step.run(tmp_path / "chunks.jsonl", BM25Params(k1=0.9, b=0.4), tmp_path / "index", store=Store(),
                           tokenizer=tokenizer)
    BM25Index.build(chunks, k1=0.9, b=0.4, tokenizer=tokenizer).save(tmp_path / "memory")
    assert _files(tmp_path / "index") == _files(tmp_path / "memory")
    loaded = BM25Index.load(tmp_path / "index")
    assert (built.num_chunks, built.vocab_size) == (4, len(loaded.vocab))
    assert loaded.rows == [(c.chunk_id, c.document, c.start_offset) for c in chunks]
    assert (tmp_path / "index" / "documents.jsonl").read_text() == '"d0.md"\n"d1.md"\n'
    assert loaded.search("leader log", 10)[0][0] == chunks[1].chunk_id


def _bad_record_file(tmp_path):
    lines = [model_line(c) for c in _chunks()]
    record = json.loads(lines[2])
    record["text"] = record["text"].upper()  # no longer the text its chunk_id was derived from
    lines[2] = json.dumps(record)
    atomic_write_lines(tmp_path / "chunks.jsonl", lines, seal=True)
    return tmp_path / "chunks.jsonl"


def _message(read) -> str:
    with pytest.raises(ArtifactError) as caught:
        read()
    return str(caught.value)


def test_a_bad_record_fails_on_its_line_and_leaves_nothing_behind(tmp_path):
    path = _bad_record_file(tmp_path)
    (tmp_path / "out").mkdir()
    message = _message(lambda: index_step.run(path, BM25Params(), tmp_path / "out" / "index", store=Store()))
    assert ":3" in message and "record is invalid" in message
    assert message == _message(lambda: read_models(path, Chunk, producer="chunk"))
    assert list((tmp_path / "out").iterdir()) == []  # no index, no temporary folder


@pytest.mark.parametrize("damage", ["cut at a line", "cut mid-line", "seal missing"])
def test_a_damaged_chunks_file_is_refused_before_any_record_with_read_models_message(tmp_path, damage):
    path = tmp_path / "chunks.jsonl"
    atomic_write_lines(path, map(model_line, _chunks()), seal=True)
    data = path.read_bytes()
    if damage == "cut at a line":
        path.write_bytes(data[: data.index(b"\n") + 1])
    elif damage == "cut mid-line":
        path.write_bytes(data[:-5])
    else:
        (tmp_path / "chunks.jsonl.sha256").unlink()
    streamed = iter_models(path, Chunk, producer="chunk")
    message = _message(lambda: next(streamed))  # refused before the first record is handed out
    assert message == _message(lambda: read_models(path, Chunk, producer="chunk"))
    assert ("has no seal" if damage == "seal missing" else "does not match the SHA-256") in message


def test_damage_the_seal_cannot_see_is_reported_on_its_line(tmp_path):
    path = tmp_path / "chunks.jsonl"
    atomic_write_lines(path, map(model_line, _chunks()), seal=True)
    path.write_bytes(path.read_bytes()[:-5])
    # A seal that matches the cut file: only the per-line checks can see the damage now.
    (tmp_path / "chunks.jsonl.sha256").write_text(hashlib.sha256(path.read_bytes()).hexdigest() + "  chunks.jsonl\n")
    message = _message(lambda: list(iter_models(path, Chunk, producer="chunk")))
    assert "does not end with a newline" in message and ":4" in message
    assert message == _message(lambda: read_models(path, Chunk, producer="chunk"))
