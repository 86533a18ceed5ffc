"""The on-disk format of a BM25 index, its one writer, and the segment both build and search work on.

An index is a folder of plain arrays and JSON, loaded without pickle: one folder per segment of
``SEGMENT_ROWS`` rows (``data``, ``indices``, ``indptr``: a CSC matrix over global term ids), the row table
(chunk ids, documents, start offsets), the vocabulary, and ``manifest.json`` with k1, b, the tokenizer and
the SHA-256 of every file, sealed itself by ``manifest.json.sha256``. :class:`IndexWriter` is the one writer,
whichever engine built the segments; :func:`read_index` checks every file before an index is used.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NamedTuple

import numpy as np

from groundkit.artifacts.atomic import atomic_directory, atomic_write_text
from groundkit.artifacts.lines import dumps_json, read_json
from groundkit.artifacts.seals import Digest, file_sha256
from groundkit.config import TokenizeParams
from groundkit.errors import ArtifactError

if TYPE_CHECKING:
    from groundkit.retrieval.bm25.stats import GlobalStats


# /3: rows cut into segments (one folder of arrays each) and a row table of arrays instead of rows.json.
FORMAT = "groundkit-bm25/3"


# Rows per segment. Fixed, so that segment boundaries depend only on the row count, never on who builds.
SEGMENT_ROWS = 2**20


_ARRAYS = ("data", "indices", "indptr")


_TABLE = {"chunk_ids.npy": np.dtype("S16"), "row_documents.npy": np.dtype(np.int32),
          "start_offsets.npy": np.dtype(np.int64)}


_ID_CHARS = 16  # a chunk id is a content id: 16 hex digits


# Chunks tokenized per step of the build: large enough for numpy to dominate,
# small enough that one block's token strings stay in the tens of MB.
_BLOCK = 8192


_FIX = "delete it and re-run the index stage (dvc repro -f -s index)"


_STAGE = "index"  # the stage that writes an index, named in messages about one


MANIFEST = "manifest.json"


@dataclass(eq=False)
class Segment:
    """Pass 2 of one segment: its rows' weights, CSC by global term, rows local and ascending per term.

    Attributes:
        first_row: Global row of the segment's first row.
        rows: Rows in the segment.
        indptr: int64, one more than the vocabulary; term t's postings are ``indptr[t]:indptr[t + 1]``.
        indices: int32 local rows.
        data: float32 weights.
    """

    first_row: int
    rows: int
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray

    def scores(self, terms: np.ndarray) -> np.ndarray:
        """float32 score of each of the segment's rows: query terms added one at a time, in query order."""
        scores = np.zeros(self.rows, dtype=np.float32)
        indptr, indices, data = self.indptr, self.indices, self.data
        for term in terms.tolist():
            start, end = int(indptr[term]), int(indptr[term + 1])
            np.add.at(scores, indices[start:end], data[start:end])  # numpy 2's add.at: half a fancy-indexed add's time
        return scores

    def top(self, terms: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
        """Global rows (int64) and float32 scores of the segment's best ``depth`` rows scoring above zero."""
        rows, values = _select(self.scores(terms), depth)
        return rows.astype(np.int64) + self.first_row, values


class _RowTable:
    """Row -> (chunk id, document, start offset), kept as arrays of one number per row.

    Documents are numbered in order of appearance, a new number whenever a row's document differs
    from the previous row's; their names are written as they come (to a file, or a list in memory).
    """

    def __init__(self, documents: IO[str] | None = None) -> None:
        self._sink = documents
        self.documents: list[str] = []
        self._last: str | None = None
        self._number = -1
        self._parts: dict[str, list[np.ndarray]] = {name: [] for name in _TABLE}

    def add(self, chunk_ids: Sequence[str], documents: Sequence[str], start_offsets: Sequence[int]) -> None:
        """Append a block of rows (columns of equal length)."""
        if not chunk_ids:
            return
        if set(map(len, chunk_ids)) != {_ID_CHARS}:
            raise ValueError(f"a chunk id is not {_ID_CHARS} characters long")
        numbers, new = [], []
        last, number = self._last, self._number
        for document in documents:
            if document != last:
                last, number = document, number + 1
                new.append(document)
            numbers.append(number)
        self._last, self._number = last, number
        if self._sink is not None:
            self._sink.write("".join(map(_document_line, new)))
        else:
            self.documents.extend(new)
        for name, values in zip(_TABLE, (chunk_ids, numbers, start_offsets), strict=True):
            self._parts[name].append(np.array(values, dtype=_TABLE[name]))

    def arrays(self) -> dict[str, np.ndarray]:
        """The finished arrays, by file name."""
        return {name: np.concatenate(parts) if parts else np.zeros(0, dtype=_TABLE[name])
                for name, parts in self._parts.items()}


def _document_line(document: str) -> str:
    # What json.dumps(document, ensure_ascii=False) writes, without its per-call cost (a corpus may
    # have as many documents as chunks).
    return encode_basestring(document) + "\n"


def _segment_folder(number: int) -> str:
    return f"seg-{number:05d}"


def _write_segment(directory: Path, number: int, segment: Segment) -> None:
    folder = directory / _segment_folder(number)
    folder.mkdir()
    for name in _ARRAYS:
        np.save(folder / f"{name}.npy", getattr(segment, name), allow_pickle=False)


def _write_rest(directory: Path, manifest: dict[str, Any], vocab: list[str], table: dict[str, np.ndarray],
                digest_of: Digest) -> None:
    """Everything but the segments and documents.jsonl: the vocabulary, the row table and the manifest last."""
    (directory / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False) + "\n", encoding="utf-8")
    for name, array in table.items():
        np.save(directory / name, array, allow_pickle=False)
    files = {p.relative_to(directory).as_posix(): digest_of(p)
             for p in sorted(directory.rglob("*")) if p.is_file()}
    # Sealed: every other file's SHA-256 is in the manifest, and an edited manifest (another tokenizer, say)
    # would otherwise change every ranking without a word.
    atomic_write_text(directory / MANIFEST, dumps_json({**manifest, "files": files}), seal=True)


def _manifest(*, k1: float, b: float, tokenizer: TokenizeParams, vocab_size: int, total_tokens: int,
              segments: Sequence[tuple[int, int]]) -> dict[str, Any]:
    num_chunks = sum(rows for _, rows in segments)
    return {
        "format": FORMAT,
        "k1": k1,
        "b": b,
        "method": "lucene",
        "tokenizer": tokenizer.describe(),
        "num_chunks": num_chunks,
        "vocab_size": vocab_size,
        "avg_chunk_tokens": total_tokens / num_chunks if num_chunks else 0.0,
        "total_tokens": total_tokens,
        "segments": [{"first_row": first, "rows": rows} for first, rows in segments],
    }


class IndexSummary(NamedTuple):
    """What :func:`write_index` built, in two numbers."""

    num_chunks: int
    vocab_size: int


class IndexWriter:
    """Writes an index folder piece by piece, atomically: rows as they stream by, segments in row order, then
    the vocabulary, row table and manifest; nothing is left behind if the block fails or finish() is not called.

    Both engines write through it, so an index is the same bytes whichever engine built it::

        with IndexWriter(directory, k1=k1, b=b, tokenizer=tokenizer) as writer:
            writer.add_row(chunk_id, document, start_offset)  # every row, in order (or add_rows by block)
            writer.add_segment(segment)                       # every segment, in order
            summary = writer.finish(stats)
    """

    def __init__(self, directory: str | Path, *, k1: float, b: float, tokenizer: TokenizeParams | None = None,
                 digest_of: Digest = file_sha256) -> None:
        self.k1, self.b = k1, b
        self.tokenizer = tokenizer or TokenizeParams()
        self._digest_of = digest_of  # hashes the files for the manifest (a run's store remembers what it hashed)
        self._directory = Path(directory)
        self._stack = contextlib.ExitStack()
        self._spans: list[tuple[int, int]] = []
        self._pending: tuple[list[str], list[str], list[int]] = ([], [], [])
        self._finished = False

    def __enter__(self) -> IndexWriter:
        self.folder = self._stack.enter_context(atomic_directory(self._directory))
        self._documents = self._stack.enter_context(
            (self.folder / "documents.jsonl").open("w", encoding="utf-8", newline="\n"))
        self._table = _RowTable(self._documents)
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: Any) -> bool:
        if kind is None and not self._finished:
            try:
                raise RuntimeError("IndexWriter closed without finish(): the index was not written")
            except RuntimeError:
                if not self._stack.__exit__(*sys.exc_info()):
                    raise
        return bool(self._stack.__exit__(kind, error, trace))

    def add_row(self, chunk_id: str, document: str, start_offset: int) -> None:
        """The next row of the row table."""
        ids, documents, offsets = self._pending
        ids.append(chunk_id)
        documents.append(document)
        offsets.append(start_offset)
        if len(ids) == _BLOCK:
            self._flush()

    def add_rows(self, chunk_ids: Sequence[str], documents: Sequence[str], start_offsets: Sequence[int]) -> None:
        """The next rows of the row table, as three columns."""
        self._flush()
        self._table.add(chunk_ids, documents, start_offsets)

    def _flush(self) -> None:
        if self._pending[0]:
            self._table.add(*self._pending)
            self._pending = ([], [], [])

    def add_segment(self, segment: Segment) -> None:
        """Write the next segment's arrays; the caller may drop it afterwards."""
        expected = sum(rows for _, rows in self._spans)
        if segment.first_row != expected:
            raise ValueError(f"segment {len(self._spans)} starts at row {segment.first_row}, not at row {expected}")
        _write_segment(self.folder, len(self._spans), segment)
        self._spans.append((segment.first_row, segment.rows))

    def finish(self, stats: GlobalStats) -> IndexSummary:
        """Write the vocabulary, the row table and the manifest (with every file's SHA-256)."""
        self._flush()
        self._documents.close()
        table = self._table.arrays()
        rows = sum(n for _, n in self._spans)
        if rows != stats.n_docs or len(table["chunk_ids.npy"]) != stats.n_docs:
            raise ValueError(f"{len(table['chunk_ids.npy'])} rows and segments of {rows} rows do not make the "
                             f"{stats.n_docs} rows of the statistics")
        if stats.tokenizer != self.tokenizer:
            raise ValueError("the statistics were counted with another tokenizer than the writer's")
        manifest = _manifest(k1=self.k1, b=self.b, tokenizer=self.tokenizer, vocab_size=len(stats.vocab),
                             total_tokens=stats.total_tokens, segments=self._spans)
        _write_rest(self.folder, manifest, stats.vocab, table, self._digest_of)
        self._finished = True
        return IndexSummary(stats.n_docs, len(stats.vocab))


def _mapped(path: Path, dtype: np.dtype, length: int) -> np.ndarray:
    """A one-dimensional .npy array, memory-mapped read-only, of the expected type and length."""
    # allow_pickle=False: an index is data, never code, even when its manifest was forged to match.
    array = np.load(path, mmap_mode="r", allow_pickle=False)
    if array.dtype != dtype or array.shape != (length,):
        raise ValueError(f"{path.name} holds {array.dtype}{list(array.shape)}, expected {dtype}[{length}]")
    # A plain ndarray over the same mapping: np.memmap's Python-level slicing costs a query more than its reads.
    return array.view(np.ndarray)


def _select(scores: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows and scores of :func:`top_k`, as arrays."""
    candidates = np.flatnonzero(scores > 0)
    values = scores[candidates]
    if candidates.size > depth:
        cutoff = np.partition(values, candidates.size - depth)[candidates.size - depth]
        above = values > cutoff
        tied = np.flatnonzero(values == cutoff)[: depth - int(np.count_nonzero(above))]
        above[tied] = True  # candidates ascend, so the first tied rows are the lowest rows
        candidates, values = candidates[above], values[above]
    # Candidates ascend, so a stable sort by score descending leaves tied rows ascending: lexsort's order,
    # at the cost of one key.
    order = np.argsort(-values, kind="stable")
    return candidates[order], values[order]


class StoredIndex(NamedTuple):
    """What an index folder holds, checked: the parts a :class:`~groundkit.retrieval.bm25.search.BM25Index` is
    made of."""

    k1: float
    b: float
    vocab: list[str]
    table: dict[str, np.ndarray]
    documents: Path
    segments: list[Segment]
    avg_tokens: float
    total_tokens: int
    tokenizer: TokenizeParams


def read_index(directory: str | Path, digest_of: Digest = file_sha256) -> StoredIndex:
    """The index in ``directory``, every file's SHA-256 verified first (``digest_of`` hashes them; a run's store
    knows the files it wrote); the arrays are memory-mapped."""
    directory = Path(directory)
    manifest_path = directory / MANIFEST
    if not manifest_path.is_file():
        raise ArtifactError(directory, "is not a groundkit index (manifest.json missing)", fix=_FIX)
    manifest = read_json(manifest_path, producer=_STAGE, sealed=True)
    try:
        files = dict(manifest["files"])
        if manifest["format"] != FORMAT:
            raise ArtifactError(manifest_path, f"unsupported index format {manifest['format']!r}", fix=_FIX)
        recorded = dict(manifest["tokenizer"])
        if recorded.pop("pattern", None) != TokenizeParams().describe()["pattern"]:
            raise ValueError("unknown tokenizer pattern")
        tokenizer = TokenizeParams.model_validate(recorded)
        spans = [(int(s["first_row"]), int(s["rows"])) for s in manifest["segments"]]
        num_chunks, vocab_size = int(manifest["num_chunks"]), int(manifest["vocab_size"])
        if [first for first, _ in spans] != [sum(n for _, n in spans[:i]) for i in range(len(spans))] or \
                sum(n for _, n in spans) != num_chunks or any(n < 1 for _, n in spans):
            raise ValueError("segments do not tile the rows")
    except (ValueError, KeyError, TypeError):
        raise ArtifactError(manifest_path, "is not a valid index manifest (truncated or edited)",
                            fix=_FIX) from None
    expected = {"vocab.json", "documents.jsonl", *_TABLE}
    expected |= {f"{_segment_folder(i)}/{name}.npy" for i in range(len(spans)) for name in _ARRAYS}
    if set(files) != expected:
        raise ArtifactError(manifest_path, f"lists files {sorted(files)}, expected {sorted(expected)}", fix=_FIX)
    for name, digest in sorted(files.items()):
        path = directory / name
        if not path.is_file() or digest_of(path) != digest:
            raise ArtifactError(
                path, "does not match the SHA-256 recorded in manifest.json: truncated or edited", fix=_FIX
            )
    try:
        vocab = json.loads((directory / "vocab.json").read_text(encoding="utf-8"))
        table = {name: _mapped(directory / name, dtype, num_chunks) for name, dtype in _TABLE.items()}
        segments = []
        for number, (first, rows) in enumerate(spans):
            folder = directory / _segment_folder(number)
            indptr = _mapped(folder / "indptr.npy", np.dtype(np.int64), vocab_size + 1)
            nnz = int(indptr[-1])
            segments.append(Segment(first_row=first, rows=rows, indptr=indptr,
                                    indices=_mapped(folder / "indices.npy", np.dtype(np.int32), nnz),
                                    data=_mapped(folder / "data.npy", np.dtype(np.float32), nnz)))
    except (ValueError, TypeError, IndexError, KeyError, UnicodeDecodeError) as exc:
        raise ArtifactError(directory, f"holds a file that is not a groundkit index array or table ({exc})",
                            fix=_FIX) from None
    if not isinstance(vocab, list) or len(vocab) != vocab_size:
        raise ArtifactError(manifest_path, "row or vocabulary count disagrees with the files", fix=_FIX)
    return StoredIndex(k1=float(manifest["k1"]), b=float(manifest["b"]), vocab=vocab, table=table,
                       documents=directory / "documents.jsonl", segments=segments,
                       avg_tokens=float(manifest["avg_chunk_tokens"]), total_tokens=int(manifest["total_tokens"]),
                       tokenizer=tokenizer)


