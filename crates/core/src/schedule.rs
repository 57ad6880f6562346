//! When `lf session list` runs: the engine's clock for lf, kept apart from everything that
//! does I/O so that it can be tested with time passed in.
//!
//! A list runs when lf's database was written by someone else (debounced), when one of
//! lf's own readers says the store's sessions moved, when lf's quiet deadline may have
//! turned a session to Waiting without any write, when someone asks (an action, a new
//! generation), and on a slow safety timer. Never because of the tray's own lf runs: every
//! lf of generation C and later records a Process row, so a write that lands while one of
//! them runs, or just after, is the tray's own and ignored; re-listing on it would wake
//! the tray again and again.
//!
//! Except one case: a write that lands while the tray's own list runs may be someone
//! else's, committed after that lf read the sessions, and inotify does not say whose it
//! is. When such a list found something new, or ran for someone else's write (someone is
//! writing now: an agent's lf that saved its status and then asks), one more list follows
//! it a moment later ([`DOUBT_RECHECK`]); a follow-up list that found nothing new ends the
//! chain, so the lists' own writes still never wake the tray for ever.
//!
//! Where lf keeps `store_revisions` (D and later) none of that guessing is needed: the
//! revisions read just before each list are what that list shows at least, and a write is
//! checked, once debounced, against them. A list follows only when a domain that may
//! change the list moved ([`Revisions::moved_for_sessions`]): the tray's own runs move
//! only `processes`, so they never wake it, and a write by someone else is never taken
//! for the tray's own, whenever it lands. Where a reading fails, today's rule applies
//! until one succeeds again.

use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use crate::lf::Revisions;

/// Size and modification time of lf's database and its WAL: what tells a write made
/// after the tray's own lf ended from that lf's own late-delivered write.
pub(crate) type Stamp = [Option<(u64, SystemTime)>; 2];

/// Quiet time after a database change before `lf` runs. One SQLite transaction touches
/// the database and its WAL in a burst of a few milliseconds; waiting 100 ms turns a burst
/// into one `lf` run and still shows a change well within a second.
pub const DEBOUNCE: Duration = Duration::from_millis(100);
/// A stream of writes (an agent saving its activity) is not allowed to postpone the list
/// forever: 250 ms after the first write of a burst it runs anyway, as lf's own reader does.
pub const DEBOUNCE_MAX: Duration = Duration::from_millis(250);
/// Writes reported this soon after one of the tray's own lf runs ended may still be its
/// own: inotify delivers lf's last write (and SQLite removing the WAL as its last
/// connection closes) on another thread than the one that sees lf exit, so they may
/// arrive a little later. Within this window a write counts as someone else's only if
/// the database files changed since the tray's lf ended (the engine compares their size
/// and time); a quarter second covers the delivery delay with a wide margin.
pub const SELF_GRACE: Duration = Duration::from_millis(250);
/// When the list that follows a list for a write that came while it ran starts: not at
/// once. Whoever wrote (an agent, the person answering the tray) acts again right after the
/// tray reacted, within a second; a list right then would often be running as that next
/// write lands and miss it the same way. A second later the burst is over, and an ask the
/// list before missed is told a second late rather than at the safety list.
pub const DOUBT_RECHECK: Duration = Duration::from_secs(1);
/// The longest chain of lists that follow a list for a write that came while it ran.
/// Each link needs the list before it to have found something new, which a burst of one
/// writer (a session created, set working, asking: three commits) gives three times; a
/// writer that goes on longer is followed by its own next writes, and a field lf might
/// compute at each read cannot keep the tray listing.
pub const DOUBT_CHAIN: u32 = 4;

/// Why a list is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// Someone else wrote lf's database, or lf's reader saw the sessions move.
    Changed,
    /// lf's quiet deadline for the last change passed.
    Quiet,
    /// Nothing else ran a list for a safety interval.
    Safety,
    /// Asked for directly (an action, a new lf, the first list).
    Asked,
}

#[derive(Debug)]
pub struct Schedule {
    safety: Duration,
    /// How long after a change lf's quiet rule may have turned a session Waiting without a
    /// write ([`crate::Dialect::quiet_recheck`]); `None` where lf has no quiet rule.
    quiet: Option<Duration>,
    /// A list is running; `again` asks for one more when it ends.
    running: bool,
    again: bool,
    /// A write came while the running list ran (it may be someone else's, after lf read).
    doubt: bool,
    /// The running list runs for someone else's write.
    for_write: bool,
    /// How many lists in a row followed one for such a write.
    chain: u32,
    due: Option<Instant>,
    burst_started: Option<Instant>,
    /// How many of the tray's own lf processes run now, and until when the writes of the
    /// last one to end still count as its own.
    own: usize,
    own_until: Option<Instant>,
    /// How lf's database files looked when the last of them ended (or the first list
    /// started): a write that leaves them so is that lf's own, delivered late.
    own_left: Stamp,
    /// How many of those are not lists (lf's process list), and whether a write came
    /// while one ran: it may be someone else's, as during a list.
    aside: usize,
    aside_doubt: bool,
    quiet_due: Option<Instant>,
    /// The latest change seen while `quiet_due` was pending: its own deadline follows.
    quiet_next: Option<Instant>,
    safety_due: Instant,
    /// lf's revisions as read just before the last list started: what it shows at least.
    /// `None` where lf keeps none, or the reading failed: then writes are judged by who
    /// may have made them, as above.
    shown: Option<Revisions>,
    /// When to read the revisions again, for the writes seen since (debounced as lists
    /// are), and when the first of those came.
    check_due: Option<Instant>,
    check_burst: Option<Instant>,
    /// Database writes ignored as the tray's own (or, where revisions are known, checked
    /// and found to move nothing lf lists), for the status and the benchmark.
    pub ignored: u64,
}

impl Schedule {
    pub fn new(now: Instant, safety: Duration, quiet: Option<Duration>) -> Schedule {
        Schedule {
            safety,
            quiet,
            running: false,
            again: false,
            doubt: false,
            for_write: false,
            chain: 0,
            due: None,
            burst_started: None,
            own: 0,
            aside: 0,
            aside_doubt: false,
            own_until: None,
            own_left: Stamp::default(),
            quiet_due: None,
            quiet_next: None,
            safety_due: now + safety,
            shown: None,
            check_due: None,
            check_burst: None,
            ignored: 0,
        }
    }

    /// The quiet rule of the lf in use changed (a new lf was detected).
    pub fn set_quiet(&mut self, quiet: Option<Duration>) {
        self.quiet = quiet;
        if quiet.is_none() {
            self.quiet_due = None;
            self.quiet_next = None;
        }
    }

    /// lf's database was written, and its files look as `db` says. Returns false when the
    /// write is taken for the tray's own (an lf it runs now, or one that just ended and
    /// left the files as they are) and nothing is scheduled.
    ///
    /// Where the last list's revisions are known, no write is taken for anyone's: the
    /// revisions are read again once the burst settled ([`Schedule::take_check`]), and
    /// [`Schedule::checked`] decides.
    pub fn written(&mut self, now: Instant, db: Stamp) -> bool {
        if self.shown.is_some() {
            let first = *self.check_burst.get_or_insert(now);
            self.check_due = Some((now + DEBOUNCE).min(first + DEBOUNCE_MAX));
            return true;
        }
        let moved = db != self.own_left;
        let late_own = self.own_until.is_some_and(|until| now < until) && !moved;
        if self.own > 0 || late_own {
            self.ignored += 1;
            self.doubt |= self.running;
            self.aside_doubt |= self.aside > 0;
            return false;
        }
        // Someone else's for sure: the lists after it start a chain of their own.
        self.chain = 0;
        self.changed(now);
        true
    }

    /// The store's sessions changed (a write by someone else, or lf's reader says so):
    /// list after the debounce, and again after lf's quiet deadline for this change.
    pub fn changed(&mut self, now: Instant) {
        let first = *self.burst_started.get_or_insert(now);
        self.due = Some((now + DEBOUNCE).min(first + DEBOUNCE_MAX));
        if let Some(quiet) = self.quiet {
            // The earliest deadline stays; a later change's deadline waits behind it and
            // is never allowed to postpone it.
            match self.quiet_due {
                None => self.quiet_due = Some(now + quiet),
                Some(_) => self.quiet_next = Some(now + quiet),
            }
        }
    }

    /// The list about to start shows at least what lf's revisions say now (`None`: lf
    /// keeps none, or they could not be read).
    pub fn showing(&mut self, reading: Option<Revisions>) {
        self.shown = reading;
        if self.shown.is_none() {
            self.check_due = None;
            self.check_burst = None;
        }
    }

    /// Whether it is time to read lf's revisions for the writes seen (once per burst).
    pub fn take_check(&mut self, now: Instant) -> bool {
        let due = self.check_due.is_some_and(|due| now >= due);
        if due {
            self.check_due = None;
            self.check_burst = None;
        }
        due
    }

    /// What lf's revisions said after writes (`None`: the reading failed). Returns whether
    /// a list is due for them: a domain that may change the list moved since the last
    /// list's reading, or nothing can tell. The writes were debounced already, so it is
    /// due now, and lf's quiet deadline for this change is armed.
    pub fn checked(&mut self, now: Instant, reading: Option<Revisions>) -> bool {
        if let (Some(shown), Some(reading)) = (&self.shown, &reading) {
            if !reading.moved_for_sessions(shown) {
                self.ignored += 1;
                return false;
            }
        }
        self.changed(now);
        self.due = Some(now);
        true
    }

    /// List as soon as possible.
    pub fn ask(&mut self, now: Instant) {
        self.due = Some(now);
    }

    /// One of the tray's own lf processes started (an action, a reader starting up).
    pub fn own_started(&mut self) {
        self.own += 1;
    }

    /// One that was to start never did (lf could not be spawned): it writes nothing, so
    /// no grace follows it.
    pub fn own_abandoned(&mut self) {
        self.own = self.own.saturating_sub(1);
    }

    /// One of them ended, leaving lf's database files as `db` says.
    pub fn own_ended(&mut self, now: Instant, db: Stamp) {
        self.own = self.own.saturating_sub(1);
        self.own_until = Some(now + SELF_GRACE);
        self.own_left = db;
    }

    /// One of the tray's own lf runs that is not a list starts (lf's process list, for a
    /// new agent): its own write comes while it runs, and so may someone else's.
    pub fn aside_started(&mut self) {
        self.own_started();
        self.aside += 1;
    }

    /// That run ended. A write that came while it ran is checked by a list a moment later
    /// ([`DOUBT_RECHECK`]), unless one is due sooner: the list that found the new agent
    /// is followed by one anyway, which then serves for both.
    pub fn aside_ended(&mut self, now: Instant, db: Stamp) {
        self.own_ended(now, db);
        self.aside = self.aside.saturating_sub(1);
        if std::mem::take(&mut self.aside_doubt) {
            self.recheck(now);
        }
    }

    /// The tray's first list starts, with lf's database files as `db` says.
    pub fn first_started(&mut self, db: Stamp) {
        self.own_started();
        self.own_left = db;
    }

    /// The tray's first list ended, leaving lf's database files as `db` says. If they moved
    /// while it ran: that list wrote its own Process row, and someone else may have
    /// committed after it read the sessions: nothing tells the two apart, and nothing was
    /// seen before to compare with, so a list follows a moment later ([`DOUBT_RECHECK`]).
    /// One lf run per start, where an ask written then would otherwise wait for the safety
    /// list.
    ///
    /// Where the revisions it shows are known, the writes are checked against them instead.
    pub fn first_ended(&mut self, now: Instant, db: Stamp) {
        let moved = db != self.own_left && self.shown.is_none();
        self.own_ended(now, db);
        if moved {
            self.recheck(now);
        }
    }

    /// A list a moment from now ([`DOUBT_RECHECK`]), unless one is due sooner already.
    fn recheck(&mut self, now: Instant) {
        let at = now + DOUBT_RECHECK;
        self.due = Some(self.due.map_or(at, |due| due.min(at)));
    }

    /// When [`Schedule::poll`] has something to do.
    pub fn deadline(&self) -> Option<Instant> {
        let due = if self.running { None } else { self.due };
        [due, self.check_due, self.quiet_due, Some(self.safety_due)]
            .into_iter()
            .flatten()
            .min()
    }

    /// Whether a list should start now, and why. A list that is due while one runs is
    /// folded into one more run after it.
    pub fn poll(&mut self, now: Instant) -> Option<Why> {
        let mut why = None;
        if self.due.is_some_and(|due| now >= due) {
            why = Some(if self.burst_started.is_some() {
                Why::Changed
            } else {
                Why::Asked
            });
            self.due = None;
            self.burst_started = None;
        }
        if self.quiet_due.is_some_and(|due| now >= due) {
            why = why.or(Some(Why::Quiet));
            self.quiet_due = self.quiet_next.take().filter(|next| *next > now);
        }
        if now >= self.safety_due {
            why = why.or(Some(Why::Safety));
            self.safety_due = now + self.safety;
        }
        let why = why?;
        if self.running {
            self.again = true;
            return None;
        }
        self.start(now);
        self.for_write = why == Why::Changed;
        Some(why)
    }

    fn start(&mut self, now: Instant) {
        self.running = true;
        self.own += 1;
        // Its revisions are read before it starts: every write seen so far is in them.
        self.check_due = None;
        self.check_burst = None;
        // A list is the safety read: the next one is a full interval away.
        self.safety_due = now + self.safety;
    }

    /// The list ended; `found` says whether it found anything new. Returns true when
    /// another one must start right away (something asked for it while this one ran).
    /// A write that came while it ran, from a list that found something new, lists once
    /// more a moment later ([`DOUBT_RECHECK`]).
    pub fn finished(&mut self, now: Instant, found: bool, db: Stamp) -> bool {
        self.running = false;
        self.own_ended(now, db);
        let doubt = std::mem::take(&mut self.doubt);
        let for_write = std::mem::take(&mut self.for_write);
        if std::mem::take(&mut self.again) {
            self.chain = 0;
            self.start(now);
            // What asked for it during this list was someone else's write, or a deadline.
            self.for_write = true;
            return true;
        }
        if doubt && (found || for_write) && self.chain < DOUBT_CHAIN {
            self.chain += 1;
            // A write by someone else may have asked for a list sooner already.
            self.recheck(now);
        } else {
            self.chain = 0;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAFETY: Duration = Duration::from_secs(60);
    const MS: Duration = Duration::from_millis(1);
    /// lf's database files as the tray's own last lf left them, and moved since.
    const SAME: Stamp = [None, None];
    const MOVED: Stamp = [Some((4096, std::time::UNIX_EPOCH)), None];

    /// The re-check of lf's quiet rule, as D and E have it (121 s).
    fn quiet() -> Option<Duration> {
        crate::Dialect::of(crate::Generation::D).quiet_recheck()
    }

    fn at(start: Instant, ms: u64) -> Instant {
        start + Duration::from_millis(ms)
    }

    /// Drive the schedule like the engine does: wake at each deadline up to `until`,
    /// start a list when told, and let each list take `list_ms` and write the database
    /// while it runs (as every lf of C and later does). Returns when lists started.
    fn replay(s: &mut Schedule, start: Instant, until: Instant, list_ms: u64) -> Vec<Instant> {
        let mut started = Vec::new();
        let mut ends: Option<Instant> = None;
        let mut now = start;
        while now < until {
            let next = [s.deadline(), ends].into_iter().flatten().min();
            let Some(next) = next.filter(|n| *n <= until) else {
                break;
            };
            now = next.max(now);
            if ends.is_some_and(|e| now >= e) {
                ends = None;
                // lf's own write lands just after it exited, seen by the watcher.
                assert!(s.finished(now, false, SAME) || !s.running);
                s.written(now + 5 * MS, SAME);
                if s.running {
                    started.push(now);
                    ends = Some(now + Duration::from_millis(list_ms));
                }
                continue;
            }
            if s.poll(now).is_some() {
                started.push(now);
                // Its Process row is written right away, while it runs.
                s.written(now + MS, MOVED);
                ends = Some(now + Duration::from_millis(list_ms));
            }
        }
        started
    }

    #[test]
    fn the_trays_own_lf_runs_never_cause_another() {
        let start = Instant::now();
        let mut s = Schedule::new(start, SAFETY, quiet());
        s.changed(start);
        let ten_minutes = start + Duration::from_secs(600);
        let lists = replay(&mut s, start, ten_minutes, 300);
        // The change: one list after the debounce, one a second after it ended (someone
        // was writing while it ran), and one at its quiet deadline; besides those only the
        // safety list, a minute after the last list started. None of the lists' own writes
        // caused another.
        let secs = |s: f64| start + Duration::from_secs_f64(s);
        let mut expected = vec![secs(0.1), secs(1.4), secs(61.4), secs(121.0)];
        expected.extend((1..=7).map(|n| secs(121.0 + 60.0 * f64::from(n))));
        assert_eq!(lists, expected);
        assert!(
            s.ignored >= lists.len() as u64,
            "each list's writes were ignored"
        );
    }

    #[test]
    fn bursts_are_debounced_but_never_postponed_forever() {
        let start = Instant::now();
        let mut s = Schedule::new(start, SAFETY, None);
        // Writes every 50 ms: the list still starts 250 ms after the first.
        for ms in (0..=400).step_by(50) {
            s.written(at(start, ms), MOVED);
            if ms == 200 {
                assert_eq!(s.poll(at(start, 200)), None);
            }
        }
        let mut s = Schedule::new(start, SAFETY, None);
        for ms in (0..=300).step_by(50) {
            s.written(at(start, ms), MOVED);
            if s.poll(at(start, ms)).is_some() {
                assert_eq!(ms, 250);
                return;
            }
        }
        panic!("never listed");
    }

    #[test]
    fn writes_during_and_just_after_own_runs_are_ignored() {
        let start = Instant::now();
        let mut s = Schedule::new(start, SAFETY, quiet());
        s.own_started();
        assert!(!s.written(at(start, 10), MOVED), "while it runs");
        s.own_ended(at(start, 20), SAME);
        assert!(!s.written(at(start, 200), SAME), "delivered late");
        assert_eq!(s.deadline(), Some(start + SAFETY), "nothing scheduled");
        assert!(
            s.written(at(start, 30), MOVED),
            "the files moved after it ended: someone else"
        );
        assert_eq!(s.poll(at(start, 130)), Some(Why::Changed));
        let mut s = Schedule::new(start, SAFETY, None);
        s.own_started();
        s.own_ended(at(start, 20), SAME);
        assert!(s.written(at(start, 20 + 250), SAME), "after the grace");
    }

    #[test]
    fn the_quiet_deadline_is_the_earliest_and_each_change_gets_one() {
        let start = Instant::now();
        let q = Duration::from_secs(10);
        let mut s = Schedule::new(start, Duration::from_secs(3600), Some(q));
        s.changed(start);
        assert_eq!(s.poll(at(start, 100)), Some(Why::Changed));
        assert!(!s.finished(at(start, 150), false, SAME));
        // A second change 4 s later does not postpone the first deadline...
        s.changed(at(start, 4000));
        assert_eq!(s.poll(at(start, 4100)), Some(Why::Changed));
        s.finished(at(start, 4150), false, SAME);
        assert_eq!(s.deadline(), Some(start + q));
        assert_eq!(s.poll(start + q), Some(Why::Quiet));
        s.finished(start + q + MS, false, SAME);
        // ...and gets its own, 10 s after it.
        assert_eq!(s.deadline(), Some(at(start, 14_000)));
        assert_eq!(s.poll(at(start, 14_000)), Some(Why::Quiet));
        s.finished(at(start, 14_001), false, SAME);
        assert_eq!(
            s.deadline(),
            Some(at(start, 14_000) + Duration::from_secs(3600))
        );
        // Without a quiet rule (before D) there is no re-check.
        let mut s = Schedule::new(start, SAFETY, None);
        s.changed(start);
        s.poll(at(start, 100));
        s.finished(at(start, 200), false, SAME);
        assert_eq!(s.deadline(), Some(at(start, 100) + SAFETY));
    }

    #[test]
    fn a_list_asked_for_while_one_runs_follows_it_once() {
        let start = Instant::now();
        let mut s = Schedule::new(start, SAFETY, None);
        s.ask(start);
        assert_eq!(s.poll(start), Some(Why::Asked));
        s.ask(at(start, 10));
        s.ask(at(start, 20));
        assert_eq!(s.poll(at(start, 20)), None, "folded into one more");
        assert!(
            s.finished(at(start, 300), false, SAME),
            "the one more starts at once"
        );
        assert!(!s.finished(at(start, 600), false, SAME));
        assert!(!s.running);
    }

    #[test]
    fn the_safety_list_comes_once_per_interval_of_nothing() {
        let start = Instant::now();
        let mut s = Schedule::new(start, SAFETY, None);
        assert_eq!(s.deadline(), Some(start + SAFETY));
        assert_eq!(s.poll(start + SAFETY), Some(Why::Safety));
        s.finished(start + SAFETY + 300 * MS, false, SAME);
        assert_eq!(s.deadline(), Some(start + SAFETY + SAFETY));
    }

    #[test]
    fn where_revisions_are_known_a_write_is_checked_not_guessed() {
        let start = Instant::now();
        let shown = Revisions::of([("sessions", 1), ("processes", 1)]);
        let own = Revisions::of([("sessions", 1), ("processes", 3)]);
        let asked = Revisions::of([("sessions", 2), ("processes", 4)]);
        let mut s = Schedule::new(start, SAFETY, quiet());
        s.ask(start);
        assert_eq!(s.poll(start), Some(Why::Asked));
        s.showing(Some(shown));
        // Written while the list runs: not taken for its own, but checked once settled.
        assert!(s.written(at(start, 10), MOVED));
        assert!(!s.take_check(at(start, 109)));
        assert!(s.take_check(at(start, 110)));
        assert!(!s.checked(at(start, 110), Some(own)), "its own Process row");
        assert!(!s.finished(at(start, 300), false, SAME));
        // Its late write, files as it left them, is checked too: someone else's ask.
        assert!(s.written(at(start, 310), SAME));
        assert_eq!(s.deadline(), Some(at(start, 410)));
        assert!(s.take_check(at(start, 410)));
        assert!(s.checked(at(start, 410), Some(asked)));
        assert_eq!(
            s.poll(at(start, 410)),
            Some(Why::Changed),
            "no second debounce"
        );
        s.finished(at(start, 600), false, SAME);
        assert_eq!(s.quiet_due, Some(at(start, 410) + quiet().unwrap()));
        // A reading that failed cannot say: it lists.
        assert!(s.checked(at(start, 1000), None));
        assert_eq!(s.poll(at(start, 1000)), Some(Why::Changed));
    }
}
