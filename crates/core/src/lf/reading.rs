//! What the tray reads in a session record for the lf in use: whether it waits on the
//! person and why, whether its agent stopped, whether a terminal of the person's is
//! attached, and where its agent runs. lf never sends any of it; this module alone makes
//! it ([`finish`]; the data is [`Reading`], beside the record it travels in), so a new lf
//! word changes the reading here and nowhere else, and every surface reads the answer,
//! never lf's fields.

use serde_json::Value;

use super::dialect::{Dialect, Generation};
use super::record::{Agent, Kind, Presents, Reading, Reason, Runs, SessionRecord, State};

/// How a record is read where the lf in use is not known (yet): by lf's words alone.
const UNKNOWN: Dialect = Dialect::of(Generation::Unknown);

/// A merged record as every surface gets it: with actions for the lf in use where lf sent
/// none, and read for that lf. What the engine found of its agent is kept.
pub fn finish(mut record: SessionRecord, lf: Option<&Dialect>) -> SessionRecord {
    if record.actions.is_none() {
        record.actions = Some(super::actions::derive(&record, lf).into());
    }
    let agent = record.reading.agent.take();
    // With the actions the tray derived: Move here counts as lf's does.
    record.reading = lf.unwrap_or(&UNKNOWN).read(&record, agent);
    record
}

impl Dialect {
    /// What this lf's record says to the person, with the agent the engine found for it.
    fn read(&self, record: &SessionRecord, agent: Option<Agent>) -> Reading {
        let stopped =
            self.closed_means_stopped && record.kind.is_none() && record.state == State::Closed;
        let needs_you = !stopped && needs_you(record);
        Reading {
            needs_you,
            reason: needs_you.then(|| reason(record)).flatten().map(Box::new),
            stopped,
            attached: self.attached(record),
            agent,
        }
    }
}

impl SessionRecord {
    /// Whether this session waits on a person, as the tray read it.
    pub fn needs_you(&self) -> bool {
        self.reading.needs_you
    }

    /// Why it waits, where its agent said so, while it waits.
    pub fn reason(&self) -> Option<&Reason> {
        self.reading.reason.as_deref()
    }

    /// Its agent stopped while the session stays open (generation E).
    pub fn stopped(&self) -> bool {
        self.reading.stopped
    }

    /// Whether a terminal of the person's is attached to it now.
    pub fn attached(&self) -> bool {
        self.reading.attached
    }

    /// The agent process lf names for it, as the engine found it.
    pub fn agent(&self) -> Option<&Agent> {
        self.reading.agent.as_ref()
    }

    /// What the engine found of the agent process lf names for it, by lf's id (E2): its
    /// pid here and where it runs, once lf's process list named it. A record whose lf
    /// names no live agent keeps none.
    pub(crate) fn found_agent(
        &mut self,
        dialect: &Dialect,
        found: impl FnOnce(&str) -> Option<(u32, Runs)>,
    ) {
        let Some(id) = dialect.agent_id(self) else {
            return;
        };
        let found = found(id);
        self.reading.agent = Some(Agent {
            id: id.to_string(),
            pid: found.map(|(pid, _)| pid),
            runs: found.map_or(Runs::Unknown, |(_, runs)| runs),
        });
    }

    /// One word for what it is, for a listing's column: lf's kind, or for a conversation
    /// (D and later, no kind) whether it waits on you (on E, why) or its agent stopped.
    pub fn kind_word(&self) -> &str {
        match (&self.kind, self.reason()) {
            (Some(kind), _) => kind.as_str(),
            (None, Some(reason)) if self.needs_you() => reason.label(),
            (None, _) if self.needs_you() => "needs you",
            (None, _) if self.stopped() => "stopped",
            (None, _) => "-",
        }
    }

    /// How it presents itself: what the popup, the tray row and the window say of it.
    pub fn presents(&self) -> Presents {
        match &self.kind {
            Some(Kind::Ask | Kind::Flow) => Presents::Asks,
            Some(_) => Presents::Session,
            None => Presents::Waits,
        }
    }

    /// Whether a terminal shows it now that the tray can go to: one attached to it, or
    /// the terminal its agent runs on (E2: lf's child on the person's terminal, where no
    /// terminal id is listed).
    pub fn in_terminal(&self) -> bool {
        self.attached() || self.agent().is_some_and(|a| a.runs == Runs::Terminal)
    }

    /// Its agent runs headless: no terminal shows it, and Move here would start a second
    /// conversation beside it rather than move it (lf's fallback, §10.6).
    pub fn headless(&self) -> bool {
        self.agent().is_some_and(Agent::headless)
    }
}

/// For tests here and in other crates (feature `fixtures`, never in the product): a
/// reading set by hand, for what the test is about.
#[cfg(any(test, feature = "fixtures"))]
impl SessionRecord {
    pub fn set_needs_you(&mut self, needs_you: bool) {
        self.reading.needs_you = needs_you;
    }

    pub fn set_agent(&mut self, agent: Option<Agent>) {
        self.reading.agent = agent;
    }
}

/// The reason a record's agent gives for waiting: its newest status report if that is
/// `blocked`. Reports are oldest first; one of a state this app does not know is passed
/// over, any other (working, done, idle, error, clear) means the block is behind it.
fn reason(record: &SessionRecord) -> Option<Reason> {
    let status = record.extra.value("program_status")?;
    let reports = status.get("records")?.as_array()?;
    let text = |report: &Value, key: &str| {
        report
            .get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_string)
    };
    for report in reports.iter().rev() {
        match report.get("state").and_then(Value::as_str) {
            Some("blocked") => {
                return Some(Reason {
                    kind: text(report, "kind"),
                    title: text(report, "title"),
                    msg: text(report, "msg"),
                })
            }
            Some("idle" | "working" | "done" | "error" | "clear") => return None,
            _ => continue,
        }
    }
    None
}

/// lf's `attention` values that mean a person is wanted: generation D's `waiting`, and
/// C's and D0's `review` / `reply`. Any other word is shown but wakes nobody: a new lf
/// value that meant "working" must not turn every session into a popup.
const ATTENTION_WANTED: [&str; 3] = ["waiting", "review", "reply"];

/// Whether a session waits on a person, from what its record says, in every generation:
/// - a record that carries lf's `attention` (generation C when present, D always) is
///   judged by it alone, since lf derives it from the agent's own stream: `waiting`
///   (or C's `review` / `reply`) means yes, `null` means no, whatever the state;
/// - otherwise (generations A and B, and the files) by kind and state: any session whose
///   agent marked it `ready`, and an Ask or Flow step nobody is attached to (`waiting`, or
///   `closed`: its client left while the caller still waits).
pub fn needs_you(record: &SessionRecord) -> bool {
    match record.extra.value("attention") {
        Some(Value::String(word)) => ATTENTION_WANTED.contains(&word.as_str()),
        Some(Value::Null) => false,
        _ => matches!(
            (&record.kind, &record.state),
            (_, State::Ready) | (Some(Kind::Ask | Kind::Flow), State::Waiting | State::Closed)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lf::record::test_record;

    /// Another machine's tray sends its reading inside the record (`watch --json`): it is
    /// read back as that tray's, kept apart from lf's own words, and written out once.
    #[test]
    fn a_reading_travels_in_the_record_and_back() {
        let json = serde_json::json!({
            "id": "s1", "state": "waiting", "attention": "waiting",
            "needs_you": true, "stopped": false, "attached": true,
            "reason": {"kind": "question", "title": "Which branch?", "msg": null},
            "agent": {"id": "a1", "pid": 42, "runs": "terminal"},
        });
        let record: SessionRecord = serde_json::from_value(json).unwrap();
        assert!(record.needs_you() && record.attached() && !record.stopped());
        assert_eq!(record.reason().unwrap().phrase(), "asks a question");
        assert_eq!(record.agent().unwrap().pid, Some(42));
        for word in ["needs_you", "stopped", "attached", "reason", "agent"] {
            assert_eq!(
                record.lf_field(word),
                None,
                "{word} is the reading's, not lf's"
            );
        }
        assert_eq!(record.lf_field("attention").unwrap(), "waiting");
        let text = serde_json::to_string(&record).unwrap();
        assert_eq!(text.matches("\"needs_you\"").count(), 1, "{text}");
        let back: SessionRecord = serde_json::from_str(&text).unwrap();
        assert_eq!(back, record);
    }

    /// An agent another tray describes in a way this one cannot read is left out; the
    /// record and the rest of its reading stay.
    #[test]
    fn an_unreadable_agent_loses_only_itself() {
        let json = serde_json::json!({
            "id": "s1", "state": "waiting", "needs_you": true, "agent": {"pid": "many"},
        });
        let record: SessionRecord = serde_json::from_value(json).unwrap();
        assert!(record.needs_you());
        assert_eq!(record.agent(), None);
    }

    /// What the engine found of the agent survives the reading; a record lf reads
    /// `closed` on E is stopped and never needs the person.
    #[test]
    fn finish_reads_for_the_lf_in_use_and_keeps_the_agent_found() {
        let e = Dialect::of(Generation::E);
        let mut record = test_record("s1", None, State::Active);
        record.set_lf_field("agent_process_id", "a1");
        record.set_lf_field("attention", "waiting");
        record.found_agent(&e, |id| (id == "a1").then_some((42, Runs::Terminal)));
        let read = finish(record.clone(), Some(&e));
        assert!(read.needs_you() && !read.stopped() && read.in_terminal());
        assert_eq!(read.agent().unwrap().pid, Some(42));

        record.state = State::Closed;
        record.set_lf_field("attention", serde_json::Value::Null);
        let closed = finish(record, Some(&e));
        assert!(closed.stopped() && !closed.needs_you());
    }
}
