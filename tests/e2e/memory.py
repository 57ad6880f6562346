"""Never miss, never nag: the popups' memory across restarts and crashes, a notification
server that comes late, the desktop's do-not-disturb, a pause from the tray, quiet hours,
Dismiss, and the on_event program — on the real app, dunst and a private session bus that
cannot start a notification server by itself (so "no server" is real).

Run by run.sh with E2E_SUITE=memory.py; it shares e2e.py's context and helpers.
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

import e2e
from e2e import Ctx
from harness import QUIET_SPELL, START_TIMEOUT, Checks, expect, run_checks, wait_for

HERE = Path(__file__).resolve().parent

CHECKS = Checks()
check = CHECKS.add


class Memory(Ctx):
    def __init__(self):
        super().__init__()
        self.state = Path(os.environ["XDG_STATE_HOME"]) / "lf-tray"
        self.settings = Path(os.environ["XDG_CONFIG_HOME"]) / "lf-tray" / "settings.json"
        self.asks = {}

    def ours(self):
        """Every popup the app handed to the server, oldest first."""
        return self.notes.find(lambda n: n.app_name == e2e.APP_NAME)

    def new_since(self, count):
        return self.ours()[count:]

    def start(self):
        snapshots = self.app_log.messages().count("READY")
        self.start_app()
        self.item = wait_for(lambda: self.app.poll() is None and self.tray.item_of_pid(self.app.pid),
                             "the app's tray item", START_TIMEOUT)
        wait_for(lambda: self.app_log.messages().count("READY") > snapshots, "READY", START_TIMEOUT)
        wait_for(lambda: any(m.startswith("SNAPSHOT") for m in self.log_since_start()),
                 "the first snapshot", START_TIMEOUT)

    def log_since_start(self):
        messages = self.app_log.messages()
        starts = [i for i, m in enumerate(messages) if m.startswith("START lf-tray")]
        return messages[starts[-1]:] if starts else []

    def ask(self, name, title=None):
        sid = f"ask_{name}_{uuid.uuid4().hex[:8]}"
        title = title or f"Question {name}?"
        self.write_ask(sid, title=title, prompt=title + "\nDetails.", cwd=self.make_cwd(name),
                       detail="loop-decide")
        self.asks[name] = (sid, title)
        return sid, title

    def resolve_all(self):
        """Complete every Ask so far (as `lf` does), so a check starts with a short list: the
        tray shows ten rows, the ones waiting longest first."""
        for sid, _ in self.asks.values():
            self.home.complete(sid)
            self.home.remove_ask(sid)
        self.asks.clear()
        wait_for(lambda: "No sessions waiting" in self.menu_labels(), "the tray to empty")

    def dunst_pid(self):
        out = subprocess.run(
            ["gdbus", "call", "--session", "--dest", "org.freedesktop.DBus", "--object-path",
             "/org/freedesktop/DBus", "--method",
             "org.freedesktop.DBus.GetConnectionUnixProcessID", "org.freedesktop.Notifications"],
            capture_output=True, text=True)
        m = re.search(r"uint32 (\d+)", out.stdout)
        return int(m.group(1)) if m else None

    def kill_dunst(self):
        pid = self.dunst_pid()
        expect(pid, "no dunst owns org.freedesktop.Notifications")
        os.kill(pid, signal.SIGTERM)
        wait_for(lambda: self.dunst_pid() is None, "dunst to leave the bus")
        dunst = getattr(self, "dunst", None)
        if dunst is not None and dunst.pid == pid:
            dunst.wait(5)

    def start_dunst(self, config=HERE / "dunstrc"):
        log = open(self.out / "dunst-again.log", "ab")
        # Kept to be ended by finish: run.sh ends only the dunst it started itself.
        self.dunst = subprocess.Popen(["dunst", "-config", str(config)], stdout=log,
                                      stderr=log, start_new_session=True)
        log.close()
        wait_for(self.dunst_pid, "dunst back on the bus")

    def write_settings(self, **settings):
        self.settings.parent.mkdir(parents=True, exist_ok=True)
        self.settings.write_text(json.dumps(settings))

    def kill_app(self, sig):
        if self.app is None:
            return
        if self.app.poll() is None:
            os.killpg(self.app.pid, sig)
        self.app.wait(5)

    def restart_and_expect_nothing(self, why):
        before = len(self.ours())
        self.kill_app(signal.SIGTERM)
        self.start()
        self.none_for_a_while(before, why)

    def none_for_a_while(self, before, what):
        time.sleep(QUIET_SPELL)
        new = self.new_since(before)
        expect(not new, f"{what}, yet popups came: {[n.describe() for n in new]}")


def summary_of(n, count):
    expect(n.summary == f"{count} sessions wait for you",
           f"summary {n.summary!r}; expected '{count} sessions wait for you'")


def mark(ctx, sid):
    """What the popups' memory says of one session now, or None. It is replaced whole by a
    rename, so a read never sees half a file."""
    try:
        return json.loads((ctx.state / "history.json").read_text())["sessions"].get(sid)
    except FileNotFoundError:
        return None


@check
def three_waiting_at_start_are_one_summary(ctx):
    for name in ("first", "second", "third"):
        ctx.ask(name)
        time.sleep(0.05)
    ctx.start()
    n = wait_for(lambda: ctx.ours(), "a popup for what waited at start")[0]
    summary_of(n, 3)
    for name in ("first", "second", "third"):
        expect(ctx.asks[name][1] in n.body, f"summary body {n.body!r} does not name {name}")
    expect(n.action_keys() == ["default"], f"the summary's actions {n.actions!r}")
    time.sleep(QUIET_SPELL)
    expect(len(ctx.ours()) == 1, f"popups at start: {[x.describe() for x in ctx.ours()]}")
    wait_for(lambda: ctx.displayed() == 1, "dunst to display one popup")
    memory = ctx.state / "history.json"
    expect(memory.exists(), f"no memory at {memory}")
    marks = json.loads(memory.read_text())["sessions"]
    expect(all(marks[ctx.asks[k][0]]["shown"] for k in ("first", "second", "third")),
           f"the memory does not record them as shown: {marks}")


@check
def a_restart_after_sigterm_repeats_nothing(ctx):
    ctx.restart_and_expect_nothing("the same three still wait after a restart")


@check
def a_crash_loses_nothing_and_repeats_nothing(ctx):
    before = len(ctx.ours())
    ctx.kill_app(signal.SIGKILL)
    sid, title = ctx.ask("fourth")
    ctx.start()
    n = wait_for(lambda: ctx.new_since(before), "a popup for the Ask that arrived while down")[0]
    expect(n.summary == "Agent asks · loop-decide" and title in n.body,
           f"after the crash: {n.describe()}; expected the fourth Ask's own popup")
    time.sleep(QUIET_SPELL)
    new = ctx.new_since(before)
    expect(len(new) == 1, f"after the crash: {[x.describe() for x in new]}")


@check
def a_ready_on_an_old_session_pops_up(ctx):
    before = len(ctx.ours())
    sid, title = ctx.asks["first"]
    ctx.home.mark_ready(sid, "Shipped to staging.")
    n = wait_for(lambda: ctx.new_since(before), "a popup for the ready session")[0]
    expect(n.summary == f"Ready for review: {title}", f"ready popup {n.describe()}")
    expect(n.hints.get("category") == "transfer.complete", f"hints {n.hints}")


@check
def a_late_server_shows_what_waited(ctx):
    before = len(ctx.ours())
    ctx.kill_dunst()
    wait_for(lambda: "SERVER Absent" in ctx.log_since_start(), "the app to see the server go")
    sid, title = ctx.ask("fifth")
    # The popup is owed, not lost: the memory marks it unshown before any server is back.
    wait_for(lambda: (mark(ctx, sid) or {}).get("shown") is False,
             "the memory to hold the fifth Ask as not yet shown")
    ctx.start_dunst()
    n = wait_for(lambda: ctx.new_since(before), "the popup once a server is back")[0]
    expect(title in n.body, f"after the server came back: {n.describe()}")
    wait_for(lambda: ctx.displayed() >= 1, "the new dunst to display it")


@check
def the_desktops_do_not_disturb_holds_popups_then_one_summary(ctx):
    subprocess.run(["dunstctl", "set-paused", "true"], check=True)
    wait_for(lambda: "DO_NOT_DISTURB paused=true" in ctx.log_since_start(),
             "the app to hear dunst's pause")
    before = len(ctx.ours())
    six, title6 = ctx.ask("sixth")
    seven, title7 = ctx.ask("seventh")
    wait_for(lambda: [r for r in ctx.menu_labels() if title7 in r], "the tray to list the seventh")
    labels = ctx.menu_labels()
    expect("The desktop's do-not-disturb is on" in labels, f"tray menu {labels}")
    ctx.none_for_a_while(before, "dunst is paused")
    subprocess.run(["dunstctl", "set-paused", "false"], check=True)
    n = wait_for(lambda: ctx.new_since(before), "one summary when dunst resumes")[0]
    summary_of(n, 2)
    time.sleep(QUIET_SPELL)
    expect(len(ctx.new_since(before)) == 1, f"{[x.describe() for x in ctx.new_since(before)]}")


@check
def a_pause_from_the_tray_then_resume(ctx):
    ctx.click("For 1 hour")
    wait_for(lambda: "Resume notifications" in ctx.menu_labels(), "Resume in the tray menu")
    labels = ctx.menu_labels()
    expect(any(l.startswith("Notifications paused until ") for l in labels), f"tray menu {labels}")
    before = len(ctx.ours())
    sid, title = ctx.ask("eighth")
    wait_for(lambda: [r for r in ctx.menu_labels() if title in r], "the tray to list the eighth")
    ctx.none_for_a_while(before, "notifications are paused")
    ctx.click("Resume notifications")
    n = wait_for(lambda: ctx.new_since(before), "the popup after Resume")[0]
    expect(title in n.body and n.summary == "Agent asks · loop-decide", f"after Resume: {n.describe()}")


@check
def dismiss_from_the_tray_takes_the_popup_down_for_good(ctx):
    sid, title = ctx.asks["eighth"]
    n = ctx.notes.find(lambda n: title in n.body)[-1]
    # The second row with the title is the one in the Dismiss submenu.
    entries = [e for e in ctx.menu() if e2e.plain(e.label) == f"{title} — loop-decide"]
    expect(len(entries) == 2, f"expected the row and its Dismiss entry, got {len(entries)}")
    ctx.tray.click(ctx.item, entries[1].id)
    wait_for(lambda: ctx.notes.find(lambda x: x.id == n.id and x.closed_by_app),
             "the app to close the dismissed popup")
    # The memory is written on a thread of its own, a moment after the popup went: wait
    # for what it says rather than read it once.
    wait_for(lambda: (mark(ctx, sid) or {}).get("dismissed") is True,
             lambda: f"the memory to mark the session dismissed: {mark(ctx, sid)}")
    ctx.restart_and_expect_nothing("the dismissed session and all others were told before")


@check
def quiet_hours_hold_popups_and_end_with_one_summary(ctx):
    hook = ctx.tmp / "on-event.sh"
    hook.write_text("#!/bin/sh\nprintf '%s ' \"$LF_TRAY_EVENT\" >>\"$0.out\"\ncat >>\"$0.out\"\n")
    hook.chmod(0o755)
    now = time.gmtime()
    # The end is the next minute boundary but one when this one is nearly over.
    left = 60 - now.tm_sec
    end_minute = (now.tm_hour * 60 + now.tm_min + (1 if left > 15 else 2)) % (24 * 60)
    start_minute = (now.tm_hour * 60 + now.tm_min - 1) % (24 * 60)
    hm = lambda m: f"{m // 60:02d}:{m % 60:02d}"
    ctx.kill_app(signal.SIGTERM)
    ctx.write_settings(quiet_from=hm(start_minute), quiet_to=hm(end_minute), on_event=str(hook))
    before = len(ctx.ours())
    ctx.start()
    labels = ctx.menu_labels()
    expect(any(l.startswith("Quiet hours until ") for l in labels), f"tray menu {labels}")
    nine, title9 = ctx.ask("ninth")
    ten, title10 = ctx.ask("tenth")
    wait_for(lambda: [r for r in ctx.menu_labels() if title10 in r], "the tray to list the tenth")
    ctx.none_for_a_while(before, "it is quiet hours")
    n = wait_for(lambda: ctx.new_since(before), "one summary when quiet hours end", timeout=150)[0]
    summary_of(n, 2)
    lines = Path(str(hook) + ".out").read_text().splitlines()
    asked = [l for l in lines if l.startswith("asked ")]
    expect(asked, f"the on_event program saw {lines[:5]}")
    event = json.loads(asked[0].split(" ", 1)[1])
    expect(event["type"] == "asked" and event["session"]["id"] in (nine, ten),
           f"on_event got {event}")


@check
def gnomes_do_not_disturb_holds_popups(ctx):
    """GNOME's switch is a GSettings key in dconf: the real dconf-service (started by hand,
    as this bus activates nothing) and gsettings, the way GNOME's own panel writes it."""
    dconf = subprocess.Popen(["/usr/libexec/dconf-service"], stdout=subprocess.DEVNULL,
                             stderr=open(ctx.out / "dconf.log", "ab"), start_new_session=True)
    gsettings = ["gsettings", "set", "org.gnome.desktop.notifications", "show-banners"]
    try:
        ctx.resolve_all()
        ctx.kill_app(signal.SIGTERM)
        os.environ["XDG_CURRENT_DESKTOP"] = "GNOME"
        try:
            ctx.start()
        finally:
            del os.environ["XDG_CURRENT_DESKTOP"]
        wait_for(lambda: "DO_NOT_DISTURB show-banners=true" in ctx.log_since_start(),
                 "the app to read GNOME's show-banners")
        subprocess.run(gsettings + ["false"], check=True)
        wait_for(lambda: "DO_NOT_DISTURB show-banners=false" in ctx.log_since_start(),
                 "the app to hear GNOME's Do Not Disturb")
        before = len(ctx.ours())
        sid, title = ctx.ask("eleventh")
        wait_for(lambda: [r for r in ctx.menu_labels() if title in r], "the tray to list it")
        expect("The desktop's do-not-disturb is on" in ctx.menu_labels(), f"{ctx.menu_labels()}")
        ctx.none_for_a_while(before, "GNOME's Do Not Disturb is on")
        subprocess.run(gsettings + ["true"], check=True)
        n = wait_for(lambda: ctx.new_since(before), "the popup when Do Not Disturb ends")[0]
        expect(title in n.body, f"after Do Not Disturb: {n.describe()}")
    finally:
        dconf.terminate()
        dconf.wait(5)


@check
def a_dismissed_session_gets_no_reminder(ctx):
    ctx.resolve_all()
    ctx.kill_app(signal.SIGTERM)
    ctx.write_settings(reminder_minutes=1)
    ctx.start()
    before = len(ctx.ours())
    kept, kept_title = ctx.ask("twelfth")
    gone, gone_title = ctx.ask("thirteenth")
    popups = wait_for(lambda: len(ctx.new_since(before)) >= 2 and ctx.new_since(before),
                      "the two Asks' popups")
    dismissed = next(n for n in popups if gone_title in n.body)
    expect("dismiss" in dismissed.action_keys(), f"no Dismiss on {dismissed.describe()}")
    # The popup's Dismiss button, as the server reports a click on it.
    ctx.invoke_action(dismissed, "dismiss")
    wait_for(lambda: ctx.notes.find(lambda x: x.id == dismissed.id and x.closed_by_app),
             "the app to take the dismissed popup down")
    # Older sessions get theirs too; this one's comes a minute after it was asked.
    wait_for(lambda: [n for n in ctx.new_since(before)
                      if n.summary == f"Still waiting: {kept_title}"],
             "the reminder a minute later", timeout=90)
    time.sleep(QUIET_SPELL)
    late = [n for n in ctx.new_since(before) if gone_title in n.summary + n.body and n.id != dismissed.id]
    expect(not late, f"the dismissed session came back: {[n.describe() for n in late]}")


@check
def a_popup_the_server_let_expire_is_marked_and_told_again_at_the_next_start(ctx):
    # Popups the app asks to stay (expire_timeout 0) stay on dunst, but a reminder takes the
    # server's timing: a dunst whose low-urgency popups time out after a second lets the
    # reminder expire, as xfce4-notifyd and Plasma do with whatever they are sent. The
    # sessions of the checks before stay: the one after wants several waiting.
    ctx.kill_app(signal.SIGTERM)
    ctx.write_settings(reminder_minutes=1)
    if ctx.dunst_pid():
        ctx.kill_dunst()
    expiring = ctx.tmp / "dunstrc-expiring"
    config = (HERE / "dunstrc").read_text()
    low = "[urgency_low]\n    timeout = 0"
    expect(low in config, "tests/e2e/dunstrc no longer sets the low urgency's timeout")
    expiring.write_text(config.replace(low, "[urgency_low]\n    timeout = 1s"))
    ctx.start_dunst(expiring)
    try:
        ctx.start()
        before = len(ctx.ours())
        sid, title = ctx.ask("fourteenth")
        wait_for(lambda: ctx.new_since(before), "the Ask's popup")
        reminder = wait_for(lambda: [n for n in ctx.new_since(before)
                                     if n.summary == f"Still waiting: {title}"],
                            "the reminder a minute later", timeout=90)[0]
        wait_for(lambda: ctx.notes.refresh() and reminder.closed_reason is not None,
                 "dunst to expire the reminder")
        expect(reminder.closed_reason == 1,
               f"closed with reason {reminder.closed_reason}, not 1 (expired)")
        wait_for(lambda: f"UNSEEN session={sid}: its popup expired" in ctx.log_since_start(),
                 "the app to hear it expired")
        wait_for(lambda: (mark(ctx, sid) or {}).get("shown") is False,
                 lambda: f"the memory to hold it unseen: {mark(ctx, sid)}")
        row = f"● {title} — loop-decide"
        wait_for(lambda: row in ctx.menu_labels(),
                 lambda: f"the tray row marked {row!r}; menu: {ctx.menu_labels()}")
        # Not at once again (the server would only take it down again): at the next start.
        seen = len(ctx.ours())
        ctx.kill_app(signal.SIGTERM)
        ctx.write_settings()
        ctx.start()
        # Alone, or in a summary with another whose reminder expired too.
        again = wait_for(lambda: ctx.new_since(seen), "its popup again after the restart")[0]
        expect(title in again.body, f"after the restart: {again.describe()}")
    finally:
        ctx.kill_dunst()
        ctx.start_dunst()


@check
def a_corrupt_memory_warns_and_starts_fresh(ctx):
    ctx.kill_app(signal.SIGTERM)
    ctx.write_settings()
    memory = ctx.state / "history.json"
    memory.write_text('{"version": 1, "sessions": [tru')
    before = len(ctx.ours())
    ctx.start()
    warned = [m for m in ctx.log_since_start() if "is unreadable" in m]
    expect(warned, "no warning about the unreadable memory in the log")
    kept = ctx.state / "history.json.unreadable"
    expect(kept.exists() and kept.read_text().startswith('{"version": 1, "sessions": [tru'),
           "the unreadable file was not kept aside")
    # Starting fresh, everything that waits is unseen: told once, in one summary.
    n = wait_for(lambda: ctx.new_since(before), "a summary after the fresh start")[0]
    expect(re.fullmatch(r"\d+ sessions wait for you", n.summary), f"after a fresh start: {n.describe()}")
    json.loads(memory.read_text())


def main():
    ctx = Memory()
    return run_checks(CHECKS, ctx, ctx.tmp / "result", finish)


def finish(ctx):
    ctx.stop_app()
    e2e.dump_notifications(ctx)
    dunst = getattr(ctx, "dunst", None)
    if dunst is not None and dunst.poll() is None:
        dunst.terminate()
        dunst.wait(5)


if __name__ == "__main__":
    sys.exit(main())
