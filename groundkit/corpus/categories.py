"""The kinds a judgment names: its category and who wrote it.

Standard library only: the command line offers these as choices before any command runs, and building its
parser must not load pydantic (``groundkit.corpus.judgments``, which defines the records, re-exports them).
"""

from __future__ import annotations

from enum import StrEnum


class Category(StrEnum):
    """What a judgment tests. ``no_answer`` is the only category without gold."""

    FACTOID = "factoid"
    MULTI_PASSAGE = "multi_passage"
    BOUNDARY = "boundary"
    LEXICAL_GAP = "lexical_gap"
    NO_ANSWER = "no_answer"


class Origin(StrEnum):
    """Who wrote a judgment: a person (the default, and what every hand-written file holds) or a judge model."""

    HUMAN = "human"
    MACHINE = "machine"
