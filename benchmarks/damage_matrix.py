"""The damage matrix: every file of an embedded index damaged five ways, as a user meets it.

Builds one index with everything an index can hold (the synthetic corpus with its OpenIE
triples: > 50k triples, so a triple ANN part; the PPR graph cache with its phrase ANN; the
SiReRAG ablation pool; and a last commit still in the WAL, as a server killed after a
write leaves it), then, for each file kind x damage (delete / truncate / flip bytes / zero
/ read-only), on a fresh copy:

1. **probe**: ``gear search --json`` with the ``hybrid``, ``hybrid+naive_ge``, ``ppr`` and
   ``sirerag`` retrievers over a few questions, each answer compared with the undamaged
   index's;
2. ``gear check``, then ``gear check --repair``, then the probe again.

Each case ends in one class:

* **repaired**: the answers are the undamaged index's again and ``gear check`` passes
  (the damage was rebuilt by ``--repair`` or by the query itself);
* **clear error**: refused with one ``error:`` line, by the queries or by ``gear check
  --repair`` (the data it needs does not survive: the texts in ``index.sqlite``, a lost
  commit), and never answered wrongly;
* **silent**: a query answered differently from the undamaged index, exit 0, and said
  nothing beside its answer (a wrong answer nobody is told about; an answer from exact
  search while an ANN part is rebuilt, with a warning saying so, is not silent);
* **lost**: after ``--repair`` the index answers, but differently (data gone for good);
* **unrepaired**: answers right, but ``gear check`` still fails after ``--repair``;
* **traceback**: any step printed a Python traceback;
* **restored** (``--snapshots``): ``--repair`` restored the database from the snapshot
  (replaying what the WAL proves) and the answers are the undamaged index's again;
  **restored, lost named**: it did, and named in one line the commits it could not
  restore (the answers differ by what they added).

Plus the passage ANN part of a second index with > 50,000 passages (the five damages).
Read-only runs every step in a private mount namespace with that one file mounted
read-only (needs root and ``unshare``; the row says "skipped" otherwise).

    python benchmarks/damage_matrix.py --work /work/scratch-store/damage            # this checkout
    python benchmarks/damage_matrix.py --work /tmp/dm-main --code /work/main        # another checkout
    python benchmarks/damage_matrix.py --work W --snapshots --kinds index.sqlite,index.sqlite-wal \
        --modes "delete,truncate,flip bytes,zero" --ann-passages 0                   # snapshots on

The code under test is imported from ``--code`` (its ``gear_agent``); this script only
drives its command line, so it runs against older checkouts as long as their commands
take the same options.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
NEUTRAL = "/"
"""The child processes' working folder: one without a ``gear_agent`` package in it."""
MODEL = "hashing-384"
RETRIEVERS = ("hybrid", "hybrid+naive_ge", "ppr", "sirerag")
MODES = ("delete", "truncate", "flip bytes", "zero", "read-only")
KINDS = {
    "index.sqlite": "index.sqlite",
    "index.sqlite-wal": "index.sqlite-wal",
    "passage.vec": "passage.vec",
    "triple.vec": "triple.vec",
    "node.vec": "node.vec",
    "triple ANN part": "triple-*.usearch",
    "ppr-graph.npz": "ppr-graph.npz",
    "ppr-graph.json": "ppr-graph.json",
    "ppr-graph.phrases.hnsw": "ppr-graph.phrases.hnsw",
}
EXTRA_KINDS = {"index.generation": "index.generation"}
"""Files not every checkout has (the commit counter outside the WAL): shown after the nine."""

# ---- the driver: one child process runs the code under test's CLI -----------------------
DRIVER = r'''
import json, sys, traceback
import gear_agent
print(gear_agent.__file__, file=sys.stderr)
from typer.testing import CliRunner
from gear_agent.cli import app
steps = json.loads(sys.argv[1])
out = []
for args in steps:
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    text = result.output
    crashed = result.exception is not None and not isinstance(result.exception, SystemExit)
    if crashed:
        text += "".join(traceback.format_exception(result.exception))
    ids, notes = None, ""
    if args[0] == "search" and result.exit_code == 0:
        try:
            notes = text[:text.index("{")].strip()[:500]  # what it said beside its answer
            ids = [p["id"] for p in json.loads(text[text.index("{"):])["passages"]]
        except (ValueError, KeyError):
            ids = None
    out.append({"args": args, "exit": result.exit_code, "output": text[-3000:] if args[0] != "check" else text[-20000:], "ids": ids,
                "notes": notes, "traceback": crashed or "Traceback" in text})
print(json.dumps(out))
'''

WRITE_AND_DIE = r'''
import os, sys
from pathlib import Path
from gear_agent.config import GearSettings
from gear_agent.embedding import make_embedder
from gear_agent.store import open_store
from gear_agent.types import Passage
from gear_agent.ids import passage_id
settings = GearSettings(index_dir=Path(sys.argv[1]), embedding_model=sys.argv[2], bm25_tokenizer="word")
store = open_store(settings, make_embedder(settings), create=False)
title, text = "Late Commit", "The last commit before the crash holds this passage."
store.passages.add([Passage(passage_id(title, text), title, text, "late.json")])
os._exit(0)  # killed after the commit: it stays in the WAL, not checkpointed
'''


def cli(code: Path, steps: list[list[str]], read_only: Path | None = None, timeout: int = 900) -> list[dict[str, Any]]:
    """Run CLI steps of the code under test in one child process (inside a mount namespace
    with ``read_only`` mounted read-only when given)."""
    env = {**os.environ, "PYTHONPATH": str(code), "GEAR_EMBEDDING_MODEL": MODEL, "GEAR_BM25_TOKENIZER": "word",
           "GEAR_LOG_LEVEL": "ERROR"}
    command = [sys.executable, "-c", DRIVER, json.dumps(steps)]
    if read_only is not None:
        quoted = " ".join(_quote(c) for c in command)
        command = ["unshare", "-m", "sh", "-c",
                   f"mount --bind {_quote(str(read_only))} {_quote(str(read_only))} && "
                   f"mount -o remount,ro,bind {_quote(str(read_only))} && {quoted}"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout, check=False,
                          cwd=NEUTRAL)  # `python -c` puts its folder first on sys.path
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return [{"args": s, "exit": done.returncode, "output": done.stderr[-3000:],
                 "traceback": "Traceback" in done.stderr} for s in steps]


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def read_only_supported(work: Path) -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = work / ".ro-probe"
    probe.write_text("x")
    done = subprocess.run(["unshare", "-m", "sh", "-c", f"mount --bind {probe} {probe} && "
                           f"mount -o remount,ro,bind {probe}"], capture_output=True, check=False)
    probe.unlink()
    return done.returncode == 0


# ---- building the index ---------------------------------------------------------------
def build(code: Path, work: Path, passages: int, with_triples: bool = True,
          reuse: bool = False, snapshot: bool = False) -> tuple[Path, list[str]]:
    """The pristine index and the probe questions (``reuse``: the index a previous run of
    the same code left under ``work``, when there is one; ``snapshot``: ``gear snapshot``
    once it is built, before the last commit, which stays in the WAL only)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from synthetic_corpus import write

    data = work / f"data-{passages}"
    corpus, openie = write(passages, data)
    index = work / f"pristine-{passages}{'-snapshot' if snapshot else ''}"
    docs = json.loads(openie.read_text(encoding="utf-8"))["docs"]
    questions = [f"What did {d['extracted_triples'][0][0]} {d['extracted_triples'][0][1]}?"
                 for d in (docs[7], docs[len(docs) // 2], docs[-3])]
    if with_triples:  # finds the passage of the last commit (the one left in the WAL)
        questions.append("Which passage holds the last commit before the crash?")
    if reuse and (index / "index.sqlite").exists():
        return index, questions
    shutil.rmtree(index, ignore_errors=True)
    steps = [["index", str(corpus), *(["--openie", str(openie)] if with_triples else []), "--index", str(index)]]
    if with_triples:
        steps += [["search", questions[0], "--retriever", "ppr", "--index", str(index)],  # the graph cache
                  ["sirerag", "build", "--mode", "ablation", "--index", str(index)]]
    if snapshot:
        steps.append(["snapshot", "--index", str(index)])
    for step in cli(code, steps, timeout=3600):
        if step["exit"] != 0:
            raise SystemExit(f"building the index failed at {step['args'][:2]}:\n{step['output']}")
    if with_triples:
        env = {**os.environ, "PYTHONPATH": str(code)}
        subprocess.run([sys.executable, "-c", WRITE_AND_DIE, str(index), MODEL], env=env, check=True, cwd=NEUTRAL)
    return index, questions


def probe_steps(index: Path, questions: list[str], retrievers: tuple[str, ...]) -> list[list[str]]:
    return [["search", q, "--retriever", r, "--k", "5", "--json", "--index", str(index)]
            for q in questions for r in retrievers]


def answers(results: list[dict[str, Any]]) -> list[Any]:
    """The ranked passage ids of each probe step, or the error line."""
    found: list[Any] = []
    for step in results:
        if step["exit"] == 0:
            found.append(step.get("ids") if step.get("ids") is not None else ("unreadable", step["output"][-200:]))
        else:
            found.append(("exit", step["exit"]))
    return found


# ---- damage -------------------------------------------------------------------------------
def damage(path: Path, mode: str) -> None:
    size = path.stat().st_size
    if mode == "delete":
        path.unlink()
    elif mode == "truncate":
        os.truncate(path, size // 2)
    elif mode in ("flip bytes", "zero"):
        with path.open("r+b") as handle:
            if mode == "zero":
                offset = max(0, (size // 2) // 4096 * 4096)
                handle.seek(offset)
                handle.write(bytes(min(4096, size - offset)))
            else:
                for fraction in (3, 2):
                    offset = max(0, size // fraction - 32)
                    handle.seek(offset)
                    chunk = handle.read(64)
                    handle.seek(offset)
                    handle.write(bytes(b ^ 0xFF for b in chunk))


def classify(first: list[Any], baseline: list[Any], repair: dict[str, Any], final: list[Any],
             final_check: dict[str, Any], steps: list[dict[str, Any]]) -> str:
    """The case's class (see the module docstring)."""
    if any(s["traceback"] for s in steps):
        return "traceback"
    if any(a != b and not isinstance(a, tuple) and not said
           for a, b, said in zip(first, baseline, said_something(steps[:len(first)]))):
        return "silent"
    if restored_line(repair) and final_check["exit"] == 0:
        return "restored" if final == baseline else "restored, lost named"
    if final == baseline and final_check["exit"] == 0:
        return "repaired"
    if repair["exit"] == 2 and final_check["exit"] != 0:
        return "clear error"  # --repair refused in one line, and the check still says why
    if final == baseline:
        return "unrepaired"
    if any(isinstance(a, tuple) for a in first):
        return "clear error"
    return "lost"


def restored_line(repair: dict[str, Any]) -> str:
    """The line ``gear check --repair`` printed when it restored the database from a
    snapshot (or kept a sound one and named its lost commits), else ""."""
    text = " ".join(str(repair.get("output", "")).split())
    start = max(text.find("repaired: restored index.sqlite"), text.find("repaired: kept index.sqlite"))
    if start < 0:
        return ""
    end = text.find(" repaired: ", start + 1)
    return text[start + len("repaired: "): end if end > 0 else None].split(" ┏")[0].split(" check of ")[0]


def said_something(steps: list[dict[str, Any]]) -> list[bool]:
    """Per probe step: whether it told the user about damage beside its JSON (a warning
    such as "ANN index ... is missing or fails its checksum; searching those rows
    exactly"), so that a different answer is not a silent one. Progress bars do not count."""
    words = ("missing", "fails", "damaged", "rebuil", "cannot", "warning", "error")
    return [any(w in line.lower() for line in str(step.get("notes", "")).splitlines()
                if "━" not in line for w in words) for step in steps]


def one_line(steps: list[dict[str, Any]]) -> bool:
    """Whether every failing step said one ``error:`` line (and nothing like a traceback)."""
    for step in steps:
        if step["exit"] == 2:
            lines = [line for line in step["output"].splitlines() if line.startswith("error:")]
            if len(lines) != 1:
                return False
    return True


def run_case(code: Path, pristine: Path, work: Path, questions: list[str], baseline: list[Any],
             kind: str, pattern: str, mode: str, retrievers: tuple[str, ...], read_only_ok: bool) -> dict[str, Any]:
    case = work / "case"
    shutil.rmtree(case, ignore_errors=True)
    shutil.copytree(pristine, case)
    matches = sorted(case.glob(pattern), key=lambda p: -p.stat().st_size)
    row: dict[str, Any] = {"kind": kind, "mode": mode}
    if not matches:
        return {**row, "class": "n/a (no such file)"}
    target = matches[0]
    read_only = None
    if mode == "read-only":
        if not read_only_ok:
            return {**row, "class": "skipped (needs root and unshare)"}
        read_only = target
    else:
        damage(target, mode)
    started = time.perf_counter()
    first_steps = cli(code, [*probe_steps(case, questions, retrievers), ["check", "--index", str(case)]], read_only)
    first, check = answers(first_steps[:-1]), first_steps[-1]
    repair = cli(code, [["check", "--repair", "--index", str(case)]], read_only)[0]
    final_steps = cli(code, [*probe_steps(case, questions, retrievers), ["check", "--index", str(case)]], read_only)
    final, final_check = answers(final_steps[:-1]), final_steps[-1]
    steps = [*first_steps, repair, *final_steps]
    verdict = classify(first, baseline, repair, final, final_check, steps)
    errors = [s["output"].strip().splitlines()[-1][:160] for s in first_steps[:-1] if s["exit"] == 2]
    return {**row, "file": target.name, "class": verdict, "one_line": one_line(steps),
            "first": "same" if first == baseline else ("error" if all(isinstance(a, tuple) for a in first) else "differs"),
            "first_answers": ["error" if isinstance(a, tuple) else ("same" if a == b else "differs")
                              for a, b in zip(first, baseline)],
            "check_exit": check["exit"], "repair_exit": repair["exit"], "final_check_exit": final_check["exit"],
            "error": errors[0] if errors else "", "restored": restored_line(repair),
            "notes": next((s["notes"][:160] for s in first_steps[:-1] if s.get("notes")), ""), "seconds": round(time.perf_counter() - started, 1)}


def baseline_of(code: Path, pristine: Path, work: Path, questions: list[str],
                retrievers: tuple[str, ...]) -> list[Any]:
    """The undamaged index's answers, asked of a copy (a query checkpoints the WAL)."""
    copy = work / "baseline"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(pristine, copy)
    found = answers(cli(code, probe_steps(copy, questions, retrievers)))
    shutil.rmtree(copy, ignore_errors=True)
    if any(isinstance(a, tuple) for a in found):
        raise SystemExit(f"the undamaged index does not answer: {found}")
    return [[i.replace(str(copy), str(work / "case")) for i in a] for a in found]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, required=True, help="Folder for the indexes and copies.")
    parser.add_argument("--code", type=Path, default=ROOT, help="Checkout whose gear_agent is tested.")
    parser.add_argument("--passages", type=int, default=6000, help="Passages of the main index.")
    parser.add_argument("--ann-passages", type=int, default=52_000,
                        help="Passages of the second index (its passage ANN part); 0 skips it.")
    parser.add_argument("--kinds", default="", help="Only these file kinds (comma-separated).")
    parser.add_argument("--json", type=Path, default=None, help="Also write the rows here.")
    parser.add_argument("--modes", default="", help="Only these damages (comma-separated).")
    parser.add_argument("--print-rows", nargs="+", type=Path, default=None, metavar="FILE",
                        help="Only print the matrix of rows saved before (JSON lines, as printed on "
                             "standard error; a later row of a case replaces an earlier one).")
    parser.add_argument("--snapshots", action="store_true",
                        help="Snapshots on: `gear snapshot` after the index is built, before its last "
                             "commit (which stays in the WAL only); --repair restores from it.")
    parser.add_argument("--reuse", action="store_true",
                        help="Reuse the pristine indexes a previous run of the same --code left in --work.")
    args = parser.parse_args()
    if args.print_rows:
        print_matrix(saved_rows(args.print_rows))
        return
    args.work.mkdir(parents=True, exist_ok=True)
    read_only_ok = read_only_supported(args.work)
    pristine, questions = build(args.code, args.work, args.passages, reuse=args.reuse, snapshot=args.snapshots)
    baseline = baseline_of(args.code, pristine, args.work, questions, RETRIEVERS)
    wanted = set(filter(None, args.kinds.split(",")))
    modes = [m for m in MODES if m in args.modes.split(",")] if args.modes else list(MODES)
    rows = []
    for kind, pattern in {**KINDS, **EXTRA_KINDS}.items():
        if wanted and kind not in wanted:
            continue
        for mode in modes:
            rows.append(run_case(args.code, pristine, args.work, questions, baseline, kind, pattern, mode,
                                 RETRIEVERS, read_only_ok))
            print(json.dumps(rows[-1]), file=sys.stderr)
    if args.ann_passages and (not wanted or "passage ANN part" in wanted):
        big, big_questions = build(args.code, args.work, args.ann_passages, with_triples=False, reuse=args.reuse)
        big_base = baseline_of(args.code, big, args.work, big_questions, ("dense", "hybrid"))
        for mode in modes:
            rows.append(run_case(args.code, big, args.work, big_questions, big_base, "passage ANN part",
                                 "passage-*.usearch", mode, ("dense", "hybrid"), read_only_ok))
            print(json.dumps(rows[-1]), file=sys.stderr)
    shutil.rmtree(args.work / "case", ignore_errors=True)
    print_matrix(rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")


def saved_rows(files: list[Path]) -> list[dict[str, Any]]:
    """The rows in ``files`` (JSON lines among other output), one per case, in matrix order."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for file in files:
        for line in file.read_text(encoding="utf-8").splitlines():
            if line.startswith("{"):
                row = json.loads(line)
                found[(row["kind"], row["mode"])] = row
    order = [*KINDS, *EXTRA_KINDS, "passage ANN part"]
    return sorted(found.values(), key=lambda r: (order.index(r["kind"]) if r["kind"] in order else len(order),
                                                 MODES.index(r["mode"])))


def print_matrix(rows: list[dict[str, Any]]) -> None:
    kinds = list(dict.fromkeys(r["kind"] for r in rows))
    print("| file | " + " | ".join(MODES) + " |")
    print("|---|" + "---|" * len(MODES))
    for kind in kinds:
        cells = {r["mode"]: r["class"] for r in rows if r["kind"] == kind}
        print(f"| {kind} | " + " | ".join(cells.get(m, "-") for m in MODES) + " |")
    counted: dict[str, int] = {}
    for row in rows:
        counted[row["class"]] = counted.get(row["class"], 0) + 1
    print("\n" + ", ".join(f"{name}: {n}" for name, n in sorted(counted.items())))
    multi = [f"{r['kind']}/{r['mode']}" for r in rows if r.get("one_line") is False]
    print("errors of more than one line: " + (", ".join(multi) if multi else "none"))
    restored = [r for r in rows if r.get("restored")]
    if restored:
        print("\n| file | damage | what `gear check --repair` said |\n|---|---|---|")
        for row in restored:
            print(f"| {row['kind']} | {row['mode']} | {row['restored']} |")


if __name__ == "__main__":
    main()
