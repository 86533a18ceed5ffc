"""A whole `groundkit run` on a BEIR collection at depth 1000, against bm25s called directly on the same tokens.

    python benchmarks/bench_beir_depth.py [BEIR_DIR]   # default ../shared/data/scifact

The collection is imported once (import-beir, not timed). Then, side by side and interleaved:

- groundkit: the whole in-process ``groundkit run`` (pipeline/runner.py) with ``chunk.strategy=document``,
  the default tokenizer, k1=1.2, b=0.75 and ``retrieve.depth`` 1000 (and 100, for the depth curve): read
  the imported corpus, validate and audit, resolve spans, chunk, tokenize and index, retrieve, write the
  TREC run and check it back, score, report, write every artifact, into the same --out each time (--force).
- bm25s script: what a script calling bm25s directly does to write the same run from the BEIR files:
  read corpus.jsonl, queries.jsonl and qrels/test.tsv (the test queries with a relevant document), build
  each document's text as import-beir does (title, blank line, text), tokenize documents and queries with
  groundkit's tokenizer (the same tokens), ``BM25(method="lucene").index``, ``retrieve(k=1000)`` on one
  thread, and write a TREC run. Each side starts from its collection's files on disk; the target (at most
  1.3x) is against this side.
- The same two as whole processes: ``python -m groundkit.cli run ...`` and ``python SCRIPT`` (the script
  above, written to a file), from the interpreter's start to its exit: imports and start-up count.
- The same script given the texts and queries already in memory, and bm25s's index and retrieve calls
  alone on tokens given: shown so that the reading's share is plain, and as the floor of the library.

Sanity first: the script must return the same top 1000 as groundkit (same documents with the same
scores, up to ties at the cut-off) for every query. Each side's fastest of ``--repeats`` runs counts;
the ratio within each round (the two sides a second apart) is shown too, as its median and range, since
a shared machine's speed drifts by more than the margins measured here.
"""

from __future__ import annotations

import argparse
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

from _common import DEFAULT_SCIFACT, print_machine

K1, B, DEPTH = 1.2, 0.75, 1000
TARGET = 1.3

SCRIPT = """import json, sys
from pathlib import Path

import bm25s

from groundkit.corpus.beir import document_text
from groundkit.corpus.tokenizing import tokenize

beir, out = Path(sys.argv[1]), Path(sys.argv[2])
ids, texts = [], []
with (beir / "corpus.jsonl").open(encoding="utf-8") as handle:
    for line in handle:
        record = json.loads(line)
        ids.append(record["_id"])
        texts.append(document_text(record.get("title", ""), record.get("text", "")))
with (beir / "queries.jsonl").open(encoding="utf-8") as handle:
    by_id = {r["_id"]: r["text"] for r in map(json.loads, handle)}
tested = {}
with (beir / "qrels" / "test.tsv").open(encoding="utf-8") as handle:
    for line in handle:
        query_id, _, score = line.rstrip("\\n").split("\\t")
        if score != "score" and int(score) > 0:
            tested[query_id] = None
asked = list(tested)
model = bm25s.BM25(k1=%(k1)r, b=%(b)r, method="lucene")
model.index([tokenize(t) for t in texts], show_progress=False)
found = model.retrieve([tokenize(by_id[q]) for q in asked], k=%(depth)r, show_progress=False, n_threads=0)
with out.open("w", encoding="utf-8") as handle:
    for i, query_id in enumerate(asked):
        keep = found.scores[i] > 0
        handle.writelines(f"{query_id} Q0 {ids[d]} {rank} {float(s)!r} bm25s\\n" for rank, (d, s) in
                          enumerate(zip(found.documents[i][keep], found.scores[i][keep]), start=1))
"""


def _children_cpu() -> float:
    """CPU seconds of the processes this one waited for (the whole-process sides)."""
    times = os.times()
    return times.children_user + times.children_system


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir", nargs="?", default=str(DEFAULT_SCIFACT))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    import bm25s

    from groundkit.config import load_params
    from groundkit.corpus.beir import document_id, document_text, import_beir
    from groundkit.corpus.documents import load_corpus
    from groundkit.corpus.judgments import load_judgments
    from groundkit.corpus.tokenizing import tokenize
    from groundkit.pipeline.runner import run

    print_machine()
    work = Path(tempfile.mkdtemp(prefix="gk-bench-beir-"))
    import_beir(args.data_dir, work / "imp")
    corpus, judgments_path = work / "imp" / "corpus", work / "imp" / "judgments.jsonl"
    documents = load_corpus(corpus)
    judgments = load_judgments(judgments_path)
    names = [d.path for d in documents]
    texts = [d.text for d in documents]
    queries = [(j.query_id, j.query) for j in judgments]
    print(f"{Path(args.data_dir).name}: {len(texts)} documents, {len(queries)} queries with a relevant document")

    def params(depth: int):
        return load_params(None, ["chunk.strategy=document", f"retrieve.depth={depth}",
                                  f"bm25.k1={K1}", f"bm25.b={B}"])

    def groundkit_run(depth: int, out: Path) -> None:
        run(corpus, judgments_path, params(depth), out, force=True)

    beir = Path(args.data_dir)

    def bm25s_script(out: Path | None) -> dict[str, list[tuple[str, float]]]:
        """From the BEIR files to a run, as a script calling bm25s would do it."""
        ids, doc_texts = [], []
        with (beir / "corpus.jsonl").open(encoding="utf-8") as handle:
            for line in handle:
                record = json.loads(line)
                ids.append(record["_id"])
                doc_texts.append(document_text(record.get("title", ""), record.get("text", "")))
        with (beir / "queries.jsonl").open(encoding="utf-8") as handle:
            texts_by_id = {r["_id"]: r["text"] for r in map(json.loads, handle)}
        tested: dict[str, None] = {}
        with (beir / "qrels" / "test.tsv").open(encoding="utf-8") as handle:
            for line in handle:
                query_id, _, score = line.rstrip("\n").split("\t")
                if score != "score" and int(score) > 0:
                    tested[query_id] = None
        script_queries = [(q, texts_by_id[q]) for q in tested]
        tokens = [tokenize(t) for t in doc_texts]
        query_tokens = [tokenize(q) for _, q in script_queries]
        return bm25s_search(tokens, query_tokens, out, script_queries, ids)

    def bm25s_in_memory(out: Path | None) -> dict[str, list[tuple[str, float]]]:
        tokens = [tokenize(t) for t in texts]
        query_tokens = [tokenize(q) for _, q in queries]
        return bm25s_search(tokens, query_tokens, out, queries, names)

    def bm25s_search(tokens, query_tokens, out: Path | None, asked, doc_names) -> dict[str, list[tuple[str, float]]]:
        model = bm25s.BM25(k1=K1, b=B, method="lucene")
        model.index(tokens, show_progress=False)
        found = model.retrieve(query_tokens, k=DEPTH, show_progress=False, n_threads=0)
        rankings = {}
        for i, (query_id, _) in enumerate(asked):
            keep = found.scores[i] > 0
            rankings[query_id] = [(doc_names[d], float(s)) for d, s in
                                  zip(found.documents[i][keep], found.scores[i][keep], strict=True)]
        if out is not None:
            with out.open("w", encoding="utf-8") as handle:
                for query_id, ranking in rankings.items():
                    handle.writelines(f"{query_id} Q0 {name} {rank} {score!r} bm25s\n"
                                      for rank, (name, score) in enumerate(ranking, start=1))
        return rankings

    # Sanity: the same top 1000, document for document, except among ties at the cut-off.
    groundkit_run(DEPTH, work / "gk")

    chunk_doc = {}
    for line in (work / "gk" / "chunks.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        chunk_doc[record["chunk_id"]] = document_id(record["document"])  # back to the BEIR id
    ours: dict[str, list[tuple[str, float]]] = {}
    for line in (work / "gk" / "run.trec").read_text(encoding="utf-8").splitlines():
        query_id, _, chunk_id, _, score, _ = line.split(" ")
        ours.setdefault(query_id, []).append((chunk_doc[chunk_id], float(score)))
    theirs = bm25s_script(None)
    agree = 0
    for query_id, _ in queries:
        a, b = ours.get(query_id, []), theirs[query_id]
        same_scores = len(a) == len(b) and all(math.isclose(x[1], y[1], rel_tol=1e-5) for x, y in zip(a, b,
                                                                                                   strict=True))
        last = a[-1][1] if a else 0.0
        firm = {d for d, s in a if not math.isclose(s, last, rel_tol=1e-5)}
        agree += same_scores and firm == {d for d, s in b if not math.isclose(s, last, rel_tol=1e-5)}
    ndcg = json.loads((work / "gk" / "detail.json").read_text())["answerable"]["ndcg@10"]
    print(f"sanity: same top {DEPTH} as bm25s for {agree}/{len(queries)} queries; groundkit nDCG@10 = {ndcg:.4f}")
    # Genuine ties: trec_eval orders tied documents by docno, so only there may it differ from groundkit's order.
    scores = {q: [s for _, s in r] for q, r in ours.items()}
    tied = sum(len(set(s)) < len(s) for s in scores.values())
    tied_top = sum(len(set(s[:11])) < len(s[:11]) for s in scores.values())
    print(f"ties: {tied}/{len(scores)} queries have two equal scores somewhere in their run, {tied_top} within "
          "the top 10 (or at the 10th/11th boundary)")
    if agree != len(queries):
        sys.exit("error: the two runs differ; timings would compare different work")

    if set(theirs) != {q for q, _ in queries}:
        sys.exit("error: the script's test queries are not groundkit's judgments")
    tokens = [tokenize(t) for t in texts]
    query_tokens = [tokenize(q) for _, q in queries]
    (work / "script.py").write_text(SCRIPT % {"k1": K1, "b": B, "depth": DEPTH}, encoding="utf-8")

    # Python writes bytecode on a user's machine; this sandbox may say otherwise, which would make every
    # process compile groundkit's modules from source.
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

    def process(*command: str) -> None:
        subprocess.run([sys.executable, *command], check=True, capture_output=True, env=environment)

    cli = ["-m", "groundkit.cli", "run", "--corpus", str(corpus), "--judgments", str(judgments_path), "--out",
           str(work / "gk-process"), "--force", "--set", "chunk.strategy=document", "--set", f"retrieve.depth={DEPTH}",
           "--set", f"bm25.k1={K1}", "--set", f"bm25.b={B}"]
    process(*cli)
    process(str(work / "script.py"), str(beir), str(work / "script.trec"))
    bm25s_script(work / "bm25s.trec")
    if (work / "script.trec").read_bytes() != (work / "bm25s.trec").read_bytes():
        sys.exit("error: the script as a process wrote another run than in process")
    best = {"groundkit depth 1000": math.inf, "groundkit depth 100": math.inf, "bm25s script": math.inf,
            "bm25s script, collection in memory": math.inf, "bm25s index + retrieve only": math.inf,
            "groundkit run, a whole process": math.inf, "bm25s script, a whole process": math.inf}
    cpu = dict.fromkeys(best, math.inf)
    paired: list[float] = []  # groundkit depth 1000 / bm25s script within each round
    paired_process: list[float] = []  # the same as whole processes
    sides = [("groundkit depth 1000", lambda: groundkit_run(DEPTH, work / "gk")),
             ("groundkit depth 100", lambda: groundkit_run(100, work / "gk100")),
             ("bm25s script", lambda: bm25s_script(work / "bm25s.trec")),
             ("bm25s script, collection in memory", lambda: bm25s_in_memory(work / "bm25s.trec")),
             ("bm25s index + retrieve only", lambda: bm25s_search(tokens, query_tokens, None, queries, names)),
             ("groundkit run, a whole process", lambda: process(*cli)),
             ("bm25s script, a whole process", lambda: process(str(work / "script.py"), str(beir),
                                                                str(work / "script.trec")))]
    for round_ in range(args.repeats):
        took: dict[str, float] = {}
        # Interleaved, so that other load falls on every side alike, and rotated: a side run just after
        # another pays for what that one left (memory handed back to the system, pages to fault in again),
        # so each side follows each other side equally often.
        shift = round_ % len(sides)
        for name, job in sides[shift:] + sides[:shift]:
            start, start_cpu = time.perf_counter(), time.process_time() + _children_cpu()
            job()
            took[name] = time.perf_counter() - start
            best[name] = min(best[name], took[name])
            cpu[name] = min(cpu[name], time.process_time() + _children_cpu() - start_cpu)
        paired.append(took["groundkit depth 1000"] / took["bm25s script"])
        paired_process.append(took["groundkit run, a whole process"] / took["bm25s script, a whole process"])
    floor, floor_cpu = best["bm25s script"], cpu["bm25s script"]
    print()
    print("| side | seconds | / bm25s script | CPU seconds | / bm25s script |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, seconds in best.items():
        print(f"| {name} | {seconds:.2f} | {seconds / floor:.2f}x | {cpu[name]:.2f} | {cpu[name] / floor_cpu:.2f}x |")
    print(f"depth 1000 / depth 100 (groundkit): {best['groundkit depth 1000'] / best['groundkit depth 100']:.2f}x")
    ratio = best["groundkit depth 1000"] / floor
    whole = best["groundkit run, a whole process"] / best["bm25s script, a whole process"]
    in_memory = best["groundkit depth 1000"] / best["bm25s script, collection in memory"]
    print(f"target: groundkit depth 1000 <= {TARGET}x the bm25s script, in process: {ratio:.2f}x "
          f"({'met' if ratio <= TARGET else 'NOT met'}); as whole processes: {whole:.2f}x "
          f"({'met' if whole <= TARGET else 'NOT met'}); {in_memory:.2f}x the script given its collection in memory")
    for label, measured in (("in process", paired), ("whole processes", paired_process)):
        rounds = sorted(measured)
        print(f"the ratio {label}, round by round ({len(rounds)} rounds): median {statistics.median(rounds):.2f}x, "
              f"from {rounds[0]:.2f}x to {rounds[-1]:.2f}x")


if __name__ == "__main__":
    main()
