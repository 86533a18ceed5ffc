"""Judgments: a query plus verbatim gold quotes, stored one per line in JSONL.

A judgment never names a chunk id or an offset. Each gold quote is resolved
to a character span in its document at run time (see ``groundkit.corpus.spans``),
so chunking can change without re-labelling anything.

The file is hand-edited, so the loader is strict and points at the line:
invalid JSON, unknown or missing fields, duplicate ids and ids out of
ascending order are errors. It never re-sorts.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from pydantic import Field, PrivateAttr, ValidationError, field_validator, model_validator

from groundkit.artifacts.models import StrictRecord
from groundkit.corpus.categories import Category, Origin
from groundkit.errors import JSONLineError, JudgmentsError
from groundkit.inputs.jsonline import loads_line
from groundkit.inputs.suggest import near_path_text
from groundkit.inputs.text import decode_utf8_lf
from groundkit.inputs.validation import describe

QUERY_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]*$")
SHA256 = re.compile(r"^[0-9a-f]{64}$")
MAX_GRADE = 1_000
"""The largest relevance grade: TREC collections use 0-4; a bound keeps a typo from dwarfing every other gain."""


class Sample(StrictRecord):
    """How a person's judgment was drawn for a check of the machine labels (``groundkit judgments sample``).

    ``of`` is the SHA-256 of the machine judgments file the sample was drawn from, ``n`` the size of the
    sample and ``seed`` the seed of the drawing: with them the drawing can be repeated, and a drawn label
    told from a hand-written one.
    """

    seed: int = Field(ge=0)
    of: str
    n: int = Field(ge=1)

    @field_validator("of")
    @classmethod
    def _of_is_a_digest(cls, of: str) -> str:
        if not SHA256.match(of):
            raise ValueError("sample.of must be the SHA-256 of the machine judgments file, 64 lowercase hex digits")
        return of


class GoldSpan(StrictRecord):
    """What answers (part of) the query: a verbatim quote from one document, or the whole document.

    ``{"document": "a.md", "quote": "..."}`` is the usual, quote-anchored form.
    ``{"document": "a.md", "whole_document": true}`` marks the whole document
    relevant, as document-level collections (BEIR, TREC) judge; every chunk of
    it is then gold. The whole-document form must be asked for explicitly, so a
    forgotten quote is still an error rather than a much wider label.

    ``grade`` is the relevance grade, the gain nDCG gives a passage this span
    makes relevant (as trec_eval and ir_measures use a qrel's grade). It is 1
    unless written, so a file without grades is judged in binary, and it is
    never below 1: "not relevant" is written by leaving the quote out.
    """

    document: str = Field(min_length=1)
    quote: str | None = None
    whole_document: bool = False
    grade: int = Field(default=1, ge=1, le=MAX_GRADE)

    @field_validator("quote")
    @classmethod
    def _quote_is_clean(cls, quote: str | None) -> str | None:
        if quote is None:
            raise ValueError('quote is null; write the quote, or omit it and set "whole_document": true')
        if not quote.strip():
            raise ValueError("quote is empty; copy a short verbatim passage from the document")
        if quote != quote.strip():
            raise ValueError("quote has leading or trailing whitespace; trim it")
        return quote

    @model_validator(mode="after")
    def _quote_or_whole_document(self) -> GoldSpan:
        if self.whole_document and self.quote is not None:
            raise ValueError('a gold span has either a quote or "whole_document": true, not both')
        if not self.whole_document and self.quote is None:
            raise ValueError(
                'a gold span needs a quote (a verbatim passage of the document), or "whole_document": true '
                "to mark the whole document relevant"
            )
        return self


class Judgment(StrictRecord):
    """One evaluation query and the gold quotes that answer it."""

    query_id: str
    query: str
    category: Category
    gold: list[GoldSpan]
    exclude_documents: list[str] = Field(default_factory=list)
    """Documents this query's run may not return: their passages leave the ranking before it is scored.

    BEIR's evaluation drops a retrieved document whose id equals the query id (ArguAna's queries are
    themselves corpus arguments); ``import-beir`` writes that document here so published figures can be
    reproduced. A document listed here may also be gold, as in BEIR: it then counts in the ideal
    ranking but can never be retrieved.
    """

    origin: Origin = Origin.HUMAN
    """``machine`` for a label a judge model proposed (``groundkit judgments judge``); a person's otherwise."""
    judge: str | None = None
    """A machine judgment's judge: ``openai:MODEL`` or ``python:MODULE:FACTORY``."""
    prompt_sha256: str | None = None
    """The SHA-256 of the prompt template an ``openai:`` judge was asked with."""
    sample: Sample | None = None
    """A person's judgment drawn by ``groundkit judgments sample`` (see :class:`Sample`)."""
    pool_empty: bool = False
    """A machine ``no_answer``: nothing the judge saw in the query's pool was relevant (left for the person)."""

    _line: int = PrivateAttr(default=0)

    @property
    def line(self) -> int:
        """1-based line in the judgments file (0 when built in code)."""
        return self._line

    @field_validator("query_id")
    @classmethod
    def _query_id_shape(cls, query_id: str) -> str:
        if not QUERY_ID.match(query_id):
            raise ValueError(
                "query_id must start with a letter or digit and hold only letters, digits, '.', '_', ':' or '-' "
                "(it is written into TREC files, which split on whitespace)"
            )
        return query_id

    @field_validator("query")
    @classmethod
    def _query_not_empty(cls, query: str) -> str:
        if not query.strip():
            raise ValueError("query is empty")
        return query

    @field_validator("origin", mode="before")
    @classmethod
    def _origin_from_str(cls, value: object) -> object:
        if isinstance(value, str):
            try:
                return Origin(value)
            except ValueError:
                raise ValueError("unknown origin; use human (the default) or machine") from None
        return value

    @field_validator("prompt_sha256")
    @classmethod
    def _prompt_is_a_digest(cls, digest: str | None) -> str | None:
        if digest is not None and not SHA256.match(digest):
            raise ValueError("prompt_sha256 must be 64 lowercase hex digits (the SHA-256 of the prompt template)")
        return digest

    @field_validator("judge")
    @classmethod
    def _judge_named(cls, judge: str | None) -> str | None:
        if judge is not None and not judge.strip():
            raise ValueError("judge is empty; name the judge (openai:MODEL or python:MODULE:FACTORY)")
        return judge

    @field_validator("category", mode="before")
    @classmethod
    def _category_from_str(cls, value: object) -> object:
        if isinstance(value, str):
            try:
                return Category(value)
            except ValueError:
                allowed = ", ".join(c.value for c in Category)
                raise ValueError(f"unknown category; use one of: {allowed}") from None
        return value

    @model_validator(mode="after")
    def _gold_matches_category(self) -> Judgment:
        if self.category is Category.NO_ANSWER and self.gold:
            raise ValueError("a no_answer judgment must have an empty gold list")
        if self.category is not Category.NO_ANSWER and not self.gold:
            raise ValueError(f"a {self.category.value} judgment needs at least one gold quote")
        if len(set(self.exclude_documents)) != len(self.exclude_documents):
            raise ValueError("exclude_documents names a document twice")
        if any(not name for name in self.exclude_documents):
            raise ValueError("exclude_documents holds an empty name")
        self._provenance_fits_origin()
        return self

    def _provenance_fits_origin(self) -> None:
        """Each provenance field belongs to one origin: refused elsewhere, as an unknown key is."""
        if self.origin is Origin.MACHINE:
            if self.judge is None:
                raise ValueError('a machine judgment names its judge ("judge": "openai:MODEL" or "python:...")')
            if self.sample is not None:
                raise ValueError('"sample" belongs to a person\'s judgment drawn by `judgments sample`, not a '
                                 "machine one")
            if self.pool_empty and self.category is not Category.NO_ANSWER:
                raise ValueError('"pool_empty" belongs to a no_answer judgment only')
            return
        for name in ("judge", "prompt_sha256"):
            if getattr(self, name) is not None:
                raise ValueError(f'"{name}" belongs to a machine judgment only ("origin": "machine")')
        if self.pool_empty:
            raise ValueError('"pool_empty" belongs to a machine judgment only ("origin": "machine")')

    def to_json(self) -> str:
        """Canonical one-line JSON, the form ``groundkit judgments fmt`` writes: keys in field order
        (query_id, query, category, gold; a gold span's document first), as people read and write them.

        A gold span's field left at its default (``quote`` of a whole-document span,
        ``whole_document`` of a quote, a grade of 1) is left out, as a person would write it, and so
        is an empty ``exclude_documents``, and every provenance field at its default (a person's
        judgment is written as before provenance existed).
        """
        record = self.model_dump(mode="json")
        record["gold"] = [g.model_dump(mode="json", exclude_defaults=True) for g in self.gold]
        if not self.exclude_documents:
            del record["exclude_documents"]
        if self.origin is Origin.HUMAN:
            del record["origin"]
        for name in ("judge", "prompt_sha256", "sample"):
            if record[name] is None:
                del record[name]
        if not self.pool_empty:
            del record["pool_empty"]
        return json.dumps(record, ensure_ascii=False)


_JSON_KINDS = {list: "array", str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}


def parse_judgment(path: Path, line_number: int, line: str) -> Judgment:
    """Parse and validate one JSONL line."""
    try:
        # Strict: a key written twice, a lone surrogate, NaN or a number beyond range is an error, not a value.
        raw = loads_line(line)
    except JSONLineError as exc:
        raise JudgmentsError(
            path,
            exc.problem,
            fix="each non-blank line must be one JSON object (each key once, finite numbers, valid Unicode)",
            line=line_number,
        ) from None
    if not isinstance(raw, dict):
        raise JudgmentsError(
            path,
            f"expected a JSON object, got a JSON {_JSON_KINDS.get(type(raw), type(raw).__name__)}",
            fix='write one object per line: {"query_id": ..., "query": ..., "category": ..., "gold": [...]}',
            line=line_number,
        )
    try:
        judgment = Judgment.model_validate(raw)
    except ValidationError as exc:
        key, problem = describe(exc, model=Judgment)
        raise JudgmentsError(path, f"{problem}", key=key or None, line=line_number, fix=_fix_for(key)) from None
    judgment._line = line_number
    return judgment


def _fix_for(key: str) -> str:
    if key.startswith("gold"):
        return (
            'gold is a list of {"document": "<corpus-relative path>", "quote": "<verbatim text>"} '
            '(or {"document": ..., "whole_document": true}), each with an optional integer "grade" >= 1'
        )
    return ("fields are query_id, query, category, gold and (optional) exclude_documents; a machine judgment adds "
            "origin, judge, prompt_sha256 and pool_empty, a sampled one origin and sample; see the guide's "
            "docs/judgments.md")


def load_judgments(path: str | Path, *, ordered: bool = True) -> list[Judgment]:
    """Load and validate a judgments file.

    Args:
        ordered: Require ascending ids (always, except for ``groundkit judgments fmt``, which sorts).

    Raises:
        JudgmentsError: naming the line of the first problem.
    """
    return load_judgments_hashed(path, ordered=ordered)[0]


POOL_SUFFIX = ".pool.jsonl"


def pool_path(machine_judgments: Path) -> Path:
    """Where ``groundkit judgments judge`` writes the pool of the machine judgments file: ``NAME.pool.jsonl`` beside
    it, every (query, passage) the judge was asked about. The pipeline reads it for judged@k and agreement."""
    return machine_judgments.with_name(machine_judgments.name.removesuffix(".jsonl") + POOL_SUFFIX)


def load_judgments_hashed(path: str | Path, *, ordered: bool = True) -> tuple[list[Judgment], str]:
    """:func:`load_judgments`, and the SHA-256 of the very bytes parsed (the ``judgments_hash`` of a run).

    Hashing the file apart from reading it would let an edit in between record the hash of one text
    beside judgments parsed from another.
    """
    path = Path(path)
    data = judgments_bytes(path)
    return parse_judgments(path, data, ordered=ordered), hashlib.sha256(data).hexdigest()


def judgments_bytes(path: Path) -> bytes:
    """The bytes of a judgments file, read once: they are both parsed and hashed."""
    if not path.is_file():
        raise JudgmentsError(path, f"judgments file does not exist{near_path_text(path)}",
                             fix="check corpus.judgments in params.yaml (or --judgments)")
    return path.read_bytes()


def parse_judgments(path: Path, data: bytes, *, ordered: bool = True) -> list[Judgment]:
    """The judgments ``data`` (the bytes of the file ``path``) holds, each validated, in file order."""
    text = decode_utf8_lf(path, data, error=JudgmentsError, hashed_as="judgments_hash")
    judgments: list[Judgment] = []
    first_line: dict[str, int] = {}
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        judgment = parse_judgment(path, number, line)
        if judgment.query_id in first_line:
            raise JudgmentsError(
                path,
                f"duplicate query_id {judgment.query_id!r} (first used on line {first_line[judgment.query_id]})",
                fix="give every judgment its own query_id",
                line=number,
            )
        if ordered and judgments and judgment.query_id < judgments[-1].query_id:
            raise JudgmentsError(
                path,
                f"query_id {judgment.query_id!r} comes after {judgments[-1].query_id!r} "
                f"(line {judgments[-1].line}); ids must be in ascending order",
                fix=f"sort it: `groundkit judgments fmt --judgments {path}` rewrites the file sorted by query_id "
                    "(plain string order); nothing else re-sorts it, so a run never reads an order you did not write",
                line=number,
            )
        first_line[judgment.query_id] = number
        judgments.append(judgment)
    if not judgments:
        raise JudgmentsError(
            path, "holds no judgments (the file is empty or blank)", fix="add one JSON object per line"
        )
    return judgments
