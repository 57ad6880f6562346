#!/usr/bin/env bash
# End-to-end run of Loopflow Tray with real desktop parts.
#
#   tests/e2e/run.sh APP_BINARY
#
# Environment (all optional):
#   E2E_OUT       where screenshots and logs go (default: ci-out, relative to the caller's cwd)
#   PY            python3 with dbus, gi (and selenium for the window checks);
#                 default /usr/bin/python3
#   TAURI_DRIVER  tauri-driver binary; without it the WebDriver checks are reported as SKIP
#   E2E_KEEP=1    keep the temporary directory (its path is printed)
#   E2E_SUITE     the checks to run: e2e.py (default), memory.py, push.py, keys.py, …
#   E2E_BUS_CONFIG  a dbus-daemon config for the private session bus (memory.py's cannot
#                 start a notification server by D-Bus activation)
#
# From a plain shell it re-executes itself inside a fresh X server and a private
# session bus, so nothing touches the caller's desktop. It ends with the line
# `e2e: N passed, M failed` and exits non-zero if any check failed.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ $# -ne 1 ]; then
  echo "usage: $0 APP_BINARY" >&2
  exit 2
fi
app=$(realpath -e "$1" 2>/dev/null) || { echo "e2e: no app binary at $1" >&2; echo "e2e: 0 passed, 1 failed"; exit 1; }

# A marker of our own, not DISPLAY/DBUS_SESSION_BUS_ADDRESS: those are set in a user's
# desktop session too, and the run must never use that display or bus.
if [ -z "${LF_E2E_INSIDE:-}" ]; then
  for tool in xvfb-run dbus-run-session dbus-monitor dunst dunstctl gdbus xdotool import identify setsid; do
    command -v "$tool" >/dev/null || { echo "e2e: missing $tool (see tests/e2e/README.md)" >&2; echo "e2e: 0 passed, 1 failed"; exit 1; }
  done
  out=${E2E_OUT:-ci-out}
  mkdir -p "$out" && E2E_OUT=$(cd "$out" && pwd) && export E2E_OUT
  export LF_E2E_INSIDE=1
  # The bus daemon and the services it activates (at-spi) chatter on the inherited
  # stdout/stderr, even after the summary line; they get a log of their own, and the
  # harness takes the caller's stdout/stderr back from fds 3 and 4.
  export LF_E2E_STARTED=$E2E_OUT/.e2e-started
  rm -f "$LF_E2E_STARTED"
  exec 3>&1 4>&2
  bus_config=()
  [ -n "${E2E_BUS_CONFIG:-}" ] && bus_config=(--config-file "$E2E_BUS_CONFIG")
  xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session "${bus_config[@]}" -- "$BASH" "$0" "$app" \
    >"$E2E_OUT/session-bus.log" 2>&1
  rc=$?
  exec 3>&- 4>&-
  if [ ! -e "$LF_E2E_STARTED" ]; then
    # Xvfb or the bus never came up, so the harness inside printed nothing.
    echo "e2e: could not start Xvfb and a session bus (exit $rc):" >&2
    tail -n 20 "$E2E_OUT/session-bus.log" >&2
    echo "e2e: 0 passed, 1 failed"
    exit 1
  fi
  rm -f "$LF_E2E_STARTED"
  exit "$rc"
fi
exec 1>&3 2>&4 3>&- 4>&-
: >"$LF_E2E_STARTED"

PY=${PY:-/usr/bin/python3}
out=$E2E_OUT
tmp=$(mktemp -d /tmp/lf-e2e.XXXXXX)
chmod 700 "$tmp"

# Every helper runs as the leader of its own process group (setsid without a fork, as
# a background job of a non-interactive shell is no group leader), so cleanup ends it
# together with whatever it spawned (tauri-driver's WebKitWebDriver and app).
. "$here/lib.sh"
summary_line=""
cleanup() {
  stop_started
  # The app's log, where it keeps it ($XDG_STATE_HOME/lf-tray/), goes with the other outputs.
  cp "$tmp/state/lf-tray/lf-tray.log" "$out/lf-tray.log" 2>/dev/null
  if [ -n "${E2E_KEEP:-}" ]; then echo "e2e: kept $tmp"; else rm -rf "$tmp"; fi
  [ -n "$summary_line" ] && echo "$summary_line"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail_setup() {
  echo "e2e: setup failed: $*" >&2
  summary_line="e2e: 0 passed, 1 failed"
  exit 1
}

"$PY" -c 'import dbus, gi' 2>/dev/null || fail_setup "$PY cannot import dbus and gi (python3-dbus, python3-gi; a venv needs --system-site-packages)"

# A home for everything the app and its helpers might write or read.
private_homes "$tmp"

# lf's side: an empty home, and lf-sim's stand-in lf.
stand_in_lf "$tmp" "$app"
export LF_HOME=$tmp/lf-home
mkdir -p "$LF_HOME"
# A run context the app inherits and must not pass on to the sessions it opens.
export LF_RUN_ID=run_e2e00000000000000000000000000001 LF_RUN_DIR=$tmp/parent-run \
  LF_PARENT_RUN_ID=run_e2e00000000000000000000000000000 \
  LF_HUMAN_SESSION='{"kind":"ask","id":"ask_e2e_parent"}'

export TERMINAL=$here/stand-in-terminal E2E_TERMINAL_LOG=$tmp/terminal.jsonl
# dunst's context menu (dunstrc): the buttons e2e.py clicks through dunst.
export E2E_DMENU=$here/stand-in-dmenu E2E_DMENU_CHOICE=$tmp/dmenu-choice
export E2E_NOTIFY_PCAP=$out/notifications.pcap
export APP=$app E2E_OUT=$out E2E_TMP=$tmp

dunst_and_tray "$out" "$PY"

capture_notifications "$out" || fail_setup "dbus-monitor did not start"

# What the suite's apps start carries this, and what the suite's servers above do not
# (tauri-driver below does, for the apps it starts): the audit after the suite finds them.
export LF_E2E_AUDIT=$tmp

if [ -n "${TAURI_DRIVER:-}" ]; then
  [ -x "$TAURI_DRIVER" ] || fail_setup "TAURI_DRIVER=$TAURI_DRIVER is not executable"
  "$PY" -c 'import selenium' 2>/dev/null || fail_setup "$PY cannot import selenium (see tests/e2e/README.md)"
  # Not 4444/4445, since other runs may share this machine, and below the ephemeral
  # range, where a port can be taken between choosing and binding it (or by a
  # connect-to-self of the readiness probe). A driver that cannot bind is retried.
  free_ports='import random, socket
ports = []
while len(ports) < 2:
    p = random.randrange(20000, 32000)
    if p in ports:
        continue
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", p))
        except OSError:
            continue
    ports.append(p)
print(*ports)'
  listening=""
  : >"$out/tauri-driver.log"
  for _ in 1 2 3; do
    read -r port native_port < <("$PY" -c "$free_ports")
    setsid "$TAURI_DRIVER" --port "$port" --native-port "$native_port" >>"$out/tauri-driver.log" 2>&1 &
    driver=$!
    for _ in $(seq 100); do
      kill -0 "$driver" 2>/dev/null || break
      if (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then listening=1; break; fi
      sleep 0.1
    done
    if [ -n "$listening" ]; then started "$driver"; break; fi
    kill -KILL -- "-$driver" 2>/dev/null
    wait "$driver" 2>/dev/null
  done
  [ -n "$listening" ] || fail_setup "tauri-driver did not start listening (see $out/tauri-driver.log)"
  export WEBDRIVER_URL=http://127.0.0.1:$port
else
  echo "SKIP webdriver: TAURI_DRIVER not set; window checks are not run"
fi

suite=${E2E_SUITE:-e2e.py}
"$PY" "$here/$suite" 2>&1 | tee "$out/${suite%.py}.log"
rc=${PIPESTATUS[0]}
# No longer passed on: what the script runs from here (the audit, tee) is not the app's.
export -n LF_E2E_AUDIT
audit_into "$tmp/result" "env:LF_E2E_AUDIT=$tmp" -- tauri-driver WebKitWebDriver |
  tee -a "$out/${suite%.py}.log"
if read -r passed failed skipped <"$tmp/result" 2>/dev/null; then
  summary_line="e2e: $passed passed, $failed failed"
  [ "$skipped" -gt 0 ] && summary_line+=", $skipped skipped"
else
  summary_line="e2e: 0 passed, 1 failed"
  echo "e2e: $suite ended without results (exit $rc)" >&2
  rc=1
fi
[ "$rc" -eq 0 ] && [ "$failed" -eq 0 ] || exit 1
exit 0
