"""Scale: index build time, retrieval throughput and peak RSS at 10k, 100k and 1M chunks.

The corpus is synthetic: chunks of 80 to 120 words (100 on average) drawn from
a Zipf distribution (p(rank) proportional to 1 / rank**1.05) over 2**21
distinct words, the most frequent words being the shortest, as in natural
language. Queries are 3 to 10 words from the same distribution. Each size is
measured in its own subprocess, so its peak RSS (ru_maxrss) is its own; the
smaller corpora are prefixes of the largest.

    python benchmarks/bench_scale.py [--sizes 10000,100000,1000000] [--workdir DIR]

The corpus (about 500 MB) is generated once into --workdir and reused.

Per size it prints: chunks, tokens, vocabulary, build seconds (wall clock
and CPU time of the child; on a shared machine the second is the steadier),
CPU microseconds per chunk, that cost relative to the smallest size (1.00 =
linear), queries per second at depth 100, RSS with the chunks loaded, and
peak RSS of the whole child.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import current_rss_mib, peak_rss_mib, print_machine

VOCAB = 2**21
EXPONENT = 1.05
SEED = 20261202
N_QUERIES = 200
DEPTH = 100


def _word(rank: int) -> str:
    """Bijective base-26: 0 -> a, 25 -> z, 26 -> aa; frequent ranks get short words."""
    letters = []
    rank += 1
    while rank:
        rank, digit = divmod(rank - 1, 26)
        letters.append(chr(97 + digit))
    return "".join(reversed(letters))


def generate(path: Path, queries_path: Path, n_chunks: int) -> None:
    """Write ``n_chunks`` synthetic chunks, one per line, and the queries (deterministic)."""
    import numpy as np

    rng = np.random.default_rng(SEED)
    weights = 1.0 / np.arange(1, VOCAB + 1, dtype=np.float64) ** EXPONENT
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    words = [_word(r) for r in range(VOCAB)]

    def draw(count: int) -> list[int]:
        return np.minimum(np.searchsorted(cdf, rng.random(count)), VOCAB - 1).tolist()

    tmp = path.with_suffix(".tmp")
    with tmp.open("w", encoding="ascii") as out:
        block = 10_000
        for start in range(0, n_chunks, block):
            lengths = rng.integers(80, 121, size=min(block, n_chunks - start)).tolist()
            ids = draw(sum(lengths))
            position = 0
            lines = []
            for length in lengths:
                lines.append(" ".join(map(words.__getitem__, ids[position : position + length])))
                position += length
            out.write("\n".join(lines) + "\n")
    tmp.replace(path)
    lengths = rng.integers(3, 11, size=N_QUERIES).tolist()
    queries = [" ".join(map(words.__getitem__, draw(n))) for n in lengths]
    queries_path.write_text("".join(q + "\n" for q in queries), encoding="ascii")


def child(corpus: Path, queries_path: Path, n_chunks: int) -> None:
    """Measure one size in this (fresh) process and print one JSON line."""
    from groundkit.corpus.passage import Chunk
    from groundkit.retrieval.bm25 import BM25Index

    chunks = []
    with corpus.open(encoding="ascii") as handle:
        for i, line in enumerate(handle):
            if i == n_chunks:
                break
            text = line.rstrip("\n")
            chunks.append(Chunk(document=f"synthetic/{i:08d}.txt", start_offset=0, end_offset=len(text), text=text))
    if len(chunks) != n_chunks:
        sys.exit(f"error: {corpus} holds only {len(chunks)} chunks")
    queries = queries_path.read_text(encoding="ascii").splitlines()
    rss_corpus = current_rss_mib()

    start, cpu = time.perf_counter(), time.process_time()
    index = BM25Index.build(chunks, k1=1.2, b=0.75)
    build_s, build_cpu_s = time.perf_counter() - start, time.process_time() - cpu
    rss_index = current_rss_mib()

    start = time.perf_counter()
    hits = sum(len(index.search(q, DEPTH)) for q in queries)
    search_s = time.perf_counter() - start
    print(json.dumps({
        "chunks": n_chunks,
        "avg_tokens": index._avg_tokens,
        "vocab": len(index.vocab),
        # groundkit before this benchmark kept its arrays inside a bm25s engine.
        "nnz": int(index._indptr[-1] if hasattr(index, "_indptr") else index._engine.scores["indptr"][-1]),
        "build_s": build_s,
        "build_cpu_s": build_cpu_s,
        "qps": len(queries) / search_s,
        "hits": hits,
        "rss_corpus_mib": rss_corpus,
        "rss_index_mib": rss_index,
        "peak_rss_mib": peak_rss_mib(),
    }))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--workdir", default="/tmp/groundkit-bench-scale")
    parser.add_argument("--generate", type=int, default=1_000_000,
                        help="chunks in the generated corpus (and so which queries); sizes are prefixes of it")
    parser.add_argument("--child", nargs=3, metavar=("CORPUS", "QUERIES", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(Path(args.child[0]), Path(args.child[1]), int(args.child[2]))
        return

    sizes = [int(s) for s in args.sizes.split(",")]
    if max(sizes) > args.generate:
        sys.exit(f"error: --sizes up to {max(sizes)} need --generate {max(sizes)} or more")
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    corpus = workdir / f"zipf-{EXPONENT}-{VOCAB}-{SEED}-{args.generate}.txt"
    queries = workdir / f"queries-{EXPONENT}-{VOCAB}-{SEED}-{args.generate}.txt"
    print_machine()
    if not corpus.is_file() or not queries.is_file():
        start = time.perf_counter()
        generate(corpus, queries, args.generate)
        print(f"generated {args.generate} chunks in {time.perf_counter() - start:.0f} s: {corpus}", file=sys.stderr)

    results = []
    for size in sizes:
        out = subprocess.run(
            [sys.executable, __file__, "--child", str(corpus), str(queries), str(size)],
            capture_output=True, text=True, check=False,
        )
        if out.returncode != 0:
            sys.exit(f"error: child for {size} chunks failed ({out.returncode}):\n{out.stderr}")
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(f"measured {size} chunks", file=sys.stderr)

    base = results[0]["build_cpu_s"] / results[0]["chunks"]
    print()
    print("| chunks | avg tokens | vocabulary | postings | build s (wall) | build s (CPU) | CPU µs/chunk | x linear "
          "| queries/s (depth 100) | RSS with chunks loaded | peak RSS |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in results:
        per_chunk = r["build_cpu_s"] / r["chunks"]
        print(f"| {r['chunks']:,} | {r['avg_tokens']:.1f} | {r['vocab']:,} | {r['nnz']:,} | {r['build_s']:.1f} "
              f"| {r['build_cpu_s']:.1f} "
              f"| {per_chunk * 1e6:.1f} | {per_chunk / base:.2f} | {r['qps']:.0f} "
              f"| {r['rss_corpus_mib']:,.0f} MiB | {r['peak_rss_mib']:,.0f} MiB |")


if __name__ == "__main__":
    main()
