#!/usr/bin/env bash
# Desktop benchmark of the built tray app: memory, idle cost, wake-ups and latencies of
# the real GUI under a private X server and session bus. It prints figures with the goal or
# budget beside each, and exits 1 when a memory figure is over its budget (hidden PSS,
# hidden anonymous PSS, PSS after the window closed); 2 or more when it could not measure.
#
#   scripts/bench-desktop.sh [APP_BINARY]     (default: $CARGO_TARGET_DIR/release/lf-tray)
#
# Environment (all optional):
#   BENCH_ONLY=memory   only the memory figures and the window (about 1 minute)
#   BENCH_IDLE_SECONDS  how long the hidden app is left alone for the idle figures
#                       (default 60: the goal is per minute, and the engine's slowest
#                       regular timer, lf's safety list, fires once a minute)
#   BENCH_ASKS          how many lone Asks are timed (default 20, enough for a p99 that
#                       is one of the slowest two)
#   BENCH_OUT           keep the logs (app, bus capture, dunst, watcher) in this directory
#   PY                  python3 with dbus and gi (default /usr/bin/python3)
#   LF_STAND_IN         the stand-in lf (default: lf beside the app, built by lf-sim)
#
# Like tests/e2e/run.sh it re-executes itself inside Xvfb and dbus-run-session, with
# fresh HOME, XDG and lf homes, so nothing touches the caller's desktop.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
e2e=$root/tests/e2e

if [ -z "${LF_BENCH_INSIDE:-}" ]; then
  given=${1:-${CARGO_TARGET_DIR:-$root/target}/release/lf-tray}
  app=$(realpath -e "$given" 2>/dev/null) || {
    echo "bench-desktop: no app binary at $given; build it with" >&2
    echo "  cargo build --release --locked -p lf-tray -p lf-sim --bins" >&2
    exit 2
  }
  for tool in xvfb-run dbus-run-session dbus-monitor dunst gdbus xdotool setsid; do
    command -v "$tool" >/dev/null || {
      echo "bench-desktop: missing $tool (see tests/e2e/README.md for the packages)" >&2
      exit 2
    }
  done
  export LF_BENCH_INSIDE=1
  # The bus daemon and what it activates (at-spi) talk on the inherited stdout/stderr;
  # they get a log of their own and the figures go to the caller's stdout (fd 3).
  bus_log=$(mktemp /tmp/lf-bench-bus.XXXXXX)
  exec 3>&1 4>&2
  rc=0
  xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- "$BASH" "$0" "$app" \
    >"$bus_log" 2>&1 || rc=$?
  if [ "$rc" -eq 1 ]; then
    echo "bench-desktop: over budget (see 'budgets' above)" >&2
  elif [ "$rc" -ne 0 ]; then
    echo "bench-desktop: failed (exit $rc); the session's output:" >&2
    tail -n 30 "$bus_log" >&2
  fi
  if [ -n "${BENCH_OUT:-}" ]; then mkdir -p "$BENCH_OUT" && mv "$bus_log" "$BENCH_OUT/session-bus.log"; else rm -f "$bus_log"; fi
  exit "$rc"
fi
exec 1>&3 2>&4 3>&- 4>&-

app=$1
PY=${PY:-/usr/bin/python3}
tmp=$(mktemp -d /tmp/lf-bench.XXXXXX)
chmod 700 "$tmp"
out=${BENCH_OUT:-$tmp/out}
mkdir -p "$out"
out=$(cd "$out" && pwd)

# Each helper leads its own process group, so cleanup ends whatever it spawned too.
pids=()
# shellcheck disable=SC2317  # run by the EXIT trap
cleanup() {
  local pid i
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill -TERM -- "-${pids[i]}" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    # 2 s for a clean exit after TERM, then KILL: the app's Quit grace is 1 s.
    for _ in $(seq 20); do kill -0 -- "-$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$PY" -c 'import dbus, gi' 2>/dev/null || {
  echo "bench-desktop: $PY cannot import dbus and gi (python3-dbus, python3-gi)" >&2
  exit 2
}

export HOME=$tmp/home XDG_RUNTIME_DIR=$tmp/runtime XDG_CONFIG_HOME=$tmp/config \
  XDG_DATA_HOME=$tmp/data XDG_CACHE_HOME=$tmp/cache XDG_STATE_HOME=$tmp/state
mkdir -p "$HOME" "$XDG_CONFIG_HOME" "$XDG_DATA_HOME" "$XDG_CACHE_HOME" "$XDG_STATE_HOME"
mkdir -m 700 "$XDG_RUNTIME_DIR"

export LF_HOME=$tmp/lf-home LF_SIM_DIR=$tmp/lf-sim
mkdir -p "$LF_HOME" "$LF_SIM_DIR" "$tmp/bin"
ln -s "${LF_STAND_IN:-$(dirname "$app")/lf}" "$tmp/bin/lf"
[ -x "$tmp/bin/lf" ] || { echo "bench-desktop: no stand-in lf beside $app (build -p lf-sim)" >&2; exit 2; }
export LF_BIN=$tmp/bin/lf
unset LF_CONTROL_HOME LF_DB_PATH LF_CONTROL_DB_PATH LF_TERMINAL_ID LF_TERMINAL_TTY \
  LF_RUN_ID LF_RUN_DIR LF_PARENT_RUN_ID LF_HUMAN_SESSION LF_SIM_GENERATION
export TERMINAL=$e2e/stand-in-terminal E2E_TERMINAL_LOG=$tmp/terminal.jsonl
export BENCH_PCAP=$out/bus.pcap BENCH_OUT=$out BENCH_TMP=$tmp APP=$app

setsid dunst -config "$e2e/dunstrc" >"$out/dunst.log" 2>&1 &
pids+=($!)
setsid "$PY" "$e2e/sni_watcher.py" >"$out/sni_watcher.log" 2>&1 &
pids+=($!)
gdbus wait --session --timeout 10 org.freedesktop.Notifications >/dev/null
gdbus wait --session --timeout 10 org.kde.StatusNotifierWatcher >/dev/null

# The timed surfaces: every call to the notification server, and the tray's registration.
# pcap records carry dbus-monitor's wall-clock receive time per message.
setsid dbus-monitor --session --pcap \
  "type='method_call',interface='org.freedesktop.Notifications'" \
  "type='method_call',interface='org.kde.StatusNotifierWatcher',member='RegisterStatusNotifierItem'" \
  >"$BENCH_PCAP" 2>"$out/dbus-monitor.err" &
pids+=($!)
ready=""
for _ in $(seq 50); do
  gdbus call --session --dest org.freedesktop.Notifications --object-path /org/freedesktop/Notifications \
    --method org.freedesktop.Notifications.GetServerInformation >/dev/null
  # A pcap file header is 24 bytes; anything past it is the probe call.
  if [ "$(stat -c %s "$BENCH_PCAP")" -gt 24 ]; then ready=1; break; fi
  sleep 0.1
done
[ -n "$ready" ] || { echo "bench-desktop: dbus-monitor did not start" >&2; exit 2; }

rc=0
"$PY" "$here/bench-desktop.py" || rc=$?
cp "$XDG_STATE_HOME/lf-tray/lf-tray.log" "$out/" 2>/dev/null || true
exit "$rc"
