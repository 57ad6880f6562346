"""The desktop half of tests/remote: the tray app, as the person, with the machine in its
settings; a remote ask pops up in dunst naming the machine; its default action opens a
real xterm running `ssh -t` to the machine, where the stand-in lf records `session open
<id>` with a terminal, in the session's directory there.

`run(m)` is the root side (it plays the agent on the machine and reads what its lf
recorded); `inside()` runs as the person under Xvfb and a private session bus.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
E2E = HERE.parent / "e2e"
DESKTOP_ID = "-ask_desk'1';$(touch lf-remote-pwned)"


def wait(pred, timeout, every=0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(every)
    return None


def places(m, name):
    """What the person's side runs (this file, dunst's config, the tray host) where they
    may read it, and a fresh state directory of theirs, both called `name`."""
    work = m.TMP / name
    work.mkdir()
    for part in ("dunstrc", "sni_watcher.py"):
        shutil.copy(E2E / part, work / part)
    shutil.copy(Path(__file__), work / "desktop.py")
    for p in [work, *work.iterdir()]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    state = Path(m.CLIENT.pw_dir) / name
    if state.exists():
        shutil.rmtree(state)
    state.mkdir()
    shutil.chown(state, m.CLIENT.pw_uid, m.CLIENT.pw_gid)
    return work, state


def run(m):
    work, state = places(m, "desktop")
    calls = Path(m.REMOTE.pw_dir) / "sim" / "argv.jsonl"
    before = len(calls.read_text().splitlines()) if calls.exists() else 0
    m.write_ask(m.REMOTE, "ask_desk0", title="Already there", cwd=m.HOSTILE_CWD)
    # The snapshot that holds the machine's sessions: this machine has none of its own.
    expected = sum(1 for home in (m.REMOTE, m.CLIENT)
                   for _ in (Path(home.pw_dir) / ".lf" / "human-sessions").glob("*.json"))
    log = open(m.OUT / "desktop.log", "ab")
    inner = subprocess.Popen(
        m.as_client(["xvfb-run", "-a", "-s", "-screen 0 1280x800x24", "dbus-run-session", "--",
                     "python3", str(work / "desktop.py"), "--inside", str(m.TMP / "bin" / "lf-tray"),
                     str(state), str(expected)]),
        stdout=log, stderr=log, start_new_session=True)
    try:
        ready = wait(lambda: (state / "ready").exists() or inner.poll() is not None, 60)
        if not m.check("the tray app follows the machine from its settings",
                       ready and (state / "ready").exists(), tail(m.OUT / "desktop.log")):
            return
        m.write_ask(m.REMOTE, DESKTOP_ID, title="Deploy the desktop build?", cwd=m.HOSTILE_CWD)
        shown = wait(lambda: read(state / "popup"), 30)
        m.check("a remote ask pops up, naming the machine",
                shown is not None and shown.startswith(f"{m.MACHINE} · Agent asks"), shown)
        opened = wait(lambda: open_call(calls, before), 30)
        m.check("its default action runs the session's lf open on the machine, through a terminal",
                opened is not None and opened["tty"] is not None,
                opened or (calls.read_text().splitlines()[before:] if calls.exists() else "no lf calls"))
        if opened:
            m.check("with the hostile id as one argument, after `--`, in the session's remote cwd",
                    opened["argv"] == ["session", "open", "--", DESKTOP_ID]
                    and opened["cwd"] == str(m.HOSTILE_CWD), opened)
        chain = read(state / "terminal")
        m.check("the terminal is a real xterm here running `ssh -t` to the machine",
                chain is not None and "xterm" in chain and f"-t -- {m.MACHINE} " in chain, chain)
        m.check("nothing the remote sent ran as a command", not m.pwned())
    finally:
        (state / "done").touch()
        wait(lambda: (state / "shots-taken").exists() or inner.poll() is not None, 30)
        for shot in ("window.png", "settings.png"):
            if (state / shot).exists():
                shutil.copy(state / shot, m.OUT / shot)
        try:
            inner.wait(20)
        except subprocess.TimeoutExpired:
            pass
        # The person's processes of this run (the app, dunst, xterm and its ssh) end here,
        # by pid; the account is the test's own.
        for pid in m.descendants(inner.pid) + [inner.pid] + client_pids(m.CLIENT.pw_uid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        inner.wait()
        m.remove_ask(m.REMOTE, "ask_desk0")
        m.remove_ask(m.REMOTE, DESKTOP_ID)


def tail(path):
    return path.read_text(errors="replace")[-600:] if path.exists() else ""


def read(path):
    return path.read_text() if path.exists() else None


def open_call(calls, before):
    if not calls.exists():
        return None
    for line in calls.read_text().splitlines()[before:]:
        call = json.loads(line)
        if call["argv"][:2] == ["session", "open"]:
            return call
    return None


def client_pids(uid):
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    pids.append(int(entry.name))
            except OSError:
                pass
    return pids


# --- as the person, on Xvfb with a private session bus --------------------------------

def inside(app, state, expected):
    state = Path(state)
    work = Path(__file__).resolve().parent
    home = Path(os.environ["HOME"])
    env = dict(os.environ, XDG_CONFIG_HOME=str(state / "config"), XDG_STATE_HOME=str(state / "state"),
               XDG_DATA_HOME=str(state / "data"), XDG_CACHE_HOME=str(state / "cache"),
               XDG_RUNTIME_DIR=str(state / "runtime"), LF_HOME=str(home / ".lf"))
    os.makedirs(state / "runtime", mode=0o700)
    settings = state / "config" / "lf-tray" / "settings.json"
    settings.parent.mkdir(parents=True)
    # The machine comes from the settings, as the panel saves it; xterm is the terminal.
    settings.write_text(json.dumps({"terminal": "xterm", "machines": ["lfremote"]}))
    procs = services(work, state, env)
    monitor = open(state / "notify.log", "wb")
    # The monitor also sees AddMatch calls, so a probe call says when it listens.
    procs.append(subprocess.Popen(["dbus-monitor", "--session", "interface='org.freedesktop.Notifications',member='Notify'",
                                   "type='method_call',interface='org.freedesktop.DBus',member='AddMatch'"],
                                  env=env, stdout=monitor, stderr=subprocess.DEVNULL))
    wait(lambda: monitoring(env, state / "notify.log"), 10)
    procs.append(subprocess.Popen([app, "--hidden"], env=env, stdout=open(state / "app.log", "wb"),
                                  stderr=subprocess.STDOUT))
    log = state / "state" / "lf-tray" / "lf-tray.log"
    # The machine's first view is a snapshot with its one session: no popup for it.
    if wait(lambda: log.exists() and f"SNAPSHOT sessions={expected} " in log.read_text(errors="replace"), 45):
        # What already waited there is told once, as one summary; it is taken down, and
        # the burst window (2 s) let pass, so that the next ask is a popup of its own.
        wait(lambda: "kind=burst" in log.read_text(errors="replace"), 10)
        subprocess.run(["dunstctl", "close-all"], env=env)
        time.sleep(2.5)
        told = notify_count(state / "notify.log")
        (state / "ready").touch()
        summary = wait(lambda: popup_summary(state / "notify.log", told), 30)
        if summary:
            (state / "popup").write_text(summary)
            if wait(lambda: displayed(env) == 1, 10):
                subprocess.run(["dunstctl", "action", "0"], env=env)
                chain = wait(lambda: ssh_in_xterm(os.getuid()), 30)
                if chain:
                    (state / "terminal").write_text(chain)
    # For people reading the run (asserts nothing): the window, which a second start
    # shows, with the machine's rows.
    subprocess.run([app], env=env, capture_output=True, timeout=20)
    time.sleep(3)
    subprocess.run(["import", "-window", "root", str(state / "window.png")], env=env, capture_output=True)
    # And its settings panel, where the machine came from (the ⚙ button, top right).
    found = subprocess.run(["xdotool", "search", "--onlyvisible", "--name", "Loopflow Tray",
                            "getwindowgeometry", "--shell"], env=env, capture_output=True, text=True)
    geometry = dict(line.split("=", 1) for line in found.stdout.split() if "=" in line)
    if {"X", "Y", "WIDTH"} <= geometry.keys():
        x, y = int(geometry["X"]) + int(geometry["WIDTH"]) - 30, int(geometry["Y"]) + 27
        subprocess.run(["xdotool", "mousemove", str(x), str(y), "click", "1"], env=env, capture_output=True)
        time.sleep(1)
        # Scrolled down to the "Other machines" field.
        subprocess.run(["xdotool", "mousemove", str(x - 200), str(y + 300), "click", "--repeat", "10", "5"],
                       env=env, capture_output=True)
        time.sleep(1)
        subprocess.run(["import", "-window", "root", str(state / "settings.png")], env=env,
                       capture_output=True)
    (state / "shots-taken").touch()
    wait(lambda: (state / "done").exists(), 60)
    for p in reversed(procs):
        p.terminate()


def services(work, state, env):
    """dunst and a tray host on this session bus, once each owns its name."""
    procs = [subprocess.Popen(["dunst", "-config", str(work / "dunstrc")], env=env,
                              stdout=subprocess.DEVNULL, stderr=open(state / "dunst.log", "wb")),
             subprocess.Popen([sys.executable, str(work / "sni_watcher.py")], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    for name in ("org.freedesktop.Notifications", "org.kde.StatusNotifierWatcher"):
        subprocess.run(["gdbus", "wait", "--session", "--timeout", "10", name], env=env)
    return procs


def monitoring(env, log):
    """Whether dbus-monitor writing `log` listens yet: it prints a probe AddMatch call."""
    probe = "LfRemoteMonitorReady"
    subprocess.run(["gdbus", "call", "--session", "-d", "org.freedesktop.DBus", "-o", "/org/freedesktop/DBus",
                    "-m", "org.freedesktop.DBus.AddMatch", f"type='signal',member='{probe}'"],
                   env=env, capture_output=True)
    return log.exists() and probe in log.read_text(errors="replace")


def notify_count(path):
    text = path.read_text(errors="replace") if path.exists() else ""
    return text.count("member=Notify")


def popup_summary(path, skip):
    """The summary of the first Notify call after the first `skip` that names the machine
    (dbus-monitor prints each argument as a line: app name, replaces id, icon, summary,
    body, …)."""
    lines = path.read_text(errors="replace").splitlines() if path.exists() else []
    seen = 0
    for i, line in enumerate(lines):
        if "member=Notify" in line:
            seen += 1
            if seen <= skip:
                continue
            args = [l.strip() for l in lines[i + 1:i + 6]]
            if len(args) == 5 and args[3].startswith('string "'):
                summary = args[3][len('string "'):-1]
                if "lfremote" in summary:
                    return summary
    return None


def displayed(env):
    out = subprocess.run(["dunstctl", "count", "displayed"], env=env, capture_output=True, text=True)
    return int(out.stdout.strip() or 0)


def ssh_in_xterm(uid):
    """`xterm … → ssh …`: an ssh of the person's whose parent chain has an xterm."""
    for pid in client_pids(uid):
        cmd = cmdline(pid)
        if cmd and Path(cmd[0]).name == "ssh" and "lfremote" in cmd:
            names, parent = [], pid
            while parent > 1:
                parent = ppid(parent)
                if not parent:
                    break
                names.append(Path((cmdline(parent) or ["?"])[0]).name)
            if "xterm" in names:
                return " ← ".join([" ".join(cmd)] + names)
    return None


def cmdline(pid):
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").decode().split("\0")
    except OSError:
        return None


def ppid(pid):
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except OSError:
        return None


def desk(state):
    """The person's desktop alone, for answering.py: dunst (whose context menu picks the
    action named in `state/choice`, as a person picks it), a tray host and a monitor of
    what the notification server is asked. Its bus and display are written to
    `state/desk.json`; the root side runs the app and the clicks in it."""
    state = Path(state)
    work = Path(__file__).resolve().parent
    picker = state / "pick-action"
    # dunst offers each action as `#<label> (<summary>) [<id>,<key>]`; the popup asked
    # about is the only one displayed, so its key alone picks it.
    picker.write_text('#!/bin/sh\nkey=$(cat "$E2E_DMENU_CHOICE" 2>/dev/null) && '
                      'rm -f "$E2E_DMENU_CHOICE"\nawk -v want=",$key]" \'want != ",]" && !found && '
                      'substr($0, length($0) - length(want) + 1) == want { print; found = 1 }\'\n')
    os.chmod(picker, 0o755)
    env = dict(os.environ, E2E_DMENU=str(picker), E2E_DMENU_CHOICE=str(state / "choice"))
    procs = services(work, state, env)
    procs.append(subprocess.Popen(["dbus-monitor", "--session", "interface='org.freedesktop.Notifications',member='Notify'"],
                                  env=env, stdout=open(state / "notify.log", "wb"),
                                  stderr=subprocess.DEVNULL))
    # The monitor is up once it has seen a popup of ours: one sent before would be lost.
    def probed():
        subprocess.run(["gdbus", "call", "--session", "--dest", "org.freedesktop.Notifications",
                        "--object-path", "/org/freedesktop/Notifications", "--method",
                        "org.freedesktop.Notifications.Notify", "probe", "0", "", "monitor probe",
                        "", "[]", "{}", "1"], env=env, capture_output=True)
        return "monitor probe" in (state / "notify.log").read_text(errors="replace")
    wait(probed, 10)
    subprocess.run(["dunstctl", "close-all"], env=env)
    (state / "desk.json").write_text(json.dumps({
        k: os.environ[k] for k in ("DISPLAY", "XAUTHORITY", "DBUS_SESSION_BUS_ADDRESS")
        if k in os.environ}))
    wait(lambda: (state / "done").exists(), 600)
    for p in reversed(procs):
        p.terminate()


def notifies(path):
    """Every Notify call in dbus-monitor's text, in order: (summary, body, action keys).
    A body is read up to the actions' array: the texts here hold no line of `array [`."""
    lines = path.read_text(errors="replace").splitlines() if path.exists() else []
    calls = []
    for i, line in enumerate(lines):
        if "member=Notify" not in line:
            continue
        args = lines[i + 1:]
        end = next((j for j, a in enumerate(args) if a.strip() == "array ["), None)
        if end is None or end < 5:
            continue
        text = "\n".join(args[4:end]).strip()
        summary = args[3].strip()[len('string "'):-1]
        body = text[len('string "'):-1]
        actions = []
        for a in args[end + 1:]:
            if a.strip() == "]":
                break
            actions.append(a.strip()[len('string "'):-1])
        calls.append((summary, body, actions[0::2]))
    return calls


if __name__ == "__main__" and sys.argv[1:2] == ["--inside"]:
    inside(sys.argv[2], sys.argv[3], sys.argv[4])
if __name__ == "__main__" and sys.argv[1:2] == ["--desk"]:
    desk(sys.argv[2])
