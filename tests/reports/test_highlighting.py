"""The report's marks are today's marks: what the page marks equals a word-by-word reference, range for range.

The reference is the report's former code, kept here: every ``\\w+`` match of the passage, lower-cased,
through the run's content tokenizer (its stemmer, its stopwords, then English function words), marked when
a token is one of the query's. The page now finds the words itself (groundkit/reports/_page.py), from the
words Python gives it per query and the characters beyond ASCII that make words in its text
(groundkit/reports/page_data.py). Two checks:

* the data suffices: the page's rule, written out in Python below, gives the reference's ranges on every
  passage of the committed corpus against every query, under the default tokenizer and under stemmers with
  stopwords, and on text built to trip a shortcut (Unicode words, case that changes length, underscores,
  digits, combining marks, characters beyond the BMP), and on SciFact's top 10 passages (tests/test_scifact.py);
* the page does it: headless Chromium opens every query of a report of the committed corpus (and of SciFact, in
  tests/test_scifact.py) and the bold words it draws are the reference's, passage by passage.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from groundkit.config import TokenizeParams
from groundkit.corpus.tokenizing import make_content_tokenizer
from groundkit.reports.page_data import PASSAGE_CHARS, _vocabulary, _Words, shown_text

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


def page_rule(text: str, offset: int, words: set[str], characters: str) -> list[list[int]]:
    """The page's ``wordRanges``, in Python: maximal runs of [A-Za-z0-9_] and ``characters``, marked when
    ``words`` holds them, an ASCII run lower-cased, any other as written."""
    beyond = set(characters)

    def in_word(c: str) -> bool:
        return (c.isascii() and (c.isalnum() or c == "_")) or c in beyond

    found, at = [], 0
    while at < len(text):
        if not in_word(text[at]):
            at += 1
            continue
        end = at + 1
        while end < len(text) and in_word(text[end]):
            end += 1
        word = text[at:end]
        if (word.lower() if word.isascii() else word) in words:
            found.append([offset + at, offset + end])
        at = end
    return found


def assert_same_marks(params: dict[str, Any], cases: list[tuple[str, str, int]]) -> int:
    """The page's rule, given what page_data gives it, marks what the reference marks in every (query, text,
    offset); returns the marks."""
    words = _Words(params)
    shown = _vocabulary([text for _, text, _ in cases], ascii_words=words.stems)
    words.read(shown)
    characters = shown.characters
    reference = Reference(params)
    marks = 0
    for query, text, offset in cases:
        expected = reference.ranges(query, text, offset)
        assert page_rule(text, offset, set(words.marked(query)), characters) == expected, (query, text[:80])
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


TRIPS = ("İstanbul's STRASSE straße Straße ǅemal Σίσυφος ΣΊΣΥΦΟΣ x_y x__y _x 3x 3X éclair Éclairs naïve "
         "running RUNS ran runner\tsnapshot—Snapshots\nsnapshotting ﬁle file \U0001d518nicode ½ 2² a\u0301b the THE "
         "\u00a0nbsp\u2003em\u3000ideographic ㆒ 一二 x\u200by")


@pytest.mark.parametrize("params", PARAMS)
def test_text_that_trips_a_shortcut(params):
    queries = ["istanbul strasse", "STRASSE", "straße", "sisyphus Σίσυφος", "x_y 3x", "éclair", "running",
               "snapshot", "file ﬁle", "the", "ǆemal", "i̇stanbul", "ab a\u0301b", "2² ½", "nbsp em ideographic",
               "㆒ 一二", "x y", ""]
    cases = [(q, TRIPS, 0) for q in queries] + [(q, TRIPS.encode("ascii", "replace").decode(), 7) for q in queries]
    assert assert_same_marks(params, cases) > 10


def test_no_word_of_the_query_marks_nothing_and_offsets_shift():
    from groundkit.reports.page_data import _Shown

    words = _Words({})
    words.read(_Shown(None, {"Café", "naïve"}, "éï"))
    # Without a stemmer the ASCII words marked are the query's tokens, shown or not: nothing shown, nothing marked.
    assert words.marked("sourdough") == ["sourdough"]
    assert page_rule("Backups take a snapshot.", 0, set(words.marked("sourdough")), "éï") == []
    # ASCII words by their lower case, whatever the case shown; the others as written (every case shown).
    assert words.marked("Snapshot backups CAFÉ") == ["Café", "backups", "snapshot"]
    assert page_rule("Backups take a SNAPSHOT.", 100, {"backups", "snapshot"}, "") == [[100, 107], [115, 123]]
    stemmed = _Words({"tokenize": {"stemmer": "english"}})
    stemmed.read(_Shown({"running", "runs", "ran", "cafés"}, {"Cafés"}, "é"))
    assert stemmed.marked("runner run café") == ["Cafés", "cafés", "running", "runs"]


def test_the_words_shown_and_the_characters_beyond_ascii_in_them():
    texts = ["Café au lait, X_1!", "naïve—café ½", "Plain ASCII text"]
    assert _vocabulary(texts, ascii_words=True) == ({"au", "lait", "x_1", "plain", "ascii", "text"},
                                                     {"Café", "naïve", "café", "½"}, "½éï")
    # U+00BD, U+00E9, U+00EF; the dash separates words, so it is not there. Without a stemmer the ASCII words
    # are not read at all.
    assert _vocabulary(texts, ascii_words=False) == (None, {"Café", "naïve", "café", "½"}, "½éï")


# --- in Chromium ----------------------------------------------------------------------------------------------

DOM_MARKS = """(() => {
  // Every query's passages (the run's column), each as the [start, end) code-point offsets of its bold words.
  const offsets = (box) => {
    const out = [];
    let at = 0;
    const walk = (node) => {
      for (const child of node.childNodes) {
        if (child.nodeType === Node.TEXT_NODE) { at += Array.from(child.data).length; continue; }
        if (child.classList.contains("prefix")) continue;  // chunk.context's prefix: not the passage's text
        if (child.classList.contains("term")) {
          const length = Array.from(child.textContent).length;
          out.push([at, at + length]);
          at += length;
          continue;
        }
        walk(child);
      }
    };
    walk(box);
    return out;
  };
  const found = {};
  for (const row of [...document.querySelectorAll("#query-table tr.q")]) {
    row.click();
    const detail = row.nextElementSibling;
    const columns = detail.querySelectorAll(".cols > div");
    found[row.dataset.id] = [...columns[columns.length - 1].querySelectorAll(".passage")].map(offsets);
    row.click();
  }
  return found;
})()"""


def render_with(folder: Path, tokenize: dict[str, str] | None, out: Path) -> dict[str, Any]:
    """The report of the run in ``folder`` as it would be had the run used ``tokenize``; written to ``out``.
    Returns its page data."""
    from groundkit.pipeline.stages import PASSAGES_FILE
    from groundkit.reports.evidence import read_files
    from groundkit.reports.html import render
    from groundkit.reports.page_data import page_data, workspace_input

    passages = folder / "passages" / PASSAGES_FILE
    evidence = read_files(folder / "documents.jsonl", folder / "gold_spans.jsonl", folder / "chunks.jsonl",
                          folder / "run.trec", passages if passages.is_file() else None, source=str(folder))
    run = workspace_input(folder / "per_query.csv", evidence, folder / "plots" / "budget.csv", "this run")
    params = {**run.side.metadata["params"], "tokenize": tokenize or {}}
    run = replace(run, side=replace(run.side, metadata={**run.side.metadata, "params": params}))
    out.write_text(render(run), encoding="utf-8")
    return page_data(run, None, None)


def assert_page_marks_as_the_reference(page, folder: Path, params: dict[str, Any], out: Path) -> int:
    """Chromium opens every query of the report of ``folder`` under ``params``; the bold words of each passage are
    the reference's. Returns how many words were checked."""
    data = render_with(folder, params.get("tokenize"), out)
    page.open(out.as_uri())
    drawn = page.evaluate(DOM_MARKS)
    reference = Reference(params)
    segments = data["text"]
    checked = 0
    assert set(drawn) == {q["id"] for q in data["queries"]}
    for query in data["queries"]:
        expected = []
        for passage_id, _ in query.get("top", []):
            document, start, end, *_ = data["passages"][passage_id]
            text = shown_text(segments, document, start, min(end, start + PASSAGE_CHARS))
            expected.append(reference.ranges(query["query"], text, 0))
        assert drawn[query["id"]] == expected, query["id"]
        checked += sum(map(len, expected))
    assert page.console_errors == []
    return checked


@pytest.fixture(scope="module")
def committed_run(tmp_path_factory) -> Path:
    from groundkit.cli import main

    out = tmp_path_factory.mktemp("committed") / "run"
    assert main(["run", "--corpus", str(REPO / "evals" / "corpus"), "--judgments",
                 str(REPO / "evals" / "judgments.jsonl"), "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def tripping_run(tmp_path_factory) -> Path:
    """A run over documents of the text that trips a shortcut, its queries those of the test above."""
    from groundkit.cli import main

    folder = tmp_path_factory.mktemp("trips")
    corpus = folder / "corpus"
    corpus.mkdir()
    words = TRIPS.split(" ")
    (corpus / "forward.md").write_text(TRIPS + "\n", encoding="utf-8")
    (corpus / "backward.md").write_text(" ".join(reversed(words)) + "\n", encoding="utf-8")
    (corpus / "plain.md").write_text("Snapshots are taken while the file is running, then the runner checks them.\n",
                                     encoding="utf-8")
    queries = ["istanbul strasse", "STRASSE straße", "sisyphus Σίσυφος", "x_y 3x", "éclair naïve", "running runs",
               "snapshot", "file ﬁle", "ǆemal", "ab a\u0301b", "2² ½", "nbsp em ideographic", "㆒ 一二", "x y",
               "\U0001d518nicode"]
    (folder / "judgments.jsonl").write_text("".join(json.dumps(
        {"query_id": f"t{i:02d}", "query": query, "category": "factoid",
         "gold": [{"document": "forward.md", "whole_document": True}]},
        ensure_ascii=False) + "\n" for i, query in enumerate(queries)), encoding="utf-8")
    out = folder / "run"
    assert main(["run", "--corpus", str(corpus), "--judgments", str(folder / "judgments.jsonl"), "--out", str(out),
                 "--set", "chunk.size=120", "--set", "chunk.overlap=40", "--set", "audit.max_trivial_share=null"]) == 0
    return out


@pytest.mark.integration
@pytest.mark.parametrize("params", PARAMS[:2])
def test_chromium_marks_the_committed_corpus_as_the_reference(browser, committed_run, params, tmp_path):
    page = browser.page()
    try:
        assert assert_page_marks_as_the_reference(page, committed_run, params, tmp_path / "report.html") > 1000
        if params:
            shots = Path(os.environ.get("GROUNDKIT_SCREENSHOTS", REPO / "build" / "screenshots"))
            page.evaluate("document.querySelector('#query-table tr.q').click()")
            page.screenshot(shots / "report-marks-stemmed.png", "tr.detail", max_height=1200)
    finally:
        page.close()


@pytest.mark.integration
@pytest.mark.parametrize("params", PARAMS)
def test_chromium_marks_text_that_trips_a_shortcut_as_the_reference(browser, tripping_run, params, tmp_path):
    page = browser.page()
    try:
        assert assert_page_marks_as_the_reference(page, tripping_run, params, tmp_path / "report.html") > 20
    finally:
        page.close()
