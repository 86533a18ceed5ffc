"""BM25: a hand-worked example, an independent reference implementation, ordering and storage."""

import json
import math
import random
from collections import Counter
from itertools import pairwise

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


def _resealed(path, manifest: dict) -> None:
    """Write ``manifest`` with a seal to match, as a manifest of another version (or a forger) would come."""
    import hashlib

    data = (json.dumps(manifest) + "\n").encode()
    path.write_bytes(data)
    path.with_name("manifest.json.sha256").write_text(f"{hashlib.sha256(data).hexdigest()}  manifest.json\n")


def test_index_of_an_older_format_is_refused(tmp_path):
    BM25Index.build(make_chunks(["a b"]), k1=1.2, b=0.75).save(tmp_path / "index")
    path = tmp_path / "index" / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["format"], manifest["tokenizer"] = "groundkit-bm25/1", "lowercase \\w+"
    _resealed(path, manifest)
    with pytest.raises(ArtifactError, match="unsupported index format 'groundkit-bm25/1'"):
        BM25Index.load(tmp_path / "index")
    manifest["format"], manifest["tokenizer"] = "groundkit-bm25/3", {"pattern": "lowercase \\w+", "stemmer": "x"}
    _resealed(path, manifest)
    with pytest.raises(ArtifactError, match="not a valid index manifest"):
        BM25Index.load(tmp_path / "index")


def test_a_hand_edited_manifest_is_refused_naming_it_and_the_fix(tmp_path):
    # Every other file of the index has its SHA-256 in the manifest; switching the manifest's tokenizer to the
    # stemmer changed every query's tokens (nDCG@10 0.5221 -> 0.3639 on the committed corpus) without a word.
    BM25Index.build(make_chunks(["the replica runs", "running backups"]), k1=1.2, b=0.75).save(tmp_path / "index")
    path = tmp_path / "index" / "manifest.json"
    path.write_text(path.read_text().replace('"stemmer": "none"', '"stemmer": "english"'))
    with pytest.raises(ArtifactError) as info:
        BM25Index.load(tmp_path / "index")
    assert str(info.value) == (f"{path}: does not match the SHA-256 in manifest.json.sha256: it was truncated or "
                               "edited after the index stage wrote it\n"
                               "  fix: delete it and re-run the index stage (dvc repro -f -s index)")
    path.with_name("manifest.json.sha256").unlink()
    with pytest.raises(ArtifactError, match=r"has no seal manifest\.json\.sha256 beside it"):
        BM25Index.load(tmp_path / "index")


def test_an_index_built_with_other_params_than_the_run_reports_is_refused(tmp_path):
    from groundkit.config import load_params
    from groundkit.errors import ParamsError
    from groundkit.retrieval.bm25 import load_for

    BM25Index.build(make_chunks(["a b", "a c c"]), k1=1.2, b=0.75).save(tmp_path / "index")
    assert load_for(load_params(None), tmp_path / "index").k1 == 1.2
    for change, key, told in (("bm25.k1=0.5", "bm25.k1", "is 0.5, but the index in"),
                              ("bm25.b=1.0", "bm25.b", "is 1.0, but the index in"),
                              ("tokenize.stemmer=english", "tokenize.stemmer", "is 'english', but the index in")):
        with pytest.raises(ParamsError) as info:
            load_for(load_params(None, [change]), tmp_path / "index")
        assert info.value.key == key and info.value.problem.startswith(told)
        assert info.value.fix.startswith("build the index again and go on: dvc repro -f -s index && dvc repro")


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
    spans = list(zip(parts, manifest["segments"], strict=True))
    columns = [[(p["indices"][p["indptr"][t]:p["indptr"][t + 1]].astype(np.int64) + span["first_row"],
                 p["data"][p["indptr"][t]:p["indptr"][t + 1]]) for p, span in spans]
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
    monkeypatch.setattr("groundkit.retrieval.bm25.build._BLOCK", 7)  # the build's blocks of texts
    monkeypatch.setattr("groundkit.retrieval.bm25.format._BLOCK", 7)  # the writer's blocks of rows
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


def _segment_counts(texts: list[str], cuts: list[int]):
    from groundkit.retrieval.bm25 import count_segment

    bounds = [0, *cuts, len(texts)]
    return [count_segment(texts[a:b], None, first_row=a) for a, b in pairwise(bounds)]


def test_merge_stats_by_hand():
    from groundkit.retrieval.bm25 import merge_stats

    counts = _segment_counts(["b a", "a c c", "d", "c"], [2])
    assert counts[0].vocab == ["b", "a", "c"] and counts[1].vocab == ["d", "c"]  # order of first appearance
    assert counts[0].df.tolist() == [1, 2, 1] and counts[0].lengths.tolist() == [2, 3]
    # (row, local term, tf) triples, local rows, sorted by (row, term)
    triples = list(zip(counts[0].rows, counts[0].terms, counts[0].tfs, strict=True))
    assert triples == [(0, 0, 1), (0, 1, 1), (1, 1, 1), (1, 2, 2)]
    stats = merge_stats([c.summary() for c in counts])
    assert stats.vocab == ["a", "b", "c", "d"] and stats.df.tolist() == [2, 1, 2, 1]
    assert (stats.n_docs, stats.total_tokens, stats.avgdl) == (4, 7, 7 / 4)
    # idf(df=2, N=4) = ln(1 + 2.5/2.5) = ln 2; idf(df=1) = ln(1 + 3.5/1.5)
    assert stats.idf.tolist() == pytest.approx([math.log(2), math.log(1 + 3.5 / 1.5), math.log(2),
                                                math.log(1 + 3.5 / 1.5)], rel=1e-7)
    assert stats.idf.dtype == np.float32


def test_merge_stats_depends_only_on_the_union_of_summaries():
    from groundkit.retrieval.bm25 import merge_stats

    texts = _generated_texts(14)
    reference = merge_stats([c.summary() for c in _segment_counts(texts, [])])
    rng = random.Random(3)
    for cuts in ([75], [1, 2, 3], [10, 40, 41, 100, 149], sorted(rng.sample(range(1, 150), 20))):
        summaries = [c.summary() for c in _segment_counts(texts, cuts)]
        for order in (summaries, summaries[::-1], rng.sample(summaries, len(summaries))):
            stats = merge_stats(order)
            assert stats.vocab == reference.vocab
            assert stats.df.tobytes() == reference.df.tobytes() and stats.idf.tobytes() == reference.idf.tobytes()
            assert (stats.n_docs, stats.total_tokens, stats.avgdl) == (150, reference.total_tokens, reference.avgdl)
    lengths = np.array([len(tokenize(t)) for t in texts], dtype=np.int64)
    assert reference.avgdl == lengths.mean()  # what bm25s divides by


def test_merge_stats_refuses_overlapping_or_repeated_segments():
    from groundkit.retrieval.bm25 import count_segment, merge_stats

    first = count_segment(["a b", "c"], None, first_row=0).summary()
    with pytest.raises(ValueError, match="two summaries of the segment at row 0"):
        merge_stats([first, first])
    with pytest.raises(ValueError, match="segments overlap"):
        merge_stats([first, count_segment(["a"], None, first_row=1).summary()])


@pytest.mark.parametrize("spill", [False, True])
def test_each_weighed_segment_is_the_whole_matrix_restricted_to_its_rows(tmp_path, spill):
    from groundkit.retrieval.bm25 import count_segment, merge_stats, weigh_segment

    texts = _generated_texts(15)
    whole = BM25Index.build(make_chunks(texts), k1=1.5, b=0.6).segments[0]
    bounds = [0, 13, 14, 80, 150]
    counts = [count_segment(texts[a:b], None, first_row=a, spill=tmp_path / f"s{a}" if spill else None)
              for a, b in pairwise(bounds)]
    stats = merge_stats([c.summary() for c in counts])
    for (a, b), segment_counts in zip(pairwise(bounds), counts, strict=True):
        segment = weigh_segment(segment_counts, stats, k1=1.5, b=0.6)
        assert (segment.first_row, segment.rows) == (a, b - a)
        assert segment.indices.dtype == np.int32 and segment.data.dtype == np.float32
        for term in range(len(stats.vocab)):
            rows = whole.indices[whole.indptr[term]:whole.indptr[term + 1]]
            keep = (rows >= a) & (rows < b)
            span = slice(segment.indptr[term], segment.indptr[term + 1])
            assert segment.indices[span].tolist() == (rows[keep] - a).tolist()
            assert segment.data[span].tobytes() == whole.data[whole.indptr[term]:whole.indptr[term + 1]][keep].tobytes()


def test_weigh_segment_without_the_merge_map_looks_terms_up(tmp_path):
    # A Ray worker may receive statistics without the per-segment map; the result must not change.
    import dataclasses
    import pickle

    from groundkit.retrieval.bm25 import count_segment, merge_stats, weigh_segment

    texts = _generated_texts(16)
    counts = [count_segment(texts[:60], None, first_row=0, spill=tmp_path / "spill"),
              count_segment(texts[60:], None, first_row=60)]
    stats = merge_stats([c.summary() for c in counts])
    bare = dataclasses.replace(stats, segment_terms={})
    for segment_counts in counts:
        moved = pickle.loads(pickle.dumps(segment_counts))  # a spilled segment travels with its data
        one, two = weigh_segment(segment_counts, stats, k1=1.2, b=0.75), weigh_segment(moved, bare, k1=1.2, b=0.75)
        for name in ("indptr", "indices", "data"):
            assert getattr(one, name).tobytes() == getattr(two, name).tobytes()


def test_merge_top_is_exact_under_ties_across_segments():
    from groundkit.retrieval.bm25 import merge_top

    def part(rows, scores):
        return np.array(rows, dtype=np.int64), np.array(scores, dtype=np.float32)

    # Segment tops, each already in order; 1.0 ties across all three segments.
    parts = [part([5, 9], [2.0, 1.0]), part([1, 7], [1.0, 1.0]), part([12, 20], [3.0, 1.0])]
    rows, scores = merge_top(parts, 4)
    assert rows.tolist() == [12, 5, 1, 7] and scores.tolist() == [3.0, 2.0, 1.0, 1.0]
    rows, scores = merge_top(parts, 100)
    assert rows.tolist() == [12, 5, 1, 7, 9, 20] and rows.dtype == np.int64 and scores.dtype == np.float32
    assert merge_top(parts[::-1], 5)[0].tolist() == [12, 5, 1, 7, 9]
    assert merge_top([], 3)[0].tolist() == [] and merge_top([part([], [])], 3)[0].tolist() == []


def test_query_terms_keep_query_order_and_repeats_and_drop_unknown_tokens():
    from groundkit.retrieval.bm25 import count_segment, merge_stats, query_terms

    index = BM25Index.build(make_chunks(["b a", "c"]), k1=1.2, b=0.75)
    stats = merge_stats([count_segment(["b a", "c"], None, first_row=0).summary()])
    for source in (index, stats):
        assert query_terms(source, "C zzz a c A").tolist() == [2, 0, 2, 0]  # vocab: a, b, c
        assert query_terms(source, "").dtype == np.int64


def test_streamed_build_writes_the_same_bytes_as_the_in_memory_build(tmp_path):
    from groundkit.retrieval.bm25 import write_index

    texts = _generated_texts(17)
    chunks = make_chunks(texts)
    for rows in (7, 150, 1000):
        BM25Index.build(chunks, k1=1.2, b=0.75, segment_rows=rows).save(tmp_path / f"memory{rows}")
        records = ((c.chunk_id, c.document, c.start_offset, c.text) for c in chunks)
        built = write_index(records, tmp_path / f"streamed{rows}", k1=1.2, b=0.75, segment_rows=rows)
        assert built == (150, len(BM25Index.load(tmp_path / f"memory{rows}").vocab))
        assert _files(tmp_path / f"streamed{rows}") == _files(tmp_path / f"memory{rows}")
    assert len(json.loads((tmp_path / "streamed7" / "manifest.json").read_text())["segments"]) == 22  # 150 / 7
    assert not any(p.name.startswith(".") for p in tmp_path.rglob("*"))  # the spill folder is gone


def test_empty_and_tokenless_corpora_index_and_answer_nothing(tmp_path):
    from groundkit.retrieval.bm25 import write_index

    assert write_index(iter(()), tmp_path / "empty", k1=1.2, b=0.75) == (0, 0)
    empty = BM25Index.load(tmp_path / "empty")
    assert empty.search("a", 5) == [] and empty.scores("a").tolist() == [] and empty.segments == []
    BM25Index.build(make_chunks(["--- !!!", "..."]), k1=1.2, b=0.75).save(tmp_path / "tokenless")
    tokenless = BM25Index.load(tmp_path / "tokenless")
    assert tokenless.num_chunks == 2 and tokenless.vocab == [] and tokenless.search("a", 5) == []


def test_separately_weighed_segments_written_by_the_driver_are_the_same_bytes(tmp_path):
    # What a distributed engine does: count and weigh segments apart, hand them to the driver's one writer.
    from groundkit.retrieval.bm25 import IndexWriter, count_segment, merge_stats, weigh_segment, write_index

    chunks = make_chunks(_generated_texts(18))
    counts = [count_segment([c.text for c in chunks[a:a + 40]], None, first_row=a) for a in range(0, 150, 40)]
    stats = merge_stats([c.summary() for c in reversed(counts)])
    rows = [(c.chunk_id, c.document, c.start_offset) for c in chunks]
    with IndexWriter(tmp_path / "driver", k1=1.2, b=0.75) as writer:
        writer.add_rows(*zip(*rows, strict=True))
        for count in counts:
            writer.add_segment(weigh_segment(count, stats, k1=1.2, b=0.75))
        built = writer.finish(stats)
    assert built == (150, len(stats.vocab))
    records = ((c.chunk_id, c.document, c.start_offset, c.text) for c in chunks)
    write_index(records, tmp_path / "local", k1=1.2, b=0.75, segment_rows=40)
    assert _files(tmp_path / "driver") == _files(tmp_path / "local")
    with pytest.raises(ValueError, match="segment 0 starts at row 40"), \
            IndexWriter(tmp_path / "bad", k1=1.2, b=0.75) as writer:
        writer.add_rows(*zip(*rows, strict=True))
        writer.add_segment(weigh_segment(counts[1], stats, k1=1.2, b=0.75))
    assert not (tmp_path / "bad").exists()


def test_index_writer_row_by_row_writes_the_same_bytes_and_nothing_unless_finished(tmp_path):
    from groundkit.retrieval.bm25 import IndexWriter, count_segment, merge_stats, weigh_segment, write_index

    chunks = make_chunks(_generated_texts(19))
    records = [(c.chunk_id, c.document, c.start_offset, c.text) for c in chunks]
    write_index(iter(records), tmp_path / "local", k1=0.9, b=0.4, segment_rows=64)
    counts = [count_segment([r[3] for r in records[a:a + 64]], None, first_row=a) for a in range(0, 150, 64)]
    stats = merge_stats([c.summary() for c in counts])
    with IndexWriter(tmp_path / "rows", k1=0.9, b=0.4) as writer:
        for chunk_id, document, start_offset, _ in records:
            writer.add_row(chunk_id, document, start_offset)
        for segment_counts in counts:
            writer.add_segment(weigh_segment(segment_counts, stats, k1=0.9, b=0.4))
        assert writer.finish(stats) == (150, len(stats.vocab))
    assert _files(tmp_path / "rows") == _files(tmp_path / "local")
    with pytest.raises(RuntimeError, match="closed without finish"), \
            IndexWriter(tmp_path / "unfinished", k1=0.9, b=0.4) as writer:
        writer.add_row(*records[0][:3])
    with pytest.raises(ValueError, match="1 rows and segments of 0 rows do not make the 150 rows"), \
            IndexWriter(tmp_path / "short", k1=0.9, b=0.4) as writer:
        writer.add_row(*records[0][:3])
        writer.finish(stats)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["local", "rows"]
