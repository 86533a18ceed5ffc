"""One process, one reading: what ``groundkit run`` shares between its steps must equal what a DVC stage parses.

Each shortcut here (a writer leaving what it wrote for the reader, the corpus read once, tokens
reused) stands in for work a DVC stage does afresh. Every test compares the shortcut with that
work: the same values, the same errors, and nothing shared outside a run.
"""

from __future__ import annotations

import gc
import hashlib
import json
import math
import os
import random
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from groundkit import _shared, artifacts
from groundkit._shared import fewer_collections, sharing
from groundkit.artifacts import iter_models, model_line, read_models, write_models
from groundkit.corpus.documents import load_corpus_hashed
from groundkit.corpus.judgments import Category
from groundkit.corpus.passage import Chunk, Document, Excerpt
from groundkit.corpus.spans import ResolvedJudgment, ResolvedSpan
from groundkit.corpus.tokenizing import make_tokenizer
from groundkit.errors import ArtifactError, JudgmentsError
from groundkit.retrieval.trec import read_run, run_lines, write_run


def _parsed_afresh(read):
    """What ``read()`` gives a DVC stage: outside any run, so every byte is parsed."""
    assert _shared.table("parses") is None
    return read()


def _random_rankings(rng: random.Random, ids: list[str]) -> dict[str, list[tuple[str, float | None]]]:
    rankings: dict[str, list[tuple[str, float | None]]] = {}
    for number in range(rng.randint(0, 6)):
        depth = rng.choice([0, 1, 2, 5, 40])
        picked = rng.sample(ids, min(depth, len(ids)))
        kind = rng.choice(["float", "float32", "none", "ties", "negative"])
        if kind == "none":
            scores: list[float | None] = [None] * len(picked)
        elif kind == "ties":
            scores = sorted((float(rng.randint(0, 3)) for _ in picked), reverse=True)
        elif kind == "negative":
            scores = sorted((rng.uniform(-1, 1) for _ in picked), reverse=True)
            scores = [-0.0 if s == 0 else s for s in scores]
        else:
            scores = sorted((rng.uniform(0, 30) for _ in picked), reverse=True)
            if kind == "float32":
                scores = [np.float32(s) for s in scores]  # what a numpy retriever hands over
        rankings[f"q{number}"] = list(zip(picked, scores, strict=True))
    return rankings


@pytest.mark.parametrize("seed", range(40))
def test_a_run_left_by_its_writer_reads_as_its_bytes_parse(tmp_path, seed):
    rng = random.Random(seed)
    ids = [f"{rng.getrandbits(64):016x}" for _ in range(60)]
    rankings = _random_rankings(rng, ids)
    queries = [*rankings, "q-unranked"]
    path = tmp_path / "run.trec"
    with sharing():
        write_run(path, rankings, "bm25")
        shared = read_run(path, queries, set(ids))
        again = read_run(path, queries, set(ids))
    parsed = _parsed_afresh(lambda: read_run(path, queries, set(ids)))
    assert shared == parsed == again
    # Types too: a numpy float must not reach a reader that formats or serialises it.
    assert {type(s) for ranking in shared.values() for _, s in ranking} <= {float}
    # The bytes are those of the line-at-a-time writer.
    assert path.read_text(encoding="utf-8") == "".join(f"{line}\n" for line in run_lines(rankings, "bm25"))


@pytest.mark.parametrize(("rankings", "known", "problem"), [
    ({"q1": [("a", 1.0), ("zz", 0.5)]}, {"a"}, "names passage 'zz'"),
    ({"q1": [("a", 1.0), ("b", 2.0)]}, {"a", "b"}, "score rises"),
    ({"q1": [("a", 1.0), ("a", 0.5)]}, {"a"}, "passage 'a' is ranked twice"),
    ({"q1": [("a", math.nan)]}, {"a"}, "score is not a finite number"),
    ({"q1": [("a", math.inf)]}, {"a"}, "score is not a finite number"),
    ({"q9": [("a", 1.0)]}, {"a"}, "names unknown query 'q9'"),
])
def test_a_run_left_by_its_writer_fails_as_its_bytes_fail(tmp_path, rankings, known, problem):
    """Whatever check a parse of the file fails, the writer's own rankings fail too, naming the same line."""
    path = tmp_path / "run.trec"
    with sharing():
        write_run(path, rankings, "bm25")
        with pytest.raises(ArtifactError, match=problem) as shared:
            read_run(path, ["q1"], known)
    with pytest.raises(ArtifactError, match=problem) as parsed:
        read_run(path, ["q1"], known)
    assert str(shared.value) == str(parsed.value)


def test_a_run_edited_after_its_writer_is_parsed_or_refused(tmp_path):
    path = tmp_path / "run.trec"
    with sharing():
        write_run(path, {"q1": [("a", 2.0), ("b", 1.0)]}, "bm25")
        path.write_text("q1 Q0 b 1 3.0 bm25\n", encoding="utf-8")
        with pytest.raises(ArtifactError, match="does not match the SHA-256"):
            read_run(path, ["q1"], {"a", "b"})
        write_run(path, {"q1": [("b", 3.0)]}, "bm25")  # written again: the new rankings
        assert read_run(path, ["q1"], {"a", "b"}) == {"q1": [("b", 3.0)]}



def _edit_in_place(path: Path, old: bytes, new: bytes) -> None:
    """Replace ``old`` with ``new`` (as long) in the file itself, and put its times back as they were."""
    assert len(old) == len(new)
    before = path.stat()
    time.sleep(0.05)  # past a coarse clock's tick (multigrain timestamps need none): the edit gets a new ctime
    data = path.read_bytes()
    assert data.count(old) == 1
    with path.open("r+b") as handle:
        handle.write(data.replace(old, new))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size and path.stat().st_mtime_ns == before.st_mtime_ns


def test_an_artifact_written_in_the_run_is_checked_without_reading_it_again(tmp_path, monkeypatch):
    path = tmp_path / "documents.jsonl"
    documents = [Document(path="a.md", text="alpha"), Document(path="b.md", text="beta")]

    def no_read(*args, **kwargs):
        raise AssertionError("read again")

    with sharing(), artifacts.synced_later(tmp_path):  # as in a run's scratch folder
        write_models(path, documents, Document)
        with monkeypatch.context() as patched:
            patched.setattr(artifacts, "_artifact_bytes", no_read)
            assert read_models(path, Document, producer="resolve-spans") == documents
            assert artifacts.file_sha256(path) == hashlib.sha256(path.read_bytes()).hexdigest()
        _edit_in_place(path, b"beta", b"BETA")  # same size, same mtime: only the inode's ctime moved
        with monkeypatch.context() as patched:
            patched.setattr(artifacts, "_artifact_bytes", no_read)
            with pytest.raises(AssertionError, match="read again"):
                read_models(path, Document, producer="resolve-spans")
        with pytest.raises(ArtifactError, match="does not match the SHA-256"):
            read_models(path, Document, producer="resolve-spans")
        with pytest.raises(ArtifactError, match="does not match the SHA-256"):
            list(iter_models(path, Document, producer="resolve-spans"))
        assert artifacts.file_sha256(path) == hashlib.sha256(path.read_bytes()).hexdigest()


def test_an_artifact_replaced_by_a_file_of_the_same_size_and_time_is_refused(tmp_path):
    path = tmp_path / "run.trec"
    with sharing(), artifacts.synced_later(tmp_path):
        write_run(path, {"q1": [("a", 2.0), ("b", 1.0)]}, "bm25")
        before = path.stat()
        other = tmp_path / "other"
        other.write_bytes(path.read_bytes().replace(b" a ", b" b ").replace(b" b 2", b" a 2"))
        os.utime(other, ns=(before.st_atime_ns, before.st_mtime_ns))
        os.replace(other, path)
        with pytest.raises(ArtifactError, match="does not match the SHA-256"):
            read_run(path, ["q1"], {"a", "b"})


def test_a_file_hashed_in_a_run_is_hashed_again_once_changed_and_outside_it(tmp_path):
    path = tmp_path / "array.npy"
    path.write_bytes(b"x" * 3_000_000)
    with sharing(), artifacts.synced_later(tmp_path):
        assert artifacts.file_sha256(path) == hashlib.sha256(b"x" * 3_000_000).hexdigest()
        assert artifacts.remembered_digest(path.stat()) == hashlib.sha256(b"x" * 3_000_000).hexdigest()
        _edit_in_place(path, b"x" * 3_000_000, b"y" + b"x" * 2_999_999)
        assert artifacts.remembered_digest(path.stat()) is None
        assert artifacts.file_sha256(path) == hashlib.sha256(b"y" + b"x" * 2_999_999).hexdigest()
    assert artifacts.remembered_digest(path.stat()) is None  # nothing outlives the run


def test_a_file_outside_the_runs_scratch_folder_is_hashed_each_time(tmp_path):
    """An input (the judgments file, say) may be edited by its user at any moment: never taken from a record."""
    scratch, inputs = tmp_path / "scratch", tmp_path / "inputs"
    scratch.mkdir()
    inputs.mkdir()
    (inputs / "judgments.jsonl").write_text("one\n", encoding="utf-8")
    with sharing(), artifacts.synced_later(scratch):
        artifacts.file_sha256(inputs / "judgments.jsonl")
        assert artifacts.remembered_digest((inputs / "judgments.jsonl").stat()) is None
        write_models(inputs / "documents.jsonl", [Document(path="a.md", text="alpha")], Document)
        assert artifacts.remembered_digest((inputs / "documents.jsonl").stat()) is None
        write_models(scratch / "documents.jsonl", [Document(path="a.md", text="alpha")], Document)
        assert artifacts.remembered_digest((scratch / "documents.jsonl").stat()) is not None

def _records() -> list[tuple[type, list]]:
    text = 'Line one\n"quoted" \\ back\tslash \u00e9\u4e2d\U0001f600 \x7f end'
    documents = [Document(path="a.md", text=text), Document(path="dir/b c.txt", text="")]
    chunks = [Chunk(document="a.md", start_offset=0, end_offset=len(text), text=text),
              Chunk(document="a.md", start_offset=5, end_offset=8, text=text[5:8])]
    spans = [ResolvedJudgment(query_id="q1", query="what?", category=Category.FACTOID,
                              spans=[ResolvedSpan(document="a.md", start=0, end=4, quote="Line", grade=2)]),
             ResolvedJudgment(query_id="q2", query="none", category=Category.NO_ANSWER, spans=[],
                              exclude_documents=["a.md"])]
    return [(Document, documents), (Chunk, chunks), (Excerpt, [Excerpt(document="a.md", start=0, end=4,
                                                                       text="Line")]),
            (ResolvedJudgment, spans)]


@pytest.mark.parametrize(("model", "records"), _records(), ids=lambda v: getattr(v, "__name__", ""))
def test_records_left_by_their_writer_equal_their_parse(tmp_path, model, records):
    path = tmp_path / "records.jsonl"
    with sharing():
        write_models(path, records, model)
        shared = read_models(path, model, producer="chunk")
        streamed = list(iter_models(path, model, producer="chunk"))
    parsed = _parsed_afresh(lambda: read_models(path, model, producer="chunk"))
    assert shared == streamed == parsed == records
    assert [type(r) for r in shared] == [model] * len(records)


def test_a_record_with_a_float_is_parsed_not_handed_over(tmp_path):
    """model_line rounds floats, so what was written is not what reads back: that parse must happen."""
    from groundkit.artifacts import _reads_back_equal
    from groundkit.corpus.audit import AuditReport, JudgmentAudit

    assert _reads_back_equal(Chunk) and _reads_back_equal(ResolvedJudgment) and _reads_back_equal(JudgmentAudit)
    assert not _reads_back_equal(AuditReport)  # trivial_share: float
    from groundkit._models import Record

    class Scored(Record):
        name: str
        score: float

    class Loose(Record):
        extra: dict[str, object]

    assert not _reads_back_equal(Scored) and not _reads_back_equal(Loose)
    path = tmp_path / "scored.jsonl"
    with sharing():
        write_models(path, [Scored(name="a", score=0.1234567891)], Scored)
        assert read_models(path, Scored, producer="x") == [Scored(name="a", score=0.123457)]


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


def test_a_run_reads_its_corpus_once(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("first\n", encoding="utf-8")
    with sharing():
        documents, digest = load_corpus_hashed(corpus)
        (corpus / "a.md").write_text("changed\n", encoding="utf-8")
        # The second step of a run sees the snapshot the first one hashed and audited.
        assert load_corpus_hashed(corpus) == (documents, digest)
        assert load_corpus_hashed(corpus / ".." / "corpus") == (documents, digest)
    fresh, fresh_digest = load_corpus_hashed(corpus)
    assert fresh[0].text == "changed\n" and fresh_digest != digest



def test_a_judgments_file_is_parsed_once_for_the_same_bytes(tmp_path, monkeypatch):
    from groundkit.corpus import judgments as module

    path = tmp_path / "judgments.jsonl"
    line = json.dumps({"query_id": "q1", "query": "alpha?", "category": "factoid",
                       "gold": [{"document": "a.md", "quote": "alpha"}]})
    path.write_text(line + "\n", encoding="utf-8")
    parses = []
    real = module._parsed
    monkeypatch.setattr(module, "_parsed", lambda *args: parses.append(args[0]) or real(*args))
    with sharing():
        first = module.load_judgments(path)
        second = module.load_judgments(path)
        assert first == second and first is not second and len(parses) == 1
        path.write_text(line.replace("alpha?", "beta?") + "\n", encoding="utf-8")  # other bytes: parsed again
        assert module.load_judgments(path)[0].query == "beta?" and len(parses) == 2
        path.write_text("{oops\n", encoding="utf-8")
        for _ in range(2):  # a file that fails fails each time, with the same message
            with pytest.raises(JudgmentsError, match=r"judgments.jsonl:1: invalid JSON"):
                module.load_judgments(path)

def test_tokens_are_shared_in_fresh_lists_and_within_a_budget(monkeypatch):
    from groundkit.config import TokenizeParams
    from groundkit.corpus import tokenizing

    stemmed = TokenizeParams(stemmer="english")
    with sharing():
        tokenize = make_tokenizer(None)
        first = tokenize("Running runners ran")
        assert first == ("running", "runners", "ran") and tokenize("Running runners ran") is first  # shared...
        assert isinstance(first, tuple)  # ...so no step can change another's tokens
        # Another tokenizer keeps its own tokens for the same text.
        assert make_tokenizer(stemmed)("Running runners ran") is make_tokenizer(stemmed)("Running runners ran")
        assert make_tokenizer(stemmed)("Running runners ran") == ("run", "runner", "ran")
    monkeypatch.setattr(tokenizing, "SHARED_TOKENS", 3)
    with sharing():
        tokenize = make_tokenizer(None)
        assert tokenize("a b c") == ("a", "b", "c")
        assert tokenize("d e") == ("d", "e")  # over the budget: tokenized, not kept
        kept = _shared.table("tokens")
        assert kept is not None and kept["held"] == [3] and set(kept[("none", "none")]) == {"a b c"}
    assert _shared.table("tokens") is None


def test_fewer_collections_is_undone_whatever_happens():
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), fewer_collections():
        assert gc.get_threshold()[0] >= _shared.YOUNG_COLLECTION
        raise RuntimeError
    assert gc.get_threshold() == before


def test_a_run_shares_nothing_afterwards_and_leaves_no_thread(tmp_path):
    from groundkit.config import load_params
    from groundkit.pipeline.runner import run

    repo = Path(__file__).resolve().parent.parent
    run(repo / "evals" / "corpus", repo / "evals" / "judgments.jsonl", load_params(repo / "params.yaml"),
        tmp_path / "out")
    assert _shared.table("parses") is None
    assert not [t for t in threading.enumerate() if t.name == "groundkit-fsync"]


def _evals_run(out: Path) -> None:
    from groundkit.config import load_params
    from groundkit.pipeline.runner import run

    repo = Path(__file__).resolve().parent.parent
    run(repo / "evals" / "corpus", repo / "evals" / "judgments.jsonl", load_params(repo / "params.yaml"), out)


def test_every_file_of_a_run_is_durable_before_any_is_published(tmp_path, monkeypatch):
    """Artifacts skip their own fsync inside a run's scratch folder, so the folder must be synced before its rename."""
    import groundkit._outputs as outputs
    import groundkit.artifacts as artifacts

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

    import groundkit.artifacts as artifacts

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

    import groundkit.artifacts as artifacts
    from groundkit.artifacts import atomic_directory, atomic_write_text, synced_later

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


def test_runs_in_two_threads_share_nothing_with_each_other_or_with_what_follows(tmp_path):
    """A notebook may run two evaluations at once in threads: neither may see the other's corpus, and once
    both are done nothing may stay shared (a later run would read a stale snapshot: a silently wrong number)."""
    import shutil

    repo = Path(__file__).resolve().parent.parent
    entered, release = threading.Barrier(2), threading.Event()
    seen: dict[str, object] = {}
    before = gc.get_threshold()

    def hold(name: str, corpus: Path) -> None:
        with sharing(), fewer_collections():
            seen[name] = load_corpus_hashed(corpus)
            entered.wait(timeout=30)
            if name == "first":
                release.wait(timeout=30)  # the first run ends while the second one is still going on

    corpora = {}
    for name in ("first", "second"):
        corpora[name] = tmp_path / name
        shutil.copytree(repo / "evals" / "corpus", corpora[name])
    (corpora["second"] / "extra.md").write_text("only in the second corpus\n", encoding="utf-8")
    first = threading.Thread(target=hold, args=("first", corpora["first"]))
    second = threading.Thread(target=hold, args=("second", corpora["second"]))
    first.start()
    second.start()
    entered_ok = first.is_alive()
    release.set()
    first.join()
    second.join()
    assert entered_ok
    assert len(seen["second"][0]) == len(seen["first"][0]) + 1
    assert _shared.table("corpus") is None
    with sharing():
        assert _shared.table("corpus") == {}  # a new run starts empty
    assert gc.get_threshold() == before
