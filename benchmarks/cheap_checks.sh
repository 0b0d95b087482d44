#!/usr/bin/env bash
# How long `gear ask` / `gear search` take to say they cannot succeed (no index, no LLM, a
# filter that nothing passes or that cannot be read), at a base commit and now.
#
#   bash benchmarks/cheap_checks.sh [BASE_COMMIT]     # default: git merge-base HEAD main
#
# Builds the demo index with the default embedding model (all-MiniLM-L6-v2) in a temporary
# folder; no LLM is needed (OPENAI_BASE_URL points at a closed port where one must be set).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
base="${1:-$(git -C "$root" merge-base HEAD main)}"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
git -C "$root" archive "$base" | tar -x -C "$work" --one-top-level=base
unset OPENAI_API_KEY OPENAI_BASE_URL GEAR_LLM_MODEL GEAR_INDEX_DIR GEAR_EMBEDDING_MODEL
PYTHONPATH="$root" python -c "from gear_agent.cli import main; main()" index \
  "$root/examples/demo/corpus.json" --openie "$root/examples/demo/openie.json" --index "$work/index" >/dev/null 2>&1
run() {  # LABEL CODE ARGS...: time one command
  local label=$1 code=$2; shift 2
  local start end out
  start=$(date +%s.%N)
  out=$(cd / && PYTHONPATH="$code" python -c "from gear_agent.cli import main; main()" "$@" 2>&1 | tr '\n' ' ' | cut -c1-100) || true
  end=$(date +%s.%N)
  printf '%-7s %6.2f s  gear %-55s -> %s\n' "$label" "$(echo "$end - $start" | bc)" "$(echo "$*" | cut -c1-55)" "$out"
}
for label in before now; do
  code="$root"; [ "$label" = before ] && code="$work/base"
  run $label "$code" ask "Who founded Kestrel?" --index "$work/nowhere"
  run $label "$code" ask "Who founded Kestrel?" --index "$work/index"
  OPENAI_BASE_URL=http://127.0.0.1:9/v1 run $label "$code" ask "Who founded Kestrel?" --index "$work/index" --where "year>1900"
  run $label "$code" search "Who founded Kestrel?" --index "$work/index" --where "year>1900"
  run $label "$code" search "Who founded Kestrel?" --index "$work/index" --where "year>>2"
done
