"""Every subpackage states its public surface in ``__all__``, and every name there resolves."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil

import pytest

import gear_agent

SUBPACKAGES = sorted(m.name for m in pkgutil.iter_modules(gear_agent.__path__) if m.ispkg)


@pytest.mark.parametrize("name", SUBPACKAGES)
def test_every_subpackage_states_its_public_names(name: str) -> None:
    package = importlib.import_module(f"gear_agent.{name}")
    assert isinstance(getattr(package, "__all__", None), list), f"gear_agent.{name} has no __all__"
    for public in package.__all__:
        found = hasattr(package, public) or importlib.util.find_spec(f"gear_agent.{name}.{public}")
        assert found, f"gear_agent.{name}.__all__ names {public!r}, which is not there"


def test_the_top_level_surface_resolves() -> None:
    for public in gear_agent.__all__:
        assert getattr(gear_agent, public) is not None
