"""The local engine: the default, which must never import ray, and the params that pick an engine."""

from __future__ import annotations

import subprocess
import sys

import pytest

from groundkit.config import RAY_EXTRA, load_params
from groundkit.errors import ParamsError
from tests.conftest import REPO
from tests.dvc_helpers import env


def test_the_default_pipeline_never_imports_ray(tiny_corpus, tmp_path):
    """`groundkit run` with the committed params (engine local) runs every step, ray unimportable, and loads no ray."""
    corpus, judgments = tiny_corpus
    script = (
        "import sys\n"
        "sys.modules['ray'] = None  # any `import ray` now raises ImportError\n"
        "from groundkit.cli import main\n"
        f"status = main(['run', '--corpus', {str(corpus)!r}, '--judgments', {str(judgments)!r}, "
        f"'--out', {str(tmp_path / 'out')!r}, '--params', {str(REPO / 'params.yaml')!r}])\n"
        "loaded = sorted(name for name, module in sys.modules.items()\n"
        "                if module is not None and (name == 'ray' or name.startswith('ray.')))\n"
        "print(status, loaded)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env(), cwd=tmp_path,
                            check=False)
    assert result.stdout.splitlines()[-1] == "0 []", result.stderr
    assert (tmp_path / "out" / "run.trec").is_file()


@pytest.mark.parametrize(
    ("override", "key", "fragment"),
    [
        ("execution.engine=spark", "execution.engine", "Input should be 'local' or 'ray'"),
        ("execution.address=http://head:8265", "execution.address", "is not a Ray address"),
        ("execution.address=head", "execution.address", "is not a Ray address"),
        ("execution.workers=4", "execution.workers", "not a known field"),
    ],
)
def test_bad_execution_values_name_the_key(override, key, fragment):
    with pytest.raises(ParamsError) as info:
        load_params(None, [override])
    assert (info.value.key, fragment in str(info.value)) == (key, True)


@pytest.mark.parametrize("address", ["auto", "head-node:6379", "10.0.0.5:6379", "ray://head-node:10001"])
def test_addresses_ray_accepts(address):
    assert load_params(None, [f"execution.address={address}"]).execution.address == address


def test_an_empty_address_means_a_ray_of_its_own():
    assert load_params(None, ["execution.address="]).execution.address is None
    assert load_params(REPO / "params.yaml").execution.model_dump() == {"engine": "local", "address": None}


def test_engine_ray_without_ray_installed_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)  # how Python spells "not installed" to find_spec
    params = tmp_path / "params.yaml"
    params.write_text("execution:\n  engine: ray\n", encoding="utf-8")
    with pytest.raises(ParamsError) as info:
        load_params(params)
    assert info.value.key == "execution.engine"
    assert str(info.value) == (f"{params}: key 'execution.engine': is ray, but the ray package is not installed "
                               f"(got 'ray')\n  fix: {RAY_EXTRA}, or set execution.engine to local")
