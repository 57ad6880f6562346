//! One moment's list of sessions, merged from the two sources, and the transitions between
//! two such moments.

use std::collections::{BTreeMap, HashSet};

use time::OffsetDateTime;

use crate::event::Event;
use crate::session::{Kind, SessionRecord, State};

/// The sessions listed at one moment, by id.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    sessions: BTreeMap<String, SessionRecord>,
}

impl Snapshot {
    /// Merge what the files say with what `lf session list` said.
    ///
    /// Records derived from files win for the kinds the files cover (`ask`, `interactive`)
    /// because they are fresher than a list taken before the last file event. The CLI
    /// supplies Flow sessions and anything the files do not know (every session on lf
    /// generation C, which keeps no files). While the file source is active, a CLI record
    /// of a file kind that the files no longer have is stale (the Ask was completed a
    /// moment ago) and is dropped rather than resurrected.
    pub fn merge(files: Vec<SessionRecord>, cli: &[SessionRecord], files_active: bool) -> Snapshot {
        let mut sessions: BTreeMap<String, SessionRecord> = BTreeMap::new();
        let from_files: HashSet<&str> = files.iter().map(|r| r.id.as_str()).collect();
        // lf's own boundary Runs: an Ask or Flow session whose Run lf names is not also an
        // interactive session (generation B′ names them in `run_id`).
        let boundary_runs: HashSet<&str> = cli
            .iter()
            .filter(|r| r.kind != Kind::Interactive)
            .filter_map(|r| r.extra.get("run_id").and_then(|v| v.as_str()))
            .collect();
        for cli_record in cli {
            let file_kind = matches!(cli_record.kind, Kind::Ask | Kind::Interactive);
            if files_active && file_kind && !from_files.contains(cli_record.id.as_str()) {
                continue;
            }
            sessions.insert(cli_record.id.clone(), cli_record.clone());
        }
        for mut record in files {
            if record.kind == Kind::Interactive && boundary_runs.contains(record.id.as_str()) {
                continue;
            }
            if let Some(cli_record) = sessions.get(&record.id) {
                // lf's buttons and extra fields are worth keeping, but only while lf agrees
                // with the files on the state: buttons for a stale state would mislead.
                if cli_record.state == record.state {
                    record.actions = cli_record.actions.clone();
                    for (key, value) in &cli_record.extra {
                        record.extra.entry(key.clone()).or_insert(value.clone());
                    }
                }
                record.work = record.work.or(cli_record.work.clone());
            }
            sessions.insert(record.id.clone(), record);
        }
        Snapshot { sessions }
    }

    pub fn get(&self, id: &str) -> Option<&SessionRecord> {
        self.sessions.get(id)
    }

    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// The sessions in lf's list order: title, then id.
    pub fn sessions(&self) -> Vec<SessionRecord> {
        let mut list: Vec<SessionRecord> = self.sessions.values().cloned().collect();
        list.sort_by(SessionRecord::list_order);
        list
    }

    /// The transitions from `self` to `next`, each exactly once: a session that appears,
    /// changes state or disappears yields one event; anything else (a retitle, a new
    /// summary text) yields none.
    pub fn diff(&self, next: &Snapshot, at: OffsetDateTime) -> Vec<Event> {
        let mut events = Vec::new();
        for (id, session) in &next.sessions {
            let session = session.clone();
            match self.sessions.get(id) {
                None if session.state == State::Ready => {
                    events.push(Event::Ready { at, session });
                }
                None if session.is_request() => events.push(Event::Asked { at, session }),
                None => events.push(Event::Appeared { at, session }),
                Some(old) if old.state == session.state => {}
                Some(_) if session.state == State::Ready => {
                    events.push(Event::Ready { at, session })
                }
                Some(old) => events.push(Event::State {
                    at,
                    previous: old.state.as_str().to_string(),
                    session,
                }),
            }
        }
        for (id, session) in &self.sessions {
            if !next.sessions.contains_key(id) {
                events.push(Event::Resolved {
                    at,
                    session: session.clone(),
                });
            }
        }
        events
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str, kind: Kind, state: State) -> SessionRecord {
        SessionRecord {
            id: id.into(),
            kind,
            work: None,
            title: format!("title {id}"),
            detail: String::new(),
            cwd: "/".into(),
            state,
            ready_summary: None,
            open_argv: vec!["/bin/lf".into(), "session".into(), "open".into(), id.into()],
            actions: None,
            prompt: None,
            created_at: None,
            extra: Default::default(),
        }
    }

    fn kinds(events: &[Event]) -> Vec<(String, String)> {
        events
            .iter()
            .map(|e| {
                let v = serde_json::to_value(e).unwrap();
                (
                    v["type"].as_str().unwrap().to_string(),
                    v["session"]["id"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn transitions_are_reported_once() {
        let now = OffsetDateTime::UNIX_EPOCH;
        let empty = Snapshot::default();
        let one = Snapshot::merge(vec![record("a", Kind::Ask, State::Waiting)], &[], true);
        assert_eq!(
            kinds(&empty.diff(&one, now)),
            [("asked".into(), "a".into())]
        );
        assert!(one.diff(&one, now).is_empty());
        let ready = Snapshot::merge(vec![record("a", Kind::Ask, State::Ready)], &[], true);
        assert_eq!(
            kinds(&one.diff(&ready, now)),
            [("ready".into(), "a".into())]
        );
        let active = Snapshot::merge(vec![record("a", Kind::Ask, State::Active)], &[], true);
        let events = ready.diff(&active, now);
        assert_eq!(kinds(&events), [("state".into(), "a".into())]);
        assert!(matches!(&events[0], Event::State { previous, .. } if previous == "ready"));
        assert_eq!(
            kinds(&active.diff(&empty, now)),
            [("resolved".into(), "a".into())]
        );
    }

    #[test]
    fn new_interactive_sessions_appear_and_ready_ones_are_ready() {
        let now = OffsetDateTime::UNIX_EPOCH;
        let next = Snapshot::merge(
            vec![
                record("run_1", Kind::Interactive, State::Closed),
                record("ask_1", Kind::Ask, State::Ready),
            ],
            &[record("t:f:n:0", Kind::Flow, State::Waiting)],
            true,
        );
        let mut got = kinds(&Snapshot::default().diff(&next, now));
        got.sort();
        assert_eq!(
            got,
            [
                ("appeared".into(), "run_1".into()),
                ("asked".into(), "t:f:n:0".into()),
                ("ready".into(), "ask_1".into()),
            ]
        );
    }

    #[test]
    fn files_win_and_stale_cli_records_of_file_kinds_are_dropped() {
        let mut cli_ask = record("ask_1", Kind::Ask, State::Waiting);
        cli_ask.actions = Some(vec![]);
        cli_ask.extra.insert("wave_id".into(), "w".into());
        let cli = [
            cli_ask,
            record("ask_gone", Kind::Ask, State::Ready),
            record("flow", Kind::Flow, State::Ready),
        ];
        let merged = Snapshot::merge(vec![record("ask_1", Kind::Ask, State::Ready)], &cli, true);
        let ids: Vec<_> = merged.sessions().into_iter().map(|r| r.id).collect();
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(sorted, ["ask_1", "flow"]);
        let ask = merged.get("ask_1").unwrap();
        assert_eq!(ask.state, State::Ready, "the files' fresher state wins");
        assert!(
            ask.actions.is_none(),
            "lf's buttons for another state are dropped"
        );
        assert!(merged.get("ask_gone").is_none());
        // With no file source (generation C), the CLI is all there is.
        let merged = Snapshot::merge(vec![], &cli, false);
        assert_eq!(merged.len(), 3);
    }

    #[test]
    fn lf_buttons_are_kept_while_lf_agrees_and_boundary_runs_are_hidden() {
        let mut cli_ask = record("ask_1", Kind::Ask, State::Ready);
        cli_ask.actions = Some(vec![]);
        cli_ask.extra.insert("run_id".into(), "run_b".into());
        let merged = Snapshot::merge(
            vec![
                record("ask_1", Kind::Ask, State::Ready),
                record("run_b", Kind::Interactive, State::Active),
            ],
            &[cli_ask],
            true,
        );
        assert_eq!(merged.get("ask_1").unwrap().actions, Some(vec![]));
        assert_eq!(merged.get("ask_1").unwrap().extra["run_id"], "run_b");
        assert!(merged.get("run_b").is_none());
    }

    #[test]
    fn list_order_is_title_then_id() {
        let mut b = record("b", Kind::Ask, State::Waiting);
        b.title = "Same".into();
        let mut a = record("a", Kind::Ask, State::Waiting);
        a.title = "Same".into();
        let mut z = record("0", Kind::Ask, State::Waiting);
        z.title = "Zed".into();
        let snap = Snapshot::merge(vec![z, b, a], &[], true);
        let ids: Vec<_> = snap.sessions().into_iter().map(|r| r.id).collect();
        assert_eq!(ids, ["a", "b", "0"]);
    }
}
