#!/usr/bin/env bash
# ollama_e2e.sh LORADESKD: synthesizes a tiny Qwen3 model (tiny-qwen3) and three LoRA adapters (sql, poet, coder),
# then runs tests/js/ollama_sdk.test.mjs, the official `ollama` npm client, against `loradeskd serve` on the CPU
# runner through with_server.sh. Exit status: the test's, 77 (skipped) without tests/js/node_modules/ollama.
set -uo pipefail
loradeskd=$1
here=$(cd "$(dirname "$0")" && pwd)
js="$here/../js"
[ -d "$js/node_modules/ollama" ] || { echo "ollama_e2e: tests/js/node_modules/ollama missing (npm ci in tests/js)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$loradeskd" synth-model --preset tiny --out "$tmp/tiny-qwen3" >/dev/null || exit 1
seed=3  # with these seeds greedy decoding with the sql adapter runs to the end of the context (the abort test needs that)
for name in sql poet coder; do
  "$loradeskd" synth-adapter --model "$tmp/tiny-qwen3" --rank 4 --alpha 8 --seed $((seed++)) \
    --out "$tmp/adapters/$name" >/dev/null || exit 1
done
"$here/with_server.sh" "$loradeskd" --model "$tmp/tiny-qwen3" --adapters "$tmp/adapters" --device cpu -- \
  node --test "$js/ollama_sdk.test.mjs"
