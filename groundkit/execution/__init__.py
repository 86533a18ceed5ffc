"""Where the heavy steps run: in the stage's own process, or on a Ray cluster.

Both implement the port retrieval declares (groundkit/retrieval/ports.py's ``Engine``), re-exported here.

``execution.engine`` in params.yaml picks an engine for the three steps whose cost grows with the
corpus: building the BM25 index, embedding the chunks, and searching the index. Both engines call
the same functions of groundkit/retrieval/bm25.py and groundkit/retrieval/dense.py over the same
pieces (the index's segments, the embedder's batches), so the files they write are the same bytes;
tests/execution/ holds them to it. What stays on the driver (reading the inputs, merging the
segments' statistics, writing every file, scoring) is the same code in both.

An engine is a context manager: ``with open_engine(params.execution) as engine: engine.write_index(...)``.
The local engine needs nothing; the Ray engine connects on entry and disconnects on exit. Ray is
imported by groundkit/execution/ray.py only when that engine is opened, so the default pipeline
never imports it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from groundkit.artifacts.seals import Digest, file_sha256
from groundkit.retrieval.ports import Engine

if TYPE_CHECKING:
    import numpy as np

    from groundkit.config import BM25Params, ExecutionParams, TokenizeParams
    from groundkit.corpus.tokenizing import Tokenizer
    from groundkit.retrieval.bm25.format import IndexSummary
    from groundkit.retrieval.ports import Encoder, Ranking, SegmentedIndex

__all__ = ["Engine", "described", "lazy_engine", "open_engine"]


def described(execution: ExecutionParams) -> str:
    """The engine ``execution`` names, in words: how the index stage and ``groundkit run`` say which one ran."""
    if execution.engine == "local":
        return "local engine"
    return f"ray engine ({f'address {execution.address}' if execution.address else 'a Ray started for each stage'})"


def open_engine(execution: ExecutionParams) -> AbstractContextManager[Engine]:
    """The engine ``execution`` names, as a context manager that connects and disconnects it."""
    if execution.engine == "ray":
        from groundkit.execution.ray import RayEngine  # imports ray only once the engine is opened

        return RayEngine(execution.address, source=execution.source)
    from groundkit.execution.local import LocalEngine

    return LocalEngine()


class _Lazy:
    """An engine opened on first use: a retriever that never hands work to the engine never connects to Ray."""

    def __init__(self, execution: ExecutionParams) -> None:
        self._execution = execution
        self._stack: ExitStack | None = None
        self._engine: Engine | None = None

    def _opened(self) -> Engine:
        if self._engine is None:
            self._stack = ExitStack()
            self._engine = self._stack.enter_context(open_engine(self._execution))
        return self._engine

    @property
    def name(self) -> str:
        return self._execution.engine

    def write_index(self, records: Iterable[tuple[str, str, int, str]], directory: Path, bm25: BM25Params,
                    tokenizer: TokenizeParams, *, tokenize: Tokenizer | None = None,
                    digest_of: Digest = file_sha256) -> IndexSummary:
        return self._opened().write_index(records, directory, bm25, tokenizer, tokenize=tokenize, digest_of=digest_of)

    def search(self, index: SegmentedIndex, queries: Sequence[str], depth: int) -> list[Ranking]:
        return self._opened().search(index, queries, depth)

    def embed(self, encoder: Encoder, texts: Sequence[str]) -> np.ndarray:
        return self._opened().embed(encoder, texts)

    def close(self, error: BaseException | None = None) -> None:
        """Close the engine if it was opened, handing it ``error`` so that it can say what the error means.

        The Ray engine turns a node lost under a step into an :class:`~groundkit.errors.EngineError`; an exit
        that hid the error from it would let Ray's own exception reach the user as an internal error.
        """
        if self._stack is None:
            return
        stack, self._stack = self._stack, None
        if error is None:
            stack.close()
        else:  # an engine never swallows the error: the caller raises it again when this returns
            stack.__exit__(type(error), error, error.__traceback__)


@contextmanager
def lazy_engine(execution: ExecutionParams) -> Iterator[Engine]:
    """The engine ``execution`` names, opened only when a step first hands it work, and closed on exit."""
    engine = _Lazy(execution)
    try:
        yield engine
    except BaseException as error:
        engine.close(error)
        raise
    engine.close()
