"""The two bases of every pydantic model in groundkit: records and params sections.

Every model refuses unknown keys (a typo is an error, not a silently ignored
field) and is frozen (a record read from disk is what was written). They
differ in one setting only:

* ``Record`` converts where JSON or CSV cannot say the type itself: a
  category written as a string becomes its enum, a float column read back
  from CSV validates. The reports and the run's schema use it.
* ``StrictRecord`` converts nothing: an int is not a float, a string is not
  a number. Params sections, documents, chunks, judgments and spans use it,
  because what a user wrote must mean exactly what it says.

Both build their validators on first use (``defer_build``), not at import: each DVC stage is a
process of its own that validates a few of groundkit's models, and building all of them at import
took about 20 ms of every stage's start-up.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict

R = TypeVar("R", bound=BaseModel)


class Record(BaseModel):
    """A frozen model that refuses unknown keys and converts values pydantic's lax mode allows."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class StrictRecord(Record):
    """A ``Record`` that converts nothing: every value must already have its declared type."""

    model_config = ConfigDict(strict=True)


def assembled(model: type[R], fields: dict[str, Any]) -> R:
    """``model.model_construct(**fields)`` for ``fields`` naming every field of ``model`` in declaration order,
    none of them private or extra: what model_construct sets, set directly. Only for values checked by
    construction (a corpus's documents, their chunks; their modules' tests compare them with validated
    ones): model_construct's general bookkeeping was a third of building 5,183 documents or chunks."""
    record = model.__new__(model)
    _set(record, "__dict__", fields)
    _set(record, "__pydantic_fields_set__", set(fields))
    _set(record, "__pydantic_extra__", None)
    _set(record, "__pydantic_private__", None)
    return record


_set = object.__setattr__
