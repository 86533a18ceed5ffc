"""Metrics: scoring 10,000 queries at depth 100, against ir_measures on the same run.

    python benchmarks/bench_metrics.py [--queries 10000] [--depth 100]

Synthetic and deterministic: 2,000 documents of 20 chunks (500 characters
each), 10,000 judgments (10% no_answer, the rest with one to three gold spans,
a third of them straddling a chunk boundary), and for each query a ranking of
``depth`` chunk ids in which its first gold chunk appears at a random rank,
or not at all.

Timed: ``score_run`` (qrels from spans, then every metric of the default
``score.measures`` per query: rank, budget and character-span measures),
``StageResult.summary()`` (metrics.json) and ``per_query_csv()``; the score
stage does exactly this. Beside it, ir_measures (pytrec_eval, C) computes the
same measures on the same run and qrels; the values must agree (the run has
no tied scores), and the ratio is printed.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import best_of, print_machine

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    import ir_measures
    from ir_measures import RR, Qrel, ScoredDoc, Success, nDCG

    from groundkit.config import DEFAULT_MEASURES
    from groundkit.scoring.score import score_run

    print_machine()
    judgments, chunks, rankings = synthetic(args.queries, args.depth)

    by_id = {c.chunk_id: c for c in chunks}

    def ours():
        result, qrels = score_run(judgments, rankings, by_id, DEFAULT_MEASURES, universe=chunks)
        return result, qrels, result.summary(), result.per_query_csv()

    result, qrels, _, _ = ours()
    measures = [*(Success @ k for k in KS), RR, *(nDCG @ k for k in KS)]
    names = [*(f"recall@{k}" for k in KS), "mrr", *(f"ndcg@{k}" for k in KS)]
    qrel_list = [Qrel(q, c, 1) for q, ids in qrels.items() for c in sorted(ids)]
    run = [ScoredDoc(q, c, float(args.depth - r)) for q, ranking in rankings.items() if q in qrels
           for r, c in enumerate(ranking)]

    def theirs():
        return list(ir_measures.iter_calc(measures, qrel_list, run))

    # Sanity: every answerable query's metrics equal ir_measures' (queries with an empty run are absent there).
    reference = {(m.query_id, str(m.measure)): m.value for m in theirs()}
    checked = 0
    for q in result.queries:
        if not q.answerable or not rankings[q.query_id]:
            continue
        for name, measure in zip(names, measures, strict=True):
            if abs(q.metrics[name] - reference[(q.query_id, str(measure))]) > 1e-9:
                sys.exit(f"error: {q.query_id} {name}: groundkit {q.metrics[name]} != ir_measures "
                         f"{reference[(q.query_id, str(measure))]}")
            checked += 1
    print(f"sanity: {checked} values equal to ir_measures")

    t_ours = best_of(args.repeats, ours)
    t_theirs = best_of(args.repeats, theirs)
    print()
    print(f"| {args.queries:,} queries, depth {args.depth} | seconds | ratio |")
    print("| --- | ---: | ---: |")
    print(f"| groundkit score_run + summary + per_query_csv ({len(DEFAULT_MEASURES)} metrics) | {t_ours:.3f} "
          "| 1.00x |")
    print(f"| ir_measures.iter_calc ({len(measures)} of them; qrels given) | {t_theirs:.3f} "
          f"| {t_theirs / t_ours:.2f}x |")
    print("target: groundkit under 2 seconds")


if __name__ == "__main__":
    main()
