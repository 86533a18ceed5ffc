"""A new measure is one module: the guide's example, dropped into a copy of the package, reaches every output.

The copy of groundkit gets the guide's ``hits.py`` in groundkit/scoring/measures/ and nothing else; runs
name ``hits@5`` in score.measures, and it is in detail.json, per_query.csv, compare and the report.
The same commands with the installed groundkit refuse the name, so the module is what made it work.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, write_tiny_corpus
from tests.dvc_helpers import env

MEASURES = ["recall@1", "recall@5", "mrr", "ndcg@5", "chars@5", "hits@5"]


def guide_module() -> str:
    """The guide's example module, as written there."""
    text = (REPO / "docs" / "metrics.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```python\n(# groundkit/scoring/measures/hits\.py\n.*?)```", text, re.DOTALL)
    return block


def _groundkit(package: Path | None, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    extra = {"PYTHONPATH": str(package)} if package is not None else {}
    return subprocess.run([sys.executable, "-m", "groundkit.cli", *args], cwd=cwd, env=env(**extra), text=True,
                          capture_output=True, check=False)


@pytest.fixture(scope="module")
def copied(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("measure")
    package = root / "package"
    shutil.copytree(REPO / "groundkit", package / "groundkit", ignore=shutil.ignore_patterns("__pycache__"))
    (package / "groundkit" / "scoring" / "measures" / "hits.py").write_text(guide_module(), encoding="utf-8")
    write_tiny_corpus(root / "corpus", root / "judgments.jsonl")
    return package, root


def _run(package: Path | None, root: Path, out: str, *sets: str) -> subprocess.CompletedProcess[str]:
    return _groundkit(package, "run", "--corpus", "corpus", "--judgments", "judgments.jsonl", "--out", out,
                      "--set", f"score.measures=[{', '.join(MEASURES)}]", "--set", "score.headline=[ndcg@5, hits@5]",
                      *(arg for s in sets for arg in ("--set", s)), cwd=root)


def test_a_module_in_the_package_reaches_detail_compare_and_the_report(copied):
    package, root = copied
    for out, size in (("small", 60), ("large", 200)):
        ran = _run(package, root, out, f"chunk.size={size}")
        assert ran.returncode == 0, ran.stderr
    detail = json.loads((root / "small" / "detail.json").read_text(encoding="utf-8"))
    assert list(json.loads((root / "small" / "metrics.json").read_text(encoding="utf-8"))) == ["hits@5", "ndcg@5"]
    header = (root / "small" / "per_query.csv").read_text(encoding="utf-8").splitlines()[0]
    assert header.endswith(",chars@5,hits@5")
    # hits@5 counts the relevant passages in the top 5, so it is at least recall@5 (hit rate) on each query.
    assert detail["answerable"]["hits@5"] >= detail["answerable"]["recall@5"] > 0
    compared = _groundkit(package, "compare", "small", "large", "--json", "--metric", "hits@5", cwd=root)
    assert compared.returncode == 0, compared.stderr
    report = json.loads(compared.stdout)
    assert report["gate"]["metrics"] == ["hits@5"] and "hits@5" in {s["metric"] for s in report["overall"]}
    page = _groundkit(package, "report", "large", "--baseline", "small", "--out", "report.html", cwd=root)
    assert page.returncode == 0, page.stderr
    assert "hits@5" in (root / "report.html").read_text(encoding="utf-8")


def test_without_the_module_the_name_is_refused(copied):
    _, root = copied
    refused = _run(None, root, "plain")
    assert refused.returncode == 1 and "key 'score.measures.5'" in refused.stderr
    assert "'hits@5' is not a metric groundkit reports" in refused.stderr and not (root / "plain").exists()
