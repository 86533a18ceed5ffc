"""The user guide: it builds under --strict, and the plugin module it shows runs as written."""

from __future__ import annotations

import re
import subprocess
import sys

import groundkit as gk
from tests.conftest import REPO, write_tiny_corpus
from tests.dvc_helpers import env


def test_the_guide_builds_strict(tmp_path):
    # --strict turns every warning into a failure: a broken link or anchor, a page missing from the nav, a
    # snippet whose file is gone (KNOWN_LIMITATIONS.md, BENCHMARKS.md, ARCHITECTURE.md).
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                            cwd=REPO, env=env(NO_MKDOCS_2_WARNING="1"), capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    limitations = (tmp_path / "site" / "limitations" / "index.html").read_text(encoding="utf-8")
    # The snippet was included, not left as its marker.
    assert "Abstention only means" in limitations and "--8&lt;--" not in limitations


def _guide_block(page: str, opening: str) -> str:
    text = (REPO / "docs" / page).read_text(encoding="utf-8")
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if b.startswith(opening)]
    return block


def test_the_retriever_module_of_the_guide_runs_as_written(tmp_path, monkeypatch):
    corpus, judgments = write_tiny_corpus(tmp_path / "corpus", tmp_path / "judgments.jsonl")
    (tmp_path / "team_retriever.py").write_text(_guide_block("retriever.md", '"""A word-overlap'), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    results = gk.evaluate(corpus, judgments, "python:team_retriever:make",
                          set=["retrieve.options={ignore: [how, the, a, is, of, what]}"], out=tmp_path / "run")
    ranked = (tmp_path / "run" / "run.trec").read_text(encoding="utf-8").splitlines()
    assert ranked and all(line.split()[5] == "groundkit-python" for line in ranked)
    # Worked by hand: q1 shares "incremental backups run" with its gold chunk alone, q2 "snapshot" and "replica"
    # with its gold (one word with each other document): both rank gold first. q3, the lexical gap, shares no word
    # with any document and retrieves nothing. So hit rate and MRR are 2/3 each.
    assert results.metrics["recall@10"] == results.metrics["mrr"] == 2 / 3
    assert results.per_query["first_gold_rank"].isna().tolist() == [False, False, True, True]  # q4: no_answer
