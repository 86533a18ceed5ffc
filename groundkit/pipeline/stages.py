"""The stage table: every artifact of an evaluation, named once, and the stages that read and write them.

Everything else about the pipeline's shape is derived from this table: the in-process runner
(groundkit/pipeline/runner.py) runs the stages in its order, the DVC entry point (stages/stage.py)
builds its command line from it, each step names the stage that wrote what it reads from it, and
dvc.yaml is rendered from it (groundkit/pipeline/dvc_yaml.py, checked by tests/pipeline/test_stages.py).

A stage names its step module as a dotted string, so that importing the table imports no step: each
DVC stage runs in a fresh interpreter and loads only its own step.

At run time this module imports only the table of retriever kinds (no retriever's code), whose
declarations give the params sections of the stages that retrieve, embed and score: every step
module imports it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Literal

from groundkit.retrieval.kinds import SECTIONS, sections_read

if TYPE_CHECKING:
    from groundkit.config import Params
    from groundkit.pipeline.store import Store

ENTRY = "stages/stage.py"
"""The script DVC runs for every stage: ``python stages/stage.py STAGE --params params.yaml ...``."""


@dataclass(frozen=True)
class Artifact:
    """A file or folder a stage writes, by its path in the repository.

    Attributes:
        path: Repository-relative POSIX path, under build/ or metrics/. The in-process runner keeps
            only the last part, so every artifact's name is unique.
        about: What it holds, in a few words (the option's help text).
        sealed: Written with a ``NAME.sha256`` companion that readers check (groundkit/artifacts/seals.py);
            the seal is an output of its stage and a dependency of every stage that reads the file.
        dvc: How dvc.yaml declares it: ``outs``, ``metrics`` (``dvc metrics``) or ``plots``.
        cache: False for the small files kept in git rather than DVC's cache (``cache: false``).
        plot: The ``dvc plots`` options of a ``plots`` artifact, in the order dvc.yaml shows them.
        persist: Declared ``persist: true``, which keeps DVC's run cache from ever serving its stage (see the
            chunk stage's note).
    """

    path: str
    about: str
    sealed: bool = False
    dvc: Literal["outs", "metrics", "plots"] = "outs"
    cache: bool = True
    plot: tuple[tuple[str, str], ...] = field(default=(), compare=False)
    persist: bool = False

    @property
    def name(self) -> str:
        """The file or folder name, which is also its name in the runner's output folder."""
        return PurePosixPath(self.path).name

    @property
    def files(self) -> tuple[str, ...]:
        """The repository paths DVC tracks for it: the artifact, then its seal."""
        return (self.path, f"{self.path}.sha256") if self.sealed else (self.path,)


@dataclass(frozen=True)
class ParamPath:
    """A path that params.yaml names (``corpus.root``): dvc.yaml writes it as ``${KEY}``, quoted."""

    key: str

    @property
    def template(self) -> str:
        return "${" + self.key + "}"


@dataclass(frozen=True)
class RenderedPath:
    """A path dvc.yaml names as it was found when rendered, not through params.yaml: the pool that ``groundkit
    judgments judge`` writes beside corpus.machine_judgments (``NAME.pool.jsonl``), which no params key names.
    The stage refuses a dvc.yaml that passes another path than the one params.yaml now implies."""

    key: str
    about: str


@dataclass(frozen=True)
class Input:
    """Something a stage reads.

    Attributes:
        source: An artifact of an earlier stage, or a path params.yaml names.
        option: Its command-line option; None for a dependency only (the stage must re-run when it
            changes, or must run after the stage that writes it, but is not handed the path).
        argument: The step's ``run`` parameter that receives the path. None with an option means
            the path is the value of a params key, which the entry point sets from the command line.
        why: Why a dependency-only input is there (a comment in dvc.yaml).
        dvc: False for a path the stage is handed but DVC must not track (see the check-inputs stage).
        optional: A path params.yaml may leave empty (``corpus.machine_judgments``). DVC cannot make a
            dependency conditional, so dvc.yaml names it, on the command line and as a dependency, only where
            it was rendered for a params.yaml that sets it (:class:`~groundkit.pipeline.dvc_yaml.Layout`), and
            the stage refuses a params.yaml that sets it when dvc.yaml does not hand it over
            (groundkit/pipeline/entry.py). The step receives None when it is not set.
    """

    source: Artifact | ParamPath | RenderedPath
    option: str | None = None
    argument: str | None = None
    why: str | None = None
    dvc: bool = True
    optional: bool = False


@dataclass(frozen=True)
class Output:
    """Something a stage writes: the artifact, its command-line option, the step's parameter for it."""

    artifact: Artifact
    option: str
    argument: str


@dataclass(frozen=True)
class Stage:
    """One stage: what it reads and writes, the params it depends on, and the step that does the work.

    Attributes:
        name: The stage's name in dvc.yaml (and in every "re-run the NAME stage" advice).
        about: What it does, in a line (dvc.yaml's ``desc``).
        step: Dotted name of the step module; its ``run`` does the work and its ``summary`` says
            what was done in a line.
        inputs: What it reads, in command-line order.
        outputs: What it writes, in command-line order.
        params: The params.yaml sections (or dotted keys) DVC re-runs it for.
        step_params: ``run`` parameter -> the params section it receives ("" for the whole params).
        sets: Params keys repeated on the command line as ``--set KEY=${KEY}`` (see ``note``).
        note: Why the stage looks the way it does (a comment above it in dvc.yaml).
        code: What the stage does with a repository's own code (a ``python:`` retriever or chunker) where
            groundkit is installed (``groundkit init``): ``imports`` it (dvc.yaml lists the code as dependencies
            and on the command line, and the stage refuses a module of the repository it does not cover),
            ``checks`` that it is there (on the command line only), or None.
        plugin: The params key whose ``python:MODULE:FACTORY`` value the stage imports (``chunk.strategy``,
            ``retrieve.retriever``): that module must lie in the declared code before the stage starts.
        in_process: False for a stage only DVC runs; ``groundkit run`` skips it.
        reads_params: False for a stage whose command line carries all it needs: it neither loads params.yaml
            nor imports what loading it takes (pydantic, YAML), so it starts with the standard library alone.
    """

    name: str
    about: str
    step: str
    inputs: tuple[Input, ...]
    outputs: tuple[Output, ...]
    params: tuple[str, ...]
    step_params: Mapping[str, str] = field(default_factory=dict)
    sets: tuple[str, ...] = ()
    note: str | None = None
    code: Literal["imports", "checks"] | None = None
    plugin: str | None = None
    in_process: bool = True
    reads_params: bool = True

    def arguments(
        self, paths: Mapping[Artifact | ParamPath | RenderedPath, str | Path], params: Params | None,
        store: Store | None, code: Sequence[Path] = (),
    ) -> dict[str, object]:
        """Keyword arguments for the step's ``run``: the paths it reads and writes, its params sections, and the
        store it reads and writes through (groundkit/pipeline/store.py: a DVC stage's plain one, or a run's).

        ``code`` is the repository's own code a stage that ``checks`` it is handed (see :attr:`code`).
        """
        bound: dict[str, object] = {"store": store}
        if self.code == "checks":
            bound["code"] = list(code)
        for port in (*self.inputs, *self.outputs):
            if isinstance(port, Output):
                bound[port.argument] = Path(paths[port.artifact])
            elif port.argument is not None:
                path = paths.get(port.source)
                if path is None and not port.optional:
                    raise KeyError(port.source)
                bound[port.argument] = None if path is None else Path(path)
        for argument, section in self.step_params.items():
            bound[argument] = getattr(params, section) if section else params
        return bound

    def overrides(self, given: Mapping[ParamPath, str]) -> list[str]:
        """``KEY=VALUE`` overrides for the params keys whose value the command line carries."""
        return [f"{port.source.key}={given[port.source]}" for port in self.inputs
                if isinstance(port.source, ParamPath) and port.option and port.argument is None]


CORPUS_ROOT = ParamPath("corpus.root")
JUDGMENTS = ParamPath("corpus.judgments")
MACHINE_JUDGMENTS = ParamPath("corpus.machine_judgments")
MACHINE_POOL = RenderedPath("machine_pool", "the judge's pool beside corpus.machine_judgments (NAME.pool.jsonl)")
EXTERNAL_RUN = ParamPath("retrieve.run")

INPUTS = Artifact("build/inputs.json", "the input paths found in this copy of the repository", cache=False)
VALIDATION = Artifact("build/validation.json", "the judgments' counts and the input hashes")
AUDIT = Artifact("build/audit.json", "the corpus audit (JSON)")
DOCUMENTS = Artifact("build/documents.jsonl", "the corpus snapshot", sealed=True)
GOLD_SPANS = Artifact("build/gold_spans.jsonl", "the judgments with every quote resolved to a span", sealed=True)
MACHINE_SPANS = Artifact("build/machine_spans", "a folder: spans.jsonl, the machine judgments "
                         "(corpus.machine_judgments) with every quote resolved (empty without them), and its seal; "
                         "pool.jsonl, the passages the judge was asked about, where its pool was found")
MACHINE_SPANS_FILE = "spans.jsonl"
"""The file inside ``MACHINE_SPANS``: a folder, as ``PASSAGES`` is, because it is empty in most pipelines."""
MACHINE_POOL_FILE = "pool.jsonl"
"""Also inside ``MACHINE_SPANS``, where the judge's pool was found: every (query, passage) it was asked about."""
SPAN_SOURCES = Artifact("build/span_sources.json", "the SHA-256 of the corpus and judgments the spans were "
                        "resolved from")
CHUNKS = Artifact("build/chunks.jsonl", "the chunks", sealed=True, persist=True)
CHUNKING = Artifact("build/chunking.json", "the chunk params the chunks were cut with", persist=True)
INDEX = Artifact("build/index", "the BM25 index (a folder)")
EMBEDDINGS = Artifact("build/embeddings", "the chunk embeddings, or a manifest saying none were needed (a folder)")
RUN = Artifact("build/run.trec", "the run (TREC)", sealed=True)
PASSAGES = Artifact("build/passages", "a folder: passages.jsonl (an external run's passages, empty for other "
                    "retrievers) and its seal, and params.json (the params the run was ranked with)")
PASSAGES_FILE = "passages.jsonl"
"""The file inside ``PASSAGES``: a folder, because DVC warns about every empty file it tracks, at each stage."""
RUN_PARAMS_FILE = "params.json"
"""The other file inside ``PASSAGES``: the params the retrieve stage ranked with, for the score stage to check."""
QRELS = Artifact("build/qrels.trec", "the chunk-level qrels (TREC)")
RUN_METADATA = Artifact("metrics/run.json", "what was measured: input hashes, params, version", cache=False)
PLOT_DATA = Artifact("metrics/plots", "the plot data (a folder of CSV files)", cache=False)
METRICS = Artifact("metrics/metrics.json", "the headline metrics", dvc="metrics", cache=False)
DETAIL = Artifact("metrics/detail.json", "every measure, overall and per category", cache=False)
PER_QUERY = Artifact("metrics/per_query.csv", "one row of measures per query", cache=False)
REPORT = Artifact("metrics/report.html", "the report: one self-contained HTML page")

UNTRACKED = frozenset({"execution"})
"""Params sections steps read that no stage declares to DVC: where the work runs, which by contract
(tests/execution/) changes no byte of what the stages write, so switching engines must re-run nothing.
The stages that need it get the whole params, or the section by name in ``step_params``."""

_STEPS = "groundkit.pipeline.steps"

STAGES: tuple[Stage, ...] = (
    Stage(
        name="check-inputs",
        about="check that the input paths params.yaml names are in this copy of the repository",
        step=f"{_STEPS}.check_inputs",
        inputs=(Input(CORPUS_ROOT, "--corpus", "corpus_root", dvc=False),
                Input(JUDGMENTS, "--judgments", "judgments", dvc=False),
                Input(MACHINE_JUDGMENTS, "--machine-judgments", "machine_judgments", dvc=False, optional=True),
                Input(EXTERNAL_RUN, "--run", "run_file", dvc=False)),
        outputs=(Output(INPUTS, "--out", "out_inputs"),),
        params=("corpus", "retrieve.run"),
        code="checks",
        in_process=False,
        reads_params=False,
        note="A queued or --temp experiment runs in a copy of the repository holding only what git\n"
             "commits and DVC tracks. This stage declares its paths as params, not deps, and keeps\n"
             "its output out of DVC's cache and out of git, so that it runs first in every such\n"
             "copy and names a missing input before DVC fails on it with a bare [Errno 2].",
    ),
    Stage(
        name="validate-judgments",
        about="check the judgments, audit them against the corpus, record the input hashes",
        step=f"{_STEPS}.validate_judgments",
        inputs=(Input(JUDGMENTS, "--judgments", "judgments"), Input(CORPUS_ROOT, "--corpus", "corpus_root"),
                Input(MACHINE_JUDGMENTS, "--machine-judgments", "machine_judgments", optional=True),
                Input(INPUTS, why="runs once check-inputs has found every input")),
        outputs=(Output(VALIDATION, "--out", "out_validation"), Output(AUDIT, "--audit-out", "out_audit")),
        params=("corpus", "audit", "tokenize"),
        step_params={"params": "audit", "tokenizer": "tokenize", "selection": "corpus"},
    ),
    Stage(
        name="resolve-spans",
        about="snapshot the corpus and resolve every gold quote to one span, before any chunking starts",
        step=f"{_STEPS}.resolve_spans",
        inputs=(Input(CORPUS_ROOT, "--corpus", "corpus_root"), Input(JUDGMENTS, "--judgments", "judgments"),
                Input(MACHINE_JUDGMENTS, "--machine-judgments", "machine_judgments", optional=True),
                Input(MACHINE_POOL, "--machine-pool", "machine_pool", optional=True),
                Input(VALIDATION, "--validation", "validation")),
        outputs=(Output(DOCUMENTS, "--documents-out", "out_documents"),
                 Output(GOLD_SPANS, "--spans-out", "out_spans"),
                 Output(MACHINE_SPANS, "--machine-spans-out", "out_machine_spans"),
                 Output(SPAN_SOURCES, "--sources-out", "out_sources")),
        params=("corpus",),
        step_params={"selection": "corpus"},
    ),
    Stage(
        name="chunk",
        about="split the corpus snapshot into chunks",
        step=f"{_STEPS}.chunk",
        inputs=(Input(DOCUMENTS, "--documents", "documents"),),
        outputs=(Output(CHUNKS, "--out", "out_chunks"), Output(CHUNKING, "--chunking-out", "out_chunking")),
        params=("chunk",),
        step_params={"params": "chunk"},
        sets=("chunk.strategy", "chunk.size", "chunk.overlap"),
        code="imports",
        plugin="chunk.strategy",
        note="The chunk values are repeated on the command line on purpose: DVC's\n"
             "run-cache key drops every param named `size`, so without them a run with\n"
             "a new chunk.size could be served the chunks of an old one. A library's\n"
             "own `size` in chunk.options cannot be carried so (DVC cannot quote a\n"
             "mapping into a command), so the outputs are `persist`: DVC's run cache\n"
             "never serves this stage, which re-chunks instead. A python: chunker's\n"
             "module is a dependency where groundkit init wrote this file (`--code`).",
    ),
    Stage(
        name="index",
        about="build the BM25 index over the chunks",
        step=f"{_STEPS}.index",
        inputs=(Input(CHUNKS, "--chunks", "chunks"),),
        outputs=(Output(INDEX, "--out", "out_index"),),
        params=("bm25", "tokenize"),
        step_params={"params": "bm25", "tokenizer": "tokenize", "execution": "execution"},
    ),
    Stage(
        name="embed",
        about="embed the chunks for the dense and hybrid retrievers (a manifest only for the others)",
        step=f"{_STEPS}.embed",
        inputs=(Input(CHUNKS, "--chunks", "chunks"),),
        outputs=(Output(EMBEDDINGS, "--out", "out_embeddings"),),
        params=("retrieve.retriever", "dense"),
        step_params={"params": ""},
        note="Dense embeddings live in their own stage so they are computed once per\n"
             "(chunks, model) and cached by DVC, not on every change of retrieve.depth.\n"
             "The stage depends on retrieve.retriever because for bm25, external and\n"
             "python: retrievers it only writes a manifest saying no embeddings were\n"
             "needed: the default pipeline never imports torch. The price: switching\n"
             "between dense and hybrid re-runs it (same bytes out, or a run-cache hit).",
    ),
    Stage(
        name="retrieve",
        about="rank the chunks for every query (or read an external run) and write a TREC run",
        step=f"{_STEPS}.retrieve",
        inputs=(Input(CHUNKS, "--chunks", "chunks"), Input(DOCUMENTS, "--documents", "documents"),
                Input(INDEX, "--index", "index_dir"), Input(EMBEDDINGS, "--embeddings", "embeddings_dir"),
                Input(GOLD_SPANS, "--spans", "spans"), Input(MACHINE_SPANS, "--machine-spans", "machine_spans"),
                Input(EXTERNAL_RUN, "--run")),
        outputs=(Output(RUN, "--out", "out_run"), Output(PASSAGES, "--passages-out", "out_passages")),
        params=("retrieve", *sections_read()),
        step_params={"params": ""},
        code="imports",
        plugin="retrieve.retriever",
        note="retrieve.run is read only when retrieve.retriever is external, but DVC\n"
             "cannot make a dependency conditional, so params.yaml points it at an\n"
             "existing file. A python: retriever's module is a dependency where\n"
             "groundkit init wrote this file (`--code`); in groundkit's own repository\n"
             "it is not: use `dvc repro -f -s retrieve` after editing it.",
    ),
    Stage(
        name="score",
        about="derive chunk-level qrels from the gold spans and score the run",
        step=f"{_STEPS}.score",
        inputs=(Input(GOLD_SPANS, "--spans", "spans"), Input(MACHINE_SPANS, "--machine-spans", "machine_spans"),
                Input(SPAN_SOURCES, "--span-sources", "span_sources"), Input(CHUNKS, "--chunks", "chunks"),
                Input(CHUNKING, "--chunking", "chunking"), Input(RUN, "--run", "run"),
                Input(PASSAGES, "--passages", "passages"),
                Input(EXTERNAL_RUN, why="metrics/run.json records the external run file's name and SHA-256")),
        outputs=(Output(QRELS, "--qrels-out", "out_qrels"), Output(METRICS, "--metrics-out", "out_metrics"),
                 Output(DETAIL, "--detail-out", "out_detail"),
                 Output(PER_QUERY, "--per-query-out", "out_per_query"),
                 Output(RUN_METADATA, "--run-metadata-out", "out_run_metadata"),
                 Output(PLOT_DATA, "--plots-out", "out_plots")),
        params=(*SECTIONS, "retrieve", "score"),
        step_params={"params": ""},
    ),
    Stage(
        name="report",
        about="write the HTML report (charts, per-query table, gold quotes and retrieved chunks side by side)",
        step="groundkit.reports.step",  # a reports module: the table names it, no pipeline module imports it
        inputs=(Input(PER_QUERY, "--per-query", "per_query"), Input(RUN_METADATA, "--run-metadata", "run_metadata"),
                Input(PLOT_DATA, "--plots", "plots"), Input(DOCUMENTS, "--documents", "documents"),
                Input(GOLD_SPANS, "--spans", "spans"), Input(MACHINE_SPANS, "--machine-spans", "machine_spans"),
                Input(CHUNKS, "--chunks", "chunks"), Input(RUN, "--run", "run"),
                Input(PASSAGES, "--passages", "passages")),
        outputs=(Output(REPORT, "--out", "out_report"),),
        params=(),
        note="The report of the workspace alone; `groundkit report metrics --baseline main`\n"
             "writes one against another revision.",
    ),
)

BY_NAME: dict[str, Stage] = {stage.name: stage for stage in STAGES}

_WRITER: dict[Artifact, str] = {out.artifact: stage.name for stage in STAGES for out in stage.outputs}


def written_by(artifact: Artifact) -> str:
    """The name of the stage that writes ``artifact``: the one to re-run when it is missing or damaged."""
    return _WRITER[artifact]


ARTIFACTS: tuple[str, ...] = tuple(
    PurePosixPath(path).name for stage in STAGES if stage.in_process
    for out in stage.outputs for path in out.artifact.files
)
"""The names of everything an evaluation writes, seals included, as the runner's output folder holds them."""
