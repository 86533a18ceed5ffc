"""The BM25 baseline: a Lucene-BM25 index over chunks.

groundkit owns the tokenizer, the vocabulary order, the on-disk format and
the ranking order, and computes the score matrix itself with numpy. The
matrix is bit-identical to bm25s 0.3.16 (``method="lucene"``,
``build_index_from_ids``), which a test checks. Doing it here, block by
block with numpy, keeps no per-token Python object alive (bm25s holds every
token id of the corpus as a Python int), so a million chunks index in a few
GB; BENCHMARKS.md has the figures.

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

On disk an index is plain arrays and JSON, loaded without pickle, with a
SHA-256 of every file in its manifest so a truncated or edited index is
detected before it is used. The manifest also records the tokenizer
configuration, so a loaded index tokenizes queries the way its chunks were.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from itertools import chain, count
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from groundkit._progress import bar
from groundkit.artifacts import atomic_directory, dumps_json, file_sha256
from groundkit.config import TokenizeParams
from groundkit.corpus.passage import Chunk
from groundkit.corpus.tokenizing import make_tokenizer
from groundkit.errors import ArtifactError

if TYPE_CHECKING:
    from groundkit.config import Params

# /2: the manifest records the tokenizer configuration (a mapping), not a fixed string.
FORMAT = "groundkit-bm25/2"
_ARRAYS = ("data", "indices", "indptr")
# Chunks tokenized per step of the build: large enough for numpy to dominate,
# small enough that one block's token strings stay in the tens of MB.
_BLOCK = 8192


def _count_terms(
    chunks: Sequence[Chunk], tokenize: Callable[[str], list[str]], desc: str
) -> tuple[list[str], np.ndarray, np.ndarray, list[_Block]]:
    """Tokenize every chunk once and count its terms, block by block.

    Returns the sorted vocabulary, the map from provisional term ids (order of
    first appearance) to sorted-vocabulary ids, each chunk's token count, and
    per block of chunks one entry per distinct (chunk, term) pair: row,
    provisional term id, term frequency, ordered by row. Token strings live
    only while their block is processed.
    """
    first_seen: defaultdict[str, int] = defaultdict(count().__next__)  # assigns ids in C, in order of appearance
    lookup = first_seen.__getitem__
    lengths = np.zeros(len(chunks), dtype=np.int64)
    blocks: list[_Block] = []
    with bar(total=len(chunks), desc=desc, unit="chunk") as progress:
        for start in range(0, len(chunks), _BLOCK):
            tokens = [tokenize(chunk.text) for chunk in chunks[start : start + _BLOCK]]
            counts = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
            lengths[start : start + len(tokens)] = counts
            ids = np.fromiter(map(lookup, chain.from_iterable(tokens)), dtype=np.int64, count=int(counts.sum()))
            del tokens
            owner = np.repeat(np.arange(start, start + len(counts), dtype=np.int64), counts)
            # One sort per block finds each chunk's distinct terms and their counts.
            pairs, tf = np.unique((owner << 32) | ids, return_counts=True)
            blocks.append(_Block((pairs >> 32).astype(np.int32), (pairs & 0xFFFFFFFF).astype(np.int32),
                                 tf.astype(np.int32)))
            progress.update(len(counts))
    vocab = sorted(first_seen)
    final = np.empty(len(vocab), dtype=np.int32)
    final[np.fromiter(map(lookup, vocab), dtype=np.int64, count=len(vocab))] = np.arange(len(vocab), dtype=np.int32)
    return vocab, final, lengths, blocks


class _Block(NamedTuple):
    rows: np.ndarray
    terms: np.ndarray
    tfs: np.ndarray


def _lucene_idf(df: np.ndarray, n_docs: int) -> np.ndarray:
    """float32 idf per term, through ``math.log`` as bm25s does (numpy's log may differ in the last bit)."""
    values, inverse = np.unique(df, return_inverse=True)
    idf = np.array([math.log(1 + (n_docs - int(d) + 0.5) / (int(d) + 0.5)) for d in values], dtype=np.float64)
    return idf.astype(np.float32)[inverse]


def _score_matrix(
    lengths: np.ndarray, final: np.ndarray, blocks: list[_Block], k1: float, b: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (chunk x term) weight matrix in CSC form: per term, its rows ascending.

    A counting sort by term, one block at a time: blocks come in row order, so
    appending each block's entries at its terms' write heads keeps every
    term's rows ascending. Each block is freed once placed, so the peak is
    about the finished matrix plus the block counts, with no global sort.
    """
    vocab_size = len(final)
    df = np.zeros(vocab_size, dtype=np.int64)
    for block in blocks:
        df += np.bincount(block.terms, minlength=vocab_size)
    df[final] = df.copy()  # provisional -> sorted-vocabulary order
    idf = _lucene_idf(df, len(lengths))
    avgdl = lengths.mean()  # the same float64 mean bm25s takes
    # Same operations, in the same order and precision, as bm25s's _score_tfc_robertson.
    norm = k1 * ((1 - b) + b * lengths.astype(np.float64) / avgdl)
    indptr = np.zeros(vocab_size + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    del df
    heads = indptr[:-1].copy()
    data = np.empty(int(indptr[-1]), dtype=np.float32)
    indices = np.empty(int(indptr[-1]), dtype=np.int32)
    while blocks:
        rows, provisional, tfs = blocks.pop(0)
        terms = final[provisional]
        order = np.argsort((terms.astype(np.int64) << 32) | rows)  # keys are distinct: no tie to break
        rows, terms, tfs = rows[order], terms[order], tfs[order]
        tf = tfs.astype(np.float64)
        weight = idf[terms].astype(np.float64) * (tf / (norm[rows] + tf))
        first = np.flatnonzero(np.concatenate(([True], terms[1:] != terms[:-1])))
        sizes = np.diff(np.append(first, len(terms)))
        position = heads[terms] + (np.arange(len(terms)) - np.repeat(first, sizes))
        data[position] = weight
        indices[position] = rows
        heads[terms[first]] += sizes
    return data, indices, indptr


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
        rows: list[tuple[str, str, int]],
        data: np.ndarray,
        indices: np.ndarray,
        indptr: np.ndarray,
        avg_tokens: float,
        tokenizer: TokenizeParams | None = None,
    ) -> None:
        self.tokenizer = tokenizer or TokenizeParams()
        self._tokenize = make_tokenizer(self.tokenizer)
        self.k1 = k1
        self.b = b
        self.vocab = vocab
        self.rows = rows
        self._token_ids = dict(zip(vocab, range(len(vocab)), strict=True))
        self._chunk_ids = np.array([row[0] for row in rows], dtype=object)  # row -> chunk id, gathered in C
        self._avg_tokens = avg_tokens
        self._data = data
        self._indices = indices
        self._indptr = indptr

    @property
    def num_chunks(self) -> int:
        return len(self.rows)

    @classmethod
    def build(
        cls, chunks: Sequence[Chunk], *, k1: float, b: float, tokenizer: TokenizeParams | None = None
    ) -> BM25Index:
        """Tokenize and index ``chunks``; their order is kept as the row order."""
        tokenizer = tokenizer or TokenizeParams()
        vocab, final, lengths, blocks = _count_terms(chunks, make_tokenizer(tokenizer), desc="index")
        if vocab:
            data, indices, indptr = _score_matrix(lengths, final, blocks, k1, b)
        else:
            data = np.zeros(0, dtype=np.float32)
            indices = np.zeros(0, dtype=np.int32)
            indptr = np.zeros(1, dtype=np.int64)
        return cls(
            k1=k1,
            b=b,
            vocab=vocab,
            rows=[(c.chunk_id, c.document, c.start_offset) for c in chunks],
            data=data,
            indices=indices,
            indptr=indptr,
            avg_tokens=int(lengths.sum()) / len(chunks) if len(chunks) else 0.0,
            tokenizer=tokenizer,
        )

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every row for ``query`` (float32, zero where no token is shared).

        Summed in float32 with ``np.add.at``, one query token at a time in
        query order, exactly as bm25s does.
        """
        scores = np.zeros(self.num_chunks, dtype=np.float32)
        indptr, indices, data = self._indptr, self._indices, self._data
        for token in self._tokenize(query):
            term = self._token_ids.get(token)
            if term is not None:
                start, end = int(indptr[term]), int(indptr[term + 1])
                np.add.at(scores, indices[start:end], data[start:end])
        return scores

    def search(self, query: str, depth: int) -> list[tuple[str, float]]:
        """Top ``depth`` chunks with a score above zero, as ``(chunk_id, score)``.

        Order: score descending, then row ascending, i.e. (document path,
        start_offset). The tie-break never depends on a sort's stability.
        """
        rows, values = _select(self.scores(query), depth)
        return list(zip(self._chunk_ids[rows].tolist(), values.tolist(), strict=True))

    def save(self, directory: str | Path) -> None:
        """Write the index atomically: arrays as .npy, everything else as JSON."""
        arrays = {"data": self._data, "indices": self._indices, "indptr": self._indptr}
        with atomic_directory(directory) as tmp:
            for name, array in arrays.items():
                np.save(tmp / f"{name}.npy", array, allow_pickle=False)
            (tmp / "vocab.json").write_text(json.dumps(self.vocab, ensure_ascii=False) + "\n", encoding="utf-8")
            (tmp / "rows.json").write_text(
                json.dumps([list(row) for row in self.rows], ensure_ascii=False) + "\n", encoding="utf-8"
            )
            files = {p.name: file_sha256(p) for p in sorted(tmp.iterdir())}
            manifest = {
                "format": FORMAT,
                "k1": self.k1,
                "b": self.b,
                "method": "lucene",
                "tokenizer": self.tokenizer.describe(),
                "num_chunks": self.num_chunks,
                "vocab_size": len(self.vocab),
                "avg_chunk_tokens": self._avg_tokens,
                "files": files,
            }
            (tmp / "manifest.json").write_text(dumps_json(manifest), encoding="utf-8")

    @classmethod
    def load(cls, directory: str | Path) -> BM25Index:
        """Load an index written by :meth:`save`, verifying every file's SHA-256 first."""
        directory = Path(directory)
        fix = "delete it and re-run the index stage (dvc repro -f -s index)"
        manifest_path = directory / "manifest.json"
        if not manifest_path.is_file():
            raise ArtifactError(directory, "is not a groundkit index (manifest.json missing)", fix=fix)
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
            files = dict(manifest["files"])
            if manifest["format"] != FORMAT:
                raise ArtifactError(manifest_path, f"unsupported index format {manifest['format']!r}", fix=fix)
            recorded = dict(manifest["tokenizer"])
            if recorded.pop("pattern", None) != TokenizeParams().describe()["pattern"]:
                raise ValueError("unknown tokenizer pattern")
            tokenizer = TokenizeParams.model_validate(recorded)
        except (ValueError, KeyError, TypeError):
            raise ArtifactError(manifest_path, "is not a valid index manifest (truncated or edited)", fix=fix) from None
        expected = {f"{name}.npy" for name in _ARRAYS} | {"vocab.json", "rows.json"}
        if set(files) != expected:
            raise ArtifactError(manifest_path, f"lists files {sorted(files)}, expected {sorted(expected)}", fix=fix)
        for name, digest in sorted(files.items()):
            path = directory / name
            if not path.is_file() or file_sha256(path) != digest:
                raise ArtifactError(
                    path, "does not match the SHA-256 recorded in manifest.json: truncated or edited", fix=fix
                )
        try:
            # allow_pickle=False: an index is data, never code, even when its manifest was forged to match.
            arrays = {name: np.load(directory / f"{name}.npy", allow_pickle=False) for name in _ARRAYS}
            vocab = json.loads((directory / "vocab.json").read_text(encoding="utf-8"))
            rows = [(str(r[0]), str(r[1]), int(r[2]))
                    for r in json.loads((directory / "rows.json").read_text(encoding="utf-8"))]
        except (ValueError, TypeError, IndexError, KeyError, UnicodeDecodeError) as exc:
            raise ArtifactError(directory, f"holds a file that is not a groundkit index array or table ({exc})",
                                fix=fix) from None
        if len(rows) != manifest["num_chunks"] or len(vocab) != manifest["vocab_size"]:
            raise ArtifactError(manifest_path, "row or vocabulary count disagrees with the files", fix=fix)
        return cls(
            k1=float(manifest["k1"]),
            b=float(manifest["b"]),
            vocab=vocab,
            rows=rows,
            data=arrays["data"],
            indices=arrays["indices"],
            indptr=arrays["indptr"],
            avg_tokens=float(manifest["avg_chunk_tokens"]),
            tokenizer=tokenizer,
        )


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
    order = np.lexsort((candidates, -values))
    return candidates[order], values[order]


def top_k(scores: np.ndarray, depth: int) -> list[tuple[int, float]]:
    """Rows with score > 0, best first, at most ``depth``; ties broken by row ascending.

    Selection is exact under ties: every row scoring above the cut-off value is
    kept, and rows equal to it are admitted in row order.
    """
    rows, values = _select(scores, depth)
    # tolist() turns float32 into the same Python floats float() would, in one call.
    return list(zip(rows.tolist(), values.tolist(), strict=True))


def build(params: Params, chunks: Sequence[Chunk], index_dir: Path, embeddings_dir: Path) -> BM25Index:
    """The index stage's index; it carries its own rows, so ``chunks`` is not needed."""
    return BM25Index.load(index_dir)
