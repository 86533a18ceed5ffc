"""Inputs edited while `dvc repro` runs, with real DVC: a run reports what it computed, or refuses.

A stage records the digest (or the params) of what it actually used, and a later stage refuses an
input that differs from that record: the edit of an editor's save, or a `judgments add`, landing
between two stages. The edit is made inside a stage's own process, by a ``sitecustomize`` module
these tests put on PYTHONPATH (nothing of it is in groundkit): at the start of a stage, after the
stages before it were recorded in dvc.lock, or at the exit of one, after it read its inputs and
before DVC hashes them for dvc.lock. The second is the case plain `dvc repro` cannot heal, since
dvc.lock then holds the edited file's hash beside an output made from the old one; each test
follows the advice of the refusal and checks that it heals the workspace.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml

from groundkit.corpus.documents import corpus_hash
from tests.dvc_helpers import copy_of, repro, reproduced_clone, run

pytestmark = pytest.mark.integration

EDITOR = """\
import atexit, json, os, sys

_spec = json.loads(os.environ.get("GROUNDKIT_TEST_EDIT") or "null")


def _edit():
    scratch = _spec["path"] + ".editing"
    with open(scratch, "w", encoding="utf-8", newline="") as handle:
        handle.write(_spec["text"])
    os.replace(scratch, _spec["path"])  # as an editor saves


if _spec and sys.argv[0].endswith("stage.py") and sys.argv[1:2] == [_spec["stage"]]:
    if _spec["when"] == "exit":
        atexit.register(_edit)
    else:
        _edit()
"""


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    """A copy of the session's clone on which `dvc repro` has run; each test leaves it as it found it."""
    repo = copy_of(reproduced_clone(tmp_path_factory)[0], tmp_path_factory.mktemp("mid-run") / "repo")
    (repo.parent / "hook").mkdir()
    (repo.parent / "hook" / "sitecustomize.py").write_text(EDITOR, encoding="utf-8")
    return repo


@pytest.fixture
def clean(workspace):
    yield workspace
    run(["git", "reset", "-q", "--hard", "HEAD"], workspace)  # DVC stages dvc.lock as it writes it
    run(["dvc", "checkout", "-q", "--force"], workspace)
    assert json.loads(run(["dvc", "status", "--json"], workspace).stdout) == {}


def repro_editing(repo: Path, stage: str, when: str, path: Path, text: str):
    """`dvc repro`, with ``path`` replaced by ``text`` at the start or the exit of ``stage``'s process."""
    spec = json.dumps({"stage": stage, "when": when, "path": str(path), "text": text})
    return repro(repo, check=False, PYTHONPATH=str(repo.parent / "hook"), GROUNDKIT_TEST_EDIT=spec)


def healed(repo: Path, stage: str) -> dict:
    """Follow the refusal's advice, `dvc repro -f -s STAGE && dvc repro`; the workspace is then up to date."""
    repro(repo, "-f", "-s", stage)
    repro(repo)
    assert json.loads(run(["dvc", "status", "--json"], repo).stdout) == {}
    return json.loads((repo / "metrics" / "run.json").read_text(encoding="utf-8"))


def _requery(lines: list[str], number: int, query: str) -> list[str]:
    record = json.loads(lines[number])
    record["query"] = query
    return [*lines[:number], json.dumps(record, ensure_ascii=False) + "\n", *lines[number + 1:]]


def test_judgments_edited_after_validation_are_refused_and_the_advice_heals(clean):
    repo = clean
    judgments = repo / "evals" / "judgments.jsonl"
    lines = _requery(judgments.read_text(encoding="utf-8").splitlines(keepends=True), 0, "which pages are reclaimed")
    judgments.write_text("".join(lines), encoding="utf-8")  # the edit `dvc repro` is run for
    record = json.loads(lines[1])
    edited = "".join(_requery(lines, 1, "how is a stale read avoided"))  # and one made while it runs
    # At validate-judgments' exit: validation.json holds the first edit's hash, dvc.lock will hold the second's.
    ran, result = repro_editing(repo, "validate-judgments", "exit", judgments, edited)
    output = result.stdout + result.stderr
    assert result.returncode != 0 and judgments.read_text(encoding="utf-8") == edited
    assert "resolve-spans" in ran and not ran & {"chunk", "index", "retrieve", "score"}
    assert "error: evals/judgments.jsonl: changed while the pipeline ran: validate-judgments checked it with " \
           "SHA-256 " in output
    assert "fix: check it again and go on: dvc repro -f -s validate-judgments && dvc repro" in output
    assert "Traceback" not in output
    # Without -f, DVC takes validate-judgments for up to date (its lock holds the edited file) and the refusal stays.
    assert repro(repo, check=False)[1].returncode != 0
    run_json = healed(repo, "validate-judgments")
    assert run_json["judgments_hash"] == hashlib.sha256(edited.encode("utf-8")).hexdigest()
    spans = [json.loads(line) for line in (repo / "build" / "gold_spans.jsonl").read_text().splitlines()]
    assert [s["query"] for s in spans[:2]] == ["which pages are reclaimed", "how is a stale read avoided"]
    assert spans[1]["query_id"] == record["query_id"]


def test_a_document_edited_before_the_spans_are_resolved_is_refused_and_the_advice_heals(clean):
    repo = clean
    document = sorted((repo / "evals" / "corpus").rglob("*.md"))[0]
    document.write_text(document.read_text(encoding="utf-8") + "\nA sentence added before.\n", encoding="utf-8")
    edited = document.read_text(encoding="utf-8") + "\nA sentence added while the pipeline ran.\n"
    # At resolve-spans' start: validate-judgments and its dvc.lock entry saw the old document.
    ran, result = repro_editing(repo, "resolve-spans", "start", document, edited)
    output = result.stdout + result.stderr
    assert result.returncode != 0 and "resolve-spans" in ran and "chunk" not in ran
    assert "error: evals/corpus: changed while the pipeline ran: validate-judgments checked it" in output
    run_json = healed(repo, "validate-judgments")
    assert run_json["corpus_hash"] == corpus_hash(repo / "evals" / "corpus")
    snapshot = [json.loads(line) for line in (repo / "build" / "documents.jsonl").read_text().splitlines()]
    assert edited in [d["text"] for d in snapshot]


@pytest.mark.parametrize(("stage", "section", "key", "used", "value", "refused_by"), [
    ("chunk", "chunk", "size", 600, 400, "score"),
    ("index", "bm25", "k1", 0.9, 0.5, "retrieve"),
    ("retrieve", "retrieve", "depth", 150, 200, "score"),
], ids=["chunk.size", "bm25.k1", "retrieve.depth"])
def test_params_edited_while_a_stage_runs_are_refused_and_the_advice_heals(clean, stage, section, key, used, value,
                                                                          refused_by):
    repo = clean
    path = repo / "params.yaml"
    params = yaml.safe_load(path.read_text(encoding="utf-8"))
    params[section][key] = used
    path.write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")  # the edit `dvc repro` is run for
    params[section][key] = value  # and one made while it runs
    # At the stage's exit: it used the old value, and dvc.lock records the new one.
    ran, result = repro_editing(repo, stage, "exit", path, yaml.safe_dump(params, sort_keys=False))
    output = result.stdout + result.stderr
    assert result.returncode != 0 and refused_by in ran and "report" not in ran
    assert f"error: params.yaml: key '{section}.{key}': is {value!r}, but " in output
    assert f"{used!r}" in output and "params.yaml changed while the pipeline ran" in output
    assert f"dvc repro -f -s {stage} && dvc repro" in output
    assert "Traceback" not in output
    # No metrics credited to the new value: the committed ones, or none (DVC removes a stage's outputs first).
    status = run(["git", "status", "--porcelain", "metrics"], repo).stdout.splitlines()
    assert all(line.startswith(" D ") for line in status), status
    run_json = healed(repo, stage)
    assert run_json["params"][section][key] == value


def test_a_value_with_more_decimals_than_the_records_keep_is_not_taken_for_an_edit(tiny_corpus, tmp_path):
    """The records, like run.json, keep six decimals: a k1 of 0.12345678 is 0.123457 in all of them."""
    from groundkit.cli import main

    corpus, judgments = tiny_corpus
    assert main(["run", "--corpus", str(corpus), "--judgments", str(judgments), "--set", "bm25.k1=0.12345678",
                 "--set", "audit.max_trivial_share=1.0", "--out", str(tmp_path / "out")]) == 0
    run_json = json.loads((tmp_path / "out" / "run.json").read_text(encoding="utf-8"))
    assert run_json["params"]["bm25"]["k1"] == 0.123457
