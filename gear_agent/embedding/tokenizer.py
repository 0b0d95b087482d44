"""The encoder's own tokenizer, read from a local sentence-transformers model folder.

Chunking asks it how many word pieces a text is and where each lies, so that a chunk is
never longer than the encoder reads (:mod:`gear_agent.text.token_chunking`). It loads only
``tokenizer.json`` (the ``tokenizers`` library), never the model's weights.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class EncoderTokenizer:
    """A model's tokenizer and how many tokens of text its encoder reads.

    Attributes:
        name: The model's name.
        max_tokens: ``max_seq_length`` less the special tokens the encoder adds
            (``[CLS]``, ``[SEP]``): 254 for all-MiniLM-L6-v2.
        tokenizer: The ``tokenizers.Tokenizer``, without truncation or padding.
    """

    name: str
    max_tokens: int
    tokenizer: Any

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Character ``(start, end)`` of each token of ``text`` (special tokens left out)."""
        return [tuple(o) for o in self.tokenizer.encode(text, add_special_tokens=False).offsets]

    def count(self, text: str) -> int:
        """Tokens of ``text``, special tokens left out."""
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)


def load_encoder_tokenizer(folder: Path, name: str) -> EncoderTokenizer | None:
    """The tokenizer of the sentence-transformers model in ``folder``, or None when the
    folder has no ``tokenizer.json`` (then chunks are counted in words)."""
    folder = Path(folder)
    if not (folder / "tokenizer.json").is_file():
        return None
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    config = folder / "sentence_bert_config.json"
    max_length = json.loads(config.read_text()).get("max_seq_length") if config.is_file() else None
    if not max_length:
        model_config = folder / "config.json"
        found = json.loads(model_config.read_text()) if model_config.is_file() else {}
        max_length = int(found.get("max_position_embeddings", 512))
    specials = len(tokenizer.encode("", add_special_tokens=True).ids)
    return EncoderTokenizer(name, int(max_length) - specials, tokenizer)
