"""What DVC shows a person: quiet repro, narrow metrics tables, params DVC writes back as they were.

Everything runs real DVC in the session's sweep clone (tests/conftest.py). Terminal tables are read
through a pseudo-terminal 80 columns wide, as a person at a default terminal sees them.
"""

from __future__ import annotations

import difflib
import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import termios

import pytest

from tests.conftest import QUEUED_EXPERIMENT
from tests.dvc_helpers import REPO, env, run

pytestmark = pytest.mark.integration

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# The guide's recipes (docs/compare.md), as written there.
EXP_SHOW_QUALITY = ["dvc", "exp", "show", "--no-pager", "--only-changed", "--drop",
                    "Created|State|Executor|.*/|mrr|recall|coverage"]
EXP_SHOW_BUDGET = ["dvc", "exp", "show", "--no-pager", "--only-changed", "--drop",
                   "Created|State|Executor|.*/|mrr|ndcg|recall"]


def test_the_recipes_are_the_guides():
    guide = (REPO / "docs" / "compare.md").read_text(encoding="utf-8")
    for recipe in (EXP_SHOW_QUALITY, EXP_SHOW_BUDGET):
        assert f"dvc exp show --only-changed --drop '{recipe[-1]}'" in guide


def at_80_columns(cmd: list[str], cwd) -> list[str]:
    """The lines ``cmd`` prints to a terminal 80 columns wide, colours removed."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 80, 0, 0))
    process = subprocess.Popen(cmd, cwd=cwd, env=env(COLUMNS="80", LINES="40"), stdin=follower, stdout=follower,
                               stderr=follower, close_fds=True)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the other end closed
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    assert process.wait(timeout=120) == 0, b"".join(chunks).decode()
    text = ANSI.sub("", b"".join(chunks).decode("utf-8").replace("\r", ""))
    return [line.rstrip() for line in text.splitlines() if line.strip()]


def test_the_default_pipeline_runs_without_a_warning(sweep_clone):
    assert "Running stage 'report'" in sweep_clone.repro_output
    assert "WARNING" not in sweep_clone.repro_output and "is empty" not in sweep_clone.repro_output


def test_dvc_repro_prints_the_score_readout_and_the_engine(sweep_clone):
    from groundkit.scoring.readout import readout

    lines = sweep_clone.repro_output.splitlines()
    start = lines.index("score:")
    block = []
    for line in lines[start + 1:]:
        if not line.startswith("  "):
            break
        block.append(line)
    detail = json.loads((sweep_clone.repo / "metrics" / "detail.json").read_text(encoding="utf-8"))
    headline = list(json.loads((sweep_clone.repo / "metrics" / "metrics.json").read_text(encoding="utf-8")))
    # The readout of the committed detail (sorted keys: its families come in another order than in memory).
    assert sorted(block) == sorted("  " + line for line in readout(detail, headline, width=98))
    assert max(map(len, block)) <= 100 and not any("{" in line for line in block)
    assert any(re.fullmatch(r"index: \d+ chunks, \d+ terms, on the local engine", line) for line in lines)


def test_dvc_metrics_show_is_one_narrow_row_of_headline_figures(sweep_clone):
    lines = at_80_columns(["dvc", "metrics", "show"], sweep_clone.repo)
    headline = ["coverage@1000chars", "mrr", "ndcg@10", "recall@10"]
    assert lines[0].split() == ["Path", *headline]
    committed = json.loads((sweep_clone.repo / "metrics" / "metrics.json").read_text(encoding="utf-8"))
    assert lines[1].split() == ["metrics/metrics.json", *(f"{committed[k]:.5f}".rstrip("0") for k in headline)]
    assert len(lines) == 2 and max(map(len, lines)) <= 80


@pytest.mark.parametrize(("recipe", "metric"), [(EXP_SHOW_QUALITY, "ndcg@10"),
                                                (EXP_SHOW_BUDGET, "coverage@1000chars")])
def test_the_guides_exp_show_recipes_fit_80_columns_uncollapsed(sweep_clone, recipe, metric):
    lines = at_80_columns(recipe, sweep_clone.repo)
    table = [line for line in lines if not set(line.strip()) <= {"─"}]
    assert table[0].split() == ["Experiment", metric, "chunk.size", "chunk.overlap"]
    assert not any("…" in line for line in lines) and max(map(len, lines)) <= 80
    rows = {cells[-4].strip("[]"): cells[-3:] for cells in (line.split() for line in table[1:])}
    assert rows["s400"][1:] == ["400", "0"] and rows["s1200"][1:] == ["1200", "100"]
    # A queued experiment, named as long as DVC names one, adds DVC's State and Executor columns; dropped.
    assert rows[QUEUED_EXPERIMENT] == ["-", "2000", "0"]
    for name in ("s400", "s1200"):
        assert float(rows[name][0]) == pytest.approx(sweep_clone.metrics_after[name][metric], abs=1e-5)


def test_exp_run_set_writes_params_yaml_back_unchanged_but_for_the_value(sweep_clone):
    before = sweep_clone.params_before.splitlines()
    for name, changed in (("s400", {"size": "400"}), ("s1200", {"size": "1200", "overlap": "100"})):
        diff = [line for line in difflib.ndiff(before, sweep_clone.params_after[name].splitlines())
                if line[:1] in "+-"]
        removed = [line[2:] for line in diff if line[0] == "-"]
        added = [line[2:] for line in diff if line[0] == "+"]
        assert len(removed) == len(added) == len(changed), diff
        for old, new in zip(removed, added, strict=True):
            key = old.split(":")[0].strip()
            # The value changes; the key, the comment and every other line stay (the comment keeps its column).
            assert new.split() == re.sub(r"(:\s*)\S+", rf"\g<1>{changed[key]}", old, count=1).split(), (old, new)
            assert new.index("#") == old.index("#")


def test_plots_data_lists_the_readable_plots(sweep_clone):
    shown = json.loads(run(["dvc", "plots", "show", "--json"], sweep_clone.repo).stdout)
    assert sorted(shown["data"]) == ["Hit rate against context budget", "Hit rate against k", "Per category",
                                     "Per query"]
    per_query = shown["data"]["Per query"][0]["content"]["data"]["values"]
    # One point per answerable query, best first: 144 points on one line, not 162 labels on one axis.
    assert len(per_query) == 144 and per_query[0]["position"] == "1"
    values = [float(p["ndcg@10"]) for p in per_query]
    assert values == sorted(values, reverse=True)


def test_dvc_plots_output_folder_is_ignored(sweep_clone):
    ignored = run(["git", "check-ignore", "dvc_plots/index.html"], sweep_clone.repo, check=False)
    assert ignored.returncode == 0


def test_groundkit_version():
    shown = subprocess.run(["groundkit", "--version"], capture_output=True, text=True, env=env(), check=True)
    import groundkit

    assert shown.stdout == f"groundkit {groundkit.__version__}\n"
