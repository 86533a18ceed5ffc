"""What a reader reads of a ranking at a cut-off, and how much of the gold it holds: the ground of the span measures.

At the top k, a reader reads the first k passages whole. At a budget of B characters, it reads the
ranking's passages concatenated in rank order and cut at B: the passage the budget cuts counts only
for its first characters. A chunk's context prefix (``chunk.context``) is read before its text: it counts
as read (it takes its share of B) but is no document text, so it never covers gold. ``read`` is the
document ranges read; ``read_chars`` the characters read, prefixes included, a passage read twice counted
twice; ``held`` the characters of the gold (the union of the query's gold spans, per document) that the
union of the ranges read covers.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from groundkit.corpus.passage import Passage
from groundkit.scoring.measures import Cut, Cutoff, QueryRun

Range = tuple[str, int, int]


def read(passages: Sequence[Passage], cut: Cut) -> list[Range]:
    """The ranges of the passages a reader reads at ``cut``: whole passages at a rank, prefixes at a budget."""
    if cut.kind is Cutoff.RANK:
        return [(p.document, p.start, p.end) for p in passages[:cut.value]]
    ranges, used = [], 0
    for p in passages:
        if used >= cut.value:
            break
        visible = min(p.read_length, cut.value - used)
        shown = visible - p.prefix_length  # the prefix is read first
        if shown > 0:
            ranges.append((p.document, p.start, p.start + shown))
        used += visible
    return ranges


def read_chars(passages: Sequence[Passage], cut: Cut) -> int:
    """Characters read at ``cut``, prefixes included: what precision and IoU divide by."""
    if cut.kind is Cutoff.RANK:
        return sum(p.read_length for p in passages[:cut.value])
    return min(sum(p.read_length for p in passages), cut.value)


def chars(ranges: Iterable[Range]) -> int:
    """Characters read, a range read twice counted twice."""
    return sum(end - start for _, start, end in ranges)


def merged(ranges: Iterable[Range]) -> dict[str, list[tuple[int, int]]]:
    """The union of ``ranges``, per document, as sorted disjoint [start, end) intervals."""
    by_document: dict[str, list[tuple[int, int]]] = {}
    for document, start, end in sorted(ranges):
        intervals = by_document.setdefault(document, [])
        if intervals and start <= intervals[-1][1]:
            intervals[-1] = (intervals[-1][0], max(intervals[-1][1], end))
        else:
            intervals.append((start, end))
    return by_document


def gold(spans: Iterable[Passage]) -> dict[str, list[tuple[int, int]]]:
    """The union of the gold spans, per document."""
    return merged((s.document, s.start, s.end) for s in spans)


def size(union: dict[str, list[tuple[int, int]]]) -> int:
    return sum(end - start for intervals in union.values() for start, end in intervals)


def held(ranges: Iterable[Range], spans: Iterable[Passage]) -> tuple[int, int, int]:
    """``(I, |G|, C)``: gold characters the ranges cover, gold characters in all, characters read."""
    ranges = list(ranges)
    read_union, gold_union = merged(ranges), gold(spans)
    covered = 0
    for document, targets in gold_union.items():
        intervals = read_union.get(document, [])
        i = 0
        for start, end in targets:
            while i < len(intervals) and intervals[i][1] <= start:
                i += 1
            j = i
            while j < len(intervals) and intervals[j][0] < end:
                covered += min(end, intervals[j][1]) - max(start, intervals[j][0])
                j += 1
    return covered, size(gold_union), chars(ranges)


def held_at(run: QueryRun, cut: Cut) -> tuple[int, int, int]:
    """:func:`held` of what a reader reads of ``run`` at ``cut``, worked out once per query and cut-off."""
    key = ("held", cut)
    found = run.shared.get(key)
    if found is None:
        covered, gold_size, _ = held(read(run.passages, cut), run.spans)
        found = run.shared[key] = (covered, gold_size, read_chars(run.passages, cut))
    return found  # type: ignore[return-value]
