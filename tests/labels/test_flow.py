"""The flow of docs/llm-labels.md on the committed corpus: the example judge (python:, then the same answers over
HTTP) labels every answerable query's pool, the labels resolve, kappa against the committed judgments is printed,
and a second run makes no call."""

from __future__ import annotations

import json

import pytest
from sklearn.metrics import cohen_kappa_score

from examples.judge_example import make_judge
from groundkit.cli import main
from groundkit.corpus.authoring import check
from groundkit.corpus.documents import load_corpus
from groundkit.corpus.judgments import load_judgments
from tests.conftest import REPO
from tests.labels.llm_server import LLMServer

DEPTH = 3
EXAMPLE = "python:examples.judge_example:make_judge"


@pytest.fixture(scope="module")
def flow(tmp_path_factory):
    root = tmp_path_factory.mktemp("flow")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(REPO)
        assert main(["run", "--corpus", "evals/corpus", "--queries", "evals/judgments.jsonl", "--out",
                     str(root / "bm25")]) == 0
    return root


def _judge(root, out, *extra):
    return main(["judgments", "judge", "--queries", "evals/judgments.jsonl", "--run", str(root / "bm25"), "--depth",
                 str(DEPTH), "--corpus", "evals/corpus", "--out", str(out), "--cache", str(out.parent / "cache"),
                 *extra])


def test_the_example_judge_labels_every_answerable_pool_and_its_labels_resolve(flow, tmp_path, capsys,
                                                                               monkeypatch):
    monkeypatch.chdir(REPO)
    out = tmp_path / "machine.jsonl"
    assert _judge(flow, out, "--judge", EXAMPLE) == 0
    first = capsys.readouterr().out
    rows = [json.loads(line) for line in out.with_name("machine.pool.jsonl").read_text().splitlines()]
    answerable = {j.query_id for j in load_judgments("evals/judgments.jsonl") if j.gold}
    assert answerable <= {r["query_id"] for r in rows}  # every answerable query has a pool, all of it judged
    distinct = len({(r["query"], r["text"]) for r in rows})
    assert f"{distinct} calls made, 0 answered from the cache" in first
    assert "bm25  judged 1.0000 in the top 3, under the machine labels" in first
    corpus = {d.path: d for d in load_corpus("evals/corpus")}
    assert len(check(corpus, out, "evals/corpus")) == 162  # every quote resolves exactly once, canonical form
    # The known error rates: of the pairs the error-free judge calls relevant, about 10% lost; of the rest, 10% gained.
    truth = make_judge({"judgments": "evals/judgments.jsonl", "false_positive_rate": 0, "false_negative_rate": 0})
    relevant = [r for r in rows if truth.truth(r["query"], r["text"])["grade"]]
    irrelevant = [r for r in rows if not truth.truth(r["query"], r["text"])["grade"]]
    lost = sum(1 for r in relevant if r["grade"] == 0) / len(relevant)
    gained = sum(1 for r in irrelevant if r["grade"] > 0) / len(irrelevant)
    assert 0.03 < lost < 0.2 and 0.05 < gained < 0.15, (lost, gained)
    # The second run asks nothing.
    assert _judge(flow, out, "--judge", EXAMPLE, "--force") == 0
    assert f"0 calls made, {distinct} answered from the cache" in capsys.readouterr().out
    # Kappa against the committed judgments, printed; recomputed here with scikit-learn by the overlap rule.
    assert main(["judgments", "agreement", "--machine", str(out), "--judgments", "evals/judgments.jsonl",
                 "--corpus", "evals/corpus"]) == 0
    printed = capsys.readouterr().out
    human = {j.query_id: j for j in load_judgments("evals/judgments.jsonl")}
    machine = {j.query_id: j for j in load_judgments(out)}

    def relevant_under(judgment, row):
        for gold in judgment.gold:
            if gold.document != row["document"]:
                continue
            start = corpus[gold.document].text.index(gold.quote)
            if start < row["end"] and row["start"] < start + len(gold.quote):
                return 1
        return 0

    judge = [relevant_under(machine[r["query_id"]], r) for r in rows]
    person = [relevant_under(human[r["query_id"]], r) for r in rows]
    assert f"Cohen's kappa {cohen_kappa_score(judge, person):.3f}, 95% bootstrap interval [" in printed


def test_over_http_the_same_labels_and_a_second_run_makes_no_call(flow, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-flow-key")
    by_python = tmp_path / "py" / "machine.jsonl"
    by_python.parent.mkdir()
    assert _judge(flow, by_python, "--judge", EXAMPLE) == 0
    out = tmp_path / "http" / "machine.jsonl"
    out.parent.mkdir()
    with LLMServer() as server:
        assert _judge(flow, out, "--judge", "openai:example", "--base-url", server.url) == 0
        asked = server.requests
        rows = out.with_name("machine.pool.jsonl").read_text().splitlines()
        assert asked == server.answered == len({(json.loads(r)["query"], json.loads(r)["text"]) for r in rows})
        assert _judge(flow, out, "--judge", "openai:example", "--base-url", server.url, "--force") == 0
        assert server.requests == asked  # counted by the server: zero calls
    capsys.readouterr()
    strip = ("judge", "prompt_sha256")
    http = [{k: v for k, v in json.loads(line).items() if k not in strip} for line in out.read_text().splitlines()]
    python = [{k: v for k, v in json.loads(line).items() if k not in strip}
              for line in by_python.read_text().splitlines()]
    assert http == python
