#!/usr/bin/env bash
# The app under a real GNOME Shell 43, or 48 in debian13.sh (X11, under Xvfb): GNOME's
# notification server (the gjs process org.gnome.Shell.Notifications) shows the popup, a
# real click with xdotool opens the session, and it must open once, although gnome-shell
# repeats every click's ActionInvoked from a connection of its own; a question's options
# and a plan's answers are banner buttons, and a real click on one answers the agent.
#
#   tests/e2e/gnome.sh APP_BINARY
#
# Needs gnome-shell (apt, without recommends: 71 packages, 56 MB, ~20 s) beside the
# e2e suite's xvfb, dbus, xdotool and imagemagick. Environment (all optional):
#   E2E_OUT      where screenshots and logs go (default: ci-out/gnome under the cwd)
#   LF_STAND_IN  the stand-in lf (default: `lf` beside APP_BINARY)
#   PY           python3 with dbus and gi (default /usr/bin/python3)
#   E2E_KEEP=1   keep the temporary directory (its path is printed)
#   E2E_GNOME_TRAY=appindicator  the shell with GNOME's AppIndicator extension
#                (gnome-shell-extension-appindicator, enabled in the run's own dconf): its
#                StatusNotifierWatcher, the app's icon with its count, and its menu. Without
#                it, what the app does on stock GNOME (no tray at all) is told.
#
# Ends with `e2e-gnome: N passed, M failed` (`e2e-gnome+appindicator` with the extension)
# and exits non-zero if any check failed.
set -uo pipefail

name=e2e-gnome
extension=
case ${E2E_GNOME_TRAY:-} in
  "") ;;
  appindicator) name=e2e-gnome+appindicator extension=ubuntu-appindicators@ubuntu.com ;;
  *) echo "$name: E2E_GNOME_TRAY is ${E2E_GNOME_TRAY}, not appindicator" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
give_up() { echo "$name: $*" >&2; echo "$name: 0 passed, 1 failed"; exit 1; }
[ $# -eq 1 ] || { echo "usage: $0 APP_BINARY" >&2; exit 2; }
app=$(realpath -e "$1" 2>/dev/null) || give_up "no app binary at $1"

. "$here/lib.sh"

if [ -z "${LF_E2E_GNOME_INSIDE:-}" ]; then
  need xvfb-run dbus-run-session dbus-daemon dbus-monitor gdbus gnome-shell xdotool import setsid
  [ -z "$extension" ] || [ -f "/usr/share/gnome-shell/extensions/$extension/metadata.json" ] ||
    give_up "no $extension (gnome-shell-extension-appindicator)"
  out=${E2E_OUT:-ci-out/gnome${extension:++appindicator}}
  mkdir -p "$out" && E2E_OUT=$(cd "$out" && pwd) && export E2E_OUT
  rm -f "$E2E_OUT/result"
  tmp=$(mktemp -d /tmp/lf-gnome.XXXXXX)
  chmod 700 "$tmp"
  export E2E_TMP=$tmp
  # Before the bus starts: what it activates (dconf, the shell's helpers) writes there.
  private_homes "$tmp"
  # The session bus's services are the system's, less every org.freedesktop.Notifications
  # one (dunst's, mako's): GNOME's own server must be the one that takes the name.
  mkdir "$tmp/services"
  for service in /usr/share/dbus-1/services/*.service; do
    grep -q '^Name=org\.freedesktop\.Notifications$' "$service" || ln -s "$service" "$tmp/services/"
  done
  sed "s|@SERVICES@|$tmp/services|" "$here/gnome/session-bus.conf" >"$tmp/session-bus.conf"
  sed "s|@SOCKET@|$tmp/system_bus_socket|" "$here/gnome/system-bus.conf" >"$tmp/system-bus.conf"
  export LF_E2E_GNOME_INSIDE=1 LANG=C.UTF-8 XDG_CURRENT_DESKTOP=GNOME XDG_SESSION_TYPE=x11
  unset LC_ALL WAYLAND_DISPLAY
  run_inside "$app" --config-file "$tmp/session-bus.conf"
  rc=$?
  if [ -n "${E2E_KEEP:-}" ]; then echo "$name: kept $tmp" >&2; else rm -rf "$tmp"; fi
  inner_result "$name" "$rc"
  exit
fi
exec 1>&3 2>&4 3>&- 4>&-

out=$E2E_OUT
tmp=$E2E_TMP
end_inside_with

PY=${PY:-/usr/bin/python3}
"$PY" -c 'import dbus, gi' 2>/dev/null || fail_setup "$PY cannot import dbus and gi"

# gnome-shell ends at once without a system bus (it asks logind); a private one will do.
setsid dbus-daemon --config-file "$tmp/system-bus.conf" --nofork >"$out/system-bus.log" 2>&1 &
started $!
for _ in $(seq 50); do [ -S "$tmp/system_bus_socket" ] && break; sleep 0.1; done
[ -S "$tmp/system_bus_socket" ] || fail_setup "the private system bus did not start (see $out/system-bus.log)"
export DBUS_SYSTEM_BUS_ADDRESS=unix:path=$tmp/system_bus_socket

# lf's side, as in run.sh: an empty home, the stand-in lf, the stand-in terminal.
stand_in_lf "$tmp" "$app"
export LF_HOME=$tmp/lf-home
mkdir -p "$LF_HOME"
export TERMINAL=$here/stand-in-terminal E2E_TERMINAL_LOG=$tmp/terminal.jsonl
export E2E_NOTIFY_PCAP=$out/notifications.pcap APP=$app

capture_notifications "$out" || fail_setup "dbus-monitor did not start"
if [ -n "$extension" ]; then
  # Everything said on the tray item's path (tray-icon's ksni item is at the spec's
  # /StatusNotifierItem): its New* signals and every property read, whoever reads. gnome.py
  # waits on the pcap for the extension to have read a new icon; the text is for people.
  export E2E_TRAY_PCAP=$out/tray-bus.pcap
  setsid dbus-monitor --session --pcap "path='/StatusNotifierItem'" >"$E2E_TRAY_PCAP" 2>"$out/tray-bus.err" &
  started $!
  setsid dbus-monitor --session "path='/StatusNotifierItem'" >"$out/tray-bus.log" 2>&1 &
  started $!
fi

# A shell without GDM warns once that it cannot lock the screen, in a banner that would
# stand before the app's; a person's desktop has shown it long ago. (The warning for a
# session as root comes every time: gnome.py clicks it away.)
mkdir -p "$XDG_DATA_HOME/gnome-shell"
: >"$XDG_DATA_HOME/gnome-shell/lock-warning-shown"
# A plain background, so that gnome.py tells a desktop with no banner on it at a glance.
# The shell's drawing over AT-SPI, as a screen reader reads it: gnome.py reads the banner's
# buttons there.
gsettings set org.gnome.desktop.interface toolkit-accessibility true ||
  fail_setup "gsettings could not turn accessibility on"
gsettings set org.gnome.desktop.background picture-options none ||
  fail_setup "gsettings could not set the background (dconf on the private bus)"
# The tray, where asked for: GNOME's AppIndicator extension, enabled as a person does
# (Extensions, or gsettings), in this run's own dconf and before the shell starts.
if [ -n "$extension" ]; then
  gsettings set org.gnome.shell disable-user-extensions false &&
    gsettings set org.gnome.shell enabled-extensions "['$extension']" ||
    fail_setup "gsettings could not enable $extension"
fi
export E2E_GNOME_EXTENSION=$extension
setsid gnome-shell --x11 --replace --sm-disable >"$out/gnome-shell.log" 2>&1 &
started $!
export E2E_SHELL_PID=$!

# The shell and servers above carry no audit mark.
run_driver "$PY" "$here/gnome.py"
