"""The Ray engine against the local engine on BEIR SciFact, side by side, and what Ray costs to start.

    python benchmarks/bench_ray.py [SCIFACT_DIR] [--repeat 10]   # default ../shared/data/scifact

Needs the ray extra (pip install -e '.[ray]'). It starts a cluster on this machine the way the tests do
(``ray start --head --block``, 2 CPUs, 300 MiB object store, a token of its own), measures:

- start-up: ``ray start`` until the head is up; a driver joining it (``execution.address: HOST:PORT``);
  a stage's own Ray (``execution.address`` empty: ``ray.init`` starts one and stops it after);
- the index of SciFact (5,183 abstracts, one chunk each) with both engines, best of three, in one
  segment (the default) and in six of 1,000 rows, checking the files are the same bytes;
- the search of its 300 test queries repeated ``--repeat`` times at depth 100 with both engines,
  best of three, checking the rankings are equal;
- object store traffic: the bytes of what the search puts there (segments once, queries per batch).

Each figure is a wall-clock time of this process (start-up included for the Ray runs where it says
so); on a shared 2-core machine the ratios are the figures to read.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import best_of, print_machine

from groundkit.config import load_params

REPO = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _records(chunks: Path) -> list[tuple[str, str, int, str]]:
    rows = [json.loads(line) for line in chunks.read_text(encoding="utf-8").splitlines()]
    return [(r["chunk_id"], r["document"], r["start_offset"], r["text"]) for r in rows]


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scifact", nargs="?", type=Path, default=REPO.parent / "shared" / "data" / "scifact")
    parser.add_argument("--repeat", type=int, default=10, help="times the 300 queries are searched")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gkbench-"))
    # A token of its own, and a stage's own Ray under the work folder: nothing of ~/.ray or /tmp/ray is used.
    # Ray runs its workers at nice 15 by default; on a machine shared with other work that alone made a
    # search task 8 to 10 times slower than the same code at nice 0, which is a scheduler's choice, not
    # Ray's cost: the workers run at the driver's niceness here.
    os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(32),
                      RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S="0", RAY_TMPDIR=str(work), RAY_worker_niceness="0")
    print_machine()
    try:
        _run(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run(args: argparse.Namespace, work: Path) -> None:
    import ray

    from groundkit.execution.local import LocalEngine
    from groundkit.execution.ray import QUERY_BATCH, RayEngine
    from groundkit.retrieval.bm25 import BM25Index, query_terms, write_index

    groundkit = [sys.executable, "-m", "groundkit.cli"]
    subprocess.run([*groundkit, "import-beir", str(args.scifact), "--out", str(work / "sf")], check=True,
                   capture_output=True)
    subprocess.run([*groundkit, "run", "--corpus", str(work / "sf" / "corpus"), "--judgments",
                    str(work / "sf" / "judgments.jsonl"), "--out", str(work / "run"), "--set",
                    "chunk.strategy=document", "--set", "audit.max_trivial_share=1.0"], check=True, capture_output=True)
    records = _records(work / "run" / "chunks.jsonl")
    queries = [json.loads(line)["query"] for line in (work / "sf" / "judgments.jsonl").read_text().splitlines()]
    params = load_params(None)

    # --- start-up
    temp = Path(tempfile.mkdtemp(prefix="gkray-"))
    port = _free_port()
    started = time.perf_counter()
    with (temp / "log").open("w") as log:
        head = subprocess.Popen(["ray", "start", "--head", "--block", "--port", str(port), "--num-cpus", "2",
                                 "--object-store-memory", str(300 * 2**20), "--include-dashboard=false",
                                 "--disable-usage-stats", "--temp-dir", str(temp)],
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    while "Ray runtime started" not in (temp / "log").read_text(errors="replace"):
        time.sleep(0.05)
    print(f"ray start --head until up: {time.perf_counter() - started:.1f} s")
    address = f"127.0.0.1:{port}"
    try:
        for attempt in ("first (uploads groundkit)", "again"):
            started = time.perf_counter()
            with RayEngine(address, source="bench"):
                joined = time.perf_counter() - started
            print(f"a driver joining it, {attempt}: {joined:.1f} s (connect and disconnect)")
        started = time.perf_counter()
        with RayEngine(None, source="bench"):
            own = time.perf_counter() - started
        print(f"a stage's own Ray (address empty): {own:.1f} s to start, "
              f"{time.perf_counter() - started:.1f} s with the stop")

        local = LocalEngine()
        with RayEngine(address, source="bench") as remote:
            print(f"\nSciFact: {len(records):,} chunks, {len(queries)} queries x {args.repeat}, depth 100")
            for rows in (2**20, 1000):
                label = "one segment" if rows > len(records) else f"segments of {rows:,} rows"
                def build(engine_write, folder: Path, rows: int = rows) -> None:
                    shutil.rmtree(folder, ignore_errors=True)
                    engine_write(folder, rows)

                t_local = best_of(3, lambda: build(lambda f, n: write_index(records, f, k1=1.2, b=0.75,
                                                                            segment_rows=n), work / "l"))
                t_ray = best_of(3, lambda: build(lambda f, n: remote.write_index(records, f, params.bm25,
                                                                                 params.tokenize, segment_rows=n),
                                                 work / "r"))
                assert _files(work / "l") == _files(work / "r")
                print(f"index, {label}: local {t_local:.2f} s, ray {t_ray:.2f} s ({t_ray / t_local:.1f}x), "
                      "same bytes")
                index = BM25Index.load(work / "l")
                many = queries * args.repeat
                expected = local.search(index, many, 100)
                t_local = best_of(3, lambda index=index, many=many: local.search(index, many, 100))
                t_ray = best_of(3, lambda index=index, many=many: remote.search(index, many, 100))
                assert remote.search(index, many, 100) == expected
                segments = sum(s.indptr.nbytes + s.indices.nbytes + s.data.nbytes for s in index.segments)
                terms = sum(query_terms(index, query).nbytes for query in many)
                print(f"search, {label}: local {t_local:.2f} s, ray {t_ray:.2f} s ({t_ray / t_local:.1f}x), "
                      f"same rankings; object store: {segments / 2**20:.1f} MiB of segments once, about "
                      f"{terms / 2**10:.0f} KiB of query terms, {len(index.segments)} task(s) per "
                      f"{QUERY_BATCH}-query batch")
        print(f"\nray {ray.__version__}")
    finally:
        head.terminate()
        head.wait(timeout=60)
        shutil.rmtree(temp, ignore_errors=True)


if __name__ == "__main__":
    main()
