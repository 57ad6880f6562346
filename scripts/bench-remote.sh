#!/usr/bin/env bash
# Figures for agents on other machines, through a real sshd on 127.0.0.1 (the setup of
# tests/remote/run.sh: two accounts, key authentication, a Host alias):
# - remote ask → local `asked`: an Ask record written on the machine until the person's
#   `lf-tray watch --json --remote` prints it (p50/p99 over BENCH_ASKS asks, default 50);
# - reconnect: sshd killed with its connections, an ask written while it is down (3 s),
#   sshd started again, until that ask is printed (BENCH_OUTAGES times, default 3).
# Needs root, like the tests. Builds the debug binaries first.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
install_packages "${REMOTE_PACKAGES[@]}"
cargo build -q --locked -p lf-tray -p lf-sim --bins
REMOTE_DESKTOP=0 bash tests/remote/run.sh "${CARGO_TARGET_DIR:-target}/debug/lf-tray" --bench
