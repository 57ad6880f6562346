#!/usr/bin/env python3
"""Answering from the keyboard with `lf-tray answer` (issue 44): the real app, dunst, the
stand-in Claude and its real hook path. Run by run.sh with E2E_SUITE=keys.py; it shares
e2e.py's context. The app's log is read only to know when a popup counts as shown."""

import json
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
        ctx.invoke_action(n, "allow")
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


def main():
    ctx = e2e.Ctx()
    return run_checks(CHECKS, ctx, ctx.tmp / "result", e2e.finish)


if __name__ == "__main__":
    sys.exit(main())
