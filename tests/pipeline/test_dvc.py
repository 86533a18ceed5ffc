"""The DVC pipeline for real: a temporary clone, `dvc repro`, caching rules, fail-closed.

Nothing of DVC is mocked. Each test works in its own copy of the working tree.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess

import pytest
import yaml

from tests.dvc_helpers import clone_working_tree, copy_of, env, repro, reproduced_clone, run, tree_digest

pytestmark = pytest.mark.integration

ALL_STAGES = {"check-inputs", "validate-judgments", "resolve-spans", "chunk", "index", "embed", "retrieve", "score",
              "report"}


@pytest.fixture(scope="module")
def reproduced(tmp_path_factory):
    """A copy of the session's fresh clone on which `dvc repro` has run once (every stage ran)."""
    template, printed = reproduced_clone(tmp_path_factory)
    assert set(re.findall(r"Running stage '([^']+)'", printed)) == ALL_STAGES
    return copy_of(template, tmp_path_factory.mktemp("clone") / "repo")


def test_fresh_repro_reproduces_the_committed_baseline(reproduced):
    assert json.loads(run(["dvc", "status", "--json"], reproduced).stdout) == {}
    assert json.loads(run(["dvc", "metrics", "diff", "HEAD", "--json"], reproduced).stdout) == {}
    # dvc.lock, metrics.json, per_query.csv and run.json are byte-identical to the committed ones.
    assert run(["git", "status", "--porcelain"], reproduced).stdout == ""


def test_a_forced_rerun_is_byte_identical_and_its_stages_import_only_what_they_need(reproduced, tmp_path):
    """Every stage under DVC again (``dvc repro -f``), with Python writing bytecode as it does on a user's machine:
    the same bytes as the first run.

    A ``sitecustomize`` module on PYTHONPATH records, as each stage process exits, which heavy
    packages it imported: import time is most of a stage's start-up (benchmarks/bench_pipeline.py),
    and scipy alone costs most of a second. The ``__pycache__`` folders the stages leave inside the
    code folders DVC hashes must not make the pipeline look changed.
    """
    heavy = ("numpy", "scipy", "pandas", "torch", "transformers", "ray", "bm25s", "matplotlib")
    record = tmp_path / "imports.txt"
    (tmp_path / "sitecustomize.py").write_text(
        "import atexit, os, sys\n"
        "def _record():\n"
        "    if sys.argv and sys.argv[0].endswith('stage.py') and len(sys.argv) > 1:\n"
        f"        found = sorted({{m.split('.')[0] for m in sys.modules}} & set({heavy!r}))\n"
        "        tops = {m.split('.')[0] for m in sys.modules if not m.startswith('_')}\n"
        "        other = sorted(tops - set(sys.stdlib_module_names) - {'groundkit', 'stage', 'sitecustomize'})\n"
        "        with open(os.environ['GROUNDKIT_IMPORTS_RECORD'], 'a') as out:\n"
        "            out.write(sys.argv[1] + ' ' + ','.join(found) + ' ' + ','.join(other) + '\\n')\n"
        "atexit.register(_record)\n", encoding="utf-8")
    environment = {key: value for key, value in env(PYTHONPATH=str(tmp_path),
                                                      GROUNDKIT_IMPORTS_RECORD=str(record)).items()
                   if key not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    before = tree_digest(reproduced / "build", reproduced / "metrics")
    out = subprocess.run(["dvc", "repro", "-f"], cwd=reproduced, env=environment, capture_output=True, text=True,
                         check=False)
    assert out.returncode == 0, out.stderr
    assert set(re.findall(r"Running stage '([^']+)'", out.stdout + out.stderr)) == ALL_STAGES
    assert tree_digest(reproduced / "build", reproduced / "metrics") == before
    lines = [line.split(" ") for line in record.read_text(encoding="utf-8").splitlines()]
    imported = {stage: heavy_found for stage, heavy_found, _ in lines}
    numpy_stages = {"index", "retrieve", "score", "report"}
    assert imported == {stage: "numpy" if stage in numpy_stages else "" for stage in ALL_STAGES}
    # The first stage, which every experiment's copy runs, starts on the standard library alone.
    others = {stage: other for stage, _, other in lines}
    assert others["check-inputs"] == "" and "pydantic" in others["validate-judgments"].split(","), others
    assert any((reproduced / "groundkit").rglob("*.pyc")), "no bytecode written: the check below proves nothing"
    assert json.loads(run(["dvc", "status", "--json"], reproduced).stdout) == {}
    assert run(["git", "status", "--porcelain"], reproduced).stdout == ""


def test_another_checkout_path_and_hash_seed_give_identical_artifacts(reproduced, tmp_path_factory):
    other = clone_working_tree(tmp_path_factory.mktemp("elsewhere") / "deeper" / "checkout")
    ran, _ = repro(other, PYTHONHASHSEED="12345")
    assert ran == ALL_STAGES
    assert tree_digest(other / "build", other / "metrics") == tree_digest(reproduced / "build", reproduced / "metrics")


def test_runner_writes_the_same_artifacts_as_the_pipeline(reproduced, tmp_path):
    out = tmp_path / "out"
    result = run(["groundkit", "run", "--corpus", "evals/corpus", "--judgments", "evals/judgments.jsonl",
                  "--params", "params.yaml", "--out", str(out)], reproduced)
    assert "answerable" in result.stdout
    assert (out / "metrics.json").read_bytes() == (reproduced / "metrics" / "metrics.json").read_bytes()
    for name in ("chunks.jsonl", "gold_spans.jsonl", "run.trec", "qrels.trec"):
        assert (out / name).read_bytes() == (reproduced / "build" / name).read_bytes(), name
    assert run(["git", "status", "--porcelain"], reproduced).stdout == ""


def _edit_params(repo, section: str, key: str, value) -> None:
    path = repo / "params.yaml"
    data = yaml.safe_load(path.read_text())
    data[section][key] = value
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def test_caching_rules(reproduced, tmp_path_factory):
    repo = copy_of(reproduced, tmp_path_factory.mktemp("cache") / "repo")
    assert repro(repo)[0] == set()  # a copy of a reproduced repository is up to date

    _edit_params(repo, "retrieve", "depth", 50)
    assert repro(repo)[0] == {"retrieve", "score", "report"}

    _edit_params(repo, "bm25", "k1", 0.9)
    ran = repro(repo)[0]
    assert {"index", "retrieve", "score"} <= ran
    assert not ran & {"validate-judgments", "resolve-spans", "chunk"}

    chunks_before = (repo / "build" / "chunks.jsonl").read_text().count("\n")
    _edit_params(repo, "chunk", "size", 400)
    ran = repro(repo)[0]
    assert "chunk" in ran
    # Regression: DVC's run-cache key ignores params named `size`; dvc.yaml works around it.
    assert (repo / "build" / "chunks.jsonl").read_text().count("\n") > chunks_before
    assert not ran & {"validate-judgments", "resolve-spans"}

    judgments = repo / "evals" / "judgments.jsonl"
    lines = judgments.read_text().splitlines(keepends=True)
    first = json.loads(lines[0])
    first["query"] += " please"
    lines[0] = json.dumps(first) + "\n"
    judgments.write_text("".join(lines))
    ran = repro(repo)[0]
    assert {"validate-judgments", "resolve-spans", "retrieve", "score"} <= ran
    assert not ran & {"chunk", "index", "embed"}


def test_external_run_through_dvc_equals_score_run(reproduced, tmp_path_factory, tmp_path):
    """retrieve.retriever=external makes the retrieve stage read the run; the numbers equal `groundkit score-run`."""
    repo = copy_of(reproduced, tmp_path_factory.mktemp("external") / "repo")
    _edit_params(repo, "retrieve", "retriever", "external")
    assert repro(repo)[0] == {"embed", "retrieve", "score", "report"}
    out = tmp_path / "out"
    run(["groundkit", "score-run", "examples/runs/langchain_example.jsonl", "--corpus", "evals/corpus",
         "--judgments", "evals/judgments.jsonl", "--params", "params.yaml", "--out", str(out)], repo)
    for name in ("metrics.json", "per_query.csv", "run.json"):
        assert (out / name).read_bytes() == (repo / "metrics" / name).read_bytes(), name
    assert json.loads((out / "run.json").read_text())["params"]["retrieve"]["retriever"] == "external"
    baseline = run(["git", "show", "HEAD:metrics/metrics.json"], repo).stdout
    assert json.loads((out / "metrics.json").read_text()) != json.loads(baseline)
    # Editing the external run re-runs retrieve: DVC tracks the file named by retrieve.run.
    example = repo / "examples" / "runs" / "langchain_example.jsonl"
    # Re-spacing its JSON changes no ranking and no passage: only the SHA-256 the retrieve stage records of the
    # bytes it read, which score checks against the file and run.json reports.
    built = tree_digest(repo / "build")
    example.write_text("".join(json.dumps(json.loads(line), separators=(",", ":")) + "\n"
                               for line in example.read_text().splitlines()))
    assert repro(repo)[0] == {"retrieve", "score", "report"}
    changed = {k for k, v in tree_digest(repo / "build").items() if built.get(k) != v}
    assert changed == {"build/passages/params.json"}
    digest = hashlib.sha256(example.read_bytes()).hexdigest()
    assert json.loads((repo / "metrics" / "run.json").read_text())["external_run"]["sha256"] == digest
    example.write_text("".join(line for line in example.read_text().splitlines(keepends=True)
                               if '"q001"' not in line))
    assert {"retrieve", "score"} <= repro(repo)[0]


def test_corpus_paths_reach_the_stages_verbatim(tmp_path_factory):
    """dvc.yaml single-quotes every path: a space is part of a name, and shell syntax is never run."""
    repo = clone_working_tree(tmp_path_factory.mktemp("paths") / "repo")
    committed = (repo / "metrics" / "metrics.json").read_bytes()
    for name in ("my corpus", "x $(touch PWNED)"):
        shutil.copytree(repo / "evals" / "corpus", repo / "evals" / name)
    run(["git", "add", "-A"], repo)
    run(["git", "commit", "-q", "-m", "the corpus under two awkward names"], repo)

    # The second value is quoted for DVC's own -S parser, which treats parentheses as syntax.
    for root, override in (("evals/my corpus", "corpus.root=evals/my corpus"),
                           ("evals/x $(touch PWNED)", "corpus.root='evals/x $(touch PWNED)'")):
        run(["dvc", "exp", "run", "-S", override], repo)
        lock = yaml.safe_load((repo / "dvc.lock").read_text(encoding="utf-8"))
        assert root in {dep["path"] for dep in lock["stages"]["resolve-spans"]["deps"]}
        assert (repo / "metrics" / "metrics.json").read_bytes() == committed, root
    assert not list(repo.rglob("PWNED"))


def test_broken_quote_stops_at_resolve_spans_before_chunking(tmp_path_factory):
    repo = clone_working_tree(tmp_path_factory.mktemp("broken") / "repo")
    judgments = repo / "evals" / "judgments.jsonl"
    lines = judgments.read_text().splitlines(keepends=True)
    record = json.loads(lines[0])
    record["gold"][0]["quote"] += " (edited)"
    lines[0] = json.dumps(record) + "\n"
    judgments.write_text("".join(lines))

    ran, result = repro(repo, check=False)
    assert result.returncode != 0
    assert "resolve-spans" in ran
    assert not ran & {"chunk", "index", "retrieve", "score"}
    output = result.stdout + result.stderr
    assert f"judgment {record['query_id']!r}" in output and "quote not found" in output
    assert "Traceback" not in output
    assert not (repo / "build" / "chunks.jsonl").exists()
    assert not (repo / "build" / "index").exists()


def test_exported_trec_files_agree_with_ir_measures(reproduced):
    """build/run.trec + build/qrels.trec through ir_measures give metrics.json's per-query values (no ties)."""
    import csv
    from collections import defaultdict

    import ir_measures
    from ir_measures import RR, Success, nDCG

    run = list(ir_measures.read_trec_run(str(reproduced / "build" / "run.trec")))
    qrels = list(ir_measures.read_trec_qrels(str(reproduced / "build" / "qrels.trec")))
    scores = defaultdict(list)
    for doc in run:
        scores[doc.query_id].append(round(doc.score, 6))
    tie_free = {q for q, s in scores.items() if len(set(s)) == len(s)}
    with (reproduced / "metrics" / "per_query.csv").open(encoding="utf-8") as handle:
        rows = {r["query_id"]: r for r in csv.DictReader(handle)}
    answerable = {q for q, r in rows.items() if r["category"] != "no_answer"}
    assert len(tie_free & answerable) >= 0.8 * len(answerable)
    names = {"Success@1": "recall@1", "Success@3": "recall@3", "Success@10": "recall@10", "RR": "mrr",
             "nDCG@10": "ndcg@10"}
    checked = 0
    for m in ir_measures.iter_calc([Success @ 1, Success @ 3, Success @ 10, RR, nDCG @ 10], qrels, run):
        if m.query_id in tie_free:
            assert float(rows[m.query_id][names[str(m.measure)]]) == pytest.approx(m.value, abs=1e-6)
            checked += 1
    assert checked >= 5 * 0.8 * len(answerable)


def test_a_number_dvc_exp_run_writes_as_text_stops_the_first_stage_that_reads_it(reproduced):
    """`dvc exp run -S chunk.size=010` writes `size: '010'` (text to YAML 1.2, which DVC reads params.yaml with).

    The chunk stage, the first to run, refuses it naming params.yaml; it once read its command line's copy
    with YAML 1.1, chunked at 8 characters, and left the index stage to fail on the file.
    """
    index = tree_digest(reproduced / "build" / "index")
    chunks = (reproduced / "build" / "chunks.jsonl").read_bytes()
    result = run(["dvc", "exp", "run", "-S", "chunk.size=010"], reproduced, check=False)
    try:
        written = yaml.safe_load((reproduced / "params.yaml").read_text(encoding="utf-8"))["chunk"]["size"]
        # The chunk stage's outputs persist (DVC's run cache never serves chunking: dvc.yaml says why), so the
        # refused stage leaves the chunks it found, byte for byte: nothing chunked at 8 characters, nothing cut short.
        rechunked = (reproduced / "build" / "chunks.jsonl").read_bytes() != chunks
    finally:
        run(["git", "checkout", "--", "params.yaml"], reproduced)
        run(["dvc", "checkout", "-q"], reproduced)
    output = result.stdout + result.stderr
    assert (written, result.returncode != 0, rechunked) == ("010", True, False)
    assert re.findall(r"Running stage '([^']+)'", output) == ["chunk"]
    assert "params.yaml: key 'chunk.size': Input should be a valid integer (got '010')" in output
    assert "Traceback" not in output
    assert tree_digest(reproduced / "build" / "index") == index
    assert json.loads(run(["dvc", "status", "--json"], reproduced).stdout) == {}


def test_machine_judgments_through_dvc_equal_the_runner_and_re_run_when_edited(reproduced, tmp_path_factory):
    """corpus.machine_judgments: refused until dvc.yaml passes it, then a dependency like the person's file."""
    repo = copy_of(reproduced, tmp_path_factory.mktemp("machine") / "repo")
    (repo / "labels").mkdir()
    judge = repo / "labels" / "judge.yaml"
    judge.write_text("judge:\n  model: python:examples.judge_example:make_judge\n  options: {judgments: "
                     "evals/judgments.jsonl, false_positive_rate: 0.1, false_negative_rate: 0.1}\n")
    run(["groundkit", "run", "--corpus", "evals/corpus", "--queries", "evals/judgments.jsonl", "--out", "ranked"],
        repo)
    run(["groundkit", "judgments", "judge", "--queries", "evals/judgments.jsonl", "--run", "ranked", "--depth", "5",
         "--corpus", "evals/corpus", "--out", "labels/machine.jsonl", "--cache", "labels/cache", "--params",
         "labels/judge.yaml"], repo)
    lines = (repo / "evals" / "judgments.jsonl").read_text().splitlines(keepends=True)
    (repo / "labels" / "person.jsonl").write_text("".join(lines[::3]))  # a person's labels for a third
    data = yaml.safe_load((repo / "params.yaml").read_text())
    data["corpus"].update(judgments="labels/person.jsonl", machine_judgments="labels/machine.jsonl")
    (repo / "params.yaml").write_text(yaml.safe_dump(data, sort_keys=False))

    _, refused = repro(repo, check=False)
    assert refused.returncode != 0
    assert "does not pass corpus.machine_judgments" in refused.stderr and "Traceback" not in refused.stderr
    run(["python", "-m", "groundkit.pipeline.dvc_yaml", "--write", "--root", str(repo)], repo)
    assert {"validate-judgments", "resolve-spans", "retrieve", "score", "report"} <= repro(repo)[0]
    metrics = json.loads((repo / "metrics" / "metrics.json").read_text())
    assert list(metrics) == ["ppi"] and set(metrics["ppi"]) == set(data["score"]["headline"])
    shown = json.loads(run(["dvc", "metrics", "show", "--json"], repo).stdout)
    assert "ppi" in json.dumps(shown)

    out = repo / "runner"
    run(["groundkit", "run", "--corpus", "evals/corpus", "--judgments", "labels/person.jsonl", "--params",
         "params.yaml", "--out", str(out)], repo)
    for name in ("metrics.json", "per_query.csv", "detail.json", "run.json"):
        assert (out / name).read_bytes() == (repo / "metrics" / name).read_bytes(), name

    # The judge's pool beside it is a dependency too: judged@k and agreement are read from it.
    assert "--machine-pool 'labels/machine.pool.jsonl'" in (repo / "dvc.yaml").read_text()
    pool = repo / "labels" / "machine.pool.jsonl"
    pool.write_text("".join(pool.read_text().splitlines(keepends=True)[::2]))
    assert {"resolve-spans", "score"} <= repro(repo)[0]
    assert json.loads((repo / "metrics" / "run.json").read_text())["judged"]["5"] < 1

    machine = repo / "labels" / "machine.jsonl"
    machine.write_text("".join(machine.read_text().splitlines(keepends=True)[:-1]))
    ran = repro(repo)[0]
    assert {"validate-judgments", "resolve-spans", "retrieve", "score"} <= ran
    assert not ran & {"chunk", "index", "embed"}
    assert json.loads((repo / "metrics" / "run.json").read_text())["machine_judgments_hash"] == \
        hashlib.sha256(machine.read_bytes()).hexdigest()
