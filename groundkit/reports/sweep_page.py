"""The sweep view as one self-contained HTML page: the chart of quality against context, the table, the answers.

Like the report page it loads nothing (the same Content-Security-Policy) and the same view gives the
same bytes; unlike it, it needs no script: everything is in the markup and the inline SVG.
"""

from __future__ import annotations

from groundkit.reports._page import FOOTER, STYLE, page
from groundkit.reports.charts import escape_html, scatter_chart
from groundkit.reports.sweep_view import Group, SweepView, order_key, render_text, series_of
from groundkit.scoring.measures import MEASURES

MARKER = '<meta name="generator" content="groundkit sweep">'


def _chart(view: SweepView, group: Group, budget: str | None = None) -> str:
    """``view.quality`` (or the size-fair ``budget`` metric) of every configuration against its context cost."""
    series: dict[str, list[tuple[float, float, float | None, float | None, bool, str]]] = {}
    first = view.params[0] if view.params else None
    ordered = sorted(group.points, key=lambda p: (series_of(view, p), order_key(p.config.params.get(first))))
    for p in ordered:
        y, low, high = (p.quality, *p.quality_ci) if budget is None else p.budgets[budget]
        series.setdefault(series_of(view, p), []).append(
            (p.cost, y, low, high, p.frontier and budget is None, p.config.label))
    metric = budget or view.quality
    title = f"{metric} against {view.cost}" + (f", score.min_overlap = {group.min_overlap:g}"
                                               if len(view.groups) > 1 else "")
    return scatter_chart(title, list(series.items()), x_label=f"{view.cost} (log scale)", y_label=metric)


def render(view: SweepView) -> str:
    """The page, every number as the text view shows it."""
    sections = []
    for group in view.groups:
        heading = (f"<h2>score.min_overlap = {group.min_overlap:g}</h2>" if len(view.groups) > 1 else "")
        figures = [f"<figure>{_chart(view, group)}<figcaption>Each point a configuration, with the 95% bootstrap "
                   f"interval of its {escape_html(view.quality)}; ringed: the Pareto frontier (no configuration ranks "
                   f"better for less context). Lines join a series in order of "
                   f"{escape_html(view.params[0] if view.params else 'configuration')}.</figcaption></figure>"]
        for answer in group.answers:
            window = f"{MEASURES.parse(answer.metric).cut.value:,} characters"
            figures.append(f"<figure>{_chart(view, group, answer.metric)}<figcaption>The share of the gold a window "
                           f"of {window} holds, with its 95% interval: size-fair, a larger chunk cannot win by the "
                           f"text it carries past the window. Best: {escape_html(answer.best.config.label)}."
                           "</figcaption></figure>")
        sections.append(f"{heading}<div class=\"charts\">{''.join(figures)}</div>")
    text = render_text(view)
    body = (f"<h1>groundkit sweep of {escape_html(view.commit)}</h1>"
            f"<p class=\"facts\">{sum(len(g.points) for g in view.groups)} configurations, {view.queries} answerable "
            f"queries, varied: {escape_html(', '.join(view.params) or 'nothing')}.</p>"
            + "".join(sections)
            + f"<h2>Table and answers</h2><pre class=\"passage\">{escape_html(text)}</pre>"
            + "".join(f"<p class=\"meta\">Left out: {escape_html(name)}: {escape_html(why)}.</p>"
                      for name, why in view.left_out)
            + FOOTER)
    return page(marker=MARKER, title=f"groundkit sweep of {escape_html(view.commit)}", body=body,
                style=f"{STYLE}figure{{max-width:600px}}")
