#!/usr/bin/env bash
# Build Loopflow Tray and start it: on your real Loopflow home when `lf` is installed,
# otherwise on the self-contained demo (today's lf: agents ask permission and a question,
# answered from the popup or the window).
#
#   scripts/demo.sh [ARGS…]          ARGS go to lf-tray, or to `lf-tray demo` when no lf is found
#   scripts/demo.sh demo [ARGS…]     the demo even where lf is installed (--generation e|d|a)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
install_packages "${BUILD_PACKAGES[@]}"
cargo build --release --locked -p lf-tray --features demo
bin=${CARGO_TARGET_DIR:-target}/release/lf-tray
if [ "${1:-}" = demo ]; then
  shift
  exec "$bin" demo "$@"
fi
if [ -n "${LF_BIN:-}" ] || command -v lf >/dev/null || [ -x "$HOME/.local/bin/lf" ]; then
  exec "$bin" "$@"
fi
echo "No lf found: starting the demo (lf-tray demo${*:+ $*})." >&2
exec "$bin" demo "$@"
