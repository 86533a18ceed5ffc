"""What a provider is given (the retrieved passages and the labels), what a provider is, and the head of a ranking
the character measures read. A leaf of the providers package: the providers and the package's door import it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from groundkit.corpus.passage import Passage
from groundkit.scoring.measures import ANY_OVERLAP, Cutoff, Metric, Relevance

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class Retrieved:
    """What a run retrieved, query by query (the answerable queries scored, in one order).

    Attributes:
        rankings: Each query's retrieved ids, best first (empty when it retrieved nothing).
        passages: Each id's passage, for the measures that read characters; None for a document-level run
            (a TREC run), which has ids alone.
    """

    rankings: Sequence[Sequence[str]]
    passages: Mapping[str, Passage] | None = None

    def __len__(self) -> int:
        return len(self.rankings)


@dataclass(frozen=True)
class Labels:
    """What is relevant to each query of a :class:`Retrieved`, in its order: one label set.

    Attributes:
        qrels: Each query's relevant ids and their grades (the gain nDCG gives them). For an external run they
            include placeholder ids for gold it did not retrieve (groundkit/scoring/score.py).
        spans: Each query's gold spans, which the measures that read characters hold the passages to.
        relevance: The rule that made ``qrels`` from ``spans`` (``score.min_overlap``), which span_recall and
            recall at a budget apply to the passages themselves.
    """

    qrels: Sequence[Mapping[str, int]]
    spans: Sequence[Sequence[Passage]] = ()
    relevance: Relevance = ANY_OVERLAP


class Provider(Protocol):
    """Computes metrics for every query of a run at once."""

    name: str

    def supports(self, metric: Metric) -> bool:
        """Whether this provider computes ``metric``."""
        ...

    def compute(self, metrics: Sequence[Metric], retrieved: Retrieved, labels: Labels) -> dict[str, np.ndarray]:
        """Each of ``metrics`` (all supported), by name: one float64 per query of ``retrieved``."""
        ...


def head(ranking: Sequence[str], passages: Mapping[str, Passage], k: int, budget: int) -> list[Passage]:
    """The passages of the head of ``ranking`` a measure may read: the top ``k``, and enough to fill ``budget``
    characters (the whole ranking when it is shorter).

    Looking up every passage of a 100-deep ranking for 10,000 queries would dominate scoring; no measure
    reads past this head.
    """
    out = [passages[passage_id] for passage_id in ranking[:k]]
    used = sum(p.read_length for p in out)  # a chunk's context prefix (chunk.context) is read too
    for passage_id in ranking[k:]:
        if used >= budget:
            break
        passage = passages[passage_id]
        out.append(passage)
        used += passage.read_length
    return out


def reach(metrics: Sequence[Metric]) -> tuple[int, int]:
    """The deepest rank and the largest budget among ``metrics``' cut-offs: what :func:`head` must hold for them."""
    cuts = [m.cut for m in metrics if m.cut is not None]
    return (max((c.value for c in cuts if c.kind is Cutoff.RANK), default=0),
            max((c.value for c in cuts if c.kind is Cutoff.BUDGET), default=0))
