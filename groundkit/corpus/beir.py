"""Importing a BEIR-format dataset as a groundkit corpus folder and judgments file.

BEIR (Thakur et al., NeurIPS 2021 Datasets and Benchmarks) ships each
collection as::

    corpus.jsonl      {"_id": ..., "title": ..., "text": ...} per line
    queries.jsonl     {"_id": ..., "text": ...} per line
    qrels/test.tsv    query-id, corpus-id and score, tab-separated, one judgment per line (most files
                      start with the header ``query-id corpus-id score``; some do not)

``import_beir`` writes into ``OUT``::

    corpus/<name>.txt    one file per document: title, a blank line, text (see "File names")
    judgments.jsonl      one ``factoid`` judgment per query of the split with a qrel score > 0;
                         each relevant document is a whole-document gold span whose grade is the score
    beir-import.json     what was read (SHA-256 of each input file), counted, normalised and skipped

Choices, each of which changes what is measured and is therefore written down:

* Grades are kept. A qrel with score > 0 makes its document gold with that
  score as its grade, which nDCG uses as the gain, as BEIR's evaluation
  (pytrec_eval) does; a score <= 0 is not relevant. Queries without a
  positive qrel are left out: they have nothing to find.
* Every judgment is ``factoid``: BEIR judges each document relevant on its
  own, which is not ``multi_passage`` (an answer spread over several passages).
* Qrels naming a query or a document the dataset does not hold are skipped,
  as BEIR's loader skips them, and listed in ``beir-import.json``; ``strict``
  refuses them instead. A query all of whose relevant documents were skipped
  is left out, and listed.
* BEIR's evaluation drops from a query's results the document whose id is the
  query's id (ArguAna's queries are arguments of the corpus). A query whose id
  is a document id gets that document in ``exclude_documents``, which the
  retrieve stage honours; ``keep_identical_ids`` turns this off.
* Text: CR characters are turned into LF (``\\r\\n`` first, then lone ``\\r``),
  since groundkit's corpus is LF-only; both count as whitespace for the
  tokenizer, so BM25 sees the same tokens. Title and text are stripped of
  surrounding whitespace. A NUL character is an error. A document whose
  title and text are both empty is an error unless ``drop_empty`` is set,
  which leaves it out with every qrel that names it (it changes the
  collection's size N and average length, hence BM25 scores slightly; the
  manifest lists the ids dropped).

File names: any id imports. A document's file is its id percent-encoded
(:func:`document_file`): letters, digits, ``.``, ``_`` and ``-`` stand for
themselves, every other character is ``%XX`` per UTF-8 byte, so
``<dbpedia:Oceanic_Airlines>`` is ``%3Cdbpedia%3AOceanic_Airlines%3E.txt``
and ``F/A-18`` is ``F%2FA-18.txt``; an id safe as it is keeps its name. Names
are ASCII, so no file system normalises them. Where two ids differ only by
case (their files would be one on a case-insensitive file system), their
capital letters are encoded too (``Foo`` is ``%46oo.txt``). A name longer than
one path component allows is cut into folders. :func:`document_id` decodes a
name back to the id; the manifest lists every id whose name is not ``<id>.txt``.

The output is deterministic (the same inputs give the same bytes) and is
written into a scratch folder moved into place only on success. ``OUT`` must
be new or empty, or hold an earlier import (replaced only with ``force``); see
groundkit/artifacts/outputs.py.
"""

from __future__ import annotations

import os
import re
import string
import sys
import unicodedata
import urllib.parse
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from groundkit.artifacts.lines import dumps_json
from groundkit.artifacts.outputs import output_folder
from groundkit.artifacts.seals import file_sha256
from groundkit.corpus.judgments import MAX_GRADE, Category, GoldSpan, Judgment
from groundkit.errors import DatasetError, JSONLineError
from groundkit.inputs.jsonline import loads_line
from groundkit.inputs.text import BOM, bom_error
from groundkit.inputs.validation import describe

FORMAT = "groundkit-beir-import/2"
MANIFEST = "beir-import.json"
CORPUS_DIR = "corpus"
JUDGMENTS = "judgments.jsonl"
QRELS_HEADER = ["query-id", "corpus-id", "score"]
SUFFIX = ".txt"
_PLAIN = frozenset(string.ascii_letters + string.digits + "._-")
# Characters of one path component: file systems allow 255 bytes; names are ASCII, so characters are bytes.
COMPONENT = 190
# Ends every folder a long name is cut into, so a folder is never named like a document's file (which ends in
# .txt) and the cut can be undone; "~" is not a plain character, so an encoded id never holds one.
FOLDER_MARK = "~"


# What a readable name (import-squad's titles) must still encode: the escape character itself, path separators,
# the characters Windows refuses in a name, and control and invisible format characters.
_UNSAFE = frozenset('%/\\<>:"|?*')


def _must_encode(char: str) -> bool:
    return char in _UNSAFE or unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp")


def _readable(doc_id: str, *, capitals: bool = False) -> str | None:
    """``doc_id`` as a name that reads like it: only what must be encoded is (see ``_UNSAFE``), and a leading
    ``.`` (a hidden file, which no corpus reads) or ``-`` (an option, on a command line). None when the name is
    longer than a path component allows, for :func:`document_file`'s ASCII encoding to cut it into folders.

    Non-ASCII letters stay when the id is in NFC, the form git and most file systems keep; an id in another form
    is encoded as ASCII, so that no file system's normalisation can make two ids one file.
    """
    if unicodedata.normalize("NFC", doc_id) != doc_id:
        return None
    out = []
    for position, char in enumerate(doc_id):
        if _must_encode(char) or (position == 0 and char in ".-") or (capitals and char.isupper()):
            out.extend(f"%{byte:02X}" for byte in char.encode("utf-8"))
        else:
            out.append(char)
    name = "".join(out)
    return name if len((name + SUFFIX).encode("utf-8")) <= COMPONENT else None


def _encode(doc_id: str, *, capitals: bool = False) -> str:
    """``doc_id`` percent-encoded: plain characters stay, others (and capitals if asked) become %XX per byte."""
    out = []
    for position, char in enumerate(doc_id):
        # A leading "." would hide the file and a leading "-" reads as an option on a command line.
        if char in _PLAIN and not (capitals and char.isupper()) and not (position == 0 and char in ".-"):
            out.append(char)
        else:
            out.extend(f"%{byte:02X}" for byte in char.encode("utf-8"))
    return "".join(out)


def _path(encoded: str) -> str:
    """The corpus-relative file name of an encoded id: ``<encoded>.txt``, cut into folders when too long."""
    if len(encoded) + len(SUFFIX) <= COMPONENT:
        return encoded + SUFFIX
    # Each part leaves room for a "%XX" standing for its first character and for the folder mark or ".txt".
    width = COMPONENT - 2 - max(len(FOLDER_MARK), len(SUFFIX))
    parts, start = [], 0
    while start < len(encoded):
        cut = min(start + width, len(encoded))
        if cut < len(encoded):
            cut -= 2 if encoded[cut - 2] == "%" else 1 if encoded[cut - 1] == "%" else 0  # never inside a %XX
        parts.append(encoded[start:cut])
        start = cut
    # A folder or file starting with "." or "-" (".." above all) is encoded as %XX, as a name's first character is.
    parts = [part if part[0] not in ".-" else f"%{ord(part[0]):02X}{part[1:]}" for part in parts]
    return "/".join(part + FOLDER_MARK for part in parts[:-1]) + "/" + parts[-1] + SUFFIX


def document_file(doc_id: str, *, capitals: bool = False, readable: bool = False) -> str:
    """The corpus-relative file name import-beir gives BEIR document ``doc_id`` (see the module docstring).

    ``capitals`` encodes capital letters too, as import-beir does for ids that differ from another only by
    case, and for every id whose name is cut into folders (so no two folders differ only by case).
    ``readable`` keeps spaces and letters as they are where file systems allow them (import-squad's titles:
    ``Bell Rock Lighthouse.txt``); :func:`document_id` decodes either form.
    """
    if readable:
        name = _readable(doc_id, capitals=capitals)
        if name is not None:
            return name + SUFFIX
    encoded = _encode(doc_id, capitals=capitals)
    if len(encoded) + len(SUFFIX) > COMPONENT and not capitals:
        return document_file(doc_id, capitals=True)
    return _path(encoded)


def document_files(doc_ids: Iterable[str], *, readable: bool = False) -> dict[str, str]:
    """The file name of each of ``doc_ids`` (distinct), when they are all known before any file is written.

    The same names import-beir gives while it streams a corpus: ids whose plain names differ only by case
    have their capitals encoded. ``readable``: see :func:`document_file`.
    """
    names = {doc_id: document_file(doc_id, readable=readable) for doc_id in doc_ids}
    by_folded: dict[str, list[str]] = {}
    for doc_id, name in names.items():
        if "/" not in name:
            by_folded.setdefault(name.casefold(), []).append(doc_id)
    for group in by_folded.values():
        if len(group) > 1:
            names.update((doc_id, document_file(doc_id, capitals=True, readable=readable)) for doc_id in group)
    return names


def document_id(name: str) -> str:
    """The BEIR id of the document import-beir wrote as ``name``: the inverse of :func:`document_file`.

    Raises:
        ValueError: ``name`` is not a name document_file gives.
    """
    if not name.endswith(SUFFIX):
        raise ValueError(f"{name!r} does not end in {SUFFIX}")
    *folders, last = name[: -len(SUFFIX)].split("/")
    if any(not folder.endswith(FOLDER_MARK) for folder in folders):
        raise ValueError(f"{name!r} has a folder not ending in {FOLDER_MARK!r}")
    encoded = "".join(folder[: -len(FOLDER_MARK)] for folder in folders) + last
    return urllib.parse.unquote(encoded, errors="strict")


def document_text(title: str, text: str) -> str:
    """A document file's content: title, a blank line, text (either may be absent), LF-terminated."""
    parts = [part for part in (_normalise(title), _normalise(text)) if part]
    return "\n\n".join(parts) + "\n" if parts else ""


def _normalise(value: str) -> str:
    return value.replace("\r\n", "\n").replace("\r", "\n").strip()


def _require_file(path: Path) -> None:
    if not path.is_file():
        raise DatasetError(
            path,
            "is missing: a BEIR dataset folder holds corpus.jsonl, queries.jsonl and qrels/<split>.tsv",
            fix="point import-beir at the unzipped BEIR dataset folder (the one holding corpus.jsonl)",
        )


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """Non-blank lines with their 1-based numbers, decoded strictly as UTF-8."""
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if number == 1 and raw.startswith(BOM):
                raise bom_error(path, DatasetError)
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DatasetError(
                    path,
                    f"is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})",
                    fix="re-encode the file as UTF-8",
                    line=number,
                ) from None
            if line.strip():
                yield number, line


def _records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    _require_file(path)
    for number, line in _lines(path):
        try:
            # Strict: a key written twice, a lone surrogate, NaN, 1e400, deep nesting or a huge integer is refused.
            record = loads_line(line)
        except JSONLineError as exc:
            raise DatasetError(path, exc.problem, fix="each line must be one JSON object", line=number) from None
        if not isinstance(record, dict):
            raise DatasetError(path, "expected a JSON object", fix="each line must be one JSON object", line=number)
        yield number, record


def _string(path: Path, number: int, record: dict[str, Any], key: str, *, default: str | None = None) -> str:
    value = record.get(key, default)
    if not isinstance(value, str):
        problem = "is missing" if key not in record else f"must be a string, got {type(value).__name__}"
        raise DatasetError(path, f"field {key!r} {problem}", fix=f"give every record a string {key!r}",
                           line=number, key=key)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise DatasetError(path, f"field {key!r} holds an unpaired surrogate (\\ud8xx escape)",
                           fix="repair the record's text", line=number, key=key) from None
    if "\0" in value:
        raise DatasetError(path, f"field {key!r} holds a NUL character", fix="remove it from the record",
                           line=number, key=key)
    return value


def _progress(total: int | None, desc: str) -> Any:
    from tqdm import tqdm

    # Only a person watching a terminal wants the bar; logs and CI get nothing.
    return tqdm(total=total, desc=desc, unit=" docs", file=sys.stderr, disable=not sys.stderr.isatty(), leave=False)


@dataclass
class _Corpus:
    """What writing the corpus left: each written id's file name, the ids dropped as empty, documents with CR."""

    names: dict[str, str] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)
    with_cr: int = 0


def _write_corpus(path: Path, target: Path, *, drop_empty: bool) -> _Corpus:
    """Write one file per document under ``target``."""
    corpus = _Corpus()
    first_line: dict[str, int] = {}
    # Ids whose plain names are equal but for case, by that name in lower case: on a case-insensitive file
    # system their files would be one, so each of them has its capitals encoded.
    by_folded: dict[str, list[str]] = {}
    target.mkdir()
    with _progress(None, "import-beir corpus") as bar:
        for number, record in _records(path):
            doc_id = _string(path, number, record, "_id")
            if doc_id in first_line:
                raise DatasetError(path, f"duplicate document id {doc_id!r} (first on line {first_line[doc_id]})",
                                   fix="give every document its own _id", line=number, key="_id")
            if not doc_id:
                raise DatasetError(path, "document id is empty", fix="give every document a non-empty _id",
                                   line=number, key="_id")
            first_line[doc_id] = number
            title = _string(path, number, record, "title", default="")
            text = _string(path, number, record, "text")
            content = document_text(title, text)
            if not content:
                if not drop_empty:
                    raise DatasetError(
                        path, f"document {doc_id!r} has neither title nor text; groundkit rejects empty documents",
                        fix="pass --drop-empty to leave such documents out, with the qrels that name them (BM25's N "
                        "and average length then differ slightly from the original collection's)",
                        line=number,
                    )
                corpus.dropped.append(doc_id)
                continue
            name = document_file(doc_id)
            if "/" not in name:
                group = by_folded.setdefault(name.lower(), [])
                if group:
                    for other in group:
                        _rename(target, corpus.names, other, document_file(other, capitals=True))
                    name = document_file(doc_id, capitals=True)
                group.append(doc_id)
            corpus.with_cr += "\r" in title or "\r" in text
            file = target / name
            file.parent.mkdir(parents=True, exist_ok=True)
            with file.open("x", encoding="utf-8", newline="\n") as handle:
                handle.write(content)
            corpus.names[doc_id] = name
            bar.update(1)
    if not corpus.names:
        raise DatasetError(path, "holds no documents", fix="check that this is a BEIR corpus.jsonl")
    corpus.dropped.sort()
    return corpus


def _rename(target: Path, names: dict[str, str], doc_id: str, name: str) -> None:
    if names[doc_id] != name:
        os.replace(target / names[doc_id], target / name)
        names[doc_id] = name


def _read_queries(path: Path) -> dict[str, tuple[str, int]]:
    queries: dict[str, tuple[str, int]] = {}
    for number, record in _records(path):
        query_id = _string(path, number, record, "_id")
        if query_id in queries:
            raise DatasetError(path, f"duplicate query id {query_id!r} (first on line {queries[query_id][1]})",
                               fix="give every query its own _id", line=number, key="_id")
        queries[query_id] = (_string(path, number, record, "text"), number)
    return queries


@dataclass
class _Qrels:
    """The qrels as imported: grades of relevant documents per query, and what was counted or skipped."""

    relevant: dict[str, dict[str, int]] = field(default_factory=dict)
    header: bool = False
    nonpositive: int = 0
    max_score: int = 0
    skipped: list[dict[str, Any]] = field(default_factory=list)
    judged: set[str] = field(default_factory=set)
    """Queries with a positive qrel in the file, whether or not its document was imported."""


UNKNOWN_QUERY = "query not in queries.jsonl"
UNKNOWN_DOCUMENT = "document not in corpus.jsonl"
EMPTY_DOCUMENT = "document empty, dropped by --drop-empty"


def _is_integer(text: str) -> bool:
    return re.fullmatch(r"[+-]?[0-9]+", text) is not None


def _read_qrels(
    path: Path, queries: dict[str, tuple[str, int]], corpus: _Corpus, *, strict: bool
) -> _Qrels:
    """Read a qrels file, with or without its header line."""
    _require_file(path)
    qrels = _Qrels()
    seen: dict[tuple[str, str], int] = {}
    dropped = set(corpus.dropped)
    first = True
    for number, line in _lines(path):
        fields = line.rstrip("\r\n").split("\t")
        if first:
            first = False
            # A header's score column is a word and a qrel's an integer, so the first line is one or the other.
            if fields == QRELS_HEADER:
                qrels.header = True
                continue
            if len(fields) != 3 or not _is_integer(fields[2]):
                raise DatasetError(path, "first line is neither the header "
                                   f"{' '.join(QRELS_HEADER)!r} nor a qrel: {line.strip()!r}",
                                   fix="start with the header query-id<TAB>corpus-id<TAB>score, or with a qrel "
                                   "(query id, document id and an integer score, tab-separated)", line=number)
        if len(fields) != 3:
            raise DatasetError(path, f"expected 3 tab-separated fields, got {len(fields)}",
                               fix="write query-id<TAB>corpus-id<TAB>score", line=number)
        query_id, doc_id, score_text = fields
        if not _is_integer(score_text):
            raise DatasetError(path, f"score {score_text!r} is not an integer", fix="write an integer relevance grade",
                               line=number)
        score = int(score_text)
        if score > MAX_GRADE:
            raise DatasetError(path, f"score {score} is above the largest grade groundkit takes ({MAX_GRADE})",
                               fix="check the qrels file: relevance grades are small integers (TREC uses 0-4)",
                               line=number)
        if (query_id, doc_id) in seen:
            raise DatasetError(path, f"judges query {query_id!r}, document {doc_id!r} twice (first on line "
                               f"{seen[query_id, doc_id]})", fix="keep one qrel per pair", line=number)
        seen[query_id, doc_id] = number
        reason = (UNKNOWN_QUERY if query_id not in queries else EMPTY_DOCUMENT if doc_id in dropped
                  else UNKNOWN_DOCUMENT if doc_id not in corpus.names else None)
        if reason in (UNKNOWN_QUERY, UNKNOWN_DOCUMENT) and strict:
            where = "queries.jsonl" if reason == UNKNOWN_QUERY else "corpus.jsonl"
            what = f"query {query_id!r}" if reason == UNKNOWN_QUERY else f"document {doc_id!r}"
            raise DatasetError(path, f"names {what}, which is not in {where} (--strict)",
                               fix=f"add it to {where} or remove the qrel; without --strict such qrels are skipped "
                               "and listed in beir-import.json", line=number)
        qrels.max_score = max(qrels.max_score, score)
        if score > 0:
            qrels.judged.add(query_id)
        if reason is not None:
            qrels.skipped.append({"line": number, "query-id": query_id, "corpus-id": doc_id, "score": score,
                                  "reason": reason})
        elif score > 0:
            qrels.relevant.setdefault(query_id, {})[doc_id] = score
        else:
            qrels.nonpositive += 1
    if first:
        raise DatasetError(path, "is empty", fix="a BEIR qrels file has one line per judgment")
    return qrels


def _judgment(
    query_id: str, text: str, grades: dict[str, int], corpus: _Corpus, exclude: list[str], queries_path: Path,
    line: int,
) -> Judgment:
    gold = sorted((GoldSpan(document=corpus.names[d], whole_document=True, grade=g) for d, g in grades.items()),
                  key=lambda span: span.document)
    try:
        return Judgment(query_id=query_id, query=text, category=Category.FACTOID, gold=gold,
                        exclude_documents=exclude)
    except ValidationError as exc:
        key, problem = describe(exc)
        raise DatasetError(queries_path, f"query {query_id!r} cannot become a judgment: {key} {problem}",
                           fix="query ids must suit TREC files (no whitespace) and query texts must not be empty",
                           line=line) from None


def import_beir(
    source: str | Path, out: str | Path, *, split: str = "test", drop_empty: bool = False, force: bool = False,
    strict: bool = False, keep_identical_ids: bool = False,
) -> dict[str, Any]:
    """Convert the BEIR dataset in ``source`` into ``out`` (corpus/, judgments.jsonl, beir-import.json).

    ``out`` must be new or empty, or hold an earlier import and ``force`` be set: its corpus/,
    judgments.jsonl and beir-import.json are then replaced and any other file in it is kept.

    Args:
        strict: Refuse a qrel naming a query or document the dataset does not hold, instead of skipping it.
        keep_identical_ids: Let a query's run return the document whose id is the query's id
            (BEIR's evaluation drops it by default, and so does groundkit).

    Returns:
        The manifest written to ``out/beir-import.json``.

    Raises:
        DatasetError: naming the file and line of the first bad input.
        OutputError: if ``out`` is or holds the dataset, or holds files import-beir did not write.
    """
    source, out = Path(source), Path(out)
    if not source.is_dir():
        raise DatasetError(source, "is not a directory", fix="pass the BEIR dataset folder (holding corpus.jsonl)")
    if not re.fullmatch(r"[A-Za-z0-9_-]+", split):
        raise DatasetError("--split", f"{split!r} is not a split name", fix="use e.g. test, dev or train")
    corpus_path, queries_path = source / "corpus.jsonl", source / "queries.jsonl"
    qrels_path = source / "qrels" / f"{split}.tsv"
    for path in (corpus_path, queries_path, qrels_path):
        _require_file(path)

    # A user may add documents to the corpus folder: --force refuses to delete them (groundkit/artifacts/outputs.py).
    with output_folder(out, command="import-beir", artifacts=(CORPUS_DIR, JUDGMENTS, MANIFEST),
                       open_folders=(CORPUS_DIR,), inputs={"the BEIR dataset folder": source}, force=force) as tmp:
        corpus = _write_corpus(corpus_path, tmp / CORPUS_DIR, drop_empty=drop_empty)
        queries = _read_queries(queries_path)
        qrels = _read_qrels(qrels_path, queries, corpus, strict=strict)
        if not qrels.relevant:
            raise DatasetError(qrels_path, "has no qrel with a score above 0 for a query and document the dataset "
                               "holds: there is nothing to evaluate",
                               fix=f"check that qrels/{split}.tsv is the right split for this corpus"
                               + (f" ({len(qrels.skipped)} qrels were skipped; see the first: line "
                                  f"{qrels.skipped[0]['line']}, {qrels.skipped[0]['reason']})" if qrels.skipped
                                  else ""))
        identical = sorted(q for q in qrels.relevant if q in corpus.names)
        judgments = [
            _judgment(q, queries[q][0], qrels.relevant[q], corpus,
                      [] if keep_identical_ids or q not in corpus.names else [corpus.names[q]],
                      queries_path, queries[q][1])
            for q in sorted(qrels.relevant)
        ]
        (tmp / JUDGMENTS).write_text("".join(j.to_json() + "\n" for j in judgments), encoding="utf-8", newline="\n")
        skipped_by = {reason: sum(1 for s in qrels.skipped if s["reason"] == reason)
                      for reason in (UNKNOWN_QUERY, UNKNOWN_DOCUMENT, EMPTY_DOCUMENT)}
        manifest = {
            "format": FORMAT,
            "split": split,
            "sources": {
                "corpus.jsonl": file_sha256(corpus_path),
                "queries.jsonl": file_sha256(queries_path),
                f"qrels/{split}.tsv": file_sha256(qrels_path),
            },
            "documents": len(corpus.names),
            "documents_dropped_empty": corpus.dropped,
            "documents_with_cr": corpus.with_cr,
            "documents_renamed": {d: n for d, n in sorted(corpus.names.items()) if n != d + SUFFIX},
            "judgments": len(judgments),
            "relevant_pairs": sum(len(grades) for grades in qrels.relevant.values()),
            "grades": {str(g): n for g, n in sorted(_grade_counts(qrels).items())},
            "max_score": qrels.max_score,
            "qrels_header": qrels.header,
            "qrels_nonpositive": qrels.nonpositive,
            "qrels_skipped": {"unknown_query": skipped_by[UNKNOWN_QUERY],
                              "unknown_document": skipped_by[UNKNOWN_DOCUMENT],
                              "empty_document": skipped_by[EMPTY_DOCUMENT]},
            "qrels_skipped_lines": qrels.skipped,
            "queries_left_without_relevant": sorted(qrels.judged & set(queries) - set(qrels.relevant)),
            "queries_without_relevant": len(queries) - len(qrels.relevant),
            "identical_ids": identical,
            "identical_ids_excluded": not keep_identical_ids,
        }
        (tmp / MANIFEST).write_text(dumps_json(manifest), encoding="utf-8", newline="\n")
    return manifest


def _grade_counts(qrels: _Qrels) -> dict[int, int]:
    counts: dict[int, int] = {}
    for grades in qrels.relevant.values():
        for grade in grades.values():
            counts[grade] = counts.get(grade, 0) + 1
    return counts
