#!/usr/bin/env bash
# Fails when a tracked C++/CUDA source outside third_party/ differs from what clang-format makes of it
# (.clang-format at the root). Run by .ci/run before the tests, or by hand; `--fix` rewrites the files.
# The reference formatter is clang-format 14 (Debian 12's); other major versions break lines differently,
# so with another version the check says so and passes rather than failing on layout it did not choose.
set -euo pipefail
cd "$(dirname "$0")/.."
fmt=$(command -v clang-format-14 || command -v clang-format || true)
if [ -z "$fmt" ]; then
  echo "check_format: clang-format is not installed (scripts/dev.sh deps installs it)" >&2
  exit 1
fi
major=$("$fmt" --version | sed -E 's/.*version ([0-9]+).*/\1/')
if [ "$major" != 14 ]; then
  echo "check_format: skipped, $fmt is version $major and the tree is formatted with clang-format 14"
  exit 0
fi
mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh' '*.hpp' | grep -v '^third_party/')
if [ "${1:-}" = --fix ]; then
  "$fmt" -i "${files[@]}"
  exit 0
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! "$fmt" --dry-run --Werror "${files[@]}" 2>"$log"; then
  grep -E '^[^ ].*: (error|warning):' "$log" | cut -d: -f1 | sort -u | sed 's/^/  /' >&2
  echo "check_format: the files above drift from .clang-format; tools/check_format.sh --fix rewrites them" >&2
  exit 1
fi
echo "check_format: ${#files[@]} files match .clang-format"
