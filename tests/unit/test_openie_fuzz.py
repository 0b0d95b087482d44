"""Property tests: the OpenIE importer never fails on odd docs and never keeps a bad triple."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from gear_agent.ingest.corpus import CorpusFormatError
from gear_agent.ingest.openie import parse_openie_docs, read_openie

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
docs = st.lists(
    st.one_of(
        json_values,
        st.fixed_dictionaries(
            {"title": json_values, "text": json_values, "extracted_triples": json_values},
        ),
        st.fixed_dictionaries(
            {"title": st.text(max_size=10), "text": st.text(max_size=30),
             "extracted_triples": st.lists(st.lists(json_values, max_size=4), max_size=6)},
        ),
    ),
    max_size=8,
)


@settings(max_examples=300, deadline=None)
@given(docs)
def test_arbitrary_docs_never_raise_and_keep_only_clean_triples(items):
    result = parse_openie_docs(items)
    assert result.docs == len(items)
    for triple in result.triples:
        for part in triple.as_tuple():
            assert isinstance(part, str) and part and part == part.strip()
        assert triple.passage_id in result.passage_ids


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_arbitrary_file_bytes_raise_only_the_projects_error(tmp_path_factory, content):
    path = tmp_path_factory.mktemp("openie") / "openie.json"
    path.write_bytes(content)
    try:
        read_openie(path)
    except CorpusFormatError:
        pass


def test_valid_file_round_trip(tmp_path):
    path = tmp_path / "o.json"
    path.write_text(json.dumps({"docs": [{"title": "T", "text": "x", "extracted_triples": [["a", "b", "c"]]}]}))
    assert [t.as_tuple() for t in read_openie(path).triples] == [("a", "b", "c")]
