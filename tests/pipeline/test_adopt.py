"""`groundkit init` in a team's own git repository: what it writes, what it never touches, how it refuses.

These run the checkout's groundkit; tests/test_wheel.py runs the same story from a built wheel, with
`dvc repro`, experiments and the pull-request script.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from groundkit import __version__
from groundkit.config import load_params
from groundkit.pipeline import adopt, dvc_yaml
from groundkit.pipeline.adopt import RECORD, Request, yaml_scalar
from tests.conftest import write_tiny_corpus
from tests.dvc_helpers import REPO, run

TEAM_FILES = ("dvc.yaml", "params.yaml", ".github/workflows/retrieval-eval.yml", "scripts/groundkit-pr-eval.sh")


def groundkit(*args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run([sys.executable, "-m", "groundkit.cli", *args], cwd, check=check)


def team_repo(tmp_path: Path) -> Path:
    """A fresh git repository of a team's own, with a small corpus and judgments, nothing of groundkit yet."""
    repo = tmp_path / "team"
    repo.mkdir()
    run(["git", "init", "-q", "-b", "main"], repo)
    write_tiny_corpus(repo / "data" / "docs", repo / "data" / "judgments.jsonl")
    (repo / ".gitignore").write_text("/.venv/\n", encoding="utf-8")
    return repo


def snapshot(repo: Path) -> dict[str, bytes]:
    """Every file outside .git, by path: to show that a refused init wrote nothing."""
    return {str(p.relative_to(repo)): p.read_bytes() for p in sorted(repo.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(repo).parts[:1]}


# --- one set of templates for groundkit's repository and a team's


def test_groundkits_own_files_are_the_templates_rendered_for_its_tree():
    assert (REPO / "params.yaml").read_text(encoding="utf-8") == adopt.params_text(
        "evals/corpus", "evals/judgments.jsonl", "examples/runs/langchain_example.jsonl",
        no_answer_shares_words="error")
    assert (REPO / adopt.WORKFLOW).read_text(encoding="utf-8") == adopt.workflow_text("pip install -e .",
                                                                                       adopt.OWN_SCRIPT)
    assert (REPO / adopt.OWN_SCRIPT).read_text(encoding="utf-8") == adopt.script_text(adopt.OWN_SCRIPT)


def test_a_teams_params_are_groundkits_defaults_at_its_paths(tmp_path):
    text = adopt.params_text("data/my docs", "data/j.jsonl", "data/j.jsonl")
    (tmp_path / "params.yaml").write_text(text, encoding="utf-8")
    theirs, ours = load_params(tmp_path / "params.yaml"), load_params(REPO / "params.yaml")
    assert (theirs.corpus.root, theirs.corpus.judgments, theirs.retrieve.run) == ("data/my docs", "data/j.jsonl",
                                                                                   "data/j.jsonl")
    for section in ("chunk", "bm25", "tokenize", "dense", "hybrid", "score", "audit", "execution"):
        mine = getattr(ours, section).model_dump()
        if section == "audit":  # the golden corpus measures abstention; a team's no_answer questions share words
            assert (mine["no_answer_shares_words"], theirs.audit.no_answer_shares_words) == ("error", "warn")
            mine["no_answer_shares_words"] = "warn"
        assert getattr(theirs, section).model_dump() == mine, section


@pytest.mark.parametrize("path", ["docs", "my docs", "a#b", "x: y", "-lead", "yes", "010", "null", "été/ü",
                                  "[x]", "{a}", "~", "'q", '"dq', " pad", "@at", "%pc", "a,b"])
def test_paths_are_written_as_yaml_that_reads_back_verbatim(path):
    assert yaml.safe_load(f"key: {yaml_scalar(path)}\n") == {"key": path}


def test_the_installed_layout_runs_groundkit_stage_and_depends_on_no_groundkit_file():
    text = dvc_yaml.render(layout=dvc_yaml.installed("1.2.3", ["retrievers"]))
    stages = yaml.safe_load(text)["stages"]
    assert list(stages) == list(yaml.safe_load((REPO / "dvc.yaml").read_text(encoding="utf-8"))["stages"])
    for name, stage in stages.items():
        assert stage["cmd"].startswith(f"groundkit stage {name} --groundkit-version 1.2.3"), name
        assert not {"groundkit", "stages"} & set(stage.get("deps", [])), name
    # The team's code: a dependency of the stages that import it (a python: retriever, a python: chunker);
    # check-inputs only checks it is there.
    for importing in ("chunk", "retrieve"):
        assert "retrievers" in stages[importing]["deps"] and "--code 'retrievers'" in stages[importing]["cmd"]
    assert "deps" not in stages["check-inputs"] and "--code 'retrievers'" in stages["check-inputs"]["cmd"]
    assert not any("retrievers" in stage.get("deps", []) for name, stage in stages.items()
                   if name not in ("chunk", "retrieve"))
    # Outputs, params and plots are those of groundkit's own pipeline.
    own = yaml.safe_load((REPO / "dvc.yaml").read_text(encoding="utf-8"))
    for name, stage in stages.items():
        for key in ("params", "outs", "metrics", "plots"):
            assert stage.get(key) == own["stages"][name].get(key), (name, key)
    assert yaml.safe_load(text)["plots"] == own["plots"]


# --- a first init, and a second


def test_init_writes_the_pipeline_runs_dvc_init_and_says_what_to_run_next(tmp_path):
    repo = team_repo(tmp_path)
    shown = groundkit("init", "--corpus", "data/docs", "--judgments", "data/judgments.jsonl", cwd=repo).stdout
    for path in TEAM_FILES:
        assert (repo / path).is_file(), path
        assert path in shown
    assert (repo / ".dvc").is_dir() and "dvc init" in shown
    assert "next:" in shown and "dvc repro" in shown and "dvc exp run -S chunk.size=400" in shown
    assert f"wrote      {RECORD}" in shown and "the first evaluation" in shown  # the record is listed too
    assert (repo / "dvc.yaml").read_text(encoding="utf-8") == dvc_yaml.render(layout=dvc_yaml.installed(__version__))
    params = load_params(repo / "params.yaml")
    assert (params.corpus.root, params.corpus.judgments) == ("data/docs", "data/judgments.jsonl")
    record = json.loads((repo / RECORD).read_text(encoding="utf-8"))
    assert record["groundkit"] == __version__ and sorted(record["files"]) == sorted(TEAM_FILES)
    assert (repo / ".gitignore").read_text(encoding="utf-8").startswith("/.venv/\n")  # the team's line kept
    assert "/build/" in (repo / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert "__pycache__/" in (repo / ".dvcignore").read_text(encoding="utf-8").splitlines()
    assert (repo / adopt.SCRIPT).stat().st_mode & 0o111
    workflow = (repo / adopt.WORKFLOW).read_text(encoding="utf-8")
    assert f'pip install "groundkit=={__version__}"' in workflow and adopt.SCRIPT in workflow
    # No copy of groundkit goes into the team's repository.
    assert not (repo / "groundkit").exists() and not (repo / "stages").exists()


def test_a_second_init_keeps_what_the_team_edited_and_adds_nothing_twice(tmp_path):
    repo = team_repo(tmp_path)
    groundkit("init", "--corpus", "data/docs", "--judgments", "data/judgments.jsonl", cwd=repo)
    params = repo / "params.yaml"
    edited = params.read_text(encoding="utf-8").replace("size: 800", "size: 400")
    params.write_text(edited, encoding="utf-8")
    ignores = {name: (repo / name).read_text(encoding="utf-8") for name in (".gitignore", ".dvcignore")}
    again = groundkit("init", "--corpus", "data/docs", "--judgments", "data/judgments.jsonl", cwd=repo).stdout
    assert params.read_text(encoding="utf-8") == edited
    assert "params.yaml" in again and "edited since groundkit wrote it: left as it is" in again
    assert {name: (repo / name).read_text(encoding="utf-8") for name in ignores} == ignores
    assert f"updated    {RECORD}" in again
    # Once dvc.lock is there, the next `dvc repro` is no first evaluation.
    (repo / "dvc.lock").write_text("schema: '2.0'\nstages: {}\n", encoding="utf-8")
    later = groundkit("init", cwd=repo).stdout
    assert "first evaluation" not in later and "re-runs what this init changed" in later
    # --force rewrites only what groundkit wrote and nobody changed: the edited params.yaml stays.
    forced = groundkit("init", "--force", cwd=repo).stdout
    assert params.read_text(encoding="utf-8") == edited and "left as it is" in forced


def test_force_rewrites_groundkits_unchanged_files_with_the_new_paths(tmp_path):
    repo = team_repo(tmp_path)
    groundkit("init", "--corpus", "data/docs", "--judgments", "data/judgments.jsonl", cwd=repo)
    shutil.copytree(repo / "data" / "docs", repo / "docs2")
    kept = groundkit("init", "--corpus", "docs2", cwd=repo).stdout
    assert load_params(repo / "params.yaml").corpus.root == "data/docs"  # without --force: kept, and said
    assert "--force" in kept
    groundkit("init", "--corpus", "docs2", "--force", cwd=repo)
    assert load_params(repo / "params.yaml").corpus.root == "docs2"


def test_next_steps_name_the_repositorys_own_default_branch(tmp_path):
    repo = tmp_path / "fresh"
    repo.mkdir()
    # A fresh `git init` where git's default is master: the PR check's base is master, not main.
    run(["git", "-c", "init.defaultBranch=master", "init", "-q"], repo)
    write_tiny_corpus(repo / "data" / "docs", repo / "data" / "judgments.jsonl")
    shown = groundkit("init", "--corpus", "data/docs", "--judgments", "data/judgments.jsonl", cwd=repo).stdout
    assert f"{adopt.SCRIPT} master   # the pull-request check" in shown and f"{adopt.SCRIPT} main" not in shown
    # A clone: the remote's default branch, whichever branch is checked out.
    run(["git", "checkout", "-q", "-b", "feature"], repo)
    run(["git", "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/trunk"], repo)
    assert adopt.default_branch(repo) == "trunk"


def test_upgrade_at_the_installed_version_says_nothing_was_upgraded(tmp_path):
    repo = team_repo(tmp_path)
    groundkit("init", "--corpus", "data/docs", "--judgments", "data/judgments.jsonl", cwd=repo)
    rendered = {path: (repo / path).read_bytes() for path in TEAM_FILES}
    shown = groundkit("init", "--upgrade", cwd=repo).stdout
    assert f"nothing upgraded: dvc.yaml, the workflow and its script already run groundkit {__version__}" in shown
    assert "groundkit upgraded" not in shown and "next:" not in shown and "rewrote" not in shown
    assert {path: (repo / path).read_bytes() for path in TEAM_FILES} == rendered


def test_upgrade_renders_the_pipeline_for_the_installed_version_and_never_an_edited_file(tmp_path):
    repo = team_repo(tmp_path)
    adopt.init(repo, Request(corpus="data/docs", judgments="data/judgments.jsonl"), "0.0.9")
    params = (repo / "params.yaml").read_bytes()
    # A plain init under another version keeps dvc.yaml, and says --upgrade renders it.
    outcome = adopt.init(repo, Request(), "0.1.0")
    assert ("kept", "dvc.yaml") in [(verb, path) for verb, path, _ in outcome.lines]
    assert "--groundkit-version 0.0.9" in (repo / "dvc.yaml").read_text(encoding="utf-8")
    adopt.init(repo, Request(upgrade=True), "0.1.0")
    text = (repo / "dvc.yaml").read_text(encoding="utf-8")
    assert "--groundkit-version 0.1.0" in text and "0.0.9" not in text
    assert 'groundkit==0.1.0' in (repo / adopt.WORKFLOW).read_text(encoding="utf-8")
    assert (repo / "params.yaml").read_bytes() == params
    # An edited dvc.yaml is the team's now: --upgrade leaves it and fails, naming it.
    (repo / "dvc.yaml").write_text(text + "# our note\n", encoding="utf-8")
    failed = groundkit("init", "--upgrade", cwd=repo, check=False)
    assert failed.returncode == 1 and "dvc.yaml" in failed.stderr and "--upgrade left it as it is" in failed.stderr
    assert (repo / "dvc.yaml").read_text(encoding="utf-8") == text + "# our note\n"


# --- refusals: one message, exit 1, nothing written


def _refused(repo: Path, *args: str, cwd: Path | None = None) -> str:
    before = snapshot(repo)
    result = groundkit("init", *args, cwd=cwd or repo, check=False)
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr.startswith("error: ") and "fix: " in result.stderr and "Traceback" not in result.stderr
    assert snapshot(repo) == before
    return result.stderr


def test_init_refuses_what_it_cannot_set_up_and_writes_nothing(tmp_path):
    repo = team_repo(tmp_path)
    args = ["--corpus", "data/docs", "--judgments", "data/judgments.jsonl"]
    assert "is not the root of its git repository" in _refused(repo, "--corpus", "docs", "--judgments", "x",
                                                               cwd=repo / "data")
    assert "is required the first time" in _refused(repo, "--corpus", "data/docs")
    assert "is not a folder of this repository" in _refused(repo, "--corpus", "data/nope", "--judgments", "x")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    assert "lies outside the repository" in _refused(repo, "--corpus", str(outside), "--judgments", "x")
    (repo / "data" / "it's").mkdir()
    assert "single quote" in _refused(repo, "--corpus", "data/it's", "--judgments", "x")
    assert "was never set up here" in _refused(repo, "--upgrade")
    (repo / "dvc.yaml").write_text("stages: {}\n", encoding="utf-8")
    assert "dvc.yaml: exists and groundkit did not write it" in _refused(repo, *args)
    (repo / "dvc.yaml").unlink()
    (repo / "params.yaml").write_text("train:\n  lr: 0.1\n", encoding="utf-8")
    assert "params.yaml: exists and groundkit did not write it" in _refused(repo, *args)
    (repo / "params.yaml").unlink()
    (repo / RECORD).write_text("not json", encoding="utf-8")
    assert "is not the record groundkit init writes" in _refused(repo, *args)
    plain = tmp_path / "plain"
    plain.mkdir()
    assert "is not inside a git repository" in _refused(plain, *args)


@pytest.mark.parametrize(("blocker", "named"), [("scripts", "scripts"), (".github", ".github"),
                                               (".github/workflows", ".github/workflows"),
                                               (".gitignore", ".gitignore"), (".dvcignore", ".dvcignore"),
                                               (RECORD, RECORD), (".dvc", ".dvc")])
def test_init_checks_every_precondition_before_its_first_write(tmp_path, blocker, named):
    # Issue 35 item 8: with a plain file named scripts (or .github) at the root, init ran dvc init and wrote
    # dvc.yaml, params.yaml and the workflow, then died with "File exists" and never wrote .groundkit.json; the
    # next init refused its own params.yaml. A folder where a file must go, or a file where a folder must, is
    # refused before anything is written, and init then runs as if it had never been refused.
    repo = team_repo(tmp_path)
    args = ["--corpus", "data/docs", "--judgments", "data/judgments.jsonl"]
    target = repo / blocker
    target.parent.mkdir(parents=True, exist_ok=True)
    if blocker in (".gitignore", ".dvcignore", RECORD):
        target.unlink(missing_ok=True)
        target.mkdir()
        (target / "keep").write_text("x\n", encoding="utf-8")
    else:
        target.write_text("a file of the team's\n", encoding="utf-8")
    message = _refused(repo, *args)
    assert f"{repo / named}:" in message, message
    assert not (repo / ".dvc").is_dir() and not (repo / "dvc.yaml").exists() and not (repo / RECORD).is_file()
    if target.is_dir():
        shutil.rmtree(target)
    else:
        target.unlink()
    (repo / ".gitignore").write_text("/.venv/\n", encoding="utf-8")
    groundkit("init", *args, cwd=repo)
    assert json.loads((repo / RECORD).read_text(encoding="utf-8"))["corpus"] == "data/docs"
    groundkit("init", "--corpus", "data/docs", cwd=repo)  # the second init takes its own files as its own


def test_a_workflow_the_team_wrote_is_left_alone_and_said_so(tmp_path):
    repo = team_repo(tmp_path)
    mine = repo / adopt.WORKFLOW
    mine.parent.mkdir(parents=True)
    mine.write_text("name: ours\n", encoding="utf-8")
    shown = groundkit("init", "--corpus", "data/docs", "--judgments", "data/judgments.jsonl", cwd=repo).stdout
    assert mine.read_text(encoding="utf-8") == "name: ours\n"
    assert "exists and groundkit did not write it" in shown


# --- the stages: the installed version, and the team's own code


def test_a_stage_refuses_to_run_for_another_version_and_names_the_upgrade(tmp_path):
    repo = team_repo(tmp_path)
    groundkit("init", "--corpus", "data/docs", "--judgments", "data/judgments.jsonl", cwd=repo)
    result = groundkit("stage", "check-inputs", "--groundkit-version", "0.0.1", "--params", "params.yaml",
                       "--corpus", "data/docs", "--judgments", "data/judgments.jsonl", "--run",
                       "data/judgments.jsonl", "--out", "build/inputs.json", cwd=repo, check=False)
    assert result.returncode == 1
    assert f"rendered for groundkit 0.0.1, but groundkit {__version__} is installed" in result.stderr
    assert "groundkit init --upgrade" in result.stderr and not (repo / "build").exists()


def _with_retriever(repo: Path, module: str, body: str) -> None:
    (repo / "retrievers").mkdir(exist_ok=True)
    (repo / "retrievers" / "__init__.py").write_text("", encoding="utf-8")
    (repo / "retrievers" / f"{module}.py").write_text(body, encoding="utf-8")
    params = repo / "params.yaml"
    text = params.read_text(encoding="utf-8")
    params.write_text(text.replace("  retriever: bm25 ", f"  retriever: python:retrievers.{module}:make "),
                      encoding="utf-8")


LONGEST = """\
def make(chunks, options):
    ranked = sorted(chunks, key=lambda c: (-len(c.text), c.chunk_id))

    class Longest:
        def search(self, query, depth):
            return [(c.chunk_id, float(len(c.text))) for c in ranked[:depth]]

    return Longest()
"""


@pytest.mark.integration
def test_the_teams_retriever_is_a_dependency_of_the_retrieve_stage(tmp_path):
    repo = team_repo(tmp_path)
    groundkit("init", "--corpus", "data/docs", "--judgments", "data/judgments.jsonl", cwd=repo)
    _with_retriever(repo, "longest", LONGEST)
    refused = run(["dvc", "repro"], repo, check=False)
    assert refused.returncode != 0
    assert "retrievers: holds the retriever 'python:retrievers.longest:make' but is not a dependency" in \
        refused.stdout + refused.stderr
    assert "groundkit init --upgrade --code retrievers" in refused.stdout + refused.stderr
    # init finds the retriever params.yaml names, and declares its package.
    shown = groundkit("init", "--upgrade", cwd=repo).stdout
    assert "rewrote    dvc.yaml" in shown and "params.yaml" in shown
    declared = yaml.safe_load((repo / "dvc.yaml").read_text(encoding="utf-8"))["stages"]["retrieve"]["deps"]
    assert "retrievers" in declared
    run(["dvc", "repro"], repo)
    # Editing the retriever re-runs retrieve (and what follows it), and chunk, which depends on the same
    # declared code (a python: chunker may live there); the chunks are the same bytes, so index does not.
    shortest = LONGEST.replace("float(len(c.text))", "float(-len(c.text))")
    (repo / "retrievers" / "longest.py").write_text(shortest, encoding="utf-8")
    again = run(["dvc", "repro"], repo)
    ran = {line.split("'")[1] for line in (again.stdout + again.stderr).splitlines() if "Running stage" in line}
    assert ran == {"chunk", "retrieve", "score", "report"}
    # A module of the repository imported from the retriever but not declared fails the stage, named.
    (repo / "helpers.py").write_text("FLIP = 1\n", encoding="utf-8")
    (repo / "retrievers" / "longest.py").write_text("import helpers\n" + LONGEST, encoding="utf-8")
    failed = run(["dvc", "repro"], repo, check=False)
    assert failed.returncode != 0
    assert "helpers.py: was imported by this stage (module 'helpers') but is not one of its dependencies" in \
        failed.stdout + failed.stderr


PARAGRAPHS = """\
def make(options):
    class Paragraphs:
        def split(self, text):
            parts = [part for part in text.split("\\n") if part.strip()]
            return parts[:options["size"]]

    return Paragraphs()
"""

LINES = PARAGRAPHS.replace('"\\n"', '" "')


def _ran(result: subprocess.CompletedProcess[str]) -> set[str]:
    return {line.split("'")[1] for line in (result.stdout + result.stderr).splitlines() if "Running stage" in line}


@pytest.mark.integration
def test_a_chunker_switched_in_by_set_is_a_dependency_of_the_experiments_chunk_stage(tmp_path):
    repo = team_repo(tmp_path)
    (repo / "chunkers").mkdir()
    (repo / "chunkers" / "__init__.py").write_text("", encoding="utf-8")
    (repo / "chunkers" / "para.py").write_text(PARAGRAPHS, encoding="utf-8")
    (repo / "chunkers" / "lines.py").write_text(LINES, encoding="utf-8")
    groundkit("init", "--corpus", "data/docs", "--judgments", "data/judgments.jsonl", "--code", "chunkers", cwd=repo)
    stage = yaml.safe_load((repo / "dvc.yaml").read_text(encoding="utf-8"))["stages"]["chunk"]
    assert "chunkers" in stage["deps"] and "--code 'chunkers'" in stage["cmd"]
    assert all(next(iter(out.values())) == {"persist": True} for out in stage["outs"])
    text = (repo / "params.yaml").read_text(encoding="utf-8")
    (repo / "params.yaml").write_text(text.replace("strategy: fixed ", "strategy: python:chunkers.para:make ")
                                      .replace("options: {}", "options: {size: 1}"), encoding="utf-8")
    run(["dvc", "repro"], repo)
    run(["git", "add", "-A"], repo)
    run(["git", "commit", "-qm", "groundkit"], repo)
    chunks = repo / "build" / "chunks.jsonl"
    first = chunks.read_text(encoding="utf-8")
    # An option named size, which DVC's run-cache key drops: the run cache holds size 1's chunks under the key
    # size 2 has too, and would serve them; the stage runs instead.
    assert "chunk" in _ran(run(["dvc", "exp", "run", "-S", "chunk.options.size=2"], repo))
    assert chunks.read_text(encoding="utf-8").count("\n") > first.count("\n")
    # A module switched in by -S is a dependency of the experiment's chunk stage: editing it re-chunks.
    switch = ["dvc", "exp", "run", "-S", "chunk.strategy=python:chunkers.lines:make", "-S", "chunk.options.size=9"]
    assert "chunk" in _ran(run(switch, repo))
    lines = chunks.read_text(encoding="utf-8")
    (repo / "chunkers" / "lines.py").write_text(LINES.replace('options["size"]', '2'), encoding="utf-8")
    assert "chunk" in _ran(run(switch, repo))
    assert chunks.read_text(encoding="utf-8") != lines
    assert "chunk" not in _ran(run(switch, repo))
    # groundkit init finds the chunker params.yaml names and declares its package, as it does a retriever's.
    assert adopt._plugin_code(repo) == ["chunkers"]
