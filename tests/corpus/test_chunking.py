import itertools

import pytest
from pydantic import ValidationError

from groundkit.config import ChunkParams
from groundkit.corpus.chunking import chunk_documents, chunk_fixed, chunk_whole
from groundkit.corpus.passage import Document


def spans(text: str, size: int, overlap: int = 0) -> list[tuple[int, int, str]]:
    doc = Document(path="d.md", text=text)
    return [(c.start_offset, c.end_offset, c.text) for c in chunk_fixed(doc, size, overlap)]


def test_window_ending_on_a_space_keeps_whole_words():
    # "alpha beta " is 11 characters; the trailing space is trimmed.
    assert spans("alpha beta gamma delta", 11) == [(0, 10, "alpha beta"), (11, 22, "gamma delta")]


def test_window_ending_mid_word_backs_off_to_the_previous_space():
    # size 8: "alpha be|ta" would cut "beta", so the window ends after "alpha".
    assert spans("alpha beta gamma delta", 8) == [
        (0, 5, "alpha"),
        (6, 10, "beta"),
        (11, 16, "gamma"),
        (17, 22, "delta"),
    ]


def test_a_word_longer_than_the_window_is_kept_whole():
    assert spans("supercalifragilistic x", 5) == [(0, 20, "supercalifragilistic"), (21, 22, "x")]


def test_overlap_starts_the_next_window_at_a_word_start():
    # size 8 overlap 3: the second window starts 3 characters back, moved forward to "cc".
    assert spans("aa bb cc dd ee", 8, 3) == [(0, 8, "aa bb cc"), (6, 14, "cc dd ee")]


def test_offsets_slice_the_document_and_cover_every_word():
    text = "Lorem ipsum dolor sit amet,\nconsectetur   adipiscing elit.\n\nSed do eiusmod tempor.\n"
    doc = Document(path="d.md", text=text)
    for size in (7, 12, 30, 200):
        chunks = list(chunk_fixed(doc, size, 0))
        for chunk in chunks:
            assert text[chunk.start_offset : chunk.end_offset] == chunk.text
            assert chunk.text == chunk.text.strip()
        assert " ".join(c.text for c in chunks).split() == text.split()


def test_overlapping_windows_never_split_words():
    text = " ".join(f"word{i}" for i in range(200))
    doc = Document(path="d.md", text=text)
    chunks = list(chunk_fixed(doc, 50, 20))
    words = set(text.split())
    for chunk in chunks:
        assert set(chunk.text.split()) <= words
    assert chunks[0].start_offset == 0 and chunks[-1].end_offset == len(text)
    assert all(b.start_offset < a.end_offset for a, b in itertools.pairwise(chunks))


def test_a_window_inside_the_previous_one_is_never_emitted():
    # size 20 overlap 19: the window from "bravo" ([6, 26)) backs off to the space after "delta", and so does the
    # one from "delta": both would end at 17, inside [0, 17). The long word then gets a window of its own.
    assert spans("alpha bravo delta " + "x" * 50, 20, 19) == [(0, 17, "alpha bravo delta"), (18, 68, "x" * 50)]


def test_every_window_ends_past_the_one_before_on_the_committed_corpus():
    from groundkit.corpus.documents import load_corpus
    from tests.conftest import REPO

    documents = load_corpus(REPO / "evals" / "corpus")
    chunks = chunk_documents(documents, ChunkParams(size=300, overlap=299))
    by_document = itertools.groupby(chunks, key=lambda c: c.document)
    contained = sum(1 for _, group in by_document for a, b in itertools.pairwise(group)
                    if b.end_offset <= a.end_offset)
    assert contained == 0  # 8,286 of 31,468 windows before windows were required to end past the previous one
    # Still every non-space character of every document lies in some window.
    covered = {(c.document, i) for c in chunks for i in range(c.start_offset, c.end_offset)}
    assert all((d.path, i) in covered for d in documents for i, char in enumerate(d.text) if not char.isspace())


def test_document_strategy_is_one_trimmed_chunk():
    doc = Document(path="d.md", text="\n  Title\n\nbody text  \n")
    (chunk,) = chunk_whole(doc)
    assert (chunk.start_offset, chunk.end_offset, chunk.text) == (3, 19, "Title\n\nbody text")  # 3 + 16 characters


def test_chunk_documents_orders_by_path_then_offset():
    docs = [Document(path="b.md", text="one two"), Document(path="a.md", text="three four")]
    chunks = chunk_documents(docs, ChunkParams(size=5, overlap=0))
    assert [(c.document, c.start_offset) for c in chunks] == [("a.md", 0), ("a.md", 6), ("b.md", 0), ("b.md", 4)]


@pytest.mark.parametrize(
    ("values", "key"),
    [({"size": 0}, "size"), ({"size": -5}, "size"), ({"overlap": -1}, "overlap"), ({"size": 10, "overlap": 10}, ""),
     ({"strategy": "semantic"}, "strategy")],
)
def test_invalid_params_name_the_key(values, key):
    with pytest.raises(ValidationError) as info:
        ChunkParams(**values)
    error = info.value.errors()[0]
    assert ".".join(map(str, error["loc"])) == key
    if not key:
        assert "overlap (10) must be smaller than size (10)" in str(info.value)


@pytest.mark.parametrize("params", [ChunkParams(strategy="document"), ChunkParams(size=12, overlap=0),
                                    ChunkParams(size=20, overlap=6), ChunkParams(size=5, overlap=0)])
def test_chunks_are_built_as_validation_would_build_them(params):
    """The chunkers build chunks without validating them again: each must equal a validated chunk."""
    from groundkit.artifacts.lines import model_line
    from groundkit.corpus.passage import Chunk

    documents = [Document(path="a.md", text="  Alpha beta, gamma.\n\n\u00e9t\u00e9 \U0001f600 delta-epsilon  zeta\n"),
                 Document(path="b/c.txt", text="x"), Document(path="d.md", text=" \n word \n")]
    chunks = chunk_documents(documents, params)
    assert chunks
    for chunk in chunks:
        validated = Chunk(document=chunk.document, start_offset=chunk.start, end_offset=chunk.end, text=chunk.text)
        assert chunk == validated and model_line(chunk) == model_line(validated)
        assert repr(chunk) == repr(validated) and hash(chunk) == hash(validated)
        assert chunk.model_dump() == validated.model_dump() and chunk.model_copy() == validated
        assert Chunk.model_validate_json(model_line(chunk)) == chunk
