"""``groundkit judgments judge`` over the real HTTP client against a local OpenAI-compatible server, and python: judges.

Every fault ends in one message naming the query and the passage, exit 1, no judgments file, what was answered
cached; the API key's value appears in no output and no file, whatever happened.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from importlib import resources
from pathlib import Path

import pytest
import yaml

from groundkit.cli import main
from groundkit.errors import JudgeFault
from groundkit.labels.endpoint import Endpoint, retry_after
from tests.conftest import REPO, write_tiny_corpus
from tests.dvc_helpers import env
from tests.labels.llm_server import LLMServer

KEY = "sk-test-SECRET-0123456789abcdef"
EXAMPLE = "python:examples.judge_example:make_judge"


@pytest.fixture(scope="module")
def ranked(tmp_path_factory):
    """The tiny corpus, its judgments as the queries, and one run of them (chunks of 60 characters)."""
    root = tmp_path_factory.mktemp("ranked")
    corpus, judgments = write_tiny_corpus(root / "corpus", root / "judgments.jsonl")
    out = root / "bm25"
    assert main(["run", "--corpus", str(corpus), "--queries", str(judgments), "--out", str(out),
                 "--set", "chunk.size=60", "--set", "retrieve.depth=10", "--set",
                 "score.measures=[recall@1]", "--set", "score.headline=[recall@1]"]) == 0
    return corpus, judgments, out


def params_file(tmp_path: Path, judgments: Path, **judge) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "params.yaml"
    section = {"options": {"judgments": str(judgments), "false_positive_rate": 0.1, "false_negative_rate": 0.1},
               "backoff": 0.0, **judge}
    path.write_text(yaml.safe_dump({"judge": section}), encoding="utf-8")
    return path


def judge(ranked, tmp_path, *extra, out="machine.jsonl", depth=3, **judge_params) -> tuple[int, Path]:
    corpus, judgments, run = ranked
    params = params_file(tmp_path, judgments, **judge_params)
    target = tmp_path / out
    code = main(["judgments", "judge", "--queries", str(judgments), "--run", str(run), "--depth", str(depth),
                 "--corpus", str(corpus), "--out", str(target), "--params", str(params), *extra])
    return code, target


def cached(tmp_path: Path) -> int:
    return sum(1 for _ in (tmp_path / "judge-cache").glob("*/*.json"))


def no_key_anywhere(tmp_path: Path, *texts: str) -> None:
    for text in texts:
        assert KEY not in text
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.chdir(REPO)  # python:examples.judge_example is found from the repository's root


def test_http_judge_labels_as_the_python_judge_does_and_a_second_run_makes_no_call(ranked, tmp_path, capsys):
    code, by_python = judge(ranked, tmp_path / "py", "--judge", EXAMPLE)
    assert code == 0, capsys.readouterr().err
    with LLMServer(str(ranked[1])) as server:
        code, by_http = judge(ranked, tmp_path / "http", "--judge", "openai:tiny", "--base-url", server.url)
        assert code == 0, capsys.readouterr().err
        first = capsys.readouterr().out
        asked = server.answered
        pools = [json.loads(line) for line in (tmp_path / "http" / "machine.pool.jsonl").read_text().splitlines()]
        distinct = len({(p["query"], p["text"]) for p in pools})
        assert asked == server.requests == distinct == cached(tmp_path / "http") > 0
        assert f"{distinct} calls made, 0 answered from the cache, {100 * distinct} tokens used" in first
        # The real client path: the key in the header, structured output asked for, temperature 0.
        assert server.headers[0]["Authorization"] == f"Bearer {KEY}"
        assert server.bodies[0]["response_format"]["type"] == "json_schema"
        assert server.bodies[0]["temperature"] == 0 and server.bodies[0]["model"] == "tiny"
        code, _ = judge(ranked, tmp_path / "http", "--judge", "openai:tiny", "--base-url", server.url, "--force")
        assert code == 0
        assert server.requests == asked  # the second run asked nothing
        assert f"0 calls made, {distinct} answered from the cache" in capsys.readouterr().out
    shipped = resources.files("groundkit.labels").joinpath("prompts", "judge.txt").read_bytes()
    digest = hashlib.sha256(shipped).hexdigest()
    http = [json.loads(line) for line in by_http.read_text().splitlines()]
    python = [json.loads(line) for line in by_python.read_text().splitlines()]
    assert all(j["origin"] == "machine" and j["judge"] == "openai:tiny" and j["prompt_sha256"] == digest
               for j in http)
    strip = ("judge", "prompt_sha256")
    assert [{k: v for k, v in j.items() if k not in strip} for j in http] == [
        {k: v for k, v in j.items() if k not in strip} for j in python]
    no_key_anywhere(tmp_path, first)


def test_an_endpoint_without_structured_output_is_asked_plainly(ranked, tmp_path, capsys):
    with LLMServer(str(ranked[1]), structured=False) as server:
        code, out = judge(ranked, tmp_path, "--judge", "openai:tiny", "--base-url", server.url, concurrency=1)
        assert code == 0, capsys.readouterr().err
        assert server.requests == server.answered + 1  # one refusal of response_format, then plain requests
        assert "response_format" not in server.bodies[-1]
    assert out.is_file()


@pytest.mark.parametrize(("mode", "settings", "message"), [
    ("401", {}, "refused the key in $OPENAI_API_KEY: HTTP 401"),
    ("429", {"retries": 2}, "answered HTTP 429, 3 tries in all"),
    ("503", {"retries": 1}, "answered HTTP 503, 2 tries in all"),
    ("hang", {"timeout": 0.3, "retries": 1}, "within judge.timeout = 0.3 s, 2 tries in all"),
    ("not_json", {}, "the model answered something that is not JSON"),
    ("truncated", {}, "the answer was cut off at judge.max_tokens = 512 tokens"),
    ("cut", {}, "the model answered something that is not JSON"),
    ("grade", {}, "the judge's grade 7 is outside 0 to 3"),
    ("bad_body", {}, "answered something that is not a chat completion"),
])
def test_each_endpoint_fault_is_one_message_naming_the_pair_nothing_written_and_answers_kept(
        ranked, tmp_path, capsys, mode, settings, message):
    with LLMServer(str(ranked[1]), mode=mode, after=2) as server:
        code, out = judge(ranked, tmp_path, "--judge", "openai:tiny", "--base-url", server.url, concurrency=1,
                          **settings)
        answered = server.answered
    captured = capsys.readouterr()
    assert code == 1
    error = captured.err.strip().splitlines()
    assert error[0].startswith("error: judge 'openai:tiny' on query q"), captured.err
    assert ", passage " in error[0] and message in captured.err
    assert error[-1].startswith("  fix: ") and "Traceback" not in captured.err
    assert not out.exists() and not (tmp_path / "machine.pool.jsonl").exists()
    assert cached(tmp_path) == answered == 2  # the two answered before the fault stay cached
    no_key_anywhere(tmp_path, captured.out, captured.err)


def test_an_endpoint_that_is_down_is_named(ranked, tmp_path, capsys):
    with LLMServer(str(ranked[1])) as server:
        url = server.url
    code, out = judge(ranked, tmp_path, "--judge", "openai:tiny", "--base-url", url, retries=1)
    captured = capsys.readouterr()
    assert code == 1 and f"cannot reach {url} (ConnectError" in captured.err and "2 tries in all" in captured.err
    assert not out.exists()
    no_key_anywhere(tmp_path, captured.out, captured.err)


def test_a_missing_key_is_named_by_its_variable_not_sent(ranked, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    with LLMServer(str(ranked[1]), mode="401") as server:
        code, _ = judge(ranked, tmp_path, "--judge", "openai:tiny", "--base-url", server.url)
        assert "Authorization" not in server.headers[0]
    assert code == 1 and "refused no key ($OPENAI_API_KEY is not set): HTTP 401" in capsys.readouterr().err


def test_retries_wait_as_retry_after_says_and_back_off_otherwise():
    with LLMServer(mode="429", faults=2, retry_after="3", answer={"grade": 1, "quote": "x"}) as server:
        waits: list[float] = []
        endpoint = Endpoint(base_url=server.url, model="m", api_key=KEY, key_env="K", timeout=5, retries=4,
                            backoff=0.5, max_tokens=64, structured=True, sleep=waits.append)
        assert json.loads(endpoint.complete("Answer with", {})[0]) == {"grade": 1, "quote": "x"}
        assert waits == [3.0, 3.0] and server.requests == 3
    with LLMServer(mode="500", faults=3, answer={"grade": 1, "quote": "x"}, retry_after="soon") as server:
        waits = []
        endpoint = Endpoint(base_url=server.url, model="m", api_key=KEY, key_env="K", timeout=5, retries=2,
                            backoff=0.5, max_tokens=64, structured=True, sleep=waits.append)
        with pytest.raises(JudgeFault, match="HTTP 500, 3 tries in all"):
            endpoint.complete("Answer with", {})
        assert waits == [0.5, 1.0] and server.requests == 3  # an unreadable Retry-After: the backoff, doubled
    assert retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
    assert retry_after("100000") == 120.0 and retry_after("-3") == 0.0 and retry_after("nan") is None


def test_a_quote_not_in_its_passage_is_discarded_counted_and_named(ranked, tmp_path, capsys):
    with LLMServer(str(ranked[1]), answer={"grade": 2, "quote": "words the passage never held"}) as server:
        code, out = judge(ranked, tmp_path, "--judge", "openai:tiny", "--base-url", server.url)
    captured = capsys.readouterr()
    assert code == 0
    pools = (tmp_path / "machine.pool.jsonl").read_text().splitlines()
    assert f"0 resolved (0 extended to be unique), {len(pools)} discarded ({len(pools)} not verbatim" in captured.out
    notes = [line for line in captured.err.splitlines() if line.startswith("note: ")]
    assert len(notes) == len(pools)
    assert notes[0].startswith("note: query q1, passage ") and notes[0].endswith(
        "the quote is not verbatim in the passage: discarded")
    # Nothing relevant anywhere: every query a no_answer with pool_empty, listed.
    assert all(json.loads(line)["pool_empty"] for line in out.read_text().splitlines())
    assert "4 queries with nothing relevant in the pool" in captured.out


def test_a_repeated_quote_is_extended_inside_its_passage_until_it_is_unique():
    from groundkit.corpus.passage import Document, Excerpt
    from groundkit.labels.judging import NOT_UNIQUE, NOT_VERBATIM, resolve_quote

    text = "the lease holder renews. Later the lease holder moves on."
    document = Document(path="a.md", text=text)
    passage = Excerpt(document="a.md", start=25, end=len(text), text=text[25:])
    start, end, words = resolve_quote(document, passage, " the lease holder ")
    assert text[start:end] == "the lease holder moves" and words == 1  # one word to the right made it unique
    assert resolve_quote(document, passage, "renews") == NOT_VERBATIM  # in the document, not in this passage
    whole = Excerpt(document="a.md", start=0, end=3, text="the")
    assert resolve_quote(document, whole, "the") == NOT_UNIQUE


PLUGINS = {
    "raises": ("def make(options):\n    return J()\nclass J:\n    def judge(self, query, passage):\n"
               "        raise ValueError('model overloaded')\n", "judge(query, passage) raised ValueError: "
               "'model overloaded'"),
    "exits": ("import sys\ndef make(options):\n    return J()\nclass J:\n    def judge(self, query, passage):\n"
              "        sys.exit(0)\n", "tried to end the process"),
    "wrong": ("def make(options):\n    return J()\nclass J:\n    def judge(self, query, passage):\n"
              "        return (2, 'x')\n", "the judge answered (2, 'x'), not an object with"),
    "quote": ("def make(options):\n    return J()\nclass J:\n    def judge(self, query, passage):\n"
              "        return {'grade': 1, 'quote': 3}\n", "the judge's quote is 3, not a string or null"),
    "nojudge": ("def make(options):\n    return object()\n", "which has no judge(query, passage) method"),
    "import": ("raise ImportError('no torch here')\n", "importing module"),
}


@pytest.mark.parametrize("name", sorted(PLUGINS))
def test_a_python_judge_that_raises_or_breaks_its_contract_is_one_message(ranked, tmp_path, capsys, monkeypatch,
                                                                           name):
    module = f"judge_plugin_{name}"
    (tmp_path / f"{module}.py").write_text(PLUGINS[name][0], encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    code, out = judge(ranked, tmp_path, "--judge", f"python:{module}:make")
    captured = capsys.readouterr()
    assert code == 1 and PLUGINS[name][1] in captured.err, captured.err
    assert captured.err.startswith(f"error: judge 'python:{module}:make'") and "Traceback" not in captured.err
    if name not in ("nojudge", "import"):
        assert "on query q1, passage " in captured.err
    assert not out.exists()


def test_ctrl_c_stops_with_the_answers_kept_and_the_next_run_asks_only_the_rest(ranked, tmp_path, capsys,
                                                                              monkeypatch):
    (tmp_path / "judge_interrupted.py").write_text(
        "import examples.judge_example as e\ncalls = []\n"
        "def make(options):\n    inner = e.make_judge(options)\n    return J(inner)\n"
        "class J:\n    def __init__(self, inner):\n        self.inner = inner\n"
        "    def judge(self, query, passage):\n        calls.append(1)\n"
        "        if len(calls) == 3:\n            raise KeyboardInterrupt\n"
        "        return self.inner.judge(query, passage)\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    code, out = judge(ranked, tmp_path, "--judge", "python:judge_interrupted:make")
    assert code == 130 and "interrupted" in capsys.readouterr().err
    assert not out.exists() and cached(tmp_path) == 2
    import judge_interrupted

    judge_interrupted.calls.clear()
    judge_interrupted.calls.extend([1] * 10)  # past the interruption
    code, out = judge(ranked, tmp_path, "--judge", "python:judge_interrupted:make")
    printed = capsys.readouterr().out
    total = len(out.with_name("machine.pool.jsonl").read_text().splitlines())
    assert code == 0 and f"{total - 2} calls made, 2 answered from the cache" in printed


def test_max_calls_stops_and_the_same_command_goes_on(ranked, tmp_path, capsys):
    code, out = judge(ranked, tmp_path, "--judge", EXAMPLE, "--max-calls", "2")
    assert code == 1 and "--max-calls 2 reached: 2 calls made and cached" in capsys.readouterr().err
    assert not out.exists() and cached(tmp_path) == 2
    code, _ = judge(ranked, tmp_path, "--judge", "openai:never", "--dry-run", "--base-url", "http://127.0.0.1:9/v1")
    printed = capsys.readouterr().out
    assert code == 0 and not out.exists()
    total = int(printed.split(" pooled passages")[0])
    assert f"{total} distinct questions, 0 in the cache: would make {total} calls" in printed  # other judge
    assert f"at most {total * 512} output tokens" in printed
    code, _ = judge(ranked, tmp_path, "--judge", EXAMPLE, "--dry-run")
    assert f"2 in the cache: would make {total - 2} calls" in capsys.readouterr().out
    code, _ = judge(ranked, tmp_path, "--judge", EXAMPLE)
    assert code == 0 and f"{total - 2} calls made, 2 answered from the cache" in capsys.readouterr().out


def _judge_process(ranked, tmp_path: Path, url: str, out: str) -> subprocess.Popen[str]:
    corpus, judgments, run = ranked
    params = params_file(tmp_path, judgments, concurrency=1)
    environment = env() | {"OPENAI_API_KEY": KEY}
    return subprocess.Popen([sys.executable, "-m", "groundkit.cli", "judgments", "judge", "--queries", str(judgments),
                             "--run", str(run), "--depth", "5", "--corpus", str(corpus), "--out",
                             str(tmp_path / out), "--params", str(params), "--judge", "openai:tiny", "--base-url",
                             url, "--cache", str(tmp_path / "judge-cache")], cwd=REPO, env=environment,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_run_killed_halfway_resumes_with_only_the_missing_calls(ranked, tmp_path, capsys):
    with LLMServer(str(ranked[1]), delay=0.05) as server:
        process = _judge_process(ranked, tmp_path, server.url, "machine.jsonl")
        deadline = time.monotonic() + 60
        while cached(tmp_path) < 4 and time.monotonic() < deadline:
            time.sleep(0.005)
        os.kill(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        before = server.settled()  # the killed run's last request included, if it reached the server
        kept = cached(tmp_path)
        assert kept >= 4 and not (tmp_path / "machine.jsonl").exists()
        code, _ = judge(ranked, tmp_path, "--judge", "openai:tiny", "--base-url", server.url, depth=5)
        printed = capsys.readouterr().out
        total = len((tmp_path / "machine.pool.jsonl").read_text().splitlines())
        distinct = len({(json.loads(r)["query"], json.loads(r)["text"])
                        for r in (tmp_path / "machine.pool.jsonl").read_text().splitlines()})
        assert code == 0 and total >= distinct > kept
        assert server.requests - before == distinct - kept  # only the missing calls
        assert f"{distinct - kept} calls made, {kept} answered from the cache" in printed
    no_key_anywhere(tmp_path, stdout, stderr, printed)


def test_two_runs_sharing_one_cache_lose_nothing(ranked, tmp_path, capsys):
    with LLMServer(str(ranked[1]), delay=0.01) as server:
        processes = [_judge_process(ranked, tmp_path, server.url, f"m{i}.jsonl") for i in range(2)]
        results = [p.communicate() for p in processes]
        assert [p.returncode for p in processes] == [0, 0], results
        assert (tmp_path / "m0.jsonl").read_bytes() == (tmp_path / "m1.jsonl").read_bytes()
        rows = (tmp_path / "m0.pool.jsonl").read_text().splitlines()
        distinct = len({(json.loads(r)["query"], json.loads(r)["text"]) for r in rows})
        assert cached(tmp_path) == distinct
        before = server.requests
        code, _ = judge(ranked, tmp_path, "--judge", "openai:tiny", "--base-url", server.url, depth=5)
        assert code == 0 and server.requests == before


def test_a_fault_among_parallel_calls_stops_the_rest_and_keeps_what_was_answered(ranked, tmp_path, capsys):
    assert judge(ranked, tmp_path, "--judge", EXAMPLE, "--dry-run", depth=10)[0] == 0
    total = int(capsys.readouterr().out.split("would make ")[1].split(" call")[0])
    with LLMServer(str(ranked[1]), mode="grade", after=1, delay=0.05) as server:
        code, out = judge(ranked, tmp_path, "--judge", "openai:tiny", "--base-url", server.url, concurrency=2,
                          depth=10)
        answered, requests = server.answered, server.requests
    captured = capsys.readouterr()
    assert code == 1 and "the judge's grade 7 is outside 0 to 3" in captured.err and not out.exists()
    assert captured.out == ""  # no summary of a run that failed
    assert cached(tmp_path) == answered >= 1
    assert requests <= 1 + 2 < total  # the calls not yet started when the fault came were never made
    no_key_anywhere(tmp_path, captured.out, captured.err)


def test_a_prompt_of_your_own_is_used_and_its_digest_is_in_every_label_and_key(ranked, tmp_path, capsys):
    prompt = tmp_path / "prompt.txt"
    shipped = resources.files("groundkit.labels").joinpath("prompts", "judge.txt").read_text(encoding="utf-8")
    prompt.write_text("Be strict.\n" + shipped, encoding="utf-8")
    with LLMServer(str(ranked[1])) as server:
        code, out = judge(ranked, tmp_path, "--judge", "openai:tiny", "--base-url", server.url, prompt=str(prompt))
        assert code == 0 and server.bodies[0]["messages"][0]["content"].startswith("Be strict.\nYou judge")
        digest = hashlib.sha256(prompt.read_bytes()).hexdigest()
        assert {json.loads(line)["prompt_sha256"] for line in out.read_text().splitlines()} == {digest}
        before = server.requests
        code, _ = judge(ranked, tmp_path, "--judge", "openai:tiny", "--base-url", server.url, "--force")
        assert code == 0 and server.requests == 2 * before  # the shipped prompt is another question: asked again
    capsys.readouterr()
    prompt.write_text("no placeholders\n", encoding="utf-8")
    code, _ = judge(ranked, tmp_path, "--judge", "openai:tiny", "--force", prompt=str(prompt))
    err = capsys.readouterr().err
    assert code == 1 and "key 'judge.prompt'" in err and "lacks ${query}, ${passage}" in err


@pytest.mark.parametrize(("spec", "message"), [
    ("openai:", "names no model after openai:"),
    ("gpt-4", "'gpt-4' is not a judge groundkit knows"),
    ("python:mod", "is not python:MODULE:FACTORY"),
])
def test_a_judge_name_groundkit_does_not_know_is_refused(ranked, tmp_path, capsys, spec, message):
    code, _ = judge(ranked, tmp_path, "--judge", spec)
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("error: --judge: ") and message in err
    code, _ = judge(ranked, tmp_path, model=spec)
    err = capsys.readouterr().err
    assert code == 1 and "key 'judge.model'" in err and message in err


def test_a_progress_bar_counts_the_calls_on_a_terminal_and_nothing_is_drawn_elsewhere(ranked, tmp_path, capsys,
                                                                                      monkeypatch):
    from groundkit.console import progress as _progress

    code, _ = judge(ranked, tmp_path / "quiet", "--judge", EXAMPLE)
    assert code == 0 and "call" not in capsys.readouterr().err  # not a terminal: no bar
    monkeypatch.setattr(_progress, "enabled", lambda: True)
    monkeypatch.setattr(_progress, "DELAY_S", 0)
    code, out = judge(ranked, tmp_path / "tty", "--judge", EXAMPLE)
    total = len(out.with_name("machine.pool.jsonl").read_text().splitlines())
    err = capsys.readouterr().err
    assert code == 0 and err.startswith("\rjudge: ") and f"/{total} [" in err and "call/s" in err
