"""Pipeline overhead: `dvc repro -f` of groundkit's stages against as many trivial Python stages under DVC.

    python benchmarks/bench_pipeline.py [--rev REV] [--repeats 3]

Two temporary git + DVC repositories are measured in the same run, alternately:

- groundkit: the working tree (or ``git archive REV`` with ``--rev``), its
  dvc.yaml, params and committed corpus. Stages import groundkit from that
  copy (PYTHONPATH), not from the installed package.
- floor: groundkit's own dvc.yaml with each stage's command replaced by a ``python -c`` that only writes
  the stage's outputs (a file, or a folder of one file where dvc.lock records a folder): the same deps
  (the groundkit and stages folders included, which DVC hashes for every stage), params, outputs and
  caching, so that the ratio is what groundkit's commands cost over what DVC costs for this pipeline.
- the former floor, shown for comparison with earlier records: one ``python -c`` stage per groundkit
  stage, written by hand, that copies its first dep to one output, with the same dependency chain on
  the corpus and judgments and the same params sections, but not the code folders as deps nor the
  outputs groundkit writes.

The ratio groundkit / floor is what groundkit's own work and imports add to
the unavoidable cost of DVC plus one interpreter start-up per stage. Wall time and CPU
time (user + system of DVC and all its stages) are both shown: on a shared
machine the CPU time is the steadier of the two. Then each
stage's dvc.yaml command is run once more under ``python -X importtime`` to
show what it imports.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO, print_machine

# The same chain as dvc.yaml: each stage's deps and outs, nothing else.
COPY = ("import os, sys; os.makedirs(os.path.dirname(sys.argv[2]), exist_ok=True); "
        "open(sys.argv[2], 'w').write(open(sys.argv[1]).read())")
LAST = ("import os, sys; os.makedirs(os.path.dirname(sys.argv[2]), exist_ok=True); "
        "open(sys.argv[1]).read(); open(sys.argv[2], 'w').write('{}')")
FLOOR_DVC_YAML = f"""stages:
  check-inputs:
    cmd: python -c "{COPY}" params.yaml build/inputs.json
    params: [corpus, retrieve.run]
    outs:
      - build/inputs.json:
          cache: false
  validate-judgments:
    cmd: python -c "{COPY}" evals/judgments.jsonl build/validation.json
    deps: [evals/judgments.jsonl, evals/corpus, build/inputs.json]
    params: [corpus, audit]
    outs: [build/validation.json]
  resolve-spans:
    cmd: python -c "{COPY}" build/validation.json build/documents.jsonl
    deps: [build/validation.json, evals/judgments.jsonl, evals/corpus]
    params: [corpus]
    outs: [build/documents.jsonl]
  chunk:
    cmd: python -c "{COPY}" build/documents.jsonl build/chunks.jsonl
    deps: [build/documents.jsonl]
    params: [chunk]
    outs: [build/chunks.jsonl]
  index:
    cmd: python -c "{COPY}" build/chunks.jsonl build/index.json
    deps: [build/chunks.jsonl]
    params: [bm25]
    outs: [build/index.json]
  embed:
    cmd: python -c "{COPY}" build/chunks.jsonl build/embeddings.json
    deps: [build/chunks.jsonl]
    params: [retrieve.retriever, dense]
    outs: [build/embeddings.json]
  retrieve:
    cmd: python -c "{COPY}" build/index.json build/run.trec
    deps: [build/index.json, build/embeddings.json, build/documents.jsonl]
    params: [retrieve]
    outs: [build/run.trec]
  score:
    cmd: python -c "{LAST}" build/run.trec metrics/metrics.json
    deps: [build/run.trec, build/chunks.jsonl, build/validation.json]
    params: [chunk, bm25, retrieve, score]
    metrics:
      - metrics/metrics.json:
          cache: false
  report:
    cmd: python -c "{COPY}" metrics/metrics.json metrics/report.html
    deps: [metrics/metrics.json, build/run.trec, build/chunks.jsonl, build/documents.jsonl]
    outs: [metrics/report.html]
"""


def _env(root: Path) -> dict[str, str]:
    # Python writes bytecode by default, and a user's stages import groundkit from its cached bytecode
    # from the second run on; a sandbox that turns that off would charge groundkit a compile per stage.
    return {
        **{key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"},
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(root),
        "DVC_NO_ANALYTICS": "1",
        "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@groundkit.invalid",
        "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@groundkit.invalid",
    }


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(cmd, cwd=cwd, env=_env(cwd), capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.exit(f"error: {' '.join(cmd)} failed in {cwd}:\n{out.stdout}\n{out.stderr}")
    return out


def _commit(root: Path) -> None:
    _run(["git", "init", "-q", "-b", "main"], root)
    _run(["git", "add", "-A"], root)
    _run(["git", "commit", "-q", "-m", "bench"], root)


def groundkit_repo(dest: Path, rev: str | None) -> Path:
    """A git + DVC repository holding groundkit's tree (working tree, or ``rev``)."""
    dest.mkdir(parents=True)
    if rev:
        archive = subprocess.run(["git", "archive", rev], cwd=REPO, capture_output=True, check=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(dest, filter="data")
    else:
        listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                                cwd=REPO, capture_output=True, check=True).stdout.decode().split("\0")
        for rel in filter(None, listed):
            if (REPO / rel).is_file():
                (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(REPO / rel, dest / rel)
    _commit(dest)
    return dest


# A stage of the floor: each argument an output to write, a folder (one file in it) when it ends with "/".
WRITE_OUTS = ("import os, sys; files = [p + 'f' if p.endswith('/') else p for p in sys.argv[1:]]; "
              "[os.makedirs(os.path.dirname(f) or '.', exist_ok=True) or open(f, 'w').write('{}') for f in files]")


def same_floor_repo(dest: Path, ours: Path) -> Path:
    """groundkit's repository ``ours`` with every dvc.yaml command replaced by one writing the stage's outputs."""
    shutil.copytree(ours, dest, symlinks=True, ignore=shutil.ignore_patterns(".git", "build", "tmp", "cache"))
    table = yaml.safe_load((dest / "dvc.yaml").read_text(encoding="utf-8"))
    lock = yaml.safe_load((REPO / "dvc.lock").read_text(encoding="utf-8"))["stages"]
    folders = {out["path"] for stage in lock.values() for out in stage.get("outs", [])
               if str(out.get("md5", "")).endswith(".dir")}
    for stage in table["stages"].values():
        outs = [next(iter(o)) if isinstance(o, dict) else o
                for key in ("outs", "metrics", "plots") for o in stage.get(key, [])]
        args = " ".join(shlex.quote(o + "/" if o in folders else o) for o in outs)
        stage["cmd"] = f"python -c {shlex.quote(WRITE_OUTS)} {args}"
    (dest / "dvc.yaml").write_text(yaml.safe_dump(table, sort_keys=False), encoding="utf-8")
    _commit(dest)
    return dest


def floor_repo(dest: Path) -> Path:
    """Trivial stages with groundkit's dependency chain (check-inputs included), corpus, judgments and params."""
    dest.mkdir(parents=True)
    shutil.copytree(REPO / "evals", dest / "evals")
    shutil.copy2(REPO / "params.yaml", dest / "params.yaml")
    shutil.copy2(REPO / ".dvcignore", dest / ".dvcignore")
    shutil.copytree(REPO / ".dvc", dest / ".dvc", ignore=shutil.ignore_patterns("cache", "tmp"))
    (dest / "dvc.yaml").write_text(FLOOR_DVC_YAML, encoding="utf-8")
    (dest / "metrics").mkdir()
    (dest / ".gitignore").write_text("/build/\n", encoding="utf-8")
    _commit(dest)
    return dest


def timed_repro(root: Path) -> tuple[float, float]:
    """Wall-clock and CPU seconds (user + system, DVC and every stage it ran) of one ``dvc repro -f``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = _run(["dvc", "repro", "-f"], root)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    ran = re.findall(r"Running stage '([^']+)'", out.stdout + out.stderr)
    expected = len(yaml.safe_load((root / "dvc.yaml").read_text(encoding="utf-8"))["stages"])
    if len(ran) != expected:
        sys.exit(f"error: expected {expected} stages to run in {root}, saw {ran}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def _stage_commands(root: Path) -> dict[str, str]:
    """Each stage's command from dvc.yaml, with ${...} filled in from params.yaml."""
    import yaml

    stages = yaml.safe_load((root / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    params = yaml.safe_load((root / "params.yaml").read_text(encoding="utf-8"))

    def value(match: re.Match[str]) -> str:
        node = params
        for part in match.group(1).split("."):
            node = node[part]
        return str(node)

    return {name: re.sub(r"\$\{([^}]+)\}", value, stage["cmd"]) for name, stage in stages.items()}


def _cpu(cmd: str | list[str], root: Path, repeats: int) -> float:
    """CPU seconds (user + system) of the fastest of ``repeats`` runs of ``cmd`` in ``root``."""
    best = float("inf")
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = subprocess.run(cmd, shell=isinstance(cmd, str), cwd=root, env=_env(root), capture_output=True,
                             text=True, check=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if out.returncode != 0:
            sys.exit(f"error: {cmd} failed:\n{out.stderr}")
        best = min(best, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    return best


def stages_cpu(root: Path, repeats: int) -> dict[str, float]:
    """CPU seconds of each stage command run directly, without DVC (each one's fastest run)."""
    return {name: _cpu(cmd, root, repeats) for name, cmd in _stage_commands(root).items()}


# What every groundkit stage imports before it reads anything: params are validated by pydantic models
# (a house rule) read from YAML.
LIBRARIES = "import yaml, pydantic; from pydantic import BaseModel, ConfigDict, Field, model_validator"


def stage_parts(root: Path, repeats: int) -> dict[str, tuple[float, float, float]]:
    """Per stage, CPU seconds of: an interpreter that imports pydantic and yaml, and nothing else; one
    that imports what the stage's process imports (its entry point and step module) but runs nothing;
    and a bare interpreter (``python -c pass``, which is what a floor stage costs)."""
    bare = _cpu([sys.executable, "-c", "pass"], root, repeats)
    libraries = _cpu([sys.executable, "-c", LIBRARIES], root, repeats)
    table = yaml.safe_load((root / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    parts = {}
    for name in table:
        probe = ("import importlib, sys; sys.path.insert(0, 'stages'); import _own_tree, stage; "
                 "from groundkit.pipeline.stages import BY_NAME; "
                 f"importlib.import_module(BY_NAME[{name!r}].step)")
        parts[name] = (libraries, _cpu([sys.executable, "-c", probe], root, repeats), bare)
    return parts


def import_times(root: Path) -> list[tuple[str, float, str]]:
    """Per stage, run for real under ``-X importtime``: total import time and its top packages (self time)."""
    rows = []
    for name, cmd in _stage_commands(root).items():
        args = shlex.split(cmd)  # dvc.yaml quotes its path arguments for the shell
        assert args[0] == "python", cmd
        out = subprocess.run([sys.executable, "-X", "importtime", *args[1:]], cwd=root, env=_env(root),
                             capture_output=True, text=True, check=False)
        if out.returncode != 0:
            sys.exit(f"error: {cmd} failed:\n{out.stderr}")
        total = 0
        by_package: dict[str, int] = {}
        for line in out.stderr.splitlines():
            match = re.match(r"import time:\s+(\d+) \|\s+\d+ \| (\s*)(\S+)", line)
            if not match:
                continue
            self_us, package = int(match.group(1)), match.group(3).split(".")[0]
            total += self_us
            by_package[package] = by_package.get(package, 0) + self_us
        top = sorted(by_package.items(), key=lambda kv: -kv[1])[:5]
        rows.append((name, total / 1000, ", ".join(f"{k} {v / 1000:.0f}" for k, v in top)))
    return rows


def account(ours: dict[str, float], floor: dict[str, float], parts: dict[str, tuple[float, float, float]],
            dvc_excess: float, floor_cpu: float) -> None:
    """Where each 0.1x of the CPU ratio above 1.0x goes: per stage and for DVC, in units of the floor's CPU.

    A stage's excess over its floor stage splits into: pydantic and yaml (imported by every stage to read
    and validate params), the rest of its imports (groundkit's modules and what they import, numpy in
    the stages that compute), and its work (reading, computing, writing: the command minus its imports).
    """
    print("\nWhere the ratio above 1.0x goes (CPU s, and x = s / the floor's CPU of "
          f"{floor_cpu:.2f} s):")
    print("| part | pydantic + yaml | other imports | work | excess s | x |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    total = 0.0
    for name, full in ours.items():
        libraries, imported, bare = parts[name]
        excess = full - floor[name]
        pyd = min(libraries, imported) - bare  # check-inputs imports neither
        other = max(imported - libraries, 0.0)
        work = full - imported
        total += excess
        print(f"| stage {name} | {pyd:.3f} | {other:.3f} | {work:.3f} | {excess:.3f} | {excess / floor_cpu:.2f}x |")
    total += dvc_excess
    print(f"| DVC's own share above the floor's | | | | {dvc_excess:.3f} | {dvc_excess / floor_cpu:.2f}x |")
    print(f"| total above 1.0x | | | | {total:.3f} | {total / floor_cpu:.2f}x |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rev", default=None, help="measure this git revision instead of the working tree")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print_machine()
    with tempfile.TemporaryDirectory(prefix="groundkit-bench-pipeline-") as tmp:
        ours = groundkit_repo(Path(tmp) / "groundkit", args.rev)
        same = same_floor_repo(Path(tmp) / "floor", ours)
        former = floor_repo(Path(tmp) / "former-floor")
        # First runs warm the disk cache and fill each repository's DVC cache; they are not counted.
        for root in (ours, same, former):
            timed_repro(root)
        rounds = []
        for _ in range(args.repeats):
            rounds.append([timed_repro(root) for root in (ours, same, former)])
        label = args.rev or "working tree"
        wall = [min(r[i][0] for r in rounds) for i in range(3)]
        cpu = [min(r[i][1] for r in rounds) for i in range(3)]
        print(f"\ndvc repro -f, fastest of {args.repeats} interleaved rounds")
        print("| pipeline | wall s (fastest, median, slowest) | / floor, fastest | / floor, each round (min, median, "
              "max) | CPU s | / floor |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        names = (f"groundkit ({label})", "floor: the same dvc.yaml, commands only writing their outputs",
                 "former floor: nine hand-written trivial stages")
        for i, name in enumerate(names):
            walls = sorted(r[i][0] for r in rounds)
            each = sorted(r[0][0] / r[1][0] for r in rounds)
            shown = (f"{min(each):.2f}x, {statistics.median(each):.2f}x, {max(each):.2f}x" if i == 0 else "")
            print(f"| {name} | {walls[0]:.2f} ({statistics.median(walls):.2f}, {walls[-1]:.2f}) | "
                  f"{wall[i] / wall[1]:.2f}x | {shown} | {cpu[i]:.2f} | {cpu[i] / cpu[1]:.2f}x |")
        print(f"groundkit / former floor: wall {wall[0] / wall[2]:.2f}x, CPU {cpu[0] / cpu[2]:.2f}x")
        print("target: at most 2.5x the floor")
        cpu_ours, cpu_floor = cpu[0], cpu[1]
        floor = same
        # Where the difference goes: the stage commands alone, and what is left for DVC itself.
        ours_by_stage, floor_by_stage = stages_cpu(ours, args.repeats), stages_cpu(floor, args.repeats)
        ours_stages, floor_stages = sum(ours_by_stage.values()), sum(floor_by_stage.values())
        print("\n| CPU s | stage commands run directly | DVC's own share (repro CPU minus stages) |")
        print("| --- | ---: | ---: |")
        print(f"| groundkit | {ours_stages:.2f} | {cpu_ours - ours_stages:.2f} |")
        print(f"| floor | {floor_stages:.2f} | {cpu_floor - floor_stages:.2f} |")
        account(ours_by_stage, floor_by_stage, stage_parts(ours, args.repeats),
                (cpu_ours - ours_stages) - (cpu_floor - floor_stages), cpu_floor)
        print("\n| stage (its dvc.yaml command, -X importtime) | imports, ms | largest packages, ms of own time |")
        print("| --- | ---: | --- |")
        for stage, total, shown in import_times(ours):
            print(f"| {stage} | {total:.0f} | {shown} |")


if __name__ == "__main__":
    main()
