"""Where a step reads and writes the artifacts of an evaluation: the one place that knows about in-run sharing.

Every step takes a store from the stage table (groundkit/pipeline/stages.py) and reads the corpus, the
judgments and the artifacts of earlier stages through it, and writes its own through it.

* :class:`Store`, the plain store, is what a DVC stage gets: each stage is a process of its own, so every
  read hashes the file, checks it against its seal and parses it, and nothing is kept.
* :class:`RunStore` is what one ``groundkit run`` gets: the steps run in one process, and what the run
  read or wrote is handed back instead of read, hashed and parsed again. The corpus is read once, so
  every step sees one snapshot; a judgments file is parsed once; a text is tokenized once per tokenizer
  (up to ``SHARED_TOKENS`` tokens); an artifact the run wrote is handed back as the records it was
  written from.

The invariant that makes the hand-back safe: what is handed back equals what the reader would parse from
the bytes. Records are handed back only for a model all of whose fields read back equal from their line
(strings, ints, enums, no float: :func:`groundkit.artifacts.lines.reads_back_equal`), and only when every record is
of exactly that model. A run is handed back as the pairs :func:`groundkit.retrieval.trec.write_run` returns of
it, once the ids the reader knows have been checked as the parser checks them
(:func:`groundkit.retrieval.trec.knows`); the rest of the parser's checks hold by construction, since
:func:`groundkit.retrieval.trec.write_run` refuses to write a ranking the parser would refuse.
tests/pipeline/test_store.py checks each against a parse of the same bytes. Every read is still checked
against the artifact's seal: a file edited after the run wrote it is refused, whatever the store holds.

Remembered digests, and their limits. Hashing a run's own artifacts again (60 MB for a BEIR collection at
depth 1000) was a twentieth of the run, so the run store remembers the SHA-256 of each file in its
scratch folder that it wrote or hashed, with the file's identity: device and inode, size, and modification
and status-change times in nanoseconds, the test DVC and git apply before they hash a file. A write to the
file moves both times (the status-change time cannot be set back from user space), unless it falls within
the same clock tick as the run's own write on a kernel without fine-grained timestamps (Linux before
6.6); a file put in its place is another inode. So digests are remembered only for files in the run's own
scratch folder, which the run created under a fresh name and no other process writes into; an input file
(the corpus, the judgments, an external run), which a person may well edit in the same tick as the run
read it, is hashed on every read.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel, ValidationError

from groundkit.artifacts import lines as _lines
from groundkit.artifacts.atomic import atomic_write_text
from groundkit.artifacts.seals import check_seal, file_sha256
from groundkit.corpus.documents import load_corpus_hashed
from groundkit.corpus.judgments import judgments_bytes, load_judgments_hashed, parse_judgments
from groundkit.corpus.tokenizing import Tokenizer, make_tokenizer
from groundkit.errors import ArtifactError
from groundkit.pipeline.provenance import Provenance
from groundkit.retrieval import trec

if TYPE_CHECKING:
    from groundkit.config import CorpusParams, TokenizeParams
    from groundkit.corpus.judgments import Judgment
    from groundkit.corpus.passage import Document

M = TypeVar("M", bound=BaseModel)

SHARED_TOKENS = 1 << 22
"""How many tokens one run keeps for reuse (about 250 MiB at most; SciFact's corpus has 1.5M)."""


class Store:
    """The plain store: every read hashes the file, checks its seal and parses it; nothing is kept."""

    def sha256(self, path: str | Path) -> str:
        """The SHA-256 of a file's bytes."""
        return file_sha256(path)

    def corpus(self, root: str | Path, selection: CorpusParams | None = None) -> tuple[list[Document], str]:
        """The documents under ``root`` that ``selection``'s include and exclude patterns select (every file
        without one), and the corpus hash of the very bytes read."""
        include, exclude = (selection.include, selection.exclude) if selection is not None else ((), ())
        return load_corpus_hashed(root, include=include, exclude=exclude)

    def judgments(self, path: str | Path) -> tuple[list[Judgment], str]:
        """The judgments in ``path`` and the SHA-256 of the very bytes parsed."""
        return load_judgments_hashed(path)

    def tokenizer(self, params: TokenizeParams | None) -> Tokenizer:
        """The tokenizer ``params`` describe."""
        return make_tokenizer(params)

    def read_models(self, path: str | Path, model: type[M], *, producer: str) -> list[M]:
        """The records of a sealed JSONL artifact the ``producer`` stage wrote."""
        return _lines.read_models(path, model, producer=producer)

    def iter_models(self, path: str | Path, model: type[M], *, producer: str) -> Iterator[M]:
        """:meth:`read_models` one record at a time, for artifacts too large to hold."""
        return _lines.iter_models(path, model, producer=producer, digest=self.sha256)

    def write_models(self, path: str | Path, records: Sequence[M], model: type[M]) -> None:
        """Write ``records`` as a sealed JSONL artifact of ``model``."""
        _lines.write_models(path, records, model)

    def write_provenance(self, path: str | Path, record: Provenance) -> None:
        """Write a stage's provenance record (groundkit/pipeline/provenance.py)."""
        atomic_write_text(path, _lines.dumps_json(record.model_dump(mode="json")))

    def read_provenance(self, path: str | Path, *, producer: str) -> Provenance:
        """The provenance record the ``producer`` stage wrote at ``path``, checked: its shape, and its stage."""
        document = _lines.read_json(path, producer=producer)
        fix = f"delete it and re-run the {producer} stage (dvc repro -f -s {producer}; with groundkit run: run it " \
              "again)"
        try:
            record = Provenance.model_validate(document)
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(str(part) for part in problem["loc"]) or "the record"
            raise ArtifactError(path, f"is not a provenance record ({where}: {problem['msg']}); it was edited by "
                                "hand, or written by another version of groundkit", fix=fix) from None
        if record.stage != producer:
            raise ArtifactError(path, f"was written by the {record.stage} stage, not the {producer} stage that "
                                "makes it", key="stage", fix=fix)
        return record

    def read_run(self, path: str | Path, query_ids: Sequence[str], passage_ids: set[str] | None = None, *,
                 listed_in: str, producer: str) -> dict[str, trec.Ranking]:
        """The rankings of a sealed TREC run, checked as :func:`groundkit.retrieval.trec.read_run` checks them."""
        return trec.read_run(path, query_ids, passage_ids, listed_in=listed_in, producer=producer)

    def write_run(self, path: str | Path, rankings: Mapping[str, Sequence[tuple[str, float | None]]],
                  tag: str) -> None:
        """Write and seal a TREC run."""
        trec.write_run(path, rankings, tag)


_Identity = tuple[int, int, int, int, int]


class RunStore(Store):
    """The store of one ``groundkit run``, whose artifacts are written into ``scratch`` (see the module docstring)."""

    def __init__(self, scratch: str | Path) -> None:
        self._scratch = os.path.join(os.path.realpath(scratch), "")
        self._digests: dict[tuple[int, int], tuple[_Identity, str]] = {}
        self._records: dict[tuple[str, type[BaseModel]], tuple[BaseModel, ...]] = {}
        self._rankings: dict[str, dict[str, tuple[tuple[str, float], ...]]] = {}
        self._corpora: dict[tuple[str, tuple[str, ...], tuple[str, ...]], tuple[tuple[Document, ...], str]] = {}
        self._judgments: dict[str, tuple[Judgment, ...]] = {}
        self._tokens: dict[TokenizeParams | None, dict[str, tuple[str, ...]]] = {}
        self._held = 0

    # --- digests -----------------------------------------------------------------------------------

    def sha256(self, path: str | Path) -> str:
        with Path(path).open("rb") as handle:
            stamp = os.fstat(handle.fileno())
            known = self._digests.get((stamp.st_dev, stamp.st_ino))
            if known is not None and known[0] == _identity(stamp):
                return known[1]
            digest = hashlib.sha256()
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
            if _identity(os.fstat(handle.fileno())) == _identity(stamp):  # unchanged while it was read
                self._remember(path, stamp, digest.hexdigest())
        return digest.hexdigest()

    def _remember(self, path: str | Path, stamp: os.stat_result, digest: str) -> None:
        folder = os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(path))), "")
        if folder.startswith(self._scratch):  # the scratch folder or one inside it
            self._digests[(stamp.st_dev, stamp.st_ino)] = (_identity(stamp), digest)

    def _written(self, path: str | Path, digest: str) -> None:
        self._remember(path, os.stat(path), digest)

    def _sealed(self, path: Path, producer: str) -> tuple[str, bytes | None]:
        """The digest of a sealed artifact, checked against its seal, and its bytes when they had to be read."""
        try:
            stamp = os.stat(path)
        except OSError:
            stamp = None  # missing or unreadable: the full read says which, and how to fix it
        if stamp is not None and stat.S_ISREG(stamp.st_mode):
            known = self._digests.get((stamp.st_dev, stamp.st_ino))
            if known is not None and known[0] == _identity(stamp):
                return check_seal(path, None, producer, self.sha256), None  # only the seal file is read
        data, digest = _lines.artifact_bytes(path, producer, sealed=True)
        assert digest is not None
        return digest, data

    # --- inputs ------------------------------------------------------------------------------------

    def corpus(self, root: str | Path, selection: CorpusParams | None = None) -> tuple[list[Document], str]:
        include, exclude = (selection.include, selection.exclude) if selection is not None else ((), ())
        key = (os.path.realpath(root), tuple(include), tuple(exclude))
        if key not in self._corpora:
            documents, digest = load_corpus_hashed(root, include=include, exclude=exclude)
            self._corpora[key] = (tuple(documents), digest)
        documents, digest = self._corpora[key]
        return list(documents), digest

    def judgments(self, path: str | Path) -> tuple[list[Judgment], str]:
        path = Path(path)
        data = judgments_bytes(path)
        digest = hashlib.sha256(data).hexdigest()
        if digest not in self._judgments:
            self._judgments[digest] = tuple(parse_judgments(path, data))
        return list(self._judgments[digest]), digest

    def tokenizer(self, params: TokenizeParams | None) -> Tokenizer:
        configured = make_tokenizer(params)
        kept = self._tokens.setdefault(None if params is None or params.is_default else params, {})

        def tokenize_once(text: str) -> Sequence[str]:
            tokens = kept.get(text)
            if tokens is None:
                tokens = tuple(configured(text))
                if self._held + len(tokens) <= SHARED_TOKENS:
                    kept[text] = tokens
                    # A document's chunk is often the whole document without the whitespace around it (the
                    # newline a file ends with): the same tokens, since whitespace is never part of a word.
                    trimmed = text.strip()
                    if trimmed is not text:
                        kept[trimmed] = tokens
                    self._held += len(tokens)
            return tokens

        return tokenize_once

    # --- artifacts ---------------------------------------------------------------------------------

    def read_models(self, path: str | Path, model: type[M], *, producer: str) -> list[M]:
        path = Path(path)
        digest, data = self._sealed(path, producer)
        key = (digest, model)
        if key not in self._records:
            if data is None:
                data, _ = _lines.artifact_bytes(path, producer, sealed=True)
            self._records[key] = _lines.parse_models(path, _lines.decoded(path, data, producer), model, producer)
        return list(self._records[key])  # type: ignore[arg-type]  # stored under its own model

    def iter_models(self, path: str | Path, model: type[M], *, producer: str) -> Iterator[M]:
        path = Path(path)
        digest, _ = self._sealed(path, producer)
        held = self._records.get((digest, model))
        if held is not None:
            return iter(held)  # type: ignore[arg-type]  # stored under its own model
        return _lines.iter_models(path, model, producer=producer, digest=self.sha256)

    def write_models(self, path: str | Path, records: Sequence[M], model: type[M]) -> None:
        digest = _lines.write_models(path, records, model)
        self._written(path, digest)
        if _lines.reads_back_equal(model) and all(type(record) is model for record in records):
            self._records[(digest, model)] = tuple(records)

    def read_run(self, path: str | Path, query_ids: Sequence[str], passage_ids: set[str] | None = None, *,
                 listed_in: str, producer: str) -> dict[str, trec.Ranking]:
        path = Path(path)
        digest, data = self._sealed(path, producer)
        written = self._rankings.get(digest)
        if written is not None and trec.knows(written, query_ids, passage_ids):
            return {query_id: list(written.get(query_id, ())) for query_id in query_ids}
        if data is None:
            data, _ = _lines.artifact_bytes(path, producer, sealed=True)
        parsed = trec.parse_run(path, _lines.decoded(path, data, producer), query_ids, passage_ids, listed_in,
                                producer)
        return {query_id: list(ranking) for query_id, ranking in parsed.items()}

    def write_run(self, path: str | Path, rankings: Mapping[str, Sequence[tuple[str, float | None]]],
                  tag: str) -> None:
        written = trec.write_run(path, rankings, tag)
        self._written(path, written.digest)
        self._rankings[written.digest] = written.rankings


def _identity(stamp: os.stat_result) -> _Identity:
    return (stamp.st_dev, stamp.st_ino, stamp.st_size, stamp.st_mtime_ns, stamp.st_ctime_ns)

