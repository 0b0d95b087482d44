"""The real local LLM (llama-cpp-python + Gemma 3 270M) answers through ChatOpenAI.

Skipped, with the reason, when ``scripts/local_llm.sh install`` has not been run.
The model is the small *base* model: its replies are not meant to be good answers,
only real ones, so these tests check the plumbing (text, usage, limits), not quality.
"""

from __future__ import annotations

import time

import openai
import pytest
from support.local_llm import (
    LOCAL_LLM_API_KEY,
    LOCAL_LLM_MODEL,
    local_chat_model,
    local_llm_available,
    running_local_llm,
)

_AVAILABLE, _REASON = local_llm_available()
pytestmark = [
    pytest.mark.llm,
    pytest.mark.skipif(not _AVAILABLE, reason=_REASON),
    pytest.mark.timeout(300),
]

MAX_TOKENS = 24


@pytest.fixture(scope="module")
def local_llm_url():
    with running_local_llm() as base_url:
        yield base_url


def test_chat_openai_reply_has_text_and_usage(local_llm_url):
    model = local_chat_model(local_llm_url, max_tokens=MAX_TOKENS)

    started = time.perf_counter()
    reply = model.invoke("What is the capital of France? Answer in one word.")
    elapsed = time.perf_counter() - started

    assert isinstance(reply.content, str) and reply.content.strip()
    usage = reply.usage_metadata
    assert usage is not None, reply.response_metadata
    assert usage["input_tokens"] > 0
    assert 0 < usage["output_tokens"] <= MAX_TOKENS
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    assert elapsed < 120


def test_openai_client_reply_reports_usage_and_model(local_llm_url):
    client = openai.OpenAI(
        base_url=local_llm_url, api_key=LOCAL_LLM_API_KEY, max_retries=0, timeout=120
    )

    completion = client.chat.completions.create(
        model=LOCAL_LLM_MODEL,
        messages=[{"role": "user", "content": "Say hello."}],
        max_tokens=MAX_TOKENS,
        temperature=0,
    )

    assert completion.model == LOCAL_LLM_MODEL
    assert completion.choices and completion.choices[0].message.content
    assert completion.usage is not None
    assert completion.usage.prompt_tokens > 0
    assert 0 < completion.usage.completion_tokens <= MAX_TOKENS
    assert [m.id for m in client.models.list().data] == [LOCAL_LLM_MODEL]


def test_system_message_reaches_the_model(local_llm_url):
    # llama-cpp-python's stock "gemma" format drops system messages; ours keeps them.
    model = local_chat_model(local_llm_url, max_tokens=4)
    system = "You are a terse assistant. Answer with one word, in English, no punctuation."

    bare = model.invoke([("user", "Name a colour.")])
    with_system = model.invoke([("system", system), ("user", "Name a colour.")])

    added = with_system.usage_metadata["input_tokens"] - bare.usage_metadata["input_tokens"]
    assert added >= 15  # the system text is ~18 tokens


def test_server_is_stopped_when_the_block_exits():
    with running_local_llm() as base_url:
        client = openai.OpenAI(
            base_url=base_url, api_key=LOCAL_LLM_API_KEY, max_retries=0, timeout=10
        )
        assert client.models.list().data

    with pytest.raises(openai.APIConnectionError):
        client.models.list()
