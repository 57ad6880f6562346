#!/usr/bin/env python3
"""The real-terminal matrix: for each terminal the app has an adapter for (and tilix,
which gets the generic `-e` one), choose it in settings.json, start the app, let an Ask
pop up in dunst, click it (`dunstctl action 0`), and check what the person gets: the
stand-in lf running `session open <id>` on a tty, in the session's directory, outside
the tray's Run, inside that terminal's process, in a window of it (tmux: a pane).

Run through tests/e2e/terminals.sh (Xvfb, a private session bus, dunst, a
StatusNotifierWatcher, openbox, a tmux server), which exports the paths read here.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import dbus

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import (SCRUBBED, START_TIMEOUT, TERMINAL_TIMEOUT, CheckFailed, Lines,  # noqa: E402
                     become_subreaper, end, environ, expect, expect_session_call, open_calls,
                     own_children, recent_steps, run_checks, session_lf, terminal_of, wait_for)
from lfhome import LfHome  # noqa: E402
from notifications import NotificationLog  # noqa: E402
from tray import Tray, plain  # noqa: E402

# settings.json's terminal name -> the process that must hold lf (its comm, as the kernel
# cuts it to 15 bytes). gnome-terminal's client hands the window to its D-Bus-activated
# server; tmux's window is a child of its server.
TERMINALS = {
    "xterm": "xterm",
    "xfce4-terminal": "xfce4-terminal",
    "gnome-terminal": "gnome-terminal-",
    "konsole": "konsole",
    "kitty": "kitty",
    "alacritty": "alacritty",
    "tilix": "tilix",
    "tmux": "tmux: server",
}
# Those whose window belongs to a server the app did not start (the bus activates
# gnome-terminal-server; the harness runs the tmux server).
SERVED = ("gnome-terminal", "tmux")


class Ctx:
    def __init__(self):
        env = os.environ
        self.app_bin = env["APP"]
        self.out = Path(env["E2E_OUT"])
        self.tmp = Path(env["E2E_TMP"])
        self.home = LfHome(env["LF_HOME"])
        self.settings = Path(env["XDG_CONFIG_HOME"]) / "lf-tray" / "settings.json"
        self.sim_argv = Lines(Path(env["LF_SIM_DIR"]) / "argv.jsonl")
        self.notes = NotificationLog(env["E2E_NOTIFY_PCAP"])
        self.bus = dbus.SessionBus()
        self.tray = Tray(self.bus)
        self.app = None
        self.leftovers = []  # terminal processes (Proc) to end at the finish

    def start_app(self, log_name, env):
        log = open(self.out / log_name, "ab")
        self.app = subprocess.Popen([self.app_bin, "--hidden"], env=env, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        log.close()

    def stop_app(self):
        if self.app is None or self.app.poll() is not None:
            return
        self.app.send_signal(signal.SIGTERM)
        try:
            self.app.wait(5)
        except subprocess.TimeoutExpired:
            os.killpg(self.app.pid, signal.SIGKILL)
            self.app.wait()

    def require_app(self):
        expect(self.app is not None and self.app.poll() is None,
               f"the app is not running (exit code {self.app and self.app.returncode})")

    def displayed(self):
        out = subprocess.run(["dunstctl", "count", "displayed"], capture_output=True, text=True)
        return int(out.stdout.strip() or 0)


def windows_of(pid):
    out = subprocess.run(["xdotool", "search", "--onlyvisible", "--pid", str(pid)],
                         capture_output=True, text=True)
    return out.stdout.split()


def tmux_panes():
    """{pane pid: (pane id, current path)} of every pane of the harness's tmux server."""
    out = subprocess.run(["tmux", "list-panes", "-a", "-F", "#{pane_pid} #{pane_id} #{pane_current_path}"],
                         capture_output=True, text=True)
    panes = {}
    for line in out.stdout.splitlines():
        pid, pane, path = line.split(" ", 2)
        panes[int(pid)] = (pane, path)
    return panes


def pane_text(pane):
    return subprocess.run(["tmux", "capture-pane", "-p", "-t", pane], capture_output=True, text=True).stdout


def ink(path):
    """Pixels that are not the image's most common colour (its background)."""
    out = subprocess.run(["convert", str(path), "-format", "%c", "histogram:info:-"],
                         capture_output=True, text=True).stdout
    counts = [int(line.split(":")[0]) for line in out.splitlines() if ":" in line]
    return sum(counts) - max(counts, default=0)


def screenshot(path, wid):
    """For people reading the run: the window once it shows more than a cursor (GL
    terminals draw their first frame a moment after mapping). Asserts nothing; three
    lines of text are thousands of pixels, a cursor about a hundred."""
    deadline = time.monotonic() + 5
    while True:
        subprocess.run(["import", "-window", wid, str(path)], capture_output=True)
        if ink(path) > 1000 or time.monotonic() > deadline:
            return
        time.sleep(0.2)


def open_in(ctx, name, home_in_settings=False):
    """One terminal: chosen in the settings, opened by a click on an Ask's popup. With
    home_in_settings, lf's home is the settings' `home` instead of the app's $LF_HOME."""
    holder = TERMINALS[name]
    expect(shutil.which(name), f"{name} is not installed (scripts/deps.sh TERMINAL_PACKAGES)")
    settings = {"terminal": name}
    env = os.environ.copy()
    if home_in_settings:
        settings["home"] = env.pop("LF_HOME")
    ctx.settings.parent.mkdir(parents=True, exist_ok=True)
    ctx.settings.write_text(json.dumps(settings) + "\n")
    ctx.start_app(f"app-{name}.log", env)
    sid = f"ask_{name.replace('-', '_')}_{uuid.uuid4().hex[:12]}"
    # A space in the directory: each adapter must pass it as one argument.
    cwd = ctx.tmp / "work" / f"{name} repo"
    cwd.mkdir(parents=True, exist_ok=True)
    terminals = []
    tmux_pane = None
    try:
        item = wait_for(lambda: ctx.require_app() or ctx.tray.item_of_pid(ctx.app.pid),
                        "the app's tray item", START_TIMEOUT)
        # Sessions already there at start are not news; one written after the first
        # snapshot is, and pops up.
        wait_for(lambda: "No sessions waiting" in [plain(e.label) for e in ctx.tray.layout(item).rows()],
                 "the first snapshot in the tray menu", START_TIMEOUT)
        title = f"Open me in {name}"
        ctx.home.write_ask(sid, title=title, prompt=title + "?", cwd=cwd, detail="terminals")
        n = wait_for(lambda: ctx.notes.find(lambda n: title in n.body), f"the popup for {sid}")[-1]
        wait_for(lambda: ctx.displayed() == 1,
                 lambda: f"dunst to show exactly that popup; it shows {ctx.displayed()}")
        wait_for(lambda: ctx.notes.listening(n), "the app to listen for the popup's actions")
        before = len(ctx.sim_argv.json())
        subprocess.run(["dunstctl", "action", "0"], check=True)
        call = wait_for(lambda: open_calls(ctx.sim_argv, sid, before),
                        lambda: f"{name} to run lf session open {sid}; lf calls since the click: "
                        f"{[c['argv'] for c in ctx.sim_argv.json()[before:]]}; the app's last steps: "
                        f"{recent_steps()}; its stderr ends "
                        f"{(ctx.out / f'app-{name}.log').read_text(errors='replace')[-300:]!r}",
                        TERMINAL_TIMEOUT)[0]
        expect_session_call(call, sid, cwd, ctx.home.root)
        lf = session_lf(call)
        terminals = terminal_of(lf, holder)
        ctx.leftovers.extend(terminals)
        if name in SERVED:
            # The process holding the window was not started by the app, and has the
            # tray's Run context: only the app's own environment explains its absence.
            has = [v for v in SCRUBBED if v in environ(terminals[0])]
            expect(has, f"{terminals[0]} lacks the Run context the harness gave it ({SCRUBBED}), so "
                   "this check could not tell its environment from the app's")
        shown = f"Session {sid}: {title}"  # the stand-in lf's first line
        if name == "tmux":
            # The window's command is `sh -c 'unset …; exec "$@"'`, so lf is the pane's process.
            panes = tmux_panes()
            pane = panes.get(lf.pid)
            if pane:
                tmux_pane = pane[0]
            expect(pane and pane[1] == str(cwd),
                   f"no tmux pane runs {lf} in {str(cwd)!r}; panes: {panes}")
            wait_for(lambda: shown in pane_text(tmux_pane),
                     lambda: f"lf's output in the pane; it shows {pane_text(tmux_pane)!r}")
            (ctx.out / "terminal-tmux.txt").write_text(pane_text(tmux_pane))
            subprocess.run(["tmux", "send-keys", "-t", tmux_pane, "Enter"], check=True)
        else:
            wids = wait_for(lambda: windows_of(terminals[0].pid),
                            f"a visible window of {terminals[0]}", TERMINAL_TIMEOUT)
            screenshot(ctx.out / f"terminal-{name}.png", wids[-1])
            # A key typed into the window must reach lf through the terminal's tty, as a
            # person's answer would: the stand-in leaves on Enter.
            subprocess.run(["xdotool", "windowactivate", "--sync", wids[-1]], capture_output=True, timeout=10)
            subprocess.run(["xdotool", "key", "--clearmodifiers", "Return"], check=True)
        wait_for(lambda: not lf.alive(), f"{lf} to leave on the Enter typed into {name}")
    finally:
        ctx.stop_app()
        if ctx.home.ask_path(sid).exists():
            ctx.home.remove_ask(sid)  # what lf does once the Ask is answered
        if tmux_pane:
            # The server is the harness's and stays; the window the app opened goes.
            subprocess.run(["tmux", "kill-pane", "-t", tmux_pane], capture_output=True)
        if name != "tmux":
            end(terminals)
        # The app closes its popups on the way out; the next terminal's check asserts
        # that exactly its own is shown, so a leftover is reported there.
        try:
            wait_for(lambda: ctx.displayed() == 0, "the app's popups to close with it")
        except CheckFailed:
            pass


def make_check(name):
    def fn(ctx):
        open_in(ctx, name)
    fn.__name__ = f"{name.replace('-', '_')}_runs_the_session"
    return fn


CHECKS = [make_check(name) for name in TERMINALS]


def home_from_the_settings_reaches_the_session(ctx):
    """A person who points the tray at another home in Settings (or starts it with
    --home) gets that home in the session too, not only in the tray's own lf calls."""
    try:
        open_in(ctx, "xterm", home_in_settings=True)
    except CheckFailed as e:
        raise CheckFailed(f"with `home` in settings.json and no $LF_HOME: {e}") from None


def finish(ctx):
    ctx.stop_app()
    end(ctx.leftovers + own_children())


def main():
    become_subreaper()
    only = os.environ.get("E2E_TERMINALS")
    checks = [c for c, name in zip(CHECKS, TERMINALS) if not only or name in only.split(",")]
    if not only or "home" in only.split(","):
        checks.append(home_from_the_settings_reaches_the_session)
    ctx = Ctx()
    return run_checks(checks, ctx, ctx.out / "result", finish)


if __name__ == "__main__":
    sys.exit(main())
