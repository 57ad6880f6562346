"""Agents on other machines, through a real sshd (set up by tests/remote/run.sh).

The person (an account with the machine as a Host alias in its ~/.ssh/config) runs
`lf-tray watch --json --remote lfremote`; the machine (another account, reached through
sshd on 127.0.0.1) has the stand-in lf and, in the first part, lf-tray. The test plays the
agents on both sides by writing Ask records as lf does, and checks what the person's
lf-tray prints: what a script or the tray app would see.
"""

import json
import os
import pwd
import queue
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

TMP = Path(os.environ["REMOTE_TMP"])
BASE = Path(os.environ["REMOTE_BASE"])
PORT = int(os.environ["REMOTE_PORT"])
OUT = Path(os.environ["REMOTE_OUT"])
REMOTE = pwd.getpwnam(os.environ["REMOTE_USER"])
CLIENT = pwd.getpwnam(os.environ["CLIENT_USER"])
MACHINE = "lfremote"
BENCH = "--bench" in sys.argv[1:]

passed = failed = 0


def check(what, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {what}", flush=True)
    else:
        failed += 1
        print(f"FAIL {what}{': ' + str(detail) if detail else ''}", flush=True)
    return ok


# --- the agents' side: Ask records as lf writes them (loopflow-model §2.2) -------------

def write_ask(user, ask_id, *, title, cwd, prompt=None, ready_summary=None):
    """A generation-A Ask record in `user`'s ~/.lf, owned by them (their lf reads it)."""
    directory = Path(user.pw_dir) / ".lf" / "human-sessions"
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chown(directory, user.pw_uid, user.pw_gid)
    parent = "run_" + uuid.uuid4().hex
    record = {
        "id": ask_id, "parent_run_id": parent,
        "parent_run_dir": str(Path(user.pw_dir) / ".lf" / "runs" / parent[4:6] / parent),
        "work": None, "work_selector": None, "title": title, "detail": "Human ask",
        "prompt": prompt or title, "cwd": str(cwd), "model": "claude:opus",
        "session_run_id": None, "ready_summary": ready_summary, "status": "waiting",
    }
    tmp = directory / f".{uuid.uuid4().hex}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, json.dumps(record, indent=2).encode())
        os.fchown(fd, user.pw_uid, user.pw_gid)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(tmp, directory / f"{ask_id}.json")
    return record


def remove_ask(user, ask_id):
    (Path(user.pw_dir) / ".lf" / "human-sessions" / f"{ask_id}.json").unlink(missing_ok=True)


def mark_ready(user, ask_id, summary):
    path = Path(user.pw_dir) / ".lf" / "human-sessions" / f"{ask_id}.json"
    record = json.loads(path.read_text())
    write_ask(user, ask_id, title=record["title"], cwd=record["cwd"],
              prompt=record["prompt"], ready_summary=summary)


# --- sshd, started and killed by its pid and its descendants' --------------------------

class Sshd:
    def __init__(self):
        self.proc = None
        self.log = open(OUT / "sshd.log", "ab")

    def start(self):
        self.proc = subprocess.Popen(
            ["/usr/sbin/sshd", "-D", "-e", "-f", str(TMP / "sshd" / "sshd_config")],
            stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", PORT), timeout=0.5).close()
                return time.monotonic()
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("sshd did not listen")

    def kill(self):
        """sshd and every process it started (each connection's sshd, and what runs in
        it), like a machine that went away."""
        doomed = descendants(self.proc.pid) + [self.proc.pid]
        for pid in doomed:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()
        (TMP / "sshd" / "sshd.pid").unlink(missing_ok=True)


def descendants(root):
    children = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


# --- the person's side -----------------------------------------------------------------

def client_env():
    return {
        "HOME": CLIENT.pw_dir, "USER": CLIENT.pw_name, "LOGNAME": CLIENT.pw_name,
        "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
    }


def as_client(argv):
    return ["setpriv", f"--reuid={CLIENT.pw_uid}", f"--regid={CLIENT.pw_gid}",
            "--init-groups", "env", "-i", *[f"{k}={v}" for k, v in client_env().items()],
            *argv]


class Watch:
    """`lf-tray watch --json --remote lfremote` as the person, its lines as they come."""

    def __init__(self, *extra):
        argv = as_client([str(TMP / "bin" / "lf-tray"), "watch", "--json",
                          "--remote", MACHINE, *extra])
        self.stderr = open(OUT / "watch.stderr", "ab")
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.stderr,
                                     stdin=subprocess.DEVNULL)
        self.lines = queue.Queue()
        self.events = []
        self.log = open(OUT / "watch.jsonl", "a")
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put((time.monotonic(), json.loads(line)))

    def _pump(self, timeout):
        try:
            at, event = self.lines.get(timeout=timeout)
        except queue.Empty:
            return False
        self.events.append((at, event))
        self.log.write(json.dumps(event) + "\n")
        self.log.flush()
        return True

    def wait(self, matches, timeout, start=0):
        """The first event from index `start` that `matches`, with its arrival time."""
        deadline = time.monotonic() + timeout
        i = start
        while True:
            while i < len(self.events):
                at, event = self.events[i]
                i += 1
                if matches(event):
                    return at, event
            left = deadline - time.monotonic()
            if left <= 0:
                return None, None
            self._pump(min(left, 0.2))

    def settle(self, seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self._pump(min(0.2, deadline - time.monotonic()))

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def is_(kind, ask_id, machine=MACHINE):
    def matches(event):
        s = event.get("session") or {}
        return event.get("type") == kind and s.get("id") == ask_id and s.get("machine") == machine
    return matches


def snapshot_with(*keys):
    def matches(event):
        if event.get("type") != "snapshot":
            return False
        have = {(s.get("machine"), s["id"]) for s in event["sessions"]}
        return all(k in have for k in keys)
    return matches


def warning_naming(machine):
    return lambda e: e.get("type") == "warning" and e.get("message", "").startswith(f"{machine}:")


def remote_pids(word):
    """The machine account's processes whose command line has `word` (the account is the
    test's own)."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and entry.stat().st_uid == REMOTE.pw_uid:
                if word.encode() in (entry / "cmdline").read_bytes():
                    pids.append(int(entry.name))
        except OSError:
            pass
    return pids


def count(events, matches):
    return sum(1 for _, e in events if matches(e))


# --- the checks --------------------------------------------------------------------------

HOSTILE_ID = "-ask_'q';$(touch lf-remote-pwned)"
HOSTILE_TITLE = "Ship it?\n$(touch /tmp/lf-remote-pwned); `id` <b>&amp;</b> 'q'"
HOSTILE_CWD = BASE / REMOTE.pw_name / "src" / "it's; $(touch pwned) -dir"


def pwned():
    """Whether any hostile text ran: each would have touched a file where it ran."""
    places = [Path("/tmp"), HOSTILE_CWD, HOSTILE_CWD.parent, Path(REMOTE.pw_dir), Path(CLIENT.pw_dir)]
    return any((p / n).exists() for p in places for n in ("lf-remote-pwned", "pwned"))


def live_and_faults(sshd):
    local = BASE / CLIENT.pw_name / "src"
    local.mkdir(parents=True, exist_ok=True)
    HOSTILE_CWD.mkdir(parents=True, exist_ok=True)
    shutil.chown(HOSTILE_CWD, REMOTE.pw_uid, REMOTE.pw_gid)
    write_ask(CLIENT, "ask_local1", title="Local question", cwd=local)
    write_ask(REMOTE, "ask_r1", title="Remote question", cwd=HOSTILE_CWD)
    write_ask(REMOTE, HOSTILE_ID, title=HOSTILE_TITLE, cwd=HOSTILE_CWD)

    # A second machine that is off from the start.
    watch = Watch("--remote", "lfdown")
    at, snap = watch.wait(snapshot_with((None, "ask_local1"), (MACHINE, "ask_r1")), 20)
    check("remote and local sessions are merged into one snapshot", snap is not None,
          watch.events[-3:])
    if snap:
        remote = [s for s in snap["sessions"] if s.get("machine") == MACHINE]
        local_ones = [s for s in snap["sessions"] if "machine" not in s]
        check("remote sessions are tagged with the machine, local ones are not",
              {s["id"] for s in remote} == {"ask_r1", HOSTILE_ID}
              and [s["id"] for s in local_ones] == ["ask_local1"], snap["sessions"])
        hostile = next((s for s in remote if s["id"] == HOSTILE_ID), None)
        check("a hostile remote id, title and cwd arrive as text",
              hostile is not None and hostile["title"] == HOSTILE_TITLE
              and hostile["cwd"] == str(HOSTILE_CWD) and hostile["needs_you"] is True, hostile)
    check("nothing the remote sent ran as a command", not pwned())
    watch.settle(2)
    down = [e for _, e in watch.events if warning_naming("lfdown")(e)]
    check("a machine unreachable at start gives one warning naming it; the others work",
          len(down) == 1 and "refused" in down[0]["message"].lower() and snap is not None, down)

    # Live: ask, ready, resolve on the remote.
    mark = len(watch.events)
    written = time.monotonic()
    write_ask(REMOTE, "ask_r2", title="Second remote question", cwd=HOSTILE_CWD)
    at, asked = watch.wait(is_("asked", "ask_r2"), 10, mark)
    check("a remote ask arrives live as `asked`, tagged", asked is not None)
    if asked:
        print(f"     remote ask → local asked: {(at - written) * 1000:.0f} ms")
    mark_ready(REMOTE, "ask_r2", "Done, see the diff")
    _, ready = watch.wait(is_("ready", "ask_r2"), 10, mark)
    check("a remote ready arrives as `ready`",
          ready is not None and ready["session"]["ready_summary"] == "Done, see the diff", ready)
    remove_ask(REMOTE, "ask_r2")
    _, resolved = watch.wait(is_("resolved", "ask_r2"), 10, mark)
    check("a remote resolve arrives as `resolved`", resolved is not None)

    # The machine goes away: sshd and every connection it had.
    mark = len(watch.events)
    sshd.kill()
    _, warned = watch.wait(warning_naming(MACHINE), 40, mark)
    check("the link dropping gives a warning naming the machine", warned is not None,
          watch.events[mark:])
    write_ask(CLIENT, "ask_local2", title="Local while remote is down", cwd=local)
    _, local_asked = watch.wait(is_("asked", "ask_local2", None), 10, mark)
    check("local sessions keep flowing while the machine is down", local_asked is not None)
    # Meanwhile on the machine: one new ask, one answered.
    write_ask(REMOTE, "ask_r3", title="Asked while the link was down", cwd=HOSTILE_CWD)
    remove_ask(REMOTE, "ask_r1")
    watch.settle(4)
    check("one warning per outage, not one per retry",
          count(watch.events[mark:], warning_naming(MACHINE)) == 1,
          [e for _, e in watch.events[mark:] if e.get("type") == "warning"])

    mark = len(watch.events)
    back = sshd.start()
    at, asked = watch.wait(is_("asked", "ask_r3"), 40, mark)
    check("after the link returns, what was asked meanwhile arrives as `asked`", asked is not None,
          watch.events[mark:])
    if asked:
        print(f"     link back → asked: {(at - back):.1f} s")
    _, gone = watch.wait(is_("resolved", "ask_r1"), 5, mark)
    check("and what ended meanwhile as `resolved`", gone is not None)
    watch.settle(3)
    after = watch.events[mark:]
    check("each exactly once, nothing already shown again",
          count(after, is_("asked", "ask_r3")) == 1 and count(after, is_("resolved", "ask_r1")) == 1
          and count(after, is_("asked", HOSTILE_ID)) == 0
          and not any(e.get("type") == "snapshot" for _, e in after),
          [e.get("type") + ":" + (e.get("session") or {}).get("id", "") for _, e in after])

    # The remote lf-tray exits, and what answers in its place prints garbage: handled like
    # a failing lf: one warning, the last good view kept (nothing resolved), retried.
    tray = Path(REMOTE.pw_dir) / ".local" / "bin" / "lf-tray"
    tray.unlink()
    tray.write_text("#!/bin/sh\necho 'Welcome to lfremote! <garbage>'\nsleep 1\n")
    os.chmod(tray, 0o755)
    shutil.chown(tray, REMOTE.pw_uid, REMOTE.pw_gid)
    mark = len(watch.events)
    for pid in remote_pids("watch"):
        os.kill(pid, signal.SIGKILL)
    _, warned = watch.wait(warning_naming(MACHINE), 15, mark)
    check("a remote lf-tray that exits gives one warning naming the machine", warned is not None,
          watch.events[mark:])
    watch.settle(4)
    after = watch.events[mark:]
    check("garbage in its place is retried quietly, the last good view kept (nothing resolved)",
          count(after, warning_naming(MACHINE)) == 1
          and not any(e.get("type") in ("resolved", "snapshot") for _, e in after),
          [e.get("type") + ":" + e.get("message", "") for _, e in after])
    tray.unlink()
    tray.symlink_to(TMP / "bin" / "lf-tray")
    mark = len(watch.events)
    write_ask(REMOTE, "ask_r4", title="After the garbage", cwd=HOSTILE_CWD)
    _, asked = watch.wait(is_("asked", "ask_r4"), 40, mark)
    watch.settle(2)
    after = watch.events[mark:]
    check("with lf-tray back, only what is new is told",
          asked is not None and [e.get("type") for _, e in after if e.get("type") != "warning"] == ["asked"],
          [e.get("type") + ":" + (e.get("session") or {}).get("id", "") for _, e in after])
    remove_ask(REMOTE, "ask_r4")

    # A link that goes silent without closing (a laptop that changed networks): every
    # process of the connection is stopped, so no FIN and no answer to keep-alives.
    # ssh's ServerAliveInterval=10 × ServerAliveCountMax=2 gives up after about 30 s.
    mark = len(watch.events)
    frozen = descendants(sshd.proc.pid)
    for pid in frozen:
        os.kill(pid, signal.SIGSTOP)
    stopped = time.monotonic()
    at, warned = watch.wait(warning_naming(MACHINE), 60, mark)
    check("a link gone silent is noticed within ~30 s (ssh keep-alives)",
          warned is not None and 15 <= at - stopped <= 45,
          f"after {at - stopped:.1f} s" if at else "no warning in 60 s")
    if at:
        print(f"     silent link → warning: {at - stopped:.1f} s")
    for pid in frozen:
        try:
            os.kill(pid, signal.SIGKILL)
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
    mark = len(watch.events)
    write_ask(REMOTE, "ask_r5", title="After the silence", cwd=HOSTILE_CWD)
    _, asked = watch.wait(is_("asked", "ask_r5"), 40, mark)
    check("and the machine is followed again after it", asked is not None)
    remove_ask(REMOTE, "ask_r5")
    watch.stop()
    remove_ask(REMOTE, "ask_r3")
    remove_ask(CLIENT, "ask_local1")
    remove_ask(CLIENT, "ask_local2")


def remote_watchers():
    """The machine account's running `lf-tray watch` processes."""
    pids = []
    for pid in remote_pids("watch"):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and argv[0].endswith(b"lf-tray") and argv[1:2] == [b"watch"]:
            pids.append(pid)
    return pids


def client_ssh():
    """The person's running ssh processes."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and entry.stat().st_uid == CLIENT.pw_uid:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z" and argv[0].endswith(b"ssh"):
                    pids.append(int(entry.name))
        except OSError:
            pass
    return pids


def until(found, timeout):
    """`found()` once it is true, polled until `timeout` s; the time it took, or None."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if found():
            return time.monotonic() - start
        time.sleep(0.02)
    return None


def leave_nothing():
    """No connection outlives what it served: the machine's `lf-tray watch` ends when its
    ssh is killed, and a tray restarted again and again keeps one watcher there."""
    watch = Watch()
    _, snap = watch.wait(snapshot_with(), 20)
    first = until(lambda: len(remote_watchers()) == 1 and client_ssh(), 20)
    check("the tray follows the machine through one ssh and one lf-tray watch there",
          snap is not None and first is not None, (remote_watchers(), client_ssh()))
    watchers, ssh = remote_watchers(), client_ssh()
    for pid in ssh:
        os.kill(pid, signal.SIGKILL)
    # The tray reconnects a second later: only the watchers of the killed ssh count.
    gone = until(lambda: not set(watchers) & set(remote_watchers()), 5)
    check("the client's ssh killed: the machine's lf-tray watch is gone within 5 s",
          watchers and gone is not None, f"{watchers} still in {remote_watchers()}")
    if gone is not None:
        print(f"     ssh killed → remote lf-tray watch gone: {gone * 1000:.0f} ms")
    back = until(lambda: len(remote_watchers()) == 1, 20)
    check("and the tray connects again, one watcher there", back is not None, remote_watchers())
    watch.stop()

    most, leftover, ends = 0, [], []
    for round in range(10):
        watch = Watch()
        until(lambda: remote_watchers() and client_ssh(), 20)
        most = max(most, len(remote_watchers()), len(client_ssh()))
        watchers = remote_watchers()
        # Quit as a session manager does it, or a crash.
        watch.proc.send_signal(signal.SIGTERM if round % 2 else signal.SIGKILL)
        watch.proc.wait()
        took = until(lambda: not client_ssh() and not set(watchers) & set(remote_watchers()), 5)
        if took is None:
            leftover.append((round, client_ssh(), remote_watchers()))
        else:
            ends.append(took)
    check("the tray restarted 10 times: never more than one ssh here and one lf-tray watch "
          "there", most == 1, f"at most {most}")
    check("each time, its ssh and the machine's watcher end with it (≤ 5 s)", not leftover,
          leftover)
    if ends:
        print(f"     tray ended → its ssh and the remote watcher gone: max {max(ends) * 1000:.0f} ms")


def list_mode():
    """The machine has lf but no lf-tray: its lf's list, over ssh."""
    (Path(REMOTE.pw_dir) / ".local" / "bin" / "lf-tray").unlink()
    write_ask(REMOTE, "ask_l1", title="Listed remotely", cwd=HOSTILE_CWD)
    listed = subprocess.run(
        as_client([str(TMP / "bin" / "lf-tray"), "list", "--json", "--remote", MACHINE]),
        capture_output=True, text=True, timeout=60)
    sessions = json.loads(listed.stdout or "[]")
    remote = {s["id"] for s in sessions if s.get("machine") == MACHINE}
    check("`lf-tray list --remote` on a machine with only lf shows its lf's list, tagged",
          listed.returncode == 0 and {"ask_l1", HOSTILE_ID} <= remote, listed.stderr or sessions)
    calls = (Path(REMOTE.pw_dir) / "sim" / "argv.jsonl").read_text().splitlines()
    check("the machine's lf was asked with the generation's list flags",
          any(json.loads(c)["argv"][:4] == ["session", "list", "--json", "--all"] for c in calls))

    watch = Watch()
    _, snap = watch.wait(snapshot_with((MACHINE, "ask_l1")), 30)
    check("`watch --remote` follows a machine with only lf by its list", snap is not None,
          watch.events[-3:])
    mark = len(watch.events)
    written = time.monotonic()
    write_ask(REMOTE, "ask_l2", title="Listed later", cwd=HOSTILE_CWD)
    at, asked = watch.wait(is_("asked", "ask_l2"), 45, mark)
    check("a new ask there arrives with the next list (≤ 30 s)", asked is not None)
    if asked:
        print(f"     list mode: remote ask → local asked: {at - written:.1f} s")
    watch.stop()
    status = subprocess.run(
        as_client([str(TMP / "bin" / "lf-tray"), "list", "--remote", MACHINE]),
        capture_output=True, text=True, timeout=60)
    check("`lf-tray list` names the machine on its rows and in its status",
          f"{MACHINE}: " in status.stderr and f"{MACHINE}: Listed remotely" in status.stdout,
          status.stderr + status.stdout)
    for ask in ("ask_l1", "ask_l2"):
        remove_ask(REMOTE, ask)
    (Path(REMOTE.pw_dir) / ".local" / "bin" / "lf-tray").symlink_to(TMP / "bin" / "lf-tray")


def act_remotely():
    """Complete on another machine's session runs that machine's lf over ssh (the engine's
    own test, crates/core/tests/machine.rs, as the person)."""
    ready, waiting = "-ask_ready;'q' $(touch pwned)", "ask_notready"
    write_ask(REMOTE, ready, title="Ready one", cwd=HOSTILE_CWD, ready_summary="All done")
    write_ask(REMOTE, waiting, title="Not ready", cwd=HOSTILE_CWD)
    calls = Path(REMOTE.pw_dir) / "sim" / "argv.jsonl"
    before = len(calls.read_text().splitlines()) if calls.exists() else 0
    env = [f"LF_TRAY_TEST_MACHINE={MACHINE}", f"LF_TRAY_TEST_READY={ready}",
           f"LF_TRAY_TEST_WAITING={waiting}"]
    argv = as_client([str(TMP / "bin" / "machine-test"), "--ignored", "--test-threads=1"])
    argv[argv.index("-i") + 1:argv.index("-i") + 1] = env
    run = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    (OUT / "machine-test.log").write_text(run.stdout + run.stderr)
    check("Complete runs the machine's lf over ssh: its refusal verbatim, then done and resolved",
          run.returncode == 0 and "1 passed" in run.stdout, (run.stdout + run.stderr)[-800:])
    argvs = [json.loads(c)["argv"] for c in
             (calls.read_text().splitlines() if calls.exists() else [])[before:]]
    check("the machine's lf got the hostile id as one argument after `--`",
          ["session", "complete", "--", ready] in argvs and not pwned(), argvs)
    for ask in (ready, waiting):
        remove_ask(REMOTE, ask)


def refused():
    run = subprocess.run(
        as_client([str(TMP / "bin" / "lf-tray"), "watch", "--remote", "-oProxyCommand=touch /tmp/lf-remote-pwned"]),
        capture_output=True, text=True, timeout=20)
    check("a destination starting with `-` is refused with a clear message",
          run.returncode == 2 and "cannot start with" in run.stderr
          and not pwned(), run.stderr)


def bench(sshd):
    """Remote ask → local `asked` over ssh on loopback, and reconnect time."""
    cwd = BASE / REMOTE.pw_name / "src"
    cwd.mkdir(parents=True, exist_ok=True)
    watch = Watch()
    watch.wait(snapshot_with(), 20)
    watch.wait(lambda e: e.get("type") == "snapshot", 20, 1)
    latencies = []
    for i in range(int(os.environ.get("BENCH_ASKS", "50"))):
        mark = len(watch.events)
        written = time.monotonic()
        write_ask(REMOTE, f"ask_b{i}", title=f"Bench {i}", cwd=cwd)
        at, _ = watch.wait(is_("asked", f"ask_b{i}"), 10, mark)
        if at:
            latencies.append((at - written) * 1000)
        remove_ask(REMOTE, f"ask_b{i}")
        watch.wait(is_("resolved", f"ask_b{i}"), 10, mark)
    latencies.sort()
    pct = lambda p: latencies[min(len(latencies) - 1, int(round(p / 100 * (len(latencies) - 1))))]
    print(f"remote ask → local asked over ssh (loopback), {len(latencies)} asks: "
          f"p50 {pct(50):.0f} ms, p99 {pct(99):.0f} ms, max {latencies[-1]:.0f} ms")
    reconnects = []
    for i in range(int(os.environ.get("BENCH_OUTAGES", "3"))):
        sshd.kill()
        mark = len(watch.events)
        watch.wait(warning_naming(MACHINE), 40, mark)
        # Down long enough for a few retries, as a real outage is.
        write_ask(REMOTE, f"ask_o{i}", title=f"Outage {i}", cwd=cwd)
        watch.settle(3)
        back = sshd.start()
        at, _ = watch.wait(is_("asked", f"ask_o{i}"), 90, mark)
        if at:
            reconnects.append(at - back)
        remove_ask(REMOTE, f"ask_o{i}")
    print("reconnect (sshd back → what was asked meanwhile arrives): "
          + ", ".join(f"{r:.1f} s" for r in reconnects)
          + " (backoff 1 s doubling to 60 s; after 3 s down the next try is ≤ 4 s away)")
    watch.stop()


def main():
    for stale in ("/tmp/lf-remote-pwned",):
        Path(stale).unlink(missing_ok=True)
    sshd = Sshd()
    sshd.start()
    try:
        # The account setup works as a person's would: ssh itself reaches the alias.
        probe = subprocess.run(as_client(["ssh", "-o", "BatchMode=yes", MACHINE, "echo", "reached"]),
                               capture_output=True, text=True, timeout=30)
        if not check("ssh reaches the Host alias with the person's own config",
                     probe.stdout.strip() == "reached", probe.stderr):
            return
        if BENCH:
            bench(sshd)
            return
        import answering
        only = os.environ.get("REMOTE_ONLY")
        if only:
            # One part alone, while working on it (run.sh's header).
            {"answering": lambda: answering.protocol(sys.modules[__name__])}[only]()
            return
        refused()
        act_remotely()
        live_and_faults(sshd)
        leave_nothing()
        list_mode()
        answering.protocol(sys.modules[__name__])
        if os.environ.get("REMOTE_DESKTOP", "1") != "0":
            import desktop
            desktop.run(sys.modules[__name__])
    finally:
        if sshd.proc and sshd.proc.poll() is None:
            sshd.kill()
        if os.environ.get("REMOTE_RESULT"):
            # run.sh audits what is left running, then says the summary.
            Path(os.environ["REMOTE_RESULT"]).write_text(f"{passed} {failed}\n")
        else:
            print(f"remote: {passed} passed, {failed} failed", flush=True)


if __name__ == "__main__":
    main()
    sys.exit(1 if failed else 0)
