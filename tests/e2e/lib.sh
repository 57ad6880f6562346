# What the desktop suites' scripts share (run.sh, wayland.sh, terminals.sh, gnome.sh and
# tests/remote/run.sh), sourced by each: the process groups they start and stop, the fresh
# homes the app runs in, and the audit of what the app left running.

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
