"""Every shim names the release that removes it, and that release is still ahead: once the
package's version reaches a shim's ``removed_in``, this test fails until the shim is gone."""

from __future__ import annotations

import re
import warnings
from importlib.metadata import version
from pathlib import Path

import pytest
from packaging.version import Version

import gear_agent
from gear_agent._deprecated import NEXT_REMOVAL, warn_deprecated

PACKAGE = Path(gear_agent.__file__).parent


def _sources() -> dict[Path, str]:
    return {path: path.read_text(encoding="utf-8") for path in PACKAGE.rglob("*.py")}


def test_every_shim_goes_through_the_one_helper_with_a_removal_version() -> None:
    direct = [path.relative_to(PACKAGE) for path, text in _sources().items()
              if path.name != "_deprecated.py" and re.search(r"warn\([^)]*DeprecationWarning", text, re.S)]
    assert direct == [], f"DeprecationWarning raised without warn_deprecated in {direct}"
    for path, text in _sources().items():
        for call in re.findall(r"(?:moved_names|moved_module|warn_deprecated)\((?:[^()]|\([^()]*\))*\)", text, re.S):
            if "def " in call or path.name == "_deprecated.py":
                continue
            assert "removed_in=" in call, f"{path.relative_to(PACKAGE)}: {call[:80]} names no removal version"


def test_no_shim_outlives_the_version_it_announced() -> None:
    installed = Version(version("gear-agent"))
    announced = {NEXT_REMOVAL} | {m for text in _sources().values()
                                  for m in re.findall(r'removed_in="([0-9.]+)"', text)}
    overdue = sorted(v for v in announced if Version(v) <= installed)
    assert overdue == [], f"gear-agent {installed} has reached {overdue}: remove those shims"


def test_the_warning_names_the_release() -> None:
    with pytest.warns(DeprecationWarning, match=rf"removed in gear-agent {re.escape(NEXT_REMOVAL)}"):
        warn_deprecated("old is now new", removed_in=NEXT_REMOVAL)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from gear_agent import retrievers

        retrievers.RetrieverSpec  # noqa: B018
    assert any(f"removed in gear-agent {NEXT_REMOVAL}" in str(w.message) for w in caught)
