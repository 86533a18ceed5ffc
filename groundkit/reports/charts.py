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
