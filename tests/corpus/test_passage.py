import hashlib

import pytest
from pydantic import ValidationError

from groundkit.corpus.passage import Chunk, Document, content_id


def test_content_id_is_sha256_prefix_of_nul_joined_parts():
    expected = hashlib.sha256(b"a.md\x00hello").hexdigest()[:16]
    assert content_id("a.md", "hello") == expected
    assert Document(path="a.md", text="hello").document_id == expected


def test_chunk_id_depends_on_document_offsets_and_text():
    chunk = Chunk(document="a.md", start_offset=0, end_offset=5, text="hello")
    assert chunk.chunk_id == hashlib.sha256(b"a.md\x000\x005\x00hello").hexdigest()[:16]
    moved = Chunk(document="a.md", start_offset=6, end_offset=11, text="hello")
    assert moved.chunk_id != chunk.chunk_id


def test_same_content_gives_same_id_across_instances():
    assert Document(path="x", text="t").document_id == Document(path="x", text="t").document_id


def test_tampered_id_is_rejected():
    chunk = Chunk(document="a.md", start_offset=0, end_offset=5, text="hello")
    edited = chunk.model_dump() | {"text": "jello"}
    with pytest.raises(ValidationError, match="does not match its content"):
        Chunk.model_validate(edited)


def test_offsets_must_match_text_length():
    with pytest.raises(ValidationError, match="do not match"):
        Chunk(document="a.md", start_offset=0, end_offset=4, text="hello")


def test_models_are_frozen_and_forbid_extra_fields():
    doc = Document(path="a.md", text="x")
    with pytest.raises(ValidationError):
        doc.text = "y"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        Document.model_validate({"path": "a.md", "text": "x", "title": "t"})


def test_chunk_is_a_passage_whose_file_keeps_its_field_names():
    from groundkit.artifacts.lines import model_line
    from groundkit.corpus.passage import Excerpt, Passage

    chunk = Chunk(document="a.md", start_offset=6, end_offset=11, text="world")
    assert isinstance(chunk, Passage) and (chunk.start, chunk.end, chunk.length) == (6, 11, 5)
    line = model_line(chunk)
    assert line == ('{"chunk_id": "' + content_id("a.md", 6, 11, "world") + '", "document": "a.md", "end_offset": 11, '
                    '"start_offset": 6, "text": "world"}')
    assert Chunk.model_validate_json(line) == chunk
    # An excerpt of an external run that equals a chunk gets the chunk's id.
    assert Excerpt(document="a.md", start=6, end=11, text="world").passage_id == chunk.chunk_id


@pytest.mark.parametrize(
    ("other", "expected"),
    [((0, 10), True), ((0, 6), True), ((19, 30), True), ((0, 5), False), ((20, 25), False)],
)
def test_overlap_is_half_open_and_symmetric(other, expected):
    from groundkit.corpus.passage import Passage
    from groundkit.corpus.spans import ResolvedSpan

    span = ResolvedSpan(document="a.md", quote="x" * 15, start=5, end=20)  # [5, 20)
    start, end = other
    chunk = Chunk(document="a.md", start_offset=start, end_offset=end, text="y" * (end - start))
    assert chunk.overlaps(span) is expected and span.overlaps(chunk) is expected
    assert Passage(document="a.md", start=start, end=end).overlaps(span) is expected


def test_other_documents_never_overlap():
    from groundkit.corpus.passage import Passage

    assert not Passage(document="b.md", start=0, end=2).overlaps(Passage(document="a.md", start=0, end=2))


def test_a_passage_is_a_non_empty_range():
    from groundkit.corpus.passage import Passage

    with pytest.raises(ValidationError, match="not a non-empty range"):
        Passage(document="a.md", start=4, end=4)


def test_overlap_within_reads_only_the_first_characters():
    from groundkit.corpus.passage import Passage

    passage = Passage(document="a.md", start=100, end=900)
    gold = Passage(document="a.md", start=500, end=510)
    # The first 400 characters end at 500, where the gold span starts: no shared character; 401 share one.
    assert (passage.overlaps(gold, within=400), passage.overlaps(gold, within=401)) == (False, True)
    assert passage.overlaps(gold, within=5000) and passage.overlaps(gold)
    assert not passage.overlaps(Passage(document="b.md", start=100, end=110), within=800)


def test_locate_once_finds_one_place_and_explains_none_or_several():
    from groundkit.corpus.passage import NotOnce, Passage, locate_once

    doc = Document(path="a.md", text="abc\nxabc\nab\u00adc aaa")
    assert locate_once(doc, "xab") == Passage(document="a.md", start=4, end=7)
    assert locate_once(doc, "abc") == NotOnce(2, "line:col 1:1 (offset 0), line:col 2:2 (offset 5)")
    assert locate_once(doc, "aa") == NotOnce(2, "line:col 3:6 (offset 14), line:col 3:7 (offset 15)")
    missing = locate_once(doc, "ABC")
    assert isinstance(missing, NotOnce) and missing.count == 0 and "case-insensitively" in missing.detail
    many = locate_once(Document(path="b.md", text="a" * 8), "a")
    assert many == NotOnce(8, "line:col 1:1 (offset 0), line:col 1:2 (offset 1), line:col 1:3 (offset 2), "
                              "line:col 1:4 (offset 3), line:col 1:5 (offset 4) and 3 more")


@pytest.mark.parametrize(
    ("name", "safe"),
    [("a.md", True), ("ops/backup.md", True), ("../a.md", False), ("ops/../../a.md", False),
     ("/etc/passwd", False), ("ops\\backup.md", False)],
)
def test_corpus_relative_paths(name, safe):
    from groundkit.corpus.passage import is_corpus_relative

    assert is_corpus_relative(name) is safe
