//! The Session record every surface shows: one shape for the sessions the engine derives
//! from lf's files and for the ones `lf session list --json` prints, in any lf generation.
//!
//! Decoding is lenient on purpose: lf changes its wire format often (four generations so
//! far), so unknown fields are ignored, unknown kinds, states and action kinds are kept
//! as the strings lf sent, and fields a generation lacks are simply absent.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What kind of human session this is. Unknown kinds (generation C's `conversation`, or
/// anything newer) keep lf's own word so the UI can still show them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Ask,
    Flow,
    Interactive,
    #[serde(untagged)]
    Other(String),
}

/// lf's derived state of a session. `Other` keeps states lf adds later (C's `unknown`,
/// `interrupted`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    Waiting,
    Active,
    Ready,
    Closed,
    #[serde(untagged)]
    Other(String),
}

impl State {
    pub fn as_str(&self) -> &str {
        match self {
            State::Waiting => "waiting",
            State::Active => "active",
            State::Ready => "ready",
            State::Closed => "closed",
            State::Other(s) => s,
        }
    }
}

impl Kind {
    pub fn as_str(&self) -> &str {
        match self {
            Kind::Ask => "ask",
            Kind::Flow => "flow",
            Kind::Interactive => "interactive",
            Kind::Other(s) => s,
        }
    }
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// lf's `WorkRef`: `{"kind":"task","id":"task_…"}`. Kept as strings: a tray app only
/// shows and groups by it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct WorkRef {
    pub kind: String,
    pub id: String,
}

/// One button lf offers for a session (generations B and later). `unavailable_reason`
/// is lf's own sentence and is shown verbatim when the action is disabled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Action {
    pub kind: String,
    #[serde(default)]
    pub label: String,
    #[serde(default)]
    pub help: Option<String>,
    #[serde(default)]
    pub unavailable_reason: Option<String>,
}

/// A human session as lf names its fields. Records from the CLI may carry more fields
/// than the engine understands; they are kept in `extra` so `lf-tray list --json`
/// passes them through unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    pub id: String,
    pub kind: Kind,
    #[serde(default)]
    pub work: Option<WorkRef>,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub detail: String,
    #[serde(default)]
    pub cwd: String,
    pub state: State,
    #[serde(default)]
    pub ready_summary: Option<String>,
    #[serde(default)]
    pub open_argv: Vec<String>,
    /// lf's buttons; `None` for generation A records, whose actions the app derives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actions: Option<Vec<Action>>,
    /// The Ask's full question. Only the files carry it; lf's list does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// Unix seconds of when the session started, where the files tell (newest first
    /// ordering in the tray); lf's list does not carry it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<i64>,
    /// Every other field lf sent, kept as it was.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, Value>,
}

impl SessionRecord {
    /// Whether this session waits on a person: an Ask or Flow that nobody is attached to,
    /// or any session whose agent marked it ready.
    pub fn needs_person(&self) -> bool {
        matches!(
            (&self.kind, &self.state),
            (_, State::Ready) | (Kind::Ask | Kind::Flow, State::Waiting | State::Closed)
        )
    }

    /// Whether this session is an agent asking a person (an Ask or a Flow review step).
    pub fn is_request(&self) -> bool {
        matches!(self.kind, Kind::Ask | Kind::Flow)
    }

    /// The order `lf session list` uses: title, then id.
    pub fn list_order(a: &SessionRecord, b: &SessionRecord) -> std::cmp::Ordering {
        a.title.cmp(&b.title).then_with(|| a.id.cmp(&b.id))
    }
}

/// Decode `lf session list --json` output of any generation: a plain array, or C's paged
/// `{"entries": [...], "next": ...}`. One malformed element does not lose the others:
/// it comes back as an error message beside the records that decoded.
pub fn decode_list(bytes: &[u8]) -> Result<(Vec<SessionRecord>, Vec<String>), String> {
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| format!("lf printed invalid JSON: {e}"))?;
    let items = match value {
        Value::Array(items) => items,
        Value::Object(mut map) => match map.remove("entries") {
            Some(Value::Array(items)) => items,
            _ => return Err("lf printed an object without an `entries` array".into()),
        },
        _ => return Err("lf printed neither an array nor a page of sessions".into()),
    };
    let mut records = Vec::with_capacity(items.len());
    let mut errors = Vec::new();
    for item in items {
        let id = item
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("<no id>")
            .to_string();
        match serde_json::from_value::<SessionRecord>(item) {
            Ok(record) => records.push(record),
            Err(e) => errors.push(format!("session {id}: {e}")),
        }
    }
    Ok((records, errors))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_a_record_decodes_and_round_trips() {
        let json = r#"{"id":"run_9f","kind":"interactive","work":null,"title":"Fix it","detail":"claude:opus",
            "cwd":"/src/app","state":"active","ready_summary":null,"open_argv":["/usr/local/bin/lf","session","open","run_9f"]}"#;
        let record: SessionRecord = serde_json::from_str(json).unwrap();
        assert_eq!(record.kind, Kind::Interactive);
        assert_eq!(record.state, State::Active);
        assert!(record.actions.is_none());
        let back = serde_json::to_value(&record).unwrap();
        assert_eq!(back["kind"], "interactive");
        assert_eq!(back["open_argv"][3], "run_9f");
    }

    #[test]
    fn unknown_kinds_states_and_fields_survive() {
        let json = r#"{"id":"session_1","kind":"conversation","state":"interrupted","title":"t",
            "attention":"reply","actions":[{"kind":"rename","label":"Rename","help":null,"unavailable_reason":null}],
            "open_argv":["/bin/lf","session","connect","session_1"]}"#;
        let record: SessionRecord = serde_json::from_str(json).unwrap();
        assert_eq!(record.kind, Kind::Other("conversation".into()));
        assert_eq!(record.state, State::Other("interrupted".into()));
        assert_eq!(record.extra["attention"], "reply");
        let back = serde_json::to_value(&record).unwrap();
        assert_eq!(back["attention"], "reply");
        assert_eq!(back["kind"], "conversation");
        assert_eq!(back["state"], "interrupted");
    }

    #[test]
    fn paged_lists_and_bad_elements() {
        let page = br#"{"entries":[{"id":"a","kind":"flow","state":"ready","title":"A"},{"id":"b","kind":5}],"next":null}"#;
        let (records, errors) = decode_list(page).unwrap();
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].kind, Kind::Flow);
        assert_eq!(errors.len(), 1);
        assert!(errors[0].starts_with("session b:"), "{errors:?}");
        assert!(decode_list(b"not json").is_err());
        assert!(decode_list(b"42").is_err());
    }
}
