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
