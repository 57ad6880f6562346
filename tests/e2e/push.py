"""Away from the desk: pushes to the person's phone through an ntfy topic, only while they
are away — on the real app, Xvfb's real idle counter (SYNC IDLETIME) fed by XTEST input
(xdotool), a screen locker's bus interface on the private session bus, dunst for the popups,
and a stand-in ntfy server written from ntfy's publish documentation (ntfy.py).

Run by run.sh with E2E_SUITE=push.py; it shares memory.py's context and helpers. The checks
run in order and build on each other: one person, one topic, one memory of what was pushed.
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
from harness import STEP_TIMEOUT, Checks, expect, run_checks, wait_for
from memory import Memory
from ntfy import Ntfy
from person import Person

HERE = Path(__file__).resolve().parent

CHECKS = Checks()
check = CHECKS.add

TOKEN = "tk_e2e" + uuid.uuid4().hex  # a secret: in the Authorization header and nowhere else
TOPIC = "lf-e2e-" + uuid.uuid4().hex[:8]
# No input for this long is away. Short, so that the suite's several departures cost
# seconds; far above the gaps between a present person's inputs (INPUT_EVERY), also on a
# loaded machine.
AWAY_AFTER = 4
# A present person touches the pointer this often: well inside AWAY_AFTER.
INPUT_EVERY = 0.5
# Leaving takes AWAY_AFTER, then the tray's event; this much more is slack for a loaded
# machine.
LEAVE_TIMEOUT = AWAY_AFTER + STEP_TIMEOUT
# The popups' burst window (lf_tray_surface::policy::BURST_WINDOW, 2 s), with slack: a push
# within it of another is held 300 ms, as a popup is.
BURST_WINDOW = 2.2


def read_or_none(path):
    try:
        return path.read_text()
    except OSError as e:
        return f"unreadable: {e}"


def xtest_motion():
    """A one-pixel pointer move through XTEST (xdotool), back and forth."""
    xtest_motion.step = -getattr(xtest_motion, "step", 1)
    subprocess.run(["xdotool", "mousemove_relative", "--", str(xtest_motion.step), "0"],
                   check=True)


class Push(Memory):
    def __init__(self):
        super().__init__()
        self.ntfy = Ntfy(TOKEN)
        self.ntfy.start()
        self.person = Person(xtest_motion, INPUT_EVERY)
        self.locker = None
        self.logind = None
        self.system_bus = self.start_system_bus()
        self.figures = {}
        self.untold = None

    def start_system_bus(self):
        """A private system bus, so that the app's logind follower reads the stand-in (and
        nothing of the machine's): empty until a check starts the stand-in on it."""
        socket = self.tmp / "system_bus_socket"
        config = self.tmp / "system-bus.conf"
        config.write_text((HERE / "gnome" / "system-bus.conf").read_text().replace("@SOCKET@", str(socket)))
        log = open(self.out / "system-bus.log", "ab")
        bus = subprocess.Popen(["dbus-daemon", "--config-file", str(config), "--nofork"], stdout=log,
                               stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        wait_for(socket.exists, "the private system bus's socket")
        os.environ["DBUS_SYSTEM_BUS_ADDRESS"] = f"unix:path={socket}"
        return bus

    def push_settings(self, **more):
        settings = dict(push_url=self.ntfy.url(TOPIC), push_token=TOKEN,
                        away_after_seconds=AWAY_AFTER)
        settings.update(more)
        self.write_settings(**settings)

    def presence_lines(self, state):
        return [m for m in self.log_since_start() if m.startswith(f"PRESENCE {state}")]

    def leave(self):
        """The person walks away; answers when the tray says so (and the last input)."""
        last = self.person.leave()
        seen = len(self.presence_lines("away"))
        wait_for(lambda: len(self.presence_lines("away")) > seen, "the tray to count the person away",
                 LEAVE_TIMEOUT)
        return last

    def arrive(self):
        seen = len(self.presence_lines("present"))
        self.person.arrive()
        wait_for(lambda: len(self.presence_lines("present")) > seen, "the tray to count the person back")

    def ask(self, name):
        sid = f"ask_{name}_{uuid.uuid4().hex[:8]}"
        title = f"Question {name}?"
        words = f"AGENT-WORDS-{name}"
        self.write_ask(sid, title=title, prompt=f"{title}\n{words} in the prompt.",
                       cwd=self.make_cwd(f"repo-{name}"), detail="loop-decide")
        self.asks[name] = (sid, title)
        return sid, title, words

    def answer(self, name):
        sid, _ = self.asks.pop(name)
        self.home.complete(sid)
        self.home.remove_ask(sid)

    def popup_for(self, title, before):
        return wait_for(lambda: [n for n in self.new_since(before) if title in n.body],
                        f"the popup for {title}")[0]

    def pushes_since(self, count):
        return self.ntfy.taken()[count:]

    def one_push(self, before, what):
        pushes = wait_for(lambda: self.pushes_since(before), what)
        return pushes[0]


def expect_authorized(push):
    headers = {k.lower(): v for k, v in push["headers"].items()}
    expect(headers.get("authorization") == f"Bearer {TOKEN}",
           f"no bearer token on the push: {push['headers']}")
    expect(not push["markdown"], "the push asked for Markdown: untrusted text must stay plain")


def names(push):
    return f"{push['title']!r} / {push['message']!r}"


@check
def at_the_desk_nothing_is_pushed_and_leaving_pushes_what_waited_once(ctx):
    ctx.kill_app(signal.SIGTERM)
    ctx.push_settings()
    ctx.person.arrive()
    ctx.start()
    wait_for(lambda: any(m.startswith("PUSH on: ") for m in ctx.log_since_start()), "PUSH on")
    wait_for(lambda: ctx.presence_lines("present"), "the tray to count the person present")
    before_popups = len(ctx.ours())
    _, title_a, words_a = ctx.ask("A")
    _, title_b, _ = ctx.ask("B")
    ctx.popup_for(title_a, before_popups)
    ctx.popup_for(title_b, before_popups)
    expect(not ctx.ntfy.taken(), f"pushed while the person was at the desk: {ctx.ntfy.taken()}")
    last_input = ctx.leave()
    push = ctx.one_push(0, "the push of what waited when the person left")
    ctx.figures["last input → away push"] = push["received"] - last_input
    expect(push["title"] == "2 sessions wait for you", f"summary: {names(push)}")
    expect(title_a in push["message"] and title_b in push["message"], f"summary: {names(push)}")
    expect("asks a question" in push["message"] and "repo-A" in push["message"],
           f"the summary does not say why and where: {names(push)}")
    expect(words_a not in push["message"], f"the agent's words were pushed: {names(push)}")
    expect(push["topic"] == TOPIC and push["method"] == "POST", f"{push['topic']} {push['method']}")
    expect_authorized(push)
    # Which sessions the tray counts as pushed is on disk, for a restart: written by the
    # memory's own thread once the push is done, so waited for, not read at once.
    def pushed():
        path = ctx.state / "pushes.json"
        return path.exists() and len(json.loads(path.read_text())["pushed"]) == 2
    wait_for(pushed, lambda: f"pushes.json to hold both sessions: {read_or_none(ctx.state / 'pushes.json')}")


@check
def away_each_new_ask_is_pushed_once_beside_its_popup(ctx):
    before = len(ctx.ntfy.taken())
    before_popups = len(ctx.ours())
    asked = time.monotonic()
    _, title, words = ctx.ask("C")
    push = ctx.one_push(before, "the push of an ask while away")
    # Held with the push just before it (a burst), as a popup would be.
    ctx.figures["ask → push request, 2 s after another push"] = push["received"] - asked
    ctx.popup_for(title, before_popups)
    expect(push["title"] == f"{title} asks a question", f"push: {names(push)}")
    expect(push["message"] == "repo-C", f"push: {names(push)}")
    expect(words not in names(push), f"the agent's words were pushed: {names(push)}")
    expect(push["priority"] == 4 and push["tags"] == ["bell"], f"{push['priority']} {push['tags']}")
    expect_authorized(push)


@check
def back_at_the_desk_nothing_is_pushed_and_the_next_departure_tells_only_what_is_new(ctx):
    ctx.arrive()
    before = len(ctx.ntfy.taken())
    before_popups = len(ctx.ours())
    _, title, _ = ctx.ask("D")
    ctx.popup_for(title, before_popups)
    expect(not ctx.pushes_since(before), f"pushed at the desk: {ctx.pushes_since(before)}")
    ctx.leave()
    # What waited when leaving is one push: had A, B or C been pushed again, they would be in it.
    push = ctx.one_push(before, "the push of D when the person left")
    expect(push["title"] == f"{title} asks a question", f"only D is news: {names(push)}")


@check
def a_locked_screen_is_away(ctx):
    log = open(ctx.out / "stand_in_locker.log", "ab")
    ctx.locker = subprocess.Popen([sys.executable, str(HERE / "stand_in_locker.py")], stdout=log,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    ctx.arrive()
    wait_for(lambda: [m for m in ctx.log_since_start() if m.startswith("PRESENCE sources: Away is told by "
                                                                         "the screen lock (org.freedesktop.ScreenSaver)")],
             "the tray to follow the locker")
    before = len(ctx.ntfy.taken())
    lock(ctx, True)
    wait_for(lambda: [m for m in ctx.presence_lines("away") if "locked=Some(true)" in m],
             "the tray to count a locked screen as away")
    asked = time.monotonic()
    _, title, _ = ctx.ask("E")
    push = ctx.one_push(before, "the push of an ask while locked")
    ctx.figures["ask → push request (locked)"] = push["received"] - asked
    expect(push["title"] == f"{title} asks a question", f"push: {names(push)}")
    seen = len(ctx.presence_lines("present"))
    lock(ctx, False)
    wait_for(lambda: len(ctx.presence_lines("present")) > seen, "the tray to count the unlocked person back")
    before = len(ctx.ntfy.taken())
    before_popups = len(ctx.ours())
    _, title, _ = ctx.ask("E2")
    ctx.popup_for(title, before_popups)
    expect(not ctx.pushes_since(before), f"pushed after unlocking: {ctx.pushes_since(before)}")
    ctx.untold = title  # pushed when the person next leaves


def lock(ctx, on):
    subprocess.run(["gdbus", "call", "--session", "--dest", "org.freedesktop.ScreenSaver",
                    "--object-path", "/org/freedesktop/ScreenSaver", "--method",
                    "org.freedesktop.ScreenSaver.SetActive", "true" if on else "false"],
                   check=True, capture_output=True)


@check
def logind_s_locked_hint_is_away(ctx):
    """The session's LockedHint on the system bus (a stand-in logind), as a locker that
    calls SetLockedHint sets it: true → away → what waited and a new ask are pushed;
    false → back → the next ask only pops up."""
    log = open(ctx.out / "stand_in_logind.log", "ab")
    ctx.logind = subprocess.Popen([sys.executable, str(HERE / "stand_in_logind.py")], stdout=log,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    wait_for(lambda: [m for m in ctx.log_since_start() if m.startswith(
        "PRESENCE sources: Away is told by the screen lock (org.freedesktop.ScreenSaver, logind's LockedHint)")],
        "the tray to follow logind's LockedHint once logind is on the system bus")
    asked_by = (ctx.out / "stand_in_logind.log").read_text()
    expect(f"GetSessionByPID({ctx.app.pid})" in asked_by,
           f"the tray did not look its session up by its PID: {asked_by!r}")
    before = len(ctx.ntfy.taken())
    locked_hint(True)
    wait_for(lambda: [m for m in ctx.presence_lines("away") if "locked=Some(true)" in m],
             "the tray to count a session whose LockedHint is true as away")
    # What waited since the locker check went untold, and goes now, as on any departure.
    push = ctx.one_push(before, "the push of what waited when the session locked")
    expect(push["title"] == f"{ctx.untold} asks a question", f"push: {names(push)}")
    # Past the popups' burst window, so that the next push is not held with this one.
    time.sleep(BURST_WINDOW)
    asked = time.monotonic()
    _, title, _ = ctx.ask("L")
    push = ctx.one_push(before + 1, "the push of an ask while logind says locked")
    ctx.figures["ask → push request (logind LockedHint)"] = push["received"] - asked
    expect(push["title"] == f"{title} asks a question", f"push: {names(push)}")
    expect_authorized(push)
    seen = len(ctx.presence_lines("present"))
    locked_hint(False)
    wait_for(lambda: len(ctx.presence_lines("present")) > seen,
             "the tray to count the person back once LockedHint is false")
    before = len(ctx.ntfy.taken())
    before_popups = len(ctx.ours())
    _, title, _ = ctx.ask("L2")
    ctx.popup_for(title, before_popups)
    expect(not ctx.pushes_since(before), f"pushed after LockedHint went false: {ctx.pushes_since(before)}")
    ctx.untold = title  # pushed when the person next leaves


def locked_hint(on):
    """What a locker does when it locks or unlocks: SetLockedHint on its logind session."""
    subprocess.run(["gdbus", "call", "--system", "--dest", "org.freedesktop.login1",
                    "--object-path", "/org/freedesktop/login1/session/e2e", "--method",
                    "org.freedesktop.login1.Session.SetLockedHint", "true" if on else "false"],
                   check=True, capture_output=True)


@check
def a_dead_server_delays_no_popup_and_gets_the_push_once_when_back(ctx):
    before = len(ctx.ntfy.taken())
    ctx.leave()
    # What waited untold since the locker check goes first, while the server is up.
    if ctx.untold:
        push = ctx.one_push(before, "the push of what waited when the person left")
        expect(push["title"] == f"{ctx.untold} asks a question", f"push: {names(push)}")
    ctx.ntfy.stop()
    before = len(ctx.ntfy.taken())
    before_popups = len(ctx.ours())
    failed = len([m for m in ctx.log_since_start() if m.startswith("PUSH failed")])
    asked = time.monotonic()
    _, title, _ = ctx.ask("F")
    ctx.popup_for(title, before_popups)
    ctx.figures["ask → popup, server down"] = time.monotonic() - asked
    wait_for(lambda: len([m for m in ctx.log_since_start() if m.startswith("PUSH failed")]) > failed + 1,
             "two failed tries")
    ctx.ntfy.start()
    push = ctx.one_push(before, "the push once the server is back")
    expect(push["title"] == f"{title} asks a question", f"push: {names(push)}")
    # The next push is the barrier: had F gone twice, the second would have come before it.
    _, title_g, _ = ctx.ask("G")
    wait_for(lambda: any(p["title"].startswith(title_g) for p in ctx.pushes_since(before)), "G's push")
    titles = [p["title"] for p in ctx.pushes_since(before)]
    expect(titles == [f"{title} asks a question", f"{title_g} asks a question"], f"pushes: {titles}")


@check
def an_ask_answered_while_the_server_was_down_is_never_pushed(ctx):
    ctx.ntfy.stop()
    before = len(ctx.ntfy.taken())
    failed = len([m for m in ctx.log_since_start() if m.startswith("PUSH failed")])
    sid, title, _ = ctx.ask("H")
    wait_for(lambda: len([m for m in ctx.log_since_start() if m.startswith("PUSH failed")]) > failed,
             "a failed try")
    ctx.answer("H")
    wait_for(lambda: [m for m in ctx.log_since_start() if "PUSH " in m and "dropped" in m and sid in m],
             "the push of the answered ask dropped")
    ctx.ntfy.start()
    _, title_i, _ = ctx.ask("I")
    wait_for(lambda: any(p["title"].startswith(title_i) for p in ctx.pushes_since(before)), "I's push")
    titles = [p["title"] for p in ctx.pushes_since(before)]
    expect(titles == [f"{title_i} asks a question"], f"pushes: {titles}")


@check
def a_restart_while_away_pushes_nothing_twice_and_push_text_sends_the_words(ctx):
    ctx.kill_app(signal.SIGTERM)
    ctx.push_settings(push_text=True)
    before = len(ctx.ntfy.taken())
    ctx.start()
    wait_for(lambda: ctx.presence_lines("away"), "the restarted tray to count the person away",
             LEAVE_TIMEOUT)
    asked = time.monotonic()
    _, title, words = ctx.ask("J")
    wait_for(lambda: any(title in names(p) for p in ctx.pushes_since(before)), "J's push")
    pushes = ctx.pushes_since(before)
    # Nothing else went out lately: no burst hold.
    ctx.figures["ask → push request (away, lone)"] = pushes[-1]["received"] - asked
    expect(len(pushes) == 1, f"pushed again after the restart: {[names(p) for p in pushes]}")
    expect(words in pushes[0]["message"], f"push_text on, yet no agent's words: {names(pushes[0])}")
    expect(pushes[0]["title"].startswith("Agent asks"), f"not the popup's summary: {names(pushes[0])}")


@check
def the_token_and_the_topic_are_in_no_log(ctx):
    logs = [ctx.state / "lf-tray.log", ctx.state / "lf-tray.log.1", ctx.out / "app.log"]
    for path in logs:
        if path.exists():
            expect(TOKEN not in path.read_text(errors="replace"), f"the token is in {path}")
            expect(TOPIC not in path.read_text(errors="replace"), f"the topic is in {path}")


@check
def without_a_push_url_nothing_is_followed_or_connected(ctx):
    ctx.kill_app(signal.SIGTERM)
    ctx.write_settings()
    connections = ctx.ntfy.connections
    ctx.start()
    before_popups = len(ctx.ours())
    _, title, _ = ctx.ask("K")
    ctx.popup_for(title, before_popups)
    said = [m for m in ctx.log_since_start() if m.startswith(("PUSH", "PRESENCE"))]
    expect(not said, f"push or presence followed without a push URL: {said}")
    expect(ctx.ntfy.connections == connections, "a connection reached the push server")
    sockets = tcp_sockets(ctx.app.pid)
    expect(not sockets, f"the app holds TCP sockets: {sockets}")
    threads = sorted({(Path(f"/proc/{ctx.app.pid}/task") / t / "comm").read_text().strip()
                      for t in os.listdir(f"/proc/{ctx.app.pid}/task")})
    print(f"     threads without push: {threads}", flush=True)


def tcp_sockets(pid):
    """The TCP sockets among a process's open files (by inode, from /proc/net/tcp*)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if m := re.fullmatch(r"socket:\[(\d+)\]", target):
            inodes.add(m.group(1))
    found = []
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if len(fields) > 9 and fields[9] in inodes:
                found.append(f"{table} {fields[1]} → {fields[2]}")
    return found


def main():
    ctx = Push()
    return run_checks(CHECKS, ctx, ctx.tmp / "result", finish)


def finish(ctx):
    ctx.person.leave()
    for what, seconds in ctx.figures.items():
        print(f"     measured: {what} {seconds * 1000:.0f} ms", flush=True)
    ctx.stop_app()
    e2e.dump_notifications(ctx)
    for helper in (ctx.locker, ctx.logind, ctx.system_bus):
        if helper is not None and helper.poll() is None:
            helper.terminate()
            helper.wait(5)
    ctx.ntfy.stop()


if __name__ == "__main__":
    sys.exit(main())
