"""``groundkit judgments judge``: pool the runs, ask the judge about every pooled passage, write machine judgments.

* **Pool.** A query's pool is the union of the top ``depth`` passages of every run; passages of one
  document that share a character are one pooled passage (groundkit/reports/pool.py's ``merged``), so
  one answer covers every passage a quote in that text would make relevant, and the sheet of ``judgments
  sample`` has no two rows about the same characters.
* **Asking.** Each distinct (query, passage text) is asked once, and only when the cache
  (groundkit/labels/cache.py) lacks it. A fault (see groundkit/labels/endpoint.py and judges.py) stops
  the run: calls already in flight finish and are cached, the rest are not made, nothing is written.
* **Quotes.** A quote is looked for verbatim in its passage's text (surrounding whitespace trimmed); one
  that is not there is discarded and counted, never moved. One whose text occurs more than once in the
  document is extended word by word inside its passage, alternately right and left, until it occurs
  once, as import-squad extends answers (groundkit/corpus/squad.py); one that cannot be made unique is
  discarded and counted. A grade of 0 makes nothing relevant, whatever its quote.
* **Output.** One machine judgment per query, sorted by id: its gold is the resolved quotes with their
  grades (a quote found twice keeps its highest grade); a query whose pool held nothing relevant is a
  ``no_answer`` with ``"pool_empty": true``. Beside it, ``NAME.pool.jsonl`` holds every pooled passage
  with the judge's answer and what became of its quote: what ``judgments sample`` draws rows from.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from groundkit.corpus.judgments import Category, GoldSpan, Judgment, Origin
from groundkit.corpus.passage import Document, Excerpt
from groundkit.corpus.queries import Query
from groundkit.corpus.spans import ResolvedJudgment, ResolvedSpan
from groundkit.corpus.squad import widen_to_unique
from groundkit.errors import JudgeError, JudgeFault
from groundkit.labels.cache import Cache, cache_key
from groundkit.labels.judges import Judge, Verdict
from groundkit.reports.pool import Candidate, RankedRun, judged_at, merged

# What became of a pooled passage's answer (the ``outcome`` of a pool row).
RELEVANT = "relevant"
GRADE_0 = "grade_0"
NO_QUOTE = "no_quote"
NOT_VERBATIM = "not_verbatim"
NOT_UNIQUE = "not_unique"
DISCARDED = (NO_QUOTE, NOT_VERBATIM, NOT_UNIQUE)


def where(query_id: str, passage: Excerpt) -> str:
    """How a message names a pair: the query and the passage's place."""
    return f"query {query_id}, passage {passage.document} [{passage.start}, {passage.end})"


def pooled(queries: Sequence[Query], runs: Sequence[RankedRun], depth: int) -> dict[str, list[Excerpt]]:
    """Each query's pool: the top ``depth`` passages of every run, overlapping ones merged, by place."""
    pools: dict[str, list[Excerpt]] = {}
    for query in queries:
        found: dict[tuple[str, int, int], Candidate] = {}
        for run in runs:
            for rank, passage in enumerate(run.rankings.get(query.query_id, ())[:depth], start=1):
                found.setdefault((passage.document, passage.start, passage.end), Candidate(passage)).ranks.setdefault(
                    run.name, rank)
        pools[query.query_id] = sorted((c.passage for c in merged(list(found.values()))),
                                       key=lambda p: (p.document, p.start))
    return pools


@dataclass
class Tally:
    """What a run of the judge did and found."""

    pairs: int = 0
    asked: int = 0
    calls: int = 0
    cache_hits: int = 0
    tokens: int = 0
    estimated_tokens: int = 0
    outcomes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(
        (RELEVANT, GRADE_0, *DISCARDED), 0))
    extended: int = 0
    discards: list[str] = field(default_factory=list)
    pool_empty: list[str] = field(default_factory=list)
    judged: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Question:
    """One distinct call: a query's text and a passage's text, and the first pair that asked it."""

    key: str
    query_id: str
    query: str
    passage: Excerpt

    @property
    def asked(self) -> dict[str, Any]:
        return {"query": self.query, "passage": self.passage.text}


def questions(judge: Judge, queries: Sequence[Query], pools: Mapping[str, Sequence[Excerpt]]) -> list[Question]:
    """The distinct calls the pools need, in query and pool order."""
    seen: dict[str, Question] = {}
    for query in queries:
        for passage in pools[query.query_id]:
            key = cache_key("judge", judge.id, judge.prompt_sha256, query.query, passage.text)
            seen.setdefault(key, Question(key, query.query_id, query.query, passage))
    return list(seen.values())


def _verdict(entry: dict[str, Any]) -> Verdict:
    answer = entry["answer"]
    return Verdict(answer["grade"], answer["quote"], entry.get("tokens", 0))


def ask(judge: Judge, cache: Cache, wanted: Sequence[Question], tally: Tally, *, max_calls: int | None,
        progress: Callable[[], Any]) -> dict[str, Verdict]:
    """Every answer ``wanted`` needs: from the cache, or asked (``judge.concurrency`` calls at once) and cached.

    Raises:
        JudgeError: the first fault, naming its query and passage; or ``max_calls`` reached with calls left.
    """
    answers: dict[str, Verdict] = {}
    missing: list[Question] = []
    for question in wanted:
        entry = cache.get(question.key, question.asked)
        if entry is None:
            missing.append(question)
        else:
            answers[question.key] = _verdict(entry)
            tally.cache_hits += 1
    allowed = missing if max_calls is None else missing[:max_calls]
    lock = threading.Lock()
    stop = threading.Event()

    def call(question: Question) -> None:
        if stop.is_set():
            return
        try:
            verdict = judge.judge(question.query, question.passage.text)
        except JudgeFault as fault:
            stop.set()
            raise JudgeError(judge.scrub(f"judge {judge.id!r} on {where(question.query_id, question.passage)}: "
                                         f"{fault.problem}"), fix=judge.scrub(fault.fix)) from None
        cache.put(question.key, question.asked, {"grade": verdict.grade, "quote": verdict.quote}, verdict.tokens)
        with lock:
            answers[question.key] = verdict
            tally.calls += 1
            tally.tokens += verdict.tokens
        bar.update(1)

    bar = progress()
    try:
        if judge.concurrency == 1:
            for question in allowed:
                call(question)
        else:
            _in_parallel(call, allowed, judge.concurrency, stop)
    finally:
        bar.close()
    left = len(missing) - len(allowed)
    if left:
        raise JudgeError(f"--max-calls {max_calls} reached: {tally.calls} calls made and cached, {left} left",
                         fix="run the same command again to go on (cached answers cost nothing), or raise --max-calls")
    return answers


def _in_parallel(call: Callable[[Question], None], allowed: Sequence[Question], workers: int,
                 stop: threading.Event) -> None:
    executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="groundkit-judge")
    futures: list[Future[None]] = []
    try:
        futures = [executor.submit(call, q) for q in allowed]
        wait(futures, return_when=FIRST_EXCEPTION)
        failed = next((f for f in futures if f.done() and f.exception() is not None), None)
        if failed is not None:
            executor.shutdown(wait=True, cancel_futures=True)  # calls in flight finish, and are cached
            raise failed.exception()  # type: ignore[misc]
    except BaseException:
        stop.set()  # Ctrl-C: no new call starts; those in flight end within judge.timeout, and are cached
        executor.shutdown(wait=False, cancel_futures=True)
        raise
    executor.shutdown(wait=True)


def resolve_quote(document: Document, passage: Excerpt, quote: str) -> tuple[int, int, int] | str:
    """``quote`` as a span of ``document`` inside ``passage``: (start, end, words added), or why not."""
    quote = quote.strip()
    at = passage.text.find(quote) if quote else -1
    if at < 0:
        return NOT_VERBATIM
    start = passage.start + at
    widened = widen_to_unique(document.text, passage.start, passage.end, start, start + len(quote))
    return NOT_UNIQUE if widened is None else widened


@dataclass(frozen=True)
class Labelled:
    """What ``label`` made: the machine judgments, the pool rows, the tally."""

    judgments: list[Judgment]
    rows: list[dict[str, Any]]
    tally: Tally


def label(judge: Judge, queries: Sequence[Query], pools: Mapping[str, Sequence[Excerpt]],
          answers: Mapping[str, Verdict], corpus: Mapping[str, Document], runs: Sequence[RankedRun], depth: int,
          category: Category, tally: Tally) -> Labelled:
    """Resolve every answer's quote and write one machine judgment per query (see the module docstring)."""
    judgments, rows, resolved = [], [], []
    for query in queries:
        spans: dict[tuple[str, int, int], int] = {}
        for passage in pools[query.query_id]:
            verdict = answers[cache_key("judge", judge.id, judge.prompt_sha256, query.query, passage.text)]
            outcome, span = _outcome(verdict, corpus[passage.document], passage, tally)
            if outcome in DISCARDED:
                tally.discards.append(f"{where(query.query_id, passage)}: {_why(outcome)}")
            tally.outcomes[outcome] += 1
            if span is not None:
                key = (passage.document, span[0], span[1])
                spans[key] = max(spans.get(key, 0), verdict.grade)
            rows.append({"query_id": query.query_id, "query": query.query, "document": passage.document,
                         "start": passage.start, "end": passage.end, "text": passage.text,
                         "grade": verdict.grade, "quote": verdict.quote, "outcome": outcome,
                         "span": list(span) if span is not None else None})
        gold = [GoldSpan(document=d, quote=corpus[d].text[s:e], grade=g) for (d, s, e), g in sorted(spans.items())]
        provenance = {"origin": Origin.MACHINE, "judge": judge.id, "prompt_sha256": judge.prompt_sha256}
        if gold:
            judgments.append(Judgment(query_id=query.query_id, query=query.query, category=category, gold=gold,
                                      **provenance))
        else:
            tally.pool_empty.append(query.query_id)
            judgments.append(Judgment(query_id=query.query_id, query=query.query, category=Category.NO_ANSWER,
                                      gold=[], pool_empty=True, **provenance))
        resolved.append(ResolvedJudgment(query_id=query.query_id, query=query.query, category=category, spans=[
            ResolvedSpan(document=d, start=s, end=e, quote=corpus[d].text[s:e], grade=g)
            for (d, s, e), g in sorted(spans.items())]))
    # judged@k under the machine labels: a passage counts when it lies inside a pooled passage the judge answered.
    answered = frozenset((q.query_id, p.document, p.start, p.end) for q in queries for p in pools[q.query_id])
    for run in runs:
        shares = judged_at(run, resolved, depth, answered)
        tally.judged[run.name] = sum(shares.values()) / len(shares) if shares else 0.0
    return Labelled(judgments, rows, tally)


def _outcome(verdict: Verdict, document: Document, passage: Excerpt,
             tally: Tally) -> tuple[str, tuple[int, int] | None]:
    if verdict.grade == 0:
        return GRADE_0, None
    if verdict.quote is None or not verdict.quote.strip():
        return NO_QUOTE, None
    found = resolve_quote(document, passage, verdict.quote)
    if isinstance(found, str):
        return found, None
    start, end, words = found
    if words:
        tally.extended += 1
    return RELEVANT, (start, end)


def _why(outcome: str) -> str:
    return {NO_QUOTE: "a grade of 1 or more without a quote: discarded",
            NOT_VERBATIM: "the quote is not verbatim in the passage: discarded",
            NOT_UNIQUE: "the quote cannot be made unique in its document inside the passage: discarded"}[outcome]


def pool_lines(rows: Sequence[dict[str, Any]]) -> str:
    """The pool file: one pooled passage a line, with the judge's answer and what became of its quote."""
    return "".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows)
