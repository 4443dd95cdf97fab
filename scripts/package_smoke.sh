#!/usr/bin/env bash
# Package round trip, as CI runs it: build the .deb (and .tgz) from a CPU-only configuration, install
# the .deb with apt (which resolves its Depends), check the installed files and metadata, run the
# installed binaries — --version, synth-model, and a short serve smoke test on an ephemeral port with
# the installed demo kit (/health, /v1/models, one completion) — then remove the package again.
#   scripts/package_smoke.sh            needs root or sudo (dpkg), curl, desktop-file-utils, appstream
# Env: LORADESK_PACKAGE_BUILD_DIR (default build-package), JOBS (default 2), KEEP_INSTALLED=1,
#      LORADESK_PACKAGE_CONFIGURE=0 to package an existing CPU-only GUI build dir (only the install prefix
#      and the install dependency are changed).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${LORADESK_PACKAGE_BUILD_DIR:-build-package}
jobs=${JOBS:-2}
# The same base directory as scripts/dev.sh build: ccache then hashes both builds' commands alike and the
# package build reuses the test build's objects (CI builds both on 2 cores).
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
sudo_cmd() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
step() { printf '\n== %s\n' "$*"; }
fail() { printf 'package_smoke: FAILED: %s\n' "$*" >&2; exit 1; }

if dpkg-query -W -f='${Status}' loradesk 2>/dev/null | grep -q "install ok installed"; then
  fail "a loradesk package is already installed; remove it first (apt-get remove loradesk)"
fi

step "configure and build (CPU-only, the packaged configuration)"
# The package installs under /usr (the service file and the demo-kit lookup are configured with the
# prefix); packaging must not wait for targets it does not ship (tests, benchmarks).
packaging=(-DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON)
if [ "${LORADESK_PACKAGE_CONFIGURE:-1}" != 0 ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${packaging[@]}" \
    -DLORADESK_WITH_CUDA=OFF -DLORADESK_BUILD_GUI=ON -DLORADESK_BUILD_TESTS=OFF -DLORADESK_BUILD_BENCH=OFF >/dev/null
else
  cmake -S . -B "$build" "${packaging[@]}" >/dev/null
fi
grep -q "^LORADESK_WITH_CUDA:BOOL=OFF" "$build/CMakeCache.txt" || fail "$build is a CUDA build; package a CPU-only one"
grep -q "^LORADESK_BUILD_GUI:BOOL=ON" "$build/CMakeCache.txt" || fail "$build does not build the desktop app"
cmake --build "$build" -j"$jobs" --target loradesk loradeskd loradesk_icons

step "cpack"
rm -f "$build"/loradesk_*.deb "$build"/loradesk-*.tar.gz
(cd "$build" && cpack -G "DEB;TGZ" >/dev/null)
deb=$(ls "$root/$build"/loradesk_*.deb)
ls "$root/$build"/loradesk-*.tar.gz >/dev/null || fail "no .tar.gz was produced"
dpkg-deb -I "$deb"
contents=$(dpkg-deb -c "$deb")
for f in ./usr/bin/loradeskd ./usr/bin/loradesk ./usr/share/applications/org.loradesk.LoraDesk.desktop \
         ./usr/share/metainfo/org.loradesk.LoraDesk.metainfo.xml \
         ./usr/share/icons/hicolor/scalable/apps/org.loradesk.LoraDesk.svg \
         ./usr/share/icons/hicolor/256x256/apps/org.loradesk.LoraDesk.png \
         ./usr/lib/systemd/user/loradesk.service ./usr/share/loradesk/demo/; do
  grep -qF " $f" <<<"$contents" || fail "$f is not in the package"
done
depends=$(dpkg-deb -f "$deb" Depends)
for d in qt6-qpa-plugins libqt6widgets6 libsqlite3-0; do
  grep -q "$d" <<<"$depends" || fail "Depends lacks $d: $depends"
done
grep -q "libqt6sql6-sqlite" <<<"$depends" && fail "Depends names libqt6sql6-sqlite but the app does not use Qt SQL"

step "install with apt (resolves Depends)"
cleanup() {
  [ -n "${server_pid:-}" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
  [ -n "${tmp:-}" ] && rm -rf "$tmp"
  if [ "${KEEP_INSTALLED:-0}" != 1 ]; then
    step "remove"
    sudo_cmd apt-get remove -y loradesk >/dev/null
    [ ! -e /usr/bin/loradeskd ] || { echo "package_smoke: /usr/bin/loradeskd is still there after removal" >&2; exit 1; }
  fi
}
trap cleanup EXIT
sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$deb" >/dev/null

step "installed files"
desktop-file-validate /usr/share/applications/org.loradesk.LoraDesk.desktop
appstreamcli validate --no-net /usr/share/metainfo/org.loradesk.LoraDesk.metainfo.xml
if command -v systemd-analyze >/dev/null; then
  systemd-analyze verify /usr/lib/systemd/user/loradesk.service 2>&1 | grep -v "^$" || true
fi
/usr/bin/loradeskd --version
/usr/bin/loradesk --version

step "synth-model from the installed loradeskd"
tmp=$(mktemp -d)
/usr/bin/loradeskd synth-model --preset tiny --out "$tmp/tiny" >/dev/null
[ -f "$tmp/tiny/config.json" ] || fail "synth-model wrote no config.json"

step "serve smoke test with the installed demo kit"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
if /usr/bin/loradeskd --help 2>&1 | grep -qw serve; then
  serve=(/usr/bin/loradeskd serve)
else
  serve=(env QT_QPA_PLATFORM=offscreen /usr/bin/loradesk --headless)  # same engine + server, in the app
fi
HOME="$tmp/home" XDG_CONFIG_HOME="$tmp/config" XDG_RUNTIME_DIR="$tmp" \
  "${serve[@]}" --host 127.0.0.1 --port "$port" --data-dir "$tmp/data" --device cpu >"$tmp/serve.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 120); do
  curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$tmp/serve.log"; fail "the server exited before it was healthy"; }
  sleep 0.5
done
curl -fsS "http://127.0.0.1:$port/health" || { cat "$tmp/serve.log"; fail "/health never answered"; }
echo
models=$(curl -fsS "http://127.0.0.1:$port/v1/models")
echo "$models"
for id in de es it bofh; do grep -q "\"$id\"" <<<"$models" || fail "/v1/models lacks the demo adapter $id"; done
completion=$(curl -fsS "http://127.0.0.1:$port/v1/completions" -H 'Content-Type: application/json' \
  -d '{"model": "de", "prompt": "Hello", "max_tokens": 4, "temperature": 0}')
grep -q '"text"' <<<"$completion" || fail "no completion text: $completion"
kill -TERM "$server_pid"
wait "$server_pid" || true
server_pid=
echo
echo "package_smoke: OK"
