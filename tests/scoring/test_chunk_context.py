"""A chunk's context prefix (chunk.context) is read but never gold: hand-worked values of every span measure.

The chunk is a.md's [0, 10) read after a 2-character prefix "T\\n"; the gold is [5, 8) (3 characters).
"""

from __future__ import annotations

import pytest

from groundkit.corpus.passage import Chunk, Passage
from groundkit.scoring.measures import MEASURES, QueryRun, Relevance, score
from groundkit.scoring.measures.recall import budget_needed

TEXT = "0123456789"
GOLD = [Passage(document="a.md", start=5, end=8)]


def _chunk(prefix: str) -> Chunk:
    return Chunk(document="a.md", start_offset=0, end_offset=10, text=TEXT, prefix=prefix)


def measured(prefix: str, metric: str) -> float:
    run = QueryRun(ranking=["c"], gold={"c"}, passages=[_chunk(prefix)], spans=GOLD, relevance=Relevance(0.0))
    return score([MEASURES.parse(metric)], run)[metric]


@pytest.mark.parametrize(("metric", "plain", "prefixed"), [
    ("chars@1", 10.0, 12.0),            # the prefix is read
    ("coverage@1", 1.0, 1.0),           # all 3 gold characters are read either way
    ("precision@1", 3 / 10, 3 / 12),    # the prefix's 2 characters read hold no gold
    ("iou@1", 3 / 10, 3 / 12),          # I / (|G| + C - I) = 3 / (3 + 12 - 3)
    ("recall@6chars", 1.0, 0.0),        # 6 characters: [0, 6) reaches gold; after the prefix only [0, 4)
    ("recall@8chars", 1.0, 1.0),        # the prefix and [0, 6)
    ("coverage@8chars", 3 / 3, 1 / 3),  # [0, 8) holds all 3; [0, 6) holds [5, 6)
    ("precision@8chars", 3 / 8, 1 / 8),
    ("iou@8chars", 3 / 8, 1 / 10),      # 1 / (3 + 8 - 1)
])
def test_the_prefix_counts_as_read_and_never_as_gold(metric, plain, prefixed):
    assert measured("", metric) == pytest.approx(plain)
    assert measured("T\n", metric) == pytest.approx(prefixed)


def test_the_budget_a_prefixed_chunk_needs_counts_its_prefix():
    # gold starts 5 characters in; any overlap needs 1 character of it: 6 characters, 8 after the prefix
    assert budget_needed([_chunk("")], GOLD) == 6
    assert budget_needed([_chunk("T\n")], GOLD) == 8


def test_a_prefix_is_kept_in_chunks_jsonl_only_when_there_is_one():
    from groundkit.artifacts.lines import model_line

    assert "prefix" not in model_line(_chunk(""))
    line = model_line(_chunk("T\n"))
    assert '"prefix": "T\\n"' in line and Chunk.model_validate_json(line) == _chunk("T\n")
    assert _chunk("T\n").indexed_text == "T\n0123456789" and _chunk("T\n").chunk_id == _chunk("").chunk_id


def test_a_run_with_title_context_indexes_records_and_marks_the_prefix(tmp_path):
    import json
    import re

    from groundkit.api import evaluate
    from tests.conftest import write_tiny_corpus

    corpus, judgments = write_tiny_corpus(tmp_path / "docs", tmp_path / "judgments.jsonl")
    out = tmp_path / "out"
    evaluate(corpus, judgments, set={"chunk.strategy": "recursive", "chunk.size": 60, "chunk.context": "title"},
             out=out)
    chunks = [json.loads(line) for line in (out / "chunks.jsonl").read_text(encoding="utf-8").splitlines()]
    # the tiny corpus has no headings: every chunk's title is its document's path
    assert chunks and all(c["prefix"] == c["document"] + "\n" for c in chunks)
    recorded = json.loads((out / "run.json").read_text(encoding="utf-8"))["params"]["chunk"]
    assert recorded["context"] == "title" and recorded["strategy"] == "recursive"
    html = (out / "report.html").read_text(encoding="utf-8")
    passages = json.loads(re.search(r'"passages":(\{.*?\})', html).group(1))
    assert passages and all(len(entry) == 4 and entry[3] == entry[0] + "\n" for entry in passages.values())
