"""What one chat call returned: its text and the tokens it cost."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LLMReply"]


@dataclass(frozen=True)
class LLMReply:
    """The text of one chat reply and what it cost.

    Attributes:
        text: The reply's text (never empty: empty replies are retried, then raise).
        input_tokens: Billed prompt tokens; reported by the model, else counted or estimated.
        output_tokens: Billed completion tokens, likewise.
        cached: True when the reply came from the on-disk cache; then both token
            counts are 0, because nothing was billed.
        counted_input: Prompt tokens counted with the model's tokenizer
            (:func:`~gear_agent.llm.tokens.count_message_tokens`), whether or not the reply
            was cached: what the call costs, the same for a replayed and a live call.
        counted_output: Completion tokens counted likewise.
    """

    text: str
    input_tokens: int
    output_tokens: int
    cached: bool = False
    counted_input: int = 0
    counted_output: int = 0
