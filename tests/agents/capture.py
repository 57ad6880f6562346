#!/usr/bin/env python3
"""The hook inputs of tests/fixtures/claude/hook-input/, captured from the real clients
(tests/agents/install.sh) run offline against the scripted model server (model.py): each
client's PermissionRequest hook is a shell line that keeps its stdin and denies, so the
model goes on to its next scripted tool call. What the hook got is written as it came
(compact JSON, the client's key order), with only what names this machine or this run
replaced: the throwaway home becomes /home/user, the project /home/user/project, and each
id (a UUID, Codex's time-ordered ids too) a fixed one, numbered in the order it first
appears.

    python3 tests/agents/capture.py [OUT_DIR]     # default tests/fixtures/claude/hook-input

Needs tmux and npm's clients (LF_TRAY_CACHE, as the agents suite); no display, no tray.
About 10 s. Run it when a client's pin moves (install.sh), then `cargo test -p lf-sim
--test claude_stand_in` and the agents suite.
"""

import json
import os
import re
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import clients  # noqa: E402
import model  # noqa: E402

# The client's start took 0.5-1.6 s on two loaded cores (real-agents.md §1); 30 s leaves room
# for a machine busy with builds, and every wait ends as soon as its state is there.
READY_TIMEOUT = 30.0
# A scripted turn of four denied tool calls took ~5 s; the same room.
TURN_TIMEOUT = 60.0
# A prompt reaches the model server within ~0.3 s once sent; after this long the Enter is
# taken as lost (typed before the input box was ready) and pressed again.
SENT_TIMEOUT = 5.0
DENY = json.dumps({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                                          "decision": {"behavior": "deny",
                                                       "message": "captured for the fixtures"}}})
QUESTIONS = {"questions": [
    {"question": "How should I format the output?", "header": "Format", "multiSelect": False,
     "options": [{"label": "Summary", "description": "A short overview"},
                 {"label": "Detailed", "description": "Every finding"}]},
    {"question": "Which sections should I include?", "header": "Sections", "multiSelect": True,
     "options": [{"label": "Introduction", "description": "Context"},
                 {"label": "Findings", "description": "What was found"},
                 {"label": "Conclusion", "description": "What follows"}]}]}
PLAN = "# Plan: publish the crate\n\n1. Bump the version\n2. cargo publish\n"
ID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")


def capture_hook(into):
    """The hook: its stdin kept in `into` (one file per request, named by the time, so their
    order is kept), then a deny."""
    return f'cat > {shlex.quote(str(into))}/$(date +%s%N).json; printf %s {shlex.quote(DENY)}'


def drive(pane, server, prompt, steps):
    """The person's prompt; the model calls `steps` in turn; back once the turn has ended."""
    mark = server.mark()
    server.script(steps)
    pane.type(prompt)
    if not pane.wait(lambda s: prompt in s, READY_TIMEOUT):
        raise SystemExit(f"the prompt never showed:\n{pane.screen()}")
    for _ in range(3):
        pane.keys("Enter")
        if server.wait_request(lambda r: True, mark, SENT_TIMEOUT):
            break
    else:
        raise SystemExit(f"no request came of the prompt:\n{pane.screen()}")
    if not server.wait_request(lambda r: r.reply == model.DONE_TEXT, mark, TURN_TIMEOUT):
        raise SystemExit(f"the turn did not end:\n{pane.screen()}")


def captured(into):
    return [p.read_text() for p in sorted(into.glob("*.json"), key=lambda p: int(p.stem))]


def claude(bins, server, work):
    home = work / "home"
    repo = home / "project"
    repo.mkdir(parents=True)
    into = work / "claude-hook"
    into.mkdir()
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"hooks": {"PermissionRequest": [
        {"matcher": "", "hooks": [{"type": "command", "command": capture_hook(into), "timeout": 60}]}]}}))
    clients.claude_home(home, repo)
    env = clients.claude_env(home, server.url)
    for mode, prompt, steps in (
            ("default", "publish the crate", [
                ("Bash", {"command": "cargo publish", "description": "Publish the crate"}),
                ("Bash", {"command": "cd /tmp && cargo build && rm -rf target",
                          "description": "Build in /tmp and clean up"}),
                ("Write", {"file_path": str(repo / "NOTES.md"), "content": "# Notes\n"}),
                ("AskUserQuestion", QUESTIONS)]),
            ("plan", "plan the release", [plan_write, ("ExitPlanMode", {})])):
        pane = clients.Pane(work, f"claude-{mode}", [bins["CLAUDE_BIN"], "--permission-mode", mode],
                            repo, env)
        try:
            if not pane.wait(lambda s: "❯" in s and "Claude Code" in s, READY_TIMEOUT):
                raise SystemExit(f"Claude did not come up:\n{pane.screen()}")
            drive(pane, server, prompt, steps)
        finally:
            pane.close()
    out = captured(into)
    return out, home, repo


def plan_write(request):
    """The plan file the plan-mode reminder names (real-agents.md §1), written before
    ExitPlanMode, which reads it."""
    m = re.search(r"(/[^\s\"'`]+/\.claude/plans/[\w.-]+\.md)", request.text())
    if m is None:
        raise SystemExit("no plan file named in the plan-mode request")
    return ("Write", {"file_path": m.group(1), "content": PLAN})


def codex(bins, server, work, home, repo):
    codex_home = home / ".codex"
    into = work / "codex-hook"
    into.mkdir()
    clients.codex_home(codex_home, repo, server.url, capture_hook(into))
    pane = clients.Pane(work, "codex", [bins["CODEX_BIN"], "--dangerously-bypass-hook-trust"], repo,
                        clients.codex_env(codex_home, home))
    try:
        if not pane.wait(lambda s: "Ask Codex to do anything" in s, READY_TIMEOUT):
            raise SystemExit(f"Codex did not come up:\n{pane.screen()}")
        drive(pane, server, "publish the crate", [("exec_command", {
            "cmd": "cargo publish", "justification": "Publish the crate to crates.io?",
            "sandbox_permissions": "require_escalated", "prefix_rule": ["cargo", "publish"]})])
    finally:
        pane.close()
    return captured(into)


class Anonymous:
    """This run's paths and ids replaced, the same way in every payload."""

    def __init__(self, home, repo):
        self.ids = {}
        # Longest first: the project is inside the home. Claude names a project's transcript
        # directory by its path with every other character a dash.
        self.paths = [(str(repo), "/home/user/project"),
                      (re.sub(r"[^A-Za-z0-9]", "-", str(repo)), "-home-user-project"),
                      (str(home), "/home/user")]

    def __call__(self, text):
        for real, shown in self.paths:
            text = text.replace(real, shown)
        return ID.sub(self.id, text)

    def id(self, m):
        return self.ids.setdefault(m.group(0), f"00000000-0000-4000-8000-{len(self.ids) + 1:012d}")


def name(payload):
    doc = json.loads(payload)
    tool = doc["tool_name"]
    if "turn_id" in doc:
        return "codex-exec.json"
    if tool == "Bash":
        return "bash-compound.json" if "&&" in doc["tool_input"]["command"] else "bash.json"
    return {"Write": "write.json", "AskUserQuestion": "ask-user-question.json",
            "ExitPlanMode": "exit-plan-mode.json"}[tool]


def main():
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE.parent / "fixtures" / "claude" / "hook-input"
    if not os.environ.get("LF_TRAY_CACHE"):
        raise SystemExit("capture.py: set LF_TRAY_CACHE (the clients' cache)")
    bins = clients.installed()
    server = model.ModelServer()
    # A short path: tmux's socket lives in it, and a socket's path is limited to 108 bytes.
    work = Path(tempfile.mkdtemp(prefix="lfcap", dir="/tmp"))
    try:
        payloads, home, repo = claude(bins, server, work)
        payloads += codex(bins, server, work, home, repo)
        anonymous = Anonymous(home, repo)
        out.mkdir(parents=True, exist_ok=True)
        written = {}
        for payload in payloads:
            file = name(payload)
            if file in written:
                raise SystemExit(f"two requests for {file}:\n{written[file]}\n{payload}")
            written[file] = payload
            (out / file).write_text(anonymous(payload.strip()) + "\n")
        want = {"bash.json", "bash-compound.json", "write.json", "ask-user-question.json",
                "exit-plan-mode.json", "codex-exec.json"}
        if set(written) != want:
            raise SystemExit(f"captured {sorted(written)}, expected {sorted(want)}")
        left = [f for f in written if str(work) in (out / f).read_text()]
        if left:
            raise SystemExit(f"a path of this run is left in {left}")
        for f in sorted(written):
            print(f"{out / f}: {(out / f).read_text().strip()[:160]}…")
    finally:
        server.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
