"""`groundkit score-run` on a large external run, against pytrec_eval scoring the same run as TREC files.

    python benchmarks/bench_score_run.py [--queries 10000] [--depth 100] [--documents 100000] [--rounds 3]

Synthetic and deterministic: a corpus of ``documents`` short files (a sentence of ten words each), one
``factoid`` judgment per query whose gold is one to three whole documents with grades 1 to 3, and a run
(JSONL, offsets only: each passage a whole document) ranking ``depth`` distinct documents per query, the gold
ones among them for most queries. The same run and gold are written as a TREC run and qrels, where a passage
is its document.

Timed, side by side in rounds: the whole ``groundkit score-run`` command (reading the corpus and the
judgments, the audit, the run, scoring, writing every artifact), its reading of the run alone
(``read_external_run``), and pytrec_eval parsing the TREC files and evaluating nDCG@10, RR and Success@10.
Run it with ``PYTHONPATH=/tmp/gk-before`` to time an earlier groundkit (BENCHMARKS.md says how to unpack one).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import print_machine

WORDS = [f"w{i}" for i in range(5000)]


def write_inputs(folder: Path, queries: int, depth: int, documents: int, seed: int = 5) -> dict[str, Path]:
    rng = random.Random(seed)
    corpus = folder / "corpus"
    corpus.mkdir()
    names = [f"d{i:06d}.txt" for i in range(documents)]
    lengths = {}
    for name in names:
        text = " ".join(rng.choices(WORDS, k=10)) + ".\n"
        (corpus / name).write_text(text, encoding="utf-8")
        lengths[name] = len(text)
    judgments, run, trec_run, trec_qrels = [], [], [], []
    for q in range(queries):
        query_id = f"q{q:06d}"
        gold = {name: rng.randint(1, 3) for name in rng.sample(names, rng.randint(1, 3))}
        spans = [{"document": name, "whole_document": True, "grade": grade} for name, grade in gold.items()]
        judgments.append(json.dumps({"query_id": query_id, "query": " ".join(rng.choices(WORDS, k=5)),
                                     "category": "factoid", "gold": spans}))
        ranked = rng.sample(names, depth)
        if rng.random() < 0.8:
            ranked[rng.randrange(depth)] = next(iter(gold))
            ranked = list(dict.fromkeys(ranked))
        for rank, name in enumerate(ranked, start=1):
            run.append(json.dumps({"query_id": query_id, "rank": rank, "document": name, "start": 0,
                                   "end": lengths[name]}))
            trec_run.append(f"{query_id} Q0 {name} {rank} {-rank} run")
        trec_qrels += [f"{query_id} 0 {name} {grade}" for name, grade in gold.items()]
    paths = {"corpus": corpus, "judgments": folder / "judgments.jsonl", "run": folder / "run.jsonl",
             "trec_run": folder / "run.trec", "trec_qrels": folder / "qrels.trec"}
    for key, lines in (("judgments", judgments), ("run", run), ("trec_run", trec_run), ("trec_qrels", trec_qrels)):
        paths[key].write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "params.yaml").write_text("score:\n  ks: [1, 3, 5, 10]\n  budgets: [500, 1000, 2000]\n", encoding="utf-8")
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    import pytrec_eval

    import groundkit
    from groundkit.cli import main as groundkit_main
    from groundkit.corpus.documents import load_corpus
    from groundkit.retrieval.external import read_external_run

    print_machine()
    print(f"groundkit from {Path(groundkit.__file__).parent}")
    with tempfile.TemporaryDirectory(prefix="bench-score-run-") as scratch:
        folder = Path(scratch)
        paths = write_inputs(folder, args.queries, args.depth, args.documents)
        documents = {d.path: d for d in load_corpus(paths["corpus"])}
        query_ids = [f"q{q:06d}" for q in range(args.queries)]
        print(f"{args.queries:,} queries x {args.depth} passages over {args.documents:,} documents: run "
              f"{paths['run'].stat().st_size / 2**20:.0f} MiB")

        def score_run() -> None:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
                status = groundkit_main(["score-run", str(paths["run"]), "--corpus", str(paths["corpus"]),
                                         "--judgments", str(paths["judgments"]), "--params",
                                         str(folder / "params.yaml"), "--out", str(folder / "out"), "--force"])
            if status != 0:
                sys.exit(f"error: score-run failed: {err.getvalue()}")

        def trec_eval() -> None:
            with paths["trec_run"].open(encoding="utf-8") as handle:
                run = pytrec_eval.parse_run(handle)
            with paths["trec_qrels"].open(encoding="utf-8") as handle:
                qrels = pytrec_eval.parse_qrel(handle)
            pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recip_rank", "success.10"}).evaluate(run)

        tools: dict[str, Callable[[], object]] = {
            "groundkit score-run (the command)": score_run,
            "its reading of the run (read_external_run)": lambda: read_external_run(paths["run"], documents,
                                                                                    query_ids),
            "pytrec_eval (parse + evaluate)": trec_eval,
        }
        times: dict[str, list[float]] = {name: [] for name in tools}
        for round_ in range(args.rounds):
            for name, tool in tools.items():
                start = time.perf_counter()
                tool()
                times[name].append(time.perf_counter() - start)
            print(f"round {round_ + 1}: " + ", ".join(f"{t[-1]:.2f} s" for t in times.values()), flush=True)
        detail = json.loads((folder / "out" / "detail.json").read_text(encoding="utf-8"))
        print(f"sanity: ndcg@10 {detail['answerable']['ndcg@10']:.4f} over {detail['answerable']['queries']} queries")
    floor = min(times["pytrec_eval (parse + evaluate)"])
    print()
    print(f"| {args.queries:,} queries x {args.depth} | fastest (s) | median | slowest | / pytrec_eval |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, measured in times.items():
        print(f"| {name} | {min(measured):.2f} | {statistics.median(measured):.2f} | {max(measured):.2f} | "
              f"{min(measured) / floor:.1f}x |")


if __name__ == "__main__":
    main()
