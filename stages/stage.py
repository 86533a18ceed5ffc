"""DVC's entry point for groundkit's own pipeline: `python stages/stage.py STAGE --params params.yaml ...`.

It runs the code of the tree it lies in (stages/_own_tree.py), then what groundkit/pipeline/entry.py
does for every stage; a team's repository runs `groundkit stage STAGE` instead (`groundkit init`).
"""

import os
import sys

# Before numpy is imported: OpenBLAS starts a thread per core on import, about 80 ms of CPU in every
# stage that imports numpy, for matrix products too small to gain from them. A value the user set wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import _own_tree  # noqa: F401  (first of groundkit: groundkit must come from this tree)

from groundkit.console.guard import guarded
from groundkit.pipeline.entry import main

if __name__ == "__main__":
    sys.exit(guarded(main))
