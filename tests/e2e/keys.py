#!/usr/bin/env python3
"""Answering from the keyboard with `lf-tray answer` and with the keys the tray holds on
X11 (issue 44): the real app, dunst, the stand-in Claude and its real hook path, keys typed
with XTEST (xdotool) and seen by a real X client (xev). Run by run.sh with
E2E_SUITE=keys.py; it shares e2e.py's context. The app's log is read to know when a popup
counts as shown, when the keys are held, and what it says of a key another program holds."""

import json
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import e2e  # noqa: E402
from claude import QUESTION, answering_on, put_back  # noqa: E402
from harness import Checks, expect, run_checks, wait_for  # noqa: E402

CHECKS = Checks()
check = CHECKS.add
window_check = e2e.window_check_for(check)


def answer(ctx, *args):
    return subprocess.run([ctx.app_bin, "answer", *args], capture_output=True, text=True, timeout=10)


def shown(ctx, sid, before):
    """The desk counted `sid`'s popup shown (the newest for a key) after `before` lines."""
    wait_for(lambda: f"KEYS newest session={sid}" in " ".join(ctx.app_log.messages()[before:]),
             f"the app to count {sid}'s popup shown")


@check
def lf_tray_answer_nothing_a_question_two_requests_and_a_race(ctx):
    tray_settings, before = answering_on(True)
    a_sid, b_sid = ("SESSION-" + uuid.uuid4().hex[:8] for _ in range(2))
    env, lf, a = e2e.with_agent_asking(ctx, a_sid, "Publish the 0.4 crates")
    figures = {}
    b = None
    try:
        repo = ctx.tmp / "work" / "repo-e2"
        lf("sim", "new", b_sid, "--title", "Tidy the docs", "--cwd", str(repo), "--provider", "claude")
        b = e2e.Agent(ctx, env, b_sid, repo)
        ctx.start_hidden(env, "app-keys.log", "the app, answering")
        for sid in (a_sid, b_sid):
            seen = ctx.shown_ids()
            lf("sim", "status", sid, "blocked", "--kind", "permission", "--title", f"Run {sid}",
               "--msg", "Bash wants to run a command")
            ctx.notified(lambda n: f"Run {sid}" in n.body and n.id not in seen, f"lf's popup for {sid}")

        out = answer(ctx, "allow")
        expect(out.returncode == 1 and "No request waits" in out.stderr, f"nothing waiting: {out}")

        # Two requests: the key answers the newest shown, then the one left.
        mark = len(ctx.app_log.messages())
        a.ask("cargo publish --dry-run")
        shown(ctx, a_sid, mark)
        mark = len(ctx.app_log.messages())
        b.ask("rm -rf target")
        shown(ctx, b_sid, mark)
        pressed = time.time()
        out = answer(ctx, "deny")
        expect(out.returncode == 0 and out.stdout.strip() == "deny", f"deny: {out}")
        report = b.report()
        figures["command_to_answer"] = report["decided_at"] - pressed
        expect(report["decided_by"] == "hook" and report["behavior"] == "deny", f"b got {report}")
        out = answer(ctx, "allow")
        expect(out.returncode == 0, f"allow: {out}")
        report = a.report()
        expect(report["decided_by"] == "hook" and report["behavior"] == "allow", f"a got {report}")
        out = answer(ctx, "allow", a_sid)
        expect(out.returncode == 1 and "Too late" in out.stderr, f"named, answered: {out}")

        # A question: allow refused, open only; the popup's option still answers it.
        mark = len(ctx.app_log.messages())
        a.say("ask AskUserQuestion " + json.dumps(QUESTION))
        shown(ctx, a_sid, mark)
        out = answer(ctx, "allow")
        expect(out.returncode == 1 and "question" in out.stderr, f"allow on a question: {out}")
        out = answer(ctx, "open")
        expect(out.returncode == 0 and out.stdout.strip() == "open", f"open on a question: {out}")
        n = ctx.notified(lambda n: n.summary == "claude asks · Publish the 0.4 crates"
                         and n.id not in ctx.notes.closes, "the question's popup")
        ctx.invoke_action(n, "choice-1")
        report = a.report()
        expect(report["behavior"] == "allow" and report["updated_input"]["answers"], f"{report}")

        # A race with a popup click: one answer, and the command says which.
        mark = len(ctx.app_log.messages())
        a.ask("cargo test")
        shown(ctx, a_sid, mark)
        n = ctx.notified(lambda n: n.body.startswith("Bash: cargo test"), "the race's popup")
        ctx.await_listener(n)
        racer = subprocess.Popen([ctx.app_bin, "answer", "deny"], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        ctx.invoke_action(n, "allow", racing=True)
        said, why = racer.communicate(timeout=10)
        report = a.report()
        want = "deny" if racer.returncode == 0 else "allow"
        expect(report["decided_by"] == "hook" and report["behavior"] == want,
               f"the command exited {racer.returncode} ({said!r} {why!r}) and the agent got {report}")
    finally:
        a.end()
        if b is not None:
            b.end()
        ctx.stop_app()
        subprocess.run(["dunstctl", "close-all"], check=True)
        put_back(tray_settings, before)
    print(f"figures: {json.dumps({k: round(v * 1000) for k, v in figures.items()})} ms", flush=True)


# Another program's grab of Super+Alt+N on the root window, through Xlib itself (ctypes:
# no package beyond libX11, which the X clients here already need); held until stdin closes.
GRABBER = r"""
import ctypes, sys
x = ctypes.CDLL("libX11.so.6")
x.XOpenDisplay.restype = ctypes.c_void_p
x.XOpenDisplay.argtypes = [ctypes.c_char_p]
x.XDefaultRootWindow.restype = ctypes.c_ulong
x.XDefaultRootWindow.argtypes = [ctypes.c_void_p]
x.XKeysymToKeycode.restype = ctypes.c_ubyte
x.XKeysymToKeycode.argtypes = [ctypes.c_void_p, ctypes.c_ulong]
x.XGrabKey.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint, ctypes.c_ulong,
                       ctypes.c_int, ctypes.c_int, ctypes.c_int]
x.XSync.argtypes = [ctypes.c_void_p, ctypes.c_int]
d = x.XOpenDisplay(None)
# Mod4 (Super) | Mod1 (Alt), GrabModeAsync for both.
x.XGrabKey(d, x.XKeysymToKeycode(d, 0x6e), (1 << 6) | (1 << 3), x.XDefaultRootWindow(d), 0, 1, 1)
x.XSync(d, 0)
print("held", flush=True)
sys.stdin.read()
"""


class Recorder:
    """xev's window, focused: the key presses that reach it (that no grab took)."""

    def __init__(self, ctx):
        self.log = ctx.out / "xev.log"
        out = open(self.log, "w")
        self.proc = subprocess.Popen(["xev", "-event", "keyboard", "-name", "lf-keys-probe"],
                                     stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        out.close()
        wid = wait_for(lambda: subprocess.run(["xdotool", "search", "--name", "lf-keys-probe"],
                                              capture_output=True, text=True).stdout.split(),
                       "xev's window")[0]
        subprocess.run(["xdotool", "windowfocus", "--sync", wid], check=True, timeout=10)

    def presses(self, keysym):
        """How many KeyPress events of `keysym` (`0x79, y`) reached the window."""
        blocks = self.log.read_text(errors="replace").split("\n\n")
        return sum(1 for b in blocks if b.startswith("KeyPress") and f"(keysym {keysym})" in b)

    def last_state(self, keysym):
        """The modifier state of the last KeyPress of `keysym` that reached the window."""
        blocks = self.log.read_text(errors="replace").split("\n\n")
        last = [b for b in blocks if b.startswith("KeyPress") and f"(keysym {keysym})" in b][-1]
        return int(last.split("state ")[1].split(",")[0], 16)

    def end(self):
        self.proc.terminate()
        self.proc.wait(5)


def holding(ctx, mark, what):
    """The app's last `KEYS holding` line after `mark` says `what` is held."""
    def said():
        lines = [m for m in ctx.app_log.messages()[mark:] if m.startswith("KEYS holding")]
        return lines and lines[-1] == f"KEYS holding {what}"
    wait_for(said, f"the app to hold {what}")


@check
def x11_keys_held_only_while_a_request_waits(ctx):
    """answer_keys on under Xvfb, another program holding Super+Alt+N first: the tray says
    so; nothing waiting, Super+Alt+Y reaches the focused window (not grabbed); a request
    waits, the key answers the agent (not the window), and is let go at once after."""
    for tool in ("xev", "xdotool"):
        expect(shutil.which(tool), f"{tool} is installed (scripts/deps.sh TEST_PACKAGES)")
    tray_settings, before = answering_on(True)
    tray_settings.write_text(json.dumps({"answer_from_popup": True, "answer_keys": True}))
    sid = "SESSION-" + uuid.uuid4().hex[:8]
    env, lf, agent = e2e.with_agent_asking(ctx, sid, "Publish the 0.4 crates")
    grabber = subprocess.Popen([sys.executable, "-c", GRABBER], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    recorder = None
    figures = {}
    try:
        expect(grabber.stdout.readline().strip() == "held", "the other program holds Super+Alt+N")
        ctx.start_hidden(env, "app-x11-keys.log", "the app, answering from the keys")
        held = "KEYS Super+Alt+N is held by another program: bind `lf-tray answer deny` to a free key"
        wait_for(lambda: any(m.startswith(held) for m in ctx.app_log.messages()),
                 "the app to say Super+Alt+N is held by another program")
        wait_for(lambda: any(m.startswith("KEYS offered [(Allow, \"Super+Alt+Y\"), (Open, ")
                             for m in ctx.app_log.messages()), "the app to offer Y and O")
        seen = ctx.shown_ids()
        lf("sim", "status", sid, "blocked", "--kind", "permission", "--title", f"Run {sid}",
           "--msg", "Bash wants to run a command")
        ctx.notified(lambda n: f"Run {sid}" in n.body and n.id not in seen, "lf's popup")
        recorder = Recorder(ctx)

        # Nothing waits: nothing is grabbed, the key reaches the focused window.
        mark = len(ctx.app_log.messages())
        subprocess.run(["xdotool", "key", "super+alt+y"], check=True, timeout=10)
        wait_for(lambda: recorder.presses("0x79, y") == 1, "Super+Alt+Y to reach xev's window")
        expect(not [m for m in ctx.app_log.messages()[mark:] if m.startswith("KEYS Super+Alt+Y")],
               "the app took no key while nothing waited")

        # A request waits: its popup names the keys it has, the key answers the agent.
        mark = len(ctx.app_log.messages())
        agent.ask("cargo publish --dry-run")
        shown(ctx, sid, mark)
        n = ctx.notified(lambda n: n.body.startswith("Bash: cargo publish"), "the request's popup")
        expect("Super+Alt+Y allows · Super+Alt+O opens the terminal" in n.body
               and "Super+Alt+N" not in n.body, f"the popup names the free keys: {n.body!r}")
        holding(ctx, mark, '["Super+Alt+Y", "Super+Alt+O"]')
        mark = len(ctx.app_log.messages())
        pressed = time.time()
        subprocess.run(["xdotool", "key", "super+alt+y"], check=True, timeout=10)
        report = agent.report()
        figures["key_to_answer"] = report["decided_at"] - pressed
        expect(report["decided_by"] == "hook" and report["behavior"] == "allow", f"the agent got {report}")
        expect("KEYS Super+Alt+Y: allow" in ctx.app_log.messages()[mark:], "the app logs the key's answer")
        # Let go at once: the next press reaches the window again, the one before did not.
        holding(ctx, mark, "[]")
        expect(recorder.presses("0x79, y") == 1, "the held key did not reach the window")
        subprocess.run(["xdotool", "key", "super+alt+y"], check=True, timeout=10)
        wait_for(lambda: recorder.presses("0x79, y") == 2, "Super+Alt+Y to reach the window once let go")

        # NumLock on: the key still answers (it is grabbed with each lock combination).
        subprocess.run(["xdotool", "key", "Num_Lock"], check=True, timeout=10)
        mark = len(ctx.app_log.messages())
        agent.ask("cargo test")
        shown(ctx, sid, mark)
        holding(ctx, mark, '["Super+Alt+Y", "Super+Alt+O"]')
        subprocess.run(["xdotool", "key", "super+alt+y"], check=True, timeout=10)
        report = agent.report()
        expect(report["behavior"] == "allow", f"with NumLock on, the agent got {report}")
        holding(ctx, mark, "[]")
        subprocess.run(["xdotool", "key", "super+alt+y"], check=True, timeout=10)
        wait_for(lambda: recorder.presses("0x79, y") == 3, "Super+Alt+Y to reach the window again")
        expect(recorder.last_state("0x79, y") & 0x10, "NumLock (Mod2) was on for those presses")
        subprocess.run(["xdotool", "key", "Num_Lock"], check=True, timeout=10)
    finally:
        agent.end()
        if recorder is not None:
            recorder.end()
        grabber.stdin.close()
        grabber.wait(5)
        ctx.stop_app()
        subprocess.run(["dunstctl", "close-all"], check=True)
        put_back(tray_settings, before)
    print(f"figures: {json.dumps({k: round(v * 1000) for k, v in figures.items()})} ms", flush=True)


@window_check
def the_panel_turns_the_keys_on_and_says_which_another_program_holds(ctx):
    """The ⚙ panel's switch saves answer_keys, and the panel then says which keys the tray
    has and that Super+Alt+N, held by another program, is not one of them."""
    from selenium import webdriver
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.options import ArgOptions

    tray_settings, before = answering_on(False)
    grabber = subprocess.Popen([sys.executable, "-c", GRABBER], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    driver = None
    try:
        expect(grabber.stdout.readline().strip() == "held", "the other program holds Super+Alt+N")
        opts = ArgOptions()
        opts.set_capability("browserName", "wry")
        opts.set_capability("tauri:options", {"application": ctx.app_bin})
        driver = ctx.driver = webdriver.Remote(command_executor=ctx.webdriver_url, options=opts)

        def field(name):
            return driver.find_element(By.ID, name)

        e2e.click_current(driver, "#settings-toggle")
        wait_for(lambda: field("set-answer-keys").is_displayed(), "the keys' switch in the panel",
                 e2e.START_TIMEOUT)
        expect(not field("set-answer-keys").is_selected(), "the keys are off by default")
        expect(field("keys-status").text == "", "no status while off")
        # Scrolled to, as a person does: the panel is taller than the window.
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", field("set-answer-keys"))
        field("set-answer-keys").click()
        e2e.click_current(driver, "#settings-save")
        wait_for(lambda: field("settings-message").text == "Saved.", "the panel to save")
        expect(json.loads(tray_settings.read_text()).get("answer_keys") is True, "answer_keys saved")

        def status():
            # Told once the tray has tried the keys: reopened, as a person would.
            text = field("keys-status").text
            if "held by another program" in text:
                return text
            e2e.click_current(driver, "#settings-toggle")
            e2e.click_current(driver, "#settings-toggle")
            return None
        said = wait_for(status, "the panel to say which keys the tray has")
        expect(said.startswith("Super+Alt+Y allows, Super+Alt+O opens: held only while a request waits.")
               and "Super+Alt+N is held by another program: bind `lf-tray answer deny`" in said,
               f"the panel says {said!r}")
        print(f"     panel: {said}", flush=True)
    finally:
        if driver is not None:
            driver.quit()
            ctx.driver = None
        grabber.stdin.close()
        grabber.wait(5)
        e2e.end_webdriver_apps(ctx)
        put_back(tray_settings, before)


def main():
    ctx = e2e.Ctx()
    return run_checks(CHECKS, ctx, ctx.tmp / "result", e2e.finish)


if __name__ == "__main__":
    sys.exit(main())
