"""Comparing two runs query by query: paired confidence intervals, a paired test and a verdict.

``dvc metrics diff`` says that a mean moved; it cannot say whether the move is larger than what
reshuffling the same queries would give. Both runs score the same judgments, so every query yields
one paired difference, and the statistics below are over those differences:

* the 95% confidence interval of the mean difference is a paired percentile bootstrap (queries
  resampled with replacement, ``RESAMPLES`` times, fixed seed);
* the p-value is a paired randomization test (under the null hypothesis each query's two results are
  exchangeable, so the sign of its difference is flipped at random, ``RESAMPLES`` times, fixed seed;
  every sign pattern is enumerated exactly when there are fewer than that).

Both are computed in blocks of resamples, so memory stays bounded however many queries there are,
and draw the same random numbers as ``scipy.stats.bootstrap`` and ``scipy.stats.permutation_test``
with the same seeded generator, giving the same results (tests/reports/test_compare.py checks this). With
fewer than two paired queries there is neither an interval nor a test.

A side is a git revision or DVC experiment (its committed ``metrics/``), or a directory holding
``per_query.csv`` and ``run.json`` (the output of ``groundkit run`` or a workspace's ``metrics/``).
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
from groundkit.scoring.measures import BUDGET_RECALL, MEASURES, NDCG, RECALL
from groundkit.scoring.schema import PER_QUERY_FIELDS

RESAMPLES = 10_000
SEED = 20261202
NO_ANSWER = "no_answer"
# Values drawn per block of resamples (queries x resamples): 4 Mi float64 values are 32 MiB, so a
# block's index array, its gathered values and its signs stay near 100 MiB at any number of queries.
BLOCK_VALUES = 1 << 22
SHORT_HASH = 12
# The per-category table: every hit rate (at k and at a budget), then nDCG at the deepest k.
PER_CATEGORY = (RECALL, BUDGET_RECALL)


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
    """One metric over one set of paired queries; interval and p-value are None below two queries."""

    metric: str
    queries: int
    baseline: float | None
    candidate: float | None
    delta: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None

    def as_dict(self) -> dict[str, Any]:
        ci = None if self.ci_low is None else [self.ci_low, self.ci_high]
        return {"metric": self.metric, "queries": self.queries, "baseline": self.baseline,
                "candidate": self.candidate, "delta": self.delta, "ci95": ci, "p_value": self.p_value}


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


def _resolve_revision(spec: str, cwd: Path) -> str | None:
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


def read_side(spec: str, *, cwd: Path, metrics_dir: str = "metrics") -> Side:
    """Read one side of a comparison: a results directory, a git revision, or a DVC experiment name."""
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
        commit = _resolve_revision(spec, cwd)
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
    return _parse_side(spec, texts["per_query.csv"], texts["run.json"], paths["per_query.csv"], paths["run.json"])


# --- statistics --------------------------------------------------------------------------------


def _block(queries: int, resamples: int, block_values: int) -> int:
    """Resamples per block: at most ``block_values`` values, so memory does not grow with the queries."""
    return max(1, min(resamples, block_values // max(queries, 1)))


def _bootstrap_intervals(differences: np.ndarray, seed: int, resamples: int, block_values: int) -> np.ndarray:
    """Percentile 95% intervals of the mean, one row per metric, as ``scipy.stats.bootstrap`` gives them.

    scipy draws a (resamples, queries) array of indices in one call; drawing it in consecutive blocks
    from the same generator yields the same indices, and each resample's mean is taken over a
    contiguous row as scipy does, so the bootstrap distribution is the same to the last bit. One
    set of indices serves every metric: the resampled queries do not depend on the metric.
    """
    from scipy import stats

    rows, queries = differences.shape
    rng = np.random.default_rng(seed)
    distribution = np.empty((rows, resamples))
    step = _block(queries, resamples, block_values)
    for start in range(0, resamples, step):
        size = min(step, resamples - start)
        picks = rng.integers(0, queries, (size, queries))
        for j in range(rows):
            distribution[j, start:start + size] = np.take(differences[j], picks).mean(axis=-1)
    alpha = np.asarray((1 - 0.95) / 2)
    levels = np.stack((alpha, 1 - alpha), axis=-1)
    return np.array([stats.quantile(distribution[j], levels) for j in range(rows)])


def _sign_flip_null(differences: np.ndarray, seed: int, resamples: int, block_values: int) -> np.ndarray:
    """The mean difference under random sign flips, (metrics, resamples), as scipy's paired test draws it.

    For paired samples ``scipy.stats.permutation_test`` swaps each query's two values at random: one
    32-bit draw per resample and query, swapped when its lowest bit is 0, and a swap flips the sign
    of the difference. Drawing those words block by block gives the same signs. scipy's resample
    mean adds the queries strictly one after another (not pairwise), and so does this, so the null
    distribution is the same to the last bit.
    """
    rows, queries = differences.shape
    rng = np.random.default_rng(seed)
    null = np.empty((rows, resamples))
    step = _block(queries, resamples, block_values)
    for start in range(0, resamples, step):
        size = min(step, resamples - start)
        words = rng.integers(0, 2**32, (size, queries), dtype=np.uint32)
        # Queries x resamples, C-ordered, so that reducing axis 0 adds the queries strictly in order;
        # over a transposed view numpy would add them in another order, different in the last bits.
        signs = (np.ascontiguousarray(words.T) & 1).astype(np.float64)
        signs *= 2
        signs -= 1  # low bit 0 -> -1.0 (swapped), 1 -> +1.0
        for j in range(rows):
            null[j, start:start + size] = np.add.reduce(signs * differences[j][:, None], axis=0) / queries
    return null


def _randomization_p_values(differences: np.ndarray, seed: int, resamples: int, block_values: int) -> np.ndarray:
    """Two-sided sign-flip p-values, one per metric, computed as ``scipy.stats.permutation_test`` does.

    A resample within 100 ulp of the observed mean counts as reaching it, and one is added to the
    count and to the number of resamples (the observed signs are one possible draw).
    """
    null = _sign_flip_null(differences, seed, resamples, block_values)
    observed = differences.mean(axis=-1)
    gamma = np.abs(np.finfo(np.float64).eps * 100 * observed)[:, None]
    less = (np.count_nonzero(null <= observed[:, None] + gamma, axis=-1) + 1) / (resamples + 1)
    greater = (np.count_nonzero(null >= observed[:, None] - gamma, axis=-1) + 1) / (resamples + 1)
    return np.clip(np.minimum(less, greater) * 2, 0.0, 1.0)


def _exact_p_value(baseline: np.ndarray, candidate: np.ndarray, seed: int, resamples: int) -> float:
    """scipy enumerates every sign pattern when there are no more than ``resamples`` (few queries)."""
    from scipy import stats

    return float(stats.permutation_test(
        (candidate, baseline), lambda c, b, axis: np.mean(c - b, axis=axis), permutation_type="samples",
        vectorized=True, n_resamples=resamples, alternative="two-sided", rng=np.random.default_rng(seed),
    ).pvalue)


def paired_stats_many(
    baseline: np.ndarray, candidate: np.ndarray, *, seed: int = SEED, resamples: int = RESAMPLES,
    block_values: int = BLOCK_VALUES,
) -> list[tuple[float | None, float | None, float | None]]:
    """``(ci_low, ci_high, p_value)`` per row of two (metrics, queries) arrays paired column by column.

    Each row gets what :func:`paired_stats` gives it alone; the random draws are shared between rows.
    ``block_values`` bounds the values drawn at once; it changes memory and speed, never the result.
    """
    baseline = np.ascontiguousarray(baseline, dtype=np.float64)
    candidate = np.ascontiguousarray(candidate, dtype=np.float64)
    rows, queries = baseline.shape
    if queries < 2:
        return [(None, None, None)] * rows
    differences = candidate - baseline
    results: list[tuple[float | None, float | None, float | None]] = [(0.0, 0.0, 1.0)] * rows
    moved = [j for j in range(rows) if np.any(differences[j])]
    if not moved:
        return results
    intervals = _bootstrap_intervals(differences[moved], seed, resamples, block_values)
    if 2**queries <= resamples:
        p_values = [_exact_p_value(baseline[j], candidate[j], seed, resamples) for j in moved]
    else:
        p_values = [float(p) for p in _randomization_p_values(differences[moved], seed, resamples, block_values)]
    for k, j in enumerate(moved):
        results[j] = (float(intervals[k, 0]), float(intervals[k, 1]), p_values[k])
    return results


def paired_stats(baseline: np.ndarray, candidate: np.ndarray, *, seed: int = SEED,
                 resamples: int = RESAMPLES) -> tuple[float | None, float | None, float | None]:
    """Return ``(ci_low, ci_high, p_value)`` for the mean of ``candidate - baseline``.

    A percentile bootstrap over queries for the 95% interval, and a two-sided paired randomization
    (sign-flip) test for the p-value; both seeded, so deterministic. All three are None with fewer
    than two queries, where neither is defined.
    """
    pair = np.stack((np.asarray(baseline, dtype=np.float64), np.asarray(candidate, dtype=np.float64)))
    return paired_stats_many(pair[:1], pair[1:], seed=seed, resamples=resamples)[0]


def _stats(metrics: list[str], before: np.ndarray, after: np.ndarray) -> list[Stat]:
    """One Stat per metric; ``before`` and ``after`` are (metrics, queries), paired by column."""
    queries = before.shape[1]
    tests = paired_stats_many(before, after)
    result = []
    for j, metric in enumerate(metrics):
        low, high, p_value = tests[j]
        means = (float(before[j].mean()), float(after[j].mean()), float((after[j] - before[j]).mean())) \
            if queries else (None, None, None)
        result.append(Stat(metric, queries, *means, ci_low=low, ci_high=high, p_value=p_value))
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


def _short(value: str) -> str:
    return value[:SHORT_HASH]


def _check_comparable(baseline: Side, candidate: Side, allow_corpus_change: bool) -> dict[str, str] | None:
    """Refuse runs over other judgments, other queries, or (unless allowed) another corpus."""
    before, after = baseline.metadata, candidate.metadata
    if before["judgments_hash"] != after["judgments_hash"]:
        raise CompareError(
            candidate.json_path,
            "was scored on different judgments than the baseline (judgments_hash "
            f"{_short(before['judgments_hash'])} vs {_short(after['judgments_hash'])}); "
            "a paired test needs the same queries with the same gold",
            fix="re-run both sides on the same judgments file, or compare their metrics.json by eye",
        )
    corpus_change = None
    if before["corpus_hash"] != after["corpus_hash"]:
        corpus_change = {"baseline": _short(before["corpus_hash"]), "candidate": _short(after["corpus_hash"])}
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


def _matrix(side: Side, rows: np.ndarray, metrics: list[str]) -> np.ndarray:
    columns = [side.metric_names.index(m) for m in metrics]
    return np.ascontiguousarray(side.values[np.ix_(rows, columns)].T)


def compare(
    baseline: Side, candidate: Side, *, gate: list[str], alpha: float = 0.05, max_drop: float = 0.0,
    allow_corpus_change: bool = False,
) -> Comparison:
    """Pair the two sides query by query and compute every statistic of the report."""
    check_alpha(alpha)
    check_max_drop(max_drop)
    corpus_change = _check_comparable(baseline, candidate, allow_corpus_change)
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
    ids = sorted(baseline.position)
    answerable = [q for q in ids if baseline.categories[baseline.position[q]] != NO_ANSWER]
    before_rows = np.array([baseline.position[q] for q in answerable], dtype=np.intp)
    after_rows = np.array([candidate.position[q] for q in answerable], dtype=np.intp)
    overall = _stats(metrics, _matrix(baseline, before_rows, metrics), _matrix(candidate, after_rows, metrics))

    answerable_categories = [baseline.categories[i] for i in before_rows]
    categories = sorted(set(answerable_categories))
    measure_of = {m: MEASURES.parse(m)[0] for m in metrics}
    ndcg = [m for m in metrics if measure_of[m] is NDCG]
    per_category_metrics = [m for m in metrics if measure_of[m] in PER_CATEGORY] + ndcg[-1:]
    by_category = {}
    for c in categories:
        mask = np.array([category == c for category in answerable_categories], dtype=bool)
        by_category[c] = _stats(per_category_metrics, _matrix(baseline, before_rows[mask], per_category_metrics),
                                _matrix(candidate, after_rows[mask], per_category_metrics))

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

    unanswerable = [q for q in ids if baseline.categories[baseline.position[q]] == NO_ANSWER]
    no_answer = {
        "queries": len(unanswerable),
        "abstained_baseline": sum(1 for q in unanswerable if baseline.abstained[baseline.position[q]]),
        "abstained_candidate": sum(1 for q in unanswerable if candidate.abstained[candidate.position[q]]),
    }
    before_params = _flatten(baseline.metadata.get("params", {}))
    after_params = _flatten(candidate.metadata.get("params", {}))
    params_changed = {k: [before_params.get(k), after_params.get(k)]
                      for k in sorted(set(before_params) | set(after_params))
                      if before_params.get(k) != after_params.get(k)}

    result = Comparison(baseline=baseline, candidate=candidate, overall=overall, by_category=by_category,
                        worse=worse, better=better, no_answer=no_answer, params_changed=params_changed,
                        gate=gate, alpha=alpha, max_drop=max_drop, corpus_change=corpus_change,
                        one_sided=one_sided)
    gated = [s for s in overall if s.metric in gate]
    result.untested = {s.metric: f"{_count(s.queries)}; a paired test needs at least two"
                       for s in gated if s.p_value is None}
    significant = [s for s in gated if s.p_value is not None and s.p_value < alpha]
    result.regressions = [s.metric for s in significant if s.delta is not None and s.delta < -max_drop]
    if any(s.delta is not None and s.delta < 0 for s in significant):
        result.verdict = "worse"
    elif any(s.delta is not None and s.delta > 0 for s in significant):
        result.verdict = "better"
    elif result.untested and len(result.untested) == len(gated):
        result.verdict = "untested"
    else:
        result.verdict = "no significant change"
    return result


def _count(queries: int) -> str:
    return f"{queries} answerable {'query' if queries == 1 else 'queries'}"


# --- rendering ---------------------------------------------------------------------------------


def _number(value: float | None, metric: str) -> str:
    if value is None:
        return "n/a"
    return f"{value:.{MEASURES.parse(metric)[0].decimals}f}"


def _signed(value: float | None, metric: str) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.{MEASURES.parse(metric)[0].decimals}f}"


def _row(stat: Stat, significant: bool) -> str:
    m = stat.metric
    mark = " *" if significant else ""
    if stat.p_value is None:
        interval, p_value = f"n/a ({stat.queries} {'query' if stat.queries == 1 else 'queries'})", "n/a"
    else:
        interval, p_value = f"[{_signed(stat.ci_low, m)}, {_signed(stat.ci_high, m)}]", f"{stat.p_value:.4f}"
    return (f"| {m} | {_number(stat.baseline, m)} | {_number(stat.candidate, m)} | {_signed(stat.delta, m)}{mark} "
            f"| {interval} | {p_value} |")


def _significant(stat: Stat, alpha: float) -> bool:
    return stat.p_value is not None and stat.p_value < alpha


def _rank_text(rank: int | None) -> str:
    return "not retrieved" if rank is None else str(rank)


def render_markdown(result: Comparison, *, top: int = 15) -> str:
    """The report as Markdown, ready to paste into a pull request comment."""
    b, c = result.baseline, result.candidate
    answerable = result.overall[0].queries if result.overall else 0
    lines = [
        f"## groundkit compare: `{b.label}` → `{c.label}`",
        "",
        f"Paired over {answerable} answerable queries (same judgments, hash "
        f"`{_short(b.metadata['judgments_hash'])}`). 95% CI: paired bootstrap; p: paired randomization "
        f"test; {RESAMPLES:,} resamples each, seed {SEED}. `*` marks p < {result.alpha}.",
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
    header = ["| metric | baseline | candidate | delta | 95% CI | p |", "| --- | ---: | ---: | ---: | --- | ---: |"]
    lines += header + [_row(s, _significant(s, result.alpha)) for s in result.overall]
    lines += ["", "### Per category", "",
              "| category | n | metric | baseline | candidate | delta | 95% CI | p |",
              "| --- | ---: | --- | ---: | ---: | ---: | --- | ---: |"]
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
    gated = {s.metric: s for s in result.overall if s.metric in result.gate}

    def detail(m: str, s: Stat) -> str:
        if s.p_value is None:
            return f"{m} {_signed(s.delta, m)}, no test: {result.untested[m]}"
        return f"{m} {_signed(s.delta, m)}, p = {s.p_value:.4f}"

    details = "; ".join(detail(m, s) for m, s in gated.items())
    lines.append(f"**Verdict: {result.verdict}** at alpha = {result.alpha} on {', '.join(result.gate)} ({details}).")
    if result.regressions:
        lines.append(f"Regression beyond the allowed drop of {result.max_drop}: {', '.join(result.regressions)}.")
    return "\n".join(lines) + "\n"


def to_json(result: Comparison) -> dict[str, Any]:
    """The report as plain data for machines."""
    return {
        "baseline": result.baseline.label,
        "candidate": result.candidate.label,
        "judgments_hash": result.baseline.metadata["judgments_hash"],
        "corpus_change": result.corpus_change,
        "method": {"ci": "paired percentile bootstrap, 95%", "test": "paired randomization (sign flip), two-sided",
                   "resamples": RESAMPLES, "seed": SEED},
        "params_changed": result.params_changed,
        "one_sided_metrics": result.one_sided,
        "overall": [s.as_dict() for s in result.overall],
        "by_category": {c: [s.as_dict() for s in stats] for c, stats in result.by_category.items()},
        "no_answer": result.no_answer,
        "worse": result.worse,
        "better": result.better,
        "gate": {"metrics": result.gate, "alpha": result.alpha, "max_drop": result.max_drop,
                 "untested": result.untested},
        "verdict": result.verdict,
        "regressions": result.regressions,
    }
