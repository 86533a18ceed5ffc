"""Comparing runs query by query: paired confidence intervals, paired tests, effect sizes and a verdict.

``dvc metrics diff`` says that a mean moved; it cannot say whether the move is larger than what
reshuffling the same queries would give. Both runs score the same judgments, so every query yields
one paired difference, and the statistics (groundkit/reports/stats.py) are over those differences:
a 95% paired bootstrap interval, a paired randomization test, Cohen's d_z, and the queries that
went up, stayed and went down. The verdict looks at the gated metrics (``--metric``) only, with
their p-values corrected for testing several at once (Holm by default); the report also says how
large a change in each gated metric these judgments could detect at all. With fewer than two
paired queries there is neither an interval nor a test.

This module compares two runs read as sides (groundkit/reports/sides.py); compare_many.py compares
one baseline with several candidates, and compare_text.py writes a comparison as Markdown and JSON.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from groundkit.errors import CompareError, MeasureError
from groundkit.reports import verdicts
from groundkit.reports.inference import MIN_QUERIES, TOO_FEW, Decided, FlipNull, decide_family, paired_tests
from groundkit.reports.sides import NO_ANSWER, Side
from groundkit.reports.stats import (
    CORRECTIONS,
    adjust_p_values,
    effect_size,
    minimum_detectable_effect,
    smallest_p_value,
    wins_ties_losses,
)
from groundkit.reports.verdicts import VERDICTS, Decision  # noqa: F401  (compare's public names)
from groundkit.scoring.measures import MEASURES, Cut, Cutoff
from groundkit.scoring.schema import document_level
from groundkit.scoring.separability import NAME as SEPARABILITY
from groundkit.scoring.separability import paired_bootstrap

SHORT_HASH = 12

CHARS = "chars"
"""The measure of the context a ranking costs: a gain read with more of it is bought, not won."""


# The per-category table: every hit rate (at k and at a budget), then nDCG at the deepest k.
DEFAULT_GATE = ("ndcg@10", "coverage@1000chars")
"""What the verdict judges by unless told otherwise: ranking quality, and how much of the gold a context window of
1,000 characters holds (size-fair), so that a larger chunk cannot win by reading more."""


ALL = "all"  # the category name of the overall row in the table of detectable effects


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
    null: FlipNull | None = field(default=None, repr=False, compare=False)
    decided: Decided | None = None
    sd: float | None = None

    @property
    def significant(self) -> bool:
        """The deciding interval (groundkit/reports/inference.py) excludes 0; never below MIN_QUERIES queries."""
        return self.decided is not None and self.decided.significant

    def as_dict(self) -> dict[str, Any]:
        raw = None if self.ci_low is None else [self.ci_low, self.ci_high]
        d = self.decided
        ci = None if d is None else [None if math.isinf(d.low) else d.low, None if math.isinf(d.high) else d.high]
        return {"metric": self.metric, "queries": self.queries, "baseline": self.baseline,
                "candidate": self.candidate, "delta": self.delta, "ci95": raw, "p_value": self.p_value,
                "ci": ci, "ci_level": None if d is None else 1 - d.level, "ci_bounds": None if d is None else d.bounds,
                "significant": self.significant,
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
    costs: dict[str, Stat] = field(default_factory=dict)
    traded: dict[str, str] = field(default_factory=dict)
    gate_notes: list[str] = field(default_factory=list)
    decision: Decision | None = None
    gate_lines: list[verdicts.GateLine] = field(default_factory=list)
    non_inferiority: dict[str, float] = field(default_factory=dict)


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


def paired_rows(metrics: list[str], before: np.ndarray, afters: list[np.ndarray]) -> list[list[Stat]]:
    """One Stat per metric for each candidate; ``before`` and each of ``afters`` are (metrics, queries).

    All candidates go through the resampling together, so they share its random draws: a candidate
    gets the same interval and p-value here as compared alone.
    """
    queries = before.shape[1]
    tests = paired_tests(np.tile(before, (len(afters), 1)), np.concatenate(afters)) if afters else []
    result = []
    for c, after in enumerate(afters):
        stats = []
        for j, metric in enumerate(metrics):
            low, high, p_value, null = tests[c * len(metrics) + j]
            d = after[j] - before[j]
            means = (float(before[j].mean()), float(after[j].mean()), float(d.mean())) if queries else (None,) * 3
            stats.append(Stat(metric, queries, *means, ci_low=low, ci_high=high, p_value=p_value,
                              effect_size=effect_size(d), null=null,
                              sd=float(d.std(ddof=1)) if queries > 1 else None, **dict(zip(("wins", "ties", "losses"),
                                                                                wins_ties_losses(d), strict=True))))
        result.append(stats)
    return result


def decide_rows(stats: Sequence[Stat], alpha: float, correction: str = "none") -> list[float | None]:
    """Give each of ``stats``, tested together under ``correction``, its deciding interval; return their p-values
    adjusted the same way (None: no test). The rows of one family share their queries, so either every row or none
    is below MIN_QUERIES: then the p-values are adjusted and shown, but no row gets an interval or a mark."""
    for s, d in zip(stats, decide_family([s.null for s in stats], [s.delta for s in stats], alpha, correction),
                    strict=True):
        s.decided = d
    return adjust_p_values([s.p_value for s in stats], correction)


def untested_reason(stat: Stat) -> str:
    """Why a row has no deciding interval."""
    if stat.p_value is None:
        return f"{count_text(stat.queries)}; a paired test needs at least two"
    return f"{count_text(stat.queries)}; {TOO_FEW}"


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
    if document_level(before) != document_level(after):
        levels = ("a document-level result of `groundkit score-trec`", "a run over a corpus, scored by passage")
        raise CompareError(
            candidate.json_path,
            f"is {levels[not document_level(after)]}, the baseline {levels[not document_level(before)]}: their "
            "measures count different things (relevant documents against passages overlapping gold quotes) over "
            "different judgments, so no paired test can compare them",
            fix="compare score-trec results scored on the same qrels with each other; to set a groundkit run beside "
                "a TREC run, export it with `groundkit export-beir` and score both with `groundkit score-trec`",
        )
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
    gate = list(dict.fromkeys(gate))  # empty: no verdict asked for (the Python API's comparisons)
    for name in gate:
        try:
            measure = MEASURES.parse(name).measure
        except MeasureError as exc:
            raise CompareError("--metric", str(exc), fix="name a metric both runs report, e.g. ndcg@10") from None
        if not measure.directed:
            raise CompareError("--metric", f"{name} ({measure.description}) is neither better nor worse by itself, "
                               "so no verdict can be gated on it",
                               fix="gate on what retrieval achieves, e.g. ndcg@10, or on hit rate within a context "
                                   "budget (recall@1000chars); the report shows every chars@k delta either way")
    return gate


def check_margins(margins: Mapping[str, float]) -> dict[str, float]:
    """The non-inferiority margins: each metric has a better direction (as a gated one must)."""
    try:
        check_gate(list(margins))
    except CompareError as exc:
        raise CompareError("--non-inferiority", exc.problem, fix=exc.fix) from None
    return dict(margins)


def default_gate(sides: Sequence[Side]) -> tuple[list[str], list[str]]:
    """:data:`DEFAULT_GATE`'s metrics that every side reports, and a note for each left out.

    A baseline scored by an earlier groundkit may not report a metric the default gate has since gained
    (``coverage@1000chars``): the comparison gates on the rest and says so, rather than refusing every pull
    request until the base branch is scored again. A metric named with ``--metric`` is never left out.
    """
    gate, notes = [], []
    for name in DEFAULT_GATE:
        lacking = [side.label for side in sides if name not in side.metric_names]
        if lacking:
            notes.append(f"{name} is left out of the default gate: {', '.join(lacking)} "
                         f"{'does' if len(lacking) == 1 else 'do'} not report it (scored with other score.measures, "
                         "or by an earlier groundkit); run the pipeline there again to gate on it")
        else:
            gate.append(name)
    if not gate:
        notes = [f"no verdict: none of the default gate ({', '.join(DEFAULT_GATE)}) is reported by every run; name "
                 "the metrics to judge by with --metric"]
    return gate, notes


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
                               fix=f"use one of {metrics}, or re-run both sides with the same "
                                   "score.measures")
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


def cost_metric(metric: str, reported: Sequence[str]) -> str | None:
    """The context a change in ``metric`` is read with: ``chars@k`` at its k (the deepest k for a metric without a
    cut-off, which reads the whole ranking); None for a size-fair metric, a cost itself, or when chars@k is not
    among the ``reported`` metrics."""
    parsed = MEASURES.parse(metric)
    if parsed.size_fair or not parsed.measure.directed:
        return None
    chars = MEASURES[CHARS]
    if parsed.cut is not None:
        name = chars.label(Cut(Cutoff.RANK, parsed.cut.value))
        return name if name in reported else None
    deepest = max((m.cut.value for m in map(MEASURES.parse, reported)
                   if m.measure is chars and m.cut is not None), default=None)
    return None if deepest is None else chars.label(Cut(Cutoff.RANK, deepest))


def cost_metrics(gate: Sequence[str], reported: Sequence[str]) -> dict[str, str]:
    """Each gated metric's :func:`cost_metric`, where there is one."""
    return {m: cost for m in gate if (cost := cost_metric(m, reported)) is not None}


def decide(gated: list[Stat], p_adjusted: list[float | None], alpha: float, max_drop: float,
           costs: Mapping[str, Stat] | None = None) -> Decision:
    """One candidate's :class:`Decision` (groundkit/reports/verdicts.py) from its gated stats, already decided
    (:func:`decide_rows`), and the stats of the context each gated metric is read with (``costs``, each decided
    alone at alpha: a doubt about what a change cost counts against calling it a gain)."""
    untested = {s.metric: untested_reason(s) for s in gated if s.decided is None}
    return verdicts.decide(gated, untested, max_drop, costs)


def compare(
    baseline: Side, candidate: Side, *, gate: list[str] | None = None, alpha: float = 0.05, max_drop: float = 0.0,
    allow_corpus_change: bool = False, correction: str = "holm", non_inferiority: Mapping[str, float] | None = None,
) -> Comparison:
    """Pair the two sides query by query and compute every statistic of the report (``gate`` None: the default
    gate, :func:`default_gate`; empty: no verdict, the table alone)."""
    check_alpha(alpha)
    check_max_drop(max_drop)
    check_correction(correction)
    gate_notes: list[str] = []
    if gate is None:
        gate, gate_notes = default_gate([baseline, candidate])
    gate = check_gate(gate)
    corpus_change = check_comparable(baseline, candidate, allow_corpus_change)
    margins = check_margins(non_inferiority or {})
    metrics, one_sided = paired_metrics(baseline, candidate, [*gate, *(m for m in margins if m not in gate)])
    answerable = answerable_ids(baseline)
    before_rows, after_rows = rows_of(baseline, answerable), rows_of(candidate, answerable)
    if 2 <= len(answerable) < MIN_QUERIES:
        gate_notes.append(f"only {len(answerable)} paired queries, {TOO_FEW}")
    overall = _stats(metrics, metric_matrix(baseline, before_rows, metrics),
                     metric_matrix(candidate, after_rows, metrics))

    answerable_categories = [baseline.categories[i] for i in before_rows]
    categories = sorted(set(answerable_categories))
    per_category_metrics = per_category(metrics)
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
        SEPARABILITY: paired_separability(baseline, candidate, answerable, unanswerable),
    }
    result = Comparison(baseline=baseline, candidate=candidate, overall=overall, by_category=by_category,
                        worse=worse, better=better, no_answer=no_answer,
                        params_changed=params_changed(baseline, candidate), gate=gate, alpha=alpha,
                        max_drop=max_drop, corpus_change=corpus_change, one_sided=one_sided, correction=correction,
                        gate_notes=gate_notes)
    gated = [s for s in overall if s.metric in gate]
    decide_rows([s for s in overall if s.metric not in gate], alpha)
    for stats in by_category.values():
        decide_rows(stats, alpha)
    adjusted = decide_rows(gated, alpha, correction)
    result.p_adjusted = {s.metric: p for s, p in zip(gated, adjusted, strict=True)}
    by_metric = {s.metric: s for s in overall}
    result.costs = {m: by_metric[cost] for m, cost in cost_metrics(gate, metrics).items()}
    decision = decide(gated, adjusted, alpha, max_drop, result.costs)
    result.decision = decision
    result.gate_lines = verdicts.regression_lines(decision, {s.metric: s.delta for s in gated}, max_drop, alpha)
    result.gate_lines += verdicts.non_inferiority_lines(by_metric, margins, alpha)
    result.non_inferiority = dict(margins)
    result.verdict, result.regressions, result.untested, result.traded = (
        decision.verdict, decision.regressions, decision.untested, decision.traded)
    result.detectable = detectable(baseline, before_rows, [s.metric for s in gated], alpha)
    return result

def paired_separability(baseline: Side, candidate: Side, answerable: Sequence[str],
                        unanswerable: Sequence[str]) -> dict[str, Any]:
    """no_answer.separability of both sides over the same queries, with the paired bootstrap's interval and p-value
    (groundkit/scoring/separability.py); ``{"note": why}`` where it is not available."""
    if not unanswerable or not answerable:
        return {"note": "not available: it needs both answerable and no_answer queries"}
    sides = []
    for side in (baseline, candidate):
        scores = [[side.top_score[side.position[q]] for q in ids] for ids in (answerable, unanswerable)]
        if any(math.isnan(v) for ids in scores for v in ids):
            return {"note": f"not available: {side.label}'s per_query.csv holds no top-1 scores (written before "
                            "groundkit recorded them, or by score-trec); re-run its score stage"}
        sides.append((scores[0], scores[1]))
    paired = paired_bootstrap(sides[0], sides[1])
    assert paired is not None  # both kinds of query are there
    return paired.as_dict()


def count_text(queries: int) -> str:
    return f"{queries} answerable {'query' if queries == 1 else 'queries'}"


def per_category(metrics: list[str]) -> list[str]:
    """The metrics the per-category table shows: every hit rate, coverage at each budget, nDCG at the deepest k."""
    parsed = [MEASURES.parse(m) for m in metrics]
    shown = [m.name for m in parsed if m.measure.name == "recall"
             or (m.measure.name == "coverage" and m.cut is not None and m.cut.kind is Cutoff.BUDGET)]
    ndcg = sorted((m.cut.value, m.name) for m in parsed if m.measure.name == "ndcg" and m.cut is not None)
    return shown + [name for _, name in ndcg[-1:]]
