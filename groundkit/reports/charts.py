"""Charts drawn as inline SVG for the report page: no script, no font, no file loaded."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

RUN_COLOUR, BASE_COLOUR = "#1f6feb", "#9a6700"
W, H = 560, 300
LEFT, RIGHT, TOP, BOTTOM = 52, 16, 16, 44


def escape_html(text: object) -> str:
    return html.escape(str(text), quote=True)


def _f(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".") if value != int(value) else str(int(value))


def line_chart(title: str, series: Sequence[tuple[str, str, list[tuple[float, float]]]], *, x_label: str,
               y_label: str, log_x: bool = False) -> str:
    """An SVG line chart of y in [0, 1] against x; each series is (label, colour, points)."""
    points = [p for _, _, pts in series for p in pts]
    if not points:
        return f'<p class="empty">{escape_html(title)}: no data.</p>'
    xs = [x for x, _ in points]
    lo, hi = (min(xs), max(xs))
    scale = (lambda v: math.log10(v)) if log_x else (lambda v: v)
    a, b = scale(max(lo, 1) if log_x else 0), scale(hi)
    span = (b - a) or 1.0

    def px(v: float) -> float:
        return LEFT + (scale(v) - a) / span * (W - LEFT - RIGHT)

    def py(v: float) -> float:
        return TOP + (1 - v) * (H - TOP - BOTTOM)

    parts = [f'<svg class="chart" role="img" viewBox="0 0 {W} {H}" width="{W}" height="{H}" '
             f'aria-label="{escape_html(title)}">', f"<title>{escape_html(title)}</title>"]
    for tick in (0, 0.25, 0.5, 0.75, 1):
        y = py(tick)
        parts.append(f'<line class="grid" x1="{LEFT}" x2="{W - RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>'
                     f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{_f(tick)}</text>')
    if log_x:
        ticks = [m * 10**e for e in range(0, 7) for m in (1, 2, 5) if lo <= m * 10**e <= hi]
    else:
        step = 10 ** math.floor(math.log10(hi or 1))
        step = step / 2 if hi / step < 4 else step
        ticks = [t * step for t in range(0, int(hi // step) + 1)]
    for tick in ticks:
        x = px(tick)
        parts.append(f'<line class="axis" x1="{x:.1f}" x2="{x:.1f}" y1="{H - BOTTOM}" y2="{H - BOTTOM + 4}"/>'
                     f'<text class="tick" x="{x:.1f}" y="{H - BOTTOM + 16}" text-anchor="middle">{_f(tick)}</text>')
    parts.append(f'<line class="axis" x1="{LEFT}" x2="{W - RIGHT}" y1="{H - BOTTOM}" y2="{H - BOTTOM}"/>'
                 f'<line class="axis" x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{H - BOTTOM}"/>'
                 f'<text class="label" x="{(LEFT + W - RIGHT) / 2:.0f}" y="{H - 6}" text-anchor="middle">'
                 f"{escape_html(x_label)}</text>"
                 f'<text class="label" transform="translate(14 {(TOP + H - BOTTOM) / 2:.0f}) rotate(-90)" '
                 f'text-anchor="middle">{escape_html(y_label)}</text>')
    for n, (label, colour, pts) in enumerate(series):
        if not pts:
            continue
        path = " ".join(f"{'M' if i == 0 else 'L'}{px(x):.1f},{py(y):.1f}" for i, (x, y) in enumerate(pts))
        parts.append(f'<path class="series" d="{path}" stroke="{colour}" fill="none" stroke-width="2">'
                     f"<title>{escape_html(label)}</title></path>")
        # Bottom right: the curves here rise with x, so that corner stays clear.
        y = H - BOTTOM - 10 - (len(series) - n) * 18
        parts.append(f'<rect x="{W - RIGHT - 200}" y="{y}" width="12" height="12" fill="{colour}"/>'
                     f'<text class="legend" x="{W - RIGHT - 182}" y="{y + 10}">{escape_html(label)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def bar_chart(title: str, groups: dict[str, dict[str, float]], series: Sequence[tuple[str, str, str]]) -> str:
    """Horizontal bars in [0, 1]: one group per category, one bar per (label, colour, key) of ``series``."""
    if not groups:
        return f'<p class="empty">{escape_html(title)}: no answerable queries.</p>'
    bar, gap, left = 14, 12, 150
    per_group = len(series) * bar + gap
    legend_rows = (len(series) + 1) // 2
    height = TOP + len(groups) * per_group + BOTTOM + (legend_rows - 1) * 18
    width = W
    inner = width - left - RIGHT - 44
    parts = [f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
             f'aria-label="{escape_html(title)}">', f"<title>{escape_html(title)}</title>"]
    for tick in (0, 0.25, 0.5, 0.75, 1):
        x = left + tick * inner
        bottom = TOP + len(groups) * per_group
        parts.append(f'<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{bottom}"/>'
                     f'<text class="tick" x="{x:.1f}" y="{bottom + 16}" text-anchor="middle">{_f(tick)}</text>')
    for g, (name, values) in enumerate(groups.items()):
        y0 = TOP + g * per_group
        parts.append(f'<text class="tick" x="{left - 8}" y="{y0 + len(series) * bar / 2 + 4:.1f}" '
                     f'text-anchor="end">{escape_html(name)}</text>')
        for s, (label, colour, key) in enumerate(series):
            value = values.get(key)
            if value is None:
                continue
            y = y0 + s * bar
            parts.append(f'<rect class="bar" x="{left}" y="{y}" width="{max(value * inner, 0.5):.1f}" '
                         f'height="{bar - 2}" fill="{colour}">'
                         f'<title>{escape_html(f"{name}, {label}: {value:.4f}")}</title>'
                         f'</rect><text class="value" x="{left + value * inner + 4:.1f}" y="{y + bar - 4}">'
                         f"{value:.3f}</text>")
    for n, (label, colour, _) in enumerate(series):
        x, y = 20 + (n % 2) * 270, TOP + len(groups) * per_group + 30 + (n // 2) * 18
        parts.append(f'<rect x="{x}" y="{y}" width="12" height="12" fill="{colour}"/>'
                     f'<text class="legend" x="{x + 18}" y="{y + 10}">{escape_html(label)}</text>')
    parts.append("</svg>")
    return "".join(parts)


SERIES_COLOURS = ("#1f6feb", "#bc4c00", "#1a7f37", "#8250df", "#cf222e", "#0a7ea4", "#9a6700", "#59636e")
"""Colours of a chart's series, in order; an eighth and later series reuse them."""

Marker = tuple[float, float, float | None, float | None, bool, str]
"""A point of :func:`scatter_chart`: x, y, the interval's low and high (None: none), on the frontier, its name."""


def scatter_chart(title: str, series: Sequence[tuple[str, Sequence[Marker]]], *, x_label: str, y_label: str) -> str:
    """Points with vertical 95% intervals, x on a log scale; each series a colour, its points joined in the order
    given; points on the frontier ringed and joined by a dashed line (best for the least x, up and to the left)."""
    points = [p for _, pts in series for p in pts]
    if not points:
        return f'<p class="empty">{escape_html(title)}: no data.</p>'
    width, height, left = 640, 340, 56
    xs = [x for x, *_ in points if x > 0]
    lo_x, hi_x = math.log10(min(xs)) - 0.08, math.log10(max(xs)) + 0.08
    lows = [low if low is not None else y for _, y, low, *_ in points]
    highs = [high if high is not None else y for _, y, _, high, *_ in points]
    lo_y, hi_y = max(0.0, math.floor(min(lows) * 10) / 10), min(1.0, math.ceil(max(highs) * 10) / 10)
    if hi_y - lo_y < 0.1:
        lo_y, hi_y = max(0.0, lo_y - 0.1), min(1.0, hi_y + 0.1)
    bottom, right = height - BOTTOM - 8, width - 215

    def px(v: float) -> float:
        return left + (math.log10(max(v, 1e-9)) - lo_x) / (hi_x - lo_x) * (right - left)

    def py(v: float) -> float:
        return TOP + (hi_y - v) / (hi_y - lo_y) * (bottom - TOP)

    parts = [f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
             f'aria-label="{escape_html(title)}">', f"<title>{escape_html(title)}</title>"]
    steps = round((hi_y - lo_y) / 0.1)
    for i in range(steps + 1):
        tick = lo_y + i * (hi_y - lo_y) / steps
        y = py(tick)
        parts.append(f'<line class="grid" x1="{left}" x2="{right}" y1="{y:.1f}" y2="{y:.1f}"/>'
                     f'<text class="tick" x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{tick:.1f}</text>')
    for tick in [m * 10**e for e in range(0, 8) for m in (1, 2, 5)]:
        if lo_x <= math.log10(tick) <= hi_x:
            x = px(tick)
            parts.append(f'<line class="axis" x1="{x:.1f}" x2="{x:.1f}" y1="{bottom}" y2="{bottom + 4}"/>'
                         f'<text class="tick" x="{x:.1f}" y="{bottom + 16}" text-anchor="middle">{tick:,}</text>')
    parts.append(f'<line class="axis" x1="{left}" x2="{right}" y1="{bottom}" y2="{bottom}"/>'
                 f'<line class="axis" x1="{left}" x2="{left}" y1="{TOP}" y2="{bottom}"/>'
                 f'<text class="label" x="{(left + right) / 2:.0f}" y="{height - 10}" text-anchor="middle">'
                 f"{escape_html(x_label)}</text>"
                 f'<text class="label" transform="translate(14 {(TOP + bottom) / 2:.0f}) rotate(-90)" '
                 f'text-anchor="middle">{escape_html(y_label)}</text>')
    best = sorted((p for p in points if p[4]), key=lambda p: p[0])
    if len(best) > 1:
        path = " ".join(f"{'M' if i == 0 else 'L'}{px(x):.1f},{py(y):.1f}" for i, (x, y, *_) in enumerate(best))
        parts.append(f'<path class="frontier" d="{path}" stroke="#1f2328" stroke-dasharray="5 4" fill="none" '
                     'stroke-width="1.2"><title>Pareto frontier</title></path>')
    for n, (label, pts) in enumerate(series):
        colour = SERIES_COLOURS[n % len(SERIES_COLOURS)]
        if len(pts) > 1:
            path = " ".join(f"{'M' if i == 0 else 'L'}{px(x):.1f},{py(y):.1f}" for i, (x, y, *_) in enumerate(pts))
            parts.append(f'<path class="series" d="{path}" stroke="{colour}" fill="none" stroke-width="1.5" '
                         f'opacity="0.6"><title>{escape_html(label)}</title></path>')
        for x, y, low, high, on_frontier, name in pts:
            tip = escape_html(f"{name}: {y_label} {y:.4f}" + (f" [{low:.4f}, {high:.4f}]" if low is not None else "")
                              + f", {x_label} {x:,.1f}")
            if low is not None and high is not None:
                parts.append(f'<line class="interval" x1="{px(x):.1f}" x2="{px(x):.1f}" y1="{py(low):.1f}" '
                             f'y2="{py(high):.1f}" stroke="{colour}" stroke-width="1.5"/>')
            if on_frontier:
                parts.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="7.5" fill="none" stroke="#1f2328" '
                             'stroke-width="1.2"/>')
            parts.append(f'<circle class="point" cx="{px(x):.1f}" cy="{py(y):.1f}" r="4.5" fill="{colour}">'
                         f"<title>{tip}</title></circle>")
        y = TOP + 8 + n * 18
        parts.append(f'<rect x="{right + 20}" y="{y}" width="12" height="12" fill="{colour}"/>'
                     f'<text class="legend" x="{right + 38}" y="{y + 10}">{escape_html(label)}</text>')
    if any(p[4] for p in points):
        y = TOP + 8 + len(series) * 18
        parts.append(f'<circle cx="{right + 26}" cy="{y + 6}" r="6" fill="none" stroke="#1f2328"/>'
                     f'<text class="legend" x="{right + 38}" y="{y + 10}">Pareto frontier</text>')
    parts.append("</svg>")
    return "".join(parts)
