"""A retriever of the user's own, for the python:MODULE:FACTORY tests.

It scores a chunk by how many times ``options["word"]`` occurs in it and
returns the chunks that contain it. ``options["misbehave"]`` makes it break the
contract in one named way.
"""

from __future__ import annotations

import math


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
