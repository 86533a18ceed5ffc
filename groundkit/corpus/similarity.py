"""How alike an old gold quote and a proposed one are, and how alike ``repair --write`` needs them.

Standard library only: ``groundkit judgments repair --help`` names the threshold before anything runs.
"""

from __future__ import annotations

import difflib

REPAIR_THRESHOLD = 0.8
"""The similarity at or above which ``repair --write`` applies a proposal.

Similarity is difflib's ratio, 2M / T, with M the characters the old and new quote share (in order)
and T the characters of both. 0.8 lets a few words change in a sentence-long quote (a number, a
unit, a rephrased clause) and refuses a proposal that is mostly other text.
"""


def similarity(old: str, new: str) -> float:
    """difflib's ratio of two strings: 2M / T (1.0 equal, 0.0 nothing in common)."""
    return difflib.SequenceMatcher(None, old, new, autojunk=False).ratio()
