"""`groundkit import-beir`: the files it writes, byte for byte, and one clear error per bad input."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from groundkit.cli import main
from groundkit.corpus.beir import import_beir
from groundkit.corpus.documents import load_corpus
from groundkit.corpus.judgments import load_judgments
from groundkit.errors import DatasetError, OutputError
from tests.bad_inputs import BEIR_CASES
from tests.dvc_helpers import env

CORPUS = [
    {"_id": "d1", "title": "Snapshot isolation", "text": "Readers see a consistent view.", "metadata": {}},
    {"_id": "d2", "title": "", "text": "Backups run hourly.\r\nThey keep 30 days."},
    {"_id": "d3", "title": "Replicas", "text": "A lagging replica receives a snapshot."},
    {"_id": "d4", "title": "Unjudged", "text": "Nothing asks for this one."},
]
QUERIES = [
    {"_id": "q2", "text": "how often do backups run"},
    {"_id": "q10", "text": "snapshot for replicas and readers"},
    {"_id": "q3", "text": "a query without relevant documents"},
]
QRELS = ["query-id\tcorpus-id\tscore", "q2\td2\t1", "q10\td3\t2", "q10\td1\t1", "q3\td4\t0"]


def write_dataset(root: Path, corpus=CORPUS, queries=QUERIES, qrels=QRELS) -> Path:
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus), encoding="utf-8")
    (root / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in queries), encoding="utf-8")
    (root / "qrels" / "test.tsv").write_text("\n".join(qrels) + "\n", encoding="utf-8")
    return root


def digest(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_writes_documents_judgments_and_manifest(tmp_path):
    source = write_dataset(tmp_path / "beir")
    manifest = import_beir(source, tmp_path / "out")
    out = tmp_path / "out"
    assert sorted(p.name for p in (out / "corpus").iterdir()) == ["d1.txt", "d2.txt", "d3.txt", "d4.txt"]
    assert (out / "corpus" / "d1.txt").read_bytes() == b"Snapshot isolation\n\nReaders see a consistent view.\n"
    # No title: text only. CRLF becomes LF, so the document passes load_corpus.
    assert (out / "corpus" / "d2.txt").read_bytes() == b"Backups run hourly.\nThey keep 30 days.\n"
    assert [d.path for d in load_corpus(out / "corpus")] == ["d1.txt", "d2.txt", "d3.txt", "d4.txt"]

    lines = (out / "judgments.jsonl").read_text(encoding="utf-8").splitlines()
    # Plain string order ("q10" < "q2"), as load_judgments requires; q3 has only a score-0 qrel.
    assert [json.loads(line) for line in lines] == [
        {"category": "factoid", "query": "snapshot for replicas and readers", "query_id": "q10",
         "gold": [{"document": "d1.txt", "whole_document": True},
                  {"document": "d3.txt", "grade": 2, "whole_document": True}]},
        {"category": "factoid", "query": "how often do backups run", "query_id": "q2",
         "gold": [{"document": "d2.txt", "whole_document": True}]},
    ]
    assert [j.query_id for j in load_judgments(out / "judgments.jsonl")] == ["q10", "q2"]
    assert manifest == json.loads((out / "beir-import.json").read_text())
    assert {k: manifest[k] for k in ("documents", "documents_with_cr", "judgments", "relevant_pairs",
                                      "qrels_nonpositive", "max_score", "queries_without_relevant", "grades",
                                      "qrels_header", "qrels_skipped", "documents_renamed", "identical_ids")} == {
        "documents": 4, "documents_with_cr": 1, "judgments": 2, "relevant_pairs": 3,
        "qrels_nonpositive": 1, "max_score": 2, "queries_without_relevant": 1, "grades": {"1": 2, "2": 1},
        "qrels_header": True, "qrels_skipped": {"unknown_query": 0, "unknown_document": 0, "empty_document": 0},
        "documents_renamed": {}, "identical_ids": []}
    assert manifest["sources"]["corpus.jsonl"] == hashlib.sha256((source / "corpus.jsonl").read_bytes()).hexdigest()


def test_output_is_byte_identical_across_runs_and_replaces_an_earlier_import(tmp_path):
    source = write_dataset(tmp_path / "beir")
    import_beir(source, tmp_path / "a")
    import_beir(source, tmp_path / "b")
    assert digest(tmp_path / "a") == digest(tmp_path / "b")
    (tmp_path / "a" / "corpus" / "mine.txt").write_text("a document of my own\n")
    with pytest.raises(OutputError, match="earlier `groundkit import-beir`"):
        import_beir(source, tmp_path / "a")
    # Issue 35 item 7: --force replaced the corpus folder whole, deleting what a user had added to it.
    before = digest(tmp_path / "a")
    with pytest.raises(OutputError, match=r"holds 1 file this import does not write: mine\.txt"):
        import_beir(source, tmp_path / "a", force=True)
    assert digest(tmp_path / "a") == before
    (tmp_path / "a" / "corpus" / "mine.txt").unlink()
    import_beir(source, tmp_path / "a", force=True)
    assert digest(tmp_path / "a") == digest(tmp_path / "b")


def test_refuses_to_replace_a_folder_it_did_not_write(tmp_path):
    source = write_dataset(tmp_path / "beir")
    (tmp_path / "precious").mkdir()
    (tmp_path / "precious" / "notes.md").write_text("keep me\n")
    with pytest.raises(OutputError, match="was not written by groundkit"):
        import_beir(source, tmp_path / "precious")
    assert [p.name for p in (tmp_path / "precious").iterdir()] == ["notes.md"]
    assert (tmp_path / "precious" / "notes.md").read_text() == "keep me\n"


BAD = {
    # case: (file to damage, how, expected location, expected message)
    "bad json": ("corpus.jsonl", lambda lines: [*lines[:1], '{"_id": "d2", ', *lines[2:]], "corpus.jsonl:2",
                 "invalid JSON"),
    "not an object": ("queries.jsonl", lambda lines: [*lines[:2], "[1, 2]"], "queries.jsonl:3",
                      "expected a JSON object"),
    "missing text": ("corpus.jsonl", lambda lines: [*lines, '{"_id": "d9", "title": "t"}'], "corpus.jsonl:5",
                     "field 'text' is missing"),
    "numeric id": ("corpus.jsonl", lambda lines: [*lines, '{"_id": 9, "text": "t"}'], "corpus.jsonl:5",
                   "must be a string"),
    "empty id": ("corpus.jsonl", lambda lines: [*lines, '{"_id": "", "text": "t"}'], "corpus.jsonl:5",
                 "document id is empty"),
    "duplicate doc": ("corpus.jsonl", lambda lines: [*lines, '{"_id": "d1", "text": "t"}'], "corpus.jsonl:5",
                      "duplicate document id 'd1' (first on line 1)"),
    "nul": ("corpus.jsonl", lambda lines: [*lines, '{"_id": "d9", "text": "a\\u0000b"}'], "corpus.jsonl:5",
            "NUL"),
    "empty document": ("corpus.jsonl", lambda lines: [*lines, '{"_id": "d9", "title": " ", "text": ""}'],
                       "corpus.jsonl:5", "neither title nor text"),
    "bad header": ("qrels/test.tsv", lambda lines: ["qid\tdocid\trel", *lines[1:]], "test.tsv:1",
                   "neither the header 'query-id corpus-id score' nor a qrel"),
    "grade beyond range": ("qrels/test.tsv", lambda lines: [*lines, "q2\td1\t5000"], "test.tsv:6",
                           "above the largest grade"),
    "bad score": ("qrels/test.tsv", lambda lines: [*lines, "q2\td1\thigh"], "test.tsv:6", "not an integer"),
    "two fields": ("qrels/test.tsv", lambda lines: [*lines, "q2 d1 1"], "test.tsv:6", "3 tab-separated fields"),
    "duplicate qrel": ("qrels/test.tsv", lambda lines: [*lines, "q2\td2\t1"], "test.tsv:6",
                       "twice (first on line 2)"),
    "empty judged query": ("queries.jsonl", lambda lines: [lines[0].replace("how often do backups run", " "),
                                                           *lines[1:]], "queries.jsonl:1", "cannot become a judgment"),
    "invalid utf-8": ("queries.jsonl", None, "queries.jsonl:2", "not valid UTF-8"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_names_file_and_line_and_writes_nothing(tmp_path, case):
    source = write_dataset(tmp_path / "beir")
    name, damage, where, what = BAD[case]
    path = source / name
    if damage is None:
        path.write_bytes(path.read_bytes().replace(b"snapshot for", b"snapsh\xf6t for"))
    else:
        path.write_text("\n".join(damage(path.read_text(encoding="utf-8").splitlines())) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        import_beir(source, tmp_path / "out")
    message = str(caught.value)
    assert where in message and what in message and "fix:" in message
    assert not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["beir"]  # no temporary folder left behind


def test_missing_file_is_named(tmp_path):
    source = write_dataset(tmp_path / "beir")
    (source / "qrels" / "test.tsv").unlink()
    with pytest.raises(DatasetError, match=r"qrels/test\.tsv: is missing"):
        import_beir(source, tmp_path / "out")


def test_query_id_unfit_for_trec_files_is_refused(tmp_path):
    queries = [{"_id": "q 2", "text": "how often do backups run"}, *QUERIES[1:]]
    source = write_dataset(tmp_path / "beir", queries=queries, qrels=[QRELS[0], "q 2\td2\t1"])
    with pytest.raises(DatasetError, match=r"queries\.jsonl:1: query 'q 2' cannot become a judgment: query_id"):
        import_beir(source, tmp_path / "out")


def test_drop_empty_leaves_out_empty_documents_and_the_qrels_that_name_them(tmp_path):
    corpus = [*CORPUS, {"_id": "d9", "title": "", "text": "  "}]
    import_beir(write_dataset(tmp_path / "a", corpus=corpus), tmp_path / "out", drop_empty=True)
    assert not (tmp_path / "out" / "corpus" / "d9.txt").exists()
    assert json.loads((tmp_path / "out" / "beir-import.json").read_text())["documents_dropped_empty"] == ["d9"]
    # The aerospace collection's case: the empty document is relevant, to a query that has another (q2) and to
    # one that has no other (q3): q2 keeps d2, q3 is left out, and both are on record. --strict does not
    # change this: --drop-empty asked for it.
    queries = [*QUERIES, {"_id": "q4", "text": "what does the empty page say"}]
    judged = write_dataset(tmp_path / "b", corpus=corpus, queries=queries,
                           qrels=[*QRELS, "q2\td9\t1", "q4\td9\t2"])
    for strict in (False, True):
        out = tmp_path / f"out-{strict}"
        manifest = import_beir(judged, out, drop_empty=True, strict=strict)
        assert manifest["qrels_skipped"] == {"unknown_query": 0, "unknown_document": 0, "empty_document": 2}
        assert manifest["qrels_skipped_lines"] == [
            {"line": 6, "query-id": "q2", "corpus-id": "d9", "score": 1, "reason": "document empty, dropped by "
             "--drop-empty"},
            {"line": 7, "query-id": "q4", "corpus-id": "d9", "score": 2, "reason": "document empty, dropped by "
             "--drop-empty"}]
        assert manifest["queries_left_without_relevant"] == ["q4"]
        assert [j.query_id for j in load_judgments(out / "judgments.jsonl")] == ["q10", "q2"]
        assert [g.document for g in load_judgments(out / "judgments.jsonl")[1].gold] == ["d2.txt"]


def test_cli_prints_a_summary_and_no_progress_bar_off_a_terminal(tmp_path):
    source = write_dataset(tmp_path / "beir")
    result = subprocess.run(["groundkit", "import-beir", str(source), "--out", str(tmp_path / "out")],
                            capture_output=True, text=True, env=env(), check=False)
    assert result.returncode == 0
    assert result.stdout.startswith("4 documents, 2 judgments (3 relevant documents) written to ")
    # stderr is a pipe here: the note about graded qrels and the query left without a judgment, no progress bar.
    # q3 has only a score-0 qrel (d4): of the three queries, it is the one that gets no judgment.
    assert result.stderr == ("note: qrels are graded (up to 2); the grades are kept as nDCG's gains\n"
                             "warning: 1 of 3 queries of queries.jsonl get no judgment: 1 has no qrel above 0 in "
                             "qrels/test.tsv (another split's queries, or judged not relevant)\n")
    # q5's only relevant document is not in the dataset: it is named; q9 (no qrel at all) is counted with q3.
    queries = [*QUERIES, {"_id": "q5", "text": "snapshots"}, {"_id": "q9", "text": "a query of the train split"}]
    other = subprocess.run(["groundkit", "import-beir", str(write_dataset(tmp_path / "beir2", queries=queries,
                                                                          qrels=[*QRELS, "q5\td404\t1"])),
                            "--out", str(tmp_path / "out2")], capture_output=True, text=True, env=env(), check=False)
    assert "warning: 3 of 5 queries of queries.jsonl get no judgment: 2 have no qrel above 0 in qrels/test.tsv " \
           "(another split's queries, or judged not relevant); 1 has qrels above 0 only for documents the dataset " \
           "lacks: q5 (queries_left_without_relevant in beir-import.json)" in other.stderr
    bad = subprocess.run(["groundkit", "import-beir", str(tmp_path / "nowhere"), "--out", str(tmp_path / "o2")],
                         capture_output=True, text=True, env=env(), check=False)
    assert bad.returncode == 1 and bad.stderr.startswith("error: ") and "is not a directory" in bad.stderr


def test_imported_dataset_runs_and_every_chunk_of_a_relevant_document_is_gold(tmp_path):
    from groundkit.config import load_params
    from groundkit.pipeline.runner import run

    import_beir(write_dataset(tmp_path / "beir"), tmp_path / "imp")
    params = load_params(None, ["chunk.size=12", "audit.max_trivial_share=1.0"])
    run(tmp_path / "imp" / "corpus", tmp_path / "imp" / "judgments.jsonl", params, tmp_path / "run")
    chunks = [json.loads(line) for line in (tmp_path / "run" / "chunks.jsonl").read_text().splitlines()]
    qrels = (tmp_path / "run" / "qrels.trec").read_text().splitlines()
    expected = [f"q10 0 {c['chunk_id']} {1 if c['document'] == 'd1.txt' else 2}" for c in chunks
                if c["document"] in ("d1.txt", "d3.txt")]
    expected += [f"q2 0 {c['chunk_id']} 1" for c in chunks if c["document"] == "d2.txt"]
    assert len(expected) > 3  # the documents really were split into several chunks
    assert sorted(qrels) == sorted(expected)


def test_the_report_sees_each_relevant_document_held_whole_by_its_chunk(tmp_path, monkeypatch):
    # With one chunk per document, a chunk holds its whole-document gold span: the report's test of "a chunk
    # boundary cuts it" (a gold span starting before or ending after the passage) must never hold.
    from groundkit.config import load_params
    from groundkit.pipeline.runner import run
    from groundkit.reports.page_data import page_data, read_input

    import_beir(write_dataset(tmp_path / "beir"), tmp_path / "imp")
    params = load_params(None, ["chunk.strategy=document", "audit.max_trivial_share=1.0"])
    run(tmp_path / "imp" / "corpus", tmp_path / "imp" / "judgments.jsonl", params, tmp_path / "run")
    monkeypatch.chdir(tmp_path)
    data = page_data(read_input("run", tmp_path), None, None)
    held = [(g["start"], g["end"], chunk[:2]) for q in data["queries"] for g in q.get("gold", [])
            for chunk in g["held"][1]]
    assert len(held) == 3  # d1 and d3 for q10, d2 for q2: one chunk each
    assert all([start, end] == chunk for start, end, chunk in held)
    for q in data["queries"]:
        for passage_id, *_ in q.get("top", []):
            doc, start, end = data["passages"][passage_id]
            cut = [g for g in q.get("gold", []) if g["doc"] == doc and g["start"] < end and start < g["end"]
                   and (g["start"] < start or g["end"] > end)]
            assert cut == []


@pytest.mark.parametrize("name", sorted(BEIR_CASES))
def test_unusual_json_is_one_message_through_import_beir(tmp_path, capsys, name):
    case = BEIR_CASES[name]
    source = write_dataset(tmp_path / "beir")
    case.damage(source)
    assert main(["import-beir", str(source), "--out", str(tmp_path / "out")]) == 1
    stderr = capsys.readouterr().err
    assert stderr.startswith("error: ") and stderr.count("error: ") == 1, stderr
    assert case.where in stderr and case.what in stderr and "fix:" in stderr and "Traceback" not in stderr, stderr
    assert [p.name for p in tmp_path.iterdir()] == ["beir"]  # no --out, no temporary folder


def test_export_warns_of_the_ties_trec_tools_break_otherwise(tmp_path):
    # d1 and d2 are the same text, so BM25 gives them one score for any query; d3 shares no word with q1.
    corpus = [{"_id": "d1", "title": "", "text": "Backups run hourly."},
              {"_id": "d2", "title": "", "text": "Backups run hourly."},
              {"_id": "d3", "title": "", "text": "Replicas copy snapshots of ranges nightly."}]
    queries = [{"_id": "q1", "text": "backups hourly"}, {"_id": "q2", "text": "replicas snapshots nightly"}]
    source = write_dataset(tmp_path / "beir", corpus=corpus, queries=queries,
                           qrels=["q1\td1\t1", "q2\td3\t1"])
    import_beir(source, tmp_path / "imp")
    assert main(["run", "--corpus", str(tmp_path / "imp" / "corpus"), "--judgments",
                 str(tmp_path / "imp" / "judgments.jsonl"), "--out", str(tmp_path / "run"), "--set",
                 "chunk.strategy=document", "--set", "audit.max_trivial_share=1.0"]) == 0
    result = subprocess.run(["groundkit", "export-beir", str(tmp_path / "run"), "--import", str(tmp_path / "imp"),
                             "--out", str(tmp_path / "trec")], capture_output=True, text=True, env=env(), check=False)
    assert result.returncode == 0, result.stderr
    # q1 ranks d1 and d2 at ranks 1 and 2 with one score; q2 ranks d3 alone (no other document shares its words).
    lines = (tmp_path / "trec" / "run.trec").read_text().splitlines()
    assert [line.split()[:4] for line in lines] == [["q1", "Q0", "d1", "1"], ["q1", "Q0", "d2", "2"],
                                                   ["q2", "Q0", "d3", "1"]]
    assert lines[0].split()[4] == lines[1].split()[4]
    assert result.stderr == ("warning: 1 of 2 queries rank documents with equal scores (2 documents in ties; 1 "
                             "queries with one in their top 10, the first at rank 1): trec_eval and ir_measures "
                             "order them by document id, not as groundkit ranked them, so their figures can differ "
                             "where a tie straddles a cut-off\n")


def test_ties_are_counted_by_hand():
    from groundkit.reports.beir_export import _count_ties

    ties = {"tied_queries": 0, "tied_documents": 0, "tied_in_top_10": 0, "first_tied_rank": 0}
    scores = [9.0, 8.0] + [7.0] * 8 + [6.0, 6.0, 5.0]  # ranks 3-10 tie, 11-12 tie
    _count_ties(scores, ties)
    _count_ties([None, None], ties)  # a run of ranks only: no scores to tie
    _count_ties([3.0] * 9 + [1.0, 1.0], ties)  # ranks 1-9, then 10-11
    assert ties == {"tied_queries": 2, "tied_documents": 10 + 11, "tied_in_top_10": 2, "first_tied_rank": 1}
