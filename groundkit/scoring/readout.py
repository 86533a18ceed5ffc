"""A run's results as a person reads them in a terminal: a few aligned lines, not a dict on one line.

The same text ends ``groundkit run`` and every ``dvc repro`` that scores: the counts of queries, the
headline figures (metrics.json's), then every other figure of the detail, grouped by measure, in
aligned columns that fit the width (100 columns). It is built from whatever the detail holds, so a
new measure shows up here without a line of this module changing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

WIDTH = 100
"""The widest line :func:`readout` writes."""

GAP = "  "


def figure(value: Any) -> str:
    """A value as the readout shows it: a count as it is, a measure at four decimals."""
    if isinstance(value, bool) or not isinstance(value, float):
        return str(value)
    return f"{value:.4f}"


def _family(name: str) -> tuple[str, str]:
    """``recall@10`` -> (``recall``, ``@10``): the measure, and the cut-off its cell shows."""
    stem, at, cutoff = name.partition("@")
    return stem, at + cutoff


def _cutoff_order(cell: tuple[str, str]) -> tuple[str, int]:
    """``@5`` before ``@10``, and rank cut-offs before budgets (``@500chars``), whatever order the detail had."""
    digits = "".join(c for c in cell[0] if c.isdigit())
    return "".join(c for c in cell[0] if not c.isdigit()), int(digits) if digits else -1


def _counts(figures: Mapping[str, Any], *, measures: bool) -> list[tuple[str, str]]:
    """A block's counts as cells, the number of queries first; its means too unless ``measures`` show them."""
    cells = [("queries", figure(figures["queries"]))] if "queries" in figures else []
    cells += [(k, figure(v)) for k, v in figures.items()
              if k != "queries" and (not isinstance(v, float) or not measures)]
    return cells


def _grid(rows: Sequence[tuple[str, Sequence[tuple[str, str]]]], width: int, label_width: int) -> list[str]:
    """Rows of ``(label, [(name, value), ...])`` as aligned columns, each row wrapped to fit ``width``.

    Every row is cut after the same number of cells, so the columns line up down the rows (and under
    a wrapped row's first line); a cell aligns its names to the left and its values to the right.
    """
    most = max(len(cells) for _, cells in rows)
    for per_line in range(most, 0, -1):
        names = [0] * per_line
        values = [0] * per_line
        for _, cells in rows:
            for i, (name, value) in enumerate(cells):
                names[i % per_line] = max(names[i % per_line], len(name))
                values[i % per_line] = max(values[i % per_line], len(value))
        cells_width = [n + (1 if n else 0) + v for n, v in zip(names, values, strict=True)]
        if label_width + len(GAP) * per_line + sum(cells_width) <= width or per_line == 1:
            break
    lines = []
    for label, cells in rows:
        for first in range(0, max(len(cells), 1), per_line):
            shown = label if first == 0 else ""
            parts = [f"{shown:<{label_width}}"]
            for i, (name, value) in enumerate(cells[first:first + per_line]):
                cell = f"{name:<{names[i]}} {value:>{values[i]}}" if names[i] else f"{value:>{values[i]}}"
                parts.append(f"{cell:<{cells_width[i]}}")
            lines.append(GAP.join(parts).rstrip())
    return lines


def headline_names(metrics: Mapping[str, Any]) -> list[str]:
    """The headline metrics a metrics.json document holds, in its order: under ``ppi`` with two label sets."""
    ppi = metrics.get("ppi")
    return list(ppi) if isinstance(ppi, dict) else list(metrics)


def _ppi_grids(ppi: Mapping[str, Any], headline: Sequence[str]) -> list[list[tuple[str, Sequence[tuple[str, str]]]]]:
    """Two label sets: each headline metric's prediction-powered estimate and 95% interval, what they rest on,
    and a line saying that every figure after them is the judge's."""
    figures = ppi.get("metrics", {})
    cells = [(name, f"{figures[name]['estimate']:.4f} [{figures[name]['ci_low']:.4f}, {figures[name]['ci_high']:.4f}]")
             for name in headline if name in figures]
    rests = f"95% intervals (PPI++): {ppi['n']} queries labelled by a person, {ppi['N']} by the judge alone"
    return [[("ppi", cells)] if cells else [], [("", [("", rests)])],
            [("judge", [("", "every figure below is under the judge's labels alone: biased by its errors")])]]


def readout(detail: Mapping[str, Any], headline: Sequence[str], *, width: int = WIDTH) -> list[str]:
    """The lines that show a run's ``detail`` (the detail.json document): counts, headline, every other figure.

    Args:
        detail: ``answerable`` (the means over answerable queries, and counts), ``no_answer`` (counts).
        headline: The names of the headline figures (metrics.json's), shown first, in this order.
        width: The widest line allowed; a row of figures that would be wider wraps.

    Under two label sets (a ``ppi`` block), the prediction-powered estimates of the headline come first, and
    every other figure is labelled as the judge's: biased by its errors.
    """
    answerable: Mapping[str, Any] = detail.get("answerable", {})
    no_answer: Mapping[str, Any] = detail.get("no_answer", {})
    counts: list[tuple[str, Sequence[tuple[str, str]]]] = [("answerable", _counts(answerable, measures=True))]
    if no_answer.get("queries"):
        counts.append(("no_answer", _counts(no_answer, measures=False)))
    figures = {name: value for name, value in answerable.items() if isinstance(value, float)}
    shown = [name for name in headline if name in figures]
    families: dict[str, list[tuple[str, str]]] = {}
    for name, value in figures.items():
        if name not in shown:
            stem, cutoff = _family(name)
            families.setdefault(stem, []).append((cutoff, figure(value)))
    grids = [counts]
    ppi = detail.get("ppi")
    if isinstance(ppi, Mapping):
        grids = [grid for grid in _ppi_grids(ppi, headline) if grid] + grids
    if shown:
        grids.append([("headline", [(name, figure(figures[name])) for name in shown])])
    if families:
        grids.append([(stem, sorted(cells, key=_cutoff_order)) for stem, cells in families.items()])
    # Counts, the headline's whole names and the families' cut-offs are each a grid of their own (their columns
    # hold unlike cells); the labels in front of them line up.
    label_width = max(len(label) for grid in grids for label, _ in grid)
    return [line for grid in grids for line in _grid(grid, width, label_width)]
