#!/usr/bin/env bash
# The app under a real KDE Plasma 5.27 or 6 (X11, under Xvfb, no window manager): plasmashell
# owns org.freedesktop.Notifications and shows the popup, one real click (xdotool) on it
# opens exactly one terminal, an ask stays while Plasma's own popups go, Plasma's
# do-not-disturb (`Inhibited`, set with Inhibit from another connection) holds popups
# back and its end brings one summary; the tray item is registered with Plasma's
# StatusNotifierWatcher (kded's statusnotifierwatcher module) and served to Plasma's
# system tray, its menu opens a session, and how often it registers is counted. Which
# Plasma it is, plasmashell says (`plasmashell --version` on the display): kded5 or kded6
# and KDE_SESSION_VERSION follow its major version (Debian 13 has 6.3: debian13.sh).
#
#   tests/e2e/plasma.sh APP_BINARY
#
# Needs scripts/deps.sh's PLASMA_PACKAGES (plasma-workspace and the desktop shell's
# package, without recommends: 256 packages, 233 MB to fetch, 611 MB installed, ~95 s
# cold) beside the e2e suite's xvfb, dbus, xdotool, x11-utils and imagemagick.
# Environment (all optional):
#   E2E_OUT      where screenshots and logs go (default: ci-out/plasma under the cwd)
#   LF_STAND_IN  the stand-in lf (default: `lf` beside APP_BINARY)
#   PY           python3 with dbus and gi (default /usr/bin/python3)
#   E2E_KEEP=1   keep the temporary directory (its path is printed)
#
# Ends with `e2e-plasma: N passed, M failed` and exits non-zero if any check failed.
set -uo pipefail

name=e2e-plasma
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
give_up() { echo "$name: $*" >&2; echo "$name: 0 passed, 1 failed"; exit 1; }
[ $# -eq 1 ] || { echo "usage: $0 APP_BINARY" >&2; exit 2; }
app=$(realpath -e "$1" 2>/dev/null) || give_up "no app binary at $1"

. "$here/lib.sh"

if [ -z "${LF_E2E_PLASMA_INSIDE:-}" ]; then
  need xvfb-run dbus-run-session dbus-daemon dbus-monitor gdbus plasmashell ksmserver xdotool xprop import setsid
  [ -d /usr/share/plasma/shells/org.kde.plasma.desktop ] ||
    give_up "no Plasma desktop shell package (plasma-desktop-data; see the head of $0)"
  out=${E2E_OUT:-ci-out/plasma}
  mkdir -p "$out" && E2E_OUT=$(cd "$out" && pwd) && export E2E_OUT
  rm -f "$E2E_OUT/result"
  started_at=$SECONDS
  tmp=$(mktemp -d /tmp/lf-plasma.XXXXXX)
  chmod 700 "$tmp"
  export E2E_TMP=$tmp
  # Before the bus starts: what it activates (kactivitymanagerd, kglobalaccel, kscreen)
  # writes there.
  private_homes "$tmp"
  mkdir "$tmp/services"
  # The system's session services, less any notification server (Plasma's own must take the
  # name) and KSplash: ksmserver (the push check's screen locker) asks the splash for its
  # stages, and the bus would start plasma_waitforname for a splash this session never shows,
  # which outlives the bus.
  for service in /usr/share/dbus-1/services/*.service; do
    grep -Eq '^Name=(org\.freedesktop\.Notifications|org\.kde\.KSplash)$' "$service" ||
      ln -s "$service" "$tmp/services/"
  done
  sed "s|@SERVICES@|$tmp/services|" "$here/plasma/session-bus.conf" >"$tmp/session-bus.conf"
  # What startplasma sets for a Plasma session: kded loads its session modules (the
  # StatusNotifierWatcher among them) only where KDE_FULL_SESSION says it is one.
  # KDE_SESSION_VERSION once plasmashell has said its version, inside.
  export LF_E2E_PLASMA_INSIDE=1 LANG=C.UTF-8 XDG_CURRENT_DESKTOP=KDE XDG_SESSION_TYPE=x11 \
    KDE_FULL_SESSION=true DESKTOP_SESSION=plasma
  unset LC_ALL WAYLAND_DISPLAY NO_AT_BRIDGE
  run_inside "$app" --config-file "$tmp/session-bus.conf"
  rc=$?
  # What the bus started for Plasma (kactivitymanagerd, kglobalaccel5, kscreen's backend,
  # kioslaves) is no process group of the suite's: it must have gone with the bus and
  # the display. Everything it started carries E2E_TMP.
  if [ -f "$E2E_OUT/result" ]; then
    read -r passed failed skipped <"$E2E_OUT/result"
    if left=$(leftovers "env:E2E_TMP=$tmp"); then
      echo "ok   nothing_plasma_started_outlives_the_suite"
      passed=$((passed + 1))
    else
      echo "FAIL nothing_plasma_started_outlives_the_suite: still running 2 s after the bus ended:"
      sed 's/^/  /' <<<"$left"
      failed=$((failed + 1))
    fi
    echo "$passed $failed${skipped:+ $skipped}" >"$E2E_OUT/result"
  fi
  if [ -n "${E2E_KEEP:-}" ]; then echo "$name: kept $tmp" >&2; else rm -rf "$tmp"; fi
  echo "$name: took $((SECONDS - started_at)) s"
  inner_result "$name" "$rc"
  exit
fi
exec 1>&3 2>&4 3>&- 4>&-

out=$E2E_OUT
tmp=$E2E_TMP
end_inside_with
bus_has() {
  gdbus call --session -d org.freedesktop.DBus -o /org/freedesktop/DBus \
    -m org.freedesktop.DBus.NameHasOwner "$1" 2>/dev/null | grep -q true
}

PY=${PY:-/usr/bin/python3}
"$PY" -c 'import dbus, gi' 2>/dev/null || fail_setup "$PY cannot import dbus and gi"

# lf's side, as in run.sh: an empty home, the stand-in lf, the stand-in terminal.
stand_in_lf "$tmp" "$app"
export LF_HOME=$tmp/lf-home
mkdir -p "$LF_HOME"
export TERMINAL=$here/stand-in-terminal E2E_TERMINAL_LOG=$tmp/terminal.jsonl
export E2E_NOTIFY_PCAP=$out/notifications.pcap APP=$app

# Which Plasma: plasmashell says (on Qt's X11 platform; Qt 6's offscreen and minimal ones
# crashed it), and the session's parts follow its major version, as startplasma sets them
# for what the bus starts too.
version=$(KDE_DEBUG=1 plasmashell --version 2>/dev/null | sed -n 's/^plasmashell \([0-9][0-9.]*\)$/\1/p')
major=${version%%.*}
case $major in
  5 | 6) ;;
  *) fail_setup "plasmashell --version said ${version:-nothing}: neither Plasma 5 nor 6" ;;
esac
command -v "kded$major" >/dev/null || fail_setup "no kded$major for Plasma $version"
export KDE_SESSION_VERSION=$major E2E_PLASMA_VERSION=$version
dbus-update-activation-environment KDE_SESSION_VERSION 2>/dev/null ||
  gdbus call --session -d org.freedesktop.DBus -o /org/freedesktop/DBus \
    -m org.freedesktop.DBus.UpdateActivationEnvironment "{'KDE_SESSION_VERSION': '$major'}" >/dev/null ||
  fail_setup "the bus did not take KDE_SESSION_VERSION"
echo "Plasma $version: kded$major"

capture_notifications "$out" || fail_setup "dbus-monitor did not start"
# Every call to the watcher (RegisterStatusNotifierItem: how often the tray item
# registers), every host's read of an item (Plasma's system tray reading the app's) and
# every property change of the notification server (Plasma's `Inhibited`).
export E2E_WATCHER_LOG=$out/watcher.log
setsid dbus-monitor --session "type='method_call',interface='org.kde.StatusNotifierWatcher'" \
  "type='signal',interface='org.kde.StatusNotifierWatcher'" \
  "type='method_call',member='GetAll',arg0='org.kde.StatusNotifierItem'" \
  "type='signal',interface='org.freedesktop.DBus.Properties',path='/org/freedesktop/Notifications'" \
  >"$E2E_WATCHER_LOG" 2>&1 &
started $!

# kded first, as plasma_session starts it: its statusnotifierwatcher module is the
# watcher Plasma's system tray registers with as a host.
setsid "kded$major" >"$out/kded.log" 2>&1 &
started $!
export E2E_KDED_PID=$!
for _ in $(seq 300); do bus_has org.kde.StatusNotifierWatcher && break; sleep 0.1; done
bus_has org.kde.StatusNotifierWatcher || fail_setup "kded$major did not load its StatusNotifierWatcher (see $out/kded.log)"
# Plasma 6's global shortcuts daemon is started by the session (its autostart entry), not by
# the bus as Plasma 5's kglobalaccel5 is: started here as the session would, where it is
# installed (plasma.py's shortcuts portal check).
kglobalacceld=$(sed -n 's/^Exec=//p' /etc/xdg/autostart/kglobalacceld.desktop 2>/dev/null)
if [ "$major" = 6 ] && [ -n "$kglobalacceld" ] && [ -x "$kglobalacceld" ]; then
  setsid "$kglobalacceld" >"$out/kglobalacceld.log" 2>&1 &
  started $!
  for _ in $(seq 300); do bus_has org.kde.kglobalaccel && break; sleep 0.1; done
  bus_has org.kde.kglobalaccel || fail_setup "kglobalacceld did not own org.kde.kglobalaccel (see $out/kglobalacceld.log)"
fi
setsid plasmashell --no-respawn >"$out/plasmashell.log" 2>&1 &
started $!
export E2E_SHELL_PID=$!

# Plasma and its services carry no audit mark.
run_driver "$PY" "$here/plasma.py"
