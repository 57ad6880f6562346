//! Desktop notifications: what they say, and when they appear or go away.
//!
//! The text and the policy are plain code, tested without a display: one popup per session
//! transition, closed when the session no longer needs the person, bursts folded into one
//! summary, snooze, and the optional reminder. Showing them is the platform module's job
//! (`linux`: freedesktop notifications over D-Bus; `elsewhere`: macOS and Windows).

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use lf_tray_core::{Event, Kind, SessionKey, SessionRecord, State};

use crate::board;

#[cfg(all(unix, not(target_os = "macos")))]
mod linux;
#[cfg(all(unix, not(target_os = "macos")))]
pub use linux::Notifications;

#[cfg(any(target_os = "macos", windows))]
mod elsewhere;
#[cfg(any(target_os = "macos", windows))]
pub use elsewhere::Notifications;

/// What the app does when the user picks an action (`default` is a click on the body).
/// The third argument is the server's activation token for the click, when it sent one: the
/// terminal opened for it gets it as `XDG_ACTIVATION_TOKEN`.
pub type OnAction = Arc<dyn Fn(NoticeKey, String, Option<String>) + Send + Sync>;

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
/// How many sessions a burst summary names before "and N more".
const BURST_NAMED: usize = 3;

/// A lone transition pops up at once. Those that follow a popup within the burst window are
/// held this long, so that a burst (one rescan can report many, an agent fleet can finish
/// together) has landed before it is shown one by one or folded into one summary: long
/// enough for a burst read in a few lists, and a wait nobody notices on a second popup.
const HOLD: Duration = Duration::from_millis(300);
/// The spec's burst: this many popups within `BURST_WINDOW` become one summary.
const BURST_THRESHOLD: usize = 5;
const BURST_WINDOW: Duration = Duration::from_secs(2);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeKind {
    Asked,
    Ready,
    Burst,
    Reminder,
    Error,
}

impl NoticeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            NoticeKind::Asked => "asked",
            NoticeKind::Ready => "ready",
            NoticeKind::Burst => "burst",
            NoticeKind::Reminder => "reminder",
            NoticeKind::Error => "error",
        }
    }
}

/// What a shown notification stands for. At most one popup per key is on screen: showing a
/// key again replaces its popup.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NoticeKey {
    Session(SessionKey),
    Burst,
    Error,
}

impl NoticeKey {
    /// The session id for the log, `-` when there is none.
    pub fn session(&self) -> &str {
        match self {
            NoticeKey::Session(key) => &key.id,
            NoticeKey::Burst | NoticeKey::Error => "-",
        }
    }
}

/// The action keys a notification offers. `default` is the click on the body.
pub const DEFAULT: &str = "default";
pub const OPEN: &str = "open";
pub const REVIEW: &str = "review";

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
    /// The popup this one takes the place of, when it has a key of its own: a burst
    /// summary replaces the first popup of its burst (`replaces_id`), so the burst shows as
    /// one popup that grows.
    pub replaces: Option<NoticeKey>,
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

fn title(record: &SessionRecord) -> &str {
    if record.title.trim().is_empty() {
        &record.id
    } else {
        &record.title
    }
}

/// An agent asks: `Agent asks · <detail>` (a Flow step: `Review step · <detail>`); the body is
/// the title and the start of the prompt (without its first line when that is the title).
pub fn asked(record: &SessionRecord) -> Notice {
    let lead = match record.kind {
        Some(Kind::Flow) => "Review step",
        Some(_) => "Agent asks",
        None => return waits(record),
    };
    let detail = one_line(&record.detail, MAX_SUMMARY);
    let summary = if detail.is_empty() {
        lead.to_string()
    } else {
        one_line(&format!("{lead} · {detail}"), MAX_SUMMARY)
    };
    let summary = on_machine(record, summary);
    let mut body = escape(&one_line(title(record), MAX_TITLE));
    if let Some(question) = board::question(record) {
        body.push('\n');
        body.push_str(&escape(&one_line(&question, MAX_PROMPT)));
    }
    Notice {
        key: NoticeKey::Session(record.key()),
        kind: NoticeKind::Asked,
        summary,
        body,
        actions: session_actions(record, false),
        replaces: None,
    }
}

/// Generation D (a record without a kind): lf says only that the agent handed its turn
/// back, never what it asks, so the popup says that much and no more:
/// `Agent waits for you · <provider>`, the title, then where the work is.
fn waits(record: &SessionRecord) -> Notice {
    let summary = match board::provider(record) {
        Some(provider) => one_line(&format!("Agent waits for you · {provider}"), MAX_SUMMARY),
        None => "Agent waits for you".to_string(),
    };
    let summary = on_machine(record, summary);
    let mut body = escape(&one_line(title(record), MAX_TITLE));
    if let Some(work) = board::work(record).map(|w| one_line(&w, MAX_TITLE)) {
        if !work.is_empty() {
            body.push('\n');
            body.push_str(&escape(&work));
        }
    }
    Notice {
        key: NoticeKey::Session(record.key()),
        kind: NoticeKind::Asked,
        summary,
        body,
        actions: session_actions(record, false),
        replaces: None,
    }
}

/// A session became ready: `Ready for review: <title>`, the body the agent's summary.
pub fn ready(record: &SessionRecord) -> Notice {
    let summary = on_machine(
        record,
        one_line(&format!("Ready for review: {}", title(record)), MAX_SUMMARY),
    );
    let body = match record
        .ready_summary
        .as_deref()
        .map(|s| one_line(s, MAX_READY))
    {
        Some(s) if !s.is_empty() => escape(&s),
        _ => "The agent marked this session ready.".to_string(),
    };
    Notice {
        key: NoticeKey::Session(record.key()),
        kind: NoticeKind::Ready,
        summary,
        body,
        actions: session_actions(record, true),
        replaces: None,
    }
}

/// A session left waiting: once, after the reminder delay.
pub fn reminder(record: &SessionRecord, waited: Duration) -> Notice {
    let minutes = (waited.as_secs() / 60).max(1);
    let summary = one_line(&format!("Still waiting: {}", title(record)), MAX_SUMMARY);
    let body = escape(&one_line(
        &format!(
            "{} · waiting for you for {minutes} min",
            board::one_line(record)
        ),
        MAX_TITLE,
    ));
    Notice {
        key: NoticeKey::Session(record.key()),
        kind: NoticeKind::Reminder,
        summary,
        body,
        actions: session_actions(record, true),
        replaces: None,
    }
}

/// Many sessions at once: one summary whose click shows the window.
pub fn burst(members: &[&SessionRecord]) -> Notice {
    let mut lines: Vec<String> = members
        .iter()
        .take(BURST_NAMED)
        .map(|r| format!("• {}", escape(&one_line(&board::one_line(r), MAX_TITLE))))
        .collect();
    if members.len() > BURST_NAMED {
        lines.push(format!("and {} more", members.len() - BURST_NAMED));
    }
    Notice {
        key: NoticeKey::Burst,
        kind: NoticeKind::Burst,
        summary: format!("{} sessions need you", members.len()),
        body: lines.join("\n"),
        actions: vec![(DEFAULT, "Show")],
        replaces: None,
    }
}

/// A terminal could not be started (`summary` says why): the command to run by hand.
pub fn launch_failed(record: &SessionRecord, summary: &str, command: &str) -> Notice {
    Notice {
        key: NoticeKey::Error,
        kind: NoticeKind::Error,
        summary: one_line(summary, MAX_SUMMARY),
        body: format!(
            "Run this in a terminal to open “{}”:\n{}",
            escape(&one_line(title(record), MAX_TITLE)),
            escape(&cap(command, MAX_READY))
        ),
        actions: vec![(DEFAULT, "Show")],
        replaces: None,
    }
}

/// The settings the policy follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preferences {
    pub on_ask: bool,
    pub on_ready: bool,
    pub reminder: Option<Duration>,
    /// How long a session the person's own terminal is attached to must stay waiting
    /// before it pops up; zero pops it up at once.
    pub attached_grace: Duration,
}

/// What the platform module is asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    Show(Notice),
    Close(NoticeKey),
}

struct Waiting {
    since: Instant,
    reminded: bool,
    record: SessionRecord,
}

struct Held {
    /// When it may be shown: the end of the hold, or at once for a deferred popup.
    due: Instant,
    notice: Notice,
    record: SessionRecord,
}

/// A popup held back until `due` because the person may be watching the session.
struct Deferred {
    due: Instant,
    notice: Notice,
    record: SessionRecord,
}

/// Whether the person may be looking at this session right now: a generation D session
/// with a live client is one whose agent hands turns back to the terminal the person
/// works in, many times an hour; each hand-back turns it waiting.
fn watched(record: &SessionRecord) -> bool {
    record.kind.is_none() && record.state == State::Active
}

/// The burst summary on screen, and the sessions it stands for.
struct Burst {
    last: Instant,
    members: BTreeSet<SessionKey>,
}

/// When popups appear and go away. Feed it the engine's events and call `flush` at
/// `next_deadline`; it answers with what to show and close.
#[derive(Default)]
pub struct Popups {
    held: Vec<Held>,
    /// Session popups shown within the burst window, oldest first.
    recent: VecDeque<(Instant, SessionRecord)>,
    burst: Option<Burst>,
    waiting: HashMap<SessionKey, Waiting>,
    deferred: HashMap<SessionKey, Deferred>,
    snoozed_until: Option<Instant>,
}

impl Popups {
    pub fn snooze(&mut self, now: Instant, length: Duration) {
        self.snoozed_until = Some(now + length);
        self.held.clear();
        self.deferred.clear();
    }

    pub fn resume(&mut self) {
        self.snoozed_until = None;
    }

    pub fn snoozed(&self, now: Instant) -> bool {
        self.snoozed_until.is_some_and(|until| now < until)
    }

    /// When `flush` has something to do: a held or deferred popup to release, a reminder
    /// to give, or the snooze to end.
    pub fn next_deadline(&self, prefs: &Preferences) -> Option<Instant> {
        let held = self.held.iter().map(|h| h.due).min();
        let deferred = self.deferred.values().map(|d| d.due).min();
        let reminders = prefs.reminder.and_then(|after| {
            self.waiting
                .values()
                .filter(|w| !w.reminded)
                .map(|w| w.since + after)
                .min()
        });
        [held, deferred, reminders, self.snoozed_until]
            .into_iter()
            .flatten()
            .min()
    }

    pub fn on_event(&mut self, event: &Event, now: Instant, prefs: &Preferences) -> Vec<Effect> {
        let mut effects = Vec::new();
        match event {
            Event::Snapshot { sessions, .. } => {
                let needing: HashMap<SessionKey, &SessionRecord> = sessions
                    .iter()
                    .filter(|s| s.needs_you)
                    .map(|s| (s.key(), s))
                    .collect();
                let gone: Vec<SessionKey> = self
                    .waiting
                    .keys()
                    .filter(|id| !needing.contains_key(*id))
                    .cloned()
                    .collect();
                for id in gone {
                    self.settled(&id, &mut effects);
                }
                for (id, record) in needing {
                    self.waiting
                        .entry(id)
                        .and_modify(|w| w.record = record.clone())
                        .or_insert_with(|| Waiting {
                            since: now,
                            reminded: false,
                            record: record.clone(),
                        });
                }
            }
            Event::Asked { session, .. } => {
                self.wait(session, now);
                if prefs.on_ask {
                    if watched(session) && !prefs.attached_grace.is_zero() {
                        self.defer(asked(session), session, now + prefs.attached_grace);
                    } else {
                        self.hold(asked(session), session, now);
                    }
                }
            }
            Event::Ready { session, .. } => {
                self.wait(session, now);
                if prefs.on_ready {
                    self.hold(ready(session), session, now);
                } else {
                    // The question it answered is stale now.
                    self.unhold(&session.key());
                    effects.push(Effect::Close(NoticeKey::Session(session.key())));
                }
            }
            Event::State { session, .. } => {
                if session.needs_you {
                    if let Some(deferred) = self.deferred.get_mut(&session.key()) {
                        if watched(session) {
                            deferred.notice = asked(session);
                            deferred.record = session.clone();
                        } else {
                            // The person left that terminal: nobody is watching any more.
                            self.deferred.remove(&session.key());
                            self.hold(asked(session), session, now);
                        }
                    }
                    self.waiting
                        .entry(session.key())
                        .and_modify(|w| w.record = session.clone())
                        .or_insert_with(|| Waiting {
                            since: now,
                            reminded: false,
                            record: session.clone(),
                        });
                } else {
                    self.settled(&session.key(), &mut effects);
                }
            }
            Event::Resolved { session, .. } => self.settled(&session.key(), &mut effects),
            Event::Appeared { .. } | Event::Warning { .. } => {}
        }
        // What is due now (a lone popup) goes out with this event, not a timer tick later.
        effects.extend(self.flush(now, prefs));
        effects
    }

    /// Release held popups (folding a burst), give due reminders, end a finished snooze.
    pub fn flush(&mut self, now: Instant, prefs: &Preferences) -> Vec<Effect> {
        if self.snoozed_until.is_some_and(|until| now >= until) {
            self.snoozed_until = None;
        }
        let due: Vec<SessionKey> = self
            .deferred
            .iter()
            .filter(|(_, d)| now >= d.due)
            .map(|(id, _)| id.clone())
            .collect();
        for id in due {
            if let Some(d) = self.deferred.remove(&id) {
                // It waited out the grace already; holding it again would only delay it.
                self.release(d.notice, &d.record, now);
            }
        }
        if let Some(after) = prefs.reminder {
            let snoozed = self.snoozed(now);
            let mut due = Vec::new();
            for w in self.waiting.values_mut() {
                if !w.reminded && now >= w.since + after {
                    w.reminded = true;
                    if !snoozed {
                        due.push((reminder(&w.record, now - w.since), w.record.clone()));
                    }
                }
            }
            for (notice, record) in due {
                self.hold(notice, &record, now);
            }
        }
        if !self.held.iter().any(|h| now >= h.due) {
            return Vec::new();
        }
        let batch = std::mem::take(&mut self.held);
        while self
            .recent
            .front()
            .is_some_and(|(at, _)| now.duration_since(*at) > BURST_WINDOW)
        {
            self.recent.pop_front();
        }
        let mut effects = Vec::new();
        let burst_live = self.burst_live(now);
        if burst_live || self.recent.len() + batch.len() >= BURST_THRESHOLD {
            let mut burst = self.burst.take().filter(|_| burst_live).unwrap_or(Burst {
                last: now,
                members: BTreeSet::new(),
            });
            // A new summary takes the place of the burst's first popup; the others close.
            let mut replaces = None;
            for (_, record) in self.recent.drain(..) {
                let key = NoticeKey::Session(record.key());
                if !burst_live && replaces.is_none() {
                    replaces = Some(key);
                } else {
                    effects.push(Effect::Close(key));
                }
                burst.members.insert(record.key());
            }
            for held in batch {
                burst.members.insert(held.record.key());
            }
            burst.last = now;
            let members: Vec<&SessionRecord> = burst
                .members
                .iter()
                .filter_map(|id| self.waiting.get(id).map(|w| &w.record))
                .collect();
            if !members.is_empty() {
                effects.push(Effect::Show(Notice {
                    replaces,
                    ..self::burst(&members)
                }));
            }
            self.burst = Some(burst);
        } else {
            for held in batch {
                self.recent.push_back((now, held.record));
                effects.push(Effect::Show(held.notice));
            }
        }
        effects
    }

    /// Whether the burst summary on screen still takes new popups.
    fn burst_live(&self, now: Instant) -> bool {
        self.burst
            .as_ref()
            .is_some_and(|b| now.duration_since(b.last) <= BURST_WINDOW)
    }

    fn wait(&mut self, record: &SessionRecord, now: Instant) {
        // A new reason to wait (asked, then ready) restarts the reminder clock.
        self.waiting.insert(
            record.key(),
            Waiting {
                since: now,
                reminded: false,
                record: record.clone(),
            },
        );
    }

    /// Show at once when nothing else is on its way or just went out; else hold it with
    /// the rest of the burst.
    fn hold(&mut self, notice: Notice, record: &SessionRecord, now: Instant) {
        let recent = self
            .recent
            .back()
            .is_some_and(|(at, _)| now.duration_since(*at) <= BURST_WINDOW);
        let burst_live = self.burst_live(now);
        let others_held = self.held.iter().any(|h| h.record.key() != record.key());
        let due = if recent || burst_live || others_held {
            now + HOLD
        } else {
            now
        };
        self.queue(notice, record, now, due);
    }

    /// Ready to show at the next flush, with whatever else is held then.
    fn release(&mut self, notice: Notice, record: &SessionRecord, now: Instant) {
        self.queue(notice, record, now, now);
    }

    fn queue(&mut self, notice: Notice, record: &SessionRecord, now: Instant, due: Instant) {
        if self.snoozed(now) {
            return;
        }
        // One popup per session: a newer notice replaces one not yet shown.
        self.unhold(&record.key());
        self.held.push(Held {
            due,
            notice,
            record: record.clone(),
        });
    }

    fn defer(&mut self, notice: Notice, record: &SessionRecord, due: Instant) {
        self.unhold(&record.key());
        self.deferred.insert(
            record.key(),
            Deferred {
                due,
                notice,
                record: record.clone(),
            },
        );
    }

    fn unhold(&mut self, id: &SessionKey) {
        self.held.retain(|h| &h.record.key() != id);
        self.deferred.remove(id);
    }

    /// The session no longer needs the person: nothing about it may stay on screen.
    fn settled(&mut self, id: &SessionKey, effects: &mut Vec<Effect>) {
        self.waiting.remove(id);
        self.unhold(id);
        self.recent.retain(|(_, r)| &r.key() != id);
        effects.push(Effect::Close(NoticeKey::Session(id.clone())));
        if let Some(burst) = &mut self.burst {
            if burst.members.remove(id) && burst.members.is_empty() {
                self.burst = None;
                effects.push(Effect::Close(NoticeKey::Burst));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::board::tests::{record, record_d};
    use time::OffsetDateTime;

    const PREFS: Preferences = Preferences {
        on_ask: true,
        on_ready: true,
        reminder: None,
        attached_grace: Duration::from_secs(45),
    };

    fn asked_event(r: &SessionRecord) -> Event {
        Event::Asked {
            at: OffsetDateTime::now_utc(),
            session: r.clone(),
        }
    }
    fn ready_event(r: &SessionRecord) -> Event {
        Event::Ready {
            at: OffsetDateTime::now_utc(),
            session: r.clone(),
        }
    }
    fn resolved_event(r: &SessionRecord) -> Event {
        Event::Resolved {
            at: OffsetDateTime::now_utc(),
            session: r.clone(),
        }
    }

    fn shown(effects: &[Effect]) -> Vec<(NoticeKind, &str)> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Show(n) => Some((n.kind, n.key.session())),
                Effect::Close(_) => None,
            })
            .collect()
    }
    fn closed(effects: &[Effect]) -> Vec<NoticeKey> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Close(k) => Some(k.clone()),
                Effect::Show(_) => None,
            })
            .collect()
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
        assert_eq!(n.actions, [(DEFAULT, "Open"), (OPEN, "Open")]);

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
            [(DEFAULT, "Open"), (OPEN, "Open"), (REVIEW, "Review…")]
        );
    }

    #[test]
    fn a_lone_popup_shows_at_once() {
        let t0 = Instant::now();
        let mut p = Popups::default();
        let a = record("ask_1", Kind::Ask, State::Waiting);
        // Out with the event itself: no hold, no deadline left behind.
        let effects = p.on_event(&asked_event(&a), t0, &PREFS);
        assert_eq!(shown(&effects), [(NoticeKind::Asked, "ask_1")]);
        assert_eq!(p.next_deadline(&PREFS), None);
        assert!(p.flush(t0 + HOLD, &PREFS).is_empty());

        let mut r = a.clone();
        r.state = State::Ready;
        let t1 = t0 + Duration::from_secs(10);
        assert_eq!(
            shown(&p.on_event(&ready_event(&r), t1, &PREFS)),
            [(NoticeKind::Ready, "ask_1")]
        );
    }

    #[test]
    fn resolving_closes_the_popup_and_cancels_a_held_one() {
        let t0 = Instant::now();
        let mut p = Popups::default();
        let a = record("ask_1", Kind::Ask, State::Waiting);
        p.on_event(&asked_event(&a), t0, &PREFS);
        p.flush(t0 + HOLD, &PREFS);
        let effects = p.on_event(&resolved_event(&a), t0 + HOLD * 2, &PREFS);
        assert_eq!(closed(&effects), [NoticeKey::Session("ask_1".into())]);

        // One that follows another popup is held; resolved within the hold, it never shows.
        let b = record("ask_2", Kind::Ask, State::Waiting);
        let b2 = record("ask_2b", Kind::Ask, State::Waiting);
        let t1 = t0 + Duration::from_secs(5);
        assert_eq!(shown(&p.on_event(&asked_event(&b), t1, &PREFS)).len(), 1);
        assert!(shown(&p.on_event(&asked_event(&b2), t1, &PREFS)).is_empty());
        p.on_event(&resolved_event(&b2), t1 + HOLD / 3, &PREFS);
        assert!(shown(&p.flush(t1 + HOLD * 2, &PREFS)).is_empty());
        p.on_event(&resolved_event(&b), t1 + HOLD * 2, &PREFS);

        // Someone attached to the session: the question is no longer open.
        let c = record("ask_3", Kind::Ask, State::Waiting);
        p.on_event(&asked_event(&c), t1, &PREFS);
        p.flush(t1 + HOLD, &PREFS);
        let mut active = c.clone();
        active.state = State::Active;
        active.needs_you = false;
        let state = Event::State {
            at: OffsetDateTime::now_utc(),
            session: active,
            previous: State::Waiting,
            previous_needs_you: true,
        };
        assert_eq!(
            closed(&p.on_event(&state, t1 + HOLD * 2, &PREFS)),
            [NoticeKey::Session("ask_3".into())]
        );
    }

    #[test]
    fn a_snapshot_closes_popups_of_sessions_that_vanished() {
        let t0 = Instant::now();
        let mut p = Popups::default();
        let a = record("ask_1", Kind::Ask, State::Waiting);
        let b = record("ask_2", Kind::Ask, State::Waiting);
        p.on_event(&asked_event(&a), t0, &PREFS);
        p.on_event(&asked_event(&b), t0, &PREFS);
        p.flush(t0 + HOLD, &PREFS);
        let snapshot = Event::Snapshot {
            at: OffsetDateTime::now_utc(),
            sessions: vec![b.clone()],
        };
        assert_eq!(
            closed(&p.on_event(&snapshot, t0 + HOLD * 2, &PREFS)),
            [NoticeKey::Session("ask_1".into())]
        );
    }

    #[test]
    fn a_burst_of_eight_is_the_first_popup_then_one_summary_in_its_place() {
        let t0 = Instant::now();
        let mut p = Popups::default();
        let sessions: Vec<_> = (0..10)
            .map(|i| record(&format!("ask_{i}"), Kind::Ask, State::Waiting))
            .collect();
        let gap = Duration::from_millis(10);
        assert_eq!(
            shown(&p.on_event(&asked_event(&sessions[0]), t0, &PREFS)),
            [(NoticeKind::Asked, "ask_0")]
        );
        // The rest of the burst is held, however it is spread over the engine's events.
        let mut t = t0;
        for s in &sessions[1..8] {
            t += gap;
            assert!(shown(&p.on_event(&asked_event(s), t, &PREFS)).is_empty());
        }
        assert_eq!(p.next_deadline(&PREFS), Some(t0 + gap + HOLD));
        let effects = p.flush(t0 + gap + HOLD, &PREFS);
        // One summary, shown in place of the first popup: two popups in all.
        assert_eq!(shown(&effects), [(NoticeKind::Burst, "-")]);
        assert!(closed(&effects).is_empty(), "{effects:?}");
        let Effect::Show(summary) = &effects[0] else {
            panic!("{effects:?}")
        };
        assert_eq!(summary.replaces, Some(NoticeKey::Session("ask_0".into())));
        assert_eq!(summary.summary, "8 sessions need you");
        assert!(summary.body.ends_with("and 5 more"));
        assert_eq!(summary.actions, [(DEFAULT, "Show")]);

        // More during the burst update the same summary instead of popping up.
        let t1 = t0 + Duration::from_secs(1);
        assert!(p
            .on_event(&asked_event(&sessions[8]), t1, &PREFS)
            .is_empty());
        let effects = p.flush(t1 + HOLD, &PREFS);
        assert_eq!(shown(&effects), [(NoticeKind::Burst, "-")]);
        let Effect::Show(summary) = &effects[0] else {
            panic!()
        };
        assert_eq!(summary.summary, "9 sessions need you");
        assert_eq!(summary.replaces, None, "the summary's own key is on screen");

        // Once quiet for longer than the window, a new one is a plain popup again, at once.
        let t2 = t1 + BURST_WINDOW * 2;
        assert_eq!(
            shown(&p.on_event(&asked_event(&sessions[9]), t2, &PREFS)),
            [(NoticeKind::Asked, "ask_9")]
        );

        // The summary goes away when every session it stands for is resolved.
        let mut last = Vec::new();
        for s in &sessions[..9] {
            last = p.on_event(&resolved_event(s), t2 + HOLD * 2, &PREFS);
        }
        assert!(closed(&last).contains(&NoticeKey::Burst));
    }

    #[test]
    fn a_few_together_are_each_shown_the_first_at_once() {
        let t0 = Instant::now();
        let mut p = Popups::default();
        let sessions: Vec<_> = (0..3)
            .map(|i| record(&format!("ask_{i}"), Kind::Ask, State::Waiting))
            .collect();
        assert_eq!(
            shown(&p.on_event(&asked_event(&sessions[0]), t0, &PREFS)).len(),
            1
        );
        let t1 = t0 + Duration::from_millis(50);
        for s in &sessions[1..] {
            assert!(p.on_event(&asked_event(s), t1, &PREFS).is_empty());
        }
        // Fewer than a burst: each keeps its own popup, with its own Open.
        assert_eq!(
            shown(&p.flush(t1 + HOLD, &PREFS)),
            [(NoticeKind::Asked, "ask_1"), (NoticeKind::Asked, "ask_2")]
        );
    }

    #[test]
    fn five_at_once_never_flash_one_by_one() {
        let t0 = Instant::now();
        let mut p = Popups::default();
        for i in 0..5 {
            let s = record(&format!("ask_{i}"), Kind::Ask, State::Waiting);
            p.on_event(&asked_event(&s), t0, &PREFS);
        }
        let effects = p.flush(t0 + HOLD, &PREFS);
        assert_eq!(shown(&effects), [(NoticeKind::Burst, "-")]);
        assert!(closed(&effects).is_empty());
    }

    #[test]
    fn snooze_silences_popups_but_still_closes_them() {
        let t0 = Instant::now();
        let mut p = Popups::default();
        let a = record("ask_1", Kind::Ask, State::Waiting);
        p.on_event(&asked_event(&a), t0, &PREFS);
        p.flush(t0 + HOLD, &PREFS);
        p.snooze(t0 + HOLD, Duration::from_secs(3600));
        assert!(p.snoozed(t0 + HOLD));
        let b = record("ask_2", Kind::Ask, State::Waiting);
        p.on_event(&asked_event(&b), t0 + HOLD, &PREFS);
        assert!(shown(&p.flush(t0 + HOLD * 3, &PREFS)).is_empty());
        assert_eq!(
            closed(&p.on_event(&resolved_event(&a), t0 + HOLD * 4, &PREFS)),
            [NoticeKey::Session("ask_1".into())]
        );
        // The snooze ends by itself at its deadline...
        let end = t0 + HOLD + Duration::from_secs(3600);
        assert_eq!(p.next_deadline(&PREFS), Some(end));
        p.flush(end, &PREFS);
        assert!(!p.snoozed(end));
        // ...and popups come back, without replaying what was missed.
        let c = record("ask_3", Kind::Ask, State::Waiting);
        assert_eq!(
            shown(&p.on_event(&asked_event(&c), end, &PREFS)),
            [(NoticeKind::Asked, "ask_3")]
        );
        p.snooze(end, Duration::from_secs(3600));
        p.resume();
        assert!(!p.snoozed(end));
    }

    #[test]
    fn settings_turn_kinds_off() {
        let t0 = Instant::now();
        let prefs = Preferences {
            on_ask: false,
            on_ready: false,
            reminder: None,
            ..PREFS
        };
        let mut p = Popups::default();
        let a = record("ask_1", Kind::Ask, State::Waiting);
        p.on_event(&asked_event(&a), t0, &prefs);
        assert!(p.flush(t0 + HOLD, &prefs).is_empty());
        let mut r = a.clone();
        r.state = State::Ready;
        // A ready session with ready popups off still closes the stale question.
        assert_eq!(
            closed(&p.on_event(&ready_event(&r), t0 + HOLD, &prefs)),
            [NoticeKey::Session("ask_1".into())]
        );
        assert!(p.flush(t0 + HOLD * 3, &prefs).is_empty());
    }

    #[test]
    fn a_reminder_comes_once_for_a_session_left_waiting() {
        let t0 = Instant::now();
        let after = Duration::from_secs(10 * 60);
        let prefs = Preferences {
            reminder: Some(after),
            ..PREFS
        };
        let mut p = Popups::default();
        let mut a = record("ask_1", Kind::Ask, State::Waiting);
        a.title = "Pick a target".into();
        p.on_event(&asked_event(&a), t0, &prefs);
        p.flush(t0 + HOLD, &prefs);
        assert_eq!(p.next_deadline(&prefs), Some(t0 + after));
        assert!(p.flush(t0 + after - HOLD, &prefs).is_empty());
        // Due now, and shown once, at once.
        let effects = p.flush(t0 + after, &prefs);
        assert_eq!(shown(&effects), [(NoticeKind::Reminder, "ask_1")]);
        let Effect::Show(n) = &effects[0] else {
            panic!()
        };
        assert_eq!(n.summary, "Still waiting: Pick a target");
        assert!(n.body.contains("10 min"));
        assert_eq!(p.next_deadline(&prefs), None);
        assert!(p.flush(t0 + after * 3, &prefs).is_empty());

        // Reminders are off by default, and sessions found at start count from then on.
        let mut fresh = Popups::default();
        let snapshot = Event::Snapshot {
            at: OffsetDateTime::now_utc(),
            sessions: vec![a.clone()],
        };
        fresh.on_event(&snapshot, t0, &PREFS);
        assert_eq!(fresh.next_deadline(&PREFS), None);
        assert_eq!(fresh.next_deadline(&prefs), Some(t0 + after));
    }

    fn state_event(r: &SessionRecord, previous: State, previous_needs_you: bool) -> Event {
        Event::State {
            at: OffsetDateTime::now_utc(),
            session: r.clone(),
            previous,
            previous_needs_you,
        }
    }

    fn idle() -> State {
        State::Other("unknown".into())
    }

    #[test]
    fn another_machines_popups_name_it_and_keep_their_own_key() {
        let mut r = record_d("S-1", idle(), true);
        r.title = "<b>Hi</b> $(id)".into();
        r.machine = Some("build-box".into());
        let n = asked(&r);
        assert_eq!(n.summary, "build-box · Agent waits for you · codex");
        assert!(
            n.body.starts_with("&lt;b&gt;Hi&lt;/b&gt; $(id)"),
            "{}",
            n.body
        );
        assert_eq!(
            n.key,
            NoticeKey::Session(SessionKey {
                machine: Some("build-box".into()),
                id: "S-1".into()
            })
        );
        assert_ne!(n.key, asked(&record_d("S-1", idle(), true)).key);
        let mut done = record("ask_1", Kind::Ask, State::Ready);
        done.machine = Some("far".into());
        assert!(ready(&done).summary.starts_with("far · Ready for review: "));
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
        assert_eq!(n.actions, [(DEFAULT, "Open"), (OPEN, "Open")]);

        // Without a work path, the repository; without a provider, lf's detail.
        r.extra.remove("work_path");
        r.extra.insert("provider".into(), serde_json::Value::Null);
        let n = asked(&r);
        assert_eq!(n.summary, "Agent waits for you · codex:gpt-5-codex");
        assert!(n.body.ends_with("\napp.loo-412"), "{}", n.body);

        // Untrusted text stays one capped, escaped line each.
        r.extra.insert(
            "work_path".into(),
            format!("<i>{}</i>\n", "w".repeat(500)).into(),
        );
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
        r.extra.remove("work_path");
        r.extra.remove("workspace");
        r.cwd = "/".into();
        let n = asked(&r);
        assert_eq!(n.summary, "Agent waits for you");
        assert_eq!(n.body, "Decide &lt;the&gt; cache &amp; eviction");
    }

    #[test]
    fn an_attached_session_pops_up_only_after_the_grace() {
        let t0 = Instant::now();
        let grace = PREFS.attached_grace;
        let mut p = Popups::default();
        let attached = record_d("S-1", State::Active, true);
        p.on_event(&asked_event(&attached), t0, &PREFS);
        assert!(p.flush(t0 + HOLD, &PREFS).is_empty());
        assert_eq!(p.next_deadline(&PREFS), Some(t0 + grace));
        assert!(p.flush(t0 + grace - HOLD, &PREFS).is_empty());
        assert_eq!(
            shown(&p.flush(t0 + grace, &PREFS)),
            [(NoticeKind::Asked, "S-1")]
        );
        assert_eq!(p.next_deadline(&PREFS), None);

        // Once shown, attention clearing takes it down, as for any popup.
        let cleared = record_d("S-1", State::Active, false);
        let effects = p.on_event(
            &state_event(&cleared, State::Active, true),
            t0 + grace * 2,
            &PREFS,
        );
        assert_eq!(closed(&effects), [NoticeKey::Session("S-1".into())]);
    }

    #[test]
    fn a_turn_handed_back_and_taken_within_the_grace_never_pops_up() {
        let t0 = Instant::now();
        let grace = PREFS.attached_grace;
        let mut p = Popups::default();
        let waiting = record_d("S-1", State::Active, true);
        // Cleared: the person answered in their terminal.
        p.on_event(&asked_event(&waiting), t0, &PREFS);
        let cleared = record_d("S-1", State::Active, false);
        p.on_event(
            &state_event(&cleared, State::Active, true),
            t0 + grace / 2,
            &PREFS,
        );
        assert_eq!(p.next_deadline(&PREFS), None);
        assert!(shown(&p.flush(t0 + grace * 2, &PREFS)).is_empty());
        // Resolved within the grace: the same.
        let t1 = t0 + grace * 3;
        p.on_event(&asked_event(&waiting), t1, &PREFS);
        p.on_event(&resolved_event(&waiting), t1 + grace / 2, &PREFS);
        assert!(shown(&p.flush(t1 + grace * 2, &PREFS)).is_empty());
        // And a snapshot that no longer lists it.
        let t2 = t1 + grace * 3;
        p.on_event(&asked_event(&waiting), t2, &PREFS);
        let snapshot = Event::Snapshot {
            at: OffsetDateTime::now_utc(),
            sessions: vec![cleared.clone()],
        };
        p.on_event(&snapshot, t2 + grace / 2, &PREFS);
        assert!(shown(&p.flush(t2 + grace * 2, &PREFS)).is_empty());
    }

    #[test]
    fn detached_sessions_and_a_zero_grace_pop_up_at_once() {
        let t0 = Instant::now();
        let mut p = Popups::default();
        let detached = record_d("S-1", idle(), true);
        assert_eq!(
            shown(&p.on_event(&asked_event(&detached), t0, &PREFS)),
            [(NoticeKind::Asked, "S-1")]
        );
        // Attention cleared with the session still open: its popup goes.
        let cleared = record_d("S-1", idle(), false);
        assert_eq!(
            closed(&p.on_event(&state_event(&cleared, idle(), true), t0 + HOLD, &PREFS)),
            [NoticeKey::Session("S-1".into())]
        );
        let at_once = Preferences {
            attached_grace: Duration::ZERO,
            ..PREFS
        };
        let attached = record_d("S-2", State::Active, true);
        let t1 = t0 + BURST_WINDOW * 2;
        assert_eq!(
            shown(&p.on_event(&asked_event(&attached), t1, &at_once)),
            [(NoticeKind::Asked, "S-2")]
        );
        // Older generations' Asks are never deferred, whatever their state says.
        let mut ask = record("ask_1", Kind::Ask, State::Active);
        ask.needs_you = true;
        let t2 = t1 + BURST_WINDOW * 2;
        assert_eq!(
            shown(&p.on_event(&asked_event(&ask), t2, &PREFS)),
            [(NoticeKind::Asked, "ask_1")]
        );
    }

    #[test]
    fn leaving_the_terminal_during_the_grace_pops_up_at_once() {
        let t0 = Instant::now();
        let mut p = Popups::default();
        let attached = record_d("S-1", State::Active, true);
        p.on_event(&asked_event(&attached), t0, &PREFS);
        let left = record_d("S-1", idle(), true);
        let t1 = t0 + Duration::from_secs(5);
        assert_eq!(
            shown(&p.on_event(&state_event(&left, State::Active, true), t1, &PREFS)),
            [(NoticeKind::Asked, "S-1")]
        );
        assert!(p.flush(t0 + PREFS.attached_grace, &PREFS).is_empty());
    }

    #[test]
    fn a_snooze_drops_a_deferred_popup() {
        let t0 = Instant::now();
        let mut p = Popups::default();
        p.on_event(
            &asked_event(&record_d("S-1", State::Active, true)),
            t0,
            &PREFS,
        );
        p.snooze(t0, Duration::from_secs(60));
        p.resume();
        assert_eq!(p.next_deadline(&PREFS), None);
        assert!(p.flush(t0 + PREFS.attached_grace, &PREFS).is_empty());
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
}
