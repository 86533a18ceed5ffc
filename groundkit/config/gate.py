"""The ``gate`` section of params.yaml: what ``groundkit compare`` gates on in a repository.

A section of its own module because no stage reads it (compare and the pull-request script do), so it is left out
of every result's recorded params; groundkit/config/__init__.py's Params holds it like any other section.
"""

from __future__ import annotations

from pydantic import Field, field_validator

from groundkit.artifacts.models import StrictRecord
from groundkit.errors import FixableValueError


class GateParams(StrictRecord):
    """What ``groundkit compare`` gates on in this repository (and so the pull-request script): read only by compare,
    never by a stage, so changing it re-runs nothing. Command-line options take precedence.

    Attributes:
        metrics: The gated metrics (``--metric``); empty: compare's default gate.
        max_drop: A significant drop no larger than this passes (``--max-drop``).
        non_inferiority: ``{metric: margin}`` (``--non-inferiority``): the gate passes only when each metric's
            one-sided 95% lower bound of the paired delta lies above ``-margin`` (docs/statistics.md).
    """

    metrics: list[str] = Field(default_factory=list)
    max_drop: float = Field(default=0.0, ge=0.0)
    non_inferiority: dict[str, float] = Field(default_factory=dict)

    @field_validator("non_inferiority")
    @classmethod
    def _margins(cls, margins: dict[str, float]) -> dict[str, float]:
        for metric, margin in margins.items():
            if not margin > 0:
                raise FixableValueError(f"gives {metric} the margin {margin}, not above 0",
                                        "give each metric the largest drop that would not matter, in its own units, "
                                        "e.g. ndcg@10: 0.02")
        return margins
