"""The LLM layer: build a chat model, call it with retries, count tokens, cache replies."""

from gear_agent.llm.cache import CachedReply, ResponseCache, cache_key
from gear_agent.llm.client import LLMClient, LLMReply
from gear_agent.llm.errors import (
    EmptyReplyError,
    LLMCallError,
    LLMConfigError,
    LLMDeadlineError,
    LLMError,
)
from gear_agent.llm.factory import make_chat_model
from gear_agent.llm.pricing import ModelPrice, cost_usd, price_of
from gear_agent.llm.retry import RetryPolicy, is_fatal, is_retriable
from gear_agent.llm.tokens import count_message_tokens, count_tokens, estimate_tokens
from gear_agent.llm.usage import (
    NodeUsage,
    TokenUsage,
    UsageDict,
    empty_usage,
    merge_usage,
    usage_of_call,
)

__all__ = [
    "CachedReply",
    "EmptyReplyError",
    "LLMCallError",
    "LLMClient",
    "LLMConfigError",
    "LLMDeadlineError",
    "LLMError",
    "LLMReply",
    "ModelPrice",
    "NodeUsage",
    "ResponseCache",
    "RetryPolicy",
    "TokenUsage",
    "UsageDict",
    "cache_key",
    "cost_usd",
    "count_message_tokens",
    "count_tokens",
    "empty_usage",
    "estimate_tokens",
    "is_fatal",
    "is_retriable",
    "make_chat_model",
    "merge_usage",
    "price_of",
    "usage_of_call",
]
