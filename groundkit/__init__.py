"""groundkit: reproducible retrieval evaluation for RAG, anchored on verbatim gold quotes.

The public API. Everything in ``__all__`` is importable from ``groundkit``
itself; the modules behind it are the implementation and may move.

Only the exceptions are imported eagerly. Every other name is imported on
first use (``__getattr__``): each DVC stage imports this package, so an eager
import of the runner would load numpy, pydantic and every step into every
stage, and make every stage depend, for DVC, on every module.
"""

import importlib as _importlib
import typing as _typing

from groundkit._version import __version__
from groundkit.errors import (
    ArtifactError,
    ChunkerError,
    CompareError,
    CorpusError,
    DatasetError,
    DependencyError,
    EngineError,
    GroundkitError,
    InputError,
    JudgmentsError,
    MeasureError,
    OutputError,
    ParamsError,
    RetrieverError,
    RunFileError,
    SpanError,
    SweepError,
)

if _typing.TYPE_CHECKING:
    from groundkit.api import Results, compare_runs, evaluate, load_results, score_file
    from groundkit.config import Params, load_params
    from groundkit.corpus.beir import import_beir
    from groundkit.corpus.documents import load_corpus
    from groundkit.corpus.judgments import Category, GoldSpan, Judgment, load_judgments
    from groundkit.corpus.passage import Chunk, Document, Excerpt, Passage
    from groundkit.corpus.spans import ResolvedJudgment, ResolvedSpan, resolve_judgments
    from groundkit.corpus.squad import import_squad
    from groundkit.pipeline.runner import run
    from groundkit.reports.compare import Comparison, compare
    from groundkit.reports.sides import read_side
    from groundkit.retrieval.kinds import RetrieverKind
    from groundkit.retrieval.ports import Retriever
    from groundkit.scoring.measures import MEASURES, Measure
    from groundkit.scoring.schema import QueryResult, StageResult
    from groundkit.scoring.score import score_run


_LAZY = {
    "Params": "groundkit.config",
    "load_params": "groundkit.config",
    "import_beir": "groundkit.corpus.beir",
    "import_squad": "groundkit.corpus.squad",
    "load_corpus": "groundkit.corpus.documents",
    "Category": "groundkit.corpus.judgments",
    "GoldSpan": "groundkit.corpus.judgments",
    "Judgment": "groundkit.corpus.judgments",
    "load_judgments": "groundkit.corpus.judgments",
    "Chunk": "groundkit.corpus.passage",
    "Document": "groundkit.corpus.passage",
    "ResolvedJudgment": "groundkit.corpus.spans",
    "ResolvedSpan": "groundkit.corpus.spans",
    "resolve_judgments": "groundkit.corpus.spans",
    "run": "groundkit.pipeline.runner",
    "Comparison": "groundkit.reports.compare",
    "compare": "groundkit.reports.compare",
    "read_side": "groundkit.reports.sides",
    "Results": "groundkit.api",
    "compare_runs": "groundkit.api",
    "evaluate": "groundkit.api",
    "load_results": "groundkit.api",
    "score_file": "groundkit.api",
    "Passage": "groundkit.corpus.passage",
    "Excerpt": "groundkit.corpus.passage",
    "MEASURES": "groundkit.scoring.measures",
    "Measure": "groundkit.scoring.measures",
    "RetrieverKind": "groundkit.retrieval.kinds",
    "Retriever": "groundkit.retrieval.ports",
    "score_run": "groundkit.scoring.score",
    "StageResult": "groundkit.scoring.schema",
    "QueryResult": "groundkit.scoring.schema",
}

# Sorted as ruff sorts it; groundkit/errors.py draws the exception tree.
__all__ = [
    "MEASURES",
    "ArtifactError",
    "Category",
    "Chunk",
    "ChunkerError",
    "CompareError",
    "Comparison",
    "CorpusError",
    "DatasetError",
    "DependencyError",
    "Document",
    "EngineError",
    "Excerpt",
    "GoldSpan",
    "GroundkitError",
    "InputError",
    "Judgment",
    "JudgmentsError",
    "Measure",
    "MeasureError",
    "OutputError",
    "Params",
    "ParamsError",
    "Passage",
    "QueryResult",
    "ResolvedJudgment",
    "ResolvedSpan",
    "Results",
    "Retriever",
    "RetrieverError",
    "RetrieverKind",
    "RunFileError",
    "SpanError",
    "StageResult",
    "SweepError",
    "__version__",
    "compare",
    "compare_runs",
    "evaluate",
    "import_beir",
    "import_squad",
    "load_corpus",
    "load_judgments",
    "load_params",
    "load_results",
    "read_side",
    "resolve_judgments",
    "run",
    "score_file",
    "score_run",
]


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'groundkit' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value  # later lookups find it without calling __getattr__ again
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
