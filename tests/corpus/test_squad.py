"""`groundkit import-squad`: SQuAD and MRQA files turned into documents and quote judgments, rule by rule."""

from __future__ import annotations

import gzip
import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from groundkit.cli import main
from groundkit.corpus.beir import document_file, document_id
from groundkit.corpus.documents import load_corpus
from groundkit.corpus.judgments import load_judgments
from groundkit.corpus.spans import resolve_judgments
from groundkit.corpus.squad import import_squad
from groundkit.errors import DatasetError, OutputError
from tests.conftest import REPO
from tests.dvc_helpers import env

EXAMPLES = REPO / "examples" / "squad"
V11, V20 = EXAMPLES / "lighthouses-v1.1.json", EXAMPLES / "lighthouses-v2.0.json"
MRQA = EXAMPLES / "lighthouses.mrqa.jsonl"


def qa(qid: Any, question: str, *answers: tuple[str, int | None], **extra: Any) -> dict[str, Any]:
    return {"id": qid, "question": question, "answers": [{"text": t, "answer_start": s} for t, s in answers], **extra}


def squad(*articles: tuple[str | None, list[tuple[str, list[dict[str, Any]]]]]) -> dict[str, Any]:
    """A SQuAD file: each article a title and its paragraphs, each paragraph a context and its questions."""
    data = []
    for title, paragraphs in articles:
        article: dict[str, Any] = {"paragraphs": [{"context": c, "qas": q} for c, q in paragraphs]}
        if title is not None:
            article["title"] = title
        data.append(article)
    return {"version": "v2.0", "data": data}


def write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def judgments(out: Path) -> dict[str, dict[str, Any]]:
    lines = (out / "judgments.jsonl").read_text(encoding="utf-8").splitlines()
    return {record["query_id"]: record for record in map(json.loads, lines)}


def quotes(out: Path, query_id: str) -> list[str]:
    return [gold["quote"] for gold in judgments(out)[query_id]["gold"]]


def digest(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def loads_and_resolves(out: Path) -> None:
    """What `groundkit run` checks first: the corpus loads, ids ascend, every quote occurs exactly once."""
    documents = {d.path: d for d in load_corpus(out / "corpus")}
    resolve_judgments(load_judgments(out / "judgments.jsonl"), documents, judgments_path=out / "judgments.jsonl",
                      corpus_root=out / "corpus")


# --- the committed examples -----------------------------------------------------------------------------------


def test_squad_v11_example_becomes_one_document_per_article_and_one_judgment_per_question(tmp_path):
    manifest = import_squad(V11, tmp_path / "out")
    out = tmp_path / "out"
    source = json.loads(V11.read_text(encoding="utf-8"))
    contexts = [[p["context"] for p in article["paragraphs"]] for article in source["data"]]
    # Paragraphs in file order, a blank line between them; the title names the file.
    assert (out / "corpus" / "Lighthouse.txt").read_text(encoding="utf-8") == "\n\n".join(contexts[0]) + "\n"
    assert (out / "corpus" / "Bell Rock Lighthouse.txt").read_text(encoding="utf-8") == (
        "\n\n".join(contexts[1]) + "\n")
    assert sorted(p.name for p in (out / "corpus").iterdir()) == ["Bell Rock Lighthouse.txt", "Lighthouse.txt"]
    assert list(judgments(out)) == ["br-01", "br-02", "br-03", "br-04", "lh-01", "lh-02", "lh-03", "lh-04", "lh-05",
                                    "lh-06", "lh-07", "lh-12", "lh-13"]
    assert judgments(out)["br-02"] == {
        "query_id": "br-02", "query": "When was the Bell Rock Lighthouse built?", "category": "factoid",
        "gold": [{"document": "Bell Rock Lighthouse.txt", "quote": "between 1807 and 1810"}]}
    # "the lamp" is in paragraphs 1 and 2; "the light" twice in paragraph 2: each widened by one word.
    assert quotes(out, "lh-12") == ["the lamp,"]
    assert quotes(out, "lh-13") == ["the light visible"]
    assert {k: manifest[k] for k in ("documents", "contexts", "questions", "judgments", "answerable", "no_answer",
                                      "quotes", "quotes_extended", "words_added")} == {
        "documents": 2, "contexts": 5, "questions": 13, "judgments": 13, "answerable": 13, "no_answer": 0,
        "quotes": 14, "quotes_extended": 2, "words_added": {"1": 2}}
    assert manifest["longest_extension"] == {"query_id": "lh-13", "answer": "the light", "quote": "the light visible",
                                             "words_added": 1, "characters_added": 8}
    assert manifest["source"] == {"file": "lighthouses-v1.1.json", "format": "squad", "version": "1.1",
                                  "sha256": hashlib.sha256(V11.read_bytes()).hexdigest()}
    assert manifest == json.loads((out / "squad-import.json").read_text(encoding="utf-8"))
    # The file is named by the title as it reads; document_id gives the title back from it.
    assert document_id("Bell Rock Lighthouse.txt") == "Bell Rock Lighthouse"
    loads_and_resolves(out)


def test_squad_v20_example_has_no_answer_judgments_located_and_skipped_offsets(tmp_path):
    manifest = import_squad(V20, tmp_path / "out")
    found = judgments(tmp_path / "out")
    assert [q for q, j in found.items() if j["category"] == "no_answer"] == ["br-05", "lh-08", "lh-09"]
    assert found["lh-08"]["gold"] == []  # plausible_answers are not gold
    assert quotes(tmp_path / "out", "lh-02") == ["whale oil"]  # answer_start null, "whale oil" once: located
    assert quotes(tmp_path / "out", "lh-07") == ["1998"]  # answer_start one too far, "1998" once: located
    assert manifest["answers"] == {"total": 20, "at_offset": 18, "located_without_offset": 1,
                                   "located_despite_wrong_offset": 1, "merged": 6}
    assert manifest["skipped"] == {"no_offset": 1, "wrong_offset": 1, "empty_answer": 0, "not_unique": 0}
    assert manifest["skipped_questions"] == [
        {"query_id": "lh-10", "where": "article 1 ('Lighthouse'), paragraph 2", "reason": "no_offset",
         "answer": "light", "occurrences": 2},
        {"query_id": "lh-11", "where": "article 1 ('Lighthouse'), paragraph 3", "reason": "wrong_offset",
         "answer": "the", "occurrences": 9},
    ]
    assert "lh-10" not in found and "lh-11" not in found
    loads_and_resolves(tmp_path / "out")


def test_mrqa_example_reads_inclusive_spans_and_keeps_a_repeated_context_as_one_document(tmp_path):
    manifest = import_squad(MRQA, tmp_path / "out")
    out = tmp_path / "out"
    lines = [json.loads(line) for line in MRQA.read_text(encoding="utf-8").splitlines()]
    assert sorted(p.name for p in (out / "corpus").iterdir()) == ["context-000001.txt", "context-000002.txt"]
    assert (out / "corpus" / "context-000001.txt").read_text(encoding="utf-8") == lines[1]["context"] + "\n"
    assert (out / "corpus" / "context-000002.txt").read_text(encoding="utf-8") == lines[2]["context"] + "\n"
    # Line 4 repeats line 2's context: its question judges the same document.
    assert judgments(out)["m-lens-year"]["gold"] == [{"document": "context-000001.txt", "quote": "1822"}]
    assert quotes(out, "m-bell-rock-builder") == ["Robert Stevenson"]  # [start, end] with the end inclusive
    # One answer, two char_spans: "Fresnel" at both places, each widened to occur once.
    assert quotes(out, "m-lens-name") == ["Fresnel lens,", "Fresnel in"]
    assert quotes(out, "m-lens-gathers") == ["the light of the lamp"]  # "the lamp" overlaps it: merged
    assert manifest["source"]["header"] == {"dataset": "Lighthouses", "split": "dev"}
    assert {k: manifest[k] for k in ("documents", "contexts", "contexts_repeated", "questions", "judgments",
                                      "quotes", "quotes_extended")} == {
        "documents": 2, "contexts": 2, "contexts_repeated": 1, "questions": 8, "judgments": 8, "quotes": 9,
        "quotes_extended": 3}
    loads_and_resolves(out)


def test_gzipped_mrqa_and_a_chosen_format_give_the_same_import(tmp_path):
    compressed = tmp_path / "lighthouses.jsonl.gz"
    compressed.write_bytes(gzip.compress(MRQA.read_bytes(), mtime=0))
    import_squad(MRQA, tmp_path / "plain")
    manifest = import_squad(compressed, tmp_path / "gz", input_format="mrqa")
    assert manifest["source"]["sha256"] == hashlib.sha256(compressed.read_bytes()).hexdigest()
    plain, gz = digest(tmp_path / "plain"), digest(tmp_path / "gz")
    assert {k: v for k, v in plain.items() if k != "squad-import.json"} == {
        k: v for k, v in gz.items() if k != "squad-import.json"}


def test_import_is_byte_identical_across_runs_and_replaces_only_its_own_output(tmp_path):
    import_squad(V20, tmp_path / "a")
    import_squad(V20, tmp_path / "b")
    assert digest(tmp_path / "a") == digest(tmp_path / "b")
    (tmp_path / "a" / "notes.md").write_text("mine\n")
    with pytest.raises(OutputError, match="earlier `groundkit import-squad`"):
        import_squad(V20, tmp_path / "a")
    import_squad(V20, tmp_path / "a", force=True)
    assert (tmp_path / "a" / "notes.md").read_text() == "mine\n"
    assert {k: v for k, v in digest(tmp_path / "a").items() if k != "notes.md"} == digest(tmp_path / "b")
    # Issue 35 item 7: documents a user added to OUT/corpus/ were deleted by --force; now they are named.
    (tmp_path / "a" / "corpus" / "extra").mkdir()
    (tmp_path / "a" / "corpus" / "extra" / "my doc.md").write_text("mine too\n")
    (tmp_path / "a" / "corpus" / "z.md").write_text("and this\n")
    before = digest(tmp_path / "a")
    with pytest.raises(OutputError) as caught:
        import_squad(V20, tmp_path / "a", force=True)
    assert "corpus: holds 2 files this import does not write: extra/my doc.md, z.md" in str(caught.value)
    assert digest(tmp_path / "a") == before and not [p for p in (tmp_path / "a").iterdir()
                                                      if p.name.startswith(".groundkit-import")]
    (tmp_path / "precious").mkdir()
    (tmp_path / "precious" / "keep.txt").write_text("keep\n")
    with pytest.raises(OutputError, match="was not written by groundkit"):
        import_squad(V20, tmp_path / "precious")
    with pytest.raises(OutputError, match="not of import-squad"):
        from groundkit.corpus.beir import import_beir
        from tests.corpus.test_beir import write_dataset
        import_beir(write_dataset(tmp_path / "beir"), tmp_path / "beir-out")
        import_squad(V20, tmp_path / "beir-out", force=True)
    copy = tmp_path / "in" / "file.json"
    copy.parent.mkdir()
    copy.write_bytes(V20.read_bytes())
    with pytest.raises(OutputError, match="--out contains the input file"):
        import_squad(copy, tmp_path / "in", force=True)


# --- gold quotes ----------------------------------------------------------------------------------------------


def test_a_repeated_answer_is_widened_word_by_word_alternately_right_then_left_inside_its_paragraph(tmp_path):
    first = "the cat sat on the mat"
    second = "a cat sat on a wall and a cat sat on a mat; the cat sat on the mat too"
    data = squad(("Cats", [
        (first, [qa("q1", "Which animal sat on the mat?", ("cat", 4)),
                 qa("q2", "What sat?", ("the cat sat on the mat", 0))]),
        (second, [qa("q3", "What sat on the wall?", ("cat", 2)),
                  qa("q4", "Where did the second cat sit?", ("the mat", second.index("the mat")))]),
    ]))
    manifest = import_squad(write(tmp_path / "cats.json", data), tmp_path / "out")
    out = tmp_path / "out"
    # The whole of paragraph 1 occurs in paragraph 2, so no quote inside paragraph 1 is unique: q1 and q2 skipped.
    assert [(s["query_id"], s["reason"]) for s in manifest["skipped_questions"]] == [("q1", "not_unique"),
                                                                                     ("q2", "not_unique")]
    # q3: "cat" -> "cat sat" (right) -> "a cat sat" (left) -> "a cat sat on" (right), each still twice or more;
    # the left side is at the paragraph's start, so right again: "a cat sat on a" (twice), "a cat sat on a wall".
    assert quotes(out, "q3") == ["a cat sat on a wall"]
    # q4: "the mat" (in both paragraphs) -> "the mat too" (right): once.
    assert quotes(out, "q4") == ["the mat too"]
    assert manifest["words_added"] == {"1": 1, "5": 1}
    assert manifest["longest_extension"] == {"query_id": "q3", "answer": "cat", "quote": "a cat sat on a wall",
                                             "words_added": 5, "characters_added": 16}
    loads_and_resolves(out)


def test_widening_stops_at_the_paragraph_edge_and_goes_on_the_other_side(tmp_path):
    # "red door" ends paragraph 1 and opens paragraph 2: widening right would leave paragraph 1, so it goes left.
    data = squad(("Doors", [
        ("paint the red door", [qa("q1", "Which door?", ("red door", 10))]),
        ("red door opens", [qa("q2", "Which door opens?", ("red door", 0))]),
    ]))
    import_squad(write(tmp_path / "d.json", data), tmp_path / "out")
    assert quotes(tmp_path / "out", "q1") == ["the red door"]
    assert quotes(tmp_path / "out", "q2") == ["red door opens"]
    assert (tmp_path / "out" / "corpus" / "Doors.txt").read_text() == "paint the red door\n\nred door opens\n"


def test_an_answer_ending_inside_a_word_is_widened_to_the_end_of_that_word_first(tmp_path):
    data = squad(("Years", [("In the 1990s and the 1990s-era", [qa("q1", "When?", ("1990s", 21))])]))
    import_squad(write(tmp_path / "y.json", data), tmp_path / "out")
    assert quotes(tmp_path / "out", "q1") == ["1990s-era"]


def test_overlapping_answers_merge_and_distinct_answers_stay_distinct(tmp_path):
    context = "Ada Lovelace wrote the first program for the Analytical Engine of Charles Babbage."
    data = squad(("Ada", [(context, [
        qa("q1", "Who wrote the first program?", ("Ada Lovelace", 0), ("Lovelace", 4), ("Ada Lovelace", 0)),
        qa("q2", "Who was involved?", ("Ada Lovelace", 0), ("Charles Babbage", 66)),
        qa("q3", "What did she write for?", ("the Analytical Engine", 41), ("Engine of Charles", 56)),
    ])]))
    manifest = import_squad(write(tmp_path / "a.json", data), tmp_path / "out")
    assert quotes(tmp_path / "out", "q1") == ["Ada Lovelace"]
    assert quotes(tmp_path / "out", "q2") == ["Ada Lovelace", "Charles Babbage"]
    # Sharing "Engine": one quote from the first's start to the second's end.
    assert quotes(tmp_path / "out", "q3") == ["the Analytical Engine of Charles"]
    assert manifest["answers"]["merged"] == 3  # q1: two into the first; q3: one into the other
    assert manifest["quotes"] == 4


def test_touching_answers_that_share_no_character_stay_two_quotes(tmp_path):
    data = squad(("T", [("New York City", [qa("q1", "Which?", ("New York", 0), ("City", 9))])]))
    import_squad(write(tmp_path / "t.json", data), tmp_path / "out")
    assert quotes(tmp_path / "out", "q1") == ["New York", "City"]


def test_answer_whitespace_is_trimmed(tmp_path):
    data = squad(("W", [("The answer is forty two today.", [qa("q1", "What?", (" forty two ", 13))])]))
    import_squad(write(tmp_path / "w.json", data), tmp_path / "out")
    assert quotes(tmp_path / "out", "q1") == ["forty two"]


# --- offsets that are missing or wrong --------------------------------------------------------------------------

OFFSETS = squad(("Bells", [
    ("The bell rang at noon. The bell rang again at six.", [
        qa("null-once", "When did it ring first?", ("noon", None)),
        qa("wrong-once", "When did it ring again?", ("six", 3)),
        qa("beyond-once", "Again when?", ("at six", 900)),
        qa("negative-once", "First when?", ("at noon", -1)),
        qa("null-twice", "What rang?", ("The bell", None)),
        qa("wrong-twice", "What rang again?", ("The bell rang", 5)),
        qa("null-never", "What is it?", ("a gong", None)),
        qa("one-bad-of-two", "Which bell?", ("The bell", 0), ("bell rang", None)),
        qa("empty", "Nothing?", ("  ", 0)),
    ]),
    ("Nothing else rang.", [qa("no-offset-key", "What else?", ("Nothing else", 0))]),
]))
del OFFSETS["data"][0]["paragraphs"][1]["qas"][0]["answers"][0]["answer_start"]


def test_missing_and_wrong_offsets_are_located_when_the_answer_occurs_once_in_its_paragraph(tmp_path):
    manifest = import_squad(write(tmp_path / "o.json", OFFSETS), tmp_path / "out")
    out = tmp_path / "out"
    assert quotes(out, "null-once") == ["noon"]
    assert quotes(out, "wrong-once") == ["six"]
    assert quotes(out, "beyond-once") == ["at six"]
    assert quotes(out, "negative-once") == ["at noon"]
    assert quotes(out, "no-offset-key") == ["Nothing else"]
    assert manifest["answers"]["located_without_offset"] == 2
    assert manifest["answers"]["located_despite_wrong_offset"] == 3
    assert manifest["skipped"] == {"no_offset": 3, "wrong_offset": 1, "empty_answer": 1, "not_unique": 0}
    assert [(s["query_id"], s["reason"], s.get("occurrences")) for s in manifest["skipped_questions"]] == [
        ("null-twice", "no_offset", 2), ("wrong-twice", "wrong_offset", 2), ("null-never", "no_offset", 0),
        ("one-bad-of-two", "no_offset", 2), ("empty", "empty_answer", None)]
    # One answer of two that cannot be located skips the whole question: its gold would be incomplete.
    assert "one-bad-of-two" not in judgments(out)
    loads_and_resolves(out)


def test_strict_refuses_the_file_at_the_first_question_it_would_skip(tmp_path):
    with pytest.raises(DatasetError) as caught:
        import_squad(write(tmp_path / "o.json", OFFSETS), tmp_path / "out", strict=True)
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / 'o.json'}: key 'data[0].paragraphs[0].qas[4]': article 1 ('Bells'), "
                              "paragraph 1, question 'null-twice': an answer has no offset and its text does not "
                              "occur exactly once in its context (its text occurs 2 times in its context): answer "
                              "'The bell' (--strict)"), message
    assert "fix:" in message
    assert not (tmp_path / "out").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.json"]


def test_an_offset_past_its_context_is_never_read_in_the_next_paragraph(tmp_path):
    # The recorded offset runs past paragraph 1; "north gate" does occur across the join in the document, and once
    # in paragraph 2, but never in paragraph 1: the question is skipped, not located in the neighbour.
    data = squad(("Gates", [("Walk to the north", [qa("q1", "Where?", ("north gate", 12))]),
                            ("gate, then the north gate.", [qa("q2", "Then where?", ("the north gate", 11))])]))
    manifest = import_squad(write(tmp_path / "g.json", data), tmp_path / "out")
    assert manifest["skipped_questions"] == [{"query_id": "q1", "where": "article 1 ('Gates'), paragraph 1",
                                              "reason": "wrong_offset", "answer": "north gate", "occurrences": 0}]


# --- unanswerable questions ------------------------------------------------------------------------------------


def test_impossible_and_answerless_questions_are_no_answer_and_the_category_is_chosen(tmp_path):
    data = squad(("Moon", [("The Moon has no lighthouse.", [
        qa("q1", "Who keeps the lighthouse on the Moon?", is_impossible=True,
           plausible_answers=[{"text": "lighthouse", "answer_start": 16}]),
        {"id": "q2", "question": "Who painted it?", "is_impossible": True},  # 2.0 files may leave answers out
        qa("q3", "When was it lit?"),  # no answers: unanswerable, as the SQuAD 2.0 evaluation script decides
        qa("q4", "What does the Moon not have?", ("no lighthouse", None)),
    ])]))
    manifest = import_squad(write(tmp_path / "m.json", data), tmp_path / "out", category="lexical_gap")
    found = judgments(tmp_path / "out")
    assert {q: (j["category"], j["gold"]) for q, j in found.items()} == {
        "q1": ("no_answer", []), "q2": ("no_answer", []), "q3": ("no_answer", []),
        "q4": ("lexical_gap", [{"document": "Moon.txt", "quote": "no lighthouse"}])}
    assert (manifest["answerable"], manifest["no_answer"], manifest["category"]) == (1, 3, "lexical_gap")


# --- documents, ids and text -----------------------------------------------------------------------------------


def test_titles_become_safe_reversible_names_and_untitled_or_repeated_articles_get_their_own(tmp_path):
    data = squad(
        ("AC/DC", [("A band from Sydney.", [qa("q1", "Where from?", ("Sydney", 12))])]),
        (None, [("No title here.", [])]),
        ("Repeat", [("First of two.", [])]),
        ("Repeat", [("Second of two.", [])]),
        ("  ", [("A blank title.", [])]),
        ("case", [("Lower case.", [])]),
        ("Case", [("Upper case.", [])]),
        ("Repeat (2)", [("A title that looks generated.", [])]),
    )
    manifest = import_squad(write(tmp_path / "t.json", data), tmp_path / "out")
    names = sorted(p.name for p in (tmp_path / "out" / "corpus").iterdir())
    ids = {"AC/DC", "article-2", "Repeat", "Repeat (3)", "article-5", "case", "Case", "Repeat (2)"}
    assert sorted(document_id(name) for name in names) == sorted(ids)
    assert "AC%2FDC.txt" in names and "case.txt" in names and "%43ase.txt" in names  # case-insensitive safe
    assert (tmp_path / "out" / "corpus" / "Repeat (3).txt").read_text() == "Second of two.\n"  # as it reads
    assert document_file("Repeat (3)", readable=True) == "Repeat (3).txt"
    assert manifest["documents_renamed"]["AC/DC"] == "AC%2FDC.txt"


def test_cr_and_a_leading_byte_order_mark_are_normalised_and_offsets_follow(tmp_path):
    context = "\ufeffLine one.\r\nLine two has the key.\rLine three."
    start = context.index("the key")
    data = squad(("CR", [(context, [qa("q1", "What does line two have?", ("the key", start)),
                                    qa("q2", "Which line?", ("one.\r\nLine", context.index("one.")))])]))
    manifest = import_squad(write(tmp_path / "c.json", data), tmp_path / "out")
    text = (tmp_path / "out" / "corpus" / "CR.txt").read_bytes()
    assert text == b"Line one.\nLine two has the key.\nLine three.\n"
    assert quotes(tmp_path / "out", "q1") == ["the key"]
    assert quotes(tmp_path / "out", "q2") == ["one.\nLine"]
    assert (manifest["contexts_with_cr"], manifest["contexts_with_bom"]) == (1, 1)
    loads_and_resolves(tmp_path / "out")


def test_other_control_characters_are_kept_and_load(tmp_path):
    context = "Tab\there, form\x0cfeed, line\u2028separator and the end."
    data = squad(("Ctl", [(context, [qa("q1", "Where?", ("the end", context.index("the end")))])]))
    import_squad(write(tmp_path / "c.json", data), tmp_path / "out")
    assert (tmp_path / "out" / "corpus" / "Ctl.txt").read_text(encoding="utf-8") == context + "\n"
    loads_and_resolves(tmp_path / "out")


def test_empty_contexts_add_nothing_and_an_empty_article_is_no_document(tmp_path):
    data = squad(
        ("Sparse", [("", []), ("Only this paragraph.", [qa("q1", "Which?", ("this", 5))]), ("  \n ", [])]),
        ("Empty", [("", [qa("q2", "What is here?", ("nothing", 0)), qa("q3", "Anything?", is_impossible=True)])]),
    )
    manifest = import_squad(write(tmp_path / "e.json", data), tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out" / "corpus").iterdir()) == ["Sparse.txt"]
    assert (tmp_path / "out" / "corpus" / "Sparse.txt").read_text() == "Only this paragraph.\n"
    assert (manifest["contexts_empty"], manifest["documents_empty"]) == (3, ["Empty"])
    assert sorted(judgments(tmp_path / "out")) == ["q1", "q3"]
    assert manifest["skipped_questions"][0]["query_id"] == "q2"


def test_integer_ids_are_accepted_and_judgments_come_in_plain_string_order(tmp_path):
    data = squad(("N", [("one two three four", [qa(10, "Ten?", ("one", 0)), qa(9, "Nine?", ("two", 4)),
                                                qa("b", "Bee?", ("three", 8)), qa("B", "Big bee?", ("four", 14))])]))
    import_squad(write(tmp_path / "n.json", data), tmp_path / "out")
    assert list(judgments(tmp_path / "out")) == ["10", "9", "B", "b"]
    assert [j.query_id for j in load_judgments(tmp_path / "out" / "judgments.jsonl")] == ["10", "9", "B", "b"]


def test_a_question_exported_twice_is_judged_once(tmp_path):
    paragraph = ("The keeper lit the lamp.", [qa("q1", "Who lit the lamp?", ("The keeper", 0))])
    manifest = import_squad(write(tmp_path / "twice.json", squad(("A", [paragraph]), ("B", [paragraph]))),
                            tmp_path / "out")
    assert judgments(tmp_path / "out")["q1"]["gold"] == [{"document": "A.txt", "quote": "The keeper"}]
    # Article B repeats A's text: one document, so that a retriever returning either copy is not half wrong.
    assert sorted(p.name for p in (tmp_path / "out" / "corpus").iterdir()) == ["A.txt"]
    assert (manifest["questions"], manifest["questions_repeated"], manifest["documents"]) == (1, 1, 1)
    assert manifest["documents_repeated"] == {"B": "A"}


# --- bad input: one message naming the file, the article and the question ---------------------------------------

GOOD = squad(("Good", [("Some text here.", [qa("g1", "What?", ("text", 5))])]))


def _edit(change):
    def make(tmp_path: Path) -> Path:
        data = json.loads(json.dumps(GOOD))
        change(data)
        return write(tmp_path / "bad.json", data)
    return make


def _raw(text: str | bytes, name: str = "bad.json"):
    def make(tmp_path: Path) -> Path:
        path = tmp_path / name
        path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
        return path
    return make


def _question(**fields: Any):
    return _edit(lambda d: d["data"][0]["paragraphs"][0]["qas"].append({"id": "x1", "question": "Why?", **fields}))


MRQA_HEAD = '{"header": {"dataset": "T", "split": "dev"}}\n'
MRQA_QA = {"qid": "m1", "question": "What?", "detected_answers": [{"text": "text", "char_spans": [[5, 8]]}]}


def _mrqa(*records: Any) -> Any:
    return _raw(MRQA_HEAD + "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records),
                "bad.jsonl")


BAD = {
    # case: (make the file, what the message must hold)
    "not json": (_raw('{"data": [\n  {"title": "x",}\n]}'), ["bad.json", "invalid JSON", "line 2"]),
    "not utf-8": (_raw(b'{"data": ["caf\xe9"]}'), ["bad.json", "not valid UTF-8 (byte 0xe9"]),
    "empty file": (_raw("  \n"), ["bad.json", "is empty"]),
    "no data": (_raw('{"version": "1.1"}'), ["bad.json", "key 'data'", "field 'data' is missing"]),
    "data not a list": (_raw('{"data": {}}'), ["key 'data'", "must be the list of articles, got object"]),
    "article not an object": (_raw('{"data": [[]]}'), ["key 'data[0]'", "article 1: expected a JSON object"]),
    "no paragraphs": (_raw('{"data": [{"title": "T"}]}'),
                      ["key 'data[0].paragraphs'", "article 1 ('T'): field 'paragraphs' is missing"]),
    "title a number": (_edit(lambda d: d["data"][0].update(title=7)),
                       ["key 'data[0].title'", "article 1: field 'title' must be a string, got number"]),
    "context missing": (_edit(lambda d: d["data"][0]["paragraphs"][0].pop("context")),
                        ["key 'data[0].paragraphs[0].context'", "article 1 ('Good'), paragraph 1: field 'context'"]),
    "context with NUL": (_edit(lambda d: d["data"][0]["paragraphs"][0].update(context="a\0b")),
                         ["paragraph 1: context holds a NUL character"]),
    "qas not a list": (_edit(lambda d: d["data"][0]["paragraphs"][0].update(qas="none")),
                       ["key 'data[0].paragraphs[0].qas'", "must be a list of questions, got string"]),
    "question not an object": (_edit(lambda d: d["data"][0]["paragraphs"][0]["qas"].append("q")),
                               ["key 'data[0].paragraphs[0].qas[1]'", "expected a JSON object, got string"]),
    "id missing": (_edit(lambda d: d["data"][0]["paragraphs"][0]["qas"][0].pop("id")),
                   ["key 'data[0].paragraphs[0].qas[0].id'", "field 'id' is missing"]),
    "id a float": (_question(id=1.5), ["qas[1].id", "field 'id' must be a string id, got number"]),
    "id a boolean": (_question(id=True), ["qas[1].id", "got boolean"]),
    "id with a space": (_question(id="q 1"), ["qas[1].id", "question id 'q 1' cannot be a query_id"]),
    "duplicate id": (_edit(lambda d: d["data"].append(
        {"title": "Two", "paragraphs": [{"context": "More text.", "qas": [qa("g1", "Again?", ("text", 5))]}]})),
        ["article 2 ('Two'), paragraph 1, question 'g1': the question id 'g1' is used twice (first by article 1 "
         "('Good'), paragraph 1, question 'g1')"]),
    "question missing": (_edit(lambda d: d["data"][0]["paragraphs"][0]["qas"][0].pop("question")),
                         ["question 'g1': field 'question' is missing"]),
    "question empty": (_question(question=" ", answers=[]), ["question 'x1': the question is empty"]),
    "answers missing": (_edit(lambda d: d["data"][0]["paragraphs"][0]["qas"][0].pop("answers")),
                        ["question 'g1': field 'answers' is missing"]),
    "answer text missing": (_question(answers=[{"answer_start": 0}]),
                            ["qas[1].answers[0].text", "question 'x1': field 'text' is missing"]),
    "answer_start a string": (_question(answers=[{"text": "text", "answer_start": "5"}]),
                              ["qas[1].answers[0].answer_start", "must be a character offset (an integer) or null, "
                               "got string"]),
    "answer_start a float": (_question(answers=[{"text": "text", "answer_start": 5.0}]),
                             ["answer_start", "got number"]),
    "is_impossible a string": (_question(is_impossible="no", answers=[]),
                               ["qas[1].is_impossible", "must be true or false, got string"]),
    "impossible with answers": (_question(is_impossible=True, answers=[{"text": "text", "answer_start": 5}]),
                                ["question 'x1': is_impossible is true but the question has answers"]),
    "possible without answers": (_question(is_impossible=False, answers=[]),
                                 ["question 'x1': is_impossible is false but the question has no answers"]),
    "duplicate key": (_raw('{"data": [], "data": []}'), ["bad.json", "key 'data' appears twice"]),
    "lone surrogate": (_raw('{"data": [{"title": "\\ud800", "paragraphs": []}]}'),
                       ["bad.json", "lone surrogate U+D800"]),
    "mrqa as squad": (_mrqa({"context": "Some text here.", "qas": [MRQA_QA]}),
                      ["bad.jsonl", "invalid JSON: Extra data (line 2, column 1)",
                       "for MRQA JSONL pass --format mrqa"]),
    "mrqa not json": (_mrqa({"context": "Some text here.", "qas": [MRQA_QA]}, "{oops"),
                      ["bad.jsonl:3", "invalid JSON"]),
    "mrqa line not an object": (_mrqa([1, 2]), ["bad.jsonl:2", "expected a JSON object, got array"]),
    "mrqa context missing": (_mrqa({"qas": [MRQA_QA]}), ["bad.jsonl:2", "field 'context' is missing"]),
    "mrqa qid missing": (_mrqa({"context": "Some text here.", "qas": [{"question": "What?"}]}),
                         ["bad.jsonl:2", "key 'qas[0].qid'", "field 'qid' is missing"]),
    "mrqa no detected answers": (_mrqa({"context": "Some text here.", "qas": [{**MRQA_QA, "detected_answers": []}]}),
                                 ["bad.jsonl:2", "question 'm1': detected_answers is empty"]),
    "mrqa span not a pair": (_mrqa({"context": "Some text here.", "qas": [
        {**MRQA_QA, "detected_answers": [{"text": "text", "char_spans": [[5]]}]}]}),
        ["bad.jsonl:2", "key 'qas[0].detected_answers[0].char_spans[0]'",
         "question 'm1': char_spans[0] must be [start, end], two integers, got [5]"]),
    "mrqa second header": (_mrqa({"context": "Some text here.", "qas": [MRQA_QA]}, {"header": {}}),
                           ["bad.jsonl:3", "a header line after the first line"]),
    "mrqa duplicate qid": (_mrqa({"context": "Some text here.", "qas": [MRQA_QA]},
                                 {"context": "Other text here.", "qas": [MRQA_QA]}),
                           ["bad.jsonl:3", "the question id 'm1' is used twice (first by question 'm1' on line 2)"]),
    "gzip broken": (_raw(b"\x1f\x8b" + b"not a deflate stream" * 10, "bad.jsonl.gz"),
                    ["bad.jsonl.gz", "cannot be decompressed"]),
    "nothing to import": (_raw('{"data": [{"title": "T", "paragraphs": [{"context": "x", "qas": []}]}]}'),
                          ["bad.json", "holds no questions"]),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_message_naming_file_article_and_question_and_writes_nothing(tmp_path, case, capsys):
    make, expected = BAD[case]
    path = make(tmp_path)
    forced = ["--format", "squad"] if case == "mrqa as squad" else []
    assert main(["import-squad", str(path), "--out", str(tmp_path / "out"), *forced]) == 1
    stderr = capsys.readouterr().err
    assert stderr.startswith(f"error: {path}") and stderr.count("error: ") == 1, stderr
    assert "fix:" in stderr and "Traceback" not in stderr, stderr
    for part in expected:
        assert part in stderr, stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]  # no --out, no scratch folder


def test_options_are_checked(tmp_path):
    with pytest.raises(DatasetError, match="'no_answer' is not a category of answerable questions"):
        import_squad(V11, tmp_path / "out", category="no_answer")
    with pytest.raises(DatasetError, match="'csv' is not a format import-squad reads"):
        import_squad(V11, tmp_path / "out", input_format="csv")
    with pytest.raises(DatasetError, match="does not exist"):
        import_squad(tmp_path / "missing.json", tmp_path / "out")
    with pytest.raises(DatasetError, match="is not a file"):
        import_squad(tmp_path, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_failure_late_in_a_streamed_file_leaves_nothing_behind(tmp_path):
    lines = [json.loads(line) for line in MRQA.read_text(encoding="utf-8").splitlines()]
    bad = tmp_path / "late.jsonl"
    bad.write_text("".join(json.dumps(r) + "\n" for r in lines) + '{"context": 5, "qas": []}\n', encoding="utf-8")
    with pytest.raises(DatasetError, match=rf"late\.jsonl:{len(lines) + 1}: key 'context': field 'context' must be"):
        import_squad(bad, tmp_path / "out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["late.jsonl"]


# --- the command line --------------------------------------------------------------------------------------------


def test_cli_prints_counts_and_the_extension_summary_and_notes_on_stderr(tmp_path):
    result = subprocess.run(["groundkit", "import-squad", str(V20), "--out", str(tmp_path / "out")],
                            capture_output=True, text=True, env=env(), check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "2 documents, 16 judgments (13 answerable, 3 no_answer) from 18 questions; 2 skipped",
        "20 answers: 18 at their offset, 1 located without one, 1 located despite a wrong one; 6 merged into an "
        "overlapping answer",
        "14 quotes, 2 extended to occur exactly once in their document (words added: 1: 2)",
        'longest extension: lh-13, "the light" -> "the light visible" (+1 word)',
        f"written to {tmp_path / 'out'} (details in squad-import.json)",
    ]
    # stderr is a pipe here: notes only, no progress bar.
    assert result.stderr.splitlines() == [
        "note: 2 questions skipped (1 no offset, 1 wrong offset); listed in squad-import.json (--strict refuses them)",
    ]
    strict = subprocess.run(["groundkit", "import-squad", str(V20), "--out", str(tmp_path / "s"), "--strict"],
                            capture_output=True, text=True, env=env(), check=False)
    assert strict.returncode == 1 and "question 'lh-10'" in strict.stderr and "(--strict)" in strict.stderr


@pytest.mark.parametrize(("title", "name"), [
    ("Bell Rock Lighthouse", "Bell Rock Lighthouse.txt"),   # spaces stay spaces
    ("Phare d'Eckmühl", "Phare d'Eckmühl.txt"),              # letters of any script stay, in NFC
    ("AC/DC", "AC%2FDC.txt"),                                # a path separator must be encoded
    ("What? A: B*", "What%3F A%3A B%2A.txt"),                # so must what Windows refuses in a name
    ("100% pure", "100%25 pure.txt"),                        # and the escape character itself
    (".htaccess", "%2Ehtaccess.txt"),                        # a hidden file no corpus would read
    ("-v", "%2Dv.txt"),                                      # an option on a command line
    ("tab\there", "tab%09here.txt"),                         # a control character
    ("e\u0301te\u0301", "e%CC%81te%CC%81.txt"),                # not NFC: ASCII, so no file system normalises it
])
def test_titles_become_readable_file_names_with_only_what_must_be_encoded(tmp_path, title, name):
    data = squad((title, [("The light was first lit in 1811.", [qa("q1", "When was it first lit?", ("1811", 27))])]))
    manifest = import_squad(write(tmp_path / "one.json", data), tmp_path / "out")
    assert [p.name for p in (tmp_path / "out" / "corpus").iterdir()] == [name]
    assert document_id(name) == title
    assert manifest["documents_renamed"] == ({} if name == title + ".txt" else {title: name})
    loads_and_resolves(tmp_path / "out")


# --- scoring an import: groundkit's figures against the file's own offsets -------------------------------------


def _independent_metrics(source: dict[str, Any], names: dict[str, str], chunks: list[dict[str, Any]],
                         ranking: dict[str, list[str]], k: int) -> dict[str, tuple[float, float, float]]:
    """hit rate@k, MRR and nDCG@k of each answerable question, from the SQuAD file's answer offsets alone.

    Written from the definitions: a chunk is relevant when it shares a character with an answer, placed in
    its document at the paragraph's offset (paragraphs joined by two characters); hit@k = 1 if a relevant
    chunk is in the top k; RR = 1 / rank of the first relevant chunk; nDCG@k = sum over relevant ranks
    r <= k of 1 / log2(r + 1), over the same sum for min(#relevant, k) ideal ranks.
    """
    import math

    figures = {}
    for article in source["data"]:
        document, offset = names[article["title"]], 0
        for paragraph in article["paragraphs"]:
            for question in paragraph["qas"]:
                answers = [(offset + a["answer_start"], offset + a["answer_start"] + len(a["text"]))
                           for a in question["answers"]]
                relevant = {c["chunk_id"] for c in chunks if c["document"] == document and any(
                    c["start_offset"] < end and start < c["end_offset"] for start, end in answers)}
                ranks = [rank for rank, chunk in enumerate(ranking[question["id"]], start=1) if chunk in relevant]
                dcg = sum(1 / math.log2(rank + 1) for rank in ranks if rank <= k)
                ideal = sum(1 / math.log2(rank + 1) for rank in range(1, min(len(relevant), k) + 1))
                figures[question["id"]] = (float(bool(ranks) and ranks[0] <= k), 1 / ranks[0] if ranks else 0.0,
                                           dcg / ideal)
            offset += len(paragraph["context"]) + 2
    return figures


@pytest.mark.parametrize("size", [60, 150])
def test_run_on_an_import_scores_as_the_original_offsets_say(tmp_path, size):
    import csv

    from groundkit.config import load_params
    from groundkit.pipeline.runner import run

    out = tmp_path / "imp"
    import_squad(V11, out)
    params = load_params(None, [f"chunk.size={size}", "retrieve.depth=100"])
    run(out / "corpus", out / "judgments.jsonl", params, tmp_path / "run")
    chunks = [json.loads(line) for line in (tmp_path / "run" / "chunks.jsonl").read_text().splitlines()]
    ranking: dict[str, list[str]] = {}
    for line in (tmp_path / "run" / "run.trec").read_text().splitlines():
        query_id, _, chunk_id, rank, *_ = line.split()
        ranking.setdefault(query_id, []).append(chunk_id)
        assert int(rank) == len(ranking[query_id])
    source = json.loads(V11.read_text(encoding="utf-8"))
    names = {"Lighthouse": "Lighthouse.txt", "Bell Rock Lighthouse": "Bell Rock Lighthouse.txt"}
    expected = _independent_metrics(source, names, chunks, ranking, k=10)
    with (tmp_path / "run" / "per_query.csv").open(encoding="utf-8") as handle:
        rows = {row["query_id"]: row for row in csv.DictReader(handle)}
    got = {q: (float(r["recall@10"]), float(r["mrr"]), float(r["ndcg@10"])) for q, r in rows.items()}
    assert sorted(got) == sorted(expected)
    for query_id, figures in expected.items():
        assert got[query_id] == pytest.approx(figures, abs=1e-6), query_id
    # Not a trivial corpus: some first hits are below rank 1.
    assert min(f[1] for f in expected.values()) < 1.0


def test_a_progress_bar_is_drawn_only_on_a_terminal(tmp_path):
    import sys

    from tests.pipeline.test_progress import _run_with_stderr_on_a_pty

    script = ("import sys; from groundkit.console import progress as _progress; _progress.DELAY_S = 0; "
              "from groundkit.cli import main; "
              "sys.exit(main(['import-squad', sys.argv[1], '--out', sys.argv[2]]))")
    returncode, output = _run_with_stderr_on_a_pty([sys.executable, "-c", script, str(MRQA), str(tmp_path / "a")])
    assert returncode == 0, output.decode(errors="replace")
    assert b"import-squad:" in output and output.count(b"note: ") == 1, output.decode(errors="replace")
    piped = subprocess.run([sys.executable, "-c", script, str(V11), str(tmp_path / "b")], capture_output=True,
                           env=env(), check=False)
    assert piped.returncode == 0 and b"import-squad:" not in piped.stderr


def test_a_widened_quote_makes_a_chunk_holding_only_the_added_words_relevant(tmp_path):
    """The cost of widening, as KNOWN_LIMITATIONS.md states it: where a chunk boundary falls between the answer
    and the words added to it, the chunk after the boundary is relevant too."""
    from groundkit.config import ChunkParams
    from groundkit.corpus.chunking import chunk_documents

    import_squad(V11, tmp_path / "out")
    document = {d.path: d for d in load_corpus(tmp_path / "out" / "corpus")}["Lighthouse.txt"]
    answer_start = document.text.index("the light visible")
    added = answer_start + len("the light ")  # "visible"
    for size in range(40, 400):
        chunks = [c for c in chunk_documents([document], ChunkParams(size=size)) if c.start == added]
        if chunks:
            break
    assert chunks, "no chunk size puts a boundary before the added word"
    (after,) = chunks
    assert not (after.start < answer_start + len("the light"))  # it holds none of the answer...
    assert after.start < answer_start + len("the light visible")  # ...but part of the quote: relevant
