//! The Session record every surface shows: one shape for the sessions the engine derives
//! from lf's files and for the ones `lf session list --json` prints, in any lf generation.
//!
//! Decoding is lenient on purpose: lf changes its wire format often (four generations so
//! far), so unknown fields are ignored, unknown kinds, states and action kinds are kept
//! as the strings lf sent, and fields a generation lacks are simply absent.
//!
//! What a record means to the person (whether it waits on them, why, where its agent
//! runs) is not lf's wire: it is the record's [`Reading`], made by [`super::reading`].

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use super::fields::LfFields;

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

/// What an action does. lf names them (`open`, `move_here`, `complete`; generation A's
/// Flow steps `approve` / `iterate`); a kind this app does not know is kept as lf's word,
/// shown and never run.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionKind {
    Open,
    MoveHere,
    Complete,
    Approve,
    Iterate,
    #[serde(untagged)]
    Other(String),
}

impl ActionKind {
    pub fn as_str(&self) -> &str {
        match self {
            ActionKind::Open => "open",
            ActionKind::MoveHere => "move_here",
            ActionKind::Complete => "complete",
            ActionKind::Approve => "approve",
            ActionKind::Iterate => "iterate",
            ActionKind::Other(s) => s,
        }
    }

    /// Whether Loopflow Tray can carry it out.
    pub fn is_known(&self) -> bool {
        !matches!(self, ActionKind::Other(_))
    }

    /// Approve and Iterate need the person's text, which lf takes as one argument.
    pub fn needs_text(&self) -> bool {
        matches!(self, ActionKind::Approve | ActionKind::Iterate)
    }
}

impl std::fmt::Display for ActionKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One button lf offers for a session (generations B and later), or one the core derives
/// for a record without lf's own (generation A, the files). `unavailable_reason` is lf's
/// own sentence and is shown verbatim when the action is disabled.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Action {
    pub kind: ActionKind,
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
// Eq too: an `Arc` of it then compares by pointer first, so two lists that share their
// unchanged records compare in what changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRecord {
    pub id: String,
    /// The machine the session runs on: the ssh destination as the person configured it.
    /// Absent for this machine's own sessions (and never sent by lf itself). Ids are unique
    /// per machine only, so a session is identified by its [`SessionKey`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    /// Absent on generation D, which dropped it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<Kind>,
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
    /// Shared, like `actions`: the merged record the surfaces read, and every copy of it,
    /// hold lf's list's words rather than a copy of each (at 10 000 sessions a copy of
    /// these two was about 1 KB a session); and each word too, as lf's list repeats all
    /// but the id in every record ([`crate::lf::last_list`]).
    #[serde(default)]
    pub open_argv: Arc<[Arc<str>]>,
    /// lf's buttons; `None` on a record without them (generation A, the files) until the
    /// engine derives them for the lf in use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actions: Option<Arc<[Action]>>,
    /// What the tray reads in it for the lf in use: whether it waits on the person and
    /// why, whether its agent stopped, whether a terminal is attached and where its agent
    /// runs. lf never sends it; only lf's module makes it ([`crate::lf::finish`]), and a
    /// record of another machine's carries that machine's tray's.
    #[serde(flatten)]
    pub(in crate::lf) reading: Reading,
    /// The Ask's full question. Only the files carry it; lf's list does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// Unix seconds of when the session started, where the files tell (newest first
    /// ordering in the tray); lf's list does not carry it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<i64>,
    /// Every other field lf sent, kept as it was. Private to lf's module: what they mean
    /// is its to say ([`SessionRecord::work_path`], [`SessionRecord::provider_named`],
    /// [`SessionRecord::flow_step`] and the verdict), so a new lf word is read in one place
    /// and reading one elsewhere does not compile.
    ///
    /// Shared: the merged record the surfaces read, and every copy of it, hold the fields
    /// of lf's list's record until one of them changes them; and kept as their compact
    /// text beside the few the tray reads ([`LfFields`]), not as a map of them.
    #[serde(flatten, with = "super::fields::wire")]
    pub(in crate::lf) extra: Arc<LfFields>,
}

impl SessionRecord {
    /// A record with only its id, kind and state, as the files start theirs: lf's other
    /// words absent, and not yet read ([`crate::lf::finish`]).
    pub(crate) fn new(id: String, kind: Option<Kind>, state: State) -> SessionRecord {
        SessionRecord {
            id,
            machine: None,
            kind,
            work: None,
            title: String::new(),
            detail: String::new(),
            cwd: String::new(),
            state,
            ready_summary: None,
            open_argv: Arc::default(),
            actions: None,
            reading: Reading::default(),
            prompt: None,
            created_at: None,
            extra: Arc::default(),
        }
    }

    /// lf's own words from `listed` (its list's record of the same session) that this one
    /// lacks: a file record keeps what only lf's list says (`run_id`, `wave_id`, …).
    pub(crate) fn keep_lf_fields(&mut self, listed: &SessionRecord) {
        if self.extra.is_empty() {
            self.extra = Arc::clone(&listed.extra);
            return;
        }
        let mut extra = self.extra.to_map();
        for (key, value) in listed.extra.to_map() {
            extra.entry(key).or_insert(value);
        }
        self.extra = Arc::new(LfFields::from_map(&extra));
    }
}

/// For tests here and in other crates: a record as lf would have sent it with one more
/// field, or one less (fixtures only; the product reads lf's fields through lf's module).
#[cfg(any(test, feature = "fixtures"))]
impl SessionRecord {
    pub fn lf_field(&self, name: &str) -> Option<Value> {
        self.extra.to_map().remove(name)
    }

    pub fn set_lf_field(&mut self, name: &str, value: impl Into<Value>) {
        let mut fields = self.extra.to_map();
        fields.insert(name.to_string(), value.into());
        self.extra = Arc::new(LfFields::from_map(&fields));
    }

    pub fn remove_lf_field(&mut self, name: &str) {
        let mut fields = self.extra.to_map();
        fields.remove(name);
        self.extra = Arc::new(LfFields::from_map(&fields));
    }
}

impl SessionRecord {
    /// The terminals lf lists for it (`terminal_ids`): its live clients' marks.
    pub fn terminal_ids(&self) -> Vec<String> {
        self.extra
            .value("terminal_ids")
            .as_ref()
            .and_then(Value::as_array)
            .map(|ids| {
                ids.iter()
                    .filter_map(|id| id.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Where the work is, for a record that says (generation D, and C's lists): lf's
    /// `work_path` (`product / LOO-412`), else the repository it runs in.
    pub fn work(&self) -> Option<String> {
        self.work_path().map(str::to_string).or_else(|| self.repo())
    }

    /// lf's own name for the work (`work_path`: `product / LOO-412`), where it gives one.
    pub fn work_path(&self) -> Option<&str> {
        self.extra_str("work_path")
    }

    /// The agent lf names (`provider`: `claude`, `codex`), and only that: [`provider`]
    /// falls back to the record's detail.
    ///
    /// [`provider`]: SessionRecord::provider
    pub fn provider_named(&self) -> Option<&str> {
        self.extra_str("provider")
    }

    /// Where a Flow session stands: lf's step, its index and the iteration, as lf wrote
    /// them (JSON text; empty where absent), for telling one review step from the next.
    pub fn flow_step(&self) -> [String; 3] {
        ["step", "step_index", "iteration"]
            .map(|name| self.extra.raw(name).map(str::to_string).unwrap_or_default())
    }

    /// The Run lf names for an Ask or Flow session (generation B′'s `run_id`).
    pub fn run_id(&self) -> Option<&str> {
        self.extra.string("run_id")
    }

    /// The repository's name: the last component of the checkout root lf recorded
    /// (`workspace.worktree`), else of the session's directory.
    pub fn repo(&self) -> Option<String> {
        let path = self.worktree().unwrap_or(&self.cwd);
        std::path::Path::new(path.trim_end_matches('/'))
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .filter(|name| !name.is_empty())
    }

    /// Which agent runs it: lf's `provider` (`codex`), else its `detail`
    /// (`provider:model`), which generations before D carry alone.
    pub fn provider(&self) -> Option<&str> {
        self.extra_str("provider")
            .or(Some(self.detail.trim()).filter(|d| !d.is_empty()))
    }

    /// Whether it is of this kind (generation D records have none).
    pub fn is(&self, kind: Kind) -> bool {
        self.kind.as_ref() == Some(&kind)
    }

    /// lf's `attention` word, where the record has one (generations C and D).
    pub fn attention(&self) -> Option<&str> {
        self.extra.string("attention")
    }

    /// A string field lf sent that the engine does not model (`work_path`, `provider`).
    fn extra_str(&self, key: &str) -> Option<&str> {
        self.extra.string(key).filter(|s| !s.is_empty())
    }

    /// The lf action of this kind, if the session offers it.
    pub fn action(&self, kind: &ActionKind) -> Option<&Action> {
        self.actions.as_ref()?.iter().find(|a| &a.kind == kind)
    }

    /// Generation D's checkout root (`workspace.worktree`): what a per-repository
    /// `lf monitor work` reader is scoped with. `None` outside a recorded checkout.
    pub fn worktree(&self) -> Option<&str> {
        self.extra
            .string("workspace/worktree")
            .filter(|s| !s.is_empty())
    }

    /// The order `lf session list` uses: title, then id.
    pub fn list_order(a: &SessionRecord, b: &SessionRecord) -> std::cmp::Ordering {
        a.title
            .cmp(&b.title)
            .then_with(|| a.id.cmp(&b.id))
            .then_with(|| a.machine.cmp(&b.machine))
    }

    /// What identifies this session among every machine's.
    pub fn key(&self) -> SessionKey {
        SessionKey {
            machine: self.machine.clone(),
            id: self.id.clone(),
        }
    }
}

/// The tray's reading of one session, carried in its [`SessionRecord`] (and in the
/// tray's own `watch --json`, so another machine's tray is read as it read it). Unread
/// (all false and empty) until [`crate::lf::finish`] reads it for the lf in use.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reading {
    /// Whether this session waits on a person: the tray's one answer for every lf
    /// generation ([`crate::lf::reading::needs_you`]).
    #[serde(default)]
    pub(in crate::lf) needs_you: bool,
    /// Why it waits, where the agent said so (generation E's `program_status`), while it
    /// waits. Boxed: few records wait, and each copy of a record kept 64 bytes for it.
    #[serde(default)]
    pub(in crate::lf) reason: Option<Box<Reason>>,
    /// Its agent stopped (died or exited) while the session stays open (generation E): it
    /// never needs the person, but its work stands still until someone resumes it.
    #[serde(default)]
    pub(in crate::lf) stopped: bool,
    /// Whether a terminal of the person's is attached to it now, as the lf in use says it
    /// ([`Dialect::attached`]).
    #[serde(default)]
    pub(in crate::lf) attached: bool,
    /// The agent process lf names for it (generation E2's `agent_process_id`), as the
    /// engine found it on this machine.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub(in crate::lf) agent: Option<Agent>,
}

/// A session's agent process (generation E2): lf's id for it and, once lf's process list
/// named it, its pid here and whether it has a terminal.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Agent {
    /// lf's Process id (a UUID), never an OS pid.
    pub id: String,
    /// Its process on the session's machine; `None` until lf's process list named it,
    /// or where lf cannot say.
    #[serde(default)]
    pub pid: Option<u32>,
    /// Where it runs, as far as the tray knows.
    #[serde(default)]
    pub runs: Runs,
}

/// Where an agent runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Runs {
    /// On a terminal (its controlling tty): a person's terminal, a tmux pane, a pane of
    /// Loopflow.app. The tray goes there.
    Terminal,
    /// With no terminal anyone types in (`lf -b`, a Flow step).
    Headless,
    /// Not known (yet): lf did not name its process, or it is on another machine.
    #[default]
    #[serde(other)]
    Unknown,
}

impl Agent {
    /// Whether it runs headless, as far as the tray knows.
    pub fn headless(&self) -> bool {
        self.runs == Runs::Headless
    }
}

/// A field the tray adds to lf's records, read back from another tray (a machine's
/// `lf-tray watch --json`): one it cannot read is left out rather than losing the record.
fn lenient<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    let value = Value::deserialize(deserializer)?;
    Ok(serde_json::from_value(value).ok())
}

/// Why an agent waits, as it reported itself: the newest `blocked` record of its
/// `program_status` (generation E). `kind` is lf's word (`permission`, `question`, `auth`,
/// or a newer one, kept as sent); `title` and `msg` are the agent program's own words,
/// untrusted text for every surface to escape.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Reason {
    pub kind: Option<String>,
    pub title: Option<String>,
    pub msg: Option<String>,
}

impl Reason {
    /// What the agent wants, as a person says it: "asks permission", "asks a question",
    /// "needs you to sign in"; a kind this app does not know says only that it waits.
    pub fn phrase(&self) -> &'static str {
        match self.kind.as_deref() {
            Some("permission") => "asks permission",
            Some("question") => "asks a question",
            Some("auth") => "needs you to sign in",
            _ => "waits for you",
        }
    }

    /// The short name of the kind, for a tray row ("permission: Run cargo publish").
    pub fn label(&self) -> &str {
        match self.kind.as_deref() {
            Some("auth") => "sign-in",
            Some(kind) if !kind.trim().is_empty() => kind,
            _ => "blocked",
        }
    }
}

/// How a record presents itself to the person, decided here once for every surface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presents {
    /// An Ask or a Flow review step: lf says what is asked (generations A to C).
    Asks,
    /// A conversation whose agent hands its turn back (D and later, no `kind`): lf says
    /// that it waits and, on E, why ([`SessionRecord::reason`]).
    Waits,
    /// An interactive session, or a kind this app does not know.
    Session,
}

/// A session's identity: its machine (`None`: this one) and its id there. The same id on
/// two machines is two sessions.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SessionKey {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    pub id: String,
}

/// This machine's session with that id.
impl From<&str> for SessionKey {
    fn from(id: &str) -> SessionKey {
        SessionKey::local(id)
    }
}

impl SessionKey {
    pub fn local(id: impl Into<String>) -> SessionKey {
        SessionKey {
            machine: None,
            id: id.into(),
        }
    }

    /// One string for places that only carry strings (a menu item's id, a DOM attribute):
    /// a local id as it is, unless it starts with `@`; otherwise `@<n>:` with the byte
    /// length of the machine (0 for a local `@…` id), the machine, then the id. Every key
    /// has exactly one token and [`SessionKey::parse`] reads it back, so no id, however
    /// hostile, can pass for another machine's session.
    pub fn token(&self) -> String {
        match &self.machine {
            None if !self.id.starts_with('@') => self.id.clone(),
            None => format!("@0:{}", self.id),
            Some(machine) => format!("@{}:{machine}{}", machine.len(), self.id),
        }
    }

    /// Read a [`SessionKey::token`] back; `None` for a string no key gives.
    pub fn parse(token: &str) -> Option<SessionKey> {
        let Some(rest) = token.strip_prefix('@') else {
            return Some(SessionKey::local(token));
        };
        let (len, rest) = rest.split_once(':')?;
        if len.is_empty() || !len.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let len: usize = len.parse().ok()?;
        if len == 0 {
            return Some(SessionKey::local(rest));
        }
        let machine = rest.get(..len)?;
        Some(SessionKey {
            machine: Some(machine.to_string()),
            id: rest[len..].to_string(),
        })
    }
}

/// The elements of one answer of `lf session list --json` of any generation (a plain
/// array, or a page `{"entries": [...], "next": ...}`), each as the bytes lf printed, and
/// C's and D's paging cursor. Each is decoded on its own ([`decode_element`]): one
/// element that is not a record does not lose the others.
pub(crate) fn split_list(bytes: &[u8]) -> Result<(Vec<&[u8]>, Option<String>), String> {
    // (Not an untagged enum: serde buffers those, and a `RawValue` cannot be read back
    // from the buffer.)
    #[derive(serde::Deserialize)]
    struct Listed<'a> {
        #[serde(borrow)]
        entries: Option<Vec<&'a RawValue>>,
        #[serde(default)]
        next: Option<Value>,
    }
    let invalid = |e: &dyn std::fmt::Display| format!("lf printed invalid JSON: {e}");
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace());
    match start.map(|at| bytes[at]) {
        // The list of every generation but C's and D's pages: split by its bytes, not
        // parsed, so that only what changed is read ([`super::elements`]).
        Some(b'[') => Ok((
            super::elements::array_elements(bytes).map_err(|e| invalid(&e))?,
            None,
        )),
        Some(b'{') => {
            let listed: Listed = serde_json::from_slice(bytes).map_err(|e| invalid(&e))?;
            let Some(entries) = listed.entries else {
                return Err("lf printed an object without an `entries` array".into());
            };
            let next = listed
                .next
                .as_ref()
                .and_then(Value::as_str)
                .map(str::to_string);
            Ok((
                entries.into_iter().map(|e| e.get().as_bytes()).collect(),
                next,
            ))
        }
        _ => {
            serde_json::from_slice::<Value>(bytes).map_err(|e| invalid(&e))?;
            Err("lf printed neither an array nor a page of sessions".into())
        }
    }
}

/// Why an element of lf's list gave no record.
#[derive(Debug)]
pub(crate) enum Undecoded {
    /// It is JSON, but not a session record: the problem names it, the others stand.
    Problem(String),
    /// It is not JSON: lf's answer is broken, and none of it is taken.
    Invalid(String),
}

/// One element of lf's list, or why it is not a record.
pub(crate) fn decode_element(item: &[u8]) -> Result<SessionRecord, Undecoded> {
    serde_json::from_slice::<SessionRecord>(item).map_err(|_| {
        // Rare: the element is read again whole, to say which it was as the others do.
        match serde_json::from_slice::<Value>(item) {
            Ok(value) => {
                let (_, mut problem) = decode_records(vec![value]);
                Undecoded::Problem(problem.pop().unwrap_or_default())
            }
            Err(e) => Undecoded::Invalid(format!("lf printed invalid JSON: {e}")),
        }
    })
}

/// Session records from lf's JSON values, each on its own: one that does not decode
/// becomes a problem naming its id.
pub fn decode_records(items: Vec<Value>) -> (Vec<SessionRecord>, Vec<String>) {
    let mut records = Vec::with_capacity(items.len());
    let mut problems = Vec::new();
    for item in items {
        let id = item
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("<no id>")
            .to_string();
        match serde_json::from_value::<SessionRecord>(item) {
            Ok(record) => records.push(record),
            Err(e) => problems.push(format!("session {id}: {e}")),
        }
    }
    (records, problems)
}

/// An `open_argv`'s words, for comparing with a test's.
#[cfg(test)]
pub(crate) fn words(argv: &[Arc<str>]) -> Vec<&str> {
    argv.iter().map(|word| &**word).collect()
}

/// A plain record for the core's tests; each adjusts the fields it is about.
#[cfg(test)]
pub(crate) fn test_record(id: &str, kind: Option<Kind>, state: State) -> SessionRecord {
    let mut record = SessionRecord::new(id.into(), kind, state);
    record.title = format!("title {id}");
    record.cwd = "/".into();
    record.open_argv = ["/bin/lf", "session", "open", id].map(Arc::from).into();
    record
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_keys_round_trip_through_one_token() {
        let keys = [
            SessionKey::local("ses_1"),
            SessionKey::local("@3:boxses_1"),
            SessionKey::local(""),
            SessionKey {
                machine: Some("box".into()),
                id: "ses_1".into(),
            },
            SessionKey {
                machine: Some("me@host:22".into()),
                id: "@0:x".into(),
            },
            SessionKey {
                machine: Some("bä".into()),
                id: "ünï".into(),
            },
        ];
        let tokens: Vec<String> = keys.iter().map(SessionKey::token).collect();
        for (key, token) in keys.iter().zip(&tokens) {
            assert_eq!(SessionKey::parse(token).as_ref(), Some(key), "{token}");
        }
        // A local id that looks like another machine's token stays local and distinct.
        assert_eq!(tokens[0], "ses_1");
        assert_eq!(tokens[1], "@0:@3:boxses_1");
        assert_ne!(tokens[1], tokens[3]);
        assert_eq!(tokens[3], "@3:boxses_1");
        assert_eq!(SessionKey::parse("@x:y"), None);
        assert_eq!(SessionKey::parse("@9:ab"), None);
    }

    #[test]
    fn generation_a_record_decodes_and_round_trips() {
        let json = r#"{"id":"run_9f","kind":"interactive","work":null,"title":"Fix it","detail":"claude:opus",
            "cwd":"/src/app","state":"active","ready_summary":null,"open_argv":["/usr/local/bin/lf","session","open","run_9f"]}"#;
        let record: SessionRecord = serde_json::from_str(json).unwrap();
        assert_eq!(record.kind, Some(Kind::Interactive));
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
        assert_eq!(record.kind, Some(Kind::Other("conversation".into())));
        assert_eq!(record.state, State::Other("interrupted".into()));
        assert_eq!(record.attention(), Some("reply"));
        let back = serde_json::to_value(&record).unwrap();
        assert_eq!(back["attention"], "reply");
        assert_eq!(back["kind"], "conversation");
        assert_eq!(back["state"], "interrupted");
    }

    #[test]
    fn lf_fields_round_trip_and_copies_share_them() {
        let json = r#"{"id":"s","state":"active","title":"t","work_path":"p / LOO-1",
            "workspace":{"worktree":"/src/app","branch":"main"},"program_status":{"seen":true,"records":[]},
            "agent_process_id":null}"#;
        let record: SessionRecord = serde_json::from_str(json).unwrap();
        let back = serde_json::to_value(&record).unwrap();
        let sent: Value = serde_json::from_str(json).unwrap();
        for (key, value) in sent.as_object().unwrap() {
            assert_eq!(&back[key], value, "{key}");
        }
        assert_eq!(
            serde_json::from_value::<SessionRecord>(back).unwrap(),
            record
        );
        // A copy shares lf's fields until one of them changes its own.
        let mut copy = record.clone();
        assert!(Arc::ptr_eq(&copy.extra, &record.extra));
        copy.set_lf_field("attention", "reply");
        assert!(!Arc::ptr_eq(&copy.extra, &record.extra));
        assert_eq!(record.attention(), None);
        assert_eq!(copy.attention(), Some("reply"));
        // A file record takes lf's fields from the list's record without copying them.
        let mut file = SessionRecord::new("s".into(), None, State::Active);
        file.keep_lf_fields(&record);
        assert!(Arc::ptr_eq(&file.extra, &record.extra));
        assert_eq!(file.worktree(), Some("/src/app"));
    }

    #[test]
    fn paged_lists_and_bad_elements() {
        let page = br#"{"entries":[{"id":"a","kind":"flow","state":"ready","title":"A"},{"id":"b","kind":5}],"next":null}"#;
        let (items, next) = split_list(page).unwrap();
        let decoded: Vec<_> = items.into_iter().map(decode_element).collect();
        assert_eq!(decoded[0].as_ref().unwrap().kind, Some(Kind::Flow));
        let Err(Undecoded::Problem(problem)) = &decoded[1] else {
            panic!("{:?}", decoded[1]);
        };
        assert!(problem.starts_with("session b:"), "{problem}");
        let Err(Undecoded::Invalid(broken)) = decode_element(br#"{"id" "c"}"#) else {
            panic!("not JSON is not a problem of one record");
        };
        assert!(broken.starts_with("lf printed invalid JSON: "), "{broken}");
        assert_eq!(next, None);
        let (_, more) = split_list(br#"{"entries":[],"next":"S-9"}"#).unwrap();
        assert_eq!(more.as_deref(), Some("S-9"));
        assert!(split_list(b"not json").is_err());
        assert!(split_list(b"42").is_err());
        assert!(split_list(br#"{"next":"S-9"}"#).is_err());
    }
}
