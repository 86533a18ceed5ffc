"""`groundkit run` and `groundkit audit` end to end, as a user runs them: exit codes and messages."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.dvc_helpers import REPO, env

# The tiny corpus is trivially easy by design (three documents); the audit would reject it.
LENIENT = ("--set", "audit.max_trivial_share=1.0")


def groundkit(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["groundkit", *args, *LENIENT], capture_output=True, text=True, env=env(), cwd=cwd,
                          check=False)


def test_run_writes_artifacts_and_reports(tiny_corpus, tmp_path):
    corpus, judgments = tiny_corpus
    out = tmp_path / "out"
    result = groundkit("run", "--corpus", str(corpus), "--judgments", str(judgments), "--out", str(out),
                       "--set", "chunk.size=60")
    assert result.returncode == 0, result.stderr
    metrics = json.loads((out / "detail.json").read_text())
    assert metrics["answerable"]["queries"] == 3
    # Separability: q1 and q2's top scores beat q4's empty ranking (minus infinity); q3 retrieved nothing
    # either and ties it, a half: (1 + 1 + 0.5) / 3.
    assert metrics["no_answer"] == {"queries": 1, "abstained": 1, "abstention_rate": 1.0, "separability": 0.833333}
    assert sorted(metrics["by_category"]) == ["factoid", "lexical_gap", "multi_passage", "no_answer"]
    run_metadata = json.loads((out / "run.json").read_text())
    assert run_metadata["params"]["chunk"]["size"] == 60
    assert str(tmp_path) not in (out / "run.json").read_text()  # no absolute paths in artifacts


def test_run_prints_an_aligned_readout_the_engine_and_its_warnings(tiny_corpus, tmp_path):
    corpus, judgments = tiny_corpus
    out = tmp_path / "out"
    result = groundkit("run", "--corpus", str(corpus), "--judgments", str(judgments), "--out", str(out),
                       "--set", "chunk.size=60")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "retriever bm25, on the local engine"
    # q3 shares no word with the corpus: BM25 retrieves nothing for it.
    assert lines[1].split() == ["answerable", "queries", "3", "false_abstentions", "1", "unreachable", "0"]
    headline = json.loads((out / "metrics.json").read_text())
    assert lines[3].split() == ["headline", *(part for k, v in headline.items() for part in (k, f"{v:.4f}"))]
    assert lines[-1] == f"artifacts written to {out}"
    assert max(map(len, lines)) <= 100
    # The tiny corpus cuts into fewer chunks than the largest k (10): recall@10 is trivially 1.0.
    chunks = len((out / "chunks.jsonl").read_text().splitlines())
    assert chunks <= 10
    # Issue 35 item 13: every line groundkit run prints, stdout and stderr (warnings, audit findings), fits 100
    # columns; a long message wraps, its continuation indented two spaces.
    assert max(map(len, result.stderr.splitlines())) <= 100, result.stderr
    assert any(line.startswith("audit: trivial: ") for line in result.stderr.splitlines())
    messages = []
    for line in result.stderr.splitlines():
        if line.startswith("  ") and messages:
            messages[-1] += " " + line.strip()
        else:
            messages.append(line)
    warnings = [message for message in messages if message.startswith("warning: ")]
    assert warnings == [f"warning: the corpus has {chunks} chunks, no more than the largest cut-off (k = 10): "
                        "recall@10 is 1.0 for any query that retrieves them all, whatever the ranking; add "
                        "documents, or use smaller chunks",
                        "warning: the run answers 2 of 3 answerable queries: 1 retrieved nothing and scores 0 on "
                        "every measure (false_abstentions in detail.json; a query that shares no word with the "
                        "corpus, or a run file that leaves queries out)"]


def test_an_external_run_that_answers_one_query_is_warned_about(tmp_path):
    from tests.conftest import REPO

    lines = (REPO / "examples" / "runs" / "langchain_example.jsonl").read_text().splitlines()
    partial = tmp_path / "q001-only.jsonl"
    partial.write_text("".join(line + "\n" for line in lines if json.loads(line)["query_id"] == "q001"))
    result = groundkit("score-run", str(partial), "--corpus", str(REPO / "evals" / "corpus"), "--judgments",
                       str(REPO / "evals" / "judgments.jsonl"), "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    detail = json.loads((tmp_path / "out" / "detail.json").read_text())["answerable"]
    assert (detail["queries"], detail["false_abstentions"]) == (144, 143)
    warnings = [line for line in result.stderr.replace("\n  ", " ").splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 1 and warnings[0].startswith(
        "warning: the run answers 1 of 144 answerable queries: 143 retrieved nothing and score 0 on every measure")


def _break(corpus: Path, judgments: Path, case: str) -> list[str]:
    """Apply one kind of damage; return extra CLI arguments."""
    lines = judgments.read_text().splitlines()
    first = json.loads(lines[0])
    if case == "invalid json":
        lines[1] = lines[1][:-1]
    elif case == "quote not found":
        first["gold"][0]["quote"] = "Incremental backups run daily"
        lines[0] = json.dumps(first)
    elif case == "quote twice":
        first["gold"][0]["quote"] = "backup"  # "full backup runs" and "Incremental backups"
        lines[0] = json.dumps(first)
    elif case == "document missing":
        first["gold"][0]["document"] = "ops/restore.md"
        lines[0] = json.dumps(first)
    elif case == "document escapes root":
        first["gold"][0]["document"] = "../judgments.jsonl"
        lines[0] = json.dumps(first)
    elif case == "crlf document":
        (corpus / "isolation.md").write_bytes(b"Snapshot isolation.\r\nWrite skew is possible under it.\r\n")
    elif case == "empty document":
        (corpus / "empty.md").write_text("  \n")
    elif case == "invalid utf-8 document":
        (corpus / "latin1.md").write_bytes("caf\xe9 snapshot".encode("latin-1"))
    elif case == "unsorted ids":
        lines[0], lines[1] = lines[1], lines[0]
    elif case == "no_answer leaks":
        last = json.loads(lines[-1])
        last["query"] = "snapshot sourdough"
        lines[-1] = json.dumps(last)
        judgments.write_text("\n".join(lines) + "\n")
        return ["--set", "audit.no_answer_shares_words=error"]  # warn, the default, reports it and runs
    elif case == "bad param":
        return ["--set", "chunk.overlap=999"]
    elif case == "unknown param":
        return ["--set", "chunk.sise=400"]
    elif case == "depth below ks":
        return ["--set", "retrieve.depth=3"]
    judgments.write_text("\n".join(lines) + "\n")
    return []


CASES = {
    "invalid json": ("judgments.jsonl:2", "invalid JSON"),
    "quote not found": ("judgments.jsonl:1", "quote not found"),
    "quote twice": ("judgments.jsonl:1", "occurs 2 times"),
    "document missing": ("judgments.jsonl:1", "is not a file in the corpus"),
    "document escapes root": ("judgments.jsonl:1", "not a corpus-relative path"),
    "crlf document": ("isolation.md:1", "CRLF"),
    "empty document": ("empty.md", "is empty"),
    "invalid utf-8 document": ("latin1.md:1", "not valid UTF-8"),
    "unsorted ids": ("judgments.jsonl:2", "ascending order"),
    "no_answer leaks": ("judgments.jsonl:4", "shares tokens with the corpus"),
    "bad param": ("key 'chunk'", "must be smaller than size"),
    "unknown param": ("key 'chunk.sise'", "not a known field"),
    "depth below ks": ("key 'retrieve.depth'", "smaller than the deepest k of score.measures"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_gives_one_message_and_writes_nothing(tiny_corpus, tmp_path, case):
    corpus, judgments = tiny_corpus
    extra = _break(corpus, judgments, case)
    out = tmp_path / "out"
    result = groundkit("run", "--corpus", str(corpus), "--judgments", str(judgments), "--out", str(out), *extra)
    where, what = CASES[case]
    assert result.returncode == 1
    assert result.stderr.startswith("error: ")
    assert where in result.stderr and what in result.stderr
    assert "fix:" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".groundkit")] == []


@pytest.mark.parametrize(("text", "key", "what"), [
    ("chunk:\n  size: -1\n", "chunk.size", "greater than 0"),  # found while loading the file
    # Found only when the run needs them, long after loading: the error must still name other.yaml.
    ("retrieve:\n  retriever: python:no_such_hygiene_module:make\n", "retrieve.retriever", "no_such_hygiene_module"),
    ("retrieve:\n  retriever: dense\ndense:\n  model: no-such-model-package\n", "dense.model", "no-such-model"),
])
def test_params_errors_name_the_file_params_names(tiny_corpus, tmp_path, text, key, what):
    corpus, judgments = tiny_corpus
    other = tmp_path / "other.yaml"
    other.write_text(text, encoding="utf-8")
    result = groundkit("run", "--params", str(other), "--corpus", str(corpus), "--judgments", str(judgments),
                       "--out", str(tmp_path / "out"))
    assert result.returncode == 1
    assert result.stderr.startswith(f"error: {other}: key '{key}': "), result.stderr
    assert what in result.stderr
    assert "params.yaml:" not in result.stderr  # no location in a file that was not read


def test_debug_flag_shows_the_traceback(tiny_corpus, tmp_path):
    corpus, judgments = tiny_corpus
    _break(corpus, judgments, "quote not found")
    result = groundkit("run", "--debug", "--corpus", str(corpus), "--judgments", str(judgments),
                       "--out", str(tmp_path / "o"))
    assert result.returncode == 1 and "Traceback" in result.stderr


def test_audit_command_prints_table_and_fails_on_leaks(tiny_corpus):
    corpus, judgments = tiny_corpus
    ok = groundkit("audit", "--corpus", str(corpus), "--judgments", str(judgments))
    # q3 shares no word with the corpus at all: keyword search cannot find it, so it is not trivial.
    assert ok.returncode == 0 and "trivial share 66.7% of 3 answerable" in ok.stdout
    strict = _break(corpus, judgments, "no_answer leaks")
    bad = groundkit("audit", "--corpus", str(corpus), "--judgments", str(judgments), *strict)
    assert bad.returncode == 1 and "'snapshot'" in bad.stderr


def test_every_command_that_reads_a_corpus_takes_its_include_and_exclude_patterns(tmp_path):
    from tests.corpus.test_documents import documentation_folder

    docs = documentation_folder(tmp_path / "docs")
    judgments = tmp_path / "judgments.jsonl"
    judgments.write_text(json.dumps({"query_id": "q1", "query": "what happens to a failed deploy",
                                     "category": "factoid", "gold": [{"document": "guides/deploy.md",
                                                                      "quote": "A failed deploy is rolled back."}]})
                         + "\n", encoding="utf-8")
    inputs = ("--corpus", str(docs), "--judgments", str(judgments))
    leave_out = ("--set", "corpus.exclude=['*.pdf', '*.docx', '*.png', '*.html']")
    commands = {"run": ("run", *inputs, "--out", str(tmp_path / "out")), "audit": ("audit", *inputs),
                "check": ("judgments", "check", *inputs),
                "add": ("judgments", "add", *inputs, "--query", "q", "--document", "notes.txt", "--search", "nightly",
                        "--dry-run")}
    for name, command in commands.items():
        refused = groundkit(*command)
        assert refused.returncode == 1 and "1 PDF file (manual.pdf)" in refused.stderr, (name, refused.stderr)
        read = groundkit(*command, *leave_out)
        assert read.returncode == 0, (name, read.stderr)
    documents = [json.loads(line)["path"] for line in (tmp_path / "out" / "documents.jsonl").read_text().splitlines()]
    assert documents == ["drafts/wip.md", "guides/api.rst", "guides/deploy.md", "notes.txt"]
    params = tmp_path / "params.yaml"
    params.write_text("corpus:\n  exclude: ['*.pdf', '*.docx', '*.png', '*.html', 'drafts']\n", encoding="utf-8")
    assert groundkit(*commands["check"], "--params", str(params)).returncode == 0


def test_every_subcommands_help_page_says_what_it_does():
    import argparse

    from groundkit.cli import build_parser

    def commands(parser: argparse.ArgumentParser, name: str):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                said = {choice.dest: choice.help for choice in action._choices_actions}
                for sub, command in action.choices.items():
                    yield f"{name} {sub}", said[sub], command
                    yield from commands(command, f"{name} {sub}")

    found = list(commands(build_parser(), "groundkit"))
    assert len(found) >= 17
    for name, line, command in found:
        page = " ".join(command.format_help().split())
        # The page opens, after its usage, with the command's own line from the list of commands, as a sentence.
        opening = " ".join((line[0].upper() + line[1:]).replace("%%", "%").split())
        assert opening in page, name
        before = page[:page.index(opening)]
        assert before.startswith("usage: ") and "options:" not in before and "arguments:" not in before, name
    shown = subprocess.run(["groundkit", "run", "--help"], capture_output=True, text=True, env=env(), check=True)
    assert "Evaluate a retriever on a corpus and judgments" in shown.stdout


@pytest.mark.parametrize(("case", "suggestion"), [
    ("params key", "key 'chunk.sise': is not a known field (a typo?); did you mean chunk.size?"),
    ("params section", "key 'chunkk': is not a known field (a typo?); did you mean chunk?"),
    ("judgment field", "key 'gold.0.qoute': is not a known field (a typo?); did you mean gold.0.quote?"),
    ("gold document", "document 'ops/backups.md' is not a file in the corpus root"),
    ("corpus path", "corpus root does not exist; did you mean"),
    ("judgments path", "judgments file does not exist; did you mean"),
    ("params path", "params file does not exist; did you mean"),
])
def test_a_misspelt_key_or_path_gets_a_did_you_mean(tiny_corpus, tmp_path, case, suggestion):
    corpus, judgments = tiny_corpus
    params = tmp_path / "params.yaml"
    params.write_text("chunk:\n  size: 60\n", encoding="utf-8")
    args = {"corpus": str(corpus), "judgments": str(judgments), "params": str(params)}
    sets: list[str] = []
    if case == "params key":
        sets = ["--set", "chunk.sise=400"]
    elif case == "params section":
        sets = ["--set", "chunkk.size=400"]
    elif case in ("judgment field", "gold document"):
        first, *rest = judgments.read_text().splitlines()
        first = first.replace('"quote"', '"qoute"') if case == "judgment field" else \
            first.replace("ops/backup.md", "ops/backups.md")
        judgments.write_text("\n".join([first, *rest]) + "\n")
    else:
        key = case.split()[0]
        args[key] = args[key][:-2] + args[key][-1]  # one letter dropped: corpu, judgments.jsonl -> judgments.jsol
    result = groundkit("run", "--corpus", args["corpus"], "--judgments", args["judgments"], "--params", args["params"],
                       "--out", str(tmp_path / "out"), *sets)
    assert result.returncode == 1 and suggestion in result.stderr, result.stderr
    if case == "gold document":
        assert "did you mean 'ops/backup.md'?" in result.stderr
    if case.endswith("path"):
        meant = {"corpus": corpus, "judgments": judgments, "params": params}[case.split()[0]]
        assert f"did you mean {meant.as_posix()!r}?" in result.stderr


def test_the_parser_every_command_builds_first_loads_no_heavy_package():
    """``groundkit`` builds its whole parser before a command runs: the choices and defaults it shows (categories,
    the verdict's metrics, repair's threshold) come from standard-library modules, so that ``groundkit init`` or
    ``groundkit judgments add`` does not first load pydantic, numpy and scipy for about 0.2 s of CPU."""
    heavy = {"pydantic", "numpy", "scipy", "pandas", "yaml", "ruamel"}
    probe = ("import sys; from groundkit.cli import build_parser; build_parser(); "
             f"print(sorted({{m.split('.')[0] for m in sys.modules}} & {heavy!r}))")
    shown = subprocess.run([sys.executable, "-c", probe], cwd=REPO, env=env(PYTHONPATH=str(REPO)), capture_output=True,
                           text=True, check=True)
    assert shown.stdout.strip() == "[]"
