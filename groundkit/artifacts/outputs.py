"""Where a command may write: checking its ``--out``, working in scratch space, moving finished results in.

The rules every command with an ``--out`` follows:

* ``--out`` may not be one of the command's inputs, lie inside one (the
  corpus folder), or contain one.
* A folder ``--out`` is written only if it is new, empty, or was written by a
  command of the same kind: groundkit leaves a ``.groundkit-output`` file in
  every output folder, naming the command. Re-using such a folder takes
  ``force``, which replaces that command's own artifacts and keeps every other
  file in it. An artifact folder a user may add files to (an import's
  ``corpus/``) is replaced only when it holds nothing the new artifacts lack:
  otherwise the command refuses and names those files, since replacing the folder
  would delete them.
* A file ``--out`` (an audit report, a sweep table) may replace only a file the
  same command wrote, recognised by its content, and only with ``force``.

Work happens in a scratch folder ``.groundkit-<command>-<pid>-<hex>`` (with a
``.groundkit-scratch`` file inside) on the file system of ``--out``, so that
finished artifacts are renamed, not copied, into place, and only once every
step succeeded. A scratch folder whose process is gone (SIGKILL, a crash of
the machine) is removed by the next command that works in the same folder;
nothing else is ever removed.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import socket
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from groundkit.artifacts.atomic import atomic_write_text, new_directory, relocated, synced_later
from groundkit.artifacts.lines import dumps_json
from groundkit.errors import OutputError

MARKER = ".groundkit-output"
SCRATCH_MARKER = ".groundkit-scratch"
_FORMAT = "groundkit-output/1"
_SCRATCH_NAME = re.compile(r"^\.groundkit-[a-z-]+-(\d+)-[0-9a-f]{8}$")
# Commands whose output folders hold the same artifacts; --force lets one replace another's.
_KINDS = {"run": "run", "score-run": "run", "score-trec": "score-trec", "import-beir": "import-beir",
          "import-squad": "import-squad", "pool": "pool", "sweep": "sweep"}
_FIX_OTHER = "choose a new or empty --out folder"


def _refuse_inputs(out: Path, inputs: Mapping[str, str | Path | None]) -> None:
    target = out.resolve()
    for what, given in inputs.items():
        if given is None or given == "":
            continue
        source = Path(given).resolve()
        if target == source:
            problem = f"--out is {what}, an input of this command; writing there would destroy it"
        elif target in source.parents:
            problem = f"--out contains {what} ({given}), an input of this command"
        elif source in target.parents:
            problem = f"--out lies inside {what} ({given}), an input of this command"
        else:
            continue
        raise OutputError(out, problem, fix="choose an --out outside every input, e.g. runs/NAME")


def _marker_command(folder: Path) -> str | None:
    """The command named by ``folder``'s marker, or None if there is no readable groundkit marker."""
    try:
        marker = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(marker, dict) or marker.get("format") != _FORMAT or marker.get("command") not in _KINDS:
        return None
    return str(marker["command"])


def _scratch_owner(entry: Path) -> int | None:
    """The pid of the process that made scratch folder ``entry`` on this machine, or None if it is not scratch."""
    match = _SCRATCH_NAME.match(entry.name)
    if match is None or entry.is_symlink() or not entry.is_dir():
        return None
    try:
        owner = json.loads((entry / SCRATCH_MARKER).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(owner, dict) or owner.get("pid") != int(match[1]) or owner.get("host") != socket.gethostname():
        return None
    return int(match[1])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


def sweep_scratch(folder: Path) -> list[Path]:
    """Remove the scratch folders in ``folder`` whose process is gone; return them."""
    removed = []
    with contextlib.suppress(OSError):
        for entry in sorted(folder.iterdir()):
            pid = _scratch_owner(entry)
            if pid is not None and pid != os.getpid() and not _alive(pid):
                shutil.rmtree(entry, ignore_errors=True)
                removed.append(entry)
    return removed


def check_folder(out: Path, *, command: str, inputs: Mapping[str, str | Path | None], force: bool) -> bool:
    """Check that ``command`` may write into folder ``out``; return whether ``out`` exists already.

    Raises:
        OutputError: naming ``out``, what is wrong and what to do instead.
    """
    _refuse_inputs(out, inputs)
    if out.is_symlink() and not out.exists():
        raise OutputError(out, "--out is a broken symbolic link", fix=_FIX_OTHER)
    if not out.exists():
        return False
    if not out.is_dir():
        raise OutputError(out, "--out exists and is not a folder", fix=_FIX_OTHER)
    if not [entry for entry in out.iterdir() if _scratch_owner(entry) is None]:
        return True
    previous = _marker_command(out)
    if previous is None:
        raise OutputError(
            out, f"--out is a folder that is not empty and was not written by groundkit (it has no {MARKER} "
            "file); groundkit does not write over files it did not create", fix=_FIX_OTHER)
    if _KINDS[previous] != _KINDS[command]:
        raise OutputError(out, f"--out holds the output of `groundkit {previous}`, not of {command}",
                          fix=_FIX_OTHER)
    if not force:
        raise OutputError(out, f"--out already holds the output of an earlier `groundkit {previous}`",
                          fix="pass --force to replace its artifacts (other files in the folder are kept), or "
                          "choose another --out folder")
    return True


def check_file(
    out: Path, *, command: str, what: str, inputs: Mapping[str, str | Path | None], force: bool,
    recognise: Callable[[Path], bool],
) -> None:
    """Check that ``command`` may write file ``out``: new, or ``what`` it wrote before (and ``force``).

    Raises:
        OutputError: naming ``out``, what is wrong and what to do instead.
    """
    _refuse_inputs(out, inputs)
    if out.is_symlink() and not out.exists():
        raise OutputError(out, "--out is a broken symbolic link", fix="choose another file name")
    if not out.exists():
        return
    if out.is_dir():
        raise OutputError(out, "--out is a folder; it must name a file", fix="give a file name, e.g. DIR/NAME")
    if not recognise(out):
        raise OutputError(out, f"--out exists and is not {what} written by `groundkit {command}`; groundkit does "
                          "not overwrite files it did not create", fix="choose another file name")
    if not force:
        raise OutputError(out, f"--out already holds {what} from an earlier `groundkit {command}`",
                          fix="pass --force to replace it, or choose another file name")


def _make_folder(folder: Path) -> list[Path]:
    """Create ``folder`` and its missing parents; return those created, deepest first."""
    missing = [p for p in (folder, *folder.parents) if not p.exists()]
    for ancestor in (folder, *folder.parents):
        if ancestor.exists() and not ancestor.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(ancestor))
    folder.mkdir(parents=True, exist_ok=True)
    return missing


@contextlib.contextmanager
def output_folder(
    out: str | Path, *, command: str, artifacts: Sequence[str], inputs: Mapping[str, str | Path | None],
    force: bool = False, open_folders: Sequence[str] = (),
) -> Iterator[Path]:
    """Yield a scratch folder to write ``artifacts`` into; move them into ``out`` if the block succeeds.

    On any failure (an exception, SIGTERM turned into one by the guard) the scratch folder and any parent
    folders created for it are removed and ``out`` is left as it was. An ``OSError`` about a scratch file is
    re-raised naming the path in ``out`` it stood for.

    ``open_folders`` are those of ``artifacts`` that are folders a user may add files to (an imported corpus).

    Raises:
        OutputError: if ``command`` may not write into ``out`` (see the module docstring), or one of
            ``open_folders`` there holds a file the new artifacts do not (nothing is replaced then).
    """
    out = Path(out)
    existed = check_folder(out, command=command, inputs=inputs, force=force)
    # Inside an existing --out the scratch is on its file system even when --out is a mount point.
    home = out if existed else out.parent
    created = _make_folder(home)
    sweep_scratch(out.parent)
    if existed:
        sweep_scratch(out)
    scratch = None
    try:
        scratch = new_directory(home, f".groundkit-{command}-{os.getpid()}-")
        owner = {"host": socket.gethostname(), "pid": os.getpid()}
        atomic_write_text(scratch / SCRATCH_MARKER, dumps_json(owner))
        with synced_later(scratch) as sync:
            yield scratch
            sync()  # every artifact durable before any is published
        _commit(scratch, out, existed, artifacts, command, open_folders)
    except BaseException as exc:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
        for folder in created:
            try:
                folder.rmdir()
            except OSError:
                break
        if isinstance(exc, OSError) and scratch is not None:
            raise relocated(exc, scratch, out) from exc
        raise
    shutil.rmtree(scratch, ignore_errors=True)


def _files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() or p.is_symlink()}


def _refuse_foreign_files(scratch: Path, out: Path, open_folders: Sequence[str]) -> None:
    """Refuse to replace a folder of ``out`` that holds files its new version (in ``scratch``) does not: a user's
    own, or an earlier import's of other data; either way replacing the folder would delete them unasked."""
    for name in open_folders:
        old = out / name
        if not old.is_dir() or old.is_symlink():
            continue
        foreign = sorted(_files(old) - (_files(scratch / name) if (scratch / name).is_dir() else set()))
        if foreign:
            shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
            raise OutputError(old, f"holds {len(foreign)} file{'s' if len(foreign) > 1 else ''} this import does "
                              f"not write: {shown}; --force replaces the folder whole and would delete them",
                              fix=f"move them out of {old} (anywhere else in --out is kept) or delete them, then run "
                                  "again; nothing was replaced")


def _commit(scratch: Path, out: Path, existed: bool, artifacts: Sequence[str], command: str,
            open_folders: Sequence[str] = ()) -> None:
    marker = dumps_json({"command": command, "format": _FORMAT})
    if not existed:
        # Whatever a step left beside its artifacts stays out of --out, as it does when replacing with --force.
        for entry in scratch.iterdir():
            if entry.name in {*artifacts, SCRATCH_MARKER}:
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        atomic_write_text(scratch / MARKER, marker)
        try:
            os.rename(scratch, out)
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
            raise OutputError(out, f"was created by another command while this `groundkit {command}` ran (two "
                              "commands writing one --out at once); nothing of this run was written into it",
                              fix="run again (--force replaces what the other command wrote), or choose another "
                              "--out") from None
        (out / SCRATCH_MARKER).unlink()
        return
    with _locked(out):
        _refuse_foreign_files(scratch, out, open_folders)
        atomic_write_text(out / MARKER, marker)
        # Old artifacts go into the scratch folder, which is removed afterwards: a rename each, on one file system.
        retired = scratch / ".retired"
        retired.mkdir()
        for name in artifacts:
            target = out / name
            if target.exists() or target.is_symlink():
                os.replace(target, retired / name)
            os.replace(scratch / name, target)


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``folder`` itself for the block.

    Replacing a folder's artifacts is a rename each: two commands doing it at once (two ``--force`` runs
    into one --out) would leave a mix, metrics of one run beside the run file of the other, each sealed and
    valid. Under the lock one command's renames all come before the other's, so the folder holds the whole
    of whichever finished last. The lock goes with the open descriptor, so a killed command never leaves it.
    """
    import fcntl

    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
