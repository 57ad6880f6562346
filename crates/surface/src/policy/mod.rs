//! When popups appear and go away: one per session transition, exactly once across restarts
//! and crashes (the [`History`] remembers what reached the server), closed when the session
//! no longer needs the person, bursts folded into one summary, what waited unseen (at start,
//! while the server was away, during a pause or quiet hours) told in one summary when popups
//! can be shown again, and reminders that back off.
//!
//! Plain code with the time injected: every call that depends on time is handed the present
//! as one [`Clock`] (monotonic, wall and local time at once); nothing here reads a clock.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use lf_tray_core::history::{self, Entry, History, Pause};
use lf_tray_core::{Event, Presents, SessionRecord};

use crate::notice::{asked, ready, stopped, Notice, NoticeKey, Server};

mod clock;
mod events;
mod outgoing;

pub use clock::{minute_of, Clock, QuietHours};

/// A lone transition pops up at once. Those that follow a popup within the burst window are
/// held this long, so that a burst (one rescan can report many, an agent fleet can finish
/// together) has landed before it is shown one by one or folded into one summary: long
/// enough for a burst read in a few lists, and a wait nobody notices on a second popup.
pub(super) const HOLD: Duration = Duration::from_millis(300);
/// This many popups within `BURST_WINDOW` become one summary: four popups still fit on a
/// screen's corner and can each be read; a fifth starts to cover the person's work.
pub(crate) const BURST_THRESHOLD: usize = 5;
pub(crate) const BURST_WINDOW: Duration = Duration::from_secs(2);
/// Reminder intervals double from the person's N up to this: a session left for a day is
/// recalled a few times, not every N minutes.
const REMINDER_CAP: Duration = Duration::from_secs(4 * 60 * 60);
/// The wall clock moving this much further than the monotonic one means the machine slept
/// (the monotonic clock stops in suspend); NTP steps are far smaller.
const RESUME_JUMP: i64 = 10;

/// The settings the policy follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preferences {
    pub on_ask: bool,
    pub on_ready: bool,
    /// The first reminder's delay; later ones double (N, 2N, 4N…, capped).
    pub reminder: Option<Duration>,
    /// How long a session the person's own terminal is attached to must stay waiting
    /// before it pops up; zero pops it up at once.
    pub attached_grace: Duration,
    pub quiet_hours: Option<QuietHours>,
    /// How long a Codex request keeps its popup before the terminal gets its prompt back.
    pub codex_wait: Duration,
}

/// What the person picks under "Pause notifications".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PauseFor {
    Hour,
    Tomorrow,
    Indefinite,
}

/// What the platform module is asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    Show(Notice),
    Close(NoticeKey),
}

/// How a `Show` went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    Shown,
    /// No notification server on the bus (or no bus): shown when one appears.
    NoServer,
    /// The server refused it: tried again at the next summary.
    Failed,
}

/// A session that waits. Since when is the memory's (it outlives a restart); this keeps
/// the reminders' clock.
struct Waiting {
    /// The last reminder (or the start of the wait), and how many reminders were given.
    last: Instant,
    reminded: u32,
    record: SessionRecord,
}

impl Waiting {
    fn new(record: &SessionRecord, since: Instant) -> Waiting {
        Waiting {
            last: since,
            reminded: 0,
            record: record.clone(),
        }
    }
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
    record.presents() == Presents::Waits && record.attached()
}

/// The summary on screen, and the sessions it stands for.
struct Burst {
    last: Instant,
    members: BTreeSet<String>,
}

/// Feed it the engine's events and call `flush` at `next_deadline`; it answers with what to
/// show and close, and hears back how each `Show` went.
pub struct Popups {
    held: Vec<Held>,
    /// Session popups shown within the burst window, oldest first.
    lately: VecDeque<(Instant, SessionRecord)>,
    burst: Option<Burst>,
    waiting: HashMap<String, Waiting>,
    deferred: HashMap<String, Deferred>,
    history: History,
    /// The clocks at the last change, to tell a resume from suspend: the monotonic clock
    /// stops while the machine sleeps, the wall clock does not.
    seen: Option<Clock>,
    /// Whether a notification server is there to show popups; assumed until told otherwise.
    server: Server,
    /// The do-not-disturb sources that are on (the server's `Inhibited`, dunst's pause).
    desktop_quiet: BTreeSet<&'static str>,
    /// Quiet at the last flush: its end brings the summary of what waited meanwhile.
    was_quiet: bool,
    /// What waits unseen is to be told in one summary at the next flush that may show it.
    catch_up: bool,
    /// Sessions whose popup was handed to the server and not yet confirmed.
    in_flight: HashSet<String>,
    /// A popup saying a terminal did not open is up (or on its way).
    launch_failure: bool,
    /// The popup saying no tray shows the app is up (or on its way).
    no_tray_shown: bool,
    /// Sessions whose popup the server took down before the person acted on it, until one
    /// naming them is shown again: their tray rows are marked.
    went_unseen: HashSet<String>,
    /// Where the person's focus is, for the sessions whose terminal the shell last asked
    /// about (see [`Popups::set_focus`]).
    focus: HashMap<String, Focus>,
}

/// Whether the person looks at a session's own terminal, as the shell found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    /// Its window, tab or pane has the focus: a turn handed back there is seen there.
    Looking,
    /// The desktop says the focus is elsewhere: a turn handed back pops up at once.
    Elsewhere,
    /// The desktop cannot say (a Wayland desktop that shows no focus, a terminal the tray
    /// cannot find): a session a terminal is attached to gets the attached grace.
    Unknown,
}

impl Default for Popups {
    fn default() -> Popups {
        Popups::new(History::default())
    }
}

impl Popups {
    pub fn new(history: History) -> Popups {
        Popups {
            held: Vec::new(),
            lately: VecDeque::new(),
            burst: None,
            waiting: HashMap::new(),
            deferred: HashMap::new(),
            history,
            seen: None,
            server: Server::Present,
            desktop_quiet: BTreeSet::new(),
            was_quiet: false,
            catch_up: false,
            in_flight: HashSet::new(),
            launch_failure: false,
            no_tray_shown: false,
            went_unseen: HashSet::new(),
            focus: HashMap::new(),
        }
    }

    /// The sessions whose own terminal (its window, tab or pane) has the person's focus,
    /// as the shell found just before the events it hands over next: a turn handed back
    /// to a person looking at it is seen there, so it does not pop up (the tray row still
    /// says it waits). The attached grace stays for where focus cannot be known. Found by
    /// the shell, not asked from here: a terminal may take seconds to answer, and the
    /// policy is held by the tray's clicks too.
    pub fn set_focus<'a>(
        &mut self,
        sessions: impl IntoIterator<Item = (&'a SessionRecord, Focus)>,
    ) {
        self.focus = sessions
            .into_iter()
            .map(|(record, focus)| (history::key(record), focus))
            .collect();
    }

    /// A resume from suspend is told like a start: what waits unseen, in one summary.
    fn observe(&mut self, now: Clock) {
        if let Some(seen) = self.seen {
            if now.unix - seen.unix_at(now.at) > RESUME_JUMP {
                self.catch_up = true;
            }
        }
        self.seen = Some(now);
    }

    pub fn history(&self) -> &History {
        &self.history
    }

    /// The history's bytes when it changed since the last call, to be written by the caller.
    pub fn take_history(&mut self) -> Option<Vec<u8>> {
        self.history.take_dirty().then(|| self.history.to_bytes())
    }

    /// Since when the session waits on the person, unix seconds.
    pub fn waiting_since(&self, key: &str) -> Option<i64> {
        self.history.mark(key).map(|m| m.since)
    }

    pub fn dismissed(&self, key: &str) -> bool {
        self.history.mark(key).is_some_and(|m| m.dismissed)
    }

    /// The server took the session's popup down before the person acted on it, and none
    /// has shown it since. (One held back by a pause or quiet hours is not: the tray says
    /// why popups wait, and one on its way is not either, or every new row would flicker.)
    pub fn unseen(&self, key: &str) -> bool {
        self.went_unseen.contains(key)
    }

    /// The keys of the sessions [`Popups::unseen`] says went unseen.
    pub fn went_unseen(&self) -> impl Iterator<Item = &str> {
        self.went_unseen.iter().map(String::as_str)
    }

    /// The server took a session's popup down by itself (it expired: xfce4-notifyd, Plasma
    /// and stock dunst time out even popups asked to stay). The session stays unseen: the
    /// next summary (a start, a resume, the end of do-not-disturb) tells it again. Not at
    /// once, which would put it back on screen for as long as the server lets it.
    pub fn expired(&mut self, key: &str) {
        if self.waiting.contains_key(key) && !self.dismissed(key) {
            self.history.unseen(key);
            self.went_unseen.insert(key.to_string());
        }
    }

    /// Whether a notification server is there to show popups now.
    pub fn server_present(&self) -> bool {
        self.server == Server::Present
    }

    /// A notification server appeared on the bus or went away.
    pub fn set_server(&mut self, server: Server) {
        if let Server::DoNotDisturb { source, on } = server {
            return self.set_desktop_quiet(source, on);
        }
        if server == Server::Present && self.server != Server::Present {
            self.catch_up = true;
        }
        self.server = server;
    }

    /// The desktop's do-not-disturb turned on or off.
    pub fn set_desktop_quiet(&mut self, source: &'static str, on: bool) {
        if on {
            self.desktop_quiet.insert(source);
        } else {
            self.desktop_quiet.remove(source);
        }
    }

    pub fn pause(&mut self, pause: PauseFor, now: Clock) {
        self.observe(now);
        let pause = match pause {
            PauseFor::Hour => Pause::Until(now.unix() + 3600),
            PauseFor::Tomorrow => Pause::Until(now.tomorrow_morning()),
            PauseFor::Indefinite => Pause::Indefinite,
        };
        self.history.set_pause(Some(pause));
        // What was about to show waits for the summary at the end of the pause.
        self.held.clear();
        self.deferred.clear();
    }

    pub fn resume(&mut self) {
        self.history.set_pause(None);
    }

    pub fn paused(&self, now: Clock) -> bool {
        match self.history.pause() {
            Some(Pause::Indefinite) => true,
            Some(Pause::Until(until)) => now.unix() < until,
            None => false,
        }
    }

    fn quiet_hours(&self, now: Clock, prefs: &Preferences) -> Option<QuietHours> {
        prefs.quiet_hours.filter(|q| q.contains(now.local_minute()))
    }

    fn quiet(&self, now: Clock, prefs: &Preferences) -> bool {
        self.paused(now) || !self.desktop_quiet.is_empty() || self.quiet_hours(now, prefs).is_some()
    }

    /// Whether a popup may go out now.
    fn may_show(&self, now: Clock, prefs: &Preferences) -> bool {
        self.server == Server::Present && !self.quiet(now, prefs)
    }

    /// Why popups are held back now, in a sentence for the window and the tray.
    pub fn held_back(&self, now: Clock, prefs: &Preferences) -> Option<String> {
        if let Some(pause) = self.history.pause().filter(|_| self.paused(now)) {
            return Some(match pause {
                Pause::Indefinite => "Notifications paused until you resume".into(),
                Pause::Until(until) => {
                    format!("Notifications paused until {}", now.local_time(until))
                }
            });
        }
        if let Some(quiet) = self.quiet_hours(now, prefs) {
            let end = now.unix() + i64::from(quiet.left(now.local_minute())) * 60
                - now.unix().rem_euclid(60);
            return Some(format!("Quiet hours until {}", now.local_time(end)));
        }
        if !self.desktop_quiet.is_empty() {
            return Some("The desktop's do-not-disturb is on".into());
        }
        match self.server {
            Server::Present | Server::DoNotDisturb { .. } => None,
            Server::Absent => Some("No notification server: popups wait until one starts".into()),
            Server::NoBus => Some("The D-Bus session bus is gone: reconnecting".into()),
        }
    }

    /// When `flush` has something to do: a held or deferred popup to release, a reminder
    /// to give, a pause or quiet hours to end.
    pub fn next_deadline(&self, now: Clock, prefs: &Preferences) -> Option<Clock> {
        let held = self.held.iter().map(|h| h.due).min();
        let deferred = self.deferred.values().map(|d| d.due).min();
        let reminders = prefs.reminder.and_then(|first| {
            self.waiting
                .values()
                .map(|w| w.last + gap(first, w.reminded))
                .min()
        });
        let pause = match self.history.pause() {
            Some(Pause::Until(until)) => Some(now.instant(until)),
            _ => None,
        };
        let quiet_end = self.quiet_hours(now, prefs).map(|q| {
            let minute = now.local_minute();
            let into_minute = now.unix().rem_euclid(60) as u64;
            now.at + Duration::from_secs(u64::from(q.left(minute)) * 60 - into_minute)
        });
        [held, deferred, reminders, pause, quiet_end]
            .into_iter()
            .flatten()
            .min()
            .map(|due| now + due.saturating_duration_since(now.at))
    }
    /// A line for the Recent list.
    fn remember(&mut self, event: &Event, session: &SessionRecord, unix: i64) {
        let what = match event {
            Event::Asked { .. } => "asked",
            Event::Ready { .. } => "ready",
            Event::Resolved { .. } => "resolved",
            Event::Stopped { .. } => "stopped",
            Event::State { .. } if session.needs_you() => "waits",
            Event::State { .. } => "no_longer_waits",
            _ => return,
        };
        self.history.push_recent(Entry {
            at: unix,
            what: what.into(),
            id: session.id.clone(),
            title: crate::notice::one_line(crate::notice::title(session), 200),
            machine: session.machine.clone(),
        });
    }

    /// How a `Show` went: a popup that reached the server is remembered as shown.
    /// How a `Show` went. True when that changed which sessions went unseen (the tray's
    /// marks are drawn again).
    pub fn delivered(&mut self, notice: &Notice, delivery: Delivery) -> bool {
        let mut marks = false;
        for (key, transition) in &notice.covers {
            self.in_flight.remove(key);
            if delivery == Delivery::Shown {
                self.history.shown(key, transition);
                marks |= self.went_unseen.remove(key);
            }
        }
        if delivery == Delivery::NoServer && self.server == Server::Present {
            self.set_server(Server::Absent);
        }
        marks
    }

    /// A click did not get the person where they asked: a terminal did not open (the popup
    /// has the command to run by hand), or the one the session runs in cannot be reached.
    /// In place of an earlier such popup. It answers the person's own click, so it shows
    /// whatever holds session popups back (a pause, quiet hours and do-not-disturb keep
    /// interruptions away; this is none). Without a server nothing is owed: the window says
    /// the same, and an hour-old failure shown when a server comes is noise.
    pub fn click_failed(&mut self, notice: Notice) -> Vec<Effect> {
        if self.server != Server::Present {
            return Vec::new();
        }
        self.launch_failure = true;
        vec![Effect::Show(notice)]
    }

    /// No tray shows the app on this desktop: the popup that says so (once per login, the
    /// shell decides). Not held back by quiet, like a failed click: without it a hidden app
    /// is unseen for good. Without a server nothing is owed, and the shell, which keeps
    /// the login told only once one was shown, tries again at the next start.
    pub fn no_tray(&mut self, notice: Notice) -> Vec<Effect> {
        if self.server != Server::Present {
            return Vec::new();
        }
        self.no_tray_shown = true;
        vec![Effect::Show(notice)]
    }

    /// A tray shows the app now: what the no-tray popup said is no longer so.
    pub fn tray_came(&mut self) -> Vec<Effect> {
        if std::mem::take(&mut self.no_tray_shown) {
            vec![Effect::Close(NoticeKey::NoTray)]
        } else {
            Vec::new()
        }
    }

    /// A click got the person there (a terminal opened, or came to the front): the popup
    /// of a failure before it is stale.
    pub fn click_reached(&mut self) -> Vec<Effect> {
        if std::mem::take(&mut self.launch_failure) {
            vec![Effect::Close(NoticeKey::Error)]
        } else {
            Vec::new()
        }
    }

    /// The person dismissed a session: its popup goes, and nothing more pops up or reminds
    /// about it until its next transition. lf is not told.
    pub fn dismiss(&mut self, key: &str) -> Vec<Effect> {
        let mut effects = Vec::new();
        if !self.history.dismiss(key) {
            return effects;
        }
        self.went_unseen.remove(key);
        self.unhold(key);
        self.lately.retain(|(_, r)| history::key(r) != key);
        if let Some(w) = self.waiting.get(key) {
            effects.push(Effect::Close(NoticeKey::Session(history::key(&w.record))));
        }
        self.leave_burst(key, &mut effects);
        effects
    }

    fn instant_of(&self, unix: i64, now: Clock) -> Instant {
        let ago = (now.unix() - unix).max(0) as u64;
        now.at
            .checked_sub(Duration::from_secs(ago))
            .unwrap_or(now.at)
    }

    fn wait(&mut self, record: &SessionRecord, now: Instant) {
        // A new reason to wait (asked, then ready) restarts the reminder clock.
        self.waiting
            .insert(history::key(record), Waiting::new(record, now));
    }

    /// The session no longer needs the person: nothing about it may stay on screen.
    fn settled(&mut self, key: &str, effects: &mut Vec<Effect>) {
        self.waiting.remove(key);
        self.went_unseen.remove(key);
        self.unhold(key);
        self.lately.retain(|(_, r)| history::key(r) != key);
        effects.push(Effect::Close(NoticeKey::Session(key.to_string())));
        self.leave_burst(key, effects);
    }

    fn leave_burst(&mut self, key: &str, effects: &mut Vec<Effect>) {
        if let Some(burst) = &mut self.burst {
            if burst.members.remove(key) && burst.members.is_empty() {
                self.burst = None;
                effects.push(Effect::Close(NoticeKey::Burst));
            }
        }
    }
}

/// The wait before reminder number `given + 1`: N, then 2N, 4N… up to the cap (or N, when
/// the person's N is longer than the cap).
fn gap(first: Duration, given: u32) -> Duration {
    let doubled = first.saturating_mul(1u32.checked_shl(given.min(31)).unwrap_or(u32::MAX));
    doubled.min(REMINDER_CAP.max(first))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{record, record_d};
    use crate::notice::{NoticeKind, DEFAULT};
    use lf_tray_core::{Kind, State};
    use time::OffsetDateTime;

    const PREFS: Preferences = Preferences {
        on_ask: true,
        on_ready: true,
        reminder: None,
        attached_grace: Duration::from_secs(45),
        quiet_hours: None,
        codex_wait: Duration::from_secs(30),
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

    /// Noon UTC: never inside the tests' quiet hours.
    fn noon() -> Clock {
        Clock::new(Instant::now(), 1_796_126_400, 0)
    }

    /// The server took every popup in `effects`.
    fn delivered(p: &mut Popups, effects: &[Effect]) {
        for effect in effects {
            if let Effect::Show(notice) = effect {
                p.delivered(notice, Delivery::Shown);
            }
        }
    }

    fn first_shown(effects: &[Effect]) -> Notice {
        effects
            .iter()
            .find_map(|e| match e {
                Effect::Show(n) => Some(n.clone()),
                Effect::Close(_) => None,
            })
            .unwrap_or_else(|| panic!("nothing shown: {effects:?}"))
    }

    fn snapshot(sessions: &[SessionRecord]) -> Event {
        Event::Snapshot {
            at: OffsetDateTime::now_utc(),
            sessions: sessions.to_vec(),
        }
    }

    /// The popups' memory as a restart finds it.
    fn restarted(p: &mut Popups) -> Popups {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.json");
        std::fs::write(
            &path,
            p.take_history().unwrap_or_else(|| p.history().to_bytes()),
        )
        .unwrap();
        let loaded = History::load(&path);
        assert!(loaded.warning.is_none());
        Popups::new(loaded.history)
    }

    #[test]
    fn a_stopped_agent_is_told_once_and_not_after_a_restart() {
        use crate::fixtures::record_e;
        let t0 = noon();
        let mut p = Popups::default();
        let working = record_e("S", State::Active, false, serde_json::Value::Null);
        p.on_event(&snapshot(std::slice::from_ref(&working)), t0, &PREFS);
        let dead = record_e("S", State::Closed, false, serde_json::Value::Null);
        let stopped = Event::Stopped {
            at: OffsetDateTime::now_utc(),
            session: dead.clone(),
            previous: State::Active,
        };
        let effects = p.on_event(&stopped, t0, &PREFS);
        assert_eq!(shown(&effects), [(NoticeKind::Stopped, "S")]);
        let notice = first_shown(&effects);
        assert_eq!(notice.covers, [("S".to_string(), "stopped".to_string())]);
        delivered(&mut p, &effects);
        assert_eq!(p.history().recent()[0].what, "stopped");
        // The same news again (a reader's repeat) is not shown twice.
        assert!(shown(&p.on_event(&stopped, t0, &PREFS)).is_empty());
        // A restart lists it as it is and says nothing.
        let mut again = restarted(&mut p);
        assert!(shown(&again.on_event(&snapshot(&[dead]), t0, &PREFS)).is_empty());
        // Resumed, then stopped again: news again.
        let resumed = Event::State {
            at: OffsetDateTime::now_utc(),
            session: working.clone(),
            previous: State::Closed,
            previous_needs_you: false,
        };
        again.on_event(&resumed, t0, &PREFS);
        assert_eq!(
            shown(&again.on_event(&stopped, t0, &PREFS)),
            [(NoticeKind::Stopped, "S")]
        );
    }

    #[test]
    fn what_waits_at_start_is_one_summary_and_a_restart_repeats_nothing() {
        let t0 = noon();
        let mut p = Popups::default();
        let mut sessions: Vec<_> = (0..3)
            .map(|i| {
                let mut r = record(&format!("ask_{i}"), Kind::Ask, State::Waiting);
                r.created_at = Some(1_796_126_400 - 600 * (i + 1));
                r
            })
            .collect();
        let effects = p.on_event(&snapshot(&sessions), t0, &PREFS);
        assert_eq!(shown(&effects), [(NoticeKind::Burst, "-")]);
        let Effect::Show(summary) = &effects[0] else {
            panic!()
        };
        assert_eq!(summary.summary, "3 sessions wait for you");
        assert!(
            summary
                .body
                .starts_with("• Title of ask_2 — detail · waiting 30 min"),
            "the oldest is named first: {}",
            summary.body
        );
        assert_eq!(summary.covers.len(), 3);
        delivered(&mut p, &effects);

        // A restart (SIGTERM or a crash after the popup went out): nothing pops up.
        let mut again = restarted(&mut p);
        assert!(shown(&again.on_event(&snapshot(&sessions), t0, &PREFS)).is_empty());

        // A crash before the server confirmed: the popup was not shown, so it comes again.
        let mut lost = Popups::default();
        let effects = lost.on_event(&snapshot(&sessions[..1]), t0, &PREFS);
        assert_eq!(shown(&effects), [(NoticeKind::Asked, "ask_0")]);
        let mut after_crash = restarted(&mut lost);
        assert_eq!(
            shown(&after_crash.on_event(&snapshot(&sessions[..1]), t0, &PREFS)),
            [(NoticeKind::Asked, "ask_0")]
        );

        // One more arrived while the tray was down, and an old one became ready: a restart
        // tells those two, and only those.
        sessions.push(record("ask_new", Kind::Ask, State::Waiting));
        sessions[1].state = State::Ready;
        let mut third = restarted(&mut again);
        let effects = third.on_event(&snapshot(&sessions), t0, &PREFS);
        let Effect::Show(summary) = &effects
            .iter()
            .find(|e| matches!(e, Effect::Show(_)))
            .unwrap()
        else {
            panic!()
        };
        assert_eq!(summary.summary, "2 sessions wait for you");
        let mut covered: Vec<_> = summary.covers.iter().map(|(k, _)| k.as_str()).collect();
        covered.sort();
        assert_eq!(covered, ["ask_1", "ask_new"]);

        // An Asked the engine reports again for a transition already shown is not repeated.
        delivered(&mut third, &effects);
        let t1 = t0 + BURST_WINDOW * 2;
        assert!(shown(&third.on_event(&asked_event(&sessions[0]), t1, &PREFS)).is_empty());

        // Sessions that are gone are pruned from the memory.
        third.on_event(&snapshot(&sessions[3..]), t1, &PREFS);
        assert!(third.history().mark("ask_0").is_none());
        assert!(third.history().mark("ask_new").is_some());
    }

    #[test]
    fn a_resume_from_suspend_tells_what_waited_unseen() {
        let t0 = noon();
        let mut p = Popups::default();
        // The server refused this one's popup: it stays owed until the next summary.
        let a = record("ask_1", Kind::Ask, State::Waiting);
        let notice = first_shown(&p.on_event(&asked_event(&a), t0, &PREFS));
        p.delivered(&notice, Delivery::Failed);
        assert!(p.flush(t0 + HOLD, &PREFS).is_empty());
        // An ordinary tick is no resume.
        let t1 = t0 + Duration::from_secs(30);
        assert!(p.flush(t1, &PREFS).is_empty());
        // The monotonic clock advanced 1 s while the wall clock advanced an hour: a suspend.
        let t2 = Clock::new(t1.at() + Duration::from_secs(1), 1_796_126_400 + 3631, 0);
        assert_eq!(shown(&p.flush(t2, &PREFS)), [(NoticeKind::Asked, "ask_1")]);
    }

    #[test]
    fn a_missing_server_keeps_popups_owed_until_one_appears() {
        let t0 = noon();
        let mut p = Popups::default();
        let a = record("ask_1", Kind::Ask, State::Waiting);
        let notice = first_shown(&p.on_event(&asked_event(&a), t0, &PREFS));
        p.delivered(&notice, Delivery::NoServer);
        assert!(p
            .held_back(t0, &PREFS)
            .unwrap()
            .contains("No notification server"));
        let b = record("ask_2", Kind::Ask, State::Waiting);
        let t1 = t0 + BURST_WINDOW * 2;
        assert!(shown(&p.on_event(&asked_event(&b), t1, &PREFS)).is_empty());
        p.set_server(Server::Present);
        let effects = p.flush(t1, &PREFS);
        assert_eq!(shown(&effects), [(NoticeKind::Burst, "-")]);
        delivered(&mut p, &effects);
        assert!(p.flush(t1 + HOLD, &PREFS).is_empty());
        // One owed is its own popup, with its buttons.
        let mut q = Popups::default();
        q.set_server(Server::Absent);
        q.on_event(&asked_event(&a), t0, &PREFS);
        q.set_server(Server::Present);
        assert_eq!(shown(&q.flush(t0, &PREFS)), [(NoticeKind::Asked, "ask_1")]);
    }

    #[test]
    fn reminders_back_off_and_stop_for_a_dismissed_session() {
        let t0 = noon();
        let n = Duration::from_secs(10 * 60);
        let prefs = Preferences {
            reminder: Some(n),
            ..PREFS
        };
        let mut p = Popups::default();
        let a = record("ask_1", Kind::Ask, State::Waiting);
        let effects = p.on_event(&asked_event(&a), t0, &prefs);
        delivered(&mut p, &effects);
        let mut t = t0;
        let mut gaps = Vec::new();
        for _ in 0..8 {
            let due = p.next_deadline(t, &prefs).unwrap();
            gaps.push((due - t).as_secs() / 60);
            t = due;
            let effects = p.flush(t, &prefs);
            assert_eq!(shown(&effects), [(NoticeKind::Reminder, "ask_1")]);
        }
        assert_eq!(
            gaps,
            [10, 20, 40, 80, 160, 240, 240, 240],
            "N, 2N, 4N… capped at 4 h"
        );

        // Dismissed: its popup closes and no reminder comes; lf is not involved.
        let effects = p.dismiss("ask_1");
        assert_eq!(closed(&effects), [NoticeKey::Session("ask_1".into())]);
        assert!(p.dismissed("ask_1"));
        let due = p.next_deadline(t, &prefs).unwrap();
        assert!(shown(&p.flush(due, &prefs)).is_empty());
        assert!(
            p.dismiss("ask_1").is_empty(),
            "dismissing twice does nothing"
        );
        // Its next transition counts again.
        let mut r = a.clone();
        r.state = State::Ready;
        let t1 = due + BURST_WINDOW * 2;
        assert_eq!(
            shown(&p.on_event(&ready_event(&r), t1, &prefs)),
            [(NoticeKind::Ready, "ask_1")]
        );
        assert!(!p.dismissed("ask_1"));
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
    fn a_lone_popup_shows_at_once() {
        let t0 = noon();
        let mut p = Popups::default();
        let a = record("ask_1", Kind::Ask, State::Waiting);
        // Out with the event itself: no hold, no deadline left behind.
        let effects = p.on_event(&asked_event(&a), t0, &PREFS);
        assert_eq!(shown(&effects), [(NoticeKind::Asked, "ask_1")]);
        assert_eq!(p.next_deadline(t0, &PREFS), None);
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
        let t0 = noon();
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
        active.set_needs_you(false);
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
        let t0 = noon();
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
        let t0 = noon();
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
        assert_eq!(p.next_deadline(t0, &PREFS), Some(t0 + gap + HOLD));
        let effects = p.flush(t0 + gap + HOLD, &PREFS);
        // One summary, shown in place of the first popup: two popups in all.
        assert_eq!(shown(&effects), [(NoticeKind::Burst, "-")]);
        assert!(closed(&effects).is_empty(), "{effects:?}");
        let Effect::Show(summary) = &effects[0] else {
            panic!("{effects:?}")
        };
        assert_eq!(summary.replaces, Some(NoticeKey::Session("ask_0".into())));
        assert_eq!(summary.summary, "8 sessions wait for you");
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
        assert_eq!(summary.summary, "9 sessions wait for you");
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
        let t0 = noon();
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
        let t0 = noon();
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
    fn a_pause_silences_popups_but_still_closes_them_and_tells_what_waited() {
        let t0 = noon();
        let mut p = Popups::default();
        let a = record("ask_1", Kind::Ask, State::Waiting);
        p.on_event(&asked_event(&a), t0, &PREFS);
        p.pause(PauseFor::Hour, t0);
        assert!(p.paused(t0));
        assert!(p
            .held_back(t0, &PREFS)
            .unwrap()
            .starts_with("Notifications paused until "));
        let b = record("ask_2", Kind::Ask, State::Waiting);
        let c = record("ask_3", Kind::Ask, State::Waiting);
        assert!(shown(&p.on_event(&asked_event(&b), t0 + HOLD, &PREFS)).is_empty());
        assert!(shown(&p.on_event(&asked_event(&c), t0 + HOLD, &PREFS)).is_empty());
        assert!(shown(&p.flush(t0 + HOLD * 3, &PREFS)).is_empty());
        assert_eq!(
            closed(&p.on_event(&resolved_event(&a), t0 + HOLD * 4, &PREFS)),
            [NoticeKey::Session("ask_1".into())]
        );
        // The pause ends by itself at its deadline, with one summary of what waited.
        let end = t0 + Duration::from_secs(3600);
        assert_eq!(p.next_deadline(t0, &PREFS), Some(end));
        let effects = p.flush(end, &PREFS);
        assert!(!p.paused(end));
        assert_eq!(shown(&effects), [(NoticeKind::Burst, "-")]);
        let Effect::Show(summary) = &effects[0] else {
            panic!()
        };
        assert_eq!(summary.summary, "2 sessions wait for you");
        delivered(&mut p, &effects);
        // Told once: nothing more at the next flush, and new ones pop up as usual.
        assert!(shown(&p.flush(end + HOLD, &PREFS)).is_empty());
        let d = record("ask_4", Kind::Ask, State::Waiting);
        let later = end + BURST_WINDOW * 2;
        assert_eq!(
            shown(&p.on_event(&asked_event(&d), later, &PREFS)),
            [(NoticeKind::Asked, "ask_4")]
        );
        // Until I resume: no deadline, and Resume brings the summary back.
        p.pause(PauseFor::Indefinite, later);
        assert_eq!(p.next_deadline(t0, &PREFS), None);
        assert!(p.paused(later + Duration::from_secs(86_400 * 30)));
        p.resume();
        assert!(!p.paused(later));
    }

    #[test]
    fn until_tomorrow_ends_at_eight_local_time() {
        // 2026-12-01 17:30 at UTC+1.
        let unix = 1_796_142_600;
        let t0 = Clock::new(Instant::now(), unix, 3600);
        let mut p = Popups::default();
        p.pause(PauseFor::Tomorrow, t0);
        assert_eq!(
            p.held_back(t0, &PREFS).as_deref(),
            Some("Notifications paused until tomorrow 08:00")
        );
        let end = p.next_deadline(t0, &PREFS).unwrap();
        assert_eq!(end - t0, Duration::from_secs((14 * 60 + 30) * 60));
    }

    #[test]
    fn quiet_hours_cross_midnight_and_end_with_one_summary() {
        // 23:10 UTC, offset 0.
        let unix = 1_796_166_600;
        assert_eq!(unix % 86_400, (23 * 60 + 10) * 60);
        let t0 = Clock::new(Instant::now(), unix, 0);
        let mut p = Popups::default();
        let prefs = Preferences {
            quiet_hours: QuietHours::parse("22:00", "07:00"),
            ..PREFS
        };
        for i in 0..3 {
            let s = record(&format!("ask_{i}"), Kind::Ask, State::Waiting);
            assert!(shown(&p.on_event(&asked_event(&s), t0, &prefs)).is_empty());
        }
        assert_eq!(
            p.held_back(t0, &prefs).as_deref(),
            Some("Quiet hours until tomorrow 07:00")
        );
        let end = p.next_deadline(t0, &prefs).unwrap();
        assert_eq!(end - t0, Duration::from_secs((7 * 60 + 50) * 60));
        let effects = p.flush(end, &prefs);
        assert_eq!(shown(&effects), [(NoticeKind::Burst, "-")]);
        // Outside quiet hours (and with from == to, never quiet) popups show at once.
        let q = QuietHours::parse("22:00", "07:00").unwrap();
        assert!(q.contains(23 * 60) && q.contains(0) && q.contains(6 * 60 + 59));
        assert!(!q.contains(7 * 60) && !q.contains(12 * 60));
        let day = QuietHours::parse("12:00", "13:00").unwrap();
        assert!(day.contains(12 * 60 + 30) && !day.contains(13 * 60));
        assert!(!QuietHours::parse("08:00", "08:00")
            .unwrap()
            .contains(8 * 60));
    }

    #[test]
    fn the_desktops_do_not_disturb_holds_popups_back_like_quiet_hours() {
        let t0 = noon();
        let mut p = Popups::default();
        p.set_server(Server::DoNotDisturb {
            source: "paused",
            on: true,
        });
        let a = record("ask_1", Kind::Ask, State::Waiting);
        assert!(shown(&p.on_event(&asked_event(&a), t0, &PREFS)).is_empty());
        assert_eq!(
            p.held_back(t0, &PREFS).as_deref(),
            Some("The desktop's do-not-disturb is on")
        );
        p.set_server(Server::DoNotDisturb {
            source: "paused",
            on: false,
        });
        assert_eq!(
            shown(&p.flush(t0 + HOLD, &PREFS)),
            [(NoticeKind::Asked, "ask_1")]
        );
    }

    #[test]
    fn settings_turn_kinds_off() {
        let t0 = noon();
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
    fn a_reminder_comes_for_a_session_left_waiting() {
        let t0 = noon();
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
        assert_eq!(p.next_deadline(t0, &prefs), Some(t0 + after));
        assert!(p.flush(t0 + after - HOLD, &prefs).is_empty());
        // Due now, and shown once, at once.
        let effects = p.flush(t0 + after, &prefs);
        assert_eq!(shown(&effects), [(NoticeKind::Reminder, "ask_1")]);
        let Effect::Show(n) = &effects[0] else {
            panic!()
        };
        assert_eq!(n.summary, "Still waiting: Pick a target");
        assert!(n.body.contains("waiting 10 min"), "{}", n.body);
        // The next one only after twice as long.
        assert_eq!(p.next_deadline(t0, &prefs), Some(t0 + after * 3));
        assert!(p.flush(t0 + after * 2, &prefs).is_empty());

        // Reminders are off by default, and sessions found at start count from then on.
        let mut fresh = Popups::default();
        let snapshot = Event::Snapshot {
            at: OffsetDateTime::now_utc(),
            sessions: vec![a.clone()],
        };
        fresh.on_event(&snapshot, t0, &PREFS);
        assert_eq!(fresh.next_deadline(t0, &PREFS), None);
        assert_eq!(fresh.next_deadline(t0, &prefs), Some(t0 + after));
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
    fn an_attached_session_pops_up_only_after_the_grace() {
        let t0 = noon();
        let grace = PREFS.attached_grace;
        let mut p = Popups::default();
        let attached = record_d("S-1", State::Active, true);
        p.on_event(&asked_event(&attached), t0, &PREFS);
        assert!(p.flush(t0 + HOLD, &PREFS).is_empty());
        assert_eq!(p.next_deadline(t0, &PREFS), Some(t0 + grace));
        assert!(p.flush(t0 + grace - HOLD, &PREFS).is_empty());
        assert_eq!(
            shown(&p.flush(t0 + grace, &PREFS)),
            [(NoticeKind::Asked, "S-1")]
        );
        assert_eq!(p.next_deadline(t0, &PREFS), None);

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
        let t0 = noon();
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
        assert_eq!(p.next_deadline(t0, &PREFS), None);
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
        let t0 = noon();
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
        ask.set_needs_you(true);
        let t2 = t1 + BURST_WINDOW * 2;
        assert_eq!(
            shown(&p.on_event(&asked_event(&ask), t2, &PREFS)),
            [(NoticeKind::Asked, "ask_1")]
        );
    }

    #[test]
    fn leaving_the_terminal_during_the_grace_pops_up_at_once() {
        let t0 = noon();
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
    fn a_pause_drops_a_deferred_popup() {
        let t0 = noon();
        let mut p = Popups::default();
        p.on_event(
            &asked_event(&record_d("S-1", State::Active, true)),
            t0,
            &PREFS,
        );
        p.pause(PauseFor::Hour, t0);
        p.resume();
        assert_eq!(p.next_deadline(t0, &PREFS), None);
        assert!(p.flush(t0 + PREFS.attached_grace, &PREFS).is_empty());
    }

    #[test]
    fn a_failed_click_shows_through_a_pause_and_goes_when_a_click_gets_there() {
        let t0 = noon();
        let mut p = Popups::default();
        let r = record("ask_1", Kind::Ask, State::Waiting);
        let failed = crate::notice::launch_failed(&r, "No terminal found", "lf session open ask_1");
        // Nothing to close before anything failed.
        assert!(p.click_reached().is_empty());
        p.pause(PauseFor::Indefinite, t0);
        let effects = p.click_failed(failed.clone());
        assert_eq!(shown(&effects), [(NoticeKind::Error, "-")]);
        // A second failure replaces the first (same key); one opened terminal closes it.
        assert_eq!(p.click_failed(failed.clone()).len(), 1);
        assert_eq!(p.click_reached(), [Effect::Close(NoticeKey::Error)]);
        assert!(p.click_reached().is_empty(), "closed once");
        // Without a server nothing is owed for later.
        p.set_server(Server::Absent);
        assert!(p.click_failed(failed).is_empty());
        p.set_server(Server::Present);
        p.resume();
        assert!(shown(&p.flush(t0 + HOLD, &PREFS)).is_empty());
        assert!(p.click_reached().is_empty());
    }

    #[test]
    fn a_popup_the_server_let_expire_stays_unseen_for_the_next_summary() {
        let t0 = noon();
        let mut p = Popups::default();
        let a = record("ask_1", Kind::Ask, State::Waiting);
        let effects = p.on_event(&asked_event(&a), t0, &PREFS);
        delivered(&mut p, &effects);
        assert!(!p.unseen("ask_1"));
        p.expired("ask_1");
        assert!(p.unseen("ask_1"));
        assert!(p.take_history().is_some(), "remembered across a restart");
        // Not shown again at once: the server would only take it down again.
        assert!(shown(&p.flush(t0 + HOLD, &PREFS)).is_empty());
        // A restart (or a resume, or the end of do-not-disturb) tells it again.
        let mut after = restarted(&mut p);
        let t1 = t0 + Duration::from_secs(60);
        assert_eq!(
            shown(&after.on_event(&snapshot(std::slice::from_ref(&a)), t1, &PREFS)),
            [(NoticeKind::Asked, "ask_1")]
        );
        // A session that no longer waits, or one dismissed, is not made unseen.
        let mut q = Popups::default();
        q.expired("ask_9");
        assert!(!q.unseen("ask_9"));
        let effects = q.on_event(&asked_event(&a), t0, &PREFS);
        delivered(&mut q, &effects);
        q.dismiss("ask_1");
        q.expired("ask_1");
        assert!(!q.unseen("ask_1"));
        // A popup naming it again takes the mark away, and says so.
        let mut r = Popups::default();
        let effects = r.on_event(&asked_event(&a), t0, &PREFS);
        delivered(&mut r, &effects);
        r.expired("ask_1");
        let mut ready_now = a.clone();
        ready_now.state = State::Ready;
        let t2 = t0 + BURST_WINDOW * 2;
        let effects = r.on_event(&ready_event(&ready_now), t2, &PREFS);
        let notice = first_shown(&effects);
        assert!(r.unseen("ask_1"), "not until the server took it");
        assert!(r.delivered(&notice, Delivery::Shown));
        assert!(!r.unseen("ask_1"));
    }

    #[test]
    fn a_turn_handed_to_the_terminal_the_person_looks_at_does_not_pop_up() {
        let mut p = Popups::default();
        let t0 = noon();
        let prefs = Preferences {
            attached_grace: Duration::ZERO,
            ..PREFS
        };
        let r = record_d("S-1", State::Active, true);
        p.set_focus([(&r, Focus::Looking)]);
        assert!(shown(&p.on_event(&asked_event(&r), t0, &prefs)).is_empty());
        assert!(shown(&p.flush(t0 + Duration::from_secs(60), &prefs)).is_empty());
        // Looking elsewhere, the next turn pops up at once.
        let other = record_d("S-2", State::Active, true);
        p.set_focus([(&other, Focus::Elsewhere)]);
        assert_eq!(
            shown(&p.on_event(&asked_event(&other), t0, &prefs)).len(),
            1
        );
    }

    #[test]
    fn the_attached_grace_is_only_for_where_focus_cannot_be_known() {
        let t0 = noon();
        let mut p = Popups::default();
        // The desktop says the person looks elsewhere: at once, with the default grace.
        let r = record_d("S-1", State::Active, true);
        p.set_focus([(&r, Focus::Elsewhere)]);
        assert_eq!(
            shown(&p.on_event(&asked_event(&r), t0, &PREFS)),
            [(NoticeKind::Asked, "S-1")]
        );
        // It cannot say: the grace.
        let other = record_d("S-2", State::Active, true);
        p.set_focus([(&other, Focus::Unknown)]);
        assert!(shown(&p.on_event(&asked_event(&other), t0, &PREFS)).is_empty());
        assert!(shown(&p.flush(t0 + HOLD, &PREFS)).is_empty());
        assert_eq!(p.next_deadline(t0, &PREFS), Some(t0 + PREFS.attached_grace));
    }

    #[test]
    fn the_no_tray_popup_shows_through_quiet_and_goes_when_a_tray_comes() {
        let t0 = noon();
        let mut p = Popups::default();
        assert!(p.tray_came().is_empty(), "nothing to take back");
        p.pause(PauseFor::Indefinite, t0);
        let notice = crate::notice::no_tray("GNOME");
        assert_eq!(p.no_tray(notice.clone()), [Effect::Show(notice.clone())]);
        assert_eq!(p.tray_came(), [Effect::Close(NoticeKey::NoTray)]);
        assert!(p.tray_came().is_empty(), "closed once");
        p.set_server(Server::Absent);
        assert!(
            p.no_tray(notice).is_empty(),
            "nothing owed without a server"
        );
    }
}
