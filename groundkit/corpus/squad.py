"""Importing span-labelled question answering data (SQuAD 1.1/2.0, MRQA) as a corpus folder and quote judgments.

Two forms are read, recognised from the file's first line or chosen with ``input_format``:

* SQuAD JSON (1.1 and 2.0, and the annotation tools that export it): one object whose ``data`` lists
  articles, each with a ``title`` and ``paragraphs``; a paragraph has a ``context`` and ``qas``; a
  question has an ``id``, the ``question``, ``answers`` (``text`` and ``answer_start``, a character
  offset into the context) and, in 2.0, ``is_impossible``.
* MRQA JSONL (the shared task's 18 datasets): an optional ``{"header": ...}`` line, then one context per
  line with its ``qas``; a question has a ``qid``, the ``question`` and ``detected_answers``, each a
  ``text`` with its ``char_spans`` (``[start, end]``, the end *inclusive*). A gzip-compressed file
  (``.jsonl.gz``, as MRQA publishes them) is read as it is.

``import_squad`` writes into ``OUT``::

    corpus/<name>.txt    one document per SQuAD article (its paragraphs in file order, joined by a blank
                         line) or per MRQA context; named as import-beir names documents (see below)
    judgments.jsonl      one judgment per question, query_id = the question's id, sorted by query_id
    squad-import.json    what was read (the file's SHA-256), counted, normalised, extended and skipped

Choices, each of which changes what is measured and is therefore written down:

* **Documents.** A SQuAD document's id is its article's title (stripped); an article without one is
  ``article-N`` (N its 1-based place in ``data``), and a title met again gets `` (2)``, `` (3)``...
  The title is the file's name, not part of its text. An MRQA document is ``context-NNNNNN``, its
  context's 1-based place in the file. A context or article whose text repeats an earlier one's
  verbatim is that document, not a second copy (which would take half of its relevance). File names
  are the ids as they read (``Bell Rock Lighthouse.txt``), with only what a file system cannot hold
  percent-encoded (:func:`groundkit.corpus.beir.document_files`, ``readable``), and
  :func:`groundkit.corpus.beir.document_id` gives the id back.
* **Text.** Contexts are kept character for character, except that CR characters become LF (``\\r\\n``
  loses its CR, a lone ``\\r`` becomes ``\\n``) and a byte order mark opening a context is dropped, since
  a groundkit corpus is LF-only UTF-8; every answer offset is moved with the text. A NUL is an error.
  A context that is empty or only whitespace adds nothing to its document; a document left empty is
  not written (its answerable questions cannot be located and are skipped).
* **Gold quotes.** An answer lies at its recorded offset when the context holds its text there. When
  the offset is missing (``answer_start`` null or absent) or wrong (the context holds other text
  there, or the offset lies outside the context, so no answer can cross into the next paragraph), the
  answer is located by its text if that occurs exactly once in its own context; otherwise the whole
  question is *skipped*, since scoring it against some of its answers would count the others' passages
  wrong. Surrounding whitespace is trimmed from an answer. Answers of one question that share a
  character merge into one quote; distinct answers are distinct quotes.
* **Extension.** A quote must occur exactly once in its document (groundkit.corpus.spans). An answer
  whose text occurs more than once there is extended word by word (a word is a run of non-whitespace,
  as chunks count them), alternately to the right and to the left, staying inside its context, until
  it occurs once. If its whole context is not unique either (a paragraph repeated in its article) the
  question is skipped.
* **Unanswerable questions.** A SQuAD 2.0 question with ``is_impossible`` true, or with no answers (the
  SQuAD 2.0 evaluation script's rule), is a ``no_answer`` judgment. Answerable ones get ``category``
  (``factoid`` by default).
* **Skips and strictness.** Every skipped question is counted by reason and listed in the manifest;
  ``strict`` refuses the file at the first one instead. A question exported twice (the same id,
  text, answers and context) is judged once and counted. Malformed input (not JSON, a missing or
  mistyped field, one id for two different questions, an id unfit for a TREC file) is an error naming the
  file, the article (or line) and the question.

The output is deterministic (the same file gives the same bytes) and is written into a scratch folder
moved into place only on success. ``OUT`` must be new or empty, or hold an earlier import-squad
(replaced only with ``force``); see groundkit/artifacts/outputs.py.
"""

from __future__ import annotations

import bisect
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from groundkit.artifacts.lines import dumps_json
from groundkit.artifacts.outputs import output_folder
from groundkit.console.progress import bar
from groundkit.corpus.beir import SUFFIX, document_files
from groundkit.corpus.judgments import Category, GoldSpan, Judgment
from groundkit.corpus.squad_files import (
    BOM,
    FORMATS,
    GZIP_MAGIC,
    MRQA,
    SEPARATOR,
    SQUAD,
    Answer,
    Article,
    HashingReader,
    Question,
    file_lines,
    read_mrqa,
    read_squad,
    sniff,
    whole_text,
)
from groundkit.errors import DatasetError
from groundkit.inputs.validation import describe

FORMAT = "groundkit-squad-import/1"
MANIFEST = "squad-import.json"
CORPUS_DIR = "corpus"
JUDGMENTS = "judgments.jsonl"

# Why a question is skipped (the manifest's keys) and what that means.
NO_OFFSET = "no_offset"
WRONG_OFFSET = "wrong_offset"
EMPTY_ANSWER = "empty_answer"
NOT_UNIQUE = "not_unique"
REASONS = {
    NO_OFFSET: "an answer has no offset and its text does not occur exactly once in its context",
    WRONG_OFFSET: "an answer's offset does not hold its text, which does not occur exactly once in its context",
    EMPTY_ANSWER: "an answer's text is empty or only whitespace",
    NOT_UNIQUE: "an answer's whole context occurs more than once in its document, so no quote in it is unique",
}
_FIX_STRICT = ("correct the answer in the file, or import without --strict: such questions are then skipped and "
               f"listed in {MANIFEST}")



# --- turning answers into quotes -----------------------------------------------------------------------------


def _clean(context: str) -> tuple[str, list[int]]:
    """The context as a groundkit document holds it, and the raw offsets of the characters dropped."""
    dropped = [0] if context.startswith(BOM) else []
    at = context.find("\r\n")
    while at >= 0:
        dropped.append(at)
        at = context.find("\r\n", at + 2)
    if not dropped:
        return context.replace("\r", "\n"), []
    pieces, last = [], 0
    for position in dropped:
        pieces.append(context[last:position])
        last = position + 1
    pieces.append(context[last:])
    return "".join(pieces).replace("\r", "\n"), dropped


def _moved(offset: int, dropped: list[int]) -> int:
    return offset - bisect.bisect_left(dropped, offset)


def _occurrences(text: str, sub: str, limit: int) -> int:
    """How many times ``sub`` occurs in ``text`` (overlapping ones too, as locate_once counts), up to ``limit``."""
    count, at = 0, text.find(sub)
    while at >= 0 and count < limit:
        count += 1
        at = text.find(sub, at + 1)
    return count


@dataclass
class _Located:
    """Where an answer is in its cleaned context, ``[start, end)``, and how it was found."""

    start: int
    end: int
    how: str  # "offset", NO_OFFSET or WRONG_OFFSET (found by its text)


@dataclass
class _Skip:
    reason: str
    answer: str
    occurrences: int | None = None
    """How often the answer's text occurs in its context, when it was looked for."""


def _locate(raw: str, clean: str, dropped: list[int], answer: Answer) -> _Located | _Skip:
    if not answer.text.strip():
        return _Skip(EMPTY_ANSWER, answer.text)
    start, end = answer.start, answer.end
    if start is not None and end is not None and 0 <= start < end <= len(raw) and raw[start:end] == answer.text:
        how = "offset"
    else:
        how = NO_OFFSET if start is None else WRONG_OFFSET
        found = _occurrences(raw, answer.text, len(raw) + 1)
        if found != 1:
            return _Skip(how, answer.text, found)
        start = raw.find(answer.text)
        end = start + len(answer.text)
    start, end = _moved(start, dropped), _moved(end, dropped)
    while start < end and clean[start].isspace():
        start += 1
    while end > start and clean[end - 1].isspace():
        end -= 1
    if start == end:
        return _Skip(EMPTY_ANSWER, answer.text)
    return _Located(start, end, how)


def widen_to_unique(document: str, low: int, high: int, start: int, end: int) -> tuple[int, int, int] | None:
    """``[start, end)`` widened word by word inside ``[low, high)`` until ``document`` holds its text once.

    Alternately one word to the right and one to the left; a side that reaches its bound stops and the
    other goes on. Returns the span and the words added, or None when even ``[low, high)`` is not unique.
    """
    words, right = 0, True
    while _occurrences(document, document[start:end], 2) > 1:
        moved = False
        for side in ((True, False) if right else (False, True)):
            if side:
                at = end
                while at < high and document[at].isspace():
                    at += 1
                if at < high:
                    while at < high and not document[at].isspace():
                        at += 1
                    end, moved = at, True
            else:
                at = start
                while at > low and document[at - 1].isspace():
                    at -= 1
                if at > low:
                    while at > low and not document[at - 1].isspace():
                        at -= 1
                    start, moved = at, True
            if moved:
                break
        if not moved:
            return None
        words += 1
        right = not right
    return start, end, words


# --- the import ----------------------------------------------------------------------------------------------


@dataclass
class _Tally:
    """Everything the manifest counts."""

    documents: int = 0
    contexts: int = 0
    contexts_empty: int = 0
    contexts_repeated: int = 0
    contexts_with_cr: int = 0
    contexts_with_bom: int = 0
    documents_empty: list[str] = field(default_factory=list)
    documents_repeated: dict[str, str] = field(default_factory=dict)
    questions: int = 0
    questions_repeated: int = 0
    answers: int = 0
    answers_by: dict[str, int] = field(default_factory=lambda: {"offset": 0, NO_OFFSET: 0, WRONG_OFFSET: 0})
    answers_merged: int = 0
    quotes: int = 0
    extended: int = 0
    words_added: dict[int, int] = field(default_factory=dict)
    longest: dict[str, Any] | None = None
    skipped: list[dict[str, Any]] = field(default_factory=list)


class _Importer:
    def __init__(self, path: Path, corpus: Path, *, category: Category, strict: bool) -> None:
        self.path, self.corpus, self.category, self.strict = path, corpus, category, strict
        self.tally = _Tally()
        self.judgments: dict[str, Judgment] = {}
        self.where: dict[str, str] = {}
        self.places: dict[str, str] = {}
        self.fingerprints: dict[str, bytes] = {}
        self.seen: set[str] = set()
        self.written: dict[str, str] = {}
        """Document id -> file name of each document written."""
        self.by_text: dict[bytes, str] = {}
        """SHA-256 of each written document's text -> its id."""

    def add(self, article: Article, name: str) -> None:
        """Write ``article`` as document ``name`` (unless already written) and judge its questions."""
        tally = self.tally
        repeated = article.doc_id in self.seen
        self.seen.add(article.doc_id)
        cleaned = [_clean(context.text) for context in article.contexts]
        parts, bases, position = [], [], 0
        for (clean, _), context in zip(cleaned, article.contexts, strict=True):
            if not repeated:
                tally.contexts += 1
                tally.contexts_with_cr += "\r" in context.text
                tally.contexts_with_bom += context.text.startswith(BOM)
            if not clean.strip():
                tally.contexts_empty += not repeated
                bases.append(None)
                continue
            if parts:
                position += len(SEPARATOR)
            bases.append(position)
            parts.append(clean)
            position += len(clean)
        document = SEPARATOR.join(parts) + "\n" if parts else ""
        digest = hashlib.sha256(document.encode("utf-8")).digest()
        if repeated:
            tally.contexts_repeated += 1
            name = self.written.get(article.doc_id, name)
        elif document and digest in self.by_text:
            # Two copies of one text would each take half of its relevance: the repeat is the first document.
            first = self.by_text[digest]
            tally.documents_repeated[article.doc_id] = first
            name = self.written[first]
        elif document:
            target = self.corpus / name
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("x", encoding="utf-8", newline="\n") as handle:
                handle.write(document)
            self.written[article.doc_id] = name
            self.by_text[digest] = article.doc_id
            tally.documents += 1
        else:
            tally.documents_empty.append(article.doc_id)
        for context, (clean, dropped), base in zip(article.contexts, cleaned, bases, strict=True):
            for question in context.questions:
                self._judge(question, context.text, clean, dropped, base, document, name)

    def _judge(self, question: Question, raw: str, clean: str, dropped: list[int], base: int | None,
               document: str, name: str) -> None:
        tally = self.tally
        # What makes a question the same one again: its text, its answers and the text they are read in.
        same = hashlib.sha256(json.dumps([question.question, question.impossible, raw,
                                          [(a.text, a.start, a.end) for a in question.answers]]).encode()).digest()
        if question.query_id in self.where:
            if self.fingerprints[question.query_id] == same:
                tally.questions_repeated += 1  # a record exported twice: judged once
                return
            raise DatasetError(self.path, f"{question.where}: the question id {question.query_id!r} is used twice "
                               f"(first by {self.where[question.query_id]}), for another question or other answers",
                               fix="give every question its own id", line=question.line, key=question.key)
        tally.questions += 1
        self.fingerprints[question.query_id] = same
        self.where[question.query_id] = question.where + (f" on line {question.line}" if question.line else "")
        self.places[question.query_id] = question.place
        if question.impossible:
            self._keep(question, Category.NO_ANSWER, [])
            return
        located: list[_Located] = []
        for answer in question.answers:
            found = _locate(raw, clean, dropped, answer)
            if isinstance(found, _Skip):
                self._skip(question, found)
                return
            located.append(found)
        assert base is not None  # a context without text locates no answer
        spans = _merged(located)
        widened = []
        for start, end in spans:
            wider = widen_to_unique(document, base, base + len(clean), base + start, base + end)
            if wider is None:
                self._skip(question, _Skip(NOT_UNIQUE, clean[start:end]))
                return
            widened.append(wider)
        for (start, end), (low, high, words) in zip(spans, widened, strict=True):
            if words:
                tally.extended += 1
                tally.words_added[words] = tally.words_added.get(words, 0) + 1
                record = {"query_id": question.query_id, "answer": clean[start:end], "quote": document[low:high],
                          "words_added": words, "characters_added": high - low - (end - start)}
                if tally.longest is None or _longer(record, tally.longest):
                    tally.longest = record
        quotes = [(low, high) for low, high, _ in widened]
        tally.answers += len(located)
        tally.answers_merged += len(located) - len(spans)
        for place in located:
            tally.answers_by[place.how] += 1
        distinct = sorted(set(quotes))
        tally.quotes += len(distinct)
        self._keep(question, self.category, [GoldSpan(document=name, quote=document[s:e]) for s, e in distinct])

    def _keep(self, question: Question, category: Category, gold: list[GoldSpan]) -> None:
        try:
            judgment = Judgment(query_id=question.query_id, query=question.question, category=category, gold=gold)
        except ValidationError as exc:  # pragma: no cover - every field was checked on reading
            key, problem = describe(exc)
            raise DatasetError(self.path, f"{question.where}: cannot become a judgment: {key} {problem}",
                               fix="check the question's id and text", line=question.line) from None
        self.judgments[question.query_id] = judgment

    def _skip(self, question: Question, skip: _Skip) -> None:
        if self.strict:
            times = ("" if skip.occurrences is None else " (its text occurs nowhere in its context)"
                     if skip.occurrences == 0 else f" (its text occurs {skip.occurrences} times in its context)")
            raise DatasetError(self.path, f"{question.where}: {REASONS[skip.reason]}{times}: answer "
                               f"{skip.answer!r} (--strict)", fix=_FIX_STRICT, line=question.line, key=question.key)
        entry: dict[str, Any] = {"query_id": question.query_id, "where": self.places[question.query_id],
                                 "reason": skip.reason, "answer": skip.answer}
        if skip.occurrences is not None:
            entry["occurrences"] = skip.occurrences
        self.tally.skipped.append(entry)


def _merged(located: list[_Located]) -> list[tuple[int, int]]:
    """The answers' spans, those that share a character merged into one, by start."""
    spans: list[list[int]] = []
    for place in sorted(located, key=lambda p: (p.start, p.end)):
        if spans and place.start < spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], place.end)
        else:
            spans.append([place.start, place.end])
    return [(start, end) for start, end in spans]


def _longer(record: dict[str, Any], than: dict[str, Any]) -> bool:
    return (-record["words_added"], -record["characters_added"], record["query_id"]) < (
        -than["words_added"], -than["characters_added"], than["query_id"])


def import_squad(
    source: str | Path, out: str | Path, *, input_format: str | None = None, category: str = "factoid",
    strict: bool = False, force: bool = False,
) -> dict[str, Any]:
    """Convert the SQuAD or MRQA file ``source`` into ``out`` (corpus/, judgments.jsonl, squad-import.json).

    ``out`` must be new or empty, or hold an earlier import and ``force`` be set: its corpus/,
    judgments.jsonl and squad-import.json are then replaced and any other file in it is kept.

    Args:
        input_format: ``"squad"`` or ``"mrqa"``; None recognises it from the file's first line.
        category: The category of answerable questions (any but ``no_answer``).
        strict: Refuse the file at the first question that would be skipped, instead of skipping it.

    Returns:
        The manifest written to ``out/squad-import.json``.

    Raises:
        DatasetError: naming the file, the article or line and the question of the first bad input.
        OutputError: if ``out`` is or holds ``source``, or holds files import-squad did not write.
    """
    source, out = Path(source), Path(out)
    if input_format not in (None, *FORMATS):
        raise DatasetError("--format", f"{input_format!r} is not a format import-squad reads",
                           fix=f"use one of: {', '.join(FORMATS)} (or leave it out to recognise the file)")
    answerable = [c.value for c in Category if c is not Category.NO_ANSWER]
    if category not in answerable:
        raise DatasetError("--category", f"{category!r} is not a category of answerable questions",
                           fix=f"use one of: {', '.join(answerable)} (unanswerable questions are no_answer by "
                           "themselves)")
    if not source.is_file():
        raise DatasetError(source, "is not a file" if source.exists() else "does not exist",
                           fix="pass a SQuAD JSON file or an MRQA JSONL file (.jsonl or .jsonl.gz)")
    try:
        handle = source.open("rb")
    except OSError as exc:
        raise DatasetError(source, f"cannot be read ({exc.strerror})", fix="check its permissions") from None
    # A user may add documents to the corpus folder: --force refuses to delete them (groundkit/artifacts/outputs.py).
    with handle, output_folder(out, command="import-squad", artifacts=(CORPUS_DIR, JUDGMENTS, MANIFEST),
                               open_folders=(CORPUS_DIR,), inputs={"the input file": source}, force=force) as tmp:
        (tmp / CORPUS_DIR).mkdir()
        importer = _Importer(source, tmp / CORPUS_DIR, category=Category(category), strict=strict)
        compressed = handle.read(2) == GZIP_MAGIC
        handle.seek(0)
        size = source.stat().st_size
        reader = HashingReader(handle)
        chosen = input_format
        if chosen is None:
            chosen = sniff(source, next(file_lines(source, reader, compressed), None))
            handle.seek(0)
            reader = HashingReader(handle)
        if chosen == SQUAD:
            meta, articles = read_squad(source, whole_text(source, reader, compressed))
            names = document_files((article.doc_id for article in articles), readable=True)
            with bar(total=len(articles), desc="import-squad", unit=" articles") as progress:
                for article in articles:
                    importer.add(article, names[article.doc_id])
                    progress.update(1)
        else:
            header: dict[str, Any] = {}
            meta = {"format": MRQA, "header": header}
            with bar(total=size, desc="import-squad", unit="B") as progress:
                done = 0
                for article in read_mrqa(source, file_lines(source, reader, compressed), header):
                    importer.add(article, document_files([article.doc_id], readable=True)[article.doc_id])
                    progress.update(reader.consumed - done)
                    done = reader.consumed
            meta["header"] = header.get("header")
        reader.drain()
        manifest = _manifest(source, reader.digest.hexdigest(), meta, importer, category, strict)
        if not importer.judgments:
            first = importer.tally.skipped[0] if importer.tally.skipped else None
            raise DatasetError(source, "has no question that could be imported" if first else "holds no questions",
                               fix=f"every question was skipped; the first, {first['query_id']!r}: "
                               f"{REASONS[first['reason']]}" if first else
                               "pass a SQuAD or MRQA file with questions")
        ordered = [importer.judgments[q] for q in sorted(importer.judgments)]
        (tmp / JUDGMENTS).write_text("".join(j.to_json() + "\n" for j in ordered), encoding="utf-8", newline="\n")
        (tmp / MANIFEST).write_text(dumps_json(manifest), encoding="utf-8", newline="\n")
    return manifest


def _manifest(source: Path, digest: str, meta: dict[str, Any], importer: _Importer, category: str,
              strict: bool) -> dict[str, Any]:
    tally = importer.tally
    kinds = [j.category for j in importer.judgments.values()]
    skipped = {reason: sum(1 for s in tally.skipped if s["reason"] == reason) for reason in REASONS}
    return {
        "format": FORMAT,
        "source": {"file": source.name, "sha256": digest, **meta},
        "category": category,
        "strict": strict,
        "documents": tally.documents,
        "documents_empty": tally.documents_empty,
        "documents_renamed": {doc_id: name for doc_id, name in sorted(importer.written.items())
                              if name != doc_id + SUFFIX},
        "documents_repeated": tally.documents_repeated,
        "contexts": tally.contexts,
        "contexts_empty": tally.contexts_empty,
        "contexts_repeated": tally.contexts_repeated,
        "contexts_with_cr": tally.contexts_with_cr,
        "contexts_with_bom": tally.contexts_with_bom,
        "questions": tally.questions,
        "questions_repeated": tally.questions_repeated,
        "judgments": len(importer.judgments),
        "answerable": sum(1 for kind in kinds if kind is not Category.NO_ANSWER),
        "no_answer": sum(1 for kind in kinds if kind is Category.NO_ANSWER),
        "answers": {"total": tally.answers, "at_offset": tally.answers_by["offset"],
                    "located_without_offset": tally.answers_by[NO_OFFSET],
                    "located_despite_wrong_offset": tally.answers_by[WRONG_OFFSET],
                    "merged": tally.answers_merged},
        "quotes": tally.quotes,
        "quotes_extended": tally.extended,
        "words_added": {str(words): n for words, n in sorted(tally.words_added.items())},
        "longest_extension": tally.longest,
        "skipped": skipped,
        "skipped_questions": tally.skipped,
    }


def summary(manifest: dict[str, Any]) -> tuple[list[str], list[str]]:
    """What import-squad prints: lines for stdout (what was written) and notes for stderr (what to know)."""
    answers = manifest["answers"]
    skipped = {reason: n for reason, n in manifest["skipped"].items() if n}
    lines = [
        f"{manifest['documents']} documents, {manifest['judgments']} judgments ({manifest['answerable']} answerable, "
        f"{manifest['no_answer']} no_answer) from {manifest['questions']} questions"
        + (f"; {sum(skipped.values())} skipped" if skipped else ""),
        f"{answers['total']} answers: {answers['at_offset']} at their offset, {answers['located_without_offset']} "
        f"located without one, {answers['located_despite_wrong_offset']} located despite a wrong one; "
        f"{answers['merged']} merged into an overlapping answer",
        f"{manifest['quotes']} quotes, {manifest['quotes_extended']} extended to occur exactly once in their document"
        + (" (words added: " + ", ".join(f"{words}: {n}" for words, n in manifest["words_added"].items()) + ")"
           if manifest["words_added"] else ""),
    ]
    longest = manifest["longest_extension"]
    if longest:
        lines.append(f"longest extension: {longest['query_id']}, {json.dumps(longest['answer'], ensure_ascii=False)}"
                     f" -> {json.dumps(longest['quote'], ensure_ascii=False)} (+{longest['words_added']} "
                     + ("word)" if longest["words_added"] == 1 else "words)"))
    notes = []
    if skipped:
        counts = ", ".join(f"{n} {reason.replace('_', ' ')}" for reason, n in skipped.items())
        notes.append(f"{sum(skipped.values())} questions skipped ({counts}); listed in {MANIFEST} (--strict refuses "
                     "them)")
    if manifest["contexts_with_cr"] or manifest["contexts_with_bom"]:
        notes.append(f"{manifest['contexts_with_cr']} contexts had CR characters (made LF) and "
                     f"{manifest['contexts_with_bom']} opened with a byte order mark (dropped); offsets moved with "
                     "them")
    if manifest["questions_repeated"]:
        notes.append(f"{manifest['questions_repeated']} questions repeat an earlier one (same id, text, answers and "
                     "context): each is judged once")
    if manifest["contexts_repeated"]:
        notes.append(f"{manifest['contexts_repeated']} contexts repeat an earlier one verbatim: their questions "
                     "judge that one document")
    if manifest["documents_repeated"]:
        notes.append(f"{len(manifest['documents_repeated'])} articles repeat an earlier one's text verbatim: each is "
                     f"that one document (listed in {MANIFEST})")
    if manifest["documents_empty"]:
        notes.append(f"{len(manifest['documents_empty'])} documents have no text and were not written (listed in "
                     f"{MANIFEST})")
    if manifest["documents_renamed"]:
        notes.append(f"{len(manifest['documents_renamed'])} document ids hold characters a file name cannot: those "
                     f"are percent-encoded in their files' names (listed in {MANIFEST})")
    return lines, notes
