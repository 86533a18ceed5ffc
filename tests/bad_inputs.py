"""The catalogue of bad inputs: each case damages a copy of the tiny workspace in one way.

A workspace is laid out like the repository: ``evals/corpus/``, ``evals/judgments.jsonl`` and
``params.yaml`` under one root, so the same damage applies to ``groundkit run``, ``groundkit
audit`` and ``dvc repro`` alike. Each case names what the one error message must contain: where
(file and line, or key) and what was wrong.
"""

from __future__ import annotations

import json
import os
import re
import stat
import threading
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

JUDGMENTS = "evals/judgments.jsonl"
CORPUS = "evals/corpus"
PARAMS = "params.yaml"


@dataclass(frozen=True)
class Case:
    damage: Callable[[Path], None]
    where: str
    what: str
    # DVC reads params.yaml itself (to interpolate dvc.yaml) before any stage runs; when the file is
    # not YAML at all, the message is DVC's own, which names the file and the parse error but offers no fix.
    dvc_reports_it: bool = False
    # What DVC's own message holds, when that differs from `where` and `what`.
    dvc_says: tuple[str, ...] = ()
    # Why the case stays out of the `dvc repro` leg: DVC hashes the corpus before any stage runs and
    # never returns on this input (recorded in KNOWN_LIMITATIONS.md).
    dvc_hangs: str = ""


def _records(root: Path) -> list[dict]:
    return [json.loads(line) for line in (root / JUDGMENTS).read_text(encoding="utf-8").splitlines()]


def _write_records(root: Path, records: list[dict]) -> None:
    (root / JUDGMENTS).write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def _edit_record(index: int, edit: Callable[[dict], None]) -> Callable[[Path], None]:
    def damage(root: Path) -> None:
        records = _records(root)
        edit(records[index])
        _write_records(root, records)

    return damage


def _set_quote(quote: str, index: int = 0) -> Callable[[Path], None]:
    return _edit_record(index, lambda r: r["gold"][0].update(quote=quote))


def _set_gold_document(document: str) -> Callable[[Path], None]:
    return _edit_record(0, lambda r: r["gold"][0].update(document=document))


def _judgments_bytes(transform: Callable[[bytes], bytes]) -> Callable[[Path], None]:
    def damage(root: Path) -> None:
        path = root / JUDGMENTS
        path.write_bytes(transform(path.read_bytes()))

    return damage


def _document(rel: str, data: bytes) -> Callable[[Path], None]:
    def damage(root: Path) -> None:
        (root / CORPUS / rel).write_bytes(data)

    return damage


def _isolation_and_quote(text: str, quote: str) -> Callable[[Path], None]:
    """Rewrite isolation.md and point judgment q3's quote at it."""

    def damage(root: Path) -> None:
        (root / CORPUS / "isolation.md").write_text(text, encoding="utf-8")
        records = _records(root)
        records[2]["gold"][0]["quote"] = quote
        _write_records(root, records)

    return damage


def _param(dotted: str, value: object) -> Callable[[Path], None]:
    def damage(root: Path) -> None:
        params = yaml.safe_load((root / PARAMS).read_text(encoding="utf-8"))
        section, key = dotted.split(".")
        params.setdefault(section, {})[key] = value
        (root / PARAMS).write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")

    return damage


def _measures(measures: list[str]) -> Callable[[Path], None]:
    """score.measures set to ``measures``, with a headline of ndcg@10 alone (which every case computes)."""
    set_measures, set_headline = _param("score.measures", measures), _param("score.headline", ["ndcg@10"])

    def damage(root: Path) -> None:
        set_measures(root)
        set_headline(root)

    return damage


def _params_text(text: str) -> Callable[[Path], None]:
    def damage(root: Path) -> None:
        (root / PARAMS).write_text(text, encoding="utf-8")

    return damage


def _symlink_outside(root: Path) -> None:
    outside = root / "outside.md"
    outside.write_text("A secret outside the corpus.\n", encoding="utf-8")
    os.symlink(outside.resolve(), root / CORPUS / "linked.md")


def _fifo(root: Path) -> None:
    path = root / CORPUS / "pipe.md"
    os.mkfifo(path)

    def serve_eof() -> None:
        # Each open for writing returns once a reader opens the FIFO; closing at once hands that reader EOF,
        # so a loader that wrongly opens it fails instead of hanging the test. Blocks harmlessly otherwise.
        while True:
            os.close(os.open(path, os.O_WRONLY))

    threading.Thread(target=serve_eof, daemon=True).start()


def _device(name: str, major: int, minor: int) -> Callable[[Path], None]:
    def damage(root: Path) -> None:
        os.mknod(root / CORPUS / name, stat.S_IFCHR | 0o644, os.makedev(major, minor))

    return damage


def _symlink_loop(root: Path) -> None:
    os.symlink("loop-b.md", root / CORPUS / "loop-a.md")
    os.symlink("loop-a.md", root / CORPUS / "loop-b.md")


def _json_array(root: Path) -> None:
    (root / JUDGMENTS).write_text(json.dumps(_records(root)) + "\n", encoding="utf-8")


def _duplicate_id(root: Path) -> None:
    records = _records(root)
    records[1]["query_id"] = "q1"
    _write_records(root, records)


def _swap_first_two(root: Path) -> None:
    records = _records(root)
    records[0], records[1] = records[1], records[0]
    _write_records(root, records)


# 4,000 lines of 67 characters, 268 kB, with "the" at columns 26 and 40 of each.
LARGE_TEXT = "Snapshot isolation keeps the reader on the snapshot it began with.\n" * 4000


def _judgment_line(number: int, edit: Callable[[bytes], bytes]) -> Callable[[Path], None]:
    """Edit the bytes of one line of judgments.jsonl (1-based), for JSON that json.dumps would never write."""

    def transform(data: bytes) -> bytes:
        lines = data.split(b"\n")
        lines[number - 1] = edit(lines[number - 1])
        return b"\n".join(lines)

    return _judgments_bytes(transform)


def _add_field(raw: bytes) -> Callable[[bytes], bytes]:
    return lambda line: line[:-1] + b', "note": ' + raw + b"}"


def _params_duplicate_key(root: Path) -> None:
    text = (root / PARAMS).read_text(encoding="utf-8")
    size = re.search(r"^  size: 800\b.*\n", text, re.MULTILINE)  # the committed line, comment and all
    assert size is not None
    (root / PARAMS).write_text(text[: size.end()] + "  size: 400\n" + text[size.end() :], encoding="utf-8")


NFC_TEXT = unicodedata.normalize("NFC", "The na\u00efve reader sees a consistent view.\nWrite skew is possible.\n")

CASES: dict[str, Case] = {
    # judgments.jsonl as a file
    "judgments: invalid JSON": Case(_judgments_bytes(lambda b: b.replace(b'"q2",', b'"q2"', 1)),
                                    "judgments.jsonl:2", "invalid JSON"),
    "judgments: a JSON array": Case(_json_array, "judgments.jsonl:1", "a JSON object"),
    "judgments: blank only": Case(_judgments_bytes(lambda b: b"\n  \n"), "judgments.jsonl", "no judgments"),
    "judgments: UTF-8 BOM": Case(_judgments_bytes(lambda b: b"\xef\xbb\xbf" + b), "judgments.jsonl:1", "BOM"),
    "judgments: invalid UTF-8": Case(_judgments_bytes(lambda b: b.replace(b"anomaly", b"anom\xe1ly")),
                                     "judgments.jsonl:3", "not valid UTF-8"),
    "judgments: CRLF": Case(_judgments_bytes(lambda b: b.replace(b"\n", b"\r\n")), "judgments.jsonl:1", "CRLF"),
    # judgments.jsonl, JSON that json.loads reads silently wrong or fails on outside JSONDecodeError
    "judgments: duplicate key": Case(
        _judgment_line(1, lambda line: line.replace(b'"query": ', b'"query": "backups", "query": ', 1)),
        "judgments.jsonl:1", "key 'query' appears twice"),
    "judgments: lone surrogate": Case(_judgment_line(3, lambda line: line.replace(b"anomaly", b"anomaly \\ud800", 1)),
                                      "judgments.jsonl:3", "lone surrogate U+D800"),
    "judgments: nested 100,000 deep": Case(_judgment_line(2, lambda line: b"[" * 100_000 + b"]" * 100_000),
                                           "judgments.jsonl:2", "nested too deeply"),
    "judgments: 5,000-digit integer": Case(_judgment_line(4, _add_field(b"7" * 5000)), "judgments.jsonl:4",
                                           "thousands of digits"),
    "judgments: NaN": Case(_judgment_line(2, _add_field(b"NaN")), "judgments.jsonl:2", "NaN is not a JSON number"),
    "judgments: 1e400": Case(_judgment_line(2, _add_field(b"1e400")), "judgments.jsonl:2", "too large to represent"),
    # judgments.jsonl, one record
    "judgment: missing field": Case(_edit_record(0, lambda r: r.pop("category")),
                                    "judgments.jsonl:1", "key 'category'"),
    "judgment: unknown field": Case(_edit_record(1, lambda r: r.update(querry="x")),
                                    "judgments.jsonl:2", "key 'querry'"),
    "judgment: query not a string": Case(_edit_record(0, lambda r: r.update(query=42)),
                                         "judgments.jsonl:1", "key 'query'"),
    "judgment: gold not a list": Case(_edit_record(0, lambda r: r.update(gold="ops/backup.md")),
                                      "judgments.jsonl:1", "key 'gold'"),
    "judgment: query_id not a string": Case(_edit_record(0, lambda r: r.update(query_id=1)),
                                            "judgments.jsonl:1", "key 'query_id'"),
    "judgment: empty query": Case(_edit_record(0, lambda r: r.update(query="  ")),
                                  "judgments.jsonl:1", "key 'query'"),
    "judgment: empty quote": Case(_set_quote(""), "judgments.jsonl:1", "key 'gold.0.quote'"),
    "judgment: unknown category": Case(_edit_record(0, lambda r: r.update(category="trivia")),
                                       "judgments.jsonl:1", "key 'category'"),
    "judgment: gold on no_answer": Case(
        _edit_record(3, lambda r: r.update(gold=[{"document": "isolation.md", "quote": "Write skew"}])),
        "judgments.jsonl:4", "no_answer"),
    "judgment: answerable without gold": Case(_edit_record(0, lambda r: r.update(gold=[])),
                                              "judgments.jsonl:1", "needs at least one gold quote"),
    "judgment: duplicate query_id": Case(_duplicate_id, "judgments.jsonl:2", "'q1'"),
    "judgment: ids out of order": Case(_swap_first_two, "judgments.jsonl:2", "ascending order"),
    # quotes
    "quote: not found": Case(_set_quote("Incremental backups run daily"), "judgments.jsonl:1", "quote not found"),
    "quote: found twice": Case(_set_quote("backup"), "judgments.jsonl:1", "occurs 2 times"),
    "quote: NFD against an NFC document": Case(
        _isolation_and_quote(NFC_TEXT, unicodedata.normalize("NFD", "na\u00efve reader")),
        "judgments.jsonl:3", "Unicode normalisation"),
    "quote: whitespace differs": Case(_set_quote("Incremental  backups run hourly"),
                                      "judgments.jsonl:1", "whitespace"),
    "quote: line break as a space": Case(_set_quote("weekly. Incremental backups"),
                                         "judgments.jsonl:1", "whitespace"),
    "quote: curly quotes": Case(
        _isolation_and_quote('The "consistent view" is a snapshot.\nWrite skew is possible.\n',
                             "\u201cconsistent view\u201d"),
        "judgments.jsonl:3", "curly quotes"),
    "quote: different case": Case(_set_quote("incremental backups run hourly"), "judgments.jsonl:1",
                                  "case-insensitively"),
    "quote: a short word in a large document": Case(
        _isolation_and_quote(LARGE_TEXT, "the"), "judgments.jsonl:3",
        "occurs 8000 times, first at line:col 1:26 (offset 25), line:col 1:40 (offset 39), line:col 2:26 (offset 92)"),
    "quote: zero-width space": Case(_set_quote("Incremental back\u200bups run hourly"), "judgments.jsonl:1",
                                    "the quote holds U+200B ZERO WIDTH SPACE at position 17"),
    "quote: soft hyphen in the document": Case(
        _isolation_and_quote("Snapshot iso\u00adlation lets a transaction read a consistent view.\n",
                             "Snapshot isolation lets"),
        "judgments.jsonl:3", "the document holds U+00AD SOFT HYPHEN at line:col 1:13"),
    "quote: no-break space": Case(_set_quote("Incremental\u00a0backups run hourly"), "judgments.jsonl:1",
                                  "the quote holds U+00A0 NO-BREAK SPACE at position 12, where the document has ' '"),
    "quote: ligature": Case(
        _isolation_and_quote("The first reader sees a consistent view.\nWrite skew is possible.\n",
                             "The \ufb01rst reader"),
        "judgments.jsonl:3", "the quote holds U+FB01 LATIN SMALL LIGATURE FI at position 5, where the document has"),
    "quote: minus sign in the document": Case(
        _isolation_and_quote("Clock skew of \u22125 ms is tolerated.\nWrite skew is possible.\n", "skew of -5 ms"),
        "judgments.jsonl:3", "the document holds U+2212 MINUS SIGN at line:col 1:15"),
    "quote: longer than the document": Case(
        _isolation_and_quote("Write skew.\n", "Write skew is possible under snapshot isolation."),
        "judgments.jsonl:3", "longer than the document"),
    # documents
    "document: missing": Case(_set_gold_document("ops/restore.md"), "judgments.jsonl:1",
                              "is not a file in the corpus"),
    "document: ../ escapes the root": Case(_set_gold_document("../judgments.jsonl"), "judgments.jsonl:1",
                                           "not a corpus-relative path"),
    "document: absolute path": Case(_set_gold_document("/etc/passwd"), "judgments.jsonl:1",
                                    "not a corpus-relative path"),
    "document: a directory": Case(_set_gold_document("ops"), "judgments.jsonl:1", "is a directory"),
    "document: symlink outside the root": Case(_symlink_outside, "linked.md", "symlink pointing outside"),
    "document: invalid UTF-8": Case(_document("latin1.md", "caf\xe9 snapshot\n".encode("latin-1")),
                                    "latin1.md:1", "not valid UTF-8"),
    "document: empty": Case(_document("empty.md", b"  \n"), "empty.md", "is empty"),
    "document: CRLF": Case(_document("isolation.md", b"Snapshot isolation.\r\nWrite skew is possible under it.\r\n"),
                           "isolation.md:1", "CRLF"),
    "document: NUL byte": Case(_document("binary.md", b"snapshot\n\0\0\n"), "binary.md:2", "NUL"),
    "document: a FIFO": Case(_fifo, "pipe.md", "is a FIFO", dvc_hangs=(
        "DVC opens the FIFO to hash the corpus and waits for a writer that never comes")),
    # /dev/null's numbers: DVC hashes it as an empty file and the first stage refuses it.
    "document: a character device that reads empty": Case(_device("null.md", 1, 3), "null.md",
                                                          "is a character device"),
    # /dev/zero's numbers: endless.
    "document: a character device that never ends": Case(_device("zero.md", 1, 5), "zero.md", "is a character device",
                                                         dvc_hangs="DVC reads the device to hash the corpus, forever"),
    # DVC's message names whichever link its directory walk meets first.
    "document: symlink loop": Case(_symlink_loop, "loop-a.md", "is a symlink loop", dvc_reports_it=True,
                                   dvc_says=("Too many levels of symbolic links", f"{CORPUS}/loop-")),
    "document: UTF-8 BOM": Case(_document("bom.md", b"\xef\xbb\xbfsnapshot notes\n"), "bom.md:1", "BOM"),
    # params.yaml
    "params: chunk size zero": Case(_param("chunk.size", 0), "key 'chunk.size'", "greater than 0"),
    "params: chunk size negative": Case(_param("chunk.size", -400), "key 'chunk.size'", "greater than 0"),
    "params: overlap not below size": Case(_param("chunk.overlap", 800), "key 'chunk'",
                                           "must be smaller than size"),
    "params: unknown strategy": Case(_param("chunk.strategy", "sentences"), "key 'chunk.strategy'",
                                     "unknown chunk strategy; use one of fixed, document"),
    "params: k1 out of range": Case(_param("bm25.k1", -0.5), "key 'bm25.k1'", "greater than or equal to 0"),
    "params: b out of range": Case(_param("bm25.b", 1.5), "key 'bm25.b'", "less than or equal to 1"),
    "params: no measures": Case(_param("score.measures", []), "key 'score.measures'", "lists no metric"),
    "params: a measure without a cut-off": Case(_measures(["ndcg@10", "ndcg"]),
                                                "key 'score.measures.1'", "ndcg is written ndcg@k"),
    "params: a measure groundkit lacks": Case(_measures(["ndcg@10", "hitz@10"]),
                                              "key 'score.measures.1'", "'hitz@10' is not a metric groundkit reports"),
    "params: headline not computed": Case(_param("score.headline", ["ndcg@4"]), "key 'score'",
                                          "score.measures does not compute"),
    "params: min_overlap above 1": Case(_param("score.min_overlap", 2), "key 'score.min_overlap'",
                                        "less than or equal to 1"),
    "params: depth below the deepest k": Case(_param("retrieve.depth", 3), "key 'retrieve.depth'",
                                              "smaller than the deepest k"),
    "params: depth above the bound": Case(_param("retrieve.depth", 10**8), "key 'retrieve.depth'", "above 100,000"),
    "params: typo in a key": Case(_param("chunk.sise", 400), "key 'chunk.sise'", "not a known field"),
    "params: unknown section": Case(_param("rerank.model", "x"), "key 'rerank'", "not a known field"),
    "params: not YAML": Case(_params_text("chunk: [size: 800\n"), "params.yaml", "YAML", dvc_reports_it=True),
    # DVC's own YAML reader stops at a duplicate key too ("found duplicate key"), naming params.yaml and the line.
    "params: duplicate key": Case(_params_duplicate_key, "params.yaml", "duplicate key", dvc_reports_it=True),
    # the audit's hard rule, whatever the gate
    "audit: no_answer query shares corpus tokens": Case(
        _edit_record(3, lambda r: r.update(query="snapshot sourdough")), "judgments.jsonl:4",
        "shares tokens with the corpus"),
    # the gate, once a team sets it: two of the tiny corpus's three answerable judgments are trivial
    "audit: trivial share above the gate": Case(
        _param("audit.max_trivial_share", 0.5), "judgments.jsonl", "above the gate audit.max_trivial_share = 0.5"),
}


# --- python: retrievers (run through the `groundkit` console script) ----------------------------
# A plugin module must be importable from the current directory, which the in-process catalogue
# cannot offer; each case is a module `plugin.py` whose `make` is named by retrieve.retriever.


@dataclass(frozen=True)
class PluginCase:
    source: str
    what: str


_SEARCH = """
class Retriever:
    def __init__(self, chunks):
        self.first = chunks[0].chunk_id

    def search(self, query, depth):
{body}


def make(chunks, options):
    return Retriever(chunks)
"""


def _search(*body: str) -> str:
    return "import sys\n\nimport numpy as np\n" + _SEARCH.format(body="\n".join(" " * 8 + line for line in body))


PLUGIN_CASES: dict[str, PluginCase] = {
    "exit in the module body": PluginCase("import sys\n\nsys.exit(0)\n",
                                          "importing module 'plugin' tried to end the process (SystemExit with "
                                          "code 0)"),
    "exit in the factory": PluginCase("import sys\n\n\ndef make(chunks, options):\n    sys.exit(0)\n",
                                      "the factory tried to end the process (SystemExit with code 0)"),
    "exit in search": PluginCase(_search("sys.exit(0)"), "tried to end the process (SystemExit with code 0)"),
    "exit without a code in search": PluginCase(_search("raise SystemExit"),
                                                "tried to end the process (SystemExit with code None)"),
    "exit with a message in search": PluginCase(_search("sys.exit('no index')"),
                                                "tried to end the process (SystemExit with code 'no index')"),
    "generator raising midway": PluginCase(_search("yield (self.first, 1.0)", "raise RuntimeError('lost')"),
                                           "iterating the results of search("),
    "chunk id a list": PluginCase(_search("return [([self.first], 1.0)]"), "chunk ids are strings"),
    "score 10**400": PluginCase(_search("return [(self.first, 10**400)]"), "integer score of about 401 digits"),
    "score a numpy array": PluginCase(_search("return [(self.first, np.array([1.0, 2.0]))]"),
                                      "scores must be finite numbers"),
}


# --- groundkit import-beir: JSON that json.loads reads silently wrong or fails on outside JSONDecodeError
# Each case edits one line of the small dataset that tests/corpus/test_beir.py writes.


@dataclass(frozen=True)
class BeirCase:
    file: str
    line: int
    edit: Callable[[str], str]
    where: str
    what: str

    def damage(self, dataset: Path) -> None:
        path = dataset / self.file
        lines = path.read_text(encoding="utf-8").split("\n")
        lines[self.line - 1] = self.edit(lines[self.line - 1])
        path.write_text("\n".join(lines), encoding="utf-8")


def _with_field(raw: str) -> Callable[[str], str]:
    return lambda line: line[:-1] + ', "extra": ' + raw + "}"


def _twice(key: str, first: str) -> Callable[[str], str]:
    """Write ``key`` once more, with the value ``first``, before its real value."""
    return lambda line: line.replace(f'"{key}": ', f'"{key}": {first}, "{key}": ', 1)


BEIR_CASES: dict[str, BeirCase] = {
    "corpus: duplicate key": BeirCase("corpus.jsonl", 2, _twice("text", '"old"'), "corpus.jsonl:2",
                                      "key 'text' appears twice"),
    "queries: duplicate key": BeirCase("queries.jsonl", 1, _twice("_id", '"q9"'), "queries.jsonl:1",
                                       "key '_id' appears twice"),
    "queries: lone surrogate": BeirCase("queries.jsonl", 2, lambda line: line.replace("snapshot", "snap\\udc00shot"),
                                        "queries.jsonl:2", "lone surrogate U+DC00"),
    "corpus: lone surrogate in an unused field": BeirCase("corpus.jsonl", 1, _with_field('"\\ud800"'),
                                                          "corpus.jsonl:1", "lone surrogate U+D800"),
    "corpus: nested 100,000 deep": BeirCase("corpus.jsonl", 3, _with_field("[" * 100_000 + "]" * 100_000),
                                            "corpus.jsonl:3", "nested too deeply"),
    "queries: 5,000-digit integer": BeirCase("queries.jsonl", 3, _with_field("9" * 5000), "queries.jsonl:3",
                                             "thousands of digits"),
    "corpus: NaN": BeirCase("corpus.jsonl", 4, _with_field("NaN"), "corpus.jsonl:4", "NaN is not a JSON number"),
    "queries: 1e400": BeirCase("queries.jsonl", 2, _with_field("-1e400"), "queries.jsonl:2", "too large to represent"),
    # A byte order mark, as Windows editors save "UTF-8": named as the document loader names it.
    **{f"{name}: byte order mark": BeirCase(file, 1, lambda line: "\ufeff" + line, f"{file}:1",
                                            "starts with a UTF-8 byte order mark")
       for name, file in (("corpus", "corpus.jsonl"), ("queries", "queries.jsonl"), ("qrels", "qrels/test.tsv"))},
}


# --- external run files, through `groundkit score-run` (tests/retrieval/test_external.py) -----------------------
# Each case is a whole run file for the tiny workspace. The message must name the run file and `line` (or only the
# file when `line` is None) and contain `what`. Most cases follow one good line, so the bad one is line 2.

GOOD_RUN_LINE = '{"query_id": "q1", "rank": 1, "document": "ops/backup.md", "start": 0, "end": 7}'


@dataclass(frozen=True)
class RunFileCase:
    data: bytes
    line: int | None
    what: str


def _second_line(line: str) -> bytes:
    return f"{GOOD_RUN_LINE}\n{line}\n".encode()


def _passage(**fields: object) -> str:
    """A run line for q1 at rank 2 on ops/backup.md, with ``fields`` added or replacing those."""
    return json.dumps({"query_id": "q1", "rank": 2, "document": "ops/backup.md", **fields})


RUN_FILE_CASES: dict[str, RunFileCase] = {
    # the file as a whole
    "empty file": RunFileCase(b"", None, "holds no passages"),
    "blank lines only": RunFileCase(b"\n  \n\t\n", None, "holds no passages"),
    # One decoding policy for every file a user hands groundkit (groundkit/inputs/text.py): a BOM is refused,
    # not dropped.
    "a BOM and nothing else": RunFileCase(b"\xef\xbb\xbf\n", 1, "byte order mark"),
    "a BOM before a good line": RunFileCase(b"\xef\xbb\xbf" + GOOD_RUN_LINE.encode() + b"\n", 1, "byte order mark"),
    "CRLF line endings": RunFileCase(f"{GOOD_RUN_LINE}\r\n".encode(), 1, "CRLF"),
    "invalid UTF-8": RunFileCase(_second_line(_passage(text="weekly")).replace(b"weekly", b"week\xffy"), 2,
                                 "not valid UTF-8 (byte 0xff at offset "),
    "bad first line, then a megabyte without a newline": RunFileCase(b"not json\n" + b"\0" * (1 << 20), 1,
                                                                     "invalid JSON"),
    # JSON that is not JSON a record can use
    "invalid JSON": RunFileCase(_second_line('{"query_id": "q1", "rank": 2,'), 2, "invalid JSON"),
    "not an object": RunFileCase(_second_line("[1, 2]"), 2, "expected a JSON object"),
    "duplicate key": RunFileCase(_second_line('{"query_id": "q1", "query_id": "q2", "rank": 2, '
                                              '"document": "ops/backup.md", "text": "weekly"}'), 2, "appears twice"),
    "lone surrogate": RunFileCase(_second_line(_passage(text="\ud800")), 2, "lone surrogate"),
    "nested 100,000 deep": RunFileCase(_second_line('{"query_id": ' + "[" * 100_000 + "]" * 100_000 + "}"), 2,
                                       "nested too deeply"),
    "5,000-digit integer": RunFileCase(_second_line('{"query_id": "q1", "rank": 2' + "0" * 5000 + ', "document": '
                                                    '"ops/backup.md", "text": "weekly"}'), 2, "thousands of digits"),
    "NaN offset": RunFileCase(_second_line('{"query_id": "q1", "rank": 2, "document": "ops/backup.md", '
                                           '"start": NaN, "end": 4}'), 2, "NaN is not a JSON number"),
    "1e400 offset": RunFileCase(_second_line('{"query_id": "q1", "rank": 2, "document": "ops/backup.md", '
                                             '"start": 0, "end": 1e400}'), 2, "overflows to infinity"),
    # fields of the wrong type
    "query_id a list": RunFileCase(_second_line(_passage(query_id=["q1"], text="weekly")), 2,
                                   "query_id must be a string"),
    "document a list": RunFileCase(_second_line(_passage(document=["ops/backup.md"], text="weekly")), 2,
                                   "document must be a non-empty string"),
    "rank 10**400": RunFileCase(_second_line(_passage(rank=10**400, text="weekly")), 2,
                                "has rank 1000000000"),
    "rank as string": RunFileCase(_second_line(_passage(rank="1", text="weekly")), 2, "rank must be an integer"),
    "rank zero": RunFileCase(_second_line(_passage(rank=0, text="weekly")), 2, "rank must be an integer from 1"),
    "float offsets": RunFileCase(_second_line(_passage(start=0.0, end=4)), 2, "must be integers"),
    "offset 10**400": RunFileCase(_second_line(_passage(start=0, end=10**400)), 2, "not a non-empty range"),
    "text a list": RunFileCase(_second_line(_passage(text=["weekly"])), 2, "text must be a string"),
    # fields and ranks
    "unknown field": RunFileCase(_second_line(_passage(text="weekly", scor=1)), 2, "unknown field 'scor'"),
    "missing rank": RunFileCase(_second_line('{"query_id": "q1", "document": "ops/backup.md", "text": "weekly"}'), 2,
                                "rank is required"),
    "unknown query": RunFileCase(_second_line(_passage(query_id="q9", rank=1, text="weekly")), 2,
                                 "query_id 'q9' is not a query"),
    "duplicate rank": RunFileCase(_second_line(_passage(rank=1, text="weekly")), 2, "rank 1 twice (first on line 1)"),
    "rank gap": RunFileCase(_second_line(_passage(rank=3, text="weekly")), 2, "has rank 3 but no rank 2"),
    # documents, offsets and text
    "unknown document": RunFileCase(_second_line(_passage(document="ops/restore.md", text="weekly")), 2,
                                    "'ops/restore.md' is not a file in the corpus"),
    "escaping path": RunFileCase(_second_line(_passage(document="../judgments.jsonl", text="q1")), 2,
                                 "not a corpus-relative path"),
    "both offsets and text": RunFileCase(_second_line(_passage(start=0, end=3, text="Bac")), 2,
                                         "both offsets and text"),
    "neither offsets nor text": RunFileCase(_second_line(_passage()), 2, "neither start/end offsets nor text"),
    "only start": RunFileCase(_second_line(_passage(start=3)), 2, "only one of start"),
    "start not below end": RunFileCase(_second_line(_passage(start=5, end=5)), 2,
                                       "offsets [5, 5) are not a non-empty range"),
    "end past the document": RunFileCase(_second_line(_passage(start=0, end=999)), 2, "<= 127)"),
    "text not found": RunFileCase(_second_line(_passage(text="runs daily")), 2, "text not found in 'ops/backup.md'"),
    "text with collapsed line break": RunFileCase(_second_line(_passage(text="weekly. Incremental")), 2,
                                                  "whitespace is collapsed"),
    "text with curly quote": RunFileCase(_second_line(_passage(document="isolation.md",
                                                               text="Write skew is possible under it\u2019")), 2,
                                         "not found"),
    "text twice": RunFileCase(_second_line(_passage(text="backup")), 2, "text occurs 2 times"),
    "same passage twice": RunFileCase(_second_line(_passage(text="Backups")), 2,
                                      "ranks the same passage twice (also line 1)"),
}


# --- groundkit compare (fix/compare) ---------------------------------------------------------------
# Each case damages a copy of a small pair of result folders (per_query.csv and run.json, as
# `groundkit run --out` writes them) or passes a bad option, and is run through `groundkit compare`.

COMPARE_METRICS = ["recall@1", "recall@5", "mrr", "ndcg@10"]
COMPARE_HEADER = ["query_id", "query", "category", "retrieved", "gold_chunks", "first_gold_rank", "abstained",
                  *COMPARE_METRICS]
# (query_id, category, baseline first gold rank, candidate first gold rank); None: not retrieved.
COMPARE_QUERIES = [
    ("q1", "factoid", 1, 2), ("q2", "factoid", 3, 1), ("q3", "factoid", None, 4),
    ("q4", "lexical_gap", 2, 2), ("q5", "lexical_gap", 6, None), ("q6", "lexical_gap", 1, 1),
    ("q7", "no_answer", None, None),
]


@dataclass(frozen=True)
class CompareCase:
    damage: Callable[[Path, Path], None]  # (baseline folder, candidate folder)
    where: str  # the file (and line) or option the message names
    what: str
    args: tuple[str, ...] = ()
    exit: int = 1  # 1: an input error on stderr with a fix; 0: the report (stdout) says it
    stream: str = "stderr"


def _compare_row(query_id: str, category: str, rank: int | None) -> list[str]:
    import math  # imported here to keep this task's additions to the end of the file

    if category == "no_answer":
        return [query_id, f"query {query_id}", category, "0", "0", "", "1"] + [""] * len(COMPARE_METRICS)
    hit = [rank is not None and rank <= k for k in (1, 5)]
    values = [*(float(h) for h in hit), 1 / rank if rank else 0.0,
              1 / math.log2(rank + 1) if rank and rank <= 10 else 0.0]
    return [query_id, f"query {query_id}", category, "10", "1", str(rank or ""), ""] + [f"{v:.6f}" for v in values]


def write_compare_side(folder: Path, side: int, *, corpus: str = "c0rpus", judgments: str = "judgm3nts") -> Path:
    """One side of the pair: ``side`` 0 is the baseline, 1 the candidate."""
    folder.mkdir(parents=True)
    rows = [COMPARE_HEADER] + [_compare_row(q, c, ranks[side]) for q, c, *ranks in COMPARE_QUERIES]
    (folder / "per_query.csv").write_text("".join(",".join(r) + "\n" for r in rows), encoding="utf-8")
    metadata = {"corpus_hash": corpus * 8, "judgments_hash": judgments * 8, "groundkit_version": "0.1.0",
                "params": {"chunk": {"size": 800 if side == 0 else 400}}}
    (folder / "run.json").write_text(json.dumps(metadata, indent=2) + "\n", encoding="utf-8")
    return folder


def write_compare_pair(root: Path) -> tuple[Path, Path]:
    return write_compare_side(root / "baseline", 0), write_compare_side(root / "candidate", 1)


def _cell(query_id: str, column: str, value: str, side: str = "candidate") -> Callable[[Path, Path], None]:
    """Set one cell of one side's per_query.csv."""

    def damage(baseline: Path, candidate: Path) -> None:
        path = (baseline if side == "baseline" else candidate) / "per_query.csv"
        rows = [line.split(",") for line in path.read_text(encoding="utf-8").splitlines()]
        col = rows[0].index(column)
        for row in rows:
            if row[0] == query_id:
                row[col] = value
        path.write_text("".join(",".join(r) + "\n" for r in rows), encoding="utf-8")

    return damage


def _csv_edit(edit: Callable[[list[str]], list[str]], side: str = "candidate") -> Callable[[Path, Path], None]:
    """Rewrite one side's per_query.csv line by line (the header is line 0 here, line 1 in messages)."""

    def damage(baseline: Path, candidate: Path) -> None:
        path = (baseline if side == "baseline" else candidate) / "per_query.csv"
        path.write_text("".join(line + "\n" for line in edit(path.read_text(encoding="utf-8").splitlines())),
                        encoding="utf-8")

    return damage


def _drop_column(column: str) -> Callable[[list[str]], list[str]]:
    def edit(lines: list[str]) -> list[str]:
        col = lines[0].split(",").index(column)
        return [",".join(c for i, c in enumerate(line.split(",")) if i != col) for line in lines]

    return edit


def _run_json(edit: Callable[[dict], object] | str) -> Callable[[Path, Path], None]:
    """Replace the candidate's run.json by text, or edit its metadata."""

    def damage(baseline: Path, candidate: Path) -> None:
        path = candidate / "run.json"
        if isinstance(edit, str):
            path.write_text(edit, encoding="utf-8")
            return
        metadata = json.loads(path.read_text(encoding="utf-8"))
        edit(metadata)
        path.write_text(json.dumps(metadata, indent=2) + "\n", encoding="utf-8")

    return damage


def _both(*damages: Callable[[Path, Path], None]) -> Callable[[Path, Path], None]:
    def damage(baseline: Path, candidate: Path) -> None:
        for each in damages:
            each(baseline, candidate)

    return damage


def _only_q1_answerable(lines: list[str]) -> list[str]:
    return [line if i < 2 else line.replace(",factoid,", ",no_answer,").replace(",lexical_gap,", ",no_answer,")
            for i, line in enumerate(lines)]


def _remove(name: str) -> Callable[[Path, Path], None]:
    return lambda baseline, candidate: (candidate / name).unlink()


def _no_side(baseline: Path, candidate: Path) -> None:
    import shutil

    shutil.rmtree(candidate)


def _intact(baseline: Path, candidate: Path) -> None:
    """Both sides as written: the case is a bad option."""


CPQ = "candidate/per_query.csv"
CRJ = "candidate/run.json"

COMPARE_CASES: dict[str, CompareCase] = {
    # per_query.csv: metric cells of answerable queries (line 3 is q2)
    "metric cell: nan": CompareCase(_cell("q2", "ndcg@10", "nan"), f"{CPQ}:3", "column 'ndcg@10'",
                                    ("--fail-on-regression",)),
    "metric cell: inf": CompareCase(_cell("q2", "mrr", "inf"), f"{CPQ}:3", "column 'mrr' of query 'q2' holds 'inf'"),
    "metric cell: -Infinity": CompareCase(_cell("q4", "recall@5", "-Infinity"), f"{CPQ}:5", "column 'recall@5'"),
    "metric cell: overflows": CompareCase(_cell("q2", "ndcg@10", "1e400"), f"{CPQ}:3", "not a finite number"),
    "metric cell: empty": CompareCase(_cell("q3", "ndcg@10", ""), f"{CPQ}:4", "holds an empty cell"),
    "metric cell: not a number": CompareCase(_cell("q1", "recall@1", "yes", side="baseline"),
                                             "baseline/per_query.csv:2", "holds 'yes'"),
    "metric cell: decimal comma": CompareCase(_cell("q2", "mrr", '"0,5"'), f"{CPQ}:3", "holds '0,5'"),
    # per_query.csv: rows and columns
    "per_query: duplicated query_id": CompareCase(_cell("q3", "query_id", "q2"), f"{CPQ}:4",
                                                  "repeats query_id 'q2' (first on line 3)"),
    "per_query: empty query_id": CompareCase(_cell("q3", "query_id", ""), f"{CPQ}:4", "empty query_id"),
    "per_query: a row with a cell too many": CompareCase(_csv_edit(lambda ls: [*ls[:3], ls[3] + ",0.5", *ls[4:]]),
                                                         f"{CPQ}:4", "has 12 cells in this row, the header has 11"),
    "per_query: bad first_gold_rank": CompareCase(_cell("q2", "first_gold_rank", "0"), f"{CPQ}:3",
                                                  "column 'first_gold_rank'"),
    "per_query: a column twice": CompareCase(_csv_edit(lambda ls: [ls[0].replace("recall@5", "recall@1"), *ls[1:]]),
                                             f"{CPQ}:1", "has the column 'recall@1' twice"),
    # Columns are found by name through the measure registry, not by their place after `abstained`.
    "per_query: unknown metric column": CompareCase(
        _csv_edit(lambda ls: [ls[0].replace("ndcg@10", "ndgc@10"), *ls[1:]]), f"{CPQ}:1",
        "has the column 'ndgc@10', neither a per-query field"),
    "per_query: unknown column before abstained": CompareCase(
        _csv_edit(lambda ls: [ls[0].replace("gold_chunks", "gold_passages"), *ls[1:]]), f"{CPQ}:1",
        "'gold_passages' is not a metric groundkit reports; the measures are chars@k, "),
    "per_query: metric with a leading zero": CompareCase(
        _csv_edit(lambda ls: [ls[0].replace("recall@5", "recall@05"), *ls[1:]]), f"{CPQ}:1",
        "has the column 'recall@05'"),
    "per_query: required column missing": CompareCase(_csv_edit(_drop_column("category")), CPQ,
                                                      "lacks the columns ['category']"),
    "per_query: empty file": CompareCase(_csv_edit(lambda ls: []), CPQ, "is empty"),
    "per_query: not UTF-8": CompareCase(lambda b, c: (c / "per_query.csv").write_bytes(b"query_id\xff\n"), CPQ,
                                        "is not UTF-8 text"),
    "per_query: gated metric on one side only": CompareCase(
        _csv_edit(_drop_column("recall@5")), "--metric", "'recall@5' is reported by the baseline only",
        ("--metric", "recall@5")),
    "per_query: metric on one side only is named": CompareCase(
        _csv_edit(_drop_column("recall@5")), "", "Not compared, reported by one run only: `recall@5` (baseline only)",
        exit=0, stream="stdout"),
    "per_query: other query ids": CompareCase(_cell("q6", "query_id", "q66"), CPQ, "'q6' is only in the baseline"),
    "per_query: other category": CompareCase(_cell("q6", "category", "factoid"), f"{CPQ}:7",
                                             "gives query 'q6' the category 'factoid', the baseline 'lexical_gap'"),
    # fewer than two paired queries: no interval, no test, and the report says why
    "one query in a category": CompareCase(_both(_cell("q1", "category", "boundary"),
                                                 _cell("q1", "category", "boundary", side="baseline")),
                                           "| boundary | 1 | ndcg@10 |", "| n/a (1 query) | n/a |", exit=0,
                                           stream="stdout"),
    "one answerable query in all": CompareCase(
        _both(_csv_edit(_only_q1_answerable), _csv_edit(_only_q1_answerable, side="baseline")),
        "--fail-on-regression", "cannot gate on ndcg@10: no paired test (1 answerable query", ("--fail-on-regression",),
        exit=0),
    # run.json
    "run.json: not JSON": CompareCase(_run_json('{"corpus_hash": "x",\n  judgments_hash: 1}\n'), f"{CRJ}:2",
                                      "is not valid JSON"),
    "run.json: NaN": CompareCase(_run_json('{"corpus_hash": NaN, "judgments_hash": "x"}'), CRJ,
                                 "NaN is not a JSON number"),
    "run.json: a key twice": CompareCase(_run_json('{"corpus_hash": "a", "corpus_hash": "b"}'), CRJ,
                                         "'corpus_hash' appears twice"),
    "run.json: not an object": CompareCase(_run_json("[1, 2]\n"), CRJ, "is not a JSON object"),
    "run.json: no corpus_hash": CompareCase(_run_json(lambda m: m.pop("corpus_hash")), f"{CRJ}: key 'corpus_hash'",
                                            "has no corpus_hash"),
    "run.json: params not an object": CompareCase(_run_json(lambda m: m.update(params=[1])), f"{CRJ}: key 'params'",
                                                  "not an object"),
    "run.json: other judgments": CompareCase(_run_json(lambda m: m.update(judgments_hash="other" * 8)), CRJ,
                                             "different judgments than the baseline"),
    "run.json: other corpus": CompareCase(_run_json(lambda m: m.update(corpus_hash="0ther" * 8)), CRJ,
                                          "different corpus than the baseline (corpus_hash c0rpusc0rpus vs "
                                          "0ther0ther0t)"),
    # the sides themselves
    "side: no run.json": CompareCase(_remove("run.json"), "candidate", "holds no run.json"),
    "side: no per_query.csv": CompareCase(_remove("per_query.csv"), "candidate", "holds no per_query.csv"),
    "side: does not exist": CompareCase(_no_side, "candidate", "is neither a directory, a git revision nor a DVC"),
    # options
    "--alpha 0": CompareCase(_intact, "--alpha", "must be strictly between 0 and 1, got 0.0", ("--alpha", "0")),
    "--alpha 1.5": CompareCase(_intact, "--alpha", "got 1.5", ("--alpha", "1.5")),
    "--alpha nan": CompareCase(_intact, "--alpha", "got nan", ("--alpha", "nan")),
    "--alpha text": CompareCase(_intact, "--alpha", "'five percent' is not a number",
                                ("--alpha", "five percent")),
    "--max-drop negative": CompareCase(_intact, "--max-drop", "at least 0, got -0.1", ("--max-drop", "-0.1")),
    "--max-drop inf": CompareCase(_intact, "--max-drop", "finite", ("--max-drop", "inf")),
    "--top negative": CompareCase(_intact, "--top", "must be 0 or more, got -1", ("--top", "-1")),
    "--top fraction": CompareCase(_intact, "--top", "'2.5' is not a whole number", ("--top", "2.5")),
    "--metric unknown": CompareCase(_intact, "--metric", "['ndcg@20'] is not reported by both runs",
                                    ("--metric", "ndcg@20")),
    "--correction unknown": CompareCase(_intact, "--correction", "'bonferroni' is not a correction groundkit knows",
                                        ("--correction", "bonferroni")),
    "--experiments with candidates": CompareCase(_intact, "--experiments", "is given with candidates",
                                                 ("--experiments",)),
}
