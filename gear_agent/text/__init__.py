"""Text utilities shared by every layer: chunking, grounding, safe JSON input, terminal-safe
text and the tokenizer.

The public modules are listed in ``__all__``; each is imported on its own (importing the
subpackage imports none of them, so no layer pulls in the ones above it).
"""

__all__ = ["chunking", "grounding", "json_input", "terminal", "tokenizer"]
