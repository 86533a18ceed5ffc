"""The report's marks are today's marks: the bulk ranges equal a word-by-word reference, range for range.

The reference is the report's former code, kept here: every ``\\w+`` match of the passage, lower-cased,
through the run's content tokenizer (its stemmer, its stopwords, then English function words), marked when
a token is one of the query's. It is compared with the report's ranges on every passage of the committed
corpus against every query, under the default tokenizer and under a stemmer with stopwords, on text built to
trip a shortcut (Unicode words, case that changes length, underscores, digits), and on SciFact's top 10
passages in tests/test_scifact.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from groundkit.config import TokenizeParams
from groundkit.corpus.tokenizing import make_content_tokenizer
from groundkit.reports.page_data import _Terms

REPO = Path(__file__).resolve().parents[2]
PARAMS = [{}, {"tokenize": {"stemmer": "english", "stopwords": "en"}}, {"tokenize": {"stemmer": "porter"}}]


class Reference:
    """The report's ranges as they were: a Python loop over every word of the passage."""

    def __init__(self, params: dict[str, Any]) -> None:
        self._tokens = make_content_tokenizer(TokenizeParams.model_validate(params.get("tokenize") or {}))
        self._cache: dict[str, tuple[str, ...]] = {}

    def _of(self, word: str) -> tuple[str, ...]:
        found = self._cache.get(word)
        if found is None:
            found = self._cache[word] = tuple(self._tokens(word))
        return found

    def ranges(self, query: str, text: str, offset: int) -> list[list[int]]:
        wanted = set(self._tokens(query))
        return [[offset + m.start(), offset + m.end()] for m in re.finditer(r"\w+", text)
                if any(t in wanted for t in self._of(m.group().lower()))] if wanted else []


def assert_same_marks(params: dict[str, Any], cases: list[tuple[str, str, int]]) -> int:
    """Both give the same ranges for every (query, text, offset); returns the marks."""
    reference, terms = Reference(params), _Terms(params)
    marks = 0
    for query, text, offset in cases:
        expected = reference.ranges(query, text, offset)
        assert terms.ranges(query, text, offset) == expected, (query, text[:80])
        marks += len(expected)
    return marks


@pytest.mark.parametrize("params", PARAMS)
def test_the_committed_corpus_against_every_query(params):
    texts = [path.read_text(encoding="utf-8") for path in sorted((REPO / "evals" / "corpus").rglob("*"))
             if path.is_file()]
    windows = [(text[start:start + 2000], start) for text in texts for start in range(0, len(text), 1500)]
    queries = [json.loads(line)["query"] for line in (REPO / "evals" / "judgments.jsonl").read_text().splitlines()]
    cases = [(query, window, start) for i, query in enumerate(queries) for window, start in windows[i % 25::25]]
    assert assert_same_marks(params, cases) > 1000


@pytest.mark.parametrize("params", PARAMS)
def test_text_that_trips_a_shortcut(params):
    text = ("İstanbul's STRASSE straße Straße ǅemal Σίσυφος ΣΊΣΥΦΟΣ x_y x__y _x 3x 3X éclair Éclairs naïve "
            "running RUNS ran runner\tsnapshot—Snapshots\nsnapshotting ﬁle file \U0001d518nicode ½ 2² a\u0301b the THE")
    queries = ["istanbul strasse", "STRASSE", "straße", "sisyphus Σίσυφος", "x_y 3x", "éclair", "running",
               "snapshot", "file ﬁle", "the", "ǆemal", "i̇stanbul", "ab a\u0301b", "2² ½", ""]
    cases = [(q, text, 0) for q in queries] + [(q, text.encode("ascii", "replace").decode(), 7) for q in queries]
    assert assert_same_marks(params, cases) > 10


def test_no_word_of_the_query_marks_nothing_and_offsets_shift():
    terms = _Terms({})
    assert terms.ranges("sourdough", "Backups take a snapshot.", 0) == []
    assert terms.ranges("snapshot backups", "Backups take a snapshot.", 100) == [[100, 107], [115, 123]]
