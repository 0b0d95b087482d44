"""extract_json and the JSON-shaped replies: extraction, reasoner; short replies."""

from __future__ import annotations

import pytest

from gear_agent.parsing import (
    ParseError,
    ReasonerVerdict,
    extract_json,
    parse_extraction_reply,
    parse_reasoner_reply,
    parse_short_reply,
)

# ---- extract_json -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ("```\n[1, 2]\n```", [1, 2]),
        ('Here you go:\n{"a": [1, 2]}\nHope this helps!', {"a": [1, 2]}),
        ('{"a": [1, 2,], "b": 3,}', {"a": [1, 2], "b": 3}),
        (
            "{'a': 'x', 'b': None, 'c': True, 'd': False}",
            {"a": "x", "b": None, "c": True, "d": False},
        ),
        ("{answerable: true, reason: 'two words'}", {"answerable": True, "reason": "two words"}),
        ("{'name': 'Obama's wife'}", {"name": "Obama's wife"}),
        ('{"q": "He said \\"hi\\""}', {"q": 'He said "hi"'}),
        ("{'u': '\\u00e9t\\u00e9'}", {"u": "été"}),
        (
            'According to [1] and [2], the reply is {"answer": "Paris", "n": [1, 2, 3]}',
            {"answer": "Paris", "n": [1, 2, 3]},
        ),
        ("[('a', 'b', 'c')]", [["a", "b", "c"]]),
        ("-1.5e3", -1500.0),
        ('```json\n{"a": 1}', {"a": 1}),  # fence never closed
    ],
)
def test_extract_json(text, expected):
    assert extract_json(text) == expected


def test_fenced_block_wins_over_prose_json():
    text = 'Example: {"a": 0, "long": "xxxxxxxxxxxxxxxxxxxx"}\n```json\n{"a": 1}\n```'
    assert extract_json(text) == {"a": 1}


def test_want_filters_by_type():
    text = 'See [1]. {"answerable": false}'
    assert extract_json(text, want=dict) == {"answerable": False}
    assert extract_json("[1, 2] and [3]", want=list) == [1, 2]
    with pytest.raises(ParseError, match="no JSON dict"):
        extract_json("[1, 2]", want=dict)
    assert extract_json('[{"answerable": true}]', want=dict) == {"answerable": True}


def test_truncated_values_only_on_request():
    text = '{"answerable": true, "answer": "Par'
    with pytest.raises(ParseError):
        extract_json(text)
    assert extract_json('{"items": [1, 2], "more": [3', repair_truncated=True) == {
        "items": [1, 2],
        "more": [],
    }


@pytest.mark.parametrize(
    "text", ["", "no json here", "{", "{'a': }", "[" * 5000, "{" * 5000, "{a b c}", '{"a" 1}']
)
def test_no_json_raises_parse_error(text):
    with pytest.raises(ParseError):
        extract_json(text)


def test_non_text_raises_parse_error():
    with pytest.raises(ParseError):
        extract_json(None)  # type: ignore[arg-type]


def test_parse_error_shows_the_start_of_the_reply():
    with pytest.raises(ParseError) as caught:
        extract_json("I cannot help with that.")
    assert "I cannot help" in str(caught.value)
    assert caught.value.text == "I cannot help with that."


# ---- extraction replies -------------------------------------------------------------------


def test_extraction_reply_standard_shape():
    reply = parse_extraction_reply(
        '{"entities": ["Lake Bled", "Slovenia", "Lake Bled"],'
        ' "triples": [["Lake Bled", "located in", "Slovenia"], ["bad"]]}'
    )
    assert reply.entities == ["Lake Bled", "Slovenia"]
    assert reply.triples == [("Lake Bled", "located in", "Slovenia")]
    assert reply.dropped == ["['bad']"]


@pytest.mark.parametrize(
    ("entity_key", "triple_key"),
    [
        ("named_entities", "triples"),
        ("extracted_entities", "extracted_triples"),
        ("Entities", "Relations"),
    ],
)
def test_extraction_reply_key_variants(entity_key, triple_key):
    text = (
        f'{{"{entity_key}": [{{"name": "A"}}, "B"], "{triple_key}": '
        '[{"subject": "A", "predicate": "knows", "object": "B"},'
        ' {"head": "B", "relation": "knows", "tail": "A"}]}'
    )
    reply = parse_extraction_reply(text)
    assert reply.entities == ["A", "B"]
    assert reply.triples == [("A", "knows", "B"), ("B", "knows", "A")]


def test_extraction_reply_in_fence_with_prose_and_typed_entities():
    text = (
        "Here is the extraction:\n```json\n"
        '{"entities": {"PERSON": ["Ann"], "PLACE": ["Oslo"]}, "triples": [["Ann", "lives in", "Oslo"]],}\n'
        "```"
    )
    reply = parse_extraction_reply(text)
    assert reply.entities == ["Ann", "Oslo"] and reply.triples == [("Ann", "lives in", "Oslo")]


def test_extraction_reply_cut_off_keeps_complete_triples():
    text = '{"entities": ["A", "B"], "triples": [["A", "knows", "B"], ["B", "kno'
    reply = parse_extraction_reply(text)
    assert reply.entities == ["A", "B"] and reply.triples == [("A", "knows", "B")]


def test_extraction_reply_without_triples_key_is_empty_not_an_error():
    assert parse_extraction_reply('{"entities": []}').triples == []
    assert parse_extraction_reply('{"entities": [], "triples": []}').triples == []


def test_extraction_reply_as_bare_list_or_tuples():
    assert parse_extraction_reply("[]").triples == []
    assert parse_extraction_reply('[["A", "knows", "B"]]').triples == [("A", "knows", "B")]
    assert parse_extraction_reply("1. (A, knows, B)\n2. (B, knows, C)").triples == [
        ("A", "knows", "B"),
        ("B", "knows", "C"),
    ]


@pytest.mark.parametrize(
    "text", ["I could not find any facts.", '{"answer": "Paris"}', "", "[1, 2, 3]"]
)
def test_unreadable_extraction_reply_raises(text):
    with pytest.raises(ParseError):
        parse_extraction_reply(text)


# ---- reasoner replies -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"answerable": true, "answer": "Paris", "reason": null}', (True, "Paris", None)),
        (
            '{"answerable": false, "answer": null, "reason": "birth year of X"}',
            (False, None, "birth year of X"),
        ),
        ('```json\n{"answerable": "yes", "answer": "1961"}\n```', (True, "1961", None)),
        (
            "{'answerable': 'No', 'answer': 'N/A', 'missing': 'who directed Y'}",
            (False, None, "who directed Y"),
        ),
        ('{"answerable": 1, "answer": 1961}', (True, "1961", None)),
        ('{"answerable": false, "answer": "Paris", "reason": "unsure"}', (False, None, "unsure")),
        ("Yes. Paris", (True, "Paris", None)),
        ("yes - **Paris**", (True, "Paris", None)),
        (
            "No, the birth date of Jane Doe is missing.",
            (False, None, "the birth date of Jane Doe is missing."),
        ),
        ("Answerable: yes\nAnswer: 1990\nReason: found it", (True, "1990", "found it")),
        (
            "**Answerable:** no\n**Reason:** the director's birthplace",
            (False, None, "the director's birthplace"),
        ),
        ("Let me think.\nAnswerable: no\nMissing: X's spouse", (False, None, "X's spouse")),
    ],
)
def test_reasoner_reply(text, expected):
    assert parse_reasoner_reply(text) == ReasonerVerdict(*expected)


def test_answerable_without_answer_means_not_answerable():
    verdict = parse_reasoner_reply('{"answerable": true, "answer": ""}')
    assert verdict.answerable is False and verdict.answer is None
    assert "no answer" in verdict.reason


@pytest.mark.parametrize("text", ["", "I am not sure.", '{"answer": "Paris"}', "Maybe"])
def test_undecided_reasoner_reply_raises(text):
    with pytest.raises(ParseError):
        parse_reasoner_reply(text)


# ---- short replies -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "label", "expected"),
    [
        ("Paris", "answer", "Paris"),
        ("Paris.", "answer", "Paris"),
        ("U.S.", "answer", "U.S."),
        ('"Paris"\n', "answer", "Paris"),
        ("Thought: the capital...\nAnswer: **Paris**.", "answer", "Paris"),
        ("answer: The Eiffel Tower", "answer", "The Eiffel Tower"),
        ("```\nQuery: birthplace of Jane Doe\n```", "query", "birthplace of Jane Doe"),
        ("\n\n  birthplace of Jane Doe  \nextra line", "query", "birthplace of Jane Doe"),
    ],
)
def test_short_reply(text, label, expected):
    assert parse_short_reply(text, label=label) == expected


@pytest.mark.parametrize("text", ["", "   \n ", "Answer:", '""'])
def test_empty_short_reply_raises(text):
    with pytest.raises(ParseError):
        parse_short_reply(text)
