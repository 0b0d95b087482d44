"""A tokenizer close to Elasticsearch's ``standard`` analyzer.

The standard analyzer splits text on Unicode word boundaries (UAX #29) and
lower-cases the tokens; it removes no stop words. This module approximates the
boundary rules that matter for English-heavy corpora, so that the embedded
store and the Elasticsearch backend score BM25 over (nearly) the same tokens:

* letters, digits and ``_`` form words;
* a letter run continues across ``'``, ``’``, ``.``, ``:`` or ``·`` when a letter
  follows (``can't``, ``u.s.a``), as UAX #29's MidLetter rule says;
* a digit run continues across ``.``, ``,``, ``;`` or ``'`` when a digit follows
  (``3.14``, ``1,000``), as UAX #29's MidNum rule says;
* each Han ideograph and each Hiragana character is a token of its own;
* tokens longer than 255 characters are split, as ``max_token_length`` does.
"""

from __future__ import annotations

import re

_MAX_TOKEN_LENGTH = 255
_IDEOGRAPHIC = "\u3040-\u309f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_WORD_CHAR = rf"[^\W{_IDEOGRAPHIC}]"
_TOKEN = re.compile(
    rf"[{_IDEOGRAPHIC}]"
    rf"|{_WORD_CHAR}+"
    rf"(?:(?:(?<=[^\W\d_])['’.:·](?=[^\W\d_{_IDEOGRAPHIC}])"
    rf"|(?<=\d)[.,;'](?=\d)){_WORD_CHAR}+)*"
)


def tokenize(text: str) -> list[str]:
    """Split text into lower-cased tokens as Elasticsearch's standard analyzer would.

    Example:
        >>> tokenize("The U.S. can't pay $1,000.50 for Beyoncé's 2nd album!")
        ['the', 'u.s', "can't", 'pay', '1,000.50', 'for', "beyoncé's", '2nd', 'album']
    """
    tokens: list[str] = []
    for match in _TOKEN.finditer(text):
        token = match.group().lower()
        if len(token) <= _MAX_TOKEN_LENGTH:
            tokens.append(token)
        else:
            tokens.extend(
                token[i : i + _MAX_TOKEN_LENGTH] for i in range(0, len(token), _MAX_TOKEN_LENGTH)
            )
    return tokens


_WORD = re.compile(r"\w+")


def tokenize_words(text: str) -> list[str]:
    """Lower-cased ``\\w+`` runs: the plain tokenizer of many research scripts.

    Example:
        >>> tokenize_words("Beyoncé's 2nd album")
        ['beyoncé', 's', '2nd', 'album']
    """
    return [token.lower() for token in _WORD.findall(text)]


TOKENIZERS = {"standard": tokenize, "word": tokenize_words}


def get_tokenizer(name: str):
    """The tokenizer called ``name``; a ValueError lists the valid names."""
    try:
        return TOKENIZERS[name]
    except KeyError:
        raise ValueError(f"unknown tokenizer {name!r}; choose one of {', '.join(TOKENIZERS)}") from None


_SPACE = re.compile(r"\s+")


def normalise_entity(name: str) -> str:
    """The key two entity mentions must share to be the same graph node.

    Lower-cased, surrounding whitespace stripped, inner whitespace collapsed.

    Example:
        >>> normalise_entity("  New   York City ")
        'new york city'
    """
    return _SPACE.sub(" ", name).strip().lower()
