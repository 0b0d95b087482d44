"""The whole pipeline against a real LLM served offline: extraction, SyncGE, GEAR with an answer.

The model is Gemma 3 270M (base, Q4_K_M) served by llama-cpp-python on loopback
(``scripts/local_llm.sh``; see docs/local-llm.md), reached through the same
OpenAI-compatible path a user takes: ``OPENAI_BASE_URL`` and ``GEAR_LLM_MODEL``.

1. ``gear index examples/demo/corpus.json --extract`` (the CLI, in a subprocess) has the
   model extract triples from the 12 demo passages.
2. SyncGE retrieves for a demo question over that index.
3. The GEAR agent runs to its answer, traced by the JSON Lines tracer.

The JSON prompts go out with ``GEAR_LLM_RESPONSE_FORMAT=json_object_schema``, so the
server constrains those replies to the prompt's schema. So small a model still answers
poorly, so these tests check the pipeline's contract, never
answer quality: the run finishes with a well-formed state, every reply is either parsed
or recorded (``dropped``, the extraction's failures, and every chat call's output in the
trace), nothing crashes, and the reported token counts are above zero.

Skipped, with the reason, when the local LLM is not installed (``scripts/local_llm.sh
install``; ``.ci/run`` installs it from a cached wheel).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.local_llm import LOCAL_LLM_MODEL, local_llm_available, running_local_llm

from gear_agent.agent.graph import build_agent
from gear_agent.agent.syncge import SyncGERetriever
from gear_agent.config import GearSettings
from gear_agent.llm.client import LLMClient
from gear_agent.open_index import OpenIndex
from gear_agent.parts import index_parts
from gear_agent.tracing.jsonl_tracer import FILE_NAME, JsonlTracer
from gear_agent.tracing.reader import build_tree, read_runs, roots

_AVAILABLE, _REASON = local_llm_available()
pytestmark = [
    pytest.mark.llm,
    pytest.mark.slow,
    pytest.mark.skipif(not _AVAILABLE, reason=_REASON),
    pytest.mark.timeout(900),
]

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "demo"
QUESTION = "Who was the spouse of the founder of the Kestrel Observatory?"
MAX_ITERATIONS = 2
REPLY_TOKENS = 160
"""Reply cap: the base model rarely stops by itself in plain text, so those replies run to
this; constrained JSON replies end when the JSON does."""

RESPONSE_FORMAT = "json_object_schema"
"""llama-cpp-python turns the schema into a grammar, so the JSON prompts' replies parse
(a base model this small otherwise echoes the prompt instead of writing JSON)."""

LLM_NODES = {"read", "reason", "rewrite", "answer"}

SUMMARY = re.compile(
    r"extraction: (\d+) passages sent, (\d+) ok, (\d+) failed, ([\d,]+) triples kept, "
    r"([\d,]+) malformed dropped, (?:[\d,]+ not found in their passage dropped, )?"
    r"([\d,]+) input \+ ([\d,]+) output tokens"
)
"""The summary line ``gear index --extract`` prints."""


def llm_environment(base_url: str) -> dict[str, str]:
    """What a user sets to point gear-agent at a local OpenAI-compatible server."""
    return {
        "OPENAI_BASE_URL": base_url,
        "GEAR_LLM_MODEL": LOCAL_LLM_MODEL,
        "GEAR_LLM_MAX_TOKENS": str(REPLY_TOKENS),
        "GEAR_LLM_TIMEOUT_S": "180",
        "GEAR_LLM_MAX_RETRIES": "1",
        "GEAR_LLM_CONCURRENCY": "1",  # the server runs one request at a time anyway
        "GEAR_LLM_RESPONSE_FORMAT": RESPONSE_FORMAT,
    }


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Serve the model, extract the demo corpus with it, and keep serving for the tests."""
    folder = tmp_path_factory.mktemp("local-llm-pipeline")
    index = folder / "index"
    with running_local_llm(startup_timeout_s=180) as base_url:
        env = {**os.environ, **llm_environment(base_url), "GEAR_INDEX_DIR": str(index)}
        env["COLUMNS"] = "250"  # one summary line, not wrapped by rich
        env.pop("OPENAI_API_KEY", None)
        indexed = subprocess.run(
            [sys.executable, "-m", "gear_agent.cli", "index", str(DEMO / "corpus.json"), "--extract"],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        with pytest.MonkeyPatch.context() as patch:
            for name, value in llm_environment(base_url).items():
                patch.setenv(name, value)
            patch.delenv("OPENAI_API_KEY", raising=False)
            settings = GearSettings(index_dir=index, max_iterations=MAX_ITERATIONS)
            yield {
                "indexed": indexed,
                "settings": settings,
                "runtime": OpenIndex.open(settings) if indexed.returncode == 0 else None,
                "folder": folder,
            }


def test_extraction_with_the_real_model_keeps_or_records_every_passage(pipeline) -> None:
    indexed = pipeline["indexed"]
    output = indexed.stdout + indexed.stderr  # the CLI reports on stderr
    assert indexed.returncode == 0, output
    summary = SUMMARY.search(output)
    assert summary, output
    sent, ok, failed, kept, malformed, input_tokens, output_tokens = (
        int(value.replace(",", "")) for value in summary.groups()
    )
    print(summary.group(0))  # shown with -s: the run's counts
    print("\n".join(line for line in output.splitlines() if line.startswith("warning:")))

    store = pipeline["runtime"].store
    passages = {p.id for p in store.passages.iterate()}
    assert len(passages) == 12
    assert sent == ok + failed == 12  # every reply parsed (ok) or recorded as a failure
    assert len(store.passages.unextracted()) == failed  # failures stay for the next run
    assert store.triples.count() == kept
    assert malformed >= 0
    # Constrained decoding: the replies are the schema's JSON, so triples are kept.
    assert ok >= 1 and kept >= 1, summary.group(0)
    assert input_tokens > 0 and output_tokens > 0
    for triple in store.triples.iterate():
        parts = (triple.subject, triple.predicate, triple.object)
        assert all(isinstance(p, str) and p.strip() for p in parts), triple
        assert triple.passage_id in passages


def test_syncge_with_the_real_model(pipeline) -> None:
    runtime = pipeline["runtime"]
    assert runtime is not None, "indexing failed; see the extraction test"
    llm = LLMClient.from_settings(pipeline["settings"])

    ranked = SyncGERetriever(index_parts(runtime), llm, settings=runtime.settings).retrieve(QUESTION, 5)

    assert 1 <= len(ranked) <= 5
    stored = {p.id for p in runtime.store.passages.iterate()}
    assert all(p.id in stored for p in ranked)
    assert [p.score for p in ranked] == sorted((p.score for p in ranked), reverse=True)
    read = llm.usage.as_dict()["by_node"]["read"]
    assert read["calls"] == 1 and read["input"] > 0 and read["output"] > 0


def test_gear_agent_answers_with_the_real_model(pipeline) -> None:
    runtime = pipeline["runtime"]
    assert runtime is not None, "indexing failed; see the extraction test"
    traces = pipeline["folder"] / "traces"
    agent = build_agent(pipeline["settings"], index=runtime)

    state = agent.invoke({"question": QUESTION}, config={"callbacks": [JsonlTracer(traces)]})

    print(  # shown with -s: what the real model did
        f"agent: answer={state['answer']!r} stop={state['stop_reason']} "
        f"iterations={state['iterations']} memory={state['gist_memory']} "
        f"queries={state['queries']} dropped={len(state['dropped'])} tokens={state['tokens']}"
    )

    # A well-formed final state.
    assert 1 <= state["iterations"] <= MAX_ITERATIONS
    assert state["stop_reason"] in {"answerable", "max_iterations"}
    assert len(state["queries"]) == state["iterations"]
    assert all(isinstance(q, str) and q.strip() for q in state["queries"])
    stored = {p.id for p in runtime.store.passages.iterate()}
    assert state["passages"] and all(p["id"] in stored for p in state["passages"])
    for triple in state["gist_memory"]:
        assert len(triple) == 3 and all(isinstance(p, str) and p.strip() for p in triple)
    for record in state["dropped"]:
        assert record["node"] in LLM_NODES and (record.get("error") or record.get("item"))

    # The answer step ran: an answer, or its failure recorded.
    answered = isinstance(state["answer"], str) and state["answer"].strip()
    assert answered or any(d["node"] == "answer" for d in state["dropped"])

    # Real token counts, reported by the server, for every LLM node that ran.
    tokens = state["tokens"]
    assert tokens["input"] > 0 and tokens["output"] > 0
    assert {"read", "reason", "answer"} <= set(tokens["by_node"])
    for node, usage in tokens["by_node"].items():
        assert usage["calls"] >= 1 and usage["input"] > 0 and usage["output"] > 0, node

    # Every chat call's raw output is in the trace, under the node that made it.
    runs = read_runs(traces / FILE_NAME)
    tree = build_tree(runs, roots(runs)[-1]["id"])
    chats = [n for n in tree.walk() if n.record["run_type"] == "llm"]
    assert len(chats) == sum(u["calls"] for u in tokens["by_node"].values())
    for chat in chats:
        text = json.dumps(chat.record["outputs"])
        assert chat.record["error"] is None and len(text) > 20
        assert chat.record["tokens"]["input"] > 0
