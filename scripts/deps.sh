#!/usr/bin/env bash
# System packages for building and testing Loopflow Tray on Debian/Ubuntu (Tauri v2's Linux
# list, without recommends), and the test-only tools. Sourced by demo.sh and test.sh.
set -euo pipefail

BUILD_PACKAGES=(libwebkit2gtk-4.1-dev build-essential pkg-config libxdo-dev libssl-dev
  libayatana-appindicator3-dev librsvg2-dev)
TEST_PACKAGES=(xvfb xauth dbus dbus-bin dunst libnotify-bin xdotool imagemagick
  webkit2gtk-driver python3-dbus python3-gi python3-venv at-spi2-core
  # tests/e2e/memory.py: gdbus and gsettings, and GNOME's Do Not Disturb key in real dconf.
  libglib2.0-bin dconf-service dconf-gsettings-backend gsettings-desktop-schemas
  # cargo test: ps (lf's liveness check on macOS, tested here too) and kill from procps;
  # setsid and setpriv from util-linux; tmux for `lf session ensure` (E2) and the tmux
  # terminal. A minimal Debian has none of procps or tmux.
  procps util-linux tmux
  # tests/e2e/keys.py: xev, the X client that shows a key reached the focused window.
  x11-utils)
# tests/e2e/agents.py: npm fetches the real Claude Code and Codex (tests/agents/install.sh;
# their native binaries need nothing more); tmux is their terminal. Debian's npm only where no
# npm is on the PATH: NodeSource's nodejs carries its own and conflicts with Debian's.
AGENTS_PACKAGES=(tmux)
AGENTS_NPM_PACKAGES=(nodejs npm)
# tests/e2e/wayland.sh: sway (headless), waybar (the tray host), mako (notifications; its
# makoctl 1.7 is a shell script around systemd's busctl), foot, grim (screenshots); setpriv
# (util-linux) and pgrep (procps) to run it as an unprivileged user, since sway refuses root.
WAYLAND_PACKAGES=(sway waybar mako-notifier foot grim systemd util-linux procps)
# tests/e2e/terminals.sh: the real terminals the app opens, and openbox as the window manager;
# x11-utils for focus.sh's xprop (only a Recommends of xterm, installed without them).
TERMINAL_PACKAGES=(xterm xfce4-terminal gnome-terminal konsole kitty alacritty tilix tmux openbox
  x11-utils)

# tests/e2e/gnome.sh: a real GNOME Shell 43 (X11) and the gjs that runs its notification
# service (only a Recommends of gnome-shell, which is installed without them).
# gnome-shell-extension-appindicator: the tray on GNOME (gnome.sh with E2E_GNOME_TRAY=appindicator;
# one package, 50 kB, ~2 s).
GNOME_PACKAGES=(gnome-shell gjs gnome-shell-extension-appindicator)
# tests/e2e/desktops.sh: the notification servers of Xfce (with xfconf: xfconfd holds its
# do-not-disturb, xfconf-query flips it), LXQt and notification-daemon (14 packages, ~17 s),
# and gir1.2-atspi-2.0 to read what the GTK servers draw over the accessibility bus; the
# panels whose trays host the app's item beside Xfce's and LXQt's servers, xfce4-panel 4.18
# (its Status Tray plugin) and lxqt-panel 1.2 (its statusnotifier plugin): 22 more packages
# on top of the servers', ~17 s, and nothing they need at run time beyond their Depends.
DESKTOP_PACKAGES=(xfce4-notifyd xfconf lxqt-notificationd notification-daemon gir1.2-atspi-2.0
  xfce4-panel lxqt-panel)
# tests/e2e/plasma.sh: KDE Plasma 5.27's plasmashell (its notification server and system
# tray; kded5's statusnotifierwatcher module is the watcher; Plasma 6 in DEBIAN13_PACKAGES) and the desktop shell's
# package (plasma-desktop-data: plasmashell starts no shell without it; plasma-desktop
# itself, the launcher and task manager, is not needed). 256 packages, 233 MB to fetch,
# 611 MB installed, ~95 s cold on the 2-core machine (nothing warm). xdg-desktop-portal (1.16)
# and its KDE backend (5.27) for the keys through the GlobalShortcuts portal (plasma.py's
# keys_through_kdes_shortcuts_portal; kglobalaccel comes with plasma-workspace): 3 packages
# more (with fuse3), 0.7 MB to fetch.
PLASMA_PACKAGES=(plasma-workspace plasma-desktop-data xdg-desktop-portal xdg-desktop-portal-kde)
# tests/e2e/focus-wayland.sh: Go to terminal on KWin's and GNOME Shell's Wayland sessions.
# kwin-wayland (KWin 5.27, headless with --virtual; pulls xwayland), qtwayland5 (without it
# konsole stops: no Qt platform plugin "wayland"), konsole and foot as the terminals, dunst
# for KWin's popups (GNOME's are the shell's own); gnome-shell and gjs are in GNOME_PACKAGES.
# About 6 MB beyond the packages above.
WAYLAND_FOCUS_PACKAGES=(kwin-wayland qtwayland5 konsole foot dunst)

# tests/e2e/debian13.sh: today's desktops (Debian 13: KWin 6.3, GNOME Shell 48) in a
# minbase chroot built by debootstrap on this machine (DEBIAN13_HOST_PACKAGES), with
# DEBIAN13_PACKAGES installed inside it: focus-wayland.sh's parts (konsole is Qt 6 there,
# so qt6-wayland; dconf-service and its gsettings backend, or an enabled-extensions set
# before the shell starts is lost) and the libraries the app built here links (t64 names).
DEBIAN13_HOST_PACKAGES=(debootstrap)
DEBIAN13_PACKAGES=(kwin-wayland konsole qt6-wayland dunst gnome-shell gjs foot
  gsettings-desktop-schemas dconf-service dconf-gsettings-backend dbus dbus-bin libglib2.0-bin
  python3 python3-dbus python3-gi gir1.2-glib-2.0 util-linux procps xdotool libwebkit2gtk-4.1-0
  libgtk-3-0t64 libayatana-appindicator3-1 libxdo3 libssl3t64
  # gnome.sh's popups on GNOME Shell 48 (X11 under Xvfb): import for the screen, and the
  # accessibility bus (at-spi2-core) without which the shell's banners are not read at all.
  xvfb xauth imagemagick at-spi2-core gir1.2-atspi-2.0
  # plasma.sh on Plasma 6.3 (X11 under Xvfb): plasmashell and kded6 (plasma-workspace), the
  # desktop shell's package, xprop (x11-utils) and libxcb-cursor0, without which Qt 6.8's
  # X11 platform plugin does not load (Qt 5's did not need it). ~300 packages more.
  plasma-workspace plasma-desktop-data x11-utils libxcb-cursor0
  # gnome.py's and plasma.py's keys through the shortcuts portal: xdg-desktop-portal 1.20,
  # its GNOME backend 48 (whose provider, from gnome-control-center, shows the bind dialog)
  # and its KDE backend 6.3: 52 packages more (nautilus among them, GNOME's file chooser).
  xdg-desktop-portal xdg-desktop-portal-gnome xdg-desktop-portal-kde)

# Installs only what is missing, so a warm machine pays one dpkg query, not an apt run.
install_packages() {
  local missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if ! command -v apt-get >/dev/null; then
    echo "Missing system packages: ${missing[*]} (install them with your package manager)" >&2
    return 1
  fi
  local sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  echo "Installing: ${missing[*]}" >&2
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# tests/remote/run.sh: a real sshd on 127.0.0.1 and the ssh client the tray runs; setpriv
# (util-linux) runs each side as its own account; xterm for the desktop check; python3 (the
# standard library only) drives it.
REMOTE_PACKAGES=(openssh-server openssh-client util-linux xterm python3)

# Packages (scripts/package.sh): python3 writes the bundler's config and draws the extra
# icon sizes. Checking them (tests/package/check.sh): desktop-file-validate, rpm for
# `rpm -qlp` and rpm2archive to read a file out of the .rpm (Tauri's rpm bundler is pure
# Rust and needs no rpmbuild).
PACKAGE_PACKAGES=(python3)
PACKAGE_TEST_PACKAGES=(desktop-file-utils rpm rpm2cpio)
