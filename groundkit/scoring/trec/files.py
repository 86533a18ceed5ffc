"""TREC runs and qrels (and BEIR's qrels), read in bulk.

The formats, as trec_eval reads them:

* a run: ``query_id Q0 document_id rank score tag``, six fields separated by spaces or tabs. Only the query,
  the document and the score are read: trec_eval orders a query's documents by score and never reads the
  rank or the other two, and neither does groundkit (scoring/trec/measures.py says in which order).
* TREC qrels: ``query_id iteration document_id grade``, four fields; the iteration is not read.
* BEIR qrels (``qrels/test.tsv``): ``query-id<TAB>corpus-id<TAB>score``, with or without that header line.

A score is a finite decimal number, read exactly (the float Python's ``float()`` gives for its text). A
grade is a whole number: above 0 relevant, with the grade as nDCG's gain, 0 or less judged non-relevant (trec_eval's
reading: it reads ``1.5`` as 1, groundkit refuses it). Blank lines (spaces and tabs only) are skipped. A query may
name a document once in a run and once in qrels; trec_eval refuses a run that repeats one too.

Reading is in bulk. The bytes are read once, for their SHA-256 and to be parsed; they must follow the policy of
every file a user hands groundkit (UTF-8 without byte order mark, LF line endings: groundkit/inputs/text.py says
why); Arrow's CSV reader parses them into columns, the ids into integer codes and one string per distinct id, so
nothing is built per line. Before that the first non-blank line is checked on its own, so a
file that is not a run at all (a gigabyte of something else) is refused at once. Whatever the bulk read
refuses is then found by a line-by-line scan applying the rules above, which names the first bad line; it
runs only over a bad file.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyarrow import csv

from groundkit.corpus.judgments import MAX_GRADE
from groundkit.errors import InputError, JudgmentsError, RunFileError
from groundkit.inputs.text import check_utf8_lf, decode_utf8_lf

RUN_FIX = ("write one line per retrieved document: query_id Q0 document_id rank score tag (six fields separated "
           "by spaces or tabs, the score a number), as trec_eval reads a run")
QRELS_FIX = ("write one line per judgment: query_id 0 document_id grade (TREC qrels, four fields separated by "
             "spaces or tabs) or query-id<TAB>corpus-id<TAB>score (BEIR qrels, a header line optional), each "
             "grade a whole number")
BEIR_HEADER = ("query-id", "corpus-id", "score")
FIRST_LINE_BYTES = 1 << 20
"""How much of a file is read to check its first line before the bulk read: far more than any line needs."""
BLOCK_BYTES = 16 << 20
"""The bytes Arrow parses as one block, on one thread: each block encodes its ids on its own, and fewer, larger
blocks make the dictionaries cheaper to unify (0.15 s against 0.6 s with Arrow's 1 MB, 100,000 queries x 100)."""

_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INTEGER = re.compile(r"[+-]?[0-9]+")
_BLANKS = re.compile(r"[ \t]+")
_BLANK_LINES = re.compile(rb"^[ \t]+$", re.MULTILINE)
_SPACE_RUNS = re.compile(rb" {2,}")
_LINE_EDGES = re.compile(rb"^ | $", re.MULTILINE)


@dataclass(frozen=True)
class Format:
    """One of the three formats: its fields and which of them are read."""

    name: str
    fields: int
    query: int
    document: int
    value: int
    tab_separated: bool
    graded: bool
    error: type[InputError]
    fix: str

    def split(self, line: str) -> list[str]:
        return line.split("\t") if self.tab_separated else _BLANKS.split(line.strip(" \t"))


RUN = Format("TREC run", 6, 0, 2, 4, False, False, RunFileError, RUN_FIX)
TREC_QRELS = Format("TREC qrels", 4, 0, 2, 3, False, True, JudgmentsError, QRELS_FIX)
BEIR_QRELS = Format("BEIR qrels", 3, 0, 1, 2, True, True, JudgmentsError, QRELS_FIX)


@dataclass(frozen=True)
class Table:
    """A run or qrels file as columns, one row per (non-blank, non-header) line.

    Attributes:
        path: The file.
        sha256: The SHA-256 of its bytes.
        format: Which format it was read as.
        header: Whether a BEIR header line opened it.
        query_codes: Each row's query as an index into ``query_ids`` (intp).
        query_ids: The distinct query ids, in order of first appearance.
        document_codes: Each row's document as an index into ``document_ids``.
        document_ids: The distinct document ids, in order of first appearance.
        values: Each row's score (float64) or grade (int64).
    """

    path: Path
    sha256: str
    format: Format
    header: bool
    query_codes: np.ndarray
    query_ids: np.ndarray
    document_codes: np.ndarray
    document_ids: np.ndarray
    values: np.ndarray

    @property
    def rows(self) -> int:
        return len(self.values)


def read_run(path: str | Path) -> Table:
    """Read a TREC run; every line's query, document and score.

    Raises:
        RunFileError: naming the file and the first bad line (or the file, when it is empty or missing).
    """
    return _read(Path(path), lambda _first: RUN)


def read_qrels(path: str | Path) -> Table:
    """Read TREC qrels, or BEIR qrels with or without their header: the first line tells which.

    Raises:
        JudgmentsError: naming the file and the first bad line (or the file, when it is empty or missing).
    """
    return _read(Path(path), _qrels_format)


def _qrels_format(first: str) -> Format:
    if "\t" in first and len(first.split("\t")) == BEIR_QRELS.fields:
        return BEIR_QRELS
    return TREC_QRELS


def _read(path: Path, choose: Callable[[str], Format]) -> Table:
    error = RunFileError if choose is not _qrels_format else JudgmentsError
    what, hashed_as = ("run", "the run's SHA-256 in run.json") if error is RunFileError else \
        ("qrels", "judgments_hash (the qrels' SHA-256)")
    if not path.is_file():
        problem = "is a directory, not a file" if path.is_dir() else "does not exist"
        raise error(path, f"{problem}; a {what} file was expected here", fix="check the path")
    try:
        with path.open("rb") as handle:
            head = handle.read(FIRST_LINE_BYTES)
        found = _first_line(path, head, complete=len(head) < FIRST_LINE_BYTES, error=error, hashed_as=hashed_as)
        if found is not None:  # checked before the rest is read: a file of something else fails at once
            form, header = _checked_first(path, *found, choose)
        data = path.read_bytes()
    except OSError as exc:
        raise error(path, f"cannot be read ({exc.strerror})", fix="check the file's permissions") from None
    check_utf8_lf(path, data, error=error, hashed_as=hashed_as)
    if found is None:  # the first megabyte was blank lines
        found = _first_line(path, data, complete=True, error=error, hashed_as=hashed_as)
        assert found is not None  # a complete text without a non-blank line raises
        form, header = _checked_first(path, *found, choose)
    number = found[0]
    digest = hashlib.sha256(data).hexdigest()
    skip = number if header else number - 1  # lines before the first row: blank ones, and the header
    try:
        columns = _parse(data, form, skip)
    except (pa.ArrowInvalid, ValueError) as exc:
        raise _scan(path, data, form, header) or form.error(
            path, f"cannot be read as a {form.name} ({exc})", fix=form.fix) from None
    rows = len(columns[form.value])
    # TAB-separated, a field left empty (separated by blanks, none is: _parse made sure)
    if form.tab_separated and any(_holds_empty(column) for column in columns.values()):
        raise _scan(path, data, form, header) or form.error(path, "has an empty field", fix=form.fix)
    if form.graded:
        codes, texts = _codes(columns[form.value])
        values = _grades(path, data, form, header, texts)[codes]
    else:
        values = columns[form.value].to_numpy()
        if not bool(np.isfinite(values).all()):  # nan and inf parse as floats; the rules refuse them
            raise _scan(path, data, form, header) or form.error(path, "holds a score that is not finite",
                                                               fix=form.fix)
    query_codes, query_ids = _codes(columns[form.query])
    document_codes, document_ids = _codes(columns[form.document])
    table = Table(path, digest, form, header, query_codes, query_ids, document_codes, document_ids, values)
    _refuse_repeats(table, _line_of(data, skip, rows))
    return table


def _checked_first(path: Path, number: int, first: str, choose: Callable[[str], Format]) -> tuple[Format, bool]:
    """The format of a file whose first non-blank line is ``first``, and whether it is a header; that line checked."""
    form = choose(first)
    header = form is BEIR_QRELS and tuple(first.split("\t")) == BEIR_HEADER
    if not header:
        _check_line(path, form, number, first)
    return form, header


def _first_line(path: Path, head: bytes, *, complete: bool, error: type[InputError],
                hashed_as: str) -> tuple[int, str] | None:
    """The number and text of the first non-blank line among the first bytes ``head`` of a file (``complete``:
    all of it); None when those bytes are blank lines only and the file goes on."""
    lines = head.split(b"\n")
    rest = b"" if complete else lines.pop()  # perhaps cut short
    for number, raw in enumerate(lines, start=1):
        if raw.strip(b" \t"):
            # The whole file is checked against the text policy later; here only as far as this line.
            text = decode_utf8_lf(path, b"\n".join(lines[:number]), error=error, hashed_as=hashed_as)
            return number, text.split("\n")[-1]
    if complete:
        raise error(path, "is empty (or blank): there is nothing to score",
                    fix="point at the file the system wrote; if this is it, that system wrote nothing")
    if rest.strip(b" \t"):
        raise error(path, f"has no line break in its first {FIRST_LINE_BYTES:,} bytes, so its first line is no line "
                    f"of a {'run' if error is RunFileError else 'qrels file'}", line=len(lines) + 1,
                    fix=RUN_FIX if error is RunFileError else QRELS_FIX)
    return None


def _check_line(path: Path, form: Format, number: int, line: str) -> None:
    """Raise ``form.error`` naming ``number`` if ``line`` (not blank) breaks the rules of ``form``."""
    fields = form.split(line)
    if len(fields) != form.fields:
        how = ("tab-separated " if form.tab_separated else "") + ("field" if len(fields) == 1 else "fields")
        raise form.error(path, f"has {len(fields)} {how}, a line of {form.name} has {form.fields}: {_shown(line)}",
                         line=number, fix=form.fix)
    for position in (form.query, form.document):
        if not fields[position]:
            raise form.error(path, f"has an empty {'query' if position == form.query else 'document'} id",
                             line=number, fix=form.fix)
    value = fields[form.value].strip()
    if form.graded:
        if not _INTEGER.fullmatch(value):
            raise form.error(path, f"grade {_shown(fields[form.value])} is not a whole number", line=number,
                             fix="write the relevance grade as a whole number: above 0 relevant (the gain of "
                                 "nDCG), 0 or less judged non-relevant")
        if int(value) > MAX_GRADE:
            raise form.error(path, f"grade {int(value)} is above the largest groundkit takes ({MAX_GRADE})",
                             line=number, fix="check the file: relevance grades are small whole numbers (TREC "
                                              "uses 0 to 4)")
    elif not _DECIMAL.fullmatch(value) or not math.isfinite(float(value)):
        raise form.error(path, f"score {_shown(fields[form.value])} is not a finite number", line=number,
                         fix="write each score as a decimal number (e.g. 12.5 or 1.25e-3); trec_eval orders a "
                             "query's documents by it")


def _shown(text: str, limit: int = 80) -> str:
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}... ({len(text)} characters)"


def _parse(data: bytes, form: Format, skip: int) -> dict[int, pa.ChunkedArray]:
    """Every column of ``data`` past its first ``skip`` lines: a run's score as float64, every other field as a
    dictionary (each distinct value one string, each row a code).

    Arrow's CSV reader takes one separator character and no runs of them. The fields of a run or TREC qrels file
    may be separated by any run of spaces and tabs, and a line may begin or end with some: tabs become spaces (a
    scan in C), and the file is read as if single spaces separated its fields, the usual file. A file laid out
    otherwise reads as lines of the wrong number of fields or with an empty field (nothing else gives one), and is
    then read again with every run of blanks made one space and the blanks around each line removed. Each line
    keeps its place; a line of blanks becomes empty, and empty lines are skipped. Every field is parsed, so a line
    with a field too many or too few is refused. The caller refuses an empty field: of TAB-separated BEIR qrels,
    or of a line with a field too few and a run of blanks. Arrow parses a decimal to the nearest double, as
    ``float()`` does, and takes exactly the decimals ``_DECIMAL`` takes, and nan and inf, which the caller refuses.

    Raises:
        pyarrow.ArrowInvalid: the file has a line the reader cannot take.
    """
    if form.tab_separated:
        return _columns(_BLANK_LINES.sub(b"", data), form, skip)  # a line of blanks would be a row of empty fields
    if b"\t" in data:
        data = data.replace(b"\t", b" ")
    try:
        columns = _columns(data, form, skip)
        if not any(_holds_empty(column) for column in columns.values()):
            return columns
    except pa.ArrowInvalid:
        pass
    return _columns(_LINE_EDGES.sub(b"", _SPACE_RUNS.sub(b" ", data)), form, skip)


def _columns(data: bytes, form: Format, skip: int) -> dict[int, pa.ChunkedArray]:
    start = 0
    for _ in range(skip):  # past the blank lines and the header before the first row
        start = data.index(b"\n", start) + 1
    names = [str(i) for i in range(form.fields)]
    types = {name: pa.dictionary(pa.int32(), pa.string()) for name in names}
    if not form.graded:
        types[names[form.value]] = pa.float64()
    table = csv.read_csv(
        pa.py_buffer(data)[start:] if start < len(data) else pa.py_buffer(b"\n"),  # Arrow refuses no bytes at all
        read_options=csv.ReadOptions(column_names=names, block_size=BLOCK_BYTES),
        parse_options=csv.ParseOptions(delimiter="\t" if form.tab_separated else " ", quote_char=False,
                                       double_quote=False, escape_char=False, ignore_empty_lines=True),
        convert_options=csv.ConvertOptions(
            column_types=types, null_values=[], true_values=[], false_values=[], strings_can_be_null=False,
            quoted_strings_can_be_null=False, check_utf8=False))  # UTF-8: checked before
    return {i: table.column(name) for i, name in enumerate(names)}


def _holds_empty(column: pa.ChunkedArray) -> bool:
    """Whether a dictionary column holds an empty string (a float column never does: "" is not a float)."""
    return pa.types.is_dictionary(column.type) and any(
        pc.any(pc.equal(pc.binary_length(chunk.dictionary), 0)).as_py() for chunk in column.chunks)


def _codes(column: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """A dictionary column's codes and distinct values, in order of first appearance (as ``pandas.factorize``).

    Each block of the file is encoded on its own; unifying appends each block's new values after the earlier
    blocks', so the order of first appearance holds across blocks.
    """
    if column.num_chunks == 0:
        return np.zeros(0, dtype=np.intp), np.array([], dtype=object)
    unified = column.unify_dictionaries()
    dictionary = unified.chunk(0).dictionary
    codes = np.concatenate([chunk.indices.to_numpy() for chunk in unified.chunks]).astype(np.intp)
    return codes, np.array(dictionary.to_pylist(), dtype=object)


def _grades(path: Path, data: bytes, form: Format, header: bool, texts: np.ndarray) -> np.ndarray:
    """The grades written ``texts`` (a qrels column's distinct values): whole numbers no larger than MAX_GRADE."""
    whole = np.fromiter((_INTEGER.fullmatch(t.strip()) is not None for t in texts), dtype=bool, count=len(texts))
    if not bool(whole.all()):
        raise _scan(path, data, form, header) or form.error(path, "holds a grade that is not a whole number",
                                                           fix=form.fix)
    try:
        grades = np.array([int(t) for t in texts], dtype=np.int64)
    except OverflowError:
        raise _scan(path, data, form, header) or form.error(path, "holds a grade too large", fix=form.fix) from None
    if bool((grades > MAX_GRADE).any()):
        raise _scan(path, data, form, header) or form.error(path, "holds a grade too large", fix=form.fix)
    return grades


def _line_of(data: bytes, skip: int, rows: int) -> Callable[[int], int]:
    """The line of ``data`` each row was read from (rows are the non-blank lines past the first ``skip``): for an
    error's message only, so nothing is counted until it is asked."""

    def line(row: int) -> int:
        if data.count(b"\n") + (not data.endswith(b"\n")) == rows + skip:
            return skip + 1 + row  # no blank line among them: the usual file
        numbers = (n for n, raw in enumerate(data.split(b"\n"), start=1) if n > skip and raw.strip(b" \t"))
        return next(itertools.islice(numbers, row, None))

    return line


def _scan(path: Path, data: bytes, form: Format, header: bool) -> InputError | None:
    """The error of the first line that breaks ``form``'s rules, or None if every line keeps them."""
    text = data.decode("utf-8")  # the policy was checked: this cannot fail
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip(" \t") or (header and number == 1):
            continue
        try:
            _check_line(path, form, number, line)
        except InputError as exc:
            return exc
    return None


def _refuse_repeats(table: Table, line: Callable[[int], int]) -> None:
    """Refuse a query naming a document twice, naming both lines: which of the two counts is unknowable."""
    keys = table.query_codes.astype(np.int64) * max(len(table.document_ids), 1) + table.document_codes
    ordered = np.sort(keys)  # numpy's vectorised sort: a tenth of hashing ten million keys
    if not bool((ordered[1:] == ordered[:-1]).any()):
        return
    repeated = pd.Series(keys).duplicated(keep="first").to_numpy()  # which rows: only for the message
    row = int(np.flatnonzero(repeated)[0])
    first = int(np.flatnonzero(keys == keys[row])[0])
    query, document = table.query_ids[table.query_codes[row]], table.document_ids[table.document_codes[row]]
    kind = "ranks" if table.format is RUN else "judges"
    raise table.format.error(
        table.path, f"{kind} document {document!r} for query {query!r} a second time (first on line {line(first)}); "
        "which of the two counts is unknowable", line=line(row),
        fix="keep one line per query and document" + (" (trec_eval refuses such a run too)" if table.format is RUN
                                                      else ""))
