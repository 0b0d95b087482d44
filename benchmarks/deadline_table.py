"""Fault x worst-case seconds per question, without and with a deadline (GEAR_DEADLINE_S).

Every chat call of the GEAR agent gets the same fault from ``tests/support/fault_server.py``
over loopback HTTP (the real ``ChatOpenAI`` client, the default retry policy: 4 retries,
1 s base backoff, Retry-After honoured up to 120 s), over the tiny 2-hop index of the unit
tests (3 iterations allowed):

- ``timeout``: the server answers only after ``--server-delay`` s; the client's request
  timeout is ``--client-timeout`` s.
- ``429 + Retry-After``: every call is rate limited with ``Retry-After: --retry-after``.
- ``trickle``: a whole reply, 8 bytes every 0.8 s (each read is inside a 1 s timeout, so
  only a bound on the whole call stops it).

"before" is the run with no deadline (``GEAR_DEADLINE_S=0``), "after" with ``--deadline``.
Prints a Markdown table; ``tests/unit/test_deadline.py`` asserts the outcomes.

    python benchmarks/deadline_table.py                 # about 6 minutes (the "before" runs)
    python benchmarks/deadline_table.py --deadline 10 --async
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]

from support.deadline_runs import DEADLINE_FAULTS, DeadlineOutcome, FaultTiming, run_deadline_case  # noqa: E402
from support.tiny_corpus import make_runtime, make_settings  # noqa: E402


def ending(outcome: DeadlineOutcome) -> str:
    if outcome.error is not None:
        return f"fails ({type(outcome.error).__name__})"
    return f"stop_reason={outcome.stop_reason}, {outcome.passages} passages"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--deadline", type=float, default=5.0, help="GEAR_DEADLINE_S of 'after'.")
    parser.add_argument("--client-timeout", type=float, default=2.0)
    parser.add_argument("--server-delay", type=float, default=8.0)
    parser.add_argument("--retry-after", type=float, default=10.0)
    parser.add_argument("--async", dest="use_async", action="store_true", help="Use ainvoke.")
    parser.add_argument("--faults", help="Comma-separated subset of: " + ", ".join(DEADLINE_FAULTS))
    parser.add_argument("--after-only", action="store_true", help="Skip the slow 'before' runs.")
    args = parser.parse_args()
    if args.deadline <= 0:
        parser.error("--deadline must be > 0")
    faults = args.faults.split(",") if args.faults else list(DEADLINE_FAULTS)
    unknown = [f for f in faults if f not in DEADLINE_FAULTS]
    if unknown:
        parser.error(f"unknown faults {unknown}; choose from {list(DEADLINE_FAULTS)}")

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "index"
        runtime = make_runtime(folder, make_settings(index_dir=folder, max_iterations=3))
        for fault in faults:
            client_timeout = 1.0 if fault == "trickle" else args.client_timeout
            timing = FaultTiming(client_timeout_s=client_timeout, server_delay_s=args.server_delay,
                                 retry_after_s=args.retry_after)
            before = None if args.after_only else run_deadline_case(
                runtime, fault, 0, timing=timing, use_async=args.use_async)
            after = run_deadline_case(runtime, fault, args.deadline, timing=timing,
                                      use_async=args.use_async)
            rows.append((fault, client_timeout, before, after))
            print(f"done: {fault}", file=sys.stderr)
    print(f"| fault (every call) | request timeout (s) | before: s / question | before: ends | "
          f"after ({args.deadline:g} s deadline): s / question | after: ends | after: requests |")
    print("|---|---|---|---|---|---|---|")
    for fault, client_timeout, before, after in rows:
        b_s = "-" if before is None else f"{before.seconds:.1f}"
        b_end = "-" if before is None else f"{ending(before)}, {before.requests} requests"
        print(f"| {fault} | {client_timeout:g} | {b_s} | {b_end} | {after.seconds:.1f} | "
              f"{ending(after)} | {after.requests} |")


if __name__ == "__main__":
    main()
