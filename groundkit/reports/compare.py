"""Comparing runs query by query: paired confidence intervals, paired tests, effect sizes and a verdict.

``dvc metrics diff`` says that a mean moved; it cannot say whether the move is larger than what
reshuffling the same queries would give. Both runs score the same judgments, so every query yields
one paired difference, and the statistics (groundkit/reports/stats.py) are over those differences:
a 95% paired bootstrap interval, a paired randomization test, Cohen's d_z, and the queries that
went up, stayed and went down. The verdict looks at the gated metrics (``--metric``) only, with
their p-values corrected for testing several at once (Holm by default); the report also says how
large a change in each gated metric these judgments could detect at all. With fewer than two
paired queries there is neither an interval nor a test.

This module reads the sides and compares two runs; groundkit/reports/compare_many.py compares one
baseline with several candidates. A side is a git revision or DVC experiment (its committed
``metrics/``), or a directory holding ``per_query.csv`` and ``run.json`` (the output of
``groundkit run`` or a workspace's ``metrics/``).
"""

from __future__ import annotations

import csv
import io
import json
import math
import subprocess
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from groundkit._json import loads_line
from groundkit.errors import CompareError, JSONLineError, MeasureError
from groundkit.reports.stats import (
    CORRECTIONS,
    POWER,
    RESAMPLES,
    SEED,
    adjust_p_values,
    effect_size,
    minimum_detectable_effect,
    paired_stats_many,
    smallest_p_value,
    wins_ties_losses,
)
from groundkit.scoring.measures import BUDGET_RECALL, MEASURES, NDCG, RECALL
from groundkit.scoring.schema import PER_QUERY_FIELDS

NO_ANSWER = "no_answer"
SHORT_HASH = 12
# The per-category table: every hit rate (at k and at a budget), then nDCG at the deepest k.
PER_CATEGORY = (RECALL, BUDGET_RECALL)
ALL = "all"  # the category name of the overall row in the table of detectable effects


@dataclass(frozen=True)
class Side:
    """One run's per-query results and metadata, as read from disk or git.

    ``values`` holds one row per query (in file order) and one column per metric; rows of no_answer
    queries are NaN, every other cell was checked to be a finite number.
    """

    label: str
    metadata: dict[str, Any]
    metric_names: list[str]
    position: dict[str, int]
    lines: list[int]
    categories: list[str]
    queries: list[str]
    first_gold_rank: list[float]
    abstained: list[bool]
    values: np.ndarray
    csv_path: str
    json_path: str


@dataclass
class Stat:
    """One metric over one set of paired queries; interval, p-value and d_z are None below two queries."""

    metric: str
    queries: int
    baseline: float | None
    candidate: float | None
    delta: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    effect_size: float | None = None
    wins: int = 0
    ties: int = 0
    losses: int = 0

    def as_dict(self) -> dict[str, Any]:
        ci = None if self.ci_low is None else [self.ci_low, self.ci_high]
        return {"metric": self.metric, "queries": self.queries, "baseline": self.baseline,
                "candidate": self.candidate, "delta": self.delta, "ci95": ci, "p_value": self.p_value,
                "effect_size_dz": self.effect_size, "wins": self.wins, "ties": self.ties, "losses": self.losses}


@dataclass
class Detectable:
    """The minimum detectable effect of one gated metric over one category (or all), from the baseline.

    ``sd`` is the baseline's per-query standard deviation; the differences to a candidate are taken
    to have sqrt(2) times it (see :func:`detectable`). ``mde`` is None when nothing is detectable,
    and ``note`` says why.
    """

    metric: str
    category: str
    queries: int
    baseline: float | None
    sd: float | None
    mde: float | None
    note: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "category": self.category, "queries": self.queries,
                "baseline": self.baseline, "sd": self.sd, "mde": self.mde, "note": self.note}


@dataclass
class Comparison:
    baseline: Side
    candidate: Side
    overall: list[Stat]
    by_category: dict[str, list[Stat]]
    worse: list[dict[str, Any]]
    better: list[dict[str, Any]]
    no_answer: dict[str, Any]
    params_changed: dict[str, list[Any]]
    gate: list[str]
    alpha: float
    max_drop: float
    corpus_change: dict[str, str] | None = None
    one_sided: dict[str, list[str]] = field(default_factory=dict)
    verdict: str = ""
    regressions: list[str] = field(default_factory=list)
    untested: dict[str, str] = field(default_factory=dict)
    correction: str = "holm"
    p_adjusted: dict[str, float | None] = field(default_factory=dict)
    detectable: list[Detectable] = field(default_factory=list)


# --- options -----------------------------------------------------------------------------------


def _option(name: str, text: str, kind: type[int] | type[float], expected: str, fix: str) -> float:
    try:
        value = kind(text)
    except (TypeError, ValueError):
        raise CompareError(name, f"{text!r} is not {expected}", fix=fix) from None
    return value


def check_alpha(alpha: float) -> float:
    """The significance level, strictly between 0 and 1."""
    if not (math.isfinite(alpha) and 0 < alpha < 1):
        raise CompareError("--alpha", f"must be strictly between 0 and 1, got {alpha}",
                           fix="give a significance level such as 0.05")
    return alpha


def check_max_drop(max_drop: float) -> float:
    """The tolerated drop: a finite number, zero or more."""
    if not (math.isfinite(max_drop) and max_drop >= 0):
        raise CompareError("--max-drop", f"must be a finite number of at least 0, got {max_drop}",
                           fix="give the largest drop to tolerate, e.g. 0.01, or 0 to tolerate none")
    return max_drop


def check_correction(correction: str) -> str:
    """The correction for multiple comparisons: holm, bh or none."""
    if correction not in CORRECTIONS:
        raise CompareError("--correction", f"{correction!r} is not a correction groundkit knows",
                           fix=f"use one of {', '.join(CORRECTIONS)} (holm, the default, controls the chance of "
                           "any false alarm; bh the expected share of false alarms)")
    return correction


def parse_options(alpha: str, max_drop: str, top: str) -> tuple[float, float, int]:
    """``--alpha``, ``--max-drop`` and ``--top`` from the command line, each checked."""
    number = _option("--alpha", alpha, float, "a number", "give a significance level such as 0.05")
    drop = _option("--max-drop", max_drop, float, "a number", "give the largest drop to tolerate, e.g. 0.01")
    count = int(_option("--top", top, int, "a whole number", "give how many queries to list, e.g. 15"))
    if count < 0:
        raise CompareError("--top", f"must be 0 or more, got {count}", fix="give how many queries to list, e.g. 15")
    return check_alpha(number), check_max_drop(drop), count


# --- reading a side ----------------------------------------------------------------------------


def _git(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)


def resolve_revision(spec: str, cwd: Path) -> str | None:
    """A commit for ``spec``: any git revision, else a DVC experiment name (refs/exps/.../NAME)."""
    found = _git(["rev-parse", "--verify", "--quiet", f"{spec}^{{commit}}"], cwd)
    if found.returncode == 0:
        return found.stdout.strip()
    refs = _git(["for-each-ref", "--format=%(refname) %(objectname)", "refs/exps"], cwd)
    matches = sorted({line.split()[1] for line in refs.stdout.splitlines()
                      if line.split()[0].rsplit("/", 1)[-1] == spec})
    if len(matches) > 1:
        raise CompareError(spec, f"names {len(matches)} DVC experiments",
                           fix="use the experiment's commit from `dvc exp show` instead of its name")
    return matches[0] if matches else None


def _decode(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CompareError(where, f"is not UTF-8 text (byte {exc.start + 1})",
                           fix="point at a per_query.csv and run.json written by groundkit") from None


def _read_metadata(text: str, where: str) -> dict[str, Any]:
    # run.json spans many lines: json.loads reports the line of a syntax error, loads_line does not.
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        raise CompareError(where, f"is not valid JSON: {exc.msg} (column {exc.colno})", line=exc.lineno,
                           fix="re-run the score stage (or `groundkit run`) to write it again") from None
    except (RecursionError, ValueError):
        pass  # loads_line below names these in one sentence
    try:
        metadata = loads_line(text)
    except JSONLineError as exc:
        raise CompareError(where, f"is not valid run metadata: {exc.problem}",
                           fix="re-run the score stage (or `groundkit run`) to write it again") from None
    if not isinstance(metadata, dict):
        raise CompareError(where, "is not a JSON object", fix="re-run the score stage to write it again")
    for key in ("judgments_hash", "corpus_hash"):
        if not isinstance(metadata.get(key), str) or not metadata[key]:
            raise CompareError(where, f"has no {key} (a string): the run cannot be checked as comparable",
                               key=key, fix="re-run the score stage with this version of groundkit")
    if not isinstance(metadata.get("params", {}), dict):
        raise CompareError(where, "has params that are not an object", key="params",
                           fix="re-run the score stage to write it again")
    return metadata


def _read_rows(text: str, where: str) -> tuple[list[str], Iterator[tuple[int, list[str]]]]:
    """The header, then each row with its first line number; every row has as many cells as the header."""
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
    except csv.Error as exc:
        raise CompareError(where, f"is not valid CSV: {exc}", line=1, fix="re-run the score stage") from None
    if header is None:
        raise CompareError(where, "is empty", fix="re-run the score stage to write it again")

    def rows() -> Iterator[tuple[int, list[str]]]:
        previous = reader.line_num
        try:
            for row in reader:
                if len(row) != len(header):
                    raise CompareError(where, f"has {len(row)} cells in this row, the header has {len(header)}",
                                       line=previous + 1, fix="re-run the score stage; do not edit per_query.csv")
                yield previous + 1, row
                previous = reader.line_num
        except csv.Error as exc:
            raise CompareError(where, f"is not valid CSV: {exc}", line=previous + 1,
                               fix="re-run the score stage to write it again") from None

    return header, rows()


def _metric_columns(header: list[str], where: str) -> tuple[dict[str, int], list[str]]:
    required = ["query_id", "category", "first_gold_rank"]
    missing = [name for name in required if name not in header]
    if missing:
        raise CompareError(where, f"lacks the columns {missing}",
                           fix="re-run the score stage with this version of groundkit")
    seen: set[str] = set()
    for name in header:
        if name in seen:
            raise CompareError(where, f"has the column {name!r} twice", line=1,
                               fix="re-run the score stage; do not edit per_query.csv")
        seen.add(name)
    # A column is a per-query field or a metric the registry can name; anything else is refused, not skipped,
    # so a misspelt or renamed metric cannot vanish from the comparison unnoticed.
    metric_names = [name for name in header if name not in PER_QUERY_FIELDS]
    for name in metric_names:
        try:
            MEASURES.parse(name)
        except MeasureError as exc:
            raise CompareError(where, f"has the column {name!r}, neither a per-query field "
                               f"({', '.join(PER_QUERY_FIELDS)}) nor a metric: {exc}", line=1,
                               fix="re-run the score stage with this version of groundkit; do not edit "
                               "per_query.csv") from None
    return {name: i for i, name in enumerate(header)}, metric_names


def _parse_side(label: str, csv_text_: str, json_text: str, csv_path: str, json_path: str) -> Side:
    metadata = _read_metadata(json_text, json_path)
    header, rows = _read_rows(csv_text_, csv_path)
    columns, metric_names = _metric_columns(header, csv_path)
    qid, cat, rank_col = columns["query_id"], columns["category"], columns["first_gold_rank"]
    query_col, abstained_col = columns.get("query"), columns.get("abstained")
    metric_cols = [columns[m] for m in metric_names]
    position: dict[str, int] = {}
    lines: list[int] = []
    categories, queries, ranks, abstained = [], [], [], []
    values = array("d")  # row after row; rows are streamed so a large file is never held as strings twice
    missing = [math.nan] * len(metric_names)
    for i, (line, row) in enumerate(rows):
        query_id = row[qid]
        if not query_id:
            raise CompareError(csv_path, "has an empty query_id", line=line,
                               fix="re-run the score stage; do not edit per_query.csv")
        if query_id in position:
            raise CompareError(csv_path, f"repeats query_id {query_id!r} (first on line {lines[position[query_id]]}); "
                               "which of the two rows counts is unknowable", line=line,
                               fix="re-run the score stage; a per_query.csv holds one row per query")
        position[query_id] = i
        lines.append(line)
        categories.append(row[cat])
        queries.append(row[query_col] if query_col is not None else "")
        abstained.append(abstained_col is not None and row[abstained_col] == "1")
        rank = row[rank_col]
        if rank and not (rank.isascii() and rank.isdigit() and int(rank) > 0):
            raise CompareError(csv_path, f"column 'first_gold_rank' of query {query_id!r} holds {rank!r}, "
                               "not a rank (a whole number from 1) or empty", line=line,
                               fix="re-run the score stage; do not edit per_query.csv")
        ranks.append(float(rank) if rank else math.inf)
        if row[cat] == NO_ANSWER:
            values.extend(missing)
            continue
        for name, col in zip(metric_names, metric_cols, strict=True):
            cell = row[col]
            try:
                value = float(cell)
            except ValueError:
                value = math.nan
            if not math.isfinite(value):
                shown = "an empty cell" if not cell.strip() else repr(cell)
                raise CompareError(csv_path, f"column {name!r} of query {query_id!r} holds {shown}, not a "
                                   "finite number", line=line,
                                   fix="re-run the score stage; every answerable query has a number in "
                                   "every metric column")
            values.append(value)
    matrix = (np.frombuffer(values, dtype=np.float64) if values else np.empty(0)).reshape(len(lines), len(metric_names))
    return Side(label=label, metadata=metadata, metric_names=metric_names, position=position, lines=lines,
                categories=categories, queries=queries, first_gold_rank=ranks, abstained=abstained,
                values=matrix, csv_path=csv_path, json_path=json_path)


def read_side(spec: str, *, cwd: Path, metrics_dir: str = "metrics", label: str | None = None) -> Side:
    """Read one side of a comparison: a results directory, a git revision, or a DVC experiment name.

    ``label`` names the side in the report (default: ``spec``), e.g. an experiment read by its commit.
    """
    directory = Path(spec)
    names = ("per_query.csv", "run.json")
    texts: dict[str, str] = {}
    paths: dict[str, str] = {}
    if directory.is_dir():
        if not (directory / "per_query.csv").is_file() and (directory / metrics_dir / "per_query.csv").is_file():
            directory = directory / metrics_dir
        for name in names:
            if not (directory / name).is_file():
                raise CompareError(directory, f"holds no {name}",
                                   fix="point at the --out folder of `groundkit run` or at a metrics/ folder")
        for name in names:
            paths[name] = str(directory / name)
            texts[name] = _decode((directory / name).read_bytes(), paths[name])
    else:
        commit = resolve_revision(spec, cwd)
        if commit is None:
            raise CompareError(spec, "is neither a directory, a git revision nor a DVC experiment name",
                               fix="give a folder written by `groundkit run`, a branch/tag/commit, or a name "
                               "listed by `dvc exp list`")
        for name in names:
            paths[name] = f"{spec}:{metrics_dir}/{name}"
            shown = subprocess.run(["git", "show", f"{commit}:./{metrics_dir}/{name}"], cwd=cwd,
                                   capture_output=True, check=False)
            if shown.returncode != 0:
                raise CompareError(paths[name], "is not in that revision",
                                   fix="compare revisions whose `dvc repro` results were committed "
                                   "(metrics/ is tracked by git)")
            texts[name] = _decode(shown.stdout, paths[name])
    return _parse_side(label or spec, texts["per_query.csv"], texts["run.json"], paths["per_query.csv"],
                       paths["run.json"])


# --- statistics --------------------------------------------------------------------------------


def paired_rows(metrics: list[str], before: np.ndarray, afters: list[np.ndarray]) -> list[list[Stat]]:
    """One Stat per metric for each candidate; ``before`` and each of ``afters`` are (metrics, queries).

    All candidates go through the resampling together, so they share its random draws: a candidate
    gets the same interval and p-value here as compared alone.
    """
    queries = before.shape[1]
    tests = paired_stats_many(np.tile(before, (len(afters), 1)), np.concatenate(afters)) if afters else []
    result = []
    for c, after in enumerate(afters):
        stats = []
        for j, metric in enumerate(metrics):
            low, high, p_value = tests[c * len(metrics) + j]
            d = after[j] - before[j]
            means = (float(before[j].mean()), float(after[j].mean()), float(d.mean())) if queries else (None,) * 3
            stats.append(Stat(metric, queries, *means, ci_low=low, ci_high=high, p_value=p_value,
                              effect_size=effect_size(d), **dict(zip(("wins", "ties", "losses"),
                                                                     wins_ties_losses(d), strict=True))))
        result.append(stats)
    return result


def _stats(metrics: list[str], before: np.ndarray, after: np.ndarray) -> list[Stat]:
    """One Stat per metric; ``before`` and ``after`` are (metrics, queries), paired by column."""
    return paired_rows(metrics, before, [after])[0]


def detectable(side: Side, rows: np.ndarray, metrics: list[str], alpha: float) -> list[Detectable]:
    """The minimum detectable effect of each metric over all ``rows`` of ``side``, then per category.

    Only the baseline is known here, so the differences to a candidate are taken to have sqrt(2)
    times the baseline's per-query standard deviation: what two runs with the baseline's spread and
    unrelated per-query errors would give. Real candidates share much of the baseline's ranking, so
    their differences usually vary less and smaller effects are found; this is the cautious figure.
    """
    categories = [side.categories[i] for i in rows]
    groups = [(ALL, rows)] + [(c, rows[np.array([x == c for x in categories], dtype=bool)])
                              for c in sorted(set(categories))]
    result = []
    for metric in metrics:
        column = side.metric_names.index(metric)
        for category, subset in groups:
            values = side.values[subset, column]
            n = len(values)
            mean = float(values.mean()) if n else None
            if n < 2:
                result.append(Detectable(metric, category, n, mean, None, None,
                                         f"{count_text(n)}; a paired test needs at least two"))
                continue
            sd = float(values.std(ddof=1))
            mde = minimum_detectable_effect(math.sqrt(2) * sd, n, alpha)
            note = None
            if sd == 0:
                mde, note = None, "every query scores the same in the baseline, so its spread says nothing"
            elif mde is None:
                note = (f"with {n} queries the smallest p-value the test can give is "
                        f"{smallest_p_value(n):.4g}, not below alpha")
            result.append(Detectable(metric, category, n, mean, sd, mde, note))
    return result


def _flatten(params: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in params.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def short_hash(value: str) -> str:
    return value[:SHORT_HASH]


def check_comparable(baseline: Side, candidate: Side, allow_corpus_change: bool) -> dict[str, str] | None:
    """Refuse runs over other judgments, other queries, or (unless allowed) another corpus."""
    before, after = baseline.metadata, candidate.metadata
    if before["judgments_hash"] != after["judgments_hash"]:
        raise CompareError(
            candidate.json_path,
            "was scored on different judgments than the baseline (judgments_hash "
            f"{short_hash(before['judgments_hash'])} vs {short_hash(after['judgments_hash'])}); "
            "a paired test needs the same queries with the same gold",
            fix="re-run both sides on the same judgments file, or compare their metrics.json by eye",
        )
    corpus_change = None
    if before["corpus_hash"] != after["corpus_hash"]:
        corpus_change = {"baseline": short_hash(before["corpus_hash"]), "candidate": short_hash(after["corpus_hash"])}
        if not allow_corpus_change:
            raise CompareError(
                candidate.json_path,
                "was scored on a different corpus than the baseline (corpus_hash "
                f"{corpus_change['baseline']} vs {corpus_change['candidate']}); the same judgments over other "
                "documents measure a different task",
                fix="re-run both sides on the same corpus, or pass --allow-corpus-change to compare anyway "
                "(the report then states the change)",
            )
    only_before = sorted(set(baseline.position) - set(candidate.position))
    only_after = sorted(set(candidate.position) - set(baseline.position))
    if only_before or only_after:
        example = (f"{only_before[0]!r} is only in the baseline" if only_before
                   else f"{only_after[0]!r} is only in the candidate")
        raise CompareError(candidate.csv_path, f"does not score the same query ids as the baseline ({example}; "
                           f"{len(only_before)} missing, {len(only_after)} extra)",
                           fix="re-run the score stage on both sides")
    for query_id, i in candidate.position.items():
        category = baseline.categories[baseline.position[query_id]]
        if candidate.categories[i] != category:
            raise CompareError(candidate.csv_path, f"gives query {query_id!r} the category "
                               f"{candidate.categories[i]!r}, the baseline {category!r}", line=candidate.lines[i],
                               fix="re-run the score stage on both sides from the same judgments")
    return corpus_change


def metric_matrix(side: Side, rows: np.ndarray, metrics: list[str]) -> np.ndarray:
    columns = [side.metric_names.index(m) for m in metrics]
    return np.ascontiguousarray(side.values[np.ix_(rows, columns)].T)


def check_gate(gate: list[str]) -> list[str]:
    """The gated metrics, each once, in the order given (none: a comparison without a verdict); a metric that has
    no better direction is refused.

    A metric named twice would be two tests in the correction for multiple tests, and so shift every
    corrected p-value: it is counted once. The context a ranking costs (chars@k) is neither better nor
    worse by itself, so a change in it can decide no verdict (halving it is no regression).
    """
    gate = list(dict.fromkeys(gate))
    for name in gate:
        try:
            measure, _ = MEASURES.parse(name)
        except MeasureError as exc:
            raise CompareError("--metric", str(exc), fix="name a metric both runs report, e.g. ndcg@10") from None
        if not measure.directed:
            raise CompareError("--metric", f"{name} ({measure.description}) is neither better nor worse by itself, "
                               "so no verdict can be gated on it",
                               fix="gate on what retrieval achieves, e.g. ndcg@10, or on hit rate within a context "
                                   "budget (recall@1000chars); the report shows every chars@k delta either way")
    return gate


def paired_metrics(baseline: Side, candidate: Side, gate: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    """The metrics both sides report, and those only one does; every gated metric must be paired."""
    metrics = [m for m in baseline.metric_names if m in candidate.metric_names]
    one_sided = {"baseline": [m for m in baseline.metric_names if m not in candidate.metric_names],
                 "candidate": [m for m in candidate.metric_names if m not in baseline.metric_names]}
    for name in gate:
        if name in metrics:
            continue
        if name in one_sided["baseline"] or name in one_sided["candidate"]:
            which = "baseline" if name in one_sided["baseline"] else "candidate"
            raise CompareError("--metric", f"{name!r} is reported by the {which} only, so it cannot be paired",
                               fix=f"use one of {metrics}, or re-run both sides with the same score.ks and "
                               "score.budgets")
        raise CompareError("--metric", f"{[name]} is not reported by both runs", fix=f"use one of {metrics}")
    return metrics, one_sided


def answerable_ids(baseline: Side) -> list[str]:
    """The answerable query ids, sorted: the order every paired array follows."""
    return [q for q in sorted(baseline.position) if baseline.categories[baseline.position[q]] != NO_ANSWER]


def rows_of(side: Side, ids: list[str]) -> np.ndarray:
    return np.array([side.position[q] for q in ids], dtype=np.intp)


def params_changed(baseline: Side, candidate: Side) -> dict[str, list[Any]]:
    """Each flattened parameter whose value differs: ``{key: [baseline's, candidate's]}`` (None: not set)."""
    before = _flatten(baseline.metadata.get("params", {}))
    after = _flatten(candidate.metadata.get("params", {}))
    return {k: [before.get(k), after.get(k)] for k in sorted(set(before) | set(after)) if before.get(k) != after.get(k)}


def decide(gated: list[Stat], p_adjusted: list[float | None], alpha: float,
           max_drop: float) -> tuple[str, list[str], dict[str, str]]:
    """``(verdict, regressions, untested)`` of one candidate from its gated stats and corrected p-values."""
    untested = {s.metric: f"{count_text(s.queries)}; a paired test needs at least two"
                for s in gated if s.p_value is None}
    significant = [s for s, p in zip(gated, p_adjusted, strict=True) if p is not None and p < alpha]
    regressions = [s.metric for s in significant if s.delta is not None and s.delta < -max_drop]
    if any(s.delta is not None and s.delta < 0 for s in significant):
        verdict = "worse"
    elif any(s.delta is not None and s.delta > 0 for s in significant):
        verdict = "better"
    elif untested and len(untested) == len(gated):
        verdict = "untested"
    else:
        verdict = "no significant change"
    return verdict, regressions, untested


def compare(
    baseline: Side, candidate: Side, *, gate: list[str], alpha: float = 0.05, max_drop: float = 0.0,
    allow_corpus_change: bool = False, correction: str = "holm",
) -> Comparison:
    """Pair the two sides query by query and compute every statistic of the report."""
    check_alpha(alpha)
    check_max_drop(max_drop)
    check_correction(correction)
    gate = check_gate(gate)
    corpus_change = check_comparable(baseline, candidate, allow_corpus_change)
    metrics, one_sided = paired_metrics(baseline, candidate, gate)
    answerable = answerable_ids(baseline)
    before_rows, after_rows = rows_of(baseline, answerable), rows_of(candidate, answerable)
    overall = _stats(metrics, metric_matrix(baseline, before_rows, metrics),
                     metric_matrix(candidate, after_rows, metrics))

    answerable_categories = [baseline.categories[i] for i in before_rows]
    categories = sorted(set(answerable_categories))
    measure_of = {m: MEASURES.parse(m)[0] for m in metrics}
    ndcg = [m for m in metrics if measure_of[m] is NDCG]
    per_category_metrics = [m for m in metrics if measure_of[m] in PER_CATEGORY] + ndcg[-1:]
    by_category = {}
    for c in categories:
        mask = np.array([category == c for category in answerable_categories], dtype=bool)
        by_category[c] = _stats(per_category_metrics, metric_matrix(baseline, before_rows[mask], per_category_metrics),
                                metric_matrix(candidate, after_rows[mask], per_category_metrics))

    moved = []
    for q, i, k in zip(answerable, before_rows, after_rows, strict=True):
        before, after = baseline.first_gold_rank[i], candidate.first_gold_rank[k]
        if before != after:
            moved.append({"query_id": q, "category": baseline.categories[i], "query": baseline.queries[i],
                          "rank_before": None if math.isinf(before) else int(before),
                          "rank_after": None if math.isinf(after) else int(after), "_key": (before, after)})

    def change(row: dict[str, Any]) -> float:
        before, after = row.pop("_key")
        return (1 / before if before else 0) - (1 / after if after else 0)  # drop in reciprocal rank

    for row in moved:
        row["rr_drop"] = change(row)
    worse = sorted((r for r in moved if r["rr_drop"] > 0), key=lambda r: (-r["rr_drop"], r["query_id"]))
    better = sorted((r for r in moved if r["rr_drop"] < 0), key=lambda r: (r["rr_drop"], r["query_id"]))
    for row in moved:
        del row["rr_drop"]

    unanswerable = [q for q in sorted(baseline.position) if baseline.categories[baseline.position[q]] == NO_ANSWER]
    no_answer = {
        "queries": len(unanswerable),
        "abstained_baseline": sum(1 for q in unanswerable if baseline.abstained[baseline.position[q]]),
        "abstained_candidate": sum(1 for q in unanswerable if candidate.abstained[candidate.position[q]]),
    }
    result = Comparison(baseline=baseline, candidate=candidate, overall=overall, by_category=by_category,
                        worse=worse, better=better, no_answer=no_answer,
                        params_changed=params_changed(baseline, candidate), gate=gate, alpha=alpha,
                        max_drop=max_drop, corpus_change=corpus_change, one_sided=one_sided, correction=correction)
    gated = [s for s in overall if s.metric in gate]
    adjusted = adjust_p_values([s.p_value for s in gated], correction)
    result.p_adjusted = {s.metric: p for s, p in zip(gated, adjusted, strict=True)}
    result.verdict, result.regressions, result.untested = decide(gated, adjusted, alpha, max_drop)
    result.detectable = detectable(baseline, before_rows, [s.metric for s in gated], alpha)
    return result


def count_text(queries: int) -> str:
    return f"{queries} answerable {'query' if queries == 1 else 'queries'}"


# --- rendering ---------------------------------------------------------------------------------


def number_text(value: float | None, metric: str) -> str:
    if value is None:
        return "n/a"
    return f"{value:.{MEASURES.parse(metric)[0].decimals}f}"


def signed_text(value: float | None, metric: str) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.{MEASURES.parse(metric)[0].decimals}f}"


def effect_text(stat: Stat) -> str:
    return "n/a" if stat.effect_size is None else f"{stat.effect_size:+.2f}"


def counts_text(stat: Stat) -> str:
    return f"{stat.wins}/{stat.ties}/{stat.losses}"


def interval_cells(stat: Stat) -> tuple[str, str]:
    """The interval and p-value cells; without a test they say why."""
    m = stat.metric
    if stat.p_value is None:
        return f"n/a ({stat.queries} {'query' if stat.queries == 1 else 'queries'})", "n/a"
    return f"[{signed_text(stat.ci_low, m)}, {signed_text(stat.ci_high, m)}]", f"{stat.p_value:.4f}"


def _row(stat: Stat, significant: bool) -> str:
    m = stat.metric
    mark = " *" if significant else ""
    interval, p_value = interval_cells(stat)
    return (f"| {m} | {number_text(stat.baseline, m)} | {number_text(stat.candidate, m)} | "
            f"{signed_text(stat.delta, m)}{mark} | {interval} | {p_value} | {effect_text(stat)} "
            f"| {counts_text(stat)} |")


def _significant(stat: Stat, alpha: float) -> bool:
    return stat.p_value is not None and stat.p_value < alpha


def _rank_text(rank: int | None) -> str:
    return "not retrieved" if rank is None else str(rank)


def correction_text(correction: str, tests: int) -> str:
    """How the gated p-values were corrected, for a sentence: "Holm-corrected over 3 tests"."""
    if correction == "none":
        return "not corrected for multiple tests (`--correction none`)"
    name = {"holm": "Holm", "bh": "Benjamini-Hochberg"}[correction]
    return f"{name}-corrected over {tests} {'test' if tests == 1 else 'tests'}"


EFFECT_LEGEND = ("d_z: mean delta / SD of the per-query deltas (Cohen's d_z); W/T/L: queries where the "
                 "candidate scores higher / the same / lower (wins, ties, losses; for chars@k higher is more to read).")


def detectable_lines(rows: list[Detectable], alpha: float) -> list[str]:
    """The section on minimum detectable effects, ending with one sentence per gated metric."""
    lines = ["### What these judgments can detect", "",
             f"Minimum detectable effect (MDE): the true change the randomization test finds with {POWER:.0%} power "
             f"at alpha = {alpha} (two-sided), from the baseline's per-query SD, taking a candidate's per-query "
             "deltas to vary sqrt(2) times as much (cautious: runs that share most of their ranking vary less). "
             "The correction for several tests lowers the first threshold and raises these figures.", "",
             "| metric | category | n | baseline | SD | MDE |", "| --- | --- | ---: | ---: | ---: | ---: |"]
    for d in rows:
        mde = number_text(d.mde, d.metric) if d.mde is not None else f"n/a ({d.note})"
        lines.append(f"| {d.metric} | {d.category} | {d.queries} | {number_text(d.baseline, d.metric)} | "
                     f"{number_text(d.sd, d.metric)} | {mde} |")
    summary = [f"about {number_text(d.mde, d.metric)} in {d.metric}" for d in rows
               if d.category == ALL and d.mde is not None]
    if summary:
        n = next(d.queries for d in rows if d.category == ALL)
        lines += ["", f"With {n} answerable queries these judgments can detect a change of {', '.join(summary)}; "
                  "a smaller true change is likely to be missed, and writing more judgments is how to see it."]
    return [*lines, ""]


def render_markdown(result: Comparison, *, top: int = 15) -> str:
    """The report as Markdown, ready to paste into a pull request comment."""
    b, c = result.baseline, result.candidate
    answerable = result.overall[0].queries if result.overall else 0
    tests = sum(1 for p in result.p_adjusted.values() if p is not None)
    lines = [
        f"## groundkit compare: `{b.label}` → `{c.label}`",
        "",
        f"Paired over {answerable} answerable queries (same judgments, hash "
        f"`{short_hash(b.metadata['judgments_hash'])}`). 95% CI: paired bootstrap; p: paired randomization "
        f"test; {RESAMPLES:,} resamples each, seed {SEED}. `*` marks p < {result.alpha}.",
        f"{EFFECT_LEGEND} The p-values in the tables are each for one test, uncorrected; the verdict uses "
        f"those of {', '.join(result.gate)}, {correction_text(result.correction, tests)}.",
        "",
    ]
    if result.corpus_change:
        lines += [f"**Corpus changed** (`--allow-corpus-change`): corpus_hash `{result.corpus_change['baseline']}` "
                  f"→ `{result.corpus_change['candidate']}`; the same judgments were scored over other documents.",
                  ""]
    if result.params_changed:
        def shown(value: Any) -> str:
            return "(not used)" if value is None else str(value)

        changed = ", ".join(f"`{k}` {shown(v[0])} → {shown(v[1])}" for k, v in result.params_changed.items())
        lines += [f"Parameters changed: {changed}.", ""]
    sides = [f"`{m}` ({side} only)" for side in ("baseline", "candidate") for m in result.one_sided.get(side, [])]
    if sides:
        lines += [f"Not compared, reported by one run only: {', '.join(sides)}.", ""]
    header = ["| metric | baseline | candidate | delta | 95% CI | p | d_z | W/T/L |",
              "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: |"]
    lines += header + [_row(s, _significant(s, result.alpha)) for s in result.overall]
    lines += ["", "### Per category", "",
              "| category | n | metric | baseline | candidate | delta | 95% CI | p | d_z | W/T/L |",
              "| --- | ---: | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: |"]
    for category, stats in result.by_category.items():
        for s in stats:
            lines.append(f"| {category} | {s.queries} " + _row(s, _significant(s, result.alpha)))
    na = result.no_answer
    lines += ["", f"No-answer queries abstained (returned nothing): {na['abstained_baseline']}/{na['queries']} → "
              f"{na['abstained_candidate']}/{na['queries']}.", ""]
    for title, rows in (("got worse", result.worse), ("got better", result.better)):
        lines.append(f"### Queries that {title}: {len(rows)}")
        if rows:
            lines += ["", "| query_id | category | query | first gold rank |", "| --- | --- | --- | --- |"]
            for row in rows[:top]:
                query = row["query"].replace("|", "\\|")
                lines.append(f"| {row['query_id']} | {row['category']} | {query} | "
                             f"{_rank_text(row['rank_before'])} → {_rank_text(row['rank_after'])} |")
            if len(rows) > top:
                lines.append(f"| … | | {len(rows) - top} more (`--top N` or `--json` lists them) | |")
        lines.append("")
    lines += detectable_lines(result.detectable, result.alpha)
    gated = {s.metric: s for s in result.overall if s.metric in result.gate}

    def detail(m: str, s: Stat) -> str:
        if s.p_value is None:
            return f"{m} {signed_text(s.delta, m)}, no test: {result.untested[m]}"
        corrected = "" if result.correction == "none" else f", corrected p = {result.p_adjusted[m]:.4f}"
        return f"{m} {signed_text(s.delta, m)}, p = {s.p_value:.4f}{corrected}"

    details = "; ".join(detail(m, s) for m, s in gated.items())
    lines.append(f"**Verdict: {result.verdict}** at alpha = {result.alpha} on {', '.join(result.gate)}, "
                 f"{correction_text(result.correction, tests)} ({details}).")
    if result.regressions:
        lines.append(f"Regression beyond the allowed drop of {result.max_drop}: {', '.join(result.regressions)}.")
    return "\n".join(lines) + "\n"


METHOD = {"ci": "paired percentile bootstrap, 95%", "test": "paired randomization (sign flip), two-sided",
          "effect_size": "Cohen's d_z: mean difference / standard deviation of the differences (ddof 1)",
          "mde": f"two-sided randomization test, {POWER:.0%} power, differences' SD taken as sqrt(2) x the "
          "baseline's per-query SD", "resamples": RESAMPLES, "seed": SEED}


def to_json(result: Comparison) -> dict[str, Any]:
    """The report as plain data for machines."""
    tests = sum(1 for p in result.p_adjusted.values() if p is not None)
    return {
        "baseline": result.baseline.label,
        "candidate": result.candidate.label,
        "judgments_hash": result.baseline.metadata["judgments_hash"],
        "corpus_change": result.corpus_change,
        "method": METHOD,
        "params_changed": result.params_changed,
        "one_sided_metrics": result.one_sided,
        "overall": [s.as_dict() for s in result.overall],
        "by_category": {c: [s.as_dict() for s in stats] for c, stats in result.by_category.items()},
        "no_answer": result.no_answer,
        "worse": result.worse,
        "better": result.better,
        "gate": {"metrics": result.gate, "alpha": result.alpha, "max_drop": result.max_drop,
                 "untested": result.untested, "correction": result.correction, "tests": tests,
                 "p_adjusted": result.p_adjusted},
        "detectable": [d.as_dict() for d in result.detectable],
        "verdict": result.verdict,
        "regressions": result.regressions,
    }
