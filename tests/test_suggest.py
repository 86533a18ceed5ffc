"""Did you mean: the nearest known name or existing path, offered only when it is close."""

from __future__ import annotations

from groundkit.inputs.suggest import did_you_mean, near_path


def test_a_close_name_is_offered_and_a_far_one_is_not():
    assert did_you_mean("chunk.sise", ["chunk.size", "chunk.overlap"]) == "; did you mean 'chunk.size'?"
    assert did_you_mean("rerank", ["chunk", "bm25", "score"]) == ""


def test_a_misspelt_path_is_corrected_part_by_part(tmp_path):
    (tmp_path / "evals" / "corpus").mkdir(parents=True)
    (tmp_path / "evals" / "judgments.jsonl").write_text("{}\n", encoding="utf-8")
    assert near_path(tmp_path / "evlas" / "judgment.jsonl") == tmp_path / "evals" / "judgments.jsonl"
    assert near_path(tmp_path / "evals" / "corpuss") == tmp_path / "evals" / "corpus"
    assert near_path(tmp_path / "evals" / "queries.csv") is None  # nothing near: nothing offered
    assert near_path(tmp_path / "elsewhere" / "corpus") is None
