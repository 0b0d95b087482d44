import pytest

from gear_agent.text.tokenizer import get_tokenizer, normalise_entity, tokenize, tokenize_words


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("The Quick brown fox", ["the", "quick", "brown", "fox"]),  # lower-cased, no stop words
        ("can't won't", ["can't", "won't"]),  # apostrophe between letters joins (MidLetter)
        ("U.S.A. and e.g.", ["u.s.a", "and", "e.g"]),  # dots between letters join, trailing dot not
        ("1,000.50 and 3.14", ["1,000.50", "and", "3.14"]),  # MidNum between digits
        ("end. Next", ["end", "next"]),
        ("snake_case x2", ["snake_case", "x2"]),  # underscore and digits extend words
        ("北京 ok", ["北", "京", "ok"]),  # each ideograph is a token
        ("Beyoncé's album", ["beyoncé's", "album"]),
        ("  --  ", []),
        ("hello-world", ["hello", "world"]),
    ],
)
def test_standard_tokenizer_examples(text, tokens):
    assert tokenize(text) == tokens


def test_overlong_tokens_are_split_at_255():
    assert [len(t) for t in tokenize("a" * 600)] == [255, 255, 90]


def test_word_tokenizer_splits_on_every_non_word_character():
    assert tokenize_words("Beyoncé's 2nd U.S. tour") == ["beyoncé", "s", "2nd", "u", "s", "tour"]


def test_unknown_tokenizer_lists_valid_names():
    with pytest.raises(ValueError, match="standard, word"):
        get_tokenizer("whitespace")


def test_entity_normalisation_ignores_case_and_whitespace():
    assert normalise_entity("  New\tYork   CITY ") == "new york city"
