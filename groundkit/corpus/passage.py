"""Documents and chunks, the two records every stage passes along.

Identity is derived from content rather than drawn at random, so the same
corpus and parameters always produce the same ids and byte-identical
artifacts, which is what lets DVC cache stages by content hash.
"""

from __future__ import annotations

import hashlib

from pydantic import Field, model_validator

from groundkit._models import StrictRecord

ID_HEX_CHARS = 16


def content_id(*parts: str | int) -> str:
    """Return a short, stable id: the first 16 hex digits of SHA-256 over ``parts``.

    Parts are joined with NUL, which cannot occur in a path and is rejected in
    document text, so distinct part lists cannot collide by concatenation.
    """
    payload = "\0".join(str(part) for part in parts).encode("utf-8")
    return hashlib.sha256(payload).hexdigest()[:ID_HEX_CHARS]


class Document(StrictRecord):
    """One corpus document.

    Attributes:
        path: Corpus-relative POSIX path; the name judgments use.
        text: The full text, exactly as read (UTF-8, LF line endings).
        document_id: ``content_id(path, text)``.
    """

    path: str = Field(min_length=1)
    text: str
    document_id: str = ""

    @model_validator(mode="before")
    @classmethod
    def _derive_id(cls, data: object) -> object:
        if isinstance(data, dict) and not data.get("document_id"):
            data = {**data, "document_id": content_id(data.get("path", ""), data.get("text", ""))}
        return data

    @model_validator(mode="after")
    def _check_id(self) -> Document:
        expected = content_id(self.path, self.text)
        if self.document_id != expected:
            raise ValueError(
                f"document_id {self.document_id!r} does not match its content (expected {expected!r})"
            )
        return self


class Chunk(StrictRecord):
    """A contiguous ``[start_offset, end_offset)`` slice of one document.

    Attributes:
        document: Corpus-relative path of the source document.
        start_offset: First character of the chunk in the document text.
        end_offset: One past the last character.
        text: ``document.text[start_offset:end_offset]``.
        chunk_id: ``content_id(document, start_offset, end_offset, text)``.
    """

    document: str = Field(min_length=1)
    start_offset: int = Field(ge=0)
    end_offset: int = Field(gt=0)
    text: str = Field(min_length=1)
    chunk_id: str = ""

    @model_validator(mode="before")
    @classmethod
    def _derive_id(cls, data: object) -> object:
        if isinstance(data, dict) and not data.get("chunk_id"):
            data = {
                **data,
                "chunk_id": content_id(
                    data.get("document", ""),
                    data.get("start_offset", ""),
                    data.get("end_offset", ""),
                    data.get("text", ""),
                ),
            }
        return data

    @model_validator(mode="after")
    def _check(self) -> Chunk:
        if self.end_offset - self.start_offset != len(self.text):
            raise ValueError(
                f"offsets [{self.start_offset}, {self.end_offset}) do not match "
                f"a text of {len(self.text)} characters"
            )
        expected = content_id(self.document, self.start_offset, self.end_offset, self.text)
        if self.chunk_id != expected:
            raise ValueError(
                f"chunk_id {self.chunk_id!r} does not match its content (expected {expected!r})"
            )
        return self
