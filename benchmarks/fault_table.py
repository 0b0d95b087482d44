"""The fault x outcome table: the GEAR agent against an OpenAI-compatible endpoint that fails.

Each fault of ``tests/support/fault_server.py`` is injected on the wire into the agent's
``ChatOpenAI`` calls, at one node, once or on every call, over the tiny 2-hop index of
the unit tests (3 iterations allowed; a healthy run makes 2 read, 2 reason, 1 rewrite and
1 answer calls). Client timeout 0.5 s, 2 retries with backoff (a call is tried at most
3 times), ``Retry-After`` honoured. Prints a Markdown table; ``tests/unit/test_agent_faults.py``
asserts the same outcomes.

    python benchmarks/fault_table.py             # every fault, sync runs (about a minute)
    python benchmarks/fault_table.py --async     # the same through ainvoke
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]

from support.agent_faults import FAULTS, FaultOutcome, run_fault_case  # noqa: E402
from support.tiny_corpus import make_runtime, make_settings  # noqa: E402

CASES = [
    ("read", False),
    ("reason", False),
    ("read", True),
    ("reason", True),
    ("rewrite", True),
    ("answer", True),
]


def header() -> list[str]:
    cells = [f"{'once' if not always else 'always'} at {node}" for node, always in CASES]
    return ["fault", *cells, "index unchanged, state ok, thread recovers", "slowest run (s)"]


def row(fault: str, outcomes: list[FaultOutcome]) -> list[str]:
    safe = all(o.index_unchanged and o.checkpoint_ok and o.recovered for o in outcomes)
    slowest = max(o.seconds for o in outcomes)
    return [fault, *(o.summary for o in outcomes), "yes" if safe else "**NO**", f"{slowest:.1f}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--async", dest="use_async", action="store_true", help="Use ainvoke.")
    parser.add_argument("--faults", help="Comma-separated subset of: " + ", ".join(FAULTS))
    args = parser.parse_args()
    faults = args.faults.split(",") if args.faults else list(FAULTS)
    unknown = [f for f in faults if f not in FAULTS]
    if unknown:
        parser.error(f"unknown faults {unknown}; choose from {list(FAULTS)}")

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "index"
        runtime = make_runtime(folder, make_settings(index_dir=folder, max_iterations=3))
        lines = [header()]
        for fault in faults:
            outcomes = [
                run_fault_case(runtime, fault, node, always=always, use_async=args.use_async)
                for node, always in CASES
            ]
            lines.append(row(fault, outcomes))
            print(f"done: {fault}", file=sys.stderr)
    print("| " + " | ".join(lines[0]) + " |")
    print("|" + "---|" * len(lines[0]))
    for line in lines[1:]:
        print("| " + " | ".join(line) + " |")


if __name__ == "__main__":
    main()
