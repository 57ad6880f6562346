//! What the person is told: the words of every popup, escaped for the notification
//! spec's body markup, capped, one line each where they came from untrusted text. Plain
//! code, tested without a display; the shell only delivers it.

use std::time::Duration;

use lf_tray_core::permission::Client;
use lf_tray_core::{Kind, Presents, SessionRecord};

use crate::board;

mod permission;
mod servers;

pub use permission::{permission, runs, visible};
pub use servers::{buttons, replaces_in_place};

/// What the app hears about the notification server: whether popups can be shown (a server
/// is on the bus or the bus can start one, none is, or there is no session bus at all), and
/// the desktop's do-not-disturb as one of its sources says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    Present,
    Absent,
    NoBus,
    DoNotDisturb { source: &'static str, on: bool },
}

/// The name servers show and group notifications under.
pub const APP_NAME: &str = "Loopflow Tray";
/// The freedesktop `desktop-entry` hint: the basename of the app's .desktop file.
pub const DESKTOP_ENTRY: &str = "lf-tray";

/// Popup servers show two to four lines; text past these lengths would be cut off anyway,
/// and untrusted text must not be able to make a popup fill the screen.
const MAX_SUMMARY: usize = 90;
const MAX_TITLE: usize = 120;
const MAX_PROMPT: usize = 240;
const MAX_READY: usize = 320;
/// What a permission request will run: longer than a title, since the person decides on
/// exactly this text, but still within what a popup can show.
const MAX_COMMAND: usize = 400;
/// The notification spec's `expire_timeout` values: the server decides, or never expire.
const SERVER_DEFAULT: i32 = -1;
const UNTIL_ACTED_ON: i32 = 0;
/// How many sessions a burst summary names before "and N more".
const BURST_NAMED: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeKind {
    Asked,
    Ready,
    /// An agent stopped with nobody attached: worth knowing, not worth a sound.
    Stopped,
    Burst,
    Reminder,
    Error,
    /// The app runs where no tray shows it (said once per login).
    NoTray,
}

/// The freedesktop urgency levels (the `urgency` hint's byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Urgency {
    Low = 0,
    Normal = 1,
    Critical = 2,
}

impl NoticeKind {
    /// Asks and ready sessions are news the person acts on; a reminder repeats what they
    /// were told, so servers may show it less loudly; a terminal that failed to open after
    /// a click must stay until read, since the command to run by hand is in it.
    pub fn urgency(self) -> Urgency {
        match self {
            NoticeKind::Asked | NoticeKind::Ready | NoticeKind::Burst => Urgency::Normal,
            NoticeKind::Reminder | NoticeKind::Stopped => Urgency::Low,
            NoticeKind::Error => Urgency::Critical,
            NoticeKind::NoTray => Urgency::Normal,
        }
    }

    /// The spec's `category` hint: an agent's question reads like a message received, a
    /// finished session like a finished transfer.
    pub fn category(self) -> &'static str {
        match self {
            NoticeKind::Asked | NoticeKind::Reminder => "im.received",
            NoticeKind::Burst => "im",
            NoticeKind::Ready => "transfer.complete",
            // The spec's word for a contact that went offline: the agent left.
            NoticeKind::Stopped => "presence.offline",
            NoticeKind::Error => "x-lf-tray.launch.error",
            NoticeKind::NoTray => "x-lf-tray.no-tray",
        }
    }

    /// The `expire_timeout` to ask for: a popup that brings the person back waits for them
    /// (0: until acted on, dismissed or resolved, where the server allows it); a reminder
    /// repeats what was said, so the server's own timing is fine for it.
    pub fn expire_timeout(self) -> i32 {
        match self {
            NoticeKind::Reminder => SERVER_DEFAULT,
            NoticeKind::Asked
            | NoticeKind::Ready
            | NoticeKind::Stopped
            | NoticeKind::Burst
            | NoticeKind::Error
            // Said once per login: gone unread, the person would not learn how to reach
            // the app.
            | NoticeKind::NoTray => UNTIL_ACTED_ON,
        }
    }

    /// A name from the freedesktop sound theme, when sounds are on.
    pub fn sound(self) -> Option<&'static str> {
        match self {
            NoticeKind::Asked | NoticeKind::Reminder | NoticeKind::Burst => {
                Some("message-new-instant")
            }
            NoticeKind::Ready => Some("complete"),
            NoticeKind::Stopped | NoticeKind::Error | NoticeKind::NoTray => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            NoticeKind::Asked => "asked",
            NoticeKind::Ready => "ready",
            NoticeKind::Burst => "burst",
            NoticeKind::Reminder => "reminder",
            NoticeKind::Stopped => "stopped",
            NoticeKind::Error => "error",
            NoticeKind::NoTray => "no_tray",
        }
    }
}

/// What a shown notification stands for. At most one popup per key is on screen: showing a
/// key again replaces its popup.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NoticeKey {
    /// A session, by its key token (`SessionKey::token`, as `history::key` gives it): ids
    /// are unique per machine only.
    Session(String),
    Burst,
    Error,
    /// The popup that says the desktop shows no tray icons.
    NoTray,
}

impl NoticeKey {
    /// The session's key token for the log (its id, for this machine's), `-` when there
    /// is none.
    pub fn session(&self) -> &str {
        match self {
            NoticeKey::Session(id) => id,
            NoticeKey::Burst | NoticeKey::Error | NoticeKey::NoTray => "-",
        }
    }
}

/// The action keys a notification offers. `default` is the click on the body.
pub const DEFAULT: &str = "default";
pub const OPEN: &str = "open";
pub const REVIEW: &str = "review";
pub const DISMISS: &str = "dismiss";
/// Opens the window at the session's request: a question the popup cannot offer whole, or
/// a plan to read.
pub const ANSWER: &str = "answer";
/// Not a button: what the platform module reports when the server took a session's popup
/// down by itself (it expired) while the person had not acted on it.
pub const EXPIRED: &str = "expired";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub key: NoticeKey,
    pub kind: NoticeKind,
    /// Plain text: servers do not interpret markup in the summary.
    pub summary: String,
    /// Body markup, already escaped.
    pub body: String,
    /// `(key, label)` pairs.
    pub actions: Vec<(&'static str, &'static str)>,
    /// A single question's options (`answer::OPTIONS` keys, their labels as asked), offered as
    /// buttons in place of [`ANSWER`] where the server draws them all ([`buttons`]).
    pub choices: Vec<(&'static str, String)>,
    /// The popup this one takes the place of, when it has a key of its own: a burst
    /// summary replaces the first popup of its burst (`replaces_id`), so the burst shows as
    /// one popup that grows.
    pub replaces: Option<NoticeKey>,
    /// The sessions it tells about, with the transition of each: once the server has it,
    /// they were shown (the policy fills this in).
    pub covers: Vec<(String, String)>,
}

/// Escape the three characters the body markup of the notification spec gives meaning to.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// Undo [`escape`], for a server (or platform) that shows the body as plain text. `&amp;`
/// goes last, so an escaped `&lt;` typed by someone comes back as typed.
pub fn unescape(body: &str) -> String {
    body.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// One line of untrusted text: control characters and runs of whitespace become one space,
/// and it is cut to `max` characters (on a character boundary, with an ellipsis).
pub fn one_line(text: &str, max: usize) -> String {
    let mut line = String::new();
    for word in text
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
    {
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    cap(&line, max)
}

fn cap(text: &str, max: usize) -> String {
    match text.char_indices().nth(max.saturating_sub(1)) {
        Some((end, _)) if text[end..].chars().nth(1).is_some() => {
            format!("{}…", text[..end].trim_end())
        }
        _ => text.to_string(),
    }
}

fn session_actions(record: &SessionRecord, review: bool) -> Vec<(&'static str, &'static str)> {
    let mut actions = vec![(DEFAULT, "Open"), (OPEN, "Open")];
    if review && record.is(Kind::Flow) {
        actions.push((REVIEW, "Review…"));
    }
    actions.push((DISMISS, "Dismiss"));
    actions
}

/// A popup's summary (plain text, which servers do not interpret) names another machine
/// first, so the person knows where to answer.
fn on_machine(record: &SessionRecord, summary: String) -> String {
    match &record.machine {
        Some(machine) => one_line(&format!("{machine} · {summary}"), MAX_SUMMARY),
        None => summary,
    }
}

pub fn title(record: &SessionRecord) -> &str {
    if record.title.trim().is_empty() {
        &record.id
    } else {
        &record.title
    }
}

/// An agent asks: `Agent asks · <detail>` (a Flow step: `Review step · <detail>`); the body is
/// the title and the start of the prompt (without its first line when that is the title).
pub fn asked(record: &SessionRecord) -> Notice {
    let lead = match (record.presents(), &record.kind) {
        (Presents::Waits, _) => return waits(record),
        (_, Some(Kind::Flow)) => "Review step",
        _ => "Agent asks",
    };
    let detail = one_line(&record.detail, MAX_SUMMARY);
    let summary = if detail.is_empty() {
        lead.to_string()
    } else {
        one_line(&format!("{lead} · {detail}"), MAX_SUMMARY)
    };
    let mut body = escape(&one_line(title(record), MAX_TITLE));
    if let Some(question) = board::question(record) {
        body.push('\n');
        body.push_str(&escape(&one_line(&question, MAX_PROMPT)));
    }
    session_notice(record, NoticeKind::Asked, summary, body, false)
}

/// Said of an agent that runs with no terminal: the click shows the window, where lf's
/// Move here is, rather than a terminal.
pub const HEADLESS: &str = "It runs headless: no terminal shows it.";

/// A conversation whose agent handed its turn back (generation D and later). Where the
/// agent said why (generation E): `claude asks permission · <title>`, the body its own
/// words, then the title and where the work is. Otherwise lf says only that it waits:
/// `Agent waits for you · <provider>`, the title, then where the work is.
fn waits(record: &SessionRecord) -> Notice {
    let mut lines = Vec::new();
    let summary = match record.reason() {
        Some(reason) => {
            let who = record.provider().unwrap_or("Agent");
            lines.extend(reason.title.iter().chain(&reason.msg).cloned());
            format!("{who} {} · {}", reason.phrase(), title(record))
        }
        None => match record.provider() {
            Some(provider) => format!("Agent waits for you · {provider}"),
            None => "Agent waits for you".to_string(),
        },
    };
    let summary = one_line(&summary, MAX_SUMMARY);
    lines.push(title(record).to_string());
    lines.extend(record.work());
    if record.headless() {
        lines.push(HEADLESS.to_string());
    }
    let body = lines
        .iter()
        .map(|line| escape(&one_line(line, MAX_TITLE)))
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    session_notice(record, NoticeKind::Asked, summary, body, false)
}

/// An agent stopped while nobody was attached (generation E): `Agent stopped · <title>`,
/// where the work is; Open resumes it.
pub fn stopped(record: &SessionRecord) -> Notice {
    let summary = one_line(&format!("Agent stopped · {}", title(record)), MAX_SUMMARY);
    let mut lines = vec!["Its work stands still until you resume it.".to_string()];
    lines.extend(record.work().map(|w| escape(&one_line(&w, MAX_TITLE))));
    session_notice(
        record,
        NoticeKind::Stopped,
        summary,
        lines.join("\n"),
        false,
    )
}

/// A popup about one session, with its buttons; another machine's names it first.
fn session_notice(
    record: &SessionRecord,
    kind: NoticeKind,
    summary: String,
    body: String,
    review: bool,
) -> Notice {
    Notice {
        key: NoticeKey::Session(lf_tray_core::history::key(record)),
        kind,
        summary: on_machine(record, summary),
        body,
        actions: session_actions(record, review),
        replaces: None,
        covers: Vec::new(),
        choices: Vec::new(),
    }
}

/// A session became ready: `Ready for review: <title>`, the body the agent's summary.
pub fn ready(record: &SessionRecord) -> Notice {
    let summary = one_line(&format!("Ready for review: {}", title(record)), MAX_SUMMARY);
    let body = match record
        .ready_summary
        .as_deref()
        .map(|s| one_line(s, MAX_READY))
    {
        Some(s) if !s.is_empty() => escape(&s),
        _ => "The agent marked this session ready.".to_string(),
    };
    session_notice(record, NoticeKind::Ready, summary, body, true)
}

/// A session left waiting: once, after the reminder delay.
pub fn reminder(record: &SessionRecord, waited: Duration) -> Notice {
    let waited = waiting_for(waited.as_secs() as i64).unwrap_or_else(|| "waiting 1 min".into());
    let summary = one_line(&format!("Still waiting: {}", title(record)), MAX_SUMMARY);
    let body = escape(&one_line(
        &format!("{} · {waited}", board::one_line(record)),
        MAX_TITLE,
    ));
    let mut notice = session_notice(record, NoticeKind::Reminder, summary.clone(), body, true);
    // A reminder repeats what the first popup said, which named the machine already.
    notice.summary = summary;
    notice
}

/// Many sessions at once (a burst, or what waited unseen): one summary whose click shows
/// the window, naming the ones that waited longest first, with how long. `members` come
/// with the seconds each has waited, longest first.
pub fn burst(members: &[(&SessionRecord, i64)]) -> Notice {
    let mut lines: Vec<String> = members
        .iter()
        .take(BURST_NAMED)
        .map(|(r, waited)| {
            let line = one_line(&board::one_line(r), MAX_TITLE);
            match waiting_for(*waited) {
                Some(waited) => format!("• {} · {waited}", escape(&line)),
                None => format!("• {}", escape(&line)),
            }
        })
        .collect();
    if members.len() > BURST_NAMED {
        lines.push(format!("and {} more", members.len() - BURST_NAMED));
    }
    Notice {
        key: NoticeKey::Burst,
        kind: NoticeKind::Burst,
        summary: format!("{} sessions wait for you", members.len()),
        body: lines.join("\n"),
        actions: vec![(DEFAULT, "Show")],
        replaces: None,
        covers: Vec::new(),
        choices: Vec::new(),
    }
}

/// `waiting 12 min`, `waiting 3 h`, `waiting 2 d`; nothing under a minute.
fn waiting_for(seconds: i64) -> Option<String> {
    let minutes = seconds / 60;
    match minutes {
        m if m < 1 => None,
        m if m < 120 => Some(format!("waiting {m} min")),
        m if m < 48 * 60 => Some(format!("waiting {} h", m / 60)),
        m => Some(format!("waiting {} d", m / (24 * 60))),
    }
}

/// A popup that says what went wrong; its click shows the window.
fn error(summary: String, body: String) -> Notice {
    Notice {
        key: NoticeKey::Error,
        kind: NoticeKind::Error,
        summary,
        body,
        actions: vec![(DEFAULT, "Show")],
        replaces: None,
        covers: Vec::new(),
        choices: Vec::new(),
    }
}

/// A terminal could not be started (`summary` says why): the command to run by hand.
pub fn launch_failed(record: &SessionRecord, summary: &str, command: &str) -> Notice {
    error(
        one_line(summary, MAX_SUMMARY),
        format!(
            "Run this in a terminal to open “{}”:\n{}",
            escape(&one_line(title(record), MAX_TITLE)),
            escape(&cap(command, MAX_READY))
        ),
    )
}

/// Go to terminal could not bring the session's terminal back: why, and that the window
/// (shown with it) has lf's own ways there.
pub fn unreached(record: &SessionRecord, why: &str) -> Notice {
    error(
        one_line(&format!("Cannot go to “{}”", title(record)), MAX_SUMMARY),
        format!(
            "{} Open here or Move here are in the window.",
            escape(&cap(why, MAX_READY))
        ),
    )
}

/// The person's answer to an agent on another machine did not reach it (the link died
/// without a word): it is not taken, and the agent's terminal there still asks.
pub fn undelivered(record: &SessionRecord, machine: &str, answer: &str) -> Notice {
    error(
        one_line(
            &format!("Your {answer} did not reach “{}”", title(record)),
            MAX_SUMMARY,
        ),
        format!(
            "The link to {} was lost before its agent took it. Answer in its terminal there.",
            escape(&one_line(machine, MAX_TITLE))
        ),
    )
}

/// The no-tray popup's summary: what the person needs to know first.
pub const NO_TRAY: &str = "Loopflow Tray is running, but this desktop shows no tray icons";

/// What to do about a desktop without a tray, in one line, for the desktop named by
/// `XDG_CURRENT_DESKTOP` (a `:`-separated list, the most specific first).
pub fn tray_hint(current_desktop: &str) -> &'static str {
    for desktop in current_desktop.split(':').map(str::to_ascii_lowercase) {
        match desktop.as_str() {
            // The extension's own name on extensions.gnome.org; Debian and Ubuntu package it.
            "gnome" | "ubuntu" | "unity" | "pop" => {
                return "GNOME shows tray icons with the \u{201c}AppIndicator and \
                        KStatusNotifierItem Support\u{201d} extension (Debian, Ubuntu: \
                        gnome-shell-extension-appindicator), turned on in Extensions."
            }
            "kde" => return "Add the System Tray widget to a Plasma panel.",
            "xfce" => {
                return "Add the Status Tray plugin to an Xfce panel (Panel \u{2192} Add New Items)."
            }
            "lxqt" => return "Add the Status Notifier widget to an LXQt panel.",
            "sway" | "hyprland" | "river" | "wlroots" => {
                return "Add a tray to your bar (waybar: its \u{201c}tray\u{201d} module)."
            }
            _ => {}
        }
    }
    "Add a tray (a StatusNotifierItem host) to your panel; until then, start Loopflow Tray \
     again to show its window."
}

/// The popup for a start where no tray shows the app: what is going on, what to do on this
/// desktop, and Show window (the body click, and a button where `default` is none).
pub fn no_tray(current_desktop: &str) -> Notice {
    Notice {
        key: NoticeKey::NoTray,
        kind: NoticeKind::NoTray,
        summary: NO_TRAY.to_string(),
        body: escape(tray_hint(current_desktop)),
        actions: vec![(DEFAULT, "Show window"), (OPEN, "Show window")],
        replaces: None,
        covers: Vec::new(),
        choices: Vec::new(),
    }
}

/// What the person reads once on GNOME's Wayland session without the tray's extension.
pub const GNOME_FOCUS_SETUP: &str = "A click cannot bring your terminal to the front on GNOME yet";
const GNOME_FOCUS_SETUP_BODY: &str = "On GNOME's Wayland session only the shell can focus \
    another app's window. Run lf-tray setup gnome-focus once (it adds a small GNOME Shell \
    extension) and log in again; until then a click shows where the session runs.";

/// The popup that says once what a click cannot do on GNOME's Wayland session without the
/// tray's extension, and the one command that fixes it.
pub fn gnome_focus_setup() -> Notice {
    error(
        GNOME_FOCUS_SETUP.to_string(),
        escape(GNOME_FOCUS_SETUP_BODY),
    )
}

#[cfg(test)]
mod tests {
    use super::servers::DEFAULT_AS_A_BUTTON;
    use super::*;
    use crate::answer::{ALLOW, ALWAYS, APPROVE_PLAN, DENY, KEEP_PLANNING, OPTIONS as CHOICES};
    use crate::fixtures::{record, record_d};
    use lf_tray_core::permission::{Reply, Request};
    use lf_tray_core::State;

    /// The reply a popup's button gives, as the desk makes it.
    fn reply(choice: &str, request: &Request) -> Option<Reply> {
        let answer = crate::answer::Answer {
            request: "S1".into(),
            choice: choice.into(),
            given: Default::default(),
            from: crate::answer::From::Popup { token: None },
        };
        answer.reply(request).ok()
    }

    fn request(tool: &str, input: serde_json::Value) -> Request {
        Request {
            client: lf_tray_core::permission::Client::Claude,
            session_id: "c1".into(),
            cwd: "/w".into(),
            tool_name: tool.into(),
            tool_input: input,
            permission_suggestions: Vec::new(),
        }
    }

    fn asking() -> SessionRecord {
        let mut asking = record_d("S1", State::Active, true);
        asking.title = "Publish the crates".into();
        asking.set_lf_field("provider", "claude");
        asking
    }

    fn one_question(options: usize, multi: bool) -> Request {
        let options: Vec<_> = (1..=options)
            .map(|i| serde_json::json!({"label": format!("<b>opt{i}</b>"), "description": format!("why {i}")}))
            .collect();
        request(
            "AskUserQuestion",
            serde_json::json!({"questions": [{"question": "Which registry?\nReally?",
                "header": "Registry", "multiSelect": multi, "options": options}]}),
        )
    }

    #[test]
    fn a_question_is_asked_in_words_with_no_allow() {
        let n = permission(&asking(), &one_question(2, false));
        assert_eq!(n.summary, "claude asks · Publish the crates");
        let lines: Vec<&str> = n.body.lines().collect();
        assert_eq!(
            lines[..3],
            [
                "Registry: Which registry?␊Really?",
                "• &lt;b&gt;opt1&lt;/b&gt; — why 1",
                "• &lt;b&gt;opt2&lt;/b&gt; — why 2",
            ]
        );
        assert!(!n.body.contains('{'), "JSON in the body: {}", n.body);
        assert!(n.actions.iter().all(|(k, _)| *k != ALLOW && *k != DENY));
        assert_eq!(
            n.choices,
            [
                (CHOICES[0], "‹b›opt1‹/b›".to_string()),
                (CHOICES[1], "‹b›opt2‹/b›".to_string())
            ]
        );
        // A popup button's reply is the option's label as asked.
        let chosen = reply(CHOICES[1], &one_question(2, false)).unwrap();
        assert_eq!(
            chosen,
            Reply::Answers {
                answers: vec![lf_tray_core::permission::Answer::chose("<b>opt2</b>")]
            }
        );
        assert_eq!(reply(CHOICES[2], &one_question(2, false)), None);
        // Several answers are given in the window.
        let multi = permission(&asking(), &one_question(3, true));
        assert!(multi.choices.is_empty());
        assert!(multi
            .body
            .starts_with("Registry: Which registry?␊Really? (pick any)"));
        assert_eq!(reply(CHOICES[0], &one_question(3, true)), None);
    }

    #[test]
    fn each_server_gets_the_options_it_can_draw_else_answer() {
        let keys = |server: &str, n: &Notice| -> Vec<String> {
            buttons(server, n)
                .iter()
                .map(|(k, _)| k.to_string())
                .collect()
        };
        // dunst lists every action in its menu: all five options.
        let five = permission(&asking(), &one_question(5, false));
        assert_eq!(
            keys("dunst", &five),
            ["default", "choice-1", "choice-2", "choice-3", "choice-4", "choice-5", "open"]
        );
        // GNOME Shell draws three buttons: five options do not fit, Answer… and Open do.
        assert_eq!(keys("gnome-shell", &five), ["default", "answer", "open"]);
        // Three options fit GNOME's three buttons once Open (the popup's click) goes.
        let three = permission(&asking(), &one_question(3, false));
        assert_eq!(
            keys("gnome-shell", &three),
            ["default", "choice-1", "choice-2", "choice-3"]
        );
        let two = permission(&asking(), &one_question(2, false));
        assert_eq!(
            keys("gnome-shell", &two),
            ["default", "choice-1", "choice-2", "open"]
        );
        // A server that draws `default` as a button: one Open, not two.
        assert_eq!(
            keys("xfce4-notifyd", &two),
            ["default", "choice-1", "choice-2"]
        );
    }

    #[test]
    fn one_open_button_where_the_server_draws_default_as_one() {
        let session = session_notice(&asking(), NoticeKind::Asked, "s".into(), "b".into(), false);
        let keys = |server: &str, n: &Notice| -> Vec<String> {
            buttons(server, n)
                .iter()
                .map(|(k, _)| k.to_string())
                .collect()
        };
        for server in DEFAULT_AS_A_BUTTON {
            assert_eq!(keys(server, &session), ["default", "dismiss"]);
        }
        for server in ["dunst", "gnome-shell", "Plasma", "mako", "notify-osd", ""] {
            assert_eq!(keys(server, &session), ["default", "open", "dismiss"]);
        }
        // GNOME Shell shows a replaced popup without its buttons: it gets a new one.
        assert!(!replaces_in_place("gnome-shell"));
        assert!(replaces_in_place("dunst") && replaces_in_place("Plasma"));
        // Plasma draws every option of five, in a row that wraps.
        let five = permission(&asking(), &one_question(5, false));
        assert_eq!(keys("Plasma", &five).len(), 7);
        let summary = burst(&[(&asking(), 0)]);
        assert_eq!(keys("xfce4-notifyd", &summary), ["default"]);
    }

    #[test]
    fn always_allow_says_what_and_where_and_a_plan_is_a_plan() {
        let rule = r#"{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"cargo publish *"}],"behavior":"allow","destination":"localSettings"}"#;
        let text = format!(
            r#"{{"hook_event_name":"PermissionRequest","tool_name":"Bash",
                "tool_input":{{"command":"cargo publish"}},"permission_suggestions":[{rule}]}}"#
        );
        let bash =
            Request::decode(text.as_bytes(), lf_tray_core::permission::Client::Claude).unwrap();
        let n = permission(&asking(), &bash);
        assert_eq!(
            n.body.lines().nth(1),
            Some("From now on, allow Bash(cargo publish *) without asking, in this project's local settings.")
        );
        assert_eq!(
            n.actions,
            [
                (DEFAULT, "Open"),
                (ALLOW, "Allow"),
                (ALWAYS, "Always allow"),
                (DENY, "Deny"),
                (OPEN, "Open")
            ]
        );
        // Four buttons on GNOME's three: Open goes, the answers stay.
        let on_gnome: Vec<_> = buttons("gnome-shell", &n)
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(on_gnome, [DEFAULT, ALLOW, ALWAYS, DENY]);
        assert_eq!(reply(ALWAYS, &bash), Some(Reply::AlwaysAllow));

        let plan = request(
            "ExitPlanMode",
            serde_json::json!({"plan": "# Plan\n1. <bump>\n2. publish"}),
        );
        let n = permission(&asking(), &plan);
        assert_eq!(n.summary, "claude has a plan · Publish the crates");
        assert!(
            n.body.starts_with("# Plan\n1. &lt;bump&gt;\n2. publish"),
            "{}",
            n.body
        );
        let keys: Vec<_> = n.actions.iter().map(|(k, _)| *k).collect();
        assert_eq!(keys, [DEFAULT, APPROVE_PLAN, KEEP_PLANNING, ANSWER, OPEN]);
        assert!(!keys.contains(&ALLOW));
    }

    #[test]
    fn a_permission_popup_shows_exactly_what_will_run_with_allow_and_deny() {
        let mut asking = record_d("S1", State::Active, true);
        asking.title = "Publish <the> crates".into();
        asking.set_lf_field("provider", "claude");
        let bash = request(
            "Bash",
            serde_json::json!({"command": "cargo publish --dry-run", "description": "x"}),
        );
        let n = permission(&asking, &bash);
        assert_eq!(n.summary, "claude asks permission · Publish <the> crates");
        assert_eq!(n.body.lines().next(), Some("Bash: cargo publish --dry-run"));
        assert!(n.body.contains("Publish &lt;the&gt; crates"));
        assert_eq!(
            n.actions,
            [
                (DEFAULT, "Open"),
                (ALLOW, "Allow"),
                (DENY, "Deny"),
                (OPEN, "Open")
            ]
        );
        assert_eq!(n.key, NoticeKey::Session("S1".into()));
        assert_eq!(n.kind.expire_timeout(), 0, "it waits for the answer");
        let write = request(
            "Write",
            serde_json::json!({"file_path": "/etc/x", "content": "y"}),
        );
        assert!(permission(&asking, &write)
            .body
            .starts_with("Write: /etc/x\n"));
        let other = request("mcp__db__drop", serde_json::json!({"table": "users"}));
        assert!(permission(&asking, &other)
            .body
            .starts_with(r#"mcp__db__drop: {"table":"users"}"#));
    }

    #[test]
    fn a_hostile_command_is_escaped_made_visible_and_capped() {
        let asking = record_d("S1", State::Active, true);
        // Markup, a newline hiding a second command, a bidi override that would show
        // `rm -rf ~` reversed, a zero-width space, an escape sequence.
        let hostile = "echo <b>hi</b> & true\nrm -rf ~ \u{202e}~ fr- mr\u{202c} \u{200b}\u{1b}[2J";
        let n = permission(
            &asking,
            &request("Bash", serde_json::json!({"command": hostile})),
        );
        let first = n.body.lines().next().unwrap();
        assert_eq!(
            first,
            "Bash: echo &lt;b&gt;hi&lt;/b&gt; &amp; true␊rm -rf ~ &lt;U+202E&gt;~ fr- mr&lt;U+202C&gt; &lt;U+200B&gt;␛[2J"
        );
        assert_eq!(
            n.body.lines().count(),
            3,
            "the newline made no line of its own"
        );
        let long = "x".repeat(5000);
        let n = permission(
            &asking,
            &request("Bash", serde_json::json!({"command": long})),
        );
        let first = n.body.lines().next().unwrap();
        assert!(first.chars().count() < MAX_COMMAND + 10 && first.ends_with('…'));
        let n = permission(
            &asking,
            &request("Bash\u{202e}\n<i>", serde_json::Value::Null),
        );
        assert!(
            n.body.starts_with("Bash&lt;U+202E&gt;␊&lt;i&gt;: "),
            "{}",
            n.body
        );
    }

    #[test]
    fn a_popup_says_why_the_agent_waits_in_its_own_escaped_words() {
        use crate::fixtures::{blocked, record_e};
        let mut r = record_e(
            "S-1",
            State::Other("unknown".into()),
            true,
            blocked(
                "permission",
                "Run <b>rm</b> -rf /tmp/x",
                "Bash wants\nto run a command",
            ),
        );
        r.title = "Fix & ship".into();
        let n = asked(&r);
        assert_eq!(n.kind, NoticeKind::Asked);
        assert_eq!(n.summary, "codex asks permission · Fix & ship");
        assert_eq!(
            n.body,
            "Run &lt;b&gt;rm&lt;/b&gt; -rf /tmp/x\nBash wants to run a command\nFix &amp; ship\nproduct / LOO-412"
        );
        for (kind, phrase) in [
            ("question", "codex asks a question"),
            ("auth", "codex needs you to sign in"),
            ("newer", "codex waits for you"),
        ] {
            let r = record_e("S", State::Active, true, blocked(kind, "t", "m"));
            assert!(asked(&r).summary.starts_with(phrase), "{kind}");
        }
        // Without a status report it reads as on generation D.
        let plain = record_e("S", State::Active, true, serde_json::Value::Null);
        assert_eq!(asked(&plain).summary, "Agent waits for you · codex");
    }

    #[test]
    fn popups_that_bring_the_person_back_wait_for_them() {
        for kind in [
            NoticeKind::Asked,
            NoticeKind::Ready,
            NoticeKind::Stopped,
            NoticeKind::Burst,
            NoticeKind::Error,
        ] {
            assert_eq!(kind.expire_timeout(), 0, "{kind:?}");
        }
        assert_eq!(NoticeKind::Reminder.expire_timeout(), -1);
    }

    #[test]
    fn a_headless_agent_says_so() {
        use crate::fixtures::{blocked, record_e, with_agent};
        let e = record_e(
            "S-1",
            State::Active,
            true,
            blocked("question", "Which?", ""),
        );
        assert!(!asked(&e).body.contains(HEADLESS));
        let native = with_agent(e.clone(), lf_tray_core::Runs::Terminal);
        assert!(!asked(&native).body.contains(HEADLESS));
        let headless = with_agent(e, lf_tray_core::Runs::Headless);
        assert!(
            asked(&headless).body.ends_with(HEADLESS),
            "{}",
            asked(&headless).body
        );
    }

    #[test]
    fn a_stopped_agent_is_a_quiet_popup_that_resumes_it() {
        let r = crate::fixtures::record_e("S-2", State::Closed, false, serde_json::Value::Null);
        let n = stopped(&r);
        assert_eq!(n.kind, NoticeKind::Stopped);
        assert_eq!(n.kind.urgency(), Urgency::Low);
        assert_eq!(n.kind.sound(), None);
        assert_eq!(n.summary, "Agent stopped · Title of S-2");
        assert!(n.body.ends_with("product / LOO-412"), "{}", n.body);
        let keys: Vec<&str> = n.actions.iter().map(|(k, _)| *k).collect();
        assert!(
            keys.contains(&DEFAULT) && keys.contains(&DISMISS),
            "{keys:?}"
        );
    }

    #[test]
    fn another_machines_popups_name_it_and_keep_their_own_key() {
        let mut r = record_d("S-1", State::Other("unknown".into()), true);
        r.title = "<b>Hi</b> $(id)".into();
        r.machine = Some("build-box".into());
        let n = asked(&r);
        assert!(
            n.summary.starts_with("build-box · Agent waits for you"),
            "{}",
            n.summary
        );
        assert!(
            n.body.starts_with("&lt;b&gt;Hi&lt;/b&gt; $(id)"),
            "{}",
            n.body
        );
        assert_eq!(n.key, NoticeKey::Session("@9:build-boxS-1".into()));
        let local = record_d("S-1", State::Other("unknown".into()), true);
        assert_eq!(asked(&local).key, NoticeKey::Session("S-1".into()));
        let mut done = record("ask_1", Kind::Ask, State::Ready);
        done.machine = Some("far".into());
        assert!(ready(&done).summary.starts_with("far · Ready for review: "));
    }

    #[test]
    fn escaping_and_capping_untrusted_text() {
        assert_eq!(
            escape("<b>Tom & Jerry</b>"),
            "&lt;b&gt;Tom &amp; Jerry&lt;/b&gt;"
        );
        assert_eq!(one_line("  a\n\tb\u{7}c  ", 50), "a b c");
        assert_eq!(one_line("abcdef", 6), "abcdef");
        assert_eq!(one_line("abcdefg", 6), "abcde…");
        // Multi-byte characters are never split.
        assert_eq!(one_line("ééééééé", 4), "ééé…");
        assert_eq!(one_line("", 4), "");
    }

    #[test]
    fn asked_text_names_the_work_and_starts_the_prompt() {
        let mut r = record("ask_1", Kind::Ask, State::Waiting);
        r.title = "Pick <one> & go".into();
        r.detail = "loop-decide".into();
        r.prompt = Some(format!("Which target?\n\n{}", "x".repeat(1000)));
        let n = asked(&r);
        assert_eq!(n.kind, NoticeKind::Asked);
        assert_eq!(n.summary, "Agent asks · loop-decide");
        let (first, second) = n.body.split_once('\n').unwrap();
        assert_eq!(first, "Pick &lt;one&gt; &amp; go");
        assert!(second.starts_with("Which target? xxx"));
        assert!(second.chars().count() <= MAX_PROMPT);
        assert!(second.ends_with('…'));
        // lf titles an Ask with the prompt's first line: it is not said twice.
        r.title = "Which target?".into();
        let n = asked(&r);
        assert!(n.body.starts_with("Which target?\nxxx"), "{}", n.body);
        assert_eq!(
            n.actions,
            [(DEFAULT, "Open"), (OPEN, "Open"), (DISMISS, "Dismiss")]
        );

        let mut flow = record("run_f", Kind::Flow, State::Waiting);
        flow.detail = "review-plan".into();
        assert_eq!(asked(&flow).summary, "Review step · review-plan");
        // No body line for a missing prompt, and nothing but the lead for a missing detail.
        flow.detail.clear();
        assert_eq!(asked(&flow).summary, "Review step");
        assert!(!asked(&flow).body.contains('\n'));
    }

    #[test]
    fn ready_text_and_the_review_button_for_flows_only() {
        let mut r = record("ask_1", Kind::Ask, State::Ready);
        r.title = "Release plan".into();
        r.ready_summary = Some("Ship <macOS> first".into());
        let n = ready(&r);
        assert_eq!(n.summary, "Ready for review: Release plan");
        assert_eq!(n.body, "Ship &lt;macOS&gt; first");
        assert!(!n.actions.iter().any(|(k, _)| *k == REVIEW));

        let mut flow = record("run_f", Kind::Flow, State::Ready);
        flow.title = "x".repeat(500);
        let n = ready(&flow);
        assert!(n.summary.chars().count() <= MAX_SUMMARY);
        assert_eq!(n.body, "The agent marked this session ready.");
        assert_eq!(
            n.actions,
            [
                (DEFAULT, "Open"),
                (OPEN, "Open"),
                (REVIEW, "Review…"),
                (DISMISS, "Dismiss")
            ]
        );
    }

    fn idle() -> State {
        State::Other("unknown".into())
    }

    #[test]
    fn generation_d_says_the_agent_waits_with_title_work_and_provider() {
        let mut r = record_d("S-1", idle(), true);
        r.title = "Decide <the> cache & eviction".into();
        let n = asked(&r);
        assert_eq!(n.kind, NoticeKind::Asked);
        assert_eq!(n.summary, "Agent waits for you · codex");
        assert_eq!(
            n.body,
            "Decide &lt;the&gt; cache &amp; eviction\nproduct / LOO-412"
        );
        assert_eq!(
            n.actions,
            [(DEFAULT, "Open"), (OPEN, "Open"), (DISMISS, "Dismiss")]
        );

        // Without a work path, the repository; without a provider, lf's detail.
        r.remove_lf_field("work_path");
        r.set_lf_field("provider", serde_json::Value::Null);
        let n = asked(&r);
        assert_eq!(n.summary, "Agent waits for you · codex:gpt-5-codex");
        assert!(n.body.ends_with("\napp.loo-412"), "{}", n.body);

        // Untrusted text stays one capped, escaped line each.
        r.set_lf_field("work_path", format!("<i>{}</i>\n", "w".repeat(500)));
        r.detail = format!("{}\n<b>", "p".repeat(500));
        let n = asked(&r);
        assert!(n.summary.chars().count() <= MAX_SUMMARY);
        let (_, work) = n.body.split_once('\n').unwrap();
        assert!(
            work.starts_with("&lt;i&gt;www") && work.ends_with('…'),
            "{work}"
        );
        assert!(!work.contains('\n'));

        // Nothing is made up where lf says nothing.
        r.detail.clear();
        r.remove_lf_field("work_path");
        r.remove_lf_field("workspace");
        r.cwd = "/".into();
        let n = asked(&r);
        assert_eq!(n.summary, "Agent waits for you");
        assert_eq!(n.body, "Decide &lt;the&gt; cache &amp; eviction");
    }

    #[test]
    fn a_failed_launch_names_the_command() {
        let r = record("ask_1", Kind::Ask, State::Waiting);
        let n = launch_failed(
            &r,
            "No terminal found",
            "/usr/bin/lf session open -- ask_1 && echo <ok>",
        );
        assert_eq!(n.kind, NoticeKind::Error);
        assert_eq!(n.summary, "No terminal found");
        assert!(n.body.ends_with("ask_1 &amp;&amp; echo &lt;ok&gt;"));
    }

    #[test]
    fn an_unreached_terminal_says_why_in_escaped_words() {
        let r = record_d("S-1", State::Active, true);
        let n = unreached(&r, "Its terminal <xterm> is gone.");
        assert!(
            n.body.starts_with("Its terminal &lt;xterm&gt; is gone."),
            "{}",
            n.body
        );
        assert!(n.body.contains("Move here"));
        assert!(n.summary.starts_with("Cannot go to"));
    }

    #[test]
    fn an_answer_lost_on_the_way_says_so_and_where_to_answer() {
        let mut r = record_d("S-1", State::Waiting, true);
        r.title = "Deploy <b>now</b>".into();
        let n = undelivered(&r, "build<box>", "allow");
        assert_eq!(n.kind, NoticeKind::Error);
        assert_eq!(n.summary, "Your allow did not reach “Deploy <b>now</b>”");
        assert_eq!(
            n.body,
            "The link to build&lt;box&gt; was lost before its agent took it. Answer in its \
             terminal there."
        );
    }

    #[test]
    fn the_no_tray_popup_names_what_this_desktop_needs() {
        let gnome = no_tray("ubuntu:GNOME");
        assert_eq!(gnome.summary, NO_TRAY);
        assert!(gnome
            .body
            .contains("AppIndicator and KStatusNotifierItem Support"));
        assert!(gnome.body.contains("gnome-shell-extension-appindicator"));
        assert_eq!(gnome.key, NoticeKey::NoTray);
        assert_eq!(gnome.kind.expire_timeout(), UNTIL_ACTED_ON);
        assert_eq!(gnome.kind.sound(), None);
        let keys: Vec<_> = gnome.actions.iter().map(|(key, _)| *key).collect();
        assert_eq!(keys, [DEFAULT, OPEN]);
        assert!(tray_hint("KDE").contains("System Tray"));
        assert!(tray_hint("XFCE").contains("Status Tray"));
        assert!(tray_hint("sway").contains("waybar"));
        // The first name that is known wins; an unknown desktop gets the general words.
        assert!(tray_hint("X-Unknown:KDE").contains("Plasma"));
        assert!(tray_hint("").contains("StatusNotifierItem host"));
        for desktop in ["GNOME", "KDE", "XFCE", "LXQt", "sway", ""] {
            assert!(!tray_hint(desktop).contains('\n'), "{desktop}: one line");
        }
    }
}
