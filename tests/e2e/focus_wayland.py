#!/usr/bin/env python3
"""Go to terminal on KDE Plasma's and GNOME's Wayland sessions, for real.

Today's lf (E2, the stand-in) runs its agent in the person's own terminal (konsole on
KWin, foot on GNOME), a second terminal has the focus, and the agent asks: the popup's
click and the tray row each bring the agent's terminal to the front, as the COMPOSITOR
sees it (KWin: a script of the suite's printing `workspace.activeClient.pid` on every
change; GNOME: the suite's own extension printing `global.display.focus_window`'s pid),
with no `connect` run; an ask while the person looks at that terminal does not pop up.
On GNOME the person first runs the tray without its extension (told once what a click
cannot do there, and a click says the fix), then `lf-tray setup gnome-focus`, then logs
in again (the shell restarts).

Run through tests/e2e/focus-wayland.sh, which exports the paths read here.
"""

import json
import os
import re
import subprocess
import sys
import time
import traceback
import uuid
from pathlib import Path

import dbus

sys.path.insert(0, str(Path(__file__).resolve().parent))
from focus import ASK_TIMEOUT, ATTACHED_GRACE, connects, e2_running, logged, tray_focus_ms  # noqa: E402
from harness import (START_TIMEOUT, TERMINAL_TIMEOUT, CheckFailed, Lines, app_log,  # noqa: E402
                     become_subreaper, end, end_app, expect, never, own_children, recent_steps,
                     run_checks, wait_for)
from notifications import NotificationLog  # noqa: E402
from tray import Tray, plain  # noqa: E402

# The Wayland socket each compositor makes, in the run's own XDG_RUNTIME_DIR.
SOCKET = "lf-e2e"
# What the tray says once on GNOME without its extension (src-tauri/src/platform/focus/mod.rs).
GNOME_SETUP = "A click cannot bring your terminal to the front on GNOME yet"
EXTENSION = "lf-tray-focus@loopflow.dev"
ACTIVE = re.compile(r"E2E_ACTIVE (\d+)")


def has_owner(name):
    bus = dbus.SessionBus()
    return bool(bus.get_object("org.freedesktop.DBus", "/org/freedesktop/DBus")
                .NameHasOwner(name, dbus_interface="org.freedesktop.DBus"))


def scripting_ready():
    try:
        xml = dbus.SessionBus().get_object("org.kde.KWin", "/Scripting", introspect=False).Introspect(
            dbus_interface="org.freedesktop.DBus.Introspectable")
    except dbus.exceptions.DBusException:
        return False
    return "org.kde.kwin.Scripting" in xml


class Compositor:
    """What both desktops share: the compositor's log, where the suite's eyes write the
    focused window's pid on every change."""

    def __init__(self, ctx, log_name):
        self.ctx = ctx
        self.log = Lines(ctx.out / log_name)
        self.proc = None
        self.since = 0  # log lines of earlier runs of the compositor

    def active(self):
        """The pid of the window the compositor has focused now (0: none), or None before
        the eyes have said anything."""
        found = [m.group(1) for line in self.log.all()[self.since:] if (m := ACTIVE.search(line))]
        return int(found[-1]) if found else None

    def popen(self, argv, env=None):
        log = open(self.log.path, "ab")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        return proc

    def stop(self, name):
        end_app(self.proc)
        wait_for(lambda: not has_owner(name), f"{name} to leave the bus")


def major_version(argv, pattern):
    """The major version a program says it is (`kwin 5.27.5`, `GNOME Shell 48.7`)."""
    said = subprocess.run(argv, capture_output=True, text=True).stdout
    found = re.search(pattern, said)
    if not found:
        raise CheckFailed(f"{' '.join(argv)} said {said.strip()!r}, not a version")
    return int(found.group(1))


class Kwin(Compositor):
    terminal = "konsole"

    def __init__(self, ctx):
        super().__init__(ctx, "kwin.log")
        self.dunst = None
        # Plasma 6 renamed the script API's clients to windows and moved a loaded script's
        # object from /<id> to /Scripting/Script<id> (5.27 answers only the first, 6 only
        # the second: "No such object path '/0'").
        self.version = major_version([os.environ["E2E_KWIN"], "--version"], r"kwin\S*\s+(\d+)\.")
        plasma6 = self.version >= 6
        self.api = {
            "@LIST@": "windowList()" if plasma6 else "clientList()",
            "@ACTIVE@": "activeWindow" if plasma6 else "activeClient",
            "@ACTIVATED@": "windowActivated" if plasma6 else "clientActivated",
        }
        self.script_path = "/Scripting/Script{}" if plasma6 else "/{}"
        print(f"     KWin {self.version}: workspace.{self.api['@LIST@']}, "
              f"script objects at {self.script_path.format('<id>')}", flush=True)

    def speak(self, text):
        """A script in this KWin's API: the placeholders replaced by its names."""
        for placeholder, name in self.api.items():
            text = text.replace(placeholder, name)
        return text

    def start(self):
        # KWin offers its fake input (the away check's pointer) to a client without a
        # desktop file naming it only with its permission checks off; the app asks for
        # none of the protocols those checks guard.
        self.proc = self.popen([os.environ["E2E_KWIN"], "--virtual", "--width", "1280", "--height", "800",
                                "--socket", SOCKET, "--no-lockscreen"],
                               env=dict(os.environ, KWIN_WAYLAND_NO_PERMISSION_CHECKS="1"))
        wait_for(lambda: has_owner("org.kde.KWin"), "KWin on the bus (see kwin.log)", START_TIMEOUT)
        # KWin takes its name before it has made its scripting object: on a busy machine a
        # script loaded between the two finds no /Scripting (CI, stop 37).
        wait_for(scripting_ready, "KWin's /Scripting on the bus (see kwin.log)", START_TIMEOUT)
        os.environ.update(WAYLAND_DISPLAY=SOCKET, QT_QPA_PLATFORM="wayland")
        eyes = self.ctx.tmp / "kwin-eyes.js"
        eyes.write_text(self.speak((Path(__file__).resolve().parent / "focus-wayland" / "kwin-eyes.js").read_text()))
        self.script(eyes, "e2e-eyes", keep=True)
        wait_for(lambda: self.active() is not None, "the suite's KWin script to say the active window")
        self.dunst = subprocess.Popen(["dunst", "-config", str(Path(__file__).resolve().parent / "dunstrc")],
                                      stdout=open(self.ctx.out / "dunst.log", "ab"), stderr=subprocess.STDOUT,
                                      start_new_session=True)
        wait_for(lambda: has_owner("org.freedesktop.Notifications"), "dunst on the bus (see dunst.log)",
                 START_TIMEOUT)

    def script(self, path, name, keep=False):
        scripting = dbus.SessionBus().get_object("org.kde.KWin", "/Scripting")
        sid = int(scripting.loadScript(str(path), name, dbus_interface="org.kde.kwin.Scripting",
                                       signature="ss"))
        dbus.SessionBus().get_object("org.kde.KWin", self.script_path.format(sid)).run(
            dbus_interface="org.kde.kwin.Script")
        if not keep:
            # run() only starts it: its answer (the next E2E_ACTIVE) is what the caller waits for.
            return lambda: scripting.unloadScript(name, dbus_interface="org.kde.kwin.Scripting")
        return None

    def look_at(self, pid):
        """A person's click on another window: KWin makes it active."""
        path = self.ctx.tmp / f"look-at-{pid}.js"
        path.write_text(self.speak("var l = workspace.@LIST@;\n"
                                   f"for (var i = 0; i < l.length; i++) if (l[i].pid === {int(pid)}) "
                                   "workspace.@ACTIVE@ = l[i];\n"))
        unload = self.script(path, f"e2e-look-{uuid.uuid4().hex[:6]}")
        try:
            wait_for(lambda: self.active() == pid, lambda: f"KWin to make {pid} active; it says {self.active()}")
        finally:
            unload()

    def shown(self, pid):
        """Wait for `pid`'s window: KWin focuses a new window."""
        wait_for(lambda: self.active() == pid,
                 lambda: f"konsole's window ({pid}) to come up focused; KWin says {self.active()}",
                 TERMINAL_TIMEOUT)

    def open_terminal(self, argv, cwd, env):
        # One process per window, so the window's pid is konsole's.
        return subprocess.Popen(["konsole", "--separate", "-e", *argv], env=env, cwd=cwd,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)

    def popups(self, title):
        out = subprocess.run(["dunstctl", "count", "displayed"], capture_output=True, text=True)
        return int(out.stdout.strip() or 0)

    def click_popup(self, title):
        wait_for(lambda: self.popups(title) == 1, lambda: f"dunst to show only that popup: {self.popups(title)}")
        subprocess.run(["dunstctl", "action", "0"], check=True)

    def finish(self):
        end_app(self.dunst)
        end_app(self.proc)
        self.dunst = self.proc = None


class Gnome(Compositor):
    terminal = "foot"

    def __init__(self, ctx):
        super().__init__(ctx, "gnome-shell.log")

    def start(self):
        """The shell starts, as at a login: it loads the extensions enabled then."""
        self.since = len(self.log.all())
        self.proc = self.popen(["gnome-shell", "--headless", "--wayland", "--no-x11",
                                "--virtual-monitor", "1280x800", f"--wayland-display={SOCKET}"])
        wait_for(lambda: has_owner("org.gnome.Shell"), "GNOME Shell on the bus (see gnome-shell.log)",
                 START_TIMEOUT)
        os.environ["WAYLAND_DISPLAY"] = SOCKET
        wait_for(lambda: self.active() is not None, "the suite's extension to say the focused window",
                 START_TIMEOUT)
        wait_for(lambda: has_owner("org.freedesktop.Notifications"), "GNOME's notification server",
                 START_TIMEOUT)

    def e2e(self, method, *args):
        shell = dbus.SessionBus().get_object("org.gnome.Shell", "/org/loopflow/E2e")
        return shell.get_dbus_method(method, "org.loopflow.E2e")(*args)

    def look_at(self, pid):
        expect(self.e2e("Focus", dbus.UInt32(pid)), f"GNOME Shell shows no window of {pid}")
        wait_for(lambda: self.active() == pid, lambda: f"the shell to focus {pid}; it says {self.active()}")

    def shown(self, pid):
        """Wait for `pid`'s window, and focus it: the headless shell gives a new window
        no focus of its own (no input device, no activation token)."""
        wait_for(lambda: self.e2e("Focus", dbus.UInt32(pid)), f"foot's window ({pid}) to come up",
                 TERMINAL_TIMEOUT)
        wait_for(lambda: self.active() == pid, lambda: f"the shell to focus {pid}; it says {self.active()}")

    def open_terminal(self, argv, cwd, env):
        # foot has one process per window.
        return subprocess.Popen(["foot", *argv], env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)

    def popups(self, title):
        return int(self.e2e("Count", title))

    def click_popup(self, title):
        expect(int(self.e2e("Click", title)) > 0, f"no banner holds {title!r}")

    def finish(self):
        end_app(self.proc)
        self.proc = None


class Ctx:
    def __init__(self):
        env = os.environ
        self.app_bin = env["APP"]
        self.lf_bin = env["LF_BIN"]
        self.out = Path(env["E2E_OUT"])
        self.tmp = Path(env["E2E_TMP"])
        self.repo = self.tmp / "work" / "a repo"
        (self.repo / ".git").mkdir(parents=True, exist_ok=True)
        self.sim_argv = Lines(Path(env["LF_SIM_DIR"]) / "argv.jsonl")
        self.notes = NotificationLog(env["E2E_NOTIFY_PCAP"])
        self.desk = Kwin(self) if env["E2E_DESKTOP"] == "kwin" else Gnome(self)
        self.app = None
        self.item = None
        self.elsewhere = None
        self.mine = []
        self.timings = []

    @property
    def e2_env(self):
        """The environment of the person's session: the compositor's display once it runs."""
        return dict(os.environ)

    def lf(self, *args, env=None):
        out = subprocess.run([self.lf_bin, *args], env=env or self.e2_env, capture_output=True, text=True)
        if out.returncode != 0:
            raise CheckFailed(f"lf {' '.join(args)}: {out.stderr.strip()}")
        return out.stdout

    def start_app(self):
        self.stop_app()
        settings = Path(os.environ["XDG_CONFIG_HOME"]) / "lf-tray" / "settings.json"
        settings.parent.mkdir(parents=True, exist_ok=True)
        # The README's defaults but the terminal: what a person on this desktop has.
        settings.write_text(json.dumps({"terminal": self.desk.terminal}) + "\n")
        snapshots = len(logged("SNAPSHOT sessions="))
        log = open(self.out / "app.log", "ab")
        self.app = subprocess.Popen([self.app_bin, "--hidden"], env=dict(os.environ, GDK_BACKEND="wayland"),
                                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        tray = Tray(dbus.SessionBus())
        self.item = wait_for(lambda: tray.item_of_pid(self.app.pid), "the app's tray item", START_TIMEOUT)
        wait_for(lambda: "Reading sessions…" not in self.labels(), "the first snapshot in the menu",
                 START_TIMEOUT)
        # And in the log: a menu not drawn yet has no "Reading sessions…" either, and a
        # session that lf starts before the first snapshot is in it, never logged as
        # appearing (seen once on GNOME 48 in a loaded run).
        wait_for(lambda: len(logged("SNAPSHOT sessions=")) > snapshots,
                 lambda: f"the app's first snapshot in its log; its last steps: {recent_steps()}", START_TIMEOUT)

    def stop_app(self):
        end_app(self.app)
        self.app = None

    def labels(self):
        expect(self.app.poll() is None, f"the app exited ({self.app.returncode})")
        return [plain(e.label) for e in Tray(dbus.SessionBus()).layout(self.item).rows()]

    def popup(self, title, since):
        return [n for n in self.notes.find(lambda n: title in n.body or title in n.summary) if n not in since]

    def terminal(self, argv, cwd=None):
        proc = self.desk.open_terminal(argv, cwd or self.repo, self.e2_env)
        self.mine.append(proc)
        self.desk.shown(proc.pid)
        return proc

    def look_elsewhere(self):
        if self.elsewhere is None or self.elsewhere.poll() is not None:
            self.elsewhere = self.terminal(["sleep", "100000"])
        self.desk.look_at(self.elsewhere.pid)


def persons_terminal(ctx, cwd, *lf_args):
    """The person's own terminal, its shell running the stand-in lf (the shell stays lf's
    parent, as when typed at a prompt): terminal → shell → lf → the agent."""
    return ctx.terminal(["/bin/sh", "-c", '"$@"; echo "lf exited ($?)"; exec sleep 100000', "sh",
                         ctx.lf_bin, *lf_args], cwd=cwd)


def e2_seen(ctx, sid):
    wait_for(lambda: logged(f"id={sid} state=active"),
             lambda: f"the tray to read {sid} as active; its last steps: {recent_steps()}", START_TIMEOUT)


def ask(ctx, sid, title):
    before = ctx.popup(title, [])
    asked = time.monotonic()
    ctx.lf("sim", "status", sid, "blocked", "--kind", "question", "--title", "Which branch should I rebase onto?",
           "--msg", f"Asked in {title}")
    return before, asked


def popup_at_once(ctx, sid, title, how):
    seen, asked = ask(ctx, sid, title)
    n = wait_for(lambda: ctx.popup(title, seen),
                 lambda: f"the ask's popup ({how}); the app's last steps: {recent_steps()}", ASK_TIMEOUT)[-1]
    took = time.monotonic() - asked
    expect(took < ATTACHED_GRACE, f"the popup took {took:.1f} s: the attached grace held it")
    wait_for(lambda: ctx.notes.listening(n), "the app to listen for the popup's actions")
    return n


def quiet(ctx, sid, title):
    """The agent works again, the tray has read it so, and its popups are gone."""
    done = lambda: len(logged(f" id={sid} ", "needs_you=false"))  # noqa: E731
    seen = done()
    ctx.lf("sim", "status", sid, "working")
    wait_for(lambda: done() > seen, lambda: f"the tray to read {sid} working; its last steps: {recent_steps()}")
    wait_for(lambda: ctx.desk.popups(title) == 0, "the popups to close once the agent works again")


def brought_back(ctx, sid, window, how, click):
    """Click, and wait until the compositor has `window`'s process focused; no connect
    runs. The test's time and the tray's own are printed and noted."""
    expect(ctx.desk.active() != window, "the terminal was focused before the click")
    after = len(ctx.sim_argv.json())
    focused = len(logged(f"FOCUSED session={sid} in "))
    t0 = time.monotonic()
    click()
    wait_for(lambda: ctx.desk.active() == window,
             lambda: f"{how} to bring {window} to the front; the compositor has {ctx.desk.active()}; "
             f"the app's last steps: {recent_steps()}")
    took = time.monotonic() - t0
    wait_for(lambda: len(logged(f"FOCUSED session={sid} in ")) > focused,
             lambda: f"the log to say {sid} was focused; its last steps: {recent_steps()}")
    own = tray_focus_ms(sid)
    ctx.timings.append((how, took, own))
    print(f"     {how}: focused in {took * 1000:.0f} ms (the tray's own click → focus: {own} ms)", flush=True)
    never(lambda: connects(ctx, sid, after), lambda calls: f"{how} ran {calls}")


def click_row(ctx, title):
    tray = Tray(dbus.SessionBus())
    return lambda: wait_for(lambda: tray.click_row(ctx.item, title) is not None or None,
                            lambda: f"a tray row for {title!r}; rows: {ctx.labels()}")


def the_agent_is_brought_back(ctx, how):
    """The E2 agent in the person's terminal (`how`: `lf -a claude` or `lf session
    connect`), another terminal focused: its popup and its tray row each bring the
    agent's terminal to the front; an ask while it is focused does not pop up."""
    ctx.start_app()
    title = f"{how} on {ctx.desk.terminal} " + uuid.uuid4().hex[:6]
    cwd = ctx.repo / uuid.uuid4().hex[:8]
    cwd.mkdir()
    if how == "lf -a claude":
        window = persons_terminal(ctx, cwd, "-a", "claude").pid
        record = wait_for(lambda: e2_running(ctx, cwd=cwd), f"lf -a claude to start a session in {cwd}",
                          TERMINAL_TIMEOUT)
        sid = record["id"]
        ctx.lf("sim", "rename", sid, title)
    else:
        sid = "S-" + uuid.uuid4().hex[:10]
        ctx.lf("sim", "new", sid, "--title", title, "--cwd", str(cwd), "--provider", "claude")
        window = persons_terminal(ctx, cwd, "session", "connect", sid).pid
        record = wait_for(lambda: e2_running(ctx, sid), f"lf session connect to run {sid}'s agent",
                          TERMINAL_TIMEOUT)
    expect(record["terminal_ids"] == [], f"lf lists terminal_ids {record['terminal_ids']} for the person's terminal")
    e2_seen(ctx, sid)

    ctx.look_elsewhere()
    popup_at_once(ctx, sid, title, how)
    brought_back(ctx, sid, window, f"popup click ({how} in {ctx.desk.terminal})",
                 lambda: ctx.desk.click_popup(title))
    # Looking at it: the next ask does not pop up.
    quiet(ctx, sid, title)
    expect(ctx.desk.active() == window, "the terminal lost the focus meanwhile")
    looked = len(logged(f"LOOKING_AT session={sid}"))
    seen, _ = ask(ctx, sid, title)
    wait_for(lambda: len(logged(f"LOOKING_AT session={sid}")) > looked,
             lambda: f"the tray to see the person at {sid}'s terminal; its last steps: {recent_steps()}")
    never(lambda: ctx.popup(title, seen), lambda p: f"a popup for the terminal looked at: {p}")
    ctx.look_elsewhere()
    brought_back(ctx, sid, window, f"tray row ({how} in {ctx.desk.terminal})", click_row(ctx, title))
    quiet(ctx, sid, title)


def kwin_lf_a_claude_in_konsole_comes_back_from_the_popup_and_the_row(ctx):
    the_agent_is_brought_back(ctx, "lf -a claude")


def kwin_lf_session_connect_in_konsole_comes_back_from_the_popup_and_the_row(ctx):
    the_agent_is_brought_back(ctx, "lf session connect")


# Away after this long without input: long enough for the app's start and the first
# snapshot on a loaded machine to come before it (away counts from when the app asked).
AWAY_AFTER = 3
# A present person moves the pointer this often: well inside AWAY_AFTER.
INPUT_EVERY = 0.5


def kwin_away_from_its_idle_notification_pushes_and_input_brings_back(ctx):
    """Away on KWin, from the compositor's own idle notification (KWin 6:
    ext_idle_notifier_v1; 5.27: what it offers, said): the headless seat has no input, so
    AWAY_AFTER after the app's start it counts the person away and an ask is pushed to the
    stand-in ntfy server; KWin's fake input moves the pointer → back → the next ask only
    pops up."""
    from ntfy import Ntfy
    from person import Person
    from vpointer import FakeInput

    ctx.stop_app()
    token = "tk_kwin" + uuid.uuid4().hex
    server = Ntfy(token)
    server.start()
    pointer = person = None
    try:
        settings = Path(os.environ["XDG_CONFIG_HOME"]) / "lf-tray" / "settings.json"
        settings.write_text(json.dumps({"terminal": ctx.desk.terminal, "push_url": server.url("lf-kwin"),
                                        "push_token": token, "away_after_seconds": AWAY_AFTER}) + "\n")
        log = open(ctx.out / "app-away.log", "ab")
        ctx.app = subprocess.Popen([ctx.app_bin, "--hidden"], env=dict(os.environ, GDK_BACKEND="wayland"),
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        started = time.monotonic()
        app = ctx.app.pid

        def said(prefix):
            lines = app_log().messages()
            starts = [i for i, m in enumerate(lines) if m.startswith("START lf-tray") and f"pid={app}" in m]
            return [m for m in lines[starts[-1]:] if m.startswith(prefix)] if starts else []
        sources = wait_for(lambda: said("PRESENCE sources:"), "the tray to say what tells it away",
                           START_TIMEOUT)[-1]
        protocol = "ext_idle_notifier_v1" if "ext_idle_notifier_v1" in sources else "org_kde_kwin_idle"
        print(f"     KWin {ctx.desk.version}: {sources}", flush=True)
        expect(f"no input for {AWAY_AFTER} s (the compositor's {protocol}" in sources,
               f"the tray does not follow KWin's idle notification: {sources!r}")
        if ctx.desk.version >= 6:
            expect(protocol == "ext_idle_notifier_v1", f"KWin 6, yet the tray follows {protocol}")
        away = wait_for(lambda: said("PRESENCE away"), "the tray to count the person away",
                        AWAY_AFTER + START_TIMEOUT)[-1]
        expect("idle=Some(true)" in away and protocol in away, f"away, but not by KWin's idle: {away!r}")
        print(f"     no input → away {time.monotonic() - started:.1f} s after the app's start "
              f"(away after {AWAY_AFTER} s)", flush=True)

        sid = "S-" + uuid.uuid4().hex[:10]
        title = "Away on KWin " + uuid.uuid4().hex[:6]
        ctx.lf("sim", "new", sid, "--title", title, "--cwd", str(ctx.repo), "--provider", "claude")
        asked = time.monotonic()
        ctx.lf("sim", "status", sid, "blocked", "--kind", "question", "--title", "Which branch?")
        push = wait_for(lambda: [p for p in server.taken() if title in (p["title"] or "")],
                        lambda: f"the ask's push while away; pushed: {server.taken()}")[0]
        print(f"     an ask while away → its push in {push['received'] - asked:.3f} s: {push['title']!r}",
              flush=True)
        headers = {k.lower(): v for k, v in push["headers"].items()}
        expect(headers.get("authorization") == f"Bearer {token}", f"no bearer token on the push: {headers}")

        pointer = FakeInput()
        back = len(said("PRESENCE present"))
        # A person at the desk from now on: a motion every INPUT_EVERY, well inside
        # AWAY_AFTER, back and forth so each is a motion.
        step = [1]

        def motion():
            step[0] = -step[0]
            pointer.nudge(step[0])
        person = Person(motion, INPUT_EVERY)
        moved = time.monotonic()
        person.arrive()
        wait_for(lambda: said("PRESENCE present")[back:], "the tray to count the person back after the motion")
        print(f"     fake pointer motion → back in {time.monotonic() - moved:.3f} s", flush=True)
        # Present now: the next ask pops up and is not pushed.
        pushed = len(server.taken())
        ctx.lf("sim", "status", sid, "working")
        seen = ctx.popup(title, [])
        ctx.lf("sim", "status", sid, "blocked", "--kind", "question", "--title", "Which tag?")
        wait_for(lambda: ctx.popup(title, seen), "the next ask's popup once the person is back")
        never(lambda: server.taken()[pushed:], lambda p: f"a push after the person came back: {p}")
    finally:
        if person is not None:
            person.stop()
        if pointer is not None:
            pointer.close()
        ctx.stop_app()
        server.stop()


def gnome_without_the_extension_says_so_once_and_its_click_names_the_fix(ctx):
    """GNOME's Wayland session with no extension of the tray's: a popup says once what a
    click cannot do and the command that fixes it (not again at the next start), and a
    click on the agent's popup says it again, where the session runs."""
    ctx.start_app()
    told = lambda: ctx.notes.find(lambda n: n.summary == GNOME_SETUP)  # noqa: E731
    said = wait_for(told, lambda: f"the popup saying a click cannot focus here; the app's last steps: "
                    f"{recent_steps()}", START_TIMEOUT)
    expect(len(said) == 1 and "lf-tray setup gnome-focus" in said[0].body, f"it says {said[0].describe()}")
    title = "No extension " + uuid.uuid4().hex[:6]
    cwd = ctx.repo / uuid.uuid4().hex[:8]
    cwd.mkdir()
    persons_terminal(ctx, cwd, "-a", "claude")
    sid = wait_for(lambda: e2_running(ctx, cwd=cwd), "lf -a claude to start a session", TERMINAL_TIMEOUT)["id"]
    ctx.lf("sim", "rename", sid, title)
    e2_seen(ctx, sid)
    ctx.look_elsewhere()
    popup_at_once(ctx, sid, title, "no extension")
    before = ctx.notes.find(lambda n: True)
    ctx.desk.click_popup(title)
    cannot = wait_for(lambda: [m for m in ctx.notes.find(lambda m: m.summary.startswith("Cannot go to"))
                               if m not in before],
                      lambda: f"a popup saying why not; the app's last steps: {recent_steps()}")[0]
    expect("lf-tray setup gnome-focus" in cannot.body and "foot" in cannot.body,
           f"the click's popup says {cannot.body!r}")
    ctx.lf("sim", "status", sid, "working")
    # The next start does not tell it again.
    ctx.start_app()
    wait_for(lambda: logged("GNOME_FOCUS_SETUP told already"),
             lambda: f"the app to decide not to tell it again; its last steps: {recent_steps()}", START_TIMEOUT)
    expect(len(told()) == 1, f"told again: {[n.describe() for n in told()]}")
    ctx.stop_app()


def gnome_version():
    return int(os.environ["E2E_GNOME_VERSION"])


def tray_extension_dir():
    return Path(os.environ["XDG_DATA_HOME"]) / "gnome-shell" / "extensions" / EXTENSION


def log_in_again(ctx):
    """Logging out and in: the tray and the terminals end with the session, and the shell
    starts again, loading the extensions enabled then."""
    ctx.stop_app()
    for proc in ctx.mine:
        proc.terminate()
    ctx.elsewhere = None
    ctx.desk.stop("org.gnome.Shell")
    ctx.desk.start()


def tray_extension_state():
    """The shell's word on the tray's extension (GNOME's ExtensionState: 1 enabled or
    active, 4 out of date), 0 when the shell does not know it."""
    info = dbus.SessionBus().get_object("org.gnome.Shell", "/org/gnome/Shell").GetExtensionInfo(
        EXTENSION, dbus_interface="org.gnome.Shell.Extensions")
    return int(info.get("state", 0))


def the_tray_extension_answers():
    """Wait for the tray's extension to answer `Windows()`: the shell enables extensions
    one after another, and the suite's own (which `start` waits for) may come first (seen
    on GNOME 48 in a loaded run: no object at the path yet)."""
    def windows():
        shell = dbus.SessionBus().get_object("org.gnome.Shell", "/org/loopflow/Tray/Focus")
        try:
            pids, _ = shell.Windows(dbus_interface="org.loopflow.Tray.Focus1")
        except dbus.exceptions.DBusException:
            return None
        return list(pids) or True
    wait_for(windows, "the tray's extension to answer Windows() on /org/loopflow/Tray/Focus", START_TIMEOUT)


def lf_tray_setup_gnome_focus_installs_the_extension_for_the_next_login(ctx):
    """`lf-tray setup gnome-focus` puts the extension into the person's profile, in the
    format this shell loads and listing every version that format loads on, enables it,
    and says it works from the next login; after that login (the shell restarted) it
    answers on the bus."""
    out = subprocess.run([ctx.app_bin, "setup", "gnome-focus"], capture_output=True, text=True, timeout=30)
    expect(out.returncode == 0, f"setup failed: {out.stderr.strip()}")
    expect("next login" in out.stdout and "GNOME Shell " in out.stdout, f"it says {out.stdout!r}")
    version = gnome_version()
    meta = json.loads((tray_extension_dir() / "metadata.json").read_text())
    listed = [int(v) for v in meta["shell-version"]]
    expect(version in listed and len(listed) > 1, f"metadata: {meta}")
    source = (tray_extension_dir() / "extension.js").read_text()
    if version < 45:
        expect("function init()" in source and max(listed) == 44, f"not the imports format up to 44: {meta}")
    else:
        expect("export default class" in source and min(listed) == 45, f"not the ES-module format from 45: {meta}")
    enabled = subprocess.run(["gsettings", "get", "org.gnome.shell", "enabled-extensions"],
                             capture_output=True, text=True).stdout
    expect(EXTENSION in enabled and "lf-tray-e2e@loopflow.dev" in enabled, f"enabled: {enabled!r}")
    log_in_again(ctx)
    the_tray_extension_answers()


def after_a_gnome_upgrade_the_tray_writes_its_extension_again_and_says_log_in_once(ctx):
    """The extension as an older setup wrote it under an older GNOME (one version, the
    imports format: 43's when this is 45 or later, 42's on 43): after the upgrade the
    shell holds it out of date at login, however often the person logs in. The tray's
    next start writes the format and versions this shell loads, says so once with "log
    out and in again", and after that login it answers."""
    older = 43 if gnome_version() >= 45 else 42
    ext = tray_extension_dir()
    meta = json.loads((ext / "metadata.json").read_text())
    (ext / "metadata.json").write_text(json.dumps(dict(meta, **{"shell-version": [str(older)]})) + "\n")
    packaging = Path(__file__).resolve().parents[2] / "packaging" / "gnome-focus"
    (ext / "extension.js").write_text((packaging / "43" / "extension.js").read_text())
    log_in_again(ctx)
    expect(tray_extension_state() == 4, f"the shell did not hold it out of date: state {tray_extension_state()}")
    ctx.start_app()
    summary = f"Loopflow Tray updated its GNOME focus extension for GNOME Shell {gnome_version()}"
    said = wait_for(lambda: ctx.notes.find(lambda n: n.summary == summary),
                    lambda: f"the popup saying the extension was written again; the app's last steps: "
                    f"{recent_steps()}", START_TIMEOUT)
    expect(len(said) == 1 and f"made for GNOME Shell {older}" in said[0].body
           and "Log out and in again once" in said[0].body, f"it says {said[0].describe()}")
    meta = json.loads((ext / "metadata.json").read_text())
    expect(str(gnome_version()) in meta["shell-version"], f"metadata: {meta}")
    log_in_again(ctx)
    wait_for(lambda: tray_extension_state() == 1, lambda: f"the shell to load it: state {tray_extension_state()}")
    the_tray_extension_answers()


def gnome_lf_session_connect_in_foot_comes_back_from_the_popup_and_the_row(ctx):
    the_agent_is_brought_back(ctx, "lf session connect")


def gnome_lf_a_claude_in_foot_comes_back_from_the_popup_and_the_row(ctx):
    the_agent_is_brought_back(ctx, "lf -a claude")


def lf_tray_setup_gnome_focus_remove_takes_it_out(ctx):
    """`lf-tray setup gnome-focus --remove`: the extension's directory is gone and it is no
    longer enabled (the suite's own stays), from the next login."""
    out = subprocess.run([ctx.app_bin, "setup", "gnome-focus", "--remove"], capture_output=True, text=True,
                         timeout=30)
    expect(out.returncode == 0 and "next login" in out.stdout, f"--remove: {out.stdout!r} {out.stderr!r}")
    dir = tray_extension_dir()
    expect(not dir.exists(), f"{dir} is still there")
    enabled = subprocess.run(["gsettings", "get", "org.gnome.shell", "enabled-extensions"],
                             capture_output=True, text=True).stdout
    expect(EXTENSION not in enabled and "lf-tray-e2e@loopflow.dev" in enabled, f"enabled: {enabled!r}")
    again = subprocess.run([ctx.app_bin, "setup", "gnome-focus", "--remove"], capture_output=True, text=True,
                           timeout=30)
    expect(again.returncode == 0 and "was not installed" in again.stdout, f"a second --remove: {again.stdout!r}")


def finish(ctx):
    end_app(ctx.app)
    for p in ctx.mine:
        p.terminate()
    end(own_children())
    ctx.desk.finish()
    (ctx.out / "timings.txt").write_text("".join(f"{how}\t{took * 1000:.0f} ms\ttray {own} ms\n"
                                                 for how, took, own in ctx.timings))


CHECKS = {
    "kwin": [
        kwin_lf_a_claude_in_konsole_comes_back_from_the_popup_and_the_row,
        kwin_lf_session_connect_in_konsole_comes_back_from_the_popup_and_the_row,
        kwin_away_from_its_idle_notification_pushes_and_input_brings_back,
    ],
    "gnome": [
        gnome_without_the_extension_says_so_once_and_its_click_names_the_fix,
        lf_tray_setup_gnome_focus_installs_the_extension_for_the_next_login,
        gnome_lf_a_claude_in_foot_comes_back_from_the_popup_and_the_row,
        gnome_lf_session_connect_in_foot_comes_back_from_the_popup_and_the_row,
        after_a_gnome_upgrade_the_tray_writes_its_extension_again_and_says_log_in_once,
        lf_tray_setup_gnome_focus_remove_takes_it_out,
    ],
}


def main():
    become_subreaper()
    ctx = None
    try:
        ctx = Ctx()
        ctx.desk.start()
    except Exception as e:
        # Whatever failed (a D-Bus error as well as a check), what was started stops: a
        # compositor left running would outlive the run (its own session, the bus gone).
        why = str(e) if isinstance(e, CheckFailed) else traceback.format_exc()
        print(f"FAIL setup: {why}", flush=True)
        (Path(os.environ["E2E_OUT"]) / "result").write_text("0 1 0\n")
        if ctx is not None:
            ctx.desk.finish()
        end(own_children())
        return 1
    return run_checks(CHECKS[os.environ["E2E_DESKTOP"]], ctx, ctx.out / "result", finish)


if __name__ == "__main__":
    sys.exit(main())
