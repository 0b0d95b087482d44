"""Property tests: parsers of model output never crash and never emit a malformed triple."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gear_agent.parsing import (
    ParseError,
    clean_part,
    extract_json,
    parse_entities_reply,
    parse_extraction_reply,
    parse_reasoner_reply,
    parse_short_reply,
    parse_triples,
)
from gear_agent.prompts import render_triples

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Text rich in the characters the parsers care about, plus anything at all.
_SPECIAL = st.sampled_from(
    list("()[]{},:|\"'`\\\n -*.>0123456789")
    + [
        "->",
        "```",
        "```json\n",
        "true",
        "null",
        "None",
        "triples",
        "entities",
        "named_entities",
        "answerable",
        "yes",
        "no",
        "Answer:",
        "\u201c",
        "\u201d",
        "\u2192",
    ]
)
structured_text = st.lists(st.one_of(_SPECIAL, st.text(max_size=4)), max_size=60).map("".join)
any_text = st.one_of(st.text(max_size=300), structured_text)


def _check_triples(triples):
    for triple in triples:
        assert isinstance(triple, tuple) and len(triple) == 3
        for part in triple:
            assert isinstance(part, str)
            assert part.strip() == part and part != ""


@FUZZ
@given(any_text)
def test_parse_triples_never_raises_and_emits_clean_triples(text):
    parsed = parse_triples(text)
    _check_triples(parsed.triples)
    assert len(set(parsed.triples)) == len(parsed.triples)
    assert all(isinstance(d, str) for d in parsed.dropped)


@FUZZ
@given(any_text)
def test_extract_json_raises_only_parse_error(text):
    try:
        value = extract_json(text, repair_truncated=True)
    except ParseError:
        return
    json.dumps(value)  # whatever comes back is plain JSON data


@FUZZ
@given(any_text)
def test_extraction_reply_raises_only_parse_error(text):
    try:
        reply = parse_extraction_reply(text)
    except ParseError:
        return
    _check_triples(reply.triples)
    assert all(isinstance(e, str) and e for e in reply.entities)


@FUZZ
@given(any_text)
def test_entities_reply_raises_only_parse_error(text):
    try:
        names = parse_entities_reply(text)
    except ParseError:
        return
    assert all(isinstance(n, str) and n and n.strip() == n for n in names)
    assert len(set(names)) == len(names)


@FUZZ
@given(any_text)
def test_reasoner_reply_raises_only_parse_error(text):
    try:
        verdict = parse_reasoner_reply(text)
    except ParseError:
        return
    assert isinstance(verdict.answerable, bool)
    if verdict.answerable:
        assert isinstance(verdict.answer, str) and verdict.answer
    else:
        assert verdict.answer is None


@FUZZ
@given(any_text)
def test_short_reply_raises_only_parse_error(text):
    try:
        result = parse_short_reply(text)
    except ParseError:
        return
    assert result and "\n" not in result


# ---- round trips: triples written the ways models write them come back intact ----------------

_WORD = st.text(
    alphabet=st.characters(categories=("L", "N"), include_characters=" -'&."),
    min_size=1,
    max_size=20,
)
# Parts that come back unchanged from decoded JSON and from raw reply text alike (raw text
# also drops a lone quote at either end; decoded JSON keeps it as content).
part = _WORD.map(clean_part).filter(
    lambda p: p is not None and clean_part(p) == p == clean_part(p, unescape=True)
)
triple = st.tuples(part, part, part).filter(
    lambda t: not all(p.replace(".", "").isdigit() for p in t)
)
triple_lists = st.lists(triple, min_size=1, max_size=8, unique=True)


@FUZZ
@given(triple_lists)
def test_json_round_trip(triples):
    text = json.dumps({"triples": [list(t) for t in triples]}, ensure_ascii=False)
    assert parse_triples(text).triples == triples
    assert parse_extraction_reply(text).triples == triples


@FUZZ
@given(triple_lists)
def test_rendered_memory_round_trip(triples):
    assert parse_triples(render_triples(triples)).triples == triples


@FUZZ
@given(triple_lists, st.sampled_from(["- {} | {} | {}", "{}. ({}, {}, {})", '("{}", "{}", "{}")']))
def test_line_formats_round_trip(triples, line_format):
    if line_format.startswith("{}."):
        lines = [line_format.format(i + 1, *t) for i, t in enumerate(triples)]
        if any("," in p or "(" in p for t in triples for p in t):
            return  # bare tuples cannot hold commas; quoted ones can
    else:
        if '"' in line_format and any('"' in p for t in triples for p in t):
            return
        lines = [line_format.format(*t) for t in triples]
    text = "Here are the facts:\n" + "\n".join(lines) + "\nDone."
    assert parse_triples(text).triples == triples
