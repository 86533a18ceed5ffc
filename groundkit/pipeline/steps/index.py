"""Step index: build the BM25 index over the chunks."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from groundkit.artifacts import read_models
from groundkit.config import ExecutionParams, TokenizeParams
from groundkit.corpus.passage import Chunk
from groundkit.execution import open_engine
from groundkit.pipeline.stages import CHUNKS, written_by
from groundkit.retrieval.bm25 import BM25Index

if TYPE_CHECKING:
    from groundkit.config import BM25Params, Params



def run(chunks: Path, params: BM25Params, out_index: Path, *, tokenizer: TokenizeParams | None = None,
        execution: ExecutionParams | None = None) -> BM25Index:
    """Build and save the BM25 index on the engine ``execution`` names; the manifest records the tokenizer."""

    with open_engine(execution or ExecutionParams()) as engine:
        built = engine.build_index(read_models(chunks, Chunk, producer=written_by(CHUNKS)), params,
                                   tokenizer or TokenizeParams())
    built.save(out_index)
    return built


def summary(built: BM25Index, params: Params) -> str:
    """What the stage did, in a line."""
    return f"index: {built.num_chunks} chunks, {len(built.vocab)} terms"
