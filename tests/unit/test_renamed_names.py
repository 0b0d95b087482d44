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


@pytest.mark.parametrize(("old", "new"), [("gear_agent.retrievers", "gear_agent.registry"),
                                          ("gear_agent.retrieval.registry", "gear_agent.registry"),
                                          ("gear_agent.llm_free_retrievers", "gear_agent.parts"),
                                          ("gear_agent.retrieval.llm_free", "gear_agent.parts"),
                                          ("gear_agent.agent.parts", "gear_agent.parts")])
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


def test_the_open_index_is_named_index_and_runtime_still_works_with_a_warning(tmp_path) -> None:
    from support.fakes import scripted
    from support.tiny_corpus import make_runtime

    from gear_agent import Gear
    from gear_agent.agent.graph import build_agent
    from gear_agent.open_index import OpenIndex

    index = make_runtime(tmp_path / "index")
    with pytest.warns(DeprecationWarning, match=r"build_agent\(runtime=...\) is now build_agent\(index=...\)"):
        old = build_agent(runtime=index, chat_model=scripted([]))
    assert old.get_graph().nodes.keys() == build_agent(index=index, chat_model=scripted([])).get_graph().nodes.keys()
    with pytest.raises(TypeError, match="not both"), pytest.warns(DeprecationWarning):
        build_agent(index=index, runtime=index, chat_model=scripted([]))
    from gear_agent.errors import GearWarning

    with pytest.warns(GearWarning, match="created a new, empty one"):
        gear = Gear(tmp_path / "other", embedding_model="hashing-64", create=True)
    assert isinstance(gear.open_index, OpenIndex)
    with pytest.warns(DeprecationWarning, match=r"Gear.runtime is now Gear.open_index"):
        assert gear.runtime is gear.open_index


def test_create_app_takes_the_open_index_as_index(tmp_path) -> None:
    from support.tiny_corpus import make_runtime, make_settings

    from gear_agent.serve.app import create_app

    index = make_runtime(tmp_path / "index", make_settings(index_dir=tmp_path / "index"))
    with pytest.warns(DeprecationWarning, match=r"create_app\(runtime=...\) is now create_app\(index=...\)"):
        old = create_app(None, index.settings, runtime=index)
    new = create_app(None, index.settings, index=index)
    from fastapi.testclient import TestClient

    for app in (old, new):  # the page is served over the index either way
        assert TestClient(app, base_url="http://127.0.0.1").get("/ui/api/health").status_code == 200
