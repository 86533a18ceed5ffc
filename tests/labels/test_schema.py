"""The judgment schema's provenance fields, and ``groundkit run --queries``: queries nobody labelled."""

from __future__ import annotations

import hashlib
import json

import pytest

from groundkit.cli import main
from groundkit.corpus.judgments import Origin, load_judgments
from groundkit.corpus.queries import read_queries
from groundkit.errors import JudgmentsError
from groundkit.pipeline.runner import QUERIES_FILE, RANKING_ARTIFACTS
from groundkit.reports.pool import read_folder

DIGEST = "ab" * 32
MACHINE = {"query_id": "q1", "query": "what is a lease", "category": "factoid",
           "gold": [{"document": "a.md", "quote": "a lease is", "grade": 3}],
           "origin": "machine", "judge": "openai:m", "prompt_sha256": DIGEST}
SAMPLED = {"query_id": "q1", "query": "what is a lease", "category": "factoid",
           "gold": [{"document": "a.md", "quote": "a lease is"}], "origin": "human",
           "sample": {"seed": 7, "of": DIGEST, "n": 20}}
EMPTY_POOL = {"query_id": "q2", "query": "sourdough", "category": "no_answer", "gold": [], "origin": "machine",
              "judge": "python:j:make", "pool_empty": True}


def write(tmp_path, *records):
    path = tmp_path / "judgments.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_provenance_loads_and_is_written_back_as_read(tmp_path):
    judgments = load_judgments(write(tmp_path, MACHINE, EMPTY_POOL))
    assert judgments[0].origin is Origin.MACHINE and judgments[0].gold[0].grade == 3
    assert [json.loads(j.to_json()) for j in judgments] == [MACHINE, EMPTY_POOL]
    sampled = load_judgments(write(tmp_path, SAMPLED))[0]
    # A person's origin is the default, left out as a person writes it; the sample is kept.
    assert json.loads(sampled.to_json()) == {k: v for k, v in SAMPLED.items() if k != "origin"}


@pytest.mark.parametrize(("record", "message"), [
    (MACHINE | {"origin": "robot"}, "unknown origin; use human (the default) or machine"),
    ({k: v for k, v in MACHINE.items() if k != "judge"}, "a machine judgment names its judge"),
    ({k: v for k, v in MACHINE.items() if k != "origin"}, '"judge" belongs to a machine judgment only'),
    (SAMPLED | {"prompt_sha256": DIGEST}, '"prompt_sha256" belongs to a machine judgment only'),
    (MACHINE | {"sample": SAMPLED["sample"]}, '"sample" belongs to a person'),
    (MACHINE | {"pool_empty": True}, '"pool_empty" belongs to a no_answer judgment only'),
    (EMPTY_POOL | {"origin": "human", "judge": None}, '"pool_empty" belongs to a machine judgment only'),
    (MACHINE | {"prompt_sha256": "ABC"}, "prompt_sha256 must be 64 lowercase hex digits"),
    (SAMPLED | {"sample": {"seed": 7, "of": "x", "n": 20}}, "sample.of must be the SHA-256"),
    (SAMPLED | {"sample": {"seed": 7, "of": DIGEST, "n": 0}}, "key 'sample.n'"),
    (SAMPLED | {"sample": {"seed": 7, "of": DIGEST, "n": 2, "drawn": []}}, "key 'sample.drawn'"),
    (MACHINE | {"gold": [{"document": "a.md", "quote": "a lease is", "grade": 0}]}, "key 'gold.0.grade'"),
    (MACHINE | {"judges": "x"}, "'judges': is not a known field (a typo?); did you mean judge?"),
])
def test_provenance_out_of_place_is_refused_naming_the_line(tmp_path, record, message):
    with pytest.raises(JudgmentsError, match=r"judgments\.jsonl:1") as caught:
        load_judgments(write(tmp_path, record))
    assert message in str(caught.value)


def test_plain_queries_get_content_ids_and_jsonl_ignores_other_keys(tmp_path):
    plain = tmp_path / "log.txt"
    plain.write_text("What is a lease?\n\n  What is a lease?  \nHow fast?\n", encoding="utf-8")
    expected = {"q" + hashlib.sha256(t.encode()).hexdigest()[:10]: t for t in ("What is a lease?", "How fast?")}
    assert {q.query_id: q.query for q in read_queries(plain)} == expected
    assert [q.query_id for q in read_queries(plain)] == sorted(expected)
    judgments = write(tmp_path, MACHINE, EMPTY_POOL)
    assert [(q.query_id, q.query) for q in read_queries(judgments)] == [("q1", "what is a lease"),
                                                                        ("q2", "sourdough")]


@pytest.mark.parametrize(("text", "line", "message"), [
    ('{"query_id": "q1", "query": "a"}\n{"query_id": "q1", "query": "b"}\n', 2, "names two different queries"),
    ('{"query_id": "q 1", "query": "a"}\n', 1, "a TREC file cannot carry"),
    ('{"query_id": "q1"}\n', 1, "query is null, not a non-empty string"),
    ('{"query_id": "q1", "query": "a"}\nnot json\n', 2, "invalid JSON"),
    ("\n  \n", None, "holds no queries"),
])
def test_bad_queries_files_name_the_line(tmp_path, text, line, message):
    path = tmp_path / "queries.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(JudgmentsError) as caught:
        read_queries(path)
    assert message in str(caught.value)
    assert caught.value.line == line


def test_run_queries_writes_a_poolable_folder_without_scores(tiny_corpus, tmp_path, capsys):
    corpus, _ = tiny_corpus
    queries = tmp_path / "log.txt"
    queries.write_text("how often do incremental backups run\nsnapshot transfer speed\n", encoding="utf-8")
    out = tmp_path / "ranked"
    assert main(["run", "--corpus", str(corpus), "--queries", str(queries), "--out", str(out),
                 "--set", "chunk.size=60"]) == 0
    assert "2 queries ranked, not scored" in capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir()) == sorted({*RANKING_ARTIFACTS, ".groundkit-output"})
    assert not (out / "metrics.json").exists() and not (out / "per_query.csv").exists()
    folder = read_folder(out)
    ids = sorted(q.query_id for q in read_queries(queries))
    assert sorted(folder.run.rankings) == ids
    first = folder.run.rankings[read_queries(queries)[0].query_id]
    assert first and all(p.text for p in first)
    assert [json.loads(line)["category"] for line in (out / QUERIES_FILE).read_text().splitlines()] == [
        "no_answer", "no_answer"]
    # --judgments and --queries exclude each other.
    with pytest.raises(SystemExit):
        main(["run", "--corpus", str(corpus), "--queries", str(queries), "--judgments", str(queries), "--out", "x"])


def test_a_run_refuses_machine_judgments_as_a_persons(tiny_corpus, tmp_path, capsys):
    corpus, judgments = tiny_corpus
    lines = judgments.read_text().splitlines()
    record = json.loads(lines[1]) | {"origin": "machine", "judge": "python:j:make"}
    lines[1] = json.dumps(record)
    judgments.write_text("\n".join(lines) + "\n")
    assert main(["run", "--corpus", str(corpus), "--judgments", str(judgments), "--out", str(tmp_path / "out"),
                 "--set", "audit.max_trivial_share=1.0"]) == 1
    err = capsys.readouterr().err
    assert f"{judgments}:2: holds 'q2', a machine judgment" in err and "corpus.machine_judgments" in err
    assert not (tmp_path / "out").exists()
