"""Shared fixtures: tiny corpora built in temporary directories."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def write_judgments(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture
def tiny_corpus(tmp_path: Path) -> tuple[Path, Path]:
    """Three short documents sharing vocabulary, and one judgment of each kind."""
    return write_tiny_corpus(tmp_path / "corpus", tmp_path / "judgments.jsonl")


def write_tiny_corpus(root: Path, judgments_path: Path) -> tuple[Path, Path]:
    """Write the tiny corpus under ``root`` and its judgments to ``judgments_path``."""
    (root / "ops").mkdir(parents=True)
    (root / "ops" / "backup.md").write_text(
        "Backups take a snapshot of every range. A full backup runs weekly.\n"
        "Incremental backups run hourly and keep 30 days of history.\n",
        encoding="utf-8",
    )
    (root / "ops" / "replicas.md").write_text(
        "A lagging replica receives a snapshot instead of log entries.\n"
        "Snapshot transfers are limited to 32 MiB per second by default.\n",
        encoding="utf-8",
    )
    (root / "isolation.md").write_text(
        "Snapshot isolation lets a transaction read a consistent view.\nWrite skew is possible under it.\n",
        encoding="utf-8",
    )
    judgments = write_judgments(
        judgments_path,
        [
            {"query_id": "q1", "query": "how often do incremental backups run", "category": "factoid",
             "gold": [{"document": "ops/backup.md", "quote": "Incremental backups run hourly"}]},
            {"query_id": "q2", "query": "snapshot transfer speed limit for a replica", "category": "multi_passage",
             "gold": [{"document": "ops/replicas.md", "quote": "limited to 32 MiB per second"},
                      {"document": "ops/replicas.md", "quote": "receives a snapshot instead of log entries"}]},
            {"query_id": "q3", "query": "anomaly where two writers both succeed", "category": "lexical_gap",
             "gold": [{"document": "isolation.md", "quote": "Write skew is possible"}]},
            {"query_id": "q4", "query": "sourdough hydration ratio", "category": "no_answer", "gold": []},
        ],
    )
    return root, judgments


def rank_metrics(ks, budgets=()):
    """The metric names of the first scoring releases, at the cut-offs ``ks`` and the budgets: hit rate, MRR,
    nDCG and chars at each k, then hit rate within each budget (what tests of score_run measure)."""
    return [*(f"recall@{k}" for k in ks), "mrr", *(f"ndcg@{k}" for k in ks), *(f"chars@{k}" for k in ks),
            *(f"recall@{b}chars" for b in budgets)]


@pytest.fixture
def throwaway_measure():
    """``hits@k`` (gold ids among the top k), registered for one test: all that adding a measure takes."""
    from groundkit.scoring.measures import MEASURES, Cutoff, Measure

    measure = MEASURES.register(Measure("hits", frozenset({Cutoff.RANK}), "gold ids among the top k",
                                        lambda q, cut: float(len(set(q.ranking[:cut.value]) & q.gold))))
    yield measure
    MEASURES.unregister(measure)


@dataclass(frozen=True)
class SweepClone:
    """A clone of the working tree after `dvc repro` (committed), two `dvc exp run -S` experiments and a queued one.

    Attributes:
        repo: The clone. Tests read it and write only outside it (or under its build/).
        repro_output: What the first `dvc repro` printed (stdout and stderr).
        params_after: params.yaml as each `dvc exp run -S` left it, by experiment name.
        params_before: params.yaml as committed.
        metrics_after: The headline metrics.json each experiment wrote, by name.
    """

    repo: Path
    repro_output: str
    params_before: str
    params_after: dict[str, str]
    metrics_after: dict[str, dict]


SWEEP_EXPERIMENTS = {"s400": ["chunk.size=400"], "s1200": ["chunk.size=1200", "chunk.overlap=100"]}
QUEUED_EXPERIMENT = "queued-exp"
"""An experiment of the sweep clone that is queued and never run, named as long as DVC's own names (an
adjective of up to five letters and a noun of four: ``swept-seam``), as a sweep's queue leaves them."""


SWEEP_CLONE_MODULES = frozenset({"tests/pipeline/test_views.py", "tests/reports/test_browser.py",
                                 "tests/reports/test_compare.py", "tests/reports/test_sweep_view.py"})
"""The modules using ``sweep_clone``: scheduled as one unit, so that one worker builds it (about 20 s) for all."""


STARTED_EARLY = ("tests/reports/test_sweep.py", "tests/test_pr_eval.py")
"""Modules that keep a worker busy 30 to 55 s in a handful of tests: xdist's order, by number of tests, started
them last, where they ran on alone after the other workers had finished (about 30 s of a 485 s suite). They go
first; every other module keeps xdist's order. (Starting all the long modules first was tried: the DVC-heavy
ones then all ran at once, and the suite took longer.)"""


def _module(nodeid: str) -> str:
    module = nodeid.split("::", 1)[0]
    return "sweep_clone" if module in SWEEP_CLONE_MODULES else module


def pytest_collection_modifyitems(config, items):
    """On xdist's workers, the order in which the scheduler hands out modules (see ``pytest_xdist_make_scheduler``):
    :data:`STARTED_EARLY`, then by number of tests as xdist would, a module's tests together in their order."""
    if not hasattr(config, "workerinput"):
        return  # without workers, pytest's own order
    sizes: dict[str, int] = {}
    first: dict[str, int] = {}
    for i, item in enumerate(items):
        module = _module(item.nodeid)
        sizes[module] = sizes.get(module, 0) + 1
        first.setdefault(module, i)
    items.sort(key=lambda item: (_module(item.nodeid) not in STARTED_EARLY, -sizes[_module(item.nodeid)],
                                 first[_module(item.nodeid)]))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """xdist's loadscope (a module's tests on one worker, its module fixtures built once), with the modules that
    share the session's sweep clone as one scope: otherwise each worker that gets one of them builds the clone."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    config.option.loadscopereorder = False  # the workers collected the order wanted (pytest_collection_modifyitems)

    class SharedCloneScope(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return "sweep_clone" if module in SWEEP_CLONE_MODULES else super()._split_scope(nodeid)

    return SharedCloneScope(config, log)


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_auto_num_workers(config):
    """``-n auto``: one worker more than the cores. Much of the suite waits on processes of its own (DVC, git,
    Ray, Chromium), which leaves a core idle: on this 2-core machine three workers ran the suite in 501 s where
    two took 547 s (the same commit, one after the other). ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still decides."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own implementation reads it
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return cores + 1


@pytest.fixture(scope="session", autouse=True)
def bytecode_written_once(tmp_path_factory):
    """The suite's Python processes keep their compiled modules in one folder of this session, shared by the
    workers (``PYTHONPYCACHEPREFIX``), even where the environment says not to write them.

    About 600 processes import groundkit: stages, the CLI, runners. With ``PYTHONDONTWRITEBYTECODE`` set, as on
    this project's machines, each compiled every module it imported from source, about 0.1 s of CPU apiece; now
    the first process to import a file from a given path compiles it. Nothing is written beside the code, in
    this checkout or in a test's clone, where DVC hashes the code folders. The bytecode installed beside the
    standard library and the packages is linked into the folder first (:func:`link_installed_bytecode`).
    """
    from tests.dvc_helpers import CODE_FOLDERS, built_once, session_folder

    saved = {key: os.environ.get(key) for key in ("PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE")}
    os.environ["PYTHONPYCACHEPREFIX"] = str(session_folder(tmp_path_factory) / "pycache")
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

    def compiled(folder: Path) -> None:
        # The installed bytecode linked in, then every module of the checkout's code folders compiled once, for
        # the copies of it the tests make (tests/dvc_helpers.compiled_too): a copy's processes compile none of them.
        folder.mkdir()
        link_installed_bytecode(Path(os.environ["PYTHONPYCACHEPREFIX"]))
        folders = [str(REPO / name) for name in CODE_FOLDERS]
        subprocess.run([sys.executable, "-m", "compileall", "-q", *folders], check=True)

    built_once(tmp_path_factory, "compiled", compiled)
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def link_installed_bytecode(prefix: Path) -> None:
    """Hard-link the bytecode already compiled beside the standard library and the installed packages (pip
    compiles what it installs) to where a process with ``PYTHONPYCACHEPREFIX=prefix`` looks for it.

    With a prefix, Python reads compiled modules only under it, so the suite's first DVC, stage, Ray worker and
    torch processes compiled all of DVC, numpy, pydantic, Ray and torch again (about 10,000 modules, some of them
    on several workers at once). A link copies nothing; where links cannot be made, the processes compile as
    before. A module whose source no longer matches what its bytecode recorded is compiled again, and Python
    replaces such a file rather than writing into it, so the installed bytecode is never changed.
    """
    tag = f".{sys.implementation.cache_tag}.pyc"
    paths = sysconfig.get_paths()
    for root in {paths["stdlib"], paths["platstdlib"], paths["purelib"], paths["platlib"]}:
        for folder, _subfolders, names in os.walk(root):
            compiled = [name for name in names if name.endswith(tag)] if folder.endswith("/__pycache__") else []
            if not compiled:
                continue
            target = prefix.as_posix() + os.path.dirname(folder)
            os.makedirs(target, exist_ok=True)
            for name in compiled:
                try:
                    os.link(os.path.join(folder, name), os.path.join(target, name))
                except FileExistsError:
                    pass
                except OSError:  # another file system, say: the processes compile, as without the links
                    return


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium (tests/browser.py), one per module that looks at a page."""
    from tests.browser import Browser

    opened = Browser()
    yield opened
    opened.close()


@pytest.fixture(scope="session")
def sweep_clone(tmp_path_factory) -> SweepClone:
    """One real git + DVC clone with a small chunking sweep, shared by the report, view and browser tests."""
    from tests.dvc_helpers import copy_of, reproduced_clone, run

    template, repro_output = reproduced_clone(tmp_path_factory)
    repo = copy_of(template, tmp_path_factory.mktemp("sweep-clone") / "repo")
    run(["git", "add", "-A"], repo)
    run(["git", "commit", "-q", "-m", "results", "--allow-empty"], repo)
    before = (repo / "params.yaml").read_text(encoding="utf-8")
    after, metrics = {}, {}
    for name, sets in SWEEP_EXPERIMENTS.items():
        run(["dvc", "exp", "run", "-q", "-n", name, *(arg for s in sets for arg in ("-S", s))], repo)
        after[name] = (repo / "params.yaml").read_text(encoding="utf-8")
        metrics[name] = json.loads((repo / "metrics" / "metrics.json").read_text(encoding="utf-8"))
        run(["git", "checkout", "--", "."], repo)
    run(["dvc", "checkout", "-q"], repo)
    run(["dvc", "exp", "run", "--queue", "-q", "-n", QUEUED_EXPERIMENT, "-S", "chunk.size=2000"], repo)
    return SweepClone(repo, repro_output, before, after, metrics)
