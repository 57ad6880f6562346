# What the desktop suites' scripts share (run.sh, wayland.sh, terminals.sh, focus.sh,
# gnome.sh, plasma.sh, desktops.sh and tests/remote/run.sh), sourced by each: running
# inside a display and bus of their own, the process groups they start and stop, the fresh
# homes the app runs in, the stand-in lf, the notification capture, and the audit of what
# the app left running.

# Where this file and the suites' shared parts (dunstrc, sni_watcher.py) are.
e2e_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# Every part is started with setsid, so its pid is its process group's id and stopping
# the group ends whatever it spawned.
pids=()
started() { pids+=("$1"); }

# Stop what was started, newest first (the app before the parts it talks to); a group
# still there 2 s after TERM is killed.
stop_started() {
  local i pid
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill -TERM -- "-${pids[i]}" 2>/dev/null
  done
  for pid in "${pids[@]}"; do
    for _ in $(seq 20); do kill -0 -- "-$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
}

# HOME and every XDG directory made anew under $1, so nothing of the caller's desktop (its
# settings, the app's log and memory) is read or written.
private_homes() {
  export HOME=$1/home XDG_RUNTIME_DIR=$1/runtime XDG_CONFIG_HOME=$1/config \
    XDG_DATA_HOME=$1/data XDG_CACHE_HOME=$1/cache XDG_STATE_HOME=$1/state
  mkdir -p "$HOME" "$XDG_CONFIG_HOME" "$XDG_DATA_HOME" "$XDG_CACHE_HOME" "$XDG_STATE_HOME"
  mkdir -m 700 "$XDG_RUNTIME_DIR"
}

# The process audit, at the end of a suite: nothing the app started outlives the run (its
# stand-in lf, lf's readers, ssh, on_event programs). A process counts when it matches
# one of the arguments before `--`:
#   env:NAME=VALUE  it carries this variable, which every app of the run inherits and
#                   passes on (a marker exported for the suite alone)
#   user:NAME       it runs as this account (one that only the run uses)
# and is none of this script's own ancestors nor named by a comm after `--` (the
# suite's own servers that inherit the marker, such as tauri-driver). What matches gets
# 2 s to go: the kernel ends a gone app's children at once (PR_SET_PDEATHSIG), and a
# machine loaded by a build schedules them within that. Prints what is left, one
# "pid: command line" a line, and returns 1 if anything is.
leftovers() {
  python3 - "$@" <<'PY'
import os, sys, time

args = sys.argv[1:]
cut = args.index("--") if "--" in args else len(args)
matches, servers = args[:cut], set(args[cut + 1:])
envs = {m[4:].encode() for m in matches if m.startswith("env:")}
uids = set()
for m in matches:
    if m.startswith("user:"):
        import pwd
        try:
            uids.add(pwd.getpwnam(m[5:]).pw_uid)
        except KeyError:
            pass

def stat(pid):
    try:
        text = open(f"/proc/{pid}/stat").read()
    except OSError:
        return None
    return text[text.index("(") + 1:text.rindex(")")], text[text.rindex(")") + 2:].split()

mine, pid = set(), os.getpid()
while pid > 1 and pid not in mine:
    mine.add(pid)
    info = stat(pid)
    pid = int(info[1][1]) if info else 0

def left():
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in mine:
            continue
        info = stat(entry)
        if not info or info[1][0] == "Z" or info[0] in servers:
            continue
        try:
            uid = os.stat(f"/proc/{entry}").st_uid
            hit = uid in uids
            if not hit and envs:
                hit = bool(envs & set(open(f"/proc/{entry}/environ", "rb").read().split(b"\0")))
            argv = open(f"/proc/{entry}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if hit:
            found.append(f"{entry}: {argv.strip() or '[' + info[0] + ']'}")
    return found

deadline = time.monotonic() + 2.0
while (found := left()) and time.monotonic() < deadline:
    time.sleep(0.05)
print("\n".join(found))
sys.exit(1 if found else 0)
PY
}

# The audit as one more check of a suite whose checks counted into RESULT ("passed
# failed [skipped]", as harness.run_checks writes it): an `ok`/`FAIL` line like theirs,
# and the count moved. The arguments after RESULT are leftovers' own.
audit_into() {
  local result=$1 passed failed skipped left
  shift
  read -r passed failed skipped <"$result" 2>/dev/null || return 0
  if left=$(leftovers "$@"); then
    echo "ok   nothing_the_app_started_outlives_the_suite"
    passed=$((passed + 1))
  else
    echo "FAIL nothing_the_app_started_outlives_the_suite: still running 2 s after the suite ended:"
    sed 's/^/  /' <<<"$left"
    failed=$((failed + 1))
  fi
  echo "$passed $failed${skipped:+ $skipped}" >"$result"
}

# The line a suite that ran inside its own Xvfb and bus ends with: the counts its inside
# wrote to $E2E_OUT/result, or one failure and the bus log's last lines when the inside
# never got that far. Fails when the run failed.
inner_result() {
  local name=$1 rc=$2 passed failed
  if ! read -r passed failed _ <"$E2E_OUT/result" 2>/dev/null; then
    echo "$name: the run ended without results (exit $rc):" >&2
    tail -n 20 "$E2E_OUT/session-bus.log" >&2
    echo "$name: 0 passed, 1 failed"
    return 1
  fi
  rm -f "$E2E_OUT/result"
  echo "$name: $passed passed, $failed failed"
  [ "$rc" -eq 0 ] && [ "$failed" -eq 0 ]
}

# The outer half of a suite that runs inside a display and session bus of its own: this
# script again, under Xvfb and dbus-run-session (the arguments are dbus-run-session's
# options), its inside taking the caller's stdout and stderr back from fds 3 and 4. The
# bus daemon and what it activates chatter on theirs, into $E2E_OUT/session-bus.log.
# Returns the inside's exit status.
run_inside() {
  local app=$1 rc
  shift
  exec 3>&1 4>&2
  xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session "$@" -- "$BASH" "$0" "$app" \
    >"$E2E_OUT/session-bus.log" 2>&1
  rc=$?
  exec 3>&- 4>&-
  return "$rc"
}

# A setup step of an inside failed: one failed check, and the suite ends ($out/result is
# what inner_result reads).
fail_setup() {
  echo "FAIL setup: $*"
  echo "0 1 0" >"$out/result"
  exit 1
}

# lf's side: the stand-in lf (lf-sim's, built beside APP, or $LF_STAND_IN) as $LF_BIN in
# DIR/bin, where it keeps its record of calls ($LF_SIM_DIR), and none of the caller's lf
# context: a suite sets the home and any Run context it wants after this.
stand_in_lf() {
  local dir=$1 app=$2
  export LF_SIM_DIR=$dir/lf-sim
  mkdir -p "$LF_SIM_DIR" "$dir/bin"
  ln -s "${LF_STAND_IN:-$(dirname "$app")/lf}" "$dir/bin/lf"
  export LF_BIN=$dir/bin/lf
  unset LF_HOME LF_CONTROL_HOME LF_DB_PATH LF_CONTROL_DB_PATH LF_TERMINAL_ID LF_TERMINAL_TTY \
    LF_RUN_ID LF_RUN_DIR LF_PARENT_RUN_ID LF_HUMAN_SESSION
}

# The notification traffic from before the app starts, in DIR/notifications.log for
# people and in $E2E_NOTIFY_PCAP for the checks (dbus-monitor's text escapes neither
# quotes nor newlines). Both take the server's method returns, which carry the popups'
# ids, and AddMatch calls, which show when the app listens for a popup's actions. Ready
# once a probe's own AddMatch stands in both, which needs no notification server yet
# (GNOME's and Plasma's come with their shells); fails if the monitors never get there.
capture_notifications() {
  local dir=$1 probe=LfE2eCaptureReady
  local rules=("interface='org.freedesktop.Notifications'"
    "type='method_return',sender='org.freedesktop.Notifications'"
    "type='method_call',interface='org.freedesktop.DBus',member='AddMatch'")
  setsid dbus-monitor --session "${rules[@]}" >"$dir/notifications.log" 2>&1 &
  started $!
  setsid dbus-monitor --session --pcap "${rules[@]}" >"$E2E_NOTIFY_PCAP" 2>"$dir/dbus-monitor-pcap.err" &
  started $!
  # 5 s: both monitors are up within a second on a loaded 2-core machine.
  for _ in $(seq 50); do
    gdbus call --session -d org.freedesktop.DBus -o /org/freedesktop/DBus \
      -m org.freedesktop.DBus.AddMatch "type='signal',member='$probe'" >/dev/null 2>&1
    grep -qa "$probe" "$dir/notifications.log" && grep -qa "$probe" "$E2E_NOTIFY_PCAP" && return 0
    sleep 0.1
  done
  return 1
}

# The suite's driver (the command given), with every process it starts marked for the
# audit (the servers started before carry no mark), its output in $out/e2e.log, then the
# audit as one more check. Returns the driver's exit status.
run_driver() {
  local rc
  export LF_E2E_AUDIT=$tmp
  "$@" 2>&1 | tee "$out/e2e.log"
  rc=${PIPESTATUS[0]}
  # No longer passed on: what runs from here (the audit, tee) is not the app's.
  export -n LF_E2E_AUDIT
  audit_into "$out/result" "env:LF_E2E_AUDIT=$tmp" | tee -a "$out/e2e.log"
  return "$rc"
}

# The notification server and tray of the plain-X suites: dunst with the tests' dunstrc
# and the test StatusNotifierWatcher (run by python PY), logs in DIR. Returns once both
# own their names on the bus; a setup failure (the suite's fail_setup) if either does
# not within 10 s (a loaded machine starts them in one or two).
dunst_and_tray() {
  local dir=$1 py=$2
  setsid dunst -config "$e2e_dir/dunstrc" >"$dir/dunst.log" 2>&1 &
  started $!
  setsid "$py" "$e2e_dir/sni_watcher.py" >"$dir/sni_watcher.log" 2>&1 &
  started $!
  gdbus wait --session --timeout 10 org.freedesktop.Notifications ||
    fail_setup "dunst did not take org.freedesktop.Notifications (see $dir/dunst.log)"
  gdbus wait --session --timeout 10 org.kde.StatusNotifierWatcher ||
    fail_setup "sni_watcher.py did not start (see $dir/sni_watcher.log)"
}

# The outer half's first step: each command named is on PATH, or the suite ends as one
# failed setup (the script's give_up) naming the one missing.
need() {
  local tool
  for tool; do
    command -v "$tool" >/dev/null || give_up "missing $tool (see the head of $0)"
  done
}

# However the inside ends: the app's log (where it keeps it, $XDG_STATE_HOME/lf-tray/)
# goes beside the other outputs in $out, a tmux server at $TMUX_TMPDIR ends, every part
# started stops, and the directories named here go (E2E_KEEP=1 keeps them, and says so).
end_inside_with() {
  inside_leaves=("$@")
  trap end_inside EXIT
  trap 'exit 130' INT TERM
}
end_inside() {
  local dir
  [ -n "${TMUX_TMPDIR:-}" ] && tmux kill-server 2>/dev/null
  cp "${XDG_STATE_HOME:-/nonexistent}/lf-tray/lf-tray.log" "$out/lf-tray.log" 2>/dev/null
  stop_started
  for dir in "${inside_leaves[@]}"; do
    if [ -n "${E2E_KEEP:-}" ]; then echo "$name: kept $dir" >&2; else rm -rf "$dir"; fi
  done
}
