"""Importing a BEIR-format dataset as a groundkit corpus folder and judgments file.

BEIR (Thakur et al., NeurIPS 2021 Datasets and Benchmarks) ships each
collection as::

    corpus.jsonl      {"_id": ..., "title": ..., "text": ...} per line
    queries.jsonl     {"_id": ..., "text": ...} per line
    qrels/test.tsv    header ``query-id corpus-id score``, then one tab-separated judgment per line

``import_beir`` writes into ``OUT``::

    corpus/<_id>.txt     one file per document: title, a blank line, text
    judgments.jsonl      one ``factoid`` judgment per query of the split with a qrel score > 0;
                         each relevant document is a whole-document gold span
    beir-import.json     what was read (SHA-256 of each input file), counted and normalised

Choices, each of which changes what is measured and is therefore written down:

* Relevance is binary. A qrel with score > 0 makes its document gold (a
  graded collection loses its grades; ``beir-import.json`` records the largest
  score seen); a score <= 0 is dropped, as in BEIR's own evaluation. Queries
  without a positive qrel are left out: they have nothing to find.
* Every judgment is ``factoid``: BEIR judges each document relevant on its
  own, which is not ``multi_passage`` (an answer spread over several passages).
* Text: CR characters are turned into LF (``\\r\\n`` first, then lone ``\\r``),
  since groundkit's corpus is LF-only; both count as whitespace for the
  tokenizer, so BM25 sees the same tokens. Title and text are stripped of
  surrounding whitespace. A NUL character is an error. A document whose
  title and text are both empty is an error unless ``drop_empty`` is set,
  which leaves it out (it changes the collection's size N and average length,
  hence BM25 scores slightly; the manifest lists the ids dropped).
* A document's file name is ``<_id>.txt``. Ids that are unsafe as file names
  (anything beyond letters, digits, ``.``, ``_`` and ``-``, a leading ``.`` or
  ``-``, over 200 characters, or two ids that differ only by case) are refused
  rather than rewritten, so the mapping back to BEIR ids stays obvious.

The output is deterministic (the same inputs give the same bytes) and is
written into a scratch folder moved into place only on success. ``OUT`` must
be new or empty, or hold an earlier import (replaced only with ``force``); see
groundkit/_outputs.py.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from groundkit._json import loads_line
from groundkit._outputs import output_folder
from groundkit._validation import describe
from groundkit.artifacts import dumps_json, file_sha256
from groundkit.corpus.judgments import Category, GoldSpan, Judgment
from groundkit.errors import DatasetError, JSONLineError

FORMAT = "groundkit-beir-import/1"
MANIFEST = "beir-import.json"
CORPUS_DIR = "corpus"
JUDGMENTS = "judgments.jsonl"
QRELS_HEADER = ["query-id", "corpus-id", "score"]
_SAFE_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,199}$")


def document_file(doc_id: str) -> str:
    """The corpus-relative file name of BEIR document ``doc_id``."""
    return f"{doc_id}.txt"


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


def _write_corpus(path: Path, target: Path, *, drop_empty: bool) -> tuple[set[str], list[str], int]:
    """Write one file per document; return (ids written, ids dropped as empty, documents with CR)."""
    written: set[str] = set()
    dropped: list[str] = []
    first_line: dict[str, int] = {}
    folded: dict[str, tuple[str, int]] = {}
    with_cr = 0
    target.mkdir()
    with _progress(None, "import-beir corpus") as bar:
        for number, record in _records(path):
            doc_id = _string(path, number, record, "_id")
            if not _SAFE_ID.match(doc_id):
                raise DatasetError(
                    path,
                    f"document id {doc_id!r} is unsafe as a file name (allowed: letters, digits, '.', '_', '-', "
                    "not starting with '.' or '-', at most 200 characters)",
                    fix="rename the id in corpus.jsonl and in the qrels; import-beir does not rewrite ids",
                    line=number, key="_id",
                )
            if doc_id in first_line:
                raise DatasetError(path, f"duplicate document id {doc_id!r} (first on line {first_line[doc_id]})",
                                   fix="give every document its own _id", line=number, key="_id")
            other = folded.get(doc_id.lower())
            if other is not None:
                raise DatasetError(
                    path,
                    f"document ids {other[0]!r} (line {other[1]}) and {doc_id!r} differ only by case; their "
                    "files would collide on a case-insensitive file system",
                    fix="rename one of them in corpus.jsonl and in the qrels",
                    line=number, key="_id",
                )
            first_line[doc_id] = number
            folded[doc_id.lower()] = (doc_id, number)
            title = _string(path, number, record, "title", default="")
            text = _string(path, number, record, "text")
            content = document_text(title, text)
            if not content:
                if not drop_empty:
                    raise DatasetError(
                        path, f"document {doc_id!r} has neither title nor text; groundkit rejects empty documents",
                        fix="pass --drop-empty to leave such documents out (BM25's N and average length then "
                        "differ slightly from the original collection's)",
                        line=number,
                    )
                dropped.append(doc_id)
                continue
            with_cr += "\r" in title or "\r" in text
            with (target / document_file(doc_id)).open("w", encoding="utf-8", newline="\n") as handle:
                handle.write(content)
            written.add(doc_id)
            bar.update(1)
    if not written:
        raise DatasetError(path, "holds no documents", fix="check that this is a BEIR corpus.jsonl")
    return written, sorted(dropped), with_cr


def _read_queries(path: Path) -> dict[str, tuple[str, int]]:
    queries: dict[str, tuple[str, int]] = {}
    for number, record in _records(path):
        query_id = _string(path, number, record, "_id")
        if query_id in queries:
            raise DatasetError(path, f"duplicate query id {query_id!r} (first on line {queries[query_id][1]})",
                               fix="give every query its own _id", line=number, key="_id")
        queries[query_id] = (_string(path, number, record, "text"), number)
    return queries


def _read_qrels(
    path: Path, queries: dict[str, tuple[str, int]], documents: set[str], dropped: set[str]
) -> tuple[dict[str, set[str]], int, int]:
    """Relevant documents per query (score > 0), the count of scores <= 0, and the largest score."""
    _require_file(path)
    relevant: dict[str, set[str]] = {}
    seen: dict[tuple[str, str], int] = {}
    nonpositive, max_score = 0, 0
    header_seen = False
    for number, line in _lines(path):
        fields = line.rstrip("\r\n").split("\t")
        if not header_seen:
            header_seen = True
            if fields != QRELS_HEADER:
                raise DatasetError(path, f"first line must be the header {' '.join(QRELS_HEADER)!r} "
                                   f"(tab-separated), got {line.strip()!r}",
                                   fix="BEIR qrels start with the header line query-id<TAB>corpus-id<TAB>score",
                                   line=number)
            continue
        if len(fields) != 3:
            raise DatasetError(path, f"expected 3 tab-separated fields, got {len(fields)}",
                               fix="write query-id<TAB>corpus-id<TAB>score", line=number)
        query_id, doc_id, score_text = fields
        try:
            score = int(score_text)
        except ValueError:
            raise DatasetError(path, f"score {score_text!r} is not an integer", fix="write an integer relevance grade",
                               line=number) from None
        if query_id not in queries:
            raise DatasetError(path, f"names query {query_id!r}, which is not in queries.jsonl",
                               fix="add the query to queries.jsonl or remove the qrel", line=number)
        if doc_id in dropped and score > 0:
            raise DatasetError(path, f"marks document {doc_id!r} relevant, but it is empty and was dropped",
                               fix="give the document text in corpus.jsonl or remove the qrel", line=number)
        if doc_id not in documents and doc_id not in dropped:
            raise DatasetError(path, f"names document {doc_id!r}, which is not in corpus.jsonl",
                               fix="add the document to corpus.jsonl or remove the qrel", line=number)
        if (query_id, doc_id) in seen:
            raise DatasetError(path, f"judges query {query_id!r}, document {doc_id!r} twice (first on line "
                               f"{seen[query_id, doc_id]})", fix="keep one qrel per pair", line=number)
        seen[query_id, doc_id] = number
        max_score = max(max_score, score)
        if score > 0:
            relevant.setdefault(query_id, set()).add(doc_id)
        else:
            nonpositive += 1
    if not header_seen:
        raise DatasetError(path, "is empty", fix="a BEIR qrels file has a header and one line per judgment")
    return relevant, nonpositive, max_score


def _judgment(query_id: str, text: str, docs: set[str], queries_path: Path, line: int) -> Judgment:
    gold = [GoldSpan(document=document_file(d), whole_document=True) for d in sorted(docs)]
    try:
        return Judgment(query_id=query_id, query=text, category=Category.FACTOID, gold=gold)
    except ValidationError as exc:
        key, problem = describe(exc)
        raise DatasetError(queries_path, f"query {query_id!r} cannot become a judgment: {key} {problem}",
                           fix="query ids must suit TREC files (no whitespace) and query texts must not be empty",
                           line=line) from None


def import_beir(
    source: str | Path, out: str | Path, *, split: str = "test", drop_empty: bool = False, force: bool = False
) -> dict[str, Any]:
    """Convert the BEIR dataset in ``source`` into ``out`` (corpus/, judgments.jsonl, beir-import.json).

    ``out`` must be new or empty, or hold an earlier import and ``force`` be set: its corpus/,
    judgments.jsonl and beir-import.json are then replaced and any other file in it is kept.

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

    with output_folder(out, command="import-beir", artifacts=(CORPUS_DIR, JUDGMENTS, MANIFEST),
                       inputs={"the BEIR dataset folder": source}, force=force) as tmp:
        written, dropped, with_cr = _write_corpus(corpus_path, tmp / CORPUS_DIR, drop_empty=drop_empty)
        queries = _read_queries(queries_path)
        relevant, nonpositive, max_score = _read_qrels(qrels_path, queries, written, set(dropped))
        if not relevant:
            raise DatasetError(qrels_path, "has no qrel with a score above 0: there is nothing to evaluate",
                               fix=f"check that qrels/{split}.tsv is the right split")
        judgments = [
            _judgment(q, queries[q][0], relevant[q], queries_path, queries[q][1]) for q in sorted(relevant)
        ]
        (tmp / JUDGMENTS).write_text("".join(j.to_json() + "\n" for j in judgments), encoding="utf-8", newline="\n")
        manifest = {
            "format": FORMAT,
            "split": split,
            "sources": {
                "corpus.jsonl": file_sha256(corpus_path),
                "queries.jsonl": file_sha256(queries_path),
                f"qrels/{split}.tsv": file_sha256(qrels_path),
            },
            "documents": len(written),
            "documents_dropped_empty": dropped,
            "documents_with_cr": with_cr,
            "judgments": len(judgments),
            "relevant_pairs": sum(len(docs) for docs in relevant.values()),
            "qrels_nonpositive": nonpositive,
            "max_score": max_score,
            "queries_without_relevant": len(queries) - len(relevant),
        }
        (tmp / MANIFEST).write_text(dumps_json(manifest), encoding="utf-8", newline="\n")
    return manifest
