#!/usr/bin/env bash
# structured_e2e.sh LORADESKD TEST.mjs: synthesizes a tiny random-weight Qwen3 model (it never writes JSON by
# itself) and three LoRA adapters (sql, poet, coder), then runs TEST.mjs (structured outputs and tool calls through
# real client libraries, or the random-schema validity sweep) against `loradeskd serve` on the CPU runner, with a
# Hermes tool-calling chat template. Exit status: the test's, 77 (skipped) without tests/js/node_modules.
set -uo pipefail
loradeskd=$1
test_file=$2
here=$(cd "$(dirname "$0")" && pwd)
js="$here/../js"
for pkg in ai @ai-sdk/openai-compatible @langchain/openai openai zod ajv ajv-formats; do
  [ -d "$js/node_modules/$pkg" ] || { echo "structured_e2e: tests/js/node_modules/$pkg missing (npm ci in tests/js)"; exit 77; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$loradeskd" synth-model --preset tiny --out "$tmp/tiny-qwen3" >/dev/null || exit 1
seed=11
for name in sql poet coder; do
  "$loradeskd" synth-adapter --model "$tmp/tiny-qwen3" --rank 4 --alpha 8 --seed $((seed++)) \
    --out "$tmp/adapters/$name" >/dev/null || exit 1
done
export LORADESK_ADAPTERS="sql,poet,coder"
"$here/with_server.sh" "$loradeskd" --model "$tmp/tiny-qwen3" --adapters "$tmp/adapters" --device cpu \
  --chat-template "$here/data/hermes_tools.jinja" -- node --test "$test_file"
