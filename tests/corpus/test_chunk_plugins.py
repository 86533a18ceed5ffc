"""``python:MODULE:FACTORY`` chunkers: the contract, and one clear message for every way to break it."""

from __future__ import annotations

import itertools
import sys
import textwrap

import pytest

from groundkit.config import load_params
from groundkit.corpus.chunking import chunk_documents
from groundkit.corpus.passage import Document
from groundkit.errors import ChunkerError

DOCUMENTS = [Document(path="b.md", text="Beta one.\n\nBeta two."), Document(path="a.md", text="Alpha one. Alpha two.")]
_names = itertools.count()


def plugin(tmp_path, monkeypatch, body: str, options: dict | None = None):
    """The chunk params of a ``python:`` chunker whose module holds ``body`` (a fresh module name each time)."""
    name = f"user_chunker_{next(_names)}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(body), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, name, raising=False)
    overrides = [f"chunk.strategy=python:{name}:make"]
    if options is not None:
        import json

        overrides.append(f"chunk.options={json.dumps(options)}")
    return load_params(None, overrides).chunk


def spans_of(chunks):
    return [(c.document, c.start, c.end, c.text) for c in chunks]


PARAGRAPHS = """
    class Paragraphs:
        def __init__(self, options):
            self.separator = options.get("separator", "\\n\\n")

        def split(self, text):
            return [part for part in text.split(self.separator) if part]

    def make(options):
        return Paragraphs(options)
"""


def test_texts_are_located_in_order_and_options_reach_the_factory(tmp_path, monkeypatch):
    params = plugin(tmp_path, monkeypatch, PARAGRAPHS)
    assert spans_of(chunk_documents(DOCUMENTS, params)) == [
        ("a.md", 0, 21, "Alpha one. Alpha two."), ("b.md", 0, 9, "Beta one."), ("b.md", 11, 20, "Beta two.")]
    params = plugin(tmp_path, monkeypatch, PARAGRAPHS, options={"separator": ". "})
    assert spans_of(chunk_documents(DOCUMENTS[1:], params)) == [("a.md", 0, 9, "Alpha one"),
                                                                ("a.md", 11, 21, "Alpha two.")]


def test_spans_and_a_generator_are_accepted_and_text_is_located_past_the_previous_chunk(tmp_path, monkeypatch):
    body = """
        def make(options):
            class Words:
                def split(self, text):
                    yield (0, 2)
                    yield "ab"
                    yield "ab"
            return Words()
    """
    params = plugin(tmp_path, monkeypatch, body)
    chunks = chunk_documents([Document(path="d.md", text="ab ab ab")], params)
    assert spans_of(chunks) == [("d.md", 0, 2, "ab"), ("d.md", 3, 5, "ab"), ("d.md", 6, 8, "ab")]
    # "a" after "data" is the word, not the letter inside the chunk before it; an overlapping chunk is found
    # where it starts inside the previous one and runs past its end
    for returned, expected in ((["data", "a"], [(0, 4, "data"), (5, 6, "a")]),
                               (["data a", "a b"], [(0, 6, "data a"), (5, 8, "a b")])):
        params = plugin(tmp_path, monkeypatch, f"def make(options):\n    class C:\n        def split(self, text):\n"
                        f"            return {returned!r}\n    return C()\n")
        chunks = chunk_documents([Document(path="d.md", text="data a b")], params)
        assert spans_of(chunks) == [("d.md", *span) for span in expected]


BAD = {
    "out of range": ("return [(0, 5), (3, 99)]", "document 'd.md', chunk 1: the span (3, 99) is out of range for a "
                     "text of 10 characters"),
    "empty span": ("return [(4, 4)]", "document 'd.md', chunk 0: the span (4, 4) is empty"),
    "empty text": ("return ['alpha', '']", "document 'd.md', chunk 1 is empty"),
    "whitespace": ("return [(0, 5), (5, 6)]", "document 'd.md', chunk 1 ' ' holds nothing but whitespace"),
    "out of order": ("return [(6, 10), (0, 5)]", "document 'd.md', chunk 1 'alpha' starts at 0, not after chunk 0's "
                     "start 6: chunks are out of order"),
    "backwards": ("return [(0, 8), (2, 6)]", "document 'd.md', chunk 1 'pha ' [2, 6) ends inside chunk 0 [0, 8): "
                  "it overlaps backwards"),
    "not found": ("return ['alpha', 'gamma ray']", "document 'd.md', chunk 1 'gamma ray' is not text of the document"),
    "rewritten": ("return [text.upper()]", "document 'd.md', chunk 0 'ALPHA BETA' is not text of the document"),
    "before previous": ("return ['beta', 'alpha']", "chunk 1 'alpha' occurs in the document only before the "
                        "previous chunk's end"),
    "not a list": ("return 'alpha beta'", "returned str for the document 'd.md', not a list of spans or texts"),
    "bad item": ("return [(0, 1.5)]", "document 'd.md', chunk 0 is (0, 1.5), neither a (start, end) pair of ints "
                 "nor a str"),
    "bool span": ("return [(False, True)]", "neither a (start, end) pair of ints nor a str"),
    "raises": ("raise RuntimeError('tokenizer exploded')", "split() of the document 'd.md' raised RuntimeError: "
               "'tokenizer exploded'"),
    "exits": ("raise SystemExit(0)", "split() of the document 'd.md' tried to end the process (SystemExit"),
}


@pytest.mark.parametrize("case", BAD)
def test_a_bad_chunker_gets_one_message_naming_the_document_and_chunk(tmp_path, monkeypatch, case):
    returned, message = BAD[case]
    body = f"""
        def make(options):
            class Bad:
                def split(self, text):
                    {returned}
            return Bad()
    """
    params = plugin(tmp_path, monkeypatch, body)
    with pytest.raises(ChunkerError) as info:
        chunk_documents([Document(path="d.md", text="alpha beta")], params)
    assert info.value.key == "chunk.strategy" and info.value.path == "params"
    assert message in info.value.problem
    assert info.value.problem.startswith(f"chunker 'python:{params.kind.module}:make': ")


@pytest.mark.parametrize(("body", "message"), [
    ("raise ImportError('no such thing')", "importing module '{m}' raised ImportError: 'no such thing'"),
    ("make = 3", "module '{m}' has no callable 'make'"),
    ("def make(options):\n    raise ValueError('bad option')", "the factory raised ValueError: 'bad option'"),
    ("def make(options):\n    return object()", "the factory returned object, which has no split(text) method"),
])
def test_a_chunker_that_cannot_be_built_is_named_with_the_step(tmp_path, monkeypatch, body, message):
    params = plugin(tmp_path, monkeypatch, body)
    with pytest.raises(ChunkerError) as info:
        chunk_documents(DOCUMENTS, params)
    assert message.format(m=params.kind.module) in info.value.problem


def test_the_factory_gets_a_copy_of_the_options(tmp_path, monkeypatch):
    body = """
        def make(options):
            options["separator"] = "x"
            class Whole:
                def split(self, text):
                    return [(0, len(text))]
            return Whole()
    """
    params = plugin(tmp_path, monkeypatch, body, options={"separator": "y"})
    chunk_documents(DOCUMENTS, params)
    assert params.options == {"separator": "y"}


def test_the_chunk_step_writes_nothing_when_a_chunker_fails_on_the_last_document(tmp_path, monkeypatch):
    from groundkit.pipeline.steps import chunk as step
    from groundkit.pipeline.store import Store

    body = """
        def make(options):
            class FailsOnB:
                def split(self, text):
                    if text.startswith("Beta"):
                        return ["Gamma"]
                    return [(0, len(text))]
            return FailsOnB()
    """
    params = plugin(tmp_path, monkeypatch, body)
    store = Store()
    documents = tmp_path / "documents.jsonl"
    store.write_models(documents, sorted(DOCUMENTS, key=lambda d: d.path), Document)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(ChunkerError, match=r"document 'b\.md', chunk 0 'Gamma' is not text of the document"):
        step.run(documents, params, out / "chunks.jsonl", out / "chunking.json", store=store)
    assert list(out.iterdir()) == []


def test_the_guides_example_module_is_a_working_chunker(tmp_path, monkeypatch):
    import re

    from tests.conftest import REPO

    guide = (REPO / "docs" / "chunkers.md").read_text(encoding="utf-8")
    module = re.search(r"```python\n(.*?)```", guide, re.S).group(1)
    params = plugin(tmp_path, monkeypatch, module, options={"max_chars": 20})
    text = "First para.\n\nSecond one.\n\n\n\nThird paragraph is long.\n\nEnd."
    chunks = chunk_documents([Document(path="g.md", text=text)], params)
    # paragraphs [0,11) [13,24) [28,52) [54,58): at 20 no two fit together (24, 39 and 30 characters)
    assert [c.text for c in chunks] == ["First para.", "Second one.", "Third paragraph is long.", "End."]
    # at 30 the first two (24) and the last two (30) do
    params = plugin(tmp_path, monkeypatch, module, options={"max_chars": 30})
    chunks = chunk_documents([Document(path="g.md", text=text)], params)
    assert [c.text for c in chunks] == ["First para.\n\nSecond one.", "Third paragraph is long.\n\nEnd."]
