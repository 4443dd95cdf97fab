#!/usr/bin/env bash
# Runs the libFuzzer targets (fuzz/, docs/fuzzing.md) one after another over their committed seed corpora.
#   scripts/fuzz.sh [--time S | --runs N] [--jobs J] [--bin DIR] [--work DIR] [--no-build] [target ...]
#     --time S    fuzz each target for S seconds (default 60)
#     --runs N    or stop each target after N executions (per job)
#     --jobs J    J libFuzzer processes per target (-jobs=J -workers=J), sharing one growing corpus
#     --bin DIR   where the fuzz_* binaries are (default build-sanitize/fuzz; built first unless --no-build)
#     --work DIR  growing corpora, logs and crash artifacts (default $LORADESK_FUZZ_WORK or build-sanitize/fuzz-work)
# Exit status 1 when any target found a crash, leak, timeout or out-of-memory (artifacts in WORK/<target>/).
# The summary line per target gives executions, exec/s and coverage (libFuzzer's cov: edges and ft: features).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

time_s=60 runs="" jobs=1 bin="" work="" build=1 targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --time) time_s=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --bin) bin=$2; build=0; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) targets+=("$1"); shift ;;
  esac
done

declare -A max_len
while read -r name len; do
  case "$name" in fuzz_*) max_len[$name]=$len ;; esac
done < fuzz/targets.txt
[ ${#targets[@]} -gt 0 ] || targets=($(grep -o '^fuzz_[a-z_]*' fuzz/targets.txt))
bin=${bin:-$root/build-sanitize/fuzz}
work=${work:-${LORADESK_FUZZ_WORK:-$root/build-sanitize/fuzz-work}}

if [ "$build" = 1 ]; then
  export CCACHE_BASEDIR=$root
  cmake --preset sanitize >/dev/null
  cmake --build build-sanitize --parallel "$(nproc)" --target "${targets[@]}"
fi

# The targets read the demo tokenizer and the committed chat templates from this checkout (fuzz/fuzz_paths.h).
export LORADESK_SOURCE_DIR=$root
# LeakSanitizer is on (ASan's default on Linux); the suppressions cover third-party libraries only.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/scripts/lsan.supp:print_suppressions=0}

status=0
for t in "${targets[@]}"; do
  [ -n "${max_len[$t]:-}" ] || { echo "fuzz.sh: unknown target $t" >&2; exit 2; }
  dir=$work/$t
  mkdir -p "$dir/corpus" "$dir/artifacts"
  limit=(-max_total_time="$time_s")
  [ -n "$runs" ] && limit=(-runs="$runs")
  dict=()
  [ -f "fuzz/dict/$t.dict" ] && dict=(-dict="$root/fuzz/dict/$t.dict")
  args=(-max_len="${max_len[$t]}" "${dict[@]}" "${limit[@]}" -timeout=25 -rss_limit_mb=2048 -print_final_stats=1
        -artifact_prefix="$dir/artifacts/" "$dir/corpus" "$root/fuzz/corpus/$t")
  start=$(date +%s)
  rc=0
  if [ "$jobs" -gt 1 ]; then
    # Each job writes fuzz-<n>.log in the current directory and adds what it finds to the shared corpus.
    (cd "$dir" && rm -f fuzz-*.log && "$bin/$t" -jobs="$jobs" -workers="$jobs" "${args[@]}" >"$dir/run.log" 2>&1) || rc=$?
    cat "$dir"/fuzz-*.log >>"$dir/run.log" 2>/dev/null || true
  else
    (cd "$dir" && "$bin/$t" "${args[@]}" >"$dir/run.log" 2>&1) || rc=$?
  fi
  elapsed=$(( $(date +%s) - start ))
  execs=$(grep -h 'stat::number_of_executed_units' "$dir/run.log" | awk '{s += $2} END {print s + 0}' || true)
  cov=$(grep -hoE 'cov: [0-9]+ ft: [0-9]+' "$dir/run.log" | tail -1 || true)
  # slow-unit-* files are libFuzzer's notes on inputs over 10 s (a loaded machine), not findings.
  crashes=$(ls "$dir/artifacts" | grep -cE '^(crash|leak|timeout|oom)-' || true)
  printf 'fuzz.sh: %-20s %12s execs  %8s exec/s  %s  corpus %s  artifacts %s  rc %s\n' "$t" "$execs" \
    "$(( execs / (elapsed > 0 ? elapsed : 1) ))" "${cov:-cov: ?}" "$(ls "$dir/corpus" | wc -l)" "$crashes" "$rc"
  if [ "$rc" != 0 ] || [ "$crashes" != 0 ]; then
    status=1
    grep -hE 'ERROR: |FUZZ_CHECK|SUMMARY|Test unit written' "$dir/run.log" | head -20 || true
  fi
done
exit $status
