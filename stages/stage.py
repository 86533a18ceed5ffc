"""DVC's entry point for every stage: `python stages/stage.py STAGE --params params.yaml ...`.

The stages, their options and the step each runs are the table in groundkit/pipeline/stages.py,
from which dvc.yaml is rendered; every path comes from the command line, none is hard-coded here.
"""

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

# Before numpy is imported: OpenBLAS starts a thread per core on import, about 80 ms of CPU in every
# stage that imports numpy, for matrix products too small to gain from them. A value the user set wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import _own_tree  # noqa: F401  (first of groundkit: groundkit must come from this tree)

from groundkit._guard import guarded
from groundkit._shared import fewer_collections
from groundkit.config import load_params
from groundkit.pipeline.stages import BY_NAME, STAGES, Artifact, Output, ParamPath


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="stage.py", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="stage", required=True, metavar="STAGE")
    for stage in STAGES:
        command = commands.add_parser(stage.name, help=stage.about, description=stage.about)
        command.add_argument("--params", required=True, help="the params file")
        for port in (*stage.inputs, *stage.outputs):
            if isinstance(port, Output):
                command.add_argument(port.option, required=True, help=f"write {port.artifact.about}")
            elif port.option is not None:
                source = port.source
                about = source.about if not isinstance(source, ParamPath) else f"the path in {source.key}"
                command.add_argument(port.option, required=True, help=about)
        if stage.sets:
            command.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                                 help=f"params overrides (dvc.yaml passes {', '.join(stage.sets)})")
    return parser


def main(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    stage = BY_NAME[args.stage]
    given: dict[Artifact | ParamPath, str] = {}
    for port in (*stage.inputs, *stage.outputs):
        if port.option is not None:
            key = port.artifact if isinstance(port, Output) else port.source
            given[key] = getattr(args, port.option.removeprefix("--").replace("-", "_"))
    repeated = getattr(args, "set", [])
    if repeated:
        # dvc.yaml repeats these values from the params file: a value the file cannot hold is reported
        # against the file, not against its copy on the command line.
        load_params(args.params, stage.overrides(given))
    params = load_params(args.params, [*repeated, *stage.overrides(given)])
    step = importlib.import_module(stage.step)
    with fewer_collections():
        result = step.run(**stage.arguments(given, params))
    print(step.summary(result, params), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(guarded(main))
