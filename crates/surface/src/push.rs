//! What is pushed to the person's phone (an ntfy topic), and when: each new transition that
//! needs them (asked, ready, an agent that stopped) while they are away from the desk, once;
//! what waited before they left, in one push when they become away; nothing once they are
//! back. Bursts are folded as the popups fold them. A failed push is tried again with a
//! back-off until it goes through or its sessions no longer wait, and a transition is pushed
//! at most once, also across a restart ([`Pushed`], kept beside the popups' memory).
//!
//! Plain code with the time injected: the shell follows the desktop (locked, idle) and
//! delivers over HTTP; everything it decides is here.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::time::{Duration, Instant};

use lf_tray_core::history::{self, transition};
use lf_tray_core::{Event, Kind, Presents, SessionRecord, State};
use serde::{Deserialize, Serialize};

use crate::notice::{self, one_line, unescape};
use crate::policy::{BURST_THRESHOLD, BURST_WINDOW, HOLD};

mod memory;
pub use memory::Pushed;

/// The first retry of a failed push: a server restarting (or a network coming back after
/// a laptop woke) answers again within seconds.
const RETRY_FIRST: Duration = Duration::from_secs(1);
/// Retries double up to this: a push more than a minute late after the server came back
/// misses the point of pushing, and one request a minute to a dead server is nothing.
const RETRY_MAX: Duration = Duration::from_secs(60);
/// A push's title and lines stay short: a phone shows a line or two of each.
const MAX_TITLE: usize = 90;
const MAX_LINE: usize = 200;
/// A summary names this many sessions, then says how many more.
const SUMMARY_NAMED: usize = 5;

/// When to push.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum When {
    /// Only while the desktop says the person is away (locked, or idle long enough).
    #[default]
    Away,
    /// Every transition, at the desk or not.
    Always,
}

/// Whether the person is at the desk, as the desktop tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    Present,
    Away,
    /// Nothing on this desktop can tell: taken as present, so nothing is pushed by guess.
    Unknown,
}

/// What the desktop says, each part `None` where nothing on this desktop can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Desk {
    /// The screen is locked (a screen locker on the bus says so).
    pub locked: Option<bool>,
    /// No input for the person's `away_after_seconds`.
    pub idle: Option<bool>,
}

impl Desk {
    /// Away when locked or idle; present when what can tell says so; unknown when nothing
    /// can tell.
    pub fn presence(self) -> Presence {
        match (self.locked, self.idle) {
            (Some(true), _) | (_, Some(true)) => Presence::Away,
            (None, None) => Presence::Unknown,
            _ => Presence::Present,
        }
    }
}

/// The settings the pushes follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Prefs {
    pub when: When,
    /// The popup's own text (the agent's words); off, only the title, the repository and
    /// why the session waits.
    pub text: bool,
}

/// One push to deliver. Plain text: ntfy shows the message as it is unless asked to read
/// Markdown, which is never asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub id: u64,
    pub title: String,
    pub body: String,
    /// ntfy's 1 (min) to 5 (max).
    pub priority: u8,
    /// ntfy's tags (an emoji's short name shows as the emoji).
    pub tags: &'static str,
    /// The sessions it tells about, for the log.
    pub sessions: Vec<String>,
    /// The request's answers, as ntfy `http` actions (answering from the phone).
    pub buttons: Vec<crate::phone::Button>,
    /// ntfy's sequence id: later words about the same request replace this card.
    pub sequence: Option<String>,
}

/// A push waiting for its turn, or for its next try.
struct Pending {
    id: u64,
    sessions: Vec<String>,
    due: Instant,
    /// Failed tries so far.
    tries: u32,
}

/// The push handed to the shell and not yet answered: what it said of each session.
struct Flight {
    id: u64,
    sent: Vec<(String, String)>,
    pending: Pending,
}

/// What happened to a push, for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Delivered,
    /// Tried again after this long.
    Retry(Duration),
    /// Its sessions no longer wait (or the person is back): not tried again.
    Dropped,
}

/// Feed it the engine's events and the person's presence, call [`Pushes::due`] at
/// [`Pushes::next_deadline`] while nothing is in flight, and tell it how each went.
pub struct Pushes {
    prefs: Prefs,
    presence: Presence,
    /// The sessions that need the person now, with what the engine last said of them.
    waiting: HashMap<String, SessionRecord>,
    memory: Pushed,
    /// New transitions held for a moment so a burst goes out as one push.
    held: Vec<(String, Instant)>,
    pending: Vec<Pending>,
    flight: Option<Flight>,
    /// When pushes went out lately, for folding bursts.
    lately: VecDeque<Instant>,
    next_id: u64,
    /// Sessions the person dismissed until their next transition, by key: what they put
    /// aside at the desk is not sent after them.
    dismissed: BTreeSet<String>,
}

impl Pushes {
    pub fn new(memory: Pushed, prefs: Prefs) -> Pushes {
        Pushes {
            prefs,
            presence: Presence::Unknown,
            waiting: HashMap::new(),
            memory,
            held: Vec::new(),
            pending: Vec::new(),
            flight: None,
            lately: VecDeque::new(),
            next_id: 1,
            dismissed: BTreeSet::new(),
        }
    }

    fn away(&self) -> bool {
        self.prefs.when == When::Always || self.presence == Presence::Away
    }

    pub fn presence(&self) -> Presence {
        self.presence
    }

    /// The sessions that wait now, by key.
    pub fn waiting(&self) -> impl Iterator<Item = &String> {
        self.waiting.keys()
    }

    /// The sessions the person dismissed now (the popups' memory says which, until each
    /// one's next transition): left out of what is pushed on leaving.
    pub fn set_dismissed(&mut self, keys: BTreeSet<String>) {
        self.dismissed = keys;
    }

    /// New settings; the sessions that dropped out of a push already on its way stay told.
    pub fn set_prefs(&mut self, prefs: Prefs, now: Instant) -> Vec<String> {
        let was = self.away();
        self.prefs = prefs;
        self.turned(was, now)
    }

    /// The desktop says where the person is. Becoming away pushes what waited untold in
    /// one push; coming back drops every push not yet on its way. Answers the sessions
    /// whose push was dropped.
    pub fn set_presence(&mut self, presence: Presence, now: Instant) -> Vec<String> {
        let was = self.away();
        self.presence = presence;
        self.turned(was, now)
    }

    fn turned(&mut self, was: bool, now: Instant) -> Vec<String> {
        let away = self.away();
        if !was && away {
            let untold: Vec<String> = self.untold();
            if !untold.is_empty() {
                self.queue(untold, now);
            }
            Vec::new()
        } else if was && !away {
            self.held.clear();
            self.pending.drain(..).flat_map(|p| p.sessions).collect()
        } else {
            Vec::new()
        }
    }

    /// Sessions that wait on a transition never pushed, and on no push's way yet.
    fn untold(&self) -> Vec<String> {
        let mut keys: Vec<String> = self
            .waiting
            .iter()
            .filter(|(key, record)| {
                transition(record).as_deref() != self.memory.get(key)
                    && !self.queued(key)
                    && !self.dismissed.contains(*key)
            })
            .map(|(key, _)| key.clone())
            .collect();
        keys.sort();
        keys
    }

    fn queued(&self, key: &str) -> bool {
        self.held.iter().any(|(k, _)| k == key)
            || self
                .pending
                .iter()
                .any(|p| p.sessions.iter().any(|k| k == key))
            || self
                .flight
                .as_ref()
                .is_some_and(|f| f.sent.iter().any(|(k, _)| k == key))
    }

    /// The session's request came after its push went out (or while it was on its way), so
    /// that push could carry none of the request's buttons: it is pushed again, on its own,
    /// now. Nothing when the person is at the desk, the session no longer waits, its wait
    /// was never pushed, or a push about it is still to go (that one carries them).
    pub fn again(&mut self, key: &str, now: Instant) -> bool {
        let Some(record) = self.waiting.get(key) else {
            return false;
        };
        let to_go = self.held.iter().any(|(k, _)| k == key)
            || self
                .pending
                .iter()
                .any(|p| p.sessions.iter().any(|k| k == key));
        let gone = transition(record).as_deref() == self.memory.get(key)
            || self
                .flight
                .as_ref()
                .is_some_and(|f| f.sent.iter().any(|(k, _)| k == key));
        if !self.away() || to_go || !gone {
            return false;
        }
        self.queue(vec![key.to_string()], now);
        true
    }

    /// Take one of the engine's events. Answers the sessions whose push was dropped because
    /// they no longer wait.
    pub fn on_event(&mut self, event: &Event, now: Instant) -> Vec<String> {
        let mut dropped = Vec::new();
        match event {
            Event::Snapshot { sessions, .. } => {
                let waits: HashMap<String, &SessionRecord> = sessions
                    .iter()
                    .filter(|s| transition(s).is_some())
                    .map(|s| (history::key(s), s))
                    .collect();
                let gone: Vec<String> = self
                    .waiting
                    .keys()
                    .filter(|key| !waits.contains_key(*key))
                    .cloned()
                    .collect();
                for key in gone {
                    dropped.extend(self.over(&key));
                }
                self.memory.retain(|key| waits.contains_key(key));
                for (key, record) in waits {
                    self.waiting.insert(key, record.clone());
                }
                // Seen for the first time while away (a start or restart, a machine reached
                // again): told as what waited when they left, in one push.
                if self.away() {
                    let untold = self.untold();
                    if !untold.is_empty() {
                        self.queue(untold, now);
                    }
                }
            }
            Event::Asked { session, .. }
            | Event::Ready { session, .. }
            | Event::Stopped { session, .. } => {
                let key = history::key(session);
                match transition(session) {
                    None => dropped.extend(self.over(&key)),
                    Some(now_waits) => {
                        self.waiting.insert(key.clone(), session.clone());
                        if self.away()
                            && self.memory.get(&key) != Some(now_waits.as_str())
                            && !self.queued(&key)
                        {
                            self.hold(key, now);
                        }
                    }
                }
            }
            Event::State { session, .. } => {
                let key = history::key(session);
                if transition(session).is_some() {
                    // Still waiting: the push (if any) names it as it is now. A new reason
                    // to wait comes as its own `asked`.
                    if self.waiting.contains_key(&key) {
                        self.waiting.insert(key, session.clone());
                    }
                } else {
                    dropped.extend(self.over(&key));
                }
            }
            Event::Resolved { session, .. } => {
                dropped.extend(self.over(&history::key(session)));
            }
            Event::Appeared { .. } | Event::Warning { .. } => {}
        }
        dropped
    }

    /// The session no longer waits: nothing about it is pushed, and a later wait is news.
    fn over(&mut self, key: &str) -> Vec<String> {
        self.waiting.remove(key);
        self.memory.forget(key);
        self.held.retain(|(k, _)| k != key);
        let mut dropped = Vec::new();
        for pending in &mut self.pending {
            if let Some(at) = pending.sessions.iter().position(|k| k == key) {
                pending.sessions.remove(at);
                dropped.push(key.to_string());
            }
        }
        self.pending.retain(|p| !p.sessions.is_empty());
        dropped
    }

    /// Hold a new transition with the rest of its burst: at once when nothing went out or
    /// is held, else for the popups' hold.
    fn hold(&mut self, key: String, now: Instant) {
        let busy = !self.held.is_empty()
            || self
                .lately
                .back()
                .is_some_and(|at| now.duration_since(*at) <= BURST_WINDOW);
        let due = if busy { now + HOLD } else { now };
        self.held.push((key, due));
    }

    fn queue(&mut self, sessions: Vec<String>, due: Instant) {
        let id = self.next_id;
        self.next_id += 1;
        self.pending.push(Pending {
            id,
            sessions,
            due,
            tries: 0,
        });
    }

    /// When [`Pushes::due`] has something (nothing while a push is in flight: they go one
    /// at a time, in order).
    pub fn next_deadline(&self) -> Option<Instant> {
        if self.flight.is_some() {
            return None;
        }
        let held = self.held.iter().map(|(_, due)| *due).min();
        let pending = self.pending.iter().map(|p| p.due).min();
        held.into_iter().chain(pending).min()
    }

    /// The next push to send now, if one is due. It is in flight until
    /// [`Pushes::delivered`] hears how it went.
    pub fn due(&mut self, now: Instant) -> Option<Message> {
        if self.flight.is_some() {
            return None;
        }
        self.release(now);
        let at = self
            .pending
            .iter()
            .enumerate()
            .filter(|(_, p)| p.due <= now)
            .min_by_key(|(_, p)| (p.due, p.id))
            .map(|(at, _)| at)?;
        let pending = self.pending.remove(at);
        let sent: Vec<(String, String)> = pending
            .sessions
            .iter()
            .filter_map(|key| {
                let record = self.waiting.get(key)?;
                Some((key.clone(), transition(record)?))
            })
            .collect();
        let records: Vec<&SessionRecord> = sent.iter().map(|(key, _)| &self.waiting[key]).collect();
        let mut message = match records.as_slice() {
            [] => return self.due(now),
            [one] => single(one, self.prefs.text),
            many => summary(many),
        };
        message.id = pending.id;
        self.lately.push_back(now);
        while self
            .lately
            .front()
            .is_some_and(|at| now.duration_since(*at) > BURST_WINDOW)
        {
            self.lately.pop_front();
        }
        self.flight = Some(Flight {
            id: pending.id,
            sent,
            pending,
        });
        Some(message)
    }

    /// Held transitions whose hold ended go out: one push each, or one for the whole burst
    /// when it is as big as the popups fold.
    fn release(&mut self, now: Instant) {
        if !self.held.iter().any(|(_, due)| *due <= now) {
            return;
        }
        let keys: Vec<String> = self.held.drain(..).map(|(key, _)| key).collect();
        let recent = self
            .lately
            .iter()
            .filter(|at| now.duration_since(**at) <= BURST_WINDOW)
            .count();
        if keys.len() > 1 && keys.len() + recent >= BURST_THRESHOLD {
            self.queue(keys, now);
        } else {
            for key in keys {
                self.queue(vec![key], now);
            }
        }
    }

    /// How the push `id` went: on success its transitions are remembered as pushed; on a
    /// failure it is tried again later, unless none of its sessions waits any more or the
    /// person is back.
    pub fn delivered(&mut self, id: u64, ok: bool, now: Instant) -> Outcome {
        let Some(flight) = self.flight.take_if(|f| f.id == id) else {
            return Outcome::Dropped;
        };
        if ok {
            for (key, sent) in &flight.sent {
                // What it said is pushed, also if the session went on to wait for something
                // else meanwhile (that is news of its own, pushed in its turn).
                if self.waiting.contains_key(key) {
                    self.memory.set(key, sent);
                }
            }
            // A session that moved on while this was in flight waits on news of its own.
            if self.away() {
                for key in self.untold() {
                    self.hold(key, now);
                }
            }
            return Outcome::Delivered;
        }
        let mut pending = flight.pending;
        pending
            .sessions
            .retain(|key| self.waiting.contains_key(key));
        if pending.sessions.is_empty() || !self.away() {
            return Outcome::Dropped;
        }
        let wait = retry_after(pending.tries);
        pending.tries += 1;
        pending.due = now + wait;
        self.pending.push(pending);
        Outcome::Retry(wait)
    }

    /// The memory's bytes when they changed.
    pub fn take_memory(&mut self) -> Option<Vec<u8>> {
        self.memory.take_dirty()
    }

    /// A card with buttons is on the phone (`open`), or was replaced: remembered, so that
    /// after a restart the phone can be told its buttons answer nothing any more.
    pub fn card(&mut self, sequence: &str, open: bool) {
        self.memory.card(sequence, open);
    }

    /// The cards that still had buttons when the tray last stopped: every request ends
    /// with the tray (its hook gives up), so none of them is answered from there.
    pub fn take_stale_cards(&mut self) -> Vec<String> {
        self.memory.take_stale()
    }
}

/// The wait before try number `tries + 2`: 1 s, doubling, capped.
pub fn retry_after(tries: u32) -> Duration {
    RETRY_FIRST
        .saturating_mul(1u32.checked_shl(tries.min(31)).unwrap_or(u32::MAX))
        .min(RETRY_MAX)
}

/// Why a session waits, in the person's words and none of the agent's.
fn why(record: &SessionRecord) -> &'static str {
    if record.stopped() {
        return "stopped";
    }
    if record.state == State::Ready {
        return "is ready";
    }
    match (record.presents(), record.reason()) {
        (Presents::Waits, Some(reason)) => reason.phrase(),
        (Presents::Waits, None) => "waits for you",
        _ if record.is(Kind::Flow) => "is at a review step",
        _ => "asks a question",
    }
}

/// `lf-tray · on build-box`: where it runs, without anything the agent wrote.
fn place(record: &SessionRecord) -> String {
    let mut parts = Vec::new();
    if let Some(repo) = record.repo() {
        parts.push(repo);
    }
    if let Some(machine) = &record.machine {
        parts.push(format!("on {machine}"));
    }
    one_line(&parts.join(" · "), MAX_LINE)
}

/// One session's push: `<title> asks permission`, where it runs; with the person's
/// `push_text`, the popup's own words.
fn single(record: &SessionRecord, text: bool) -> Message {
    let (priority, tags) = if record.stopped() {
        (3, "warning")
    } else if record.state == State::Ready {
        (3, "white_check_mark")
    } else {
        (4, "bell")
    };
    let (title, body) = if text {
        let popup = if record.stopped() {
            notice::stopped(record)
        } else if record.state == State::Ready {
            notice::ready(record)
        } else {
            notice::asked(record)
        };
        (popup.summary, unescape(&popup.body))
    } else {
        let title = one_line(
            &format!("{} {}", notice::title(record), why(record)),
            MAX_TITLE,
        );
        (title, place(record))
    };
    Message {
        id: 0,
        title,
        body,
        priority,
        tags,
        sessions: vec![history::key(record)],
        buttons: Vec::new(),
        sequence: None,
    }
}

/// Several sessions in one push: a burst, or what waited when the person left.
fn summary(records: &[&SessionRecord]) -> Message {
    let mut records = records.to_vec();
    records.sort_by(|a, b| notice::title(a).cmp(notice::title(b)));
    let mut lines: Vec<String> = records
        .iter()
        .take(SUMMARY_NAMED)
        .map(|r| {
            let place = place(r);
            let line = if place.is_empty() {
                format!("• {} {}", notice::title(r), why(r))
            } else {
                format!("• {} {} ({place})", notice::title(r), why(r))
            };
            one_line(&line, MAX_LINE)
        })
        .collect();
    if records.len() > SUMMARY_NAMED {
        lines.push(format!("and {} more", records.len() - SUMMARY_NAMED));
    }
    let title = format!("{} sessions wait for you", records.len());
    Message {
        id: 0,
        title,
        body: lines.join("\n"),
        priority: 4,
        tags: "bell",
        sessions: records.iter().map(|r| history::key(r)).collect(),
        buttons: Vec::new(),
        sequence: None,
    }
}

/// `https://ntfy.sh`: the server without the topic, which is as good as a password.
pub fn server(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let host = rest.split(['/', '?', '#']).next().unwrap_or("");
            let host = host.rsplit('@').next().unwrap_or(host);
            format!("{scheme}://{host}")
        }
        None => "(not a URL)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{blocked, record, record_e};
    use time::OffsetDateTime;

    const AWAY: Prefs = Prefs {
        when: When::Away,
        text: false,
    };

    fn ask(id: &str) -> SessionRecord {
        let mut r = record(id, Kind::Ask, State::Waiting);
        r.prompt = Some(format!("The agent's own words for {id}"));
        r.cwd = "/home/me/src/shop".into();
        assert!(r.needs_you());
        r
    }

    fn asked(r: &SessionRecord) -> Event {
        Event::Asked {
            at: OffsetDateTime::now_utc(),
            session: r.clone(),
        }
    }

    fn answered(r: &SessionRecord) -> Event {
        let mut done = r.clone();
        done.state = State::Active;
        done.set_needs_you(false);
        Event::State {
            at: OffsetDateTime::now_utc(),
            session: done,
            previous: State::Waiting,
            previous_needs_you: true,
        }
    }

    fn snapshot(sessions: &[SessionRecord]) -> Event {
        Event::Snapshot {
            at: OffsetDateTime::now_utc(),
            sessions: sessions.to_vec(),
        }
    }

    /// Everything due at `now`, each delivered as `ok` says.
    fn send_all(p: &mut Pushes, now: Instant, ok: bool) -> Vec<Message> {
        let mut sent = Vec::new();
        while let Some(m) = p.due(now) {
            p.delivered(m.id, ok, now);
            sent.push(m);
            if !ok {
                break;
            }
        }
        sent
    }

    fn away_with(memory: Pushed, now: Instant) -> Pushes {
        let mut p = Pushes::new(memory, AWAY);
        p.on_event(&snapshot(&[]), now);
        p.set_presence(Presence::Away, now);
        p
    }

    #[test]
    fn locked_or_idle_is_away_and_nothing_known_is_not() {
        let desk = |locked, idle| Desk { locked, idle }.presence();
        assert_eq!(desk(Some(true), Some(false)), Presence::Away);
        assert_eq!(desk(None, Some(true)), Presence::Away);
        assert_eq!(desk(Some(true), None), Presence::Away);
        assert_eq!(desk(Some(false), Some(false)), Presence::Present);
        assert_eq!(desk(Some(false), None), Presence::Present);
        assert_eq!(desk(None, Some(false)), Presence::Present);
        assert_eq!(desk(None, None), Presence::Unknown);
    }

    #[test]
    fn at_the_desk_or_where_nothing_tells_nothing_is_pushed() {
        let t0 = Instant::now();
        for presence in [Presence::Present, Presence::Unknown] {
            let mut p = Pushes::new(Pushed::default(), AWAY);
            p.on_event(&snapshot(&[]), t0);
            p.set_presence(presence, t0);
            p.on_event(&asked(&ask("A")), t0);
            assert_eq!(p.next_deadline(), None, "{presence:?}");
            assert_eq!(p.due(t0 + Duration::from_secs(600)), None, "{presence:?}");
        }
    }

    #[test]
    fn away_an_ask_is_pushed_at_once_once_and_without_the_agents_words() {
        let t0 = Instant::now();
        let mut p = away_with(Pushed::default(), t0);
        let a = ask("A");
        p.on_event(&asked(&a), t0);
        assert_eq!(p.next_deadline(), Some(t0));
        let m = p.due(t0).unwrap();
        assert_eq!(m.title, "Title of A asks a question");
        assert_eq!(m.body, "shop");
        assert_eq!((m.priority, m.tags), (4, "bell"));
        assert!(!format!("{m:?}").contains("own words"));
        assert_eq!(p.due(t0), None, "one at a time");
        assert_eq!(p.delivered(m.id, true, t0), Outcome::Delivered);
        // The same news again (a reader's repeat, a rescan) is not pushed twice.
        p.on_event(&asked(&a), t0);
        p.on_event(&snapshot(std::slice::from_ref(&a)), t0);
        assert_eq!(p.next_deadline(), None);
        // Answered, then asked again: news again.
        p.on_event(&answered(&a), t0);
        p.on_event(&asked(&a), t0);
        assert!(p.due(t0 + HOLD).is_some(), "held: one went out just before");
    }

    #[test]
    fn with_push_text_the_push_says_what_the_popup_says() {
        let t0 = Instant::now();
        let mut p = away_with(Pushed::default(), t0);
        p.set_prefs(Prefs { text: true, ..AWAY }, t0);
        p.on_event(&asked(&ask("A")), t0);
        let m = p.due(t0).unwrap();
        assert!(m.body.contains("The agent's own words for A"), "{m:?}");
    }

    #[test]
    fn an_agent_on_another_machine_is_pushed_the_same_naming_the_machine() {
        let t0 = Instant::now();
        let mut p = away_with(Pushed::default(), t0);
        let mut far = record_e(
            "F",
            State::Waiting,
            true,
            blocked("permission", "Run rm -rf /tmp/x", "secret words"),
        );
        far.machine = Some("build-box".into());
        p.on_event(&asked(&far), t0);
        let m = send_all(&mut p, t0, true).remove(0);
        assert_eq!(
            (m.title.as_str(), m.body.as_str()),
            ("Title of F asks permission", "app.loo-412 · on build-box")
        );
    }

    #[test]
    fn why_it_waits_is_said_in_the_persons_words() {
        let t0 = Instant::now();
        let mut p = away_with(Pushed::default(), t0);
        let permission = record_e(
            "P",
            State::Waiting,
            true,
            blocked("permission", "Run rm -rf /tmp/x", "secret words"),
        );
        p.on_event(&asked(&permission), t0);
        let m = send_all(&mut p, t0, true).remove(0);
        assert_eq!(m.title, "Title of P asks permission");
        assert_eq!(m.body, "app.loo-412");
        assert!(!format!("{m:?}").contains("secret") && !format!("{m:?}").contains("rm -rf"));

        let mut ready = record("R", Kind::Ask, State::Ready);
        ready.ready_summary = Some("All done, the agent says".into());
        ready.set_needs_you(true);
        let t1 = t0 + BURST_WINDOW * 2;
        p.on_event(
            &Event::Ready {
                at: OffsetDateTime::now_utc(),
                session: ready,
            },
            t1,
        );
        let m = send_all(&mut p, t1, true).remove(0);
        assert_eq!(
            (m.title.as_str(), m.tags),
            ("Title of R is ready", "white_check_mark")
        );
        assert!(!m.body.contains("All done"));

        let dead = record_e("S", State::Closed, false, serde_json::Value::Null);
        assert!(dead.stopped());
        let t2 = t1 + BURST_WINDOW * 2;
        p.on_event(
            &Event::Stopped {
                at: OffsetDateTime::now_utc(),
                session: dead,
                previous: State::Active,
            },
            t2,
        );
        let m = send_all(&mut p, t2, true).remove(0);
        assert_eq!(m.title, "Title of S stopped");
    }

    #[test]
    fn leaving_pushes_what_waited_in_one_summary_and_coming_back_stops_pushes() {
        let t0 = Instant::now();
        let mut p = Pushes::new(Pushed::default(), AWAY);
        let (a, b, c) = (ask("A"), ask("B"), ask("C"));
        p.on_event(&snapshot(std::slice::from_ref(&a)), t0);
        p.set_presence(Presence::Present, t0);
        p.on_event(&asked(&b), t0);
        assert_eq!(p.next_deadline(), None);
        p.set_presence(Presence::Away, t0);
        let sent = send_all(&mut p, t0, true);
        assert_eq!(sent.len(), 1, "{sent:?}");
        assert_eq!(sent[0].title, "2 sessions wait for you");
        assert_eq!(
            sent[0].body,
            "• Title of A asks a question (shop)\n• Title of B asks a question (shop)"
        );
        // Back, then away again: nothing new waits, nothing is pushed.
        p.set_presence(Presence::Present, t0);
        p.on_event(&asked(&c), t0);
        p.set_presence(Presence::Away, t0);
        let again = send_all(&mut p, t0, true);
        assert_eq!(again.len(), 1);
        assert_eq!(
            again[0].title, "Title of C asks a question",
            "only C is news"
        );
        // Back with a push failing: it is not tried again.
        let d = ask("D");
        let t1 = t0 + BURST_WINDOW * 2;
        p.on_event(&asked(&d), t1);
        let m = p.due(t1).unwrap();
        assert!(matches!(p.delivered(m.id, false, t1), Outcome::Retry(_)));
        assert_eq!(p.set_presence(Presence::Present, t1), ["D"]);
        assert_eq!(p.next_deadline(), None);
    }

    #[test]
    fn what_the_person_dismissed_at_the_desk_is_not_sent_after_them() {
        let t0 = Instant::now();
        let mut p = Pushes::new(Pushed::default(), AWAY);
        let (a, b) = (ask("A"), ask("B"));
        p.on_event(&snapshot(&[a.clone(), b.clone()]), t0);
        p.set_presence(Presence::Present, t0);
        p.set_dismissed(BTreeSet::from([history::key(&a)]));
        p.set_presence(Presence::Away, t0);
        let sent = send_all(&mut p, t0, true);
        assert_eq!(sent.len(), 1, "{sent:?}");
        assert_eq!(sent[0].title, "Title of B asks a question");
        // Its next transition ends the dismissal, and is pushed as any other.
        p.set_dismissed(BTreeSet::new());
        let t1 = t0 + BURST_WINDOW * 2;
        p.on_event(&asked(&a), t1);
        let again = send_all(&mut p, t1 + HOLD, true);
        assert_eq!(again.len(), 1, "{again:?}");
        assert_eq!(again[0].title, "Title of A asks a question");
    }

    #[test]
    fn a_failed_push_backs_off_and_is_delivered_once_when_the_server_returns() {
        let t0 = Instant::now();
        let mut p = away_with(Pushed::default(), t0);
        p.on_event(&asked(&ask("A")), t0);
        let mut now = t0;
        let mut waits = Vec::new();
        for _ in 0..8 {
            let m = p.due(now).unwrap();
            let Outcome::Retry(wait) = p.delivered(m.id, false, now) else {
                panic!("not retried")
            };
            waits.push(wait.as_secs());
            assert_eq!(p.due(now), None, "not before its time");
            now += wait;
        }
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 60, 60]);
        let m = p.due(now).unwrap();
        assert_eq!(p.delivered(m.id, true, now), Outcome::Delivered);
        assert_eq!(p.next_deadline(), None);
    }

    #[test]
    fn a_push_still_failing_is_dropped_once_its_session_was_answered() {
        let t0 = Instant::now();
        let mut p = away_with(Pushed::default(), t0);
        let a = ask("A");
        p.on_event(&asked(&a), t0);
        let m = p.due(t0).unwrap();
        p.delivered(m.id, false, t0);
        assert_eq!(p.on_event(&answered(&a), t0), ["A"]);
        assert_eq!(p.next_deadline(), None);
        // Answered while the request was on its way: that try failing ends it too.
        p.on_event(&asked(&ask("B")), t0 + BURST_WINDOW * 2);
        let m = p.due(t0 + BURST_WINDOW * 2).unwrap();
        p.on_event(
            &Event::Resolved {
                at: OffsetDateTime::now_utc(),
                session: ask("B"),
            },
            t0,
        );
        assert_eq!(p.delivered(m.id, false, t0), Outcome::Dropped);
        assert_eq!(p.next_deadline(), None);
    }

    #[test]
    fn a_restart_while_away_pushes_nothing_twice() {
        let t0 = Instant::now();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pushes.json");
        let (a, b) = (ask("A"), ask("B"));
        let mut p = away_with(Pushed::default(), t0);
        p.on_event(&asked(&a), t0);
        send_all(&mut p, t0, true);
        std::fs::write(&path, p.take_memory().unwrap()).unwrap();
        assert_eq!(p.take_memory(), None, "written once");

        let (memory, warning) = Pushed::load(&path);
        assert_eq!(warning, None);
        let mut again = Pushes::new(memory, AWAY);
        again.on_event(&snapshot(&[a.clone(), b.clone()]), t0);
        again.set_presence(Presence::Away, t0);
        let sent = send_all(&mut again, t0, true);
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].sessions, ["B"], "A was pushed before the restart");
        // Away before the first list came: what it lists untold is one push all the same.
        let mut early = Pushes::new(Pushed::default(), AWAY);
        early.set_presence(Presence::Away, t0);
        early.on_event(&snapshot(&[a.clone(), b.clone(), ask("C")]), t0);
        let sent = send_all(&mut early, t0, true);
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].title, "3 sessions wait for you");
        // What no longer waits is forgotten, so the file stays small.
        again.on_event(&snapshot(std::slice::from_ref(&b)), t0);
        let bytes = again.take_memory().unwrap();
        let text = String::from_utf8(bytes).unwrap();
        assert!(text.contains("\"B\"") && !text.contains("\"A\""), "{text}");
    }

    #[test]
    fn a_burst_of_eight_is_the_first_push_then_one_summary() {
        let t0 = Instant::now();
        let mut p = away_with(Pushed::default(), t0);
        let records: Vec<SessionRecord> = (1..=8).map(|i| ask(&format!("S{i}"))).collect();
        p.on_event(&asked(&records[0]), t0);
        let first = p.due(t0).unwrap();
        assert_eq!(first.sessions, ["S1"]);
        let t1 = t0 + Duration::from_millis(20);
        for r in &records[1..] {
            p.on_event(&asked(r), t1);
        }
        p.delivered(first.id, true, t1);
        assert_eq!(p.next_deadline(), Some(t1 + HOLD));
        assert_eq!(p.due(t1), None, "held with the rest of the burst");
        let sent = send_all(&mut p, t1 + HOLD, true);
        assert_eq!(sent.len(), 1, "{sent:?}");
        assert_eq!(sent[0].title, "7 sessions wait for you");
        assert!(sent[0].body.ends_with("and 2 more"), "{}", sent[0].body);
    }

    #[test]
    fn a_few_together_are_each_pushed() {
        let t0 = Instant::now();
        let mut p = away_with(Pushed::default(), t0);
        for id in ["A", "B", "C"] {
            p.on_event(&asked(&ask(id)), t0);
        }
        let sent = send_all(&mut p, t0 + HOLD, true);
        let sessions: Vec<_> = sent.iter().map(|m| m.sessions.join(",")).collect();
        assert_eq!(sessions, ["A", "B", "C"]);
    }

    #[test]
    fn always_pushes_at_the_desk_too() {
        let t0 = Instant::now();
        let mut p = Pushes::new(
            Pushed::default(),
            Prefs {
                when: When::Always,
                text: false,
            },
        );
        p.on_event(&snapshot(&[]), t0);
        p.set_presence(Presence::Present, t0);
        p.on_event(&asked(&ask("A")), t0);
        assert_eq!(send_all(&mut p, t0, true).len(), 1);
    }

    #[test]
    fn hostile_titles_stay_one_plain_line() {
        let t0 = Instant::now();
        let mut p = away_with(Pushed::default(), t0);
        let mut a = ask("A");
        a.title = "<b>x</b>\r\nX-Injected: 1\u{7}".into();
        p.on_event(&asked(&a), t0);
        let m = p.due(t0).unwrap();
        assert_eq!(m.title, "<b>x</b> X-Injected: 1 asks a question");
        assert!(!m.title.contains(['\r', '\n', '\u{7}']));
    }
}
