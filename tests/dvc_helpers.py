"""Helpers for integration tests that run real git and real DVC in a temporary clone."""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def env(**extra: str) -> dict[str, str]:
    """The environment for subprocesses: this interpreter's bin first, quiet, deterministic git."""
    return {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "DVC_NO_ANALYTICS": "1",
        "GIT_AUTHOR_NAME": "groundkit tests",
        "GIT_AUTHOR_EMAIL": "tests@groundkit.invalid",
        "GIT_COMMITTER_NAME": "groundkit tests",
        "GIT_COMMITTER_EMAIL": "tests@groundkit.invalid",
        **extra,
    }


def run(cmd: list[str], cwd: Path, check: bool = True, **extra_env: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(cmd, cwd=cwd, env=env(**extra_env), capture_output=True, text=True, check=False)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result


def clone_working_tree(dest: Path) -> Path:
    """Copy the files git would commit (tracked plus untracked-not-ignored) into a fresh repository."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=REPO, capture_output=True, check=True,
    ).stdout.decode().split("\0")
    dest.mkdir(parents=True)
    for rel in filter(None, listed):
        source = REPO / rel
        if not source.is_file():
            continue  # deleted in the working tree but still in the index
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    run(["git", "init", "-q", "-b", "main"], dest)
    run(["git", "add", "-A"], dest)
    run(["git", "commit", "-q", "-m", "clone"], dest)
    compiled_too(REPO, dest)
    return dest


CODE_FOLDERS = ("groundkit", "stages", "examples")
"""The folders of a copied repository whose modules its stages and commands import."""


def compiled_too(source: Path, dest: Path) -> None:
    """Give ``dest``, a copy of ``source``, the compiled modules the suite keeps for ``source``'s code folders.

    The suite's processes keep bytecode in one folder, by the source file's absolute path (conftest's
    ``bytecode_written_once``), so each copy of a repository compiled groundkit again: about 4,800 modules over a
    run, about 2 ms each. A compiled module is used only while its source's size and modification time (kept by the
    copy) match what it recorded; one that does not match is compiled again, as before.
    """
    prefix = os.environ.get("PYTHONPYCACHEPREFIX")
    if not prefix:
        return
    for folder in CODE_FOLDERS:
        compiled = Path(prefix + str((source / folder).resolve()))
        if compiled.is_dir():
            shutil.copytree(compiled, Path(prefix + str((dest / folder).resolve())), dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("*.pyc.*"))  # a module another process is writing


def session_folder(tmp_path_factory) -> Path:
    """The folder every xdist worker of this test session shares (each worker's basetemp is .../popen-gwN in it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def built_once(tmp_path_factory, name: str, build: Callable[[Path], None]) -> Path:
    """``build(folder)`` run once per test session, whichever xdist worker asks first; every worker gets ``folder``.

    The folder is shared: a test copies it (:func:`copy_of`) before writing to it. The first worker to ask builds
    under an exclusive lock on a file beside it while the others wait (a worker waiting leaves its core to those
    building); a build that failed is removed, so the next to ask builds again and fails with its own message.
    """
    root = session_folder(tmp_path_factory)
    folder, done = root / f"built-once-{name}", root / f"built-once-{name}.done"
    with open(root / f"built-once-{name}.lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            if folder.exists():
                shutil.rmtree(folder)
            try:
                build(folder)
            except BaseException:
                shutil.rmtree(folder, ignore_errors=True)
                raise
            done.touch()
    return folder


def reproduced_clone(tmp_path_factory) -> tuple[Path, str]:
    """A clone of the working tree on which ``dvc repro`` has run once, shared by the whole session: the
    repository, and what that ``dvc repro`` printed (stdout, then stderr). Copy it (:func:`copy_of`) to write."""

    def build(folder: Path) -> None:
        repo = clone_working_tree(folder / "repo")
        result = run(["dvc", "repro"], repo)
        (folder / "repro.txt").write_text(result.stdout + result.stderr, encoding="utf-8")

    folder = built_once(tmp_path_factory, "reproduced", build)
    return folder / "repo", (folder / "repro.txt").read_text(encoding="utf-8")


def wait_for_queue(repo: Path, succeeding: Sequence[str], status: Callable[[], str], timeout: float = 600) -> str:
    """Wait until DVC's queue in ``repo`` has drained (``dvc queue start`` returns at once); its final status.

    Each look at ``dvc queue status`` (``status``) starts DVC, about a second of CPU that the queued experiments
    and the other test worker need: git's experiment refs are looked at every half second instead, and DVC's
    status each second once every experiment of ``succeeding`` has its ref, every 10 s until then (an experiment
    that fails gets no ref: the status tells).
    """
    deadline = time.monotonic() + timeout
    looked = 0.0
    while time.monotonic() < deadline:
        refs = run(["git", "for-each-ref", "--format=%(refname)", "refs/exps"], repo).stdout.split()
        done = all(any(ref.endswith(f"/{name}") for ref in refs) for name in succeeding)
        if time.monotonic() - looked >= (1 if done else 10):
            shown = status()
            if "Queued" not in shown and "Running" not in shown:
                return shown
            looked = time.monotonic()
        time.sleep(0.5)
    raise AssertionError(f"DVC's queue did not drain in {timeout:.0f} s:\n{status()}")


def copy_of(repo: Path, dest: Path) -> Path:
    """A copy of a repository a test already reproduced, its DVC cache and outputs included: a test that needs a
    reproduced pipeline to edit starts from it, not from a fresh clone and a full ``dvc repro`` of its own."""
    shutil.copytree(repo, dest, symlinks=True)
    compiled_too(repo, dest)
    return dest


def repro(
    cwd: Path, *args: str, check: bool = True, **extra_env: str
) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    """Run ``dvc repro`` and return the names of the stages that actually ran their command."""
    result = run(["dvc", "repro", *args], cwd, check=check, **extra_env)
    ran = set(re.findall(r"Running stage '([^']+)'", result.stdout + result.stderr))
    return ran, result


def tree_digest(*roots: Path) -> dict[str, str]:
    """SHA-256 of every file under the given directories, keyed by relative path."""
    digests = {}
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                digests[str(path.relative_to(root.parent))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digests
