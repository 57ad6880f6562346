//! Replay cases for the [`Desk`]: each case a few inputs at given times (milliseconds
//! after the start) and, for each, every effect the desk gave, in order — what the person
//! sees (popups shown and closed, the window, where a click goes), what the hook that
//! asked is told (in its wire words), and what the shell redraws and keeps. Time is data:
//! before each input the desk is woken at every deadline it asks for, as the shell's task
//! wakes it, and what those wake-ups gave is listed first. The log's notes are left out:
//! they say why, the effects say what.
//!
//! An effect reads `show S1 asked default,allow,deny,open` (key, kind, the popup's
//! action keys, then `+` its options), `close S1`, `hook 1 taken`, `hook 1 refused: …`,
//! `hook 1 {"reply":"allow"}` (the line the hook reads), `hook 1 withdrawn`,
//! `go S1 default`, `window S1`, `carded allow` / `carded not: …`, `redraw`, `save`.

use std::time::Duration;

use lf_tray_core::history::History;
use lf_tray_core::permission::{Client, Request};
use lf_tray_core::{Event, SessionRecord, State};

use super::{Desk, Effect, HookId, Input, PhoneInput, PushSetting, ToHook};
use crate::answer::{self, Answer, Given};
use crate::fixtures::record_d;
use crate::keys::{self, Triggers};
use crate::notice::{Notice, NoticeKey, Server};
use crate::phone::{Protection, Setup};
use crate::policy::{Clock, Delivery, Focus, PauseFor, Preferences, QuietHours};
use crate::push::{Message, Prefs, Presence, Pushed, When};
use crate::window::Picked;

/// What an agent asks through its hook.
#[derive(Debug, Clone, Copy)]
enum Req {
    /// Claude's Bash, no rule suggested.
    Bash,
    /// Claude's Bash with a rule suggested: Always allow is offered.
    Always,
    /// One single-select question of two options: the options are buttons.
    Question,
    /// Two questions: answered in the window only.
    Questions,
    Plan,
    /// Codex's exec: its terminal shows nothing while the hook waits.
    Codex,
    /// A question with no questions: the tray cannot answer it whole.
    Unreadable,
}

/// What the window's card sends (options by number).
#[derive(Debug, Clone, Copy)]
enum Win {
    Allow,
    Deny,
    Always,
    Pick(usize),
    Approve,
    /// Approve, with the plan's text changed in the card.
    ApproveEdited(&'static str),
    KeepPlanning(&'static str),
}

/// A setting that differs from the defaults (popups for asks and ready, no reminders,
/// no grace, no quiet hours, 30 s for a Codex request).
#[derive(Debug, Clone, Copy)]
enum With {
    /// Quiet hours 11:00–13:00: the cases run at noon.
    QuietHours,
    /// The first reminder after this many seconds.
    Reminder(u64),
    NoAskPopups,
    NoReadyPopups,
}

/// One input, in the cases' shorthand. Sessions are named by id; each is generation D's
/// record (waiting when it asks, on no terminal).
#[derive(Debug, Clone, Copy)]
enum In {
    /// The engine: the session started waiting on the person.
    Asked(&'static str),
    Ready(&'static str),
    /// lf no longer says the session waits (its attention cleared).
    Cleared(&'static str),
    Resolved(&'static str),
    /// The engine's first list: these sessions wait.
    Start(&'static [&'static str]),
    /// A hook's request (answering from the popup on, the person elsewhere).
    Ask(u64, &'static str, Req),
    /// The same, with answering from the popup off.
    AskOff(u64, &'static str, Req),
    /// The same, while the person looks at the agent's own terminal.
    AskLooking(u64, &'static str, Req),
    HookEnded(u64),
    /// A popup's button (or body: `default`), on a session's popup.
    Click(&'static str, &'static str),
    /// The burst summary's body.
    ClickBurst,
    /// The window's card answered.
    Card(&'static str, Win),
    /// A key (allow, deny, open), for the newest shown request or the session named.
    Key(&'static str),
    KeyFor(&'static str, &'static str),
    /// Answering from the keys on, with the three keys (`Y`, `N`, `O`), or only *deny*'s
    /// (another program holds the others); or off.
    KeysOn,
    KeysDenyOnly,
    KeysOff,
    /// The server took the last popup shown under this key (a session id or `burst`).
    Shown(&'static str),
    /// The server refused it.
    Refused(&'static str),
    /// No server took it.
    NoServer(&'static str),
    Pause(PauseFor),
    Resume,
    Dismiss(&'static str),
    ClickReached,
    ClickFailed(&'static str),
    TrayCame,
    NoTray,
    Server(Server),
    /// A setting changed: the shell ticks the desk.
    Set(With),
    /// A push URL set: pushes always, or only while the person is away.
    PushesOn(When),
    PushesOff,
    /// The desktop says the person left, or is back.
    Away,
    Present,
    /// How a push went.
    PushOk(u64),
    PushFailed(u64),
    /// Answering from the phone on, the push topic's protection as the shell found it.
    PhoneOn(Protection),
    PhoneOff,
    /// The phone sends the button of this label of the session's last push, exactly as
    /// the push wrote it.
    Tap(&'static str, &'static str),
    /// A reply naming the session's request with another session's button's nonce.
    Crossed(&'static str, &'static str, &'static str),
    /// A reply anyone who can write the reply topic could send.
    Forged(&'static str),
    /// Nothing but time: the deadlines up to now.
    Wait,
    /// The tray restarts: a new desk with the popups' memory as last saved.
    Restart,
}

use In::*;

struct Case {
    name: &'static str,
    with: &'static [With],
    steps: &'static [(u64, In, &'static [&'static str])],
}

const DND: Server = Server::DoNotDisturb {
    source: "dunst",
    on: true,
};
const DND_OFF: Server = Server::DoNotDisturb {
    source: "dunst",
    on: false,
};

const TOOL: &str = "show S1 asked default,allow,deny,open";
const ALLOWED: &str = r#"hook 1 {"reply":"allow"}"#;

#[rustfmt::skip]
const CASES: &[Case] = &[
    // Requests: which get a popup.
    Case { name: "a Claude request shows its popup and the hook waits for the person", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Bash), &[TOOL, "hook 1 taken", "redraw"]),
    ]},
    Case { name: "a suggested rule adds Always allow", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Always), &["show S1 asked default,allow,always,deny,open", "hook 1 taken", "redraw"]),
    ]},
    Case { name: "one single-select question offers its options", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Question), &["show S1 asked default,answer,open +choice-1,choice-2", "hook 1 taken", "redraw"]),
    ]},
    Case { name: "two questions are answered in the window: no options on the popup", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Questions), &["show S1 asked default,answer,open", "hook 1 taken", "redraw"]),
    ]},
    Case { name: "a plan offers approve, keep planning and reading it", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Plan), &["show S1 asked default,approve-plan,keep-planning,answer,open", "hook 1 taken", "redraw"]),
    ]},
    Case { name: "a Codex request offers Answer in the terminal in place of Open", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Codex), &["show S1 asked default,allow,deny,in-terminal", "hook 1 taken", "redraw"]),
    ]},
    Case { name: "answering from the popup off: refused, no popup", with: &[], steps: &[
        (0, AskOff(1, "S1", Req::Bash), &["hook 1 refused: answering from the popup is off"]),
    ]},
    Case { name: "a request the tray cannot read whole stays the terminal's", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Unreadable), &["hook 1 refused: an unreadable AskUserQuestion (Shape(\"0 questions\"))"]),
    ]},
    Case { name: "the person looking at the agent's terminal answers there", with: &[], steps: &[
        (0, AskLooking(1, "S1", Req::Bash), &["hook 1 refused: the person looks at the agent's own terminal"]),
    ]},
    Case { name: "a dismissed session's request stays in its terminal", with: &[], steps: &[
        (0, Asked("S1"), &["show S1 asked default,open,dismiss", "redraw", "save"]),
        (10, Dismiss("S1"), &["close S1", "redraw", "save"]),
        (20, Ask(1, "S1", Req::Bash), &["hook 1 refused: the session is dismissed"]),
    ]},
    Case { name: "a pause refuses requests; resuming takes them again", with: &[], steps: &[
        (0, Pause(PauseFor::Hour), &["redraw", "save"]),
        (10, Ask(1, "S1", Req::Bash), &["hook 1 refused: Notifications paused until 13:00"]),
        (20, Resume, &["redraw", "save"]),
        (30, Ask(2, "S1", Req::Bash), &["show S1 asked default,allow,deny,open", "hook 2 taken", "redraw"]),
    ]},
    Case { name: "quiet hours refuse requests", with: &[With::QuietHours], steps: &[
        (0, Ask(1, "S1", Req::Bash), &["hook 1 refused: Quiet hours until 13:00"]),
    ]},
    Case { name: "the desktop's do-not-disturb refuses requests, and not once it is off", with: &[], steps: &[
        (0, Server(DND), &[]),
        (10, Ask(1, "S1", Req::Bash), &["hook 1 refused: The desktop's do-not-disturb is on"]),
        (20, Server(DND_OFF), &[]),
        (30, Ask(2, "S1", Req::Bash), &["show S1 asked default,allow,deny,open", "hook 2 taken", "redraw"]),
    ]},
    Case { name: "no notification server: refused, the terminal asks", with: &[], steps: &[
        (0, Server(Server::Absent), &[]),
        (10, Ask(1, "S1", Req::Bash), &["hook 1 refused: No notification server: popups wait until one starts"]),
    ]},
    Case { name: "an ask popup that came first gives way to the request's", with: &[], steps: &[
        (0, Asked("S1"), &["show S1 asked default,open,dismiss", "redraw", "save"]),
        (10, Ask(1, "S1", Req::Bash), &[TOOL, "hook 1 taken", "redraw"]),
    ]},
    Case { name: "lf's ask after the request keeps the request's buttons", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Bash), &[TOOL, "hook 1 taken", "redraw"]),
        (10, Asked("S1"), &[TOOL, "redraw", "save"]),
    ]},
    Case { name: "popups for asks off: a request still gets its popup", with: &[With::NoAskPopups], steps: &[
        (0, Asked("S1"), &["close S1", "redraw", "save"]),
        (10, Ask(1, "S1", Req::Bash), &[TOOL, "hook 1 taken", "redraw"]),
    ]},

    // Answers from the popup.
    Case { name: "Allow answers the hook and closes the popup", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Bash), &[TOOL, "hook 1 taken", "redraw"]),
        (10, Click("S1", "allow"), &[ALLOWED, "close S1", "redraw"]),
    ]},
    Case { name: "Deny", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Bash), &[TOOL, "hook 1 taken", "redraw"]),
        (10, Click("S1", "deny"), &[r#"hook 1 {"reply":"deny"}"#, "close S1", "redraw"]),
    ]},
    Case { name: "Always allow", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Always), &["show S1 asked default,allow,always,deny,open", "hook 1 taken", "redraw"]),
        (10, Click("S1", "always"), &[r#"hook 1 {"reply":"always_allow"}"#, "close S1", "redraw"]),
    ]},
    Case { name: "Always allow where no rule was suggested is no answer", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Bash), &[TOOL, "hook 1 taken", "redraw"]),
        (10, Click("S1", "always"), &[]),
        (20, Click("S1", "allow"), &[ALLOWED, "close S1", "redraw"]),
    ]},
    Case { name: "an option answers by its label as asked", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Question), &["show S1 asked default,answer,open +choice-1,choice-2", "hook 1 taken", "redraw"]),
        (10, Click("S1", "choice-2"), &[r#"hook 1 {"reply":"answers","answers":[{"chosen":["internal"],"own":""}]}"#, "close S1", "redraw"]),
    ]},
    Case { name: "a bare Allow or an option that is not there answers no question", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Question), &["show S1 asked default,answer,open +choice-1,choice-2", "hook 1 taken", "redraw"]),
        (10, Click("S1", "allow"), &[]),
        (20, Click("S1", "choice-3"), &[]),
        (30, Click("S1", "choice-1"), &[r#"hook 1 {"reply":"answers","answers":[{"chosen":["crates.io"],"own":""}]}"#, "close S1", "redraw"]),
    ]},
    Case { name: "Approve plan and Keep planning", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Plan), &["show S1 asked default,approve-plan,keep-planning,answer,open", "hook 1 taken", "redraw"]),
        (10, Click("S1", "approve-plan"), &[r#"hook 1 {"reply":"approve_plan"}"#, "close S1", "redraw"]),
        (20, Ask(2, "S1", Req::Plan), &["show S1 asked default,approve-plan,keep-planning,answer,open", "hook 2 taken", "redraw"]),
        (30, Click("S1", "keep-planning"), &[r#"hook 2 {"reply":"keep_planning","message":""}"#, "close S1", "redraw"]),
    ]},
    Case { name: "the second click of a double click finds nothing open", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Bash), &[TOOL, "hook 1 taken", "redraw"]),
        (10, Click("S1", "allow"), &[ALLOWED, "close S1", "redraw"]),
        (20, Click("S1", "allow"), &[]),
    ]},
    // Answers from a key: the newest request whose popup showed, one of its own choices.
    Case { name: "a key answers the newest request shown, then the one before", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Bash), &[TOOL, "hook 1 taken", "redraw"]),
        (10, Shown("S1"), &[]),
        (20, Ask(2, "S2", Req::Bash), &["show S2 asked default,allow,deny,open", "hook 2 taken", "redraw"]),
        // S2's popup is not up yet: the key is for S1, the newest the person was shown.
        (30, Key("deny"), &[r#"hook 1 {"reply":"deny"}"#, "close S1", "redraw", "carded deny"]),
        (40, Shown("S2"), &[]),
        (50, Key("allow"), &[r#"hook 2 {"reply":"allow"}"#, "close S2", "redraw", "carded allow"]),
    ]},
    Case { name: "a key with nothing waiting does nothing and says so", with: &[], steps: &[
        (0, Key("allow"), &["carded not: No request waits for an answer (none has shown its popup)."]),
        (10, KeyFor("allow", "S1"), &["carded not: The agent no longer waits for this answer."]),
        (20, Key("yes"), &["carded not: A key answers allow, deny or open."]),
    ]},
    Case { name: "a key on a plan approves it or keeps planning", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Plan), &["show S1 asked default,approve-plan,keep-planning,answer,open", "hook 1 taken", "redraw"]),
        (10, Shown("S1"), &[]),
        (20, Key("allow"), &[r#"hook 1 {"reply":"approve_plan"}"#, "close S1", "redraw", "carded approve-plan"]),
        (30, Ask(2, "S1", Req::Plan), &["show S1 asked default,approve-plan,keep-planning,answer,open", "hook 2 taken", "redraw"]),
        (40, Shown("S1"), &[]),
        (50, KeyFor("deny", "S1"), &[r#"hook 2 {"reply":"keep_planning","message":""}"#, "close S1", "redraw", "carded keep-planning"]),
    ]},
    Case { name: "a key never picks a question's option: open shows its card", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Question), &["show S1 asked default,answer,open +choice-1,choice-2", "hook 1 taken", "redraw"]),
        (10, Shown("S1"), &[]),
        (20, Key("allow"), &["carded not: A question is answered by its options: open shows its card."]),
        (30, Key("open"), &["window S1", "carded open"]),
        (40, Click("S1", "choice-1"), &[r#"hook 1 {"reply":"answers","answers":[{"chosen":["crates.io"],"own":""}]}"#, "close S1", "redraw"]),
    ]},
    Case { name: "open goes to the terminal as the popup's click: Claude's request stays, Codex's goes back", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Bash), &[TOOL, "hook 1 taken", "redraw"]),
        (10, Shown("S1"), &[]),
        (20, Key("open"), &["go S1 default", "carded open"]),
        (30, Ask(2, "S2", Req::Codex), &["show S2 asked default,allow,deny,in-terminal", "hook 2 taken", "redraw"]),
        (40, Shown("S2"), &[]),
        (50, Key("open"), &["hook 2 withdrawn", "close S2", "redraw", "go S2 default", "carded open"]),
        (60, Key("allow"), &[ALLOWED, "close S1", "redraw", "carded allow"]),
    ]},
    Case { name: "a key racing a popup click: the first answers, the second finds nothing", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Bash), &[TOOL, "hook 1 taken", "redraw"]),
        (10, Shown("S1"), &[]),
        (20, Click("S1", "deny"), &[r#"hook 1 {"reply":"deny"}"#, "close S1", "redraw"]),
        (20, Key("allow"), &["carded not: No request waits for an answer (none has shown its popup)."]),
        (30, Ask(2, "S1", Req::Bash), &["show S1 asked default,allow,deny,open", "hook 2 taken", "redraw"]),
        (40, Shown("S1"), &[]),
        (50, KeyFor("allow", "S1"), &[r#"hook 2 {"reply":"allow"}"#, "close S1", "redraw", "carded allow"]),
        (50, Click("S1", "deny"), &[]),
    ]},
    // Keys a desktop gives: held only while a request they answer was shown and waits.
    Case { name: "the keys are held while the newest shown request waits, and let go after", with: &[], steps: &[
        (0, KeysOn, &[]),
        (10, Ask(1, "S1", Req::Bash), &["show S1 asked default,allow,deny,open [Y allows · N denies · O opens the terminal]", "hook 1 taken", "redraw"]),
        // Nothing is held before the popup shows: the person has not been asked yet.
        (20, Shown("S1"), &["grab allow,deny,open"]),
        (30, Ask(2, "S2", Req::Question), &["show S2 asked default,answer,open +choice-1,choice-2 [O shows it in the window]", "hook 2 taken", "redraw"]),
        // The newest is a question: only open answers it, allow and deny are let go.
        (40, Shown("S2"), &["grab open"]),
        (50, Click("S2", "choice-1"), &[r#"hook 2 {"reply":"answers","answers":[{"chosen":["crates.io"],"own":""}]}"#, "close S2", "redraw", "grab allow,deny,open"]),
        (60, Key("allow"), &[ALLOWED, "close S1", "redraw", "carded allow", "grab none"]),
    ]},
    Case { name: "the keys are let go when the request ends elsewhere, and when they are turned off", with: &[], steps: &[
        (0, KeysOn, &[]),
        (10, Ask(1, "S1", Req::Plan), &["show S1 asked default,approve-plan,keep-planning,answer,open [Y approves the plan · N keeps planning · O opens the terminal]", "hook 1 taken", "redraw"]),
        (20, Shown("S1"), &["grab allow,deny,open"]),
        (30, HookEnded(1), &["close S1", "redraw", "grab none"]),
        (40, Ask(2, "S1", Req::Bash), &["show S1 asked default,allow,deny,open [Y allows · N denies · O opens the terminal]", "hook 2 taken", "redraw"]),
        (50, Shown("S1"), &["grab allow,deny,open"]),
        (60, KeysOff, &["grab none"]),
        (70, Ask(3, "S2", Req::Bash), &["show S2 asked default,allow,deny,open", "hook 3 taken", "redraw"]),
        (80, Shown("S2"), &[]),
    ]},
    Case { name: "a key another program holds is neither held nor named", with: &[], steps: &[
        (0, KeysDenyOnly, &[]),
        (10, Ask(1, "S1", Req::Question), &["show S1 asked default,answer,open +choice-1,choice-2", "hook 1 taken", "redraw"]),
        (20, Shown("S1"), &[]),
        (30, Ask(2, "S2", Req::Bash), &["show S2 asked default,allow,deny,open [N denies]", "hook 2 taken", "redraw"]),
        (40, Shown("S2"), &["grab deny"]),
    ]},
    Case { name: "Answer… and Read the plan… open the window at the session", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Questions), &["show S1 asked default,answer,open", "hook 1 taken", "redraw"]),
        (10, Click("S1", "answer"), &["window S1"]),
    ]},
    Case { name: "a Claude request's body click goes to its terminal and the request stays", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Bash), &[TOOL, "hook 1 taken", "redraw"]),
        (10, Click("S1", "default"), &["go S1 default"]),
        (20, Click("S1", "open"), &["go S1 open"]),
        (30, Click("S1", "allow"), &[ALLOWED, "close S1", "redraw"]),
    ]},
    Case { name: "a Codex request: Allow, as for Claude", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Codex), &["show S1 asked default,allow,deny,in-terminal", "hook 1 taken", "redraw"]),
        (10, Click("S1", "allow"), &[ALLOWED, "close S1", "redraw"]),
    ]},
    Case { name: "a Codex request: Answer in the terminal hands it its prompt back", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Codex), &["show S1 asked default,allow,deny,in-terminal", "hook 1 taken", "redraw"]),
        (10, Click("S1", "in-terminal"), &["hook 1 withdrawn", "close S1", "redraw", "go S1 default"]),
        (20, Click("S1", "allow"), &[]),
    ]},
    Case { name: "a Codex request: the body's click goes to the terminal and lets go too", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Codex), &["show S1 asked default,allow,deny,in-terminal", "hook 1 taken", "redraw"]),
        (10, Click("S1", "default"), &["hook 1 withdrawn", "close S1", "redraw", "go S1 default"]),
    ]},

    Case { name: "Answer in the terminal on a popup whose request is gone still goes there", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Codex), &["show S1 asked default,allow,deny,in-terminal", "hook 1 taken", "redraw"]),
        (30_000, Wait, &["hook 1 withdrawn", "close S1", "redraw"]),
        (30_010, Click("S1", "in-terminal"), &["go S1 in-terminal"]),
    ]},

    // Answers from the window's card.
    Case { name: "the card allows", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Bash), &[TOOL, "hook 1 taken", "redraw"]),
        (10, Card("S1", Win::Allow), &[ALLOWED, "close S1", "redraw", "carded allow"]),
    ]},
    Case { name: "the card denies, and once sent there is nothing open", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Bash), &[TOOL, "hook 1 taken", "redraw"]),
        (10, Card("S1", Win::Deny), &[r#"hook 1 {"reply":"deny"}"#, "close S1", "redraw", "carded deny"]),
        (20, Card("S1", Win::Deny), &["carded not: The agent no longer waits for this answer."]),
    ]},
    Case { name: "the card's Always allow with a rule suggested", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Always), &["show S1 asked default,allow,always,deny,open", "hook 1 taken", "redraw"]),
        (10, Card("S1", Win::Always), &[r#"hook 1 {"reply":"always_allow"}"#, "close S1", "redraw", "carded always-allow"]),
    ]},
    Case { name: "the card answers by option number; a wrong number or a bare Allow sends nothing", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Question), &["show S1 asked default,answer,open +choice-1,choice-2", "hook 1 taken", "redraw"]),
        (10, Card("S1", Win::Pick(7)), &["carded not: That option is not one the agent offered."]),
        // The card offers no Allow on a question: one that came anyway is no choice of it.
        (20, Card("S1", Win::Allow), &["carded not: That option is not one the agent offered."]),
        (30, Card("S1", Win::Pick(0)), &[r#"hook 1 {"reply":"answers","answers":[{"chosen":["crates.io"],"own":""}]}"#, "close S1", "redraw", "carded answers"]),
    ]},
    Case { name: "the card approves the plan as shown, or as edited", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Plan), &["show S1 asked default,approve-plan,keep-planning,answer,open", "hook 1 taken", "redraw"]),
        (10, Card("S1", Win::Approve), &[r#"hook 1 {"reply":"approve_plan"}"#, "close S1", "redraw", "carded approve-plan"]),
        (20, Ask(2, "S1", Req::Plan), &["show S1 asked default,approve-plan,keep-planning,answer,open", "hook 2 taken", "redraw"]),
        (30, Card("S1", Win::ApproveEdited("1. Bump\n")), &[r#"hook 2 {"reply":"approve_plan","plan":"1. Bump\n"}"#, "close S1", "redraw", "carded approve-edited-plan"]),
    ]},
    Case { name: "the card keeps planning with the person's words", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Plan), &["show S1 asked default,approve-plan,keep-planning,answer,open", "hook 1 taken", "redraw"]),
        (10, Card("S1", Win::KeepPlanning("smaller")), &[r#"hook 1 {"reply":"keep_planning","message":"smaller"}"#, "close S1", "redraw", "carded keep-planning"]),
    ]},
    Case { name: "the card on a session with no request", with: &[], steps: &[
        (0, Card("S1", Win::Allow), &["carded not: The agent no longer waits for this answer."]),
    ]},

    // Withdrawals.
    Case { name: "the hook ending (the terminal answered) takes the popup down", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Bash), &[TOOL, "hook 1 taken", "redraw"]),
        (10, HookEnded(1), &["close S1", "redraw"]),
        (20, Click("S1", "allow"), &[]),
    ]},
    Case { name: "lf no longer saying the agent waits withdraws the request", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Bash), &[TOOL, "hook 1 taken", "redraw"]),
        (10, Cleared("S1"), &["hook 1 withdrawn", "close S1", "redraw", "save"]),
        (20, HookEnded(1), &[]),
    ]},
    Case { name: "the session resolved withdraws its request and closes its popup", with: &[], steps: &[
        (0, Asked("S1"), &["show S1 asked default,open,dismiss", "redraw", "save"]),
        (10, Ask(1, "S1", Req::Bash), &[TOOL, "hook 1 taken", "redraw"]),
        (20, Resolved("S1"), &["hook 1 withdrawn", "close S1", "redraw", "save"]),
    ]},
    Case { name: "a newer request of the session takes the older's place", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Bash), &[TOOL, "hook 1 taken", "redraw"]),
        (10, Ask(2, "S1", Req::Question), &["show S1 asked default,answer,open +choice-1,choice-2", "hook 2 taken", "hook 1 withdrawn", "redraw"]),
        (20, HookEnded(1), &[]),
        (30, Click("S1", "allow"), &[]),
        (40, Click("S1", "choice-1"), &[r#"hook 2 {"reply":"answers","answers":[{"chosen":["crates.io"],"own":""}]}"#, "close S1", "redraw"]),
    ]},
    Case { name: "requests of two sessions are answered each on its own", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Bash), &[TOOL, "hook 1 taken", "redraw"]),
        (10, Ask(2, "S2", Req::Codex), &["show S2 asked default,allow,deny,in-terminal", "hook 2 taken", "redraw"]),
        (20, Click("S2", "deny"), &[r#"hook 2 {"reply":"deny"}"#, "close S2", "redraw"]),
        (30, Card("S1", Win::Allow), &[ALLOWED, "close S1", "redraw", "carded allow"]),
    ]},

    // Deadlines.
    Case { name: "a Codex request unanswered for 30 s goes back to its terminal", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Codex), &["show S1 asked default,allow,deny,in-terminal", "hook 1 taken", "redraw"]),
        (29_999, Wait, &[]),
        (30_000, Wait, &["hook 1 withdrawn", "close S1", "redraw"]),
        (30_010, Click("S1", "allow"), &[]),
    ]},
    Case { name: "a Claude request has no time limit", with: &[], steps: &[
        (0, Ask(1, "S1", Req::Bash), &[TOOL, "hook 1 taken", "redraw"]),
        (3_600_000, Click("S1", "allow"), &[ALLOWED, "close S1", "redraw"]),
    ]},
    Case { name: "a reminder for a session left waiting, then double the wait", with: &[With::Reminder(60)], steps: &[
        (0, Asked("S1"), &["show S1 asked default,open,dismiss", "redraw", "save"]),
        (59_000, Wait, &[]),
        (60_000, Wait, &["show S1 reminder default,open,dismiss"]),
        (179_000, Wait, &[]),
        (180_000, Wait, &["show S1 reminder default,open,dismiss"]),
    ]},
    Case { name: "a dismissed session gets no reminder", with: &[With::Reminder(60)], steps: &[
        (0, Asked("S1"), &["show S1 asked default,open,dismiss", "redraw", "save"]),
        (10, Dismiss("S1"), &["close S1", "redraw", "save"]),
        (600_000, Wait, &[]),
    ]},

    // The popups' memory.
    Case { name: "lf's ask shows once, and is remembered", with: &[], steps: &[
        (0, Asked("S1"), &["show S1 asked default,open,dismiss", "redraw", "save"]),
        (10, Shown("S1"), &["save"]),
    ]},
    Case { name: "a restart repeats no popup already shown", with: &[], steps: &[
        (0, Asked("S1"), &["show S1 asked default,open,dismiss", "redraw", "save"]),
        (10, Shown("S1"), &["save"]),
        (20, Restart, &[]),
        (30, Start(&["S1"]), &["redraw"]),
    ]},
    Case { name: "a restart shows what waited and never reached a server", with: &[], steps: &[
        (0, Asked("S1"), &["show S1 asked default,open,dismiss", "redraw", "save"]),
        (10, NoServer("S1"), &[]),
        (20, Restart, &[]),
        (30, Start(&["S1"]), &["show S1 asked default,open,dismiss", "redraw"]),
    ]},
    Case { name: "ready, then popups for ready off", with: &[], steps: &[
        (0, Ready("S1"), &["show S1 ready default,open,dismiss", "redraw", "save"]),
        (10, Set(With::NoReadyPopups), &[]),
        (20, Ready("S2"), &["close S2", "redraw", "save"]),
    ]},
    Case { name: "a second popup within the burst window is held, then shown", with: &[], steps: &[
        (0, Asked("S1"), &["show S1 asked default,open,dismiss", "redraw", "save"]),
        (10, Asked("S2"), &["redraw", "save"]),
        (310, Wait, &["show S2 asked default,open,dismiss"]),
    ]},
    Case { name: "five at once are one summary", with: &[], steps: &[
        (0, Asked("S1"), &["show S1 asked default,open,dismiss", "redraw", "save"]),
        (10, Asked("S2"), &["redraw", "save"]),
        (20, Asked("S3"), &["redraw", "save"]),
        (30, Asked("S4"), &["redraw", "save"]),
        (40, Asked("S5"), &["redraw", "save"]),
        (310, Wait, &["show burst burst default"]),
        (320, ClickBurst, &["window"]),
    ]},
    Case { name: "a popup the server let expire marks the session unseen", with: &[], steps: &[
        (0, Asked("S1"), &["show S1 asked default,open,dismiss", "redraw", "save"]),
        (10, Click("S1", "expired"), &["redraw"]),
    ]},

    // Pauses, quiet hours, do-not-disturb, the server.
    Case { name: "a pause holds lf's asks back and its end tells them in one summary", with: &[], steps: &[
        (0, Pause(PauseFor::Indefinite), &["redraw", "save"]),
        (10, Asked("S1"), &["redraw", "save"]),
        (20, Asked("S2"), &["redraw", "save"]),
        (30, Resume, &["redraw", "show burst burst default", "save"]),
    ]},
    Case { name: "an hour's pause ends by itself and shows what waited", with: &[], steps: &[
        (0, Pause(PauseFor::Hour), &["redraw", "save"]),
        (10, Asked("S1"), &["redraw", "save"]),
        // The pause ends on the wall clock's second: the deadline is the next whole one.
        (3_600_009, Wait, &[]),
        (3_601_000, Wait, &["show S1 asked default,open,dismiss", "save"]),
    ]},
    Case { name: "quiet hours hold asks back until they end", with: &[With::QuietHours], steps: &[
        (0, Asked("S1"), &["redraw", "save"]),
        (3_599_000, Wait, &[]),
        (3_600_000, Wait, &["show S1 asked default,open,dismiss"]),
    ]},
    Case { name: "do-not-disturb holds asks back; its end tells them", with: &[], steps: &[
        (0, Server(DND), &[]),
        (10, Asked("S1"), &["redraw", "save"]),
        (20, Asked("S2"), &["redraw", "save"]),
        (30, Server(DND_OFF), &["show burst burst default"]),
    ]},
    Case { name: "a server that went away: popups wait until it is back", with: &[], steps: &[
        (0, Server(Server::Absent), &[]),
        (10, Asked("S1"), &["redraw", "save"]),
        (20, Server(Server::Present), &["show S1 asked default,open,dismiss"]),
    ]},
    Case { name: "a popup the server refused is tried again at the next summary", with: &[], steps: &[
        (0, Asked("S1"), &["show S1 asked default,open,dismiss", "redraw", "save"]),
        (10, Refused("S1"), &[]),
    ]},

    // Clicks and the tray.
    Case { name: "a failed click says why, through a pause, and goes when a click gets there", with: &[], steps: &[
        (0, Pause(PauseFor::Indefinite), &["redraw", "save"]),
        (10, ClickFailed("S1"), &["show error error default"]),
        (20, ClickReached, &["close error"]),
    ]},
    Case { name: "no tray: its popup shows through a pause; a tray coming takes it down", with: &[], steps: &[
        (0, Pause(PauseFor::Indefinite), &["redraw", "save"]),
        (10, NoTray, &["show no_tray no_tray default,open"]),
        (20, TrayCame, &["close no_tray"]),
        (30, TrayCame, &[]),
    ]},

    // Pushes to the phone.
    Case { name: "pushes always: an ask is pushed at once, and remembered once it went", with: &[], steps: &[
        (0, PushesOn(When::Always), &[]),
        (10, Asked("S1"), &["show S1 asked default,open,dismiss", "redraw", "save", "push 1 Title of S1 waits for you"]),
        (20, PushOk(1), &["keep pushed"]),
    ]},
    Case { name: "pushes while away: nothing while present, what waited when the person leaves", with: &[], steps: &[
        (0, PushesOn(When::Away), &[]),
        (10, Asked("S1"), &["show S1 asked default,open,dismiss", "redraw", "save"]),
        (20, Present, &[]),
        (30, Away, &["push 1 Title of S1 waits for you"]),
    ]},
    Case { name: "a failed push is tried again a second later", with: &[], steps: &[
        (0, PushesOn(When::Always), &[]),
        (10, Asked("S1"), &["show S1 asked default,open,dismiss", "redraw", "save", "push 1 Title of S1 waits for you"]),
        (20, PushFailed(1), &[]),
        (1_019, Wait, &[]),
        (1_020, Wait, &["push 1 Title of S1 waits for you"]),
    ]},
    Case { name: "coming back drops a push not yet on its way", with: &[], steps: &[
        (0, PushesOn(When::Away), &[]),
        (10, Away, &[]),
        (20, Asked("S1"), &["show S1 asked default,open,dismiss", "redraw", "save", "push 1 Title of S1 waits for you"]),
        (30, PushFailed(1), &[]),
        (40, Present, &[]),
        (60_000, Wait, &[]),
    ]},
    Case { name: "an answered session's push is dropped", with: &[], steps: &[
        (0, PushesOn(When::Always), &[]),
        (10, Asked("S1"), &["show S1 asked default,open,dismiss", "redraw", "save", "push 1 Title of S1 waits for you"]),
        (20, PushFailed(1), &[]),
        (30, Cleared("S1"), &["close S1", "redraw", "save"]),
        (60_000, Wait, &[]),
    ]},
    Case { name: "a dismissed session is left out of what is pushed on leaving", with: &[], steps: &[
        (0, PushesOn(When::Away), &[]),
        (10, Asked("S1"), &["show S1 asked default,open,dismiss", "redraw", "save"]),
        (20, Asked("S2"), &["redraw", "save"]),
        (30, Dismiss("S1"), &["close S1", "redraw", "save"]),
        (40, Away, &["push 1 Title of S2 waits for you"]),
    ]},
    Case { name: "pushes started after the engine's first list start from it", with: &[], steps: &[
        (0, Start(&["S1"]), &["show S1 asked default,open,dismiss", "redraw", "save"]),
        (10, PushesOn(When::Always), &["push 1 Title of S1 waits for you"]),
    ]},
    // Answering from the phone.
    Case { name: "a protected topic: the push carries Allow and Deny, a tap answers the hook once, the card says so", with: &[], steps: &[
        (0, PushesOn(When::Always), &[]),
        (0, PhoneOn(Protection::Protected), &[]),
        (10, Ask(1, "S1", Req::Bash), &[TOOL, "hook 1 taken", "redraw"]),
        (20, Asked("S1"), &[TOOL, "redraw", "save", "push 1 Title of S1 waits for you [Allow,Deny] Answer here until 12:09", "keep pushed", "listen on"]),
        (30, PushOk(1), &["keep pushed"]),
        (40, Tap("S1", "Allow"), &[ALLOWED, "close S1", "redraw", "card S1 Allowed from your phone · 12:00", "keep pushed", "listen off"]),
        (50, Tap("S1", "Allow"), &[]),
        (60, Tap("S1", "Deny"), &[]),
    ]},
    Case { name: "Always allow where the desk offers it", with: &[], steps: &[
        (0, PushesOn(When::Always), &[]),
        (0, PhoneOn(Protection::Protected), &[]),
        (10, Ask(1, "S1", Req::Always), &["show S1 asked default,allow,always,deny,open", "hook 1 taken", "redraw"]),
        (20, Asked("S1"), &["show S1 asked default,allow,always,deny,open", "redraw", "save", "push 1 Title of S1 waits for you [Allow,Always allow,Deny] Answer here until 12:09", "keep pushed", "listen on"]),
        (30, Tap("S1", "Always allow"), &[r#"hook 1 {"reply":"always_allow"}"#, "close S1", "redraw", "card S1 Always allowed from your phone · 12:00", "keep pushed", "listen off"]),
    ]},
    Case { name: "a topic anyone can read: Deny alone, and the push says why", with: &[], steps: &[
        (0, PushesOn(When::Always), &[]),
        (0, PhoneOn(Protection::Open), &[]),
        (10, Ask(1, "S1", Req::Bash), &[TOOL, "hook 1 taken", "redraw"]),
        (20, Asked("S1"), &[TOOL, "redraw", "save", "push 1 Title of S1 waits for you [Deny] Allow is not offered here: anyone can read this push topic", "keep pushed", "listen on"]),
        (30, Tap("S1", "Deny"), &[r#"hook 1 {"reply":"deny"}"#, "close S1", "redraw", "card S1 Denied from your phone · 12:00", "keep pushed", "listen off"]),
    ]},
    Case { name: "a question's options are the phone's buttons", with: &[], steps: &[
        (0, PushesOn(When::Always), &[]),
        (0, PhoneOn(Protection::Protected), &[]),
        (10, Ask(1, "S1", Req::Question), &["show S1 asked default,answer,open +choice-1,choice-2", "hook 1 taken", "redraw"]),
        (20, Asked("S1"), &["show S1 asked default,answer,open +choice-1,choice-2", "redraw", "save", "push 1 Title of S1 waits for you [crates.io,internal] Answer here until 12:09", "keep pushed", "listen on"]),
        (30, Tap("S1", "internal"), &[r#"hook 1 {"reply":"answers","answers":[{"chosen":["internal"],"own":""}]}"#, "close S1", "redraw", "card S1 Answered from your phone · 12:00", "keep pushed", "listen off"]),
    ]},
    Case { name: "two questions or a plan: no buttons, the push says answer at the desk, nothing listened to", with: &[], steps: &[
        (0, PushesOn(When::Always), &[]),
        (0, PhoneOn(Protection::Protected), &[]),
        (10, Ask(1, "S1", Req::Plan), &["show S1 asked default,approve-plan,keep-planning,answer,open", "hook 1 taken", "redraw"]),
        (20, Asked("S1"), &["show S1 asked default,approve-plan,keep-planning,answer,open", "redraw", "save", "push 1 Title of S1 waits for you [] Answer at the desk: a plan is read there"]),
        (30, PushOk(1), &["keep pushed"]),
        (60_000, Ask(2, "S2", Req::Questions), &["show S2 asked default,answer,open", "hook 2 taken", "redraw"]),
        (60_010, Asked("S2"), &["show S2 asked default,answer,open", "redraw", "save", "push 2 Title of S2 waits for you [] Answer at the desk: the phone offers one question's three options at most"]),
    ]},
    Case { name: "a forged nonce, another request's, and a tap after the expiry answer nothing", with: &[], steps: &[
        (0, PushesOn(When::Always), &[]),
        (0, PhoneOn(Protection::Protected), &[]),
        (10, Ask(1, "S1", Req::Bash), &[TOOL, "hook 1 taken", "redraw"]),
        (20, Asked("S1"), &[TOOL, "redraw", "save", "push 1 Title of S1 waits for you [Allow,Deny] Answer here until 12:09", "keep pushed", "listen on"]),
        (30, PushOk(1), &["keep pushed"]),
        (40, Ask(2, "S2", Req::Bash), &["show S2 asked default,allow,deny,open", "hook 2 taken", "redraw"]),
        (5_000, Asked("S2"), &["show S2 asked default,allow,deny,open", "redraw", "save", "push 2 Title of S2 waits for you [Allow,Deny] Answer here until 12:09", "keep pushed"]),
        (5_010, Forged("S1"), &[]),
        (5_020, Crossed("S1", "S2", "Allow"), &[]),
        (580_011, Tap("S1", "Allow"), &[]),
        (580_020, HookEnded(1), &["close S1", "redraw", "card S1 No longer waiting", "keep pushed"]),
        (580_030, Tap("S2", "Allow"), &[r#"hook 2 {"reply":"allow"}"#, "close S2", "redraw", "card S2 Allowed from your phone · 12:09", "keep pushed", "listen off"]),
    ]},
    Case { name: "the desk answers first: the card says so and a later tap changes nothing", with: &[], steps: &[
        (0, PushesOn(When::Always), &[]),
        (0, PhoneOn(Protection::Protected), &[]),
        (10, Ask(1, "S1", Req::Bash), &[TOOL, "hook 1 taken", "redraw"]),
        (20, Asked("S1"), &[TOOL, "redraw", "save", "push 1 Title of S1 waits for you [Allow,Deny] Answer here until 12:09", "keep pushed", "listen on"]),
        (30, Click("S1", "deny"), &[r#"hook 1 {"reply":"deny"}"#, "close S1", "redraw", "card S1 Answered at the desk", "keep pushed", "listen off"]),
        (40, Tap("S1", "Allow"), &[]),
    ]},
    Case { name: "the agent moved on: the card says no longer waiting", with: &[], steps: &[
        (0, PushesOn(When::Always), &[]),
        (0, PhoneOn(Protection::Protected), &[]),
        (10, Ask(1, "S1", Req::Bash), &[TOOL, "hook 1 taken", "redraw"]),
        (20, Asked("S1"), &[TOOL, "redraw", "save", "push 1 Title of S1 waits for you [Allow,Deny] Answer here until 12:09", "keep pushed", "listen on"]),
        (30, Cleared("S1"), &["hook 1 withdrawn", "close S1", "redraw", "save", "card S1 No longer waiting", "keep pushed", "listen off"]),
    ]},
    Case { name: "lf says it waits before the hook comes: pushed without buttons, then again with them", with: &[], steps: &[
        (0, PushesOn(When::Always), &[]),
        (0, PhoneOn(Protection::Protected), &[]),
        (10, Asked("S1"), &["show S1 asked default,open,dismiss", "redraw", "save", "push 1 Title of S1 waits for you"]),
        (20, PushOk(1), &["keep pushed"]),
        (30, Ask(1, "S1", Req::Bash), &["show S1 asked default,allow,deny,open", "hook 1 taken", "redraw", "push 2 Title of S1 waits for you [Allow,Deny] Answer here until 12:09", "keep pushed", "listen on"]),
        (40, PushOk(2), &[]),
        (50, Tap("S1", "Allow"), &[ALLOWED, "close S1", "redraw", "card S1 Allowed from your phone · 12:00", "keep pushed", "listen off"]),
    ]},
    Case { name: "a plan, or a topic anyone can read and a question, asked after its push: not pushed again, nothing to tap", with: &[], steps: &[
        (0, PushesOn(When::Always), &[]),
        (0, PhoneOn(Protection::Protected), &[]),
        (10, Asked("S1"), &["show S1 asked default,open,dismiss", "redraw", "save", "push 1 Title of S1 waits for you"]),
        (20, PushOk(1), &["keep pushed"]),
        (30, Ask(1, "S1", Req::Plan), &["show S1 asked default,approve-plan,keep-planning,answer,open", "hook 1 taken", "redraw"]),
        (40, PhoneOn(Protection::Open), &[]),
        (60_000, Asked("S2"), &["show S2 asked default,open,dismiss", "redraw", "save", "push 2 Title of S2 waits for you"]),
        (60_010, PushOk(2), &["keep pushed"]),
        (60_020, Ask(2, "S2", Req::Question), &["show S2 asked default,answer,open +choice-1,choice-2", "hook 2 taken", "redraw"]),
    ]},
    Case { name: "answering from the phone turned off: the card says answer at the desk", with: &[], steps: &[
        (0, PushesOn(When::Always), &[]),
        (0, PhoneOn(Protection::Protected), &[]),
        (10, Ask(1, "S1", Req::Bash), &[TOOL, "hook 1 taken", "redraw"]),
        (20, Asked("S1"), &[TOOL, "redraw", "save", "push 1 Title of S1 waits for you [Allow,Deny] Answer here until 12:09", "keep pushed", "listen on"]),
        (30, PhoneOff, &["card S1 Answer at the desk", "keep pushed", "listen off"]),
        (40, Click("S1", "allow"), &[ALLOWED, "close S1", "redraw"]),
    ]},
    Case { name: "pushes off: nothing is pushed", with: &[], steps: &[
        (0, PushesOn(When::Always), &[]),
        (10, PushesOff, &[]),
        (20, Asked("S1"), &["show S1 asked default,open,dismiss", "redraw", "save"]),
    ]},
];

/// One desk, its clock and settings, and the last popup shown under each key.
struct Replay {
    desk: Desk,
    t0: Clock,
    now: Duration,
    prefs: Preferences,
    shown: Vec<Notice>,
    saved: Option<Vec<u8>>,
    dir: tempfile::TempDir,
    /// The engine's list, as the shell would hand it to pushes that start.
    listed: Vec<SessionRecord>,
    /// Every push, as the phone got it.
    pushed: Vec<Message>,
}

impl Replay {
    fn new(with: &[With]) -> Replay {
        let mut prefs = Preferences {
            on_ask: true,
            on_ready: true,
            reminder: None,
            attached_grace: Duration::ZERO,
            quiet_hours: None,
            codex_wait: Duration::from_secs(30),
        };
        for setting in with {
            set(&mut prefs, *setting);
        }
        Replay {
            desk: Desk::default(),
            // Noon UTC.
            t0: Clock::new(std::time::Instant::now(), 1_796_126_400, 0),
            now: Duration::ZERO,
            prefs,
            shown: Vec::new(),
            saved: None,
            dir: tempfile::tempdir().unwrap(),
            listed: Vec::new(),
            pushed: Vec::new(),
        }
    }

    fn clock(&self) -> Clock {
        self.t0 + self.now
    }

    /// Time runs to `ms`, the desk woken at each of its deadlines on the way.
    fn at(&mut self, ms: u64) -> Vec<String> {
        let until = Duration::from_millis(ms);
        assert!(until >= self.now, "time runs forward");
        let mut out = Vec::new();
        // A deadline that does not move would loop: far more wake-ups than any case has.
        for _ in 0..100 {
            let Some(due) = self.desk.next_deadline(self.clock(), &self.prefs) else {
                break;
            };
            let due = due - self.t0;
            if due > until {
                break;
            }
            self.now = self.now.max(due);
            out.extend(self.step(Input::Tick));
        }
        self.now = until;
        out
    }

    fn step(&mut self, input: Input) -> Vec<String> {
        let effects = self.desk.step(self.clock(), &self.prefs, input);
        for effect in &effects {
            match effect {
                Effect::Show(notice) => {
                    self.shown.retain(|n| n.key != notice.key);
                    self.shown.push(notice.clone());
                }
                Effect::Save(bytes) => self.saved = Some(bytes.clone()),
                Effect::Push(message) => self.pushed.push(message.clone()),
                _ => {}
            }
        }
        effects.iter().filter_map(said).collect()
    }

    fn feed(&mut self, input: In) -> Vec<String> {
        let input = match input {
            Asked(id) => events(Event::Asked {
                at: time::OffsetDateTime::UNIX_EPOCH,
                session: waiting(id),
            }),
            Ready(id) => events(Event::Ready {
                at: time::OffsetDateTime::UNIX_EPOCH,
                session: record_d(id, State::Ready, false),
            }),
            Cleared(id) => events(Event::State {
                at: time::OffsetDateTime::UNIX_EPOCH,
                session: record_d(id, State::Active, false),
                previous: State::Active,
                previous_needs_you: true,
            }),
            Resolved(id) => events(Event::Resolved {
                at: time::OffsetDateTime::UNIX_EPOCH,
                session: waiting(id),
            }),
            Start(ids) => {
                self.listed = ids.iter().map(|id| waiting(id)).collect();
                events(Event::Snapshot {
                    at: time::OffsetDateTime::UNIX_EPOCH,
                    sessions: self.listed.clone(),
                })
            }
            Ask(hook, id, req) => ask(hook, id, req, true, Focus::Elsewhere),
            AskOff(hook, id, req) => ask(hook, id, req, false, Focus::Elsewhere),
            AskLooking(hook, id, req) => ask(hook, id, req, true, Focus::Looking),
            HookEnded(hook) => Input::HookEnded(HookId(hook)),
            Click(id, action) => Input::popup(NoticeKey::Session(id.into()), action, None),
            ClickBurst => Input::Action {
                key: NoticeKey::Burst,
                action: crate::notice::DEFAULT.into(),
                token: None,
            },
            Card(id, reply) => {
                let (choice, given) = from_window(reply);
                Input::Answer(Answer {
                    request: id.into(),
                    choice: choice.into(),
                    given,
                    from: answer::From::Window,
                })
            }
            Key(word) => key(word, ""),
            KeyFor(word, id) => key(word, id),
            KeysOn => Input::Keys(Triggers(
                [
                    (keys::Key::Allow, "Y"),
                    (keys::Key::Deny, "N"),
                    (keys::Key::Open, "O"),
                ]
                .map(|(key, trigger)| (key, trigger.to_string()))
                .to_vec(),
            )),
            KeysDenyOnly => Input::Keys(Triggers(vec![(keys::Key::Deny, "N".into())])),
            KeysOff => Input::Keys(Triggers::default()),
            Shown(key) => self.delivered(key, Delivery::Shown),
            Refused(key) => self.delivered(key, Delivery::Failed),
            NoServer(key) => self.delivered(key, Delivery::NoServer),
            Pause(pause) => Input::Pause(Some(pause)),
            Resume => Input::Pause(None),
            Dismiss(id) => Input::Dismiss(waiting(id)),
            ClickReached => Input::ClickReached,
            ClickFailed(id) => {
                Input::ClickFailed(crate::notice::unreached(&waiting(id), "no terminal"))
            }
            TrayCame => Input::TrayCame,
            NoTray => Input::NoTray(crate::notice::no_tray("XFCE")),
            Server(server) => Input::Server(server),
            Set(setting) => {
                set(&mut self.prefs, setting);
                Input::Tick
            }
            PushesOn(when) => Input::Pushes(PushSetting::Start {
                prefs: Prefs { when, text: false },
                memory: Pushed::default(),
                sessions: self.listed.clone(),
            }),
            PushesOff => Input::Pushes(PushSetting::Off),
            Away => Input::Presence(Presence::Away),
            Present => Input::Presence(Presence::Present),
            PushOk(id) => Input::Pushed {
                id,
                sessions: Vec::new(),
                ok: true,
            },
            PushFailed(id) => Input::Pushed {
                id,
                sessions: Vec::new(),
                ok: false,
            },
            PhoneOn(protection) => Input::Phone(PhoneInput::Setup(Some(Setup {
                reply_url: "https://ntfy.example/reply".into(),
                reply_token: "tk_reply".into(),
                protection,
            }))),
            PhoneOff => Input::Phone(PhoneInput::Setup(None)),
            Tap(id, label) => Input::Phone(PhoneInput::Reply(self.button(id, label).body)),
            Crossed(id, other, label) => {
                let body: serde_json::Value =
                    serde_json::from_str(&self.button(other, label).body).unwrap();
                Input::Phone(PhoneInput::Reply(
                    serde_json::json!({"request": id, "nonce": body["nonce"]}).to_string(),
                ))
            }
            Forged(id) => Input::Phone(PhoneInput::Reply(
                serde_json::json!({"request": id, "nonce": "0".repeat(32)}).to_string(),
            )),
            Wait => return Vec::new(),
            Restart => {
                let path = self.dir.path().join("history.json");
                std::fs::write(&path, self.saved.clone().unwrap_or_default()).unwrap();
                self.desk = Desk::new(History::load(&path).history);
                return Vec::new();
            }
        };
        self.step(input)
    }

    /// The button labelled `label` on the session's last push.
    fn button(&self, id: &str, label: &str) -> crate::phone::Button {
        let message = self
            .pushed
            .iter()
            .rev()
            .find(|m| m.sessions == [id])
            .unwrap_or_else(|| panic!("nothing about {id} was pushed"));
        let button = message.buttons.iter().find(|b| b.label == label);
        button
            .unwrap_or_else(|| panic!("no {label} on {message:?}"))
            .clone()
    }

    fn delivered(&self, key: &str, delivery: Delivery) -> Input {
        let notice = self
            .shown
            .iter()
            .find(|n| name(&n.key) == key)
            .unwrap_or_else(|| panic!("no popup {key} was shown"))
            .clone();
        Input::Delivered { notice, delivery }
    }
}

fn set(prefs: &mut Preferences, setting: With) {
    match setting {
        With::QuietHours => prefs.quiet_hours = QuietHours::parse("11:00", "13:00"),
        With::Reminder(secs) => prefs.reminder = Some(Duration::from_secs(secs)),
        With::NoAskPopups => prefs.on_ask = false,
        With::NoReadyPopups => prefs.on_ready = false,
    }
}

fn waiting(id: &str) -> SessionRecord {
    record_d(id, State::Active, true)
}

fn events(event: Event) -> Input {
    Input::Events {
        batch: vec![event],
        focus: Vec::new(),
    }
}

fn key(word: &str, id: &str) -> Input {
    Input::Answer(Answer {
        request: id.into(),
        choice: word.into(),
        given: Given::default(),
        from: answer::From::Key,
    })
}

fn ask(hook: u64, id: &str, req: Req, on: bool, focus: Focus) -> Input {
    Input::Ask {
        hook: HookId(hook),
        record: waiting(id),
        request: request(req),
        on,
        focus,
    }
}

fn request(req: Req) -> Request {
    let claude = |tool: &str, input: serde_json::Value| Request {
        client: Client::Claude,
        session_id: "c1".into(),
        cwd: "/w".into(),
        tool_name: tool.into(),
        tool_input: input,
        permission_suggestions: Vec::new(),
    };
    let bash = claude("Bash", serde_json::json!({"command": "cargo publish"}));
    let question = |q: &str| {
        serde_json::json!({"question": q,
            "options": [{"label": "crates.io"}, {"label": "internal"}]})
    };
    match req {
        Req::Bash => bash,
        // Decoded as Claude sends it: the suggested rule is kept as raw JSON.
        Req::Always => Request::decode(
            br#"{"hook_event_name":"PermissionRequest","tool_name":"Bash","session_id":"c1",
                "cwd":"/w","tool_input":{"command":"cargo publish"},"permission_suggestions":
                [{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"cargo publish *"}],
                  "behavior":"allow","destination":"localSettings"}]}"#,
            Client::Claude,
        )
        .unwrap(),
        Req::Question => claude(
            "AskUserQuestion",
            serde_json::json!({"questions": [question("Which registry?")]}),
        ),
        Req::Questions => claude(
            "AskUserQuestion",
            serde_json::json!({"questions": [question("Which registry?"), question("And then?")]}),
        ),
        Req::Plan => claude(
            "ExitPlanMode",
            serde_json::json!({"plan": "1. Bump\n2. Publish\n"}),
        ),
        Req::Codex => Request {
            client: Client::Codex,
            ..bash
        },
        Req::Unreadable => claude("AskUserQuestion", serde_json::json!({"questions": []})),
    }
}

/// What the card sends: the choice's id, and what the person gave.
fn from_window(reply: Win) -> (&'static str, Given) {
    let text = |text: &str| Given {
        answers: Vec::new(),
        text: Some(text.into()),
    };
    match reply {
        Win::Allow => (answer::ALLOW, Given::default()),
        Win::Deny => (answer::DENY, Given::default()),
        Win::Always => (answer::ALWAYS, Given::default()),
        Win::Pick(n) => {
            let answers = vec![Picked {
                chosen: vec![n],
                own: String::new(),
            }];
            (
                answer::SEND,
                Given {
                    answers,
                    text: None,
                },
            )
        }
        // The card holds the plan as it shows it (lines kept, the last newline not).
        Win::Approve => (answer::APPROVE_PLAN, text("1. Bump\n2. Publish")),
        Win::ApproveEdited(plan) => (answer::APPROVE_PLAN, text(plan)),
        Win::KeepPlanning(message) => (answer::KEEP_PLANNING, text(message)),
    }
}

fn name(key: &NoticeKey) -> String {
    match key {
        NoticeKey::Session(id) => id.clone(),
        NoticeKey::Burst => "burst".into(),
        NoticeKey::Error => "error".into(),
        NoticeKey::NoTray => "no_tray".into(),
    }
}

/// An effect in the cases' words; `None` for the log's notes.
fn said(effect: &Effect) -> Option<String> {
    Some(match effect {
        Effect::Show(notice) => {
            let keys = |keys: Vec<&str>| keys.join(",");
            let mut line = format!(
                "show {} {} {}",
                name(&notice.key),
                notice.kind.as_str(),
                keys(notice.actions.iter().map(|(k, _)| *k).collect())
            );
            if !notice.choices.is_empty() {
                line += " +";
                line += &keys(notice.choices.iter().map(|(k, _)| *k).collect());
            }
            // The line that names the keys, when it does.
            let last = notice.body.lines().last().unwrap_or_default();
            if [" allows", " denies", " opens", " shows"]
                .iter()
                .any(|does| last.contains(does))
            {
                line += &format!(" [{last}]");
            }
            line
        }
        Effect::Close(key) => format!("close {}", name(key)),
        Effect::Hook(HookId(hook), told) => match told {
            ToHook::Taken => format!("hook {hook} taken"),
            ToHook::Refused(why) => format!("hook {hook} refused: {why}"),
            ToHook::Answer(reply) => format!("hook {hook} {}", serde_json::to_string(reply).ok()?),
            ToHook::Withdrawn => format!("hook {hook} withdrawn"),
        },
        Effect::Go { key, action, .. } => format!("go {} {action}", key.token()),
        Effect::Window(Some(key)) => format!("window {}", key.token()),
        Effect::Window(None) => "window".into(),
        Effect::Carded(Ok(word)) => format!("carded {word}"),
        Effect::Carded(Err(why)) => format!("carded not: {why}"),
        Effect::Redraw => "redraw".into(),
        Effect::Save(_) => "save".into(),
        Effect::Push(message) if message.sequence.is_none() => {
            format!("push {} {}", message.id, message.title)
        }
        // With what the phone offers, and the push's line that says so.
        Effect::Push(message) => format!(
            "push {} {} [{}] {}",
            message.id,
            message.title,
            message
                .buttons
                .iter()
                .map(|b| b.label.as_str())
                .collect::<Vec<_>>()
                .join(","),
            message.body.lines().last().unwrap_or_default()
        ),
        Effect::Card { session, title, .. } => format!("card {session} {title}"),
        Effect::Listen(on) => format!("listen {}", if *on { "on" } else { "off" }),
        Effect::Grab(keys) if keys.is_empty() => "grab none".into(),
        Effect::Grab(keys) => format!(
            "grab {}",
            keys.iter().map(|k| k.word()).collect::<Vec<_>>().join(",")
        ),
        Effect::KeepPushed(_) => "keep pushed".into(),
        Effect::Note(_) => return None,
    })
}

/// Every case, and every mismatch at once: a change of behaviour shows all it touched.
#[test]
fn the_desk_replays_every_case() {
    let mut wrong = Vec::new();
    for case in CASES {
        let mut replay = Replay::new(case.with);
        for (ms, input, expected) in case.steps {
            let mut got = replay.at(*ms);
            got.extend(replay.feed(*input));
            if got != *expected {
                wrong.push(format!(
                    "{}\n  at {ms} ms, {input:?}\n  expected {expected:?}\n  got      {got:?}",
                    case.name
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn there_are_at_least_forty_cases_each_named_once() {
    let mut names: Vec<&str> = CASES.iter().map(|case| case.name).collect();
    names.sort_unstable();
    names.dedup();
    assert!(names.len() >= 40 && names.len() == CASES.len());
}
