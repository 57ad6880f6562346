#!/usr/bin/env bash
# Go to terminal on the two Wayland desktops most people run, for real: KDE Plasma's KWin
# 5.27 or 6 (`kwin_wayland --virtual`, konsole as the person's terminal, dunst for the
# popups) and GNOME Shell 43 or 45+ (`--headless --wayland`, foot as the terminal, GNOME's
# own popups); the suite speaks the version it finds (focus_wayland.py, focus-wayland/),
# each on a private session bus (GNOME: and a private system bus, which it needs for
# logind). The compositors are started by focus_wayland.py, which restarts GNOME's shell
# as a person's next login after `lf-tray setup gnome-focus`. On KWin also: away from the
# compositor's idle notification (pushed to a stand-in ntfy), back at KWin's fake input.
#
#   tests/e2e/focus-wayland.sh kwin|gnome APP_BINARY
#
# Environment (all optional):
#   E2E_OUT      where logs and timings go (default: ci-out/focus-kwin or ci-out/focus-gnome)
#   LF_STAND_IN  the stand-in lf (default: `lf` beside APP_BINARY)
#   E2E_KEEP=1   keep the temporary directory (its path is printed)
#
# Ends with `e2e-focus-kwin: N passed, M failed` (or -gnome) and exits non-zero if any
# check failed.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib.sh"

if [ -z "${LF_E2E_FOCUS_WAYLAND_INSIDE:-}" ]; then
  [ $# -eq 2 ] && [[ $1 == kwin || $1 == gnome ]] || { echo "usage: $0 kwin|gnome APP_BINARY" >&2; exit 2; }
  desktop=$1
  name=e2e-focus-$desktop
  give_up() { echo "$name: $*" >&2; echo "$name: 0 passed, 1 failed"; exit 1; }
  app=$(realpath -e "$2" 2>/dev/null) || give_up "no app binary at $2"
  need dbus-run-session dbus-daemon dbus-monitor gdbus setsid
  if [ "$desktop" = kwin ]; then
    need kwin_wayland konsole dunst dunstctl
  else
    need gnome-shell foot gsettings
  fi
  /usr/bin/python3 -c 'import dbus, gi' 2>/dev/null || give_up "/usr/bin/python3 cannot import dbus and gi"
  out=${E2E_OUT:-ci-out/focus-$desktop}
  mkdir -p "$out" && E2E_OUT=$(cd "$out" && pwd) && export E2E_OUT
  rm -f "$E2E_OUT/result"
  tmp=$(mktemp -d /tmp/lf-focus-wayland.XXXXXX)
  chmod 700 "$tmp"
  export E2E_TMP=$tmp E2E_DESKTOP=$desktop
  # Before the bus starts: what it activates (dconf, the shell's helpers) writes there.
  private_homes "$tmp"
  # The session bus's services are the system's, less every org.freedesktop.Notifications
  # one: dunst (KWin) or GNOME's own server must be the one that takes the name.
  mkdir "$tmp/services"
  for service in /usr/share/dbus-1/services/*.service; do
    grep -q '^Name=org\.freedesktop\.Notifications$' "$service" || ln -s "$service" "$tmp/services/"
  done
  sed "s|@SERVICES@|$tmp/services|" "$here/gnome/session-bus.conf" >"$tmp/session-bus.conf"
  sed "s|@SOCKET@|$tmp/system_bus_socket|" "$here/gnome/system-bus.conf" >"$tmp/system-bus.conf"
  export LF_E2E_FOCUS_WAYLAND_INSIDE=1 LANG=C.UTF-8 XDG_SESSION_TYPE=wayland
  unset LC_ALL DISPLAY WAYLAND_DISPLAY TERMINAL TMUX TMUX_PANE
  exec 3>&1 4>&2
  dbus-run-session --config-file "$tmp/session-bus.conf" -- "$BASH" "$0" "$desktop" "$app" \
    >"$E2E_OUT/session-bus.log" 2>&1
  rc=$?
  exec 3>&- 4>&-
  if [ -n "${E2E_KEEP:-}" ]; then echo "$name: kept $tmp" >&2; else rm -rf "$tmp"; fi
  inner_result "$name" "$rc"
  exit
fi
exec 1>&3 2>&4 3>&- 4>&-

desktop=$1
app=$2
name=e2e-focus-$desktop
out=$E2E_OUT
tmp=$E2E_TMP
end_inside_with

if [ "$desktop" = gnome ]; then
  # gnome-shell ends at once without a system bus (it asks logind); a private one will do.
  setsid dbus-daemon --config-file "$tmp/system-bus.conf" --nofork >"$out/system-bus.log" 2>&1 &
  started $!
  for _ in $(seq 50); do [ -S "$tmp/system_bus_socket" ] && break; sleep 0.1; done
  [ -S "$tmp/system_bus_socket" ] || fail_setup "the private system bus did not start (see $out/system-bus.log)"
  export DBUS_SYSTEM_BUS_ADDRESS=unix:path=$tmp/system_bus_socket XDG_CURRENT_DESKTOP=GNOME
  # A shell without GDM warns once that it cannot lock the screen; a person's desktop
  # has shown it long ago.
  mkdir -p "$XDG_DATA_HOME/gnome-shell/extensions"
  : >"$XDG_DATA_HOME/gnome-shell/lock-warning-shown"
  # The suite's own eyes and hands in the shell (not the tray's extension), enabled as a
  # person enables one, before the shell starts: in the format this shell loads (45 made
  # extensions ES modules), listing its version (a shell loads no extension that does not).
  gnome_version=$(gnome-shell --version | sed -n 's/^GNOME Shell \([0-9][0-9]*\).*/\1/p')
  [ -n "$gnome_version" ] || fail_setup "gnome-shell --version said: $(gnome-shell --version 2>&1)"
  eyes_format=43
  [ "$gnome_version" -lt 45 ] || eyes_format=45
  eyes=$XDG_DATA_HOME/gnome-shell/extensions/lf-tray-e2e@loopflow.dev
  mkdir -p "$eyes"
  cp "$here/focus-wayland/gnome-eyes/$eyes_format/extension.js" "$eyes/"
  cat >"$eyes/metadata.json" <<JSON
{
  "uuid": "lf-tray-e2e@loopflow.dev",
  "name": "Loopflow Tray's e2e eyes and hands",
  "description": "Test only (tests/e2e/focus-wayland.sh): logs the focused window's pid on every change, focuses a window as a person's click would, clicks a banner.",
  "shell-version": ["$gnome_version"]
}
JSON
  echo "GNOME Shell $gnome_version: the suite's extension in the $eyes_format format"
  export E2E_GNOME_VERSION=$gnome_version
  gsettings set org.gnome.shell disable-user-extensions false &&
    gsettings set org.gnome.shell enabled-extensions "['lf-tray-e2e@loopflow.dev']" ||
    fail_setup "gsettings could not enable the suite's extension"
else
  export XDG_CURRENT_DESKTOP=KDE
  # kwin_wayland carries a file capability this container refuses to exec; a plain copy
  # (cp drops it) runs.
  mkdir -p "$tmp/kwin"
  cp "$(command -v kwin_wayland)" "$tmp/kwin/kwin_wayland"
  export E2E_KWIN=$tmp/kwin/kwin_wayland
fi

# The tray host: neither a bare KWin nor GNOME has one; the suite's watcher stands in for
# Plasma's panel (rows are clicked over dbusmenu, as a panel does).
setsid /usr/bin/python3 "$here/sni_watcher.py" >"$out/sni_watcher.log" 2>&1 &
started $!
gdbus wait --session --timeout 10 org.kde.StatusNotifierWatcher ||
  fail_setup "sni_watcher.py did not start (see $out/sni_watcher.log)"

export E2E_NOTIFY_PCAP=$out/notifications.pcap
capture_notifications "$out" || fail_setup "dbus-monitor did not start"

# lf's side: the stand-in lf, today's lf (E2), its home the checks' own.
stand_in_lf "$tmp" "$app"
export LF_HOME=$tmp/lf-home LF_SIM_GENERATION=e2
mkdir -p "$LF_HOME"

export APP=$app
run_driver /usr/bin/python3 "$here/focus_wayland.py"
