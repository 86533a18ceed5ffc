"""BM25: a hand-worked example, an independent reference implementation, ordering and storage."""

import json
import math
import random
from collections import Counter

import numpy as np
import pytest

from groundkit.corpus.passage import Chunk
from groundkit.corpus.tokenizing import tokenize
from groundkit.errors import ArtifactError
from groundkit.retrieval.bm25 import BM25Index, top_k


def make_chunks(texts: list[str]) -> list[Chunk]:
    return [Chunk(document=f"d{i:03d}.md", start_offset=0, end_offset=len(t), text=t) for i, t in enumerate(texts)]


def reference_bm25(texts: list[str], query: str, k1: float, b: float) -> list[float]:
    """Lucene BM25 written straight from the formula, sharing nothing with bm25s."""
    docs = [Counter(tokenize(t)) for t in texts]
    lengths = [sum(d.values()) for d in docs]
    avgdl = sum(lengths) / len(docs)
    n = len(docs)
    scores = []
    for doc, length in zip(docs, lengths, strict=True):
        total = 0.0
        for term in tokenize(query):
            df = sum(1 for d in docs if term in d)
            if df == 0 or term not in doc:
                continue
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            tf = doc[term]
            total += idf * tf / (tf + k1 * (1 - b + b * length / avgdl))
        scores.append(total)
    return scores


def test_hand_worked_scores():
    # N=3, lengths 2, 3, 1, avgdl=2, k1=1.2, b=0.75
    index = BM25Index.build(make_chunks(["a b", "a c c", "d"]), k1=1.2, b=0.75)
    # "c": df=1, idf=ln(1+2.5/1.5)=0.980829; doc1 tf=2, norm=1.2*(0.25+0.75*1.5)=1.65 -> 2/3.65
    assert index.scores("c").tolist() == pytest.approx([0.0, 0.980829 * 2 / 3.65, 0.0], abs=1e-5)
    # "a": df=2, idf=ln(1.6)=0.470004; doc0 1/(1+1.2)=0.454545; doc1 1/(1+1.65)=0.377358
    assert index.scores("a").tolist() == pytest.approx([0.213638, 0.177360, 0.0], abs=1e-5)
    assert [cid for cid, _ in index.search("a", 10)] == [index.rows[0][0], index.rows[1][0]]


def test_scores_match_independent_reference_on_generated_corpus():
    rng = random.Random(7)
    vocab = [f"w{i}" for i in range(60)]
    weights = [1 / (i + 1) for i in range(60)]  # Zipf-like, so document frequencies vary
    texts = [" ".join(rng.choices(vocab, weights, k=rng.randint(3, 40))) for _ in range(120)]
    for k1, b in [(1.2, 0.75), (0.9, 0.4), (2.0, 1.0), (1.5, 0.0)]:
        index = BM25Index.build(make_chunks(texts), k1=k1, b=b)
        for _ in range(20):
            query = " ".join(rng.choices(vocab, k=rng.randint(1, 5))) + " unseen"
            assert index.scores(query).tolist() == pytest.approx(reference_bm25(texts, query, k1, b), rel=1e-5)


def test_query_without_shared_vocabulary_returns_nothing():
    index = BM25Index.build(make_chunks(["alpha beta", "gamma"]), k1=1.2, b=0.75)
    assert index.search("zeta eta", 10) == []
    assert index.search("", 10) == []


def test_only_positive_scores_and_never_more_than_the_corpus():
    index = BM25Index.build(make_chunks(["alpha", "alpha beta", "gamma"]), k1=1.2, b=0.75)
    results = index.search("alpha", 100)
    assert len(results) == 2 and all(score > 0 for _, score in results)


def test_ties_rank_by_document_path_then_offset():
    # Identical texts score identically; row order is (path, start_offset).
    chunks = [
        Chunk(document="a.md", start_offset=0, end_offset=5, text="x y z"),
        Chunk(document="a.md", start_offset=10, end_offset=15, text="x y z"),
        Chunk(document="b.md", start_offset=0, end_offset=5, text="x y z"),
        Chunk(document="c.md", start_offset=0, end_offset=3, text="q r"),
    ]
    index = BM25Index.build(chunks, k1=1.2, b=0.75)
    ranked = [cid for cid, _ in index.search("x", 10)]
    assert ranked == [chunks[0].chunk_id, chunks[1].chunk_id, chunks[2].chunk_id]
    assert [cid for cid, _ in index.search("x", 2)] == ranked[:2]


def test_top_k_is_exact_under_ties_at_the_cutoff():
    scores = np.array([0.5, 2.0, 0.5, 0.0, 2.0, 0.5, 1.0], dtype=np.float32)
    assert top_k(scores, 4) == [(1, 2.0), (4, 2.0), (6, 1.0), (0, 0.5)]
    assert top_k(scores, 100) == [(1, 2.0), (4, 2.0), (6, 1.0), (0, 0.5), (2, 0.5), (5, 0.5)]


def test_save_and_load_round_trip_without_pickle(tmp_path):
    index = BM25Index.build(make_chunks(["a b", "a c c", "d"]), k1=1.2, b=0.75)
    index.save(tmp_path / "index")
    loaded = BM25Index.load(tmp_path / "index")
    assert loaded.search("a c", 10) == index.search("a c", 10)
    assert loaded.rows == index.rows
    for name in ("seg-00000/data.npy", "seg-00000/indices.npy", "seg-00000/indptr.npy", "chunk_ids.npy",
                 "row_documents.npy", "start_offsets.npy"):
        np.load(tmp_path / "index" / name, allow_pickle=False)


def test_saving_twice_gives_identical_bytes(tmp_path):
    chunks = make_chunks(["a b", "a c c", "d"])
    BM25Index.build(chunks, k1=1.2, b=0.75).save(tmp_path / "one")
    BM25Index.build(chunks, k1=1.2, b=0.75).save(tmp_path / "two")
    assert _files(tmp_path / "one") == _files(tmp_path / "two")


def _files(directory) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("victim", ["seg-00000/data.npy", "seg-00000/indices.npy", "seg-00000/indptr.npy",
                                    "vocab.json", "documents.jsonl", "chunk_ids.npy", "row_documents.npy",
                                    "start_offsets.npy", "manifest.json"])
def test_truncated_or_edited_index_is_detected(tmp_path, victim):
    BM25Index.build(make_chunks(["a b", "a c c", "d"]), k1=1.2, b=0.75).save(tmp_path / "index")
    path = tmp_path / "index" / victim
    path.write_bytes(path.read_bytes()[:-3])
    with pytest.raises(ArtifactError, match="index"):
        BM25Index.load(tmp_path / "index")


def test_index_records_its_tokenizer_and_queries_are_tokenized_with_it(tmp_path):
    from groundkit.config import TokenizeParams

    chunks = make_chunks(["the replica runs", "a replicated log", "running backups"])
    stemmed = TokenizeParams(stopwords="en", stemmer="english")
    BM25Index.build(chunks, k1=1.2, b=0.75, tokenizer=stemmed).save(tmp_path / "index")
    manifest = json.loads((tmp_path / "index" / "manifest.json").read_text())
    assert manifest["tokenizer"] == {"pattern": "lowercase \\w+", "stemmer": "english", "stopwords": "en"}
    loaded = BM25Index.load(tmp_path / "index")  # no params passed: the manifest decides
    assert loaded.tokenizer == stemmed
    assert "the" not in loaded.vocab and "run" in loaded.vocab and "runs" not in loaded.vocab
    # "Run" stems to "run", shared by chunks 0 and 2; "the" was dropped, so it matches nothing.
    assert [cid for cid, _ in loaded.search("Run", 10)] == [chunks[0].chunk_id, chunks[2].chunk_id]
    assert loaded.search("the", 10) == []
    bare = BM25Index.build(chunks, k1=1.2, b=0.75)
    assert bare.search("Run", 10) == [] and len(bare.search("the", 10)) == 1


def test_index_of_an_older_format_is_refused(tmp_path):
    BM25Index.build(make_chunks(["a b"]), k1=1.2, b=0.75).save(tmp_path / "index")
    path = tmp_path / "index" / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["format"], manifest["tokenizer"] = "groundkit-bm25/1", "lowercase \\w+"
    path.write_text(json.dumps(manifest))
    with pytest.raises(ArtifactError, match="unsupported index format 'groundkit-bm25/1'"):
        BM25Index.load(tmp_path / "index")
    manifest["format"], manifest["tokenizer"] = "groundkit-bm25/3", {"pattern": "lowercase \\w+", "stemmer": "x"}
    path.write_text(json.dumps(manifest))
    with pytest.raises(ArtifactError, match="not a valid index manifest"):
        BM25Index.load(tmp_path / "index")


def _generated_texts(seed: int) -> list[str]:
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(300)] + ["café", "ß", "naïve", "İstanbul"]
    weights = [1 / (i + 1) for i in range(len(vocab))]
    texts = [" ".join(rng.choices(vocab, weights, k=rng.randint(1, 80))) for _ in range(150)]
    texts[7] = "--- !!!"  # a chunk without a single token
    texts[9] = texts[8]  # identical chunks
    return texts


def _saved_arrays(index: BM25Index, directory) -> dict[str, np.ndarray]:
    """The whole-corpus CSC matrix, put back together from the saved segments (global rows)."""
    index.save(directory)
    manifest = json.loads((directory / "manifest.json").read_text())
    parts = [{name: np.load(directory / f"seg-{i:05d}" / f"{name}.npy", allow_pickle=False)
              for name in ("data", "indices", "indptr")} for i in range(len(manifest["segments"]))]
    columns = [[(p["indices"][p["indptr"][t]:p["indptr"][t + 1]].astype(np.int64) + span["first_row"],
                 p["data"][p["indptr"][t]:p["indptr"][t + 1]]) for p, span in zip(parts, manifest["segments"])]
               for t in range(manifest["vocab_size"])]
    sizes = [sum(len(rows) for rows, _ in column) for column in columns]
    return {
        "data": np.concatenate([d for column in columns for _, d in column] or [np.zeros(0, np.float32)]),
        "indices": np.concatenate([r for column in columns for r, _ in column] or [np.zeros(0, np.int64)]),
        "indptr": np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
    }


@pytest.mark.parametrize(("k1", "b"), [(1.2, 0.75), (0.9, 0.4), (2.0, 1.0), (1.5, 0.0)])
def test_matrix_and_query_scores_are_bit_identical_to_bm25s(tmp_path, k1, b):
    import bm25s

    texts = _generated_texts(11)
    index = BM25Index.build(make_chunks(texts), k1=k1, b=b)
    ids = {token: i for i, token in enumerate(index.vocab)}
    engine = bm25s.BM25(k1=k1, b=b, method="lucene")
    reference = engine.build_index_from_ids(
        unique_token_ids=list(range(len(ids))), corpus_token_ids=[[ids[t] for t in tokenize(x)] for x in texts],
        show_progress=False,
    )
    ours = _saved_arrays(index, tmp_path / "index")
    assert ours["data"].dtype == np.float32 and np.array_equal(ours["data"], reference["data"])
    assert np.array_equal(ours["indices"], reference["indices"])
    assert np.array_equal(ours["indptr"], reference["indptr"])
    engine.scores = reference
    for query in ["w0 w1 w1 w250", "café naïve w3", "w299", "nothing here"]:
        query_ids = [ids[t] for t in tokenize(query) if t in ids]
        expected = engine.get_scores_from_ids(query_ids) if query_ids else np.zeros(len(texts), dtype=np.float32)
        assert index.scores(query).tobytes() == np.asarray(expected, dtype=np.float32).tobytes()


def test_block_boundaries_do_not_change_the_index(tmp_path, monkeypatch):
    chunks = make_chunks(_generated_texts(12))
    whole = _saved_arrays(BM25Index.build(chunks, k1=1.2, b=0.75), tmp_path / "whole")
    monkeypatch.setattr("groundkit.retrieval.bm25._BLOCK", 7)
    blocked = _saved_arrays(BM25Index.build(chunks, k1=1.2, b=0.75), tmp_path / "blocked")
    for name, array in whole.items():
        assert array.tobytes() == blocked[name].tobytes()


@pytest.mark.parametrize("segment_rows", [1, 3, 7, 149, 150])
def test_index_cut_into_segments_scores_and_ranks_exactly_as_one_segment(tmp_path, segment_rows):
    # Rows 8 and 9 hold the same text and fall in different segments at 3 rows a segment: a tie across segments.
    chunks = make_chunks(_generated_texts(13))
    whole = BM25Index.build(chunks, k1=1.2, b=0.75)
    cut = BM25Index.build(chunks, k1=1.2, b=0.75, segment_rows=segment_rows)
    assert [s.rows for s in cut.segments] == [min(segment_rows, 150 - i) for i in range(0, 150, segment_rows)]
    assert all(s.rows == segment_rows for s in cut.segments[:-1])
    cut.save(tmp_path / "cut")
    loaded = BM25Index.load(tmp_path / "cut")
    queries = ["w0 w1 w1 w250", "café naïve w3", "w299", "w5 w5 w7 w11 w13", "nothing here", texts_of(chunks, 8)]
    for query in queries:
        assert cut.scores(query).tobytes() == whole.scores(query).tobytes()
        assert loaded.scores(query).tobytes() == whole.scores(query).tobytes()
        for depth in (1, 2, 5, 40, 1000):
            assert cut.search(query, depth) == whole.search(query, depth) == loaded.search(query, depth)
    tied = whole.search(texts_of(chunks, 8), 2)
    assert [cid for cid, _ in tied] == [chunks[8].chunk_id, chunks[9].chunk_id] and tied[0][1] == tied[1][1]
    one, many = _saved_arrays(whole, tmp_path / "whole"), _saved_arrays(cut, tmp_path / "again")
    assert all(one[name].tobytes() == many[name].astype(one[name].dtype).tobytes() for name in one)


def texts_of(chunks: list[Chunk], row: int) -> str:
    return chunks[row].text
