"""``groundkit judgments propose``: questions from passages drawn across documents, kept when their quote resolves."""

from __future__ import annotations

import json

import pytest

from groundkit.cli import main
from groundkit.corpus.authoring import check
from groundkit.corpus.passage import Excerpt
from groundkit.corpus.queries import query_id_of
from groundkit.labels.proposing import draw
from tests.conftest import REPO
from tests.labels.llm_server import LLMServer

KEY = "sk-test-SECRET-propose-42"


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.chdir(REPO)


def test_draw_spreads_over_documents_and_repeats_with_its_seed():
    passages = [Excerpt(document=d, start=i, end=i + 1, text="x") for d, count in (("a", 10), ("b", 2), ("c", 1))
                for i in range(count)]
    drawn = draw(passages, 6, seed=4)
    assert len(drawn) == 6 and len(set(drawn)) == 6
    assert {p.document for p in drawn[:3]} == {"a", "b", "c"}  # one of each before a second of any
    assert sum(p.document == "a" for p in drawn) == 3  # b is exhausted after two, c after one
    assert draw(passages, 6, seed=4) == drawn and draw(passages, 6, seed=5) != drawn
    assert len(draw(passages, 99, seed=1)) == 13


def propose(tmp_path, *extra: str) -> int:
    return main(["judgments", "propose", "--corpus", "evals/corpus", "--n", "12", "--seed", "3", "--out",
                 str(tmp_path / "proposed.jsonl"), "--set", "judge.backoff=0", *extra])


def test_proposals_over_http_resolve_are_cached_and_match_the_python_judge(tmp_path, capsys):
    assert propose(tmp_path / "py", "--judge", "python:examples.judge_example:make_judge") == 0
    capsys.readouterr()
    with LLMServer() as server:
        assert propose(tmp_path, "--judge", "openai:tiny", "--base-url", server.url) == 0
        printed = capsys.readouterr().out
        assert server.requests == 12 and "12 calls made, 0 answered from the cache, 1200 tokens used" in printed
        assert propose(tmp_path, "--judge", "openai:tiny", "--base-url", server.url, "--force") == 0
        assert server.requests == 12 and "0 calls made, 12 answered from the cache" in capsys.readouterr().out
    records = [json.loads(line) for line in (tmp_path / "proposed.jsonl").read_text().splitlines()]
    assert records and all(r["origin"] == "machine" and r["query_id"] == query_id_of(r["query"]) for r in records)
    judgments = check({d.path: d for d in _corpus()}, tmp_path / "proposed.jsonl", "evals/corpus")
    assert len(judgments) == len(records)  # every quote resolves exactly once, the file canonical
    python = [json.loads(line) for line in (tmp_path / "py" / "proposed.jsonl").read_text().splitlines()]
    assert [r["gold"] for r in records] == [p["gold"] for p in python]
    assert KEY not in printed


def _corpus():
    from groundkit.corpus.documents import load_corpus

    return load_corpus("evals/corpus")


def test_a_proposed_quote_not_in_its_passage_is_discarded_and_a_judge_without_propose_is_named(tmp_path, capsys):
    with LLMServer(answer={"query": "What is it?", "quote": "not a word of the passage"}) as server:
        assert propose(tmp_path, "--judge", "openai:tiny", "--base-url", server.url) == 1
    captured = capsys.readouterr()
    assert "none of the 12 proposals has a quote that resolves" in captured.err
    assert captured.err.count("the proposed quote is not verbatim: discarded") == 12
    assert not (tmp_path / "proposed.jsonl").exists()
    (tmp_path / "judge_without_propose.py").write_text(
        "def make(options):\n    return J()\nclass J:\n    def judge(self, q, p):\n        return {}\n")
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        assert propose(tmp_path, "--judge", "python:judge_without_propose:make") == 1
    finally:
        sys.path.remove(str(tmp_path))
    assert "has no propose(passage) method" in capsys.readouterr().err
