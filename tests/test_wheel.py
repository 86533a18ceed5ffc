"""groundkit as a team gets it: a built wheel in a fresh virtual environment, used in a repository of their own.

The wheel and the sdist are built from the checkout's files (``python -m build --no-isolation``, from a
copy, so the checkout's build/ folder is never touched). A fresh virtual environment gets the wheel with
``pip install --no-deps``; the packages groundkit depends on come from this test run's environment
through a path file, so the test needs no network. That path file adds a folder of packages, not its
path files, so the checkout's editable groundkit is not on the path: the test checks that groundkit
imports from the fresh environment. Everything else is real: git, DVC, experiments in DVC's queue, and
the pull-request script.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

from groundkit import __version__
from tests.dvc_helpers import REPO, wait_for_queue

pytestmark = pytest.mark.integration

NEXT_VERSION = f"{__version__}.post1"
SOURCES = ("groundkit", "pyproject.toml", "README.md")


def _source_copy(dest: Path, version: str) -> Path:
    """The files the package is built from, as git lists them, with ``version`` as groundkit.__version__."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z", *SOURCES],
                            cwd=REPO, capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        if (REPO / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, dest / rel)
    init = dest / "groundkit" / "_version.py"
    text = init.read_text(encoding="utf-8")
    init.write_text(text.replace(f'__version__ = "{__version__}"', f'__version__ = "{version}"'), encoding="utf-8")
    return dest


def build(dest: Path, version: str) -> tuple[Path, Path]:
    source = _source_copy(dest / "src", version)
    subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dest / "dist"), str(source)],
                   capture_output=True, check=True)
    (wheel,) = (dest / "dist").glob("*.whl")
    (sdist,) = (dest / "dist").glob("*.tar.gz")
    return wheel, sdist


def fresh_venv(dest: Path, wheel: Path) -> Path:
    """A new virtual environment holding the wheel; the dependencies are borrowed (see the module docstring)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(dest)], check=True)
    (packages,) = (dest / "lib").glob("python3*/site-packages")
    borrowed = [p for p in site.getsitepackages() if Path(p).is_dir()]
    (packages / "zz_borrowed_dependencies.pth").write_text("\n".join(borrowed) + "\n", encoding="utf-8")
    python = dest / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--ignore-installed",
                    str(wheel)], check=True, capture_output=True)
    # DVC's command, as its own console script would be (the pull-request script calls `dvc`).
    dvc = dest / "bin" / "dvc"
    dvc.write_text(f"#!{python}\nimport sys\nfrom dvc.cli import main\nsys.exit(main())\n", encoding="utf-8")
    dvc.chmod(0o755)
    return dest


def venv_env(venv: Path) -> dict[str, str]:
    kept = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    return {**kept, "PATH": f"{venv / 'bin'}{os.pathsep}/usr/local/bin:/usr/bin:/bin", "VIRTUAL_ENV": str(venv),
            "DVC_NO_ANALYTICS": "1", "GIT_AUTHOR_NAME": "team", "GIT_AUTHOR_EMAIL": "team@example.invalid",
            "GIT_COMMITTER_NAME": "team", "GIT_COMMITTER_EMAIL": "team@example.invalid"}


class Team:
    """Commands run in a team's repository with the fresh environment's groundkit."""

    def __init__(self, repo: Path, venv: Path) -> None:
        self.repo, self.venv = repo, venv

    def __call__(self, *cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(list(cmd), cwd=self.repo, env=venv_env(self.venv), capture_output=True, text=True)
        if check and result.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
        return result

    def ran(self, result: subprocess.CompletedProcess[str]) -> list[str]:
        return [line.split("'")[1] for line in (result.stdout + result.stderr).splitlines()
                if line.startswith("Running stage")]

    def copy(self, dest: Path) -> Team:
        shutil.copytree(self.repo, dest, symlinks=True)
        return Team(dest, self.venv)


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> dict[str, tuple[Path, Path]]:
    root = tmp_path_factory.mktemp("wheels")
    return {version: build(root / version, version) for version in (__version__, NEXT_VERSION)}


@pytest.fixture(scope="module")
def team(tmp_path_factory, wheels) -> Team:
    """A team's repository with its own corpus and judgments, after `groundkit init`, `dvc repro` and a commit."""
    root = tmp_path_factory.mktemp("team")
    venv = fresh_venv(root / "venv", wheels[__version__][0])
    repo = root / "teamrag"
    repo.mkdir()
    shutil.copytree(REPO / "evals" / "corpus", repo / "knowledge")
    (repo / "eval").mkdir()
    shutil.copy2(REPO / "evals" / "judgments.jsonl", repo / "eval" / "judgments.jsonl")
    (repo / "README.md").write_text("Our RAG service.\n", encoding="utf-8")
    (repo / ".gitignore").write_text("__pycache__/\n", encoding="utf-8")
    team = Team(repo, venv)
    team("git", "init", "-q", "-b", "main")
    team("git", "add", "-A")
    team("git", "commit", "-q", "-m", "our service")
    shown = team("groundkit", "init", "--corpus", "knowledge", "--judgments", "eval/judgments.jsonl")
    team.init_output = shown.stdout  # type: ignore[attr-defined]
    repro = team("dvc", "repro")
    team.repro_output = repro.stdout + repro.stderr  # type: ignore[attr-defined]
    team("git", "add", "-A")
    team("git", "commit", "-q", "-m", "Evaluate retrieval with groundkit")
    return team


def test_the_wheel_and_sdist_hold_what_groundkit_needs_at_run_time(wheels):
    wheel, sdist = wheels[__version__]
    names = set(zipfile.ZipFile(wheel).namelist())
    for template in ("params.yaml", "pr_eval.sh", "retrieval-eval.yml"):
        assert f"groundkit/pipeline/templates/{template}" in names
    for prompt in ("judge.txt", "propose.txt"):  # their SHA-256 is every machine label's provenance
        assert f"groundkit/labels/prompts/{prompt}" in names
    assert "groundkit/reports/_page.py" in names and "groundkit/pipeline/steps/check_inputs.py" in names
    assert not any(name.startswith(("tests/", "stages/", "evals/", "benchmarks/")) for name in names)
    metadata = zipfile.ZipFile(wheel).read(f"groundkit-{__version__}.dist-info/METADATA").decode()
    declared = {str(Requirement(line.split(" ", 1)[1])) for line in metadata.splitlines()
                if line.startswith("Requires-Dist:") and "extra ==" not in line}
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert declared == {str(Requirement(dep)) for dep in project["dependencies"]}
    entry_points = zipfile.ZipFile(wheel).read(f"groundkit-{__version__}.dist-info/entry_points.txt").decode()
    assert "groundkit = groundkit.cli:main" in entry_points
    members = tarfile.open(sdist).getnames()
    assert f"groundkit-{__version__}/groundkit/pipeline/templates/params.yaml" in members


def test_groundkit_comes_from_the_fresh_environment(team):
    shown = team("python", "-c", "import groundkit, importlib.metadata as m; "
                 "print(groundkit.__file__); print(m.version('groundkit'))").stdout.split()
    assert Path(shown[0]).is_relative_to(team.venv) and shown[1] == __version__
    assert team("groundkit", "--version").stdout.strip() == f"groundkit {__version__}"


def test_init_and_repro_in_the_teams_repository_give_groundkits_own_numbers(team, tmp_path):
    assert "wrote      dvc.yaml" in team.init_output and "next:" in team.init_output
    assert team.ran(subprocess.CompletedProcess([], 0, team.repro_output, "")) == [
        "check-inputs", "validate-judgments", "resolve-spans", "chunk", "index", "embed", "retrieve", "score",
        "report"]
    # The same numbers as groundkit's own baseline: the corpus and judgments are the same bytes.
    for name in ("metrics.json", "detail.json", "per_query.csv"):
        assert (team.repo / "metrics" / name).read_bytes() == (REPO / "metrics" / name).read_bytes(), name
    assert team("git", "status", "--porcelain").stdout == ""
    assert "up to date" in team("dvc", "status").stdout
    lock = yaml.safe_load((team.repo / "dvc.lock").read_text(encoding="utf-8"))
    assert all(f"--groundkit-version {__version__}" in stage["cmd"] for stage in lock["stages"].values())


def test_a_sweep_metrics_diff_and_the_pull_request_check(team, tmp_path):
    team = team.copy(tmp_path / "repo")
    team("dvc", "exp", "run", "-S", "chunk.size=400", "-n", "size400")
    diff = team("dvc", "metrics", "diff", "HEAD", "--md").stdout
    assert "metrics/metrics.json" in diff and "ndcg@10" in diff
    shown = json.loads(team("dvc", "exp", "show", "--json").stdout)
    assert "size400" in json.dumps(shown)
    team("git", "checkout", "--", ".")
    # A pull request that changes the chunk size: the script compares it with the base commit.
    base = team("git", "rev-parse", "HEAD").stdout.strip()
    team("git", "checkout", "-q", "-b", "smaller-chunks")
    params = team.repo / "params.yaml"
    params.write_text(params.read_text(encoding="utf-8").replace("size: 800", "size: 400"), encoding="utf-8")
    team("dvc", "repro")
    team("git", "add", "-A")
    team("git", "commit", "-q", "-m", "smaller chunks")
    checked = team("scripts/groundkit-pr-eval.sh", base, "build/pr-eval", check=False)
    assert checked.returncode in (0, 4), checked.stdout + checked.stderr
    comment = (team.repo / "build" / "pr-eval" / "comment.md").read_text(encoding="utf-8")
    assert comment.startswith("<!-- groundkit retrieval-eval -->") and "**Verdict:" in comment
    assert "reproduced the results committed at HEAD byte for byte" in comment
    assert (team.repo / "build" / "pr-eval" / "report.html").stat().st_size > 10_000


OVERLAP = """\
import re


def make(chunks, options):
    words = [(c.chunk_id, set(re.findall(r"\\w+", c.text.lower()))) for c in chunks]

    class Overlap:
        def search(self, query, depth):
            asked = set(re.findall(r"\\w+", query.lower()))
            return [(chunk_id, float(len(asked & held))) for chunk_id, held in words if asked & held][:depth]

    return Overlap()
"""


def test_a_queued_experiment_measures_its_own_retriever_code(team, tmp_path):
    team = team.copy(tmp_path / "repo")
    (team.repo / "retrievers").mkdir()
    (team.repo / "retrievers" / "__init__.py").write_text("", encoding="utf-8")
    (team.repo / "retrievers" / "overlap.py").write_text(OVERLAP, encoding="utf-8")
    params = team.repo / "params.yaml"
    params.write_text(params.read_text(encoding="utf-8").replace(
        "  retriever: bm25 ", "  retriever: python:retrievers.overlap:make "), encoding="utf-8")
    upgraded = team("groundkit", "init", "--upgrade").stdout
    assert "rewrote    dvc.yaml" in upgraded
    team("dvc", "repro")
    team("git", "add", "-A")
    team("git", "commit", "-q", "-m", "our own retriever")
    before = json.loads((team.repo / "metrics" / "metrics.json").read_text(encoding="utf-8"))
    assert before["ndcg@10"] > 0
    # The experiment's code abstains on every query; the workspace goes back to the committed code at once.
    (team.repo / "retrievers" / "overlap.py").write_text(OVERLAP.replace("if asked & held][:depth]",
                                                                        "if asked & held][:0]"), encoding="utf-8")
    team("dvc", "exp", "run", "--queue", "-n", "abstains")
    team("git", "checkout", "--", "retrievers")
    team("dvc", "queue", "start")
    _wait_for_queue(team, "abstains")
    shown = json.loads(team("dvc", "exp", "show", "--json").stdout)
    metrics = _experiment_metrics(shown, "abstains")
    assert metrics["ndcg@10"] == 0.0 and metrics["recall@10"] == 0.0
    assert json.loads((team.repo / "metrics" / "metrics.json").read_text(encoding="utf-8")) == before


@pytest.fixture(scope="module")
def corpora_queued(team, tmp_path_factory) -> Team:
    """A copy of the team's repository where two experiments went through one queue: ``large`` evaluates a copy of
    the corpus tracked with `dvc add` and committed, ``uncommitted`` a copy left out of git and DVC."""
    team = team.copy(tmp_path_factory.mktemp("queued") / "repo")
    shutil.copytree(team.repo / "knowledge", team.repo / "large")
    team("dvc", "add", "large")
    team("git", "add", "large.dvc", ".gitignore")
    team("git", "commit", "-q", "-m", "a large corpus, in DVC")
    shutil.copytree(team.repo / "knowledge", team.repo / "more")
    team("dvc", "exp", "run", "--queue", "-S", "corpus.root=large", "-n", "large")
    team("dvc", "exp", "run", "--queue", "-S", "corpus.root=more", "-n", "uncommitted")
    team("dvc", "queue", "start", "-j", "2")
    _wait_for_queue(team, "large")
    return team


def test_an_uncommitted_corpus_gets_one_message_before_anything_runs(corpora_queued):
    logs = corpora_queued("dvc", "queue", "logs", "uncommitted", check=False).stdout
    assert "error: more: is corpus.root, and it is not in this experiment's copy of the repository" in logs
    assert "fix: commit it (git add more && git commit), or track it with DVC (dvc add more" in logs
    assert "Running stage 'validate-judgments'" not in logs and "Errno 2" not in logs


def test_a_corpus_tracked_with_dvc_add_works_in_a_queued_experiment(corpora_queued):
    shown = json.loads(corpora_queued("dvc", "exp", "show", "--json").stdout)
    # The same documents under another folder: the same numbers as the committed corpus.
    committed = json.loads((corpora_queued.repo / "metrics" / "metrics.json").read_text(encoding="utf-8"))
    assert _experiment_metrics(shown, "large") == committed


def test_a_second_init_keeps_an_edited_params_yaml(team, tmp_path):
    team = team.copy(tmp_path / "repo")
    params = team.repo / "params.yaml"
    edited = params.read_text(encoding="utf-8").replace("k1: 1.2", "k1: 0.9")
    params.write_text(edited, encoding="utf-8")
    again = team("groundkit", "init", "--corpus", "knowledge", "--judgments", "eval/judgments.jsonl").stdout
    assert "params.yaml" in again and "edited since groundkit wrote it: left as it is" in again
    assert params.read_text(encoding="utf-8") == edited


def test_an_upgrade_refuses_stale_stages_then_reruns_every_stage(team, wheels, tmp_path):
    venv = fresh_venv(tmp_path / "venv", wheels[NEXT_VERSION][0])
    team = Team(team.copy(tmp_path / "repo").repo, venv)
    assert team("groundkit", "--version").stdout.strip() == f"groundkit {NEXT_VERSION}"
    params = team.repo / "params.yaml"
    params.write_text(params.read_text(encoding="utf-8").replace("depth: 100", "depth: 50"), encoding="utf-8")
    refused = team("dvc", "repro", check=False)
    assert refused.returncode != 0
    assert f"dvc.yaml: was rendered for groundkit {__version__}, but groundkit {NEXT_VERSION} is installed" in \
        refused.stdout + refused.stderr
    assert "groundkit init --upgrade" in refused.stdout + refused.stderr
    params.write_text(params.read_text(encoding="utf-8").replace("depth: 50", "depth: 100"), encoding="utf-8")
    team("groundkit", "init", "--upgrade")
    rerun = team("dvc", "repro")
    assert team.ran(rerun) == ["check-inputs", "validate-judgments", "resolve-spans", "chunk", "index", "embed",
                               "retrieve", "score", "report"]
    lock = yaml.safe_load((team.repo / "dvc.lock").read_text(encoding="utf-8"))
    assert all(f"--groundkit-version {NEXT_VERSION}" in stage["cmd"] for stage in lock["stages"].values())
    assert (team.repo / "metrics" / "metrics.json").read_bytes() == (REPO / "metrics" / "metrics.json").read_bytes()


def _wait_for_queue(team: Team, *succeeding: str) -> None:
    """Until DVC's queue has no experiment queued or running (dvc queue start returns at once)."""
    wait_for_queue(team.repo, succeeding, lambda: team("dvc", "queue", "status").stdout, timeout=300)


def _experiment_metrics(shown: list, name: str) -> dict:
    """metrics.json of the experiment ``name`` in `dvc exp show --json`."""
    for commit in shown:
        for experiment in commit.get("experiments") or []:
            if experiment.get("name") == name:
                (revision,) = experiment["revs"]
                assert revision["data"]["status"] if "status" in revision["data"] else True
                return revision["data"]["metrics"]["metrics/metrics.json"]["data"]
    raise AssertionError(f"no experiment {name!r} in dvc exp show: {json.dumps(shown)[:2000]}")
