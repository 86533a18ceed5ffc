"""`groundkit compare` on many queries: wall time and peak RSS of the command, in a child process.

Result folders (per_query.csv and run.json, as `groundkit run --out` writes them) are generated for
N synthetic queries: four answerable categories and one in ten no_answer, the baseline's first gold
rank drawn at random and each candidate's moved from it, every metric derived from that rank the
way the score stage defines it (hit rate, MRR, nDCG with one gold chunk, characters read, hit rate
within a character budget). Each command runs once in a fresh interpreter; its peak RSS is the
child's own ru_maxrss, read with os.wait4. Beside them, as a floor, a child that only imports numpy
and scipy.stats and reads the baseline and one candidate: what is left is the statistics' own cost.
Measured: the two-run report (every metric overall and per category), and the N-way report of the
baseline against ``--candidates`` candidates on three gated metrics. With ``--against REV`` each command
also runs with groundkit as of git revision REV (its tree from ``git archive``, put first on PYTHONPATH),
alternating with this checkout's for ``--rounds`` rounds, and the ratios of wall and CPU time print.

    python benchmarks/bench_compare.py [--queries 100000] [--candidates 4] [--workdir DIR] [--metric NAME ...]
                                       [--against REV] [--rounds N]
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO, print_machine

SEED = 20261202
KS = (1, 3, 5, 10)
BUDGETS = (500, 1000, 2000)
CHUNK_CHARS = 800
CATEGORIES = ("boundary", "factoid", "lexical_gap", "multi_passage")
METRICS = [*(f"recall@{k}" for k in KS), "mrr", *(f"ndcg@{k}" for k in KS), *(f"chars@{k}" for k in KS),
           *(f"recall@{b}chars" for b in BUDGETS)]
HEADER = ["query_id", "query", "category", "retrieved", "gold_chunks", "first_gold_rank", "abstained", *METRICS]


def _metrics(rank: int | None, chunk_chars: int) -> list[str]:
    hit = [1.0 if rank is not None and rank <= k else 0.0 for k in KS]
    ndcg = [1.0 / math.log2(rank + 1) if rank is not None and rank <= k else 0.0 for k in KS]
    chars = [float(chunk_chars * k) for k in KS]
    budget = [1.0 if rank is not None and rank * chunk_chars <= b else 0.0 for b in BUDGETS]
    values = [*hit, 1.0 / rank if rank is not None else 0.0, *ndcg, *chars, *budget]
    return [f"{v:.6f}" for v in values]


def write_side(folder: Path, ranks: list[int | None], lengths: list[int], categories: list[str],
               metrics: list[str]) -> None:
    """per_query.csv and run.json for one side; ``lengths`` are the characters of a query's chunks."""
    folder.mkdir(parents=True, exist_ok=True)
    keep = [METRICS.index(m) for m in metrics]
    with (folder / "per_query.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(HEADER[:7] + metrics)
        for i, (rank, length, category) in enumerate(zip(ranks, lengths, categories, strict=True)):
            if category == "no_answer":
                writer.writerow([f"q{i:06d}", f"query {i}", category, 0, 0, "", 1] + [""] * len(metrics))
                continue
            values = _metrics(rank, length)
            writer.writerow([f"q{i:06d}", f"query {i}", category, 100, 1, rank or "", ""] + [values[j] for j in keep])
    metadata = {"corpus_hash": "c" * 64, "groundkit_version": "bench", "judgments_hash": "j" * 64,
                "params": {"chunk": {"size": CHUNK_CHARS}}}
    (folder / "run.json").write_text(json.dumps(metadata, indent=2) + "\n", encoding="utf-8")


def generate(workdir: Path, queries: int, metrics: list[str], candidates: int = 1) -> tuple[Path, list[Path]]:
    """The baseline and ``candidates`` sides over the same synthetic queries, each candidate's ranks moved.

    The baseline and the first candidate are drawn as this script drew its two sides before it
    had more candidates, so the two-run figures stay comparable with earlier ones.
    """
    import numpy as np

    rng = np.random.default_rng(SEED)
    kinds = rng.integers(0, 10, queries)
    categories = ["no_answer" if k == 9 else CATEGORIES[k % 4] for k in kinds]
    base = rng.geometric(0.3, queries)
    moved = [np.maximum(1, base + rng.integers(-2, 3, queries))]
    lengths = rng.integers(700, CHUNK_CHARS + 1, (2, queries)).tolist()
    for _ in range(1, candidates):
        moved.append(np.maximum(1, base + rng.integers(-3, 3, queries)))
        lengths.append(rng.integers(700, CHUNK_CHARS + 1, queries).tolist())

    def ranks(values: np.ndarray) -> list[int | None]:
        return [int(r) if r <= 100 else None for r in values]

    write_side(workdir / "baseline", ranks(base), lengths[0], categories, metrics)
    sides = [workdir / ("candidate" if c == 0 else f"candidate{c + 1}") for c in range(candidates)]
    for c, side in enumerate(sides):
        write_side(side, ranks(moved[c]), lengths[1 + c], categories, metrics)
    return workdir / "baseline", sides


FLOOR = ("import sys, scipy.stats; from pathlib import Path; from groundkit.reports.sides import read_side; "
         "[read_side(side, cwd=Path.cwd()) for side in sys.argv[1:]]")


def measure(command: list[str], cwd: Path, tree: Path = REPO) -> tuple[float, float, float, int]:
    """Wall seconds, CPU seconds, peak RSS (MiB) and exit status of one child process running ``command`` with
    groundkit imported from ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, *command], cwd=cwd, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    errors = child.stderr.read().decode() if child.stderr else ""
    if child.returncode != 0:
        print(errors, file=sys.stderr)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, child.returncode


GATE = "ndcg@10,mrr,recall@10"


def against(revision: str, rounds: int, runs: dict[str, list[str]], workdir: Path) -> None:
    """Each command with this checkout's groundkit and with ``revision``'s, alternating; min, median, max of each,
    and the ratio of the medians (this checkout over the revision)."""
    tree = workdir / f"groundkit-{revision}"
    tree.mkdir()
    archive = subprocess.run(["git", "archive", revision], cwd=REPO, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    for name, argv in runs.items():
        times: dict[str, list[tuple[float, float]]] = {"this checkout": [], revision: []}
        for _ in range(rounds):
            for label, source in (("this checkout", REPO), (revision, tree)):
                wall, cpu, _, status = measure(argv, workdir, source)
                if status != 0:
                    raise SystemExit(f"{name} with {label}: exit {status}")
                times[label].append((wall, cpu))
        print(f"groundkit compare, {name}, {rounds} rounds:")
        medians = {}
        for label, pairs in times.items():
            walls, cpus = sorted(w for w, _ in pairs), sorted(c for _, c in pairs)
            medians[label] = (statistics.median(walls), statistics.median(cpus))
            print(f"  {label:>14}: wall {walls[0]:.1f} / {medians[label][0]:.1f} / {walls[-1]:.1f} s, "
                  f"CPU {cpus[0]:.1f} / {medians[label][1]:.1f} / {cpus[-1]:.1f} s (min / median / max)")
        print(f"  this checkout over {revision}: wall {medians['this checkout'][0] / medians[revision][0]:.2f}x, "
              f"CPU {medians['this checkout'][1] / medians[revision][1]:.2f}x (medians)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--candidates", type=int, default=4, help="candidates of the N-way run (default 4)")
    parser.add_argument("--workdir", type=Path, default=None, help="where the folders go (default: a temp dir)")
    parser.add_argument("--metric", action="append", default=[], help="metric columns to write (default: all)")
    parser.add_argument("--against", metavar="REV", help="also run each command with groundkit as of git revision "
                        "REV, alternating with this checkout's, and print the ratios")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the --against comparison (default 3)")
    args = parser.parse_args()
    metrics = args.metric or METRICS
    if not {"mrr", "ndcg@10", "recall@10"} <= set(metrics):
        parser.error(f"--metric must include the gated metrics {GATE}")
    print_machine()
    with tempfile.TemporaryDirectory() as scratch:
        workdir = args.workdir or Path(scratch)
        started = time.perf_counter()
        baseline, candidates = generate(workdir, args.queries, metrics, max(1, args.candidates))
        print(f"generated {args.queries:,} queries x {len(metrics)} metric columns x {1 + len(candidates)} sides in "
              f"{time.perf_counter() - started:.1f} s ({(baseline / 'per_query.csv').stat().st_size / 2**20:.1f} MiB "
              "per side)")
        floor_wall, floor_cpu, floor_peak, floor_status = measure(
            ["-c", FLOOR, str(baseline), str(candidates[0])], workdir)
        command = ["-m", "groundkit.cli", "compare", str(baseline)]
        runs = {"two runs, every metric (--json)": [*command, str(candidates[0]), "--json", "--metric", "mrr"]}
        if len(candidates) > 1:
            runs[f"{len(candidates)} candidates, {GATE} (--json)"] = [
                *command, *map(str, candidates), "--json", "--metric", GATE]
        measured = {name: measure(argv, workdir) for name, argv in runs.items()}
        if args.against:
            against(args.against, args.rounds, runs, workdir)
    print(f"floor (imports, two sides read): exit {floor_status}, wall {floor_wall:.1f} s, CPU {floor_cpu:.1f} s, "
          f"peak RSS {floor_peak:,.0f} MiB")
    for name, (wall, cpu, peak, status) in measured.items():
        print(f"groundkit compare, {name}: exit {status}, wall {wall:.1f} s, CPU {cpu:.1f} s, peak RSS "
              f"{peak:,.0f} MiB ({peak / floor_peak:.2f}x the floor's)")
    return max([floor_status, *(status for *_, status in measured.values())])


if __name__ == "__main__":
    sys.exit(main())
