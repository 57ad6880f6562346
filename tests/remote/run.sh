#!/usr/bin/env bash
# Agents on other machines, with real parts: a real sshd on 127.0.0.1 (its own config and
# host key, key authentication only), an unprivileged account playing the other machine
# with its own lf home and the stand-in lf, and another playing the person, whose
# ~/.ssh/config names the machine as a Host alias. ssh reads that file from the account's
# passwd home, so both sides are real accounts, not a $HOME override.
#
#   tests/remote/run.sh APP_BINARY [--bench]
#
# Environment (all optional):
#   LF_STAND_IN    the stand-in lf (default: `lf` beside APP_BINARY)
#   REMOTE_OUT     where logs go (default: ci-out/remote under the cwd)
#   REMOTE_KEEP=1  keep the temporary directory (its path is printed)
#   REMOTE_DESKTOP=0  skip the desktop check (popup → xterm running ssh -t)
#   MACHINE_TEST   crates/core/tests/machine.rs built (default: built here with cargo)
#   REMOTE_ONLY=answering  only the answering checks over the stream (answering.py)
#
# Needs root (it starts sshd and makes the accounts). Ends with
# `remote: N passed, M failed` and exits non-zero if any check failed.
# With --bench it prints the latency and reconnect figures instead (scripts/bench-remote.sh).
set -uo pipefail

name=remote
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
give_up() { echo "$name: $*" >&2; echo "$name: 0 passed, 1 failed"; exit 1; }
[ $# -ge 1 ] || { echo "usage: $0 APP_BINARY [--bench]" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || give_up "run it as root: it starts sshd and makes two accounts"
app=$(realpath -e "$1" 2>/dev/null) || give_up "no app binary at $1"
lf=$(realpath -e "${LF_STAND_IN:-$(dirname "$app")/lf}" 2>/dev/null) || give_up "no stand-in lf beside $app"
for tool in sshd ssh ssh-keygen setpriv python3; do
  command -v "$tool" >/dev/null || give_up "missing $tool (scripts/deps.sh: REMOTE_PACKAGES)"
done
out=${REMOTE_OUT:-ci-out/remote}
mkdir -p "$out" && out=$(cd "$out" && pwd)

# The two accounts: the other machine's, and the person's. System accounts with a real
# home each (made anew every run below) and a POSIX shell, which sshd needs to run a
# command; neither has a password, so key authentication is the only way in.
remote_user=lftray-remote
client_user=lftray-client
base=/var/lib/lftray-remote-test
mkdir -p "$base" && chmod 755 "$base"
for user in "$remote_user" "$client_user"; do
  if ! id -u "$user" >/dev/null 2>&1; then
    useradd --system --home-dir "$base/$user" --shell /bin/sh "$user" || give_up "could not create $user"
  fi
  [ "$(getent passwd "$user" | cut -d: -f6)" = "$base/$user" ] || usermod --home "$base/$user" "$user"
  # No password that works (`*`), yet not locked (`!`): sshd without PAM refuses a locked
  # account even for a key.
  usermod --password '*' "$user"
  rm -rf "${base:?}/$user"
  mkdir -p "$base/$user/.ssh" "$base/$user/.local/bin"
done

# Programs both accounts can run, outside root's build tree (which they cannot read).
tmp=$(mktemp -d /tmp/lf-remote.XXXXXX)
chmod 755 "$tmp"
mkdir -p "$tmp/bin" "$tmp/sshd"
cp "$app" "$tmp/bin/lf-tray"
cp "$lf" "$tmp/bin/lf"
# The engine's own test of acting over ssh (crates/core/tests/machine.rs), run below as
# the person: it needs the real machine, so plain `cargo test` lists it as ignored.
machine_test=${MACHINE_TEST:-}
if [ -z "$machine_test" ]; then
  machine_test=$(cd "$here/../.." && cargo test -q --locked -p lf-tray-core --test machine --no-run \
    --message-format=json 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("executable") and m["target"]["name"] == "machine":
        print(m["executable"])') || give_up "could not build crates/core/tests/machine.rs"
fi
cp "$machine_test" "$tmp/bin/machine-test" || give_up "no machine test binary at $machine_test"
chmod 755 "$tmp/bin" "$tmp/bin/"*
# The other machine finds both where people install them: ~/.local/bin (not on the PATH
# of a non-interactive ssh command, which is what the tray's probe is for). The client
# has its own lf there too, for its local sessions.
ln -s "$tmp/bin/lf-tray" "$base/$remote_user/.local/bin/lf-tray"
ln -s "$tmp/bin/lf" "$base/$remote_user/.local/bin/lf"
ln -s "$tmp/bin/lf" "$base/$client_user/.local/bin/lf"
mkdir -p "$base/$remote_user/sim" "$base/$remote_user/.lf" "$base/$client_user/.lf"

# The person's key, and the machine's authorized_keys holding it.
ssh-keygen -q -t ed25519 -N '' -C "$client_user" -f "$base/$client_user/.ssh/id_ed25519" || give_up "ssh-keygen failed"
cp "$base/$client_user/.ssh/id_ed25519.pub" "$base/$remote_user/.ssh/authorized_keys"

# sshd: a private host key and config, on a free loopback port.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
ssh-keygen -q -t ed25519 -N '' -f "$tmp/sshd/host_key" || give_up "ssh-keygen failed"
cat >"$tmp/sshd/sshd_config" <<EOF
ListenAddress 127.0.0.1
Port $port
HostKey $tmp/sshd/host_key
PidFile $tmp/sshd/sshd.pid
AllowUsers $remote_user
AuthenticationMethods publickey
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin no
UsePAM no
StrictModes yes
PrintMotd no
# What the stand-in lf records (each call, with its tty) goes where the test reads it.
SetEnv LF_SIM_DIR=$base/$remote_user/sim
EOF
mkdir -p /run/sshd && chmod 755 /run/sshd

# The person's ssh config: the machine is a Host alias, its host key pinned in their
# known_hosts, strict checking on (the tray must work with it, never around it); and a
# machine that is off (nothing listens on its port).
host() {
  cat <<EOF
Host $1
  HostName 127.0.0.1
  Port $2
  User $remote_user
  IdentityFile ~/.ssh/id_ed25519
  IdentitiesOnly yes
  StrictHostKeyChecking yes
  UserKnownHostsFile ~/.ssh/known_hosts
EOF
}
closed=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
{ host lfremote "$port"; host lfdown "$closed"; } >"$base/$client_user/.ssh/config"
echo "[127.0.0.1]:$port $(cut -d' ' -f1,2 "$tmp/sshd/host_key.pub")" >"$base/$client_user/.ssh/known_hosts"

for user in "$remote_user" "$client_user"; do
  chown -R "$user:" "$base/$user"
  chmod 700 "$base/$user" "$base/$user/.ssh"
  chmod 600 "$base/$user/.ssh/"*
done
chmod 644 "$base/$remote_user/.ssh/authorized_keys"

cleanup() {
  if [ -f "$tmp/sshd/sshd.pid" ]; then kill "$(cat "$tmp/sshd/sshd.pid")" 2>/dev/null; fi
  if [ "${REMOTE_KEEP:-0}" = 1 ]; then echo "$name: kept $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

REMOTE_TMP=$tmp REMOTE_BASE=$base REMOTE_PORT=$port REMOTE_USER=$remote_user CLIENT_USER=$client_user \
  REMOTE_OUT=$out REMOTE_RESULT=$tmp/result python3 "$here/remote.py" "${@:2}"
rc=$?
# Both accounts are the run's alone: whatever runs as either now (a tray, its ssh, the
# watcher sshd runs for it on the other machine) was left behind.
. "$here/../e2e/lib.sh"
audit_into "$tmp/result" "user:$client_user" "user:$remote_user"
if ! read -r passed failed <"$tmp/result" 2>/dev/null; then
  echo "$name: remote.py ended without results (exit $rc)" >&2
  echo "$name: 0 passed, 1 failed"
  exit 1
fi
echo "$name: $passed passed, $failed failed"
[ "$rc" -eq 0 ] && [ "$failed" -eq 0 ]
