"""Issue 40 on the committed corpus: the example judge labels every answerable query's pool, the committed
judgments stand in for the person on a sample of 50, and the PPI block equals ppi_py on those very values
(benchmarks/bench_ppi_corpus.py measures the widths)."""

from __future__ import annotations

import json

import numpy as np
from ppi_py import classical_mean_ci, ppi_mean_ci, ppi_mean_pointestimate

from groundkit.artifacts.lines import read_models
from groundkit.cli import main
from groundkit.corpus.judgments import Category, load_judgments
from groundkit.corpus.passage import Chunk, Document
from groundkit.corpus.spans import resolve_judgments
from groundkit.labels.sheet import draw
from groundkit.pipeline.stages import CHUNKS, DOCUMENTS, written_by
from groundkit.reports.pool import read_folder
from groundkit.scoring.ppi import ALPHA
from groundkit.scoring.schema import read_per_query
from groundkit.scoring.score import score_two_label_sets
from groundkit.scoring.two_labels import LabelSets, estimate
from tests.conftest import REPO

METRIC = "ndcg@10"


def test_ppi_on_the_committed_corpus_equals_ppi_py_with_50_labelled_and_94_judged(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    answerable = [j for j in load_judgments("evals/judgments.jsonl") if j.category is not Category.NO_ANSWER]
    queries = tmp_path / "queries.jsonl"
    queries.write_text("".join(json.dumps({"query_id": j.query_id, "query": j.query}) + "\n" for j in answerable))
    params = tmp_path / "judge.yaml"
    params.write_text("judge:\n  model: python:examples.judge_example:make_judge\n  options: {judgments: "
                      "evals/judgments.jsonl, false_positive_rate: 0.1, false_negative_rate: 0.1}\n")
    run, machine_file = tmp_path / "run", tmp_path / "machine.jsonl"
    assert main(["run", "--corpus", "evals/corpus", "--judgments", "evals/judgments.jsonl", "--params",
                 "params.yaml", "--out", str(run)]) == 0
    assert main(["judgments", "judge", "--queries", str(queries), "--run", str(run), "--depth", "5", "--corpus",
                 "evals/corpus", "--out", str(machine_file), "--cache", str(tmp_path / "cache"), "--params",
                 str(params)]) == 0

    folder = read_folder(run)
    chunks = read_models(run / CHUNKS.name, Chunk, producer=written_by(CHUNKS))
    documents = {d.path: d for d in read_models(run / DOCUMENTS.name, Document, producer=written_by(DOCUMENTS))}
    machine = resolve_judgments(load_judgments(machine_file), documents, judgments_path=machine_file)
    rankings = {q: [p.passage_id for p in ranked] for q, ranked in folder.run.rankings.items()}
    result, _ = score_two_label_sets(machine, folder.spans, rankings, {c.passage_id: c for c in chunks}, [METRIC],
                                     universe=chunks)
    sets = LabelSets.from_result(result)
    ids = [q.query_id for q in result.queries]
    assert len(answerable) == 144 and ids == [j.query_id for j in answerable]
    # The person's values are the committed run's own (per_query.csv writes 6 decimals).
    table = read_per_query((run / "per_query.csv").read_text(), "per_query.csv")
    column = table.metric_names.index(METRIC)
    committed = [table.values[table.position[q], column] for q in ids]
    np.testing.assert_allclose(sets.human[:, 0], committed, rtol=0, atol=5e-7)

    drawn = set(draw(ids, 50, seed=1))  # as `groundkit judgments sample --n 50 --seed 1` draws
    labelled = np.array([q in drawn for q in ids])
    block = estimate(LabelSets(sets.names, sets.machine, np.where(labelled[:, None], sets.human, np.nan)))
    assert (block["n"], block["N"]) == (50, 94)
    Y, Yhat, Yhat_u = sets.human[labelled, 0], sets.machine[labelled, 0], sets.machine[~labelled, 0]
    figures = block["metrics"][METRIC]
    point = ppi_mean_pointestimate(Y, Yhat, Yhat_u, lam=None, lam_optim_mode="overall")
    low, high = ppi_mean_ci(Y, Yhat, Yhat_u, alpha=ALPHA, lam=None, lam_optim_mode="overall")
    c_low, c_high = classical_mean_ci(Y, alpha=ALPHA)
    theirs = [float(np.ravel(v)[0]) for v in (point, low, high, c_low, c_high)]
    ours = [figures["estimate"], figures["ci_low"], figures["ci_high"], figures["human_only"]["ci_low"],
            figures["human_only"]["ci_high"]]
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-9)
    assert 0 < figures["lambda"] < 1  # the judge tells something, and not everything: lambda is tuned, not clipped
    assert figures["machine_only"]["mean"] == float(sets.machine[:, 0].mean())
