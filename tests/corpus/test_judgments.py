"""load_judgments: valid files load; every malformation names its line."""

import json

import pytest

from groundkit.corpus.judgments import Category, load_judgments
from groundkit.errors import JudgmentsError

GOOD = {"query_id": "q1", "query": "what is a lease", "category": "factoid",
        "gold": [{"document": "a.md", "quote": "a lease is"}]}
NO_ANSWER = {"query_id": "q2", "query": "sourdough", "category": "no_answer", "gold": []}


def write(tmp_path, lines: list[str]):
    path = tmp_path / "judgments.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_loads_in_file_order_skipping_blank_lines(tmp_path):
    path = write(tmp_path, [json.dumps(GOOD), "", "   ", json.dumps(NO_ANSWER)])
    judgments = load_judgments(path)
    assert [j.query_id for j in judgments] == ["q1", "q2"]
    assert [j.line for j in judgments] == [1, 4]
    assert judgments[1].category is Category.NO_ANSWER and judgments[1].gold == []


@pytest.mark.parametrize(
    ("lines", "line", "message"),
    [
        (['{"query_id": "q1",'], 1, "invalid JSON"),
        ([json.dumps(GOOD), json.dumps([GOOD])], 2, "expected a JSON object, got a JSON array"),
        ([json.dumps({k: v for k, v in GOOD.items() if k != "query"})], 1, "'query': is required"),
        ([json.dumps(GOOD | {"answer": "x"})], 1, "'answer': is not a known field"),
        ([json.dumps(GOOD | {"category": "trivia"})], 1, "unknown category"),
        ([json.dumps(GOOD | {"query": "  "})], 1, "query is empty"),
        ([json.dumps(GOOD | {"query": 7})], 1, "key 'query'"),
        ([json.dumps(GOOD | {"gold": [{"document": "a.md", "quote": ""}]})], 1, "quote is empty"),
        ([json.dumps(NO_ANSWER | {"gold": GOOD["gold"]})], 1, "must have an empty gold list"),
        ([json.dumps(GOOD | {"gold": []})], 1, "needs at least one gold quote"),
        ([json.dumps(GOOD), json.dumps(GOOD)], 2, "duplicate query_id 'q1' (first used on line 1)"),
        ([json.dumps(NO_ANSWER), json.dumps(GOOD)], 2, "ids must be in ascending order"),
        ([json.dumps(GOOD | {"query_id": "q 1"})], 1, "query_id must start"),
        ([json.dumps(GOOD | {"gold": [{"document": "a.md"}]})], 1, 'needs a quote (a verbatim passage of the'),
        ([json.dumps(GOOD | {"gold": [{"document": "a.md", "quote": None}]})], 1, "quote is null"),
        ([json.dumps(GOOD | {"gold": [{"document": "a.md", "whole_document": False}]})], 1, "needs a quote"),
        ([json.dumps(GOOD | {"gold": [{"document": "a.md", "quote": "x", "whole_document": True}]})], 1,
         "not both"),
        ([json.dumps(GOOD | {"gold": [{"document": "a.md", "whole_document": "yes"}]})], 1,
         "key 'gold.0.whole_document'"),
        ([json.dumps(GOOD | {"gold": [{"document": "", "whole_document": True}]})], 1, "key 'gold.0.document'"),
        # JSON that json.loads accepts silently, or fails on with something other than a JSONDecodeError.
        ([json.dumps(GOOD).replace('"what is a lease"', '"what is a lease", "query": "lease"')], 1,
         "key 'query' appears twice in one object"),
        ([json.dumps(GOOD).replace("a lease is", "a lease \\ud800is")], 1, "lone surrogate U+D800"),
        (["[" * 100_000 + "]" * 100_000], 1, "nested too deeply"),
        ([json.dumps(GOOD)[:-1] + ', "rank": ' + "7" * 5000 + "}"], 1, "thousands of digits"),
        ([json.dumps(GOOD)[:-1] + ', "score": NaN}'], 1, "NaN is not a JSON number"),
        ([json.dumps(GOOD)[:-1] + ', "score": 1e400}'], 1, "too large to represent"),
    ],
)
def test_malformed_lines_are_reported_with_their_line(tmp_path, lines, line, message):
    path = write(tmp_path, lines)
    with pytest.raises(JudgmentsError) as info:
        load_judgments(path)
    assert info.value.line == line
    assert message in str(info.value)
    assert str(path) in str(info.value)


def test_whole_document_gold_loads_and_writes_back_as_written(tmp_path):
    line = json.dumps(GOOD | {"gold": [{"document": "a.md", "whole_document": True}, GOOD["gold"][0]]})
    (judgment,) = load_judgments(write(tmp_path, [line]))
    assert [(g.quote, g.whole_document) for g in judgment.gold] == [(None, True), ("a lease is", False)]
    assert judgment.to_json() == line


def test_blank_file_is_an_error(tmp_path):
    with pytest.raises(JudgmentsError, match="holds no judgments"):
        load_judgments(write(tmp_path, ["", "  "]))


def test_crlf_and_bom_are_rejected(tmp_path):
    path = tmp_path / "j.jsonl"
    path.write_bytes(json.dumps(GOOD).encode() + b"\r\n")
    with pytest.raises(JudgmentsError, match="CRLF"):
        load_judgments(path)
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(GOOD).encode() + b"\n")
    with pytest.raises(JudgmentsError, match="byte order mark"):
        load_judgments(path)


def test_unsorted_judgments_name_the_command_that_sorts_them(tmp_path):
    path = write(tmp_path, [json.dumps(NO_ANSWER), json.dumps(GOOD)])
    with pytest.raises(JudgmentsError) as info:
        load_judgments(path)
    assert info.value.fix.startswith(f"sort it: `groundkit judgments fmt --judgments {path}` rewrites the file")
    assert "never re-sorts" not in info.value.fix
