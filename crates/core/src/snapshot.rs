//! One moment's list of sessions, merged from the two sources, and the transitions between
//! two such moments.

use std::collections::{BTreeMap, BTreeSet, HashSet};

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
        let boundary = boundary_runs(cli);
        let cli: BTreeMap<&str, &SessionRecord> = cli.iter().map(|r| (r.id.as_str(), r)).collect();
        let mut files: BTreeMap<String, SessionRecord> =
            files.into_iter().map(|r| (r.id.clone(), r)).collect();
        let mut sessions = BTreeMap::new();
        let ids: BTreeSet<String> = files
            .keys()
            .cloned()
            .chain(cli.keys().map(|id| id.to_string()))
            .collect();
        for id in ids {
            let merged = merge_one(
                files.remove(&id),
                cli.get(id.as_str()).copied(),
                files_active,
                &boundary,
            );
            if let Some(record) = merged {
                sessions.insert(id, record);
            }
        }
        Snapshot { sessions }
    }

    /// Replace one session (or remove it, with `None`) and return the transition that
    /// makes, if any: the engine's path for a change that touched one record, which costs
    /// the same whatever the number of sessions.
    pub fn update(
        &mut self,
        id: &str,
        next: Option<SessionRecord>,
        at: OffsetDateTime,
    ) -> Option<Event> {
        let event = transition(self.sessions.get(id), next.as_ref(), at);
        match next {
            Some(record) => {
                self.sessions.insert(id.to_string(), record);
            }
            None => {
                self.sessions.remove(id);
            }
        }
        event
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
        let appeared_or_changed = next
            .sessions
            .iter()
            .filter_map(|(id, session)| transition(self.sessions.get(id), Some(session), at));
        let gone = self
            .sessions
            .iter()
            .filter(|(id, _)| !next.sessions.contains_key(*id))
            .filter_map(|(_, session)| transition(Some(session), None, at));
        appeared_or_changed.chain(gone).collect()
    }
}

/// lf's own boundary Runs: an Ask or Flow session whose Run lf names (generation B′ does,
/// in `run_id`) is not also an interactive session.
pub fn boundary_runs(cli: &[SessionRecord]) -> HashSet<String> {
    cli.iter()
        .filter(|r| r.kind != Kind::Interactive)
        .filter_map(|r| r.extra.get("run_id").and_then(|v| v.as_str()))
        .map(str::to_string)
        .collect()
}

/// One session as the merged list shows it, from what the files derive and what lf
/// listed under the same id.
///
/// Records derived from files win for the kinds the files cover (`ask`, `interactive`)
/// because they are fresher than a list taken before the last file event. The CLI
/// supplies Flow sessions and anything the files do not know (every session on lf
/// generation C, which keeps no files). While the file source is active, a CLI record of
/// a file kind that the files no longer have is stale (the Ask was completed a moment
/// ago) and is dropped rather than resurrected.
pub fn merge_one(
    file: Option<SessionRecord>,
    cli: Option<&SessionRecord>,
    files_active: bool,
    boundary: &HashSet<String>,
) -> Option<SessionRecord> {
    let Some(mut record) = file else {
        let cli = cli?;
        let file_kind = matches!(cli.kind, Kind::Ask | Kind::Interactive);
        return (!(files_active && file_kind)).then(|| cli.clone());
    };
    if record.kind == Kind::Interactive && boundary.contains(&record.id) {
        return None;
    }
    if let Some(cli) = cli {
        // lf's buttons and extra fields are worth keeping, but only while lf agrees with
        // the files on the state: buttons for a stale state would mislead.
        if cli.state == record.state {
            record.actions = cli.actions.clone();
            for (key, value) in &cli.extra {
                record.extra.entry(key.clone()).or_insert(value.clone());
            }
        }
        record.work = record.work.or(cli.work.clone());
    }
    Some(record)
}

/// The event for one session going from `old` to `new`, if it is a transition.
fn transition(
    old: Option<&SessionRecord>,
    new: Option<&SessionRecord>,
    at: OffsetDateTime,
) -> Option<Event> {
    let event = match (old, new) {
        (None, None) => return None,
        (Some(old), None) => Event::Resolved {
            at,
            session: old.clone(),
        },
        (None, Some(new)) if new.state == State::Ready => Event::Ready {
            at,
            session: new.clone(),
        },
        (None, Some(new)) if new.is_request() => Event::Asked {
            at,
            session: new.clone(),
        },
        (None, Some(new)) => Event::Appeared {
            at,
            session: new.clone(),
        },
        (Some(old), Some(new)) if old.state == new.state => return None,
        (Some(_), Some(new)) if new.state == State::Ready => Event::Ready {
            at,
            session: new.clone(),
        },
        (Some(old), Some(new)) => Event::State {
            at,
            previous: old.state.as_str().to_string(),
            session: new.clone(),
        },
    };
    Some(event)
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
