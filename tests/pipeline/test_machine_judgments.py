"""corpus.machine_judgments in the pipeline: a judge's labels for every query, a person's for a drawn sample.

The example judge (examples/judge_example.py) labels the pools of the committed corpus's 144 answerable
queries; the committed judgments of 50 of them, drawn as `groundkit judgments sample` draws, stand in for the
person. The figures are checked against ppi_py on the per_query.csv the run wrote.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import numpy as np
import pytest
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

from groundkit.cli import main
from groundkit.corpus.judgments import Category, load_judgments, pool_path
from groundkit.labels.sheet import draw
from groundkit.pipeline import dvc_yaml
from groundkit.pipeline.entry import main as stage_main
from groundkit.scoring.ppi import ALPHA
from groundkit.scoring.schema import read_per_query
from tests.conftest import REPO

SEED, N = 1, 50


@pytest.fixture(scope="module")
def labels(tmp_path_factory) -> dict[str, Path]:
    """The judge's labels of the 144 answerable queries, and a person's file of 50 drawn, with their record."""
    folder = tmp_path_factory.mktemp("labels")
    answerable = [j for j in load_judgments(REPO / "evals/judgments.jsonl") if j.category is not Category.NO_ANSWER]
    queries = folder / "queries.jsonl"
    queries.write_text("".join(json.dumps({"query_id": j.query_id, "query": j.query}) + "\n" for j in answerable))
    params = folder / "judge.yaml"
    params.write_text("judge:\n  model: python:examples.judge_example:make_judge\n  options: {judgments: "
                      "evals/judgments.jsonl, false_positive_rate: 0.1, false_negative_rate: 0.1}\n")
    ranked, machine = folder / "ranked", folder / "machine.jsonl"
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(REPO)
        assert main(["run", "--corpus", "evals/corpus", "--queries", str(queries), "--out", str(ranked)]) == 0
        assert main(["judgments", "judge", "--queries", str(queries), "--run", str(ranked), "--depth", "5",
                     "--corpus", "evals/corpus", "--out", str(machine), "--cache", str(folder / "cache"),
                     "--params", str(params)]) == 0
    of = hashlib.sha256(machine.read_bytes()).hexdigest()
    drawn = set(draw([j.query_id for j in answerable], N, seed=SEED))
    lines = (REPO / "evals/judgments.jsonl").read_text().splitlines()
    person, unrecorded = folder / "person.jsonl", folder / "person-by-hand.jsonl"
    chosen = [json.loads(line) for line in lines if line.strip() and json.loads(line)["query_id"] in drawn]
    unrecorded.write_text("".join(json.dumps(record) + "\n" for record in chosen))
    person.write_text("".join(json.dumps({**record, "origin": "human", "sample": {"seed": SEED, "of": of, "n": N}})
                              + "\n" for record in chosen))
    return {"machine": machine, "person": person, "unrecorded": unrecorded, "folder": folder}


def _run(labels: dict[str, Path], out: Path, person: Path | None = None, *extra: str) -> int:
    return main(["run", "--corpus", str(REPO / "evals/corpus"), "--judgments", str(person or labels["person"]),
                 "--params", str(REPO / "params.yaml"), "--set", f"corpus.machine_judgments={labels['machine']}",
                 *extra, "--out", str(out)])


@pytest.fixture(scope="module")
def scored(labels, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("two") / "out"
    assert _run(labels, out) == 0
    return out


def test_the_headline_is_the_prediction_powered_estimate_equal_to_ppi_py(scored, labels):
    metrics = json.loads((scored / "metrics.json").read_text())
    assert list(metrics) == ["ppi"]  # never an answerable-only figure under the judge's labels
    table = read_per_query((scored / "per_query.csv").read_text(), "per_query.csv")
    assert len(table.position) == 144
    for name, figures in metrics["ppi"].items():
        machine = np.nan_to_num(table.values[:, table.metric_names.index(name)], nan=0.0)
        human = table.human_values[:, table.human_names.index(name)]
        labelled = ~np.isnan(human)
        assert labelled.sum() == N
        Y, Yhat, Yhat_u = human[labelled], machine[labelled], machine[~labelled]
        point = ppi_mean_pointestimate(Y, Yhat, Yhat_u, lam=None, lam_optim_mode="overall")
        low, high = ppi_mean_ci(Y, Yhat, Yhat_u, alpha=ALPHA, lam=None, lam_optim_mode="overall")
        theirs = [float(np.ravel(v)[0]) for v in (point, low, high)]
        # per_query.csv and metrics.json both keep 6 decimals: the two roundings bound the difference.
        np.testing.assert_allclose([figures["estimate"], figures["ci_low"], figures["ci_high"]], theirs, atol=3e-6)
    detail = json.loads((scored / "detail.json").read_text())
    assert "judge's labels" in detail["labels"]
    assert (detail["ppi"]["n"], detail["ppi"]["N"]) == (N, 94)
    assert not any("sample record" in w for w in detail["ppi"]["warnings"])  # the person's 50 were drawn
    run_json = json.loads((scored / "run.json").read_text())
    assert run_json["machine_judgments_hash"] == hashlib.sha256(labels["machine"].read_bytes()).hexdigest()


def test_the_readout_shows_the_estimates_first_and_marks_the_judges_figures(labels, tmp_path, capsys):
    assert _run(labels, tmp_path / "out", labels["unrecorded"]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[1].startswith("ppi ") and "ndcg@10" in out and "[" in lines[1]
    assert f"{N} queries labelled by a person, 94 by the judge alone" in out
    assert "every figure below is under the judge's labels alone: biased by its errors" in out
    # Judgments written by hand count, and the output says what the interval assumes.
    assert "carry no sample record" in err and "uniform random sample" in err


def test_a_run_without_machine_judgments_writes_the_same_bytes_as_before(tmp_path):
    """No machine judgments: the committed metrics are what the run writes (the new stage folder is empty)."""
    out = tmp_path / "out"
    assert main(["run", "--corpus", str(REPO / "evals/corpus"), "--judgments", str(REPO / "evals/judgments.jsonl"),
                 "--params", str(REPO / "params.yaml"), "--out", str(out)]) == 0
    for name in ("metrics.json", "per_query.csv", "detail.json"):
        assert (out / name).read_bytes() == (REPO / "metrics" / name).read_bytes(), name
    assert "machine_judgments_hash" not in json.loads((out / "run.json").read_text())
    assert (out / "machine_spans" / "spans.jsonl").read_bytes() == b""


@pytest.mark.parametrize("case", ["person_in_machine_file", "other_question", "same_file"])
def test_labels_that_would_mix_are_refused_before_anything_is_written(labels, tmp_path, capsys, case):
    machine = [json.loads(line) for line in labels["machine"].read_text().splitlines()]
    person = labels["person"]
    if case == "person_in_machine_file":
        for key in ("origin", "judge", "prompt_sha256", "pool_empty"):
            machine[3].pop(key, None)
        expected = f"machine.jsonl:4: holds {machine[3]['query_id']!r}, a person's judgment"
    elif case == "other_question":
        asked = json.loads(person.read_text().splitlines()[0])["query_id"]
        row = next(i for i, m in enumerate(machine) if m["query_id"] == asked)
        machine[row]["query"] += " in 2019"
        expected = f"under the query id {asked!r}, which corpus.judgments asks as"
    bad = tmp_path / "machine.jsonl"
    bad.write_text("".join(json.dumps(m) + "\n" for m in machine))
    out = tmp_path / "out"
    if case == "same_file":
        person, bad = bad, bad
        expected = "is also corpus.machine_judgments: a person's judgments and a judge's are kept in two files"
    code = _run({**labels, "machine": bad}, out, person)
    err = capsys.readouterr().err
    assert code != 0 and expected in err and "Traceback" not in err
    assert not out.exists()


def test_dvc_yaml_passes_machine_judgments_only_where_params_name_them():
    plain = dvc_yaml.render(dvc_yaml.OWN)
    both = dvc_yaml.render(dvc_yaml.Layout(machine_judgments=True))
    assert "machine_judgments" not in plain.replace("build/machine_spans", "")
    assert both.count("--machine-judgments '${corpus.machine_judgments}'") == 3  # check, validate, resolve
    assert both.count("- ${corpus.machine_judgments}") == 2  # check-inputs declares its paths as params
    installed = dvc_yaml.render(dvc_yaml.installed("9.9", labels=dvc_yaml.Layout(machine_judgments=True)))
    assert installed.count("- ${corpus.machine_judgments}") == 2 and "--machine-pool" not in installed
    # The judge's pool is named as found beside the file, on resolve-spans's command line and as its dependency.
    pooled = dvc_yaml.render(dvc_yaml.Layout(machine_judgments=True, machine_pool="labels/machine.pool.jsonl"))
    assert pooled.count("--machine-pool 'labels/machine.pool.jsonl'") == 1
    assert pooled.count("- labels/machine.pool.jsonl") == 1


def test_a_stage_refuses_params_naming_machine_judgments_that_dvc_yaml_does_not_pass(labels, tmp_path, capsys,
                                                                                     monkeypatch):
    monkeypatch.chdir(REPO)
    params = tmp_path / "params.yaml"
    params.write_text((REPO / "params.yaml").read_text().replace(
        "  judgments: evals/judgments.jsonl", f"  judgments: evals/judgments.jsonl\n  machine_judgments: "
        f"{labels['machine']}", 1))
    argv = ["validate-judgments", "--params", str(params), "--judgments", "evals/judgments.jsonl", "--corpus",
            "evals/corpus", "--out", str(tmp_path / "v.json"), "--audit-out", str(tmp_path / "a.json")]
    from groundkit.console.guard import guarded

    assert guarded(stage_main, argv) != 0
    err = capsys.readouterr().err
    assert "does not pass corpus.machine_judgments" in err and "dvc_yaml --write" in err
    assert not (tmp_path / "v.json").exists()
    # Handed over, it runs and records the file's hash beside the others.
    assert guarded(stage_main, [*argv, "--machine-judgments", str(labels["machine"])]) == 0
    recorded = json.loads((tmp_path / "v.json").read_text())
    assert recorded["machine_judgments_hash"] == hashlib.sha256(labels["machine"].read_bytes()).hexdigest()


def test_compare_refuses_sides_scored_under_other_machine_judgments(scored, labels, tmp_path, capsys):
    plain = tmp_path / "plain"  # the same person's judgments, no judge
    assert main(["run", "--corpus", str(REPO / "evals/corpus"), "--judgments", str(labels["person"]), "--params",
                 str(REPO / "params.yaml"), "--out", str(plain)]) == 0
    capsys.readouterr()
    assert main(["compare", str(plain), str(scored)]) != 0
    err = capsys.readouterr().err
    assert "was scored under other machine judgments than the baseline" in err


def test_the_report_shows_the_estimates_and_marks_the_judges_figures(scored):
    page = (scored / "report.html").read_text()
    metrics = json.loads((scored / "metrics.json").read_text())["ppi"]
    figures = metrics["ndcg@10"]
    # The page computes the estimates from per_query.csv (6 decimals), the score stage from the values themselves.
    shown = re.search(r"<th>ndcg@10</th><td>([0-9.]+) \[([0-9.]+), ([0-9.]+)\]</td>", page)
    assert shown is not None
    np.testing.assert_allclose([float(x) for x in shown.groups()],
                               [figures["estimate"], figures["ci_low"], figures["ci_high"]], atol=1e-4)
    assert "Headline (the judge's labels: biased)" in page
    assert f"with {N} queries labelled by a person and 94 by the judge alone, a true change of about" in page


def _top(run_trec: Path, k: int) -> dict[str, list[str]]:
    ranked: dict[str, list[tuple[int, str]]] = {}
    for line in run_trec.read_text().splitlines():
        query_id, _, passage_id, rank, _, _ = line.split()
        ranked.setdefault(query_id, []).append((int(rank), passage_id))
    return {q: [p for _, p in sorted(r)[:k]] for q, r in ranked.items()}


def test_judged_at_k_counts_the_passages_the_judge_saw_and_warns_below_1(scored, labels):
    """The judge saw each query's top 5 of the same ranking: judged@5 is 1, and judged@10 is worked out here
    from run.trec, the chunks, the judge's pool and its gold spans."""
    judged = json.loads((scored / "run.json").read_text())["judged"]
    assert judged["1"] == judged["5"] == 1.0
    chunks = {c["chunk_id"]: c for c in map(json.loads, (scored / "chunks.jsonl").read_text().splitlines())}
    pool = {}
    for row in map(json.loads, pool_path(labels["machine"]).read_text().splitlines()):
        pool.setdefault((row["query_id"], row["document"]), []).append((row["start"], row["end"]))
    gold = {}
    for judgment in map(json.loads, (scored / "machine_spans" / "spans.jsonl").read_text().splitlines()):
        gold[judgment["query_id"]] = [(s["document"], s["start"], s["end"]) for s in judgment["spans"]]
    shares = []
    for query_id, top in _top(scored / "run.trec", 10).items():
        seen = 0
        for passage_id in top:
            c = chunks[passage_id]
            start, end = c["start_offset"], c["end_offset"]
            inside = any(a <= start and end <= b for a, b in pool.get((query_id, c["document"]), ()))
            overlaps = any(d == c["document"] and s < end and start < e for d, s, e in gold[query_id])
            seen += inside or overlaps
        shares.append(seen / len(top))
    assert judged["10"] == pytest.approx(sum(shares) / len(shares), abs=5e-7) and judged["10"] < 1
    detail = json.loads((scored / "detail.json").read_text())
    assert any(f"ranks passages the judge never saw ({judged['10']:.4f} of the top 10" in w
               for w in detail["ppi"]["warnings"])


def test_the_report_shows_the_agreement_the_agreement_command_prints(scored, labels, capsys):
    assert main(["judgments", "agreement", "--machine", str(labels["machine"]), "--judgments", str(labels["person"]),
                 "--corpus", str(REPO / "evals/corpus")]) == 0
    printed = capsys.readouterr().out
    kappa = re.search(r"Cohen's kappa ([0-9.]+), 95% bootstrap interval \[([0-9.]+), ([0-9.]+)\]", printed).groups()
    confusion = re.findall(r"judge: (?:relevant|not)\s+(\d+)\s+(\d+)", printed)
    page = (scored / "report.html").read_text()
    assert (f"Cohen's kappa <strong>{kappa[0]}</strong>, 95% bootstrap interval [{kappa[1]}, {kappa[2]}]"
            in page)
    (yy, yn), (ny, nn) = confusion
    assert f"<th>judge: relevant</th><td>{yy}</td><td>{yn}</td>" in page
    assert f"<th>judge: not relevant</th><td>{ny}</td><td>{nn}</td>" in page


def test_compare_flags_sides_that_rank_passages_the_judge_never_saw(scored, labels, tmp_path, capsys):
    smaller = tmp_path / "size400"
    assert _run(labels, smaller, None, "--set", "chunk.size=400") == 0
    capsys.readouterr()
    assert main(["compare", str(scored), str(smaller)]) in (0, 4)
    err = capsys.readouterr().err
    before = json.loads((scored / "run.json").read_text())["judged"]["10"]
    after = json.loads((smaller / "run.json").read_text())["judged"]["10"]
    assert before < 1 and after < 1
    assert f"judged in the top 10 under the judge's labels: {scored} {before:.4f}, {smaller} {after:.4f}" in err
