"""The BM25 baseline: a Lucene-BM25 index over chunks, built in segments and searched from disk.

groundkit owns the tokenizer, the vocabulary order, the on-disk format and
the ranking order, and computes the weights itself with numpy. The weights
are bit-identical to bm25s 0.3.16 (``method="lucene"``,
``build_index_from_ids``), which a test checks.

Lucene BM25 (Kamphuis et al., ECIR 2020, "Lucene" variant):

    idf(t)      = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    score(q, d) = sum over query tokens t of
                  idf(t) * tf(t, d) / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl))

A repeated query token counts once per occurrence. Every term of a matching
chunk contributes a positive amount, so a chunk scores above zero exactly
when it shares a token with the query. Arithmetic follows bm25s exactly:
idf is rounded to float32, the term weight is computed in float64 and stored
as float32, and a query's score is summed in float32, token by token, in
query order.

Rows (chunks, in the order given) are cut into segments of ``SEGMENT_ROWS``
rows, and the index is built in two passes (the contract the Ray engine
shares, written down in the issue's segment API):

1. :func:`count_segment` tokenizes one segment's texts into (row, term, tf)
   triples; its :meth:`SegmentCounts.summary` is the segment's vocabulary,
   document frequencies and token total.
2. :func:`merge_stats` adds the summaries up into exact corpus statistics
   (sorted vocabulary, df, N, average length), and :func:`weigh_segment`
   turns each segment's triples into a CSC matrix over global term ids.

A term's weight in a row depends only on the row and those global
statistics, so the segments are the columns of the whole-corpus matrix cut
by row, and a query scores each segment on its own (:meth:`Segment.top`)
before :func:`merge_top` keeps the best. :func:`write_index` streams rows
from an iterable, spilling each segment's triples to disk, so memory holds
one segment, the vocabulary and a few arrays of one number per row.

On disk an index is plain arrays and JSON, loaded without pickle, with a
SHA-256 of every file in its manifest, and the manifest's own beside it
(``manifest.json.sha256``), so a truncated or edited index is detected before
it is used; the arrays are memory-mapped, so a query reads only its terms'
postings. The manifest also records k1, b and the tokenizer configuration, so
a loaded index tokenizes queries the way its chunks were, and the retrieve
stage can check that the index was built with the params it reports.
"""

from __future__ import annotations

import contextlib
import json
import math
import shutil
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from itertools import chain, count, islice, pairwise
from json.encoder import encode_basestring
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NamedTuple

import numpy as np

from groundkit._progress import bar
from groundkit.artifacts import atomic_directory, atomic_write_text, dumps_json, file_sha256, read_json, round_floats
from groundkit.config import TokenizeParams
from groundkit.corpus.passage import Chunk
from groundkit.corpus.tokenizing import make_tokenizer
from groundkit.errors import ArtifactError, ParamsError
from groundkit.retrieval.kinds import RetrieverKind, Run, Sources

if TYPE_CHECKING:
    from groundkit.config import Params
    from groundkit.execution import Engine

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


@lru_cache(maxsize=8)
def _tokenizer_for(params: TokenizeParams) -> Callable[[str], list[str]]:
    return make_tokenizer(params)


@dataclass(frozen=True, eq=False)
class SegmentSummary:
    """What the merge needs of one segment: small and picklable.

    Attributes:
        first_row: Global row of the segment's first row.
        rows: Rows in the segment.
        total_tokens: Tokens in the segment's rows.
        vocab: The segment's terms, in order of first appearance.
        df: Rows of the segment holding each term of ``vocab`` (int64).
        tokenizer: The tokenizer the segment was counted with.
    """

    first_row: int
    rows: int
    total_tokens: int
    vocab: list[str]
    df: np.ndarray
    tokenizer: TokenizeParams


class SegmentCounts:
    """Pass 1 of one segment: row lengths and (row, local term, tf) triples, in memory or spilled to a folder.

    Rows in the triples are local to the segment; terms are positions in :attr:`vocab`. Triples come in
    blocks ordered by row, each block sorted by (row, term).
    """

    def __init__(self, *, first_row: int, tokenizer: TokenizeParams, lengths: np.ndarray | None,
                 vocab: list[str] | None, df: np.ndarray | None, blocks: list[np.ndarray],
                 spill: Path | None = None, sizes: Sequence[int] = ()) -> None:
        self.first_row = first_row
        self.tokenizer = tokenizer
        self._lengths, self._vocab, self._df, self._blocks = lengths, vocab, df, blocks
        self._spill, self._sizes = spill, list(sizes)

    @property
    def lengths(self) -> np.ndarray:
        """Tokens per row (int64)."""
        if self._lengths is not None:
            return self._lengths
        return np.load(self._folder / "lengths.npy", allow_pickle=False)

    @property
    def vocab(self) -> list[str]:
        """The segment's terms in order of first appearance."""
        if self._vocab is not None:
            return self._vocab
        text = (self._folder / "vocab.txt").read_text(encoding="utf-8")
        return text.split("\n") if text else []

    @property
    def df(self) -> np.ndarray:
        """Rows holding each local term (int64)."""
        if self._df is not None:
            return self._df
        return np.load(self._folder / "df.npy", allow_pickle=False)

    @property
    def _folder(self) -> Path:
        assert self._spill is not None, "counts without a spill folder keep everything in memory"
        return self._spill

    def blocks(self) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """The triples block by block, as (rows, terms, tfs) int32 arrays; a spilled block is read when reached."""
        if self._spill is None:
            for block in self._blocks:
                yield block[0], block[1], block[2]
            return
        with (self._spill / "triples.i32").open("rb") as handle:
            for size in self._sizes:
                block = np.fromfile(handle, dtype=np.int32, count=3 * size).reshape(3, size)
                yield block[0], block[1], block[2]

    @property
    def rows(self) -> np.ndarray:
        """Local row of every triple."""
        return np.concatenate([b[0] for b in self.blocks()] or [np.zeros(0, np.int32)])

    @property
    def terms(self) -> np.ndarray:
        """Local term of every triple."""
        return np.concatenate([b[1] for b in self.blocks()] or [np.zeros(0, np.int32)])

    @property
    def tfs(self) -> np.ndarray:
        """Term frequency of every triple."""
        return np.concatenate([b[2] for b in self.blocks()] or [np.zeros(0, np.int32)])

    def summary(self) -> SegmentSummary:
        """The segment's vocabulary, document frequencies, row count and token total."""
        lengths = self.lengths
        return SegmentSummary(first_row=self.first_row, rows=len(lengths), total_tokens=int(lengths.sum()),
                              vocab=self.vocab, df=self.df, tokenizer=self.tokenizer)

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled (to a Ray worker, say) with its data in memory: a spill folder is local to one machine.
        return (_counts_from_state, (self.first_row, self.tokenizer, self.lengths, self.vocab, self.df,
                                     [np.stack(b) for b in self.blocks()]))


def _counts_from_state(first_row: int, tokenizer: TokenizeParams, lengths: np.ndarray, vocab: list[str],
                       df: np.ndarray, blocks: list[np.ndarray]) -> SegmentCounts:
    return SegmentCounts(first_row=first_row, tokenizer=tokenizer, lengths=lengths, vocab=vocab, df=df,
                         blocks=blocks)


def count_segment(texts: Iterable[str], tokenizer: TokenizeParams | None = None, *, first_row: int,
                  spill: Path | None = None) -> SegmentCounts:
    """Pass 1 over one segment: tokenize each text once and count its terms, block by block.

    Token strings live only while their block is processed. With ``spill`` (a folder that must not
    exist yet), the triples go to disk as they are made and the returned counts read them back.
    """
    tokenizer = tokenizer or TokenizeParams()
    tokenize = _tokenizer_for(tokenizer)
    first_seen: defaultdict[str, int] = defaultdict(count().__next__)  # assigns ids in C, in order of appearance
    lookup = first_seen.__getitem__
    df = np.zeros(0, dtype=np.int64)
    lengths: list[np.ndarray] = []
    blocks: list[np.ndarray] = []
    sizes: list[int] = []
    sink: IO[bytes] | None = None
    if spill is not None:
        spill.mkdir()
        sink = (spill / "triples.i32").open("wb")
    iterator, row = iter(texts), 0
    try:
        while batch := list(islice(iterator, _BLOCK)):
            tokens = [tokenize(text) for text in batch]
            del batch
            counts = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
            ids = np.fromiter(map(lookup, chain.from_iterable(tokens)), dtype=np.int64, count=int(counts.sum()))
            del tokens
            owner = np.repeat(np.arange(row, row + len(counts), dtype=np.int64), counts)
            # One sort per block finds each row's distinct terms and their counts.
            pairs, tf = np.unique((owner << 32) | ids, return_counts=True)
            block = np.empty((3, len(pairs)), dtype=np.int32)
            block[0], block[1], block[2] = pairs >> 32, pairs & 0xFFFFFFFF, tf
            if len(first_seen) > len(df):  # grown by doubling: a bincount over the whole vocabulary per block cost more
                df = np.concatenate([df, np.zeros(max(len(first_seen), 2 * len(df)) - len(df), dtype=np.int64)])
            np.add.at(df, block[1], 1)  # a block's (row, term) pairs are distinct
            if sink is not None:
                block.tofile(sink)
                sizes.append(len(pairs))
            else:
                blocks.append(block)
            lengths.append(counts)
            row += len(counts)
    finally:
        if sink is not None:
            sink.close()
    row_lengths = np.concatenate(lengths) if lengths else np.zeros(0, dtype=np.int64)
    vocab = list(first_seen)
    df = df[: len(vocab)].copy()
    if spill is None:
        return SegmentCounts(first_row=first_row, tokenizer=tokenizer, lengths=row_lengths, vocab=vocab, df=df,
                             blocks=blocks)
    np.save(spill / "lengths.npy", row_lengths, allow_pickle=False)
    np.save(spill / "df.npy", df, allow_pickle=False)
    # A token is a run of \\w characters (stemmed or not), so a newline never occurs inside one.
    (spill / "vocab.txt").write_text("\n".join(vocab), encoding="utf-8")
    return SegmentCounts(first_row=first_row, tokenizer=tokenizer, lengths=None, vocab=None, df=None, blocks=[],
                         spill=spill, sizes=sizes)


def _lucene_idf(df: np.ndarray, n_docs: int) -> np.ndarray:
    """float32 idf per term, through ``math.log`` as bm25s does (numpy's log may differ in the last bit)."""
    values, inverse = np.unique(df, return_inverse=True)
    idf = np.array([math.log(1 + (n_docs - int(d) + 0.5) / (int(d) + 0.5)) for d in values], dtype=np.float64)
    return idf.astype(np.float32)[inverse]


@dataclass(frozen=True, eq=False)
class GlobalStats:
    """Exact corpus statistics, merged from every segment's summary.

    Attributes:
        vocab: Every term, sorted; a term's position is its global id.
        df: Rows holding each term (int64).
        n_docs: Rows in the corpus.
        total_tokens: Tokens in the corpus.
        tokenizer: The tokenizer every segment was counted with.
    """

    vocab: list[str]
    df: np.ndarray
    n_docs: int
    total_tokens: int
    tokenizer: TokenizeParams
    # first_row -> global id of each term of that segment's vocab, known from the merge; weighing a
    # segment looks its terms up in term_ids when it is not here.
    segment_terms: dict[int, np.ndarray] = field(default_factory=dict, repr=False)

    @property
    def avgdl(self) -> float:
        """Mean tokens per row; the integer sum is exact, so this equals bm25s's ``lengths.mean()``."""
        return self.total_tokens / self.n_docs if self.n_docs else 0.0

    @cached_property
    def idf(self) -> np.ndarray:
        """Lucene idf per term (float32)."""
        return _lucene_idf(self.df, self.n_docs)

    @cached_property
    def term_ids(self) -> dict[str, int]:
        """Term -> global id."""
        return dict(zip(self.vocab, range(len(self.vocab)), strict=True))


class _StatsMerger:
    """Adds segment summaries up one at a time, so a caller can drop each summary once added."""

    def __init__(self) -> None:
        # Terms get merge ids in order of arrival. The first summary's vocabulary is kept as a list (its
        # merge ids are its positions); a dict is built only when a second summary needs the lookups.
        self._first: list[str] | None = None
        self._ids: defaultdict[str, int] | None = None
        self._df = np.zeros(0, dtype=np.int64)  # by merge id
        self._local: dict[int, np.ndarray] = {}  # first_row -> the merge id of each of the segment's terms
        self._rows: list[tuple[int, int]] = []
        self._tokens = 0
        self._tokenizer: TokenizeParams | None = None

    def add(self, summary: SegmentSummary) -> None:
        if self._tokenizer is not None and summary.tokenizer != self._tokenizer:
            raise ValueError("segments counted with different tokenizers cannot be merged")
        if summary.first_row in self._local:
            raise ValueError(f"two summaries of the segment at row {summary.first_row}")
        self._tokenizer = summary.tokenizer
        self._rows.append((summary.first_row, summary.rows))
        self._tokens += summary.total_tokens
        if self._first is None and self._ids is None:
            self._first = summary.vocab
            ids = np.arange(len(summary.vocab), dtype=np.int64)
        else:
            if self._ids is None:
                first = self._first or []
                self._ids = defaultdict(count(len(first)).__next__, zip(first, range(len(first)), strict=True))
                self._first = None
            ids = np.fromiter(map(self._ids.__getitem__, summary.vocab), dtype=np.int64, count=len(summary.vocab))
        df = np.zeros(len(self._ids) if self._ids is not None else len(summary.vocab), dtype=np.int64)
        df[: len(self._df)] = self._df
        df[ids] += summary.df  # a segment's terms are distinct
        self._df, self._local[summary.first_row] = df, ids

    def result(self) -> GlobalStats:
        spans = sorted(self._rows)
        if any(a + n > b for (a, n), (b, _) in pairwise(spans)):
            raise ValueError(f"segments overlap: {spans}")
        terms = self._first if self._first is not None else list(self._ids or ())
        # Sorting merge ids by term gives the sorted vocabulary and each term's merge id at once.
        order = sorted(range(len(terms)), key=terms.__getitem__)
        vocab = list(map(terms.__getitem__, order))
        merged = np.array(order, dtype=np.int64)
        to_global = np.empty(len(vocab), dtype=np.int64)
        to_global[merged] = np.arange(len(vocab), dtype=np.int64)
        return GlobalStats(vocab=vocab, df=self._df[merged], n_docs=sum(n for _, n in spans),
                           total_tokens=self._tokens, tokenizer=self._tokenizer or TokenizeParams(),
                           segment_terms={first: to_global[ids] for first, ids in self._local.items()})


def merge_stats(summaries: Iterable[SegmentSummary]) -> GlobalStats:
    """Exact global statistics from the segments' summaries, whatever their order or number."""
    merger = _StatsMerger()
    for summary in summaries:
        merger.add(summary)
    return merger.result()


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


def weigh_segment(counts: SegmentCounts, stats: GlobalStats, *, k1: float, b: float) -> Segment:
    """Pass 2 over one segment: the Lucene weight of every (row, term), placed by a counting sort by term.

    Blocks of triples come in row order, so appending each block's entries at its terms' write heads
    keeps every term's rows ascending, with no sort over the whole segment.
    """
    lengths = counts.lengths
    to_global = stats.segment_terms.get(counts.first_row)
    if to_global is None:
        vocab = counts.vocab
        to_global = np.fromiter(map(stats.term_ids.__getitem__, vocab), dtype=np.int64, count=len(vocab))
        del vocab
    df = np.zeros(len(stats.vocab), dtype=np.int64)
    df[to_global] = counts.df
    indptr = np.zeros(len(stats.vocab) + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    del df
    data = np.empty(int(indptr[-1]), dtype=np.float32)
    indices = np.empty(int(indptr[-1]), dtype=np.int32)
    if len(data):
        heads = indptr[:-1].copy()
        idf = stats.idf
        # Same operations, in the same order and precision, as bm25s's _score_tfc_robertson.
        norm = k1 * ((1 - b) + b * lengths.astype(np.float64) / stats.avgdl)
        for rows, local, tfs in counts.blocks():
            terms = to_global[local]
            order = np.argsort((terms << 32) | rows)  # keys are distinct: no tie to break
            rows, terms, tfs = rows[order], terms[order], tfs[order]
            tf = tfs.astype(np.float64)
            weight = idf[terms].astype(np.float64) * (tf / (norm[rows] + tf))
            first = np.flatnonzero(np.concatenate(([True], terms[1:] != terms[:-1])))
            sizes = np.diff(np.append(first, len(terms)))
            position = heads[terms] + (np.arange(len(terms)) - np.repeat(first, sizes))
            data[position] = weight
            indices[position] = rows
            heads[terms[first]] += sizes
    return Segment(first_row=counts.first_row, rows=len(lengths), indptr=indptr, indices=indices, data=data)


def query_terms(index_or_stats: BM25Index | GlobalStats, query: str) -> np.ndarray:
    """Global term ids of ``query``'s tokens (int64), in query order, repeats kept, unknown tokens dropped."""
    ids = index_or_stats.term_ids
    tokens = _tokenizer_for(index_or_stats.tokenizer)(query)
    return np.fromiter((t for t in map(ids.get, tokens) if t is not None), dtype=np.int64)


def merge_top(parts: Sequence[tuple[np.ndarray, np.ndarray]], depth: int) -> tuple[np.ndarray, np.ndarray]:
    """The best ``depth`` of several segments' tops (each in that order): score descending, then global row
    ascending."""
    if not parts:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    if len(parts) == 1:  # one segment's top is in that order already
        rows, scores = parts[0]
        return np.asarray(rows, dtype=np.int64)[:depth], np.asarray(scores, dtype=np.float32)[:depth]
    rows = np.concatenate([np.asarray(p[0], dtype=np.int64) for p in parts])
    scores = np.concatenate([np.asarray(p[1], dtype=np.float32) for p in parts])
    order = np.lexsort((rows, -scores))[:depth]
    return rows[order], scores[order]


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


def _write_rest(directory: Path, manifest: dict[str, Any], vocab: list[str], table: dict[str, np.ndarray]) -> None:
    """Everything but the segments and documents.jsonl: the vocabulary, the row table and the manifest last."""
    (directory / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False) + "\n", encoding="utf-8")
    for name, array in table.items():
        np.save(directory / name, array, allow_pickle=False)
    files = {p.relative_to(directory).as_posix(): file_sha256(p)
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


def _count_all(records: Iterable[tuple[str, str, int, str]], add_rows: Callable[..., None], tokenizer: TokenizeParams,
               segment_rows: int, spill: Path | None, total: int | None) -> tuple[GlobalStats, list[SegmentCounts]]:
    """Pass 1 over every segment in turn, then the merge; each summary is dropped once merged."""
    if segment_rows < 1:
        raise ValueError(f"segment_rows must be 1 or more, got {segment_rows}")
    iterator = iter(records)
    merger, counted, first_row = _StatsMerger(), [], 0
    with bar(total=total, desc="index", unit="chunk") as progress:
        def texts(limit: int) -> Iterator[str]:
            # Records come in blocks, split into columns by zip in C: no Python call per row.
            while limit and (block := list(islice(iterator, min(limit, _BLOCK)))):
                limit -= len(block)
                chunk_ids, documents, start_offsets, block_texts = zip(*block, strict=True)
                del block
                add_rows(chunk_ids, documents, start_offsets)
                progress.update(len(block_texts))
                yield from block_texts

        while True:
            folder = None if spill is None else spill / _segment_folder(len(counted))
            counts = count_segment(texts(segment_rows), tokenizer, first_row=first_row, spill=folder)
            summary = counts.summary()
            rows = summary.rows
            if rows == 0:
                if folder is not None:
                    shutil.rmtree(folder)
                break
            merger.add(summary)
            del summary  # its vocabulary, before the next segment's is built
            counted.append(counts)
            first_row += rows
            if rows < segment_rows:
                break
    return merger.result(), counted


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

    def __init__(self, directory: str | Path, *, k1: float, b: float, tokenizer: TokenizeParams | None = None
                 ) -> None:
        self.k1, self.b = k1, b
        self.tokenizer = tokenizer or TokenizeParams()
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
        _write_rest(self.folder, manifest, stats.vocab, table)
        self._finished = True
        return IndexSummary(stats.n_docs, len(stats.vocab))


def write_index(records: Iterable[tuple[str, str, int, str]], directory: str | Path, *, k1: float, b: float,
                tokenizer: TokenizeParams | None = None, segment_rows: int = SEGMENT_ROWS) -> IndexSummary:
    """Index ``(chunk_id, document, start_offset, text)`` records as they stream by, straight to disk.

    Each segment's counts are spilled to a folder inside the index's temporary directory and
    weighed once every segment has been counted; the folder is gone before the index is moved
    into place. The files are the same bytes as ``BM25Index.build(...).save(directory)``.
    """
    tokenizer = tokenizer or TokenizeParams()
    with IndexWriter(directory, k1=k1, b=b, tokenizer=tokenizer) as writer:
        spill = writer.folder / ".spill"
        spill.mkdir()
        stats, counted = _count_all(records, writer.add_rows, tokenizer, segment_rows, spill, total=None)
        for counts in counted:
            writer.add_segment(weigh_segment(counts, stats, k1=k1, b=b))
        del counted
        shutil.rmtree(spill)
        return writer.finish(stats)


def save_index(directory: str | Path, *, k1: float, b: float, stats: GlobalStats,
               rows: Iterable[tuple[str, str, int]], segments: Iterable[Segment]) -> IndexSummary:
    """Write an index from weighed segments, e.g. ones that Ray workers returned: :class:`IndexWriter` in one call.

    ``rows`` are ``(chunk_id, document, start_offset)`` in row order; ``segments`` come in row order
    and may be a generator, so that only one is held at a time.
    """
    with IndexWriter(directory, k1=k1, b=b, tokenizer=stats.tokenizer) as writer:
        iterator = iter(rows)
        while block := list(islice(iterator, _BLOCK)):
            writer.add_rows(*zip(*block, strict=True))
        for segment in segments:
            writer.add_segment(segment)
        return writer.finish(stats)


DECODED_IDS = 1 << 20
"""An index of at most this many chunks keeps its ids decoded once searched (a 16-character str is 65 bytes)."""


class BM25Index:
    """A BM25 index whose rows are chunks ordered by (document path, start_offset).

    That row order is the documented tie-break: equal scores rank by row.
    """

    def __init__(
        self,
        *,
        k1: float,
        b: float,
        vocab: list[str],
        table: dict[str, np.ndarray],
        documents: list[str] | Path,
        segments: list[Segment],
        avg_tokens: float,
        total_tokens: int,
        tokenizer: TokenizeParams | None = None,
    ) -> None:
        self.tokenizer = tokenizer or TokenizeParams()
        self.k1 = k1
        self.b = b
        self.vocab = vocab
        self.term_ids = dict(zip(vocab, range(len(vocab)), strict=True))
        self.segments = segments
        self._table = table
        self._documents = documents
        self._avg_tokens = avg_tokens
        self._total_tokens = total_tokens

    @property
    def num_chunks(self) -> int:
        return len(self._table["chunk_ids.npy"])

    @cached_property
    def rows(self) -> list[tuple[str, str, int]]:
        """``(chunk_id, document, start_offset)`` per row; a loaded index reads its document names only here."""
        documents = self._documents
        if isinstance(documents, Path):
            documents = [json.loads(line) for line in documents.read_text(encoding="utf-8").splitlines()]
        names = [documents[i] for i in self._table["row_documents.npy"].tolist()]
        return list(zip(self.chunk_ids(np.arange(self.num_chunks)), names,
                        self._table["start_offsets.npy"].tolist(), strict=True))

    def chunk_ids(self, rows: np.ndarray) -> list[str]:
        """The chunk ids of ``rows`` (global row numbers)."""
        if self.num_chunks <= DECODED_IDS:
            decoded: list[str] = self._decoded_ids[rows].tolist()  # an object array's gather, in C
            return decoded
        return [cid.decode("ascii") for cid in self._table["chunk_ids.npy"][rows].tolist()]

    @cached_property
    def _decoded_ids(self) -> np.ndarray:
        # Every id decoded once, held as an object array: a search at depth 1000 decodes each of SciFact's
        # 5,183 ids 58 times.
        return np.array([cid.decode("ascii") for cid in self._table["chunk_ids.npy"].tolist()], dtype=object)

    @classmethod
    def build(
        cls, chunks: Sequence[Chunk], *, k1: float, b: float, tokenizer: TokenizeParams | None = None,
        segment_rows: int = SEGMENT_ROWS,
    ) -> BM25Index:
        """Tokenize and index ``chunks`` in memory; their order is kept as the row order."""
        tokenizer = tokenizer or TokenizeParams()
        table = _RowTable()
        records = ((c.chunk_id, c.document, c.start_offset, c.text) for c in chunks)
        stats, counted = _count_all(records, table.add, tokenizer, segment_rows, spill=None, total=len(chunks))
        segments = [weigh_segment(counts, stats, k1=k1, b=b) for counts in counted]
        return cls(k1=k1, b=b, vocab=stats.vocab, table=table.arrays(), documents=table.documents,
                   segments=segments, avg_tokens=stats.avgdl, total_tokens=stats.total_tokens, tokenizer=tokenizer)

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every row for ``query`` (float32, zero where no token is shared).

        Summed in float32, one query token at a time in query order, exactly as bm25s does.
        """
        terms = query_terms(self, query)
        return np.concatenate([s.scores(terms) for s in self.segments] or [np.zeros(0, dtype=np.float32)])

    def search(self, query: str, depth: int) -> list[tuple[str, float]]:
        """Top ``depth`` chunks with a score above zero, as ``(chunk_id, score)``.

        Order: score descending, then row ascending, i.e. (document path,
        start_offset). The tie-break never depends on a sort's stability.
        """
        terms = query_terms(self, query)
        rows, values = merge_top([s.top(terms, depth) for s in self.segments], depth)
        return list(zip(self.chunk_ids(rows), values.tolist(), strict=True))

    def save(self, directory: str | Path) -> None:
        """Write the index atomically: arrays as .npy, everything else as JSON."""
        documents = self._documents
        with atomic_directory(directory) as tmp:
            if isinstance(documents, Path):
                shutil.copyfile(documents, tmp / "documents.jsonl")
            else:
                with (tmp / "documents.jsonl").open("w", encoding="utf-8", newline="\n") as sink:
                    sink.writelines(map(_document_line, documents))
            for number, segment in enumerate(self.segments):
                _write_segment(tmp, number, segment)
            spans = [(s.first_row, s.rows) for s in self.segments]
            manifest = _manifest(k1=self.k1, b=self.b, tokenizer=self.tokenizer, vocab_size=len(self.vocab),
                                 total_tokens=self._total_tokens, segments=spans)
            _write_rest(tmp, manifest, self.vocab, {name: np.asarray(a) for name, a in self._table.items()})

    @classmethod
    def load(cls, directory: str | Path) -> BM25Index:
        """Load an index written by :meth:`save`, verifying every file's SHA-256 first; arrays are memory-mapped."""
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
            if not path.is_file() or file_sha256(path) != digest:
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
        return cls(k1=float(manifest["k1"]), b=float(manifest["b"]), vocab=vocab, table=table,
                   documents=directory / "documents.jsonl", segments=segments,
                   avg_tokens=float(manifest["avg_chunk_tokens"]), total_tokens=int(manifest["total_tokens"]),
                   tokenizer=tokenizer)


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


def top_k(scores: np.ndarray, depth: int) -> list[tuple[int, float]]:
    """Rows with score > 0, best first, at most ``depth``; ties broken by row ascending.

    Selection is exact under ties: every row scoring above the cut-off value is
    kept, and rows equal to it are admitted in row order.
    """
    rows, values = _select(scores, depth)
    # tolist() turns float32 into the same Python floats float() would, in one call.
    return list(zip(rows.tolist(), values.tolist(), strict=True))


class IndexRanker:
    """The index stage's index, its queries searched by the engine (every query at once: a Ray cluster splits
    them by segment and batch)."""

    def __init__(self, index: BM25Index, engine: Engine) -> None:
        self.index, self.engine = index, engine

    def rank(self, queries: Sequence[tuple[str, str]], depth: int) -> Run:
        ranked = self.engine.search(self.index, [query for _, query in queries], depth)
        rankings: dict[str, list[tuple[str, float | None]]] = {
            query_id: list(ranking) for (query_id, _), ranking in zip(queries, ranked, strict=True)}
        return Run(rankings, [])


def ranker(kind: RetrieverKind, sources: Sources, params: Params, engine: Engine) -> IndexRanker:
    """The ``bm25`` kind: the index stage's index, which carries its own rows (the chunks are not read)."""
    return IndexRanker(load_for(params, sources.index_dir), engine)


def load_for(params: Params, directory: str | Path) -> BM25Index:
    """The index in ``directory``, refused unless it was built with the k1, b and tokenizer ``params`` hold.

    The retrieve stage reads params.yaml after the index stage did: an edit in between (or an index of
    another run) would rank with one setting while run.json reports the other.
    """
    index = BM25Index.load(directory)
    built = {"bm25.k1": index.k1, "bm25.b": index.b,
             **{f"tokenize.{key}": value for key, value in index.tokenizer.model_dump().items()}}
    # As the manifest and run.json record them: floats at FLOAT_DIGITS decimals.
    wanted = round_floats({"bm25.k1": params.bm25.k1, "bm25.b": params.bm25.b,
                           **{f"tokenize.{key}": value for key, value in params.tokenize.model_dump().items()}})
    for key, value in built.items():
        if value != wanted[key]:
            raise ParamsError(params.source, f"is {wanted[key]!r}, but the index in {directory} was built with "
                              f"{value!r}: params.yaml changed while the pipeline ran, or the index is another "
                              "run's; ranked with it, the run would be reported under a setting that did not make it",
                              key=key, fix=f"build the index again and go on: dvc repro -f -s {_STAGE} && dvc repro "
                                           "(with groundkit run: run it again)")
    return index
