"""How fast the `gear` command answers when it has nothing heavy to do: its help, and checks
that fail (no index, no LLM, a bad argument). Prints a table of medians.

Each command runs in a fresh Python process (``python -m gear_agent.cli``), as a user's
shell would start it, ``--runs`` times; the first run of each is a warm-up and is not
counted. Both wall time and CPU time (user + system) are shown: on shared, busy cores the
wall time is a multiple of the CPU time, which is what the command itself costs. ``--compare DIR`` runs the same commands against another checkout (say
``/work/main``) in the same session, interleaved, so the two columns share the machine's
load and their ratio is fair.

    python benchmarks/cli_latency.py                      # this checkout
    python benchmarks/cli_latency.py --compare ../main    # and another one, side by side

The commands run with the default embedding model (all-MiniLM-L6-v2), as a newcomer's
would. The indexes they check are built here without loading it: one recorded as built
with all-MiniLM-L6-v2 (by a stand-in that writes deterministic vectors: the checks read
only its manifest) and one with the model-free ``hashing-64``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def commands(minilm: Path, hashing: Path, missing: Path) -> list[tuple[str, list[str], dict[str, str]]]:
    """(label, arguments, extra environment) of each measured command."""
    no_llm = {"OPENAI_API_KEY": "", "OPENAI_BASE_URL": "", "GEAR_LLM_MODEL": "gpt-4o-mini"}
    return [
        ("gear --help", ["--help"], {}),
        ("gear search -h", ["search", "-h"], {}),
        ("search: no index here", ["search", "q", "--index", str(missing)], {}),
        ("search: index of another model", ["search", "q", "--index", str(hashing)], {}),
        ("search --retriever syncge: no LLM", ["search", "q", "--retriever", "syncge",
                                               "--index", str(minilm)], no_llm),
        ("search --k 0", ["search", "q", "--k", "0", "--index", str(minilm)], {}),
        ("info (no model)", ["info", "--index", str(minilm)], {}),
    ]


def build_indexes(folder: Path) -> tuple[Path, Path]:
    """Two small indexes, recorded as built with all-MiniLM-L6-v2 and with hashing-64."""
    sys.path.insert(0, str(ROOT))
    from gear_agent.embedding.hashing import HashingEmbedder
    from gear_agent.store.embedded.store import EmbeddedStore
    from gear_agent.types import Passage

    passages = [Passage(f"p-{i}", f"T{i}", f"passage {i}", "bench") for i in range(20)]
    stand_in = HashingEmbedder(384, name="sentence-transformers/all-MiniLM-L6-v2")
    for path, embedder in ((folder / "minilm", stand_in), (folder / "hashing", HashingEmbedder(64))):
        store = EmbeddedStore.open(path, embedder)
        store.passages.add(passages)
        store.close()
    return folder / "minilm", folder / "hashing"


def time_once(checkout: Path, args: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user + system) and exit status of one run of
    ``checkout``'s CLI (``cwd`` holds no code, so ``python -m`` imports the package from
    ``PYTHONPATH`` only). CPU time is what the command costs; on shared, busy cores the
    wall time is a multiple of it."""
    environ = {**os.environ, "PYTHONPATH": str(checkout), "COLUMNS": "100", **env}
    environ.pop("GEAR_EMBEDDING_MODEL", None)  # the default model, as a newcomer has it
    for name, value in env.items():
        if value == "":
            environ.pop(name, None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "gear_agent.cli", *args], env=environ,
                          capture_output=True, timeout=300, cwd=cwd)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="timed runs per command (after one warm-up)")
    parser.add_argument("--compare", type=Path, help="another checkout to time alongside")
    parser.add_argument("--json", type=Path, help="also write the medians here")
    options = parser.parse_args()
    checkouts = {"this": ROOT}
    if options.compare:
        checkouts[str(options.compare)] = options.compare.resolve()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        minilm, hashing = build_indexes(Path(tmp))
        rows = []
        for label, args, env in commands(minilm, hashing, Path(tmp) / "missing"):
            walls: dict[str, list[float]] = {name: [] for name in checkouts}
            cpus: dict[str, list[float]] = {name: [] for name in checkouts}
            codes: dict[str, int] = {}
            for run in range(options.runs + 1):
                for name, checkout in checkouts.items():  # interleaved: same load for both
                    wall, cpu, code = time_once(checkout, args, env, Path(tmp))
                    codes[name] = code
                    if run:
                        walls[name].append(wall)
                        cpus[name].append(cpu)
            rows.append((label, {n: statistics.median(t) for n, t in walls.items()},
                         {n: statistics.median(t) for n, t in cpus.items()}, codes))
    header = "| command | " + " | ".join(
        f"{n}: wall s | {n}: CPU s | {n}: exit" for n in checkouts) + " |"
    print(header)
    print("|" + "---|" * (3 * len(checkouts) + 1))
    for label, walls_, cpus_, codes in rows:
        cells = [f"{walls_[n]:.2f} | {cpus_[n]:.2f} | {codes[n]}" for n in checkouts]
        print(f"| {label} | " + " | ".join(cells) + " |")
    print(f"\nmedians of {options.runs} runs per command after one warm-up; {os.cpu_count()} CPUs; "
          f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after")
    if options.json:
        options.json.write_text(json.dumps(
            {label: {"wall_s": w, "cpu_s": c} for label, w, c, _ in rows}, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
