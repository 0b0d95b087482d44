"""A real Elasticsearch 8 cluster on loopback: several nodes in one JVM, from Maven Central.

``tests/es-cluster`` is a Maven project: ``mvn package`` downloads Elastic's integration-test
distribution of Elasticsearch (``org.elasticsearch.distribution.integ-test-zip``), unpacks
its server jars and HTTP module into ``target/``, and builds a small launcher
(``gear.escluster.ClusterMain``) that starts N nodes of one cluster in one JVM on free
ports, plus the ``GET /`` handler that distribution lacks (``gear.esroot.RootPlugin``).
This module builds it when needed, starts it, waits for green and stops it; the launcher
also stops and restarts single nodes on request (the fault tests).

Used by the ``es_url`` fixture (``tests/conftest.py``), the benchmarks, and by hand::

    python scripts/es_cluster.py                       # prints GEAR_ES_URL, Ctrl-C stops it
    python scripts/es_cluster.py -- pytest -m es -q    # runs a command against it

Nothing is left behind: the JVM quits when its standard input closes (so it cannot outlive
the Python process that started it), and :meth:`EsCluster.close` deletes its data unless
it was given a ``home`` to keep.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ROOT / "tests" / "es-cluster"
ES_VERSION = "8.19.4"
"""The Elasticsearch release the launcher runs (``es.version`` in ``tests/es-cluster/pom.xml``)."""
DEFAULT_HEAP = "512m"
DEFAULT_NODES = 3
MIN_JAVA, MAX_JAVA = 17, 24
"""Java releases Elasticsearch 8.19 runs on; 17 is the one checked here."""


class ClusterUnavailable(RuntimeError):
    """No cluster can be started here (no Java 17+, no Maven): the reason, in one line."""


@dataclass(frozen=True)
class Artifacts:
    """What ``mvn package`` built: the launcher, the ``GET /`` plugin, the distribution."""

    java: Path
    launcher: Path
    root_plugin: Path
    distribution: Path
    build_seconds: float = 0.0


def _java_major(java: Path) -> int | None:
    try:
        done = subprocess.run(
            [str(java), "-version"], capture_output=True, text=True, timeout=60, check=False
        )
    except OSError:
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', done.stderr)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def find_java() -> Path:
    """A Java 17..24 runtime: ``GEAR_ES_JAVA_HOME``, ``JAVA_HOME``, a JDK 17 in
    ``/usr/lib/jvm``, or ``java`` on the PATH, in that order.

    Raises:
        ClusterUnavailable: none of them is a Java the cluster runs on.
    """
    candidates: list[Path] = []
    for var in ("GEAR_ES_JAVA_HOME", "JAVA_HOME"):
        if os.environ.get(var):
            candidates.append(Path(os.environ[var]) / "bin" / "java")
    candidates += sorted(Path("/usr/lib/jvm").glob("*17*/bin/java"))
    on_path = shutil.which("java")
    if on_path:
        candidates.append(Path(on_path))
    seen: list[str] = []
    for java in candidates:
        if not java.is_file():
            continue
        major = _java_major(java)
        seen.append(f"{java} ({major})")
        if major is not None and MIN_JAVA <= major <= MAX_JAVA:
            return java
    found = "; found " + ", ".join(seen) if seen else ""
    raise ClusterUnavailable(
        f"no Java {MIN_JAVA}-{MAX_JAVA} to run Elasticsearch {ES_VERSION}{found}: install "
        "a JDK 17 (apt-get install openjdk-17-jdk-headless) or set GEAR_ES_JAVA_HOME"
    )


def _newest_source() -> float:
    files = [PROJECT / "pom.xml", *PROJECT.glob("src/**/*.java")]
    return max(f.stat().st_mtime for f in files)


def build(java: Path | None = None) -> Artifacts:
    """Build ``tests/es-cluster`` with Maven unless its jars are newer than its sources.

    The first build on a machine downloads about 160 MB from Maven Central into ``~/.m2``.

    Raises:
        ClusterUnavailable: no Java or no Maven here.
        RuntimeError: Maven ran and failed (its last lines are in the message).
    """
    java = java or find_java()
    target = PROJECT / "target"
    artifacts = Artifacts(
        java=java,
        launcher=target / "gear-es-cluster.jar",
        root_plugin=target / "gear-es-cluster-root-plugin.jar",
        distribution=target / f"elasticsearch-{ES_VERSION}",
    )
    built = [artifacts.launcher, artifacts.root_plugin, artifacts.distribution / "lib"]
    if all(p.exists() for p in built) and min(p.stat().st_mtime for p in built[:2]) > _newest_source():
        return artifacts
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ClusterUnavailable(
            "Maven (mvn) is not installed: it builds the test cluster from Maven Central "
            "(apt-get install maven), or point GEAR_ES_URL at a running cluster"
        )
    from filelock import FileLock

    target.mkdir(exist_ok=True)
    started = time.perf_counter()
    with FileLock(str(target / ".build.lock")):
        env = {**os.environ, "JAVA_HOME": str(java.parent.parent)}
        done = subprocess.run(
            [mvn, "-q", "-B", "package"], cwd=PROJECT, env=env, capture_output=True, text=True,
            check=False,
        )
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise RuntimeError(f"building the test cluster (mvn package in {PROJECT}) failed:\n{tail}")
    return Artifacts(**{**artifacts.__dict__, "build_seconds": time.perf_counter() - started})


def _http_json(url: str, timeout: float = 30.0) -> dict:
    with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - loopback only
        return json.loads(response.read())


@dataclass
class EsCluster:
    """A running test cluster. ``url`` is node 1's HTTP address (what ``GEAR_ES_URL`` gets).

    Attributes:
        url: ``http://127.0.0.1:PORT`` of node 1.
        http: Each node's ``host:port`` while it runs (``None`` while stopped).
        home: Its directory: ``config``, ``node-N/data``, ``logs/cluster.log``.
        startup_seconds: From starting the JVM to a green cluster of every node.
        version: The server's version.
    """

    process: subprocess.Popen
    home: Path
    http: list[str | None]
    version: str
    startup_seconds: float
    keep_home: bool = False
    _events: queue.Queue = field(default_factory=queue.Queue, repr=False)

    @property
    def url(self) -> str:
        return f"http://{self.http[0]}"

    @property
    def nodes(self) -> int:
        return len(self.http)

    def rss_bytes(self) -> int:
        """Resident memory of the JVM (all nodes), from ``/proc``."""
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        match = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
        return int(match.group(1)) * 1024 if match else 0

    def health(self, wait_for: str = "green", timeout_s: float = 60.0) -> dict:
        """``_cluster/health``, waiting up to ``timeout_s`` for ``wait_for`` and every running node."""
        running = sum(1 for h in self.http if h is not None)
        alive = next(h for h in self.http if h is not None)
        query = f"wait_for_status={wait_for}&wait_for_nodes={running}&timeout={int(timeout_s)}s"
        try:
            return _http_json(f"http://{alive}/_cluster/health?{query}", timeout=timeout_s + 10)
        except urllib.error.HTTPError as err:
            if err.code == 408:  # timed out waiting: the body is the health as it stands
                return json.loads(err.read())
            raise

    def _command(self, line: str, expect: str, timeout_s: float = 120.0) -> dict:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        event = self._next_event(timeout_s)
        if event.get("event") != expect:
            raise RuntimeError(f"test cluster: {line!r} answered {event}")
        return event

    def _next_event(self, timeout_s: float) -> dict:
        try:
            event = self._events.get(timeout=timeout_s)
        except queue.Empty:
            raise RuntimeError(
                f"test cluster said nothing for {timeout_s:.0f} s; see {self.home}/logs"
            ) from None
        if event is None:
            raise RuntimeError(
                f"test cluster exited (code {self.process.poll()}); see {self.home}/logs"
            )
        return event

    def stop_node(self, number: int) -> None:
        """Close node ``number`` (1-based) gracefully; its data stays for :meth:`start_node`."""
        self._command(f"stop {number}", "stopped")
        self.http[number - 1] = None

    def start_node(self, number: int, settings: dict[str, str] | None = None) -> str:
        """Start node ``number`` again on its data, with ``settings`` on top of its own
        (e.g. ``{"indexing_pressure.memory.limit": "1kb"}``); returns its new HTTP address."""
        extra = "".join(f" {key}={value}" for key, value in (settings or {}).items())
        event = self._command(f"start {number}{extra}", "started")
        self.http[number - 1] = event["http"]
        return event["http"]

    def close(self) -> None:
        """Stop every node and the JVM (killed after 60 s), then delete ``home`` unless kept."""
        if self.process.poll() is None:
            with contextlib.suppress(BrokenPipeError, OSError, ValueError):
                assert self.process.stdin is not None
                self.process.stdin.write("quit\n")
                self.process.stdin.close()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)
        if not self.keep_home:
            shutil.rmtree(self.home, ignore_errors=True)

    def __enter__(self) -> EsCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _pump(stream, events: queue.Queue) -> None:
    for line in stream:
        line = line.strip()
        if line.startswith("{"):
            with contextlib.suppress(json.JSONDecodeError):
                events.put(json.loads(line))
    events.put(None)


def start(
    nodes: int = DEFAULT_NODES,
    heap: str = DEFAULT_HEAP,
    *,
    home: Path | None = None,
    parent: Path | None = None,
    timeout_s: float = 300.0,
    settings: dict[str, str] | None = None,
) -> EsCluster:
    """Build if needed, start ``nodes`` nodes in one JVM with ``heap``, wait for green
    (yellow for one node, which cannot hold the replicas of indices it already has).

    Args:
        nodes: How many nodes (each master-eligible and a data node).
        heap: The JVM's ``-Xms``/``-Xmx`` (shared by all nodes).
        home: Keep the cluster's files here (not deleted on close); default a fresh
            temporary directory under ``parent``, deleted on close.
        parent: Where the temporary directory goes (default the system's temp dir).
        timeout_s: Longest wait for the cluster to be green.
        settings: Node settings for every node on top of the launcher's own (e.g.
            ``{"node.processors": "2"}`` for a one-node benchmark cluster); ``path.repo`` is
            ``home/snapshot-repo`` unless given.

    Raises:
        ClusterUnavailable: no Java or Maven here.
        RuntimeError: the build or the start failed (with the reason).
    """
    artifacts = build()
    keep = home is not None
    if home is None:
        home = Path(tempfile.mkdtemp(prefix="gear-es-", dir=parent))
    home.mkdir(parents=True, exist_ok=True)
    command = [
        str(artifacts.java),
        f"-Xms{heap}",
        f"-Xmx{heap}",
        "-XX:+UseG1GC",
        "-XX:+ExitOnOutOfMemoryError",
        f"-Djava.io.tmpdir={home}",
        "-Dfile.encoding=UTF-8",
        "-Djava.awt.headless=true",
        "-Dlog4j2.formatMsgNoLookups=true",
        "-Dlog4j.shutdownHookEnabled=false",
        "-Dlog4j2.disable.jmx=true",
        "-Dio.netty.noUnsafe=true",
        "-Dio.netty.recycler.maxCapacityPerThread=0",
        "--module-path",
        str(artifacts.distribution / "lib"),
        "--add-modules",
        "ALL-MODULE-PATH",
        "-cp",
        str(artifacts.launcher),
        "gear.escluster.ClusterMain",
        "--home", str(home),
        "--dist", str(artifacts.distribution),
        "--root-plugin", str(artifacts.root_plugin),
        "--nodes", str(nodes),
        "--cluster-name", f"gear-test-{os.getpid()}",
    ]
    # snapshot repositories of type fs live under path.repo (gear snapshot registers one there)
    (home / "snapshot-repo").mkdir(exist_ok=True)
    settings = {"path.repo": str(home / "snapshot-repo"), **(settings or {})}
    command += ["--settings", " ".join(f"{key}={value}" for key, value in settings.items())]
    began = time.perf_counter()
    stderr = (home / "stderr.log").open("w")
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True,
        cwd=home,
    )
    stderr.close()
    events: queue.Queue = queue.Queue()
    threading.Thread(target=_pump, args=(process.stdout, events), daemon=True).start()
    cluster = EsCluster(process, home, [None] * nodes, "?", 0.0, keep, events)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            event = cluster._next_event(max(1.0, deadline - time.monotonic()))
            kind = event.get("event")
            if kind == "started":
                cluster.http[event["node"] - 1] = event["http"]
            elif kind == "ready":
                cluster.version = event["version"]
                break
            elif kind == "error":
                raise RuntimeError(f"test cluster failed to start: {event.get('message')}")
        # one node never holds the replicas of an index it has from an earlier run: yellow
        wanted = "green" if nodes > 1 else "yellow"
        health = cluster.health(wanted, max(5.0, deadline - time.monotonic()))
        if health.get("timed_out"):
            raise RuntimeError(f"test cluster is not {wanted}: {health}")
    except BaseException:
        cluster.close()
        raise
    cluster.startup_seconds = time.perf_counter() - began
    return cluster


@contextlib.contextmanager
def running(nodes: int = DEFAULT_NODES, heap: str = DEFAULT_HEAP, **kwargs) -> Iterator[EsCluster]:
    """:func:`start` as a context manager that always stops the cluster."""
    cluster = start(nodes, heap, **kwargs)
    try:
        yield cluster
    finally:
        cluster.close()


def reachable(url: str, timeout: float = 5.0) -> bool:
    """Whether ``url`` answers ``GET /`` (an external cluster given by ``GEAR_ES_URL``)."""
    try:
        _http_json(url, timeout)
    except (urllib.error.URLError, OSError, ValueError):
        return False
    return True
