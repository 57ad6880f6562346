#!/usr/bin/env bash
# Everything CI checks, in one command: formatting, clippy, the unit and integration tests
# (no display needed), then the desktop end-to-end tests with real parts (Xvfb, a private
# D-Bus, dunst, a StatusNotifierWatcher, tauri-driver + WebKitWebDriver).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
install_packages "${BUILD_PACKAGES[@]}" "${TEST_PACKAGES[@]}"

# Tools and the venv live outside the clone so later runs on the same machine reuse them.
CACHE=${LF_TRAY_CACHE:-$HOME/.cache/lf-tray}
mkdir -p "$CACHE"
export PATH="$CACHE/bin:$PATH"

# Each stage's wall time, printed when the run ends, a failed one too (the stages so far):
# `stage` opens the next one and names it by its header up to the first colon.
stage_times=()
stage_end() {
  [ -z "${stage_name:-}" ] || stage_times+=("$(printf '%6ds  %s' $((SECONDS - stage_began)) "$stage_name")")
  stage_name=
}
stage() {
  stage_end
  stage_name=${1%%:*} stage_began=$SECONDS
  echo "== $1"
}
trap 'stage_end; echo "== wall time of each stage"; printf "%s\n" "${stage_times[@]}"; printf "%6ds  in all\n" $SECONDS' EXIT

stage "fmt, clippy"
cargo fmt --all -- --check
cargo clippy --locked --workspace --all-targets -- -D warnings
cargo clippy --locked -p lf-tray --no-default-features --all-targets -- -D warnings
cargo clippy --locked -p lf-tray --features demo --all-targets -- -D warnings

stage "cargo test"
cargo test --locked --workspace
# The headless build (no GTK, no WebKit) must keep working for servers.
cargo test --locked -p lf-tray --no-default-features --test cli

stage "desktop end to end"
command -v tauri-driver >/dev/null || cargo install --locked --quiet tauri-driver@^2 --root "$CACHE"
# The system python: python3-dbus and python3-gi come from the distribution, so the venv
# (for selenium) must see its site-packages; a python3 from pyenv or similar would not.
E2E_VENV=$CACHE/venv
[ -x "$E2E_VENV/bin/python" ] && "$E2E_VENV/bin/python" -c "import dbus, gi" 2>/dev/null ||
  { rm -rf "$E2E_VENV"; /usr/bin/python3 -m venv --system-site-packages "$E2E_VENV"; }
"$E2E_VENV/bin/python" -c "import selenium" 2>/dev/null || "$E2E_VENV/bin/pip" install -q selenium
cargo build --locked -p lf-tray -p lf-sim --bins
TAURI_DRIVER=$(command -v tauri-driver) PY=$E2E_VENV/bin/python E2E_VENV=$E2E_VENV \
  bash tests/e2e/run.sh "${CARGO_TARGET_DIR:-target}/debug/lf-tray"
stage "never miss, never nag: restarts, crashes, a late server, do-not-disturb, pause, quiet hours"
PY=$E2E_VENV/bin/python E2E_SUITE=memory.py E2E_BUS_CONFIG=$PWD/tests/e2e/session-bus.conf \
  E2E_OUT=${E2E_OUT:-ci-out}/memory bash tests/e2e/run.sh "${CARGO_TARGET_DIR:-target}/debug/lf-tray"
stage "away from the desk: pushes to the phone (X11 idle time, a locker on the bus, a stand-in ntfy server)"
PY=$E2E_VENV/bin/python E2E_SUITE=push.py E2E_BUS_CONFIG=$PWD/tests/e2e/session-bus.conf \
  E2E_OUT=${E2E_OUT:-ci-out}/push bash tests/e2e/run.sh "${CARGO_TARGET_DIR:-target}/debug/lf-tray"
stage "answering from the keyboard: lf-tray answer against the stand-in Claude's hook (nothing waiting, two requests, a question, a race with a click), X11 keys held only while a request waits (xdotool, xev), the panel's switch and what it says of a key held by another program"
TAURI_DRIVER=$(command -v tauri-driver) PY=$E2E_VENV/bin/python E2E_SUITE=keys.py E2E_BUS_CONFIG=$PWD/tests/e2e/session-bus.conf \
  E2E_OUT=${E2E_OUT:-ci-out}/keys bash tests/e2e/run.sh "${CARGO_TARGET_DIR:-target}/debug/lf-tray"
stage "the window at 10 000 sessions (WebDriver): opened, scrolled to the last, one found by the filter, the keyboard past the drawn rows, a change while open; prints the ms"
TAURI_DRIVER=$(command -v tauri-driver) PY=$E2E_VENV/bin/python E2E_SUITE=window_scale.py E2E_BUS_CONFIG=$PWD/tests/e2e/session-bus.conf \
  E2E_OUT=${E2E_OUT:-ci-out}/window-scale bash tests/e2e/run.sh "${CARGO_TARGET_DIR:-target}/debug/lf-tray"
stage "answering from the phone: ntfy http buttons against a stand-in ntfy server with users and rights, the stand-in Claude's hook (allow, an option, refusals, a cut link, a restart, an open topic)"
TAURI_DRIVER=$(command -v tauri-driver) PY=$E2E_VENV/bin/python E2E_VENV=$E2E_VENV E2E_SUITE=phone.py E2E_BUS_CONFIG=$PWD/tests/e2e/session-bus.conf \
  E2E_OUT=${E2E_OUT:-ci-out}/phone bash tests/e2e/run.sh "${CARGO_TARGET_DIR:-target}/debug/lf-tray"
stage "the real agents: Claude Code and Codex from npm, offline against a scripted model server, answered from the popup, the window's card and the terminal"
# npm fetches the pinned clients once into $CACHE/agents (tests/agents/install.sh, ~570 MB,
# ~20 s); after that the stage takes about a minute on the loaded 2-core machine.
install_packages "${AGENTS_PACKAGES[@]}"
command -v npm >/dev/null || install_packages "${AGENTS_NPM_PACKAGES[@]}"
LF_TRAY_CACHE=$CACHE TAURI_DRIVER=$(command -v tauri-driver) PY=$E2E_VENV/bin/python E2E_VENV=$E2E_VENV \
  E2E_SUITE=agents.py E2E_BUS_CONFIG=$PWD/tests/e2e/session-bus.conf E2E_OUT=${E2E_OUT:-ci-out}/agents \
  bash tests/e2e/run.sh "${CARGO_TARGET_DIR:-target}/debug/lf-tray"

# ---- Real desktops: GNOME, three more notification servers, a Wayland pass, a real-terminal
# matrix and going back to a session's terminal (tests/e2e/README.md) ----------------------
# Self-contained: its own packages, the (cached) build, then the suites. All always run;
# the block fails after them if any failed.
stage "real desktops: GNOME Shell, Xfce's, LXQt's and notification-daemon's servers, Wayland (sway, waybar, mako, foot), eight real terminals, Go to terminal (X11, KWin and GNOME on Wayland)"
install_packages "${WAYLAND_PACKAGES[@]}" "${TERMINAL_PACKAGES[@]}" "${GNOME_PACKAGES[@]}" "${DESKTOP_PACKAGES[@]}"
# and KDE Plasma (plasma.sh); GNOME's AppIndicator extension is in GNOME_PACKAGES.
install_packages "${PLASMA_PACKAGES[@]}"
# and Go to terminal on KDE's and GNOME's Wayland sessions (focus-wayland.sh).
install_packages "${WAYLAND_FOCUS_PACKAGES[@]}"
cargo build --locked -p lf-tray -p lf-sim --bins
desktops_failed=0
bash tests/e2e/gnome.sh "${CARGO_TARGET_DIR:-target}/debug/lf-tray" || desktops_failed=1
E2E_GNOME_TRAY=appindicator bash tests/e2e/gnome.sh "${CARGO_TARGET_DIR:-target}/debug/lf-tray" || desktops_failed=1
bash tests/e2e/desktops.sh "${CARGO_TARGET_DIR:-target}/debug/lf-tray" || desktops_failed=1
bash tests/e2e/plasma.sh "${CARGO_TARGET_DIR:-target}/debug/lf-tray" || desktops_failed=1
bash tests/e2e/wayland.sh "${CARGO_TARGET_DIR:-target}/debug/lf-tray" || desktops_failed=1
bash tests/e2e/terminals.sh "${CARGO_TARGET_DIR:-target}/debug/lf-tray" || desktops_failed=1
bash tests/e2e/focus.sh "${CARGO_TARGET_DIR:-target}/debug/lf-tray" || desktops_failed=1
bash tests/e2e/focus-wayland.sh kwin "${CARGO_TARGET_DIR:-target}/debug/lf-tray" || desktops_failed=1
bash tests/e2e/focus-wayland.sh gnome "${CARGO_TARGET_DIR:-target}/debug/lf-tray" || desktops_failed=1
[ "$desktops_failed" -eq 0 ]

# ---- Today's desktops: Debian 13 in a chroot (tests/e2e/debian13.sh) ------------------------
# The chroot is cached under $CACHE/debian13 and made when absent or stale: ~6 min cold on a
# loaded 2-core machine (347 s, 8.4 min for the stage), then ~2.6 min for the four suites.
stage "today's desktops: Go to terminal and away on KWin 6.3, Go to terminal on GNOME Shell 48, GNOME 48's and Plasma 6.3's popups with a question and a plan clicked, Plasma 6.3's tray (Debian 13, in a cached chroot)"
bash tests/e2e/debian13.sh "${CARGO_TARGET_DIR:-target}/debug/lf-tray"

# ---- Other machines: a real sshd on loopback, two accounts (tests/remote/run.sh) -----------
stage "other machines: lf-tray watch/list --remote through a real sshd, and the desktop popup → ssh -t"
install_packages "${REMOTE_PACKAGES[@]}"
cargo build --locked -p lf-tray -p lf-sim --bins
bash tests/remote/run.sh "${CARGO_TARGET_DIR:-target}/debug/lf-tray"

# ---- Packages: the .deb and .rpm as a user gets them (tests/package/check.sh) ----------------
# Last: it builds the release and installs into /usr (and removes it again on any exit).
# The installed app talks to lf-sim's stand-in lf from the debug build above.
stage "packages: the .deb built, installed, driven and removed; the .rpm inspected"
install_packages "${PACKAGE_PACKAGES[@]}" "${PACKAGE_TEST_PACKAGES[@]}"
TAURI_DRIVER=$(command -v tauri-driver) PY=$E2E_VENV/bin/python E2E_VENV=$E2E_VENV \
  LF_STAND_IN=$(realpath "${CARGO_TARGET_DIR:-target}/debug/lf") bash tests/package/check.sh
