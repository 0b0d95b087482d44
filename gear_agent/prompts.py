"""Prompt templates: plain ``.txt`` files with ``{placeholder}`` fields (str.format syntax).

The built-in prompts live in the repository's ``prompts/`` folder, installed as
``gear_agent/_prompts``. Put a file of the same name in your own folder
(``GEAR_PROMPTS_DIR``) to replace one; literal braces are written ``{{`` and ``}}``.

=====================  ========================================  ==========================
name                   placeholders                              reply
=====================  ========================================  ==========================
extraction             title, passage                            {"entities", "triples"}
reader                 question, passages                        {"triples": [...]}
reader_with_memory     question, passages, memory                {"triples": [...]}
reasoner               question, memory                          {"answerable", "answer", "reason"}
rewriter               question, memory, reason, conversation    one-line query
qa                     question, passages, conversation          {"answer", "citations"}
ppr_filter             query, triples                            {"triples": [...]}
hipporag_ner           query                                     {"named_entities": [...]}
sirerag_propositions   title, passage                            {"propositions": [...]}
sirerag_summary        texts, max_words                          one paragraph
=====================  ========================================  ==========================
"""

from __future__ import annotations

import json
import string
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gear_agent.errors import GearError
from gear_agent.types import Passage, Triple

PROMPT_NAMES = (
    "extraction",
    "reader",
    "reader_with_memory",
    "reasoner",
    "rewriter",
    "qa",
    "ppr_filter",
    "hipporag_ner",
    "sirerag_propositions",
    "sirerag_summary",
)
"""The prompts gear-agent uses."""

_PACKAGE_DIR = Path(__file__).resolve().parent / "_prompts"
_REPO_DIR = Path(__file__).resolve().parent.parent / "prompts"  # a source checkout's folder
_IS_CHECKOUT = (_REPO_DIR.parent / "pyproject.toml").is_file()
_SUFFIX = ".txt"


class PromptError(GearError, ValueError):
    """A prompt cannot be found, read or filled in; the message says which and why."""


@dataclass(frozen=True)
class Prompt:
    """A loaded template.

    Attributes:
        name: The prompt's name (file name without ``.txt``).
        template: The raw template text.
        path: The file it came from.
        placeholders: The field names the template uses, in order of first use.
    """

    name: str
    template: str
    path: Path
    placeholders: tuple[str, ...]

    def format(self, **values: Any) -> str:
        """Fill in the placeholders; values the template does not use are ignored.

        Raises:
            PromptError: A placeholder has no value.

        Example:
            >>> load_prompt("reasoner").format(question="Who?", memory="(none yet)").endswith("Reply:")
            True
        """
        missing = [p for p in self.placeholders if p not in values]
        if missing:
            raise PromptError(
                f"prompt {self.name!r} ({self.path}) needs a value for "
                f"{', '.join(missing)}; it uses {', '.join(self.placeholders)}"
            )
        return self.template.format(**{p: values[p] for p in self.placeholders})


def builtin_prompts_dir() -> Path:
    """The folder of the built-in prompts: the installed copy, else the source checkout's."""
    return _PACKAGE_DIR if _PACKAGE_DIR.is_dir() else _REPO_DIR


def _search_dirs(prompts_dir: Path | str | None) -> list[Path]:
    dirs: list[Path] = []
    if prompts_dir is not None:
        folder = Path(prompts_dir).expanduser()
        if not folder.is_dir():
            raise PromptError(
                f"prompts folder {folder} does not exist; fix GEAR_PROMPTS_DIR or leave it unset"
            )
        dirs.append(folder)
    builtin = [_PACKAGE_DIR, _REPO_DIR] if _IS_CHECKOUT else [_PACKAGE_DIR]
    dirs.extend(d for d in builtin if d.is_dir() and d not in dirs)
    return dirs


def available_prompts(prompts_dir: Path | str | None = None) -> list[str]:
    """Names of every prompt found in your folder and the built-in one, sorted."""
    names = {p.stem for folder in _search_dirs(prompts_dir) for p in folder.glob(f"*{_SUFFIX}")}
    return sorted(names)


def _placeholders(template: str, path: Path) -> tuple[str, ...]:
    names: list[str] = []
    try:
        fields = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise PromptError(
            f"prompt file {path} is not a valid template ({exc}); write literal braces "
            "as {{ and }}"
        ) from exc
    for _, field, _, _ in fields:
        if field is None:
            continue
        if not field.isidentifier():
            raise PromptError(
                f"prompt file {path} has the field {{{field}}}; only named fields such as "
                "{question} are allowed (write literal braces as {{ and }})"
            )
        if field not in names:
            names.append(field)
    return tuple(names)


def _read(name: str, path: Path) -> Prompt:
    try:
        template = path.read_text(encoding="utf-8").rstrip("\r\n")  # files end with a newline
    except (OSError, UnicodeDecodeError) as exc:
        raise PromptError(f"cannot read prompt file {path}: {exc}") from exc
    return Prompt(name, template, path, _placeholders(template, path))


def load_prompt(name: str, prompts_dir: Path | str | None = None) -> Prompt:
    """The template ``name``: from ``prompts_dir`` when it has one, else the built-in.

    A replacement may use only placeholders the built-in prompt of that name uses
    (gear-agent supplies no others).

    Args:
        name: One of :data:`PROMPT_NAMES` (or another ``.txt`` file in your folder).
        prompts_dir: Your own prompt folder, searched first (``GEAR_PROMPTS_DIR``).

    Returns:
        The loaded template.

    Raises:
        PromptError: Unknown name (the message lists the available ones), an unreadable
            or invalid file, or a replacement using a placeholder gear-agent does not fill.

    Example:
        >>> load_prompt("reasoner").placeholders
        ('question', 'memory')
    """
    stem = name[: -len(_SUFFIX)] if name.endswith(_SUFFIX) else name
    if not stem or not stem.replace("_", "").replace("-", "").isalnum():
        raise PromptError(f"invalid prompt name {name!r}; use one of {', '.join(PROMPT_NAMES)}")
    for folder in _search_dirs(prompts_dir):
        path = folder / f"{stem}{_SUFFIX}"
        if path.is_file():
            prompt = _read(stem, path)
            break
    else:
        raise PromptError(
            f"no prompt named {stem!r}; available: {', '.join(available_prompts(prompts_dir))}"
        )
    builtin = builtin_prompts_dir() / f"{stem}{_SUFFIX}"
    if builtin.is_file() and builtin.resolve() != prompt.path.resolve():
        allowed = _read(stem, builtin).placeholders
        unknown = [p for p in prompt.placeholders if p not in allowed]
        if unknown:
            raise PromptError(
                f"prompt file {prompt.path} uses {', '.join('{' + u + '}' for u in unknown)}, "
                f"which gear-agent does not fill for {stem!r}; available: "
                f"{', '.join('{' + a + '}' for a in allowed)}"
            )
    return prompt


CHARS_PER_TOKEN = 4
"""Characters per token assumed when packing passages to a token budget (English text
with OpenAI-style tokenizers averages about 4)."""

CUT_MARK = " [...]"
"""Appended to a passage text cut to fit the budget."""


def fit_lengths(lengths: Sequence[int], budget: int) -> list[int]:
    """How many characters of each text to keep so they sum to at most ``budget``: the
    longest are cut first to one common cap ("water-filling"), short ones stay whole.

    Example:
        >>> fit_lengths([100, 10, 50], 90)
        [40, 10, 40]
        >>> fit_lengths([5, 5], 100)
        [5, 5]
    """
    if sum(lengths) <= budget:
        return list(lengths)
    cap, left, rest = 0, budget, sorted(lengths)
    for index, length in enumerate(rest):
        share = left // (len(rest) - index)
        if length > share:
            cap = share
            break
        left -= length
    else:  # pragma: no cover - only reached when everything fits, handled above
        cap = max(lengths)
    return [min(length, cap) for length in lengths]


def _cut(text: str, chars: int) -> str:
    """The first ``chars`` characters of ``text``, at a word break when one is near, and [...]."""
    cut = text[:chars]
    space = cut.rfind(" ")
    if space > chars // 2:
        cut = cut[:space]
    return cut.rstrip() + CUT_MARK


def render_passages(passages: Sequence[Passage], max_tokens: int | None = None) -> str:
    """Passages as the prompts show them: numbered blocks of title and text.

    Args:
        passages: The passages, in the order shown.
        max_tokens: Budget for their texts (estimated at :data:`CHARS_PER_TOKEN`
            characters a token); when they would pass it, the longest texts are cut first
            (see :func:`fit_lengths`) and end with ``[...]``. None: no budget.

    Example:
        >>> render_passages([Passage("p-1", "Bled", "A town in Slovenia.")])
        '[1] Bled\\nA town in Slovenia.'
        >>> render_passages([Passage("p-1", "Bled", "A town in Slovenia.")], max_tokens=2)
        '[1] Bled\\nA town [...]'
    """
    if not passages:
        return "(no passages)"
    texts = [p.text.strip() for p in passages]
    if max_tokens is not None:
        keep = fit_lengths([len(t) for t in texts], max_tokens * CHARS_PER_TOKEN)
        texts = [t if n >= len(t) else _cut(t, n) for t, n in zip(texts, keep)]
    blocks = []
    for number, (passage, text) in enumerate(zip(passages, texts), start=1):
        head = f"[{number}] {passage.title}".rstrip()
        blocks.append(f"{head}\n{text}")
    return "\n\n".join(blocks)


def render_triples(triples: Sequence[Triple | tuple[str, str, str]]) -> str:
    """Triples as the prompts show them: one JSON array per line, as the replies use.

    Example:
        >>> render_triples([("Bled", "located in", "Slovenia")])
        '["Bled", "located in", "Slovenia"]'
    """
    if not triples:
        return "(none yet)"
    lines = []
    for triple in triples:
        parts = triple.as_tuple() if isinstance(triple, Triple) else tuple(triple)
        lines.append(json.dumps(list(parts), ensure_ascii=False))
    return "\n".join(lines)
