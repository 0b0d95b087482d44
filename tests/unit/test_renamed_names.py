"""Names renamed so they collide with nothing a user imports beside them: the old ones
still import, with a DeprecationWarning."""

import pytest


def test_the_old_base_retriever_name_still_imports_with_a_warning() -> None:
    from gear_agent.retrieval import search

    with pytest.warns(DeprecationWarning, match="SearchRetriever"):
        old = search.BaseRetriever
    assert old is search.SearchRetriever
    with pytest.raises(AttributeError):
        search.NoSuchName  # noqa: B018


def test_the_old_runtime_name_still_imports_with_a_warning() -> None:
    from gear_agent.open_index import OpenIndex

    with pytest.warns(DeprecationWarning, match="OpenIndex"):
        from gear_agent.runtime import Runtime
    assert Runtime is OpenIndex


@pytest.mark.parametrize(("old", "new"), [("gear_agent.retrievers", "gear_agent.retrieval.registry"),
                                          ("gear_agent.llm_free_retrievers", "gear_agent.retrieval.llm_free")])
def test_the_retriever_tables_old_modules_still_import_with_a_warning(old: str, new: str) -> None:
    import importlib

    moved, shim = importlib.import_module(new), importlib.import_module(old)
    with pytest.warns(DeprecationWarning, match=new):
        assert shim.RetrieverSpec is moved.RetrieverSpec
    with pytest.raises(AttributeError):
        shim.NoSuchName  # noqa: B018


def test_elasticsearch_settings_are_a_section_of_gear_settings() -> None:
    from gear_agent.config import ElasticsearchSettings, GearSettings

    settings = GearSettings(es_url="http://es:9200", es_index_prefix="mine")
    assert isinstance(settings, ElasticsearchSettings)
    assert ElasticsearchSettings().es_index_prefix == GearSettings().es_index_prefix == "gear"
    with pytest.warns(DeprecationWarning, match="es_url"):
        old = ElasticsearchSettings(url="http://es:9200", index_prefix="mine")
    assert (old.es_url, old.es_index_prefix) == (settings.es_url, settings.es_index_prefix)
    with pytest.warns(DeprecationWarning, match="from_gear"):
        assert ElasticsearchSettings.from_gear(settings) is settings
    with pytest.raises(Exception, match="es_index_prefix"):
        ElasticsearchSettings(es_index_prefix="Not Valid")
