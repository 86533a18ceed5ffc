"""Reading SQuAD 1.1/2.0 JSON and MRQA JSONL files into articles, paragraphs and questions, with every record
checked; groundkit/corpus/squad.py turns what is read here into a corpus and quote judgments.

A file is recognised from its first line (or chosen), read once while it is hashed (the manifest records
the SHA-256 of the very bytes read), and streamed when it is MRQA JSONL, gzip-compressed or not. Every
malformed record is one DatasetError naming the file, the article (or line) and the question.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from groundkit.corpus.judgments import QUERY_ID
from groundkit.errors import DatasetError, JSONLineError
from groundkit.inputs.jsonline import loads_line

SQUAD, MRQA = "squad", "mrqa"
FORMATS = (SQUAD, MRQA)
SEPARATOR = "\n\n"
"""What joins an article's paragraphs: a blank line."""
BOM = "\ufeff"
GZIP_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True)
class Answer:
    """One recorded answer: its text and where the file says it is (raw context offsets, end exclusive)."""

    text: str
    start: int | None
    end: int | None


@dataclass(frozen=True)
class Question:
    query_id: str
    question: str
    impossible: bool
    answers: tuple[Answer, ...]
    where: str
    """How a message names it: article, paragraph and question, or question alone (the line says the rest)."""
    place: str
    """Where the manifest says it is: article and paragraph, or line."""
    line: int | None
    key: str | None


@dataclass(frozen=True)
class Context:
    text: str
    questions: tuple[Question, ...]


@dataclass(frozen=True)
class Article:
    """What becomes one document: an article's paragraphs, or one MRQA context."""

    doc_id: str
    contexts: tuple[Context, ...]


# --- reading the file ----------------------------------------------------------------------------------------


class HashingReader:
    """A binary file's reads, hashed as they go: the SHA-256 is of the very bytes imported."""

    def __init__(self, handle: IO[bytes]) -> None:
        self._handle = handle
        self.digest = hashlib.sha256()
        self.consumed = 0

    def read(self, size: int = -1) -> bytes:
        data = self._handle.read(size)
        self.digest.update(data)
        self.consumed += len(data)
        return data

    def readline(self, size: int = -1) -> bytes:
        data = self._handle.readline(size)
        self.digest.update(data)
        self.consumed += len(data)
        return data

    def drain(self) -> None:
        while self.read(1 << 20):
            pass


def _unreadable(path: Path, exc: BaseException) -> DatasetError:
    return DatasetError(path, f"looks gzip-compressed but cannot be decompressed ({exc})",
                        fix="check the download (gzip -t FILE), or decompress it yourself")


def _decode(path: Path, raw: bytes, line: int | None) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetError(path, f"is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at byte {exc.start + 1}"
                           + (" of the line)" if line else ")"), fix="re-encode the file as UTF-8", line=line) from None


def file_lines(path: Path, reader: HashingReader, compressed: bool) -> Iterator[tuple[int, str]]:
    """The file's non-blank lines, decompressed if need be, with their 1-based numbers."""
    stream: Any = gzip.GzipFile(fileobj=reader, mode="rb") if compressed else reader  # type: ignore[arg-type]
    number = 0
    try:
        while True:
            raw = stream.readline()
            if not raw:
                break
            number += 1
            if number == 1:
                raw = raw.removeprefix(BOM.encode("utf-8"))
            if raw.strip():
                yield number, _decode(path, raw, number)
    except (OSError, EOFError, zlib.error) as exc:
        raise _unreadable(path, exc) from None


def whole_text(path: Path, reader: HashingReader, compressed: bool) -> str:
    try:
        data = gzip.GzipFile(fileobj=reader, mode="rb").read() if compressed else reader.read()  # type: ignore[arg-type]
    except (OSError, EOFError, zlib.error) as exc:
        raise _unreadable(path, exc) from None
    return _decode(path, data.removeprefix(BOM.encode("utf-8")), None)


def _parse(path: Path, text: str, line: int | None, fix: str) -> Any:
    try:
        # Strict: a key written twice, a lone surrogate, NaN or a number beyond range is refused.
        return loads_line(text)
    except JSONLineError as exc:
        raise DatasetError(path, exc.problem, fix=fix, line=line) from None


def sniff(path: Path, first: tuple[int, str] | None) -> str:
    """The format of a file whose first non-blank line is ``first``: MRQA if it is an MRQA record."""
    if first is None:
        raise DatasetError(path, "is empty", fix="pass a SQuAD JSON file or an MRQA JSONL file")
    try:
        record = loads_line(first[1])
    except JSONLineError:
        return SQUAD  # a pretty-printed SQuAD file's first line is not JSON on its own
    return MRQA if isinstance(record, dict) and ("header" in record or "qas" in record) else SQUAD


def _kind(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number",
            type(None): "null"}.get(type(value), type(value).__name__)


class _Reader:
    """Checks one record's fields, raising one message that names the file, the place and the key."""

    def __init__(self, path: Path, where: str, *, line: int | None = None, key: str = "") -> None:
        self.path, self.where, self.line, self.key = path, where, line, key

    def at(self, where: str, key: str) -> _Reader:
        return _Reader(self.path, where, line=self.line, key=key)

    def error(self, problem: str, fix: str, key: str | None = None) -> DatasetError:
        key = self.key if key is None else key
        return DatasetError(self.path, f"{self.where}: {problem}" if self.where else problem, fix=fix,
                            line=self.line, key=key or None)

    def _sub(self, name: str) -> str:
        return f"{self.key}.{name}" if self.key else name

    def field(self, record: Any, name: str, kinds: tuple[type, ...], expected: str, *, required: bool = True,
              fix: str = "") -> Any:
        if not isinstance(record, dict):
            raise self.error(f"expected a JSON object, got {_kind(record)}", fix or "see the SQuAD or MRQA format")
        if name not in record:
            if required:
                raise self.error(f"field {name!r} is missing", fix or f"give it {expected}", self._sub(name))
            return None
        value = record[name]
        # A boolean is an int to Python, and never what a text, an id or an offset means.
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            raise self.error(f"field {name!r} must be {expected}, got {_kind(value)}", fix or f"give it {expected}",
                             self._sub(name))
        return value

    def text(self, value: str, name: str) -> str:
        if "\0" in value:
            raise self.error(f"{name} holds a NUL character", "remove it from the file", self._sub(name))
        return value


def _query_id(reader: _Reader, value: Any, name: str) -> str:
    query_id = str(value)  # an annotation tool's integer id becomes its decimal digits
    if not QUERY_ID.match(query_id):
        raise reader.error(f"question id {query_id!r} cannot be a query_id: it must start with a letter or digit "
                           "and hold only letters, digits, '.', '_', ':' or '-' (it is written into TREC files, "
                           "which split on whitespace)", "give the question an id of that form", reader._sub(name))
    return query_id


def _squad_question(reader: _Reader, raw: Any, *, mrqa: bool) -> Question:
    id_name = "qid" if mrqa else "id"
    query_id = _query_id(reader, reader.field(raw, id_name, (str, int), "a string id"), id_name)
    place = reader.where or f"line {reader.line}"
    reader = reader.at(f"{reader.where}, question {query_id!r}" if reader.where else f"question {query_id!r}",
                       reader.key)
    question = reader.text(reader.field(raw, "question", (str,), "a string"), "question")
    if not question.strip():
        raise reader.error("the question is empty", "write the question, or remove it from the file",
                           reader._sub("question"))
    if mrqa:
        answers = _mrqa_answers(reader, raw)
        return Question(query_id, question.strip(), False, answers, reader.where, place, reader.line, reader.key)
    impossible = reader.field(raw, "is_impossible", (bool,), "true or false", required=False)
    listed = reader.field(raw, "answers", (list,), "a list of answers", required=impossible is not True)
    answers = []
    for number, answer in enumerate(listed or []):
        at = reader.at(reader.where, f"{reader.key}.answers[{number}]")
        text = at.text(at.field(answer, "text", (str,), "the answer's text, a string"), "text")
        start = at.field(answer, "answer_start", (int, type(None)), "a character offset (an integer) or null",
                         required=False)
        answers.append(Answer(text, start, None if start is None else start + len(text)))
    if impossible is True and answers:
        raise reader.error("is_impossible is true but the question has answers",
                           "set is_impossible to false, or empty its answers (keep them as plausible_answers)",
                           reader._sub("is_impossible"))
    if impossible is False and not answers:
        raise reader.error("is_impossible is false but the question has no answers",
                           "add its answer, or set is_impossible to true", reader._sub("answers"))
    return Question(query_id, question.strip(), not answers, tuple(answers), reader.where, place, reader.line,
                     reader.key)


def _mrqa_answers(reader: _Reader, raw: Any) -> tuple[Answer, ...]:
    detected = reader.field(raw, "detected_answers", (list,), "a list of answers with their char_spans")
    if not detected:
        raise reader.error("detected_answers is empty: an MRQA question has at least one",
                           "add the answer's text and char_spans, or remove the question",
                           reader._sub("detected_answers"))
    answers = []
    for number, answer in enumerate(detected):
        at = reader.at(reader.where, f"{reader.key}.detected_answers[{number}]")
        text = at.text(at.field(answer, "text", (str,), "the answer's text, a string"), "text")
        spans = at.field(answer, "char_spans", (list,), "a list of [start, end] character offsets")
        if not spans:
            answers.append(Answer(text, None, None))
        for index, span in enumerate(spans):
            if not (isinstance(span, list) and len(span) == 2
                    and all(type(value) is int for value in span)):  # a bool is an int, and no offset
                raise at.error(f"char_spans[{index}] must be [start, end], two integers, got {json.dumps(span)}",
                               "write each span as [first character, last character] (the end is inclusive)",
                               f"{at.key}.char_spans[{index}]")
            answers.append(Answer(text, span[0], span[1] + 1))
    return tuple(answers)


def _article_ids(titles: list[str | None]) -> list[str]:
    """Each article's document id: its title, ``article-N`` without one, `` (2)``... for a title met again."""
    taken = {title for title in titles if title}
    ids: list[str] = []
    used: set[str] = set()
    for number, title in enumerate(titles, start=1):
        base = title or f"article-{number}"
        candidate, suffix = base, 2
        while candidate in used or (candidate != title and candidate in taken):
            candidate, suffix = f"{base} ({suffix})", suffix + 1
        used.add(candidate)
        ids.append(candidate)
    return ids


def read_squad(path: Path, text: str) -> tuple[dict[str, Any], list[Article]]:
    fix = "pass a SQuAD JSON file (one object holding \"data\"); for MRQA JSONL pass --format mrqa"
    root = _parse(path, text, None, fix)
    top = _Reader(path, "")
    data = top.field(root, "data", (list,), "the list of articles", fix=fix)
    version = root.get("version")
    titles: list[str | None] = []
    for number, article in enumerate(data):
        reader = top.at(f"article {number + 1}", f"data[{number}]")
        title = reader.field(article, "title", (str, type(None)), "a string", required=False)
        if title is not None:  # the strict reader has refused lone surrogates, which no file name can hold
            reader.text(title, "title")
        titles.append(title.strip() or None if title is not None else None)
    articles = []
    for number, (article, doc_id) in enumerate(zip(data, _article_ids(titles), strict=True)):
        named = f"article {number + 1} ({titles[number]!r})" if titles[number] else f"article {number + 1}"
        reader = top.at(named, f"data[{number}]")
        contexts = []
        for index, paragraph in enumerate(reader.field(article, "paragraphs", (list,), "a list of paragraphs")):
            at = reader.at(f"{named}, paragraph {index + 1}", f"data[{number}].paragraphs[{index}]")
            context = at.text(at.field(paragraph, "context", (str,), "the paragraph's text, a string"), "context")
            questions = at.field(paragraph, "qas", (list,), "a list of questions")
            contexts.append(Context(context, tuple(
                _squad_question(at.at(at.where, f"{at.key}.qas[{q}]"), raw, mrqa=False)
                for q, raw in enumerate(questions))))
        articles.append(Article(doc_id, tuple(contexts)))
    meta = {"format": SQUAD, "version": version if isinstance(version, str | int | float) else None}
    return meta, articles


def read_mrqa(path: Path, lines: Iterator[tuple[int, str]], header: dict[str, Any]) -> Iterator[Article]:
    fix = "each line of MRQA JSONL is one object: a context with its qas (after an optional header line)"
    seen: dict[bytes, str] = {}
    count = 0
    for position, (number, line) in enumerate(lines):
        record = _parse(path, line, number, fix + "; for a SQuAD JSON file pass --format squad")
        if position == 0 and isinstance(record, dict) and "header" in record:
            header.update(record)
            continue
        reader = _Reader(path, "", line=number)
        if isinstance(record, dict) and "header" in record:
            raise reader.error("a header line after the first line", "keep one header, on the first line")
        context = reader.text(reader.field(record, "context", (str,), "the context's text, a string", fix=fix),
                              "context")
        questions = reader.field(record, "qas", (list,), "a list of questions", fix=fix)
        parsed = tuple(_squad_question(reader.at("", f"qas[{q}]"), raw, mrqa=True) for q, raw in enumerate(questions))
        digest = hashlib.sha256(context.encode("utf-8")).digest()
        if digest not in seen:
            count += 1
            seen[digest] = f"context-{count:06d}"
        yield Article(seen[digest], (Context(context, parsed),))
