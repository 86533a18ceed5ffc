"""Building a BM25 index in two passes over segments of rows (groundkit/retrieval/bm25/__init__.py tells the scheme).

1. :func:`count_segment` tokenizes one segment's texts into (row, term, tf) triples.
2. :func:`merge_stats` adds the segments' summaries into exact corpus statistics, and :func:`weigh_segment`
   turns each segment's triples into a :class:`~groundkit.retrieval.bm25.format.Segment`.

:func:`write_index` streams rows from an iterable, spilling each segment's triples to disk, and writes
through the format's one writer.
"""

from __future__ import annotations

import shutil
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain, count, islice, pairwise
from pathlib import Path
from typing import IO, Any

import numpy as np

from groundkit.artifacts.seals import Digest, file_sha256
from groundkit.config import TokenizeParams
from groundkit.console.progress import bar
from groundkit.corpus.tokenizing import Tokenizer, make_tokenizer
from groundkit.retrieval.bm25.format import (
    _BLOCK,
    SEGMENT_ROWS,
    IndexSummary,
    IndexWriter,
    Segment,
    _segment_folder,
)
from groundkit.retrieval.bm25.stats import GlobalStats


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
                  spill: Path | None = None, tokenize: Tokenizer | None = None) -> SegmentCounts:
    """Pass 1 over one segment: tokenize each text once and count its terms, block by block.

    Token strings live only while their block is processed. With ``spill`` (a folder that must not
    exist yet), the triples go to disk as they are made and the returned counts read them back.
    ``tokenize`` is the tokenizer ``tokenizer`` describes when the caller has it already (a run's store
    shares tokens between steps); it is made here otherwise.
    """
    tokenizer = tokenizer or TokenizeParams()
    tokenize = tokenize or _tokenizer_for(tokenizer)
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


def _count_all(records: Iterable[tuple[str, str, int, str]], add_rows: Callable[..., None], tokenizer: TokenizeParams,
               segment_rows: int, spill: Path | None, total: int | None, tokenize: Tokenizer | None = None
               ) -> tuple[GlobalStats, list[SegmentCounts]]:
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
            counts = count_segment(texts(segment_rows), tokenizer, first_row=first_row, spill=folder,
                                   tokenize=tokenize)
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


def write_index(records: Iterable[tuple[str, str, int, str]], directory: str | Path, *, k1: float, b: float,
                tokenizer: TokenizeParams | None = None, segment_rows: int = SEGMENT_ROWS,
                tokenize: Tokenizer | None = None, digest_of: Digest = file_sha256) -> IndexSummary:
    """Index ``(chunk_id, document, start_offset, text)`` records as they stream by, straight to disk.

    Each segment's counts are spilled to a folder inside the index's temporary directory and
    weighed once every segment has been counted; the folder is gone before the index is moved
    into place. The files are the same bytes as ``BM25Index.build(...).save(directory)``. ``tokenize`` and
    ``digest_of`` are as :func:`count_segment` and :class:`IndexWriter` take them.
    """
    tokenizer = tokenizer or TokenizeParams()
    with IndexWriter(directory, k1=k1, b=b, tokenizer=tokenizer, digest_of=digest_of) as writer:
        spill = writer.folder / ".spill"
        spill.mkdir()
        stats, counted = _count_all(records, writer.add_rows, tokenizer, segment_rows, spill, total=None,
                                    tokenize=tokenize)
        for counts in counted:
            writer.add_segment(weigh_segment(counts, stats, k1=k1, b=b))
        del counted
        shutil.rmtree(spill)
        return writer.finish(stats)
