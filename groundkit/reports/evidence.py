"""The text behind a run's numbers: its documents, gold spans and ranked passages, for the report.

per_query.csv says that q073's first relevant chunk fell from rank 1 to 53; only the artifacts the
run was scored from can show why. They lie where the run was made:

* a folder written by ``groundkit run`` (or ``score-run``) holds them beside per_query.csv;
* a DVC workspace keeps them in ``build/``, beside the ``metrics/`` folder;
* a git revision or DVC experiment commits only ``metrics/``; its ``build/`` artifacts are read from
  the local DVC cache (``dvc.api.DVCFileSystem``), which holds them when that revision or
  experiment was reproduced on this machine, and not otherwise.

Artifacts that are found are checked against the run before they are shown: the first gold rank
recomputed from them must equal per_query.csv's for every query, so a ``build/`` left behind by
another experiment is never shown as this run's. What cannot be found or does not match is
returned as a reason, and the report says it. Relevance is never decided here: a passage is
relevant by the rule the score stage applied (``score.min_overlap``, as its run.json records it,
:meth:`Evidence.scored_by`), and whether the run ranked groundkit's chunks is what its artifacts
hold (an external run brings passages of its own), not a retriever parsed again.
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from operator import itemgetter
from pathlib import Path

from groundkit.artifacts.seals import seal_path
from groundkit.corpus.passage import Chunk, Document, Excerpt, Passage, PassageLocator
from groundkit.corpus.spans import JudgedPassage, ResolvedJudgment
from groundkit.errors import GroundkitError
from groundkit.pipeline.stages import (
    CHUNKS,
    DOCUMENTS,
    GOLD_SPANS,
    MACHINE_POOL_FILE,
    MACHINE_SPANS,
    MACHINE_SPANS_FILE,
    PASSAGES,
    PASSAGES_FILE,
    RUN,
    written_by,
)
from groundkit.pipeline.store import Store
from groundkit.scoring.agreement import Agreement, agreement, pairs
from groundkit.scoring.measures import ANY_OVERLAP, Relevance
from groundkit.scoring.schema import document_level

BUILD = "build"
# Where each artifact lies inside a run folder (and a workspace's build/); an older layout kept
# passages.jsonl directly in the folder.
LAYOUT = {DOCUMENTS: DOCUMENTS.name, GOLD_SPANS: GOLD_SPANS.name, CHUNKS: CHUNKS.name, RUN: RUN.name,
          PASSAGES: f"{PASSAGES.name}/{PASSAGES_FILE}"}
LEGACY_PASSAGES = PASSAGES_FILE


@dataclass(frozen=True)
class Evidence:
    """A run's artifacts, read and checked.

    Attributes:
        source: Where they were read from, for the report to say.
        documents: The corpus snapshot, by path.
        judgments: The resolved judgments, by query id.
        passages: Every passage the run may rank (chunks, and an external run's passages), by id.
        chunks: The chunks, to find where a chunk boundary cuts a gold quote.
        rankings: Passage ids per query, best first.
        ranks_chunks: The run ranked groundkit's chunks (no passages of its own, as an external run has).
        relevance: The rule that makes a passage relevant: the score stage's (see :meth:`scored_by`).
        agreement: Under two label sets, the judge's agreement with the person over the pooled pairs of the
            queries both labelled (groundkit/scoring/agreement.py); None without the judge's pool.
    """

    source: str
    documents: dict[str, Document]
    judgments: dict[str, ResolvedJudgment]
    passages: dict[str, Excerpt]
    chunks: PassageLocator
    rankings: dict[str, list[str]]
    ranks_chunks: bool = True
    relevance: Relevance = ANY_OVERLAP
    agreement: Agreement | None = None

    def scored_by(self, metadata: Mapping[str, object]) -> Evidence:
        """These artifacts under the relevance rule the score stage used, as its run.json records it
        (``params.score.min_overlap``; a run.json written before the rule existed scored by any overlap)."""
        params = metadata.get("params")
        score = params.get("score") if isinstance(params, dict) else None
        min_overlap = score.get("min_overlap", 0.0) if isinstance(score, dict) else 0.0
        if not isinstance(min_overlap, int | float) or isinstance(min_overlap, bool) or not 0 <= min_overlap <= 1:
            return self  # read_side refuses a run.json it cannot read; this one names no rule to apply
        return replace(self, relevance=Relevance(float(min_overlap)))

    def first_gold_rank(self, query_id: str) -> int | None:
        """Rank of the first passage relevant to a gold span of the query (None: none within the run)."""
        spans = self.judgments[query_id].spans
        documents = {span.document for span in spans}  # most passages ranked lie in other documents
        for rank, passage_id in enumerate(self.rankings.get(query_id, []), start=1):
            passage = self.passages[passage_id]
            if passage.document in documents and any(self.relevance.holds(passage, span) for span in spans):
                return rank
        return None

    def rank_of(self, query_id: str, passage_id: str) -> int | None:
        """Rank of the passage in the query's ranking (None: not ranked)."""
        try:
            return self.rankings.get(query_id, []).index(passage_id) + 1  # a scan in C: no dict per query
        except ValueError:
            return None

    def chunks_over(self, span: Passage) -> list[Excerpt]:
        """The chunks overlapping ``span``, in offset order: more than one means a boundary cuts it."""
        found: list[Excerpt] = self.chunks.overlapping(span)
        return found


def read_files(documents: Path, spans: Path, chunks: Path, run: Path, passages: Path | None, *,
               source: str, store: Store | None = None, machine_spans: Path | None = None) -> Evidence:
    """Read the artifacts at the given paths (``passages`` is the passages file, None when there is none), through
    ``store`` (a run's, when the report is a step of it; else the plain one).

    ``machine_spans`` is the machine spans file of a run scored under two label sets (None, or an empty file,
    for the rest). Its per_query.csv rows are the machine-judged queries under the judge's labels, so those are
    the judgments the evidence holds: the gold the report shows beside each ranking is the judge's.
    """
    store = store or Store()
    docs = store.read_models(documents, Document, producer=written_by(DOCUMENTS))
    judgments = store.read_models(spans, ResolvedJudgment, producer=written_by(GOLD_SPANS))
    machine = [] if machine_spans is None else store.read_models(machine_spans, ResolvedJudgment,
                                                                 producer=written_by(MACHINE_SPANS))
    agreed = None
    if machine:
        pool_file = machine_spans.parent / MACHINE_POOL_FILE if machine_spans is not None else None
        if pool_file is not None and pool_file.is_file():
            pool = store.read_models(pool_file, JudgedPassage, producer=written_by(MACHINE_SPANS))
            agreed = agreement(pairs([row.model_dump() for row in pool], {j.query_id: j for j in machine},
                                     {j.query_id: j for j in judgments}))
        judgments = machine
    chunk_list = store.read_models(chunks, Chunk, producer=written_by(CHUNKS))
    by_id: dict[str, Excerpt] = {c.passage_id: c for c in chunk_list}
    own = store.read_models(passages, Excerpt, producer=written_by(PASSAGES)) if passages is not None else []
    by_id.update((p.passage_id, p) for p in own)
    rankings = store.read_run(run, [j.query_id for j in judgments], set(by_id),
                              listed_in=f"{CHUNKS.name} or {PASSAGES_FILE}", producer=written_by(RUN))
    return Evidence(
        source=source,
        documents={d.path: d for d in docs},
        judgments={j.query_id: j for j in judgments},
        passages=by_id,
        chunks=PassageLocator(chunk_list),
        rankings={q: list(map(itemgetter(0), ranking)) for q, ranking in rankings.items()},
        ranks_chunks=not own,
        agreement=agreed,
    )


def read_folder(folder: Path, *, source: str | None = None) -> Evidence:
    """Read the artifacts of a run folder, or of a workspace's build/."""
    passages = folder / LAYOUT[PASSAGES]
    if not passages.is_file():
        passages = folder / LEGACY_PASSAGES
    machine = folder / MACHINE_SPANS.name / MACHINE_SPANS_FILE  # absent from folders written before it existed
    return read_files(folder / LAYOUT[DOCUMENTS], folder / LAYOUT[GOLD_SPANS], folder / LAYOUT[CHUNKS],
                      folder / LAYOUT[RUN], passages if passages.is_file() else None,
                      source=source or str(folder), machine_spans=machine if machine.is_file() else None)


def _missing(folder: Path) -> list[str]:
    return [name for artifact, name in LAYOUT.items() if artifact is not PASSAGES and not (folder / name).is_file()]


def read_revision(spec: str, cwd: Path) -> Evidence | str:
    """The ``build/`` artifacts of a git revision or DVC experiment from the local DVC cache, or why not."""
    from dvc.api import DVCFileSystem

    try:
        fs = DVCFileSystem(url=str(cwd), rev=spec)
    except Exception as exc:
        return f"DVC cannot open {spec!r} here ({type(exc).__name__})"
    names = [name for artifact, name in LAYOUT.items() if artifact is not PASSAGES]
    wanted = [*names, *(str(seal_path(name)) for name in names)]
    optional = [LAYOUT[PASSAGES], str(seal_path(LAYOUT[PASSAGES])), LEGACY_PASSAGES, str(seal_path(LEGACY_PASSAGES))]
    with tempfile.TemporaryDirectory(prefix="groundkit-report-") as scratch:
        folder = Path(scratch)
        for name in [*wanted, *optional]:
            try:
                data = fs.read_bytes(f"{BUILD}/{name}")
            except (OSError, ValueError):
                if name in wanted:
                    return (f"its {BUILD}/{name} is not in the local DVC cache (reproduce that revision here, "
                            "or run `groundkit run`, to see its passages)")
                continue
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(data)
        try:
            return read_folder(folder, source=f"{spec}: {BUILD}/ from the DVC cache")
        except GroundkitError as exc:
            return f"its {BUILD}/ artifacts in the DVC cache cannot be read ({exc})"


def locate(spec: str, cwd: Path, metrics_dir: str = "metrics") -> Evidence | str:
    """The artifacts behind a side as ``compare`` names it (folder, revision or experiment), or why there are none."""
    folder = Path(spec)
    if not folder.is_dir():
        return read_revision(spec, cwd)
    if (folder / metrics_dir / "per_query.csv").is_file() and not (folder / "per_query.csv").is_file():
        folder = folder / metrics_dir
    if _document_level(folder):
        return "it is a document-level result of `groundkit score-trec`, which ranks document ids, not passages"
    candidates = [folder] if (folder / RUN.name).is_file() else [folder.parent / BUILD]
    for candidate in candidates:
        missing = _missing(candidate)
        if missing:
            return f"{candidate} lacks {', '.join(missing)}"
        try:
            return read_folder(candidate)
        except GroundkitError as exc:
            return f"its artifacts cannot be read ({exc})"
    return "no artifacts found"  # pragma: no cover - candidates is never empty


def _document_level(folder: Path) -> bool:
    try:
        metadata = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False  # read_side has refused it already, or will say what is wrong with it
    return isinstance(metadata, dict) and document_level(metadata)


def mismatch(evidence: Evidence, query_ids: Sequence[str], first_gold_rank: Sequence[float],
             context: Mapping[int, Sequence[float]] | None = None) -> str | None:
    """Why ``evidence`` is not the run behind these per-query figures, or None when every one agrees.

    ``first_gold_rank`` is per_query.csv's column; ``context`` maps k to its ``chars@k`` column
    (NaN for no-answer queries), which tells apart two runs that found gold at the same ranks.
    """
    for i, (query_id, expected) in enumerate(zip(query_ids, first_gold_rank, strict=True)):
        if query_id not in evidence.judgments:
            return f"its judgments lack query {query_id!r}"
        found = evidence.first_gold_rank(query_id)
        if (None if math.isinf(expected) else int(expected)) != found:
            return (f"they give query {query_id!r} a first gold rank of {found or 'none'}, per_query.csv "
                    f"{'none' if math.isinf(expected) else int(expected)}: they are from another run")
        ranking = evidence.rankings.get(query_id, [])
        for k, column in (context or {}).items():
            chars = sum(evidence.passages[p].read_length for p in ranking[:k])
            if not math.isnan(column[i]) and abs(column[i] - chars) > 0.5:
                return (f"their top {k} passages for query {query_id!r} hold {chars} characters, per_query.csv "
                        f"says {column[i]:.0f}: they are from another run")
    return None
