"""PPI++ on the committed corpus, labelled by issue 39's deterministic judge: what 50 human labels and a judge buy.

Not a simulation (section 13 is one): every figure comes from the real commands and the real scoring path.

1. ``groundkit run`` ranks the committed corpus's judgments under the committed params.yaml (BM25), and
   ``groundkit judgments judge`` labels the top ``--depth`` (5, as docs/llm-labels.md's flow) of every
   answerable query (144) with ``examples/judge_example.py``: gold quotes known, 10% of relevant answers
   dropped and 10% of the rest invented, at places fixed by a hash. Its cache is a temporary folder.
2. ``score_two_label_sets`` scores the run's ndcg@10 under the judge's labels for all 144 queries and under
   the committed (human) judgments, which stand in for the person. The person's labelled set is a sample of
   ``--n`` = 50 drawn as ``groundkit judgments sample --seed S`` draws it (``random.Random(S).sample`` of the
   sorted ids); the other 94 have the judge's labels only. ``LabelSets`` + ``estimate`` (what a run scored
   under two label sets reports) give the PPI++ estimate and ppi_py's classical interval on the 50.
3. Four rows for the first seed: human-only on the 50, PPI on 50 + 94, the classical interval on all 144
   under the person's labels (the estimand itself is their mean), and the judge's mean over the 144 (biased:
   its interval is around the judge's mean, not the person's). Then the median and range over ``--seeds``
   draws, so one lucky draw does not decide.

The MDE is that of a comparison of two runs at 80% power, two-sided alpha 0.05, as section 13 states it:
``(z(0.975) + z(0.8)) * sqrt(2) * se`` (``groundkit.scoring.ppi.minimum_detectable_effect`` of ``sqrt(2) * se``),
``se`` the row's standard error (PPI's, or the classical ``std(ddof=0) / sqrt(n)``). The sqrt(2) is compare's
cautious convention when only the baseline is known (groundkit/reports/compare.py ``detectable``): the paired
differences taken to vary sqrt(2) times as much as one run's values. With both runs scored, compare uses the
PPI standard error of the paired differences instead (groundkit/reports/compare_ppi.py), which is smaller when
the runs' per-query errors are related. For the human rows compare's own figure (sign-flip threshold, sd
ddof 1) is printed beside it for scale.

Every PPI and classical figure is cross-checked against ppi_py 0.2.3 (``ppi_mean_pointestimate``,
``ppi_mean_ci`` with ``lam=None, lam_optim_mode="overall"``, ``classical_mean_ci``; alpha 0.05) over every
draw: the largest absolute difference is printed, and above 1e-9 the script exits 1.

    python benchmarks/bench_ppi_corpus.py [--n 50] [--seed 1] [--seeds 20] [--depth 5] [--params params.yaml]
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

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO, print_machine

from groundkit.artifacts.lines import read_models
from groundkit.config import Params, load_params
from groundkit.corpus.judgments import Category, load_judgments
from groundkit.corpus.passage import Chunk, Document
from groundkit.corpus.spans import resolve_judgments
from groundkit.errors import ArtifactError
from groundkit.labels.sheet import draw
from groundkit.pipeline.stages import CHUNKS, DOCUMENTS, written_by
from groundkit.reports.pool import read_folder
from groundkit.reports.stats import minimum_detectable_effect as compare_mde
from groundkit.scoring.measures import Relevance
from groundkit.scoring.ppi import ALPHA, classical_mean, minimum_detectable_effect
from groundkit.scoring.schema import read_per_query
from groundkit.scoring.score import score_two_label_sets
from groundkit.scoring.two_labels import LabelSets, estimate

METRIC = "ndcg@10"
JUDGE = "python:examples.judge_example:make_judge"
FALSE_POSITIVE_RATE = FALSE_NEGATIVE_RATE = 0.1
TOLERANCE = 1e-9


def groundkit(*args: str) -> str:
    """Run the ``groundkit`` command on this checkout (its tree first on PYTHONPATH); its stdout."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-m", "groundkit.cli", *args], cwd=REPO, env=env, capture_output=True,
                          text=True)
    if done.returncode:
        sys.exit(f"groundkit {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
    return done.stdout


def judge_corpus(work: Path, params_path: Path, params: Params, depth: int) -> tuple[Path, Path, int]:
    """Rank the committed judgments, then have the example judge label every answerable query's pool.

    Returns the results folder, the machine judgments file and the number of answerable queries.
    """
    root, judgments = REPO / params.corpus.root, REPO / params.corpus.judgments
    answerable = [j for j in load_judgments(judgments) if j.category is not Category.NO_ANSWER]
    queries = work / "queries.jsonl"
    queries.write_text("".join(json.dumps({"query_id": j.query_id, "query": j.query}) + "\n" for j in answerable),
                       encoding="utf-8")
    judge_params = work / "judge.yaml"
    judge_params.write_text(json.dumps({"judge": {"model": JUDGE, "options": {
        "judgments": str(judgments), "false_positive_rate": FALSE_POSITIVE_RATE,
        "false_negative_rate": FALSE_NEGATIVE_RATE}}}), encoding="utf-8")  # JSON is YAML
    folder, machine = work / "run", work / "machine.jsonl"
    groundkit("run", "--corpus", str(root), "--judgments", str(judgments), "--params", str(params_path),
              "--out", str(folder))
    said = groundkit("judgments", "judge", "--queries", str(queries), "--run", str(folder), "--depth", str(depth),
                     "--corpus", str(root), "--out", str(machine), "--cache", str(work / "cache"),
                     "--params", str(judge_params))
    print("groundkit judgments judge: " + said.strip().replace("\n", "\n  "))
    return folder, machine, len(answerable)


def label_sets(folder: Path, machine_path: Path, params: Params) -> tuple[list[str], LabelSets]:
    """The run's ndcg@10 for every machine-judged query under the judge's labels and under the person's."""
    run = read_folder(folder)  # the rankings, and the person's judgments resolved as the run scored them
    chunks = read_models(folder / CHUNKS.name, Chunk, producer=written_by(CHUNKS))
    documents = {d.path: d for d in read_models(folder / DOCUMENTS.name, Document, producer=written_by(DOCUMENTS))}
    machine = resolve_judgments(load_judgments(machine_path), documents, judgments_path=machine_path,
                                corpus_root=params.corpus.root)
    rankings = {q: [p.passage_id for p in ranked] for q, ranked in run.run.rankings.items()}
    # BM25 ranks chunks: every chunk is a passage it could have returned, so the chunks are the universe.
    result, _ = score_two_label_sets(machine, run.spans, rankings, {c.passage_id: c for c in chunks}, [METRIC],
                                     universe=chunks, relevance=Relevance(params.score.min_overlap))
    sets = LabelSets.from_result(result)
    if sets is None or sets.names != [METRIC]:
        sys.exit(f"scoring under two label sets gave {None if sets is None else sets.names}, not [{METRIC!r}]")
    return [q.query_id for q in result.queries], sets


def mde(se: float) -> float:
    """Two runs' difference found at 80% power, their differences sqrt(2) times one run's spread (docstring)."""
    return minimum_detectable_effect(math.sqrt(2) * se)


def one_draw(ids: list[str], sets: LabelSets, n: int, seed: int) -> dict[str, object]:
    """The person labels ``draw(ids, n, seed)``; what groundkit reports, and ppi_py's figures for the same."""
    drawn = set(draw(ids, n, seed))
    mask = np.array([q in drawn for q in ids])
    block = estimate(LabelSets(sets.names, sets.machine, np.where(mask[:, None], sets.human, np.nan)))
    figures = block["metrics"][METRIC]
    z = statistics.NormalDist().inv_cdf(1 - ALPHA / 2)
    person = figures["human_only"]
    Y, Yhat, Yhat_u = sets.human[mask, 0], sets.machine[mask, 0], sets.machine[~mask, 0]
    return {
        "seed": seed, "n": block["n"], "N": block["N"], "lambda": figures["lambda"],
        "correlation": figures["correlation"], "warnings": block["warnings"],
        "ppi": (figures["estimate"], figures["ci_low"], figures["ci_high"], figures["std_error"]),
        # ppi_py's classical interval is mean -+ z * se: its se is the half-width over z.
        "human": (person["estimate"], person["ci_low"], person["ci_high"],
                  (person["ci_high"] - person["ci_low"]) / (2 * z)),
        "sd": float(np.std(Y, ddof=1)), "labels": (Y, Yhat, Yhat_u),
    }


def ppi_py_difference(draws: list[dict[str, object]]) -> float:
    """The largest |groundkit - ppi_py| over every draw's PPI estimate and interval and classical interval."""
    try:
        from ppi_py import classical_mean_ci, ppi_mean_ci, ppi_mean_pointestimate
    except ImportError:
        sys.exit("ppi_py is the reference here: pip install ppi_python==0.2.3 (groundkit's test extra)")
    worst = 0.0
    for d in draws:
        Y, Yhat, Yhat_u = d["labels"]
        point = ppi_mean_pointestimate(Y, Yhat, Yhat_u, lam=None, lam_optim_mode="overall")
        low, high = ppi_mean_ci(Y, Yhat, Yhat_u, alpha=ALPHA, lam=None, lam_optim_mode="overall")
        c_low, c_high = classical_mean_ci(Y, alpha=ALPHA)
        ours = [*d["ppi"][:3], *d["human"][1:3]]
        theirs = [float(np.ravel(v)[0]) for v in (point, low, high, c_low, c_high)]
        worst = max(worst, max(abs(a - b) for a, b in zip(ours, theirs, strict=True)))
    return worst


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} [{min(values):.3f}, {max(values):.3f}]"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50, help="queries the person labels")
    parser.add_argument("--seed", type=int, default=1, help="the first draw's seed (groundkit judgments sample)")
    parser.add_argument("--seeds", type=int, default=20, help="draws, seeds --seed, --seed + 1, ...")
    parser.add_argument("--depth", type=int, default=5, help="pooled passages of each query the judge labels")
    parser.add_argument("--params", type=Path, default=REPO / "params.yaml")
    args = parser.parse_args()
    print_machine()
    start = time.perf_counter()
    params = load_params(args.params)
    with tempfile.TemporaryDirectory(prefix="bench_ppi_corpus-") as tmp:
        folder, machine_path, answerable = judge_corpus(Path(tmp), args.params, params, args.depth)
        ids, sets = label_sets(folder, machine_path, params)
        committed = read_per_query((folder / "per_query.csv").read_text(encoding="utf-8"), "per_query.csv",
                                   ArtifactError)
    judged = time.perf_counter() - start
    column = committed.metric_names.index(METRIC)
    as_run = np.array([committed.values[committed.position[q], column] for q in ids])
    truth, machine = sets.human[:, 0], sets.machine[:, 0]
    print(f"\n{answerable} answerable queries in {params.corpus.judgments}, {len(ids)} machine-judged; the person's "
          f"{METRIC} on all of them equals the run's per_query.csv to {np.max(np.abs(truth - as_run)):.1e} (it is "
          "written at 6 decimals)")
    missed, invented = int(np.sum((machine == 0) & (truth > 0))), int(np.sum((truth == 0) & (machine > 0)))
    print(f"judge against person over the {len(ids)} queries: correlation {np.corrcoef(truth, machine)[0, 1]:.3f}, "
          f"judge mean {machine.mean():.4f} against {truth.mean():.4f}; queries the judge scores 0 and the person "
          f"does not: {missed}, the reverse: {invented}")

    draws = [one_draw(ids, sets, args.n, args.seed + s) for s in range(args.seeds)]
    everyone = classical_mean(truth).row(0)
    believer = classical_mean(machine).row(0)
    first = draws[0]
    print(f"\n{METRIC}, seed {first['seed']} (groundkit judgments sample --n {args.n} --seed {first['seed']}): "
          f"n = {first['n']} labelled by the person, N = {first['N']} by the judge alone; lambda "
          f"{first['lambda']:.3f}, judge-person correlation on the {first['n']} {first['correlation']:.3f}\n")
    print("| estimator | queries | ndcg@10 | 95% interval | width | MDE | compare's MDE |")
    print("| --- | --- | ---: | --- | ---: | ---: | ---: |")
    rows = [
        ("human-only", f"{first['n']} labelled", first["human"],
         compare_mde(math.sqrt(2) * first["sd"], first["n"], ALPHA)),
        ("PPI++", f"{first['n']} + {first['N']}", first["ppi"], None),
        ("all human", f"{len(ids)} labelled", (everyone.estimate, everyone.ci_low, everyone.ci_high,
                                               everyone.std_error),
         compare_mde(math.sqrt(2) * float(np.std(truth, ddof=1)), len(ids), ALPHA)),
        ("judge only (biased)", f"{len(ids)} by the judge", (believer.estimate, believer.ci_low, believer.ci_high,
                                                            believer.std_error), None),
    ]
    for name, queries, (point, low, high, se), theirs in rows:
        print(f"| {name} | {queries} | {point:.4f} | [{low:.4f}, {high:.4f}] | {high - low:.3f} | {mde(se):.3f} | "
              f"{'-' if theirs is None else f'{theirs:.3f}'} |")
    for warning in first["warnings"]:
        print(f"warning: {warning}")

    def width(d: dict[str, object], key: str) -> float:
        return d[key][2] - d[key][1]

    target = float(truth.mean())
    print(f"\nover {args.seeds} draws (seeds {args.seed} to {args.seed + args.seeds - 1}): median [min, max]\n")
    print("| | human-only | PPI++ | all human |")
    print("| --- | ---: | ---: | ---: |")
    print(f"| width | {spread([width(d, 'human') for d in draws])} | {spread([width(d, 'ppi') for d in draws])} | "
          f"{everyone.width:.3f} |")
    print(f"| MDE | {spread([mde(d['human'][3]) for d in draws])} | {spread([mde(d['ppi'][3]) for d in draws])} | "
          f"{mde(everyone.std_error):.3f} |")
    print(f"| width / human-only | 1 | {spread([width(d, 'ppi') / width(d, 'human') for d in draws])} | "
          f"{spread([everyone.width / width(d, 'human') for d in draws])} |")
    print(f"| covers the all-human mean {target:.4f} | "
          + " | ".join(f"{sum(d[k][1] <= target <= d[k][2] for d in draws)} of {args.seeds}" for k in ("human", "ppi"))
          + " | - |")
    print(f"\nlambda {spread([d['lambda'] for d in draws])}; judge-person correlation on the labelled "
          f"{spread([d['correlation'] for d in draws])}; PPI no wider than human-only in "
          f"{sum(width(d, 'ppi') <= width(d, 'human') for d in draws)} of {args.seeds} draws")

    worst = ppi_py_difference(draws)
    print(f"\nppi_py 0.2.3 against groundkit over {args.seeds} draws (PPI estimate and interval, classical interval): "
          f"max abs difference {worst:.1e}")
    print(f"\n{judged:.1f} s to rank and judge, {time.perf_counter() - start:.1f} s in all")
    if worst > TOLERANCE:
        print(f"CROSS-CHECK FAILED: groundkit and ppi_py differ by {worst:.1e} > {TOLERANCE:.0e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
