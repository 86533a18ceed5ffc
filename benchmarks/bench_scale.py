"""Scale: index build time, query time, peak RSS and disk size from 10k to 10M chunks.

The corpus is synthetic: chunks of 80 to 120 words (100 on average) drawn from
a Zipf distribution (p(rank) proportional to 1 / rank**1.05) over 2**21
distinct words, the most frequent words being the shortest, as in natural
language. Queries are 3 to 10 words from the same distribution. The smaller
corpora are prefixes of the largest.

    python benchmarks/bench_scale.py [--sizes 10000,100000,1000000] [--generate N] [--workdir DIR]

The corpus (about 560 bytes a chunk: 5.6 GB for 10M) is generated once into
--workdir with numpy, block by block, and reused; so are the queries.

Each size is measured in two fresh subprocesses, so that each peak RSS
(ru_maxrss) is its own:

- build: ``bm25.write_index`` over the corpus file read line by line (the
  chunks are never held together, as in the index stage), written to disk;
- search: ``BM25Index.load`` (verifies every file's SHA-256, then
  memory-maps the arrays) and the queries at depth 100.

Per size it prints: chunks, tokens, vocabulary, postings, build seconds (wall
clock and CPU time of the child; on a shared machine the second is the
steadier), CPU microseconds per chunk relative to the smallest size (1.00 =
linear), build peak RSS, index size on disk, load seconds, query seconds for
all queries (wall and CPU) and per query, and search peak RSS with its
file-backed share (pages of the memory-mapped index, which the kernel can drop).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from itertools import islice
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import print_machine

VOCAB = 2**21
EXPONENT = 1.05
SEED = 20261202
N_QUERIES = 1000
DEPTH = 100
# Chunks drawn per step of the generator: fixed, because it fixes the order of the random draws.
GENERATE_BLOCK = 10_000


def _word(rank: int) -> str:
    """Bijective base-26: 0 -> a, 25 -> z, 26 -> aa; frequent ranks get short words."""
    letters = []
    rank += 1
    while rank:
        rank, digit = divmod(rank - 1, 26)
        letters.append(chr(97 + digit))
    return "".join(reversed(letters))


def generate(path: Path, queries_path: Path, n_chunks: int) -> None:
    """Write ``n_chunks`` synthetic chunks, one per line, and the queries (deterministic).

    Lines are assembled as bytes by numpy gathers (each word followed by a space, the last of a
    line by a newline), so that 10M chunks take minutes, not an hour of str.join.
    """
    import numpy as np

    rng = np.random.default_rng(SEED)
    weights = 1.0 / np.arange(1, VOCAB + 1, dtype=np.float64) ** EXPONENT
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    words = [_word(r) for r in range(VOCAB)]
    blob = np.frombuffer(("".join(w + " " for w in words)).encode("ascii"), dtype=np.uint8)
    width = np.fromiter(map(len, words), dtype=np.int64, count=VOCAB) + 1  # with its separator
    offset = np.cumsum(width) - width

    def draw(count: int) -> np.ndarray:
        return np.minimum(np.searchsorted(cdf, rng.random(count)), VOCAB - 1)

    tmp = path.with_suffix(".tmp")
    with tmp.open("wb") as out:
        for start in range(0, n_chunks, GENERATE_BLOCK):
            lengths = rng.integers(80, 121, size=min(GENERATE_BLOCK, n_chunks - start))
            ids = draw(int(lengths.sum()))
            sizes = width[ids]
            ends = np.cumsum(sizes)
            gather = np.repeat(offset[ids] - (ends - sizes), sizes) + np.arange(int(ends[-1]))
            text = blob[gather]
            text[ends[np.cumsum(lengths) - 1] - 1] = ord("\n")
            out.write(text.tobytes())
    tmp.replace(path)
    lengths = rng.integers(3, 11, size=N_QUERIES).tolist()
    queries = [" ".join(map(words.__getitem__, draw(n).tolist())) for n in lengths]
    queries_path.write_text("".join(q + "\n" for q in queries), encoding="ascii")


def peak_rss_mib() -> float:
    """This process's peak RSS since exec (VmHWM; ru_maxrss would carry the parent's peak over at fork)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _rss_split() -> dict[str, float]:
    """Resident memory now, anonymous and file-backed, in MiB."""
    split = {}
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(("RssAnon:", "RssFile:")):
                split[line.split(":")[0]] = int(line.split()[1]) / 1024
    return split


def child_build(corpus: Path, n_chunks: int, index: Path) -> None:
    """Build the index of the first ``n_chunks`` lines in this (fresh) process; print one JSON line."""
    from groundkit.retrieval.bm25 import write_index

    start, cpu = time.perf_counter(), time.process_time()
    with corpus.open(encoding="ascii") as handle:
        records = ((f"{i:016x}", f"synthetic/{i:08d}.txt", 0, line[:-1])
                   for i, line in enumerate(islice(handle, n_chunks)))
        built = write_index(records, index, k1=1.2, b=0.75)
    build_s, build_cpu_s = time.perf_counter() - start, time.process_time() - cpu
    if built.num_chunks != n_chunks:
        sys.exit(f"error: {corpus} holds only {built.num_chunks} chunks")
    print(json.dumps({"build_s": build_s, "build_cpu_s": build_cpu_s, "build_peak_rss_mib": peak_rss_mib()}))


def child_search(index: Path, queries_path: Path) -> None:
    """Load the index and run the queries in this (fresh) process; print one JSON line."""
    from groundkit.retrieval.bm25 import BM25Index

    queries = queries_path.read_text(encoding="ascii").splitlines()
    start = time.perf_counter()
    loaded = BM25Index.load(index)
    load_s = time.perf_counter() - start
    start, cpu = time.perf_counter(), time.process_time()
    hits = sum(len(loaded.search(q, DEPTH)) for q in queries)
    search_s, search_cpu_s = time.perf_counter() - start, time.process_time() - cpu
    manifest = json.loads((index / "manifest.json").read_text(encoding="utf-8"))
    print(json.dumps({
        "chunks": loaded.num_chunks,
        "avg_tokens": manifest["avg_chunk_tokens"],
        "vocab": len(loaded.vocab),
        "nnz": sum(int(s.indptr[-1]) for s in loaded.segments),
        "segments": len(loaded.segments),
        "queries": len(queries),
        "load_s": load_s,
        "search_s": search_s,
        "search_cpu_s": search_cpu_s,
        "hits": hits,
        "search_peak_rss_mib": peak_rss_mib(),
        "rss_end_mib": _rss_split(),
    }))


def child_memory(corpus: Path, n_chunks: int, index: Path, queries_path: Path) -> None:
    """The in-memory path of groundkit before the segmented index: Chunk objects, build, save, search.

    It uses only ``BM25Index.build/save/search``, which every version has, so with an older tree first
    on PYTHONPATH it measures that version. The chunks are loaded before the clock starts.
    """
    import numpy as np

    from groundkit.corpus.passage import Chunk
    from groundkit.retrieval.bm25 import BM25Index

    with corpus.open(encoding="ascii") as handle:
        chunks = [Chunk(document=f"synthetic/{i:08d}.txt", start_offset=0, end_offset=len(line) - 1, text=line[:-1])
                  for i, line in enumerate(islice(handle, n_chunks))]
    queries = queries_path.read_text(encoding="ascii").splitlines()
    rss_chunks = _rss_split()
    start, cpu = time.perf_counter(), time.process_time()
    built = BM25Index.build(chunks, k1=1.2, b=0.75)
    built.save(index)
    build_s, build_cpu_s = time.perf_counter() - start, time.process_time() - cpu
    build_peak = peak_rss_mib()
    start, cpu = time.perf_counter(), time.process_time()
    hits = sum(len(built.search(q, DEPTH)) for q in queries)
    search_s, search_cpu_s = time.perf_counter() - start, time.process_time() - cpu
    manifest = json.loads((index / "manifest.json").read_text(encoding="utf-8"))
    print(json.dumps({
        "chunks": n_chunks, "avg_tokens": manifest["avg_chunk_tokens"], "vocab": len(built.vocab),
        "nnz": int(np.load(index / "indptr.npy")[-1]) if (index / "indptr.npy").is_file()
        else sum(int(s.indptr[-1]) for s in built.segments),
        "segments": 1 if (index / "indptr.npy").is_file() else len(built.segments), "queries": len(queries),
        "build_s": build_s, "build_cpu_s": build_cpu_s, "build_peak_rss_mib": build_peak, "load_s": 0.0,
        "search_s": search_s, "search_cpu_s": search_cpu_s, "hits": hits, "search_peak_rss_mib": peak_rss_mib(),
        "rss_end_mib": _rss_split(), "rss_chunks_mib": rss_chunks,
    }))


def _disk_mib(directory: Path) -> float:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file()) / 2**20


def _run_child(*args: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.exit(f"error: child {args} failed ({out.returncode}):\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--workdir", default="/tmp/groundkit-bench-scale")
    parser.add_argument("--generate", type=int, default=1_000_000,
                        help="chunks in the generated corpus (and so which queries); sizes are prefixes of it")
    parser.add_argument("--keep-index", action="store_true", help="keep each size's index in --workdir")
    parser.add_argument("--in-memory", action="store_true",
                        help="measure the in-memory path instead (Chunk objects, build, save, search), in one child; "
                             "with an older groundkit first on PYTHONPATH, the figures before the segmented index")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, *rest = args.child
        if kind == "build":
            child_build(Path(rest[0]), int(rest[1]), Path(rest[2]))
        elif kind == "memory":
            child_memory(Path(rest[0]), int(rest[1]), Path(rest[2]), Path(rest[3]))
        else:
            child_search(Path(rest[0]), Path(rest[1]))
        return

    sizes = [int(s) for s in args.sizes.split(",")]
    if max(sizes) > args.generate:
        sys.exit(f"error: --sizes up to {max(sizes)} need --generate {max(sizes)} or more")
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    corpus = workdir / f"zipf-{EXPONENT}-{VOCAB}-{SEED}-{args.generate}.txt"
    queries = workdir / f"queries{N_QUERIES}-{EXPONENT}-{VOCAB}-{SEED}-{args.generate}.txt"
    print_machine()
    if not corpus.is_file() or not queries.is_file():
        start = time.perf_counter()
        generate(corpus, queries, args.generate)
        print(f"generated {args.generate} chunks in {time.perf_counter() - start:.0f} s: {corpus}", file=sys.stderr)

    results = []
    for size in sizes:
        index = workdir / f"index-{size}"
        load = os.getloadavg()[0]
        if args.in_memory:
            result = _run_child("memory", str(corpus), str(size), str(index), str(queries))
            result |= {"disk_mib": _disk_mib(index)}
        else:
            result = _run_child("build", str(corpus), str(size), str(index))
            result |= {"disk_mib": _disk_mib(index)}
            result |= _run_child("search", str(index), str(queries))
        result["load_avg"] = (load + os.getloadavg()[0]) / 2
        if not args.keep_index:
            shutil.rmtree(index)
        results.append(result)
        print(f"measured {size} chunks: {json.dumps(result)}", file=sys.stderr)

    base = results[0]["build_cpu_s"] / results[0]["chunks"]
    print()
    print("| chunks | avg tokens | vocabulary | postings | segments | build s (wall) | build s (CPU) | CPU µs/chunk "
          "| x linear | build peak RSS | index on disk | load s | queries | query s (wall) | query s (CPU) "
          "| ms/query | search peak RSS (file-backed at end) | load avg |")
    print("| ---: " * 18 + "|")
    for r in results:
        per_chunk = r["build_cpu_s"] / r["chunks"]
        print(f"| {r['chunks']:,} | {r['avg_tokens']:.1f} | {r['vocab']:,} | {r['nnz']:,} | {r['segments']} "
              f"| {r['build_s']:.1f} | {r['build_cpu_s']:.1f} | {per_chunk * 1e6:.1f} | {per_chunk / base:.2f} "
              f"| {r['build_peak_rss_mib']:,.0f} MiB | {r['disk_mib']:,.0f} MiB | {r['load_s']:.1f} "
              f"| {r['queries']} | {r['search_s']:.1f} | {r['search_cpu_s']:.1f} "
              f"| {1000 * r['search_s'] / r['queries']:.1f} "
              f"| {r['search_peak_rss_mib']:,.0f} MiB ({r['rss_end_mib'].get('RssFile', 0):,.0f}) "
              f"| {r['load_avg']:.1f} |")


if __name__ == "__main__":
    main()
