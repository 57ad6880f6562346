# What the desktop suites' scripts share (run.sh, wayland.sh, terminals.sh), sourced by
# each: the process groups they start and stop, and the fresh homes the app runs in.

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
