"""GEAR_LLM_RESPONSE_FORMAT: what reaches the server's request body, per mode and per prompt."""

from __future__ import annotations

import json

import pytest
from support.fault_server import ok, running_fault_server

from gear_agent.config import GearSettings
from gear_agent.llm.cache import cache_key
from gear_agent.llm.client import LLMClient
from gear_agent.llm.factory import make_chat_model
from gear_agent.llm.response_format import (
    EXTRACTION_REPLY,
    MAX_TRIPLES,
    MODES,
    TRIPLES_REPLY,
    VERDICT_REPLY,
    response_format,
)

TRIPLES = json.dumps({"triples": [["Folsom", "located in", "Sacramento County"]]})


def client_for(base_url: str, mode: str) -> LLMClient:
    settings = GearSettings(llm_response_format=mode, llm_max_retries=0)
    model = make_chat_model(settings, {"OPENAI_BASE_URL": base_url})
    return LLMClient.from_settings(settings, model)


@pytest.mark.parametrize("use_async", [False, True])
@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("text", None),
        ("json_object", {"type": "json_object"}),
        ("json_object_schema", {"type": "json_object", "schema": TRIPLES_REPLY.schema}),
        (
            "json_schema",
            {
                "type": "json_schema",
                "json_schema": {"name": "triples", "schema": TRIPLES_REPLY.schema, "strict": False},
            },
        ),
    ],
)
def test_the_request_body_carries_the_mode(mode: str, expected: dict | None, use_async: bool) -> None:
    import asyncio

    with running_fault_server(ok(TRIPLES)) as server:
        llm = client_for(server.base_url, mode)
        if use_async:
            reply = asyncio.run(llm.ainvoke("Read this.", node="read", schema=TRIPLES_REPLY))
        else:
            reply = llm.invoke("Read this.", node="read", schema=TRIPLES_REPLY)
        body = server.completions[-1].body

    assert reply.text == TRIPLES
    assert body.get("response_format") == expected
    assert body["max_tokens"] == GearSettings().llm_max_tokens  # extra_body is kept


@pytest.mark.parametrize("mode", MODES)
def test_a_prompt_without_a_schema_sends_no_response_format(mode: str) -> None:
    with running_fault_server(ok("county of Folsom")) as server:
        client_for(server.base_url, mode).invoke("Write the next query.", node="rewrite")
        assert "response_format" not in server.completions[-1].body


def test_schemas_bound_the_reply_and_match_the_prompts() -> None:
    assert TRIPLES_REPLY.schema["properties"]["triples"]["maxItems"] == MAX_TRIPLES
    triple = TRIPLES_REPLY.schema["properties"]["triples"]["items"]
    assert triple["minItems"] == triple["maxItems"] == 3
    assert set(EXTRACTION_REPLY.schema["required"]) == {"entities", "triples"}
    assert VERDICT_REPLY.schema["properties"]["answer"]["type"] == ["string", "null"]


def test_unknown_modes_are_refused_with_the_choices() -> None:
    with pytest.raises(ValueError, match="json_object_schema"):
        response_format("xml", TRIPLES_REPLY)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        GearSettings(llm_response_format="xml")


def test_the_cache_key_tells_formats_apart() -> None:
    from langchain_core.messages import HumanMessage

    messages = [HumanMessage("hi")]
    plain = cache_key("m", 0.0, messages, 10)
    constrained = cache_key("m", 0.0, messages, 10, response_format("json_object", TRIPLES_REPLY))
    assert plain != constrained
    assert plain == cache_key("m", 0.0, messages, 10, None)
