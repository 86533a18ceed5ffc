"""Results written by an earlier groundkit stay readable: a pull request's baseline is an older commit.

tests/fixtures/results-7546b83 holds two runs of the tiny corpus as groundkit wrote them at 7546b83, before
the provenance records took one shape. compare, the report, the sweep and the Python API read them, and what
they make of them equals what they make of the same runs written today.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import groundkit as gk
from groundkit.cli import main
from groundkit.reports.page_data import page_data, read_input
from groundkit.reports.sides import read_side
from groundkit.reports.sweep_view import varied_params
from tests.conftest import write_tiny_corpus

EARLIER = Path(__file__).parent / "fixtures" / "results-7546b83"


@pytest.fixture(scope="module")
def today(tmp_path_factory) -> Path:
    """The same two runs, written by this groundkit, beside a copy of the earlier ones."""
    root = tmp_path_factory.mktemp("today")
    corpus, judgments = write_tiny_corpus(root / "corpus", root / "judgments.jsonl")
    for name, size in (("small", 60), ("large", 200)):
        assert main(["run", "--corpus", str(corpus), "--judgments", str(judgments), "--set",
                     "audit.max_trivial_share=1.0", "--set", f"chunk.size={size}", "--out", str(root / name)]) == 0
        shutil.copytree(EARLIER / name, root / f"earlier-{name}")
    return root


def test_the_fixture_is_in_the_earlier_shape():
    # The shape before provenance records: had it been rewritten, this test would guard nothing.
    assert set(json.loads((EARLIER / "small" / "span_sources.json").read_text())) == {"corpus_hash", "judgments_hash"}
    assert "stage" not in json.loads((EARLIER / "small" / "passages" / "params.json").read_text())


def test_compare_reads_earlier_results_as_it_reads_todays(today, capsys, monkeypatch):
    monkeypatch.chdir(today)
    assert main(["compare", "earlier-large", "earlier-small", "--json"]) == 0
    earlier = json.loads(capsys.readouterr().out)
    assert main(["compare", "large", "small", "--json"]) == 0
    now = json.loads(capsys.readouterr().out)
    for report in (earlier, now):
        del report["baseline"], report["candidate"]
    assert earlier == now and earlier["params_changed"] == {"chunk.size": [200, 60]}


def test_the_report_shows_the_passages_of_earlier_results(today, monkeypatch):
    monkeypatch.chdir(today)
    earlier, now = read_input("earlier-small", today), read_input("small", today)
    assert earlier.note is None and earlier.evidence is not None
    data = page_data(earlier, read_input("earlier-large", today), None)
    assert [q["id"] for q in data["queries"] if q.get("top")] == ["q1", "q2"]
    assert data["queries"] == page_data(now, read_input("large", today), None)["queries"]
    assert main(["report", "earlier-small", "--baseline", "earlier-large", "--out", "report.html"]) == 0


def test_the_api_and_the_sweep_read_earlier_results(today):
    earlier, now = gk.load_results(today / "earlier-small"), gk.load_results(today / "small")
    assert earlier.metrics == now.metrics
    assert earlier.per_query.equals(now.per_query)
    sides = [read_side(str(today / f"earlier-{name}"), cwd=today) for name in ("large", "small")]
    assert varied_params(sides) == ["chunk.size"]
