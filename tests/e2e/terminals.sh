#!/usr/bin/env bash
# Real terminals opened by the app: xterm, xfce4-terminal, gnome-terminal, konsole,
# kitty, alacritty, tilix and tmux, each chosen in settings.json and launched by a click
# on a popup, under Xvfb with a private session bus, dunst, a StatusNotifierWatcher and
# openbox.
#
#   tests/e2e/terminals.sh APP_BINARY
#
# Environment (all optional):
#   E2E_OUT        where screenshots and logs go (default: ci-out/terminals under the cwd)
#   LF_STAND_IN    the stand-in lf (default: `lf` beside APP_BINARY)
#   E2E_TERMINALS  a comma-separated subset to run (default: all eight)
#   E2E_KEEP=1     keep the temporary directory (its path is printed)
#
# Ends with `e2e-terminals: N passed, M failed` and exits non-zero if any check failed.
set -uo pipefail

name=e2e-terminals
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
give_up() { echo "$name: $*" >&2; echo "$name: 0 passed, 1 failed"; exit 1; }
[ $# -eq 1 ] || { echo "usage: $0 APP_BINARY" >&2; exit 2; }
app=$(realpath -e "$1" 2>/dev/null) || give_up "no app binary at $1"

. "$here/lib.sh"

if [ -z "${LF_E2E_TERMINALS_INSIDE:-}" ]; then
  # The terminals are not checked for here: one that is missing is a failed check of
  # its own, with the reason, not a setup failure of all eight.
  need xvfb-run dbus-run-session dbus-monitor dunst dunstctl gdbus xdotool import openbox setsid
  out=${E2E_OUT:-ci-out/terminals}
  mkdir -p "$out" && E2E_OUT=$(cd "$out" && pwd) && export E2E_OUT
  export LF_E2E_TERMINALS_INSIDE=1
  # gnome-terminal refuses to start in a locale that is not UTF-8 (the C locale of a
  # bare CI shell); a desktop session always has one.
  export LANG=C.UTF-8
  unset LC_ALL
  # What the bus activates (gnome-terminal-server, tilix's service, at-spi) logs into
  # session-bus.log.
  run_inside "$app"
  inner_result "$name" "$?"
  exit
fi
exec 1>&3 2>&4 3>&- 4>&-

out=$E2E_OUT
rm -f "$out/result"
tmp=$(mktemp -d /tmp/lf-terminals.XXXXXX)
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

# lf's side: an empty home and the stand-in lf, inside a Run the app must not pass on.
stand_in_lf "$tmp" "$app"
export LF_HOME=$tmp/lf-home
mkdir -p "$LF_HOME"
export LF_RUN_ID=run_e2e00000000000000000000000000001 LF_RUN_DIR=$tmp/parent-run \
  LF_PARENT_RUN_ID=run_e2e00000000000000000000000000000 \
  LF_HUMAN_SESSION='{"kind":"ask","id":"ask_e2e_parent"}'
# What the bus activates (gnome-terminal-server) gets that Run context too, but not
# LF_HOME: a window with the server's environment instead of the app's would show as
# LF_RUN_ID present and LF_HOME missing.
dbus-update-activation-environment LF_RUN_ID LF_RUN_DIR LF_PARENT_RUN_ID LF_HUMAN_SESSION ||
  fail_setup "could not set the bus's activation environment"

# tmux: the adapter opens a window in the RUNNING server, the person's own, found at
# the default socket. A private socket directory keeps it apart from any other tmux on
# this machine. The server is started in this Run context on purpose: its windows get
# the server's environment, so only the adapter's own scrub keeps LF_RUN_ID & co out.
if command -v tmux >/dev/null; then
  export TMUX_TMPDIR=$tmp/tmux
  mkdir -m 700 "$TMUX_TMPDIR"
  setsid tmux -f /dev/null new-session -d -s e2e -x 200 -y 50 >"$out/tmux.log" 2>&1
  tmux_pid=$(tmux display-message -p '#{pid}' 2>/dev/null) || fail_setup "the tmux server did not start (see tmux.log)"
  started "$tmux_pid"
fi

export APP=$app E2E_OUT=$out E2E_TMP=$tmp
# The servers above (tmux too) carry no audit mark.
run_driver /usr/bin/python3 "$here/terminals.py"
