#!/usr/bin/env python3
"""The Wayland pass: Loopflow Tray on sway (headless), with waybar as its tray host,
mako as its notification server and foot as its terminal, on a private session bus.

Run through tests/e2e/wayland.sh, which starts those parts as an unprivileged user and
exports the paths read here. Every check waits for what a person would see: the item
in waybar's watcher and its dbusmenu, the popup in `makoctl list`, a foot window in
sway's tree running the stand-in lf on a tty. The app's step log is never asserted on.
"""

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import dbus

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import (APP_NAME, START_TIMEOUT, TERMINAL_TIMEOUT, Lines,  # noqa: E402
                     Checks, app_log, become_subreaper, end, environ, expect, expect_session_call, open_calls,
                     own_children, recent_steps, run_checks, session_lf, terminal_of, wait_for,
                     first_snapshot_logged, never, STEP_TIMEOUT)
from lfhome import LfHome  # noqa: E402
from notifications import IFACE as NOTIFY_IFACE  # noqa: E402
from notifications import NotificationLog  # noqa: E402
from person import Person  # noqa: E402
from tray import Tray, plain  # noqa: E402
from vpointer import VirtualPointer  # noqa: E402

OUTPUT = (1280, 800)  # wayland/sway.conf; mako.conf centres popups in it


class Log(NotificationLog):
    """The notification log, plus the ActivationToken signal (Notifications spec 1.2):
    the server's xdg-activation token for the action that follows."""

    def __init__(self, path):
        super().__init__(path)
        self.tokens = {}  # notification id -> token

    def _message(self, blob):
        super()._message(blob)
        from gi.repository import Gio

        msg = Gio.DBusMessage.new_from_blob(blob, Gio.DBusCapabilityFlags.NONE)
        if (msg.get_message_type() == Gio.DBusMessageType.SIGNAL
                and msg.get_interface() == NOTIFY_IFACE and msg.get_member() == "ActivationToken"):
            nid, token = msg.get_body().unpack()
            self.tokens[nid] = token


def mako_list():
    """The popups mako shows, newest first, as {id, app-name, summary, body, actions}."""
    out = subprocess.run(["makoctl", "list"], capture_output=True, text=True, check=True).stdout
    data = json.loads(out)["data"][0]
    return [{key: value.get("data") for key, value in n.items()} for n in data]


def sway_views():
    """Every window in sway's tree, as the tree's nodes (with pid, app_id, name, rect)."""
    tree = json.loads(subprocess.run(["swaymsg", "-t", "get_tree", "-r"], capture_output=True,
                                     text=True, check=True).stdout)
    views, stack = [], [tree]
    while stack:
        node = stack.pop()
        if node.get("pid") and node.get("type") in ("con", "floating_con"):
            views.append(node)
        stack.extend(node.get("nodes", []) + node.get("floating_nodes", []))
    return views


class Ctx:
    def __init__(self):
        env = os.environ
        self.app_bin = env["APP"]
        self.out = Path(env["E2E_OUT"])
        self.tmp = Path(env["E2E_TMP"])
        self.home = LfHome(env["LF_HOME"])
        self.sim_argv = Lines(Path(env["LF_SIM_DIR"]) / "argv.jsonl")
        self.notes = Log(env["E2E_NOTIFY_PCAP"])
        self.bus = dbus.SessionBus()
        self.tray = Tray(self.bus)
        self.app = None
        self.item = None
        self.ask = None
        self.pointer = None
        self.terminals = []  # terminals (Proc) the app opened, ended at the finish
        self.ntfy = None  # the stand-in push server, once a check starts it
        self.person = None  # pointer motion as a present person makes it
        self.figures = {}  # what a check measured, printed at the finish

    def start_app(self):
        log = open(self.out / "app.log", "ab")
        self.app = subprocess.Popen([self.app_bin, "--hidden"], env=os.environ.copy(), stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        log.close()

    def require_app(self):
        expect(self.app is not None, "the app was not started")
        expect(self.app.poll() is None, f"the app is not running (exit code {self.app.returncode}); see app.log")

    def menu_labels(self):
        self.require_app()
        return [plain(e.label) for e in self.tray.layout(self.item).rows() if e.type != "separator"]

    def screenshot(self, name, region=None):
        region = ["-g", region] if region else []
        subprocess.run(["grim", *region, str(self.out / name)], check=True, capture_output=True)

    def make_cwd(self, name):
        path = self.tmp / "work" / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def write_ask(self, title, detail, cwd):
        sid = "ask_" + uuid.uuid4().hex
        prompt = title + "\nThe tray should open this in foot."
        self.home.write_ask(sid, title=title, prompt=prompt, cwd=cwd, detail=detail)
        return {"id": sid, "title": title, "detail": detail, "prompt": prompt, "cwd": cwd}

    def popup(self, ask):
        """mako's popup for ask, once it shows, and the Notify call behind it."""
        shown = wait_for(lambda: [p for p in mako_list() if ask["title"] in (p.get("body") or "")],
                         lambda: f"mako to show the popup for {ask['id']}; makoctl list: {mako_list()}")[0]
        sent = wait_for(lambda: self.notes.find(lambda n: n.id == shown["id"]),
                        f"the Notify call behind mako's popup {shown['id']}")[-1]
        return shown, sent

    def session_in_foot(self, ask, after):
        """The stand-in lf started for ask after the first `after` calls, checked, and the
        foot that runs it: (call, foot pid)."""
        call = wait_for(lambda: open_calls(self.sim_argv, ask["id"], after),
                        lambda: f"lf session open {ask['id']} to run; lf calls: "
                        f"{[c['argv'] for c in self.sim_argv.json()[after:]]}; the app's last steps: "
                        f"{recent_steps()}", TERMINAL_TIMEOUT)[0]
        expect_session_call(call, ask["id"], ask["cwd"], self.home.root)
        foot = terminal_of(session_lf(call), "foot")[0]
        self.terminals.append(foot)
        return call, foot


CHECKS = Checks()
check = CHECKS.add


@check
def the_desktop_is_up(ctx):
    """sway has its output, mako serves notifications, waybar hosts the tray."""
    outputs = json.loads(subprocess.run(["swaymsg", "-t", "get_outputs", "-r"], capture_output=True,
                                        text=True, check=True).stdout)
    sizes = [(o["name"], o["rect"]["width"], o["rect"]["height"]) for o in outputs if o.get("active")]
    expect(sizes == [("HEADLESS-1", *OUTPUT)], f"sway's outputs are {sizes}")
    server = ctx.bus.get_object("org.freedesktop.Notifications", "/org/freedesktop/Notifications")
    info = server.GetServerInformation(dbus_interface=NOTIFY_IFACE)
    expect(str(info[0]) == "mako", f"the notification server is {info[0]!r}, not mako")
    dbus_daemon = ctx.bus.get_object("org.freedesktop.DBus", "/org/freedesktop/DBus")
    owner = dbus_daemon.GetNameOwner("org.kde.StatusNotifierWatcher", dbus_interface="org.freedesktop.DBus")
    pid = int(dbus_daemon.GetConnectionUnixProcessID(owner, dbus_interface="org.freedesktop.DBus"))
    comm = Path(f"/proc/{pid}/comm").read_text().strip()
    expect(comm == "waybar", f"org.kde.StatusNotifierWatcher is owned by {comm!r} (pid {pid}), not waybar")
    watcher = ctx.bus.get_object("org.kde.StatusNotifierWatcher", "/StatusNotifierWatcher")
    host = watcher.Get("org.kde.StatusNotifierWatcher", "IsStatusNotifierHostRegistered",
                       dbus_interface="org.freedesktop.DBus.Properties")
    expect(bool(host), "waybar's watcher has no host registered (its tray module is not there)")
    expect(ctx.tray.items() == [], f"waybar's watcher already lists items: {ctx.tray.items()}")
    # The pointer device comes now, long before a click: mako binds its wl_pointer when
    # the seat announces the new capability.
    ctx.pointer = VirtualPointer(*OUTPUT)


@check
def app_starts_on_wayland_with_its_tray_item_in_waybar(ctx):
    expect("DISPLAY" not in os.environ and os.environ.get("GDK_BACKEND") == "wayland",
           "the app would not be on Wayland only: DISPLAY is set or GDK_BACKEND is not wayland")
    ctx.start_app()

    def registered():
        ctx.require_app()
        return ctx.tray.item_of_pid(ctx.app.pid)

    ctx.item = wait_for(registered, "the app's StatusNotifierItem in waybar's watcher", START_TIMEOUT)
    props = ctx.tray.properties(ctx.item)
    expect(str(props.get("Status")) in ("Active", "NeedsAttention"), f"tray item status {props.get('Status')!r}")
    got = wait_for(lambda: "No sessions waiting" in ctx.menu_labels() and ctx.menu_labels(),
                   "`No sessions waiting` in the tray menu", START_TIMEOUT)
    for control in ("Show window", "Pause notifications", "Quit"):
        expect(control in got, f"the tray menu lacks {control!r}: {got}")
    ctx.screenshot("tray.png")


@check
def second_instance_shows_the_window_on_sway(ctx):
    """The window is a Wayland surface of the app's own (no Xwayland here), and WebKit
    paints its page there."""
    ctx.require_app()
    expect(not [v for v in sway_views() if v["pid"] == ctx.app.pid],
           "the app has a window before the second instance although it was started --hidden")
    second = subprocess.run([ctx.app_bin], env=os.environ.copy(), capture_output=True, timeout=15)
    expect(second.returncode == 0, f"the second instance exited {second.returncode}: {second.stderr[-300:]!r}")
    view = wait_for(lambda: [v for v in sway_views() if v["pid"] == ctx.app.pid and v.get("visible")],
                    "the first instance's window in sway's tree")[0]
    expect(view.get("shell") == "xdg_shell", f"the window's shell is {view.get('shell')!r}, not xdg_shell")

    def painted():
        # The window's content only: sway's title bar and waybar have text of their own,
        # and the border adds a colour.
        r = [v for v in sway_views() if v["pid"] == ctx.app.pid][0]["rect"]
        ctx.screenshot("window.png", f"{r['x'] + 4},{r['y'] + 4} {r['width'] - 8}x{r['height'] - 8}")
        colours = subprocess.run(["identify", "-format", "%k", str(ctx.out / "window.png")],
                                 capture_output=True, text=True, check=True).stdout
        # A flat fill has a handful of colours; antialiased text has dozens at least.
        return int(colours) > 16

    wait_for(painted, "the window to show its page (not a flat fill)", START_TIMEOUT)
    # Hidden again, so that foot's windows are what the later screenshots show.
    subprocess.run(["swaymsg", f"[pid={ctx.app.pid}]", "kill"], check=True, capture_output=True)
    wait_for(lambda: not [v for v in sway_views() if v["pid"] == ctx.app.pid], "the window to close")
    expect(ctx.app.poll() is None, "closing the window ended the app (it should stay in the tray)")


@check
def ask_pops_up_in_mako(ctx):
    ctx.require_app()
    ctx.ask = ctx.write_ask("Which storage engine for the cache?", "loop-decide", ctx.make_cwd("repo one"))
    shown, sent = ctx.popup(ctx.ask)
    expect(shown.get("app-name") == APP_NAME, f"mako shows app name {shown.get('app-name')!r}")
    expect(shown.get("summary") == "Agent asks · loop-decide", f"mako shows summary {shown.get('summary')!r}")
    body = shown.get("body") or ""
    expect(body.split("\n")[0] == ctx.ask["title"], f"mako's body starts {body!r}; expected the title first")
    expect("open this in foot" in body, f"mako's body {body!r} lacks the question")
    actions = shown.get("actions") or {}
    expect("default" in actions, f"mako offers actions {actions!r}, no default one")
    ctx.ask["notification"] = sent
    ctx.screenshot("notification.png")


@check
def makoctl_invoke_opens_foot_with_the_session(ctx):
    a = ctx.ask or {}
    expect(a.get("notification"), "no popup to invoke (previous check failed)")
    # notify-rust subscribes to ActionInvoked just after Notify returns; an action in
    # between is lost (a person never clicks that fast, a test does).
    wait_for(lambda: ctx.notes.listening(a["notification"]), "the app to listen for the popup's actions")
    before = len(ctx.sim_argv.json())
    views_before = {v["id"] for v in sway_views()}
    subprocess.run(["makoctl", "invoke", "-n", str(a["notification"].id), "default"], check=True)
    _, foot = ctx.session_in_foot(a, before)

    def window():
        return [v for v in sway_views() if v["pid"] == foot.pid and v["id"] not in views_before]

    view = wait_for(window, lambda: f"{foot} to show a window in sway's tree; views: "
                    f"{[(v['pid'], v.get('app_id')) for v in sway_views()]}", TERMINAL_TIMEOUT)[0]
    expect(view.get("app_id") == "foot", f"the window of {foot} has app_id {view.get('app_id')!r}")
    ctx.screenshot("foot.png")


@check
def a_click_hands_mako_s_activation_token_to_the_terminal(ctx):
    ctx.require_app()
    expect(ctx.pointer is not None, "no virtual pointer (the first check failed)")
    # The token may only come from this click, not from the app's own start.
    expect("XDG_ACTIVATION_TOKEN" not in os.environ, "the harness itself has XDG_ACTIVATION_TOKEN set")
    subprocess.run(["makoctl", "dismiss", "--all"], check=True)
    wait_for(lambda: mako_list() == [], "mako to show no popup before the click")
    ask = ctx.write_ask("Rename the public API?", "loop-review", ctx.make_cwd("repo two"))
    shown, sent = ctx.popup(ask)
    expect(len(mako_list()) == 1, f"mako shows {len(mako_list())} popups; the click is aimed at one")
    wait_for(lambda: ctx.notes.listening(sent), "the app to listen for the popup's actions")
    before = len(ctx.sim_argv.json())
    ctx.pointer.click(OUTPUT[0] // 2, OUTPUT[1] // 2)
    wait_for(lambda: ctx.notes.refresh() and "default" in sent.invoked,
             lambda: f"mako to report the click as ActionInvoked default on {sent.id}; invoked {sent.invoked}")
    token = ctx.notes.tokens.get(sent.id)
    expect(token, f"mako sent no ActivationToken for notification {sent.id} before ActionInvoked: "
           "the compositor gave it no token, so there is nothing to pass on")
    _, foot = ctx.session_in_foot(ask, before)
    got = environ(foot).get("XDG_ACTIVATION_TOKEN")
    expect(got == token,
           f"mako sent ActivationToken {token!r} for notification {sent.id}, but {foot} was "
           f"started with XDG_ACTIVATION_TOKEN={got!r}: the app does not hand the server's "
           "activation token to the terminal it opens")


@check
def quit_from_the_tray_ends_the_app(ctx):
    ctx.require_app()
    menu = ctx.tray.layout(ctx.item).rows()
    quit_item = next((e for e in menu if plain(e.label) == "Quit"), None)
    expect(quit_item is not None, f"no Quit in the tray menu: {ctx.menu_labels()}")
    ctx.tray.click(ctx.item, quit_item.id)
    wait_for(lambda: ctx.app.poll() is not None, "the app to exit after Quit")
    expect(ctx.app.returncode == 0, f"the app exited with {ctx.app.returncode}")
    wait_for(lambda: ctx.tray.items() == [], "the tray item to leave waybar's watcher")


@check
def a_foot_the_session_runs_in_comes_back_on_sway(ctx):
    """Go to terminal through sway's IPC: the foot the tray opened for a session (lf as
    generation E1, attached by `lf sim attach`) is focused again by its tray row after the
    focus went to another window. The one wait on the app's log is for the tray to have
    read the attach (its row looks the same either way)."""
    if ctx.app is not None and ctx.app.poll() is None:
        ctx.app.terminate()
        ctx.app.wait(5)
    home = ctx.tmp / "lf-home-e1"
    repo = ctx.make_cwd("repo e1")
    env = dict(os.environ, LF_HOME=str(home), LF_SIM_GENERATION="e1")
    settings = Path(env["XDG_CONFIG_HOME"]) / "lf-tray" / "settings.json"
    settings.write_text(json.dumps({"terminal": "foot", "attached_grace_seconds": 0}) + "\n")

    def lf(*args):
        out = subprocess.run([env["LF_BIN"], *args], env=env, capture_output=True, text=True)
        expect(out.returncode == 0, f"lf {' '.join(args)}: {out.stderr.strip()}")
        return out.stdout

    def focused_pid():
        return next((v["pid"] for v in sway_views() if v.get("focused")), None)

    subprocess.run(["makoctl", "dismiss", "--all"], check=True)
    log = open(ctx.out / "app-e1.log", "ab")
    ctx.app = subprocess.Popen([ctx.app_bin, "--hidden"], env=env, stdout=log,
                               stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    ctx.item = wait_for(lambda: ctx.tray.item_of_pid(ctx.app.pid), "the E1 app's tray item", START_TIMEOUT)
    # The app's first list must be over before lf is written to (see first_snapshot_logged).
    app = ctx.app.pid
    wait_for(lambda: first_snapshot_logged(app),
             lambda: f"the E1 app's first snapshot; its last steps: {recent_steps()}", START_TIMEOUT)
    sid = "S-" + uuid.uuid4().hex[:10]
    title = "Bring foot back " + sid
    lf("sim", "new", sid, "--title", title, "--cwd", str(repo), "--provider", "codex")
    lf("sim", "ask", sid)
    shown = wait_for(lambda: [p for p in mako_list() if title in (p.get("body") or "")],
                     lambda: f"mako to show the popup for {sid}; makoctl list: {mako_list()}")[0]
    sent = wait_for(lambda: ctx.notes.find(lambda n: n.id == shown["id"]), "its Notify call")[-1]
    wait_for(lambda: ctx.notes.listening(sent), "the app to listen for the popup's actions")
    before = len(ctx.sim_argv.json())
    subprocess.run(["makoctl", "invoke", "-n", str(shown["id"]), "default"], check=True)

    def connect():
        return [c for c in ctx.sim_argv.json()[before:]
                if c.get("argv", [])[:2] == ["session", "connect"] and sid in c["argv"]]
    call = wait_for(connect, "foot to run lf session connect", TERMINAL_TIMEOUT)[0]
    foot = terminal_of(session_lf(call), "foot")[0]
    ctx.terminals.append(foot)
    wait_for(lambda: any(v["pid"] == foot.pid for v in sway_views()), f"{foot}'s window in sway")
    lf("sim", "attach", sid, str(call["pid"]))
    wait_for(lambda: any(f"id={sid} state=active" in line for line in app_log().all()),
             lambda: f"the tray to read {sid} as attached; its last steps: {recent_steps()}")
    other = subprocess.Popen(["foot", "sleep", "100000"], env=env, start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: focused_pid() == other.pid, "the other foot to take the focus", TERMINAL_TIMEOUT)
        row = wait_for(lambda: [e for e in ctx.tray.layout(ctx.item).rows() if title in plain(e.label)],
                       lambda: f"a tray row for {title!r}: {ctx.menu_labels()}")[0]
        t0 = time.monotonic()
        ctx.tray.click(ctx.item, row.id)
        wait_for(lambda: focused_pid() == foot.pid,
                 lambda: f"the tray row to focus {foot} again; focused is pid {focused_pid()}; "
                 f"the app's last steps: {recent_steps()}")
        print(f"     tray row (foot on sway): focused in {(time.monotonic() - t0) * 1000:.0f} ms", flush=True)

        # A Wayland desktop without a compositor interface (GNOME, KDE), as the tray
        # sees one: the same session, the app started without SWAYSOCK. The click says
        # where the session runs instead of focusing anything.
        ctx.app.terminate()
        ctx.app.wait(5)
        wait_for(lambda: ctx.tray.items() == [], "the E1 app's tray item to leave")
        plain_wayland = {k: v for k, v in env.items() if k not in ("SWAYSOCK", "I3SOCK")}
        log = open(ctx.out / "app-e1.log", "ab")
        ctx.app = subprocess.Popen([ctx.app_bin, "--hidden"], env=plain_wayland, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        ctx.item = wait_for(lambda: ctx.tray.item_of_pid(ctx.app.pid), "the app's tray item", START_TIMEOUT)
        subprocess.run(["swaymsg", f"[pid={other.pid}]", "focus"], check=True, capture_output=True)
        wait_for(lambda: focused_pid() == other.pid, "the other foot to take the focus")
        said_before = len(ctx.notes.find(lambda n: n.summary.startswith("Cannot go to")))
        row = wait_for(lambda: [e for e in ctx.tray.layout(ctx.item).rows() if title in plain(e.label)],
                       lambda: f"a tray row for {title!r}: {ctx.menu_labels()}")[0]
        ctx.tray.click(ctx.item, row.id)
        said = wait_for(lambda: ctx.notes.find(lambda n: n.summary.startswith("Cannot go to"))[said_before:],
                        lambda: f"a popup saying where it runs; the app's last steps: {recent_steps()}")[-1]
        expect("It is attached in a foot window, but this Wayland desktop lets no app focus" in said.body,
               f"it says {said.body!r}")
        expect(focused_pid() != foot.pid, "the session's foot was focused after all")
    finally:
        other.terminate()
        other.wait(5)
        lf("sim", "working", sid)


# No input for this long is away on sway: short, so the check costs seconds; far above the
# gaps between a present person's inputs (INPUT_EVERY), also on a loaded machine.
AWAY_AFTER = 3
# The popups' burst window (lf_tray_surface::policy::BURST_WINDOW, 2 s), with slack: a push
# within it of another is held 300 ms, as a popup is.
BURST_WINDOW = 2.2
# A present person moves the pointer this often: well inside AWAY_AFTER.
INPUT_EVERY = 0.5


def pointer_motion(pointer):
    """Motion from the virtual pointer, between two points so each is a change of position."""
    x = [100]

    def move():
        x[0] = 201 - x[0]
        pointer.move(x[0], 100)
    return move


@check
def pushes_follow_sway_s_idle_notification(ctx):
    """Away on sway, from the compositor's own idle notification (sway 1.7 offers KDE's
    org_kde_kwin_idle, no ext_idle_notifier_v1): no input for AWAY_AFTER → away → what
    waited is pushed, and an ask while away too; pointer motion → back → the next ask
    only pops up."""
    from ntfy import Ntfy

    expect(ctx.pointer is not None, "no virtual pointer (the first check failed)")
    if ctx.app is not None and ctx.app.poll() is None:
        ctx.app.terminate()
        ctx.app.wait(5)
    token = "tk_wl" + uuid.uuid4().hex
    topic = "lf-wl-" + uuid.uuid4().hex[:8]
    ctx.ntfy = Ntfy(token)
    ctx.ntfy.start()
    home = LfHome(ctx.tmp / "lf-home-idle")
    home.asks_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, LF_HOME=str(home.root))
    settings = Path(env["XDG_CONFIG_HOME"]) / "lf-tray" / "settings.json"
    settings.write_text(json.dumps({"terminal": "foot", "push_url": ctx.ntfy.url(topic),
                                    "push_token": token, "away_after_seconds": AWAY_AFTER}) + "\n")
    subprocess.run(["makoctl", "dismiss", "--all"], check=True)
    ctx.person = Person(pointer_motion(ctx.pointer), INPUT_EVERY)
    ctx.person.arrive()
    log = open(ctx.out / "app-idle.log", "ab")
    ctx.app = subprocess.Popen([ctx.app_bin, "--hidden"], env=env, stdout=log,
                               stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    app = ctx.app.pid

    def said(prefix):
        lines = app_log().messages()
        starts = [i for i, m in enumerate(lines) if m.startswith("START lf-tray") and f"pid={app}" in m]
        return [m for m in lines[starts[-1]:] if m.startswith(prefix)] if starts else []

    wait_for(lambda: first_snapshot_logged(app),
             lambda: f"the app's first snapshot; its last steps: {recent_steps()}", START_TIMEOUT)
    sources = wait_for(lambda: said("PRESENCE sources:"), "the tray to say what tells it away")[-1]
    expect(f"no input for {AWAY_AFTER} s (the compositor's org_kde_kwin_idle)" in sources,
           f"the tray does not follow sway's org_kde_kwin_idle: {sources!r}")
    wait_for(lambda: said("PRESENCE present"), "the tray to count the person present")

    def ask(name):
        sid = f"ask_{name}_{uuid.uuid4().hex[:8]}"
        title = f"Idle question {name}?"
        home.write_ask(sid, title=title, prompt=f"{title}\nAGENT-WORDS-{name}.",
                       cwd=ctx.make_cwd(f"repo-{name}"), detail="loop-decide")
        return title

    def popped(title):
        wait_for(lambda: [p for p in mako_list() if title in (p.get("body") or "")],
                 lambda: f"mako to show the popup for {title!r}; makoctl list: {mako_list()}")

    def pushed_since(count, what):
        return wait_for(lambda: ctx.ntfy.taken()[count:], what)[0]

    title_a = ask("A")
    popped(title_a)
    # The idle timeout counts from when the tray asked for it; a whole one more with the
    # pointer moving shows that sway counts the motion as input.
    never(lambda: said("PRESENCE away"), "the tray counted the person away while the pointer moved",
          AWAY_AFTER + 1)
    expect(not ctx.ntfy.taken(), f"pushed while the person moved the pointer: {ctx.ntfy.taken()}")

    away_before = len(said("PRESENCE away"))
    last_input = ctx.person.leave()
    away = wait_for(lambda: said("PRESENCE away")[away_before:] and time.monotonic(),
                    "the tray to count the person away", AWAY_AFTER + STEP_TIMEOUT)
    line = said("PRESENCE away")[-1]
    expect("idle=Some(true)" in line and "org_kde_kwin_idle" in line, f"away, but not by sway's idle: {line!r}")
    push = pushed_since(0, "the push of what waited when the person left")
    expect(push["title"] == f"{title_a} asks a question", f"push: {push['title']!r} / {push['message']!r}")
    headers = {k.lower(): v for k, v in push["headers"].items()}
    expect(headers.get("authorization") == f"Bearer {token}", f"no bearer token on the push: {headers}")
    expect("AGENT-WORDS" not in push["message"], f"the agent's words were pushed: {push['message']!r}")
    ctx.figures["last input → away (org_kde_kwin_idle, seen in the log)"] = away - last_input
    ctx.figures["last input → push of what waited"] = push["received"] - last_input

    # Past the popups' burst window (2 s), so that B's push is not held with A's.
    time.sleep(BURST_WINDOW)
    asked = time.monotonic()
    title_b = ask("B")
    push = pushed_since(1, "the push of an ask while away")
    ctx.figures["ask → push request (away on sway)"] = push["received"] - asked
    expect(push["title"] == f"{title_b} asks a question", f"push: {push['title']!r}")
    popped(title_b)

    back_before = len(said("PRESENCE present"))
    touched = time.monotonic()
    ctx.person.arrive()
    wait_for(lambda: said("PRESENCE present")[back_before:], "the tray to count the person back")
    ctx.figures["pointer motion → back"] = time.monotonic() - touched
    title_c = ask("C")
    popped(title_c)
    # A push goes out beside its popup, within milliseconds of it while away (measured
    # above): QUIET_SPELL after the popup is far past when one would have come.
    never(lambda: ctx.ntfy.taken()[2:], "a push after the person came back")


def finish(ctx):
    if ctx.person is not None:
        ctx.person.stop()
    for what, seconds in ctx.figures.items():
        print(f"     measured: {what} {seconds * 1000:.0f} ms", flush=True)
    if ctx.app is not None and ctx.app.poll() is None:
        os.killpg(ctx.app.pid, signal.SIGTERM)
        try:
            ctx.app.wait(3)
        except subprocess.TimeoutExpired:
            os.killpg(ctx.app.pid, signal.SIGKILL)
            ctx.app.wait()
    if ctx.pointer is not None:
        ctx.pointer.close()
    if ctx.ntfy is not None:
        ctx.ntfy.stop()
    end(ctx.terminals + own_children())


def main():
    become_subreaper()
    ctx = Ctx()
    return run_checks(CHECKS, ctx, ctx.out / "result", finish)


if __name__ == "__main__":
    sys.exit(main())
