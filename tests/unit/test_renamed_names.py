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
