"""True provenance (issue 36): a passage the agent reached through PPR carries, as a
``seeds`` chain, only the seed triples that name a phrase of its own triples (their
restart mass flowed straight into it), or no chain; never the whole gist memory. The
same on the page's API, ``/gear/invoke`` and the playground's text."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("langserve", reason="the serve extra is not installed (pip install gear-agent[serve])")

from fastapi.testclient import TestClient  # noqa: E402
from support.agent_faults import ANSWER, QUESTION, capable_reply, node_of  # noqa: E402
from support.fakes import StreamingChatModel  # noqa: E402
from support.tiny_corpus import make_runtime, make_settings  # noqa: E402

from gear_agent.agent.graph import build_agent  # noqa: E402
from gear_agent.serve._graph_svg import chain_svg  # noqa: E402
from gear_agent.serve.app import create_app  # noqa: E402
from gear_agent.serve.playground import render_result  # noqa: E402


def reply(prompt: str) -> str:
    node = node_of(prompt)
    if node == "answer":
        return json.dumps({"answer": ANSWER, "citations": [{"passage": 1, "quote": "Folsom"}]})
    return capable_reply(node, prompt)


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> TestClient:
    folder = tmp_path_factory.mktemp("ppr") / "index"
    settings = make_settings(llm_max_retries=0, index_dir=folder, expansion="ppr", top_k=6)
    runtime = make_runtime(folder, settings)
    agent = build_agent(settings, index=runtime, chat_model=StreamingChatModel(respond=reply))
    return TestClient(create_app(agent, settings, index=runtime), base_url="http://127.0.0.1")


def result_of(text: str) -> dict[str, Any]:
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        if lines["event"] == "result":
            return json.loads(lines["data"])
    raise AssertionError(f"no result event in {text[-300:]!r}")


def key(name: str) -> str:
    return " ".join(name.lower().split())


def own_triples(client: TestClient, passage_id: str) -> list[tuple[str, str, str]]:
    return [tuple(row["triple"]) for row in client.get(f"/ui/api/passage/{passage_id}").json()["triples"]]


def assert_true_chains(client: TestClient, passages: list[dict[str, Any]]) -> None:
    """A path ends at one of the passage's own triples; each seed names one of its phrases."""
    for passage in passages:
        own = own_triples(client, passage["id"])
        phrases = {key(part) for s, _, o in own for part in (s, o)}
        if passage["chain_kind"] == "seeds":
            for subject, _, obj in passage["chain"]:
                assert key(subject) in phrases or key(obj) in phrases, (passage["title"], passage["chain"])
        elif passage["chain"]:
            assert tuple(passage["chain"][-1]) in own, (passage["title"], passage["chain"])


def test_the_agent_through_ppr_shows_only_chains_that_reach_each_passage(client: TestClient) -> None:
    result = result_of(client.post("/ui/api/ask/stream", json={"question": QUESTION, "k": 6}).text)
    assert result["passages"] and any(p["chain"] for p in result["passages"])
    assert_true_chains(client, result["passages"])


def test_ppr_passages_carry_the_seeds_that_reached_them_or_none(client: TestClient) -> None:
    result = result_of(client.post("/ui/api/ask/stream",
                                   json={"question": QUESTION, "k": 6, "retriever": "ppr"}).text)
    passages = result["passages"]
    assert {p["chain_kind"] for p in passages if p["chain"]} == {"seeds"}
    assert_true_chains(client, passages)
    assert any(not p["chain"] for p in passages) or len({len(p["chain"]) for p in passages}) > 1
    drawn = next(p for p in passages if p["chain"])
    assert "seed triples whose mass reached" in drawn["svg"]


def test_the_api_and_the_playground_say_what_a_chain_is(client: TestClient) -> None:
    output = client.post("/gear/invoke", json={"input": {"question": QUESTION}}).json()["output"]
    assert {p["chain_kind"] for p in output["passages"]} <= {"seeds", "path"}
    text = render_result(output)
    seeded = [p for p in output["passages"] if p["chain_kind"] == "seeds" and p["chain"]]
    assert not seeded or "⇢ seed (" in text


def test_long_chains_are_drawn_one_label_per_row() -> None:
    chain = [["Kestrel Observatory", "founded by", "Oskar Brenner"],
             ["Oskar Brenner", "married to", "Ilse Brenner"],
             ["Ilse Brenner", "best-known work", "Grey Tide"],
             ["Grey Tide", "hangs in", "Aarhus Art Museum"],
             ["Aarhus Art Museum", "located in", "Aarhus"]]
    svg = chain_svg(chain, "p-1", "Aarhus Art Museum")
    ys = [float(part.split('"')[0]) for part in svg.split('<text x="40.0" y="')[1:]]
    assert len(ys) == 6 + 5 + 2  # six entities, five predicates, the passage and its edge
    assert len(set(ys)) == len(ys)  # one label per row
    assert 'width="320"' in svg
    seeds = chain_svg(chain[:2], "p-2", "Brenner Line", kind="seeds")
    assert "seed triples whose mass reached Brenner Line" in seeds and "their mass reached" in seeds
