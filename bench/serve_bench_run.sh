#!/usr/bin/env bash
# serve_bench_run.sh: one end-to-end serving benchmark. Synthesizes N PEFT adapters for the model (kept in a pool
# under --work and reused by later runs), starts `loradeskd serve` on them, waits for /health (the time it takes
# is recorded: start-up with N adapter folders), runs bench/serve_bench.py against it, and stops the server.
#
# Settings (the S-LoRA paper's): S1 = every adapter rank 8 on q,k,v,o; S2 = ranks 64, 32, 16, 8 in turn.
# Adapter i is synthesized with seed i, so every adapter has its own weights (and its own digest: identical copies
# would be one adapter to the server). --num-adapters 0 runs the base model only.
#
# Usage:
#   LD_LIBRARY_PATH=... bench/serve_bench_run.sh --loradeskd BIN --model DIR [--preset NAME] \
#       [--setting S1|S2] [--ranks 64,32,16,8] [--targets q_proj,k_proj,v_proj,o_proj] --num-adapters N \
#       [--serve-args "--device cuda --kv-memory 40 --max-loras 128"] [--port 18231] [--work DIR] [--out DIR] \
#       [-- serve_bench options: --rate 10 --duration 120 ...]
# Outputs in --out (default WORK/runs/DATE-SETTING-nN): result.json, table.txt, requests.jsonl, metrics.txt
# (/metrics after), serve.log, run.json (this script's settings and the start-up time).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PYTHON="${PYTHON:-python3}"
LORADESKD="" MODEL="" PRESET="" SETTING="S1" RANKS="" TARGETS="q_proj,k_proj,v_proj,o_proj" DTYPE="bf16"
NUM="" PREFIX="a" PORT=18231 WORK="/tmp/serve-bench" OUT="" DATA_DIR="" START_TIMEOUT=1800 STOP_TIMEOUT=60
JOBS="$(nproc 2>/dev/null || echo 4)" SERVE_ARGS_STR="" PREPARE_ONLY=0

usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; cat <<'EOF'
Options:
  --loradeskd BIN         the loradeskd binary (required)
  --model DIR             base model folder (required; made with synth-model --preset NAME if it has no config.json)
  --preset NAME           synth-model preset for a missing --model
  --num-adapters N        adapters to serve and spread requests over (required; 0 = base model only)
  --setting S1|S2         rank 8 / ranks 64,32,16,8 in turn (default S1)
  --ranks LIST            ranks in turn, overriding --setting
  --targets LIST          adapted projections (default q_proj,k_proj,v_proj,o_proj)
  --dtype f32|bf16        adapter tensor dtype (default bf16)
  --adapter-prefix P      served names P0 .. P{N-1} (default a)
  --serve-args "ARGS"     extra loradeskd serve options, one string (split on spaces)
  --port N                port on 127.0.0.1 (default 18231)
  --data-dir DIR          server catalog/state (default a fresh OUT/data: a cold catalog)
  --work DIR              adapter pool and default run folders (default /tmp/serve-bench)
  --out DIR               this run's folder (default WORK/runs/DATE-SETTING-nN)
  --start-timeout S       seconds to wait for /health (default 1800)
  --jobs N                parallel synth-adapter processes (default: nproc)
  --ld-library-path P     prepended to LD_LIBRARY_PATH for loradeskd
  --prepare-only          synthesize the model and the adapter pool, then stop (no server, no bench)
  --                      the rest goes to serve_bench.py (--rate, --duration, --alpha, --cv, ...)
Environment: PYTHON (default python3) runs serve_bench.py; it needs aiohttp and numpy.
EOF
}

die() { echo "serve_bench_run: $*" >&2; exit 2; }

BENCH_ARGS=()
while (($#)); do
    case "$1" in
        --loradeskd) LORADESKD="$2"; shift 2 ;;
        --model) MODEL="$2"; shift 2 ;;
        --preset) PRESET="$2"; shift 2 ;;
        --num-adapters) NUM="$2"; shift 2 ;;
        --setting) SETTING="$2"; shift 2 ;;
        --ranks) RANKS="$2"; shift 2 ;;
        --targets) TARGETS="$2"; shift 2 ;;
        --dtype) DTYPE="$2"; shift 2 ;;
        --adapter-prefix) PREFIX="$2"; shift 2 ;;
        --serve-args) SERVE_ARGS_STR="$2"; shift 2 ;;
        --port) PORT="$2"; shift 2 ;;
        --data-dir) DATA_DIR="$2"; shift 2 ;;
        --work) WORK="$2"; shift 2 ;;
        --out) OUT="$2"; shift 2 ;;
        --start-timeout) START_TIMEOUT="$2"; shift 2 ;;
        --jobs) JOBS="$2"; shift 2 ;;
        --ld-library-path) export LD_LIBRARY_PATH="$2${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; shift 2 ;;
        --prepare-only) PREPARE_ONLY=1; shift ;;
        -h|--help) usage; exit 0 ;;
        --) shift; BENCH_ARGS=("$@"); break ;;
        *) die "unknown option '$1' (--help lists them; serve_bench options go after --)" ;;
    esac
done

[[ -n "$LORADESKD" && -x "$LORADESKD" ]] || die "--loradeskd BIN must name an executable loradeskd"
[[ -n "$MODEL" ]] || die "--model DIR is required"
[[ "$NUM" =~ ^[0-9]+$ ]] || die "--num-adapters N is required (0 = base model only)"
[[ "$PORT" =~ ^[0-9]+$ ]] || die "--port must be a number"
LORADESKD="$(cd "$(dirname "$LORADESKD")" && pwd)/$(basename "$LORADESKD")"
if [[ -z "$RANKS" ]]; then
    case "$SETTING" in
        S1) RANKS="8" ;;
        S2) RANKS="64,32,16,8" ;;
        *) die "--setting must be S1 or S2 (or give --ranks)" ;;
    esac
fi
IFS=',' read -ra RANK_LIST <<< "$RANKS"
read -ra SERVE_ARGS <<< "$SERVE_ARGS_STR"
"$PYTHON" -c 'import aiohttp, numpy' 2>/dev/null || die "$PYTHON lacks aiohttp or numpy (set PYTHON=...)"

# ---- the model -------------------------------------------------------------------------------------------------
if [[ ! -f "$MODEL/config.json" ]]; then
    [[ -n "$PRESET" ]] || die "$MODEL has no config.json; give --preset NAME to synthesize it"
    echo "serve_bench_run: synthesizing $PRESET into $MODEL"
    "$LORADESKD" synth-model --preset "$PRESET" --out "$MODEL"
fi
MODEL="$(cd "$MODEL" && pwd)"

# ---- the adapters (a pool under --work) and the run folder ----------------------------------------------------
# Pool folder per model (name + config digest) and adapter shape, so runs with other N or settings reuse adapters.
model_key="$(basename "$MODEL")-$(sha256sum "$MODEL/config.json" | cut -c1-12)"
pool_dir() { echo "$WORK/pool/$model_key/r$1-${TARGETS//,/+}-$DTYPE/$2"; }

synth_one() {  # rank seed dest: written to a temporary folder and renamed, so a pool entry is always whole
    local tmp="$3.tmp.$BASHPID"
    rm -rf "$tmp"
    "$LORADESKD" synth-adapter --model "$MODEL" --rank "$1" --targets "$TARGETS" --dtype "$DTYPE" --seed "$2" \
        --out "$tmp" > /dev/null
    mv "$tmp" "$3"
}

if ((NUM > 0)); then
    t_synth=$(date +%s)
    running=0 made=0
    for ((i = 0; i < NUM; i++)); do
        rank="${RANK_LIST[i % ${#RANK_LIST[@]}]}"
        src="$(pool_dir "$rank" "$i")"
        if [[ ! -f "$src/adapter_model.safetensors" ]]; then
            mkdir -p "$(dirname "$src")"
            synth_one "$rank" "$i" "$src" &
            running=$((running + 1)) made=$((made + 1))
            if ((running >= JOBS)); then wait -n; running=$((running - 1)); fi
        fi
    done
    wait
    for ((i = 0; i < NUM; i++)); do
        src="$(pool_dir "${RANK_LIST[i % ${#RANK_LIST[@]}]}" "$i")"
        [[ -f "$src/adapter_model.safetensors" ]] || die "adapter $i ($src) was not synthesized"
    done
    echo "serve_bench_run: $NUM adapters (ranks $RANKS on $TARGETS, $DTYPE) under $WORK/pool/$model_key," \
         "$made synthesized in $(($(date +%s) - t_synth)) s"
fi
if ((PREPARE_ONLY)); then
    exit 0
fi

# ---- the port must be free -------------------------------------------------------------------------------------
health() {  # prints the HTTP status of /health (000 when nothing answers)
    if command -v curl > /dev/null; then
        curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$PORT/health" || true
    else
        "$PYTHON" - "$PORT" <<'EOF' || true
import sys, urllib.request, urllib.error
try:
    print(urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/health", timeout=5).status, end="")
except urllib.error.HTTPError as e:
    print(e.code, end="")
except Exception:
    print("000", end="")
EOF
    fi
}

[[ "$(health)" == "000" ]] || die "something already answers on 127.0.0.1:$PORT; give another --port"

[[ -n "$OUT" ]] || OUT="$WORK/runs/$(date +%Y%m%d-%H%M%S)-${SETTING}-n${NUM}"
[[ ! -e "$OUT/result.json" ]] || die "$OUT already holds a result; give another --out"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
[[ -n "$DATA_DIR" ]] || DATA_DIR="$OUT/data"
# The server sees exactly these N folders: links into the pool, named PREFIX0 .. PREFIX{N-1}.
ADAPTERS_DIR="$OUT/adapters"
if ((NUM > 0)); then
    mkdir -p "$ADAPTERS_DIR"
    find "$ADAPTERS_DIR" -maxdepth 1 -type l -delete  # links left by an earlier, failed run into this --out
    for ((i = 0; i < NUM; i++)); do
        ln -sfn "$(pool_dir "${RANK_LIST[i % ${#RANK_LIST[@]}]}" "$i")" "$ADAPTERS_DIR/$PREFIX$i"
    done
fi

# ---- the server ------------------------------------------------------------------------------------------------
SERVER_PID=""
stop_server() {
    [[ -n "$SERVER_PID" ]] || return 0
    local pid="$SERVER_PID"
    SERVER_PID=""
    kill -TERM "$pid" 2> /dev/null || return 0
    for ((k = 0; k < STOP_TIMEOUT * 10; k++)); do
        kill -0 "$pid" 2> /dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2> /dev/null; then
        echo "serve_bench_run: server did not stop in $STOP_TIMEOUT s after SIGTERM; sending SIGKILL" >&2
        kill -KILL "$pid" 2> /dev/null || true
    fi
    wait "$pid" 2> /dev/null && SERVER_RC=0 || SERVER_RC=$?
}
SERVER_RC=""
trap stop_server EXIT
trap 'exit 130' INT TERM

serve_cmd=("$LORADESKD" serve --model "$MODEL" --port "$PORT" --data-dir "$DATA_DIR")
((NUM > 0)) && serve_cmd+=(--adapters "$ADAPTERS_DIR")
serve_cmd+=("${SERVE_ARGS[@]}")
echo "serve_bench_run: ${serve_cmd[*]}"
t_start=$(date +%s.%N)
"${serve_cmd[@]}" > "$OUT/serve.log" 2>&1 &
SERVER_PID=$!
while :; do
    code="$(health)"
    [[ "$code" == "200" ]] && break
    if ! kill -0 "$SERVER_PID" 2> /dev/null; then
        SERVER_PID=""
        tail -20 "$OUT/serve.log" >&2
        die "the server exited before answering /health (log: $OUT/serve.log)"
    fi
    if (($(date +%s) - ${t_start%.*} > START_TIMEOUT)); then
        tail -20 "$OUT/serve.log" >&2
        die "no /health 200 within $START_TIMEOUT s (last answer $code)"
    fi
    sleep 0.2
done
startup_s="$(awk -v a="$t_start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')"
echo "serve_bench_run: serving after $startup_s s"

# ---- the bench -------------------------------------------------------------------------------------------------
adapter_args=(--base-only)
((NUM > 0)) && adapter_args=(--num-adapters "$NUM" --adapter-prefix "$PREFIX")
label="setting=$SETTING ranks=$RANKS targets=$TARGETS adapters=$NUM serve_args=${SERVE_ARGS_STR}"
set +e
"$PYTHON" "$HERE/serve_bench.py" --url "http://127.0.0.1:$PORT" "${adapter_args[@]}" --label "$label" \
    --json "$OUT/result.json" --metrics-out "$OUT/metrics.txt" --requests-out "$OUT/requests.jsonl" \
    "${BENCH_ARGS[@]}" | tee "$OUT/table.txt"
bench_rc=${PIPESTATUS[0]}
set -e
stop_server
"$PYTHON" - "$OUT/run.json" "$LORADESKD" "$MODEL" "$SETTING" "$RANKS" "$TARGETS" "$DTYPE" "$NUM" "$startup_s" \
    "${SERVER_RC:-}" "$bench_rc" "${#serve_cmd[@]}" "${serve_cmd[@]}" "${BENCH_ARGS[@]}" <<'EOF'
import json, sys
out, binary, model, setting, ranks, targets, dtype, num, startup, server_rc, bench_rc, n_serve = sys.argv[1:13]
rest = sys.argv[13:]
json.dump({"loradeskd": binary, "model": model, "setting": setting, "ranks": ranks, "targets": targets,
           "dtype": dtype, "num_adapters": int(num), "startup_s": float(startup) if startup else None,
           "serve_command": rest[:int(n_serve)], "bench_args": rest[int(n_serve):],
           "serve_exit_status": int(server_rc) if server_rc else None, "bench_exit_status": int(bench_rc)},
          open(out, "w"), indent=1)
EOF
echo "serve_bench_run: results in $OUT (server exit status ${SERVER_RC:-?})"
exit "$bench_rc"
