"""Metrics: scoring 10,000 queries at depth 100, side by side with pytrec_eval (and ir_measures) on the same run.

    python benchmarks/bench_metrics.py [--queries 10000] [--depth 100] [--rounds 7]

Synthetic and deterministic: 2,000 documents of 20 chunks (500 characters
each), 10,000 judgments (10% no_answer, the rest with one to three gold spans,
a third of them straddling a chunk boundary), and for each query a ranking of
``depth`` chunk ids in which its first gold chunk appears at a random rank,
or not at all.

Each side goes from its in-memory inputs to every query's values:

- groundkit: ``score_run`` from the judgments' gold spans and the rankings (the qrels derived from the spans,
  then every metric through the providers), on the 9 measures pytrec_eval also computes (hit rate at 1, 3,
  5 and 10 as ``success``, ``mrr`` as ``recip_rank``, nDCG at 1, 3, 5 and 10 as ``ndcg_cut``), and on the
  41 of the default ``score.measures``.
- pytrec_eval: ``RelevanceEvaluator(qrels, the 9)`` and ``evaluate(run)`` from its dicts.
- ir_measures (``iter_calc``, the same 9), for scale.

Every side runs under the collector setting of a groundkit step (``fewer_collections``), as the score stage
does. The rounds interleave the sides, so load from other processes falls on all of them; the table gives
each side's fastest, median and slowest round and the ratios round by round. Before timing, the values of
the 9 measures are checked equal to pytrec_eval's for every answerable query with a ranking.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import print_machine

N_DOCS, CHUNKS_PER_DOC, CHUNK_CHARS = 2_000, 20, 500
KS = [1, 3, 5, 10]


def synthetic(n_queries: int, depth: int, seed: int = 7):
    from groundkit.corpus.judgments import Category
    from groundkit.corpus.passage import Chunk
    from groundkit.corpus.spans import ResolvedJudgment, ResolvedSpan

    rng = random.Random(seed)
    chunks = [
        Chunk(document=f"d{d:05d}.md", start_offset=i * CHUNK_CHARS, end_offset=(i + 1) * CHUNK_CHARS - 1,
              text="x" * (CHUNK_CHARS - 1))
        for d in range(N_DOCS) for i in range(CHUNKS_PER_DOC)
    ]
    by_position = {(c.document, c.start_offset // CHUNK_CHARS): c.chunk_id for c in chunks}
    all_ids = [c.chunk_id for c in chunks]
    answerable = [c for c in Category if c is not Category.NO_ANSWER]
    judgments, rankings = [], {}
    for q in range(n_queries):
        query_id = f"q{q:05d}"
        if q % 10 == 0:
            judgments.append(ResolvedJudgment(query_id=query_id, query="x", category=Category.NO_ANSWER, spans=[]))
            rankings[query_id] = rng.sample(all_ids, rng.choice([0, depth]))
            continue
        spans, gold = [], []
        for _ in range(rng.randint(1, 3)):
            doc, i = f"d{rng.randrange(N_DOCS):05d}.md", rng.randrange(CHUNKS_PER_DOC - 1)
            start = i * CHUNK_CHARS + rng.randrange(0, 400)
            end = start + (200 if rng.random() < 1 / 3 else 50)  # 200 from >= 400 crosses into chunk i + 1
            spans.append(ResolvedSpan(document=doc, quote="x" * (end - start), start=start, end=end))
            gold.append(by_position[(doc, i)])
        judgments.append(ResolvedJudgment(query_id=query_id, query="x", category=rng.choice(answerable), spans=spans))
        ranking = rng.sample(all_ids, depth)
        if rng.random() < 0.8:
            ranking[rng.randrange(depth)] = gold[0]
            ranking = list(dict.fromkeys(ranking))
        rankings[query_id] = ranking
    return judgments, chunks, rankings


PYTREC = ["success_1", "success_3", "success_5", "success_10", "recip_rank", "ndcg_cut_1", "ndcg_cut_3",
          "ndcg_cut_5", "ndcg_cut_10"]
COMPARABLE = [*(f"recall@{k}" for k in KS), "mrr", *(f"ndcg@{k}" for k in KS)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()

    import ir_measures
    import pytrec_eval
    from ir_measures import RR, Qrel, ScoredDoc, Success, nDCG

    from groundkit.config import DEFAULT_MEASURES
    from groundkit.pipeline.collector import fewer_collections
    from groundkit.scoring.score import score_run

    print_machine()
    judgments, chunks, rankings = synthetic(args.queries, args.depth)
    by_id = {c.chunk_id: c for c in chunks}
    result, qrels = score_run(judgments, rankings, by_id, COMPARABLE, universe=chunks)
    run = {q: {c: float(args.depth - r) for r, c in enumerate(ranking)} for q, ranking in rankings.items()
           if q in qrels}
    qrel_list = [Qrel(q, c, g) for q, ids in qrels.items() for c, g in sorted(ids.items())]
    scored = [ScoredDoc(q, c, s) for q, ranked in run.items() for c, s in ranked.items()]
    measures = [*(Success @ k for k in KS), RR, *(nDCG @ k for k in KS)]

    def groundkit(names):
        return lambda: score_run(judgments, rankings, by_id, names, universe=chunks)

    def trec():
        return pytrec_eval.RelevanceEvaluator(qrels, {"success.1,3,5,10", "recip_rank", "ndcg_cut.1,3,5,10"}
                                              ).evaluate(run)

    def irm():
        return list(ir_measures.iter_calc(measures, qrel_list, scored))

    # Sanity: the 9 comparable values of every answerable query with a ranking equal pytrec_eval's.
    reference = trec()
    checked = 0
    for q in result.queries:
        if not q.answerable or not rankings[q.query_id]:
            continue
        for name, theirs in zip(COMPARABLE, PYTREC, strict=True):
            if abs(q.metrics[name] - reference[q.query_id][theirs]) > 1e-9:
                sys.exit(f"error: {q.query_id} {name}: groundkit {q.metrics[name]} != pytrec_eval "
                         f"{reference[q.query_id][theirs]}")
            checked += 1
    print(f"sanity: {checked:,} values equal to pytrec_eval's")

    sides = {"groundkit, the 9 comparable measures": groundkit(COMPARABLE),
             f"groundkit, the {len(DEFAULT_MEASURES)} default measures": groundkit(list(DEFAULT_MEASURES)),
             "pytrec_eval, the 9": trec, "ir_measures, the 9": irm}
    times: dict[str, list[float]] = {name: [] for name in sides}
    with fewer_collections():
        for _ in range(args.rounds):
            for name, side in sides.items():
                start = time.perf_counter()
                side()
                times[name].append(time.perf_counter() - start)
    floor = times["pytrec_eval, the 9"]
    print()
    print(f"| {args.queries:,} queries x {args.depth} | fastest (s) | median | slowest | / pytrec_eval: fastest "
          "rounds | round by round (min, median, max) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, measured in times.items():
        ratios = [t / f for t, f in zip(measured, floor, strict=True)]
        print(f"| {name} | {min(measured):.3f} | {statistics.median(measured):.3f} | {max(measured):.3f} | "
              f"{min(measured) / min(floor):.2f}x | {min(ratios):.2f}x, {statistics.median(ratios):.2f}x, "
              f"{max(ratios):.2f}x |")
    print("targets: the 9 at most 0.75x pytrec_eval; the 41 at most 1.5x pytrec_eval's 9")


if __name__ == "__main__":
    main()
