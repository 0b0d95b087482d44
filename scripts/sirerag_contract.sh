#!/bin/bash
# SiReRAG's full method with the local 270M model on the demo corpus: a contract run, not a
# quality measure (needs `bash scripts/local_llm.sh install`). Usage: bash scripts/sirerag_contract.sh [WORKDIR]
set -u
cd "$(dirname "$0")/.."
PORT=18765
W=${1:-$(mktemp -d)}; mkdir -p $W
bash scripts/local_llm.sh serve $PORT > $W/server.log 2>&1 &
SERVER=$!
for i in $(seq 120); do curl -s http://127.0.0.1:$PORT/v1/models >/dev/null && break; sleep 1; done
export OPENAI_BASE_URL=http://127.0.0.1:$PORT/v1 OPENAI_API_KEY=not-needed GEAR_LLM_MODEL=gemma \
  GEAR_LLM_RESPONSE_FORMAT=json_object_schema GEAR_LLM_CACHE_DIR=$W/cache GEAR_MAX_ITERATIONS=2 \
  GEAR_LLM_TIMEOUT_S=120
echo "== dry run"; time python -m gear_agent.cli eval --questions examples/demo/questions.json \
  --corpus examples/demo/corpus.json --openie examples/demo/openie.json --index $W/index \
  --retrievers dense --tokenizer word 2>&1 | tail -4
python -m gear_agent.cli sirerag build --mode full --dry-run --index $W/index 2>&1 | tail -12
echo "== full build + eval"
time python -m gear_agent.cli eval --questions examples/demo/questions.json \
  --corpus examples/demo/corpus.json --openie examples/demo/openie.json --index $W/index \
  --retrievers dense,hybrid,sirerag,gear-sirerag --sirerag full --tokenizer word --json $W/rows.json 2>&1 | tail -25
echo "== levels"; python -m gear_agent.cli sirerag info --index $W/index 2>&1 | tail -15
kill $SERVER; wait $SERVER 2>/dev/null
