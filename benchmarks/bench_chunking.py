"""Chunking SciFact with ``recursive`` against LangChain's RecursiveCharacterTextSplitter, side by side.

    python benchmarks/bench_chunking.py [SCIFACT_DIR] [--rounds 5]

The same 5,183 texts (title, blank line, text) at several sizes and overlaps. Four sides, interleaved in
every round so that load from other processes falls on all of them; each side's fastest round is kept:

* ``langchain split_text``: the library's texts, no offsets (the floor);
* ``langchain + start_index``: ``create_documents(add_start_index=True)``, LangChain locating its chunks;
* ``groundkit spans``: the ``recursive`` splitter's ``[start, end)`` spans (nothing is located: separators
  are kept, so a chunk is the span of its pieces);
* ``groundkit chunks``: ``chunk_documents`` as the chunk stage runs it: spans, chunk records and their
  content ids, every document sorted by path.

Before timing, every chunk of every text is checked equal to LangChain's. The target (issue 38): groundkit's
chunk stage work at most 2x LangChain's ``split_text`` on the same texts.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from _common import DEFAULT_SCIFACT, load_scifact, print_machine
from langchain_text_splitters import RecursiveCharacterTextSplitter

from groundkit.config import ChunkParams
from groundkit.corpus.chunking import chunk_documents
from groundkit.corpus.passage import Document

SETTINGS = ((200, 0), (400, 50), (800, 0), (1000, 200))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scifact", nargs="?", type=Path, default=DEFAULT_SCIFACT)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print_machine()
    doc_ids, texts, *_ = load_scifact(args.scifact)
    documents = [Document(path=f"{doc_id}.txt", text=text) for doc_id, text in zip(doc_ids, texts, strict=True)]
    print(f"{len(texts)} SciFact texts, {sum(map(len, texts)):,} characters, {args.rounds} interleaved rounds\n")
    print("| size | overlap | chunks | langchain split_text s | langchain + start_index s | groundkit spans s "
          "| groundkit chunks s | chunks / split_text (min, median, max of rounds) |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for size, overlap in SETTINGS:
        library = RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=overlap)
        params = ChunkParams(strategy="recursive", size=size, overlap=overlap)
        splitter = params.kind.build(params)
        chunks = chunk_documents(documents, params)
        expected = [chunk for text in texts for chunk in library.split_text(text)]
        by_path = {d.path: d.text for d in documents}
        ours = [c.text for c in chunks]
        ordered = [chunk for d in sorted(documents, key=lambda d: d.path) for chunk in library.split_text(d.text)]
        if ours != ordered or len(expected) != len(ours) or any(by_path[c.document][c.start:c.end] != c.text
                                                                 for c in chunks):
            raise SystemExit(f"size {size} overlap {overlap}: chunks differ from LangChain's")
        indexed = RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=overlap, add_start_index=True)
        sides = {
            "split_text": lambda library=library: [library.split_text(text) for text in texts],
            "start_index": lambda indexed=indexed: indexed.create_documents(texts),
            "spans": lambda splitter=splitter: [splitter.spans(text, "") for text in texts],
            "chunks": lambda params=params: chunk_documents(documents, params),
        }
        times: dict[str, list[float]] = {name: [] for name in sides}
        for _ in range(args.rounds):
            for name, side in sides.items():
                start = time.perf_counter()
                side()
                times[name].append(time.perf_counter() - start)
        ratios = [c / s for c, s in zip(times["chunks"], times["split_text"], strict=True)]
        best = {name: min(values) for name, values in times.items()}
        print(f"| {size} | {overlap} | {len(chunks):,} | {best['split_text']:.3f} | {best['start_index']:.3f} | "
              f"{best['spans']:.3f} | {best['chunks']:.3f} | {best['chunks'] / best['split_text']:.2f}x "
              f"({min(ratios):.2f}, {statistics.median(ratios):.2f}, {max(ratios):.2f}) |")


if __name__ == "__main__":
    main()
