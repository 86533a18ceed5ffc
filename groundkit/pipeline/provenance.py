"""What a stage records of how it made its outputs: one schema for every provenance record.

A later stage must not report a setting or an input other than the one its artifacts were made from:
score puts the corpus and judgments hashes, the chunk params and the retrieval params into run.json,
and refuses a record that disagrees with params.yaml. Each of those facts is written by the stage that
used it (resolve-spans, chunk, retrieve), in one shape::

    {"stage": "chunk", "inputs": {"documents": "<sha256>"}, "params": {"chunk": {...}}}

``stage`` names the stage that wrote it (the stage table's name), ``inputs`` the SHA-256 of each input
by name, ``params`` the params sections it used, as ``result_params`` gives them. The store writes a
record and checks it on read (groundkit/pipeline/store.py): a file in another shape, or written by
another stage, is refused with the stage to run again.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field, field_validator

from groundkit.artifacts.models import Record

_SHA256 = re.compile(r"[0-9a-f]{64}")


class Provenance(Record):
    """One stage's record of what it made its outputs from.

    Attributes:
        stage: The stage that wrote it.
        inputs: Input name -> the SHA-256 of the bytes the stage read.
        params: The params sections the stage used, by section.
    """

    stage: str
    inputs: dict[str, str] = Field(default_factory=dict)
    params: dict[str, Any] = Field(default_factory=dict)

    @field_validator("inputs")
    @classmethod
    def _hashes(cls, inputs: dict[str, str]) -> dict[str, str]:
        for name, digest in inputs.items():
            if not _SHA256.fullmatch(digest):
                raise ValueError(f"input {name!r} has {digest!r}, not a SHA-256 (64 lowercase hex digits)")
        return inputs
