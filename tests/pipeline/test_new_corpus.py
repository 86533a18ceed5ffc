"""A team's first corpus: four short documents and seven plain questions, run with nothing overridden.

Such a corpus is easy for keyword search (most of its questions are trivial), and that is a finding
to report, not a reason to refuse: `groundkit run` with default params and `dvc exp run` on a
params.yaml that only points at the corpus both score it and print the audit's findings.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from groundkit.cli import main
from tests.conftest import write_judgments
from tests.dvc_helpers import clone_working_tree, run

pytestmark = pytest.mark.integration

DOCUMENTS = {
    "deploys.md": "# Deploys\n\nWe deploy the web app from the main branch every weekday at 10:00.\n"
                  "A deploy that fails its health check is rolled back automatically within five minutes.\n",
    "oncall.md": "# On-call\n\nOne engineer is on call each week, from Monday 09:00 to the next Monday.\n"
                 "Pages go to the phone app first and to a phone call after ten minutes without an answer.\n",
    "backups.md": "# Backups\n\nThe database is backed up overnight at 02:00 and copies are kept for 35 days.\n"
                  "Restoring a backup takes about forty minutes for the main database.\n",
    "expenses.md": "# Expenses\n\nTravel is booked through the office manager.\n"
                   "Receipts must be uploaded within thirty days, or the expense is not paid back.\n",
}
QUESTIONS = [
    ("when do we deploy", "deploys.md", "every weekday at 10:00"),
    ("what happens when a deploy fails", "deploys.md", "rolled back automatically within five minutes"),
    ("how long is an on-call shift", "oncall.md", "from Monday 09:00 to the next Monday"),
    ("how am I paged", "oncall.md", "Pages go to the phone app first"),
    ("when do the backups run overnight", "backups.md", "backed up overnight at 02:00"),
    ("how long does a restore take", "backups.md", "about forty minutes"),
    ("how long do I have to upload receipts", "expenses.md", "uploaded within thirty days"),
]

TRIVIAL = "trivial: 5 of 7 answerable judgments (71.4%)"
GIVEAWAYS = "t1 ('deploy'), t2 ('deploy'), t3 ('call'), t5 ('backups'), t7 ('receipts')"


def write_team_corpus(root: Path) -> tuple[Path, Path]:
    for name, text in DOCUMENTS.items():
        (root / "docs").mkdir(parents=True, exist_ok=True)
        (root / "docs" / name).write_text(text, encoding="utf-8")
    judgments = write_judgments(root / "judgments.jsonl", [
        {"query_id": f"t{i}", "query": query, "category": "factoid", "gold": [{"document": doc, "quote": quote}]}
        for i, (query, doc, quote) in enumerate(QUESTIONS, start=1)])
    return root / "docs", judgments


def test_groundkit_run_scores_it_with_default_params_and_prints_the_findings(tmp_path, capsys):
    docs, judgments = write_team_corpus(tmp_path / "team")
    assert main(["run", "--corpus", str(docs), "--judgments", str(judgments), "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr()
    assert printed.out.splitlines()[1].split()[:3] == ["answerable", "queries", "7"]
    # Five questions hold a word only their own document has; t4 ('paged') and t6 ('restore') share no such
    # word with it ('Pages', 'Restoring'), so keyword search cannot find them by one word.
    assert (f"audit: {TRIVIAL} hold a word found only in their gold documents, so keyword search finds them by "
            f"that word alone: {GIVEAWAYS}") in printed.err.replace("\n  ", " ")  # wrapped at 100 columns
    assert "audit: gate: none (audit.max_trivial_share is null)" in printed.err.replace("\n  ", " ")


def test_dvc_exp_run_scores_it_when_params_yaml_only_points_at_it(tmp_path_factory):
    repo = clone_working_tree(tmp_path_factory.mktemp("team") / "repo")
    write_team_corpus(repo / "team")
    params = yaml.safe_load((repo / "params.yaml").read_text(encoding="utf-8"))
    params["corpus"] = {"root": "team/docs", "judgments": "team/judgments.jsonl"}
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    run(["git", "add", "-A"], repo)
    run(["git", "commit", "-q", "-m", "our own corpus"], repo)

    result = run(["dvc", "exp", "run"], repo)
    output = result.stdout + result.stderr
    assert f"audit: {TRIVIAL}" in output and GIVEAWAYS in output
    assert "audit: gate: none" in output
    metrics = json.loads((repo / "metrics" / "detail.json").read_text(encoding="utf-8"))
    assert metrics["answerable"]["queries"] == 7
