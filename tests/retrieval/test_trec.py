"""Reading back the run file the retrieve stage writes."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from groundkit.artifacts.atomic import atomic_write_lines
from groundkit.errors import ArtifactError
from groundkit.retrieval.trec import read_run, score_texts


def write_run(tmp_path, rankings):
    """The run file, written line by line from the format (and sealed), whatever it holds: the reader's tests."""
    path = tmp_path / "run.trec"
    atomic_write_lines(path, _reference_lines(rankings, "groundkit-test"), seal=True)
    return path


def test_a_run_reads_back_as_written(tmp_path):
    path = write_run(tmp_path, {"q1": [("a", 2.0), ("b", 1.0)], "q2": [("b", 0.5)]})
    assert read_run(path, ["q1", "q2", "q3"], {"a", "b"}) == {"q1": [("a", 2.0), ("b", 1.0)], "q2": [("b", 0.5)],
                                                            "q3": []}


def test_an_id_ranked_twice_is_found_however_far_apart(tmp_path):
    # 20,000 distinct ids and then the first again: found by a set, not by rescanning the ranking.
    ranking = [(f"p{i}", float(-i)) for i in range(20_000)] + [("p0", -20_000.0)]
    path = write_run(tmp_path, {"q1": ranking})
    with pytest.raises(ArtifactError) as info:
        read_run(path, ["q1"])
    assert info.value.line == 20_001
    assert "passage 'p0' is ranked twice for 'q1'" in str(info.value)


def test_the_same_id_under_two_queries_is_fine(tmp_path):
    path = write_run(tmp_path, {"q1": [("a", 1.0)], "q2": [("a", 1.0)]})
    assert read_run(path, ["q1", "q2"])["q2"] == [("a", 1.0)]


def test_an_unknown_id_names_the_file_that_lists_the_passages(tmp_path):
    path = write_run(tmp_path, {"q1": [("a", 1.0), ("zz", 0.5)]})
    with pytest.raises(ArtifactError) as info:
        read_run(path, ["q1"], {"a"}, listed_in="passages.jsonl", producer="retrieve")
    assert info.value.line == 2
    assert "names passage 'zz', which is not in passages.jsonl" in str(info.value)
    assert "re-run the retrieve stage (dvc repro -f -s retrieve)" in str(info.value)


def test_scores_are_written_exactly_so_rounding_makes_no_tie(tmp_path):
    # Differing in the ninth decimal: six decimals would print both as 0.300000 and hand the order
    # to trec_eval's tie-break (document id descending), which puts "b" first here.
    scores = [("a", 0.300000004), ("b", 0.300000001), ("c", 1e-300), ("d", -2.5)]
    path = write_run(tmp_path, {"q1": scores})
    written = [float(line.split(" ")[4]) for line in path.read_text(encoding="utf-8").splitlines()]
    assert written == [s for _, s in scores]
    assert read_run(path, ["q1"]) == {"q1": scores}


def test_a_run_without_scores_writes_minus_the_rank(tmp_path):
    path = write_run(tmp_path, {"q1": [("a", None), ("b", None)]})
    assert [line.split(" ")[4] for line in path.read_text(encoding="utf-8").splitlines()] == ["-1.0", "-2.0"]


def _reference_lines(rankings, tag):
    """The run format written out plainly, one f-string a line: what the writers' joins must equal."""
    return [f"{query_id} Q0 {passage_id} {rank} {float(-rank if score is None else score)!r} {tag}"
            for query_id, ranking in rankings.items() for rank, (passage_id, score) in enumerate(ranking, start=1)]


@pytest.mark.parametrize("depths", [(1,), (2, 1), (1000, 3, 2500), (7, 0, 1)])
def test_the_stage_writes_the_lines_of_the_format(tmp_path, depths):
    # write_run joins each query's lines in one pass, with a shared rank column: byte for byte
    # the plain format, for every depth (a longer ranking after a shorter one, and back), scores of every
    # kind, and a query with no result (no line).
    from groundkit.retrieval.trec import write_run as stage_write_run

    rng = random.Random(len(depths))
    kinds = [lambda: rng.random() * 30, lambda: 1e-300, lambda: 5e20, lambda: -0.0, lambda: 3.0, lambda: -7.25]
    rankings = {f"q{i}": list(zip([f"c{j:04x}" for j in range(depth)],
                                  sorted((rng.choice(kinds)() for _ in range(depth)), reverse=True), strict=True))
                for i, depth in enumerate(depths)}
    stage_write_run(tmp_path / "run.trec", rankings, "bm25")
    expected = _reference_lines(rankings, "bm25")
    assert (tmp_path / "run.trec").read_text(encoding="utf-8") == "".join(f"{line}\n" for line in expected)
    assert len(expected) == sum(depths)


def test_write_run_writes_a_missing_score_as_minus_the_rank_and_any_number_as_a_float(tmp_path):
    from groundkit.retrieval.trec import write_run as stage_write_run

    rankings = {"q1": [("a", None), ("b", None)], "q2": [("c", 3), ("d", 2.5)]}
    stage_write_run(tmp_path / "run.trec", rankings, "external")
    assert (tmp_path / "run.trec").read_text(encoding="utf-8").splitlines() == _reference_lines(rankings, "external") \
        == ["q1 Q0 a 1 -1.0 external", "q1 Q0 b 2 -2.0 external", "q2 Q0 c 1 3.0 external", "q2 Q0 d 2 2.5 external"]


def _score_samples() -> list[tuple[str, list[float]]]:
    rng = np.random.default_rng(11)
    float32_scores = (rng.random(200_000) * 40).astype(np.float32).astype(np.float64).tolist()
    magnitudes = 10 ** rng.uniform(-4, 16, 200_000)
    across_range = (np.where(rng.random(200_000) < 0.5, -1, 1) * magnitudes).tolist()
    any_bits = rng.integers(0, 2**63, 200_000, dtype=np.int64).view(np.float64)
    edges = [1e-4, 0.1, 0.2, 1 / 3, 1.0, 100.0, 1e15, 9999999999999998.0, 0.0, -0.0, 123456.0, -7.25]
    return [("float32 scores", float32_scores), ("exponents -4 to 16", across_range),
            ("any finite float", any_bits[np.isfinite(any_bits)].tolist()), ("edges", edges),
            ("one below 1e-4", [2.5, 9.99e-05, 1.0]), ("one of 1e16", [1e16, 3.0]), ("nan", [1.0, math.nan]),
            ("inf", [math.inf, 1.0]), ("empty", [])]


@pytest.mark.parametrize(("name", "scores"), _score_samples(), ids=[n for n, _ in _score_samples()])
def test_scores_are_written_as_repr_writes_them(name, scores):
    # orjson writes a ranking's scores where it writes them as repr does; the rest go through repr. Either
    # way the text is repr's, so a run's bytes do not depend on which path wrote them.
    assert list(score_texts(scores)) == list(map(repr, scores))
