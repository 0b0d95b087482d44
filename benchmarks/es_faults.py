"""The fault table of the Elasticsearch backend: each fault of a real cluster, what the user sees.

Starts the test cluster (3 nodes in one JVM, ``tests/support/es_cluster.py``), runs every
scenario of ``tests/support/es_faults.py`` (the ones ``tests/integration/test_es_faults.py``
asserts) and prints a Markdown table: the error (one line), whether everything committed
before the fault is still stored, whether a rerun of the same work completed.

    python benchmarks/es_faults.py          # about 3 minutes
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]

from support import es_cluster, es_faults  # noqa: E402


def main() -> None:
    with es_cluster.running(3) as cluster, tempfile.TemporaryDirectory() as cache:
        print(f"Elasticsearch {cluster.version}, {cluster.nodes} nodes in one JVM\n")
        print("| fault | what the call raised (one line) | committed kept | rerun completes | s | seen |")
        print("|---|---|---|---|---|---|")
        for scenario in es_faults.SCENARIOS:
            o = scenario(cluster, Path(cache))
            error = (o.error[:220] + " ...") if len(o.error) > 220 else (o.error or "nothing: completed")
            print(f"| {o.fault} | {error.replace('|', '/')} | {'yes' if o.committed_kept else '**NO**'} | "
                  f"{'yes' if o.rerun_ok else '**NO**'} | {o.seconds:.1f} | {o.note.replace('|', '/')} |",
                  flush=True)


if __name__ == "__main__":
    main()
