#!/usr/bin/env bash
# The app against the real notification servers of the desktops without a suite of their
# own here: xfce4-notifyd (Xfce), lxqt-notificationd (LXQt) and notification-daemon (the
# GNOME Flashback / plain-X server). Each runs in a private X display (Xvfb) and a private
# session bus of its own, and for each: the popup is shown with the buttons intended, one
# real click (xdotool) opens exactly one terminal, an ask stays where the server lets its
# own popups go, and — for Xfce and LXQt — their own do-not-disturb holds popups back
# and its end brings one summary. The tray is the desktop's own panel where the suite has it
# (xfce4-panel's Status Tray with xfce4-notifyd, lxqt-panel's statusnotifier with
# lxqt-notificationd, each with a private config from desktops/), else sni_watcher.py: the
# panel takes the app's item, draws its icon and its count, and a real click on the icon
# opens what the app's tray opens there.
#
#   tests/e2e/desktops.sh APP_BINARY
#
# Needs scripts/deps.sh's DESKTOP_PACKAGES beside the e2e suite's xvfb, dbus, xdotool and
# imagemagick. Environment (all optional):
#   E2E_DESKTOPS  the servers to run, space-separated (default: all three)
#   E2E_OUT       where screenshots and logs go (default: ci-out/desktops; one directory
#                 per server under it)
#   LF_STAND_IN   the stand-in lf (default: `lf` beside APP_BINARY)
#   PY            python3 with dbus and gi (default /usr/bin/python3)
#   E2E_KEEP=1    keep the temporary directories (their paths are printed)
#
# Ends with `e2e-desktops: N passed, M failed` (after a line per server) and exits non-zero
# if any check failed.
set -uo pipefail

name=e2e-desktops
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
give_up() { echo "$name: $*" >&2; echo "$name: 0 passed, 1 failed"; exit 1; }
[ $# -eq 1 ] || { echo "usage: $0 APP_BINARY" >&2; exit 2; }
app=$(realpath -e "$1" 2>/dev/null) || give_up "no app binary at $1"

. "$here/lib.sh"

# Each server's program, as Debian 12 installs it (neither daemon is on PATH but LXQt's).
server_program() {
  case $1 in
    xfce4-notifyd) echo /usr/lib/x86_64-linux-gnu/xfce4/notifyd/xfce4-notifyd ;;
    lxqt-notificationd) command -v lxqt-notificationd ;;
    notification-daemon) echo /usr/lib/notification-daemon/notification-daemon ;;
    *) return 1 ;;
  esac
}

# The panel whose tray is the host beside each server: Xfce's and LXQt's own; notification-
# daemon's desktop (GNOME Flashback) has no panel here, and sni_watcher.py stands in for it.
# xfce4-panel waits for a window manager before it shows itself unless told not to, and this
# suite runs none.
panel_program() {
  case $1 in
    xfce4-notifyd) echo "xfce4-panel --disable-wm-check" ;;
    lxqt-notificationd) echo lxqt-panel ;;
    *) return 1 ;;
  esac
}

if [ -z "${LF_E2E_DESKTOP_INSIDE:-}" ]; then
  need xvfb-run dbus-run-session dbus-daemon dbus-monitor gdbus xdotool import setsid xfconf-query
  servers=${E2E_DESKTOPS:-xfce4-notifyd lxqt-notificationd notification-daemon}
  for server in $servers; do
    program=$(server_program "$server") && [ -x "$program" ] ||
      give_up "no $server (${program:-unknown server}; see the head of $0)"
    if panel=$(panel_program "$server"); then
      command -v "${panel%% *}" >/dev/null || give_up "no ${panel%% *} for $server (see the head of $0)"
    fi
  done
  out=${E2E_OUT:-ci-out/desktops}
  mkdir -p "$out" && out=$(cd "$out" && pwd)
  started_at=$SECONDS
  passed=0 failed=0
  for server in $servers; do
    export E2E_OUT=$out/$server
    mkdir -p "$E2E_OUT" && rm -f "$E2E_OUT/result"
    tmp=$(mktemp -d "/tmp/lf-desktop-$server.XXXXXX")
    chmod 700 "$tmp"
    # In a subshell: each server gets its own homes, bus and display, and nothing of one
    # run's environment reaches the next.
    (
      export E2E_TMP=$tmp E2E_SERVER=$server
      # Before the bus starts: what it activates (xfconfd, the accessibility bus) writes there.
      private_homes "$tmp"
      # The panel's settings, where it (xfconfd, for xfce4-panel) reads them in these homes.
      case $server in
        xfce4-notifyd)
          mkdir -p "$XDG_CONFIG_HOME/xfce4/xfconf/xfce-perchannel-xml"
          cp "$here/desktops/xfce4-panel.xml" "$XDG_CONFIG_HOME/xfce4/xfconf/xfce-perchannel-xml/" ;;
        lxqt-notificationd)
          mkdir -p "$XDG_CONFIG_HOME/lxqt"
          cp "$here/desktops/lxqt-panel.conf" "$XDG_CONFIG_HOME/lxqt/panel.conf" ;;
      esac
      # The bus's services are the system's less every org.freedesktop.Notifications one
      # (dunst's, xfce4-notifyd's, GNOME's): only the server started below may own the name.
      mkdir "$tmp/services"
      for service in /usr/share/dbus-1/services/*.service; do
        grep -q '^Name=org\.freedesktop\.Notifications$' "$service" || ln -s "$service" "$tmp/services/"
      done
      sed "s|@SERVICES@|$tmp/services|" "$here/desktops/session-bus.conf" >"$tmp/session-bus.conf"
      export LF_E2E_DESKTOP_INSIDE=1 LANG=C.UTF-8
      unset LC_ALL WAYLAND_DISPLAY XDG_CURRENT_DESKTOP NO_AT_BRIDGE
      run_inside "$app" --config-file "$tmp/session-bus.conf"
      line=$(inner_result "$name/$server" "$?")
      rc=$?
      echo "$line"
      exit "$rc"
    ) | tee "$out/$server.summary"
    if [ -n "${E2E_KEEP:-}" ]; then echo "$name: kept $tmp" >&2; else rm -rf "$tmp"; fi
    read -r p f < <(sed -n "s|^$name/$server: \([0-9]*\) passed, \([0-9]*\) failed$|\1 \2|p" "$out/$server.summary")
    passed=$((passed + ${p:-0})) failed=$((failed + ${f:-1}))
    rm -f "$out/$server.summary"
  done
  echo "$name: took $((SECONDS - started_at)) s"
  echo "$name: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit
fi
exec 1>&3 2>&4 3>&- 4>&-

out=$E2E_OUT
tmp=$E2E_TMP
end_inside_with

PY=${PY:-/usr/bin/python3}
"$PY" -c 'import dbus, gi; gi.require_version("Atspi", "2.0")' 2>/dev/null ||
  fail_setup "$PY cannot import dbus, gi and Atspi"

# lf's side, as in run.sh: an empty home, the stand-in lf, the stand-in terminal.
stand_in_lf "$tmp" "$app"
export LF_HOME=$tmp/lf-home
mkdir -p "$LF_HOME"
export TERMINAL=$here/stand-in-terminal E2E_TERMINAL_LOG=$tmp/terminal.jsonl
export E2E_NOTIFY_PCAP=$out/notifications.pcap APP=$app

capture_notifications "$out" || fail_setup "dbus-monitor did not start"

# What the tray host and the app's item say to each other (the host's Activate and
# ContextMenu, its reading of the menu): desktops.py tells from it whether a click that did
# nothing on the screen reached the app at all.
setsid dbus-monitor --session "interface='org.kde.StatusNotifierItem'" "interface='com.canonical.dbusmenu'" \
  "interface='org.kde.StatusNotifierWatcher'" >"$out/tray.log" 2>&1 &
started $!
export E2E_TRAY_LOG=$out/tray.log

# The panel's tray: without one the app would rightly tell this desktop shows no tray
# icons, a popup of its own in every check. The desktop's own panel where there is one; it
# owns the watcher (xfce4-panel: its Status Tray plugin, in a wrapper process of its own).
# Its host registering is the first check's to wait for (desktops.py). 30 s for the name:
# both panels took it within 0.3 s on the idle 2-core machine, and a build beside them
# slows GTK's and Qt's start many times over.
if panel=$(panel_program "$E2E_SERVER"); then
  # shellcheck disable=SC2086 # the program and its options
  setsid $panel >"$out/panel.log" 2>&1 &
  started $!
  export E2E_PANEL_PID=$!
  gdbus wait --session --timeout 30 org.kde.StatusNotifierWatcher || fail_setup "${panel%% *} did not start its tray"
else
  setsid "$PY" "$here/sni_watcher.py" >"$out/sni_watcher.log" 2>&1 &
  started $!
  gdbus wait --session --timeout 10 org.kde.StatusNotifierWatcher || fail_setup "sni_watcher.py did not start"
fi

setsid "$(server_program "$E2E_SERVER")" >"$out/server.log" 2>&1 &
started $!
export E2E_SERVER_PID=$!

# The panels and servers above carry no audit mark.
run_driver "$PY" "$here/desktops.py"
