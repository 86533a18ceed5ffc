"""Library adapters: the chunks groundkit scores are exactly the library's chunks, text for text.

Each library is called directly here, as a team calls it, and its chunks compared with those of
``chunk_documents`` under ``LIBRARY:CLASS`` on documents of the committed corpus and of SciFact.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from groundkit.config import ChunkParams
from groundkit.corpus.chunking import chunk_documents
from groundkit.corpus.chunking.checked import Checker, Located
from groundkit.corpus.passage import Document
from groundkit.errors import ChunkerError, DependencyError
from tests.corpus.test_chunkers import corpus_texts, scifact_texts


@pytest.fixture(scope="module")
def documents() -> list[Document]:
    texts = [*corpus_texts()[:25], *scifact_texts()[:150]]
    return [Document(path=f"d{i:04d}.md", text=text) for i, text in enumerate(texts)]


def ours(documents, strategy, options) -> list[list[str]]:
    chunks = chunk_documents(documents, ChunkParams(strategy=strategy, options=options))
    by_document: dict[str, list[str]] = {d.path: [] for d in documents}
    for chunk in chunks:
        by_document[chunk.document].append(chunk.text)
    return [by_document[d.path] for d in documents]


def nonblank(chunks):
    return [c for c in chunks if c.strip()]


@pytest.fixture(scope="module")
def nltk_data(tmp_path_factory):
    """LlamaIndex's bundled NLTK data, copied: nltk refuses files with several hard links, as a pip cache leaves."""
    import llama_index.core

    bundled = Path(llama_index.core.__file__).parent / "_static" / "nltk_cache"
    copy = tmp_path_factory.mktemp("nltk") / "nltk_cache"
    shutil.copytree(bundled, copy, copy_function=shutil.copy)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NLTK_DATA", str(copy))
        yield copy


@pytest.mark.parametrize(("cls", "options"), [
    ("RecursiveCharacterTextSplitter", {"chunk_size": 300, "chunk_overlap": 50}),
    ("CharacterTextSplitter", {"separator": ". ", "chunk_size": 400, "chunk_overlap": 0}),
    ("MarkdownTextSplitter", {"chunk_size": 250, "chunk_overlap": 30}),
])
def test_langchain_chunks_are_the_librarys(documents, cls, options):
    import langchain_text_splitters

    splitter = getattr(langchain_text_splitters, cls)(**options)
    assert ours(documents, f"langchain:{cls}", options) == [splitter.split_text(d.text) for d in documents]


@pytest.mark.parametrize(("cls", "options"), [
    ("SentenceSplitter", {"chunk_size": 128, "chunk_overlap": 16}),
    ("TokenTextSplitter", {"chunk_size": 96, "chunk_overlap": 8}),
    ("MarkdownNodeParser", {}),
    ("SentenceWindowNodeParser", {"window_size": 2}),
])
def test_llamaindex_chunks_are_the_librarys(documents, nltk_data, cls, options):
    from llama_index.core import Document as LlamaDocument
    from llama_index.core import node_parser

    parser = getattr(node_parser, cls)(**options)
    expected = [[n.text for n in parser.get_nodes_from_documents([LlamaDocument(text=d.text)])] for d in documents]
    assert ours(documents, f"llamaindex:{cls}", options) == expected


@pytest.mark.parametrize(("cls", "options"), [
    ("TokenChunker", {"chunk_size": 200, "chunk_overlap": 20}),
    ("SentenceChunker", {"chunk_size": 300, "chunk_overlap": 40}),
    ("RecursiveChunker", {"chunk_size": 300}),
])
def test_chonkie_chunks_are_the_librarys(documents, cls, options):
    import chonkie

    chunker = getattr(chonkie, cls)(**options)
    assert ours(documents, f"chonkie:{cls}", options) == [[c.text for c in chunker.chunk(d.text)] for d in documents]


@pytest.mark.parametrize(("cls", "options"), [
    ("TextSplitter", {"capacity": 300, "overlap": 30}),
    ("TextSplitter", {"capacity": [150, 400]}),
    ("MarkdownSplitter", {"capacity": 300, "overlap": 0, "trim": True}),
])
def test_semantic_text_splitter_chunks_are_the_librarys(documents, cls, options):
    import semantic_text_splitter

    library_options = {**options, "capacity": tuple(options["capacity"]) if isinstance(options["capacity"], list)
                       else options["capacity"]}
    splitter = getattr(semantic_text_splitter, cls)(**library_options)
    expected = [[c for _, c in splitter.chunk_indices(d.text)] for d in documents]
    assert ours(documents, f"semantic-text-splitter:{cls}", options) == expected


def _error(strategy, options=None, text="# Title\n\nBody text.\n") -> ChunkerError:
    with pytest.raises(ChunkerError) as info:
        chunk_documents([Document(path="d.md", text=text)], ChunkParams(strategy=strategy, options=options or {}))
    assert info.value.key == "chunk.strategy"
    return info.value


def test_a_class_whose_chunks_are_not_document_text_is_refused_naming_the_builtin():
    error = _error("langchain:MarkdownHeaderTextSplitter", {"headers_to_split_on": [["#", "h1"]]})
    assert "MarkdownHeaderTextSplitter's chunks are not verbatim text of the document: it strips the heading " \
           "lines" in error.problem
    assert error.fix.startswith("use chunk.strategy: markdown (with chunk.context: headings")
    assert "use chunk.strategy: recursive or sentence at one size" in _error("llamaindex:HierarchicalNodeParser").fix


def test_an_unknown_class_or_one_that_is_no_splitter_is_refused():
    assert "langchain_text_splitters has no splitter class 'Language'" in _error("langchain:Language").problem
    assert "chonkie has no splitter class 'NoSuchChunker'" in _error("chonkie:NoSuchChunker").problem
    assert "semantic_text_splitter has no splitter class 'CodeSplitter'" in _error(
        "semantic-text-splitter:CodeSplitter").problem


def test_a_librarys_own_error_becomes_one_message():
    error = _error("langchain:RecursiveCharacterTextSplitter", {"chunk_size": 10, "chunk_overlap": 20})
    assert error.problem.startswith("chunker 'langchain:RecursiveCharacterTextSplitter': building "
                                    "RecursiveCharacterTextSplitter(**chunk.options) raised ValueError")
    error = _error("semantic-text-splitter:TextSplitter", {"capacity": 10, "bogus": 1})
    assert "raised TypeError" in error.problem and "bogus" in error.problem


def test_a_library_that_rewrites_text_fails_closed_naming_document_and_chunk():
    # CharacterTextSplitter without keep_separator drops the separators and joins pieces with them again:
    # "a\n\n\n\nb" becomes "a\n\nb", which the document does not hold.
    error = _error("langchain:CharacterTextSplitter", {"separator": "\n\n", "chunk_size": 100, "chunk_overlap": 0},
                   text="a\n\n\n\nb")
    assert "document 'd.md', chunk 0 'a\\n\\nb' is not text of the document" in error.problem


def test_a_missing_library_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "semantic_text_splitter", None)  # import raises ImportError
    with pytest.raises(DependencyError) as info:
        chunk_documents([Document(path="d.md", text="x")],
                        ChunkParams(strategy="semantic-text-splitter:TextSplitter", options={"capacity": 5}))
    assert str(info.value) == ("chunk.strategy 'semantic-text-splitter:TextSplitter' needs semantic-text-splitter, "
                               "which is not installed; pip install 'groundkit[chunking]'")


def test_a_librarys_offsets_are_used_only_where_they_check_out():
    checker = Checker("x:Y", "params")
    text = "ab ab ab"
    # right offsets are taken as they are, even where locating would find an earlier occurrence
    assert checker.spans([Located("ab", 3), Located("ab", 6)], text, "d") == [(3, 5), (6, 8)]
    # a wrong one (not the text there, out of range, before the previous start) is replaced by locating
    assert checker.spans([Located("ab", 1), Located("ab", 99), Located("ab", None)], text, "d") == [
        (0, 2), (3, 5), (6, 8)]
    with pytest.raises(ChunkerError, match="chunk 1 'ba' is not text of the document"):
        checker.spans([Located("ab", 0), Located("ba", 0)], text, "d")


def test_adapters_import_their_library_only_when_named():
    import subprocess

    code = ("import sys; from groundkit.config import load_params; from groundkit.corpus.chunking import "
            "chunk_documents; load_params(None, ['chunk.strategy=langchain:RecursiveCharacterTextSplitter']); "
            "print(sorted(m for m in ('langchain_text_splitters', 'chonkie', 'llama_index', 'semantic_text_splitter',"
            " 'tokenizers') if m in sys.modules))")
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert shown.stdout.strip() == "[]"
