"""Answering an agent on the machine from here (issue 34), over the real sshd.

The machine runs today's lf (the stand-in's E2) in a home of its own, through a wrapper
in place of its lf-tray; the agent there is the stand-in Claude (tests/e2e/stand-in-claude),
run as lf's child by `lf session connect`, so the real `lf-tray permission-hook` it starts
runs below the agent's pid, as Claude's hooks do. No runtime dir over this sshd (no PAM):
the hook and the watcher meet at the per-user fallback.

`protocol(m)`: the person's own ssh runs the machine's `lf-tray watch --json` as the tray
does, and the test plays the tray's side of the stream: the machine's side is real
throughout (its settings file, its socket, the walk to the agent, the hook's answer).
`with_the_tray(m, …)`: the tray app itself here, as the person, on Xvfb with dunst
(desktop.py `desk`): the agent there asks, the popup here names the machine, and a click
on its button in dunst's menu answers the agent there.
"""

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "e2e"))
import claude  # noqa: E402  (the suites' own driver of the stand-in Claude)

SID = "sess-remote-answer"
# As Claude Code writes its settings (two-space JSON): it must come back byte for byte.
PERSONS_SETTINGS = json.dumps({"model": "opus", "hooks": {"PreToolUse": [
    {"matcher": "Bash", "hooks": [{"type": "command", "command": "echo mine"}]}]}},
    indent=2) + "\n"
HOSTILE_COMMAND = "echo '<b>bold</b> &amp;' $(touch /tmp/lf-remote-pwned)\n\u202eevil"
QUESTION = {"questions": [{
    "question": "Which registry?", "header": "Registry", "multiSelect": False,
    "options": [{"label": "crates.io", "description": "public"},
                {"label": "internal <b>", "description": "ours"}]}]}


def claude_settings(m):
    return Path(m.REMOTE.pw_dir) / ".claude" / "settings.json"


def e2_machine(m):
    """The machine plays today's lf: its lf-tray runs with the E2 stand-in and a home of
    its own; the previous lf-tray is put back by `undo`."""
    bin_dir = Path(m.REMOTE.pw_dir) / ".local" / "bin"
    runner = m.TMP / "bin" / "stand-in-claude"
    if not runner.exists():
        shutil.copy(Path(__file__).resolve().parent.parent / "e2e" / "stand-in-claude", runner)
        os.chmod(runner, 0o755)
    home = Path(m.REMOTE.pw_dir) / "lf-e2"
    repo = Path(m.REMOTE.pw_dir) / "work" / "repo"
    (repo / ".git").mkdir(parents=True, exist_ok=True)
    env = remote_env(m, home)
    sim = subprocess.run(as_remote(m, env, [str(m.TMP / "bin" / "lf"), "sim", "new", SID,
                                            "--title", "Publish the crates", "--cwd", str(repo),
                                            "--provider", "claude"]),
                         capture_output=True, text=True, cwd="/")
    wrapper = bin_dir / "lf-tray"
    wrapper.unlink()
    wrapper.write_text(f'#!/bin/sh\nLF_SIM_GENERATION=e2 LF_HOME="$HOME/lf-e2" '
                       f'exec {m.TMP / "bin" / "lf-tray"} "$@"\n')
    os.chmod(wrapper, 0o755)
    for path in (wrapper, repo, repo / ".git", repo.parent):
        shutil.chown(path, m.REMOTE.pw_uid, m.REMOTE.pw_gid)
    claude_settings(m).parent.mkdir(exist_ok=True)
    claude_settings(m).write_text(PERSONS_SETTINGS)
    for path in (claude_settings(m).parent, claude_settings(m)):
        shutil.chown(path, m.REMOTE.pw_uid, m.REMOTE.pw_gid)

    def undo():
        wrapper.unlink()
        wrapper.symlink_to(m.TMP / "bin" / "lf-tray")
    return env, repo, undo, sim


def remote_env(m, home):
    return {"HOME": m.REMOTE.pw_dir, "USER": m.REMOTE.pw_name, "LOGNAME": m.REMOTE.pw_name,
            "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
            "LF_HOME": str(home), "LF_SIM_GENERATION": "e2"}


def as_remote(m, env, argv):
    return ["setpriv", f"--reuid={m.REMOTE.pw_uid}", f"--regid={m.REMOTE.pw_gid}",
            "--init-groups", "env", "-i", *[f"{k}={v}" for k, v in env.items()], *argv]


class Agent(claude.Agent):
    """The stand-in Claude on the machine, lf's child (`lf session connect`), as the
    machine's account; its terminal is our pipe. What it reports is `None` when it
    reports nothing, so that a check says what failed."""

    def __init__(self, m, env, repo):
        env = dict(env, LF_SIM_AGENT_PROGRAM=str(m.TMP / "bin" / "stand-in-claude"))
        self.start(as_remote(m, env, [str(m.TMP / "bin" / "lf"), "session", "connect", SID]),
                   repo, None, m.OUT / "stand-in-claude.err")

    def ask(self, tool, tool_input):
        self.say(f"ask {tool} {json.dumps(tool_input)}")
        return time.monotonic()

    def report(self, timeout):
        try:
            return super().report(timeout)
        except claude.CheckFailed:
            return None


class Stream:
    """The machine's `lf-tray watch --json` through the person's ssh, as the tray runs it;
    the test writes the tray's lines."""

    def __init__(self, m):
        argv = m.as_client(["ssh", "-T", "-o", "BatchMode=yes", "--", m.MACHINE,
                            "$HOME/.local/bin/lf-tray watch --json"])
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=open(m.OUT / "answering-ssh.err", "ab"))
        self.lines = queue.Queue()
        self.seen = []

        def read():
            for line in self.proc.stdout:
                self.lines.put((time.monotonic(), json.loads(line)))
        threading.Thread(target=read, daemon=True).start()

    def tell(self, line):
        self.proc.stdin.write((json.dumps(line) + "\n").encode())
        self.proc.stdin.flush()

    def wait(self, matches, timeout):
        """The first line that `matches` (kept lines first), with when it came."""
        for i, (at, line) in enumerate(self.seen):
            if matches(line):
                del self.seen[i]
                return at, line
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                at, line = self.lines.get(timeout=max(0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if matches(line):
                return at, line
            self.seen.append((at, line))
        return None, None

    def cut(self):
        self.proc.kill()
        self.proc.wait()


def of_type(kind, **fields):
    return lambda line: line.get("type") == kind and all(line.get(k) == v for k, v in fields.items())


def hooks_running(m):
    return [p for p in m.remote_pids("permission-hook")
            if Path(f"/proc/{p}/stat").exists()
            and Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"]


def entries(m):
    try:
        settings = json.loads(claude_settings(m).read_text())
    except (OSError, ValueError):
        return None
    return [h["command"] for e in (settings.get("hooks") or {}).get("PermissionRequest") or []
            for h in e.get("hooks") or []]


def protocol(m):
    env, repo, undo, sim = e2_machine(m)
    if not m.check("the machine has an E2 lf session for the agent", sim.returncode == 0,
                   sim.stderr):
        undo()
        return
    agent = stream = None
    try:
        stream = Stream(m)
        _, snap = stream.wait(of_type("snapshot"), 30)
        m.check("the machine's lf-tray streams its E2 sessions",
                snap is not None and any(s["id"] == SID for s in snap["sessions"]), snap)
        agent = Agent(m, env, repo)
        stream.tell({"answering": True})
        _, said = stream.wait(of_type("answering"), 10)
        hooks = entries(m)
        want = f"{m.TMP / 'bin' / 'lf-tray'} permission-hook"
        m.check("answering on: the machine says so, and its Claude settings hold one entry, "
                "the machine's own lf-tray", said == {"type": "answering", "on": True}
                and hooks == [want], (said, hooks))
        stream.tell({"answering": True})
        stream.wait(of_type("answering"), 10)
        m.check("told again: still one entry", entries(m) == [want], entries(m))

        # The agent is up there: its session is active in the stream (the hook is tied to
        # it by the pid lf's process list gives, which the watcher looks for a moment).
        _, up = stream.wait(lambda e: e.get("type") == "state"
                            and (e.get("session") or {}).get("id") == SID
                            and e["session"].get("agent"), 30)
        m.check("the agent there is up, its session active in the stream", up is not None)

        def shown(tool, tool_input):
            """The agent asks, and the tray says the request's popup is up: its id."""
            agent.ask(tool, tool_input)
            _, request = stream.wait(of_type("request"), 10)
            if request:
                stream.tell({"shown": {"id": request["id"]}})
                return request["id"]
            return None

        # Allow, with a hostile command: it arrives as text, the answer reaches the agent.
        asked = agent.ask("Bash", {"command": HOSTILE_COMMAND, "description": "x"})
        at, request = stream.wait(of_type("request"), 10)
        m.check("a hook there → a `request` line naming the lf session, the command as text",
                request is not None and request["session"] == SID
                and request["request"]["tool_input"]["command"] == HOSTILE_COMMAND, request)
        if request is None:
            return
        print(f"     agent asks there → request here: {(at - asked) * 1000:.0f} ms")
        stream.tell({"shown": {"id": request["id"]}})
        clicked = time.monotonic()
        stream.tell({"reply": {"id": request["id"], "reply": {"reply": "allow"}}})
        report = agent.report(10)
        m.check("Allow from here reaches the agent there", report is not None
                and report["decided_by"] == "hook" and report["behavior"] == "allow", report)
        _, took = stream.wait(of_type("answered", id=request["id"]), 5)
        m.check("and the machine says its hook took it", took is not None)
        if report:
            print(f"     reply sent → the agent has it: {(time.monotonic() - clicked) * 1000:.0f} ms"
                  f" (hook ran {report['hooks'][0]['seconds']} s)")
        check_quiet(m)

        # Deny.
        asked = shown("Bash", {"command": "cargo publish", "description": "x"})
        if asked:
            stream.tell({"reply": {"id": asked, "reply": {"reply": "deny"}}})
        report = agent.report(10)
        m.check("Deny from here reaches it, with the desktop's message", report is not None
                and report["behavior"] == "deny" and "desktop" in (report["message"] or ""), report)

        # A question, answered from here; a bare allow on it is refused by the hook there.
        asked = shown("AskUserQuestion", QUESTION)
        if asked:
            stream.tell({"reply": {"id": asked, "reply": {
                "reply": "answers", "answers": [{"chosen": ["internal <b>"], "own": ""}]}}})
        report = agent.report(10)
        answers = ((report or {}).get("updated_input") or {}).get("answers")
        m.check("a question answered from here: the agent there gets the chosen label",
                report is not None and report["behavior"] == "allow"
                and answers == {"Which registry?": "internal <b>"}, report)

        # The terminal there answers first: the request ends here.
        asked = shown("Bash", {"command": "make deploy", "description": "x"})
        if asked:
            answered = time.monotonic()
            agent.say("terminal deny")
            at, ended = stream.wait(of_type("request_ended", id=asked), 5)
            m.check("the terminal there answering first → `request_ended` here", ended is not None)
            if at:
                print(f"     terminal answered there → request_ended here: "
                      f"{(at - answered) * 1000:.0f} ms")
        report = agent.report(10)
        m.check("and the agent has the terminal's answer only",
                report is not None and report["decided_by"] == "terminal", report)

        # Withdrawn here (no popup): the hook gives no decision at once.
        agent.ask("Bash", {"command": "ls", "description": "x"})
        _, request = stream.wait(of_type("request"), 10)
        if request:
            stream.tell({"withdraw": {"id": request["id"]}})
        report = agent.report(10)
        m.check("a request the tray does not take: no decision there, at once",
                report is not None and report["decided_by"] == "none"
                and report["hooks"][0]["exit"] == 0 and report["hooks"][0]["stdout"] == ""
                and report["hooks"][0]["seconds"] < 1.0, report)
        agent.say("terminal allow")
        agent.report(10)

        # The tray silent (a link that died without a word): the hook gives up there.
        asked = shown("Bash", {"command": "make install", "description": "x"})
        if asked:
            quiet = time.monotonic()
            report = agent.report(10)
            took = time.monotonic() - quiet
            _, ended = stream.wait(of_type("request_ended", id=asked), 2)
            m.check("the tray silent after `shown`: no decision there within 4 s, and the "
                    "request ends here", report is not None and report["decided_by"] == "none"
                    and report["hooks"][0]["stdout"] == "" and took < 4.0 and ended is not None,
                    (took, report, ended))
            print(f"     tray silent → the hook there gave up: {took * 1000:.0f} ms")
            agent.say("terminal allow")
            agent.report(10)

        # The link cut mid-request: the hook gives up with no decision within 3 s.
        if shown("Bash", {"command": "rm -rf build", "description": "x"}):
            cut = time.monotonic()
            stream.cut()
            report = agent.report(10)
            took = time.monotonic() - cut
            m.check("the link cut mid-request: the hook there gives no decision within 3 s, "
                    "exit 0", report is not None and report["decided_by"] == "none"
                    and report["hooks"][0]["exit"] == 0 and report["hooks"][0]["stdout"] == ""
                    and took < 3.0, (took, report))
            print(f"     link cut → the hook there gave up: {took * 1000:.0f} ms")
            agent.say("terminal allow")
            agent.report(10)
        # No tray at all: the entry stays, and the hook finds nobody at once.
        gone = m.until(lambda: not m.remote_watchers(), 10)
        agent.ask("Bash", {"command": "true", "description": "x"})
        report = agent.report(10)
        m.check("no tray linked: the entry stays, the hook gives no decision at once",
                gone is not None and entries(m) == [want] and report is not None
                and report["decided_by"] == "none" and report["hooks"][0]["seconds"] < 1.0, report)
        agent.say("terminal allow")
        agent.report(10)

        # Off: the file as the person had it, byte for byte.
        stream = Stream(m)
        stream.wait(of_type("snapshot"), 30)
        stream.tell({"answering": False})
        _, said = stream.wait(of_type("answering"), 10)
        m.check("answering off: the machine's Claude settings are as the person had them",
                said == {"type": "answering", "on": False}
                and claude_settings(m).read_text() == PERSONS_SETTINGS, claude_settings(m).read_text())
        m.check("nothing the machine sent ran as a command", not m.pwned())
        stream.cut()
        stream = None
        if os.environ.get("REMOTE_DESKTOP", "1") != "0":
            with_the_tray(m, agent, want)
    finally:
        if agent:
            agent.end()
        if stream:
            stream.cut()
        undo()


def check_quiet(m):
    """After an answer no hook of the machine is left running."""
    m.check("no hook left running there after the answer", m.until(lambda: not hooks_running(m), 5)
            is not None, hooks_running(m))


def with_the_tray(m, agent, want):
    import desktop
    work, state = desktop.places(m, "desk-answering")
    app_log = state / "state" / "lf-tray" / "lf-tray.log"
    log = open(m.OUT / "desk-answering.log", "ab")
    desk = subprocess.Popen(
        m.as_client(["xvfb-run", "-a", "-s", "-screen 0 1280x800x24", "dbus-run-session", "--",
                     "python3", str(work / "desktop.py"), "--desk", str(state)]),
        stdout=log, stderr=log, start_new_session=True)
    app = None
    try:
        up = desktop.wait(lambda: (state / "desk.json").exists() or desk.poll() is not None, 60)
        if not m.check("the person's desktop is up (dunst, a tray host)",
                       up and (state / "desk.json").exists(), desktop.tail(m.OUT / "desk-answering.log")):
            return
        bus = json.loads((state / "desk.json").read_text())
        mine = [f"{k}={v}" for k, v in bus.items()] + [
            f"{k}={state / d}" for k, d in (("XDG_CONFIG_HOME", "config"), ("XDG_STATE_HOME", "state"),
                                            ("XDG_DATA_HOME", "data"), ("XDG_CACHE_HOME", "cache"),
                                            ("XDG_RUNTIME_DIR", "runtime"),
                                            ("CLAUDE_CONFIG_DIR", "claude"))]
        mine.append(f"LF_HOME={Path(m.CLIENT.pw_dir) / '.lf'}")

        def person(argv, **kw):
            return m.as_client(["env", *mine, *argv])

        def dunstctl(*args):
            return subprocess.run(person(["dunstctl", *args]), capture_output=True, text=True).stdout

        def displayed():
            return int(dunstctl("count", "displayed").strip() or 0)

        def start(on):
            settings = state / "config" / "lf-tray" / "settings.json"
            settings.parent.mkdir(parents=True, exist_ok=True)
            settings.write_text(json.dumps({"terminal": "xterm", "machines": [m.MACHINE],
                                            "answer_from_popup": on}))
            (state / "runtime").mkdir(mode=0o700, exist_ok=True)
            for p in (state / "config", settings.parent, settings, state / "runtime"):
                shutil.chown(p, m.CLIENT.pw_uid, m.CLIENT.pw_gid)
            return subprocess.Popen(person([str(m.TMP / "bin" / "lf-tray"), "--hidden"]),
                                    stdout=log, stderr=log, start_new_session=True)

        def popup(since, words, timeout=15):
            """The first popup after the first `since` that names the machine and has `words`
            in its body, and when it was seen."""
            def found():
                for summary, body, actions in desktop.notifies(state / "notify.log")[since:]:
                    if m.MACHINE in summary and words in body:
                        return time.monotonic(), summary, body, actions
            # Looked for every 20 ms: the figure printed is the time it took.
            return desktop.wait(found, timeout, every=0.02) or (None, None, None, None)

        def click(key):
            (state / "choice").write_text(key)
            clicked = time.monotonic()
            dunstctl("context")
            return clicked

        app = start(True)
        took = m.until(lambda: entries(m) == [want], 45)
        m.check("the tray here, answering on: the machine's Claude settings hold its one entry",
                took is not None, claude_settings(m).read_text())
        # The tray has the machine's session, so a request for it is not refused as
        # unknown: the machine's first view (nothing waits in it, so no popup) comes as
        # the tray's second snapshot, after this machine's.
        listed = desktop.wait(lambda: (desktop.read(app_log) or "").count("SNAPSHOT ") >= 2, 30)
        m.check("the tray lists the machine's session", listed, desktop.tail(app_log))
        figures = {}

        def answer(tool, tool_input, words, key, said=None):
            """`said`: the line for the stand-in Claude when it is more than `ask`."""
            dunstctl("close-all")
            since = len(desktop.notifies(state / "notify.log"))
            if said:
                agent.say(said)
                asked = time.monotonic()
            else:
                asked = agent.ask(tool, tool_input)
            seen, summary, body, actions = popup(since, words)
            if seen:
                figures.setdefault(key, []).append(seen - asked)
            m.check(f"{tool} there → a popup here naming the machine, with `{key}`",
                    seen is not None and key in actions,
                    (summary, body, actions, desktop.notifies(state / "notify.log")[since:]))
            if not seen or key not in actions:
                return agent.report(10), summary
            desktop.wait(lambda: displayed() == 1, 5)
            clicked = click(key)
            report = agent.report(10)
            if report:
                figures.setdefault(f"{key}→agent", []).append(time.monotonic() - clicked)
            return report, summary

        report, summary = answer("Bash", {"command": "cargo publish --dry-run", "description": "x"},
                                 "cargo publish --dry-run", "allow")
        m.check("Allow clicked here reaches the agent there", report is not None
                and report["decided_by"] == "hook" and report["behavior"] == "allow", report)
        m.check("the popup names the machine and the session",
                summary is not None and summary.startswith(f"{m.MACHINE} · ")
                and "Publish the crates" in summary, summary)
        print(f"     the popup: {summary!r}")
        # Deny, for a hostile command: the popup shows it as text (markup escaped), and
        # nothing of it runs here.
        report, _ = answer("Bash", {"command": "rm -rf <b>target</b> $(touch lf-remote-pwned) &",
                                    "description": "x"},
                           "rm -rf &lt;b&gt;target&lt;/b&gt; $(touch lf-remote-pwned) &amp;", "deny")
        m.check("Deny clicked here reaches it", report is not None and report["behavior"] == "deny",
                report)
        report, _ = answer("AskUserQuestion", QUESTION, "Which registry?", "choice-2")
        answers = ((report or {}).get("updated_input") or {}).get("answers")
        m.check("a question answered here: the agent there gets the option clicked",
                answers == {"Which registry?": "internal <b>"}, report)

        # Always allow, as for a local agent: Claude's own suggestion goes back byte for byte.
        said = "request " + json.dumps({
            "tool_name": "Bash", "tool_input": {"command": "cargo publish -p core"},
            "permission_suggestions": "SUGGESTIONS"}).replace('"SUGGESTIONS"', f"[{claude.SUGGESTION}]")
        report, _ = answer("Bash", None, "cargo publish -p core", "always", said)
        out = ((report or {}).get("hooks") or [{}])[0].get("stdout") or ""
        m.check("Always allow clicked here: the agent there gets allow with its own suggestion",
                report is not None and report["behavior"] == "allow"
                and f'"updatedPermissions":[{claude.SUGGESTION}]' in out, report)
        # A plan: Approve plan.
        report, _ = answer("ExitPlanMode", {"plan": "# Release\n1. Bump the versions"},
                           "# Release", "approve-plan")
        m.check("a plan approved here: the agent there gets it back as asked and may go on",
                report is not None and report["behavior"] == "allow"
                and report["updated_input"] == {"plan": "# Release\n1. Bump the versions"}, report)

        # The terminal there answers first: the popup here goes.
        dunstctl("close-all")
        since = len(desktop.notifies(state / "notify.log"))
        agent.ask("Bash", {"command": "make deploy", "description": "x"})
        seen, *_ = popup(since, "make deploy")
        if seen and desktop.wait(lambda: displayed() == 1, 5):
            answered = time.monotonic()
            agent.say("terminal deny")
            gone = m.until(lambda: displayed() == 0, 5)
            m.check("the terminal there answering first takes the popup here down within a "
                    "second", gone is not None and gone < 1.0, gone)
            if gone is not None:
                figures["terminal→popup gone"] = [time.monotonic() - answered]
        else:
            m.check("the terminal there answering first takes the popup here down", False,
                    "no popup")
        agent.report(10)

        # The link dies without a word (its ssh stopped, as a network gone): the hook there
        # gives up within seconds, and an answer clicked meanwhile is said not to have
        # reached it, not taken for given.
        dunstctl("close-all")
        since = len(desktop.notifies(state / "notify.log"))
        agent.ask("Bash", {"command": "make release", "description": "x"})
        seen, *_ = popup(since, "make release")
        links = [p for p in m.descendants(app.pid)
                 if (desktop.cmdline(p) or [""])[0].endswith("ssh")
                 and "watch" in " ".join(desktop.cmdline(p))]
        if seen and links and desktop.wait(lambda: displayed() == 1, 5):
            for pid in links:
                os.kill(pid, signal.SIGSTOP)
            stopped, stopped_wall = time.monotonic(), time.time()
            since = len(desktop.notifies(state / "notify.log"))
            click("allow")
            lost = desktop.wait(lambda: [n for n in desktop.notifies(state / "notify.log")[since:]
                                         if n[0].startswith("Your allow did not reach")], 10,
                                every=0.02)
            told = time.monotonic() - stopped
            report = agent.report(10)
            # No decision has no `decided_at`: the hook's end is when it started (the
            # ask) and how long it ran.
            gave_up = (report["asked_at"] + report["hooks"][0]["seconds"] - stopped_wall
                       if report and report["hooks"] else None)
            m.check("a link dead without a word: Allow clicked here is said not to have "
                    "reached the agent", lost is not None and m.MACHINE in lost[0][1], lost)
            m.check("and the hook there gives no decision within 4 s of the silence",
                    report is not None and report["decided_by"] == "none"
                    and gave_up is not None and gave_up < 4.0,
                    (gave_up, report))
            figures["link dead → told here"] = [told]
            if gave_up is not None:
                figures["link dead → the hook there gave up"] = [gave_up]
            for pid in links:
                os.kill(pid, signal.SIGCONT)
            agent.say("terminal allow")
            agent.report(10)
        else:
            m.check("a popup, and the tray's ssh to stop", False, (seen, links))

        # Off, at the next start: the tray takes its entry out there.
        app.terminate()
        app.wait(20)
        m.check("the tray quit: its entry stays there (a hook finds no one, at once)",
                entries(m) == [want], entries(m))
        app = start(False)
        took = m.until(lambda: claude_settings(m).read_text() == PERSONS_SETTINGS, 45)
        m.check("answering off here: the machine's settings are the person's again, byte for "
                "byte", took is not None, claude_settings(m).read_text())
        m.check("nothing the machine sent ran here", not m.pwned())
        for what, times in figures.items():
            print(f"     with the tray: {what}: " + ", ".join(f"{t * 1000:.0f} ms" for t in times))
    finally:
        (state / "done").touch()
        for proc in (app, desk):
            if proc and proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for proc in (app, desk):
            if proc:
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        for pid in desktop.client_pids(m.CLIENT.pw_uid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if app_log.exists():
            shutil.copy(app_log, m.OUT / "desk-answering-app.log")
