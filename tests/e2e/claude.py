"""The stand-in Claude (tests/e2e/stand-in-claude) as the suites drive it, and what they
ask it: shared by the dunst suite (e2e.py) and the real desktops' (gnome.py, plasma.py)."""

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from harness import STEP_TIMEOUT, CheckFailed, app_log, wait_for

QUESTION = {"questions": [{
    "question": "Which registry should the 0.4 crates go to?", "header": "Registry",
    "multiSelect": False,
    "options": [{"label": "crates.io", "description": "the public registry"},
                {"label": "internal <b>", "description": "ours & only ours"}]}]}
FIVE_OPTIONS = {"questions": [{
    "question": "Which release target?", "header": "Target", "multiSelect": False,
    "options": [{"label": f"target {i}", "description": f"the {i}th"} for i in range(1, 6)]}]}
# Claude's own suggestion as its hook input carries it, compact and ordered as Claude 2.1.328
# writes it (tests/fixtures/claude/hook-input/bash.json): the tray must give it back byte for
# byte.
SUGGESTION = ('{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"cargo publish *"}],'
              '"behavior":"allow","destination":"localSettings"}')
MODE_SUGGESTION = '{"type":"setMode","mode":"acceptEdits","destination":"session"}'


class Agent:
    """The stand-in Claude (tests/e2e/stand-in-claude) run as lf's child by `lf session
    connect` (E2): its prompt and hook runner, driven through its stdin."""

    def __init__(self, ctx, env, sid, cwd):
        runner = Path(__file__).resolve().parent / "stand-in-claude"
        self.start([ctx.lf_bin, "session", "connect", sid], cwd,
                   dict(env, LF_SIM_AGENT_PROGRAM=str(runner)), ctx.out / "stand-in-claude.err")

    def start(self, argv, cwd, env, stderr):
        """Run `argv` (lf's `session connect`, or that as another account) with its
        terminal a pipe, its lines read as they come."""
        import queue
        import threading
        self.terminal = []
        self.lines = queue.Queue()
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1,
                                     stderr=open(stderr, "a"), start_new_session=True)

        def read():
            for line in self.proc.stdout:
                self.lines.put(line)
            self.lines.put(None)
        threading.Thread(target=read, daemon=True).start()

    def say(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def ask(self, command):
        self.say("ask Bash " + json.dumps({"command": command, "description": "x"}))
        return time.monotonic()

    def report(self, timeout=STEP_TIMEOUT):
        """The prompt's next report, once the runner has one; lf's own words on the
        terminal are kept aside."""
        import queue
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0, deadline - time.monotonic()))
            except queue.Empty:
                raise CheckFailed(f"the stand-in Claude reported nothing within {timeout} s")
            if line is None:
                raise CheckFailed(f"the stand-in Claude's terminal closed (lf: {self.proc.poll()})")
            if line.startswith("{"):
                return json.loads(line)
            self.terminal.append(line)

    def end(self):
        if self.proc.poll() is None:
            try:
                self.say("exit")
                self.proc.wait(5)
            except (OSError, subprocess.TimeoutExpired):
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def answering_on(on):
    tray_settings = Path(os.environ["XDG_CONFIG_HOME"]) / "lf-tray" / "settings.json"
    before = tray_settings.read_text() if tray_settings.exists() else None
    tray_settings.parent.mkdir(parents=True, exist_ok=True)
    tray_settings.write_text(json.dumps({"answer_from_popup": on}))
    return tray_settings, before


def put_back(path, before):
    if before is None:
        path.unlink(missing_ok=True)
    else:
        path.write_text(before)


def e2_home(tmp, sid, title):
    """A home of today's lf (E2) under `tmp` with one claude session `sid` in a repository:
    the environment that makes the stand-in lf play it, and the repository."""
    home, repo = tmp / "lf-home-e2", tmp / "work" / "repo-e2"
    (repo / ".git").mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, LF_HOME=str(home), LF_SIM_GENERATION="e2")
    subprocess.run([os.environ["LF_BIN"], "sim", "new", sid, "--title", title, "--cwd", str(repo),
                    "--provider", "claude"], env=env, check=True, capture_output=True)
    return env, repo


def start_app(ctx, env, timeout):
    """The app (ctx.app) started hidden in `env`, once it has its first snapshot."""
    before = len([m for m in app_log().messages() if m.startswith("SNAPSHOT")])
    log = open(ctx.out / "app.log", "ab")
    ctx.app = subprocess.Popen([os.environ["APP"], "--hidden"], env=env, stdout=log,
                               stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    wait_for(lambda: len([m for m in app_log().messages() if m.startswith("SNAPSHOT")]) > before,
             "the started app's first snapshot", timeout)


def stop_app(ctx):
    if ctx.app is not None and ctx.app.poll() is None:
        os.killpg(ctx.app.pid, signal.SIGTERM)
        ctx.app.wait(10)
