"""The real Claude Code and Codex, prepared to run offline against the scripted model
server (model.py), each in a tmux pane as a person's terminal: the throwaway home each
needs to start without a dialog (real-agents.md §1, §6), and the pane to read and type in.
"""

import json
import os
import shlex
import subprocess
import time
from pathlib import Path

FAKE_ANTHROPIC_KEY = "sk-ant-fake-lf-tray-agents-0000000000"
CODEX_KEY_VAR = "LF_TRAY_AGENTS_CODEX_KEY"

# How often a wait looks at the pane again: capture-pane is a cheap tmux call, and 50 ms is
# well under what a person would notice of a prompt appearing.
POLL = 0.05


def installed():
    """The two native binaries (tests/agents/install.sh, which installs them when missing)."""
    script = Path(__file__).resolve().parent / "install.sh"
    out = subprocess.run(["bash", str(script)], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"install.sh failed: {out.stderr.strip()[-2000:]}")
    found = dict(line.split("=", 1) for line in out.stdout.split("\n") if "=" in line)
    return {k: shlex.split(v)[0] for k, v in found.items()}


def claude_home(home, cwd):
    """`$HOME/.claude.json` with the three keys without which Claude opens a blocking dialog
    (onboarding, the custom API key, the project's trust), for the project `cwd`."""
    home = Path(home)
    home.mkdir(parents=True, exist_ok=True)
    path = home / ".claude.json"
    doc = json.loads(path.read_text()) if path.exists() else {}
    doc.update({"hasCompletedOnboarding": True, "lastOnboardingVersion": "2.1.328",
                "numStartups": 1, "theme": "dark", "autoUpdates": False,
                "bypassPermissionsModeAccepted": True,
                "customApiKeyResponses": {"approved": [FAKE_ANTHROPIC_KEY[-20:]], "rejected": []}})
    doc.setdefault("projects", {})[str(cwd)] = {"hasTrustDialogAccepted": True}
    path.write_text(json.dumps(doc, indent=2))


def claude_env(home, base_url):
    """Claude's environment: the throwaway home, the model server, nothing else on the net."""
    return {"HOME": str(home), "ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": FAKE_ANTHROPIC_KEY,
            "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1", "TERM": "xterm-256color",
            # bypassPermissions is refused to root without it; the suite runs as root in CI.
            "IS_SANDBOX": "1"}


def codex_home(codex_home_dir, cwd, base_url, hook_command):
    """`$CODEX_HOME` for Codex: the model server as its provider, on-request approvals in a
    read-only sandbox (so a command asks to escalate), the project trusted, and the hook in
    `hooks.json` in Claude's format."""
    d = Path(codex_home_dir)
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.toml").write_text(
        'model = "gpt-5"\n'
        'model_provider = "fake"\n'
        'approval_policy = "on-request"\n'
        'sandbox_mode = "read-only"\n'
        "[model_providers.fake]\n"
        'name = "fake"\n'
        f'base_url = "{base_url}/v1"\n'
        'wire_api = "responses"\n'
        f'env_key = "{CODEX_KEY_VAR}"\n'
        f"[projects.{json.dumps(str(cwd))}]\n"
        'trust_level = "trusted"\n')
    # None: the tray writes its own entry (its Codex switch on).
    if hook_command is not None:
        (d / "hooks.json").write_text(json.dumps({"hooks": {"PermissionRequest": [
            {"matcher": "", "hooks": [{"type": "command", "command": hook_command, "timeout": 600}]}]}},
            indent=2))


def codex_env(codex_home_dir, home):
    return {"HOME": str(home), "CODEX_HOME": str(codex_home_dir), CODEX_KEY_VAR: "sk-fake",
            "TERM": "xterm-256color"}


def wrapper(path, program, args, env):
    """A script that execs `program args "$@"` with `env` added: what lf's stand-in runs
    as its agent (LF_SIM_AGENT_PROGRAM), so the real client keeps the pid lf recorded."""
    sets = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    argv = " ".join(shlex.quote(a) for a in [program, *args])
    Path(path).write_text(f"#!/bin/sh\nexec env {sets} {argv} \"$@\"\n")
    os.chmod(path, 0o755)
    return str(path)


class Pane:
    """One tmux server of its own (its socket under `tmp`) with one window running
    `argv` in `cwd` with `env`: the terminal a person would type in."""

    def __init__(self, tmp, name, argv, cwd, env, width=200, height=50):
        self.socket = str(Path(tmp) / f"tmux-{name}")
        self.name = name
        command = " ".join(shlex.quote(a) for a in argv)
        self.tmux("-f", "/dev/null", "new-session", "-d", "-s", name, "-x", str(width),
                  "-y", str(height), "-c", str(cwd),
                  *[x for k, v in env.items() for x in ("-e", f"{k}={v}")], command)
        # Keep the pane when its program ends, so its last words can be read.
        self.tmux("set-option", "-t", name, "remain-on-exit", "on")

    def tmux(self, *args, check=True):
        return subprocess.run(["tmux", "-S", self.socket, *args], capture_output=True, text=True,
                              check=check).stdout

    def screen(self):
        return self.tmux("capture-pane", "-p", "-t", self.name, check=False)

    def keys(self, *keys):
        self.tmux("send-keys", "-t", self.name, *keys)

    def type(self, text):
        self.tmux("send-keys", "-t", self.name, "-l", text)

    def wait(self, pred, timeout):
        """The screen once pred(screen) holds, or None at the timeout."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if pred(screen):
                return screen
            if time.monotonic() > deadline:
                return None
            time.sleep(POLL)

    def pid(self):
        return int(self.tmux("display-message", "-p", "-t", self.name, "#{pane_pid}").strip())

    def close(self):
        self.tmux("kill-server", check=False)
