"""Shared by the benchmarks: the machine description, timing, and SciFact loading.

Benchmarks are scripts, not tests: each measures groundkit against a floor or
a reference side by side in one run and prints the ratio, so a busy machine
slows both sides alike. Figures go into BENCHMARKS.md with the machine they
ran on.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_SCIFACT = REPO / ".." / "shared" / "data" / "scifact"


def machine() -> dict[str, str]:
    """CPU model, cores, RAM, Python and library versions, and the load when measured."""
    model = "unknown"
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    ram_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    versions = {}
    for package in ("numpy", "bm25s", "rank-bm25", "dvc", "pydantic"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    return {
        "cpu": model,
        "cores": str(os.cpu_count()),
        "ram": f"{ram_gib:.1f} GiB",
        "python": platform.python_version(),
        **versions,
        "load average (1 min) at start": f"{os.getloadavg()[0]:.2f}",
    }


def print_machine() -> None:
    print("machine: " + ", ".join(f"{k} {v}" for k, v in machine().items()))


def best_of(repeats: int, fn: Callable[[], object]) -> float:
    """Fastest of ``repeats`` wall-clock runs of ``fn``, in seconds: the least disturbed by other load."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def peak_rss_mib() -> float:
    """This process's peak resident set size (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mib() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def load_scifact(data_dir: Path) -> tuple[list[str], list[str], list[str], list[str], dict[str, set[str]]]:
    """BEIR SciFact read directly: doc ids, doc texts (title + blank line + text), test query ids and texts, qrels."""
    data_dir = Path(data_dir)
    if not (data_dir / "corpus.jsonl").is_file():
        sys.exit(f"error: {data_dir}/corpus.jsonl not found\n  fix: pass the SciFact directory as the first argument")
    doc_ids, texts = [], []
    with (data_dir / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            doc_ids.append(record["_id"])
            texts.append(record["title"] + "\n\n" + record["text"])
    qrels: dict[str, set[str]] = {}
    with (data_dir / "qrels" / "test.tsv").open(encoding="utf-8") as handle:
        next(handle)
        for line in handle:
            query_id, doc_id, score = line.rstrip("\n").split("\t")
            if int(score) > 0:
                qrels.setdefault(query_id, set()).add(doc_id)
    query_ids, queries = [], []
    with (data_dir / "queries.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            if record["_id"] in qrels:
                query_ids.append(record["_id"])
                queries.append(record["text"])
    return doc_ids, texts, query_ids, queries, qrels
