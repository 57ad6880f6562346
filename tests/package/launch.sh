#!/usr/bin/env bash
# The installed desktop entry launched the way a desktop launcher does (`gio launch`), while
# lf-tray already runs hidden in the tray: the first instance must show its window and the
# launched one must hand over and exit. Runs in its own Xvfb and private session bus, with
# temporary HOME, XDG_* and LF_HOME, so nothing touches the caller's desktop or lf's home.
#
#   tests/package/launch.sh DESKTOP_FILE OUT_DIR
#
# LF_STAND_IN: lf-sim's stand-in `lf`, for the app to talk to (required).
# Prints one `ok`/`FAIL` line per check; exits non-zero if any failed.
set -euo pipefail

if [ -z "${LF_PACKAGE_LAUNCH_INSIDE:-}" ]; then
  [ $# -eq 2 ] || { echo "usage: $0 DESKTOP_FILE OUT_DIR" >&2; exit 2; }
  [ -x "${LF_STAND_IN:-}" ] || { echo "launch.sh: LF_STAND_IN must name lf-sim's stand-in lf" >&2; exit 2; }
  mkdir -p "$2"
  export LF_PACKAGE_LAUNCH_INSIDE=1
  # The bus daemon and what it activates chatter on stdout/stderr; they get a log, and the
  # checks write to the caller's stdout through fd 3.
  exec 3>&1
  exec xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- "$BASH" "$0" "$1" "$2" \
    >"$2/launch-session.log" 2>&1
fi
exec 1>&3 3>&-

entry=$1 out=$2
tmp=$(mktemp -d /tmp/lf-package-launch.XXXXXX)
app="" app_log=""
cleanup() {
  if [ -n "$app" ]; then
    kill -TERM -- "-$app" 2>/dev/null || true
    # Quit closes popups and the tray item first; 3 s is plenty, then it is killed.
    for _ in $(seq 30); do kill -0 "$app" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$app" 2>/dev/null || true
  fi
  [ -z "$app_log" ] || cp "$app_log" "$out/launch-lf-tray.log" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

export HOME=$tmp/home XDG_RUNTIME_DIR=$tmp/runtime XDG_CONFIG_HOME=$tmp/config \
  XDG_DATA_HOME=$tmp/data XDG_CACHE_HOME=$tmp/cache XDG_STATE_HOME=$tmp/state
mkdir -p "$HOME" "$XDG_CONFIG_HOME" "$XDG_DATA_HOME" "$XDG_CACHE_HOME" "$XDG_STATE_HOME"
mkdir -m 700 "$XDG_RUNTIME_DIR"
export LF_HOME=$tmp/lf-home LF_SIM_DIR=$tmp/lf-sim LF_BIN=$LF_STAND_IN
mkdir -p "$LF_HOME" "$LF_SIM_DIR"
unset LF_CONTROL_HOME LF_DB_PATH LF_CONTROL_DB_PATH
# The app's own log, where it keeps it; its READY line says when the first instance is up.
app_log=$XDG_STATE_HOME/lf-tray/lf-tray.log
ready() { grep -Eq ' READY$' "$app_log" 2>/dev/null; }

failed=0
ok() { echo "ok   launch: $1"; }
fail() { echo "FAIL launch: $1"; failed=1; }

# Waits up to $1 tenths of a second for the command after it to succeed.
wait_for() {
  local tenths=$1
  shift
  for _ in $(seq "$tenths"); do
    "$@" && return 0
    sleep 0.1
  done
  return 1
}
visible_window() { xdotool search --onlyvisible --name '^Loopflow Tray$' 2>/dev/null | head -n 1; }
has_window() { [ -n "$(visible_window)" ]; }
# lf-tray processes of this run (its HOME in their environment), other than the first.
others() {
  local pid
  for pid in $(pgrep -x lf-tray); do
    [ "$pid" = "$app" ] && continue
    tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "HOME=$HOME" && echo "$pid"
  done
}
no_others() { [ -z "$(others)" ]; }

# PATH as a session has it: the entry's Exec is the bare name lf-tray.
setsid /usr/bin/lf-tray --hidden >"$out/launch-app.log" 2>&1 &
app=$!
# The first start of WebKit on a cold cache takes a few seconds on 2 cores; 30 s is slack.
if wait_for 300 ready; then
  ok "the installed lf-tray started hidden"
else
  fail "the installed lf-tray did not log READY in 30 s (see $out/launch-app.log, launch-lf-tray.log)"
  exit 1
fi
if has_window; then fail "a window is visible before the launch"; fi

gio launch "$entry" >"$out/launch-gio.log" 2>&1 || fail "gio launch $entry failed (see $out/launch-gio.log)"
# Same 5 s as the e2e's second-instance check: the launched one only hands over.
if wait_for 50 has_window; then
  ok "launching $(basename "$entry") shows the running instance's window"
else
  fail "no visible 'Loopflow Tray' window within 5 s of gio launch"
fi
# Painted: more than the flat fill a window has before WebKit draws the page.
painted() {
  local win
  win=$(visible_window) && [ -n "$win" ] && import -window "$win" "$out/launch-window.png" 2>/dev/null &&
    [ "$(identify -format '%k' "$out/launch-window.png")" -gt 16 ]
}
# The page is already loaded in the hidden window; 10 s covers a slow first paint.
if wait_for 100 painted; then
  ok "the window shows its page ($(identify -format '%k' "$out/launch-window.png") colours, launch-window.png)"
else
  fail "the window stayed a blank fill for 10 s (launch-window.png)"
fi
if wait_for 50 no_others; then
  ok "the launched lf-tray handed over and exited"
else
  fail "a second lf-tray still runs 5 s after the launch: $(others | tr '\n' ' ')"
fi
if ! kill -0 "$app" 2>/dev/null; then fail "the first lf-tray exited"; fi

# A launcher groups the window under the entry by StartupWMClass.
win=$(visible_window) || true
if [ -n "$win" ]; then
  class=$(xprop -id "$win" WM_CLASS | sed -n 's/^WM_CLASS(STRING) = //p')
  want=$(sed -n 's/^StartupWMClass=//p' "$entry")
  if grep -q "\"$want\"" <<<"$class"; then
    ok "StartupWMClass=$want matches the window's WM_CLASS $class"
  else
    fail "StartupWMClass=$want is not in the window's WM_CLASS $class"
  fi
fi
exit "$failed"
