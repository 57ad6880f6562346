"""The real agents: Claude Code 2.1.328 and Codex 0.169.0 (tests/agents/install.sh), run
offline in a tmux pane against a scripted model server (tests/agents/model.py) as the
stand-in lf's agent (`lf session connect`, E2), their PermissionRequest hook the tray's
`lf-tray permission-hook` — for Claude put into its settings by the tray itself (answer
from the popup on), for Codex in `$CODEX_HOME/hooks.json`. The person answers from dunst's
popup, the window's card (through WebDriver, when run.sh has TAURI_DRIVER: the tray is then
the app tauri-driver started) or in the pane; the oracle of every scenario is what the model
received next (the `tool_result`, the `function_call_output`), never what a stand-in reports.

Run by run.sh with E2E_SUITE=agents.py; it shares e2e.py's context and helpers.

Two checks depend on fixes the lead makes on another branch (issue 40) and fail on a main
without them: `claude_plan_approved_from_the_popup` (Approve plan must send `updatedInput`)
and `claude_terminal_yes_takes_the_popup_down` (a terminal Yes must take the popup down).
"""

import json
import os
import re
import sys
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "agents"))

import clients  # noqa: E402
import e2e  # noqa: E402
import model  # noqa: E402
from claude import answering_on, put_back  # noqa: E402
from e2e import Ctx, click_current, end_webdriver, node_property, webdriver_through  # noqa: E402
from harness import QUIET_SPELL, CheckFailed, Checks, expect, never, run_checks, wait_for  # noqa: E402

CHECKS = Checks()
check = CHECKS.add


window_check = e2e.window_check_for(check)

# The client's start on two loaded cores took 0.5-1.6 s (real-agents.md); 30 s is for a
# machine busy with several builds, and a wait ends as soon as the prompt is there.
READY_TIMEOUT = 30.0
# Prompt → hook → popup measured 0.9-1.5 s and an answer → the next request about 1 s; the
# same allowance as READY_TIMEOUT for a busy machine.
TURN_TIMEOUT = 30.0
# The lead's fix: a terminal answer takes the popup down within a second (issue 40).
TERMINAL_TAKES_DOWN = 1.0
# A prompt sent reaches the model server within ~0.3 s (the client's own bookkeeping first);
# after this long with no request the Enter is taken as lost and pressed again.
SENT_TIMEOUT = 5.0
# How long a key in the pane may take to close Claude's dialog before it is pressed again:
# it took under 0.3 s once taken, and a second press is harmless (the dialog is gone).
KEY_TAKEN = 1.0
MARKER = "published lf-tray 0.4"
# Two targets: Always allow's rule (and Claude's memory of it for the session) covers
# `make release`, so the other scenarios' `make publish` is still asked about.
MAKEFILE = f"publish:\n\t@echo {MARKER}\nrelease:\n\t@echo {MARKER}\n"
PUBLISH = ("Bash", {"command": "make publish", "description": "Publish the crate"})
RELEASE = ("Bash", {"command": "make release", "description": "Release the crate"})
QUESTION = {"questions": [{
    "question": "Which registry should the 0.4 crates go to?", "header": "Registry",
    "multiSelect": False,
    "options": [{"label": "crates.io", "description": "the public registry"},
                {"label": "internal", "description": "ours only"}]}]}
ASKED = "Which registry should the 0.4 crates go to?"
ANSWERED_INTERNAL = f'Your questions have been answered: "{ASKED}"="internal".'
PLAN = "# Plan: publish the crate\n\n1. Bump the version\n2. make publish\n"
EDITED_PLAN = PLAN + "3. Tell the team in #releases"
TWO_QUESTIONS = {"questions": [
    {"question": "Which registry?", "header": "Registry", "multiSelect": False,
     "options": [{"label": "crates.io", "description": "the public registry"},
                 {"label": "internal", "description": "ours only"}]},
    {"question": "Which crates go first?", "header": "Crates", "multiSelect": True,
     "options": [{"label": "core", "description": "no Tauri"},
                 {"label": "surface", "description": "what the person is told"},
                 {"label": "tray", "description": "the app"}]}]}


class Agents(Ctx):
    def __init__(self):
        super().__init__()
        # run.sh gives the suite a throwaway HOME, so the clients' cache is named outright:
        # without it every run would fetch 570 MB from npm into that home.
        if not os.environ.get("LF_TRAY_CACHE"):
            raise SystemExit("agents.py: set LF_TRAY_CACHE (the clients' cache, as scripts/test.sh does)")
        self.bins = clients.installed()
        self.model = model.ModelServer()
        self.home_dir = Path(os.environ["HOME"])
        self.claude_settings = self.home_dir / ".claude" / "settings.json"
        _, self.repo, self.env, self.lf = self.store_home("e2")
        (self.repo / "Makefile").write_text(MAKEFILE)
        self.tray_settings, self.tray_before = answering_on(True)
        self.panes = []
        self.figures = {}
        self.agent = None  # the pane of the client the next scenario talks to

    def shown_ids(self):
        """Every Notify call so far, by its place on the bus: the tray replaces a session's
        popup in place (`replaces_id`), so a new popup may carry an old id."""
        return {n.seq for n in self.notes.find(lambda n: True)}

    # --- the clients, as lf's agents ------------------------------------------------------
    def connect(self, provider, title, program, args, env):
        """A new lf session of `provider` whose agent is the real client (a wrapper execs it
        with `env`, so it keeps the pid lf recorded), on a tmux pane; once the tray has seen
        the session wait (so it knows the agent's pid)."""
        sid = "SESSION-" + uuid.uuid4().hex[:8]
        self.lf("sim", "new", sid, "--title", title, "--cwd", str(self.repo), "--provider", provider)
        wrapper = clients.wrapper(self.tmp / f"agent-{sid}", program, args, env)
        pane = clients.Pane(self.tmp, sid, [self.lf_bin, "session", "connect", sid], self.repo,
                            {k: self.env[k] for k in ("LF_HOME", "LF_SIM_GENERATION", "LF_BIN", "PATH")
                             if k in self.env} | {"LF_SIM_AGENT_PROGRAM": wrapper})
        self.panes.append(pane)
        self.agent = pane
        seen = self.shown_ids()
        self.lf("sim", "status", sid, "blocked", "--kind", "question", "--title", "Ready?",
                "--msg", f"{provider} started")
        n = self.notified(lambda n: "Ready?" in n.body and n.seq not in seen,
                          "the tray's popup for lf's attention (it has read the session)")
        self.lf("sim", "status", sid, "clear")
        wait_for(lambda: n.id in self.notes.refresh().closes, "that popup withdrawn")
        return sid, pane

    def claude(self, mode, title):
        clients.claude_home(self.home_dir, self.repo)
        env = clients.claude_env(self.home_dir, self.model.url)
        started = time.monotonic()
        sid, pane = self.connect("claude", title, self.bins["CLAUDE_BIN"], ["--permission-mode", mode], env)
        screen = pane.wait(lambda s: "❯" in s and "Claude Code" in s, READY_TIMEOUT)
        expect(screen, f"Claude did not come up; its pane:\n{pane.screen()}")
        self.figures.setdefault("claude_ready", time.monotonic() - started)
        return sid

    def say(self, prompt, steps, verdict=None):
        """The person's prompt; the model answers with `steps`. The request mark and how many
        tool calls the model had made before."""
        mark, issued = self.model.mark(), len(self.model.issued)
        self.model.script(steps, verdict)
        # Typed before the input box is ready, a prompt is lost: it is typed, seen on the
        # screen, then sent, and sent again if no request came of it.
        self.agent.type(prompt)
        expect(self.agent.wait(lambda s: prompt in s, READY_TIMEOUT),
               f"the prompt never showed in the pane:\n{tail(self.agent.screen())}")
        for _ in range(3):
            self.agent.keys("Enter")
            if self.model.wait_request(lambda r: True, mark, SENT_TIMEOUT):
                return mark, issued
        raise CheckFailed(f"no request came of the prompt; the pane:\n{tail(self.agent.screen())}")

    def tool_id(self, issued, name):
        found = wait_for(lambda: [i for n, i in self.model.issued_since(issued) if n == name],
                         f"the model to call {name}", TURN_TIMEOUT)
        return found[0]

    def got(self, mark, tool_id, what):
        """What the model received for the call, waited for."""
        got = self.model.result(tool_id, mark, TURN_TIMEOUT)
        if got is None:
            raise CheckFailed(f"the model received nothing for {what} within {TURN_TIMEOUT} s; "
                              f"the pane:\n{tail(self.agent.screen())}")
        return got

    def popup(self, seen, summary, what):
        return self.notified(lambda n: n.summary == summary and n.seq not in seen, what, TURN_TIMEOUT)

    def idle(self, mark):
        """The model's turn ended (after `mark`) and the client is back at its prompt: the
        next scenario starts clean."""
        done = self.model.wait_request(lambda r: r.reply == model.DONE_TEXT, mark, TURN_TIMEOUT)
        expect(done, f"the model's turn did not end; the pane:\n{tail(self.agent.screen())}")
        self.settled()

    def settled(self):
        expect(self.agent.wait(lambda s: "to interrupt" not in s.lower(), TURN_TIMEOUT),
               f"the client still works; its pane:\n{tail(self.agent.screen())}")

    def close_agent(self):
        if self.agent is not None:
            self.agent.close()
            self.agent = None


def tail(screen, lines=25):
    return "\n".join([line for line in screen.split("\n") if line.strip()][-lines:])


def summary(provider, what, title):
    return f"{provider} {what} · {title}"


def terminal_no_key(screen):
    m = re.search(r"(\d)\. No\b", screen)
    expect(m, f"no `No` on the prompt:\n{tail(screen)}")
    return m.group(1)


# --- Claude, manual mode ------------------------------------------------------------------

TITLE = "Publish the 0.4 crates"


@check
def claude_starts_as_lfs_agent_with_the_trays_hook(ctx):
    ctx.stop_app()
    ctx.start_hidden(ctx.env, "app-agents.log", "the app, answering from the popup")
    command = f"{os.path.realpath(ctx.app_bin)} permission-hook"
    wait_for(lambda: ctx.claude_settings.exists() and command in ctx.claude_settings.read_text(),
             "the tray's hook in Claude's settings")
    ctx.claude("default", TITLE)


@check
def claude_bash_allowed_from_the_popup(ctx):
    seen = ctx.shown_ids()
    asked = time.monotonic()
    mark, issued = ctx.say("please publish the crate", [PUBLISH])
    n = ctx.popup(seen, summary("claude", "asks permission", TITLE), "the Bash popup")
    ctx.figures["claude_prompt_to_popup"] = time.monotonic() - asked
    expect(n.body.startswith("Bash: make publish"), f"body {n.body!r}")
    expect(("allow", "Allow") in n.actions and ("deny", "Deny") in n.actions, f"actions {n.actions}")
    clicked = time.monotonic()
    ctx.invoke_action(n, "allow")
    text, error = ctx.got(mark, ctx.tool_id(issued, "Bash"), "the allowed Bash")
    ctx.figures["claude_click_to_model"] = time.monotonic() - clicked
    expect(not error and MARKER in text, f"the model got {text!r} (error {error})")
    ctx.idle(mark)


@check
def claude_bash_denied_from_the_popup(ctx):
    seen = ctx.shown_ids()
    mark, issued = ctx.say("please publish it now", [PUBLISH])
    n = ctx.popup(seen, summary("claude", "asks permission", TITLE), "the Bash popup")
    ctx.invoke_action(n, "deny")
    text, error = ctx.got(mark, ctx.tool_id(issued, "Bash"), "the denied Bash")
    expect(error and MARKER not in text, f"the model got {text!r} (error {error})")
    ctx.idle(mark)


@check
def claude_bash_always_allowed_writes_the_rule_and_is_not_asked_again(ctx):
    local = ctx.repo / ".claude" / "settings.local.json"
    seen = ctx.shown_ids()
    mark, issued = ctx.say("publish, and do not ask me again", [RELEASE])
    n = ctx.popup(seen, summary("claude", "asks permission", TITLE), "the Bash popup")
    expect(("always", "Always allow") in n.actions, f"actions {n.actions}")
    ctx.invoke_action(n, "always")
    text, error = ctx.got(mark, ctx.tool_id(issued, "Bash"), "the always-allowed Bash")
    expect(not error and MARKER in text, f"the model got {text!r} (error {error})")
    rules = wait_for(lambda: local.exists() and json.loads(local.read_text())
                     .get("permissions", {}).get("allow"), f"a rule in {local}")
    expect(any(r.startswith("Bash(make release") for r in rules), f"the rules {rules}")
    ctx.idle(mark)
    # The rule holds: the same command runs with no popup.
    seen = ctx.shown_ids()
    mark, issued = ctx.say("publish once more", [RELEASE])
    text, error = ctx.got(mark, ctx.tool_id(issued, "Bash"), "the Bash under the rule")
    expect(not error and MARKER in text, f"the model got {text!r} (error {error})")
    expect(not ctx.notes.find(lambda n: n.seq not in seen and n.summary.startswith("claude asks")),
           "a popup for a command the rule allows")
    ctx.idle(mark)


@check
def claude_question_answered_from_the_popup(ctx):
    seen = ctx.shown_ids()
    mark, issued = ctx.say("ask me where to publish", [("AskUserQuestion", QUESTION)])
    n = ctx.popup(seen, summary("claude", "asks", TITLE), "the question's popup")
    expect(n.body.startswith(f"Registry: {ASKED}"), f"body {n.body!r}")
    expect([k for k, _ in n.actions if k.startswith("choice-")] == ["choice-1", "choice-2"],
           f"actions {n.actions}")
    ctx.invoke_action(n, "choice-2")
    text, error = ctx.got(mark, ctx.tool_id(issued, "AskUserQuestion"), "the answered question")
    expect(not error and text.startswith(ANSWERED_INTERNAL), f"the model got {text!r}")
    ctx.idle(mark)


def terminal_first(ctx, keys, what):
    """A Bash popup, then the person answers in the pane. (mark, tool id, whether the popup
    was taken down within TERMINAL_TAKES_DOWN: None, or why not.)"""
    seen = ctx.shown_ids()
    mark, issued = ctx.say(f"publish ({what} at the terminal)", [PUBLISH])
    n = ctx.popup(seen, summary("claude", "asks permission", TITLE), "the Bash popup")
    ctx.await_listener(n)
    screen = ctx.agent.wait(lambda s: "Do you want to proceed?" in s, TURN_TIMEOUT)
    expect(screen, f"no prompt in the pane:\n{tail(ctx.agent.screen())}")
    tool_id = ctx.tool_id(issued, "Bash")
    closes = ctx.notes.refresh().closes.count(n.id)
    pressed = press_until_gone(ctx, keys(screen), "Do you want to proceed?", what)
    return mark, tool_id, taken_down(ctx, n, closes, pressed, what)


def press_until_gone(ctx, key, dialog, what):
    """The person's key in the pane, pressed until Claude's dialog (`dialog` on the screen)
    goes: Claude ignores keys for a moment after its dialog appears (a guard against a key
    meant for something else). When the last press was made."""
    for _ in range(10):
        pressed = time.monotonic()
        ctx.agent.keys(key)
        if ctx.agent.wait(lambda s: dialog not in s, KEY_TAKEN):
            return pressed
    raise CheckFailed(f"the pane took no {what}:\n{tail(ctx.agent.screen())}")


def taken_down(ctx, n, closes, pressed, what):
    """None once popup n is closed (again) within TERMINAL_TAKES_DOWN of the key, or why
    not: the check goes on to what the model got and fails on this last."""
    try:
        wait_for(lambda: ctx.notes.refresh().closes.count(n.id) > closes,
                 f"the popup taken down after {what} at the terminal", TERMINAL_TAKES_DOWN)
        ctx.figures[f"claude_terminal_{what}_to_popup_down"] = time.monotonic() - pressed
        return None
    except CheckFailed as e:
        return str(e)


@check
def claude_terminal_yes_takes_the_popup_down(ctx):
    """Needs the lead's fix (issue 40): on main the popup stays after a terminal Yes."""
    mark, tool_id, stays = terminal_first(ctx, lambda s: "Enter", "yes")
    text, error = ctx.got(mark, tool_id, "the Bash the terminal allowed")
    expect(not error and MARKER in text, f"the model got {text!r} (error {error})")
    ctx.idle(mark)
    expect(stays is None, stays)


def refused_at_the_terminal(ctx, keys, what):
    mark, tool_id, stays = terminal_first(ctx, keys, what)
    # A refusal ends the turn; the model reads it with the person's next prompt.
    never(lambda: ctx.model.since(mark)[1:], "a request before the person's next prompt",
          QUIET_SPELL)
    ctx.settled()
    after, _ = ctx.say("never mind", [])
    text, error = ctx.got(after, tool_id, f"the Bash refused with {what}")
    expect(error and MARKER not in text, f"the model got {text!r} (error {error})")
    ctx.idle(after)
    expect(stays is None, stays)


@check
def claude_terminal_no_takes_the_popup_down(ctx):
    refused_at_the_terminal(ctx, terminal_no_key, "no")


@check
def claude_terminal_esc_takes_the_popup_down(ctx):
    refused_at_the_terminal(ctx, lambda s: "Escape", "esc")


@check
def claude_question_answered_at_the_terminal_takes_the_popup_down(ctx):
    """A question the popup also asks, answered in Claude's own card: the popup goes within a
    second and the model gets the terminal's answer."""
    seen = ctx.shown_ids()
    mark, issued = ctx.say("ask me where to publish (answer at the terminal)", [("AskUserQuestion", QUESTION)])
    n = ctx.popup(seen, summary("claude", "asks", TITLE), "the question's popup")
    ctx.await_listener(n)
    card = "Enter to select"  # the foot of Claude's question card, there while it asks
    screen = ctx.agent.wait(lambda s: card in s and "2. internal" in s, TURN_TIMEOUT)
    expect(screen, f"no question card in the pane:\n{tail(ctx.agent.screen())}")
    tool_id = ctx.tool_id(issued, "AskUserQuestion")
    closes = ctx.notes.refresh().closes.count(n.id)
    pressed = press_until_gone(ctx, "2", card, "answer")
    stays = taken_down(ctx, n, closes, pressed, "answer")
    text, error = ctx.got(mark, tool_id, "the question answered at the terminal")
    expect(not error and text.startswith(ANSWERED_INTERNAL), f"the model got {text!r}")
    ctx.idle(mark)
    expect(stays is None, stays)


# --- Claude, the other permission modes -----------------------------------------------------


def question_in_mode(ctx, mode):
    ctx.close_agent()
    title = f"Publish in {mode}"
    ctx.claude(mode, title)
    seen = ctx.shown_ids()
    mark, issued = ctx.say("ask me where to publish", [("AskUserQuestion", QUESTION)])
    n = ctx.popup(seen, summary("claude", "asks", title), f"the question's popup in {mode}")
    ctx.invoke_action(n, "choice-2")
    text, error = ctx.got(mark, ctx.tool_id(issued, "AskUserQuestion"), f"the question in {mode}")
    expect(not error and text.startswith(ANSWERED_INTERNAL), f"the model got {text!r}")
    ctx.idle(mark)
    return title


@check
def claude_accept_edits_asks_a_question_through_the_popup(ctx):
    question_in_mode(ctx, "acceptEdits")


@check
def claude_bypass_permissions_asks_a_question_through_the_popup(ctx):
    question_in_mode(ctx, "bypassPermissions")


@check
def claude_auto_asks_a_question_and_runs_an_unflagged_command_without_the_hook(ctx):
    title = question_in_mode(ctx, "auto")
    seen = ctx.shown_ids()
    mark, issued = ctx.say("publish it", [PUBLISH], verdict="not_flagged")
    text, error = ctx.got(mark, ctx.tool_id(issued, "Bash"), "the unflagged Bash")
    expect(not error and MARKER in text, f"the model got {text!r} (error {error})")
    expect(not ctx.notes.find(lambda n: n.seq not in seen and n.summary.endswith(title)),
           "a popup for a command auto mode ran")
    ctx.idle(mark)


def plan_steps():
    """Write the plan where the plan-mode reminder says, then ExitPlanMode (real-agents.md §1)."""
    def write(request):
        m = re.search(r"(/[^\s\"'`]+/\.claude/plans/[\w.-]+\.md)", request.text())
        if m is None:
            raise CheckFailed("no plan file named in the plan-mode request")
        return ("Write", {"file_path": m.group(1), "content": PLAN})
    return [write, ("ExitPlanMode", {})]


@check
def claude_plan_asks_a_question_and_keeps_planning_from_the_popup(ctx):
    title = question_in_mode(ctx, "plan")
    seen = ctx.shown_ids()
    mark, issued = ctx.say("plan the release", plan_steps())
    n = ctx.popup(seen, summary("claude", "has a plan", title), "the plan's popup")
    expect(n.body.startswith("# Plan: publish the crate"), f"body {n.body!r}")
    ctx.invoke_action(n, "keep-planning")
    text, error = ctx.got(mark, ctx.tool_id(issued, "ExitPlanMode"), "the plan kept in planning")
    expect(error and "approved" not in text.lower(), f"the model got {text!r} (error {error})")
    ctx.idle(mark)


@check
def claude_plan_approved_from_the_popup(ctx):
    """Needs the lead's fix (issue 40): on main Approve plan sends a bare allow, which Claude
    drops — the model gets nothing."""
    title = "Publish in plan"
    seen = ctx.shown_ids()
    mark, issued = ctx.say("plan the release again", plan_steps())
    n = ctx.popup(seen, summary("claude", "has a plan", title), "the plan's popup")
    ctx.invoke_action(n, "approve-plan")
    text, error = ctx.got(mark, ctx.tool_id(issued, "ExitPlanMode"), "the approved plan")
    expect(not error and text.startswith("User has approved your plan") and "1. Bump the version" in text,
           f"the model got {text!r} (error {error})")
    ctx.idle(mark)


# --- Claude, answered from the window's card (WebDriver) -----------------------------------

WINDOW_TITLE = "Release from the window"


def window_app(ctx):
    """The tray as tauri-driver starts it (the window on screen), on the suite's lf home."""
    if ctx.driver is None:
        ctx.close_agent()
        webdriver_through(ctx, "lf-tray-agents",
                          f'export LF_HOME="{ctx.env["LF_HOME"]}" LF_SIM_GENERATION=e2\n'
                          f'exec "{ctx.app_bin}" "$@"\n')


def card_from_the_popup(ctx, sid, n, kind):
    """The popup's `answer` button (Answer…, or Read the plan… for a plan), as a person who
    wants more than its buttons: the window opens at the session's card. The card's CSS
    selector."""
    from selenium.webdriver.common.by import By

    expect(any(k == "answer" for k, _ in n.actions), f"actions {n.actions}")
    ctx.invoke_action(n, "answer")
    card = f'[data-session-id="{sid}"] .request.{kind}'
    wait_for(lambda: any(e.is_displayed() for e in ctx.driver.find_elements(By.CSS_SELECTOR, card)),
             f"the {kind} card on screen after Answer…", TURN_TIMEOUT)
    return card


def card_gone(ctx, card):
    from selenium.webdriver.common.by import By

    wait_for(lambda: not ctx.driver.find_elements(By.CSS_SELECTOR, card), "the card to go once answered",
             TURN_TIMEOUT)


def plan_in_the_window(ctx, prompt):
    """A new Claude in plan mode whose plan waits: (sid, request mark, tool calls before, the
    plan's card)."""
    window_app(ctx)
    ctx.close_agent()
    sid = ctx.claude("plan", WINDOW_TITLE)
    seen = ctx.shown_ids()
    mark, issued = ctx.say(prompt, plan_steps())
    n = ctx.popup(seen, summary("claude", "has a plan", WINDOW_TITLE), "the plan's popup")
    card = card_from_the_popup(ctx, sid, n, "plan")
    shown = node_property(ctx, f'{card} textarea[data-input="plan"]', "value")
    # The card shows the plan without its last line break (the box's end is the plan's).
    expect(shown is not None and shown.rstrip("\n") == PLAN.rstrip("\n"), f"the card shows the plan {shown!r}")
    return sid, mark, issued, card


@window_check
def claude_plan_approved_unedited_from_the_windows_card(ctx):
    sid, mark, issued, card = plan_in_the_window(ctx, "plan the release")
    click_current(ctx.driver, f'{card} button[data-request-action="approve-plan"]')
    text, error = ctx.got(mark, ctx.tool_id(issued, "ExitPlanMode"), "the plan approved from the card")
    expect(not error and text.startswith("User has approved your plan") and f"## Approved Plan:\n{PLAN.rstrip()}" in text
           and "edited by user" not in text, f"the model got {text!r} (error {error})")
    card_gone(ctx, card)
    ctx.idle(mark)


@window_check
def claude_two_questions_answered_from_the_windows_card_with_a_multi_select_and_own_words(ctx):
    """After the approved plan Claude is in manual mode; the question reaches the hook in
    every mode (real-agents.md §4)."""
    expect(ctx.driver is not None and ctx.agent is not None, "no window and Claude (previous check failed)")
    sid = ctx.agent.name
    seen = ctx.shown_ids()
    mark, issued = ctx.say("ask me how to release", [("AskUserQuestion", TWO_QUESTIONS)])
    n = ctx.popup(seen, summary("claude", "asks", WINDOW_TITLE), "the two questions' popup")
    card = card_from_the_popup(ctx, sid, n, "questions")

    def sendable():
        return node_property(ctx, f'{card} button[data-request-action="send"]', "disabled") is False

    click_current(ctx.driver, f'{card} input[data-input="q0-o1"]')  # internal
    click_current(ctx.driver, f'{card} input[data-input="q1-o0"]')  # core
    click_current(ctx.driver, f'{card} input[data-input="q1-o2"]')  # tray
    own = f'{card} textarea[data-input="own-1"]'
    type_into(ctx, own, "docs too")
    wait_for(sendable, "Send enabled once every question has an answer")
    click_current(ctx.driver, f'{card} button[data-request-action="send"]')
    text, error = ctx.got(mark, ctx.tool_id(issued, "AskUserQuestion"), "the questions answered from the card")
    answers = '"Which registry?"="internal", "Which crates go first?"="core, tray, docs too".'
    # Words of the person's own make it "The user answered" (real-agents.md §3).
    expect(not error and text.startswith(f"The user answered: {answers}"),
           f"the model got {text!r} (error {error})")
    card_gone(ctx, card)
    ctx.idle(mark)


def type_into(ctx, css, words):
    """`words` typed into the card's text box as a person types, until the box holds them:
    the page may redraw the card between two keys (a monitor frame), and a box typed into
    halfway is cleared and typed again. A line break is the Enter key: WebKitWebDriver
    types none for a "\n" in the text."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    held = [None]

    def typed():
        box = ctx.driver.find_element(By.CSS_SELECTOR, css)
        if box.get_attribute("value") != words:
            # As a person scrolls to a box below the window's fold before typing:
            # WebKitWebDriver does not always bring it into view itself (seen once: not
            # interactable for 8 s, the second question's box under a short window).
            ctx.driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", box)
            box.clear()
            for i, line in enumerate(words.split("\n")):
                box.send_keys(*([Keys.ENTER] if i else []), line)
        held[0] = node_property(ctx, css, "value")
        return held[0] == words
    try:
        wait_for(typed, f"{css} to hold {words!r}")
    except CheckFailed as e:
        raise CheckFailed(f"{e}; it holds {held[0]!r}")


@window_check
def claude_plan_approved_with_the_persons_edits_from_the_windows_card(ctx):
    sid, mark, issued, card = plan_in_the_window(ctx, "plan the release once more")
    type_into(ctx, f'{card} textarea[data-input="plan"]', EDITED_PLAN)
    click_current(ctx.driver, f'{card} button[data-request-action="approve-plan"]')
    text, error = ctx.got(mark, ctx.tool_id(issued, "ExitPlanMode"), "the edited plan approved from the card")
    expect(not error and f"## Approved Plan (edited by user):\n{EDITED_PLAN.rstrip()}" in text,
           f"the model got {text!r} (error {error})")
    card_gone(ctx, card)
    ctx.idle(mark)


# --- Codex ----------------------------------------------------------------------------------

CODEX_TITLE = "Publish with codex"
ESCALATE = ("exec_command", {"cmd": "make publish", "justification": "Publish the crate to crates.io?",
                             "sandbox_permissions": "require_escalated", "prefix_rule": ["make", "publish"]})


# Codex's own prompt once its hook has given no decision (0.169).
CODEX_PROMPT = "Would you like to run the following command?"
# The shortest wait the panel takes: the time-out check waits it out.
CODEX_WAIT = 5


def codex(ctx):
    """The tray restarted with Codex answered from the popup (the person's switch): it puts its
    own entry into Codex's hooks.json; then Codex as lf's agent, its hook trusted."""
    if ctx.driver is not None:
        end_webdriver(ctx)
    ctx.close_agent()
    ctx.stop_app()
    settings = json.loads(ctx.tray_settings.read_text())
    settings.update(answer_codex_from_popup=True, codex_wait_seconds=CODEX_WAIT)
    ctx.tray_settings.write_text(json.dumps(settings))
    codex_home = ctx.home_dir / ".codex"
    hooks = codex_home / "hooks.json"
    ctx.start_hidden(ctx.env, "app-agents-codex.log", "the app, answering Codex from the popup")
    command = f"{os.path.realpath(ctx.app_bin)} permission-hook --codex"
    wait_for(lambda: hooks.exists() and command in hooks.read_text(), "the tray's hook in Codex's hooks.json")
    entries = json.loads(hooks.read_text())["hooks"]["PermissionRequest"]
    expect(len(entries) == 1, f"Codex's hooks: {entries}")
    clients.codex_home(codex_home, ctx.repo, ctx.model.url, None)
    started = time.monotonic()
    sid, pane = ctx.connect("codex", CODEX_TITLE, ctx.bins["CODEX_BIN"], ["--dangerously-bypass-hook-trust"],
                            clients.codex_env(codex_home, ctx.home_dir))
    ready = pane.wait(lambda s: "Ask Codex to do anything" in s, READY_TIMEOUT)
    expect(ready, f"Codex did not come up; its pane:\n{tail(pane.screen())}")
    ctx.figures["codex_ready"] = time.monotonic() - started
    return pane


def codex_popup(ctx, seen, what):
    n = ctx.popup(seen, summary("codex", "asks permission", CODEX_TITLE), what)
    expect(n.body.startswith("Bash: make publish"), f"body {n.body!r}")
    keys = [k for k, _ in n.actions]
    expect(keys == ["default", "allow", "deny", "in-terminal"], f"actions {n.actions}")
    return n


@check
def codex_allowed_and_denied_from_the_popup(ctx):
    codex(ctx)
    for answer in ("allow", "deny"):
        seen = ctx.shown_ids()
        mark, issued = ctx.say(f"publish the crate ({answer})", [ESCALATE])
        n = codex_popup(ctx, seen, f"Codex's popup ({answer})")
        clicked = time.monotonic()
        ctx.invoke_action(n, answer)
        out, _ = ctx.got(mark, ctx.tool_id(issued, "exec_command"), f"Codex's {answer}")
        ctx.figures.setdefault("codex_click_to_model", time.monotonic() - clicked)
        if answer == "allow":
            expect(MARKER in out, f"the model got {out!r}")
        else:
            expect(MARKER not in out and "Rejected" in out, f"the model got {out!r}")
        ctx.idle(mark)


def codex_terminal_answers(ctx, mark, issued, what):
    """Codex's own prompt is up: the person says Yes there, and the model gets the output."""
    prompt = ctx.agent.wait(lambda s: CODEX_PROMPT in s, TURN_TIMEOUT)
    expect(prompt, f"Codex's prompt never came back ({what}); its pane:\n{tail(ctx.agent.screen())}")
    ctx.agent.keys("Enter")  # 1. Yes, proceed
    out, _ = ctx.got(mark, ctx.tool_id(issued, "exec_command"), what)
    expect(MARKER in out, f"the model got {out!r}")
    ctx.idle(mark)


@check
def codex_answer_in_the_terminal_hands_the_prompt_back_at_once(ctx):
    seen = ctx.shown_ids()
    mark, issued = ctx.say("publish the crate (in the terminal)", [ESCALATE])
    n = codex_popup(ctx, seen, "Codex's popup (in the terminal)")
    expect(CODEX_PROMPT not in ctx.agent.screen(), "Codex showed its prompt while its hook waited")
    clicked = time.monotonic()
    ctx.invoke_action(n, "in-terminal")
    wait_for(lambda: n.id in ctx.notes.refresh().closes, "the popup to go")
    expect(ctx.agent.wait(lambda s: CODEX_PROMPT in s, TURN_TIMEOUT), "Codex's prompt to come back")
    ctx.figures["codex_in_terminal_to_prompt"] = time.monotonic() - clicked
    codex_terminal_answers(ctx, mark, issued, "Codex answered in its terminal")


@check
def codex_prompt_comes_back_when_the_popups_time_runs_out(ctx):
    seen = ctx.shown_ids()
    mark, issued = ctx.say("publish the crate (nobody clicks)", [ESCALATE])
    n = codex_popup(ctx, seen, "Codex's popup (unanswered)")
    shown = time.monotonic()
    wait_for(lambda: n.id in ctx.notes.refresh().closes, "the popup to go when its time runs out",
             CODEX_WAIT + TURN_TIMEOUT)
    expect(ctx.agent.wait(lambda s: CODEX_PROMPT in s, TURN_TIMEOUT), "Codex's prompt to come back")
    waited = time.monotonic() - shown
    ctx.figures["codex_popup_to_prompt_unanswered"] = waited
    expect(waited >= CODEX_WAIT - 1, f"the prompt came back after {waited:.1f} s, before the wait")
    codex_terminal_answers(ctx, mark, issued, "Codex answered in its terminal after the wait")


def main():
    ctx = Agents()
    return run_checks(CHECKS, ctx, ctx.tmp / "result", finish)


def finish(ctx):
    for what, seconds in ctx.figures.items():
        print(f"     measured: {what} {seconds:.2f} s", flush=True)
    for pane in ctx.panes:
        pane.close()
    if ctx.driver is not None:
        end_webdriver(ctx)
    ctx.stop_app()
    ctx.model.close()
    put_back(ctx.tray_settings, ctx.tray_before)
    e2e.dump_notifications(ctx)


if __name__ == "__main__":
    sys.exit(main())
