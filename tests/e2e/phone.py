#!/usr/bin/env python3
"""Answering from the phone (issue 43): the real app, dunst, the stand-in Claude and its
real hook path, and the stand-in ntfy server (ntfy.py) with users, tokens and rights as a
person sets them up (docs/phone.md): the tray's user reads and writes both topics, the
reply user may only write the reply topic, nobody else may read the push topic — until the
check that opens it to anyone. The phone is played exactly as ntfy's Android app sends an
`http` action: the action's method, URL, headers and body as the push wrote them.

What is asserted is what the agent's hook got (the stand-in Claude's report), what the
phone shows (the latest message of each sequence id) and what the server saw; the app's
log is read only to know when the tray has taken a reply (and, at the end, for secrets).
Run by run.sh with E2E_SUITE=phone.py; it shares e2e.py's context.
"""

import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import e2e  # noqa: E402
from claude import QUESTION, Agent  # noqa: E402
from harness import CheckFailed, Checks, expect, never, run_checks, wait_for  # noqa: E402
from ntfy import Ntfy  # noqa: E402

CHECKS = Checks()
check = CHECKS.add
window_check = e2e.window_check_for(check)

# Secrets: each must reach the server in its header or its button, and no log.
TRAY_TOKEN = "tk_tray" + uuid.uuid4().hex
REPLY_TOKEN = "tk_reply" + uuid.uuid4().hex
PUSH_TOPIC = "lf-push-" + uuid.uuid4().hex[:12]
REPLY_TOPIC = uuid.uuid4().hex  # 128 random bits, as the tray makes it
# The stand-in server's keepalive, as ntfy sends it: the tray must end its subscription
# when nothing waits at once, not at the server's next line.
KEEPALIVE = 45
# The subscription's end once nothing waits: the tray shuts the link as the last request is
# answered (2-22 ms measured), so this is slack for a slow, busy machine; well under the
# keepalive, which is what a reader that waits for the server's next line would take.
CLOSE_TIMEOUT = 10.0
# No subscription comes back within this spell: a reader that missed its end would be back
# within the back-off's first second.
QUIET = 2.0
# Each round of Allow from the phone is timed; the figure is their median.
ROUNDS = 3


class Phone(e2e.Ctx):
    def __init__(self):
        super().__init__()
        self.ntfy = Ntfy(TRAY_TOKEN, keepalive=KEEPALIVE)
        self.ntfy.add_user("phone-reply", REPLY_TOKEN, {REPLY_TOPIC: "wo"})
        self.ntfy.start()
        self.agents = {}
        self.env = None
        self.lf = None
        self.figures = {}
        self.nonces = set()
        self.stale = None  # an Allow action of a card answered earlier

    def settings(self):
        path = Path(os.environ["XDG_CONFIG_HOME"]) / "lf-tray" / "settings.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({
            "answer_from_popup": True, "push_url": self.ntfy.url(PUSH_TOPIC),
            "push_token": TRAY_TOKEN, "push_when": "always", "answer_from_phone": True,
            "push_reply_token": REPLY_TOKEN, "push_reply_topic": REPLY_TOPIC}))

    def start(self, what):
        mark = len(self.app_log.messages())
        self.start_hidden(self.env, "app-phone.log", what)
        wait_for(lambda: [m for m in self.app_log.messages()[mark:] if m.startswith("PHONE push topic: ")],
                 "the tray to check whether the push topic is protected")
        return [m for m in self.app_log.messages()[mark:] if m.startswith("PHONE push topic: ")][0]

    def agent(self, name):
        """A claude session of its own with the stand-in Claude as its agent."""
        if name not in self.agents:
            sid = f"SESSION-{name}-{uuid.uuid4().hex[:8]}"
            repo = self.tmp / "work" / f"repo-{name}"
            (repo / ".git").mkdir(parents=True, exist_ok=True)
            self.lf("sim", "new", sid, "--title", f"Publish {name}", "--cwd", str(repo),
                    "--provider", "claude")
            self.agents[name] = (sid, Agent(self, self.env, sid, repo))
        return self.agents[name]

    def pushed(self, name, command=None, question=None):
        """The agent `name` asks (a Bash command, or a question), lf says it waits, and the
        push about it arrives: that push (its actions as the phone shows them)."""
        sid, agent = self.agent(name)
        seen = self.shown_ids()
        before = len(self.ntfy.on(PUSH_TOPIC))
        if question:
            agent.say("ask AskUserQuestion " + json.dumps(question))
            self.notified(lambda n: n.summary == f"claude asks · Publish {name}" and n.id not in seen,
                          f"{name}'s question popup")
            self.lf("sim", "status", sid, "blocked", "--kind", "question", "--title", "Which?",
                    "--msg", "claude asks a question")
        else:
            agent.ask(command)
            self.notified(lambda n: n.body.startswith(f"Bash: {command}") and n.id not in seen,
                          f"{name}'s popup for {command}")
            self.lf("sim", "status", sid, "blocked", "--kind", "permission", "--title", f"Run {command}",
                    "--msg", "Bash wants to run a command")
        push = wait_for(lambda: [m for m in self.ntfy.on(PUSH_TOPIC)[before:] if sid_in(m, sid)],
                        f"the push about {name}")[0]
        for action in push["actions"]:
            self.nonces.add(json.loads(action["body"])["nonce"])
        return push

    def done(self, name, running=True):
        """lf says the agent works again: its next request is news."""
        sid, _ = self.agents[name]
        mark = len(self.app_log.messages())
        self.lf("sim", "status", sid, "working")
        if not running:
            return  # the tray reads it in its first list when it starts
        # Waited for: a request asked before the tray reads this would be withdrawn by it.
        wait_for(lambda: [m for m in self.app_log.messages()[mark:]
                          if m.startswith("SESSION ") and f"id={sid} " in m and "needs_you=false" in m],
                 f"the tray to see {name} working again")

    def ignored(self, before):
        return [m for m in self.app_log.messages()[before:] if m.startswith("PHONE reply ignored: ")]

    def listening(self):
        return self.ntfy.open_subscriptions(REPLY_TOPIC)


def sid_in(message, sid):
    return any(json.loads(a.get("body") or "{}").get("request", "").endswith(sid)
               for a in message["actions"]) or sid in (message.get("message") or "") \
        or sid in (message.get("title") or "")


def action(push, label):
    found = [a for a in push["actions"] if a["label"] == label]
    if not found:
        raise CheckFailed(f"no {label!r} button on the push: {[a['label'] for a in push['actions']]}")
    return found[0]


def with_body(act, **fields):
    return dict(act, body=json.dumps(dict(json.loads(act["body"]), **fields)))


def card(ctx, push, starts):
    def shown():
        now = ctx.ntfy.cards(PUSH_TOPIC).get(push["sequence_id"])
        return now if now and now["message"].startswith(starts) else None
    now = wait_for(shown, lambda: f"the card to say {starts!r}: "
                   f"{ctx.ntfy.cards(PUSH_TOPIC).get(push['sequence_id'], {}).get('message')!r}")
    expect(not now["actions"], f"the replaced card still has buttons: {now['actions']}")
    return now["message"]


def expect_buttons(ctx, push, labels):
    got = [a["label"] for a in push["actions"]]
    expect(got == labels, f"buttons {got}, want {labels}: {push['message']!r}")
    expect(push["sequence_id"], f"a push with buttons has no sequence id: {push}")
    reply_url = ctx.ntfy.url(REPLY_TOPIC)
    nonces = set()
    for act in push["actions"]:
        expect(act["action"] == "http" and act["method"] == "POST" and act["url"] == reply_url,
               f"not a POST to the reply topic: {act}")
        expect(act["headers"] == {"Authorization": f"Bearer {REPLY_TOKEN}"}, f"headers {act['headers']}")
        body = json.loads(act["body"])
        expect(len(body["nonce"]) == 32, f"the nonce is not 128 bits: {body}")
        nonces.add(body["nonce"])
    expect(len(nonces) == len(push["actions"]), "two buttons share a nonce")
    expect(TRAY_TOKEN not in json.dumps(push["actions"]) + push["message"], "the push token is in a push")


@check
def the_push_topic_is_checked_and_nothing_is_subscribed_while_nothing_waits(ctx):
    home, repo, ctx.env, ctx.lf = ctx.store_home("e2")
    ctx.settings()
    said = ctx.start("the app, answering from the phone")
    expect(said == "PHONE push topic: Protected", f"the tray says {said!r}")
    polls = [r for r in ctx.ntfy.refused if r["path"] == f"/{PUSH_TOPIC}/json?poll=1"]
    expect(polls and polls[0]["status"] == 403 and "Authorization" not in polls[0]["headers"],
           f"no anonymous read of the push topic was tried: {ctx.ntfy.refused}")
    expect(not ctx.ntfy.subscriptions or all(s["poll"] for s in ctx.ntfy.subscriptions),
           f"subscribed while nothing waits: {ctx.ntfy.subscriptions}")


@check
def allow_from_the_phone_reaches_the_agent_once_and_the_card_says_so(ctx):
    took = []
    for n in range(ROUNDS):
        push = ctx.pushed("A", f"cargo publish --round-{n}")
        expect_buttons(ctx, push, ["Allow", "Deny"])
        expect("Answer here until " in push["message"], f"no expiry on the push: {push['message']!r}")
        wait_for(ctx.listening, "the tray to subscribe to the reply topic")
        _, agent = ctx.agents["A"]
        tapped = time.time()
        status, _ = ctx.ntfy.tap(action(push, "Allow"))
        expect(status == 200, f"the server refused the reply user's tap: {status}")
        report = agent.report()
        took.append(report["decided_at"] - tapped)
        expect(report["decided_by"] == "hook" and report["behavior"] == "allow", f"the agent got {report}")
        said = card(ctx, push, "Allowed from your phone · ")
        ctx.stale = action(push, "Allow")
        ctx.done("A")
    ctx.figures["tap → agent's answer (median of %d)" % ROUNDS] = statistics.median(took)
    ctx.figures["tap → agent's answer (max)"] = max(took)
    print(f"     card: {said!r}", flush=True)
    wait_for(lambda: not ctx.listening(), "the subscription to end once nothing waits", CLOSE_TIMEOUT)
    closed = max(x["closed"] for x in ctx.ntfy.subscriptions if x["topic"] == REPLY_TOPIC and not x["poll"])
    ctx.figures["last tap at the server → subscription closed"] = closed - ctx.ntfy.on(REPLY_TOPIC)[-1]["received"]
    before = len(ctx.ntfy.subscriptions)
    never(lambda: ctx.ntfy.subscriptions[before:], "subscribed again while nothing waits", QUIET)


@check
def a_question_s_option_from_the_phone(ctx):
    push = ctx.pushed("Q", question=QUESTION)
    expect_buttons(ctx, push, ["crates.io", "internal <b>"])
    wait_for(ctx.listening, "the tray to subscribe to the reply topic")
    status, _ = ctx.ntfy.tap(action(push, "internal <b>"))
    expect(status == 200, f"tap refused: {status}")
    _, agent = ctx.agents["Q"]
    report = agent.report()
    answers = (report.get("updated_input") or {}).get("answers")
    expect(report["behavior"] == "allow"
           and answers == {"Which registry should the 0.4 crates go to?": "internal <b>"},
           f"the agent got {report}")
    card(ctx, push, "Answered from your phone · ")
    ctx.done("Q")


@check
def lf_saying_it_waits_before_the_hook_comes_pushes_again_with_the_buttons(ctx):
    """The order a real agent may take: lf's status says the agent waits before its hook
    reaches the tray. The first push has nothing to answer; the request, once there, is
    pushed again with its buttons, and a tap answers it."""
    sid, agent = ctx.agent("A")
    before = len(ctx.ntfy.on(PUSH_TOPIC))
    ctx.lf("sim", "status", sid, "blocked", "--kind", "permission", "--title", "Run cargo doc",
           "--msg", "Bash wants to run a command")
    first = wait_for(lambda: ctx.ntfy.on(PUSH_TOPIC)[before:], "the push of lf's wait")[0]
    expect(not first["actions"], f"buttons before any request: {first['actions']}")
    agent.ask("cargo doc")
    # The request's popup replaces lf's (the same id): found by its words.
    ctx.notified(lambda n: n.body.startswith("Bash: cargo doc"), "A's popup for the request")
    push = wait_for(lambda: [m for m in ctx.ntfy.on(PUSH_TOPIC)[before + 1:] if sid_in(m, sid)],
                    "the push again, with the request's buttons")[0]
    for act in push["actions"]:
        ctx.nonces.add(json.loads(act["body"])["nonce"])
    expect_buttons(ctx, push, ["Allow", "Deny"])
    wait_for(ctx.listening, "the tray to subscribe to the reply topic")
    ctx.ntfy.tap(action(push, "Allow"))
    report = agent.report()
    expect(report["decided_by"] == "hook" and report["behavior"] == "allow", f"the agent got {report}")
    card(ctx, push, "Allowed from your phone · ")
    ctx.done("A")


@check
def replayed_forged_crossed_and_unreadable_replies_answer_nothing_and_the_desk_first_wins(ctx):
    a = ctx.pushed("A", "cargo publish --real")
    b = ctx.pushed("B", "rm -rf target")
    wait_for(ctx.listening, "the tray to subscribe to the reply topic")
    mark = len(ctx.app_log.messages())
    b_allow = json.loads(action(b, "Allow")["body"])
    unused = "not one of that request's unused buttons"
    refusals = [
        ("replayed (an answered card's Allow)", ctx.stale, unused),
        ("forged nonce", with_body(action(a, "Allow"), nonce=uuid.uuid4().hex), unused),
        ("another request's nonce", with_body(action(a, "Allow"), nonce=b_allow["nonce"]), unused),
        ("unreadable", dict(action(a, "Allow"), body="allow"), "not a reply of the tray's buttons"),
    ]
    for what, act, _ in refusals:
        status, _ = ctx.ntfy.tap(act)
        expect(status == 200, f"{what}: the server refused it ({status})")
    # Without the reply user's token the server itself refuses (anyone may read no topic here).
    status, _ = ctx.ntfy.tap(dict(action(a, "Allow"), headers={}))
    expect(status == 403, f"an anonymous tap was taken: {status}")
    # B's Deny from the phone: the barrier that says the replies before it were all read.
    ctx.ntfy.tap(action(b, "Deny"))
    report = ctx.agents["B"][1].report()
    expect(report["decided_by"] == "hook" and report["behavior"] == "deny", f"B got {report}")
    card(ctx, b, "Denied from your phone · ")
    # Each refusal is in the log with why (the subscription's first read may add older
    # replies, refused too); none answered A, as its popup's Deny below shows.
    said = ctx.ignored(mark)
    for why in {why for _, _, why in refusals}:
        want = len([r for r in refusals if r[2] == why])
        expect(len([m for m in said if why in m]) >= want, f"{want} × {why!r} not in the log: {said}")
    print(f"     refused: {said}", flush=True)
    # The desk first: A denied from its popup; the card says so, a late Allow changes nothing.
    n = ctx.notified(lambda n: n.body.startswith("Bash: cargo publish --real"), "A's popup")
    ctx.invoke_action(n, "deny")
    report = ctx.agents["A"][1].report()
    expect(report["decided_by"] == "hook" and report["behavior"] == "deny",
           f"A got {report}: a refused reply answered it")
    card(ctx, a, "Answered at the desk")
    ctx.stale = action(a, "Allow")
    for name in ("A", "B"):
        ctx.done(name)


@check
def the_link_cut_mid_wait_and_back_reads_the_reply_once(ctx):
    push = ctx.pushed("A", "cargo publish --cut")
    subscription = wait_for(ctx.listening, "the tray to subscribe to the reply topic")[-1]
    mark = len(ctx.app_log.messages())
    ctx.ntfy.cut()
    wait_for(lambda: [m for m in ctx.app_log.messages()[mark:] if m.startswith("PHONE reply topic at ")],
             "the tray to notice the link is cut")
    ctx.ntfy.tap(action(push, "Allow"))
    reply = ctx.ntfy.on(REPLY_TOPIC)[-1]
    ctx.ntfy.mend()
    report = ctx.agents["A"][1].report()
    expect(report["decided_by"] == "hook" and report["behavior"] == "allow", f"the agent got {report}")
    card(ctx, push, "Allowed from your phone · ")
    index = ctx.ntfy.subscriptions.index(subscription)
    resumed = [s for s in ctx.ntfy.subscriptions[index + 1:] if s["topic"] == REPLY_TOPIC]
    expect(resumed and resumed[-1]["since"] is not None, f"resumed without since: {resumed}")
    read = [i for i, m in ctx.ntfy.streamed if m == reply["id"]]
    expect(len(read) == 1, f"the reply was streamed to the tray {len(read)} times")
    print(f"     first since={subscription['since']}, resumed since={[s['since'] for s in resumed]}",
          flush=True)
    ctx.done("A")


@check
def restarted_while_a_request_waits_then_an_open_topic_offers_deny_alone(ctx):
    """The tray stopped while a request waits on the phone: the hook leaves the prompt to
    the terminal; started again, the tray replaces the old card (No longer waiting) and a
    late tap on it answers nothing. The push topic is now open to anyone: Deny alone."""
    push = ctx.pushed("A", "cargo publish --restart")
    wait_for(ctx.listening, "the tray to subscribe to the reply topic")
    ctx.stop_app()
    # The hook, its tray gone, ends without a decision: the prompt stays in the terminal,
    # where the person answers.
    report = ctx.agents["A"][1].report()
    expect(report["decided_by"] == "none", f"the agent got {report}")
    ctx.agents["A"][1].say("terminal deny")
    report = ctx.agents["A"][1].report()
    expect(report["decided_by"] == "terminal", f"the agent got {report}")
    ctx.done("A", running=False)
    ctx.ntfy.everyone(PUSH_TOPIC, "ro")
    said = ctx.start("the app, restarted, the push topic open to anyone")
    expect(said == "PHONE push topic: Open", f"the tray says {said!r}")
    # The card the last run left with buttons: its request ended with that run.
    card(ctx, push, "No longer waiting")
    mark = len(ctx.app_log.messages())
    ctx.ntfy.tap(action(push, "Allow"))  # the old card, before the restart
    fresh = ctx.pushed("A", "cargo publish --open")
    expect_buttons(ctx, fresh, ["Deny"])
    expect("Allow is not offered here: anyone can read this push topic" in fresh["message"],
           f"the push does not say why: {fresh['message']!r}")
    wait_for(ctx.listening, "the tray to subscribe to the reply topic")
    got = wait_for(lambda: ctx.ignored(mark), "the tray to take the old card's tap")[0]
    expect("not one of that request's unused buttons" in got, f"the tray said {got!r}")
    ctx.ntfy.tap(action(fresh, "Deny"))
    report = ctx.agents["A"][1].report()
    expect(report["decided_by"] == "hook" and report["behavior"] == "deny", f"the agent got {report}")
    card(ctx, fresh, "Denied from your phone · ")
    ctx.done("A")


@window_check
def the_panel_shows_answering_from_the_phone_and_why_allow_is_not_offered(ctx):
    """The ⚙ panel, as the person sees it, with the push topic still open to anyone: the
    switch on, the reply token a secret field that shows only its end, the reply topic the
    tray's, and the sentence saying why the phone offers Deny alone and how to protect the
    topic. Turned off there and saved: settings.json says so and keeps the token and topic."""
    from selenium import webdriver
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.options import ArgOptions

    ctx.stop_app()
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "lf-tray" / "settings.json"
    opts = ArgOptions()
    opts.set_capability("browserName", "wry")
    opts.set_capability("tauri:options", {"application": ctx.app_bin})
    ctx.driver = driver = webdriver.Remote(command_executor=ctx.webdriver_url, options=opts)

    def field(name):
        return driver.find_element(By.ID, name)

    e2e.click_current(driver, "#settings-toggle")
    wait_for(lambda: field("set-answer-from-phone").is_displayed(), "the phone's fields in the panel",
             e2e.START_TIMEOUT)

    def status():
        # Filled when the panel opens: reopened until the tray has checked the topic, as a
        # person reopening it would see.
        text = field("phone-status").text
        if text:
            return text
        e2e.click_current(driver, "#settings-toggle")
        e2e.click_current(driver, "#settings-toggle")
        return None
    said = wait_for(status, "the panel to say whether the phone offers Allow")
    expect(said.startswith("Anyone who knows the push topic's name can read it")
           and "Deny only" in said and "ntfy access" in said and "reserve the topic" in said,
           f"the panel says {said!r}")
    print(f"     panel: {said}", flush=True)
    expect(field("set-answer-from-phone").is_selected(), "the switch is not on")
    token = field("set-push-reply-token")
    expect(token.get_attribute("type") == "password" and token.get_attribute("value") == "",
           "the reply token field is not an empty secret field")
    hint = token.get_attribute("placeholder")
    expect(hint == f"set, ends …{REPLY_TOKEN[-4:]} (type a new one to replace it)", f"the field says {hint!r}")
    expect(field("push-reply-topic").text == REPLY_TOPIC, f"the topic shown: {field('push-reply-topic').text!r}")
    expect(REPLY_TOKEN not in driver.page_source and TRAY_TOKEN not in driver.page_source,
           "a token is in the page")
    # Below the fold of the small window: scrolled to, as a person scrolls to it.
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", field("set-answer-from-phone"))
    field("set-answer-from-phone").click()
    expect(not field("set-answer-from-phone").is_selected(), "the switch did not turn off")
    driver.execute_script("document.getElementById('settings-message').textContent = ''")
    e2e.click_current(driver, "#settings-save")
    answered = wait_for(lambda: field("settings-message").text, "the panel to answer Save")
    expect(answered == "Saved.", f"the panel says {answered!r} after Save")
    saved = json.loads(path.read_text())
    got = {k: saved.get(k) for k in ("answer_from_phone", "push_reply_token", "push_reply_topic")}
    expect(got == {"answer_from_phone": False, "push_reply_token": REPLY_TOKEN, "push_reply_topic": REPLY_TOPIC},
           f"settings.json has {got}")
    driver.quit()
    ctx.driver = None
    e2e.end_webdriver_apps(ctx)


@check
def tokens_topics_and_nonces_are_in_no_log(ctx):
    ctx.stop_app()
    logs = [p for p in (ctx.app_log.path, ctx.app_log.path.with_name("lf-tray.log.1"),
                        ctx.out / "app-phone.log") if p.exists()]
    expect(logs, "no log to read")
    secrets = {"the push token": TRAY_TOKEN, "the reply token": REPLY_TOKEN,
               "the reply topic": REPLY_TOPIC, "the push topic": PUSH_TOPIC}
    secrets.update({f"a nonce ({n[:4]}…)": n for n in ctx.nonces})
    expect(len(ctx.nonces) >= 10, f"only {len(ctx.nonces)} nonces seen")
    for path in logs:
        text = path.read_text(errors="replace")
        for what, secret in secrets.items():
            expect(secret not in text, f"{what} is in {path}")


def main():
    ctx = Phone()
    return run_checks(CHECKS, ctx, ctx.tmp / "result", finish)


def finish(ctx):
    for what, seconds in ctx.figures.items():
        print(f"     measured: {what} {seconds * 1000:.0f} ms", flush=True)
    for _, agent in ctx.agents.values():
        agent.end()
    e2e.finish(ctx)
    ctx.ntfy.stop()
    subprocess.run(["dunstctl", "close-all"], check=False)


if __name__ == "__main__":
    sys.exit(main())
