#!/usr/bin/env bash
# One entry point for a fresh Debian 12 / Ubuntu 24.04 machine:
#   scripts/dev.sh run [loradesk options]   install what is missing, build, start the app
#   scripts/dev.sh test                      install what is missing, build, run the whole test suite
#   scripts/dev.sh sanitize                  ASan+UBSan build of the CPU engine: its tests, then each fuzz target
#                                            for LORADESK_FUZZ_TIME seconds (default 30); `test` runs it too when
#                                            CI=true or LORADESK_SANITIZE=1 (docs/fuzzing.md)
#   scripts/dev.sh deps | build              the individual steps
# The app starts on the demo model when no --model is given. GPU tests (CTest label "cuda") run only
# when an NVIDIA GPU is present.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

apt_packages=(
  build-essential cmake ninja-build pkg-config ccache git file dpkg-dev
  qt6-base-dev libqt6opengl6-dev qt6-charts-dev qt6-svg-dev libqt6sql6-sqlite qt6-qpa-plugins
  libspdlog-dev libfmt-dev nlohmann-json3-dev libsqlite3-dev libpcre2-dev libutf8proc-dev libcurl4-openssl-dev
  python3 python3-jinja2 python3-numpy nodejs npm xvfb xauth desktop-file-utils appstream
  clang libclang-rt-dev clang-format
)

sudo_cmd() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

deps() {
  local missing=()
  for p in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  # Node is often installed outside dpkg (nodesource, nvm): only ask apt for it when absent.
  if command -v node >/dev/null && command -v npm >/dev/null; then
    missing=("${missing[@]/nodejs}"); missing=("${missing[@]/npm}")
  fi
  local want=()
  for p in "${missing[@]}"; do [ -n "$p" ] && want+=("$p"); done
  if [ ${#want[@]} -gt 0 ]; then
    echo "dev.sh: installing ${want[*]}"
    sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive sudo_cmd apt-get install -y -qq --no-install-recommends "${want[@]}"
  fi
  # JavaScript oracles and the OpenAI SDK used by the tests, pinned by package-lock.json.
  if [ -f tests/js/package-lock.json ] && [ ! -d tests/js/node_modules ]; then
    (cd tests/js && npm ci --no-audit --no-fund --loglevel=error)
  fi
}

preset() {
  if [ "${CI:-}" = "true" ]; then echo ci; else echo default; fi
}

build() {
  local p; p=$(preset)
  export CCACHE_BASEDIR=$root CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}
  cmake --preset "$p" >/dev/null
  cmake --build --preset "$p" --parallel "$(nproc)"
}

binary_dir() { if [ "$(preset)" = ci ]; then echo build-ci; else echo build; fi; }

has_gpu() { command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; }

run_tests() {
  local bdir; bdir=$(binary_dir)
  local label_args=(-LE cuda)
  has_gpu && label_args=()
  (cd "$bdir" && ctest --output-on-failure --parallel "$(nproc)" "${label_args[@]}")
}

# The sanitizer stage builds only what it runs: the engine-level tests (no CUDA, GUI, app or catalog process
# tests) and the fuzz targets, whose corpus replays are CTest tests too (label fuzz).
sanitize_tests=(
  tst_core_basics tst_safetensors tst_model_config tst_model_weights
  tst_adapter_config tst_adapter_loader tst_adapter_registry tst_tiered_store tst_lora_model
  tst_tokenizer tst_jinja tst_page_pool tst_prefix_cache
  tst_gbnf_parser tst_grammar_matcher tst_regex_to_gbnf tst_json_schema_grammar
  tst_scheduler_steps tst_scheduler_sim tst_engine_loop tst_sched_cpu_e2e
  tst_cpu_runner tst_sampler tst_memory_plan
  tst_server_parse tst_server_routes tst_server_stream tst_server_metrics tst_http_server tst_http_limits
  tst_tool_call_grammar tst_engine_serving tst_structured_output
  tst_dequantize tst_quantized_model tst_step_plan tst_quant_pack tst_hub_cache
)

sanitize() {
  export CCACHE_BASEDIR=$root CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}
  local fuzzers; fuzzers=($(grep -o '^fuzz_[a-z_]*' fuzz/targets.txt))
  cmake --preset sanitize >/dev/null
  cmake --build build-sanitize --parallel "$(nproc)" --target "${sanitize_tests[@]}" "${fuzzers[@]}"
  local only; only="^($(IFS='|'; echo "${sanitize_tests[*]}"))\$|_corpus\$"
  (cd build-sanitize &&
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    LSAN_OPTIONS=suppressions=$root/scripts/lsan.supp:print_suppressions=0 \
    ctest --output-on-failure --parallel "$(nproc)" -R "$only")
  scripts/fuzz.sh --no-build --time "${LORADESK_FUZZ_TIME:-30}"
}

run_app() {
  local bdir; bdir=$(binary_dir)
  if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && [ -x "$bdir/app/loradesk/loradesk" ]; then
    exec "$bdir/app/loradesk/loradesk" "$@"
  fi
  echo "dev.sh: no display; starting the headless server (loradeskd serve)"
  exec "$bdir/app/loradeskd/loradeskd" serve "$@"
}

case "${1:-}" in
  deps) deps ;;
  build) deps; build ;;
  run) shift; deps; build; run_app "$@" ;;
  test)
    deps; build; run_tests
    if [ "${CI:-}" = "true" ] || [ "${LORADESK_SANITIZE:-}" = 1 ]; then sanitize; fi
    ;;
  sanitize) deps; sanitize ;;
  *) echo "usage: scripts/dev.sh run [options] | test | sanitize | deps | build" >&2; exit 2 ;;
esac
