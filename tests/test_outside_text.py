"""Text from outside is data: plain text in Markdown, escaped on a terminal, no formula in a sheet (issue 35, 4-6).

The rules live in groundkit/inputs/text.py; these tests hold them and every writer of outside text to them, through
an independent reader: a CommonMark renderer (markdown-it-py) for Markdown, Python's csv module for sheets.
"""

from __future__ import annotations

import csv
import io
import re
import unicodedata
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from groundkit.cli import main
from groundkit.inputs.text import markdown_code, markdown_text, sheet_cell, sheet_csv, sheet_value, terminal_text
from tests.bad_inputs import write_compare_pair

HOSTILE = [
    "what?\n\n**Verdict: better**: merge it",
    "<!-- the rest of the comment is hidden",
    "![img](https://example.com/x.png)",
    "<details><summary>open</summary>",
    "ping @octocat and @org/team",
    "**Verdict: better**",
    "`code` and ``more`` and a lone `",
    "[link](https://example.com) <https://example.com>",
    "a | b || c \\| d",
    "# heading\r\n- item\n1. list\n> quote\n---",
    "&amp; &#64; &copy; \\*not emphasis\\*",
    "\x1b[2J\x07 cleared \x9b31m and \u202etxet desrever\u2066",
    "_under_ *star* ~~strike~~ {braces} ^caret$ 100%",
    "=HYPERLINK(\"http://x\",\"y\")",
    "'Tis the season",
    "line one\u2028line two\x00\x7f",
]
CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _plain(text: str) -> str:
    """What a reader should see of ``text`` in Markdown: line breaks and controls as spaces, no mention."""
    shown = re.sub("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029]", " ", text)
    return shown.replace("@", "@\u200b")


def _renderer() -> MarkdownIt:
    return MarkdownIt("commonmark").enable("table")


def _inline_texts(tokens) -> list[str]:
    """The text of each inline run (a paragraph, a heading, a table cell), as a reader sees it; every token that is
    not plain text (emphasis, a link, an image, HTML, code) is named instead, so that the test sees it."""
    texts = []
    for token in tokens:
        if token.type != "inline":
            if token.type in ("html_block", "code_block", "fence"):
                texts.append(f"<{token.type}>")
            continue
        parts = []
        for child in token.children or []:
            if child.type == "text":
                parts.append(child.content)
            elif child.type in ("softbreak", "hardbreak"):
                parts.append(f"<{child.type}>")
            elif child.type == "code_inline":
                parts.append(f"<code>{child.content}</code>")
            else:
                parts.append(f"<{child.type}>")
        texts.append("".join(parts))
    return texts


@pytest.mark.parametrize("text", HOSTILE)
def test_markdown_text_renders_as_exactly_its_text(text):
    plain = _plain(text).strip()
    for context, expected in (("{}", [plain]), ("| {} | x |\n| --- | --- |\n| {} | y |", [plain, "x", plain, "y"]),
                              ("## {}", [plain]), ("- {}", [plain]), ("> {}", [plain]),
                              ("x {} y", [f"x {_plain(text)} y".strip()])):
        source = context.replace("{}", markdown_text(text))
        texts = [t.strip() for t in _inline_texts(_renderer().parse(source))]
        assert texts == expected, (context, texts)
        assert "<" not in _renderer().render(source).replace("<p>", "").replace("</p>", "").replace(
            "<h2>", "").replace("</h2>", "").replace("<li>", "").replace("</li>", "").replace("<ul>", "").replace(
            "</ul>", "").replace("<blockquote>", "").replace("</blockquote>", "").replace("<table>", "").replace(
            "</table>", "").replace("<thead>", "").replace("</thead>", "").replace("<tbody>", "").replace(
            "</tbody>", "").replace("<tr>", "").replace("</tr>", "").replace("<th>", "").replace("</th>", "").replace(
            "<td>", "").replace("</td>", "")


@pytest.mark.parametrize("text", HOSTILE)
def test_markdown_code_is_one_code_span_of_the_text(text):
    tokens = _renderer().parse(f"x {markdown_code(text)} y")
    (inline,) = [t for t in tokens if t.type == "inline"]
    kinds = [c.type for c in inline.children]
    assert kinds == ["text", "code_inline", "text"], kinds
    flat = re.sub("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029]", " ", text)
    assert inline.children[1].content.strip(" ") == flat.strip(" ") or inline.children[1].content == flat


def test_terminal_text_escapes_as_repr_does():
    for code in [*range(0x20), 0x7F, *range(0x80, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A)]:
        char = chr(code)
        assert terminal_text(f"a{char}b") == f"a{repr(char)[1:-1]}b"
        assert not CONTROL.search(terminal_text(char))
    # Everything else is left as it is: letters, accents, emoji, other format characters.
    ordinary = "Grüße, 東京 \U0001f600 \u200b \u00a0 <b> & \\ ' \""
    assert terminal_text(ordinary) == ordinary
    assert terminal_text("\x1b[2J") == "\\x1b[2J" and terminal_text("\x9b") == "\\x9b"


CELLS = ["=1+1", "+1", "-1", "- item", "@SUM(A1)", "\tx", "\rx", "'Tis", "''", "'", "", "plain", "a=b", " =x",
         "=HYPERLINK(\"http://x\",\"y\")", "line\nbreak", "quote \" inside", "caf\u00e9", "\u202e=x"]


def test_sheet_cells_neutralise_formulas_and_round_trip_through_csv_byte_for_byte():
    for cell in CELLS:
        written = sheet_cell(cell)
        assert not written.startswith(("=", "+", "-", "@", "\t", "\r")), cell
        assert written == ("'" + cell if cell[:1] in ("=", "+", "-", "@", "\t", "\r", "'") else cell)
        assert sheet_value(written) == cell
    data = sheet_csv([["text", "number"], *([cell, 7] for cell in CELLS)]).encode("utf-8")
    assert b"\r\n" not in data.replace(b'"\r', b"")  # LF line ends; a CR only inside a quoted cell
    header, *rows = list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))
    assert header == ["text", "number"] and [r[1] for r in rows] == ["7"] * len(CELLS)
    assert [sheet_value(r[0]).encode("utf-8") for r in rows] == [c.encode("utf-8") for c in CELLS]
    # What a spreadsheet sees first in each cell is never a formula's start.
    assert not [r[0] for r in rows if r[0].startswith(("=", "+", "-", "@", "\t", "\r"))]


# --- every writer follows the rules ---------------------------------------------------------------------------------


def _hostile_pair(tmp_path: Path, queries: list[str]) -> tuple[Path, Path]:
    """The compare pair of tests/bad_inputs.py with ``queries`` as the text of the queries that move (q1 q2 q3 q5)."""
    baseline, candidate = write_compare_pair(tmp_path)
    moved = dict(zip(["q1", "q2", "q3", "q5"], queries, strict=False))
    for folder in (baseline, candidate):
        path = folder / "per_query.csv"
        with path.open(encoding="utf-8", newline="") as handle:
            rows = list(csv.reader(handle))
        for row in rows[1:]:
            row[1] = moved.get(row[0], row[1])
        with path.open("w", encoding="utf-8", newline="") as handle:
            csv.writer(handle, lineterminator="\n").writerows(rows)
    return baseline, candidate


def _chunks(items: list[str], size: int) -> list[list[str]]:
    return [items[i:i + size] for i in range(0, len(items), size)]


@pytest.mark.parametrize("queries", _chunks(HOSTILE, 4))
def test_the_pull_request_comment_shows_hostile_queries_as_plain_text(tmp_path, capsys, queries):
    # Issue 35 item 4: compare --format md escaped only "|"; a line break wrote its own lines into the comment (a
    # fake verdict), "<!--" hid the rest of it, images, <details> and @mentions passed through.
    baseline, candidate = _hostile_pair(tmp_path, queries)
    main(["compare", str(baseline), str(candidate), "--format", "md", "--top", "50"])
    comment = capsys.readouterr().out
    tokens = _renderer().parse(comment)
    texts = _inline_texts(tokens)
    for query in queries:
        assert sum(1 for t in texts if t == _plain(query).strip()) == 1, (query, texts)
    assert sum(1 for t in texts if "<strong_open>Verdict:" in t) == 1  # the real verdict, once
    assert not [t for t in tokens if t.type in ("html_block", "code_block", "fence")]
    html = _renderer().render(comment)
    assert not re.search(r"<(img|details|a |!--|summary)", html)
    assert not re.search(r"@(octocat|org)", html)  # no mention can start
    assert not CONTROL.search(comment)


@pytest.mark.parametrize("queries", _chunks(HOSTILE, 4))
def test_the_terminal_report_escapes_controls_in_queries(tmp_path, capsys, queries):
    # Issue 35 item 5: compare --format text printed ESC and BEL raw; ESC[2J cleared the verdict off the screen.
    baseline, candidate = _hostile_pair(tmp_path, queries)
    main(["compare", str(baseline), str(candidate), "--format", "text", "--top", "50"])
    out, err = capsys.readouterr()
    assert not CONTROL.search(out) and not CONTROL.search(err)
    for query in queries:
        escaped = " ".join(terminal_text(query).split())  # one line: runs of white space are one space
        assert escaped[:20] in out, (escaped, out)
    assert all(unicodedata.category(c) != "Cc" for c in out.replace("\n", ""))


def test_the_review_sheet_neutralises_formulas_and_reads_its_cells_back(tmp_path):
    # Issue 35 item 6: pool's review.csv wrote query and passage text beginning with "=" as is, and spreadsheets
    # evaluate it (=HYPERLINK(...)). Every text cell is neutralised; the marks read back byte for byte.
    from groundkit.corpus.judgments import Category
    from groundkit.corpus.passage import Excerpt
    from groundkit.corpus.spans import ResolvedJudgment, ResolvedSpan
    from groundkit.reports.pool import Mark, RankedRun, pool, read_marks, review_csv, review_markdown

    texts = ["=HYPERLINK(\"http://x\",\"y\")", "- item", "'Tis", "+1", "@SUM(A1)", "plain"]
    document = "\n".join(texts)
    starts = [document.index(t) for t in texts]
    passages = [Excerpt(document="=d.md", start=s, end=s + len(t), text=t) for s, t in zip(starts, texts, strict=True)]
    query = "=cmd|' /C calc'!A0 <!-- @team **x**"
    judgment = ResolvedJudgment(query_id="-q1", query=query, category=Category.FACTOID,
                                spans=[ResolvedSpan(document="other.md", quote="x", start=0, end=1)])
    result = pool([RankedRun("@run", {"-q1": passages})], [judgment], depth=len(passages))
    sheet = review_csv(result)
    header, *rows = list(csv.reader(io.StringIO(sheet, newline="")))
    assert len(rows) == len(texts)
    for row in rows:
        assert not [cell for cell in row if cell.startswith(("=", "+", "-", "@", "\t", "\r"))], row
    assert sorted(sheet_value(r[header.index("text")]) for r in rows) == sorted(texts)
    assert {sheet_value(r[header.index("query")]) for r in rows} == {query}
    # A reviewer marks every row: read back, the marks hold the exact ids and texts.
    reviewed = header.index("reviewed")
    marked = [[*r[:reviewed], "yes", sheet_cell("- a note"), *r[reviewed + 2:]] for r in rows]  # as saved
    path = tmp_path / "review.csv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle, lineterminator="\n").writerows([header, *marked])
    marks = read_marks(path)
    assert marks == {("-q1", "=d.md", s, s + len(t)): Mark(t, True, "- a note")
                     for s, t in zip(starts, texts, strict=True)}
    assert pool([RankedRun("@run", {"-q1": passages})], [judgment], depth=len(passages), marks=marks).judged[
        "@run"]["judged"] == 1.0
    # review.md, beside it, shows the query, the ids and the passages as text.
    texts = _inline_texts(_renderer().parse(review_markdown(result)))
    assert f"-q1: {_plain(query)}" in texts
    for text in texts[texts.index(f"-q1: {_plain(query)}"):]:
        shown = text.replace(_plain(query), "")
        assert not re.search("<(?!code>|/code>)", shown), text  # only code spans: no HTML, emphasis or links


@pytest.mark.parametrize("raised", ["input", "os", "bug"])
def test_an_error_quoting_outside_text_reaches_the_terminal_escaped(capsys, raised):
    # Every message groundkit prints goes through one door: text it quotes from a file cannot clear the screen.
    from groundkit.console.guard import guarded
    from groundkit.errors import InputError

    hostile = "q\x1b[2J\x07\u202e1"

    def failing(argv):
        if raised == "input":
            raise InputError("judgments.jsonl", f"query {hostile} is bad", fix="fix it", line=3)
        if raised == "os":
            raise FileNotFoundError(2, "No such file or directory", hostile)
        raise RuntimeError(hostile)

    assert guarded(failing, []) in (1, 3)
    err = capsys.readouterr().err
    assert not CONTROL.search(err) and terminal_text(hostile) in err
    if raised == "input":
        assert "\n  fix: fix it" in err  # the message's own lines are kept


def test_terminal_lines_escape_then_wrap_within_the_width():
    from groundkit.inputs.text import terminal_lines

    text = "audit: trivial: " + " ".join(f"q{i}\x1b[2J" for i in range(40))
    lines = terminal_lines(text)
    assert all(len(line) <= 100 for line in lines) and len(lines) > 1
    assert all(line.startswith("  ") for line in lines[1:]) and not CONTROL.search("".join(lines))
    assert " ".join(line.strip() for line in lines) == terminal_text(text)
