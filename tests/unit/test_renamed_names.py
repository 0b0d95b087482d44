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
