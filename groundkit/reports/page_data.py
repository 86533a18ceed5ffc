"""What the report page shows, as data: the headline rows, the curves, and every query with its gold quotes and
the passages each run ranked, taken from the run's artifacts (groundkit/reports/evidence.py).

The same inputs give the same data: no time, no absolute path the caller did not pass; floats rounded.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from groundkit.corpus.passage import Passage
from groundkit.reports.compare import Comparison
from groundkit.reports.compare_text import decided_text
from groundkit.reports.evidence import Evidence, locate, mismatch
from groundkit.reports.sides import NO_ANSWER, Side, read_side
from groundkit.reports.stats import mean_intervals
from groundkit.scoring.measures import MEASURES, Cutoff
from groundkit.scoring.score import hit_rate_ks

TOP_K = 10


CONTEXT_CHARS = 240  # document text shown on each side of a gold quote


QUOTE_CHARS = 1200  # a longer gold span (a whole document) is shown cut, and says so


PASSAGE_CHARS = 2000


@dataclass(frozen=True)
class Input:
    """One side of the report: its per-query results, its artifacts (or why there are none) and budget curve."""

    side: Side
    evidence: Evidence | None
    note: str | None
    budget: list[tuple[float, float]]


def _budget_rows(text: str | None) -> list[tuple[float, float]]:
    if not text:
        return []
    try:
        return [(float(row["budget_chars"]), float(row["recall"])) for row in csv.DictReader(io.StringIO(text))]
    except (KeyError, TypeError, ValueError):
        return []


def _budget_text(spec: str, cwd: Path, metrics_dir: str) -> str | None:
    """plots/budget.csv of a side: beside its per_query.csv, or committed in its revision."""
    folder = Path(spec)
    if folder.is_dir():
        if not (folder / "per_query.csv").is_file():
            folder = folder / metrics_dir
        path = folder / "plots" / "budget.csv"
        return path.read_text(encoding="utf-8") if path.is_file() else None
    from dvc.api import DVCFileSystem
    from dvc.exceptions import DvcException

    try:
        data: bytes = DVCFileSystem(url=str(cwd), rev=spec).read_bytes(f"{metrics_dir}/plots/budget.csv")
    except (DvcException, OSError, ValueError):
        return None
    return data.decode("utf-8", errors="replace")


def checked(side: Side, evidence: Evidence | str | None) -> tuple[Evidence | None, str | None]:
    """The evidence when it is the run behind ``side``; otherwise None and what to tell the reader."""
    if evidence is None:
        return None, None
    if isinstance(evidence, str):
        return None, f"Passages of {side.label} are not shown: {evidence}."
    evidence = evidence.scored_by(side.metadata)  # relevant by score's rule, as the run's run.json records it
    ids = list(side.per_query.position)
    rows = [side.per_query.position[q] for q in ids]
    context = {metric.cut.value: [float(side.per_query.values[r, side.per_query.metric_names.index(m)]) for r in rows]
               for m in side.per_query.metric_names for metric in [MEASURES.parse(m)]
               if metric.measure.name == "chars" and metric.cut is not None}
    why = mismatch(evidence, ids, [side.per_query.first_gold_rank[r] for r in rows], context)
    if why is not None:
        return None, f"Passages of {side.label} are not shown: the artifacts in {evidence.source} do not match " \
                     f"its per_query.csv ({why})."
    return evidence, None


def read_input(spec: str, cwd: Path, metrics_dir: str = "metrics") -> Input:
    """A side as ``compare`` reads it, with its artifacts when they can be found and match."""
    side = read_side(spec, cwd=cwd, metrics_dir=metrics_dir)
    evidence, note = checked(side, locate(spec, cwd, metrics_dir))
    return Input(side, evidence, note, _budget_rows(_budget_text(spec, cwd, metrics_dir)))


def workspace_input(per_query: Path, evidence: Evidence, budget_csv: Path, label: str) -> Input:
    """The run the pipeline just scored: per_query.csv and run.json in one folder, and its own artifacts."""
    side = replace(read_side(str(per_query.parent), cwd=per_query.parent), label=label)
    found, note = checked(side, evidence)
    text = budget_csv.read_text(encoding="utf-8") if budget_csv.is_file() else None
    return Input(side, found, note, _budget_rows(text))


def _deepest(side: Side, measure: str) -> str | None:
    """The metric of ``measure`` at the deepest rank cut-off ``side`` reports."""
    names = [(metric.cut.value, m) for m in side.per_query.metric_names for metric in [MEASURES.parse(m)]
             if metric.measure.name == measure and metric.cut is not None and metric.cut.kind is Cutoff.RANK]
    return max(names)[1] if names else None


def _rank(value: float) -> int | None:
    return None if math.isinf(value) else int(value)


def _round(value: float | None, digits: int = 6) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return round(float(value), digits)


def answerable_rows(side: Side) -> np.ndarray:
    return np.array([i for i, c in enumerate(side.per_query.categories) if c != NO_ANSWER], dtype=np.intp)


def headline_names(side: Side) -> list[str]:
    """The figures metrics.json leads with (``score.headline``, as run.json records it), as far as this side
    reports them; for a run.json without it, nDCG and hit rate at the deepest k and MRR."""
    recorded = side.metadata.get("params", {}).get("score", {}).get("headline")
    wanted = recorded if isinstance(recorded, list) else [_deepest(side, "ndcg"), _deepest(side, "recall"), "mrr"]
    return [m for m in wanted if m is not None and m in side.per_query.metric_names]


def stat_rows(run: Input, base: Input | None, comparison: Comparison | None) -> list[dict[str, Any]]:
    if comparison is not None:
        return [{"metric": s.metric, "baseline": s.baseline, "run": s.candidate, "delta": s.delta,
                 "ci": None if s.ci_low is None else [s.ci_low, s.ci_high], "p": s.p_value,
                 "decides": decided_text(s), "significant": s.significant}
                for s in comparison.candidates[0].overall]
    side = run.side
    values = side.per_query.values[answerable_rows(side)].T
    intervals = mean_intervals(values) if values.size else []
    rows = []
    for j, metric in enumerate(side.per_query.metric_names):
        low, high = intervals[j] if intervals else (None, None)
        mean = float(values[j].mean()) if values.shape[1] else None
        rows.append({"metric": metric, "baseline": None, "run": mean, "delta": None,
                     "ci": None if low is None else [low, high], "p": None})
    return rows


def hit_curve(side: Side) -> list[tuple[float, float]]:
    ranks = [side.per_query.first_gold_rank[i] for i in answerable_rows(side)]
    if not ranks:
        return []
    depth = int(side.metadata.get("params", {}).get("retrieve", {}).get("depth") or 0)
    depth = max([depth, *(int(r) for r in ranks if math.isfinite(r)), 1])
    found = np.sort(np.array([r for r in ranks if math.isfinite(r)]))
    return [(float(k), float(np.searchsorted(found, k, side="right")) / len(ranks)) for k in hit_rate_ks(depth)]


def category_means(side: Side, metrics: list[str]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for category in sorted({c for c in side.per_query.categories if c != NO_ANSWER}):
        rows = [i for i, c in enumerate(side.per_query.categories) if c == category]
        out[category] = {m: float(side.per_query.values[rows, side.per_query.metric_names.index(m)].mean())
                         for m in metrics}
    return out


class _Texts:
    """The document text the page needs: only the ranges it shows, merged per document."""

    def __init__(self, evidences: Sequence[Evidence]) -> None:
        self._documents = {path: d.text for e in evidences for path, d in e.documents.items()}
        self._ranges: dict[str, list[tuple[int, int]]] = {}
        self._fallback: dict[str, dict[int, str]] = {}

    def need(self, document: str, start: int, end: int, text: str | None = None) -> None:
        if document not in self._documents:
            if text is not None:  # a passage of a document the snapshot lacks: its own text stands in
                self._fallback.setdefault(document, {})[start] = text[:end - start]
            return
        length = len(self._documents[document])
        self._ranges.setdefault(document, []).append((max(0, start), min(end, length)))

    def segments(self) -> dict[str, list[list[Any]]]:
        """Per document, ``[start, text]`` pieces covering every range asked for, in order."""
        out: dict[str, list[list[Any]]] = {}
        for document in sorted(set(self._ranges) | set(self._fallback)):
            pieces: list[list[Any]] = []
            for start, end in sorted(self._ranges.get(document, [])):
                if pieces and start <= pieces[-1][1]:
                    pieces[-1][1] = max(pieces[-1][1], end)
                else:
                    pieces.append([start, end])
            text = self._documents.get(document, "")
            found = [[a, text[a:b]] for a, b in pieces if b > a]
            found += [[a, t] for a, t in sorted(self._fallback.get(document, {}).items())]
            out[document] = sorted(found, key=lambda piece: piece[0])
        return out


def shown_text(segments: dict[str, list[list[Any]]], document: str, start: int, end: int) -> str:
    """What the page's ``slice`` shows of ``document`` from ``start`` to ``end``, given its text's ``segments``:
    the piece holding ``start``, up to ``end`` or the piece's end."""
    for at, text in segments.get(document, ()):
        if at <= start < at + len(text):
            return text[start - at:min(end, at + len(text)) - at]
    return ""


def _holders(evidence: Evidence | None, query_id: str, span: Passage) -> list[list[Any]] | None:
    """The chunks of a run that overlap a gold span, as ``[start, end, rank or None]``; None without its chunks."""
    if evidence is None:
        return None
    return [[c.start, c.end, evidence.rank_of(query_id, c.passage_id)] for c in evidence.chunks_over(span)]


def _gold(evidence: Evidence, query_id: str, texts: _Texts, run: Evidence | None,
          base: Evidence | None) -> list[dict[str, Any]]:
    """Each gold span of the query, and the chunks of each run that hold it (a boundary cuts it if several)."""
    shown = []
    for span in evidence.judgments[query_id].spans:
        texts.need(span.document, span.start - CONTEXT_CHARS, min(span.end, span.start + QUOTE_CHARS) + CONTEXT_CHARS)
        shown.append({"doc": span.document, "start": span.start, "end": span.end, "grade": span.grade,
                      "held": [_holders(base, query_id, span), _holders(run, query_id, span)]})
    return shown


class _Words:
    """Which words of the passages shown the page marks for a query: the words whose content token (the run's
    tokenizer, less function words: what BM25 matched on, stems included) is one of the query's.

    A word is a maximal run of Python's ``\\w`` characters, marked when a token of its lower-cased form is one
    of the query's. The page finds the words of each passage itself (the script in groundkit/reports/_page.py).
    It is given the characters beyond ASCII that make words in the text it holds (:class:`_Shown`), so it
    splits a passage exactly where Python's ``\\w+`` does without relying on JavaScript's Unicode tables; and,
    per query, the words it marks: an ASCII word by its lower case (JavaScript lower-cases ASCII as Python
    does), any other as written. Which words those are is decided here, by the run's tokenizer, stemmer
    included. An ASCII word lower-cased is its own one token, so without a stemmer the ASCII words marked are
    the query's ASCII tokens themselves, and only the few words beyond ASCII are read; with one, each distinct
    word is stemmed once per page. No code runs per word of a passage here: walking every word of SciFact's
    top 10 passages in Python was 28% of a depth-1000 run, and splitting each passage for each query in C
    still 15%.
    """

    def __init__(self, params: dict[str, Any]) -> None:
        from groundkit.config import TokenizeParams
        from groundkit.corpus.tokenizing import make_content_tokenizer, make_content_word_tokenizer

        try:
            tokenize = TokenizeParams.model_validate(params.get("tokenize") or {})
        except ValueError:  # a run.json of another version: the default tokenizer still shows the plain words
            tokenize = TokenizeParams()
        self.stems = tokenize.stemmer != "none"
        """Whether an ASCII word's token may differ from its lower case, so the ASCII words shown must be read."""
        self._tokens = make_content_tokenizer(tokenize)
        self._word_tokens = make_content_word_tokenizer(tokenize)
        self._by_token: dict[str, list[str]] | None = None

    def read(self, shown: _Shown) -> None:
        """File each word shown that the page compares as written (beyond ASCII), and with a stemmer each ASCII
        word (lower-cased), under each of its content tokens."""
        words = list(shown.beyond)  # in no particular order: marked() sorts what it gives
        if self.stems:
            assert shown.lowered is not None, "a stemmer needs the ASCII words shown"
            words += shown.lowered
        by_token: dict[str, list[str]] = {}
        for word, tokens in zip(words, self._word_tokens(words), strict=True):
            for token in tokens:
                by_token.setdefault(token, []).append(word)
        self._by_token = by_token

    def marked(self, query: str) -> list[str]:
        """The words ``query`` marks (sorted): ASCII ones lower-cased, the others as written."""
        assert self._by_token is not None, "read() the words shown first"
        wanted = set(self._tokens(query))
        marked = {word for token in wanted for word in self._by_token.get(token, ())}
        if not self.stems:
            marked.update(token for token in wanted if token.isascii())
        return sorted(marked)


class _Shown(NamedTuple):
    """The words of the passages a page shows, as :class:`_Words` reads them."""

    lowered: set[str] | None
    """The ASCII words, lower-cased (None where no tokenizer stems, and they are not needed)."""
    beyond: set[str]
    """The words holding a character beyond ASCII, as written."""
    characters: str
    """The characters beyond ASCII in those words, sorted: with [A-Za-z0-9_], what makes a word on the page."""


def _vocabulary(texts: Sequence[str], *, ascii_words: bool) -> _Shown:
    """The words of ``texts`` (``\\w+`` runs), the ASCII ones only with ``ascii_words``.

    In bulk, one call in C each: the texts holding a character beyond ASCII joined into one string for the
    regex; the ASCII texts joined into one whose separators become spaces and letters lower case for
    ``str.split`` (``str.translate`` is fast only on ASCII).
    """
    words = set(_WORD.findall(" ".join(text for text in texts if not text.isascii())))
    beyond = {word for word in words if not word.isascii()}
    lowered = None
    if ascii_words:
        from groundkit.corpus.tokenizing import tokenize

        # The default tokenizer on ASCII text is exactly this: its \w+ runs, lower-cased, split in C.
        lowered = set(tokenize(" ".join(text for text in texts if text.isascii())))
        lowered.update(word.lower() for word in words if word.isascii())
    characters = "".join(sorted({c for word in beyond for c in word if not c.isascii()}))
    return _Shown(lowered, beyond, characters)


_WORD = re.compile(r"\w+")


def _top(evidence: Evidence, other: Evidence | None, query_id: str, k: int,
         passages: dict[str, list[Any]], texts: _Texts) -> list[list[Any]]:
    """Each of the top ``k`` passages: its id and its rank in the other run."""
    ranking = evidence.rankings.get(query_id, [])
    elsewhere = {p: i for i, p in enumerate(other.rankings.get(query_id, []), 1)} if other is not None else {}
    rows = []
    for passage_id in ranking[:k]:
        if passage_id not in passages:
            passage = evidence.passages[passage_id]
            # A chunk's context prefix (chunk.context) rides along, for the page to mark: it was read, not gold.
            prefix = getattr(passage, "prefix", "")
            passages[passage_id] = [passage.document, passage.start, passage.end, *([prefix] if prefix else [])]
            texts.need(passage.document, passage.start, min(passage.end, passage.start + PASSAGE_CHARS), passage.text)
        rows.append([passage_id, elsewhere.get(passage_id) if other is not None else None])
    return rows


def _chunked(side: Input | None) -> Evidence | None:
    """A side's evidence when it ranked groundkit's chunks (an external run ranked passages of its own)."""
    if side is None or side.evidence is None:
        return None
    return side.evidence if side.evidence.ranks_chunks else None


def _movement(before: float | None, after: float) -> str:
    if before is None or before == after:
        return ""
    return "up" if after < before else "down"


def page_data(run: Input, base: Input | None, comparison: Comparison | None, *, top_k: int = TOP_K) -> dict[str, Any]:
    """Everything the page shows, as plain data (what the script reads, and what tests check)."""
    side = run.side
    k = _deepest(side, "ndcg")
    hit = _deepest(side, "recall")
    passages: dict[str, list[Any]] = {}
    texts = _Texts([e for e in (run.evidence, base.evidence if base is not None else None) if e is not None])
    queries = []
    for query_id in sorted(side.per_query.position):
        i = side.per_query.position[query_id]
        j = base.side.per_query.position.get(query_id) if base is not None else None
        answerable = side.per_query.categories[i] != NO_ANSWER
        after = side.per_query.first_gold_rank[i]
        before = base.side.per_query.first_gold_rank[j] if base is not None and j is not None else None

        def value(s: Side, row: int | None, metric: str | None) -> float | None:
            table = s.per_query
            if row is None or metric is None or metric not in table.metric_names or table.categories[row] == NO_ANSWER:
                return None
            return _round(float(table.values[row, table.metric_names.index(metric)]))

        row: dict[str, Any] = {
            "id": query_id, "query": side.per_query.queries[i], "category": side.per_query.categories[i],
            "rank": [None if before is None else _rank(before), _rank(after)],
            "ndcg": [value(base.side, j, k) if base is not None else None, value(side, i, k)],
            "move": _movement(before, after) if answerable else "",
            # At the k the filter names ("no gold in the top k"), not at the deepest recall@k the run reports.
            "missed": answerable and after > top_k,
            "abstained": [base.side.per_query.abstained[j] if base is not None and j is not None else None,
                          side.per_query.abstained[i]],
        }
        other = base.evidence if base is not None else None
        evidence = run.evidence or other
        if evidence is not None and query_id in evidence.judgments:
            row["gold"] = _gold(evidence, query_id, texts, _chunked(run), _chunked(base))
        if run.evidence is not None:
            row["top"] = _top(run.evidence, other, query_id, top_k, passages, texts)
        if other is not None:
            row["baseTop"] = _top(other, run.evidence, query_id, top_k, passages, texts)
        queries.append(row)
    segments = texts.segments()
    # The words the page marks in the passages it shows: the query's, by each run's own tokenizer.
    words = _Words(side.metadata.get("params", {}))
    base_words = words
    if base is not None and base.side.metadata.get("params", {}).get("tokenize") != \
            side.metadata.get("params", {}).get("tokenize"):
        base_words = _Words(base.side.metadata.get("params", {}))
    texts_shown = [shown_text(segments, document, start, min(end, start + PASSAGE_CHARS))
                   for document, start, end, *_ in passages.values()]
    shown = _vocabulary(texts_shown, ascii_words=words.stems or base_words.stems)
    words.read(shown)
    if base_words is not words:
        base_words.read(shown)
    for row in queries:
        if "top" in row:
            row["words"] = words.marked(row["query"])
        if "baseTop" in row:
            row["baseWords"] = base_words.marked(row["query"])
    notes = [n for n in (run.note, base.note if base is not None else None) if n]
    return {
        "run": side.label, "baseline": base.side.label if base is not None else None,
        "k": top_k, "ndcgMetric": k, "hitMetric": hit, "queries": queries, "passages": passages, "notes": notes,
        "text": segments, "wordCharacters": shown.characters,
        "limits": {"context": CONTEXT_CHARS, "quote": QUOTE_CHARS, "passage": PASSAGE_CHARS},
        "textShown": [run.evidence is not None, base is not None and base.evidence is not None],
    }
