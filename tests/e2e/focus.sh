#!/usr/bin/env bash
# Go to terminal, for real: a click on a session that already runs in a terminal brings
# that terminal back (an xterm the tray opened, one the person opened, a tmux window
# inside an xterm), a turn handed back where the person looks does not pop up, and a
# terminal that is gone is said. Under Xvfb with openbox (EWMH), a private session bus,
# dunst, a StatusNotifierWatcher and a private tmux server.
#
#   tests/e2e/focus.sh APP_BINARY
#
# Environment (all optional):
#   E2E_OUT        where logs and timings go (default: ci-out/focus under the cwd)
#   LF_STAND_IN    the stand-in lf (default: `lf` beside APP_BINARY)
#   E2E_KEEP=1     keep the temporary directory (its path is printed)
#
# Ends with `e2e-focus: N passed, M failed` and exits non-zero if any check failed.
set -uo pipefail

name=e2e-focus
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
give_up() { echo "$name: $*" >&2; echo "$name: 0 passed, 1 failed"; exit 1; }
[ $# -eq 1 ] || { echo "usage: $0 APP_BINARY" >&2; exit 2; }
app=$(realpath -e "$1" 2>/dev/null) || give_up "no app binary at $1"

. "$here/lib.sh"

if [ -z "${LF_E2E_FOCUS_INSIDE:-}" ]; then
  need xvfb-run dbus-run-session dbus-monitor dunst dunstctl gdbus xdotool xprop openbox setsid xterm tmux
  out=${E2E_OUT:-ci-out/focus}
  mkdir -p "$out" && E2E_OUT=$(cd "$out" && pwd) && export E2E_OUT
  export LF_E2E_FOCUS_INSIDE=1
  # gnome-terminal refuses to start in a locale that is not UTF-8 (the C locale of a
  # bare CI shell); a desktop session always has one.
  export LANG=C.UTF-8
  unset LC_ALL
  run_inside "$app"
  inner_result "$name" "$?"
  exit
fi
exec 1>&3 2>&4 3>&- 4>&-

out=$E2E_OUT
rm -f "$out/result"
tmp=$(mktemp -d /tmp/lf-focus.XXXXXX)
chmod 700 "$tmp"

end_inside_with "$tmp"

private_homes "$tmp"
# Nothing must steer the app's choice but settings.json.
unset TERMINAL TMUX TMUX_PANE XDG_CURRENT_DESKTOP WAYLAND_DISPLAY

# A window manager, as on a desktop: terminals that wait for their window to be mapped
# and focused (konsole, tilix) behave as they would for a person.
setsid openbox --sm-disable >"$out/openbox.log" 2>&1 &
started $!
dunst_and_tray "$out" /usr/bin/python3

export E2E_NOTIFY_PCAP=$out/notifications.pcap
capture_notifications "$out" || fail_setup "dbus-monitor did not start"

# lf's side: the stand-in lf (its home is the checks' own).
stand_in_lf "$tmp" "$app"
# tmux: the checks start their own server, at the default socket of a private directory
# (the tray finds it there as a person's tray finds theirs).
export TMUX_TMPDIR=$tmp/tmux
mkdir -m 700 "$TMUX_TMPDIR"

export APP=$app E2E_OUT=$out E2E_TMP=$tmp
run_driver /usr/bin/python3 "$here/focus.py"
