//! lf's record formats (loopflow-model.md §2), as the simulated lf writes and reads them.
//! Field order follows lf's serde structs, so the pretty JSON looks like lf's own.

use std::path::PathBuf;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use time::OffsetDateTime;

/// lf's `WorkRef`: `{"kind":"task","id":"task_…"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkRef {
    pub kind: String,
    pub id: String,
}

impl WorkRef {
    /// `task:task_…` → `{kind: task, id: task_…}`; `None` when the selector names no kind.
    pub fn from_selector(selector: &str) -> Option<WorkRef> {
        let (kind, id) = selector.split_once(':')?;
        (!kind.is_empty() && !id.is_empty()).then(|| WorkRef {
            kind: kind.into(),
            id: id.into(),
        })
    }
}

/// The state lf lists for a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    Waiting,
    Active,
    Ready,
    Closed,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Waiting => "waiting",
            State::Active => "active",
            State::Ready => "ready",
            State::Closed => "closed",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum AskStatus {
    Waiting,
    Completed { summary: String },
}

/// `human-sessions/<id>.json` (§2.2). The two generation-B′ fields are absent from
/// generation A records; `skill` is present-but-null in B′ when the Ask has no skill.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct AskRecord {
    pub id: String,
    pub parent_run_id: String,
    pub parent_run_dir: PathBuf,
    pub work: Option<WorkRef>,
    pub work_selector: Option<String>,
    pub title: String,
    pub detail: String,
    pub prompt: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub skill: Option<Option<String>>,
    pub cwd: PathBuf,
    pub model: String,
    pub session_run_id: Option<String>,
    pub ready_summary: Option<String>,
    pub status: AskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retain_completed: Option<bool>,
}

/// A field that is present (even as `null`) decodes to `Some`, so writing the record
/// back keeps it; a missing field stays missing through `default`.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Subject {
    pub selector: String,
    pub source: String,
}

/// `runs/<pp>/<run_id>/manifest.json` (§2.3).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RunManifest {
    pub schema_version: u32,
    pub run_id: String,
    pub parent_run_id: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    pub harness: String,
    pub model: Option<String>,
    pub surface: String,
    pub cwd: PathBuf,
    pub repo: Option<PathBuf>,
    pub worktree: Option<PathBuf>,
    pub skill: Option<String>,
    pub subjects: Vec<Subject>,
    pub launch: Option<Value>,
    pub context: Option<Value>,
    pub runtime_path: Option<PathBuf>,
    pub runtime_digest: Option<String>,
    pub host: String,
    pub boot_id: Option<String>,
    /// Generation B′ only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<Value>,
}

/// A Flow review step waiting on a person. In lf these are SQLite rows joined with
/// Tasks and Homes; the simulation keeps the listed shape as JSON in a `flow_positions`
/// row of `loopflow.db`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowSpec {
    /// lf's Flow session id, e.g. `task_…:flow:node:0` (generation A).
    pub id: String,
    /// The Task's plan title.
    pub title: String,
    /// The step name.
    pub detail: String,
    /// The Task's worktree.
    pub cwd: PathBuf,
    pub state: State,
    pub ready_summary: Option<String>,
    /// A work selector such as `task:task_…`.
    pub work: Option<String>,
}

impl FlowSpec {
    pub fn new(
        id: impl Into<String>,
        title: impl Into<String>,
        detail: impl Into<String>,
        cwd: impl Into<PathBuf>,
    ) -> FlowSpec {
        FlowSpec {
            id: id.into(),
            title: title.into(),
            detail: detail.into(),
            cwd: cwd.into(),
            state: State::Waiting,
            ready_summary: None,
            work: None,
        }
    }

    /// The listed state: a ready summary wins over everything, as in lf.
    pub fn listed_state(&self) -> State {
        if self.ready_summary.is_some() {
            State::Ready
        } else {
            self.state
        }
    }
}

/// lf's first-line title: the first non-blank line, at most 80 characters, `…` if cut.
pub(crate) fn title_of(text: &str) -> Option<String> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    let mut title: String = line.chars().take(80).collect();
    if line.chars().nth(80).is_some() {
        title = title.trim_end().to_string();
        title.push('…');
    }
    Some(title)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_take_one_bounded_line() {
        assert_eq!(title_of("\n  Ship it?\nmore").as_deref(), Some("Ship it?"));
        let long = title_of(&"x".repeat(81)).unwrap();
        assert_eq!(long.chars().count(), 81);
        assert!(long.ends_with('…'));
        assert_eq!(title_of(&"y".repeat(80)).unwrap(), "y".repeat(80));
        assert_eq!(title_of(" \n "), None);
    }

    #[test]
    fn generation_a_asks_stay_without_b_prime_fields() {
        let json = r#"{"id":"ask_1","parent_run_id":"run_1","parent_run_dir":"/r","work":null,
            "work_selector":null,"title":"t","detail":"Human ask","prompt":"p","cwd":"/c",
            "model":"claude","session_run_id":null,"ready_summary":null,"status":"waiting"}"#;
        let record: AskRecord = serde_json::from_str(json).unwrap();
        let back = serde_json::to_value(&record).unwrap();
        assert!(back.get("skill").is_none());
        assert!(back.get("retain_completed").is_none());

        let b_prime = json.replace(r#""cwd""#, r#""skill":null,"cwd""#);
        let record: AskRecord = serde_json::from_str(&b_prime).unwrap();
        let back = serde_json::to_value(&record).unwrap();
        assert_eq!(back["skill"], Value::Null);
    }

    #[test]
    fn selectors_become_work_refs() {
        let work = WorkRef::from_selector("task:task_1").unwrap();
        assert_eq!((work.kind.as_str(), work.id.as_str()), ("task", "task_1"));
        assert_eq!(WorkRef::from_selector("task_1"), None);
        assert_eq!(WorkRef::from_selector("task:"), None);
    }
}
