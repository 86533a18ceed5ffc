"""Every bad input in tests/bad_inputs.py, through `groundkit run`, `groundkit audit` and `dvc repro`.

Each must exit non-zero with one message naming the file and line (or key), what was wrong and how
to fix it; show no traceback; leave no partial artifact; and under DVC stop before chunk or index.
Damaged artifacts fed to a later stage are covered at the end of the module.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import yaml

from groundkit.cli import main
from groundkit.corpus.audit import AuditReport
from tests.bad_inputs import CASES, CORPUS, JUDGMENTS, PARAMS
from tests.conftest import write_tiny_corpus
from tests.dvc_helpers import clone_working_tree, copy_of, repro, run


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """A clone of this repository whose corpus and judgments are the tiny ones, committed."""
    repo = clone_working_tree(tmp_path_factory.mktemp("template") / "repo")
    shutil.rmtree(repo / CORPUS)
    write_tiny_corpus(repo / CORPUS, repo / JUDGMENTS)
    # The committed params.yaml sets no audit gate: the tiny corpus's trivial judgments are findings, not errors.
    assert yaml.safe_load((repo / PARAMS).read_text(encoding="utf-8"))["audit"]["max_trivial_share"] is None
    run(["git", "add", "-A"], repo)
    run(["git", "commit", "-q", "-m", "tiny corpus"], repo)
    return repo


def _leftovers(directory: Path) -> list[str]:
    """Temporary files an interrupted atomic write would leave behind (git's and DVC's own folders aside)."""
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*")
                  if (p.name.endswith(".tmp") or p.name.startswith(".groundkit"))
                  and not {".git", ".dvc"} & set(p.relative_to(directory).parts))


def _assert_one_clear_message(stderr: str, where: str, what: str) -> None:
    assert "Traceback" not in stderr
    assert where in stderr, stderr
    assert what in stderr, stderr
    assert "fix:" in stderr, stderr


# Each case's name starts with the input it damages; its message must point into that input.
_POINTS_INTO = {
    "judgments": ("judgments.jsonl",),
    "judgment": ("judgments.jsonl",),
    "quote": ("judgments.jsonl",),
    "audit": ("judgments.jsonl",),
    "params": ("params.yaml", "key '"),
    # A document the judgments name but cannot use is reported at the judgment; a bad file, at the file.
    "document": ("judgments.jsonl", ".md"),
}


def test_every_case_names_the_input_it_damages():
    kinds = {name.partition(":")[0] for name in CASES}
    assert kinds == set(_POINTS_INTO)
    for name, case in CASES.items():
        where = case.where.partition(":")[0]
        allowed = _POINTS_INTO[name.partition(":")[0]]
        assert any(where.startswith(a) or where.endswith(a) for a in allowed), (name, case.where)


# The judgments and the documents' text reach DVC only as bytes it hashes, and a value in params.yaml only as a
# value it hashes (the stages read the file themselves): DVC cannot treat one bad judgment, quote or value
# differently from another, and what the failing stage then prints comes from the code `groundkit run` ran for the
# same case just before. So every case runs through `run` and `audit`, but of these kinds only a sample also runs
# through `dvc repro` (about 1.7 s each): a field, a line number, the file as a whole, bytes that are not UTF-8, a
# lone surrogate, a quote not found, a message naming a character, a damaged document, the longest message, a
# metric name (checked by the first stage), a range, a misspelt key, a section nobody reads. A params.yaml that is
# not YAML to DVC, and documents as files (DVC hashes the tree), all run under DVC.
CONTENT_KINDS = ("judgment", "judgments", "quote", "params")
DVC_SAMPLE = frozenset({
    "judgment: duplicate query_id", "judgment: unknown field", "judgments: blank only", "judgments: invalid UTF-8",
    "judgments: lone surrogate", "quote: not found", "quote: ligature", "quote: soft hyphen in the document",
    "quote: a short word in a large document", "params: a measure groundkit lacks", "params: depth below the deepest k",
    "params: typo in a key", "params: unknown section",
})


def test_the_dvc_sample_names_cases_of_each_content_kind():
    assert DVC_SAMPLE <= set(CASES)
    assert {name.partition(":")[0] for name in DVC_SAMPLE} == set(CONTENT_KINDS)


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_fails_cleanly_everywhere(template, tmp_path, capsys, name):
    case = CASES[name]
    workspace = copy_of(template, tmp_path / "ws")
    case.damage(workspace)
    paths = ["--corpus", str(workspace / CORPUS), "--judgments", str(workspace / JUDGMENTS),
             "--params", str(workspace / PARAMS)]

    out = tmp_path / "out"
    assert main(["run", *paths, "--out", str(out)]) == 1
    stderr = capsys.readouterr().err
    assert stderr.startswith("error: ") and stderr.count("error: ") == 1
    _assert_one_clear_message(stderr, case.where, case.what)
    assert not out.exists() and _leftovers(tmp_path) == []

    report = tmp_path / "audit.json"
    assert main(["audit", *paths, "--out", str(report)]) == 1
    stderr = capsys.readouterr().err
    _assert_one_clear_message(stderr, case.where, case.what)
    if name.startswith("audit:"):  # the audit ran and found it: its report is written all the same
        assert AuditReport.model_validate_json(report.read_bytes()).answerable == 3
    else:  # a broken input: there is nothing to report on
        assert not report.exists()

    if case.dvc_hangs:
        return  # DVC itself never returns on this input (the case says why); the legs above are the test
    if name.partition(":")[0] in CONTENT_KINDS and name not in DVC_SAMPLE and not case.dvc_reports_it:
        return  # the same bytes to DVC as a sampled case (above)
    ran, result = repro(workspace, check=False)
    assert result.returncode != 0
    if case.dvc_reports_it:
        assert ran <= {"check-inputs"}  # it checks paths only, and runs first; DVC then fails hashing a dep
        for text in case.dvc_says or (case.where, case.what):
            assert text in result.stderr, result.stderr
        assert "Traceback" not in result.stderr
    else:
        _assert_one_clear_message(result.stdout + result.stderr, case.where, case.what)
        assert ran <= {"check-inputs", "validate-judgments", "resolve-spans"}, ran
    assert not (workspace / "build" / "chunks.jsonl").exists()
    assert not (workspace / "build" / "index").exists()
    assert _leftovers(workspace) == []


# --- damaged artifacts fed to the next stage -------------------------------------------------


@pytest.fixture(scope="module")
def built(template, tmp_path_factory) -> Path:
    """The tiny workspace after one successful `dvc repro`."""
    workspace = copy_of(template, tmp_path_factory.mktemp("built") / "ws")
    ran, _ = repro(workspace)
    assert ran == {"check-inputs", "validate-judgments", "resolve-spans", "chunk", "index", "embed", "retrieve",
                   "score", "report"}
    return workspace


def _truncate(rel: str) -> Callable[[Path], None]:
    def damage(ws: Path) -> None:
        path = ws / rel
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])

    return damage


def _drop_last_line(rel: str) -> Callable[[Path], None]:
    def damage(ws: Path) -> None:
        path = ws / rel
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        path.write_text("".join(lines[:-1]), encoding="utf-8")

    return damage


def _edit_text(rel: str, old: str, new: str) -> Callable[[Path], None]:
    def damage(ws: Path) -> None:
        path = ws / rel
        text = path.read_text(encoding="utf-8")
        assert old in text, f"{old!r} not in {rel}"
        path.write_text(text.replace(old, new, 1), encoding="utf-8")

    return damage


def _edit_line(rel: str, edit: Callable[[str], str], *, forge_seal: bool = False) -> Callable[[Path], None]:
    """Edit the first line; with ``forge_seal``, also rewrite the seal, so only the record checks stand guard."""

    def damage(ws: Path) -> None:
        path = ws / rel
        lines = path.read_text(encoding="utf-8").splitlines()
        lines[0] = edit(lines[0])
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        if forge_seal:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            (ws / f"{rel}.sha256").write_text(f"{digest}  {path.name}\n", encoding="utf-8")

    return damage


def _forged_pickle(ws: Path) -> None:
    """Replace an index array by a pickled object array and forge the manifest to match it."""
    index = ws / "build" / "index"
    array = index / "seg-00000" / "data.npy"
    np.save(array, np.array([{"payload": "os.system"}], dtype=object), allow_pickle=True)
    manifest = json.loads((index / "manifest.json").read_text(encoding="utf-8"))
    manifest["files"]["seg-00000/data.npy"] = hashlib.sha256(array.read_bytes()).hexdigest()
    text = json.dumps(manifest) + "\n"
    (index / "manifest.json").write_text(text, encoding="utf-8")
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()  # and the manifest's own seal
    (index / "manifest.json.sha256").write_text(f"{digest}  manifest.json\n", encoding="utf-8")


def _chunk_text_edited(line: str) -> str:
    record = json.loads(line)
    record["text"] = record["text"][0].swapcase() + record["text"][1:]  # same length, other content
    return json.dumps(record)


def _run_score_forged(line: str) -> str:
    parts = line.split(" ")
    parts[4] = "nan"
    return " ".join(parts)


ARTIFACT_CASES: dict[str, tuple[Callable[[Path], None], str, str, str]] = {
    # name: (damage, stage that reads it, where, what)
    "chunks truncated": (_truncate("build/chunks.jsonl"), "index", "build/chunks.jsonl", "truncated"),
    "chunks lose their last line": (_drop_last_line("build/chunks.jsonl"), "index", "build/chunks.jsonl",
                                    "does not match the SHA-256 in chunks.jsonl.sha256"),
    "documents lose their last line": (_drop_last_line("build/documents.jsonl"), "chunk", "build/documents.jsonl",
                                       "truncated or edited"),
    "chunk text edited": (_edit_line("build/chunks.jsonl", _chunk_text_edited), "index",
                          "build/chunks.jsonl", "does not match the SHA-256"),
    "chunk text edited, seal forged": (_edit_line("build/chunks.jsonl", _chunk_text_edited, forge_seal=True),
                                       "index", "build/chunks.jsonl:1", "chunk_id"),
    "index array truncated": (_truncate("build/index/seg-00000/data.npy"), "retrieve", "seg-00000/data.npy",
                              "SHA-256"),
    "index row table truncated": (_truncate("build/index/chunk_ids.npy"), "retrieve", "chunk_ids.npy", "SHA-256"),
    "index vocabulary edited": (_edit_text("build/index/vocab.json", "snapshot", "snapshoT"), "retrieve",
                                "vocab.json", "SHA-256"),
    "index manifest truncated": (_truncate("build/index/manifest.json"), "retrieve", "manifest.json",
                                 "does not match the SHA-256 in manifest.json.sha256"),
    # Every other file's SHA-256 is in the manifest: another tokenizer there re-tokenized every query silently.
    "index manifest edited": (_edit_text("build/index/manifest.json", '"stemmer": "none"', '"stemmer": "english"'),
                              "retrieve", "build/index/manifest.json",
                              "does not match the SHA-256 in manifest.json.sha256: it was truncated or edited after "
                              "the index stage wrote it"),
    "index array forged as a pickle": (_forged_pickle, "retrieve", "build/index", "not a groundkit index array"),
    "gold spans lose a judgment": (_drop_last_line("build/gold_spans.jsonl"), "retrieve", "build/gold_spans.jsonl",
                                   "truncated or edited"),
    "run truncated at a line boundary": (_drop_last_line("build/run.trec"), "score", "build/run.trec",
                                         "truncated or edited"),
    "run cut mid-line": (_truncate("build/run.trec"), "score", "build/run.trec", "truncated"),
    "run names an unknown chunk, seal forged": (
        _edit_line("build/run.trec", lambda line: line.replace(line.split(" ")[2], "0" * 16), forge_seal=True),
        "score", "build/run.trec:1", "not in chunks.jsonl"),
    "run score set to nan, seal forged": (_edit_line("build/run.trec", _run_score_forged, forge_seal=True),
                                          "score", "build/run.trec:1", "not a finite number"),
}


@pytest.mark.parametrize("name", sorted(ARTIFACT_CASES))
def test_damaged_artifact_is_reported_by_the_next_stage(built, tmp_path, name):
    damage, stage, where, what = ARTIFACT_CASES[name]
    workspace = copy_of(built, tmp_path / "ws")
    damage(workspace)
    ran, result = repro(workspace, "--single-item", stage, check=False)
    assert ran == {stage}
    assert result.returncode != 0
    _assert_one_clear_message(result.stdout + result.stderr, where, what)
    assert _leftovers(workspace / "build") == []
