import json

import pytest

from gear_agent.ids import passage_id
from gear_agent.ingest.corpus import CorpusFormatError, read_corpus
from gear_agent.ingest.openie import parse_openie_docs, read_openie
from gear_agent.text.chunking import chunk_text


def test_hipporag_json_corpus_dedupes_identical_passages(tmp_path):
    path = tmp_path / "corpus.json"
    rows = [{"title": "A", "text": "alpha"}, {"title": "A", "text": " alpha "}, {"title": "B", "text": "beta"}]
    path.write_text(json.dumps(rows))
    passages = read_corpus(path)
    assert [p.title for p in passages] == ["A", "B"]
    assert passages[0].id == passage_id("A", "alpha")


def test_jsonl_corpus(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"title": "A", "text": "alpha"}\n\n{"text": "no title"}\n')
    assert [(p.title, p.text) for p in read_corpus(path)] == [("A", "alpha"), ("", "no title")]


def test_folder_of_text_files_is_chunked_with_titles(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "big_river.txt").write_text(" ".join(f"Sentence {i} is here." for i in range(200)))
    (tmp_path / "docs" / "note.md").write_text("# The Note\nShort body.")
    passages = read_corpus(tmp_path / "docs", max_words=100, overlap_words=10)
    titles = {p.title for p in passages}
    assert titles == {"big river", "The Note"}
    assert sum(p.title == "big river" for p in passages) >= 8
    assert all(len(p.text.split()) <= 100 for p in passages)
    assert {p.source for p in passages} == {(tmp_path / "docs" / name).resolve().as_posix()
                                            for name in ("big_river.txt", "note.md")}


def test_chunker_breaks_between_sentences_and_overlaps():
    chunks = chunk_text("A b. C d. E f. G h.", max_words=4, overlap_words=2)
    assert chunks == ["A b. C d.", "C d. E f.", "E f. G h."]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        ('{"docs": []}', "OpenIE output"),
        ('{"a": 1}', "expected a JSON list"),
        ('[{"title": "x"}]', "no 'text' field"),
        ('[{"title": 3, "text": "x"}]', "'title' must be a string"),
    ],
)
def test_bad_corpus_files_get_a_clear_message(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(CorpusFormatError, match=message):
        read_corpus(path)


def test_missing_and_non_utf8_corpus(tmp_path):
    with pytest.raises(CorpusFormatError, match="not found"):
        read_corpus(tmp_path / "nope.json")
    (tmp_path / "latin.txt").write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(CorpusFormatError, match="not UTF-8"):
        read_corpus(tmp_path / "latin.txt")


def test_malformed_openie_triples_are_skipped_and_counted():
    docs = [
        {
            "title": "Paris",
            "text": "Paris is in France.",
            "extracted_triples": [
                ["Paris", "located in", "France"],
                ["Paris", "located in"],  # wrong arity
                ["Paris", "", "France"],  # empty part
                ["Paris", 3, "France"],  # non-string part
                "Paris located in France",  # not a list
                ["a", "b", "c", "d"],  # wrong arity
                ["Paris", "located in", "France"],  # duplicate in the same passage
                [" Paris ", "capital of ", "France"],
            ],
        },
        {"title": "Empty", "text": "Nothing here.", "extracted_triples": []},
        "not a doc",
    ]
    result = parse_openie_docs(docs)
    assert [t.as_tuple() for t in result.triples] == [
        ("Paris", "located in", "France"),
        ("Paris", "capital of", "France"),
    ]
    assert result.malformed == 6 and result.duplicates == 1 and result.docs == 3
    assert result.passage_ids == [passage_id("Paris", "Paris is in France."), passage_id("Empty", "Nothing here.")]
    assert all(t.passage_id == result.passage_ids[0] for t in result.triples)


def test_openie_file_errors(tmp_path):
    with pytest.raises(CorpusFormatError, match="not found"):
        read_openie(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    with pytest.raises(CorpusFormatError, match="docs"):
        read_openie(bad)


@pytest.mark.shared
def test_musique_openie_counts(shared_data):
    result = read_openie(shared_data / "openie_gpt-3.5-turbo-1106.json")
    assert result.docs == 1890
    assert result.malformed == 185
    assert len(result.triples) + result.malformed + result.duplicates == 17419


def test_openie_triples_not_in_their_doc_are_counted_and_optionally_left_out():
    from gear_agent.ingest.openie import parse_openie_docs

    docs = [{"title": "Folsom", "text": "Folsom is a city in Sacramento County, California.",
             "extracted_triples": [["Folsom", "located in", "Sacramento County"],
                                   ["folsom", "city in", "california"],
                                   ["Folsom", "twinned with", "Atlantis"]]}]
    counted = parse_openie_docs(docs)
    assert (len(counted.triples), counted.ungrounded, counted.ungrounded_left_out) == (3, 1, False)
    assert "Atlantis" in counted.ungrounded_examples[0]
    dropped = parse_openie_docs(docs, drop_ungrounded=True)
    assert [t.object for t in dropped.triples] == ["Sacramento County", "california"]
    assert dropped.ungrounded == 1 and dropped.ungrounded_left_out
