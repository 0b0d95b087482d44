"""Start the test Elasticsearch cluster by hand (tests/support/es_cluster.py).

    python scripts/es_cluster.py                         # prints GEAR_ES_URL; Ctrl-C stops it
    python scripts/es_cluster.py -- python -m pytest -m es -q
    python scripts/es_cluster.py --nodes 1 --heap 1g -- gear eval ...
    python scripts/es_cluster.py --build-only            # build tests/es-cluster, say how long

With a command, the cluster is started, ``GEAR_ES_URL`` (and ``GEAR_BACKEND`` with
``--backend``) is set for the command, and the cluster is stopped when it exits; the exit
code is the command's. Java 17 and Maven are needed (the first run downloads about 160 MB
from Maven Central into ~/.m2).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]

from support import es_cluster  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=es_cluster.DEFAULT_NODES)
    parser.add_argument("--heap", default=es_cluster.DEFAULT_HEAP, help="JVM heap, all nodes")
    parser.add_argument("--home", type=Path, help="keep the cluster's data here")
    parser.add_argument("--parent", type=Path, help="temporary data under this folder")
    parser.add_argument("--backend", action="store_true", help="also set GEAR_BACKEND=elasticsearch")
    parser.add_argument("--build-only", action="store_true", help="only build it (Maven), timed")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND to run against it")
    args = parser.parse_args()
    if args.build_only:
        try:
            built = es_cluster.build()
        except es_cluster.ClusterUnavailable as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        print(f"test cluster built in {built.build_seconds:.1f} s: {built.distribution}", file=sys.stderr)
        return 0
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    try:
        cluster = es_cluster.start(args.nodes, args.heap, home=args.home, parent=args.parent)
    except es_cluster.ClusterUnavailable as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    with cluster:
        print(
            f"Elasticsearch {cluster.version}: {cluster.nodes} node(s) green in "
            f"{cluster.startup_seconds:.1f} s, JVM RSS {cluster.rss_bytes() / 2**20:.0f} MiB, "
            f"data in {cluster.home}",
            file=sys.stderr,
        )
        env = {**os.environ, "GEAR_ES_URL": cluster.url}
        if args.backend:
            env["GEAR_BACKEND"] = "elasticsearch"
        if not command:
            print(f"export GEAR_ES_URL={cluster.url}", flush=True)
            try:
                cluster.process.wait()
            except KeyboardInterrupt:
                pass
            return 0
        return subprocess.run(command, env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
