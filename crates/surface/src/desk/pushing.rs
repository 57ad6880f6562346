//! The desk's pushes to the person's phone: started, changed and stopped by the settings,
//! fed the engine's events after the popups (whose memory says what the person dismissed)
//! and the person's presence, and each push handed to the shell's carrier one at a time.

use lf_tray_core::history;
use lf_tray_core::Event;

use super::{Desk, Effect, PushSetting};
use crate::policy::Clock;
use crate::push::{Outcome, Presence, Pushes};

impl Desk {
    /// Start, change or stop the pushes.
    pub(super) fn set_pushes(&mut self, setting: PushSetting, now: Clock) -> Vec<Effect> {
        match (setting, &mut self.pushes) {
            (
                PushSetting::Start {
                    prefs,
                    memory,
                    sessions,
                },
                None,
            ) => {
                let mut pushes = Pushes::new(memory, prefs);
                if self.listed {
                    let snapshot = Event::Snapshot {
                        at: time::OffsetDateTime::now_utc(),
                        sessions,
                    };
                    pushes.on_event(&snapshot, now.at());
                }
                self.pushes = Some(pushes);
                Vec::new()
            }
            (PushSetting::Start { prefs, .. } | PushSetting::Prefs(prefs), Some(pushes)) => {
                let dropped = pushes.set_prefs(prefs, now.at());
                dropped_note(dropped, "settings changed")
            }
            (PushSetting::Prefs(_), None) => Vec::new(),
            (PushSetting::Off, _) => {
                self.pushes = None;
                Vec::new()
            }
        }
    }

    /// The pushes take the engine's `batch`, after the popups: their memory says which
    /// sessions the person dismissed, left out of what is pushed on leaving.
    pub(super) fn push_events(&mut self, now: Clock, batch: &[Event]) -> Vec<Effect> {
        let Some(pushes) = &mut self.pushes else {
            return Vec::new();
        };
        let popups = &self.popups;
        let dismissed = pushes
            .waiting()
            .cloned()
            .chain(batch.iter().filter_map(Event::session).map(history::key))
            .filter(|key| popups.dismissed(key))
            .collect();
        pushes.set_dismissed(dismissed);
        let mut out = Vec::new();
        for event in batch {
            out.extend(dropped_note(
                pushes.on_event(event, now.at()),
                "they no longer wait",
            ));
        }
        out
    }

    /// After every input: the sessions dismissed now, and the next push when one is due
    /// and none is on its way.
    pub(super) fn push(&mut self, now: Clock) -> Vec<Effect> {
        self.push_events(now, &[]);
        let Some(pushes) = &mut self.pushes else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let due = pushes.due(now.at());
        if let Some(mut message) = due {
            self.with_buttons(&mut message, now);
            out.push(Effect::Push(message));
        }
        // After the buttons: a card that carries them is remembered too.
        if let Some(bytes) = self.pushes.as_mut().and_then(Pushes::take_memory) {
            out.push(Effect::KeepPushed(bytes));
        }
        out
    }

    /// The desktop says where the person is.
    pub(super) fn presence(&mut self, presence: Presence, now: Clock) -> Vec<Effect> {
        match &mut self.pushes {
            Some(pushes) if presence != pushes.presence() => {
                let dropped = pushes.set_presence(presence, now.at());
                dropped_note(dropped, "the person is back")
            }
            _ => Vec::new(),
        }
    }

    /// How the push `id` went: remembered, tried again later, or dropped.
    pub(super) fn pushed(
        &mut self,
        id: u64,
        sessions: &[String],
        ok: bool,
        now: Clock,
    ) -> Vec<Effect> {
        let Some(pushes) = &mut self.pushes else {
            return Vec::new();
        };
        let sessions = sessions.join(",");
        match pushes.delivered(id, ok, now.at()) {
            Outcome::Delivered => Vec::new(),
            Outcome::Retry(wait) => vec![Effect::Note(format!(
                "PUSH again id={id} sessions={sessions} in {} s",
                wait.as_secs()
            ))],
            Outcome::Dropped => vec![Effect::Note(format!(
                "PUSH dropped id={id} sessions={sessions}: they no longer wait or the person is back"
            ))],
        }
    }
}

/// A line for the log naming the sessions whose push was dropped, and why.
fn dropped_note(dropped: Vec<String>, why: &str) -> Vec<Effect> {
    if dropped.is_empty() {
        return Vec::new();
    }
    vec![Effect::Note(format!(
        "PUSH dropped sessions={}: {why}",
        dropped.join(",")
    ))]
}
