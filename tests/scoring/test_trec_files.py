"""TREC runs and qrels read in bulk: the formats, exact scores, line numbers, and every bad line named."""

from __future__ import annotations

import hashlib
import random
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from groundkit.errors import JudgmentsError, RunFileError
from groundkit.scoring.trec.files import BEIR_QRELS, RUN, TREC_QRELS, read_qrels, read_run
from tests.dvc_helpers import env


def _write(tmp_path: Path, data: bytes, name: str = "file") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _columns(table) -> list[tuple[str, str, object]]:
    return [(table.query_ids[q], table.document_ids[d], v)
            for q, d, v in zip(table.query_codes, table.document_codes, table.values.tolist(), strict=True)]


def test_a_run_is_read_as_trec_eval_reads_it(tmp_path):
    data = b"\n  \nq1 Q0 d1 1 2.5 tag\nq1\tQ0\td2   2 -1e-3 tag\t\n\nq2 x d1 9 7 other\n"
    table = read_run(_write(tmp_path, data))
    assert (table.format, table.header) == (RUN, False)
    assert _columns(table) == [("q1", "d1", 2.5), ("q1", "d2", -0.001), ("q2", "d1", 7.0)]
    assert table.sha256 == hashlib.sha256(data).hexdigest()


def test_ids_are_taken_verbatim(tmp_path):
    # No quoting, no comments, no missing-value words: "NA", "#1" and '"x' are ids like any other.
    table = read_run(_write(tmp_path, b'NA Q0 "x 1 1 t\n#1 Q0 null 2 0.5 t\n'))
    assert _columns(table) == [("NA", '"x', 1.0), ("#1", "null", 0.5)]


def test_scores_are_parsed_exactly(tmp_path):
    rng = random.Random(11)
    texts = ["0.1", "2.2250738585072011e-308", "4.9406564584124654e-324", "9007199254740993", "1e-400", "-0.0",
             "+.5", "7.", "1E+05"]
    for _ in range(3000):
        value = rng.random() * 10 ** rng.randint(-20, 20)
        texts += [repr(value), f"{value:.25g}", f"{value:.17e}"[:-4] + "5000000001" + f"{value:.17e}"[-4:]]
    data = "".join(f"q Q0 d{i} {i} {t} t\n" for i, t in enumerate(texts)).encode()
    values = read_run(_write(tmp_path, data)).values.tolist()
    assert [v.hex() for v in values] == [float(t).hex() for t in texts]


def test_qrels_in_trec_and_beir_form(tmp_path):
    trec = read_qrels(_write(tmp_path, b"q1 0 d1 2\nq1 0 d2 0\n\nq2 Q0 d1 -1\n", "trec"))
    beir = read_qrels(_write(tmp_path, b"query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t0\nq2\td1\t-1\n", "beir"))
    bare = read_qrels(_write(tmp_path, b"q1\td1\t2\nq1\td2\t0\nq2\td1\t-1\n", "bare"))
    assert (trec.format, beir.format, bare.format) == (TREC_QRELS, BEIR_QRELS, BEIR_QRELS)
    assert (beir.header, bare.header) == (True, False)
    assert _columns(trec) == _columns(beir) == _columns(bare) == [("q1", "d1", 2), ("q1", "d2", 0), ("q2", "d1", -1)]
    # A BEIR id may hold a space: the fields are tab-separated.
    assert _columns(read_qrels(_write(tmp_path, b"q 1\td 1\t1\n", "spaced"))) == [("q 1", "d 1", 1)]


def _reference(data: bytes) -> list[tuple[str, str, float]]:
    """A run's (query, document, score) rows read line by line, fields split at runs of spaces and tabs."""
    rows = []
    for line in data.decode().split("\n"):
        fields = line.replace("\t", " ").split()
        if fields:
            rows.append((fields[0], fields[2], float(fields[4])))
    return rows


@pytest.mark.parametrize("spacing", ["single spaces", "tabs and runs of blanks"])
def test_a_large_run_reads_as_a_line_by_line_reader_reads_it(tmp_path, spacing):
    # Several of Arrow's 1 MB blocks, each encoding its ids on its own: the codes must still index the ids in
    # order of first appearance across the file (pandas.factorize's order), every row in its place.
    rng = random.Random(5)
    lines, pairs = [], set()
    for i in range(60_000):
        query, document = f"q{rng.randrange(3000)}", f"d{rng.randrange(50_000)}é"
        if (query, document) in pairs:  # a query names a document once
            continue
        pairs.add((query, document))
        fields = [query, "Q0", document, str(i), repr(rng.uniform(-50, 50)), "run"]
        if spacing == "single spaces":
            lines.append(" ".join(fields))
        else:
            lines.append(rng.choice(["", " ", "\t"]) + "".join(f + rng.choice([" ", "\t", "  ", " \t "])
                                                             for f in fields).rstrip(rng.choice([" ", "", "\t"])))
        if rng.random() < 0.01:
            lines.append(rng.choice(["", " ", "\t \t"]))
    data = ("\n".join(lines) + "\n").encode()
    assert len(data) > 2 << 20
    table = read_run(_write(tmp_path, data))
    expected = _reference(data)
    assert _columns(table) == expected
    assert table.query_ids.tolist() == list(dict.fromkeys(q for q, _, _ in expected))
    assert table.document_ids.tolist() == list(dict.fromkeys(d for _, d, _ in expected))


@pytest.mark.parametrize("blank", [b"\t\t", b"\t", b"  \t ", b" "])
def test_a_line_of_tabs_or_spaces_in_beir_qrels_is_blank_and_skipped(tmp_path, blank):
    # Issue 35 item 12: a TAB-only line read as a row of empty fields got "holds a grade that is not a whole
    # number" with no line; blank lines are skipped, and a line of blanks is one.
    data = b"q1\td1\t2\n" + blank + b"\nq2\td2\t0\n" + blank + b"\n"
    assert _columns(read_qrels(_write(tmp_path, data))) == [("q1", "d1", 2), ("q2", "d2", 0)]
    with_header = b"query-id\tcorpus-id\tscore\n" + blank + b"\nq1\td1\t2\n"
    assert _columns(read_qrels(_write(tmp_path, with_header, "header"))) == [("q1", "d1", 2)]
    # A bad line after it is still named by its own number.
    with pytest.raises(JudgmentsError) as caught:
        read_qrels(_write(tmp_path, data + b"q3\td3\thigh\n", "bad"))
    assert caught.value.line == 5 and "grade 'high' is not a whole number" in str(caught.value)


RUN_CASES = {
    "empty": (b"", None, "is empty"),
    "blank lines only": (b"\n \n\t\n", None, "is empty"),
    "five fields": (b"q Q0 a 1 1.5 t\nq Q0 b 2 1.5\n", 2, "has 5 fields, a line of TREC run has 6"),
    "seven fields": (b"q Q0 a 1 1.5 t\n\nq Q0 b 2 1.5 t x\n", 3, "has 7 fields"),
    "one field first": (b"garbage\nq Q0 b 2 1.5 t\n", 1, "has 1 field,"),
    "score a word": (b"q Q0 a 1 1.5 t\nq Q0 b 2 high t\n", 2, "score 'high' is not a finite number"),
    "score infinite": (b"q Q0 a 1 1.5 t\nq Q0 b 2 inf t\n", 2, "score 'inf' is not a finite number"),
    "score overflowing": (b"q Q0 a 1 1.5 t\nq Q0 b 2 1e999 t\n", 2, "score '1e999' is not a finite number"),
    "score in hex": (b"q Q0 a 1 0x1p3 t\n", 1, "score '0x1p3'"),
    "score not a number": (b"q Q0 a 1 1.5 t\nq Q0 b 2 NaN t\n", 2, "score 'NaN' is not a finite number"),
    "score with an underscore": (b"q Q0 a 1 1.5 t\nq Q0 b 2 1_0 t\n", 2, "score '1_0' is not a finite number"),
    "score in fullwidth digits": ("q Q0 a 1 1.5 t\nq Q0 b 2 \uff11 t\n".encode(), 2, "is not a finite number"),
    "document twice": (b"q Q0 a 1 3 t\nq Q0 b 2 2 t\nq Q0 a 3 1 t\n", 3,
                       "ranks document 'a' for query 'q' a second time (first on line 1)"),
    "document twice, blank lines between": (b"\n\nq Q0 a 1 3 t\n \nq Q0 b 2 2 t\n\nq Q0 a 3 1 t\n\n", 7,
                                            "ranks document 'a' for query 'q' a second time (first on line 3)"),
    "byte order mark": (b"\xef\xbb\xbfq Q0 a 1 1.5 t\n", 1, "byte order mark"),
    "CRLF": (b"q Q0 a 1 1.5 t\r\n", 1, "CRLF"),
    "CRLF later": (b"q Q0 a 1 1.5 t\nq Q0 b 2 1.5 t\r\n", 2, "CRLF"),
    "invalid UTF-8": (b"q Q0 a 1 1.5 t\nq Q0 \xff 2 1.5 t\n", 2, "not valid UTF-8"),
    "a megabyte without a line break": (b"x" * (2 << 20), 1, "no line break in its first 1,048,576 bytes"),
}


@pytest.mark.parametrize("name", sorted(RUN_CASES))
def test_a_bad_run_is_named_by_file_and_line(tmp_path, name):
    data, line, message = RUN_CASES[name]
    path = _write(tmp_path, data, "run.trec")
    with pytest.raises(RunFileError) as caught:
        read_run(path)
    where = f"{path}:{line}:" if line else f"{path}:"
    assert str(caught.value).startswith(where) and message in str(caught.value), str(caught.value)
    assert caught.value.fix


QRELS_CASES = {
    "empty": (b"", None, "is empty"),
    "grade with a point": (b"q 0 a 1\nq 0 b 1.0\n", 2, "grade '1.0' is not a whole number"),
    "grade a word": (b"q\ta\t1\nq\tb\thigh\n", 2, "grade 'high' is not a whole number"),
    "grade too large": (b"q 0 a 1\nq 0 b 1001\n", 2, "grade 1001 is above the largest groundkit takes (1000)"),
    "grade beyond 64 bits": (b"q 0 a 1\nq 0 b 123456789012345678901234567890\n", 2, "is above the largest"),
    "three fields, spaces": (b"q a 1\n", 1, "has 3 fields, a line of TREC qrels has 4"),
    "TREC then BEIR": (b"q 0 a 1\nq\tb\t1\n", 2, "has 3 fields, a line of TREC qrels has 4"),
    "BEIR then TREC": (b"q\ta\t1\nq 0 b 1\n", 2, "has 1 tab-separated field, a line of BEIR qrels has 3"),
    "a header that is not BEIR's": (b"query\tdoc\tscore\nq\ta\t1\n", 1, "grade 'score' is not a whole number"),
    "a header later": (b"q\ta\t1\nquery-id\tcorpus-id\tscore\n", 2, "grade 'score' is not a whole number"),
    "BEIR, an empty document id": (b"q\ta\t1\nq\t\t1\n", 2, "has an empty document id"),
    "BEIR, an empty query id": (b"q\ta\t1\n\tb\t1\n", 2, "has an empty query id"),
    "document twice": (b"q 0 a 1\nq 0 a 2\n", 2, "judges document 'a' for query 'q' a second time (first on line 1)"),
    "document twice after a header": (b"query-id\tcorpus-id\tscore\n\nq\ta\t1\nq\ta\t2\n", 4,
                                      "judges document 'a' for query 'q' a second time (first on line 3)"),
}


@pytest.mark.parametrize("name", sorted(QRELS_CASES))
def test_bad_qrels_are_named_by_file_and_line(tmp_path, name):
    data, line, message = QRELS_CASES[name]
    path = _write(tmp_path, data, "qrels.trec")
    with pytest.raises(JudgmentsError) as caught:
        read_qrels(path)
    where = f"{path}:{line}:" if line else f"{path}:"
    assert str(caught.value).startswith(where) and message in str(caught.value), str(caught.value)


def test_a_missing_file_or_a_folder_is_named(tmp_path):
    with pytest.raises(RunFileError, match="does not exist"):
        read_run(tmp_path / "nope")
    with pytest.raises(JudgmentsError, match="is a directory"):
        read_qrels(tmp_path)


def test_a_huge_run_with_a_bad_first_line_fails_at_once_under_a_memory_cap(tmp_path):
    """A 1 GiB run whose first line is bad fails at line 1, in a process that cannot hold the file."""
    path = tmp_path / "huge.trec"
    with path.open("wb") as handle:
        handle.write(b"q1 Q0 d1 1 high run\n")
        handle.truncate(1 << 30)  # sparse: the rest reads as NUL bytes
    cap = 768 << 20  # reading the file whole needs over 1 GiB

    def limit_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    result = subprocess.run(
        [sys.executable, "-m", "groundkit.cli", "score-trec", str(path), "--qrels", str(path), "--out",
         str(tmp_path / "out")],
        capture_output=True, text=True, env=env(OPENBLAS_NUM_THREADS="1"), preexec_fn=limit_memory, check=False)
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith(f"error: {path}:1: score 'high' is not a finite number"), result.stderr
    assert "fix: " in result.stderr and not (tmp_path / "out").exists()


def test_beir_qrels_with_a_header_and_no_line_after_it_read_as_no_rows(tmp_path):
    # Arrow refuses a body of no bytes at all ("Empty CSV file"); a header alone reads as a header and blank lines do.
    alone = read_qrels(_write(tmp_path, b"query-id\tcorpus-id\tscore\n", "alone"))
    blank = read_qrels(_write(tmp_path, b"query-id\tcorpus-id\tscore\n\n", "blank"))
    assert (alone.header, alone.rows) == (blank.header, blank.rows) == (True, 0)
