//! What each of lf's events does to the popups: the whole list read anew, a turn handed
//! back or work finished, a state changed, an agent stopped, a session resolved.

use super::*;

impl Popups {
    pub fn on_event(&mut self, event: &Event, now: Clock, prefs: &Preferences) -> Vec<Effect> {
        self.observe(now);
        let mut effects = Vec::new();
        let unix = now.unix();
        match event {
            Event::Snapshot { sessions, .. } => self.on_snapshot(sessions, now, &mut effects),
            Event::Asked { session, .. } | Event::Ready { session, .. } => {
                self.on_turn(event, session, now, prefs, &mut effects)
            }
            Event::State {
                session,
                previous_needs_you,
                ..
            } => self.on_state(event, session, *previous_needs_you, now, &mut effects),
            Event::Stopped { session, .. } => {
                // Whatever it asked is stale; that its work stands still is told once.
                let key = history::key(session);
                self.remember(event, session, unix);
                self.settled(&key, &mut effects);
                let told = self
                    .history
                    .waits(session, unix)
                    .is_some_and(|m| m.shown || m.dismissed);
                if prefs.on_ask && !told {
                    self.hold(stopped(session), session, now.at);
                }
            }
            Event::Resolved { session, .. } => {
                let key = history::key(session);
                self.remember(event, session, unix);
                self.history.forget(&key);
                self.settled(&key, &mut effects);
            }
            Event::Appeared { .. } | Event::Warning { .. } => {}
        }
        // What is due now (a lone popup) goes out with this event, not a timer tick later.
        effects.extend(self.flush(now, prefs));
        effects
    }

    /// The whole list, read anew: what no longer waits is settled, what waits is followed
    /// from when its mark says it started.
    fn on_snapshot(&mut self, sessions: &[SessionRecord], now: Clock, effects: &mut Vec<Effect>) {
        let unix = now.unix();
        let needing: HashMap<String, &SessionRecord> = sessions
            .iter()
            .filter(|s| s.needs_you())
            .map(|s| (history::key(s), s))
            .collect();
        let gone: Vec<String> = self
            .waiting
            .keys()
            .filter(|key| !needing.contains_key(*key))
            .cloned()
            .collect();
        for key in gone {
            self.settled(&key, effects);
        }
        self.history.retain(|key| needing.contains_key(key));
        for (key, record) in needing {
            let since = self
                .history
                .waits(record, unix)
                .map(|m| m.since)
                .unwrap_or(unix);
            let since = self.instant_of(since, now);
            self.waiting
                .entry(key)
                .and_modify(|w| w.record = record.clone())
                .or_insert_with(|| Waiting::new(record, since));
        }
        // At start, after a rescan (resume from suspend): what waits unseen is told
        // in one summary.
        self.catch_up = true;
    }

    /// An agent handed its turn back (asks) or finished (ready): its popup, held, deferred
    /// while it may be watched, or none.
    fn on_turn(
        &mut self,
        event: &Event,
        session: &SessionRecord,
        now: Clock,
        prefs: &Preferences,
        effects: &mut Vec<Effect>,
    ) {
        let unix = now.unix();
        let is_ready = matches!(event, Event::Ready { .. });
        self.remember(event, session, unix);
        let told = self
            .history
            .waits(session, unix)
            .is_some_and(|m| m.shown || m.dismissed);
        self.wait(session, now.at);
        let wanted = if is_ready {
            prefs.on_ready
        } else {
            prefs.on_ask
        };
        if !wanted {
            // The question it answered (if any) is stale now.
            self.unhold(&history::key(session));
            effects.push(Effect::Close(NoticeKey::Session(history::key(session))));
        } else if told {
            // This very transition was shown (or dismissed) before a restart.
        } else if is_ready {
            self.hold(ready(session), session, now.at);
        } else if self.focus.get(&history::key(session)) == Some(&Focus::Looking) {
            // Seen in its own terminal: no popup for this turn.
        } else if watched(session)
            && !prefs.attached_grace.is_zero()
            && self.focus.get(&history::key(session)) != Some(&Focus::Elsewhere)
        {
            // Only where the focus cannot be known: where it can, a turn handed
            // back to a terminal the person is not looking at is news now.
            self.defer(asked(session), session, now.at + prefs.attached_grace);
        } else {
            self.hold(asked(session), session, now.at);
        }
    }

    /// A session's state changed: one that waits keeps waiting (its deferred popup follows
    /// where it is watched), one that does not is settled.
    fn on_state(
        &mut self,
        event: &Event,
        session: &SessionRecord,
        previous_needs_you: bool,
        now: Clock,
        effects: &mut Vec<Effect>,
    ) {
        let unix = now.unix();
        let key = history::key(session);
        if session.needs_you() {
            if !previous_needs_you {
                self.remember(event, session, unix);
            }
            self.history.waits(session, unix);
            if let Some(deferred) = self.deferred.get_mut(&key) {
                if watched(session) {
                    deferred.notice = asked(session);
                    deferred.record = session.clone();
                } else {
                    // The person left that terminal: nobody is watching any more.
                    self.deferred.remove(&key);
                    self.hold(asked(session), session, now.at);
                }
            }
            self.waiting
                .entry(key)
                .and_modify(|w| w.record = session.clone())
                .or_insert_with(|| Waiting::new(session, now.at));
        } else {
            if previous_needs_you {
                self.remember(event, session, unix);
            }
            self.history.forget(&key);
            self.settled(&key, effects);
        }
    }
}
