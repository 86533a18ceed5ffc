"""No model client in the pipeline: a run and every DVC stage's step import neither httpx nor groundkit.labels."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO
from tests.dvc_helpers import env


def test_a_bm25_run_and_the_stage_steps_never_import_the_llm_client(tiny_corpus, tmp_path):
    corpus, judgments = tiny_corpus
    script = (
        "import importlib, sys\n"
        "from groundkit.cli import main\n"
        "from groundkit.pipeline.stages import STAGES\n"
        f"code = main(['run', '--corpus', {str(corpus)!r}, '--judgments', {str(judgments)!r}, '--out', "
        f"{str(tmp_path / 'out')!r}, '--set', 'chunk.size=60', '--set', 'audit.max_trivial_share=1.0'])\n"
        "assert code == 0\n"
        "for stage in STAGES:\n"
        "    importlib.import_module(stage.step)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('httpx', 'openai') or "
        "m.startswith('groundkit.labels')))\n"
    )
    shown = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env(), capture_output=True, text=True,
                           check=True)
    assert shown.stdout.strip().splitlines()[-1] == "[]"
