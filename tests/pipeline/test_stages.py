"""The stage table against dvc.yaml and the steps, and what each stage runs."""

from __future__ import annotations

import ast
import importlib
import inspect
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from groundkit.config import load_params
from groundkit.errors import OutputError
from groundkit.pipeline import dvc_yaml
from groundkit.pipeline.runner import ARTIFACTS
from groundkit.pipeline.stages import (
    BY_NAME,
    CHUNKS,
    DOCUMENTS,
    GOLD_SPANS,
    METRICS,
    PASSAGES,
    RUN,
    STAGES,
    UNTRACKED,
    VALIDATION,
    Artifact,
    Output,
    ParamPath,
    RenderedPath,
    written_by,
)
from tests.dvc_helpers import REPO


def _committed(root: Path = REPO) -> dict:
    return yaml.safe_load((root / "dvc.yaml").read_text(encoding="utf-8"))


CODE_FOLDERS = ("groundkit", "stages")
"""What a stage of groundkit's own pipeline runs: its entry point's folder and the package, nothing else."""


def _repository_imports(path: Path) -> set[str]:
    """The top-level modules ``path`` imports (inside functions too) that are folders or files of this repository."""
    local = {p.name for p in REPO.iterdir() if p.is_dir() and not p.name.startswith(".")}
    local |= {p.stem for p in REPO.glob("*.py")}
    local |= {p.stem for p in (REPO / "stages").glob("*.py")}
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.split(".")[0])
    return found & local


def test_the_code_deps_are_the_code_folders_and_cover_everything_a_stage_can_import():
    """Each stage depends on the package and the entry point's folder; no module there imports anything else of
    the repository (tests, examples, benchmarks), so nothing a stage runs lies outside its deps."""
    declared = _committed()["stages"]
    for stage in STAGES:
        code = [dep for dep in declared[stage.name]["deps"] if dep in CODE_FOLDERS]
        assert code == list(CODE_FOLDERS), stage.name
        # Anything else a stage depends on is data: no source file is listed one by one.
        assert not any(dep.endswith(".py") for dep in declared[stage.name]["deps"]), stage.name
        assert (REPO / f"{stage.step.replace('.', '/')}.py").is_file(), stage.name
    for folder in CODE_FOLDERS:
        for path in sorted((REPO / folder).rglob("*.py")):
            assert _repository_imports(path) <= {"groundkit", "_own_tree", "stage"}, path


def test_no_stage_imports_what_it_does_not_need():
    """What a stage's process imports is most of its start-up time (benchmarks/bench_pipeline.py)."""
    heavy = ("numpy", "scipy", "pandas", "torch", "transformers", "ray", "bm25s", "dvc", "matplotlib")
    # retrieve imports a retriever's code only when the kind builds it; score computes with numpy (the vectorised
    # provider of groundkit/scoring/providers/)
    numpy_stages = {"index", "score", "report"}
    for stage in STAGES:
        probe = ("import importlib, runpy, sys; sys.argv = ['stage.py', '--help']; sys.path.insert(0, 'stages'); "
                 "import _own_tree, stage; "
                 f"importlib.import_module({stage.step!r}); "
                 f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({heavy!r})))")
        shown = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True)
        expected = ["numpy"] if stage.name in numpy_stages else []
        assert shown.stdout.strip() == str(expected), stage.name


def test_dvc_yaml_declares_what_the_table_says():
    committed = _committed()
    assert list(committed["stages"]) == [stage.name for stage in STAGES]
    for stage in STAGES:
        expected = dvc_yaml.stage_document(stage)
        for key in ("desc", "cmd", "deps", "params", "outs", "metrics", "plots"):
            assert committed["stages"][stage.name].get(key) == expected.get(key), f"{stage.name}: {key}"
    assert committed["plots"] == yaml.safe_load(dvc_yaml.TOP_PLOTS)["plots"]


def test_dvc_yaml_is_the_rendered_file_comments_included():
    assert (REPO / "dvc.yaml").read_text(encoding="utf-8") == dvc_yaml.render(), (
        "re-render dvc.yaml: python -m groundkit.pipeline.dvc_yaml --write")


def test_the_score_stage_declares_the_files_dvc_keeps_in_git():
    """Written out by hand from dvc.yaml's meaning: metrics and plots are small and kept out of DVC's cache."""
    score = _committed()["stages"]["score"]
    assert score["outs"] == ["build/qrels.trec", {"metrics/detail.json": {"cache": False}},
                             {"metrics/per_query.csv": {"cache": False}}, {"metrics/run.json": {"cache": False}},
                             {"metrics/plots": {"cache": False}}]
    # Only the headline is a DVC metric, so `dvc metrics show` and `dvc exp show` stay narrow.
    assert score["metrics"] == [{"metrics/metrics.json": {"cache": False}}]
    assert "plots" not in score
    assert "--run build/run.trec" in score["cmd"] and "${retrieve.run}" in score["deps"]
    # The report is large and rebuilt from the rest: DVC's cache keeps it, git ignores it.
    report = _committed()["stages"]["report"]
    assert report["outs"] == ["metrics/report.html"] and "params" not in report
    assert (REPO / "metrics" / ".gitignore").read_text(encoding="utf-8") == "/report.html\n"


def test_the_runner_writes_every_output_dvc_tracks_and_nothing_else():
    """Every output but those of the stages only DVC runs (check-inputs: the runner's inputs are its arguments)."""
    in_process = {stage.name for stage in STAGES if stage.in_process}
    assert set(BY_NAME) - in_process == {"check-inputs"}
    stages = [stage for name, stage in _committed()["stages"].items() if name in in_process]
    tracked = [next(iter(entry)) if isinstance(entry, dict) else entry
               for stage in stages for kind in ("outs", "metrics", "plots") for entry in stage.get(kind, [])]
    assert sorted(Path(path).name for path in tracked) == sorted(ARTIFACTS)
    assert len(set(ARTIFACTS)) == len(ARTIFACTS) == 23


def test_producers_are_the_stages_that_write_the_artifacts():
    assert [written_by(a) for a in (VALIDATION, DOCUMENTS, GOLD_SPANS, CHUNKS, RUN, PASSAGES, METRICS)] == [
        "validate-judgments", "resolve-spans", "resolve-spans", "chunk", "retrieve", "retrieve", "score"]


def test_steps_name_producers_from_the_table_never_as_literals():
    steps = {REPO / Path(*stage.step.split(".")).with_suffix(".py") for stage in STAGES}
    assert REPO / "groundkit/reports/step.py" in steps  # the report stage's step lives with the reports
    for path in sorted(steps | set((REPO / "groundkit/pipeline/steps").glob("*.py"))):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.keyword) and node.arg == "producer":
                assert not isinstance(node.value, ast.Constant), f"{path.name}:{node.value.lineno}"


def test_every_input_is_written_by_an_earlier_stage():
    written: set[Artifact] = set()
    for stage in STAGES:
        for port in stage.inputs:
            assert isinstance(port.source, ParamPath | RenderedPath) or port.source in written, (stage.name, port)
        written.update(output.artifact for output in stage.outputs)


def test_no_stage_declares_where_its_work_runs():
    """Switching execution.engine re-runs no stage and leaves run.json alone: both engines give the same bytes."""
    assert UNTRACKED == {"execution"}
    assert [(stage.name, key) for stage in STAGES for key in stage.params if key.split(".")[0] in UNTRACKED] == []
    local, ray = (load_params(None, [f"execution.engine={engine}"]).result_params() for engine in ("local", "ray"))
    assert local == ray and "execution" not in local


@pytest.mark.parametrize("stage", STAGES, ids=lambda stage: stage.name)
def test_the_table_binds_every_parameter_of_the_step(stage):
    step = importlib.import_module(stage.step)
    parameters = inspect.signature(step.run).parameters
    bound = {port.argument for port in (*stage.inputs, *stage.outputs) if port.argument is not None}
    bound |= set(stage.step_params) | {"store"} | ({"code"} if stage.code == "checks" else set())
    required = {name for name, p in parameters.items() if p.default is inspect.Parameter.empty}
    assert required <= bound <= set(parameters)
    assert callable(step.summary)
    # A params section the step reads must be one DVC re-runs the stage for, unless it cannot change the outputs.
    assert {section for section in stage.step_params.values() if section} <= set(stage.params) | UNTRACKED
    # An option that feeds no step parameter sets a params key: only a path params.yaml names can.
    for port in stage.inputs:
        if port.option is not None and port.argument is None:
            assert isinstance(port.source, ParamPath)
    assert all(isinstance(output, Output) and output.option for output in stage.outputs)


def test_rendering_never_overwrites_uncommitted_edits_to_dvc_yaml(tmp_path):
    for folder in ("groundkit", "stages"):
        shutil.copytree(REPO / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path / "dvc.yaml"
    edited = (REPO / "dvc.yaml").read_text(encoding="utf-8") + "# my own note\n"
    target.write_text(edited, encoding="utf-8")
    # Outside git nothing says the edit is safe elsewhere: refused, the file untouched.
    with pytest.raises(OutputError, match="changes that are not committed"):
        dvc_yaml.main(["--write", "--root", str(tmp_path)])
    assert target.read_text(encoding="utf-8") == edited
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "dvc.yaml"], check=True)
    subprocess.run([*git, "commit", "-qm", "edit"], check=True)
    target.write_text(edited + "# one more\n", encoding="utf-8")
    with pytest.raises(OutputError):
        dvc_yaml.main(["--write", "--root", str(tmp_path)])
    # Committed, the edit can be got back from git: rendering replaces it.
    subprocess.run([*git, "commit", "-qam", "more"], check=True)
    assert dvc_yaml.main(["--write", "--root", str(tmp_path)]) == 0
    assert target.read_text(encoding="utf-8") == (REPO / "dvc.yaml").read_text(encoding="utf-8")
