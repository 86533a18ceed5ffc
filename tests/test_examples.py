"""The worked example: LangChain-style Documents turned into a run file and scored, offline."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import REPO
from tests.dvc_helpers import env

SCRIPT = REPO / "examples" / "langchain_to_run.py"
COMMITTED = REPO / "examples" / "runs" / "langchain_example.jsonl"


def _script(*args: str) -> None:
    subprocess.run([sys.executable, str(SCRIPT), "--corpus", "evals/corpus", "--judgments", "evals/judgments.jsonl",
                    *args], cwd=REPO, env=env(), check=True, capture_output=True)


def _score(run_file, out) -> dict:
    result = subprocess.run(["groundkit", "score-run", str(run_file), "--corpus", "evals/corpus", "--judgments",
                             "evals/judgments.jsonl", "--params", "params.yaml", "--out", str(out)],
                            cwd=REPO, env=env(), capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    return json.loads((out / "detail.json").read_text())


def test_example_reproduces_the_committed_run_and_scores_the_same_by_offsets_and_text(tmp_path):
    _script("--out", str(tmp_path / "offsets.jsonl"))
    _script("--out", str(tmp_path / "text.jsonl"), "--text")
    assert (tmp_path / "offsets.jsonl").read_bytes() == COMMITTED.read_bytes()
    first = json.loads((tmp_path / "text.jsonl").read_text().splitlines()[0])
    assert set(first) == {"query_id", "rank", "document", "text"}
    by_offsets = _score(tmp_path / "offsets.jsonl", tmp_path / "a")
    by_text = _score(tmp_path / "text.jsonl", tmp_path / "b")
    assert by_offsets == by_text
    assert by_offsets["answerable"]["queries"] == 144
    # A query the run does not mention is an abstention: the toy retriever finds none of their words.
    in_run = {json.loads(line)["query_id"] for line in COMMITTED.read_text().splitlines()}
    judgments = [json.loads(line) for line in (REPO / "evals" / "judgments.jsonl").read_text().splitlines()]
    missing = [j for j in judgments if j["query_id"] not in in_run]
    assert by_offsets["no_answer"]["abstained"] == len(missing) == 18
    assert all(j["category"] == "no_answer" for j in missing)
