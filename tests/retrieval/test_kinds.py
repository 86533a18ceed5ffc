"""The kinds of retriever and what they declare, RRF by hand, and a user's python: retriever."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
from fractions import Fraction

import numpy as np
import pytest

from groundkit.config import ChunkParams, load_params
from groundkit.corpus.chunking import chunk_documents
from groundkit.corpus.passage import Document
from groundkit.errors import RetrieverError
from groundkit.retrieval import plugin
from groundkit.retrieval.dense import rank_rows
from groundkit.retrieval.hybrid import reciprocal_rank_fusion
from groundkit.retrieval.kinds import BUILT_IN, Need, Python, RetrieverKind, parse
from tests.bad_inputs import PLUGIN_CASES
from tests.conftest import REPO
from tests.dvc_helpers import env


@pytest.mark.parametrize(
    ("retriever", "name", "tag", "needs", "reads", "spec"),
    [
        ("bm25", "bm25", "groundkit-bm25", {Need.INDEX}, (), "bm25"),
        ("dense", "dense", "groundkit-dense", {Need.EMBEDDINGS, Need.CHUNKS}, ("dense",), "dense"),
        ("hybrid", "hybrid", "groundkit-hybrid", {Need.INDEX, Need.EMBEDDINGS, Need.CHUNKS}, ("dense", "hybrid"),
         "hybrid"),
        ("external", "external", "groundkit-external", {Need.RUN_FILE}, (), "external"),
        ("python:mod.sub:make", "python", "groundkit-python", {Need.CHUNKS}, (), "python:mod.sub:make"),
    ],
)
def test_each_kind_declares_what_it_needs(retriever, name, tag, needs, reads, spec):
    kind = parse(retriever)
    assert (kind.name, kind.run_tag, set(kind.needs), kind.reads, kind.spec) == (name, tag, needs, reads, spec)
    assert kind.ranks_chunks == (name != "external")


def test_the_parsed_kind_travels_with_the_params():
    params = load_params(None, ["retrieve.retriever=python:mod:make"])
    assert params.retrieve.kind == Python(module="mod", factory="make")
    assert params.retrieve.kind is params.retrieve.kind  # parsed once, on validation


@pytest.mark.parametrize("retriever", ["no-such-kind", "BM25", ""])
def test_unknown_kinds_are_refused_with_the_list_of_kinds(retriever):
    # Every kind, in BUILT_IN's order (bm25, dense, hybrid, external, python:MODULE:FACTORY today).
    *others, last = [kind.usage for kind in BUILT_IN]
    assert {"bm25", "dense", "hybrid", "external", "python:MODULE:FACTORY"} <= {*others, last}
    with pytest.raises(ValueError, match=rf"^unknown retriever; use one of {re.escape(', '.join(others))} or "
                                         rf"{re.escape(last)}$"):
        parse(retriever)


@pytest.mark.parametrize(("retriever", "problem"), [
    ("python:mod", "python takes a module and a factory"), ("python:mod:", "python takes a module and a factory"),
    ("python: :make", "python takes a module and a factory"), ("bm25:x", "bm25 takes no arguments"),
    ("python:a:b:c", "python takes a module and a factory")])
def test_wrong_arguments_are_refused_with_the_usage(retriever, problem):
    with pytest.raises(ValueError, match=re.escape(problem)):
        parse(retriever)


def test_every_kind_names_a_builder_that_exists():
    for kind in BUILT_IN:
        module, _, function = kind.builder.partition(":")
        assert callable(getattr(importlib.import_module(module), function)), kind.name


class Toy(RetrieverKind):
    name = "toy"
    usage = "toy"
    run_tag = "toy-run"
    builder = "tests.retrieval.test_kinds:toy_ranker"


def test_a_package_registers_a_kind_through_its_entry_point(monkeypatch):
    from importlib import metadata

    point = metadata.EntryPoint(name="toy", value="tests.retrieval.test_kinds:Toy", group="groundkit.retrievers")
    monkeypatch.setattr(metadata, "entry_points",
                        lambda group, name: [p for p in [point] if p.group == group and p.name == name])
    assert parse("toy") == Toy() and parse("toy").run_tag == "toy-run"
    with pytest.raises(ValueError, match="unknown retriever"):
        parse("toy2")


def build_retriever(params, chunks, *_):
    """A python: retriever as the retrieve step builds it, to call its search directly."""
    kind = params.retrieve.kind
    return plugin.build(kind, plugin.load_factory(kind, params.source), params, chunks)


def test_rank_rows_keeps_negative_scores_and_breaks_ties_by_row():
    scores = np.array([0.5, -0.25, 0.5, 0.0, 0.75])
    assert rank_rows(scores, 10) == [(4, 0.75), (0, 0.5), (2, 0.5), (3, 0.0), (1, -0.25)]
    assert rank_rows(scores, 2) == [(4, 0.75), (0, 0.5)]


def test_reciprocal_rank_fusion_by_hand():
    order = {"a": ("x.md", 0), "b": ("x.md", 10), "c": ("y.md", 0), "d": ("a.md", 5)}
    bm25 = [("a", 9.0), ("b", 5.0), ("c", 1.0)]
    dense = [("c", 0.9), ("d", 0.8), ("a", 0.7)]
    fused = reciprocal_rank_fusion([bm25, dense], order, rrf_k=60, depth=10)
    # a: 1/61 + 1/63; c: 1/63 + 1/61 (exactly tied with a, so (document, start) decides: x.md < y.md);
    # b: 1/62; d: 1/62 (tied; a.md < x.md puts d first).
    assert [c for c, _ in fused] == ["a", "c", "d", "b"]
    assert fused[0][1] == pytest.approx(float(Fraction(1, 61) + Fraction(1, 63)))
    assert fused[2][1] == pytest.approx(1 / 62)
    assert [c for c, _ in reciprocal_rank_fusion([bm25, dense], order, rrf_k=0, depth=2)] == ["a", "c"]


def _chunks(tiny_corpus):
    corpus, _ = tiny_corpus
    documents = [Document(path=p.relative_to(corpus).as_posix(), text=p.read_text()) for p in corpus.rglob("*.md")]
    return chunk_documents(documents, ChunkParams(size=60))


def test_python_retriever_results_are_reordered_by_groundkit(tiny_corpus, tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    chunks = _chunks(tiny_corpus)
    params = load_params(None, ["retrieve.retriever=python:tests.tiny_retriever:make", "retrieve.options={word: a}"])
    retriever = build_retriever(params, chunks, tmp_path / "no-index", tmp_path / "no-embeddings")
    ranking = retriever.search("ignored", 100)
    by_id = {c.chunk_id: c for c in chunks}
    expected = sorted((c for c in chunks if "a" in c.text.lower()),
                      key=lambda c: (-c.text.lower().count("a"), c.document, c.start_offset))
    assert [c for c, _ in ranking] == [c.chunk_id for c in expected]
    assert [s for _, s in ranking] == [float(by_id[c].text.lower().count("a")) for c, _ in ranking]


@pytest.mark.parametrize(
    ("spec", "misbehave", "fragment"),
    [
        ("python:tests.tiny_retriever:make", "unknown id", "not one of the chunks"),
        ("python:tests.tiny_retriever:make", "duplicate", "twice"),
        ("python:tests.tiny_retriever:make", "nan", "finite"),
        ("python:tests.tiny_retriever:make", "too many", "results for depth 3"),
        ("python:tests.tiny_retriever:make", "not pairs", "not a (chunk_id, score) pair"),
        ("python:tests.tiny_retriever:make", "raises", "raised KeyError: 'index not built'"),
        ("python:tests.tiny_retriever:make", "not a list", "returned int, not a list"),
        ("python:tests.tiny_retriever:broken_factory", "", "the factory raised ValueError: no GPU here"),
        ("python:tests.tiny_retriever:no_search", "", "has no search(query, depth) method"),
        ("python:tests.tiny_retriever:absent", "", "has no callable 'absent'"),
        ("python:tests.no_such_module:make", "", "importing module 'tests.no_such_module' raised "
                                                  "ModuleNotFoundError"),
        # Leaving the user's code by any door but a return names the step.
        ("python:tests.tiny_retriever:make", "exits", "search('q', 3) tried to end the process (SystemExit with "
                                                      "code 0)"),
        ("python:tests.tiny_retriever:make", "exits None", "search('q', 3) tried to end the process (SystemExit "
                                                           "with code None)"),
        ("python:tests.tiny_retriever:exiting_factory", "", "the factory tried to end the process"),
        ("python:tests.tiny_retriever:make", "raises midway", "iterating the results of search('q', 3) raised "
                                                              "ValueError: index went away"),
        ("python:tests.tiny_retriever:make", "exits midway", "iterating the results of search('q', 3) tried to "
                                                             "end the process"),
        ("python:tests.tiny_retriever:make", "len exits", "reading result 1 of search('q', 3) tried to end the "
                                                          "process"),
        ("python:tests.tiny_retriever:make", "float raises", "reading result 1 of search('q', 3) raised "
                                                             "ArithmeticError: no float today"),
        # Results outside the contract that crashed groundkit itself.
        ("python:tests.tiny_retriever:make", "list id", "(list); chunk ids are strings"),
        ("python:tests.tiny_retriever:make", "int id", "returned chunk id 7 (int); chunk ids are strings"),
        ("python:tests.tiny_retriever:make", "huge score", "integer score of about 401 digits"),
        ("python:tests.tiny_retriever:make", "array score", "returned score array([1.]) for chunk"),
        ("python:tests.tiny_retriever:make", "endless", "returned more than 3 results for depth 3"),
        ("python:tests.tiny_retriever:make", "exits on close", "iterating the results of search('q', 3) tried to "
                                                               "end the process"),
        ("python:tests.tiny_retriever:make", "a dict", "returned dict, not a list"),
        ("python:tests.tiny_retriever:make", "unshowable", "returned <_Unshowable that cannot be shown>, not a "
                                                           "(chunk_id, score) pair"),
    ],
)
def test_python_retriever_contract_violations(tiny_corpus, tmp_path, monkeypatch, spec, misbehave, fragment):
    monkeypatch.chdir(REPO)
    params = load_params(None, [f"retrieve.retriever={spec}", f"retrieve.options={{misbehave: {misbehave}}}"])
    with pytest.raises(RetrieverError) as info:
        build_retriever(params, _chunks(tiny_corpus), tmp_path, tmp_path).search("q", 3)
    assert fragment in str(info.value)
    assert info.value.key == "retrieve.retriever"


def test_numpy_ids_and_scores_become_plain_str_and_float(tiny_corpus, tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    chunks = _chunks(tiny_corpus)
    params = load_params(None, ["retrieve.retriever=python:tests.tiny_retriever:make",
                                "retrieve.options={misbehave: numpy ids}"])
    ((chunk_id, score),) = build_retriever(params, chunks, tmp_path, tmp_path).search("q", 3)
    assert (type(chunk_id), chunk_id, type(score), score) == (str, chunks[0].chunk_id, float, 2.0)


def test_keyboard_interrupt_in_a_retriever_is_not_swallowed(tiny_corpus, tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    params = load_params(None, ["retrieve.retriever=python:tests.tiny_retriever:make",
                                "retrieve.options={misbehave: interrupted}"])
    retriever = build_retriever(params, _chunks(tiny_corpus), tmp_path, tmp_path)
    with pytest.raises(KeyboardInterrupt):
        retriever.search("q", 3)


def test_a_factory_editing_its_options_does_not_change_the_params(tiny_corpus, tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    params = load_params(None, ["retrieve.retriever=python:tests.tiny_retriever:editing_factory",
                                "retrieve.options={nested: {k: 1}}"])
    build_retriever(params, _chunks(tiny_corpus), tmp_path, tmp_path)
    # run.json records these options: they must be the ones the user wrote.
    assert params.result_params()["retrieve"]["options"] == {"nested": {"k": 1}}


def test_python_retriever_through_the_command_line(tiny_corpus, tmp_path):
    corpus, judgments = tiny_corpus
    out = tmp_path / "out"
    result = subprocess.run(
        ["groundkit", "run", "--corpus", str(corpus), "--judgments", str(judgments), "--out", str(out),
         "--set", "audit.max_trivial_share=1.0", "--set", "chunk.size=60",
         "--set", "retrieve.retriever=python:tests.tiny_retriever:make", "--set", "retrieve.options={word: snapshot}"],
        capture_output=True, text=True, env=env(), cwd=REPO, check=False)
    assert result.returncode == 0, result.stderr
    metrics = json.loads((out / "detail.json").read_text())
    # Every query gets the same ranking: the chunks mentioning "snapshot", most mentions first.
    # It holds no backup chunk for q1 and not "Write skew" for q3; q4 (no_answer) gets results, so no abstention.
    assert metrics["by_category"]["factoid"]["recall@3"] == 0.0
    assert metrics["no_answer"]["abstained"] == 0
    assert (out / "run.trec").read_text().split("\n")[0].endswith("groundkit-python")
    assert json.loads((out / "run.json").read_text())["params"]["retrieve"]["options"] == {"word": "snapshot"}


@pytest.mark.parametrize("name", sorted(PLUGIN_CASES))
def test_plugin_that_breaks_the_contract_fails_groundkit_run_cleanly(tiny_corpus, tmp_path, name):
    case = PLUGIN_CASES[name]
    corpus, judgments = tiny_corpus
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "plugin.py").write_text(case.source, encoding="utf-8")
    out = workspace / "out"
    result = subprocess.run(
        ["groundkit", "run", "--corpus", str(corpus), "--judgments", str(judgments), "--out", str(out),
         "--set", "audit.max_trivial_share=1.0", "--set", "chunk.size=60",
         "--set", "retrieve.retriever=python:plugin:make"],
        capture_output=True, text=True, env=env(PYTHONPATH=str(REPO)), cwd=workspace, check=False)
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith("error: ") and result.stderr.count("error: ") == 1, result.stderr
    assert "Traceback" not in result.stderr
    for fragment in ("key 'retrieve.retriever'", "retriever 'python:plugin:make'", case.what, "fix:"):
        assert fragment in result.stderr, result.stderr
    # Nothing written: no --out, no scratch folder of the run.
    assert {p.name for p in workspace.iterdir()} <= {"plugin.py", "__pycache__"}
