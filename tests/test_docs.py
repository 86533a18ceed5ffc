"""The user guide: it builds under --strict, and the plugin module it shows runs as written."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys

import pytest

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


@pytest.fixture(scope="module")
def generator():
    """scripts/docs_reference.py, imported from the checkout (scripts/ is no package)."""
    spec = importlib.util.spec_from_file_location("docs_reference", REPO / "scripts" / "docs_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def pages(generator) -> dict[str, str]:
    """Every reference page as the code generates it now (generated once: the tests below only read it)."""
    return generator.generate()


def test_the_reference_pages_are_what_the_code_generates(generator, pages):
    assert generator.drifted(pages=pages) == [], "run python scripts/docs_reference.py --write and commit the pages"


def test_an_edited_page_or_a_changed_docstring_is_drift(generator, pages, tmp_path, monkeypatch):
    shutil.copytree(REPO / "docs", tmp_path / "docs")
    page = tmp_path / "docs" / "reference" / "cli.md"
    page.write_text(page.read_text(encoding="utf-8").replace("| `--force` |", "| `--forced` |", 1), encoding="utf-8")
    assert generator.drifted(tmp_path, pages) == ["docs/reference/cli.md"]
    # The code moves and the committed page does not: a field's description, as a reader of the class would edit it.
    from groundkit.config import BM25Params

    monkeypatch.setattr(BM25Params, "__doc__", BM25Params.__doc__.replace("saturation", "saturation (edited)"))
    edited = {**pages, "docs/reference/parameters.md": generator.parameters_page()}
    assert generator.drifted(pages=edited) == ["docs/reference/parameters.md"]


def test_a_parameter_without_a_description_is_refused(generator, monkeypatch):
    from groundkit.config import HybridParams

    monkeypatch.setattr(HybridParams, "__doc__", "Reciprocal rank fusion, its constant undescribed.")
    with pytest.raises(generator.DocsError, match=r"HybridParams.rrf_k \(params key hybrid.rrf_k\) has no description"):
        generator.parameters_page()


def test_the_references_say_what_the_code_says(pages):
    parameters = pages["docs/reference/parameters.md"]
    # Type, default, bounds and description of one key, each from the model.
    assert ("| `bm25.b` | number | `0.75` | >= 0.0, <= 1.0 | Length normalisation, from 0 (none) to 1 (a chunk's score "
            "scaled fully by its length). |") in parameters
    assert "| `chunk.strategy` | text | `fixed` |  | How documents are cut: `fixed` " in parameters
    assert "`recursive`, `sentence`, `markdown`, `tokens`, `python:MODULE:FACTORY`" in parameters
    assert ("| `retrieve.options` | mapping (free-form) | `{}` |  | Free-form mapping: groundkit passes its keys"
            in parameters)
    metrics = pages["docs/reference/metrics.md"]
    assert "| [`chars`](#chars) | `chars@k` | neither: a cost, shown beside the others |" in metrics
    cli = pages["docs/reference/cli.md"]
    assert "### `groundkit score-trec`" in cli and "#### `groundkit judgments add`" in cli
    trouble = pages["docs/troubleshooting.md"]
    # A literal fix, found where it is raised.
    assert ("- pass --params PATH or create params.yaml "
            "<small>(`groundkit/config/params_file.py:read_params_file`)</small>") \
        in trouble


def test_the_readme_is_short_and_its_links_reach_the_guide():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    # The set-up commands are what .ci/run runs.
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    for command in ("-e '.[test,dense,ray,chunking]'", "scripts/install_test_tools.sh", "python -m pytest"):
        assert command in readme and command in ci, command
    assert "pip install -e . && dvc repro" in readme
    # GitHub renders README's links; mkdocs never sees them, so a moved page would break them silently.
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme)
    assert links and all((REPO / link).is_file() for link in links), [link for link in links
                                                                         if not (REPO / link).is_file()]
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    for link in links:
        if link.startswith("docs/"):
            assert f": {link.removeprefix('docs/')}\n" in nav, link


def test_the_judgment_shown_in_the_readme_and_the_guide_is_a_committed_line():
    committed = (REPO / "evals" / "judgments.jsonl").read_text(encoding="utf-8").splitlines()
    for page in (REPO / "README.md", REPO / "docs" / "judgments.md"):
        (shown,) = re.findall(r"```json\n(.*?)\n```", page.read_text(encoding="utf-8"), re.S)[:1]
        # Byte for byte a line of the golden judgments, so it is in canonical form and its quote resolves.
        assert shown in committed, page
        assert gk.Judgment.model_validate_json(shown).query_id == "q046"
