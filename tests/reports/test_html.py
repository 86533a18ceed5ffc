"""`groundkit report`: the page's data worked out by hand on the tiny corpus, escaping, determinism, errors."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from groundkit.cli import main
from groundkit.corpus.judgments import Category
from groundkit.corpus.tokenizing import _stopwords
from groundkit.reports.html import MARKER
from groundkit.reports.page_data import headline_names, hit_curve, page_data, read_input
from groundkit.reports.sides import read_side
from groundkit.scoring.schema import QueryResult, StageResult
from tests.conftest import write_judgments, write_tiny_corpus

STOPWORDS = _stopwords("en_plus")
"""The function words the content tokenizer drops: the report does not mark them."""

HOSTILE_DOC = ('Plain start.\n</script><script>document.title="pwned"</script>\n'
               '<img src=x onerror="document.title=\'pwned2\'"> & the rest.\n')
HOSTILE_QUOTE = '<script>document.title="pwned"</script>'
HOSTILE_QUERY = '<b>bold</b> </script> query & "quotes"'


def _run(corpus: Path, judgments: Path, out: Path, *sets: str) -> Path:
    args = ["run", "--corpus", str(corpus), "--judgments", str(judgments), "--set", "audit.max_trivial_share=1.0"]
    for item in sets:
        args += ["--set", item]
    assert main([*args, "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> dict[str, Path]:
    """The tiny corpus run with 60-character chunks (the candidate) and 200-character ones (the baseline)."""
    root = tmp_path_factory.mktemp("tiny")
    corpus, judgments = write_tiny_corpus(root / "corpus", root / "judgments.jsonl")
    return {"small": _run(corpus, judgments, root / "small", "chunk.size=60"),
            "large": _run(corpus, judgments, root / "large", "chunk.size=200"), "root": root}


def _data(html: str) -> dict:
    found = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', html, re.S)
    assert found is not None
    return json.loads(found.group(1))


def test_rows_ranks_and_moves_against_the_baseline(tiny, monkeypatch):
    monkeypatch.chdir(tiny["root"])
    run, base = read_input("small", Path.cwd()), read_input("large", Path.cwd())
    data = page_data(run, base, None)
    rows = {q["id"]: q for q in data["queries"]}
    # per_query.csv of both runs: q1 and q2 find gold at rank 1 in both; q3 finds none; q4 is no_answer.
    assert [rows[q]["rank"] for q in ("q1", "q2", "q3", "q4")] == [[1, 1], [1, 1], [None, None], [None, None]]
    assert [rows[q]["move"] for q in ("q1", "q2", "q3", "q4")] == ["", "", "", ""]
    assert [rows[q]["missed"] for q in ("q1", "q2", "q3", "q4")] == [False, False, True, False]
    assert rows["q4"]["abstained"] == [True, True] and rows["q4"]["ndcg"] == [None, None]
    assert data["ndcgMetric"] == "ndcg@10" and data["hitMetric"] == "recall@10"


@pytest.mark.parametrize("k", [1, 3, 10, 50])
def test_missed_means_no_gold_in_the_top_k_the_page_shows(k):
    import csv

    from tests.conftest import REPO

    data = page_data(read_input(str(REPO / "metrics"), REPO), None, None, top_k=k)
    with (REPO / "metrics" / "per_query.csv").open(encoding="utf-8") as handle:
        rows = [r for r in csv.DictReader(handle) if r["category"] != "no_answer"]
    # From per_query.csv: a query is missed at k when its first gold rank is empty (none retrieved) or above k.
    expected = sorted(r["query_id"] for r in rows if not r["first_gold_rank"] or int(r["first_gold_rank"]) > k)
    assert sorted(q["id"] for q in data["queries"] if q["missed"]) == expected
    assert len(expected) == {1: 89, 3: 60, 10: 31, 50: 14}[k]  # the committed baseline's 144 answerable queries


def test_gold_quotes_and_the_chunks_that_cut_them(tiny, monkeypatch):
    monkeypatch.chdir(tiny["root"])
    data = page_data(read_input("small", Path.cwd()), read_input("large", Path.cwd()), None)
    q2 = next(q for q in data["queries"] if q["id"] == "q2")
    # "receives a snapshot instead of log entries" is [18, 60) of ops/replicas.md (125 characters). The
    # 60-character windows end at 52 and 113 (a window never cuts a word): two chunks hold parts of it;
    # the 200-character window [0, 125) holds it whole.
    quote = next(g for g in q2["gold"] if g["start"] == 18)
    assert (quote["doc"], quote["end"]) == ("ops/replicas.md", 60)
    baseline_chunks, run_chunks = quote["held"]
    assert [c[:2] for c in run_chunks] == [[0, 52], [53, 113]]
    assert [c[:2] for c in baseline_chunks] == [[0, 125]] and baseline_chunks[0][2] == 1
    # The page keeps the document text it shows: the quote is in it, at its offsets.
    pieces = data["text"]["ops/replicas.md"]
    text = "".join(t for _, t in pieces) if pieces[0][0] == 0 else ""
    assert text[18:60] == "receives a snapshot instead of log entries"


def test_top_passages_carry_their_rank_in_the_other_run(tiny, monkeypatch):
    monkeypatch.chdir(tiny["root"])
    data = page_data(read_input("small", Path.cwd()), read_input("large", Path.cwd()), None, top_k=2)
    q1 = next(q for q in data["queries"] if q["id"] == "q1")
    run_trec = (tiny["small"] / "run.trec").read_text().splitlines()
    top = [line.split()[2] for line in run_trec if line.startswith("q1 ")][:2]
    assert [row[0] for row in q1["top"]] == top
    # Chunk ids name their content, so a 60-character chunk is never among the 200-character run's.
    assert [row[1] for row in q1["top"]] == [None, None]
    doc, start, end = data["passages"][top[0]]
    assert (doc, start, end) == ("ops/backup.md", 59, 117)  # holds "Incremental backups run hourly" [67, 97)


def test_each_passage_marks_the_words_bm25_matched_of_its_query(tiny, monkeypatch):
    from tests.reports.test_highlighting import page_rule

    monkeypatch.chdir(tiny["root"])
    data = page_data(read_input("small", Path.cwd()), read_input("large", Path.cwd()), None)
    text = {doc: "".join(t for _, t in pieces) for doc, pieces in data["text"].items() if pieces[0][0] == 0}
    checked = 0
    for q in data["queries"]:
        # The content words of the query under the default tokenizer: lowercase runs of \w, function words out.
        words = {w for w in re.findall(r"\w+", q["query"].lower())} - STOPWORDS
        for rows, marked in ((q.get("top", []), q.get("words")), (q.get("baseTop", []), q.get("baseWords"))):
            for passage_id, _ in rows:
                doc, start, end = data["passages"][passage_id]
                if doc not in text:
                    continue
                shown = text[doc][start:end]
                expected = [[start + m.start(), start + m.end()] for m in re.finditer(r"\w+", shown)
                            if m.group().lower() in words]
                # What the page marks (its rule, in tests/reports/test_highlighting.py) from what it is given.
                assert page_rule(shown, start, set(marked), data["wordCharacters"]) == expected, (q["id"], passage_id)
                checked += len(expected)
    assert checked > 0


def test_each_gold_quote_carries_its_grade(tiny, monkeypatch):
    monkeypatch.chdir(tiny["root"])
    data = page_data(read_input("small", Path.cwd()), None, None)
    gold = [g for q in data["queries"] for g in q.get("gold", [])]
    # The tiny judgments grade nothing: every quote has the default grade 1, which the page shows only where a
    # query's quotes are graded otherwise.
    assert gold and all(g["grade"] == 1 for g in gold)


def test_hit_rate_curve_by_hand(tiny, monkeypatch):
    monkeypatch.chdir(tiny["root"])
    side = read_side("small", cwd=Path.cwd())
    curve = dict(hit_curve(side))
    # Three answerable queries: q1 and q2 at rank 1, q3 never: 2/3 at every k.
    assert curve[1.0] == pytest.approx(2 / 3) and curve[100.0] == pytest.approx(2 / 3)
    assert headline_names(side) == ["ndcg@10", "recall@10", "mrr", "coverage@1000chars"]


def test_the_cli_writes_one_self_contained_deterministic_page(tiny, monkeypatch, capsys):
    monkeypatch.chdir(tiny["root"])
    assert main(["report", "small", "--baseline", "large", "--out", "a.html"]) == 0
    assert main(["report", "small", "--baseline", "large", "--out", "b.html"]) == 0
    first = (tiny["root"] / "a.html").read_bytes()
    assert first == (tiny["root"] / "b.html").read_bytes()
    html = first.decode("utf-8")
    assert MARKER in html and str(tiny["root"]) not in html
    # Nothing to fetch: no URL to load from, no external script, style or font.
    assert not re.search(r'(src|href)\s*=\s*["\']?(https?:)?//', html) and "@import" not in html
    assert "@font-face" not in html and "<link" not in html
    assert "report written to a.html" in capsys.readouterr().out
    # A second run without --force refuses; with it, replaces.
    assert main(["report", "small", "--out", "a.html"]) == 1
    assert "pass --force" in capsys.readouterr().err
    assert main(["report", "small", "--out", "a.html", "--force"]) == 0


def test_report_refuses_to_overwrite_what_it_did_not_write(tiny, monkeypatch, capsys):
    monkeypatch.chdir(tiny["root"])
    (tiny["root"] / "notes.html").write_text("<p>mine</p>", encoding="utf-8")
    assert main(["report", "small", "--out", "notes.html", "--force"]) == 1
    err = capsys.readouterr().err
    assert err.count("error: ") == 1 and "notes.html" in err and "fix:" in err
    assert (tiny["root"] / "notes.html").read_text(encoding="utf-8") == "<p>mine</p>"


@pytest.mark.parametrize(("args", "expected"), [
    (["--top-k", "0"], "--top-k: '0' is not a whole number from 1"),
    (["--alpha", "2"], "--alpha: must be strictly between 0 and 1"),
    (["--baseline", "no-such-run"], "no-such-run: is neither a directory, a git revision nor a DVC experiment"),
])
def test_bad_options_give_one_message(tiny, monkeypatch, capsys, args, expected):
    monkeypatch.chdir(tiny["root"])
    assert main(["report", "small", *args, "--out", "x.html"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {expected}") and err.count("error: ") == 1 and "\n  fix: " in err
    assert not (tiny["root"] / "x.html").exists()


def test_artifacts_of_another_run_are_not_shown_as_this_ones(tiny, monkeypatch):
    monkeypatch.chdir(tiny["root"])
    mixed = tiny["root"] / "mixed"
    shutil.copytree(tiny["small"], mixed)
    for name in ("chunks.jsonl", "chunks.jsonl.sha256", "run.trec", "run.trec.sha256"):
        shutil.copy2(tiny["large"] / name, mixed / name)  # per_query.csv stays the 60-character run's
    side = read_input("mixed", Path.cwd())
    assert side.evidence is None
    # Both runs find q1's and q2's gold at rank 1, so the ranks agree; the lengths do not: the 200-character
    # run's first passage for q1 is all of ops/backup.md (126 characters), the 60-character one [59, 117).
    assert "do not match its per_query.csv (their top 1 passages for query 'q1' hold 126 characters, " \
           "per_query.csv says 58" in side.note
    data = page_data(side, None, None)
    assert data["notes"] == [side.note] and "top" not in data["queries"][0]


def test_a_run_scored_under_min_overlap_is_shown_with_its_own_passages(tiny, monkeypatch):
    # Issue 35 item 3: the report worked relevance out again by any overlap, so a run scored with score.min_overlap
    # 0.9 (q1: first gold rank 2, where a passage holding a few of the quote's characters sits at rank 1) was
    # said to be "from another run", and its drill-down dropped. The report reads the rule from run.json.
    from dataclasses import replace

    from groundkit.scoring.measures import ANY_OVERLAP

    monkeypatch.chdir(tiny["root"])
    strict = _run(tiny["root"] / "corpus", tiny["root"] / "judgments.jsonl", tiny["root"] / "strict-overlap",
                  "chunk.size=60", "chunk.overlap=30", "score.min_overlap=0.9")
    side = read_input("strict-overlap", Path.cwd())
    assert side.note is None and side.evidence is not None
    q1 = side.side.per_query.position["q1"]
    assert side.side.per_query.first_gold_rank[q1] == 2  # under min_overlap 0.9; by any overlap it would be 1
    assert replace(side.evidence, relevance=ANY_OVERLAP).first_gold_rank("q1") == 1
    data = page_data(side, None, None)
    assert data["notes"] == [] and data["queries"][0]["top"], data["notes"]
    assert main(["report", str(strict), "--out", str(tiny["root"] / "strict-overlap.html")]) == 0
    assert "from another run" not in (tiny["root"] / "strict-overlap.html").read_text(encoding="utf-8")


def test_a_run_at_min_overlap_0_9_gets_a_report_that_shows_its_passages(tiny, monkeypatch):
    from dataclasses import replace

    from groundkit.reports.evidence import mismatch
    from groundkit.scoring.measures import ANY_OVERLAP, Relevance

    monkeypatch.chdir(tiny["root"])
    _run(tiny["root"] / "corpus", tiny["root"] / "judgments.jsonl", tiny["root"] / "strict", "chunk.size=60",
         "score.min_overlap=0.9")
    side = read_input("strict", Path.cwd())
    assert side.note is None and side.evidence is not None
    assert side.evidence.relevance == Relevance(0.9)  # score's rule, read from the run's own run.json
    # Under any overlap these artifacts give another first gold rank than per_query.csv: the report used to
    # take them for another run's and drop the drill-down.
    table = side.side.per_query
    anyhow = replace(side.evidence, relevance=ANY_OVERLAP)
    assert mismatch(anyhow, list(table.position), table.first_gold_rank) is not None
    data = page_data(side, None, None)
    assert data["notes"] == []
    shown = [q for q in data["queries"] if q.get("top")]
    # Every answerable query that retrieved anything shows its passages (q3 shares no word with the corpus).
    assert {q["id"] for q in shown} == {"q1", "q2"}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    return hostile_report(tmp_path_factory.mktemp("hostile"))


def hostile_report(root: Path) -> Path:
    """The report of a run over a document and a query that hold HTML meant to run as script."""
    corpus = root / "corpus"
    corpus.mkdir()
    (corpus / "evil.md").write_text(HOSTILE_DOC, encoding="utf-8")
    (corpus / "plain.md").write_text("Nothing to see in this plain document about gardens.\n", encoding="utf-8")
    judgments = write_judgments(root / "judgments.jsonl", [
        {"query_id": "q1", "query": HOSTILE_QUERY + " script title pwned", "category": "factoid",
         "gold": [{"document": "evil.md", "quote": HOSTILE_QUOTE}]}])
    _run(corpus, judgments, root / "run")
    assert main(["report", str(root / "run"), "--out", str(root / "report.html")]) == 0
    return root / "report.html"


ASTRAL_QUOTE = "Replicas answer 🧭 reads within 5 ms"
ASTRAL_DOC = ("Launch notes 🚀🚀 for the team, in \U0001d518nicode \U0001d538.\nReplica guide: " + ASTRAL_QUOTE
              + ", said 😀 the team.\nLast line 🎉.\n")


def astral_report(root: Path) -> Path:
    """The report of a run over a document with characters above U+FFFF before, inside and after its gold quote."""
    corpus = root / "corpus"
    corpus.mkdir()
    (corpus / "astral.md").write_text(ASTRAL_DOC, encoding="utf-8")
    (corpus / "plain.md").write_text("Nothing to see in this plain document about gardens.\n", encoding="utf-8")
    judgments = write_judgments(root / "judgments.jsonl", [
        {"query_id": "q1", "query": "how fast do replicas answer reads", "category": "factoid",
         "gold": [{"document": "astral.md", "quote": ASTRAL_QUOTE}]}])
    _run(corpus, judgments, root / "run", "chunk.size=60")
    assert main(["report", str(root / "run"), "--out", str(root / "report.html")]) == 0
    return root / "report.html"


def test_hostile_text_is_escaped_in_the_page(hostile):
    html = hostile.read_text(encoding="utf-8")
    # The only <script> elements are the page's own two; user text never closes or opens one.
    assert html.count("<script") == 2 and html.count("</script>") == 2
    assert "<img src=x" not in html and "<b>bold</b>" not in html
    data = _data(html)
    assert data["queries"][0]["query"].startswith(HOSTILE_QUERY)
    assert "".join(t for _, t in data["text"]["evil.md"]).find(HOSTILE_QUOTE) > 0


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_the_page_refuses_a_number_it_cannot_show(value):
    # JSON has no NaN or infinity: written as null, the page would show a gap where a figure belongs.
    from groundkit.reports.html import _json_for_script

    with pytest.raises(ValueError, match="not JSON compliant"):
        _json_for_script({"queries": [{"ndcg": [None, value]}]})


def test_the_pages_json_cannot_end_its_script_element():
    from groundkit.reports.html import _json_for_script

    text = _json_for_script({"b": "</script><!-- & \u2028\u2029", "a": "\u00e9t\u00e9"})
    assert text == '{"a":"\u00e9t\u00e9","b":"\\u003c/script\\u003e\\u003c!-- \\u0026 \\u2028\\u2029"}'
    assert json.loads(text) == {"b": "</script><!-- & \u2028\u2029", "a": "\u00e9t\u00e9"}


def _traded_side(folder: Path, ndcg: list[float], chars: float, size: int) -> Path:
    """12 factoid queries, one of whose text is hostile; every one reads ``chars`` characters in its top 10."""
    queries = [QueryResult(query_id=f"q{i:02d}", query=HOSTILE_QUERY if i == 0 else f"question {i}",
                           category=Category.FACTOID, retrieved=10, gold_chunks=1,
                           first_gold_rank=1 if value == 1.0 else 2,
                           metrics={"recall@10": 1.0, "ndcg@10": value, "coverage@1000chars": 0.75,
                                    "chars@10": chars})
               for i, value in enumerate(ndcg)]
    folder.mkdir(parents=True)
    result = StageResult(measures=["recall@10", "ndcg@10", "coverage@1000chars", "chars@10"], queries=queries)
    (folder / "per_query.csv").write_text(result.per_query_csv(), encoding="utf-8")
    (folder / "run.json").write_text(json.dumps({"corpus_hash": "c" * 64, "judgments_hash": "j" * 64,
                                                 "groundkit_version": "0.1.0",
                                                 "params": {"chunk": {"size": size}}}), encoding="utf-8")
    return folder


def test_a_traded_verdict_has_a_colour_of_its_own(tmp_path, capsys):
    # Half the chunk size: 10 of 12 queries find their gold at rank 2 instead of 1 (nDCG@10 1 -> 1/log2(3)) with
    # half the context read. Both falls have 10 equal non-zero differences: sign-flip p = 2 * 4 / 4096 = 0.002,
    # below Holm's 0.025 and alpha 0.05, so nDCG@10 fell only with less context read: traded, and the gate passes.
    base = _traded_side(tmp_path / "base", [1.0] * 12, 8000.0, 800)
    run = _traded_side(tmp_path / "run", [0.630930] * 10 + [1.0] * 2, 4000.0, 400)
    assert main(["report", str(run), "--baseline", str(base), "--out", str(tmp_path / "report.html")]) == 0
    capsys.readouterr()
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert '<p class="verdict traded" id="verdict">Verdict: <strong>traded</strong>' in html
    # The traded fall is the verdict's note, not a loss: its delta wears the traded colour, not the worse one.
    assert '<div class="delta traded">-0.3076 vs baseline' in html
    # The style sheet gives it a background none of better, worse and mixed has.
    backgrounds = dict(re.findall(r"\.verdict\.(\w+)\{background:(#[0-9a-f]{6})", html))
    assert set(backgrounds) >= {"better", "worse", "mixed", "traded"}
    assert backgrounds["traded"] not in {backgrounds[v] for v in ("better", "worse", "mixed")}
    assert re.search(r"\.traded\{color:#[0-9a-f]{6}", html)
    # The query's text stays data.
    assert "<b>bold</b>" not in html and html.count("</script>") == 2
