"""parse_triples: every format models use, and what gets dropped."""

from __future__ import annotations

import json

import pytest

from gear_agent.parsing import clean_part, parse_triples, triples_from_items

PFF = ("Paris", "capital of", "France")
BGG = ("Berlin", "capital of", "Germany")


@pytest.mark.parametrize(
    "text",
    [
        '("Paris", "capital of", "France")\n("Berlin", "capital of", "Germany")',
        "(Paris, capital of, France)\n(Berlin, capital of, Germany)",
        '[["Paris", "capital of", "France"], ["Berlin", "capital of", "Germany"]]',
        '{"triples": [["Paris", "capital of", "France"], ["Berlin", "capital of", "Germany"]]}',
        "1. (Paris, capital of, France)\n2. (Berlin, capital of, Germany)",
        "1) ('Paris', 'capital of', 'France')\n2) ('Berlin', 'capital of', 'Germany')",
        "- Paris | capital of | France\n- Berlin | capital of | Germany",
        "* Paris | capital of | France\n* Berlin | capital of | Germany",
        "Paris -> capital of -> France\nBerlin -> capital of -> Germany",
        "| Subject | Predicate | Object |\n|---|---|---|\n"
        "| Paris | capital of | France |\n| Berlin | capital of | Germany |",
        "Here are the triples I found:\n```json\n"
        '[["Paris", "capital of", "France"],\n ["Berlin", "capital of", "Germany"]]\n```\n'
        "Let me know if you need more.",
        "Sure! The facts are (Paris, capital of, France) and (Berlin, capital of, Germany).",
        '{"triples": [{"subject": "Paris", "predicate": "capital of", "object": "France"},'
        ' {"head": "Berlin", "relation": "capital of", "tail": "Germany"}]}',
        "{'triples': [('Paris', 'capital of', 'France'), ('Berlin', 'capital of', 'Germany'),]}",
        '["(Paris, capital of, France)", "Berlin | capital of | Germany"]',
    ],
)
def test_formats(text):
    parsed = parse_triples(text)
    assert parsed.triples == [PFF, BGG]
    assert parsed.dropped == []


def test_parts_are_stripped_of_quotes_and_whitespace():
    text = '(  " Paris ",  `capital   of`, **France** )'
    assert parse_triples(text).triples == [PFF]


def test_escaped_quotes_in_raw_text():
    text = '("He said \\"hi\\"", "to", "Ann")'
    assert parse_triples(text).triples == [('He said "hi"', "to", "Ann")]


def test_commas_and_apostrophes_inside_parts():
    text = (
        '("Obama\'s wife", "born in", "Chicago, Illinois")\n'
        "(Barack Obama, born in, Honolulu (Hawaii))\n"
        "(O'Neil's band, formed in, 1990)"
    )
    assert parse_triples(text).triples == [
        ("Obama's wife", "born in", "Chicago, Illinois"),
        ("Barack Obama", "born in", "Honolulu (Hawaii)"),
        ("O'Neil's band", "formed in", "1990"),
    ]


def test_wrong_arity_and_empty_parts_are_dropped_and_recorded():
    text = (
        '[["Paris", "capital of", "France"], ["only", "two"], ["a", "b", "c", "d"],'
        ' ["x", "", "z"], ["x", null, "z"], ["x", ["nested"], "z"], "loose words", 42]'
    )
    parsed = parse_triples(text)
    assert parsed.triples == [PFF]
    assert len(parsed.dropped) == 7
    assert "['only', 'two']" in parsed.dropped


def test_numbers_become_text():
    assert parse_triples('[["Tower", "height in m", 330], ["X", "born", 1961.0]]').triples == [
        ("Tower", "height in m", "330"),
        ("X", "born", "1961"),
    ]


def test_duplicates_are_kept_once_in_order():
    text = "(a, b, c)\n(d, e, f)\n(a, b, c)"
    assert parse_triples(text).triples == [("a", "b", "c"), ("d", "e", "f")]


def test_truncated_json_keeps_complete_triples():
    text = '{"triples": [["Paris", "capital of", "France"], ["Berlin", "capital of", "Germ'
    parsed = parse_triples(text)
    assert parsed.triples == [PFF]
    assert parsed.dropped == ["['Berlin', 'capital of']"]


def test_truncated_last_item_with_complete_strings_is_kept():
    text = '[["Paris", "capital of", "France"], ["Berlin", "capital of", "Germany"'
    assert parse_triples(text).triples == [PFF, BGG]


def test_multiline_tuples():
    text = '(\n  "Paris",\n  "capital of",\n  "France"\n)'
    assert parse_triples(text).triples == [PFF]


def test_prose_and_empty_replies_give_nothing():
    assert parse_triples("").triples == []
    assert parse_triples("I could not find any facts in this passage.").triples == []
    assert parse_triples('{"triples": []}').triples == []
    assert parse_triples("[]").triples == []


def test_prose_parentheses_are_not_triples():
    parsed = parse_triples("Paris (France) is a city (population about 2.1 million).")
    assert parsed.triples == [] and parsed.dropped == []


def test_citations_are_not_triples():
    parsed = parse_triples("As shown in [1, 2, 3] and (4, 5), the answer holds.")
    assert parsed.triples == [] and parsed.dropped == []


def test_table_header_and_placeholders_are_skipped():
    text = "subject | predicate | object\n... | ... | ...\nParis | capital of | France"
    assert parse_triples(text).triples == [PFF]


def test_numbered_markdown_table():
    text = "| # | Subject | Predicate | Object |\n|---|---|---|---|\n| 1 | Paris | capital of | France |"
    assert parse_triples(text).triples == [PFF]


def test_triples_from_items_mixed():
    parsed = triples_from_items([list(PFF), {"s": "Berlin", "p": "capital of", "o": "Germany"}])
    assert parsed.triples == [PFF, BGG]


def test_clean_part():
    assert clean_part("  'Paris'  ") == "Paris"
    assert clean_part('He said \\"hi\\"', unescape=True) == 'He said "hi"'
    assert clean_part('a \\" b') == 'a \\" b'  # decoded JSON is left as it is
    assert clean_part('"Say "hi""') == 'Say "hi"'
    assert clean_part("O'Neil") == "O'Neil"
    assert clean_part("\u201cParis\u201d") == "Paris"
    assert clean_part("  ") is None
    assert clean_part(True) is None
    assert clean_part(["x"]) is None
    assert clean_part(2.5) == "2.5"


def test_a_lone_quote_in_a_json_string_is_content():
    # Real replies of a capable model (HotpotQA extraction replay): JSON delimits the
    # string, so an elision or an inch mark at either end stays.
    reply = json.dumps({"triples": [
        ["Tampa Bay Crosstown Expressway System", "planned during", "'70s"],
        ["Engelbert Humperdinck", "had chart success with", "After the Lovin'"],
        ["Silas Daniels III", "height", "6'0\""],
    ]})
    assert [t[2] for t in parse_triples(reply).triples] == ["'70s", "After the Lovin'", "6'0\""]
    # in raw text the scan may leave a broken quote behind; there it is dropped
    assert clean_part("'70s", unescape=True) == "70s"
