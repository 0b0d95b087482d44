"""LLMClient: retries and backoff, errors, token accounting, the cache, the factory, tokens."""

from __future__ import annotations

import asyncio
import json
import random
from typing import Annotated, TypedDict

import httpx
import openai
import pytest
from langchain_core.language_models.fake_chat_models import (
    FakeListChatModel,
    GenericFakeChatModel,
)
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.graph import END, START, StateGraph
from support.fakes import EMPTY_CHOICES, ScriptedChatModel

from gear_agent.config import GearSettings
from gear_agent.llm import tokens
from gear_agent.llm.cache import ResponseCache
from gear_agent.llm.client import LLMClient, LLMReply
from gear_agent.llm.errors import LLMCallError, LLMConfigError
from gear_agent.llm.factory import LOCAL_SERVER_API_KEY, make_chat_model
from gear_agent.llm.pricing import cost_usd, price_of
from gear_agent.llm.retry import RetryPolicy, backoff_delay, is_fatal, is_retriable, retry_after_s
from gear_agent.llm.usage import TokenUsage, UsageDict, merge_usage, usage_of_call

_REQUEST = httpx.Request("POST", "http://llm.test/v1/chat/completions")


def status_error(cls: type[openai.APIStatusError], status: int, headers: dict | None = None):
    response = httpx.Response(status, headers=headers or {}, request=_REQUEST)
    return cls(f"HTTP {status}", response=response, body=None)


def rate_limit(headers: dict | None = None) -> openai.RateLimitError:
    return status_error(openai.RateLimitError, 429, headers)


@pytest.fixture(autouse=True)
def offline_tokenizer(monkeypatch):
    """No tokenizer rank files: every count is the offline estimate (tests that want the
    real encodings restore ``tokens._encoding`` themselves)."""
    monkeypatch.setattr(tokens, "_encoding", lambda name: None)


class Sleeps:
    """Records retry waits instead of sleeping."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)

    async def async_sleep(self, seconds: float) -> None:
        self.waits.append(seconds)


def client_for(model, sleeps: Sleeps, retries: int = 4, **kwargs) -> LLMClient:
    return LLMClient(
        model,
        retry=RetryPolicy(max_retries=retries),
        sleep=sleeps,
        async_sleep=sleeps.async_sleep,
        rng=random.Random(0),
        **kwargs,
    )


# ---- retries ----------------------------------------------------------------------


def test_retries_transient_errors_then_succeeds():
    sleeps = Sleeps()
    model = ScriptedChatModel.from_list(
        [
            rate_limit(),
            openai.APITimeoutError(request=_REQUEST),
            openai.APIConnectionError(request=_REQUEST),
            status_error(openai.InternalServerError, 503),
            "Paris",
        ]
    )
    reply = client_for(model, sleeps).invoke("Capital of France?", node="qa")
    assert reply.text == "Paris"
    assert len(model.calls) == 5
    assert len(sleeps.waits) == 4
    # equal jitter: retry n waits between 2**(n-2) and 2**(n-1) seconds (base 1 s)
    for n, wait in enumerate(sleeps.waits, start=1):
        assert 2 ** (n - 1) / 2 <= wait <= 2 ** (n - 1)


def test_retry_after_header_is_honoured():
    sleeps = Sleeps()
    model = ScriptedChatModel.from_list([rate_limit({"retry-after": "7"}), "ok"])
    client_for(model, sleeps).invoke("q", node="qa")
    assert sleeps.waits == [7.0]


def test_retry_after_ms_and_cap():
    assert retry_after_s(rate_limit({"retry-after-ms": "250"})) == 0.25
    assert retry_after_s(rate_limit()) is None
    policy = RetryPolicy(max_retry_after_s=10)
    assert backoff_delay(1, policy, random.Random(0), retry_after=600) == 10


def test_backoff_is_capped():
    policy = RetryPolicy(base_delay_s=1, max_delay_s=5)
    waits = [backoff_delay(10, policy, random.Random(seed)) for seed in range(20)]
    assert all(2.5 <= w <= 5 for w in waits)


def test_final_failure_names_model_node_attempts_and_error():
    sleeps = Sleeps()
    model = ScriptedChatModel(respond=lambda _: status_error(openai.InternalServerError, 500))
    client = client_for(model, sleeps, retries=2)
    with pytest.raises(LLMCallError) as caught:
        client.invoke("q", node="reasoner")
    error = caught.value
    assert (error.model, error.node, error.attempts, error.retriable) == (
        "scripted-model",
        "reasoner",
        3,
        True,
    )
    assert isinstance(error.__cause__, openai.InternalServerError)
    message = str(error)
    for part in ("scripted-model", "reasoner", "3 attempts", "InternalServerError"):
        assert part in message
    assert len(model.calls) == 3 and len(sleeps.waits) == 2


def test_non_retriable_error_fails_at_once():
    sleeps = Sleeps()
    bad = status_error(openai.BadRequestError, 400)
    model = ScriptedChatModel(respond=lambda _: bad)
    with pytest.raises(LLMCallError) as caught:
        client_for(model, sleeps).invoke("q", node="reader")
    assert caught.value.attempts == 1 and caught.value.retriable is False
    assert "not retried" in str(caught.value)
    assert sleeps.waits == [] and len(model.calls) == 1


def test_a_bug_in_the_model_is_not_retried():
    sleeps = Sleeps()
    model = ScriptedChatModel(respond=lambda _: ValueError("bad"))
    with pytest.raises(LLMCallError):
        client_for(model, sleeps).invoke("q", node="reader")
    assert len(model.calls) == 1


def test_empty_replies_and_empty_choices_are_retried():
    sleeps = Sleeps()
    model = ScriptedChatModel.from_list(["", "   ", EMPTY_CHOICES, AIMessage(content=[]), "done"])
    assert client_for(model, sleeps).invoke("q", node="qa").text == "done"
    assert len(sleeps.waits) == 4


def test_empty_reply_after_all_retries_raises():
    sleeps = Sleeps()
    model = ScriptedChatModel(respond=lambda _: "")
    with pytest.raises(LLMCallError, match="empty reply"):
        client_for(model, sleeps, retries=1).invoke("q", node="qa")


@pytest.mark.parametrize(
    ("error", "retriable"),
    [
        (httpx.ReadTimeout("slow", request=_REQUEST), True),
        (httpx.ConnectError("refused", request=_REQUEST), True),
        (TimeoutError(), True),
        (status_error(openai.APIStatusError, 502), True),
        (status_error(openai.APIStatusError, 418), False),
        (status_error(openai.AuthenticationError, 401), False),
        (KeyError("x"), False),
        (IndexError("mine"), False),
        (TypeError("Received response with null value for 'choices'."), True),
        (json.JSONDecodeError("Expecting value", "", 0), True),  # an empty 200 body
        (ValueError("not JSON"), False),
    ],
)
def test_error_classification(error, retriable):
    assert is_retriable(error) is retriable


def test_langchain_provider_neutral_errors():
    from langchain_core import exceptions

    if not hasattr(exceptions, "ModelRateLimitError"):
        pytest.skip("this langchain-core has no provider-neutral Model*Error types")
    assert is_retriable(exceptions.ModelRateLimitError("slow down"))
    assert is_retriable(exceptions.ModelAPIError("502"))
    assert not is_retriable(exceptions.ModelInvalidRequestError("bad"))
    assert is_fatal(exceptions.ModelAuthenticationError("bad key"))


def test_fatal_errors():
    assert is_fatal(status_error(openai.AuthenticationError, 401))
    assert is_fatal(status_error(openai.NotFoundError, 404))
    assert not is_fatal(rate_limit())


def test_async_retries_use_async_sleep_and_the_models_ainvoke():
    sleeps = Sleeps()
    model = ScriptedChatModel.from_list([rate_limit(), "Paris"])
    client = client_for(model, sleeps)

    def no_sync_sleep(_: float) -> None:
        raise AssertionError("the async path must not block on time.sleep")

    client._sleep = no_sync_sleep
    reply = asyncio.run(client.ainvoke("Capital?", node="qa"))
    assert reply.text == "Paris"
    assert model.async_calls == 2 and len(sleeps.waits) == 1


def test_async_final_failure():
    sleeps = Sleeps()
    model = ScriptedChatModel(respond=lambda _: openai.APITimeoutError(request=_REQUEST))
    with pytest.raises(LLMCallError, match="APITimeoutError"):
        asyncio.run(client_for(model, sleeps, retries=1).ainvoke("q", node="qa"))
    assert model.async_calls == 2


# ---- tokens and usage ---------------------------------------------------------------


def test_reported_usage_is_used():
    message = AIMessage(
        content="Paris", usage_metadata={"input_tokens": 50, "output_tokens": 3, "total_tokens": 53}
    )
    client = LLMClient(GenericFakeChatModel(messages=iter([message])))
    reply = client.invoke("q", node="qa")
    assert (reply.input_tokens, reply.output_tokens, reply.cached) == (50, 3, False)


def test_openai_style_token_usage_is_used():
    message = AIMessage(
        content="Paris",
        response_metadata={"token_usage": {"prompt_tokens": 11, "completion_tokens": 2}},
    )
    reply = LLMClient(ScriptedChatModel.from_list([message])).invoke("q", node="qa")
    assert (reply.input_tokens, reply.output_tokens) == (11, 2)


def test_tokens_are_estimated_when_not_reported():
    prompt = [SystemMessage("You answer."), HumanMessage("What is the capital of France?")]
    reply = LLMClient(FakeListChatModel(responses=["Paris is the capital."])).invoke(
        prompt, node="qa"
    )
    expected_in = sum(tokens.estimate_tokens(m.content) + 4 for m in prompt) + 2
    assert reply.input_tokens == expected_in
    assert reply.output_tokens == tokens.estimate_tokens("Paris is the capital.")


def test_usage_is_summed_per_node_and_in_total():
    usage = TokenUsage()
    client = LLMClient(FakeListChatModel(responses=["a" * 40, "b" * 8, "c" * 4]), usage=usage)
    r1 = client.invoke("x" * 40, node="reader")
    r2 = client.invoke("y" * 40, node="reader")
    r3 = client.invoke("z", node="reasoner")
    totals = usage.as_dict()
    assert totals["input"] == r1.input_tokens + r2.input_tokens + r3.input_tokens
    assert totals["output"] == 10 + 2 + 1
    assert totals["by_node"]["reader"] == {
        "input": r1.input_tokens + r2.input_tokens,
        "output": 12,
        "calls": 2,
        "counted_input": r1.input_tokens + r2.input_tokens,  # nothing reported: counted
        "counted_output": 12,
    }
    assert totals["by_node"]["reasoner"]["calls"] == 1


def test_merge_usage_does_not_mutate_and_handles_none():
    a: UsageDict = usage_of_call("qa", LLMReply("x", 3, 1, counted_input=3, counted_output=1))
    b: UsageDict = usage_of_call("reader", LLMReply("y", 0, 0, cached=True, counted_input=5,
                                                    counted_output=2))
    merged = merge_usage(a, b)
    assert merged == {
        "input": 3,
        "output": 1,
        "counted_input": 8,
        "counted_output": 3,
        "by_node": {
            "qa": {"input": 3, "output": 1, "calls": 1, "counted_input": 3, "counted_output": 1},
            "reader": {"input": 0, "output": 0, "calls": 1, "counted_input": 5,
                       "counted_output": 2},
        },
    }
    assert a["by_node"] == {
        "qa": {"input": 3, "output": 1, "calls": 1, "counted_input": 3, "counted_output": 1}}
    old = {"input": 1, "output": 1, "by_node": {"qa": {"input": 1, "output": 1, "calls": 1}}}
    assert merge_usage(old, None)["by_node"]["qa"]["counted_input"] == 0  # older records
    assert merge_usage(None, a) == a and merge_usage({}, None)["input"] == 0


def test_merge_usage_works_as_a_langgraph_reducer():
    class State(TypedDict, total=False):
        usage: Annotated[dict, merge_usage]

    def reader(state: State) -> State:
        return {"usage": usage_of_call("reader", LLMReply("t", 10, 4))}

    def reasoner(state: State) -> State:
        return {"usage": usage_of_call("reasoner", LLMReply("t", 7, 1))}

    graph = StateGraph(State)
    graph.add_node("reader", reader)
    graph.add_node("reasoner", reasoner)
    graph.add_edge(START, "reader")
    graph.add_edge("reader", "reasoner")
    graph.add_edge("reasoner", END)
    final = graph.compile().invoke({"usage": usage_of_call("reader", LLMReply("t", 1, 1))})
    assert final["usage"]["input"] == 18 and final["usage"]["output"] == 6
    assert final["usage"]["by_node"]["reader"]["calls"] == 2


# ---- cache ------------------------------------------------------------------------------


def test_cache_hit_costs_nothing_and_skips_the_model(tmp_path):
    cache = ResponseCache(tmp_path / "cache")
    first = LLMClient(ScriptedChatModel.from_list(["Paris"]), model_name="m", cache=cache)
    reply = first.invoke("Capital of France?", node="qa")
    assert reply.cached is False and reply.input_tokens > 0

    never = ScriptedChatModel(respond=lambda _: AssertionError("the cache should answer"))
    usage = TokenUsage()
    second = LLMClient(never, model_name="m", cache=cache, usage=usage)
    hit = second.invoke("Capital of France?", node="qa")
    assert hit == LLMReply("Paris", 0, 0, cached=True, counted_input=reply.counted_input,
                           counted_output=reply.counted_output)
    assert never.calls == []
    assert usage.as_dict()["input"] == 0 and usage.as_dict()["by_node"]["qa"]["calls"] == 1
    assert usage.cached_calls == 1 and usage.cached_input == reply.input_tokens

    files = list((tmp_path / "cache").rglob("*"))
    entries = [f for f in files if f.is_file()]
    assert len(entries) == 1 and entries[0].suffix == ".json"
    assert json.loads(entries[0].read_text())["text"] == "Paris"


def test_cache_key_depends_on_model_temperature_and_messages(tmp_path):
    cache = ResponseCache(tmp_path)
    LLMClient(ScriptedChatModel.from_list(["A"], temperature=0.0), cache=cache).invoke(
        "q", node="qa"
    )
    other_temperature = ScriptedChatModel.from_list(["B"], temperature=0.7)
    assert LLMClient(other_temperature, cache=cache).invoke("q", node="qa").text == "B"
    other_model = ScriptedChatModel.from_list(["C"], model_name="other")
    assert LLMClient(other_model, cache=cache).invoke("q", node="qa").text == "C"
    other_prompt = ScriptedChatModel.from_list(["D"])
    assert LLMClient(other_prompt, cache=cache).invoke("q?", node="qa").text == "D"
    same = ScriptedChatModel.from_list([])
    assert LLMClient(same, cache=cache).invoke("q", node="qa").text == "A"


def test_async_calls_use_the_cache_too(tmp_path):
    cache = ResponseCache(tmp_path)
    model = ScriptedChatModel.from_list(["Paris"])
    client = LLMClient(model, cache=cache)
    first = asyncio.run(client.ainvoke("q", node="qa"))
    second = asyncio.run(client.ainvoke("q", node="qa"))
    assert (first.cached, second.cached) == (False, True) and model.async_calls == 1


def test_unreadable_cache_entry_is_a_miss_and_is_rewritten(tmp_path):
    cache = ResponseCache(tmp_path)
    client = LLMClient(ScriptedChatModel.from_list(["A", "B"]), cache=cache)
    client.invoke("q", node="qa")
    (entry,) = [p for p in tmp_path.rglob("*.json")]
    entry.write_text("{not json")
    reply = client.invoke("q", node="qa")
    assert (reply.text, reply.cached) == ("B", False)
    assert json.loads(entry.read_text())["text"] == "B"
    assert client.invoke("q", node="qa").cached is True
    assert list(tmp_path.rglob("*.tmp")) == []


def test_cache_write_failure_keeps_the_reply(tmp_path, monkeypatch, caplog):
    cache = ResponseCache(tmp_path)

    def disk_full(*args, **kwargs):
        raise OSError("No space left on device")

    monkeypatch.setattr(cache, "put", disk_full)
    reply = LLMClient(ScriptedChatModel.from_list(["Paris"]), cache=cache).invoke("q", node="qa")
    assert reply.text == "Paris"
    assert "could not write the LLM cache entry" in caplog.text


def test_cache_dir_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError, match="GEAR_LLM_CACHE_DIR"):
        ResponseCache(tmp_path / "file")


def test_from_settings_wires_retries_and_cache(tmp_path):
    settings = GearSettings(llm_cache_dir=tmp_path / "c", llm_max_retries=2)
    client = LLMClient.from_settings(settings, model=FakeListChatModel(responses=["x"]))
    assert client.retry.max_retries == 2
    assert client.cache is not None and client.cache.directory == tmp_path / "c"


# ---- factory ---------------------------------------------------------------------------------


def test_factory_without_key_or_url_names_both_settings():
    with pytest.raises(LLMConfigError) as caught:
        make_chat_model(GearSettings(), environ={})
    assert "OPENAI_API_KEY" in str(caught.value) and "OPENAI_BASE_URL" in str(caught.value)


def test_factory_for_a_local_server_needs_no_key():
    settings = GearSettings(llm_model="llama3", llm_max_tokens=99, llm_timeout_s=7)
    model = make_chat_model(settings, environ={"OPENAI_BASE_URL": "http://localhost:8000/v1"})
    assert model.openai_api_key.get_secret_value() == LOCAL_SERVER_API_KEY
    assert model.openai_api_base == "http://localhost:8000/v1"
    assert (model.model_name, model.max_tokens, model.request_timeout) == ("llama3", 99, 7)
    assert model.max_retries == 0 and model.temperature == 0.0


def test_factory_with_key_reads_the_environment(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    model = make_chat_model(GearSettings(llm_temperature=0.3))
    assert model.openai_api_key.get_secret_value() == "sk-test"
    assert model.temperature == 0.3 and model.max_retries == 0


# ---- offline token counting ------------------------------------------------------------------


def test_token_counting_never_downloads(monkeypatch, tmp_path):
    import tiktoken.load

    from gear_agent.llm import encodings

    def no_network(*args, **kwargs):
        raise AssertionError("tiktoken tried to download an encoding")

    monkeypatch.setattr(tiktoken.load, "read_file", no_network)
    monkeypatch.setattr(encodings, "_SOURCES", {"o200k_base": (), "cl100k_base": ()})
    monkeypatch.setattr(tokens, "_encoding", encodings.load_encoding.__wrapped__)
    encodings.rank_file.cache_clear()
    try:
        for cache_dir in (str(tmp_path / "empty"), ""):
            monkeypatch.setenv("TIKTOKEN_CACHE_DIR", cache_dir)
            assert tokens.count_tokens("hello world, twice", "gpt-4o-mini") == 5  # estimated
            assert tokens.count_tokens("x" * 9, "unknown-model") == 3
            assert "estimated at 4 characters a token" in tokens.tokenizer_label("gpt-4o")
    finally:
        encodings.rank_file.cache_clear()


def test_corrupt_tiktoken_cache_file_is_not_trusted(monkeypatch, tmp_path):
    import hashlib

    from gear_agent.llm import encodings

    url = encodings.ENCODING_FILES["o200k_base"][0]
    (tmp_path / hashlib.sha1(url.encode()).hexdigest()).write_bytes(b"garbage")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    encodings.rank_file.cache_clear()
    try:
        assert encodings._from_tiktoken_cache("o200k_base") == b"garbage"
        found = encodings.rank_file("o200k_base")
        assert found is None or found[1] != "tiktoken cache"  # a package's file, or none
    finally:
        encodings.rank_file.cache_clear()


def test_offline_encodings_are_tiktokens_own(monkeypatch):
    # with the `tokens` extra installed the rank files come from packages, checksummed
    from gear_agent.llm import encodings

    monkeypatch.setattr(tokens, "_encoding", encodings.load_encoding)
    for name, text, count in (("o200k_base", "hello world", 2), ("cl100k_base", "hello world", 2)):
        if encodings.rank_file(name) is None:
            pytest.skip(f"no {name} rank file here: {encodings.PACKAGE_HINT}")
        encoding = encodings.load_encoding(name)
        assert encoding.name == name and len(encoding.encode(text)) == count
        assert encoding.decode(encoding.encode("Kestrel Observatory, 1923")) == (
            "Kestrel Observatory, 1923")
    assert tokens.tokenizer_label("recorded").startswith("o200k_base (tiktoken; rank file from")
    assert tokens.count_tokens("Who founded the Kestrel Observatory?", "gpt-4o-mini") == len(
        encodings.load_encoding("o200k_base").encode("Who founded the Kestrel Observatory?"))


def test_every_call_is_counted_cached_or_not(tmp_path):
    cache = ResponseCache(tmp_path / "cache")
    first = LLMClient(FakeListChatModel(responses=["Paris."]), cache=cache)
    live = first.invoke("Capital of France?", node="qa")
    again = LLMClient(FakeListChatModel(responses=["unused"]), cache=cache)
    replayed = again.invoke("Capital of France?", node="qa")
    assert replayed.cached and (replayed.input_tokens, replayed.output_tokens) == (0, 0)
    assert (replayed.counted_input, replayed.counted_output) == (
        live.counted_input, live.counted_output)
    assert live.counted_input > 0 and live.counted_output > 0
    node = again.usage.as_dict()["by_node"]["qa"]
    assert node == {"input": 0, "output": 0, "calls": 1, "counted_input": live.counted_input,
                    "counted_output": live.counted_output}
    assert usage_of_call("qa", replayed)["counted_input"] == live.counted_input


# ---- pricing ----------------------------------------------------------------------------------


def test_prices():
    assert price_of("gpt-4o-mini-2024-07-18") == price_of("gpt-4o-mini")
    assert price_of("gpt-4o-2024-08-06").input_per_million == 2.5
    assert price_of("qwen2.5-7b-instruct") is None
    assert cost_usd("gpt-4o-mini", 1_000_000, 1_000_000) == pytest.approx(0.75)
    assert cost_usd("my-local-model", 10, 10) is None


# ---- the real ChatOpenAI against a scripted HTTP server (httpx MockTransport) -----------------


def _completion(content, usage=True, choices=None) -> dict:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4o-mini",
        "choices": choices
        if choices is not None
        else [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": content},
            }
        ],
    }
    if usage:
        body["usage"] = {"prompt_tokens": 21, "completion_tokens": 2, "total_tokens": 23}
    return body


def _chat_openai_with(responses: list[httpx.Response]):
    from langchain_openai import ChatOpenAI

    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return responses.pop(0)

    model = ChatOpenAI(
        model="gpt-4o-mini",
        api_key="sk-test",
        base_url="http://llm.test/v1",
        max_retries=0,
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),
        http_async_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)),
    )
    return model, seen


def test_chat_openai_errors_are_classified_end_to_end():
    model, seen = _chat_openai_with(
        [
            httpx.Response(429, headers={"retry-after": "3"}, json={"error": {"message": "slow"}}),
            httpx.Response(503, json={"error": {"message": "overloaded"}}),
            httpx.Response(200, json=_completion(None, choices=[])),
            httpx.Response(200, json=_completion(None, choices=None)),
            httpx.Response(200, json=_completion("")),
            httpx.Response(200, json=_completion("Paris")),
        ]
    )
    sleeps = Sleeps()
    reply = client_for(model, sleeps, retries=5).invoke("Capital of France?", node="qa")
    assert (reply.text, reply.input_tokens, reply.output_tokens, reply.cached) == (
        "Paris", 21, 2, False)
    assert len(seen) == 6 and sleeps.waits[0] == 3.0 and len(sleeps.waits) == 5


def test_chat_openai_async_and_fatal_errors():
    model, _ = _chat_openai_with(
        [
            httpx.Response(500, json={"error": {"message": "oops"}}),
            httpx.Response(200, json=_completion("Paris", usage=False)),
            httpx.Response(401, json={"error": {"message": "bad key"}}),
        ]
    )
    sleeps = Sleeps()
    client = client_for(model, sleeps)
    reply = asyncio.run(client.ainvoke("Capital of France?", node="qa"))
    assert reply.text == "Paris" and reply.output_tokens == tokens.estimate_tokens("Paris")
    with pytest.raises(LLMCallError) as caught:
        asyncio.run(client.ainvoke("again", node="qa"))
    assert caught.value.attempts == 1 and is_fatal(caught.value.last_error)
