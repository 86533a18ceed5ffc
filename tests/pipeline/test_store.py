"""The run store against the plain one: what ``groundkit run`` hands back between its steps must equal what a
DVC stage reads, hashes and parses afresh (groundkit/pipeline/store.py states the invariant).

Each shortcut (a writer's records handed back, a run's rankings handed back, a digest remembered, the
corpus read once, tokens reused) stands in for work a DVC stage does again. Every test compares the
shortcut with that work: the same values, the same errors, and nothing kept outside a run's own store.
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

from groundkit.artifacts import lines as _lines
from groundkit.corpus.judgments import Category
from groundkit.corpus.passage import Chunk, Document, Excerpt
from groundkit.corpus.spans import ResolvedJudgment, ResolvedSpan
from groundkit.errors import ArtifactError, JudgmentsError
from groundkit.pipeline import store as store_module
from groundkit.pipeline.collector import YOUNG_COLLECTION, fewer_collections
from groundkit.pipeline.store import RunStore, Store
from tests.conftest import REPO

PLAIN = Store()


def _random_rankings(rng: random.Random, ids: list[str]) -> dict[str, list[tuple[str, float | None]]]:
    rankings: dict[str, list[tuple[str, float | None]]] = {}
    for number in range(rng.randint(0, 6)):
        depth = rng.choice([0, 1, 2, 5, 40])
        picked = rng.sample(ids, min(depth, len(ids)))
        kind = rng.choice(["float", "float32", "none", "ties", "negative", "huge"])
        if kind == "none":
            scores: list[float | None] = [None] * len(picked)
        elif kind == "ties":
            scores = sorted((float(rng.randint(0, 3)) for _ in picked), reverse=True)
        elif kind == "negative":
            scores = sorted((rng.uniform(-1, 1) for _ in picked), reverse=True)
            scores = [-0.0 if s == 0 else s for s in scores]
        elif kind == "huge":
            scores = sorted((rng.choice([1e-7, 3.5e20, 12.0]) for _ in picked), reverse=True)
        else:
            scores = sorted((rng.uniform(0, 30) for _ in picked), reverse=True)
            if kind == "float32":
                scores = [np.float32(s) for s in scores]  # what a numpy retriever hands over
        rankings[f"q{number}"] = list(zip(picked, scores, strict=True))
    return rankings


def _trec_text(rankings: dict[str, list[tuple[str, float | None]]], tag: str) -> str:
    """The run file, written out plainly: one line per passage, the score as repr writes it, None as -rank."""
    lines = []
    for query_id, ranking in rankings.items():
        for rank, (passage_id, score) in enumerate(ranking, start=1):
            shown = repr(float(-rank if score is None else score))
            lines.append(f"{query_id} Q0 {passage_id} {rank} {shown} {tag}\n")
    return "".join(lines)


@pytest.mark.parametrize("seed", range(40))
def test_a_run_handed_back_reads_as_its_bytes_parse(tmp_path, seed):
    rng = random.Random(seed)
    ids = [f"{rng.getrandbits(64):016x}" for _ in range(60)]
    rankings = _random_rankings(rng, ids)
    queries = [*rankings, "q-unranked"]
    path = tmp_path / "run.trec"
    store = RunStore(tmp_path)
    store.write_run(path, rankings, "bm25")
    handed = store.read_run(path, queries, set(ids), listed_in="chunks.jsonl", producer="retrieve")
    again = store.read_run(path, queries, set(ids), listed_in="chunks.jsonl", producer="retrieve")
    parsed = PLAIN.read_run(path, queries, set(ids), listed_in="chunks.jsonl", producer="retrieve")
    assert handed == parsed == again
    # Types too: a numpy float must not reach a reader that formats or serialises it.
    assert {type(s) for ranking in handed.values() for _, s in ranking} <= {float}
    assert path.read_text(encoding="utf-8") == _trec_text(rankings, "bm25")
    handed["q-unranked"].append(("x", 0.0))  # a caller's edit reaches no later reader
    assert store.read_run(path, queries, set(ids), listed_in="chunks.jsonl", producer="retrieve") == parsed


@pytest.mark.parametrize(("queries", "known", "problem"), [
    (["q1"], {"a"}, "names passage 'zz', which is not in chunks.jsonl"),
    (["q2"], {"a", "zz"}, "names unknown query 'q1'"),
    (["q1"], None, None),  # passages not known: the file is parsed, and accepted
])
def test_a_run_handed_back_fails_as_its_bytes_fail(tmp_path, queries, known, problem):
    """The ids a reader knows are checked on the handed-back rankings as the parser checks them, same message."""
    path = tmp_path / "run.trec"
    store = RunStore(tmp_path)
    store.write_run(path, {"q1": [("a", 1.0), ("zz", 0.5)]}, "bm25")
    if problem is None:
        assert store.read_run(path, queries, known, listed_in="chunks.jsonl", producer="retrieve") == \
            {"q1": [("a", 1.0), ("zz", 0.5)]}
        return
    with pytest.raises(ArtifactError, match=problem) as handed:
        store.read_run(path, queries, known, listed_in="chunks.jsonl", producer="retrieve")
    with pytest.raises(ArtifactError, match=problem) as parsed:
        PLAIN.read_run(path, queries, known, listed_in="chunks.jsonl", producer="retrieve")
    assert str(handed.value) == str(parsed.value)


@pytest.mark.parametrize("ranking", [[("a", 1.0), ("b", 2.0)], [("a", 1.0), ("a", 0.5)], [("a", math.nan)],
                                     [("a", math.inf)]])
def test_the_writer_refuses_a_ranking_its_reader_would_refuse(tmp_path, ranking):
    """Rising, repeated or non-finite: never written, so never handed back unchecked."""
    with pytest.raises(ValueError, match="repeats a passage, or its scores are not finite and falling"):
        RunStore(tmp_path).write_run(tmp_path / "run.trec", {"q1": ranking}, "bm25")
    assert not (tmp_path / "run.trec").exists()


def test_a_run_edited_after_its_writer_is_refused_and_one_written_again_is_read(tmp_path):
    path = tmp_path / "run.trec"
    store = RunStore(tmp_path)
    store.write_run(path, {"q1": [("a", 2.0), ("b", 1.0)]}, "bm25")
    path.write_text("q1 Q0 b 1 3.0 bm25\n", encoding="utf-8")
    with pytest.raises(ArtifactError, match="does not match the SHA-256"):
        store.read_run(path, ["q1"], {"a", "b"}, listed_in="chunks.jsonl", producer="retrieve")
    store.write_run(path, {"q1": [("b", 3.0)]}, "bm25")
    assert store.read_run(path, ["q1"], {"a", "b"}, listed_in="chunks.jsonl", producer="retrieve") == \
        {"q1": [("b", 3.0)]}


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

    store = RunStore(tmp_path)
    store.write_models(path, documents, Document)
    with monkeypatch.context() as patched:
        patched.setattr(_lines, "artifact_bytes", no_read)
        assert store.read_models(path, Document, producer="resolve-spans") == documents
        assert store.sha256(path) == hashlib.sha256(path.read_bytes()).hexdigest()
    _edit_in_place(path, b"beta", b"BETA")  # same size, same mtime: only the inode's ctime moved
    with monkeypatch.context() as patched:
        patched.setattr(_lines, "artifact_bytes", no_read)
        with pytest.raises(AssertionError, match="read again"):
            store.read_models(path, Document, producer="resolve-spans")
    with pytest.raises(ArtifactError, match="does not match the SHA-256"):
        store.read_models(path, Document, producer="resolve-spans")
    with pytest.raises(ArtifactError, match="does not match the SHA-256"):
        list(store.iter_models(path, Document, producer="resolve-spans"))
    assert store.sha256(path) == hashlib.sha256(path.read_bytes()).hexdigest()


def test_an_artifact_replaced_by_a_file_of_the_same_size_and_time_is_refused(tmp_path):
    path = tmp_path / "run.trec"
    store = RunStore(tmp_path)
    store.write_run(path, {"q1": [("a", 2.0), ("b", 1.0)]}, "bm25")
    before = path.stat()
    other = tmp_path / "other"
    other.write_bytes(path.read_bytes().replace(b" a ", b" b ").replace(b" b 2", b" a 2"))
    os.utime(other, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(other, path)
    with pytest.raises(ArtifactError, match="does not match the SHA-256"):
        store.read_run(path, ["q1"], {"a", "b"}, listed_in="chunks.jsonl", producer="retrieve")


def test_a_file_hashed_in_the_run_is_hashed_again_once_changed(tmp_path, monkeypatch):
    path = tmp_path / "array.npy"
    path.write_bytes(b"x" * 3_000_000)
    store = RunStore(tmp_path)
    assert store.sha256(path) == hashlib.sha256(b"x" * 3_000_000).hexdigest()
    hashed = []
    real = hashlib.sha256
    monkeypatch.setattr(store_module.hashlib, "sha256", lambda *a: hashed.append(1) or real(*a))
    assert store.sha256(path) == real(b"x" * 3_000_000).hexdigest() and hashed == []  # remembered
    _edit_in_place(path, b"x" * 3_000_000, b"y" + b"x" * 2_999_999)
    assert store.sha256(path) == real(b"y" + b"x" * 2_999_999).hexdigest() and hashed == [1]
    assert RunStore(tmp_path).sha256(path) == real(b"y" + b"x" * 2_999_999).hexdigest()
    assert hashed == [1, 1]  # another run's store remembers nothing of this one's


def test_a_file_outside_the_runs_scratch_folder_is_hashed_each_time(tmp_path, monkeypatch):
    """An input (the judgments file, say) may be edited by its user at any moment: never taken from a record."""
    scratch, inputs = tmp_path / "scratch", tmp_path / "inputs"
    scratch.mkdir()
    inputs.mkdir()
    (inputs / "judgments.jsonl").write_text("one\n", encoding="utf-8")
    store = RunStore(scratch)
    hashed = []
    real = hashlib.sha256
    monkeypatch.setattr(store_module.hashlib, "sha256", lambda *a: hashed.append(1) or real(*a))
    for _ in range(2):
        store.sha256(inputs / "judgments.jsonl")
    assert len(hashed) == 2
    store.write_models(inputs / "documents.jsonl", [Document(path="a.md", text="alpha")], Document)
    store.write_models(scratch / "documents.jsonl", [Document(path="a.md", text="alpha")], Document)
    (scratch / "deeper").mkdir()
    store.write_models(scratch / "deeper" / "documents.jsonl", [Document(path="a.md", text="alpha")], Document)
    hashed.clear()
    for folder in (inputs, scratch, scratch / "deeper"):
        store.sha256(folder / "documents.jsonl")
    assert len(hashed) == 1  # the input only
    # A folder whose name merely starts like the scratch folder's is not inside it.
    sibling = tmp_path / "scratch-other"
    sibling.mkdir()
    store.write_models(sibling / "d.jsonl", [Document(path="a.md", text="alpha")], Document)
    hashed.clear()
    store.sha256(sibling / "d.jsonl")
    assert len(hashed) == 1


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
def test_records_handed_back_equal_their_parse(tmp_path, model, records):
    path = tmp_path / "records.jsonl"
    store = RunStore(tmp_path)
    store.write_models(path, records, model)
    handed = store.read_models(path, model, producer="chunk")
    streamed = list(store.iter_models(path, model, producer="chunk"))
    parsed = PLAIN.read_models(path, model, producer="chunk")
    assert handed == streamed == parsed == records
    assert [type(r) for r in handed] == [model] * len(records)


def test_a_record_with_a_float_is_parsed_not_handed_back(tmp_path):
    from groundkit.artifacts.models import Record

    class Scored(Record):
        name: str
        score: float

    path = tmp_path / "scored.jsonl"
    store = RunStore(tmp_path)
    store.write_models(path, [Scored(name="a", score=0.1234567891)], Scored)
    assert store.read_models(path, Scored, producer="x") == [Scored(name="a", score=0.123457)]


def test_a_run_reads_its_corpus_once_and_a_stage_reads_it_each_time(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("first\n", encoding="utf-8")
    store = RunStore(tmp_path / "scratch")
    documents, digest = store.corpus(corpus)
    (corpus / "a.md").write_text("changed\n", encoding="utf-8")
    # The second step of a run sees the snapshot the first one hashed and audited.
    assert store.corpus(corpus) == (documents, digest)
    assert store.corpus(corpus / ".." / "corpus") == (documents, digest)
    fresh, fresh_digest = PLAIN.corpus(corpus)
    assert fresh[0].text == "changed\n" and fresh_digest != digest


def test_a_judgments_file_is_parsed_once_for_the_same_bytes(tmp_path, monkeypatch):
    from groundkit.corpus import judgments as module

    path = tmp_path / "judgments.jsonl"
    line = json.dumps({"query_id": "q1", "query": "alpha?", "category": "factoid",
                       "gold": [{"document": "a.md", "quote": "alpha"}]})
    path.write_text(line + "\n", encoding="utf-8")
    parses = []
    real = module.parse_judgments
    monkeypatch.setattr(store_module, "parse_judgments", lambda *args, **kw: parses.append(1) or real(*args, **kw))
    store = RunStore(tmp_path / "scratch")
    first, digest = store.judgments(path)
    second, again = store.judgments(path)
    assert (first, digest) == (second, again) and first is not second and len(parses) == 1
    assert digest == hashlib.sha256(path.read_bytes()).hexdigest() == PLAIN.judgments(path)[1]
    path.write_text(line.replace("alpha?", "beta?") + "\n", encoding="utf-8")  # other bytes: parsed again
    assert store.judgments(path)[0][0].query == "beta?" and len(parses) == 2
    path.write_text("{oops\n", encoding="utf-8")
    for _ in range(2):  # a file that fails fails each time, with the same message
        with pytest.raises(JudgmentsError, match=r"judgments.jsonl:1: invalid JSON"):
            store.judgments(path)


def test_tokens_are_shared_as_tuples_and_within_a_budget(tmp_path, monkeypatch):
    from groundkit.config import TokenizeParams

    stemmed = TokenizeParams(stemmer="english")
    store = RunStore(tmp_path)
    tokenize = store.tokenizer(None)
    first = tokenize("Running runners ran")
    assert first == ("running", "runners", "ran") and tokenize("Running runners ran") is first  # shared...
    assert isinstance(first, tuple)  # ...so no step can change another's tokens
    assert store.tokenizer(TokenizeParams())("Running runners ran") is first  # the default, however written
    # Another tokenizer keeps its own tokens for the same text.
    assert store.tokenizer(stemmed)("Running runners ran") is store.tokenizer(stemmed)("Running runners ran")
    assert store.tokenizer(stemmed)("Running runners ran") == ("run", "runner", "ran")
    assert list(PLAIN.tokenizer(stemmed)("Running runners ran")) == ["run", "runner", "ran"]
    monkeypatch.setattr(store_module, "SHARED_TOKENS", 3)
    store = RunStore(tmp_path)
    tokenize = store.tokenizer(None)
    assert tokenize("a b c") == ("a", "b", "c") and tokenize("a b c") is tokenize("a b c")
    assert tokenize("d e") == ("d", "e") and tokenize("d e") is not tokenize("d e")  # over the budget: not kept


@pytest.mark.parametrize("params", [None, {"stemmer": "english", "stopwords": "en"}])
def test_a_text_without_the_whitespace_around_it_shares_its_tokens(tmp_path, params):
    """A document's whole-document chunk (its text less the newline it ends with) is not tokenized again; its
    tokens are what the tokenizer gives it, for texts whose edges are every kind of whitespace and word."""
    from groundkit.config import TokenizeParams
    from groundkit.corpus.tokenizing import make_tokenizer

    tokenizer = None if params is None else TokenizeParams(**params)
    configured = make_tokenizer(tokenizer)
    store = RunStore(tmp_path)
    tokenize = store.tokenizer(tokenizer)
    document = "\ufeff\u00a0 Running Ünïcode_words, the naïve runners\u2003\n\n"
    whole = tokenize(document)
    assert tokenize(document.strip()) is whole  # handed back, not tokenized again
    edges = ["", " ", "\n", "\t\r\n", "\u00a0", "\u2003\u3000", "\u200b", "x", "_", "é", ".", "\u0301"]
    texts = [f"{before}{middle}{after}" for before in edges for after in edges
             for middle in ("Running runners", "é_x THE cat's", "")]
    for text in texts:  # every text first, then its trimmed text: what is handed back is what it would be
        assert list(tokenize(text)) == list(configured(text)), repr(text)
    for text in texts:
        assert list(tokenize(text.strip())) == list(configured(text.strip())), repr(text)


def test_fewer_collections_is_undone_whatever_happens():
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), fewer_collections():
        assert gc.get_threshold()[0] >= YOUNG_COLLECTION
        raise RuntimeError
    assert gc.get_threshold() == before


def _evals_run(out: Path) -> None:
    from groundkit.config import load_params
    from groundkit.pipeline.runner import run

    run(REPO / "evals" / "corpus", REPO / "evals" / "judgments.jsonl", load_params(REPO / "params.yaml"), out)


def test_a_run_leaves_no_thread_and_no_store(tmp_path):
    _evals_run(tmp_path / "out")
    assert not [t for t in threading.enumerate() if t.name == "groundkit-fsync"]
    gc.collect()
    assert not [o for o in gc.get_objects() if isinstance(o, RunStore)]


def test_runs_in_two_threads_share_nothing(tmp_path):
    """A notebook may run two evaluations at once in threads: each run has its own store, so neither sees the
    other's corpus, and the collector's threshold comes back when both are done."""
    import shutil

    entered, release = threading.Barrier(2), threading.Event()
    seen: dict[str, object] = {}
    before = gc.get_threshold()

    def hold(name: str, corpus: Path) -> None:
        with fewer_collections():
            store = RunStore(tmp_path / f"scratch-{name}")
            seen[name] = store.corpus(corpus)
            entered.wait(timeout=30)
            if name == "first":
                release.wait(timeout=30)  # the first run ends while the second one is still going on

    corpora = {}
    for name in ("first", "second"):
        corpora[name] = tmp_path / name
        shutil.copytree(REPO / "evals" / "corpus", corpora[name])
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
    assert gc.get_threshold() == before


def test_a_runs_corpus_is_shared_per_root_and_patterns(tmp_path):
    from groundkit.config import CorpusParams

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("Alpha.\n", encoding="utf-8")
    (tmp_path / "docs" / "b.txt").write_text("Beta.\n", encoding="utf-8")
    store = RunStore(tmp_path / "scratch")
    every, markdown = CorpusParams(), CorpusParams(include=["*.md"])
    for selection, paths in ((every, ["a.md", "b.txt"]), (markdown, ["a.md"]), (None, ["a.md", "b.txt"])):
        documents, digest = store.corpus(tmp_path / "docs", selection)
        assert [d.path for d in documents] == paths
        assert (documents, digest) == Store().corpus(tmp_path / "docs", selection)


# --- provenance records: one schema, written and checked by the store


def test_a_provenance_record_round_trips_and_names_its_stage(tmp_path):
    from groundkit.pipeline.provenance import Provenance

    digest = hashlib.sha256(b"documents").hexdigest()
    record = Provenance(stage="chunk", inputs={"documents": digest}, params={"chunk": {"size": 800}})
    path = tmp_path / "chunking.json"
    Store().write_provenance(path, record)
    assert json.loads(path.read_text()) == {"stage": "chunk", "inputs": {"documents": digest},
                                            "params": {"chunk": {"size": 800}}}
    assert Store().read_provenance(path, producer="chunk") == record
    with pytest.raises(ArtifactError, match="was written by the chunk stage, not the retrieve stage") as refused:
        Store().read_provenance(path, producer="retrieve")
    assert refused.value.key == "stage" and "dvc repro -f -s retrieve" in refused.value.fix


@pytest.mark.parametrize(("document", "problem"), [
    ({"corpus_hash": "a" * 64, "judgments_hash": "b" * 64}, "stage: Field required"),  # the shape before records
    ({"stage": "chunk", "inputs": {"documents": "not-a-digest"}}, "not a SHA-256"),
    ({"stage": "chunk", "params": {}, "extra": 1}, "extra: Extra inputs are not permitted"),
    ([], "the record"),
])
def test_a_file_in_another_shape_is_refused_as_a_provenance_record(tmp_path, document, problem):
    path = tmp_path / "record.json"
    path.write_text(json.dumps(document) + "\n")
    with pytest.raises(ArtifactError, match="is not a provenance record") as refused:
        Store().read_provenance(path, producer="chunk")
    assert problem in str(refused.value) and "re-run the chunk stage" in refused.value.fix
