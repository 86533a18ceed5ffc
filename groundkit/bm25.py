"""The BM25 baseline: a Lucene-BM25 index over chunks, scored by bm25s.

groundkit owns the tokenizer, the vocabulary order, the on-disk format and
the ranking order; bm25s computes the score matrix and the per-query sums.

Lucene BM25 (Kamphuis et al., ECIR 2020, "Lucene" variant):

    idf(t)      = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    score(q, d) = sum over query tokens t of
                  idf(t) * tf(t, d) / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl))

A repeated query token counts once per occurrence. Every term of a matching
chunk contributes a positive amount, so a chunk scores above zero exactly
when it shares a token with the query.

On disk an index is plain arrays and JSON, loaded without pickle, with a
SHA-256 of every file in its manifest so a truncated or edited index is
detected before it is used. The manifest also records the tokenizer
configuration, so a loaded index tokenizes queries the way its chunks were.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from groundkit.artifacts import atomic_directory, dumps_json
from groundkit.contracts import Chunk
from groundkit.errors import ArtifactError
from groundkit.tokenizing import TokenizeParams, make_tokenizer

# /2: the manifest records the tokenizer configuration (a mapping), not a fixed string.
FORMAT = "groundkit-bm25/2"
_ARRAYS = ("data", "indices", "indptr")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _bm25s():
    import bm25s  # imported lazily: only index and retrieve need it

    return bm25s


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
        self.k1 = k1
        self.b = b
        self.tokenizer = tokenizer or TokenizeParams()
        self._tokenize = make_tokenizer(self.tokenizer)
        self.vocab = vocab
        self.rows = rows
        self._token_ids = {token: i for i, token in enumerate(vocab)}
        self._avg_tokens = avg_tokens
        engine = _bm25s().BM25(k1=k1, b=b, method="lucene")
        engine.scores = {"data": data, "indices": indices, "indptr": indptr, "num_docs": len(rows)}
        engine.vocab_dict = self._token_ids
        engine.nonoccurrence_array = None  # only BM25L/BM25+ use it
        self._engine = engine

    @property
    def num_chunks(self) -> int:
        return len(self.rows)

    @classmethod
    def build(
        cls, chunks: Sequence[Chunk], *, k1: float, b: float, tokenizer: TokenizeParams | None = None
    ) -> BM25Index:
        """Tokenize and index ``chunks``; their order is kept as the row order."""
        tokenizer = tokenizer or TokenizeParams()
        tokenize = make_tokenizer(tokenizer)
        tokens = [tokenize(chunk.text) for chunk in chunks]
        vocab = sorted({token for chunk_tokens in tokens for token in chunk_tokens})
        token_ids = {token: i for i, token in enumerate(vocab)}
        corpus_ids = [[token_ids[t] for t in chunk_tokens] for chunk_tokens in tokens]
        engine = _bm25s().BM25(k1=k1, b=b, method="lucene")
        if vocab:
            scores = engine.build_index_from_ids(
                unique_token_ids=list(range(len(vocab))), corpus_token_ids=corpus_ids, show_progress=False
            )
            data, indices, indptr = scores["data"], scores["indices"], scores["indptr"]
        else:
            data = np.zeros(0, dtype=np.float32)
            indices = np.zeros(0, dtype=np.int32)
            indptr = np.zeros(1, dtype=np.int64)
        total = sum(len(t) for t in tokens)
        return cls(
            k1=k1,
            b=b,
            vocab=vocab,
            rows=[(c.chunk_id, c.document, c.start_offset) for c in chunks],
            data=np.ascontiguousarray(data, dtype=np.float32),
            indices=np.ascontiguousarray(indices, dtype=np.int32),
            indptr=np.ascontiguousarray(indptr, dtype=np.int64),
            avg_tokens=total / len(chunks) if chunks else 0.0,
            tokenizer=tokenizer,
        )

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every row for ``query`` (float32, zero where no token is shared)."""
        ids = [self._token_ids[t] for t in self._tokenize(query) if t in self._token_ids]
        if not ids:
            return np.zeros(self.num_chunks, dtype=np.float32)
        return np.asarray(self._engine.get_scores_from_ids(ids), dtype=np.float32)

    def search(self, query: str, depth: int) -> list[tuple[str, float]]:
        """Top ``depth`` chunks with a score above zero, as ``(chunk_id, score)``.

        Order: score descending, then row ascending, i.e. (document path,
        start_offset). The tie-break never depends on a sort's stability.
        """
        return [(self.rows[row][0], score) for row, score in top_k(self.scores(query), depth)]

    def save(self, directory: str | Path) -> None:
        """Write the index atomically: arrays as .npy, everything else as JSON."""
        arrays = {"data": self._engine.scores["data"], "indices": self._engine.scores["indices"],
                  "indptr": self._engine.scores["indptr"]}
        with atomic_directory(directory) as tmp:
            for name, array in arrays.items():
                np.save(tmp / f"{name}.npy", array, allow_pickle=False)
            (tmp / "vocab.json").write_text(json.dumps(self.vocab, ensure_ascii=False) + "\n", encoding="utf-8")
            (tmp / "rows.json").write_text(
                json.dumps([list(row) for row in self.rows], ensure_ascii=False) + "\n", encoding="utf-8"
            )
            files = {p.name: _sha256(p) for p in sorted(tmp.iterdir())}
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
            if not path.is_file() or _sha256(path) != digest:
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


def top_k(scores: np.ndarray, depth: int) -> list[tuple[int, float]]:
    """Rows with score > 0, best first, at most ``depth``; ties broken by row ascending.

    Selection is exact under ties: every row scoring above the cut-off value is
    kept, and rows equal to it are admitted in row order.
    """
    candidates = np.flatnonzero(scores > 0)
    if candidates.size > depth:
        values = scores[candidates]
        cutoff = np.partition(values, candidates.size - depth)[candidates.size - depth]
        above = candidates[values > cutoff]
        tied = candidates[values == cutoff][: depth - above.size]
        candidates = np.concatenate([above, tied])
    order = np.lexsort((candidates, -scores[candidates].astype(np.float64)))
    chosen = candidates[order]
    return [(int(row), float(scores[row])) for row in chosen]
