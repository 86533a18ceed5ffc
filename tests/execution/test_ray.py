"""The Ray engine against the local engine, on a real Ray cluster these tests start on this machine.

One cluster for the module (``ray start --head --block``, two CPUs, a small object store), stopped at
the end. The two engines must write the same bytes: every artifact of ``groundkit run`` on the
committed corpus and on SciFact, the index files when the index is cut into many segments, the
rankings of a search, and the dense embeddings. That the work really ran on the cluster is read
from the cluster's own worker logs, where Ray records the name of every task a worker starts. A
worker killed (SIGKILL) while it searches is replaced and its task run again, with the same result;
without retries the same kill fails the search, which shows the kill hit a running task.

A cluster that is not there is one message: an address where another service listens, a silent one
(and SIGTERM while it is tried), a node that dies under a task, a head node lost mid-stage.

On a loaded machine Ray's processes can be slow to answer each other: the cluster is used only once
`ray status` sees its node and CPUs, and every Ray process of the module (the cluster's, and each
stage's driver, which inherit the environment) waits ten minutes for a silent head node rather than
Ray's one, after which Ray ends a process ("Failed to connect to GCS within 60 seconds").

Ray is an extra (``pip install -e '.[test,dense,ray]'``, README's test command); without it these
tests fail, saying so, rather than skip.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from groundkit.config import load_params
from groundkit.retrieval.bm25 import BM25Index, write_index
from tests.conftest import REPO
from tests.dvc_helpers import BIN, env
from tests.test_scifact import scifact_dir

pytestmark = pytest.mark.ray

SCIFACT = ("--set", "chunk.strategy=document", "--set", "audit.max_trivial_share=1.0")
"""How tests/test_scifact.py runs SciFact: one chunk per abstract; its trivial share is the collection's."""


@dataclass(frozen=True)
class Cluster:
    address: str
    client: str
    logs: Path

    def client_server_logs(self) -> str:
        """The last lines of the Ray Client servers' logs and the runtime environment agent's: what a failed
        connection through Ray Client leaves to explain it (the cluster's folder is removed with the cluster)."""
        shown = []
        for pattern in ("ray_client_server*", "runtime_env*"):
            for log in sorted(self.logs.glob(pattern)):
                lines = log.read_text(encoding="utf-8", errors="replace").splitlines()[-30:]
                if lines:
                    shown.append(f"\n--- {log.name} (last {len(lines)} lines)\n" + "\n".join(lines))
        return "".join(shown)

    def tasks_started(self) -> Counter[str]:
        """How many times each task or actor name was started, from the workers' logs (``:task_name:NAME``)."""
        names: Counter[str] = Counter()
        for log in self.logs.glob("worker-*.out"):
            for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
                for marker in (":task_name:", ":actor_name:"):
                    if line.startswith(marker):
                        names[line.removeprefix(marker)] += 1
        return names


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


PATIENCE = {"RAY_gcs_rpc_server_reconnect_timeout_s": "600"}
"""How long every Ray process of these tests waits for a silent head node (Ray's default: 60 s)."""
READY_S = 600
"""How long a cluster may take to start on a loaded machine: generous, since a cluster that is up ends the wait."""


def start_cluster(temp: Path, port: int, client: int | None = None, **extra: str) -> subprocess.Popen[bytes]:
    """``ray start --head --block`` in a session of its own, once it is up: its node and CPUs seen by `ray status`."""
    command = [str(BIN / "ray"), "start", "--head", "--block", "--port", str(port), "--num-cpus", "2",
               "--object-store-memory", str(300 * 2**20), "--include-dashboard=false", "--disable-usage-stats",
               "--temp-dir", str(temp)]
    if client is not None:
        command += ["--ray-client-server-port", str(client)]
    with (temp / "ray-start.log").open("w") as log:
        # No drain on SIGTERM: this cluster serves no one else, and a drain waits out Ray Data's idle actors (30 s).
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                   env=env(RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S="0", **extra))
    deadline = time.monotonic() + READY_S
    while True:
        if process.poll() is not None or time.monotonic() > deadline:
            stop_cluster(process)
            pytest.fail(f"ray start failed:\n{(temp / 'ray-start.log').read_text(errors='replace')}")
        if "Ray runtime started" in (temp / "ray-start.log").read_text(errors="replace"):
            status = subprocess.run([str(BIN / "ray"), "status", "--address", f"127.0.0.1:{port}"],
                                    capture_output=True, text=True, env=env(**extra), check=False)
            if status.returncode == 0 and "/2.0 CPU" in status.stdout:
                return process
        time.sleep(0.5)


def stop_cluster(process: subprocess.Popen[bytes]) -> None:
    process.terminate()  # --block: ray start stops every process of the cluster on SIGTERM
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    # Token authentication with a token of this module's own, in the environment every driver and the
    # cluster inherit: nothing is read from or written to ~/.ray, where another Ray may keep its token.
    names = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", *PATIENCE)
    saved = {name: os.environ.get(name) for name in names}
    os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(32), **PATIENCE)
    os.environ.pop("RAY_AUTH_TOKEN_PATH", None)
    try:
        import ray  # noqa: F401
    except ImportError:
        pytest.fail("ray is not installed: the Ray engine's tests need the ray extra; run "
                    "pip install -e '.[test,dense,ray]' (README's test command; .ci/run does in CI)", pytrace=False)
    temp = Path(tempfile.mkdtemp(prefix="gkray-"))  # short: Ray's socket paths must fit in 107 bytes
    port, client = _free_port(), _free_port()
    process = start_cluster(temp, port, client)
    try:
        yield Cluster(f"127.0.0.1:{port}", f"ray://127.0.0.1:{client}", temp / "session_latest" / "logs")
    finally:
        stop_cluster(process)
        shutil.rmtree(temp, ignore_errors=True)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture(scope="module")
def engine(cluster: Cluster) -> Iterator[object]:
    """This test process connected to the cluster, as the Ray engine connects a stage."""
    from groundkit.execution.ray import RayEngine

    with RayEngine(cluster.address, source="params.yaml") as connected:
        yield connected


def groundkit_run(corpus: Path, judgments: Path, out: Path, *args: str, cluster: Cluster | None = None) -> None:
    result = subprocess.run([str(BIN / "groundkit"), "run", "--corpus", str(corpus), "--judgments", str(judgments),
                             "--out", str(out), *args], capture_output=True, text=True, env=env(), check=False)
    assert result.returncode == 0, result.stderr + (cluster.client_server_logs() if cluster else "")


def files(folder: Path) -> dict[str, bytes]:
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in sorted(folder.rglob("*"))
            if path.is_file()}


def assert_same_files(local: Path, ray: Path) -> None:
    ours, theirs = files(local), files(ray)
    assert sorted(ours) == sorted(theirs)
    assert [name for name in ours if ours[name] != theirs[name]] == []


@pytest.fixture(scope="module")
def scifact(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """SciFact imported with `groundkit import-beir`, as tests/test_scifact.py imports it."""
    out = tmp_path_factory.mktemp("scifact") / "imported"
    result = subprocess.run([str(BIN / "groundkit"), "import-beir", str(scifact_dir()), "--out", str(out)],
                            capture_output=True, text=True, env=env(), check=False)
    assert result.returncode == 0, result.stderr
    return out / "corpus", out / "judgments.jsonl"


@pytest.fixture(scope="module")
def scifact_local(scifact: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`groundkit run` on SciFact with the local engine: the reference."""
    out = tmp_path_factory.mktemp("scifact-local") / "out"
    groundkit_run(*scifact, out, *SCIFACT)
    return out


COMMITTED = (REPO / "evals" / "corpus", REPO / "evals" / "judgments.jsonl")


@pytest.fixture(scope="module")
def committed_local(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`groundkit run` on the committed corpus with the committed params (engine local): the reference."""
    out = tmp_path_factory.mktemp("committed-local") / "out"
    groundkit_run(*COMMITTED, out, "--params", str(REPO / "params.yaml"))
    return out


@pytest.mark.parametrize("via", ["head", "client"])
def test_committed_corpus_same_bytes_on_ray(cluster, committed_local, tmp_path, via):
    """Joining the head node (HOST:PORT) or through Ray Client (ray://HOST:PORT), every artifact is the same."""
    before = cluster.tasks_started()
    address = cluster.address if via == "head" else cluster.client
    groundkit_run(*COMMITTED, tmp_path / "ray", "--params", str(REPO / "params.yaml"),
                  "--set", "execution.engine=ray", "--set", f"execution.address={address}", cluster=cluster)
    assert_same_files(committed_local, tmp_path / "ray")  # index/, run.trec, metrics.json and every other file
    started = cluster.tasks_started() - before
    assert {name: started[name] > 0 for name in ("_count_segment", "_weigh_segment", "_search_segment")} == {
        "_count_segment": True, "_weigh_segment": True, "_search_segment": True}


def test_scifact_same_bytes_on_ray(cluster, scifact, scifact_local, tmp_path):
    before = cluster.tasks_started()
    groundkit_run(*scifact, tmp_path / "ray", *SCIFACT, "--set", "execution.engine=ray",
                  "--set", f"execution.address={cluster.address}")
    assert_same_files(scifact_local, tmp_path / "ray")
    assert (cluster.tasks_started() - before)["_search_segment"] > 0


def _records(chunks: Path) -> Iterator[tuple[str, str, int, str]]:
    for line in chunks.read_text(encoding="utf-8").splitlines():
        chunk = json.loads(line)
        yield chunk["chunk_id"], chunk["document"], chunk["start_offset"], chunk["text"]


def _queries(judgments: Path) -> list[str]:
    return [json.loads(line)["query"] for line in judgments.read_text(encoding="utf-8").splitlines()]


def test_many_segments_same_index_and_rankings(engine, scifact, scifact_local, tmp_path):
    """SciFact cut into six segments (1,000 rows; the last 183): the Ray build and search against the local ones."""
    # Anserini's SciFact setting (tests/test_scifact.py), so that stopwords and stems travel to the workers too.
    params = load_params(None, ["bm25.k1=0.9", "bm25.b=0.4", "tokenize.stemmer=porter", "tokenize.stopwords=en"])
    bm25, tokenizer = params.bm25, params.tokenize
    chunks = scifact_local / "chunks.jsonl"
    write_index(_records(chunks), tmp_path / "local", k1=bm25.k1, b=bm25.b, tokenizer=tokenizer, segment_rows=1000)
    engine.write_index(_records(chunks), tmp_path / "ray", bm25, tokenizer, segment_rows=1000)
    assert_same_files(tmp_path / "local", tmp_path / "ray")
    index = BM25Index.load(tmp_path / "local")
    assert [(s.first_row, s.rows) for s in index.segments] == [(i * 1000, 1000) for i in range(5)] + [(5000, 183)]
    queries = _queries(scifact[1])
    expected = [index.search(query, 100) for query in queries]
    # 300 queries in batches of 64: five batches, the last of 44, each searched on every segment.
    assert engine.search(index, queries, 100, query_batch=64) == expected


def _kill_first_search_worker(killed: list[int], stop: threading.Event) -> None:
    """SIGKILL the first process Ray has titled ``ray::_search_segment`` (a worker running a search task)."""
    while not stop.is_set():
        for entry in Path("/proc").iterdir():
            try:
                title = (entry / "cmdline").read_bytes()
            except OSError:
                continue  # not a process, or one that just ended
            if title.startswith(b"ray::_search_segment"):
                os.kill(int(entry.name), signal.SIGKILL)
                killed.append(int(entry.name))
                return
        time.sleep(0.01)


@pytest.fixture(scope="module")
def two_segments(scifact_local: Path, tmp_path_factory: pytest.TempPathFactory) -> BM25Index:
    """SciFact's index in two segments of 2,600 and 2,583 rows: two search tasks per query batch."""
    folder = tmp_path_factory.mktemp("two-segments") / "index"
    write_index(_records(scifact_local / "chunks.jsonl"), folder, k1=1.2, b=0.75, segment_rows=2600)
    return BM25Index.load(folder)


def _search_while_killing(engine, index: BM25Index, queries: list[str], retries: int) -> tuple[object, list[int]]:
    killed: list[int] = []
    stop = threading.Event()
    killer = threading.Thread(target=_kill_first_search_worker, args=(killed, stop))
    killer.start()
    try:
        # One batch of all 3,000 queries: each of the two tasks searches its segment for 0.4 s or more.
        return engine.search(index, queries, 100, query_batch=len(queries), retries=retries), killed
    except Exception as error:  # the negative control's expected failure, returned to be checked
        return error, killed
    finally:
        stop.set()
        killer.join()


def test_a_worker_killed_mid_search_is_retried_and_the_result_is_unchanged(engine, scifact, two_segments):
    import ray

    queries = _queries(scifact[1]) * 10
    expected = [two_segments.search(query, 100) for query in queries[:300]] * 10
    result, killed = _search_while_killing(engine, two_segments, queries, retries=3)
    assert len(killed) == 1
    assert result == expected
    # The control: the same kill without retries fails the search, so the kill did hit a running task.
    result, killed = _search_while_killing(engine, two_segments, queries, retries=0)
    assert len(killed) == 1
    assert isinstance(result, ray.exceptions.WorkerCrashedError | ray.exceptions.RayTaskError), result


def test_embeddings_same_bytes_through_ray_data(cluster, engine):
    from groundkit.retrieval.dense import Encoder

    # 21 texts of 4 to 26 words in batches of 8 (the last of 5): padding differs from batch to batch.
    texts = [" ".join([f"word{i}"] * (1 + (i * 7) % 23) + ["the", "quick", "fox"]) for i in range(21)]
    encoder = Encoder(load_params(None, ["dense.batch_size=8"]).dense)
    before = cluster.tasks_started()
    embedded = engine.embed(encoder, texts)
    local = encoder.encode(texts)
    assert (embedded.dtype, embedded.shape, embedded.tobytes() == local.tobytes()) == (np.float32, (21, 384), True)
    assert (cluster.tasks_started() - before)["MapWorker(MapBatches(_EmbedBatch))"] > 0
    # What the comparison can see: cut into batches of one, the same texts differ in their last bits.
    single = Encoder(load_params(None, ["dense.batch_size=1"]).dense).encode(texts)
    assert single.tobytes() != local.tobytes()


def test_an_address_where_nothing_listens_is_one_message(cluster, tmp_path):
    """ray.init would wait for such a cluster without end; the engine says so at once, and writes nothing."""
    params = tmp_path / "params.yaml"
    params.write_text(f"execution:\n  engine: ray\n  address: 127.0.0.1:{_free_port()}\n", encoding="utf-8")
    result = subprocess.run([str(BIN / "groundkit"), "run", "--corpus", str(COMMITTED[0]), "--judgments",
                             str(COMMITTED[1]), "--params", str(params), "--out", str(tmp_path / "out")],
                            capture_output=True, text=True, env=env(), check=False)
    assert result.returncode == 1
    assert result.stderr.startswith(f"error: {params}: key 'execution.address': no Ray cluster answers at 127.0.0.1:")
    assert "Connection refused" in result.stderr and "\n  fix: start the cluster (ray start --head)" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "out").exists()


# --- a cluster that is not there, or is lost


def _errors(stderr: str) -> int:
    return sum(1 for line in stderr.splitlines() if line.startswith("error: "))


def _groundkit(*args: str, **extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen([str(BIN / "groundkit"), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env(**extra))


def _run_on(address: str, out: Path) -> list[str]:
    return ["run", "--corpus", str(COMMITTED[0]), "--judgments", str(COMMITTED[1]), "--set", "execution.engine=ray",
            "--set", f"execution.address={address}", "--out", str(out)]


def test_an_address_where_another_service_listens_is_one_message(cluster, tmp_path):
    """Something else than Ray at the port passes a connection test; ray.init then retried it for minutes."""
    import http.server

    server = http.server.ThreadingHTTPServer(("", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        address = f"127.0.0.1:{server.server_address[1]}"
        _, err = _groundkit(*_run_on(address, tmp_path / "out")).communicate(timeout=300)
    finally:
        server.shutdown()
        server.server_close()
    assert err.startswith(f"error: params: key 'execution.address': no Ray cluster answers at {address} (a service "
                          "answers there, but not in Ray's protocol: "), err
    assert _errors(err) == 1 and "Traceback" not in err and not (tmp_path / "out").exists()


@pytest.mark.parametrize(("via", "token"), [("head", "wrong"), ("client", "wrong"), ("head", "none")])
def test_a_token_the_cluster_refuses_is_one_message_naming_the_token(cluster, tmp_path, via, token):
    """ray.init retried a refused token for a minute, printed Ray's log lines, and said only that it could not
    connect (through Ray Client: "connection timeout"). The handshake sends the token Ray's driver would send."""
    address = cluster.address if via == "head" else cluster.client
    other = secrets.token_hex(32)
    extra = {"RAY_AUTH_TOKEN": other} if token == "wrong" else {
        "RAY_AUTH_MODE": "", "RAY_AUTH_TOKEN": "", "RAY_AUTH_TOKEN_PATH": str(tmp_path / "no-token")}
    _, err = _groundkit(*_run_on(address, tmp_path / "out"), **extra).communicate(timeout=300)
    assert err.startswith(f"error: the Ray cluster at {address} refused this process's authentication token\n"
                          "  fix: give groundkit the cluster's token the way Ray reads it: RAY_AUTH_MODE=token and "
                          "RAY_AUTH_TOKEN, or RAY_AUTH_TOKEN_PATH"), err
    assert _errors(err) == 1 and len(err.splitlines()) == 2, err  # no line of Ray's own log
    assert os.environ["RAY_AUTH_TOKEN"] not in err and other not in err
    assert not (tmp_path / "out").exists()


def test_a_token_file_ray_cannot_read_is_one_message(cluster, tmp_path):
    """Ray's token loader raises its own error for a RAY_AUTH_TOKEN_PATH it cannot read: one message, no traceback."""
    missing = tmp_path / "no-token"
    _, err = _groundkit(*_run_on(cluster.address, tmp_path / "out"), RAY_AUTH_TOKEN="",
                        RAY_AUTH_TOKEN_PATH=str(missing)).communicate(timeout=300)
    assert err == (f"error: Ray cannot read this process's authentication token for {cluster.address} "
                   f"(RAY_AUTH_TOKEN_PATH is set but file cannot be opened or is empty: {missing})\n"
                   "  fix: give groundkit the cluster's token the way Ray reads it: RAY_AUTH_TOKEN, or a readable "
                   "RAY_AUTH_TOKEN_PATH (~/.ray/auth_token by default)\n"), err
    assert not (tmp_path / "out").exists()


def test_sigterm_while_a_silent_address_is_tried_exits_143(cluster, tmp_path):
    """A port that accepts connections and never answers: the wait is SIGTERM's to end, as any other (exit 143).

    Ray's driver used to install its own handler and exit 15, once its blocking call returned.
    """
    # On every address: Ray's driver connects to the machine's own address, not to the loopback one given.
    listener = socket.create_server(("", 0))
    accepted = threading.Event()
    held: list[socket.socket] = []

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                held.append(listener.accept()[0])
                if len(held) == 2:  # the connection test, then the handshake (Ray's own connection, once)
                    accepted.set()

    threading.Thread(target=accept, daemon=True).start()
    try:
        process = _groundkit(*_run_on(f"127.0.0.1:{listener.getsockname()[1]}", tmp_path / "out"))
        assert accepted.wait(timeout=300), "groundkit never connected"
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=300)
    finally:
        listener.close()
        for connection in held:
            connection.close()
    assert (process.returncode, err) == (143, "terminated by SIGTERM; temporary files were removed\n")
    assert not (tmp_path / "out").exists()


def _descendants(pid: int) -> dict[int, str]:
    """Every process below ``pid``, by pid, with its command line (a Ray worker's is its title, ray::TASK)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    found, stack = {}, list(children.get(pid, []))
    while stack:
        child = stack.pop()
        with contextlib.suppress(OSError):
            found[child] = (Path("/proc") / str(child) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        stack.extend(children.get(child, []))
    return found


def _when_a_search_runs(under: int, process: subprocess.Popen[str]) -> dict[int, str]:
    """Wait (without end while ``process`` lives) until a worker below ``under`` searches a segment.

    The retrieve stage's driver then waits for the tasks' answers. Earlier, while the index stage's driver
    hands segments of text to the object store, a lost node breaks its connection to the store, and Ray ends
    the process itself (see KNOWN_LIMITATIONS.md).
    """
    while process.poll() is None:
        processes = _descendants(under)
        if any(command.startswith("ray::_search_segment") for command in processes.values()):
            return processes
        time.sleep(0.01)
    raise AssertionError(f"the run ended first: {process.communicate()}")


def _lost_node_errors():
    import ray.exceptions

    return [ray.exceptions.LocalRayletDiedError(), ray.exceptions.NodeDiedError("node 1f2e lost"),
            ray.exceptions.WorkerCrashedError(),
            ray.exceptions.ObjectLostError("ab" * 14, None, "search"),
            ray.exceptions.RayTaskError("_search_segment", "...", ray.exceptions.LocalRayletDiedError())]


@pytest.mark.parametrize("index", range(5), ids=["raylet died", "node died", "worker crashed", "object lost",
                                                 "task failed with its raylet"])
def test_ray_saying_a_process_or_node_is_gone_becomes_one_message(engine, cluster, index):
    """What Ray raises when a node dies under a task; it was an internal error ("a bug in groundkit"), exit 3."""
    from groundkit.errors import EngineError
    from groundkit.execution.ray import RayEngine

    error = _lost_node_errors()[index]
    with pytest.raises(EngineError) as info, RayEngine(cluster.address, source="params.yaml"):
        raise error
    problem = f"the Ray cluster ({cluster.address}) was lost while the step ran ({type(error).__name__}"
    assert str(info.value).startswith(problem)
    assert str(info.value).endswith("\n  fix: check that the cluster is up (ray status), then run the step again")
    # Ray's report of a task's own failure is not a lost cluster: it stays the error it is.
    with pytest.raises(ZeroDivisionError), RayEngine(cluster.address, source="params.yaml"):
        raise ZeroDivisionError


def test_a_node_lost_under_a_task_ends_the_stage_with_exit_1(cluster, scifact, tmp_path):
    """The raylet of the Ray a stage started for itself, killed while SciFact's segment is searched.

    Mostly Ray raises an error of a lost node, which groundkit reports; when the driver is then using the dead
    node's object store, Ray ends the process itself (exit 1, a line of its log; see KNOWN_LIMITATIONS.md).
    Either way: exit 1, nothing written, never "internal error" (exit 3, as before).
    """
    # The head node checks its nodes every second and takes three missed checks for a death (Ray's defaults, 3 s
    # and 5, make the run wait about 17 s to be told what this test already knows; the outcome is the same).
    process = _groundkit("run", "--corpus", str(scifact[0]), "--judgments", str(scifact[1]), *SCIFACT,
                         "--set", "execution.engine=ray", "--out", str(tmp_path / "out"),
                         RAY_health_check_period_ms="1000", RAY_health_check_timeout_ms="1000",
                         RAY_health_check_failure_threshold="3")
    try:
        processes = _when_a_search_runs(process.pid, process)
        (raylet,) = [pid for pid, command in processes.items() if "raylet/raylet" in command.split(" ")[0]]
        os.kill(raylet, signal.SIGKILL)
        _, err = process.communicate(timeout=600)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 1, err
    assert "internal error" not in err and "Traceback" not in err
    reported = [line for line in err.splitlines() if line.startswith("error: ")]
    lost = "error: the Ray cluster (the Ray started on this machine for the stage) was lost while the step ran ("
    assert len(reported) <= 1 and all(line.startswith(lost) for line in reported), err
    assert not (tmp_path / "out").exists()


def test_a_head_node_lost_mid_stage_is_one_message(cluster, scifact, tmp_path):
    """A cluster of its own, killed whole while SciFact's segment is searched: its head node stops answering.

    Ray's driver would wait a minute and end the process from C++ with a line of its log; groundkit waits as
    long as Ray is set to (here 10 s) and says the cluster was lost.
    """
    temp = Path(tempfile.mkdtemp(prefix="gklost-"))
    port = _free_port()
    head = start_cluster(temp, port)
    try:
        process = _groundkit("run", "--corpus", str(scifact[0]), "--judgments", str(scifact[1]), *SCIFACT,
                             "--set", "execution.engine=ray", "--set", f"execution.address=127.0.0.1:{port}",
                             "--out", str(tmp_path / "out"), RAY_gcs_rpc_server_reconnect_timeout_s="10")
        try:
            _when_a_search_runs(head.pid, process)
            os.killpg(head.pid, signal.SIGKILL)  # the whole cluster, in one go: its own session
            _, err = process.communicate(timeout=600)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(head.pid, signal.SIGKILL)
        head.wait()
        shutil.rmtree(temp, ignore_errors=True)
    assert process.returncode == 1, err
    where = f"127.0.0.1:{port}"
    assert f"error: the Ray cluster ({where}) was lost while the step ran (its head node at {where} has not answered " \
           "for " in err
    assert _errors(err) == 1 and "Failed to connect to GCS" not in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


# --- every error Ray raises is one message (issue 35 item 11); these start no cluster: Ray's own exception classes
# are raised through the engine's path


STARTUP_TIMEOUT = ("The current node timed out during startup. This could happen because some of the Ray processes "
                   "failed to startup.")


@pytest.mark.parametrize("raised", [Exception(STARTUP_TIMEOUT), RuntimeError("Ray has not been started yet."),
                                    OSError(98, "Address already in use")],
                         ids=["node startup timeout", "runtime error", "os error"])
def test_ray_failing_to_start_on_this_machine_is_one_message_naming_ray(tiny_corpus, tmp_path, capsys, monkeypatch,
                                                                        raised):
    # Under load a Ray node timed out during start-up, and groundkit reported "internal error: Exception: ...".
    import ray

    from groundkit.cli import main

    def init(*args, **kwargs):
        raise raised

    monkeypatch.setattr(ray, "init", init)
    # Another test of this module may have left a Ray of its own running in this process; the engine would join it.
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    corpus, judgments = tiny_corpus
    code = main(["run", "--corpus", str(corpus), "--judgments", str(judgments), "--out", str(tmp_path / "out"),
                 "--set", "execution.engine=ray", "--set", "audit.max_trivial_share=1.0"])
    err = capsys.readouterr().err
    assert code == 1, err
    assert err.startswith("error: Ray could not start on this machine "), err
    assert str(raised).splitlines()[0][:40] in err and "an error of Ray's, not of groundkit's" in err
    assert "\n  fix: " in err and "execution.engine: local" in err and "ray stop" in err
    assert "internal error" not in err and not (tmp_path / "out").exists()


def _rays_errors():
    import ray.exceptions

    return [ray.exceptions.ObjectStoreFullError("object store full"),
            ray.exceptions.GetTimeoutError("get timed out"),
            ray.exceptions.OutOfMemoryError("the node is running low on memory"),
            ray.exceptions.RuntimeEnvSetupError("pip install failed"),
            ray.exceptions.TaskCancelledError(),
            ray.exceptions.RayError("something else of Ray's")]


@pytest.mark.parametrize("index", range(6), ids=["object store full", "get timeout", "out of memory",
                                                 "runtime env", "task cancelled", "ray error"])
def test_any_other_error_ray_raises_while_a_step_runs_is_one_message_naming_ray(monkeypatch, index):
    import ray

    from groundkit.errors import EngineError
    from groundkit.execution.ray import RayEngine

    monkeypatch.setattr(ray, "is_initialized", lambda: True)  # connected by the caller: no cluster is started
    error = _rays_errors()[index]
    with pytest.raises(EngineError) as info, RayEngine("127.0.0.1:6379", source="params.yaml"):
        raise error
    message = str(info.value)
    assert message.startswith(f"Ray failed while the step ran ({type(error).__name__}"), message
    assert "an error of Ray's, not of groundkit's" in message and "\n  fix: " in message
    # A task's own failure, and groundkit's own errors, stay what they are.
    with pytest.raises(ZeroDivisionError), RayEngine("127.0.0.1:6379", source="params.yaml"):
        raise ZeroDivisionError
    with pytest.raises(EngineError, match=r"^mine"), RayEngine("127.0.0.1:6379", source="params.yaml"):
        raise EngineError("mine", fix="x")
