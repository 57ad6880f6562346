//! What the engine tells its listeners, in the shape `lf-tray watch --json` prints.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::lf::record::{SessionRecord, State};

/// Something that could not be read or asked. The engine keeps working around it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    /// The file at fault, when one is.
    pub path: Option<PathBuf>,
    pub message: String,
}

impl Warning {
    pub fn new(path: Option<PathBuf>, message: impl Into<String>) -> Warning {
        Warning {
            path,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.path {
            Some(path) => write!(f, "{}: {}", path.display(), self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// One line of `lf-tray watch --json`. Every transition of a session is reported once.
/// The same type reads another machine's stream back ([`crate::machine`]): the format has
/// one definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The full list, first, and again after the engine rescans from scratch.
    Snapshot {
        #[serde(with = "time::serde::rfc3339")]
        at: OffsetDateTime,
        sessions: Vec<SessionRecord>,
    },
    /// A session started to need a person: an Ask or a Flow review step appeared, or
    /// (generation D) an agent's attention turned `waiting`.
    Asked {
        #[serde(with = "time::serde::rfc3339")]
        at: OffsetDateTime,
        session: SessionRecord,
    },
    /// A session's agent marked it ready for review.
    Ready {
        #[serde(with = "time::serde::rfc3339")]
        at: OffsetDateTime,
        session: SessionRecord,
    },
    /// Any other change of state or of `needs_you`; a session still open that stopped
    /// needing the person (generation D: its attention cleared) says `needs_you: false`.
    State {
        #[serde(with = "time::serde::rfc3339")]
        at: OffsetDateTime,
        session: SessionRecord,
        previous: State,
        previous_needs_you: bool,
    },
    /// A session's agent stopped (died or exited) while no terminal was attached, and the
    /// session stays open (generation E): its work stands still until someone resumes it.
    Stopped {
        #[serde(with = "time::serde::rfc3339")]
        at: OffsetDateTime,
        session: SessionRecord,
        previous: State,
    },
    /// A session is gone: completed, removed or resolved. Carries its last known record.
    Resolved {
        #[serde(with = "time::serde::rfc3339")]
        at: OffsetDateTime,
        session: SessionRecord,
    },
    /// A new interactive session.
    Appeared {
        #[serde(with = "time::serde::rfc3339")]
        at: OffsetDateTime,
        session: SessionRecord,
    },
    Warning {
        #[serde(with = "time::serde::rfc3339")]
        at: OffsetDateTime,
        path: Option<PathBuf>,
        message: String,
    },
}

impl Event {
    /// Every event's `type`, as `watch --json` writes it: what a reader of the stream
    /// knows, and skips any other (a newer lf-tray's).
    pub const KINDS: [&'static str; 8] = [
        "snapshot", "asked", "ready", "state", "stopped", "resolved", "appeared", "warning",
    ];

    /// This event's `type` in `watch --json`, one of [`Event::KINDS`].
    pub fn kind(&self) -> &'static str {
        match self {
            Event::Snapshot { .. } => "snapshot",
            Event::Asked { .. } => "asked",
            Event::Ready { .. } => "ready",
            Event::State { .. } => "state",
            Event::Stopped { .. } => "stopped",
            Event::Resolved { .. } => "resolved",
            Event::Appeared { .. } => "appeared",
            Event::Warning { .. } => "warning",
        }
    }

    /// The session an event is about, if any.
    pub fn session(&self) -> Option<&SessionRecord> {
        match self {
            Event::Asked { session, .. }
            | Event::Ready { session, .. }
            | Event::State { session, .. }
            | Event::Stopped { session, .. }
            | Event::Resolved { session, .. }
            | Event::Appeared { session, .. } => Some(session),
            Event::Snapshot { .. } | Event::Warning { .. } => None,
        }
    }

    pub fn warning(warning: Warning) -> Event {
        Event::Warning {
            at: OffsetDateTime::now_utc(),
            path: warning.path,
            message: warning.message,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lf::record::{test_record, Kind};

    /// Every event goes out and comes back the same, under a `type` that [`Event::KINDS`]
    /// names: the list cannot drift from the enum.
    #[test]
    fn every_event_round_trips_under_a_known_kind() {
        let at = OffsetDateTime::from_unix_timestamp(1_796_126_400).unwrap();
        let session = test_record("ask_1", Some(Kind::Ask), State::Waiting);
        let events = [
            Event::Snapshot {
                at,
                sessions: vec![session.clone()],
            },
            Event::Asked {
                at,
                session: session.clone(),
            },
            Event::Ready {
                at,
                session: session.clone(),
            },
            Event::State {
                at,
                session: session.clone(),
                previous: State::Active,
                previous_needs_you: true,
            },
            Event::Stopped {
                at,
                session: session.clone(),
                previous: State::Active,
            },
            Event::Resolved {
                at,
                session: session.clone(),
            },
            Event::Appeared { at, session },
            Event::Warning {
                at,
                path: Some("/h/x.json".into()),
                message: "bad".into(),
            },
        ];
        let mut kinds = Vec::new();
        for event in &events {
            let line = serde_json::to_string(event).unwrap();
            let back: Event = serde_json::from_str(&line).unwrap();
            assert_eq!(&back, event, "{line}");
            let value: serde_json::Value = serde_json::from_str(&line).unwrap();
            kinds.push(value["type"].as_str().unwrap().to_string());
            assert_eq!(value["type"], event.kind(), "{line}");
        }
        assert_eq!(kinds, Event::KINDS);
    }
}
