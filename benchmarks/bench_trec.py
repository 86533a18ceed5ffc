"""Scoring a TREC run: groundkit score-trec against pytrec_eval, ir_measures and ranx, side by side.

    python benchmarks/bench_trec.py [--queries 100000] [--depth 100] [--documents 100000] [--rounds 3]

ranx is not a groundkit dependency (it pulls numba, ir_datasets, seaborn and more): ``pip install ranx==0.3.21``
first, or pass ``--no-ranx``. Synthetic and deterministic: each query ranks ``depth`` distinct documents of a
collection of ``documents``, its scores rounded to four decimals as Anserini writes them (so some tie), and
the qrels grade three documents per query 0 to 3, two of them among those it ranks.

Each tool goes from the two files on disk to every query's value of the same four measures: nDCG@10, RR,
Success@10 and R@100 (groundkit's ndcg@10, mrr, recall@10 and set_recall@100): groundkit reads both files
and scores (``read_run``, ``read_qrels``, ``score``); pytrec_eval parses them with its own ``parse_run`` and
``parse_qrel`` and evaluates; ir_measures reads them with ``read_trec_run``/``read_trec_qrels`` and runs
``iter_calc``; ranx loads them with ``Run.from_file``/``Qrels.from_file`` and runs ``evaluate`` per query on one
thread (after a first call that compiles its numba code). The rounds interleave the tools, so load from other
processes falls on all of them; the table shows each tool's fastest round and the spread, and the ratios of
the fastest rounds. ``groundkit score-trec`` as a whole (writing its four files too) is timed as well.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import peak_rss_mib, print_machine

MEASURES = {"groundkit": ["ndcg@10", "mrr", "recall@10", "set_recall@100"],
            "pytrec_eval": ["ndcg_cut_10", "recip_rank", "success_10", "recall_100"],
            "ranx": ["ndcg@10", "mrr", "hit_rate@10", "recall@100"]}


def write_inputs(folder: Path, queries: int, depth: int, documents: int, seed: int = 1) -> tuple[Path, Path]:
    rng = np.random.default_rng(seed)
    # Distinct documents per query: a random start, then gaps of 1 to 999 (depth x 999 < documents wraps once).
    start = rng.integers(0, documents, queries)[:, None]
    ranked = (start + np.cumsum(rng.integers(1, 1000, (queries, depth)), axis=1)) % documents
    scores = np.round(rng.random((queries, depth)) * 20, 4)
    run, qrels = folder / "run.trec", folder / "qrels.trec"
    with run.open("w", encoding="utf-8") as handle:
        for q in range(queries):
            pairs = zip(ranked[q].tolist(), scores[q].tolist(), strict=True)
            handle.write("".join(f"q{q} Q0 doc{d} {r} {s!r} bench\n" for r, (d, s) in enumerate(pairs, start=1)))
    with qrels.open("w", encoding="utf-8") as handle:
        for q in range(queries):
            judged = dict.fromkeys([*ranked[q, rng.integers(0, depth, 2)].tolist(), int(rng.integers(0, documents))])
            handle.write("".join(f"q{q} 0 doc{d} {int(rng.integers(0, 4))}\n" for d in judged))
    return run, qrels


def groundkit_values(run: Path, qrels: Path) -> dict[str, dict[str, float]]:
    from groundkit.scoring.trec.files import read_qrels, read_run
    from groundkit.scoring.trec.measures import score

    scores = score(read_run(run), read_qrels(qrels), MEASURES["groundkit"])
    return {q: {m: float(scores.metrics[m][i]) for m in MEASURES["groundkit"]} for i, q in enumerate(scores.query_ids)}


def groundkit_command(run: Path, qrels: Path, out: Path) -> None:
    from groundkit.cli import main

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        status = main(["score-trec", str(run), "--qrels", str(qrels), "--out", str(out), "--force",
                       "--measures", ",".join(MEASURES["groundkit"])])
    if status != 0:
        sys.exit("error: groundkit score-trec failed")


def pytrec_eval_values(run: Path, qrels: Path) -> dict[str, dict[str, float]]:
    import pytrec_eval

    with run.open(encoding="utf-8") as handle:
        parsed_run = pytrec_eval.parse_run(handle)
    with qrels.open(encoding="utf-8") as handle:
        parsed_qrels = pytrec_eval.parse_qrel(handle)
    evaluator = pytrec_eval.RelevanceEvaluator(parsed_qrels, {"ndcg_cut.10", "recip_rank", "success.10", "recall.100"})
    return evaluator.evaluate(parsed_run)


def ir_measures_values(run: Path, qrels: Path) -> list[object]:
    import ir_measures
    from ir_measures import RR, R, Success, nDCG

    return list(ir_measures.iter_calc([nDCG @ 10, RR, Success @ 10, R @ 100], ir_measures.read_trec_qrels(str(qrels)),
                                      ir_measures.read_trec_run(str(run))))


def ranx_values(run: Path, qrels: Path) -> dict[str, dict[str, float]]:
    """Per measure (groundkit's name), each query's value as ranx computes it."""
    from ranx import Qrels, Run, evaluate

    loaded = Run.from_file(str(run), kind="trec")
    evaluate(Qrels.from_file(str(qrels), kind="trec"), loaded, MEASURES["ranx"], return_mean=False, threads=1)
    return {ours: dict(loaded.scores[theirs]) for ours, theirs in zip(MEASURES["groundkit"], MEASURES["ranx"],
                                                                      strict=True)}


def check(ours: dict[str, dict[str, float]], reference: dict[str, dict[str, float]]) -> int:
    """Queries where groundkit equals pytrec_eval to 1e-9 on every measure (every query of the run); exits otherwise.

    A query whose qrels grade nothing above 0 scores 0 in both (trec_eval -c)."""
    for query, values in reference.items():
        for name, trec_name in zip(MEASURES["groundkit"], MEASURES["pytrec_eval"], strict=True):
            if abs(values[trec_name] - ours[query][name]) > 1e-9:
                sys.exit(f"error: {query} {name}: groundkit {ours[query][name]} != pytrec_eval {values[trec_name]}")
    return len(reference)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-ranx", action="store_true", help="leave ranx out (it is not a groundkit dependency)")
    parser.add_argument("--no-ir-measures", action="store_true", help="leave ir_measures out (the slowest side)")
    args = parser.parse_args()
    if not args.no_ranx:
        try:
            import ranx
        except ImportError:
            sys.exit("error: ranx is not installed (it is not a groundkit dependency)\n"
                     "  fix: pip install ranx==0.3.21, or pass --no-ranx")
    print_machine()
    with tempfile.TemporaryDirectory(prefix="bench-trec-") as scratch:
        folder = Path(scratch)
        run, qrels = write_inputs(folder, args.queries, args.depth, args.documents)
        print(f"{args.queries:,} queries x {args.depth} documents of {args.documents:,}: run "
              f"{run.stat().st_size / 2**20:.0f} MiB, qrels {qrels.stat().st_size / 2**20:.1f} MiB")
        tools: dict[str, Callable[[], object]] = {
            "groundkit (read + score)": lambda: groundkit_values(run, qrels),
            "groundkit score-trec (the command)": lambda: groundkit_command(run, qrels, folder / "out"),
            "pytrec_eval": lambda: pytrec_eval_values(run, qrels),
        }
        if not args.no_ir_measures:
            tools["ir_measures"] = lambda: ir_measures_values(run, qrels)
        ours = groundkit_values(run, qrels)
        equal = check(ours, pytrec_eval_values(run, qrels))  # type: ignore[arg-type]
        print(f"sanity: groundkit equals pytrec_eval to 1e-9 on all four measures for {equal:,} queries")
        if not args.no_ranx:
            ranx = ranx_values(run, qrels)  # numba compiles on the first call
            tools["ranx (1 thread)"] = lambda: ranx_values(run, qrels)
            differ = {name: sum(1 for q, v in values.items() if q in ours and abs(v - ours[q][name]) > 1e-9)
                      for name, values in ranx.items()}
            print("ranx differs from groundkit (ties it orders otherwise) on: "
                  + ", ".join(f"{name} {count} queries" for name, count in differ.items()))
        times: dict[str, list[float]] = {name: [] for name in tools}
        for round_ in range(args.rounds):
            for name, tool in tools.items():
                start = time.perf_counter()
                tool()
                times[name].append(time.perf_counter() - start)
            print(f"round {round_ + 1}: " + ", ".join(f"{n.split(' ')[0]} {t[-1]:.2f} s" for n, t in times.items()),
                  flush=True)
    floor = min(times["pytrec_eval"])
    print()
    print(f"| {args.queries:,} queries x {args.depth} | fastest (s) | median | slowest | / pytrec_eval | round by "
          "round (min, median, max) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, measured in times.items():
        ratios = [t / f for t, f in zip(measured, times["pytrec_eval"], strict=True)]
        print(f"| {name} | {min(measured):.2f} | {statistics.median(measured):.2f} | {max(measured):.2f} | "
              f"{min(measured) / floor:.2f}x | {min(ratios):.2f}x, {statistics.median(ratios):.2f}x, "
              f"{max(ratios):.2f}x |")
    print(f"peak RSS of this process (all tools): {peak_rss_mib():,.0f} MiB")
    print("target: groundkit (read + score) at most 0.75x pytrec_eval")


if __name__ == "__main__":
    main()
