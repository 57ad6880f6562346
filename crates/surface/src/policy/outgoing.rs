//! What goes out, and when: deferred popups whose grace ran out, reminders, the summary
//! of what waited unseen, and held popups shown one by one or folded into a burst.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use lf_tray_core::history::{self, Pause};
use lf_tray_core::{SessionRecord, State};

use super::{
    gap, Burst, Clock, Deferred, Effect, Held, Popups, Preferences, BURST_THRESHOLD, BURST_WINDOW,
    HOLD,
};
use crate::notice::{asked, burst, ready, reminder, Notice, NoticeKey};

impl Popups {
    /// Release held popups (folding a burst), tell what waited unseen, give due reminders.
    pub fn flush(&mut self, now: Clock, prefs: &Preferences) -> Vec<Effect> {
        self.observe(now);
        if matches!(self.history.pause(), Some(Pause::Until(_))) && !self.paused(now) {
            self.history.set_pause(None);
        }
        let quiet = self.quiet(now, prefs);
        if self.was_quiet && !quiet {
            self.catch_up = true;
        }
        self.was_quiet = quiet;
        let may_show = self.may_show(now, prefs);
        let mut effects = Vec::new();
        self.release_deferred(now, prefs);
        if let Some(first) = prefs.reminder {
            self.remind(first, now, may_show);
        }
        if may_show && std::mem::take(&mut self.catch_up) {
            self.tell_unseen(now, prefs, &mut effects);
        }
        if !may_show {
            // They stay owed (their marks are unshown) and are told when popups return.
            self.held.clear();
            return effects;
        }
        if !self.held.iter().any(|h| now.at >= h.due) {
            return effects;
        }
        let batch = std::mem::take(&mut self.held);
        self.show_held(batch, now, &mut effects);
        effects
    }

    /// Deferred popups whose grace ran out, released.
    fn release_deferred(&mut self, now: Clock, prefs: &Preferences) {
        let due: Vec<String> = self
            .deferred
            .iter()
            .filter(|(_, d)| now.at >= d.due)
            .map(|(key, _)| key.clone())
            .collect();
        for key in due {
            if let Some(d) = self.deferred.remove(&key) {
                // It waited out the grace already; holding it again would only delay it.
                self.release(d.notice, &d.record, now, prefs);
            }
        }
    }

    /// Reminders due (the first after `first`, then further apart), held to be shown.
    fn remind(&mut self, first: Duration, now: Clock, may_show: bool) {
        let mut due = Vec::new();
        for (key, w) in &mut self.waiting {
            if now.at < w.last + gap(first, w.reminded) {
                continue;
            }
            w.reminded += 1;
            w.last = now.at;
            let mark = self.history.mark(key);
            let told_off = mark.is_some_and(|m| m.dismissed);
            // A reminder due while quiet is skipped, not saved up.
            if may_show && !told_off {
                let since = mark.map_or(now.unix_at(w.last), |m| m.since);
                let waited = (now.unix() - since).max(0) as u64;
                due.push((
                    reminder(&w.record, Duration::from_secs(waited)),
                    w.record.clone(),
                ));
            }
        }
        for (notice, record) in due {
            self.hold(notice, &record, now.at);
        }
    }

    /// Show a batch of held popups: each on its own, or, when they come too many too fast,
    /// folded into one burst summary.
    fn show_held(&mut self, batch: Vec<Held>, now: Clock, effects: &mut Vec<Effect>) {
        while self
            .lately
            .front()
            .is_some_and(|(at, _)| now.at.duration_since(*at) > BURST_WINDOW)
        {
            self.lately.pop_front();
        }
        let burst_live = self.burst_live(now.at);
        if burst_live || self.lately.len() + batch.len() >= BURST_THRESHOLD {
            let mut burst = self.burst.take().filter(|_| burst_live).unwrap_or(Burst {
                last: now.at,
                members: BTreeSet::new(),
            });
            // A new summary takes the place of the burst's first popup; the others close.
            let mut replaces = None;
            for (_, record) in self.lately.drain(..) {
                let key = NoticeKey::Session(history::key(&record));
                if !burst_live && replaces.is_none() {
                    replaces = Some(key);
                } else {
                    effects.push(Effect::Close(key));
                }
                burst.members.insert(history::key(&record));
            }
            for held in batch {
                burst.members.insert(history::key(&held.record));
            }
            burst.last = now.at;
            let members: Vec<String> = burst.members.iter().cloned().collect();
            self.burst = Some(burst);
            if let Some(notice) = self.summary(&members, now) {
                self.show(Notice { replaces, ..notice }, &members, effects);
            }
        } else {
            for held in batch {
                self.lately.push_back((now.at, held.record.clone()));
                self.show(held.notice, &[history::key(&held.record)], effects);
            }
        }
    }

    /// What waits on the person and was never shown (nor dismissed), oldest first: one
    /// popup of its own when it is one session, else one summary.
    fn tell_unseen(&mut self, now: Clock, prefs: &Preferences, effects: &mut Vec<Effect>) {
        let mut unseen: Vec<(&String, i64)> = self
            .waiting
            .iter()
            .filter(|(key, w)| {
                let wanted = if w.record.state == State::Ready {
                    prefs.on_ready
                } else {
                    prefs.on_ask
                };
                wanted
                    && !self.in_flight.contains(*key)
                    && !self.deferred.contains_key(*key)
                    && !self.held.iter().any(|h| history::key(&h.record) == **key)
                    && self
                        .history
                        .mark(key)
                        .is_some_and(|m| !m.shown && !m.dismissed)
            })
            .map(|(key, _)| (key, self.history.mark(key).map_or(0, |m| m.since)))
            .collect();
        unseen.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(b.0)));
        let keys: Vec<String> = unseen.into_iter().map(|(key, _)| key.clone()).collect();
        match keys.as_slice() {
            [] => {}
            [one] => {
                let record = self.waiting[one].record.clone();
                let notice = if record.state == State::Ready {
                    ready(&record)
                } else {
                    asked(&record)
                };
                self.queue(notice, &record, now.at);
            }
            many => {
                self.burst = Some(Burst {
                    last: now.at,
                    members: many.iter().cloned().collect(),
                });
                if let Some(notice) = self.summary(many, now) {
                    self.show(notice, many, effects);
                }
            }
        }
    }

    /// One popup for many sessions, oldest first, each with how long it waited.
    fn summary(&self, keys: &[String], now: Clock) -> Option<Notice> {
        let unix = now.unix();
        let mut members: Vec<(&SessionRecord, i64)> = keys
            .iter()
            .filter_map(|key| {
                let w = self.waiting.get(key)?;
                let since = self.history.mark(key).map_or(unix, |m| m.since);
                Some((&w.record, unix - since))
            })
            .collect();
        members.sort_by_key(|m| std::cmp::Reverse(m.1));
        (!members.is_empty()).then(|| burst(&members))
    }

    /// Hand a popup to the server, as standing for these sessions' current transitions.
    fn show(&mut self, mut notice: Notice, keys: &[String], effects: &mut Vec<Effect>) {
        notice.covers = keys
            .iter()
            .filter_map(|key| {
                let mark = self.history.mark(key)?;
                Some((key.clone(), mark.transition.clone()))
            })
            .collect();
        for (key, _) in &notice.covers {
            self.in_flight.insert(key.clone());
        }
        effects.push(Effect::Show(notice));
    }

    /// Whether the burst summary on screen still takes new popups.
    fn burst_live(&self, now: Instant) -> bool {
        self.burst
            .as_ref()
            .is_some_and(|b| now.duration_since(b.last) <= BURST_WINDOW)
    }

    /// Show at once when nothing else is on its way or just went out; else hold it with
    /// the rest of the burst.
    pub(super) fn hold(&mut self, notice: Notice, record: &SessionRecord, now: Instant) {
        let lately = self
            .lately
            .back()
            .is_some_and(|(at, _)| now.duration_since(*at) <= BURST_WINDOW);
        let burst_live = self.burst_live(now);
        let key = history::key(record);
        let others_held = self.held.iter().any(|h| history::key(&h.record) != key);
        let due = if lately || burst_live || others_held {
            now + HOLD
        } else {
            now
        };
        self.queue(notice, record, due);
    }

    /// Ready to show at the next flush, with whatever else is held then.
    fn release(&mut self, notice: Notice, record: &SessionRecord, now: Clock, prefs: &Preferences) {
        if self.may_show(now, prefs) {
            self.queue(notice, record, now.at);
        }
    }

    fn queue(&mut self, notice: Notice, record: &SessionRecord, due: Instant) {
        // One popup per session: a newer notice replaces one not yet shown.
        self.unhold(&history::key(record));
        self.held.push(Held {
            due,
            notice,
            record: record.clone(),
        });
    }

    pub(super) fn defer(&mut self, notice: Notice, record: &SessionRecord, due: Instant) {
        let key = history::key(record);
        self.unhold(&key);
        self.deferred.insert(
            key,
            Deferred {
                due,
                notice,
                record: record.clone(),
            },
        );
    }

    pub(super) fn unhold(&mut self, key: &str) {
        self.held.retain(|h| history::key(&h.record) != key);
        self.deferred.remove(key);
    }
}
