"""``groundkit init``: set up groundkit's evaluation pipeline in a team's own git repository.

It writes dvc.yaml (rendered from the stage table, for the installed groundkit: every stage runs
``groundkit stage``), params.yaml (today's defaults, pointing at the team's corpus and judgments),
the pull-request workflow and the script it runs, and the ignore lines for the build outputs; it runs
``dvc init`` where there is no ``.dvc/`` yet. groundkit's own repository renders its copies of the same
files from the same templates (tests/pipeline/test_adopt.py holds them equal).

It never overwrites a file it did not write. ``.groundkit.json`` records the SHA-256 of every file it
wrote; a file that is not listed there, or whose bytes have changed since, is the team's, and is left as
it is (and said so). ``--force`` rewrites the files groundkit wrote that nobody changed since;
``--upgrade`` renders dvc.yaml, the workflow and its script again for the installed groundkit. Every
precondition is checked before anything is written.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path, PurePosixPath

import yaml

from groundkit.artifacts.atomic import atomic_write_text
from groundkit.config import check_path_param
from groundkit.errors import RepositoryError
from groundkit.pipeline import dvc_yaml

RECORD = ".groundkit.json"
"""What ``groundkit init`` wrote, by path and SHA-256: how a second run tells its own files from the team's."""

DVC_YAML = "dvc.yaml"
PARAMS = "params.yaml"
WORKFLOW = ".github/workflows/retrieval-eval.yml"
SCRIPT = "scripts/groundkit-pr-eval.sh"
OWN_SCRIPT = "scripts/pr_eval.sh"
"""groundkit's own repository keeps its pull-request script here (rendered from the same template)."""

RENDERED_FOR_VERSION = (DVC_YAML, WORKFLOW, SCRIPT)
"""The files ``--upgrade`` renders again: they name the groundkit version."""

IGNORES = {
    ".gitignore": ("# groundkit: the pipeline's build outputs (DVC caches them; `dvc repro` restores them)",
                   "/build/", "/dvc_plots/"),
    ".dvcignore": ("# groundkit: Python's bytecode beside your own code, which stages depend on",
                   "__pycache__/", "*.pyc"),
}
"""Lines appended to the ignore files when missing (the comment only with the first line added)."""


def template(name: str) -> str:
    """The text of a template shipped in groundkit/pipeline/templates."""
    return resources.files("groundkit.pipeline").joinpath("templates", name).read_text(encoding="utf-8")


def _fill(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace(f"@@{key}@@", value)
    if "@@" in text:
        raise AssertionError(f"a template placeholder is left unfilled: {text[text.index('@@'):][:40]!r}")
    return text


def yaml_scalar(text: str) -> str:
    """``text`` as a YAML scalar that reads back as exactly ``text``: plain where that is safe, else double-quoted."""
    plain_ok = text == text.strip() and "#" not in text and ": " not in text and not text.startswith(("'", '"'))
    if plain_ok:
        try:
            plain_ok = yaml.safe_load(f"key: {text}\n") == {"key": text}
        except yaml.YAMLError:
            plain_ok = False
    return text if plain_ok else json.dumps(text, ensure_ascii=False)


def params_text(corpus: str, judgments: str, run: str, *, no_answer_shares_words: str = "warn") -> str:
    """params.yaml with today's defaults and comments, pointing at these paths (``error`` for groundkit's own golden
    corpus, written to measure abstention; a team's gets the default, ``warn``)."""
    return _fill(template(PARAMS), {"corpus_root": yaml_scalar(corpus), "judgments": yaml_scalar(judgments),
                                    "run": yaml_scalar(run), "no_answer_shares_words": no_answer_shares_words})


def workflow_text(install: str, script: str) -> str:
    """The pull-request workflow: install groundkit with ``install``, then run ``script``."""
    return _fill(template("retrieval-eval.yml"), {"install": install, "script": script})


def script_text(script: str) -> str:
    """The pull-request script, as it names itself at ``script``."""
    return _fill(template("pr_eval.sh"), {"script": script})


def install_command(version: str) -> str:
    """How the workflow installs groundkit in a team's repository."""
    return f'pip install "groundkit=={version}"'


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class Outcome:
    """What init did, file by file, for the summary it prints."""

    lines: list[tuple[str, str, str]] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)

    def add(self, verb: str, path: str, note: str = "") -> None:
        self.lines.append((verb, path, note))

    @property
    def rendered_again(self) -> bool:
        """Whether a file that names the groundkit version (dvc.yaml, the workflow, its script) was written."""
        return any(verb in ("wrote", "rewrote") and path in RENDERED_FOR_VERSION for verb, path, _ in self.lines)


@dataclass(frozen=True)
class Request:
    """What the person running ``groundkit init`` asked for."""

    corpus: str | None = None
    judgments: str | None = None
    code: tuple[str, ...] = ()
    force: bool = False
    upgrade: bool = False


def init(root: Path, request: Request, version: str) -> Outcome:
    """Set up (or upgrade) the groundkit pipeline in the git repository at ``root``; see the module docstring.

    Raises:
        RepositoryError: ``root`` is not the top of a git work tree, a path is unusable, a file groundkit
            must write is someone else's, or ``--upgrade`` finds no earlier init. Nothing is written then.
    """
    root = root.resolve()
    _check_git_root(root)
    record = _read_record(root)
    if request.upgrade and record is None:
        raise RepositoryError(root / RECORD, "does not exist, so groundkit was never set up here",
                              fix="run `groundkit init --corpus PATH --judgments PATH` first")
    corpus = _repository_path(root, request.corpus, "--corpus") if request.corpus else None
    judgments = _repository_path(root, request.judgments, "--judgments") if request.judgments else None
    if record is not None:
        corpus = corpus or record["corpus"]
        judgments = judgments or record["judgments"]
    if corpus is None or judgments is None:
        missing = "--corpus" if corpus is None else "--judgments"
        raise RepositoryError(missing, "is required the first time groundkit init runs in a repository",
                              fix="groundkit init --corpus PATH/TO/DOCUMENTS --judgments PATH/TO/judgments.jsonl")
    if not (root / corpus).is_dir():
        raise RepositoryError(corpus, "is not a folder of this repository", fix="name the folder holding your "
                              "documents, relative to the repository root (--corpus)")
    code = _code(root, request, record)
    # A params.yaml that names machine judgments gets stages that read them (an upgrade re-renders for it).
    labels = dvc_yaml.for_params(root / PARAMS, root) if request.upgrade else None
    files = {
        DVC_YAML: dvc_yaml.render(layout=dvc_yaml.installed(version, code, labels)),
        PARAMS: params_text(corpus, judgments, run=judgments),
        WORKFLOW: workflow_text(install_command(version), SCRIPT),
        SCRIPT: script_text(SCRIPT),
    }
    written = dict(record["files"]) if record is not None else {}
    plan = {path: _decide(root, path, text, written.get(path), request) for path, text in files.items()}
    for path in (DVC_YAML, PARAMS):
        verb, note = plan[path]
        if verb == "refuse":
            raise RepositoryError(root / path, note, fix=_REFUSAL_FIX[path])
    _check_writable(root, [path for path, (verb, _) in plan.items() if verb in ("write", "rewrite")])
    outcome = Outcome()
    if not (root / ".dvc").is_dir():
        _dvc_init(root)
        outcome.add("ran", "dvc init", "DVC's folder .dvc/ and .dvcignore")
    for path, text in files.items():
        verb, note = plan[path]
        if verb in ("write", "rewrite"):
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(target, text)
            if path == SCRIPT:
                target.chmod(target.stat().st_mode | 0o111)
            written[path] = sha256_text(text)
            outcome.add("wrote" if verb == "write" else "rewrote", path, _ABOUT[path])
        else:
            outcome.add(verb, path, note)
            if verb == "up to date":
                written[path] = sha256_text(text)
            if verb == "left" and request.upgrade and path in RENDERED_FOR_VERSION:
                outcome.refused.append(path)
    for name, lines in IGNORES.items():
        added = _ignore_lines(root / name, lines)
        if added:
            outcome.add("added to", name, ", ".join(added))
    _write_record(root, {"corpus": corpus, "judgments": judgments, "code": list(code), "files": written,
                         "groundkit": version})
    outcome.add("wrote" if record is None else "updated", RECORD,
                "what init wrote, by SHA-256: how the next init tells its files from yours (commit it)")
    return outcome


_ABOUT = {
    DVC_YAML: "the pipeline: each stage runs `groundkit stage NAME`",
    PARAMS: "today's defaults, pointing at your corpus and judgments",
    WORKFLOW: "the pull-request check: reproduce, compare with the base branch, comment",
    SCRIPT: "what the workflow runs (and you can, before pushing)",
}

_REFUSAL_FIX = {
    DVC_YAML: "groundkit's stages need a dvc.yaml of their own: move your stages into a dvc.yaml in a subfolder "
              "(DVC reads those too), or run groundkit init in a repository without one",
    PARAMS: "groundkit's stages read params.yaml strictly (an unknown section is an error): move your own params "
            "into another file (a dvc.yaml can name it) and run groundkit init again",
}


def _decide(root: Path, path: str, text: str, recorded: str | None, request: Request) -> tuple[str, str]:
    """What to do with ``path``: (verb, note). Verbs: write, rewrite, up to date, kept, left, refuse."""
    target = root / path
    if not target.exists():
        return "write", ""
    if not target.is_file():
        return "refuse" if path in (DVC_YAML, PARAMS) else "left", "is not a file"
    current = target.read_bytes()
    if current == text.encode("utf-8"):
        return "up to date", ""
    mine = recorded is not None and hashlib.sha256(current).hexdigest() == recorded
    if not mine:
        if recorded is None:
            return ("refuse" if path in (DVC_YAML, PARAMS) else "left"), "exists and groundkit did not write it"
        return "left", "edited since groundkit wrote it: left as it is"
    allowed = request.force or (request.upgrade and path in RENDERED_FOR_VERSION)
    if allowed:
        return "rewrite", ""
    how = "--upgrade" if path in RENDERED_FOR_VERSION else "--force"
    return "kept", f"groundkit wrote it and nobody changed it; `groundkit init {how}` renders it again"


def _check_writable(root: Path, files: Iterable[str]) -> None:
    """Refuse, before anything is written, a file where a folder must be (or the reverse) on any path init writes:
    ``files``, the ignore files, the record and DVC's folder. Found later, it left half a setup behind."""
    needed = {".dvc": "a folder", RECORD: "a file", **dict.fromkeys(IGNORES, "a file")}
    for path in files:
        needed[path] = "a file"
        for parent in PurePosixPath(path).parents:
            if str(parent) != ".":
                needed.setdefault(str(parent), "a folder")
    for path, kind in sorted(needed.items()):
        target = root / path
        if not target.exists() and not target.is_symlink():
            continue
        if kind == "a folder" and not target.is_dir():
            inside = ", ".join(sorted(f for f in files if f.startswith(path + "/"))) or "dvc init's files"
            raise RepositoryError(target, f"is a file, where groundkit init needs a folder (for {inside})",
                                  fix="rename or move that file, then run groundkit init again; nothing was written")
        if kind == "a file" and not target.is_file():
            raise RepositoryError(target, "is not a file, where groundkit init writes one",
                                  fix="rename or move it, then run groundkit init again; nothing was written")


def _check_git_root(root: Path) -> None:
    try:
        shown = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=root, capture_output=True, text=True)
    except FileNotFoundError:
        raise RepositoryError(root, "cannot be checked: git is not installed",
                              fix="install git; groundkit's pipeline lives in a git repository") from None
    if shown.returncode != 0:
        raise RepositoryError(root, "is not inside a git repository",
                              fix="run groundkit init at the root of your repository (git init first for a new one)")
    top = Path(shown.stdout.strip()).resolve()
    if top != root:
        raise RepositoryError(root, f"is not the root of its git repository ({top})",
                              fix=f"run groundkit init in {top}: dvc.yaml and params.yaml live at the root")


def _repository_path(root: Path, given: str, option: str) -> str:
    """``given`` (absolute, or relative to ``root``) as a POSIX path relative to ``root``, which it must lie inside."""
    path = Path(given)
    resolved = (path if path.is_absolute() else root / path).resolve()
    if not resolved.is_relative_to(root):
        raise RepositoryError(option, f"{given!r} lies outside the repository {root}",
                              fix="keep the corpus and the judgments inside the repository (commit them, or track "
                                  "a large corpus with `dvc add`)")
    relative = resolved.relative_to(root)
    if relative == Path("."):
        raise RepositoryError(option, f"{given!r} is the repository itself",
                              fix="name a folder (or file) inside it")
    posix = PurePosixPath(*relative.parts).as_posix()
    problem = check_path_param(posix)
    if problem is not None:
        raise RepositoryError(option, f"{given!r} {problem[0]}", fix=problem[1])
    return posix


def _code(root: Path, request: Request, record: dict | None) -> tuple[str, ...]:
    """The repository's own code the stages importing it depend on: recorded, given with --code, and inferred."""
    code = list(record["code"]) if record is not None else []
    for given in request.code:
        path = _repository_path(root, given, "--code")
        if not (root / path).exists():
            raise RepositoryError("--code", f"{given!r} does not exist", fix="name a file or folder of your code")
        code.append(path)
    code += _plugin_code(root)
    return tuple(sorted(set(code)))


def _plugin_code(root: Path) -> list[str]:
    """The files or package folders in ``root`` that params.yaml's ``python:`` retriever and chunker are imported
    from (the stage table names the keys: ``Stage.plugin``); none when params.yaml does not validate."""
    import importlib.machinery

    from groundkit.config import load_params
    from groundkit.errors import GroundkitError
    from groundkit.pipeline.entry import plugin_module
    from groundkit.pipeline.stages import STAGES

    try:
        params = load_params(root / PARAMS) if (root / PARAMS).is_file() else None
    except GroundkitError:
        return []
    found: list[str] = []
    for key in (stage.plugin for stage in STAGES if stage.plugin and params is not None):
        plugin = plugin_module(params, key)
        top = plugin[0].split(".")[0] if plugin else ""
        spec = importlib.machinery.PathFinder.find_spec(top, [str(root)]) if top.isidentifier() else None
        if spec is None:
            continue
        folders = list(spec.submodule_search_locations or [])
        where = Path(folders[0] if folders else (spec.origin or "")).resolve()
        if where.is_relative_to(root):
            found.append(where.relative_to(root).as_posix())
    return found


def _read_record(root: Path) -> dict | None:
    path = root / RECORD
    if not path.exists():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        valid = (isinstance(record, dict) and isinstance(record.get("files"), dict)
                 and all(isinstance(k, str) and isinstance(v, str) for k, v in record["files"].items())
                 and isinstance(record.get("code"), list) and all(isinstance(c, str) for c in record["code"])
                 and isinstance(record.get("corpus"), str) and isinstance(record.get("judgments"), str))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        valid = False
    if not valid:
        raise RepositoryError(path, "is not the record groundkit init writes (what it wrote, by SHA-256)",
                              fix=f"restore it from git (git checkout -- {RECORD})")
    return record


def _write_record(root: Path, record: dict) -> None:
    atomic_write_text(root / RECORD, json.dumps(record, indent=2, sort_keys=True) + "\n")


def _ignore_lines(path: Path, lines: Sequence[str]) -> list[str]:
    """Append the entries of ``lines`` missing from the ignore file ``path`` (created if need be); return them."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    present = {line.strip() for line in text.splitlines()}
    comment, *entries = lines
    missing = [entry for entry in entries if entry not in present]
    if not missing:
        return []
    block = "\n".join([comment, *missing]) + "\n"
    separator = "" if not text else ("\n" if text.endswith("\n") else "\n\n")
    atomic_write_text(path, text + separator + block)
    return missing


def _dvc_init(root: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "dvc", "init", "--quiet"], cwd=root, capture_output=True, text=True)
    if done.returncode != 0:
        raise RepositoryError(root, f"`dvc init` failed: {(done.stderr or done.stdout).strip()}",
                              fix="run `dvc init` yourself, then groundkit init again")


def default_branch(root: Path) -> str:
    """The branch pull requests go to: the remote's default (``origin/HEAD``), else the branch checked out (what a
    fresh ``git init`` made: ``master`` or ``init.defaultBranch``), else ``main``."""
    for ref in ("refs/remotes/origin/HEAD", "HEAD"):
        found = subprocess.run(["git", "symbolic-ref", "--quiet", "--short", ref], cwd=root, capture_output=True,
                               text=True, check=False)
        if found.returncode == 0 and found.stdout.strip():
            return found.stdout.strip().removeprefix("origin/")
    return "main"


def next_steps(outcome: Outcome, request: Request, fresh: bool, evaluated: bool = False,
               branch: str = "main") -> list[str]:
    """The commands to run after this init, with what each does (``evaluated``: a dvc.lock is there already;
    ``branch``: the base branch of pull requests, :func:`default_branch`)."""
    if request.upgrade:
        if not outcome.rendered_again:
            return []
        return ["dvc repro                      # every stage runs again with the installed groundkit",
                "git add -A && git commit -m 'groundkit upgraded'   # dvc.yaml, dvc.lock, metrics/"]
    what = ("re-runs what this init changed, nothing if nothing did" if evaluated
            else "the first evaluation: metrics/metrics.json, dvc.lock")
    steps = [f"dvc repro                      # {what}"]
    if fresh:
        steps.append("git add .dvc .dvcignore .gitignore .groundkit.json dvc.yaml dvc.lock params.yaml metrics "
                     f"{WORKFLOW} {SCRIPT} && git commit -m 'Evaluate retrieval with groundkit'")
    steps += ["dvc exp run -S chunk.size=400   # an experiment: compare it with `groundkit compare HEAD --experiments`",
              f"{SCRIPT} {branch}   # the pull-request check, against the base branch"]
    return steps


def summary_lines(outcome: Outcome) -> Iterable[str]:
    width = max((len(path) for _, path, _ in outcome.lines), default=0)
    for verb, path, note in outcome.lines:
        yield f"  {verb:<10} {path:<{width}}  {note}".rstrip()
