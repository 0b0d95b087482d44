"""The project's user-facing error types, gathered so the CLI and server can answer them in words."""

from __future__ import annotations


class GearError(Exception):
    """Base of errors whose message is meant for the user as is."""


class UnknownNameError(GearError, ValueError):
    """A name (retriever, scorer, prompt, ...) that is not one of the known ones; lists them."""


def user_error_types() -> tuple[type[BaseException], ...]:
    """Every exception type whose message already tells the user what is wrong and what to do."""
    from pydantic import ValidationError

    from gear_agent.embedding.sentence_transformer import EmbeddingModelError
    from gear_agent.ingest.corpus import CorpusFormatError
    from gear_agent.store.base import StoreError
    from gear_agent.store.generations import IndexCorruptError

    types: list[type[BaseException]] = [
        GearError, StoreError, CorpusFormatError, EmbeddingModelError, IndexCorruptError,
        ValidationError,
    ]
    from gear_agent.llm.errors import LLMError
    from gear_agent.parsing.errors import ParseError
    from gear_agent.prompts import PromptError

    types += [LLMError, ParseError, PromptError]
    return tuple(types)
