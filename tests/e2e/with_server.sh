#!/usr/bin/env bash
# with_server.sh LORADESKD [serve options] -- COMMAND...
# Starts `loradeskd serve` on 127.0.0.1 with an ephemeral port, waits until it listens, runs COMMAND
# with LORADESK_BASE_URL (and LORADESK_PORT) set, then stops the server with SIGTERM and checks that
# it shut down cleanly. Exit status: COMMAND's, or 1 if the server failed.
set -uo pipefail
loradeskd=$1; shift
serve_args=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do serve_args+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
[ $# -gt 0 ] || { echo "usage: with_server.sh LORADESKD [serve options] -- COMMAND..." >&2; exit 2; }

log=$(mktemp)
data=$(mktemp -d)
"$loradeskd" serve --host 127.0.0.1 --port 0 --data-dir "$data" "${serve_args[@]}" >"$log" 2>&1 &
pid=$!
cleanup() { kill "$pid" 2>/dev/null; rm -rf "$data" "$log"; }
trap cleanup EXIT
for _ in $(seq 1 600); do
  url=$(grep -o 'listening on http://[^ ]*' "$log" | head -1 | sed 's/listening on //')
  [ -n "$url" ] && break
  if ! kill -0 "$pid" 2>/dev/null; then echo "with_server: loradeskd serve exited:" >&2; cat "$log" >&2; exit 1; fi
  sleep 0.1
done
[ -n "${url:-}" ] || { echo "with_server: server did not start in 60 s" >&2; cat "$log" >&2; exit 1; }
export LORADESK_BASE_URL="$url/v1" LORADESK_PORT="${url##*:}"
"$@"
status=$?
kill -TERM "$pid"
for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then echo "with_server: server did not stop within 10 s of SIGTERM" >&2; status=1; fi
wait "$pid"; rc=$?
if [ $rc -ne 0 ]; then echo "with_server: server exited with $rc" >&2; cat "$log" >&2; status=1; fi
[ $status -ne 0 ] && { echo "---- server log ----" >&2; tail -50 "$log" >&2; }
exit $status
