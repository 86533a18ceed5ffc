"""groundkit from Python: evaluate, score, load and compare runs, with results as pandas DataFrames.

What the command line does, for a notebook::

    import groundkit as gk

    base = gk.evaluate("evals/corpus", "evals/judgments.jsonl", params="params.yaml")
    small = gk.evaluate("evals/corpus", "evals/judgments.jsonl", params="params.yaml", set={"chunk.size": 400})
    base.per_query        # one row per query: its category, first gold rank and every metric
    base.by_category      # one row per category: the mean of every metric over its answerable queries
    gk.compare_runs(base, small)  # one row per candidate and metric: delta, 95% CI, p

A retriever is a name of ``retrieve.retriever`` (``"bm25"``, ``"dense"``, ...), an object with
``search(query, depth)`` returning ``(chunk_id, score)`` pairs best first, or a factory
``(chunks, options)`` that returns one: the contract of a ``python:`` retriever
(groundkit/retrieval/ports.py), checked the same way, and handed to the run as the object it is. Each run writes the
artifacts of ``groundkit run`` into ``out``, so ``Results.report()`` can show its passages. Without ``out`` they go
into a new temporary folder that belongs to the result: it is removed when the result is released (garbage
collected, or at the interpreter's exit), so a notebook that evaluates in a loop does not fill the disk. Pass
``out=`` to keep them.
"""

from __future__ import annotations

import html
import json
import shutil
import tempfile
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groundkit.errors import ArtifactError, CompareError, InputError, RetrieverError
from groundkit.reports.compare import compare
from groundkit.reports.sides import NO_ANSWER, Side, read_side
from groundkit.retrieval.kinds import PythonObject, RetrieverKind, parse
from groundkit.scoring.schema import HUMAN_PREFIX

if TYPE_CHECKING:
    import pandas as pd

    from groundkit.config import Params

def _shown(metric: str, value: float) -> str:
    """``value`` as reports show ``metric``: at its measure's decimals (4; 1 for chars@k); the value stays exact."""
    from groundkit.errors import MeasureError
    from groundkit.scoring.measures import MEASURES

    try:
        decimals = MEASURES.parse(metric).measure.decimals
    except MeasureError:  # a column no registered measure writes (another package's, since uninstalled)
        decimals = 4
    return f"{value:.{decimals}f}"


class Figures(dict[str, float]):
    """A run's mean of each metric, keyed by name: a plain dict of exact floats that shows itself rounded.

    ``repr`` and a notebook's HTML show each value at the decimals reports use, not ``0.7817459999999999``;
    ``figures["ndcg@10"]`` is the exact mean.
    """

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{name!r}: {_shown(name, value)}" for name, value in self.items()) + "}"

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><th>{html.escape(name)}</th><td>{_shown(name, value)}</td></tr>"
                       for name, value in self.items())
        return f"<table><thead><tr><th>metric</th><th>mean</th></tr></thead><tbody>{rows}</tbody></table>"


@dataclass(frozen=True)
class Results:
    """One scored run: its per-query results and where they came from.

    Attributes:
        name: The run's label (the folder, revision or experiment it was read from).
        side: The per-query values as ``groundkit compare`` reads them.
        folder: The run's folder, when it has one (``evaluate``, ``score_file``, a folder given to ``load``).
    """

    name: str
    side: Side
    folder: Path | None = None

    def __repr__(self) -> str:
        """One line: the run, its queries, its headline figures and its folder (the values stay in ``per_query``)."""
        answerable = sum(1 for c in self.side.per_query.categories if c != NO_ANSWER)
        shown = ", ".join(f"{name} {_shown(name, value)}" for name, value in self._headline().items())
        no_answer = len(self.side.per_query.categories) - answerable
        return (f"<Results {self.name!r}: {answerable} answerable and {no_answer} "
                f"no_answer queries; {shown}; folder {self._where()}>")

    def _repr_html_(self) -> str:
        """What a notebook shows: the line of ``repr`` and every metric, overall and per category, in one table."""
        categories = sorted({c for c in self.side.per_query.categories if c != NO_ANSWER})
        table = self.by_category
        head = "".join(f"<th>{html.escape(c)} ({int(table.loc[c, 'queries'])})</th>" for c in categories)
        answerable = sum(1 for c in self.side.per_query.categories if c != NO_ANSWER)
        rows = "".join(
            f"<tr><th>{html.escape(m)}</th><td>{_shown(m, value)}</td>"
            + "".join(f"<td>{_shown(m, table.loc[c, m])}</td>" for c in categories) + "</tr>"
            for m, value in self.metrics.items())
        return (f"<div><p><strong>{html.escape(self.name)}</strong>: {answerable} answerable and "
                f"{len(self.side.per_query.categories) - answerable} no_answer queries; "
                f"folder {html.escape(self._where())}</p>"
                f"<table><thead><tr><th>metric</th><th>all ({answerable})</th>{head}</tr></thead>"
                f"<tbody>{rows}</tbody></table></div>")

    def _where(self) -> str:
        if self.folder is None:
            return "none"
        return str(self.folder) if self.folder.exists() else f"{self.folder} (removed)"

    def _headline(self) -> dict[str, float]:
        """metrics.json's figures when the folder holds it, else the first four metrics."""
        metrics = self.metrics
        if self.folder is not None:
            for found in (self.folder / "metrics.json", self.folder / "metrics" / "metrics.json"):
                if found.is_file():
                    names = [n for n in json.loads(found.read_text(encoding="utf-8")) if n in metrics]
                    return {n: metrics[n] for n in names}
        return dict(list(metrics.items())[:4])

    @property
    def metrics(self) -> Figures:
        """The mean of every metric over the answerable queries, from the per-query values (exact; shown rounded)."""
        frame = self.per_query
        answerable = frame[frame["category"] != NO_ANSWER]
        return Figures({m: float(answerable[m].mean()) for m in self.side.per_query.metric_names})

    @property
    def per_query(self) -> pd.DataFrame:
        """One row per query, indexed by query id: query, category, first gold rank, abstained, every metric.

        ``first_gold_rank`` is missing (``<NA>``) where no gold passage was retrieved; metrics are NaN for
        no-answer queries, which have no gold. A run scored under two label sets (``corpus.machine_judgments``)
        has the judge's values in the metric columns and the person's in ``human.METRIC`` columns, NaN where the
        person did not label the query.
        """
        import pandas as pd

        side = self.side
        frame = pd.DataFrame(side.per_query.values, columns=side.per_query.metric_names)
        ranks = [None if r == float("inf") else int(r) for r in side.per_query.first_gold_rank]
        frame.insert(0, "abstained", side.per_query.abstained)
        frame.insert(0, "first_gold_rank", pd.array(ranks, dtype="Int64"))
        frame.insert(0, "category", side.per_query.categories)
        frame.insert(0, "query", side.per_query.queries)
        if side.per_query.human_values is not None:  # two label sets: the person's values beside the judge's
            for j, name in enumerate(side.per_query.human_names):
                frame[HUMAN_PREFIX + name] = side.per_query.human_values[:, j]
        frame.index = pd.Index(list(side.per_query.position), name="query_id")
        return frame

    @property
    def by_category(self) -> pd.DataFrame:
        """One row per answerable category: its number of queries and the mean of every metric."""
        frame = self.per_query
        answerable = frame[frame["category"] != NO_ANSWER]
        grouped = answerable.groupby("category", sort=True)
        table = grouped[self.side.per_query.metric_names].mean()
        table.insert(0, "queries", grouped.size())
        return table

    def report(self, out: str | Path, *, baseline: Results | None = None) -> Path:
        """Write the HTML report of this run (against ``baseline``) to ``out``; return its path.

        ``out`` must be new or a report groundkit wrote; anything else is refused, untouched.
        """
        from groundkit.artifacts.atomic import atomic_write_text
        from groundkit.artifacts.outputs import check_file
        from groundkit.reports.evidence import locate
        from groundkit.reports.html import is_report, render
        from groundkit.reports.page_data import Input, checked

        def page_input(results: Results) -> Input:
            if results.folder is not None and not results.folder.is_dir():
                raise ArtifactError(results.folder, f"is gone: it held the artifacts of {results.name!r} that a report "
                                    "shows, and was removed (an evaluate() without out= keeps them in a temporary "
                                    "folder only while its result lives)",
                                    fix="evaluate again with out=FOLDER to keep the artifacts, then ask for the report")
            spec = str(results.folder) if results.folder is not None else results.name
            evidence, note = checked(results.side, locate(spec, Path.cwd()))
            return Input(results.side, evidence, note, [])

        check_file(Path(out), command="report", what="a groundkit report", force=True, recognise=is_report,
                   inputs={})
        run = page_input(self)
        base = page_input(baseline) if baseline is not None else None
        comparison = compare(baseline.side, self.side, gate=[]) if baseline is not None else None
        atomic_write_text(Path(out), render(run, base, comparison))
        return Path(out)


def _overrides(values: Mapping[str, Any] | Iterable[str]) -> list[str]:
    if isinstance(values, Mapping):
        return [f"{key}={value}" for key, value in values.items()]
    return list(values)


def _kind(retriever: Any) -> RetrieverKind | None:
    """The kind of retriever ``evaluate`` was handed: a name parsed as params.yaml's, or an object; None for none."""
    if retriever is None or isinstance(retriever, str):
        return None if retriever is None else parse(retriever)
    kind = PythonObject.of(retriever)
    if kind is None:
        raise RetrieverError("retriever", f"{type(retriever).__name__} has no search(query, depth) method",
                             fix="pass a retriever name such as 'bm25', an object with search(query, depth) "
                                 "returning (chunk_id, score) pairs best first, or a factory(chunks, options) "
                                 "that returns one")
    return kind


def _checked_name(name: object) -> None:
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise InputError("name", f"is {name!r}; a result's name is text that is not empty",
                         fix="pass name='...' with what tells this result apart (e.g. name='chunk.size 400'), or leave "
                             "it out for the default")


def _named(name: str | None, folder: Path) -> Results:
    """The results in ``folder``, named ``name`` (in compare_runs, a report, a DataFrame's index)."""
    label = folder.name if name is None else name
    return Results(label, replace(read_side(str(folder), cwd=Path.cwd()), label=label), folder)


def _run(corpus: str | Path, judgments: str | Path, params: str | Path | None, overrides: list[str],
         out: str | Path | None, command: str, kind: RetrieverKind | None = None, *, name: str | None,
         default_name: Callable[[Params], str]) -> Results:
    from groundkit.config import load_params
    from groundkit.pipeline.runner import run

    _checked_name(name)  # before any work: a bad name would otherwise surface only after the run
    loaded = load_params(params, overrides)
    if kind is not None:
        loaded = loaded.retrieving(kind)
    if out is not None:
        folder = Path(out)
        run(corpus, judgments, loaded, folder, command=command, inputs={"the params file": params})
        return _named(name, folder)
    folder = Path(tempfile.mkdtemp(prefix="groundkit-"))
    try:
        run(corpus, judgments, loaded, folder, command=command, inputs={"the params file": params})
        # A temporary folder's name says nothing (groundkit-g96t93m4): the run is named by what it ran.
        results = _named(default_name(loaded) if name is None else name, folder)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)  # made here, for this run alone
        raise
    # The folder is the result's: removed with it (when it is collected, or at exit), as a TemporaryDirectory is.
    weakref.finalize(results, shutil.rmtree, folder, ignore_errors=True)
    return results


def evaluate(corpus: str | Path, judgments: str | Path, retriever: Any = None, *, params: str | Path | None = None,
             set: Mapping[str, Any] | Iterable[str] = (), out: str | Path | None = None,
             name: str | None = None) -> Results:
    """Evaluate ``judgments`` on ``corpus``, as ``groundkit run`` does, and return the results.

    Args:
        retriever: A ``retrieve.retriever`` name, an object with ``search(query, depth)``, or a factory
            ``(chunks, options)`` returning one; None keeps the params' own.
        params: A params.yaml (the defaults when None).
        set: Overrides, ``{"chunk.size": 400}`` or ``["chunk.size=400"]``, as ``--set`` gives them.
        out: The folder for the artifacts: new, empty, or one groundkit wrote. When None, a temporary folder that
            is removed when the result is released (pass ``out`` to keep the artifacts).
        name: What the results are called in ``compare_runs`` and reports. By default the name of ``out``, or,
            without it, the retriever and the overrides (``"bm25 chunk.size=400"``).
    """
    overrides = _overrides(set)

    def default_name(loaded: Params) -> str:
        return " ".join([loaded.retrieve.retriever, *overrides])

    return _run(corpus, judgments, params, overrides, out, "run", _kind(retriever), name=name,
                default_name=default_name)


def score_file(run_file: str | Path, corpus: str | Path, judgments: str | Path, *, params: str | Path | None = None,
               set: Mapping[str, Any] | Iterable[str] = (), out: str | Path | None = None,
               name: str | None = None) -> Results:
    """Score another system's run file (JSONL, the format of ``groundkit score-run``) and return the results.

    ``name`` is what the results are called (by default the name of ``out``, or without it the run file's name).
    """
    given = _overrides(set)
    overrides = [*given, "retrieve.retriever=external", f"retrieve.run={run_file}"]

    def default_name(loaded: Params) -> str:
        return " ".join([Path(run_file).name, *given])

    return _run(corpus, judgments, params, overrides, out, "score-run", name=name, default_name=default_name)


def load_results(spec: str | Path, *, cwd: str | Path = ".", metrics_dir: str = "metrics",
                 name: str | None = None) -> Results:
    """The results of a run folder, a workspace's metrics/, a git revision or a DVC experiment name.

    ``name`` is what they are called in ``compare_runs`` and reports (by default ``spec`` as given).
    """
    _checked_name(name)
    label = str(spec) if name is None else name
    side = read_side(str(spec), cwd=Path(cwd), metrics_dir=metrics_dir, label=label)
    folder = Path(spec) if Path(spec).is_dir() else None
    return Results(label, side, folder)


def compare_runs(baseline: Results, *candidates: Results, alpha: float = 0.05) -> pd.DataFrame:
    """Each candidate against ``baseline``, query by query, as ``groundkit compare`` does it.

    Returns one row per candidate and metric: the two means, the delta, the interval that decides it
    (``ci_low``/``ci_high`` at ``ci_level``: the paired sign-flip test inverted, each metric one test at
    ``alpha``), the raw 95% percentile-bootstrap interval (``raw_ci95_low``/``raw_ci95_high``, never
    deciding), the p-value (paired randomization test), and ``significant``: exactly when the deciding
    interval excludes 0 (never below 10 paired queries).
    """
    import pandas as pd

    names = [baseline.name, *(candidate.name for candidate in candidates)]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        # Rows are indexed by name: two results of one name would be one row each, and which is which unknowable.
        raise CompareError("compare_runs", f"{len(names)} results, and {names.count(repeated[0])} of them are named "
                           f"{repeated[0]!r}", fix="name each result: evaluate(..., name=...), score_file(..., "
                           "name=...) or load_results(..., name=...)")
    rows = []
    for candidate in candidates:
        (result,) = compare(baseline.side, [candidate.side], gate=[], alpha=alpha).candidates
        for stat in result.overall:
            d = stat.decided
            rows.append({"candidate": candidate.name, "metric": stat.metric, "baseline": stat.baseline,
                         "value": stat.candidate, "delta": stat.delta,
                         "ci_low": None if d is None else d.low, "ci_high": None if d is None else d.high,
                         "ci_level": None if d is None else 1 - d.level,
                         "raw_ci95_low": stat.ci_low, "raw_ci95_high": stat.ci_high, "p_value": stat.p_value,
                         "significant": stat.significant})
    return pd.DataFrame(rows).set_index(["candidate", "metric"])
