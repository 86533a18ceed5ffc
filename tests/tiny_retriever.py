"""A retriever of the user's own, for the python:MODULE:FACTORY tests.

It scores a chunk by how many times ``options["word"]`` occurs in it and
returns the chunks that contain it. ``options["misbehave"]`` makes it break the
contract in one named way.
"""

from __future__ import annotations

import math
import sys

import numpy as np


class WordCount:
    def __init__(self, chunks, options):
        self.chunks = chunks
        self.word = options.get("word", "snapshot")
        self.misbehave = options.get("misbehave", "")

    def search(self, query, depth):
        if self.misbehave == "raises":
            raise KeyError("index not built")
        if self.misbehave == "not a list":
            return 42
        if self.misbehave in ODD_RESULTS:
            return ODD_RESULTS[self.misbehave](self.chunks[0].chunk_id)
        hits = [(c.chunk_id, float(c.text.lower().count(self.word))) for c in self.chunks]
        hits = [h for h in hits if h[1] > 0]
        # Deliberately worst-first: groundkit must impose its own order.
        hits.sort(key=lambda h: h[1])
        hits = hits[: depth - 1] if self.misbehave else hits[:depth]
        if self.misbehave == "unknown id":
            hits.append(("0123456789abcdef", 1.0))
        elif self.misbehave == "duplicate":
            hits.append(hits[0])
        elif self.misbehave == "nan":
            hits[0] = (hits[0][0], math.nan)
        elif self.misbehave == "too many":
            hits = [(c.chunk_id, 1.0) for c in self.chunks][: depth + 1]
        elif self.misbehave == "not pairs":
            hits = [h[0] for h in hits]
        return hits


def make(chunks, options):
    return WordCount(chunks, options)


def no_search(chunks, options):
    return object()


def broken_factory(chunks, options):
    raise ValueError("no GPU here")


class _Unshowable:
    def __repr__(self):
        sys.exit(0)


class _ExitingPair(tuple):
    def __len__(self):
        sys.exit(0)


class _BadFloat(int):
    def __float__(self):
        raise ArithmeticError("no float today")


def _raises_midway(chunk_id):
    yield (chunk_id, 1.0)
    raise ValueError("index went away")


def _exits_midway(chunk_id):
    yield (chunk_id, 1.0)
    sys.exit(0)


def _interrupted(chunk_id):
    raise KeyboardInterrupt


def _endless(chunk_id):
    while True:
        yield (chunk_id, 1.0)


def _exits_on_close(chunk_id):
    try:
        while True:
            yield (chunk_id, 1.0)
    finally:
        sys.exit(0)


# misbehave: results built from the first chunk's id, each outside the contract in one way.
ODD_RESULTS = {
    "exits": lambda chunk_id: sys.exit(0),
    "exits None": lambda chunk_id: sys.exit(),
    "raises midway": _raises_midway,
    "exits midway": _exits_midway,
    "endless": _endless,
    "exits on close": _exits_on_close,
    "a dict": lambda chunk_id: {chunk_id: 1.0},
    "list id": lambda chunk_id: [([chunk_id], 1.0)],
    "int id": lambda chunk_id: [(7, 1.0)],
    "huge score": lambda chunk_id: [(chunk_id, 10**400)],
    "array score": lambda chunk_id: [(chunk_id, np.array([1.0]))],
    "unshowable": lambda chunk_id: [_Unshowable()],
    "len exits": lambda chunk_id: [_ExitingPair((chunk_id, 1.0))],
    "float raises": lambda chunk_id: [(chunk_id, _BadFloat(1))],
    "numpy ids": lambda chunk_id: [(np.str_(chunk_id), np.float32(2.0))],
    "interrupted": _interrupted,
}


def exiting_factory(chunks, options):
    sys.exit(0)


def editing_factory(chunks, options):
    options["nested"]["k"] = 2
    return WordCount(chunks, options)
