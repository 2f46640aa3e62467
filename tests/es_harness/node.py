"""Start and stop a real single-node Elasticsearch for tests (standard library only).

The node is Elasticsearch's own server code (Maven Central jars, version pinned in
``pom.xml``) running in one JVM, with HTTP on 127.0.0.1 only. See README.md.

Library use::

    node = load_harness()            # or: from tests.es_harness import node
    handle = node.start()            # builds on first use, picks a free port
    try:
        ...  # AsyncElasticsearch(handle.url)
    finally:
        handle.stop()

CLI::

    python tests/es_harness/node.py build
    python tests/es_harness/node.py start [--port 9200] [--data-dir DIR] [--heap 512m]
    python tests/es_harness/node.py status
    python tests/es_harness/node.py stop
    python tests/es_harness/node.py smoke [--url URL]   # quick end-to-end check
"""

import argparse
import atexit
import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Union

HARNESS_DIR = Path(__file__).resolve().parent
TARGET_DIR = HARNESS_DIR / "target"
CLASSES_DIR = TARGET_DIR / "classes"
LIB_DIR = TARGET_DIR / "lib"
STAMP_FILE = TARGET_DIR / "carrag-build.stamp"
LOCK_FILE = TARGET_DIR / "carrag-build.lock"
STATE_FILE = TARGET_DIR / "node.json"  # written by the CLI `start`
MAIN_CLASS = "carrag.esharness.EsNode"

DEFAULT_HEAP = "512m"
DEFAULT_TIMEOUT = 180.0
BUILD_TIMEOUT = 1800.0

# JVM flags borrowed from Elasticsearch's own jvm.options, plus a bounded heap.
_JVM_FLAGS = [
    "-XX:+UseG1GC",
    "-XX:-OmitStackTraceInFastThrow",
    "-Djava.awt.headless=true",
    "-Dfile.encoding=UTF-8",
    "-Dio.netty.noUnsafe=true",
    "-Dio.netty.noKeySetOptimization=true",
    "-Dio.netty.recycler.maxCapacityPerThread=0",
    "-Dlog4j.shutdownHookEnabled=false",
    "-Dlog4j2.disable.jmx=true",
    "-Dlog4j2.formatMsgNoLookups=true",
]


class HarnessError(RuntimeError):
    """The harness could not build or start Elasticsearch."""


# --------------------------------------------------------------------------- tools


def _find_tool(name: str, env_var: str, hint: str) -> str:
    explicit = os.environ.get(env_var)
    if explicit:
        if not Path(explicit).exists():
            raise HarnessError(f"{env_var}={explicit!r} does not exist")
        return explicit
    found = shutil.which(name)
    if not found:
        raise HarnessError(
            f"`{name}` was not found on PATH; the Elasticsearch test harness needs it. {hint} "
            f"(or set {env_var} to its path)"
        )
    return found


def java_executable() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and not os.environ.get("CARRAG_ES_JAVA"):
        candidate = Path(java_home) / "bin" / "java"
        if candidate.exists():
            return str(candidate)
    return _find_tool(
        "java", "CARRAG_ES_JAVA", "Install a JDK 17+ (Debian: apt-get install -y openjdk-17-jdk-headless)."
    )


def mvn_executable() -> str:
    return _find_tool("mvn", "CARRAG_ES_MVN", "Install Maven 3.8+ (Debian: apt-get install -y maven).")


def _java_feature_version(java: str) -> int:
    out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    text = (out.stderr or "") + (out.stdout or "")
    for token in text.split('"')[1::2]:  # version "17.0.15" / "21" / "1.8.0_392"
        parts = token.split(".")
        try:
            major = int(parts[0])
            return int(parts[1]) if major == 1 and len(parts) > 1 else major
        except ValueError:
            continue
    raise HarnessError(f"could not parse `{java} -version` output: {text.strip()!r}")


# --------------------------------------------------------------------------- build


def _source_fingerprint() -> str:
    h = hashlib.sha256()
    files = [HARNESS_DIR / "pom.xml", *sorted((HARNESS_DIR / "src").rglob("*"))]
    for path in files:
        if path.is_file():
            h.update(str(path.relative_to(HARNESS_DIR)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def is_built() -> bool:
    try:
        stamp = STAMP_FILE.read_text().strip()
    except OSError:
        return False
    return (
        stamp == _source_fingerprint()
        and (CLASSES_DIR / "carrag" / "esharness" / "EsNode.class").is_file()
        and any(LIB_DIR.glob("elasticsearch-8.*.jar"))
    )


@contextlib.contextmanager
def _build_lock():
    TARGET_DIR.mkdir(parents=True, exist_ok=True)
    with open(LOCK_FILE, "w") as fh:
        try:
            import fcntl  # POSIX only; without it concurrent builds are merely wasteful

            fcntl.flock(fh, fcntl.LOCK_EX)
        except ImportError:
            pass
        yield


def build(force: bool = False, quiet: bool = True, extra_mvn_args: list[str] | None = None) -> Path:
    """Compile the harness and copy its runtime classpath into target/ (once; cached by source hash).

    Needs `mvn` and network access to Maven Central the first time (~70 MB of jars into ~/.m2).
    Extra Maven arguments can also come from $CARRAG_ES_MVN_ARGS (e.g. ``-Dmaven.repo.local=/tmp/m2``).
    Returns the target directory.
    """
    if not force and is_built():
        return TARGET_DIR
    with _build_lock():
        if not force and is_built():  # another process built it while we waited
            return TARGET_DIR
        mvn = mvn_executable()
        java_executable()  # fail early with a clear message
        cmd = [mvn, "-B", "package"]
        if quiet:
            cmd.insert(1, "-q")
        cmd += os.environ.get("CARRAG_ES_MVN_ARGS", "").split()
        cmd += list(extra_mvn_args or [])
        if LIB_DIR.exists():  # drop jars of a previously pinned version
            shutil.rmtree(LIB_DIR)
        started = time.monotonic()
        proc = subprocess.run(
            cmd, cwd=HARNESS_DIR, capture_output=True, text=True, timeout=BUILD_TIMEOUT, stdin=subprocess.DEVNULL
        )
        if proc.returncode != 0:
            output = (proc.stdout + proc.stderr).strip()[-6000:]
            raise HarnessError(f"Maven build of the Elasticsearch harness failed ({' '.join(cmd)}):\n{output}")
        STAMP_FILE.write_text(_source_fingerprint() + "\n")
        if not quiet:
            print(f"es harness built in {time.monotonic() - started:.1f}s", file=sys.stderr)
        return TARGET_DIR


def classpath() -> str:
    return os.pathsep.join([str(CLASSES_DIR), str(LIB_DIR / "*")])


# --------------------------------------------------------------------------- run


def _http_json(url: str, method: str = "GET", body=None, timeout: float = 10.0):
    data = None
    headers = {}
    if body is not None:
        if isinstance(body, (bytes, str)):
            data = body.encode() if isinstance(body, str) else body
            headers["Content-Type"] = "application/x-ndjson"
        else:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            raw = resp.read()
            return resp.status, (json.loads(raw) if raw else None), dict(resp.headers)
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            payload = json.loads(raw) if raw else None
        except ValueError:
            payload = raw.decode(errors="replace")
        return e.code, payload, dict(e.headers or {})


def _tail(path: Path, limit: int = 4000) -> str:
    try:
        return path.read_text(errors="replace")[-limit:]
    except OSError:
        return "(no log)"


@dataclass
class EsNodeHandle:
    """A running node. ``stop()`` is idempotent and also runs at interpreter exit."""

    url: str
    port: int
    version: str
    startup_seconds: float
    pid: int
    data_dir: Path
    log_path: Path
    process: subprocess.Popen | None = field(default=None, repr=False)
    remove_data_dir: bool = False
    _stopped: bool = field(default=False, repr=False)

    def is_running(self) -> bool:
        if self._stopped:
            return False
        if self.process is not None:
            return self.process.poll() is None
        return _pid_alive(self.pid)

    def stop(self, timeout: float = 30.0) -> None:
        if self._stopped:
            return
        self._stopped = True
        _terminate(self.pid, self.process, timeout)
        if self.remove_data_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> "EsNodeHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _terminate(pid: int, process: subprocess.Popen | None, timeout: float) -> None:
    """SIGTERM (the node closes cleanly in a JVM shutdown hook), then SIGKILL after `timeout`."""
    if process is not None:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)
        return
    if not _pid_alive(pid):
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _pid_alive(pid):
            return
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def start(
    port: int | None = None,
    data_dir: Union[str, "os.PathLike[str]"] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    heap: str = DEFAULT_HEAP,
    cluster_name: str = "carrag-test",
    log_level: str = "warn",
    build_if_needed: bool = True,
    tie_to_this_process: bool = True,
    node_name: str | None = None,
    transport_port: int | None = None,
    seed_hosts: list[str] | None = None,
    initial_master_nodes: list[str] | None = None,
) -> EsNodeHandle:
    """Start a node and wait until ``/_cluster/health`` is green or yellow.

    port: HTTP port on 127.0.0.1; None lets the node bind a free one (no race) and reports it.
    data_dir: home/data/logs directory; None uses a fresh temp dir that ``stop()`` deletes.
    tie_to_this_process: the node stops itself if this Python process dies without calling stop().
    node_name/transport_port/seed_hosts/initial_master_nodes: for a node of a cluster (`start_cluster`).
    Raises HarnessError (with the log tail) if java/mvn are missing, the build fails or startup fails.
    """
    java = java_executable()
    if _java_feature_version(java) < 17:
        raise HarnessError(f"{java} is older than Java 17; Elasticsearch 8 needs 17+")
    if build_if_needed:
        build()
    elif not is_built():
        raise HarnessError("the Elasticsearch harness is not built; run `python tests/es_harness/node.py build`")

    remove = data_dir is None
    home = Path(tempfile.mkdtemp(prefix="carrag-es-")) if data_dir is None else Path(data_dir).resolve()
    home.mkdir(parents=True, exist_ok=True)
    (home / "tmp").mkdir(exist_ok=True)
    ready_file = home / "ready.json"
    with contextlib.suppress(FileNotFoundError):
        ready_file.unlink()
    log_path = home / "es.log"

    cmd = [
        java,
        f"-Xms{heap}",
        f"-Xmx{heap}",
        *_JVM_FLAGS,
        f"-Djava.io.tmpdir={home / 'tmp'}",
        "-cp",
        classpath(),
        MAIN_CLASS,
        "--home",
        str(home),
        "--http-port",
        str(port if port is not None else 0),
        "--cluster-name",
        cluster_name,
        "--ready-file",
        str(ready_file),
        "--log-level",
        log_level,
    ]
    if node_name:
        cmd += ["--node-name", node_name]
    if transport_port is not None:
        cmd += ["--transport-port", str(transport_port)]
    if seed_hosts:
        cmd += ["--seed-hosts", ",".join(seed_hosts), "--initial-master-nodes", ",".join(initial_master_nodes or [])]
    if tie_to_this_process:
        cmd += ["--parent-pid", str(os.getpid())]

    t0 = time.monotonic()
    log_fh = open(log_path, "ab")
    try:
        process = subprocess.Popen(
            cmd,
            cwd=HARNESS_DIR,
            stdin=subprocess.DEVNULL,
            stdout=log_fh,
            stderr=subprocess.STDOUT,
            start_new_session=not tie_to_this_process,
        )
    finally:
        log_fh.close()

    def fail(reason: str) -> HarnessError:
        _terminate(process.pid, process, 15)
        log = _tail(log_path, 200_000)
        summary = [ln.split("carrag-es-harness: ", 1)[1] for ln in log.splitlines() if "carrag-es-harness: " in ln]
        if summary:
            reason = f"{reason}; {summary[-1]}"
        err = HarnessError(f"Elasticsearch harness failed to start: {reason}\n--- {log_path} (tail) ---\n{log[-4000:]}")
        if remove:
            shutil.rmtree(home, ignore_errors=True)
        return err

    deadline = t0 + timeout
    info = None
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise fail(f"java exited with code {process.returncode}")
        if ready_file.exists():
            try:
                info = json.loads(ready_file.read_text())
                break
            except ValueError:
                pass
        time.sleep(0.2)
    if info is None:
        raise fail(f"not ready within {timeout:.0f}s")

    url = f"http://127.0.0.1:{info['http_port']}"
    while True:
        try:
            status, body, _ = _http_json(f"{url}/_cluster/health?wait_for_status=yellow&timeout=5s", timeout=10)
            if status == 200 and body and body.get("status") in ("green", "yellow"):
                break
        except OSError:
            pass
        if process.poll() is not None:
            raise fail(f"java exited with code {process.returncode}")
        if time.monotonic() > deadline:
            raise fail(f"cluster health not green/yellow within {timeout:.0f}s")
        time.sleep(0.2)

    handle = EsNodeHandle(
        url=url,
        port=int(info["http_port"]),
        version=str(info["version"]),
        startup_seconds=round(time.monotonic() - t0, 2),
        pid=process.pid,
        data_dir=home,
        log_path=log_path,
        process=process,
        remove_data_dir=remove,
    )
    if tie_to_this_process:
        atexit.register(handle.stop)
    return handle


# --------------------------------------------------------------------------- cluster


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class EsClusterHandle:
    """Nodes of one cluster on loopback; each is master-eligible and holds data."""

    nodes: list[EsNodeHandle]
    names: list[str]
    transport_ports: list[int]
    home: Path
    heap: str
    cluster_name: str

    @property
    def url(self) -> str:
        return self.nodes[0].url

    @property
    def urls(self) -> list[str]:
        return [node.url for node in self.nodes]

    def kill(self, position: int) -> None:
        """SIGKILL one node (no clean shutdown: what a crashed machine looks like to the others)."""
        node = self.nodes[position]
        if node.process is not None and node.process.poll() is None:
            node.process.kill()
            node.process.wait(timeout=30)
        node._stopped = True

    def restart(self, position: int, timeout: float = DEFAULT_TIMEOUT) -> EsNodeHandle:
        """Start a killed node again on its data, HTTP and transport ports."""
        old = self.nodes[position]
        self.nodes[position] = start(
            port=old.port,
            data_dir=old.data_dir,
            timeout=timeout,
            heap=self.heap,
            cluster_name=self.cluster_name,
            node_name=self.names[position],
            transport_port=self.transport_ports[position],
            seed_hosts=[f"127.0.0.1:{port}" for port in self.transport_ports],
            initial_master_nodes=self.names,
        )
        return self.nodes[position]

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()
        shutil.rmtree(self.home, ignore_errors=True)

    def __enter__(self) -> "EsClusterHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def start_cluster(
    size: int = 3, heap: str = "384m", timeout: float = DEFAULT_TIMEOUT, cluster_name: str = "carrag-cluster"
) -> EsClusterHandle:
    """Start ``size`` nodes that form one cluster (seed hosts = every node's transport port, all of
    them initial master nodes), in parallel, and wait until the cluster has them all."""
    from concurrent.futures import ThreadPoolExecutor

    build()
    home = Path(tempfile.mkdtemp(prefix="carrag-es-cluster-"))
    names = [f"{cluster_name}-{position}" for position in range(size)]
    transport_ports = [_free_port() for _ in range(size)]
    seeds = [f"127.0.0.1:{port}" for port in transport_ports]

    def one(position: int) -> EsNodeHandle:
        return start(
            data_dir=home / names[position],
            timeout=timeout,
            heap=heap,
            cluster_name=cluster_name,
            node_name=names[position],
            transport_port=transport_ports[position],
            seed_hosts=seeds,
            initial_master_nodes=names,
        )

    try:
        with ThreadPoolExecutor(size) as pool:
            nodes = list(pool.map(one, range(size)))
    except BaseException:
        shutil.rmtree(home, ignore_errors=True)
        raise
    handle = EsClusterHandle(nodes, names, transport_ports, home, heap, cluster_name)
    status, body, _ = _http_json(f"{handle.url}/_cluster/health?wait_for_nodes={size}&timeout=60s", timeout=70)
    if status != 200 or body.get("number_of_nodes") != size:
        handle.stop()
        raise HarnessError(f"the cluster did not form with {size} nodes: {body}")
    atexit.register(handle.stop)
    return handle


# --------------------------------------------------------------------------- smoke check


def smoke(url: str) -> list[str]:
    """A quick end-to-end check of the features Carrag's store adapter uses. Returns the checks that passed."""
    import math
    import random

    idx = "carrag-harness-smoke"
    done: list[str] = []

    def _expect(cond, detail):
        if not cond:
            raise HarnessError(f"smoke check failed: {detail}")

    def call(method, path, body=None, ok=(200, 201)):
        status, payload, headers = _http_json(url + path, method, body)
        if status not in ok:
            raise HarnessError(f"{method} {path} -> {status}: {payload}")
        return payload, headers

    def vec(seed):
        r = random.Random(seed)
        v = [r.uniform(-1, 1) for _ in range(384)]
        n = math.sqrt(sum(x * x for x in v))
        return [x / n for x in v]

    root, headers = call("GET", "/")
    product = {k.lower(): v for k, v in headers.items()}.get("x-elastic-product")
    _expect(product == "Elasticsearch", headers)
    _expect(root["version"]["number"].startswith("8."), root)
    done.append(f"GET / (version {root['version']['number']}, X-Elastic-Product header)")
    call("GET", "/_cluster/health?wait_for_status=yellow&timeout=30s")
    done.append("cluster health")
    call("DELETE", f"/{idx}", ok=(200, 404))
    call(
        "PUT",
        f"/{idx}",
        {
            "settings": {"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "-1"},
            "mappings": {
                "properties": {
                    "text": {"type": "text", "analyzer": "english"},
                    "title": {"type": "text", "fields": {"raw": {"type": "keyword"}}},
                    "doc_id": {"type": "keyword"},
                    "chunk_index": {"type": "integer"},
                    "created_at": {"type": "date"},
                    "metadata": {"type": "object", "enabled": False},
                    "tags": {"type": "flattened"},
                    "embedding": {
                        "type": "dense_vector",
                        "dims": 384,
                        "index": True,
                        "similarity": "cosine",
                        "index_options": {"type": "hnsw", "m": 16, "ef_construction": 100},
                    },
                }
            },
        },
    )
    done.append("create index (english/text/keyword/integer/date/object/flattened/dense_vector hnsw)")
    texts = ["running shoes for runners", "a search engine", "vector search with embeddings", "lazy dogs"]
    lines = []
    for i, t in enumerate(texts):
        lines.append(json.dumps({"index": {"_index": idx, "_id": f"c{i}"}}))
        lines.append(
            json.dumps(
                {
                    "text": t,
                    "title": f"T{i % 2}",
                    "doc_id": f"d{i % 2}",
                    "chunk_index": i,
                    "created_at": f"2024-01-0{i + 1}",
                    "metadata": {"x": [1, {"y": 2}]},
                    "tags": {"k": "v"},
                    "embedding": vec(i),
                }
            )
        )
    lines.append(json.dumps({"delete": {"_index": idx, "_id": "c3"}}))
    res, _ = call("POST", "/_bulk", "\n".join(lines) + "\n")
    _expect(not res["errors"], res)
    call("POST", f"/{idx}/_refresh")
    cnt, _ = call("GET", f"/{idx}/_count")
    _expect(cnt["count"] == 3, cnt)
    done.append("_bulk index+delete, _refresh, _count")
    res, _ = call("POST", f"/{idx}/_search", {"query": {"match": {"text": "run"}}})
    _expect([h["_id"] for h in res["hits"]["hits"]] == ["c0"], res)
    done.append("match (english stemming)")
    res, _ = call(
        "POST",
        f"/{idx}/_search",
        {
            "knn": {
                "field": "embedding",
                "query_vector": vec(2),
                "k": 2,
                "num_candidates": 10,
                "filter": {"term": {"doc_id": "d0"}},
            }
        },
    )
    _expect(res["hits"]["hits"][0]["_id"] == "c2", res)
    done.append("knn with filter")
    res, _ = call(
        "POST",
        f"/{idx}/_search",
        {
            "query": {
                "bool": {
                    "filter": [
                        {"terms": {"doc_id": ["d0", "d1"]}},
                        {"range": {"chunk_index": {"gte": 1}}},
                        {"range": {"created_at": {"lt": "2024-01-03"}}},
                        {"term": {"title.raw": "T1"}},
                    ]
                }
            }
        },
    )
    _expect([h["_id"] for h in res["hits"]["hits"]] == ["c1"], res)
    done.append("bool terms/range/term filters")
    res, _ = call("POST", f"/{idx}/_mget", {"ids": ["c0", "nope"]})
    _expect([d["found"] for d in res["docs"]] == [True, False], res)
    done.append("_mget")
    call("DELETE", f"/{idx}/_doc/c0?refresh=true")
    res, _ = call("POST", f"/{idx}/_delete_by_query?refresh=true", {"query": {"term": {"doc_id": "d1"}}})
    _expect(res["deleted"] == 1, res)
    cnt, _ = call("GET", f"/{idx}/_count")
    _expect(cnt["count"] == 1, cnt)
    done.append("DELETE by id, _delete_by_query")
    call("DELETE", f"/{idx}")
    return done


# --------------------------------------------------------------------------- CLI


def _read_state() -> dict | None:
    try:
        return json.loads(STATE_FILE.read_text())
    except (OSError, ValueError):
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="node.py", description="Carrag's Elasticsearch test node")
    sub = parser.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="compile the harness and fetch the jars (cached)")
    b.add_argument("--force", action="store_true")
    s = sub.add_parser("start", help="start a node in the background and write target/node.json")
    s.add_argument("--port", type=int, default=None, help="HTTP port (default: any free port)")
    s.add_argument("--data-dir", default=None, help="default: a new temp dir, removed by `stop`")
    s.add_argument("--heap", default=DEFAULT_HEAP)
    s.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT)
    sub.add_parser("stop", help="stop the node started by `start`")
    sub.add_parser("status", help="print target/node.json if that node is running")
    sm = sub.add_parser("smoke", help="run a quick feature check against a node (a temporary one if no --url)")
    sm.add_argument("--url", default=None)
    args = parser.parse_args(argv)

    try:
        if args.cmd == "build":
            t0 = time.monotonic()
            build(force=args.force, quiet=False)
            print(f"built: {TARGET_DIR} ({time.monotonic() - t0:.1f}s)")
            return 0
        if args.cmd == "start":
            state = _read_state()
            if state and _pid_alive(state["pid"]):
                print(f"already running: {state['url']} (pid {state['pid']})")
                return 1
            h = start(
                port=args.port, data_dir=args.data_dir, timeout=args.timeout, heap=args.heap, tie_to_this_process=False
            )
            h.process = None  # detach: this CLI exits, the node keeps running
            state = {
                "url": h.url,
                "port": h.port,
                "pid": h.pid,
                "version": h.version,
                "data_dir": str(h.data_dir),
                "remove_data_dir": h.remove_data_dir,
                "log": str(h.log_path),
                "startup_seconds": h.startup_seconds,
            }
            STATE_FILE.write_text(json.dumps(state, indent=2) + "\n")
            print(json.dumps(state, indent=2))
            return 0
        if args.cmd == "stop":
            state = _read_state()
            if not state:
                print("no node.json; nothing to stop")
                return 0
            _terminate(state["pid"], None, 30.0)
            if state.get("remove_data_dir"):
                shutil.rmtree(state["data_dir"], ignore_errors=True)
            STATE_FILE.unlink(missing_ok=True)
            print(f"stopped pid {state['pid']}")
            return 0
        if args.cmd == "status":
            state = _read_state()
            if state and _pid_alive(state["pid"]):
                print(json.dumps(state, indent=2))
                return 0
            print("not running")
            return 1
        if args.cmd == "smoke":
            if args.url:
                checks = smoke(args.url.rstrip("/"))
            else:
                with start() as h:
                    print(f"started {h.version} at {h.url} in {h.startup_seconds}s")
                    checks = smoke(h.url)
            for c in checks:
                print(f"ok  {c}")
            print(f"smoke: all {len(checks)} checks ok")
            return 0
    except HarnessError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 2


if __name__ == "__main__":
    sys.exit(main())
