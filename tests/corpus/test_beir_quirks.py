"""import-beir on collections as they are published: odd ids, headerless and partial qrels, identical ids.

Each fixture reproduces a quirk met on a real BEIR-format collection (an entity-search subset's
``<dbpedia:...>`` ids, Wikipedia titles with ``/``, ``:`` and accents, qrels without a header, qrels
naming what a subset does not hold, ArguAna's queries that are corpus documents); each must import,
run and score, and ``--strict`` must refuse where it should.
"""

from __future__ import annotations

import json
import random
import subprocess
import unicodedata
from pathlib import Path

import ir_measures
import pytest
from ir_measures import RR, Success, nDCG

from groundkit.cli import main
from groundkit.corpus.beir import COMPONENT, document_file, document_id, import_beir
from groundkit.corpus.documents import load_corpus
from groundkit.corpus.judgments import load_judgments
from groundkit.errors import DatasetError
from groundkit.reports.beir_export import export_beir
from tests.corpus.test_beir import write_dataset
from tests.dvc_helpers import env

ODD_IDS = {
    "<dbpedia:Oceanic_Airlines>": "Oceanic Airlines flight 815 crashed on a remote island.",
    "<dbpedia:José_Martí>": "José Martí was a Cuban poet and national hero.",
    "F/A-18": "The F/A-18 Hornet is a carrier-capable fighter jet.",
    "Babylon_5:_Voices": "Voices of Authority is an episode of a science fiction series.",
    "Alien_(film)": "Alien is a science fiction horror film about a ship's crew.",
    "..": "Two dots name nothing in particular about jets.",
    ".hidden": "A leading dot would hide this island file.",
    "-rf": "A leading dash reads as an option on a command line.",
    "100%_pure": "A percent sign in an id about a poet.",
    "Foo": "Foo is a placeholder name about airlines.",
    "foo": "foo in lower case, about fighter jets.",
    "FOO": "FOO in capitals, about a Cuban poet.",
    "Ünïcödé_" + "Ω" * 150: "A very long id: one path component cannot hold its encoding.",
    "d" * 400: "A long plain id about horror films.",
}
QUERIES = [{"_id": "q1", "text": "which airline crashed on an island"},
           {"_id": "q2", "text": "cuban poet"},
           {"_id": "q3", "text": "carrier fighter jet"}]
QRELS = ["q1\t<dbpedia:Oceanic_Airlines>\t2", "q1\tFoo\t1", "q2\t<dbpedia:José_Martí>\t1", "q2\tFOO\t1",
         "q3\tF/A-18\t3", "q3\tfoo\t1", "q3\t" + "d" * 400 + "\t1"]


def odd_dataset(root: Path, qrels: list[str] = QRELS) -> Path:
    corpus = [{"_id": doc_id, "title": "", "text": text} for doc_id, text in ODD_IDS.items()]
    return write_dataset(root, corpus=corpus, queries=QUERIES, qrels=qrels)


def test_any_id_imports_under_a_safe_reversible_name(tmp_path):
    manifest = import_beir(odd_dataset(tmp_path / "beir"), tmp_path / "out")
    root = tmp_path / "out" / "corpus"
    names = {doc_id: document_file(doc_id, capitals=doc_id.lower() == "foo") for doc_id in ODD_IDS}
    assert names["<dbpedia:Oceanic_Airlines>"] == "%3Cdbpedia%3AOceanic_Airlines%3E.txt"
    assert names["<dbpedia:José_Martí>"] == "%3Cdbpedia%3AJos%C3%A9_Mart%C3%AD%3E.txt"
    assert names["F/A-18"] == "F%2FA-18.txt"
    assert names[".."] == "%2E..txt" and names[".hidden"] == "%2Ehidden.txt" and names["-rf"] == "%2Drf.txt"
    assert names["100%_pure"] == "100%25_pure.txt"
    # Three ids equal but for case: capitals are encoded, so no two files are one on a case-insensitive disk.
    assert (names["Foo"], names["foo"], names["FOO"]) == ("%46oo.txt", "foo.txt", "%46%4F%4F.txt")
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    assert files == sorted(names.values())
    for name in files:
        assert name.isascii() and all(0 < len(part) <= COMPONENT for part in name.split("/"))
        assert not any(part.startswith((".", "-")) for part in name.split("/"))
    # Every path and every folder on the way is distinct in lower case.
    prefixes = {"/".join(n.split("/")[:i]) for n in files for i in range(1, n.count("/") + 2)}
    assert len({p.lower() for p in prefixes}) == len(prefixes)
    # The long ids were cut into folders; decoding every name gives back every original id.
    assert "/" in names["d" * 400] and "/" in names["Ünïcödé_" + "Ω" * 150]
    assert {document_id(name) for name in files} == set(ODD_IDS)
    assert manifest["documents_renamed"] == {d: n for d, n in sorted(names.items()) if n != d + ".txt"}
    assert "d" * 400 in manifest["documents_renamed"] and "foo" not in manifest["documents_renamed"]
    # The corpus loads, and judgments name the files with the qrels' grades.
    assert {d.path for d in load_corpus(root)} == set(files)
    gold = {(j.query_id, document_id(g.document), g.grade) for j in load_judgments(tmp_path / "out" / "judgments.jsonl")
            for g in j.gold}
    assert gold == {(q, d, int(s)) for q, d, s in (line.split("\t") for line in QRELS)}


def test_file_names_round_trip_for_random_ids():
    rng = random.Random(7)
    alphabet = "aZ09._-/:%()<>~ \t\\\"'éΩ中😀\u0301" + "".join(chr(c) for c in range(0x20, 0x7F))
    for _ in range(3000):
        doc_id = "".join(rng.choice(alphabet) for _ in range(rng.choice([1, 2, 5, 30, 120, 300])))
        for capitals in (False, True):
            name = document_file(doc_id, capitals=capitals)
            assert document_id(name) == doc_id
            assert name.isascii() and all(0 < len(p) <= COMPONENT for p in name.split("/"))
            assert not any(p in (".", "..") or p.startswith((".", "-")) for p in name.split("/"))
    # NFC and NFD spellings are different ids with different names: no file system folds one into the other.
    assert document_file(unicodedata.normalize("NFD", "José")) != document_file("José")


def test_odd_ids_run_score_and_export_with_their_own_ids(tmp_path, capsys):
    import_beir(odd_dataset(tmp_path / "beir"), tmp_path / "imp")
    out = tmp_path / "run"
    assert main(["run", "--corpus", str(tmp_path / "imp" / "corpus"), "--judgments",
                 str(tmp_path / "imp" / "judgments.jsonl"), "--out", str(out), "--set", "chunk.strategy=document"]) == 0
    assert main(["export-beir", str(out), "--import", str(tmp_path / "imp"), "--out", str(tmp_path / "trec")]) == 0
    run = list(ir_measures.read_trec_run(str(tmp_path / "trec" / "run.trec")))
    assert {d.doc_id for d in run} <= set(ODD_IDS) and "<dbpedia:Oceanic_Airlines>" in {d.doc_id for d in run}
    # The exported qrels are the dataset's own lines, ids and grades as published.
    exported = sorted(f"{q.query_id}\t{q.doc_id}\t{q.relevance}"
                      for q in ir_measures.read_trec_qrels(str(tmp_path / "trec" / "qrels.trec")))
    assert exported == sorted(QRELS)
    # Scored by ir_measures against the published qrels, the exported run gives groundkit's own figures.
    published = [ir_measures.Qrel(q, d, int(s)) for q, d, s in (line.split("\t") for line in QRELS)]
    reference = ir_measures.calc_aggregate([nDCG @ 10, nDCG @ 3, RR, Success @ 1], published, run)
    metrics = json.loads((out / "detail.json").read_text())["answerable"]
    for measure, name in ((nDCG @ 10, "ndcg@10"), (nDCG @ 3, "ndcg@3"), (RR, "mrr"), (Success @ 1, "recall@1")):
        assert abs(metrics[name] - reference[measure]) <= 5e-7, name
    assert metrics["ndcg@10"] < 1.0  # graded: the grade-2 and grade-3 documents are not all ranked first


def test_export_refuses_a_run_made_on_another_corpus(tmp_path):
    import_beir(odd_dataset(tmp_path / "beir"), tmp_path / "imp")
    out = tmp_path / "run"
    assert main(["run", "--corpus", str(tmp_path / "imp" / "corpus"), "--judgments",
                 str(tmp_path / "imp" / "judgments.jsonl"), "--out", str(out), "--set", "chunk.strategy=document"]) == 0
    other = write_dataset(tmp_path / "other")
    import_beir(other, tmp_path / "imp2")
    with pytest.raises(DatasetError, match="is not the corpus the run measured"):
        export_beir(out, tmp_path / "imp2", tmp_path / "trec")
    assert not (tmp_path / "trec").exists()


def test_qrels_with_and_without_a_header_import_alike(tmp_path):
    with_header = import_beir(odd_dataset(tmp_path / "a", ["query-id\tcorpus-id\tscore", *QRELS]), tmp_path / "oa")
    without = import_beir(odd_dataset(tmp_path / "b"), tmp_path / "ob")
    assert (with_header["qrels_header"], without["qrels_header"]) == (True, False)
    assert (tmp_path / "oa" / "judgments.jsonl").read_bytes() == (tmp_path / "ob" / "judgments.jsonl").read_bytes()
    # A headerless file whose first qrel is broken is not taken for a header.
    broken = odd_dataset(tmp_path / "c", ["q1\t<dbpedia:Oceanic_Airlines>\tyes", *QRELS])
    with pytest.raises(DatasetError, match=r"test\.tsv:1: first line is neither the header"):
        import_beir(broken, tmp_path / "oc")


def test_qrels_naming_what_the_subset_lacks_are_skipped_and_listed_or_refused(tmp_path, capsys):
    qrels = [*QRELS, "q9\tFoo\t1", "q2\t<dbpedia:Not_In_Subset>\t1", "q3\tgone\t0"]
    queries_only_gone = ["q1\t<dbpedia:Elsewhere>\t1"]  # q1's only relevant document is not in the subset
    source = odd_dataset(tmp_path / "beir", [*qrels[1:], *queries_only_gone])
    manifest = import_beir(source, tmp_path / "out")
    assert manifest["qrels_skipped"] == {"unknown_query": 1, "unknown_document": 3, "empty_document": 0}
    assert [(s["line"], s["query-id"], s["corpus-id"], s["reason"]) for s in manifest["qrels_skipped_lines"]] == [
        (7, "q9", "Foo", "query not in queries.jsonl"),
        (8, "q2", "<dbpedia:Not_In_Subset>", "document not in corpus.jsonl"),
        (9, "q3", "gone", "document not in corpus.jsonl"),
        (10, "q1", "<dbpedia:Elsewhere>", "document not in corpus.jsonl")]
    # q1 kept Foo; nothing is left out here. A query whose relevant documents were all skipped is listed.
    assert manifest["queries_left_without_relevant"] == []
    alone = odd_dataset(tmp_path / "beir2", ["q1\t<dbpedia:Elsewhere>\t1", "q2\tFOO\t1"])
    assert import_beir(alone, tmp_path / "out2")["queries_left_without_relevant"] == ["q1"]

    refused = r"test\.tsv:7: names query 'q9', which is not in queries\.jsonl \(--strict\)"
    with pytest.raises(DatasetError, match=refused):
        import_beir(source, tmp_path / "strict", strict=True)
    assert not (tmp_path / "strict").exists()
    assert main(["import-beir", str(source), "--out", str(tmp_path / "cli"), "--strict"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "test.tsv:7" in err and "fix:" in err and "Traceback" not in err
    result = subprocess.run(["groundkit", "import-beir", str(source), "--out", str(tmp_path / "cli2")],
                            capture_output=True, text=True, env=env(), check=False)
    assert result.returncode == 0
    assert ("note: 4 qrels skipped (1 unknown query, 3 unknown document), 0 queries left without a relevant "
            "document; listed in beir-import.json (--strict refuses them)") in result.stderr


ARGUANA = {
    "corpus": [{"_id": "arg1", "text": "School uniforms should be mandatory because they reduce bullying."},
               {"_id": "arg2", "text": "Uniforms do not reduce bullying; they suppress expression."},
               {"_id": "arg3", "text": "Homework improves discipline in young students."}],
    "queries": [{"_id": "arg1", "text": "School uniforms should be mandatory because they reduce bullying."},
                {"_id": "q-free", "text": "does homework improve discipline"}],
    "qrels": ["query-id\tcorpus-id\tscore", "arg1\targ2\t1", "q-free\targ3\t1"],
}


@pytest.mark.parametrize("keep", [False, True], ids=["beir-rule", "kept"])
def test_a_query_sharing_its_id_with_a_document_never_retrieves_it(tmp_path, keep):
    source = write_dataset(tmp_path / "beir", **ARGUANA)
    manifest = import_beir(source, tmp_path / "imp", keep_identical_ids=keep)
    assert manifest["identical_ids"] == ["arg1"] and manifest["identical_ids_excluded"] is not keep
    judgments = {j.query_id: j for j in load_judgments(tmp_path / "imp" / "judgments.jsonl")}
    assert judgments["arg1"].exclude_documents == ([] if keep else ["arg1.txt"])
    assert judgments["q-free"].exclude_documents == []
    out = tmp_path / "run"
    assert main(["run", "--corpus", str(tmp_path / "imp" / "corpus"), "--judgments",
                 str(tmp_path / "imp" / "judgments.jsonl"), "--out", str(out), "--set", "chunk.strategy=document"]) == 0
    document = {json.loads(line)["chunk_id"]: json.loads(line)["document"]
                for line in (out / "chunks.jsonl").read_text().splitlines()}
    ranked = [document[line.split()[2]] for line in (out / "run.trec").read_text().splitlines()
              if line.startswith("arg1 ")]
    # The query is arg1's own text: kept, arg1 ranks first and pushes the counter-argument down.
    assert ranked[0] == ("arg1.txt" if keep else "arg2.txt") and ("arg1.txt" in ranked) is keep
    mrr = json.loads((out / "detail.json").read_text())["answerable"]["mrr"]
    assert mrr == (0.75 if keep else 1.0)
