#!/usr/bin/env bash
# Installs the real agent clients the agents suite drives, pinned, into a cache outside the
# clone (reused when present), and checks that each native binary runs. Prints nothing on a
# warm cache but the two binaries' paths as shell assignments (eval-able):
#   CLAUDE_BIN=…  CODEX_BIN=…
set -euo pipefail

# The versions, in one place. To move one: change it here, run this script (it installs beside
# the old one), run the agents suite (tests/e2e/agents.py), which asserts what the model gets
# per answer as the pinned versions were measured to do; the old cache directory can then go.
CLAUDE_PKG=@anthropic-ai/claude-code@2.1.328
CODEX_PKG=@openai/codex@0.169.0

CACHE=${LF_TRAY_CACHE:-$HOME/.cache/lf-tray}/agents

install_pkg() { # <pkg@version>
  local dir=$CACHE/$1
  if [ ! -f "$dir/.installed" ]; then
    rm -rf "$dir.partial"
    mkdir -p "$dir.partial"
    # --ignore-scripts is not used: claude-code's postinstall only links its native binary,
    # which the package also ships under bin/; the optional per-platform packages carry the rest.
    echo "Installing $1 into $dir" >&2
    npm install --prefix "$dir.partial" --no-audit --no-fund --loglevel=error "$1" >&2
    touch "$dir.partial/.installed"
    rm -rf "$dir"
    mv "$dir.partial" "$dir"
  fi
  echo "$dir"
}

claude_dir=$(install_pkg "$CLAUDE_PKG")
codex_dir=$(install_pkg "$CODEX_PKG")

claude_bin=$claude_dir/node_modules/@anthropic-ai/claude-code/bin/claude.exe
codex_bin=$(find "$codex_dir/node_modules/@openai" -path '*/vendor/*/bin/codex' -type f 2>/dev/null | head -n1)
[ -x "$claude_bin" ] || { echo "no native claude binary at $claude_bin" >&2; exit 1; }
[ -n "$codex_bin" ] && [ -x "$codex_bin" ] || { echo "no native codex binary under $codex_dir" >&2; exit 1; }

# The native binaries must run here (a musl/glibc or CPU mismatch shows now, not mid-suite).
want_claude=${CLAUDE_PKG##*@}
want_codex=${CODEX_PKG##*@}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
got=$(HOME=$scratch DISABLE_AUTOUPDATER=1 "$claude_bin" --version 2>&1) ||
  { echo "claude --version failed: $got" >&2; exit 1; }
case $got in *"$want_claude"*) ;; *) echo "claude says '$got', expected $want_claude" >&2; exit 1 ;; esac
got=$(CODEX_HOME=$scratch "$codex_bin" --version 2>&1) ||
  { echo "codex --version failed: $got" >&2; exit 1; }
case $got in *"$want_codex"*) ;; *) echo "codex says '$got', expected $want_codex" >&2; exit 1 ;; esac

printf 'CLAUDE_BIN=%q\nCODEX_BIN=%q\n' "$claude_bin" "$codex_bin"
