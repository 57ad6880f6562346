#!/usr/bin/env python3
"""Go to terminal, for real: under Xvfb with openbox, a click on a session that already
runs in a terminal brings that terminal back (`_NET_ACTIVE_WINDOW`, read with xprop), the
terminal the tray opened as well as one the person opened, and a tmux window inside an
xterm; a turn handed back in the terminal the person looks at does not pop up; a
terminal that is gone is said, with lf's own ways there.

The stand-in lf plays generation E1 for most checks: `lf sim attach ID PID` makes PID
the session's client, listed in `terminal_ids` by its `LF_TERMINAL_ID` as lf does. The
`e2_` checks play today's lf (E2) in a home of their own, with the README's default
settings: lf runs the agent as its own child on the person's terminal and lists no
terminal id, so the tray finds the terminal from the agent's pid alone.

Run through tests/e2e/focus.sh, which exports the paths read here.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import dbus

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import (START_TIMEOUT, TERMINAL_TIMEOUT, CheckFailed, Lines, Proc,  # noqa: E402
                     ancestors, app_log, become_subreaper, end, environ, end_app, expect, never, own_children,
                     recent_steps, run_checks, wait_for)
from notifications import NotificationLog  # noqa: E402
from tray import Tray, plain  # noqa: E402


class Ctx:
    def __init__(self):
        env = os.environ
        self.app_bin = env["APP"]
        self.lf_bin = env["LF_BIN"]
        self.out = Path(env["E2E_OUT"])
        self.tmp = Path(env["E2E_TMP"])
        self.home = self.tmp / "lf-home"
        self.repo = self.tmp / "work" / "a repo"
        (self.repo / ".git").mkdir(parents=True, exist_ok=True)
        self.env = dict(env, LF_HOME=str(self.home), LF_SIM_GENERATION="e1")
        # Today's lf in a home of its own: E1's sessions (clients by pid, no agents)
        # would read differently there.
        self.e2_home = self.tmp / "lf-home-e2"
        self.e2_env = dict(env, LF_HOME=str(self.e2_home), LF_SIM_GENERATION="e2")
        self.generation = None
        self.agents = []  # headless agents (Proc): detached, so ended at the finish by pid
        self.sim_argv = Lines(Path(env["LF_SIM_DIR"]) / "argv.jsonl")
        self.notes = NotificationLog(env["E2E_NOTIFY_PCAP"])
        self.tray = Tray(dbus.SessionBus())
        self.app = None
        self.terminal = None
        self.item = None
        self.elsewhere = None  # (Proc, window) of a window to move the focus to
        self.mine = []  # what the checks started (Popen), ended at the finish
        self.timings = []

    def lf(self, *args, env=None):
        out = subprocess.run([self.lf_bin, *args], env=env or self.env, capture_output=True, text=True)
        if out.returncode != 0:
            raise CheckFailed(f"lf {' '.join(args)}: {out.stderr.strip()}")
        return out.stdout

    def start_app(self, terminal="xterm", generation="e1"):
        if self.app is not None:
            self.stop_app()
        settings = Path(os.environ["XDG_CONFIG_HOME"]) / "lf-tray" / "settings.json"
        settings.parent.mkdir(parents=True, exist_ok=True)
        if generation == "e1":
            # No grace: a popup comes at once unless the person looks at the terminal, so
            # "no popup" below is the looking-at rule and nothing else.
            chosen = {"terminal": terminal, "attached_grace_seconds": 0}
        else:
            # The README's defaults (a 45 s attached grace): on E2 the tray must know where
            # the person looks without being told to skip the grace.
            chosen = {"terminal": terminal}
        settings.write_text(json.dumps(chosen) + "\n")
        self.terminal = terminal
        self.generation = generation
        log = open(self.out / "app.log", "ab")
        env = self.env if generation == "e1" else self.e2_env
        snapshots = len(logged("INFO SNAPSHOT "))
        self.app = subprocess.Popen([self.app_bin, "--hidden"], env=env, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        self.item = wait_for(lambda: self.tray.item_of_pid(self.app.pid), "the app's tray item",
                             START_TIMEOUT)
        # The first snapshot, as the app logs it: a session made before it is in it (and so
        # never logged as appearing), one made after it is told as it appears. The menu's
        # "Reading sessions…" can be missed (a menu not drawn yet has no rows at all).
        wait_for(lambda: len(logged("INFO SNAPSHOT ")) > snapshots, "the app's first snapshot",
                 START_TIMEOUT)
        wait_for(lambda: "Reading sessions…" not in self.labels(), "the first snapshot in the menu",
                 START_TIMEOUT)

    def stop_app(self):
        if self.app.poll() is None:
            self.app.terminate()
            try:
                self.app.wait(5)
            except subprocess.TimeoutExpired:
                self.app.kill()
                self.app.wait()
        wait_for(lambda: self.displayed() == 0, "the app's popups to close with it")

    def labels(self):
        expect(self.app.poll() is None, f"the app exited ({self.app.returncode})")
        return [plain(e.label) for e in self.tray.layout(self.item).rows()]

    def row(self, title):
        rows = [e for e in self.tray.layout(self.item).rows() if title in plain(e.label)]
        return rows[0] if rows else None

    def displayed(self):
        out = subprocess.run(["dunstctl", "count", "displayed"], capture_output=True, text=True)
        return int(out.stdout.strip() or 0)

    def new_session(self, title):
        sid = "S-" + uuid.uuid4().hex[:10]
        self.lf("sim", "new", sid, "--title", title, "--cwd", str(self.repo), "--provider", "codex")
        self.lf("sim", "working", sid)
        return sid

    def attached(self, sid, pid):
        """Make `pid` the session's client, and wait until the tray has read it so."""
        self.lf("sim", "attach", sid, str(pid))
        wait_for(lambda: any(f"id={sid} state=active" in line for line in app_log().all()),
                 lambda: f"the tray to read {sid} as attached; its last steps: {recent_steps()}")

    def popup(self, title, since):
        return [n for n in self.notes.find(lambda n: title in n.body) if n not in since]

    def ask(self, sid, title):
        """Hand the turn back to the person; returns the popups for it seen before."""
        before = self.notes.find(lambda n: title in n.body)
        self.lf("sim", "ask", sid)
        return before


def active_window():
    out = subprocess.run(["xprop", "-root", "_NET_ACTIVE_WINDOW"], capture_output=True, text=True)
    m = re.search(r"window id # (0x[0-9a-f]+)", out.stdout)
    return int(m.group(1), 16) if m else None


def windows_of(pid):
    out = subprocess.run(["xdotool", "search", "--onlyvisible", "--pid", str(pid)],
                         capture_output=True, text=True)
    return [int(w) for w in out.stdout.split()]


def xterm(ctx, title, *argv, env=None, cwd=None):
    """An xterm the test (as the person) starts, and its window once mapped."""
    proc = subprocess.Popen(["xterm", "-T", title, "-e", *argv], env=env or ctx.env, cwd=cwd,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    ctx.mine.append(proc)
    window = wait_for(lambda: windows_of(proc.pid), f"xterm {title!r} to map a window",
                      TERMINAL_TIMEOUT)[0]
    return proc, window


def look_elsewhere(ctx):
    """The focus on another window (a person reading something else)."""
    if ctx.elsewhere is None:
        ctx.elsewhere = xterm(ctx, "elsewhere", "sleep", "100000")
    window = ctx.elsewhere[1]
    subprocess.run(["xdotool", "windowactivate", "--sync", str(window)], capture_output=True,
                   timeout=10)
    wait_for(lambda: active_window() == window,
             lambda: f"the other window {window:#x} to take the focus; active is {active_window()}")


def brought_back(ctx, window, how, click):
    """Click, and wait until `window` is the active one; the time is noted."""
    expect(active_window() != window, "the window was active before the click")
    t0 = time.monotonic()
    click()
    wait_for(lambda: active_window() == window,
             lambda: f"{how} to bring back window {window:#x}; active is {active_window()}; "
             f"the app's last steps: {recent_steps()}")
    took = time.monotonic() - t0
    ctx.timings.append((how, took))
    print(f"     {how}: focused in {took * 1000:.0f} ms", flush=True)


def lf_call(ctx, sid, after):
    calls = [c for c in ctx.sim_argv.json()[after:]
             if c.get("argv", [])[:2] == ["session", "connect"] and sid in c["argv"]]
    return calls[0] if calls else None


def click_row(ctx, title):
    row = wait_for(lambda: ctx.row(title), f"a tray row for {title!r}; rows: {ctx.labels()}")
    return lambda: ctx.tray.click(ctx.item, row.id)


def click_popup(ctx, n):
    wait_for(lambda: ctx.displayed() == 1, lambda: f"dunst to show only that popup: {ctx.displayed()}")
    wait_for(lambda: ctx.notes.listening(n), "the app to listen for the popup's actions")
    return lambda: subprocess.run(["dunstctl", "action", "0"], check=True)


def quiet_popups(ctx, sid):
    """The agent works again, the tray has read it (else a turn handed back right after
    would be no change to it), and its popups are closed."""
    def done():
        return sum(f" id={sid} " in line and line.endswith("needs_you=false") for line in app_log().all())
    seen = done()
    ctx.lf("sim", "working", sid)
    wait_for(lambda: done() > seen,
             lambda: f"the tray to read {sid} working; its last steps: {recent_steps()}")
    wait_for(lambda: ctx.displayed() == 0, "the popups to close once the agent works again")


def the_terminal_the_tray_opened_comes_back_and_hides_its_own_popups(ctx):
    ctx.start_app()
    title = "Opened by the tray " + uuid.uuid4().hex[:6]
    sid = ctx.new_session(title)
    before = len(ctx.sim_argv.json())
    seen = ctx.ask(sid, title)
    n = wait_for(lambda: ctx.popup(title, seen), "the first popup")[-1]
    click_popup(ctx, n)()
    call = wait_for(lambda: lf_call(ctx, sid, before), "xterm to run lf session connect",
                    TERMINAL_TIMEOUT)
    terminal_id = call["env"].get("LF_TERMINAL_ID")
    expect(terminal_id and call["env"].get("LF_TERMINAL_TTY") == call["tty"],
           f"lf in the tray's xterm lacks its mark: {call['env']}, tty {call['tty']}")
    remembered = Path(os.environ["XDG_STATE_HOME"]) / "lf-tray" / "terminals.json"
    # Written by the tray once the terminal started: waited for, as lf in it may run first.
    kept = wait_for(lambda: json.loads(remembered.read_text())["opened"].get(terminal_id) and
                    json.loads(remembered.read_text())["opened"],
                    lambda: f"{remembered} to keep terminal {terminal_id}")
    expect(kept[terminal_id]["terminal"] == "xterm", f"{remembered} keeps terminal {terminal_id} as {kept[terminal_id]}")
    lf = Proc.of(call["pid"])
    expect(lf is not None, "lf in the xterm is gone")
    ctx.attached(sid, lf.pid)
    record = [r for r in json.loads(ctx.lf("session", "list", "--json", "--all")) if r["id"] == sid][0]
    expect(record["terminal_ids"] == [terminal_id],
           f"lf lists terminal_ids {record['terminal_ids']}, not the tray's {terminal_id}")
    xterm_pid = kept[terminal_id]["pid"]
    window = wait_for(lambda: windows_of(xterm_pid), "the tray's xterm window")[0]
    quiet_popups(ctx, sid)

    # Looking elsewhere: the turn pops up, and its click brings the xterm back.
    look_elsewhere(ctx)
    seen = ctx.ask(sid, title)
    n = wait_for(lambda: ctx.popup(title, seen), "a popup while the person looks elsewhere")[-1]
    brought_back(ctx, window, "popup click (tray's xterm)", click_popup(ctx, n))
    # Looking at it: the next turn does not pop up; the tray row still says it waits.
    quiet_popups(ctx, sid)
    expect(active_window() == window, "the xterm lost the focus meanwhile")
    seen = ctx.ask(sid, title)
    wait_for(lambda: any(f"LOOKING_AT session={sid}" in line for line in app_log().all()),
             lambda: f"the tray to see the person at {sid}'s terminal; its last steps: {recent_steps()}")
    never(lambda: ctx.popup(title, seen), lambda p: f"a popup for what the person looks at: {p}")
    wait_for(lambda: ctx.row(title), f"the tray row for {title!r}")
    # The tray row brings it back too.
    look_elsewhere(ctx)
    brought_back(ctx, window, "tray row (tray's xterm)", click_row(ctx, title))
    ctx.lf("sim", "working", sid)


def a_terminal_the_person_opened_is_found_and_comes_back(ctx):
    title = "Opened by hand " + uuid.uuid4().hex[:6]
    sid = ctx.new_session(title)
    before = len(ctx.sim_argv.json())
    proc, window = xterm(ctx, "by hand", ctx.lf_bin, "session", "connect", sid)
    call = wait_for(lambda: lf_call(ctx, sid, before), "lf session connect in the person's xterm")
    expect("LF_TERMINAL_ID" not in call["env"], "the person's own xterm carries a tray mark")
    ctx.attached(sid, call["pid"])
    seen = ctx.ask(sid, title)
    look_elsewhere(ctx)
    wait_for(lambda: ctx.popup(title, seen), "the popup for the person's session")
    brought_back(ctx, window, "tray row (person's xterm)", click_row(ctx, title))
    # On another desktop, it is brought there (`_NET_CURRENT_DESKTOP`), then focused.
    subprocess.run(["xdotool", "set_desktop_for_window", str(window), "1"], check=True)
    subprocess.run(["xdotool", "set_desktop", "0"], check=True)
    look_elsewhere(ctx)
    desktop = lambda: subprocess.run(["xdotool", "get_desktop"], capture_output=True,  # noqa: E731
                                     text=True).stdout.strip()
    wait_for(lambda: desktop() == "0", "openbox to show desktop 0")
    brought_back(ctx, window, "tray row (person's xterm on desktop 2)", click_row(ctx, title))
    expect(desktop() == "1", f"the desktop shown is {desktop()}, not the xterm's (1)")
    subprocess.run(["xdotool", "set_desktop_for_window", str(window), "0"], check=True)
    subprocess.run(["xdotool", "set_desktop", "0"], check=True)
    quiet_popups(ctx, sid)
    ctx.hand_opened = (sid, title, proc)


def a_tmux_window_inside_an_xterm_is_selected_and_its_xterm_focused(ctx):
    title = "In tmux " + uuid.uuid4().hex[:6]
    sid = ctx.new_session(title)
    before = len(ctx.sim_argv.json())
    tmux = ["tmux", "-f", "/dev/null"]
    subprocess.run([*tmux, "new-session", "-d", "-s", "work", "-x", "100", "-y", "30",
                    "sleep", "100000"], env=ctx.env, check=True)
    subprocess.run([*tmux, "new-window", "-t", "work", "--", "/usr/bin/env", f"LF_HOME={ctx.home}",
                    "LF_SIM_GENERATION=e1", ctx.lf_bin, "session", "connect", sid],
                   env=ctx.env, check=True)
    call = wait_for(lambda: lf_call(ctx, sid, before), "lf session connect in tmux window 1")
    subprocess.run([*tmux, "select-window", "-t", "work:0"], check=True)
    proc, window = xterm(ctx, "tmux", "tmux", "attach", "-t", "work")
    wait_for(lambda: subprocess.run(["tmux", "list-clients"], capture_output=True, text=True).stdout,
             "the xterm's tmux client")
    ctx.attached(sid, call["pid"])
    seen = ctx.ask(sid, title)
    look_elsewhere(ctx)
    wait_for(lambda: ctx.popup(title, seen), "the popup for the tmux session")
    shown = lambda: subprocess.run(["tmux", "display-message", "-p", "-t", "work", "#{window_index}"],  # noqa: E731
                                   capture_output=True, text=True).stdout.strip()
    expect(shown() == "0", f"tmux shows window {shown()} before the click")
    brought_back(ctx, window, "tray row (tmux in xterm)", click_row(ctx, title))
    wait_for(lambda: shown() == "1", lambda: f"tmux to show window 1; it shows {shown()}")
    quiet_popups(ctx, sid)
    # Looking at it (the xterm focused, tmux showing its window): no popup.
    looked = sum(f"LOOKING_AT session={sid}" in line for line in app_log().all())
    seen = ctx.ask(sid, title)
    wait_for(lambda: sum(f"LOOKING_AT session={sid}" in line for line in app_log().all()) > looked,
             lambda: f"the tray to see the person at {sid}'s tmux window; its last steps: {recent_steps()}")
    never(lambda: ctx.popup(title, seen), lambda p: f"a popup for the tmux window looked at: {p}")
    quiet_popups(ctx, sid)
    # The same xterm focused, but tmux showing another window: the turn pops up.
    subprocess.run([*tmux, "select-window", "-t", "work:0"], check=True)
    wait_for(lambda: shown() == "0", "tmux to show window 0")
    expect(active_window() == window, "the xterm lost the focus meanwhile")
    seen = ctx.ask(sid, title)
    wait_for(lambda: ctx.popup(title, seen), "a popup while tmux shows another window")
    quiet_popups(ctx, sid)


def a_terminal_that_is_gone_is_said_with_lfs_ways_there(ctx):
    title = "Terminal gone " + uuid.uuid4().hex[:6]
    sid = ctx.new_session(title)
    # lf still lists a client, but no terminal holds it any more (its terminal closed
    # and lf has not noticed yet): a process that names no session and has no window.
    client = subprocess.Popen(["sleep", "100000"], start_new_session=True)
    ctx.mine.append(client)
    ctx.attached(sid, client.pid)
    look_elsewhere(ctx)
    seen = ctx.ask(sid, title)
    n = wait_for(lambda: ctx.popup(title, seen), "the popup for the session")[-1]
    before = ctx.notes.find(lambda n: True)
    click_popup(ctx, n)()
    said = wait_for(lambda: [m for m in ctx.notes.find(lambda m: m.summary.startswith("Cannot go to"))
                             if m not in before],
                    lambda: f"a popup saying the terminal is gone; the app's last steps: {recent_steps()}")[0]
    expect("no longer there" in said.body and "Move here" in said.body, f"it says {said.body!r}")
    # lf's ways there are in the window, shown at that session instead.
    app_windows = lambda: windows_of(ctx.app.pid)  # noqa: E731
    wait_for(lambda: active_window() in app_windows(),
             lambda: f"the app's window ({app_windows()}) to come up with Open here / Move here; "
             f"active is {active_window()}")


# How the person starts each terminal on a command (the tray's own ways are the
# adapters'); for the matrix of "opened by the person".
BY_HAND = {
    "xfce4-terminal": ["xfce4-terminal", "--disable-server", "-x"],
    "gnome-terminal": ["gnome-terminal", "--"],
    "konsole": ["konsole", "--separate", "-e"],
    "kitty": ["kitty"],
    "alacritty": ["alacritty", "-e"],
    "tilix": ["tilix", "--new-process", "-e"],
}


def window_above(pid):
    """The first visible window owned by `pid` or one of its ancestors (the terminal
    holding it), as the person sees it."""
    for p in [pid, *(a.pid for a in ancestors(pid))]:
        wins = windows_of(p)
        if wins:
            return wins[-1]
    return None


def brings_back(ctx, name, sid, title, call):
    ctx.attached(sid, call["pid"])
    window = wait_for(lambda: window_above(call["pid"]), f"{name}'s window around lf", TERMINAL_TIMEOUT)
    # The person reads something else first: an ask that comes while its terminal has the
    # focus is seen there and gets no popup (on a busy machine the app decided before a
    # focus change made after the ask).
    look_elsewhere(ctx)
    seen = ctx.ask(sid, title)
    wait_for(lambda: ctx.popup(title, seen),
             lambda: f"the popup for the session in {name}; the app's last steps: {recent_steps()}")
    return window


def tray_opened(name):
    def check(ctx):
        expect(shutil.which(name), f"{name} is not installed")
        ctx.start_app(name)
        title = f"Tray's {name} " + uuid.uuid4().hex[:6]
        sid = ctx.new_session(title)
        before = len(ctx.sim_argv.json())
        seen = ctx.ask(sid, title)
        n = wait_for(lambda: ctx.popup(title, seen),
                     lambda: f"the first popup; the app's last steps: {recent_steps()}")[-1]
        click_popup(ctx, n)()
        call = wait_for(lambda: lf_call(ctx, sid, before), f"{name} to run lf session connect",
                        TERMINAL_TIMEOUT)
        quiet_popups(ctx, sid)
        try:
            window = brings_back(ctx, name, sid, title, call)
            brought_back(ctx, window, f"tray row ({name} opened by the tray)", click_row(ctx, title))
            quiet_popups(ctx, sid)
        finally:
            # Not the popups here: waiting on them after a failure would hide it.
            end([p for p in [Proc.of(call["pid"])] if p])
    check.__name__ = f"{name.replace('-', '_')}_opened_by_the_tray_comes_back"
    return check


def person_opened(name):
    def check(ctx):
        expect(shutil.which(name), f"{name} is not installed")
        if ctx.terminal != "xterm" or ctx.generation != "e1":
            ctx.start_app()
        title = f"Person's {name} " + uuid.uuid4().hex[:6]
        sid = ctx.new_session(title)
        before = len(ctx.sim_argv.json())
        command = [ctx.lf_bin, "session", "connect", sid]
        if name == "tilix":
            command = [" ".join(command)]  # tilix -e takes one string; these words need no quotes
        proc = subprocess.Popen([*BY_HAND[name], *command], env=ctx.env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        ctx.mine.append(proc)
        call = wait_for(lambda: lf_call(ctx, sid, before), f"lf session connect in the person's {name}",
                        TERMINAL_TIMEOUT)
        try:
            window = brings_back(ctx, name, sid, title, call)
            brought_back(ctx, window, f"tray row ({name} opened by the person)", click_row(ctx, title))
            if name == "kitty":
                # Remote control is off in a kitty as it comes: its window comes to the
                # front as it is, and the log says why not its tab.
                wait_for(lambda: logged(f"TAB_NOT_SHOWN session={sid} ", "remote control is off"),
                         lambda: f"the log to say kitty's tab was not shown; its last steps: {recent_steps()}")
            quiet_popups(ctx, sid)
        finally:
            # Not the popups here: waiting on them after a failure would hide it.
            end([p for p in [Proc.of(call["pid"])] if p])
    check.__name__ = f"{name.replace('-', '_')}_opened_by_the_person_comes_back"
    return check


def logged(*words):
    return [line for line in app_log().all() if all(w in line for w in words)]


def tray_focus_ms(sid):
    """The tray's own click → focus time for sid's latest Go to terminal."""
    found = [re.search(r" in (\d+) ms", line) for line in logged(f"FOCUSED session={sid} in ")]
    return int(found[-1].group(1)) if found else None


def tab_brought_back(ctx, window, how, click, shown):
    """brought_back, and then the session's tab the one its window shows (`shown()`);
    the time to both is noted, the test's and the tray's own."""
    t0 = time.monotonic()
    brought_back(ctx, window, how, click)
    wait_for(shown, lambda: f"{how}: the session's tab to be shown; the app's last steps: {recent_steps()}")
    took = time.monotonic() - t0
    ctx.timings.append((f"{how}, its tab shown", took))
    print(f"     {how}: its tab shown {took * 1000:.0f} ms after the click", flush=True)


def looked_at_only_on_its_tab(ctx, sid, title, window, show_other, shown):
    """With its window focused and its tab shown, a turn handed back does not pop up;
    with the same window focused showing another tab (`show_other()`), it does."""
    quiet_popups(ctx, sid)
    expect(active_window() == window and shown(), "the window or its tab lost the focus meanwhile")
    looked = len(logged(f"LOOKING_AT session={sid}"))
    seen = ctx.ask(sid, title)
    wait_for(lambda: len(logged(f"LOOKING_AT session={sid}")) > looked,
             lambda: f"the tray to see the person at {sid}'s tab; its last steps: {recent_steps()}")
    never(lambda: ctx.popup(title, seen), lambda p: f"a popup for the tab looked at: {p}")
    quiet_popups(ctx, sid)
    show_other()
    wait_for(lambda: not shown(), "the terminal to show its other tab")
    expect(active_window() == window, "the window lost the focus meanwhile")
    seen = ctx.ask(sid, title)
    wait_for(lambda: ctx.popup(title, seen), "a popup while the window shows another tab")


def fresh_start(ctx):
    """The app as the xterm checks left it, with no popup up (the gone terminal's
    *Cannot go to* stays until acted on)."""
    if ctx.app is None or ctx.terminal != "xterm" or ctx.generation != "e1":
        ctx.start_app()
    subprocess.run(["dunstctl", "close-all"], check=True)
    wait_for(lambda: ctx.displayed() == 0, "dunst to close every popup")


def kittys_tab_is_focused_with_its_window(ctx):
    """kitty with remote control on, two tabs, the session's client in the first while
    the second shows: the click brings kitty's window back with the session's tab."""
    expect(shutil.which("kitty"), "kitty is not installed")
    fresh_start(ctx)
    title = "Kitty tab " + uuid.uuid4().hex[:6]
    sid = ctx.new_session(title)
    before = len(ctx.sim_argv.json())
    to = f"unix:{ctx.tmp / 'kitty'}"
    proc = subprocess.Popen(["kitty", "-o", "allow_remote_control=yes", "--listen-on", to,
                             ctx.lf_bin, "session", "connect", sid], env=ctx.env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    ctx.mine.append(proc)
    call = wait_for(lambda: lf_call(ctx, sid, before), "lf session connect in kitty's first tab",
                    TERMINAL_TIMEOUT)

    def at(*args):
        # kitty @ starts kitty's Python each time: ~0.4 s here, several on a loaded machine.
        return subprocess.run(["kitty", "@", "--to", to, *args], capture_output=True, text=True,
                              timeout=TERMINAL_TIMEOUT)

    wait_for(lambda: at("ls").returncode == 0, "kitty's remote control to answer", TERMINAL_TIMEOUT)
    own = int(environ(Proc.of(call["pid"]))["KITTY_WINDOW_ID"])

    def shown():
        for os_window in json.loads(at("ls").stdout):
            for tab in os_window["tabs"]:
                if any(w["id"] == own for w in tab["windows"]):
                    return tab["is_focused"]
        raise CheckFailed(f"kitty lists no window {own}")

    out = at("launch", "--type=tab", "sleep", "100000")
    expect(out.returncode == 0, f"kitty @ launch: {out.stderr.strip()}")
    other = out.stdout.strip()
    wait_for(lambda: not shown(), "kitty to show its second tab")
    try:
        window = brings_back(ctx, "kitty", sid, title, call)
        tab_brought_back(ctx, window, "tray row (kitty, session in tab 1 of 2)", click_row(ctx, title), shown)
        # The terminal shows the tab before its command (`kitty @`, Konsole's D-Bus call)
        # has returned to the tray, which logs it then.
        wait_for(lambda: logged(f"TAB_SHOWN session={sid} "),
                 lambda: f"the log to say the tab was shown; its last steps: {recent_steps()}")
        print(f"     the tray's own click → focus: {tray_focus_ms(sid)} ms", flush=True)
        looked_at_only_on_its_tab(ctx, sid, title, window,
                                  lambda: at("focus-window", "--match", f"id:{other}"), shown)
        quiet_popups(ctx, sid)
    finally:
        # Not the popups here: waiting on them after a failure would hide it.
        end([p for p in [Proc.of(call["pid"]), Proc.of(proc.pid)] if p])


def konsoles_session_is_made_current_with_its_window(ctx):
    """Konsole with two tabs, the session in the first while the second shows: the
    click brings Konsole's window back with the session's tab current (read back over
    D-Bus, `org.kde.konsole.Window.currentSession`)."""
    expect(shutil.which("konsole"), "konsole is not installed")
    fresh_start(ctx)
    title = "Konsole tab " + uuid.uuid4().hex[:6]
    sid = ctx.new_session(title)
    before = len(ctx.sim_argv.json())
    proc = subprocess.Popen(["konsole", "--separate", "-e", ctx.lf_bin, "session", "connect", sid],
                            env=ctx.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    ctx.mine.append(proc)
    call = wait_for(lambda: lf_call(ctx, sid, before), "lf session connect in konsole's first tab",
                    TERMINAL_TIMEOUT)
    env = environ(Proc.of(call["pid"]))
    own = int(env["KONSOLE_DBUS_SESSION"].rsplit("/", 1)[1])
    konsole = dbus.Interface(dbus.SessionBus().get_object(env["KONSOLE_DBUS_SERVICE"],
                                                          env["KONSOLE_DBUS_WINDOW"]),
                             "org.kde.konsole.Window")
    # newSession is overloaded (no argument, a profile, a profile and a directory): the
    # one without arguments, by its signature.
    second = int(konsole.newSession(signature=""))
    expect(second != own, f"konsole's new tab is session {second}, the session's own")
    current = lambda: int(konsole.currentSession())  # noqa: E731
    wait_for(lambda: current() == second, lambda: f"konsole to show its second tab; it shows {current()}")
    try:
        window = brings_back(ctx, "konsole", sid, title, call)
        tab_brought_back(ctx, window, "tray row (konsole, session in tab 1 of 2)", click_row(ctx, title),
                         lambda: current() == own)
        # The terminal shows the tab before its command (`kitty @`, Konsole's D-Bus call)
        # has returned to the tray, which logs it then.
        wait_for(lambda: logged(f"TAB_SHOWN session={sid} "),
                 lambda: f"the log to say the tab was shown; its last steps: {recent_steps()}")
        print(f"     the tray's own click → focus: {tray_focus_ms(sid)} ms", flush=True)
        looked_at_only_on_its_tab(ctx, sid, title, window, lambda: konsole.setCurrentSession(second),
                                  lambda: current() == own)
        quiet_popups(ctx, sid)
    finally:
        # Not the popups here: waiting on them after a failure would hide it.
        end([p for p in [Proc.of(call["pid"]), Proc.of(proc.pid)] if p])


# --- today's lf (E2): the agent is lf's child on the person's terminal ----------------------

# What the person sees of a headless agent's ask (crates/surface/src/notice/mod.rs HEADLESS).
HEADLESS = "It runs headless: no terminal shows it."
# The README's default attached grace: an ask that took this long was held by it.
ATTACHED_GRACE = 45.0
# An ask must pop up well inside the grace: this bounds a slow machine's engine read
# (its 2 s clock at worst), the tray's own lf calls and dunst, and is far from 45 s.
ASK_TIMEOUT = 20.0


def e2_start(ctx):
    """The app on today's lf, with no popup up."""
    if ctx.app is None or ctx.generation != "e2" or ctx.terminal != "xterm":
        ctx.start_app(generation="e2")
    subprocess.run(["dunstctl", "close-all"], check=True)
    wait_for(lambda: ctx.displayed() == 0, "dunst to close every popup")


def e2_lf(ctx, *args):
    return ctx.lf(*args, env=ctx.e2_env)


def e2_record(ctx, sid=None, cwd=None):
    for record in json.loads(e2_lf(ctx, "session", "list", "--json", "--all")):
        if record["id"] == sid or (cwd is not None and record["cwd"] == str(cwd)):
            return record
    return None


def e2_running(ctx, sid=None, cwd=None):
    """The session (by id or directory) once lf says its agent lives: `active`, with an
    agent process id."""
    record = e2_record(ctx, sid, cwd)
    return record if record and record["state"] == "active" and record.get("agent_process_id") else None


def e2_seen(ctx, sid):
    """Wait until the tray has read the session as lf's live agent."""
    wait_for(lambda: logged(f"id={sid} state=active"),
             lambda: f"the tray to read {sid} as active; its last steps: {recent_steps()}",
             START_TIMEOUT)


def e2_ask(ctx, sid, title):
    """The agent asks the person a question (lf's `program_status`); returns the popups
    seen before and the time it asked."""
    before = ctx.notes.find(lambda n: title in n.body)
    asked = time.monotonic()
    e2_lf(ctx, "sim", "status", sid, "blocked", "--kind", "question",
          "--title", "Which branch should I rebase onto?", "--msg", f"Asked in {title}")
    return before, asked


def e2_popup_at_once(ctx, sid, title, how):
    """Ask, and wait for its popup; prints and notes ask → popup. Returns the popup."""
    seen, asked = e2_ask(ctx, sid, title)
    n = wait_for(lambda: ctx.popup(title, seen),
                 lambda: f"the ask's popup ({how}); the app's last steps: {recent_steps()}",
                 ASK_TIMEOUT)[-1]
    took = time.monotonic() - asked
    ctx.timings.append((f"ask → popup ({how})", took))
    print(f"     ask → popup ({how}): {took * 1000:.0f} ms", flush=True)
    expect(took < ATTACHED_GRACE, f"the popup took {took:.1f} s: the attached grace held it")
    expect("question" in n.summary and title in n.summary, f"the popup says {n.describe()}")
    return n


def e2_quiet(ctx, sid):
    """The agent works again, and the tray has read it so (else a second ask would be no
    change to it); its popups are closed."""
    def done():
        return len(logged(f" id={sid} ", "needs_you=false"))
    seen = done()
    e2_lf(ctx, "sim", "status", sid, "working")
    wait_for(lambda: done() > seen,
             lambda: f"the tray to read {sid} working; its last steps: {recent_steps()}")
    wait_for(lambda: ctx.displayed() == 0, "the popups to close once the agent works again")


def connects(ctx, sid, after):
    """What would take the session over: any `session connect`/`open` for it run after
    the first `after` of the stand-in's records (`--json` only reads the record)."""
    return [c["argv"] for c in ctx.sim_argv.json()[after:]
            if c.get("argv", [])[:1] == ["session"] and c["argv"][1:2] in (["connect"], ["open"])
            and sid in c["argv"] and "--json" not in c["argv"]]


def no_connect(ctx, sid, after, how):
    """Nothing took the session over after the click (lf would refuse a plain connect,
    and `--replace` would stop the agent the person works with)."""
    never(lambda: connects(ctx, sid, after), lambda calls: f"{how} ran {calls}")


def focused_at_its_agent(ctx, sid, window, how, click):
    """brought_back, with no connect run; the tray's own time is printed too."""
    after = len(ctx.sim_argv.json())
    # The tray logs after the window manager has answered, which may be after the test
    # saw the focus: its line for this click is the one past those already there.
    focused = len(logged(f"FOCUSED session={sid} in "))
    brought_back(ctx, window, how, click)
    wait_for(lambda: len(logged(f"FOCUSED session={sid} in ")) > focused,
             lambda: f"the log to say {sid} was focused; its last steps: {recent_steps()}")
    print(f"     the tray's own click → focus: {tray_focus_ms(sid)} ms", flush=True)
    no_connect(ctx, sid, after, how)


def persons_xterm(ctx, title, cwd, *lf_args):
    """An xterm the person opened, its shell running the stand-in lf (the shell stays
    lf's parent, as when typed at a prompt): terminal → shell → lf → the agent."""
    return xterm(ctx, title, "/bin/sh", "-c", '"$@"; echo "lf exited ($?)"; exec sleep 100000',
                 "sh", ctx.lf_bin, *lf_args, env=ctx.e2_env, cwd=cwd)


def e2_lf_a_claude_in_the_persons_xterm_pops_up_at_once_and_is_focused(ctx):
    """`lf -a claude` typed in the person's xterm: lf lists no terminal and no command
    line names the session, yet its ask pops up at once, the popup and the tray row bring
    that xterm back without a connect, and an ask in it while it has the focus does not
    pop up."""
    e2_start(ctx)
    title = "Claude here " + uuid.uuid4().hex[:6]
    cwd = ctx.repo / title.replace(" ", "-")
    cwd.mkdir()
    proc, window = persons_xterm(ctx, "lf -a claude", cwd, "-a", "claude")
    record = wait_for(lambda: e2_running(ctx, cwd=cwd), f"lf -a claude to start a session in {cwd}",
                      TERMINAL_TIMEOUT)
    sid = record["id"]
    expect(record["terminal_ids"] == [], f"lf lists terminal_ids {record['terminal_ids']} for a plain xterm")
    # Its title, so that its popups and its row are told apart from the others'.
    e2_lf(ctx, "sim", "rename", sid, title)
    e2_seen(ctx, sid)

    look_elsewhere(ctx)
    n = e2_popup_at_once(ctx, sid, title, "lf -a claude in the person's xterm")
    focused_at_its_agent(ctx, sid, window, "popup click (lf -a claude in the person's xterm)",
                         click_popup(ctx, n))
    # Looking at it: the next ask does not pop up; the row still says it waits.
    e2_quiet(ctx, sid)
    expect(active_window() == window, "the xterm lost the focus meanwhile")
    looked = len(logged(f"LOOKING_AT session={sid}"))
    seen, _ = e2_ask(ctx, sid, title)
    wait_for(lambda: len(logged(f"LOOKING_AT session={sid}")) > looked,
             lambda: f"the tray to see the person at {sid}'s xterm; its last steps: {recent_steps()}")
    never(lambda: ctx.popup(title, seen), lambda p: f"a popup for the xterm looked at: {p}")
    look_elsewhere(ctx)
    focused_at_its_agent(ctx, sid, window, "tray row (lf -a claude in the person's xterm)",
                         click_row(ctx, title))
    e2_quiet(ctx, sid)


def e2_lf_session_connect_in_the_persons_xterm_pops_up_at_once_and_is_focused(ctx):
    """`lf session connect <ID>` typed in the person's xterm: lf runs the agent there as
    `claude`; its ask pops up at once, and the popup and the tray row bring that xterm
    back without a second connect (lf would refuse it)."""
    e2_start(ctx)
    title = "Connected here " + uuid.uuid4().hex[:6]
    sid = "S-" + uuid.uuid4().hex[:10]
    e2_lf(ctx, "sim", "new", sid, "--title", title, "--cwd", str(ctx.repo), "--provider", "claude")
    proc, window = persons_xterm(ctx, "lf session connect", ctx.repo, "session", "connect", sid)
    record = wait_for(lambda: e2_running(ctx, sid), f"lf session connect to run {sid}'s agent",
                      TERMINAL_TIMEOUT)
    expect(record["terminal_ids"] == [], f"lf lists terminal_ids {record['terminal_ids']} for a plain xterm")
    e2_seen(ctx, sid)

    look_elsewhere(ctx)
    n = e2_popup_at_once(ctx, sid, title, "lf session connect in the person's xterm")
    focused_at_its_agent(ctx, sid, window, "popup click (lf session connect in the person's xterm)",
                         click_popup(ctx, n))
    look_elsewhere(ctx)
    focused_at_its_agent(ctx, sid, window, "tray row (lf session connect in the person's xterm)",
                         click_row(ctx, title))
    e2_quiet(ctx, sid)


def e2_a_headless_agent_says_so_and_its_click_shows_the_window(ctx):
    """A headless agent's ask says that no terminal shows it, and its click shows the
    app's window (where lf's Move here is), with no connect."""
    e2_start(ctx)
    title = "Headless " + uuid.uuid4().hex[:6]
    sid = "S-" + uuid.uuid4().hex[:10]
    e2_lf(ctx, "sim", "new", sid, "--title", title, "--cwd", str(ctx.repo), "--provider", "claude")
    started = json.loads(e2_lf(ctx, "sim", "agent", sid, "headless"))
    agent = Proc.of(started["pid"])
    expect(agent is not None, f"the headless agent is gone at once: {started}")
    ctx.agents.append(agent)
    wait_for(lambda: e2_running(ctx, sid),
             lambda: f"lf to list {sid}'s headless agent as live; it lists {e2_record(ctx, sid)}")
    e2_seen(ctx, sid)

    look_elsewhere(ctx)
    n = e2_popup_at_once(ctx, sid, title, "headless agent")
    expect(n.body.endswith(HEADLESS), f"the popup's body does not end with {HEADLESS!r}: {n.body!r}")
    after = len(ctx.sim_argv.json())
    shown = len(logged("WINDOW shown"))
    click = click_popup(ctx, n)
    app_windows = lambda: windows_of(ctx.app.pid)  # noqa: E731
    t0 = time.monotonic()
    click()
    wait_for(lambda: active_window() in app_windows(),
             lambda: f"the app's window ({app_windows()}) to come up; active is {active_window()}; "
             f"the app's last steps: {recent_steps()}")
    took = time.monotonic() - t0
    ctx.timings.append(("popup click (headless agent) → the app's window", took))
    print(f"     popup click (headless agent): the app's window in {took * 1000:.0f} ms", flush=True)
    wait_for(lambda: len(logged("WINDOW shown")) > shown,
             lambda: f"the log to say the window was shown; its last steps: {recent_steps()}")
    no_connect(ctx, sid, after, "the headless agent's popup click")
    expect(agent.alive(), "the headless agent stopped after the click")
    e2_quiet(ctx, sid)


def tmux_out(*args):
    """`tmux ARGS` on the checks' server; its stdout, or None when it fails."""
    out = subprocess.run(["tmux", *args], capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else None


def e2_lf_session_ensure_in_tmux_attached_in_an_xterm_is_selected_and_focused(ctx):
    """`lf session ensure ID`: lf runs the agent as its own child in a detached tmux
    session `lf-human-<12>` (no command line names the session, `terminal_ids` is []); the
    person attaches to it in an xterm and opens a second window there. Its ask pops up at
    once, and the popup and the tray row each select the agent's pane and make the xterm
    active, with no connect."""
    e2_start(ctx)
    title = "Ensured " + uuid.uuid4().hex[:6]
    sid = "S-" + uuid.uuid4().hex[:10]
    name = "lf-human-" + sid[:12]
    e2_lf(ctx, "sim", "new", sid, "--title", title, "--cwd", str(ctx.repo), "--provider", "claude")
    try:
        said = e2_lf(ctx, "session", "ensure", "--", sid)
        expect(name in said, f"lf session ensure says {said!r}, not its tmux session {name}")
        record = wait_for(lambda: e2_running(ctx, sid), f"lf session ensure to run {sid}'s agent",
                          TERMINAL_TIMEOUT)
        expect(record["terminal_ids"] == [], f"lf lists terminal_ids {record['terminal_ids']} for tmux")
        target = f"={name}:"
        agents_pane = tmux_out("list-panes", "-t", target, "-F", "#{pane_id}")
        expect(agents_pane and len(agents_pane.split()) == 1,
               f"tmux session {name} has panes {agents_pane!r}, not the agent's one")
        shown = lambda: tmux_out("display-message", "-p", "-t", target, "#{pane_id}")  # noqa: E731
        _, window = xterm(ctx, "tmux attach", "tmux", "attach", "-t", name, env=ctx.e2_env)
        wait_for(lambda: tmux_out("list-clients", "-t", f"={name}"), f"the xterm's tmux client on {name}")
        # The person's own second window, shown: the agent's pane is not the selected one.
        second = tmux_out("new-window", "-P", "-F", "#{window_id}", "-t", target, "--", "sleep", "100000")
        expect(second, f"tmux new-window in {name} failed")
        wait_for(lambda: shown() not in (None, agents_pane), f"tmux to show {name}'s second window")
        e2_seen(ctx, sid)

        look_elsewhere(ctx)
        n = e2_popup_at_once(ctx, sid, title, "lf session ensure, tmux in an xterm")
        focused_at_its_agent(ctx, sid, window, "popup click (lf session ensure, tmux in an xterm)",
                             click_popup(ctx, n))
        wait_for(lambda: shown() == agents_pane,
                 lambda: f"tmux to select the agent's pane {agents_pane}; it shows {shown()}; "
                 f"the app's last steps: {recent_steps()}")
        subprocess.run(["tmux", "select-window", "-t", second], check=True)
        wait_for(lambda: shown() not in (None, agents_pane), f"tmux to show {name}'s second window again")
        look_elsewhere(ctx)
        focused_at_its_agent(ctx, sid, window, "tray row (lf session ensure, tmux in an xterm)",
                             click_row(ctx, title))
        wait_for(lambda: shown() == agents_pane,
                 lambda: f"tmux to select the agent's pane {agents_pane}; it shows {shown()}; "
                 f"the app's last steps: {recent_steps()}")
        e2_quiet(ctx, sid)
        # Its end: the agent dies with its tmux session, which the tray reads as stopped
        # and says in a popup of its own; that one is closed here, else the next check
        # would find it beside its own.
        seen = ctx.notes.find(lambda n: title in n.summary)
        subprocess.run(["tmux", "kill-session", "-t", f"={name}"], check=True)
        wait_for(lambda: logged(f"SESSION stopped id={sid} "),
                 lambda: f"the tray to read {sid} stopped; its last steps: {recent_steps()}")
        wait_for(lambda: [n for n in ctx.notes.find(lambda n: title in n.summary) if n not in seen],
                 lambda: f"the popup saying {sid}'s agent stopped; the app's last steps: {recent_steps()}")
        subprocess.run(["dunstctl", "close-all"], check=True)
        wait_for(lambda: ctx.displayed() == 0, "dunst to close every popup")
    finally:
        # The pane's lf and its agent end with their tmux session (a hangup), and so
        # does the xterm's client. (Not the popups here: waiting on them after a failure
        # would hide it.)
        subprocess.run(["tmux", "kill-session", "-t", f"={name}"], capture_output=True)


E2_CHECKS = [
    e2_lf_a_claude_in_the_persons_xterm_pops_up_at_once_and_is_focused,
    e2_lf_session_connect_in_the_persons_xterm_pops_up_at_once_and_is_focused,
    e2_lf_session_ensure_in_tmux_attached_in_an_xterm_is_selected_and_focused,
    e2_a_headless_agent_says_so_and_its_click_shows_the_window,
]


MATRIX = [check for name in BY_HAND for check in (tray_opened(name), person_opened(name))]


def finish(ctx):
    end_app(ctx.app)
    subprocess.run(["tmux", "kill-session", "-t", "work"], capture_output=True)
    for p in ctx.mine:
        p.terminate()
    end(ctx.agents)
    end(own_children())
    (ctx.out / "timings.txt").write_text("".join(f"{how}\t{took * 1000:.0f} ms\n" for how, took in ctx.timings))


CHECKS = [
    the_terminal_the_tray_opened_comes_back_and_hides_its_own_popups,
    a_terminal_the_person_opened_is_found_and_comes_back,
    a_tmux_window_inside_an_xterm_is_selected_and_its_xterm_focused,
    a_terminal_that_is_gone_is_said_with_lfs_ways_there,
    kittys_tab_is_focused_with_its_window,
    konsoles_session_is_made_current_with_its_window,
]


def main():
    become_subreaper()
    ctx = Ctx()
    # E2E_FOCUS_MATRIX=0: without the matrix of six more terminals.
    checks = CHECKS + (MATRIX if os.environ.get("E2E_FOCUS_MATRIX", "1") != "0" else []) + E2_CHECKS
    # E2E_FOCUS_ONLY=kitty: only the checks whose name holds it, for working on one.
    only = os.environ.get("E2E_FOCUS_ONLY")
    if only:
        checks = [c for c in checks if only in c.__name__]
    return run_checks(checks, ctx, ctx.out / "result", finish)


if __name__ == "__main__":
    sys.exit(main())
