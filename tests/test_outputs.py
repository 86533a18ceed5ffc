"""What every command with an --out may write, delete and leave behind: refusals, --force, modes, signals, OS errors.

Runs the real `groundkit` command in subprocesses (signals and the umask are per process). The disk-full
and read-only cases mount small tmpfs file systems, which needs root (as in CI); each mount is undone in
the fixture's teardown.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import signal
import socket
import stat
import subprocess
import time
from pathlib import Path

import pytest

from groundkit.artifacts.atomic import atomic_write_text
from groundkit.artifacts.outputs import MARKER, SCRATCH_MARKER
from groundkit.console.guard import guarded
from groundkit.corpus.beir import import_beir
from groundkit.errors import OutputError
from groundkit.pipeline.runner import ARTIFACTS
from tests.corpus.test_beir import write_dataset
from tests.dvc_helpers import clone_working_tree, env

# The tiny corpus is trivially easy by design (three documents); the audit would reject it.
LENIENT = ("--set", "audit.max_trivial_share=1.0")


def groundkit(*args: str, cwd: Path | None = None, umask: int | None = None) -> subprocess.CompletedProcess[str]:
    def set_umask() -> None:
        if umask is not None:
            os.umask(umask)

    return subprocess.run(["groundkit", *args], capture_output=True, text=True, env=env(), cwd=cwd, check=False,
                          preexec_fn=set_umask)


def run_args(corpus: Path, judgments: Path, out: Path, *extra: str) -> list[str]:
    return ["run", "--corpus", str(corpus), "--judgments", str(judgments), "--out", str(out), *LENIENT, *extra]


def snapshot(root: Path) -> dict[str, str]:
    """Every entry under ``root`` (hidden ones too): a file's SHA-256, or 'dir'."""
    return {str(p.relative_to(root)): "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*"))}


def assert_refused(result: subprocess.CompletedProcess[str], path: Path, fragment: str) -> None:
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith(f"error: {path}: ") and fragment in result.stderr, result.stderr
    assert "fix:" in result.stderr and "Traceback" not in result.stderr + result.stdout


def modes(root: Path) -> set[tuple[str, str]]:
    """(kind, octal mode) of ``root`` and of everything under it."""
    found = set()
    for path in [root, *root.rglob("*")]:
        kind = "dir" if path.is_dir() else "file"
        found.add((kind, oct(stat.S_IMODE(path.stat().st_mode))))
    return found


# --- 1. --out folders: inputs, foreign folders, --force --------------------------------------------------------


@pytest.mark.parametrize(("case", "fragment"), [
    ("judgments", "--out is the judgments file"),
    ("params", "--out is the params file"),
    ("corpus", "--out is the corpus folder"),
    ("inside corpus", "--out lies inside the corpus folder"),
    ("holds corpus", "--out contains the corpus folder"),
])
def test_run_refuses_an_out_that_is_or_holds_an_input(tiny_corpus, tmp_path, case, fragment):
    corpus, judgments = tiny_corpus
    params = tmp_path / "params.yaml"
    params.write_text("audit:\n  max_trivial_share: 1.0\n")
    out = {"judgments": judgments, "params": params, "corpus": corpus, "inside corpus": corpus / "results",
           "holds corpus": tmp_path}[case]
    before = snapshot(tmp_path)
    result = groundkit(*run_args(corpus, judgments, out, "--params", str(params), "--force"))
    assert_refused(result, out, fragment)
    assert snapshot(tmp_path) == before


def test_run_refuses_a_folder_it_did_not_create_and_deletes_nothing(tiny_corpus, tmp_path):
    corpus, judgments = tiny_corpus
    out = tmp_path / "mine"
    for name in ("plots/figure.svg", "index/notes.md", "embeddings/vectors.txt", "results.txt"):
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(f"{name} is mine\n")
    before = snapshot(tmp_path)
    result = groundkit(*run_args(corpus, judgments, out))
    assert_refused(result, out, f"was not written by groundkit (it has no {MARKER} file)")
    assert snapshot(tmp_path) == before


def test_run_output_is_reused_only_with_force_which_keeps_other_files(tiny_corpus, tmp_path):
    corpus, judgments = tiny_corpus
    out = tmp_path / "out"
    assert groundkit(*run_args(corpus, judgments, out)).returncode == 0
    assert json.loads((out / MARKER).read_text()) == {"command": "run", "format": "groundkit-output/1"}
    (out / "notes.md").write_text("my notes\n")
    before = snapshot(tmp_path)

    again = groundkit(*run_args(corpus, judgments, out, "--set", "chunk.size=60"))
    assert_refused(again, out, "already holds the output of an earlier `groundkit run`")
    assert "pass --force" in again.stderr
    assert snapshot(tmp_path) == before

    forced = groundkit(*run_args(corpus, judgments, out, "--set", "chunk.size=60", "--force"))
    assert forced.returncode == 0, forced.stderr
    assert json.loads((out / "run.json").read_text())["params"]["chunk"]["size"] == 60
    assert (out / "notes.md").read_text() == "my notes\n"
    assert sorted(p.name for p in out.iterdir()) == sorted([*ARTIFACTS, MARKER, "notes.md"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus", "judgments.jsonl", "out"]


def test_an_empty_existing_folder_needs_no_force(tiny_corpus, tmp_path):
    corpus, judgments = tiny_corpus
    out = tmp_path / "empty"
    out.mkdir()
    result = groundkit(*run_args(corpus, judgments, out))
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted([*ARTIFACTS, MARKER])


def test_output_folders_of_different_commands_do_not_mix(tiny_corpus, tmp_path):
    corpus, judgments = tiny_corpus
    out = tmp_path / "out"
    assert groundkit(*run_args(corpus, judgments, out)).returncode == 0
    before = snapshot(out)
    with pytest.raises(OutputError, match="holds the output of `groundkit run`, not of import-beir"):
        import_beir(write_dataset(tmp_path / "beir"), out, force=True)
    assert snapshot(out) == before


def test_import_beir_replaces_its_own_output_only_with_force_and_keeps_other_files(tmp_path):
    source = write_dataset(tmp_path / "beir")
    out = tmp_path / "imported"
    assert groundkit("import-beir", str(source), "--out", str(out)).returncode == 0
    (out / "notes.md").write_text("my notes\n")
    assert_refused(groundkit("import-beir", str(source), "--out", str(out)), out,
                   "already holds the output of an earlier `groundkit import-beir`")
    forced = groundkit("import-beir", str(source), "--out", str(out), "--force")
    assert forced.returncode == 0, forced.stderr
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "beir-import.json", "corpus", "judgments.jsonl",
                                                     "notes.md"]
    assert_refused(groundkit("import-beir", str(source), "--out", str(source / "sub")), source / "sub",
                   "--out lies inside the BEIR dataset folder")


# --- 2. --out files: audit reports ----------------------------------------------------------------------------


@pytest.mark.parametrize(("case", "fragment"), [
    ("judgments", "--out is the judgments file"),
    ("inside corpus", "--out lies inside the corpus folder"),
    ("foreign file", "--out exists and is not an audit report written by `groundkit audit`"),
    ("folder", "--out is a folder"),
])
def test_audit_out_refuses_inputs_and_files_it_did_not_write(tiny_corpus, tmp_path, case, fragment):
    corpus, judgments = tiny_corpus
    (tmp_path / "notes.json").write_text('{"mine": true}\n')
    (tmp_path / "folder").mkdir()
    out = {"judgments": judgments, "inside corpus": corpus / "audit.json", "foreign file": tmp_path / "notes.json",
           "folder": tmp_path / "folder"}[case]
    before = snapshot(tmp_path)
    result = groundkit("audit", "--corpus", str(corpus), "--judgments", str(judgments), "--out", str(out),
                       *LENIENT, "--force")
    assert_refused(result, out, fragment)
    assert snapshot(tmp_path) == before


def test_audit_report_is_replaced_only_with_force(tiny_corpus, tmp_path):
    corpus, judgments = tiny_corpus
    out = tmp_path / "reports" / "audit.json"
    args = ("audit", "--corpus", str(corpus), "--judgments", str(judgments), "--out", str(out), *LENIENT)
    assert groundkit(*args).returncode == 0
    written = out.read_bytes()
    assert json.loads(written)["answerable"] == 3
    assert_refused(groundkit(*args), out, "already holds an audit report from an earlier `groundkit audit`")
    assert groundkit(*args, "--force").returncode == 0
    assert out.read_bytes() == written
    assert sorted(p.name for p in out.parent.iterdir()) == ["audit.json"]


# --- 3. permissions follow the umask --------------------------------------------------------------------------


@pytest.mark.parametrize(("umask", "file_mode", "dir_mode"), [(0o022, "0o644", "0o755"), (0o077, "0o600", "0o700")],
                         ids=["umask022", "umask077"])
def test_everything_written_gets_the_mode_the_umask_gives(tiny_corpus, tmp_path, umask, file_mode, dir_mode):
    corpus, judgments = tiny_corpus
    outputs = tmp_path / "outputs"
    outputs.mkdir()
    result = groundkit(*run_args(corpus, judgments, outputs / "run"), umask=umask)
    assert result.returncode == 0, result.stderr
    report = outputs / "audit.json"
    assert groundkit("audit", "--corpus", str(corpus), "--judgments", str(judgments), "--out", str(report),
                     *LENIENT, umask=umask).returncode == 0
    imported = outputs / "beir"
    assert groundkit("import-beir", str(write_dataset(tmp_path / "dataset")), "--out", str(imported),
                     umask=umask).returncode == 0
    assert {"index", "embeddings", "plots"} <= {p.name for p in (outputs / "run").iterdir() if p.is_dir()}
    assert modes(outputs / "run") == {("file", file_mode), ("dir", dir_mode)}
    assert modes(imported) == {("file", file_mode), ("dir", dir_mode)}
    assert modes(report) == {("file", file_mode)}


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """One clone of the working tree for the tests that need real DVC."""
    return clone_working_tree(tmp_path_factory.mktemp("outputs") / "repo")


@pytest.mark.integration
def test_dvc_stages_write_with_the_umask(clone):
    outs = ["build/validation.json", "build/audit.json", "build/documents.jsonl", "build/chunks.jsonl.sha256",
            "build/index", "build/index/manifest.json", "build/index/seg-00000",
            "build/index/seg-00000/data.npy"]
    for value, file_mode, dir_mode in ((0o077, 0o600, 0o700), (0o022, 0o644, 0o755)):
        ran = subprocess.run(["dvc", "repro", "--force", "index"], cwd=clone, env=env(), capture_output=True,
                             text=True, check=False, preexec_fn=lambda v=value: os.umask(v))
        assert ran.returncode == 0, ran.stderr
        assert "Running stage 'index'" in ran.stdout, ran.stdout
        for rel in outs:
            path = clone / rel
            expected = dir_mode if path.is_dir() else file_mode
            assert stat.S_IMODE(path.stat().st_mode) == expected, (oct(value), rel)


@pytest.mark.integration
def test_sweep_plot_refuses_files_it_did_not_write_and_replaces_its_own_with_force(clone):
    params_before = (clone / "params.yaml").read_bytes()
    assert_refused(groundkit("sweep-plot", "--out", "params.yaml", cwd=clone), Path("params.yaml"),
                   "--out exists and is not a sweep table written by `groundkit sweep-plot`")
    assert (clone / "params.yaml").read_bytes() == params_before

    first = groundkit("sweep-plot", cwd=clone, umask=0o077)
    assert first.returncode == 0, first.stderr
    table = clone / "build" / "sweep.csv"
    assert table.read_text().startswith("experiment,chunk_size,chunk_overlap,")
    assert stat.S_IMODE(table.stat().st_mode) == 0o600
    assert_refused(groundkit("sweep-plot", cwd=clone), Path("build/sweep.csv"),
                   "already holds a sweep table from an earlier `groundkit sweep-plot`")
    assert groundkit("sweep-plot", "--force", cwd=clone).returncode == 0


# --- 4. SIGTERM and SIGKILL -----------------------------------------------------------------------------------

BLOCKING_RETRIEVER = '''
import pathlib, time


class Blocking:
    def __init__(self, sentinel):
        self.sentinel = pathlib.Path(sentinel)

    def search(self, query, depth):
        self.sentinel.write_text("searching\\n")
        while True:
            time.sleep(60)


def make(chunks, options):
    return Blocking(options["sentinel"])
'''


def start_blocked_run(tiny_corpus, tmp_path: Path, out: Path) -> tuple[subprocess.Popen[str], Path]:
    """Start `groundkit run` and return once its retriever is blocked in search(), mid-run."""
    corpus, judgments = tiny_corpus
    (tmp_path / "blocking_retriever.py").write_text(BLOCKING_RETRIEVER)
    sentinel = tmp_path / "searching"
    stderr = tmp_path / "stderr.txt"
    plugin = ("--set", "retrieve.retriever=python:blocking_retriever:make",
              "--set", f"retrieve.options={{sentinel: '{sentinel}'}}")
    with stderr.open("w") as handle:
        process = subprocess.Popen(["groundkit", *run_args(corpus, judgments, out, *plugin)], cwd=tmp_path, env=env(),
                                   stdout=subprocess.DEVNULL, stderr=handle, text=True)
    while not sentinel.exists():
        assert process.poll() is None, stderr.read_text()
        time.sleep(0.02)
    return process, stderr


def scratch_of(parent: Path, pid: int) -> list[str]:
    return [p.name for p in parent.iterdir() if p.name.startswith(f".groundkit-run-{pid}-")]


def test_sigterm_removes_the_scratch_folder_and_exits_143(tiny_corpus, tmp_path):
    out = tmp_path / "results" / "out"
    process, stderr = start_blocked_run(tiny_corpus, tmp_path, out)
    assert len(scratch_of(out.parent, process.pid)) == 1  # the run really is half way
    process.send_signal(signal.SIGTERM)
    assert process.wait() == 143
    assert stderr.read_text() == "terminated by SIGTERM; temporary files were removed\n"
    assert not (tmp_path / "results").exists()


def test_scratch_of_a_killed_run_is_swept_by_the_next_and_nothing_else(tiny_corpus, tmp_path):
    out = tmp_path / "out"
    process, _ = start_blocked_run(tiny_corpus, tmp_path, out)
    process.send_signal(signal.SIGKILL)
    assert process.wait() == -signal.SIGKILL
    killed = scratch_of(tmp_path, process.pid)
    assert len(killed) == 1 and not out.exists()

    def fake_scratch(name: str, owner: dict | None) -> None:
        (tmp_path / name).mkdir()
        if owner is not None:
            (tmp_path / name / SCRATCH_MARKER).write_text(json.dumps(owner))

    here = socket.gethostname()
    fake_scratch(f".groundkit-run-{os.getpid()}-0123abcd", {"host": here, "pid": os.getpid()})  # alive: this test
    fake_scratch(f".groundkit-run-{process.pid}-89abcdef", None)  # no marker: not provably groundkit's
    fake_scratch(f".groundkit-run-{process.pid}-fedcba98", {"host": "another-machine", "pid": process.pid})
    fake_scratch(".groundkit-run-notes", None)
    kept = snapshot(tmp_path)

    corpus, judgments = tiny_corpus
    assert groundkit(*run_args(corpus, judgments, tmp_path / "again")).returncode == 0
    left = snapshot(tmp_path)
    assert not (tmp_path / killed[0]).exists()
    assert {k: v for k, v in kept.items() if not k.startswith(killed[0])}.items() <= left.items()


# --- 5. OS errors: the path and the reason, exit 1, nothing left ----------------------------------------------


@pytest.fixture
def mount_tmpfs(tmp_path):
    """Mount a tmpfs with the given options at a new folder; unmount it in teardown."""
    mounted: list[Path] = []

    def mount(name: str, options: str) -> Path:
        point = tmp_path / name
        point.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(point)], check=True)
        mounted.append(point)
        return point

    yield mount
    for point in reversed(mounted):
        subprocess.run(["umount", str(point)], check=True)


def filler(corpus: Path, size: int) -> None:
    """A document of ``size`` bytes that no judgment mentions, so that the run's artifacts outgrow a small disk."""
    line = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor\n"
    (corpus / "filler.md").write_text(line * (size // len(line)))


def assert_os_error(result: subprocess.CompletedProcess[str], path: Path, reason: str) -> None:
    assert result.returncode == 1, result.stderr
    first = result.stderr.splitlines()[0]
    assert first.startswith(f"error: {path}") and first.endswith(f": {reason}"), result.stderr
    assert len(result.stderr.splitlines()) == 2 and "  fix: " in result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr


def test_a_full_disk_names_the_file_and_leaves_nothing(tiny_corpus, mount_tmpfs):
    corpus, judgments = tiny_corpus
    filler(corpus, 1_500_000)
    full = mount_tmpfs("full", "size=2m")
    result = groundkit(*run_args(corpus, judgments, full))
    assert_os_error(result, full, os.strerror(errno.ENOSPC))
    assert list(full.iterdir()) == []


def test_a_read_only_location_names_the_path_and_leaves_nothing(tiny_corpus, mount_tmpfs):
    corpus, judgments = tiny_corpus
    readonly = mount_tmpfs("readonly", "ro,size=1m")
    result = groundkit(*run_args(corpus, judgments, readonly / "results"))
    assert_os_error(result, readonly, os.strerror(errno.EROFS))
    report = groundkit("audit", "--corpus", str(corpus), "--judgments", str(judgments),
                       "--out", str(readonly / "audit.json"), *LENIENT)
    assert_os_error(report, readonly, os.strerror(errno.EROFS))
    assert list(readonly.iterdir()) == []


def test_an_interrupted_atomic_write_names_the_artifact_and_leaves_no_temporary_file(mount_tmpfs):
    full = mount_tmpfs("full", "size=1m")
    with pytest.raises(OSError) as info:
        atomic_write_text(full / "big.txt", "x" * 2_000_000)
    assert (info.value.errno, info.value.filename) == (errno.ENOSPC, str(full / "big.txt"))
    assert list(full.iterdir()) == []


def test_an_out_below_a_file_names_the_path(tiny_corpus, tmp_path):
    corpus, judgments = tiny_corpus
    (tmp_path / "afile").write_text("x\n")
    result = groundkit(*run_args(corpus, judgments, tmp_path / "afile" / "out"))
    assert_os_error(result, tmp_path / "afile", os.strerror(errno.ENOTDIR))


def test_an_os_error_is_one_message_with_both_paths(capsys):
    def main(args):
        raise OSError(errno.EXDEV, os.strerror(errno.EXDEV), "/a/b", None, "/c/d")

    assert guarded(main, []) == 1
    assert capsys.readouterr().err == f"error: /a/b -> /c/d: {os.strerror(errno.EXDEV)}\n"


ARTIFACT_NAMES = ["metrics.json", "run.trec", "per_query.csv", "report.html", "run.json"]


def _commit_in_thread(out: Path, label: str, ready, errors: list) -> None:
    from groundkit.artifacts.outputs import output_folder

    try:
        with output_folder(out, command="run", artifacts=ARTIFACT_NAMES, inputs={}, force=True) as work:
            for name in ARTIFACT_NAMES:
                (work / name).write_text(label, encoding="utf-8")
            ready.wait()  # both commands publish at once
    except Exception as exc:  # pragma: no cover - told by the assertion below
        errors.append(exc)


@pytest.mark.parametrize("existed", [True, False])
def test_two_commands_publishing_into_one_out_at_once_leave_one_whole_result(tmp_path, monkeypatch, existed):
    """Two --force runs into one --out must not leave the metrics of one beside the run file of the other."""
    import threading

    from groundkit.artifacts import outputs as _outputs

    out = tmp_path / "out"
    if existed:
        _commit_in_thread(out, "earlier", threading.Barrier(1), [])
    real_replace = os.replace

    def slow_replace(source, target):  # widens the window in which the two publications could interleave
        time.sleep(0.01)
        real_replace(source, target)

    monkeypatch.setattr(_outputs.os, "replace", slow_replace)
    ready, errors = threading.Barrier(2), []
    threads = [threading.Thread(target=_commit_in_thread, args=(out, label, ready, errors)) for label in "AB"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    contents = {(out / name).read_text(encoding="utf-8") for name in ARTIFACT_NAMES}
    assert len(contents) == 1 and contents <= {"A", "B"}, contents
    assert [p.name for p in out.iterdir() if p.name.startswith(".groundkit-run-")] == []  # no scratch left
    if existed:
        assert errors == []
    else:  # the folder did not exist: the second to publish finds it made by the first, and says so
        assert len(errors) == 1 and isinstance(errors[0], OutputError)
        assert "was created by another command while this `groundkit run` ran" in str(errors[0])
        assert "--force replaces what the other command wrote" in str(errors[0])
