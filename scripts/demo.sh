#!/usr/bin/env bash
# Build Loopflow Tray and start it: on your real Loopflow home when `lf` is installed,
# otherwise on the self-contained demo (a simulated agent that asks, gets ready, resolves).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
install_packages "${BUILD_PACKAGES[@]}"
cargo build --release --locked -p lf-tray --features demo
bin=${CARGO_TARGET_DIR:-target}/release/lf-tray
if [ -n "${LF_BIN:-}" ] || command -v lf >/dev/null || [ -x "$HOME/.local/bin/lf" ]; then
  exec "$bin" "$@"
fi
echo "No lf found: starting the demo (lf-tray demo)." >&2
exec "$bin" demo
