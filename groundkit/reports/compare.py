"""Comparing runs query by query: one baseline against N candidates, with paired statistics and verdicts.

``dvc metrics diff`` says that a mean moved; it cannot say whether the move is larger than what
reshuffling the same queries would give. Both runs score the same judgments, so every query yields
one paired difference, and the statistics (groundkit/reports/stats.py, groundkit/reports/paired.py)
are over those differences: a raw 95% paired bootstrap interval, a paired randomization test, Cohen's
d_z, and the queries that went up, stayed and went down. Every row is decided by one procedure
(groundkit/reports/inference.py): the randomization test inverted into an interval at the level its
correction gives, marked significant exactly when that interval excludes 0. Each candidate's verdict
(groundkit/reports/verdict.py) looks at the gated metrics (``--metric``) only, decided together over
every candidate x gated metric (Holm by default, with Strassburger-Bretz intervals; BH with
Benjamini-Yekutieli's): at alpha = 0.05, eight candidates on two metrics give sixteen chances of a
false alarm. The candidates share the
resampling's random draws, so each is what a comparison of it alone would show, and one candidate
is the case N = 1 of the same computation. The result also says how large a change in each gated
metric these judgments could detect at all. With fewer than two paired queries there is neither an
interval nor a test; below MIN_QUERIES (10) the p-values are shown but no significance is claimed.

groundkit/reports/compare_text.py writes a comparison as Markdown and JSON,
groundkit/reports/compare_terminal.py as text for a terminal.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from groundkit.errors import CompareError, MeasureError
from groundkit.reports.compare_ppi import two_label_comparison
from groundkit.reports.gate import DEFAULT_GATE
from groundkit.reports.inference import MIN_QUERIES, TOO_FEW, TOO_FEW_LABELLED, NormalNull, Ties, tied_with_best
from groundkit.reports.paired import Stat, count_text, decide_rows, paired_rows, untested_reason
from groundkit.reports.sides import NO_ANSWER, Side, params_changed
from groundkit.reports.stats import (
    CORRECTIONS,
    minimum_detectable_effect,
    smallest_p_value,
)
from groundkit.reports.verdict import (
    GateLine,
    cost_metrics,
    decide,
    non_inferiority_lines,
    regression_lines,
    verdict_summary,
)
from groundkit.scoring.measures import MEASURES, Cutoff
from groundkit.scoring.names import split_name
from groundkit.scoring.schema import document_level
from groundkit.scoring.separability import NAME as SEPARABILITY
from groundkit.scoring.separability import paired_bootstrap

SHORT_HASH = 12


ALL = "all"  # the category name of the overall row in the table of detectable effects


@dataclass(frozen=True)
class Detectable:
    """The minimum detectable effect of one gated metric over one category (or all), from the baseline.

    ``sd`` is the baseline's per-query standard deviation; the differences to a candidate are taken
    to have sqrt(2) times it (see :func:`detectable`). ``mde`` is None when nothing is detectable,
    and ``note`` says why. With two label sets ``labelled`` is the queries a person labelled, which the
    PPI figure rests on, and ``queries`` every machine-judged query.
    """

    metric: str
    category: str
    queries: int
    baseline: float | None
    sd: float | None
    mde: float | None
    note: str | None = None
    labelled: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "category": self.category, "queries": self.queries,
                "labelled": self.labelled, "baseline": self.baseline, "sd": self.sd, "mde": self.mde,
                "note": self.note}

    def count_text(self) -> str:
        """The queries the figure rests on: ``21 answerable queries``; with two label sets ``40 machine-judged
        queries (12 labelled by a person)``."""
        if self.labelled is None:
            return count_text(self.queries)
        return f"{self.queries} machine-judged queries ({self.labelled} labelled by a person)"


@dataclass(frozen=True)
class CandidateResult:
    """One candidate against the baseline.

    Attributes:
        side: The candidate.
        params_changed: Each flattened parameter whose value differs: ``{key: [baseline's, candidate's]}``.
        corpus_change: The two corpus hashes, shortened, when the corpora differ (``--allow-corpus-change``).
        one_sided: The metrics only the baseline, or only the candidate, reports.
        overall: One :class:`Stat` per metric both report, in the baseline's order, over the answerable queries.
        category_metrics: The metrics a per-category table shows (:func:`per_category`).
        by_category: Per category, one Stat for each of ``category_metrics``, then for each gated metric
            not among them.
        worse: The queries whose first gold rank got worse, most first; ``better`` those that got better.
        no_answer: The no_answer queries: how many, how many each side abstained on, and separability.
        p_adjusted: Each gated metric's p-value, corrected over every candidate x gated metric.
        costs: Each gated metric's context (``chars@k``) stat, where both report one (each decided alone).
        verdict, regressions, untested, traded, tolerated: The :class:`~groundkit.reports.verdict.Decision`.
        gate_lines: The gate's outcome per metric and rule (regression, non-inferiority); a failed line fails it.
        ppi: The PPI figures when both sides were scored under two label sets.
    """

    side: Side
    params_changed: dict[str, list[Any]]
    corpus_change: dict[str, str] | None
    one_sided: dict[str, list[str]]
    overall: list[Stat]
    category_metrics: list[str]
    by_category: dict[str, list[Stat]]
    worse: list[dict[str, Any]]
    better: list[dict[str, Any]]
    no_answer: dict[str, Any]
    p_adjusted: dict[str, float | None]
    costs: dict[str, Stat]
    verdict: str
    regressions: list[str]
    untested: dict[str, str]
    traded: dict[str, str]
    tolerated: list[str] = field(default_factory=list)
    gate_lines: list[GateLine] = field(default_factory=list)
    ppi: dict[str, Any] | None = None
    """With two label sets (groundkit/reports/compare_ppi.py): the PPI figures the directed overall rows, the gate
    and the MDE are read from, and what stands beside them; None with one label set."""

    def stat(self, metric: str) -> Stat:
        """The overall stat of ``metric``."""
        return next(s for s in self.overall if s.metric == metric)

    def categories(self, metrics: Sequence[str]) -> dict[str, list[Stat]]:
        """Per category, the stats of ``metrics`` in that order (each among ``category_metrics`` or gated)."""
        return {category: [next(s for s in stats if s.metric == m) for m in metrics]
                for category, stats in self.by_category.items()}


@dataclass(frozen=True)
class Comparison:
    """A baseline against its candidates, built in one go by :func:`compare`.

    ``verdict`` counts the candidates' verdicts (one candidate's verdict itself); ``tests`` is how many
    gated p-values the correction was over; ``queries`` the answerable queries paired; ``non_inferiority``
    the margins of ``--non-inferiority`` by metric.
    """

    baseline: Side
    candidates: tuple[CandidateResult, ...]
    gate: list[str]
    alpha: float
    max_drop: float
    correction: str
    tests: int
    queries: int
    detectable: list[Detectable]
    verdict: str
    gate_notes: list[str]
    left_out: list[tuple[str, str]]
    non_inferiority: dict[str, float] = field(default_factory=dict)
    ties: dict[str, Ties] = field(default_factory=dict)
    """With several candidates: per gated metric, the runs (0 the baseline, then each candidate) tied with the best
    (Hsu's MCB, groundkit/reports/inference.py)."""

    @property
    def gate_failed(self) -> list[GateLine]:
        """Every failed gate line, over every candidate."""
        return [line for r in self.candidates for line in r.gate_lines if not line.passed]


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


def detectable(side: Side, rows: np.ndarray, metrics: list[str], alpha: float) -> list[Detectable]:
    """The minimum detectable effect of each metric over all ``rows`` of ``side``, then per category.

    Only the baseline is known here, so the differences to a candidate are taken to have sqrt(2)
    times the baseline's per-query standard deviation: what two runs with the baseline's spread and
    unrelated per-query errors would give. Real candidates share much of the baseline's ranking, so
    their differences usually vary less and smaller effects are found; this is the cautious figure.
    """
    categories = [side.per_query.categories[i] for i in rows]
    groups = [(ALL, rows)] + [(c, rows[np.array([x == c for x in categories], dtype=bool)])
                              for c in sorted(set(categories))]
    result = []
    for metric in metrics:
        column = side.per_query.metric_names.index(metric)
        for category, subset in groups:
            values = side.per_query.values[subset, column]
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


def judged_notes(baseline: Side, candidates: Sequence[Side], gate: Sequence[str]) -> list[str]:
    """Under two label sets, a note for each gated rank cut-off at which a side ranks passages the judge never saw
    (judged@k below 1 in its run.json): they count as not relevant under both label sets, which PPI does not
    correct, so a side that ranks unjudged passages is scored down for the pool's holes, not its ranking."""
    sides = [side for side in (baseline, *candidates) if side.metadata.get("machine_judgments_hash")]
    cuts = sorted({cut.value for name in gate if (cut := split_name(name)[1]) is not None and cut.kind is Cutoff.RANK})
    notes = []
    for k in cuts if sides else ():
        shares = [(side.metadata.get("judged") or {}).get(str(k)) for side in sides]
        if all(isinstance(share, int | float) and share >= 1 for share in shares):
            continue
        shown = ", ".join(f"{side.label} {'unknown' if share is None else format(share, '.4f')}"
                          for side, share in zip(sides, shares, strict=True))
        notes.append(f"judged in the top {k} under the judge's labels: {shown}; a passage the judge never saw counts "
                     "as not relevant under both label sets, which PPI does not correct: judge the pools of every side "
                     "(groundkit judgments judge --run BASELINE --run CANDIDATE ...) before trusting this comparison")
    return notes


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
    if before.get("machine_judgments_hash") != after.get("machine_judgments_hash"):
        shown = [short_hash(side["machine_judgments_hash"]) if side.get("machine_judgments_hash") else "none"
                 for side in (before, after)]
        raise CompareError(
            candidate.json_path,
            f"was scored under other machine judgments than the baseline (machine_judgments_hash {shown[1]}, the "
            f"baseline's {shown[0]}); the judge's labels of both sides must be the same for a paired test",
            fix="score both sides with the same corpus.machine_judgments (or neither); to compare two chunkings or "
                "retrievers, judge the pools of both runs in one `groundkit judgments judge`",
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
    only_before = sorted(set(baseline.per_query.position) - set(candidate.per_query.position))
    only_after = sorted(set(candidate.per_query.position) - set(baseline.per_query.position))
    if only_before or only_after:
        example = (f"{only_before[0]!r} is only in the baseline" if only_before
                   else f"{only_after[0]!r} is only in the candidate")
        raise CompareError(candidate.csv_path, f"does not score the same query ids as the baseline ({example}; "
                           f"{len(only_before)} missing, {len(only_after)} extra)",
                           fix="re-run the score stage on both sides")
    for query_id, i in candidate.per_query.position.items():
        category = baseline.per_query.categories[baseline.per_query.position[query_id]]
        if candidate.per_query.categories[i] != category:
            raise CompareError(candidate.csv_path, f"gives query {query_id!r} the category "
                               f"{candidate.per_query.categories[i]!r}, the baseline {category!r}",
                               line=candidate.per_query.lines[i],
                               fix="re-run the score stage on both sides from the same judgments")
    return corpus_change


def metric_matrix(side: Side, rows: np.ndarray, metrics: list[str]) -> np.ndarray:
    columns = [side.per_query.metric_names.index(m) for m in metrics]
    return np.ascontiguousarray(side.per_query.values[np.ix_(rows, columns)].T)


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
        lacking = [side.label for side in sides if name not in side.per_query.metric_names]
        if lacking and all(document_level(side.metadata) for side in sides) and _needs_passages(name):
            continue  # a document-level result (score-trec) cannot report it: nothing to say, nothing to run again
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


def _needs_passages(name: str) -> bool:
    """Whether metric ``name`` reads the characters of passages, which a document-level result does not have.

    score-trec writes every measure it can compute from ids alone; the others (coverage, chars, precision, ...)
    cannot exist for it, whatever groundkit version or params scored it.
    """
    try:
        parsed = MEASURES.parse(name)
    except MeasureError:
        return False
    return parsed.reads_characters


def paired_metrics(baseline: Side, candidate: Side, gate: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    """The metrics both sides report, and those only one does; every gated metric must be paired."""
    metrics = [m for m in baseline.per_query.metric_names if m in candidate.per_query.metric_names]
    one_sided = {"baseline": [m for m in baseline.per_query.metric_names if m not in candidate.per_query.metric_names],
                 "candidate": [m for m in candidate.per_query.metric_names if m not in baseline.per_query.metric_names]}
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
    table = baseline.per_query
    return [q for q in sorted(table.position) if table.categories[table.position[q]] != NO_ANSWER]


def rows_of(side: Side, ids: list[str]) -> np.ndarray:
    return np.array([side.per_query.position[q] for q in ids], dtype=np.intp)


def compare(
    baseline: Side, candidates: Side | Sequence[Side], *, gate: list[str] | None = None, alpha: float = 0.05,
    max_drop: float = 0.0, allow_corpus_change: bool = False, correction: str = "holm",
    left_out: Sequence[tuple[str, str]] = (), non_inferiority: Mapping[str, float] | None = None,
) -> Comparison:
    """Pair each candidate with the baseline query by query and compute every statistic and verdict.

    ``candidates`` is a list (a single side is the list of one); ``gate`` None is the default gate
    (:func:`default_gate`), empty is no verdict, the tables alone. The gated rows of every candidate are
    decided together under ``correction``; every other row (a metric not gated, a category's, a cost) alone at
    ``alpha``. ``non_inferiority`` maps a metric to its margin (``--non-inferiority``). ``left_out`` names the
    experiments left out of ``--experiments``, and why.
    """
    candidates = [candidates] if isinstance(candidates, Side) else list(candidates)
    check_alpha(alpha)
    check_max_drop(max_drop)
    check_correction(correction)
    gate_notes: list[str] = []
    if gate is None:
        gate, gate_notes = default_gate([baseline, *candidates])
    gate = check_gate(gate)
    margins = check_margins(non_inferiority or {})
    changes = [check_comparable(baseline, c, allow_corpus_change) for c in candidates]
    paired = [paired_metrics(baseline, c, [*gate, *(m for m in margins if m not in gate)]) for c in candidates]
    shared = [m for m in baseline.per_query.metric_names if all(m in c.per_query.metric_names for c in candidates)]
    costs = cost_metrics(gate, shared)
    answerable = answerable_ids(baseline)
    before_rows = rows_of(baseline, answerable)
    if 2 <= len(answerable) < MIN_QUERIES:
        gate_notes.append(f"only {len(answerable)} paired queries, {TOO_FEW}")
    gate_notes += judged_notes(baseline, candidates, gate)
    measured = [_measured(baseline, before_rows, answerable, c, metrics, gate)
                for c, (metrics, _) in zip(candidates, paired, strict=True)]
    # Two label sets (groundkit/reports/compare_ppi.py): each candidate's directed overall rows are PPI++ on the
    # paired differences, and the gate, its correction and the MDE read them. Such a row is decided by PPI's
    # normal-approximation test inverted (inference.NormalNull), so its mark agrees with the interval shown.
    ppis = []
    for c, (metrics, _), (overall, _) in zip(candidates, paired, measured, strict=True):
        two_labels = two_label_comparison(baseline, c, metrics)
        if two_labels is not None:
            for j, name in enumerate(two_labels.metrics):
                se = float(two_labels.delta.std_error[j])
                row = Stat(**two_labels.stat(j))
                overall[name] = replace(row, null=NormalNull(row.delta or 0.0, se)
                                        if two_labels.n >= MIN_QUERIES else None)
        ppis.append(two_labels)
    # Every candidate's person-labelled queries are the baseline's (two_label_comparison refuses others): one note.
    gate_notes += [f"only {count_text(n, by_person=True)}, {TOO_FEW_LABELLED}"
                   for n in sorted({t.n for t in ppis if t is not None and t.n < MIN_QUERIES})]
    judged = [m for m in shared if m in gate]  # the gate in the order the runs report it, as every table lists it
    for overall, _ in measured:  # every row not gated is decided alone, at alpha
        alone = [s for m, s in overall.items() if m not in judged]
        overall.update((s.metric, s) for s in decide_rows(alone, alpha)[0])
    decided, adjusted = decide_rows([overall[m] for overall, _ in measured for m in judged], alpha, correction)
    results = []
    for k, candidate in enumerate(candidates):
        overall, rest = measured[k]
        overall.update((s.metric, s) for s in decided[k * len(judged):(k + 1) * len(judged)])
        gated = [overall[m] for m in judged]
        mine = adjusted[k * len(judged):(k + 1) * len(judged)]
        cost_stats = {m: overall[cost] for m, cost in costs.items()}
        decision = decide(gated, {s.metric: untested_reason(s) for s in gated if s.decided is None}, max_drop,
                          cost_stats)
        lines = regression_lines(decision, {s.metric: s.delta for s in gated}, max_drop, alpha)
        lines += non_inferiority_lines(overall, margins, alpha)
        if len(candidates) > 1:
            lines = [replace(line, candidate=candidate.label) for line in lines]
        rest["by_category"] = {c: decide_rows(stats, alpha)[0] for c, stats in rest["by_category"].items()}
        results.append(CandidateResult(
            side=candidate, params_changed=params_changed(baseline, candidate), corpus_change=changes[k],
            one_sided=paired[k][1], overall=list(overall.values()), **rest,
            p_adjusted=dict(zip(judged, mine, strict=True)), costs=cost_stats, verdict=decision.verdict,
            regressions=decision.regressions, untested=decision.untested, traded=decision.traded,
            tolerated=decision.tolerated, gate_lines=lines, ppi=None if ppis[k] is None else ppis[k].as_dict(alpha)))
    found = detectable(baseline, before_rows, judged, alpha)
    ties = {}
    if len(candidates) > 1:  # which of the baseline and the candidates are tied with the best, per gated metric
        runs = [metric_matrix(side, rows_of(side, answerable), judged) for side in (baseline, *candidates)]
        ties = {m: tied_with_best(np.stack([run[j] for run in runs]), alpha) for j, m in enumerate(judged)}
    if ppis and all(t is not None for t in ppis):
        # The MDE from the PPI variance of the first candidate's paired differences (each candidate's own is in
        # its ppi block): n labelled by a person and N by the judge alone.
        first = ppis[0]
        assert first is not None
        at = {name: j for j, name in enumerate(first.metrics)}
        found = [Detectable(d.metric, ALL, first.n + first.N, float(first.baseline.estimate[at[d.metric]]), None,
                            first.mde(at[d.metric], alpha), f"PPI: {first.n} labelled by a person, {first.N} by "
                            "the judge alone; from the standard error of the paired differences", labelled=first.n)
                 if d.metric in at and d.category == ALL else d for d in found]
    return Comparison(baseline=baseline, candidates=tuple(results), gate=gate, alpha=alpha, max_drop=max_drop,
                      correction=correction, tests=sum(1 for p in adjusted if p is not None),
                      queries=len(answerable), detectable=found,
                      verdict=verdict_summary([r.verdict for r in results]), gate_notes=gate_notes,
                      left_out=list(left_out), non_inferiority=margins, ties=ties)


def _measured(baseline: Side, before_rows: np.ndarray, answerable: list[str], candidate: Side, metrics: list[str],
              gate: list[str]) -> tuple[dict[str, Stat], dict[str, Any]]:
    """One candidate's stats over every paired metric (by name), and its per-category stats, moved queries
    and no_answer figures (the rest of a :class:`CandidateResult`)."""
    after_rows = rows_of(candidate, answerable)
    overall = paired_rows(metrics, metric_matrix(baseline, before_rows, metrics),
                          [metric_matrix(candidate, after_rows, metrics)])[0]
    category_metrics = per_category(metrics)
    shown = [*category_metrics, *(m for m in gate if m not in category_metrics)]
    answerable_categories = [baseline.per_query.categories[i] for i in before_rows]
    by_name = {s.metric: s for s in overall}
    by_category = {}
    for c in sorted(set(answerable_categories)):
        mask = np.array([category == c for category in answerable_categories], dtype=bool)
        if mask.all() and all(m in by_name for m in shown):
            # One category holds every query: its rows are the overall ones (a row's draws depend only on the
            # number of queries and the seed), and resampling them again would double the time of the report.
            by_category[c] = [by_name[m] for m in shown]
            continue
        by_category[c] = paired_rows(shown, metric_matrix(baseline, before_rows[mask], shown),
                                     [metric_matrix(candidate, after_rows[mask], shown)])[0]
    worse, better = moved_queries(baseline, candidate, answerable, before_rows, after_rows)
    before, after = baseline.per_query, candidate.per_query
    unanswerable = [q for q in sorted(before.position) if before.categories[before.position[q]] == NO_ANSWER]
    no_answer = {
        "queries": len(unanswerable),
        "abstained_baseline": sum(1 for q in unanswerable if before.abstained[before.position[q]]),
        "abstained_candidate": sum(1 for q in unanswerable if after.abstained[after.position[q]]),
        SEPARABILITY: paired_separability(baseline, candidate, answerable, unanswerable),
    }
    return by_name, {"category_metrics": category_metrics, "by_category": by_category,
                     "worse": worse, "better": better, "no_answer": no_answer}


def moved_queries(baseline: Side, candidate: Side, answerable: list[str], before_rows: np.ndarray,
                  after_rows: np.ndarray) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The queries whose first gold rank got worse, then those that got better, each by the change in reciprocal
    rank, largest first, then by query id."""
    moved = []
    for q, i, k in zip(answerable, before_rows, after_rows, strict=True):
        before, after = baseline.per_query.first_gold_rank[i], candidate.per_query.first_gold_rank[k]
        if before != after:
            drop = (1 / before if before else 0) - (1 / after if after else 0)  # drop in reciprocal rank
            moved.append((drop, {"query_id": q, "category": baseline.per_query.categories[i],
                                 "query": baseline.per_query.queries[i],
                                 "rank_before": None if math.isinf(before) else int(before),
                                 "rank_after": None if math.isinf(after) else int(after)}))
    worse = [row for drop, row in sorted((m for m in moved if m[0] > 0), key=lambda m: (-m[0], m[1]["query_id"]))]
    better = [row for drop, row in sorted((m for m in moved if m[0] < 0), key=lambda m: (m[0], m[1]["query_id"]))]
    return worse, better


def paired_separability(baseline: Side, candidate: Side, answerable: Sequence[str],
                        unanswerable: Sequence[str]) -> dict[str, Any]:
    """no_answer.separability of both sides over the same queries, with the paired bootstrap's interval and p-value
    (groundkit/scoring/separability.py); ``{"note": why}`` where it is not available."""
    if not unanswerable or not answerable:
        return {"note": "not available: it needs both answerable and no_answer queries"}
    sides = []
    for side in (baseline, candidate):
        table = side.per_query
        scores = [[table.top_score[table.position[q]] for q in ids] for ids in (answerable, unanswerable)]
        if any(math.isnan(v) for ids in scores for v in ids):
            return {"note": f"not available: {side.label}'s per_query.csv holds no top-1 scores (written before "
                            "groundkit recorded them, or by score-trec); re-run its score stage"}
        sides.append((scores[0], scores[1]))
    paired = paired_bootstrap(sides[0], sides[1])
    assert paired is not None  # both kinds of query are there
    return paired.as_dict()


def per_category(metrics: list[str]) -> list[str]:
    """The metrics the per-category table shows: every hit rate, coverage at each budget, nDCG at the deepest k."""
    parsed = [MEASURES.parse(m) for m in metrics]
    shown = [m.name for m in parsed if m.measure.name == "recall"
             or (m.measure.name == "coverage" and m.cut is not None and m.cut.kind is Cutoff.BUDGET)]
    ndcg = sorted((m.cut.value, m.name) for m in parsed if m.measure.name == "ndcg" and m.cut is not None)
    return shown + [name for _, name in ndcg[-1:]]
