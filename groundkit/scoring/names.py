"""How a metric is named: a measure's name, then its cut-off (``ndcg@10``, ``coverage@1000chars``, ``mrr``).

The grammar alone, with no measure's code: params validation reads it in every stage (``score.measures``,
``score.headline``, the depth a rank cut-off needs), and the registry of measures
(groundkit/scoring/measures/) names its metrics with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum


class Cutoff(Enum):
    """What a metric's cut-off counts, and so how it is written in the metric's name."""

    RANK = "rank"
    """The top k passages: ``name@k``, e.g. ``ndcg@10``."""
    BUDGET = "budget"
    """The first N characters of the ranking: ``name@Nchars``, e.g. ``coverage@1000chars``."""


@dataclass(frozen=True)
class Cut:
    """A cut-off of the ranking: the top ``value`` passages, or its first ``value`` characters."""

    kind: Cutoff
    value: int

    @property
    def suffix(self) -> str:
        return f"@{self.value}chars" if self.kind is Cutoff.BUDGET else f"@{self.value}"


STEM = re.compile(r"[a-z][a-z0-9_]*")
# A stem, then for a cut-off "@" and a positive whole number without leading zeros (so a name has one
# spelling), then "chars" for a budget.
_NAME = re.compile(r"(?P<stem>[a-z][a-z0-9_]*)(?:@(?P<value>[1-9][0-9]*)(?P<chars>chars)?)?")


def split_name(name: str) -> tuple[str, Cut | None]:
    """The measure's name and the cut-off a metric name holds.

    Raises:
        ValueError: ``name`` is not written as a metric name.
    """
    match = _NAME.fullmatch(name) if isinstance(name, str) else None
    if match is None:
        raise ValueError(f"{name!r} is not a metric name: write a measure's name, then @k for the top k "
                         "passages or @Nchars for the first N characters (ndcg@10, coverage@1000chars, mrr)")
    value = match["value"]
    if value is None:
        return match["stem"], None
    return match["stem"], Cut(Cutoff.BUDGET if match["chars"] else Cutoff.RANK, int(value))
