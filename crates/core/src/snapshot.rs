//! One moment's list of sessions, merged from the two sources, and the transitions between
//! two such moments.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

use time::OffsetDateTime;

use crate::event::Event;
use crate::lf::dialect::Dialect;
use crate::lf::finish;
use crate::lf::record::{Kind, SessionRecord, State};

/// The sessions listed at one moment, by id.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    // Shared: the engine's snapshot and the copy the surfaces read hold the same records,
    // so keeping that copy up to date costs a pointer per changed session; and the same
    // ids, so a copy costs no string per session.
    sessions: BTreeMap<Arc<str>, Arc<SessionRecord>>,
}

impl Snapshot {
    /// Records already merged and judged (another machine's, as its lf-tray or list gave
    /// them), by id; a later record with the same id wins.
    pub fn from_records(records: impl IntoIterator<Item = SessionRecord>) -> Snapshot {
        Snapshot {
            sessions: records
                .into_iter()
                .map(|r| (Arc::from(r.id.as_str()), Arc::new(r)))
                .collect(),
        }
    }

    /// Merge what the files say with what `lf session list` said.
    ///
    /// Records derived from files win for the kinds the files cover (`ask`, `interactive`)
    /// because they are fresher than a list taken before the last file event. The CLI
    /// supplies Flow sessions and anything the files do not know (every session on lf
    /// generation C, which keeps no files). While the file source is active, a CLI record
    /// of a file kind that the files no longer have is stale (the Ask was completed a
    /// moment ago) and is dropped rather than resurrected.
    pub fn merge(
        files: Vec<SessionRecord>,
        cli: &[SessionRecord],
        files_active: bool,
        lf: Option<&Dialect>,
    ) -> Snapshot {
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
                lf,
            );
            if let Some(record) = merged {
                sessions.insert(Arc::from(id), Arc::new(record));
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
        next: Option<Arc<SessionRecord>>,
        at: OffsetDateTime,
    ) -> Option<Event> {
        let event = transition(self.get(id), next.as_deref(), at);
        self.put(id, next);
        event
    }

    /// Replace one session (or remove it, with `None`), with no transition: a copy of a
    /// list kept up to date by [`Snapshot::update`]'s changes holds the same record.
    pub fn put(&mut self, id: &str, next: Option<Arc<SessionRecord>>) {
        match next {
            Some(record) => match self.sessions.get_mut(id) {
                Some(kept) => *kept = record,
                None => {
                    self.sessions.insert(Arc::from(id), record);
                }
            },
            None => {
                self.sessions.remove(id);
            }
        }
    }

    pub fn get(&self, id: &str) -> Option<&SessionRecord> {
        self.sessions.get(id).map(|r| &**r)
    }

    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    /// The records themselves, shared, in no particular order.
    pub fn shared(&self) -> impl Iterator<Item = &Arc<SessionRecord>> {
        self.sessions.values()
    }

    /// The sessions in lf's list order: title, then id.
    pub fn sessions(&self) -> Vec<SessionRecord> {
        let mut list: Vec<SessionRecord> = self.sessions.values().map(|r| (**r).clone()).collect();
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
            .filter_map(|(id, session)| transition(self.get(id), Some(session), at));
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
pub fn boundary_runs<R: std::borrow::Borrow<SessionRecord>>(cli: &[R]) -> HashSet<String> {
    cli.iter()
        .map(R::borrow)
        .filter(|r| !r.is(Kind::Interactive))
        .filter_map(SessionRecord::run_id)
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
///
/// The result is [`finish`]ed for the lf in use.
pub fn merge_one(
    file: Option<SessionRecord>,
    cli: Option<&SessionRecord>,
    files_active: bool,
    boundary: &HashSet<String>,
    lf: Option<&Dialect>,
) -> Option<SessionRecord> {
    merged(file, cli, files_active, boundary).map(|record| finish(record, lf))
}

fn merged(
    file: Option<SessionRecord>,
    cli: Option<&SessionRecord>,
    files_active: bool,
    boundary: &HashSet<String>,
) -> Option<SessionRecord> {
    let Some(mut record) = file else {
        let cli = cli?;
        let file_kind = matches!(cli.kind, Some(Kind::Ask | Kind::Interactive));
        return (!(files_active && file_kind)).then(|| cli.clone());
    };
    if record.is(Kind::Interactive) && boundary.contains(&record.id) {
        return None;
    }
    if let Some(cli) = cli {
        // lf's buttons and extra fields are worth keeping, but only while lf agrees with
        // the files on the state: buttons for a stale state would mislead.
        if cli.state == record.state {
            record.actions = cli.actions.clone();
            record.keep_lf_fields(cli);
        }
        record.work = record.work.or(cli.work.clone());
    }
    Some(record)
}

/// The event for one session going from `old` to `new`, if it is a transition:
/// - appearing: `ready` if it is, `asked` if it needs the person, else `appeared`;
/// - gone: `resolved`;
/// - turning ready: `ready`; starting to need the person because its agent asked (an
///   Ask, a Flow step, generation D's attention turning `waiting`): `asked` — but not
///   when only its terminal went away and nothing else changed (the person closed the
///   session they were in: no popup for that);
/// - any other change of state or of `needs_you`: `state`, with both previous values.
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
        (None, Some(new)) if new.needs_you() => Event::Asked {
            at,
            session: new.clone(),
        },
        (None, Some(new)) => Event::Appeared {
            at,
            session: new.clone(),
        },
        // The agent stopped while nobody was attached: its work stands still unseen. One
        // the person quit in their own terminal is no news to them.
        (Some(old), Some(new)) if new.stopped() && !old.stopped() && !old.attached() => {
            Event::Stopped {
                at,
                previous: old.state.clone(),
                session: new.clone(),
            }
        }
        // Still waiting, for something else now: a new question, another permission.
        (Some(old), Some(new))
            if old.needs_you()
                && new.needs_you()
                && new.reason().is_some()
                && old.reason() != new.reason() =>
        {
            Event::Asked {
                at,
                session: new.clone(),
            }
        }
        (Some(old), Some(new)) if old.state == new.state && old.needs_you() == new.needs_you() => {
            return None
        }
        (Some(old), Some(new)) if new.state == State::Ready && old.state != State::Ready => {
            Event::Ready {
                at,
                session: new.clone(),
            }
        }
        (Some(old), Some(new)) if !old.needs_you() && new.needs_you() && !only_left(old, new) => {
            Event::Asked {
                at,
                session: new.clone(),
            }
        }
        (Some(old), Some(new)) => Event::State {
            at,
            previous: old.state.clone(),
            previous_needs_you: old.needs_you(),
            session: new.clone(),
        },
    };
    Some(event)
}

/// The session's terminal went away and that is all: it was active, is not now, and lf's
/// attention (where it has one) did not move.
fn only_left(old: &SessionRecord, new: &SessionRecord) -> bool {
    old.state == State::Active && new.state != State::Active && old.attention() == new.attention()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lf::record::ActionKind;
    use serde_json::json;

    use crate::lf::dialect::Generation;

    const A: Option<&Dialect> = Some(&Dialect::of(Generation::A));

    fn record(id: &str, kind: Kind, state: State) -> SessionRecord {
        crate::lf::record::test_record(id, Some(kind), state)
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
        let one = Snapshot::merge(vec![record("a", Kind::Ask, State::Waiting)], &[], true, A);
        assert_eq!(
            kinds(&empty.diff(&one, now)),
            [("asked".into(), "a".into())]
        );
        assert!(one.diff(&one, now).is_empty());
        let ready = Snapshot::merge(vec![record("a", Kind::Ask, State::Ready)], &[], true, A);
        assert_eq!(
            kinds(&one.diff(&ready, now)),
            [("ready".into(), "a".into())]
        );
        let active = Snapshot::merge(vec![record("a", Kind::Ask, State::Active)], &[], true, A);
        let events = ready.diff(&active, now);
        assert_eq!(kinds(&events), [("state".into(), "a".into())]);
        assert!(matches!(
            &events[0],
            Event::State { previous: State::Ready, previous_needs_you: true, session, .. }
                if !session.needs_you()
        ));
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
            A,
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
        cli_ask.actions = Some(Arc::new([]));
        cli_ask.set_lf_field("wave_id", "w");
        let cli = [
            cli_ask,
            record("ask_gone", Kind::Ask, State::Ready),
            record("flow", Kind::Flow, State::Ready),
        ];
        let merged = Snapshot::merge(
            vec![record("ask_1", Kind::Ask, State::Ready)],
            &cli,
            true,
            A,
        );
        let ids: Vec<_> = merged.sessions().into_iter().map(|r| r.id).collect();
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(sorted, ["ask_1", "flow"]);
        let ask = merged.get("ask_1").unwrap();
        assert_eq!(ask.state, State::Ready, "the files' fresher state wins");
        let kinds: Vec<_> = ask
            .actions
            .as_deref()
            .into_iter()
            .flatten()
            .map(|a| a.kind.clone())
            .collect();
        assert_eq!(
            kinds,
            [ActionKind::Open, ActionKind::Complete],
            "lf's buttons for another state are dropped, the generation's derived instead"
        );
        assert!(merged.get("ask_gone").is_none());
        // With no file source (generation C), the CLI is all there is.
        let merged = Snapshot::merge(vec![], &cli, false, A);
        assert_eq!(merged.len(), 3);
    }

    #[test]
    fn lf_buttons_are_kept_while_lf_agrees_and_boundary_runs_are_hidden() {
        let mut cli_ask = record("ask_1", Kind::Ask, State::Ready);
        cli_ask.actions = Some(Arc::new([]));
        cli_ask.set_lf_field("run_id", "run_b");
        let merged = Snapshot::merge(
            vec![
                record("ask_1", Kind::Ask, State::Ready),
                record("run_b", Kind::Interactive, State::Active),
            ],
            &[cli_ask],
            true,
            A,
        );
        assert_eq!(
            merged.get("ask_1").unwrap().actions.as_deref(),
            Some(&[][..]),
            "lf's own (here: none) are kept"
        );
        assert_eq!(
            merged.get("ask_1").unwrap().lf_field("run_id").unwrap(),
            "run_b"
        );
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
        let snap = Snapshot::merge(vec![z, b, a], &[], true, A);
        let ids: Vec<_> = snap.sessions().into_iter().map(|r| r.id).collect();
        assert_eq!(ids, ["a", "b", "0"]);
    }

    /// A generation-D record as lf prints it: no kind, `attention`, state `unknown`.
    fn d(id: &str, attention: Option<&str>, state: &str) -> SessionRecord {
        serde_json::from_value(json!({
            "primary_scope": null, "attention": attention, "task_primary": false, "task_ids": [],
            "id": id, "workspace": null, "interactive": true, "work": null, "wave_id": null,
            "work_path": null,
            "actions": [{"kind": "open", "label": "Open here", "help": "Open this Session in a terminal", "unavailable_reason": null}],
            "title": format!("title {id}"), "title_source": "generated",
            "flow_membership": {"kind": "independent"}, "detail": "codex:gpt-5", "provider": "codex",
            "cwd": "/src/app", "state": state, "ready_summary": null,
            "open_argv": ["/usr/bin/env", "LF_BIN=/lf", "LF_HOME=/h", "/lf", "session", "connect", id],
            "terminal_ids": []
        }))
        .unwrap()
    }

    fn one(record: SessionRecord) -> Snapshot {
        Snapshot::merge(vec![], &[record], false, Some(&Dialect::of(Generation::D)))
    }

    #[test]
    fn generation_d_attention_drives_asked_state_and_resolved() {
        let now = OffsetDateTime::UNIX_EPOCH;
        let working = one(d("S", None, "unknown"));
        assert_eq!(
            kinds(&Snapshot::default().diff(&working, now)),
            [("appeared".into(), "S".into())]
        );
        assert!(!working.get("S").unwrap().needs_you());
        assert!(working.get("S").unwrap().kind.is_none());
        let waiting = one(d("S", Some("waiting"), "unknown"));
        assert!(waiting.get("S").unwrap().needs_you());
        assert_eq!(
            kinds(&working.diff(&waiting, now)),
            [("asked".into(), "S".into())]
        );
        // Attention clears while the session stays open: a state line, not resolved.
        let events = waiting.diff(&working, now);
        assert!(matches!(
            &events[..],
            [Event::State { previous_needs_you: true, session, .. }] if !session.needs_you()
        ));
        // A waiting session the person detaches from keeps waiting: one state line.
        let attached = one(d("S", Some("waiting"), "active"));
        let events = attached.diff(&waiting, now);
        assert!(matches!(
            &events[..],
            [Event::State { previous: State::Active, previous_needs_you: true, session, .. }]
                if session.needs_you()
        ));
        // The person's own terminal hands a turn back: asked, even while attached.
        let busy = one(d("S", None, "active"));
        assert_eq!(
            kinds(&busy.diff(&attached, now)),
            [("asked".into(), "S".into())]
        );
        assert_eq!(
            kinds(&waiting.diff(&Snapshot::default(), now)),
            [("resolved".into(), "S".into())]
        );
        // lf's own actions are kept: no Complete is made up for D.
        let actions = waiting.get("S").unwrap().actions.clone().unwrap();
        assert_eq!(actions.len(), 1);
        assert_eq!(actions[0].kind, ActionKind::Open);
    }

    #[test]
    fn needs_you_in_every_generation() {
        let finished = |r: SessionRecord| finish(r, A).needs_you();
        assert!(finished(record("a", Kind::Ask, State::Waiting)));
        assert!(finished(record("a", Kind::Ask, State::Closed)));
        assert!(!finished(record("a", Kind::Ask, State::Active)));
        assert!(finished(record("f", Kind::Flow, State::Waiting)));
        assert!(finished(record("r", Kind::Interactive, State::Ready)));
        assert!(!finished(record("r", Kind::Interactive, State::Closed)));
        // C: attention when lf gives it, else the kind and state.
        let mut c = record("c", Kind::Other("conversation".into()), State::Waiting);
        assert!(!finished(c.clone()));
        for (attention, wanted) in [("review", true), ("reply", true), ("working", false)] {
            c.set_lf_field("attention", json!(attention));
            assert_eq!(finished(c.clone()), wanted, "{attention}");
        }
        let mut flow = record("f", Kind::Flow, State::Waiting);
        flow.set_lf_field("attention", json!(null));
        assert!(!finished(flow), "lf's own null attention wins");
        assert!(finished(d("S", Some("waiting"), "unknown")));
        assert!(!finished(d("S", None, "interrupted")));
    }

    #[test]
    fn an_ask_whose_terminal_closes_is_not_asked_again() {
        let now = OffsetDateTime::UNIX_EPOCH;
        let active = Snapshot::merge(vec![record("a", Kind::Ask, State::Active)], &[], true, A);
        let closed = Snapshot::merge(vec![record("a", Kind::Ask, State::Closed)], &[], true, A);
        let events = active.diff(&closed, now);
        assert!(matches!(
            &events[..],
            [Event::State { previous: State::Active, previous_needs_you: false, session, .. }]
                if session.needs_you()
        ));
    }
}

/// Generation E: why an agent waits, and an agent that stops.
#[cfg(test)]
mod generation_e {
    use super::*;
    use crate::lf::dialect::Generation;
    use serde_json::{json, Value};

    const E: Option<&Dialect> = Some(&Dialect::of(Generation::E));

    /// An E2 record as lf prints it: D's fields, `program_status`, `agent_process_id`.
    fn e(
        id: &str,
        attention: Option<&str>,
        state: &str,
        status: Value,
        attached: bool,
    ) -> SessionRecord {
        // As lf (E2) lists it (§10.6): the actions follow the state, so a live agent
        // offers Move here whatever its terminal; only a listed terminal id is attached.
        let live = state == "active";
        let mut actions = vec![json!({"kind": "open", "label": "Open here", "help": null,
            "unavailable_reason": live.then_some("This Session is active in another terminal; use Move here to transfer it")})];
        if live {
            actions.push(json!({"kind": "move_here", "label": "Move here", "help": null, "unavailable_reason": null}));
        }
        let terminals: Vec<&str> = if attached { vec!["T-1"] } else { vec![] };
        serde_json::from_value(json!({
            "attention": attention, "id": id, "workspace": {"worktree": "/src/app"},
            "interactive": true, "actions": actions, "title": format!("title {id}"),
            "title_source": "generated", "flow_membership": {"kind": "independent"},
            "detail": "claude:opus", "provider": "claude", "cwd": "/src/app/sub", "state": state,
            "ready_summary": null, "open_argv": ["/usr/bin/env", "/lf", "session", "connect", id],
            "terminal_ids": terminals, "program_status": status,
            "agent_process_id": "44444444-4444-4444-8444-444444444444"
        }))
        .unwrap()
    }

    fn blocked(kind: &str, title: &str) -> Value {
        json!({"seen": false, "records": [
            {"state": "working", "id": "1", "kind": null, "progress": null, "app": "claude", "title": null, "msg": null},
            {"state": "blocked", "id": "2", "kind": kind, "progress": null, "app": "claude",
             "title": title, "msg": "Bash wants to run a command"}
        ]})
    }

    fn only(record: SessionRecord) -> Snapshot {
        Snapshot::merge(vec![], &[record], false, E)
    }

    fn types(events: &[Event]) -> Vec<&'static str> {
        events.iter().map(Event::kind).collect()
    }

    #[test]
    fn the_newest_blocked_report_is_why_it_waits() {
        let s = only(e(
            "S",
            Some("waiting"),
            "active",
            blocked("permission", "Run cargo publish --dry-run"),
            false,
        ));
        let r = s.get("S").unwrap();
        assert!(r.needs_you() && !r.stopped());
        let reason = r.reason().unwrap();
        assert_eq!(reason.kind.as_deref(), Some("permission"));
        assert_eq!(reason.title.as_deref(), Some("Run cargo publish --dry-run"));
        assert_eq!(reason.msg.as_deref(), Some("Bash wants to run a command"));
        assert_eq!(reason.phrase(), "asks permission");
        // A later report puts the block behind it; a state this app does not know does not.
        let mut status = blocked("question", "Which branch?");
        status["records"]
            .as_array_mut()
            .unwrap()
            .push(json!({"state": "thinking-hard"}));
        let r = only(e("S", Some("waiting"), "active", status.clone(), false));
        assert_eq!(
            r.get("S").unwrap().reason().unwrap().phrase(),
            "asks a question"
        );
        status["records"]
            .as_array_mut()
            .unwrap()
            .push(json!({"state": "working"}));
        assert_eq!(
            only(e("S", Some("waiting"), "active", status, false))
                .get("S")
                .unwrap()
                .reason(),
            None
        );
        // No reason where it does not wait, nor where lf sends no status (D and older).
        let idle = only(e("S", None, "active", blocked("auth", "Sign in"), false));
        assert_eq!(idle.get("S").unwrap().reason(), None);
        let plain = only(e("S", Some("waiting"), "active", Value::Null, false));
        assert_eq!(plain.get("S").unwrap().reason(), None);
        assert!(plain.get("S").unwrap().needs_you());
    }

    #[test]
    fn a_new_reason_is_a_new_ask_and_the_same_one_is_not() {
        let now = OffsetDateTime::UNIX_EPOCH;
        let first = only(e(
            "S",
            Some("waiting"),
            "active",
            blocked("permission", "Run ls"),
            false,
        ));
        let same = only(e(
            "S",
            Some("waiting"),
            "active",
            blocked("permission", "Run ls"),
            false,
        ));
        let other = only(e(
            "S",
            Some("waiting"),
            "active",
            blocked("permission", "Run rm"),
            false,
        ));
        assert!(types(&first.diff(&same, now)).is_empty());
        assert_eq!(types(&first.diff(&other, now)), ["asked"]);
        // Losing the reason while still waiting tells nothing new.
        let plain = only(e("S", Some("waiting"), "active", Value::Null, false));
        assert!(types(&first.diff(&plain, now)).is_empty());
    }

    #[test]
    fn an_agent_that_dies_unattended_is_told_and_one_the_person_quit_is_not() {
        let now = OffsetDateTime::UNIX_EPOCH;
        let working = only(e("S", None, "active", Value::Null, false));
        let waiting = only(e(
            "S",
            Some("waiting"),
            "active",
            blocked("permission", "Run ls"),
            false,
        ));
        let dead = only(e("S", None, "closed", Value::Null, false));
        let r = dead.get("S").unwrap();
        assert!(r.stopped() && !r.needs_you() && r.reason().is_none());
        assert_eq!(types(&working.diff(&dead, now)), ["stopped"]);
        // A waiting one that dies stops waiting, and that is the news.
        assert_eq!(types(&waiting.diff(&dead, now)), ["stopped"]);
        let Event::Stopped { previous, .. } = &waiting.diff(&dead, now)[0] else {
            unreachable!()
        };
        assert_eq!(previous, &State::Active);
        // Move here is offered for every live agent on E2: that is no terminal.
        assert!(!working.get("S").unwrap().attached());
        // Attached (lf lists a terminal of the person's): they quit it there; a state
        // line only.
        let attached = only(e("S", None, "active", Value::Null, true));
        assert!(attached.get("S").unwrap().attached());
        assert_eq!(types(&attached.diff(&dead, now)), ["state"]);
        // Resumed: a state line; stopping again is told again.
        assert_eq!(types(&dead.diff(&working, now)), ["state"]);
        // Even lf's own attention on a dead agent does not make it wait.
        let odd = only(e("S", Some("waiting"), "closed", Value::Null, false));
        assert!(!odd.get("S").unwrap().needs_you());
    }

    #[test]
    fn closed_means_stopped_only_on_e() {
        let record = e("S", None, "closed", Value::Null, false);
        let d = Snapshot::merge(
            vec![],
            std::slice::from_ref(&record),
            false,
            Some(&Dialect::of(Generation::D)),
        );
        assert!(!d.get("S").unwrap().stopped());
        assert!(only(record).get("S").unwrap().stopped());
    }
}
