#!/usr/bin/env bash
# The app on a real Wayland desktop: sway (headless), waybar as the tray host, mako as
# the notification server, foot as the terminal, on a private session bus.
#
#   tests/e2e/wayland.sh APP_BINARY
#
# Environment (all optional):
#   E2E_OUT      where screenshots and logs go (default: ci-out/wayland under the cwd)
#   LF_STAND_IN  the stand-in lf (default: `lf` beside APP_BINARY)
#   E2E_USER     the unprivileged account it runs as when started as root (default
#                lftray-e2e, created if missing): sway refuses to run as root
#   E2E_KEEP=1   keep the temporary directory (its path is printed)
#
# Ends with `e2e-wayland: N passed, M failed` and exits non-zero if any check failed.
set -uo pipefail

name=e2e-wayland
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

if [ "${1:-}" != --inside ]; then
  # --- outside: as the caller (root in CI) ------------------------------------------------
  give_up() { echo "$name: $*" >&2; echo "$name: 0 passed, 1 failed"; exit 1; }
  [ $# -eq 1 ] || { echo "usage: $0 APP_BINARY" >&2; exit 2; }
  app=$(realpath -e "$1" 2>/dev/null) || give_up "no app binary at $1"
  lf=$(realpath -e "${LF_STAND_IN:-$(dirname "$app")/lf}" 2>/dev/null) || give_up "no stand-in lf beside $app"
  for tool in sway swaymsg waybar mako makoctl busctl foot grim dbus-run-session dbus-monitor gdbus setsid; do
    command -v "$tool" >/dev/null || give_up "missing $tool (see tests/e2e/README.md)"
  done
  /usr/bin/python3 -c 'import dbus, gi' 2>/dev/null || give_up "/usr/bin/python3 cannot import dbus and gi (python3-dbus, python3-gi)"
  out=${E2E_OUT:-ci-out/wayland}
  mkdir -p "$out" && out=$(cd "$out" && pwd)

  # Everything the run reads or writes lives in one directory the test user owns, since
  # it cannot read the caller's (root's) build tree or home.
  tmp=$(mktemp -d /tmp/lf-wayland.XXXXXX)
  mkdir -p "$tmp/bin" "$tmp/harness" "$tmp/out"
  : >"$tmp/out/e2e.log"
  cp "$app" "$tmp/bin/lf-tray"
  cp "$lf" "$tmp/bin/lf"
  cp -r "$here"/*.py "$here/wayland.sh" "$here/lib.sh" "$here/wayland" "$tmp/harness/"
  as=()
  if [ "$(id -u)" -eq 0 ]; then
    user=${E2E_USER:-lftray-e2e}
    if ! id -u "$user" >/dev/null 2>&1; then
      useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$user" ||
        give_up "could not create the user $user"
    fi
    chown -R "$user:" "$tmp"
    as=(setpriv --reuid="$user" --regid="$(id -g "$user")" --init-groups)
  fi
  chmod 700 "$tmp"
  # A clean environment: nothing of the caller's desktop, bus or lf may leak in. UTF-8,
  # as any desktop session has (foot and waybar print with it). HOME already here, for
  # what the bus activates (at-spi, dconf), which does not inherit the harness's exports.
  "${as[@]}" env -i PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 HOME="$tmp/home" \
    dbus-run-session -- bash "$tmp/harness/wayland.sh" --inside "$tmp" >"$tmp/out/session-bus.log" 2>&1 &
  inner=$!
  # The inner run prints its check lines to this file; follow it until the run ends.
  tail -n +1 -s 0.2 -f --pid="$inner" "$tmp/out/e2e.log" &
  follower=$!
  wait "$inner"
  rc=$?
  wait "$follower" 2>/dev/null
  cp -r "$tmp/out/." "$out/" 2>/dev/null
  rm -f "$out/result"
  if [ -n "${user:-}" ]; then
    # What the bus activated (at-spi) leaves when the bus goes, a moment after the run;
    # the directory it uses is removed only then. Up to 5 s, then it is reported.
    for _ in $(seq 50); do pgrep -u "$user" >/dev/null || break; sleep 0.1; done
    pgrep -u "$user" >/dev/null && echo "$name: still running as $user: $(pgrep -u "$user" -l | tr '\n' ' ')" >&2
  fi
  if read -r passed failed _ <"$tmp/out/result" 2>/dev/null; then
    summary="$name: $passed passed, $failed failed"
  else
    echo "$name: the run ended without results (exit $rc); last lines of its log:" >&2
    tail -n 20 "$tmp/out/session-bus.log" >&2
    summary="$name: 0 passed, 1 failed"
    rc=1
  fi
  if [ -n "${E2E_KEEP:-}" ]; then echo "$name: kept $tmp"; else rm -rf "$tmp"; fi
  echo "$summary"
  [ "$rc" -eq 0 ] && [ "${failed:-1}" -eq 0 ]
  exit
fi

# --- inside: the test user, on the private bus --------------------------------------------
tmp=$2
out=$tmp/out
harness=$tmp/harness
exec >>"$out/e2e.log" 2>&1

. "$here/lib.sh"
cleanup() {
  # The app's log, where it keeps it ($XDG_STATE_HOME/lf-tray/), goes with the other outputs.
  cp "${XDG_STATE_HOME:-/nonexistent}/lf-tray/lf-tray.log" "$out/lf-tray.log" 2>/dev/null
  stop_started
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail_setup() {
  echo "FAIL setup: $*"
  echo "0 1" >"$out/result"
  exit 1
}

private_homes "$tmp"
mkdir -p "$XDG_CONFIG_HOME/lf-tray"
export XDG_CURRENT_DESKTOP=sway XDG_SESSION_TYPE=wayland

WLR_BACKENDS=headless WLR_LIBINPUT_NO_DEVICES=1 WLR_RENDERER=pixman \
  setsid sway -c "$harness/wayland/sway.conf" >"$out/sway.log" 2>&1 &
started $!
# sway makes both sockets within ~0.1 s; 10 s covers a loaded CI machine.
for _ in $(seq 100); do
  WAYLAND_DISPLAY=$(cd "$XDG_RUNTIME_DIR" && ls wayland-[0-9] 2>/dev/null | head -n1)
  SWAYSOCK=$(ls "$XDG_RUNTIME_DIR"/sway-ipc.*.sock 2>/dev/null | head -n1)
  # swaymsg without SWAYSOCK asks `sway --get-socketpath`, which is slow and may find none.
  [ -n "$WAYLAND_DISPLAY" ] && [ -n "$SWAYSOCK" ] && SWAYSOCK=$SWAYSOCK swaymsg -t get_version >/dev/null 2>&1 && break
  sleep 0.1
done
[ -n "$WAYLAND_DISPLAY" ] && [ -n "$SWAYSOCK" ] || fail_setup "sway did not start (see sway.log)"
export WAYLAND_DISPLAY SWAYSOCK
unset DISPLAY

setsid mako -c "$harness/wayland/mako.conf" >"$out/mako.log" 2>&1 &
started $!
setsid waybar -c "$harness/wayland/waybar.json" -s "$harness/wayland/waybar.css" >"$out/waybar.log" 2>&1 &
started $!
gdbus wait --session --timeout 10 org.freedesktop.Notifications || fail_setup "mako did not take org.freedesktop.Notifications (see mako.log)"
gdbus wait --session --timeout 10 org.kde.StatusNotifierWatcher || fail_setup "waybar did not take org.kde.StatusNotifierWatcher (see waybar.log)"

# The pcap is what wayland.py decodes (ids, AddMatch, ActivationToken); the text is for people.
rules=("interface='org.freedesktop.Notifications'"
  "type='method_return',sender='org.freedesktop.Notifications'"
  "type='method_call',interface='org.freedesktop.DBus',member='AddMatch'")
setsid dbus-monitor --session "${rules[@]}" >"$out/notifications.log" 2>&1 &
started $!
export E2E_NOTIFY_PCAP=$out/notifications.pcap
setsid dbus-monitor --session --pcap "${rules[@]}" >"$E2E_NOTIFY_PCAP" 2>"$out/dbus-monitor-pcap.err" &
started $!
# Ready when a harmless call shows up in both logs; 5 s covers a loaded machine.
for _ in $(seq 50); do
  gdbus call --session --dest org.freedesktop.Notifications --object-path /org/freedesktop/Notifications \
    --method org.freedesktop.Notifications.GetServerInformation >/dev/null
  grep -qa GetServerInformation "$out/notifications.log" && [ "$(stat -c %s "$E2E_NOTIFY_PCAP")" -gt 24 ] && break
  sleep 0.1
done
grep -qa GetServerInformation "$out/notifications.log" || fail_setup "dbus-monitor did not start"

# lf's side: an empty home and the stand-in lf, inside a Run the app must not pass on.
export LF_HOME=$tmp/lf-home LF_SIM_DIR=$tmp/lf-sim LF_BIN=$tmp/bin/lf
mkdir -p "$LF_HOME" "$LF_SIM_DIR"
export LF_RUN_ID=run_e2e00000000000000000000000000001 LF_RUN_DIR=$tmp/parent-run \
  LF_PARENT_RUN_ID=run_e2e00000000000000000000000000000 \
  LF_HUMAN_SESSION='{"kind":"ask","id":"ask_e2e_parent"}'
# The terminal is chosen in the settings, as a person would; $TERMINAL would win in auto.
unset TERMINAL
echo '{"terminal": "foot"}' >"$XDG_CONFIG_HOME/lf-tray/settings.json"
export APP=$tmp/bin/lf-tray E2E_OUT=$out E2E_TMP=$tmp GDK_BACKEND=wayland
# What the suite's apps start carries this, and the compositor and servers above do not.
export LF_E2E_AUDIT=$tmp

/usr/bin/python3 "$harness/wayland.py"
rc=$?
# No longer passed on: what the script runs from here (the audit, tee) is not the app's.
export -n LF_E2E_AUDIT
audit_into "$out/result" "env:LF_E2E_AUDIT=$tmp"
exit "$rc"
