//! One Loopflow home, with records written the way lf writes them (loopflow-model.md
//! §1.2, §2.2–2.7): what `lf ask`, a provider starting, a terminal attaching, `lf session
//! ready`/`complete` and a Flow reaching a review step leave on disk.

use std::ffi::OsString;
use std::fs::{self, DirBuilder, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

use anyhow::{anyhow, bail, ensure, Context, Result};
use serde::Serialize;
use serde_json::json;
use time::OffsetDateTime;

use crate::publish;
use crate::records::{title_of, AskRecord, AskStatus, FlowSpec, RunManifest, Subject, WorkRef};
use crate::store::Store;

/// Which lf wrote the records. B′ adds `skill` and `retain_completed` to Asks, prepares
/// each Ask's Run up front (manifest plus a `prepared` marker), records `flow` in
/// manifests, and names sessions in `session-name.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Generation {
    A,
    BPrime,
}

/// `manifest.surface`: interactive (`tui`) Runs are Interactive sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    Tui,
    Headless,
}

/// How a Run ended, as `terminal.json` records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Completed,
    Failed,
    Interrupted,
}

/// What `lf ask "<prompt>"` is called with, and from where.
#[derive(Debug, Clone)]
pub struct AskSpec {
    /// The full question; its first line becomes the title.
    pub prompt: String,
    /// The asking Run's skill, which lf shows as the Ask's detail. `None` gives lf's
    /// default detail for the generation.
    pub detail: Option<String>,
    /// The caller's checkout.
    pub cwd: PathBuf,
    /// `<harness>` or `<harness>:<model>`.
    pub model: String,
    /// The asking Run's subject, e.g. `task:task_…`.
    pub work: Option<String>,
    /// B′: the Ask session's own skill.
    pub skill: Option<String>,
    /// B′: `ask_once` records survive completion.
    pub retain_completed: bool,
}

impl AskSpec {
    pub fn new(prompt: impl Into<String>, cwd: impl Into<PathBuf>) -> AskSpec {
        AskSpec {
            prompt: prompt.into(),
            detail: None,
            cwd: cwd.into(),
            model: "claude:opus".into(),
            work: None,
            skill: None,
            retain_completed: false,
        }
    }
}

/// A Run as lf publishes it.
#[derive(Debug, Clone)]
pub struct RunSpec {
    pub surface: Surface,
    pub harness: String,
    pub model: Option<String>,
    pub cwd: PathBuf,
    /// The first user message, written to `context.json`; lf titles the session with
    /// its first line.
    pub title: Option<String>,
    pub skill: Option<String>,
    /// Work selectors such as `task:task_…`.
    pub subjects: Vec<String>,
    pub created_at: OffsetDateTime,
    pub parent_run_id: Option<String>,
}

impl RunSpec {
    /// A terminal conversation with claude, started now.
    pub fn interactive(cwd: impl Into<PathBuf>, title: impl Into<String>) -> RunSpec {
        RunSpec {
            surface: Surface::Tui,
            harness: "claude".into(),
            model: Some("opus".into()),
            cwd: cwd.into(),
            title: Some(title.into()),
            skill: None,
            subjects: Vec::new(),
            created_at: OffsetDateTime::now_utc(),
            parent_run_id: None,
        }
    }
}

/// A Loopflow home the simulation writes into. `lf_home` holds `human-sessions/`,
/// `control_home` holds `runs/` and, by default, the database (lf's two resolvers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimHome {
    lf_home: PathBuf,
    control_home: PathBuf,
    db_path: PathBuf,
    generation: Generation,
}

impl SimHome {
    /// Both homes at `dir`, generation A. Nothing is written until a record is.
    pub fn new(dir: impl Into<PathBuf>) -> SimHome {
        let dir = dir.into();
        SimHome {
            db_path: dir.join("loopflow.db"),
            lf_home: dir.clone(),
            control_home: dir,
            generation: Generation::A,
        }
    }

    /// The homes lf itself would use with this environment (`LF_HOME`,
    /// `LF_CONTROL_HOME`, `LF_CONTROL_DB_PATH`, `LF_DB_PATH`, else `~/.lf`).
    pub fn from_env(var: impl Fn(&str) -> Option<OsString>) -> SimHome {
        // lf treats an empty variable as unset.
        let set = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let lf_home = set("LF_HOME").unwrap_or_else(|| {
            set("HOME")
                .unwrap_or_else(|| PathBuf::from("/"))
                .join(".lf")
        });
        let control_home = set("LF_CONTROL_HOME").unwrap_or_else(|| lf_home.clone());
        let db_path = match set("LF_CONTROL_DB_PATH").or_else(|| set("LF_DB_PATH")) {
            Some(path) => control_home.join(path),
            None => control_home.join("loopflow.db"),
        };
        SimHome {
            lf_home,
            control_home,
            db_path,
            generation: Generation::A,
        }
    }

    /// Runs and the database at `dir` instead (`LF_CONTROL_HOME`).
    pub fn with_control_home(self, dir: impl Into<PathBuf>) -> SimHome {
        let dir = dir.into();
        SimHome {
            db_path: dir.join("loopflow.db"),
            control_home: dir,
            ..self
        }
    }

    pub fn with_generation(self, generation: Generation) -> SimHome {
        SimHome { generation, ..self }
    }

    /// `LF_HOME`: where Asks live.
    pub fn home(&self) -> &Path {
        &self.lf_home
    }

    /// `LF_CONTROL_HOME`: where Runs live.
    pub fn control_home(&self) -> &Path {
        &self.control_home
    }

    pub fn db_path(&self) -> &Path {
        &self.db_path
    }

    pub fn generation(&self) -> Generation {
        self.generation
    }

    /// The variables that point lf (real or simulated) at this home.
    pub fn env(&self) -> [(&'static str, &Path); 4] {
        [
            ("LF_HOME", &self.lf_home),
            ("LF_CONTROL_HOME", &self.control_home),
            ("LF_CONTROL_DB_PATH", &self.db_path),
            ("LF_DB_PATH", &self.db_path),
        ]
    }

    pub fn asks_dir(&self) -> PathBuf {
        self.lf_home.join("human-sessions")
    }

    pub fn ask_path(&self, id: &str) -> PathBuf {
        self.asks_dir().join(format!("{id}.json"))
    }

    /// `runs/<run_id[4..6]>/<run_id>`.
    pub fn run_dir(&self, run_id: &str) -> PathBuf {
        let shard = run_id.get(4..6).unwrap_or("__");
        self.control_home.join("runs").join(shard).join(run_id)
    }

    // ---- Asks ----

    /// `lf ask`: the asking Run (headless, carrying the work subject and the skill shown
    /// as detail), in B′ the Ask's prepared Run, then the waiting record. Returns its id.
    pub fn ask(&self, spec: &AskSpec) -> Result<String> {
        let (harness, model) = match spec.model.split_once(':') {
            Some((harness, model)) => (harness.to_string(), Some(model.to_string())),
            None => (spec.model.clone(), None),
        };
        let run = |surface, parent_run_id: Option<String>, skill: Option<String>| RunSpec {
            surface,
            harness: harness.clone(),
            model: model.clone(),
            cwd: spec.cwd.clone(),
            title: None,
            skill,
            subjects: spec.work.iter().cloned().collect(),
            created_at: OffsetDateTime::now_utc(),
            parent_run_id,
        };
        let parent = self.run(&run(Surface::Headless, None, spec.detail.clone()))?;
        let b_prime = self.generation == Generation::BPrime;
        let session_run_id = if b_prime {
            let prepared = run(Surface::Tui, Some(parent.clone()), spec.skill.clone());
            Some(self.publish_run(&prepared, true)?)
        } else {
            None
        };
        let default_detail = if b_prime {
            "Request for input"
        } else {
            "Human ask"
        };
        let prompt = spec.prompt.trim();
        let record = AskRecord {
            id: format!("ask_{}", publish::unique()),
            parent_run_dir: self.run_dir(&parent),
            parent_run_id: parent,
            work: spec.work.as_deref().and_then(WorkRef::from_selector),
            work_selector: spec.work.clone(),
            title: title_of(prompt).unwrap_or_else(|| "Human ask".into()),
            detail: spec.detail.clone().unwrap_or_else(|| default_detail.into()),
            prompt: prompt.into(),
            skill: b_prime.then(|| spec.skill.clone()),
            cwd: spec.cwd.clone(),
            model: spec.model.clone(),
            session_run_id,
            ready_summary: None,
            status: AskStatus::Waiting,
            retain_completed: b_prime.then_some(spec.retain_completed),
        };
        self.write_ask(&record)?;
        Ok(record.id)
    }

    /// `lf session ready "<summary>"` run by the Ask's agent.
    pub fn set_ready(&self, id: &str, summary: &str) -> Result<()> {
        self.update_ask(id, |record| record.ready_summary = Some(summary.into()))
    }

    /// Generation A: the provider started and its Run now holds the conversation.
    pub fn set_ask_session_run(&self, id: &str, run_id: &str) -> Result<()> {
        self.update_ask(id, |record| record.session_run_id = Some(run_id.into()))
    }

    /// The Run that holds the Ask's conversation, if any yet.
    pub fn ask_session_run(&self, id: &str) -> Result<Option<String>> {
        let record = self.read_ask(id)?.ok_or_else(|| not_found(id))?;
        Ok(record.session_run_id)
    }

    /// `lf session complete <ask>` as a person runs it: needs the agent's ready summary,
    /// settles the Ask's Run, and marks the record completed (the file stays until the
    /// blocked `lf ask` consumes it: [`SimHome::remove_ask`]). Returns the summary.
    pub fn complete(&self, id: &str) -> Result<String> {
        let mut record = self.read_ask(id)?.ok_or_else(|| not_found(id))?;
        if matches!(record.status, AskStatus::Completed { .. }) {
            bail!("Ask session {id:?} is already complete");
        }
        let summary = record.ready_summary.clone().ok_or_else(|| {
            anyhow!(
                "Ask session {id:?} is not ready; its agent must run \
                 `lf session ready \"<summary>\"` first"
            )
        })?;
        if let Some(run_id) = &record.session_run_id {
            if let Some((dir, _)) = self.find_run(run_id)? {
                self.settle(&dir, false)?;
            }
        }
        record.status = AskStatus::Completed {
            summary: summary.clone(),
        };
        self.write_ask(&record)?;
        Ok(summary)
    }

    /// The blocked `lf ask` saw the completion and consumed the record.
    pub fn remove_ask(&self, id: &str) -> Result<()> {
        let path = self.ask_path(id);
        fs::remove_file(&path).with_context(|| format!("remove {}", path.display()))
    }

    // ---- Runs ----

    /// Publish a Run (manifest, and `context.json` when it has a title). Returns its id.
    pub fn run(&self, spec: &RunSpec) -> Result<String> {
        self.publish_run(spec, false)
    }

    /// The provider reported its session id: `provider-session.json`. In B′ this is
    /// when a prepared Run starts, so its `prepared` marker goes (through `launching`).
    pub fn provider_session(&self, run_id: &str) -> Result<()> {
        let dir = self.existing_run(run_id)?;
        let prepared = dir.join("prepared");
        if prepared.is_file() {
            let launching = dir.join("launching");
            fs::rename(&prepared, &launching).context("claim prepared Run")?;
            fs::remove_file(&launching).context("finish launching Run")?;
        }
        #[derive(Serialize)]
        struct ProviderSession {
            schema_version: u32,
            provider_session_id: String,
            account_id: Option<String>,
        }
        let record = ProviderSession {
            schema_version: 1,
            provider_session_id: uuid::Uuid::new_v4().to_string(),
            account_id: None,
        };
        let staging = format!(".provider-session-{}.staging", publish::unique());
        publish::file(
            &dir,
            &staging,
            "provider-session.json",
            &publish::json(&record),
        )
    }

    /// The other way lf learns the provider session: a `provider_session_observed` line
    /// appended to `events.jsonl`.
    pub fn provider_session_event(&self, run_id: &str) -> Result<()> {
        let dir = self.existing_run(run_id)?;
        let path = dir.join("events.jsonl");
        let seq = match fs::read_to_string(&path) {
            Ok(text) => text.lines().count() + 1,
            Err(e) if e.kind() == ErrorKind::NotFound => 1,
            Err(e) => return Err(e).with_context(|| format!("read {}", path.display())),
        };
        let event = json!({
            "schema_version": 1,
            "seq": seq,
            "observed_at": rfc3339(OffsetDateTime::now_utc()),
            "type": "provider_session_observed",
            "provider_session_id": uuid::Uuid::new_v4().to_string(),
        });
        let mut line = serde_json::to_vec(&event)?;
        line.push(b'\n');
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(&path)
            .with_context(|| format!("open {}", path.display()))?;
        file.write_all(&line)?;
        file.sync_all()
            .with_context(|| format!("append to {}", path.display()))
    }

    /// A provider process attached to the Run: `provider-clients/<pid>.json`. lf checks
    /// `started_at` (unix seconds) against the process's real start time, see
    /// [`crate::process_start_time`].
    pub fn client(&self, run_id: &str, pid: u32, started_at: i64) -> Result<()> {
        ensure!(pid > 1, "a provider client pid must be greater than 1");
        let dir = self.existing_run(run_id)?;
        let stop = dir
            .join("provider-client-stops")
            .join(format!("{pid}.json"));
        match fs::remove_file(&stop) {
            Err(e) if e.kind() != ErrorKind::NotFound => {
                return Err(e).with_context(|| format!("remove {}", stop.display()))
            }
            _ => {}
        }
        #[derive(Serialize)]
        struct ProviderClient {
            schema_version: u32,
            pid: u32,
            terminal_id: Option<String>,
            #[serde(with = "time::serde::rfc3339")]
            started_at: OffsetDateTime,
        }
        let record = ProviderClient {
            schema_version: 1,
            pid,
            terminal_id: None,
            started_at: OffsetDateTime::from_unix_timestamp(started_at)?,
        };
        let staging = format!(".{pid}-{}.staging", publish::unique());
        publish::file(
            &dir.join("provider-clients"),
            &staging,
            &format!("{pid}.json"),
            &publish::json(&record),
        )
    }

    /// The provider process detached (its terminal closed).
    pub fn remove_client(&self, run_id: &str, pid: u32) -> Result<()> {
        let path = self
            .run_dir(run_id)
            .join("provider-clients")
            .join(format!("{pid}.json"));
        fs::remove_file(&path).with_context(|| format!("remove {}", path.display()))
    }

    /// The session was completed: `session-resolution.json`.
    pub fn resolve(&self, run_id: &str) -> Result<()> {
        let dir = self.existing_run(run_id)?;
        write_resolution(&dir)
    }

    /// B′: a person named the session (`lf session rename`).
    pub fn name(&self, run_id: &str, title: &str) -> Result<()> {
        ensure!(
            self.generation == Generation::BPrime,
            "session-name.json is a generation B′ record"
        );
        let dir = self.existing_run(run_id)?;
        let staging = format!(".session-name-{}.staging", publish::unique());
        let name = json!({"title": title, "source": "human"});
        publish::file(&dir, &staging, "session-name.json", &publish::json(&name))
    }

    /// The Run ended: `terminal.json`, written once like lf does.
    pub fn terminal_receipt(&self, run_id: &str, outcome: Outcome) -> Result<()> {
        let dir = self.existing_run(run_id)?;
        #[derive(Serialize)]
        struct TerminalReceipt {
            schema_version: u32,
            outcome: Outcome,
            #[serde(with = "time::serde::rfc3339")]
            ended_at: OffsetDateTime,
            result_ref: Option<String>,
        }
        let receipt = TerminalReceipt {
            schema_version: 1,
            outcome,
            ended_at: OffsetDateTime::now_utc(),
            result_ref: None,
        };
        let staging = format!(".terminal-{}.staging", publish::unique());
        publish::file_once(&dir, &staging, "terminal.json", &publish::json(&receipt))
    }

    // ---- Flows ----

    /// Replace the Flow review steps waiting on a person.
    pub fn flows(&self, flows: &[FlowSpec]) -> Result<()> {
        self.update_flows(|all| {
            *all = flows.to_vec();
            Ok(())
        })
    }

    /// The Flow review steps as the simulated database holds them.
    pub fn flow_list(&self) -> Result<Vec<FlowSpec>> {
        // Reading must not create a database where lf has not made one yet.
        if !self.db_path.exists() {
            return Ok(Vec::new());
        }
        self.store()?
            .flow_list()
            .with_context(|| format!("read Flow sessions from {}", self.db_path.display()))
    }

    /// Read, change and write the Flow sessions as one SQLite transaction: SimHome calls
    /// and the stand-in `lf` may run at the same time (the demo's timeline while the user
    /// approves), and SQLite's write lock with lf's busy timeout serializes them.
    pub(crate) fn update_flows<T>(
        &self,
        change: impl FnOnce(&mut Vec<FlowSpec>) -> Result<T>,
    ) -> Result<T> {
        self.store()?.update_flows(change)
    }

    /// The home's database (created in WAL mode if missing), for Sessions of
    /// generations C, D0 and D and for the Process rows every such lf call adds.
    pub fn store(&self) -> Result<Store> {
        Store::open(&self.db_path)
    }

    // ---- Anything else ----

    /// Publish arbitrary bytes at `rel_path` under [`SimHome::home`] (atomically, like
    /// every record), for bad-input tests.
    pub fn raw(&self, rel_path: impl AsRef<Path>, bytes: &[u8]) -> Result<()> {
        let rel = rel_path.as_ref();
        ensure!(
            rel.components().all(|c| matches!(c, Component::Normal(_))),
            "{} is not a plain relative path",
            rel.display()
        );
        let target = self.lf_home.join(rel);
        let dir = target
            .parent()
            .expect("a joined relative path has a parent");
        let name = file_name(&target)?;
        let staging = format!(".{name}.{}.staging", publish::unique());
        publish::file(dir, &staging, name, bytes)
    }

    // ---- What the stand-in lf reads ----

    pub(crate) fn read_ask(&self, id: &str) -> Result<Option<AskRecord>> {
        // An id that is not a plain file name cannot name an Ask record.
        if id.is_empty() || id.starts_with('.') || id.contains(['/', '\0']) {
            return Ok(None);
        }
        let bytes = match fs::read(self.ask_path(id)) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).context("read human session record"),
        };
        let record: AskRecord =
            serde_json::from_slice(&bytes).context("parse human session record")?;
        ensure!(record.id == id, "human session record {id:?} is invalid");
        Ok(Some(record))
    }

    /// Ask ids in `human-sessions/`, from the `*.json` names (dot-files and staging
    /// files are not records).
    pub(crate) fn ask_ids(&self) -> Result<Vec<String>> {
        let entries = match fs::read_dir(self.asks_dir()) {
            Ok(entries) => entries,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e).context("read human session directory"),
        };
        let mut ids = Vec::new();
        for entry in entries {
            let name = entry.context("read human session entry")?.file_name();
            if let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".json")) {
                if !id.starts_with('.') {
                    ids.push(id.to_string());
                }
            }
        }
        Ok(ids)
    }

    /// lf's `resolve_manifest`: the Run whose directory name starts with `selector`,
    /// with or without `run_`.
    pub(crate) fn find_run(&self, selector: &str) -> Result<Option<(PathBuf, RunManifest)>> {
        let selector = selector.trim();
        ensure!(!selector.is_empty(), "Run id cannot be empty");
        let mut found = Vec::new();
        for shard in read_dirs(&self.control_home.join("runs"))? {
            for dir in read_dirs(&shard)? {
                let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
                let hex = name.strip_prefix("run_").unwrap_or(name);
                if name.starts_with(selector) || hex.starts_with(selector) {
                    found.push(dir);
                }
            }
        }
        ensure!(found.len() < 2, "Run prefix {selector} is ambiguous");
        let Some(dir) = found.pop() else {
            return Ok(None);
        };
        let manifest = read_manifest(&dir)?;
        Ok(Some((dir, manifest)))
    }

    /// What lf does to a session's Run when the session is completed: its clients are
    /// stopped (the simulation only removes their records; it never signals a pid
    /// someone wrote into a file) and, if it has provider history, it is resolved.
    /// `always` resolves it regardless (an Interactive session being completed).
    pub(crate) fn settle(&self, dir: &Path, always: bool) -> Result<()> {
        let clients = dir.join("provider-clients");
        for entry in read_entries(&clients)? {
            let name = entry.file_name();
            if name.to_str().is_some_and(|n| n.ends_with(".json")) {
                fs::remove_file(entry.path()).context("remove provider client record")?;
            }
        }
        let resolved = dir.join("session-resolution.json").exists();
        if !resolved && (always || has_provider_session(dir)) {
            write_resolution(dir)?;
        }
        Ok(())
    }

    // ---- Writing ----

    fn write_ask(&self, record: &AskRecord) -> Result<()> {
        let staging = format!("{}.{}.tmp", record.id, publish::unique());
        let name = format!("{}.json", record.id);
        publish::file(&self.asks_dir(), &staging, &name, &publish::json(record))
    }

    fn update_ask(&self, id: &str, change: impl FnOnce(&mut AskRecord)) -> Result<()> {
        let mut record = self.read_ask(id)?.ok_or_else(|| not_found(id))?;
        change(&mut record);
        self.write_ask(&record)
    }

    /// lf's `publish_manifest`: the Run's files are built in `.<run_id>.staging/` and the
    /// directory is renamed into place, so a Run never appears without its manifest.
    fn publish_run(&self, spec: &RunSpec, prepared: bool) -> Result<String> {
        let run_id = format!("run_{}", publish::unique());
        let manifest = RunManifest {
            schema_version: 1,
            run_id: run_id.clone(),
            parent_run_id: spec.parent_run_id.clone(),
            created_at: spec.created_at,
            harness: spec.harness.clone(),
            model: spec.model.clone(),
            surface: match spec.surface {
                Surface::Tui => "tui",
                Surface::Headless => "headless",
            }
            .into(),
            cwd: spec.cwd.clone(),
            repo: None,
            worktree: Some(spec.cwd.clone()),
            skill: spec.skill.clone(),
            subjects: spec
                .subjects
                .iter()
                .map(|selector| Subject {
                    selector: selector.clone(),
                    source: "declared".into(),
                })
                .collect(),
            launch: None,
            // lf records a digest of context.json here; readers of session titles read
            // context.json itself, so the simulation leaves the reference out.
            context: None,
            runtime_path: None,
            runtime_digest: None,
            host: kernel_value("hostname").unwrap_or_else(|| "localhost".into()),
            boot_id: kernel_value("random/boot_id"),
            flow: (self.generation == Generation::BPrime).then(|| json!({"kind": "independent"})),
        };
        let final_dir = self.run_dir(&run_id);
        let shard = final_dir.parent().expect("run dirs sit in a shard");
        publish::dir(shard)?;
        let staging = shard.join(format!(".{run_id}.staging"));
        DirBuilder::new()
            .mode(0o700)
            .create(&staging)
            .with_context(|| format!("create {}", staging.display()))?;
        publish::new_file(&staging.join("manifest.json"), &publish::json(&manifest))?;
        if let Some(title) = &spec.title {
            let context = json!({"schema_version": 1, "context": {"task": {"text": title}}});
            publish::new_file(&staging.join("context.json"), &publish::json(&context))?;
        }
        if prepared {
            publish::new_file(&staging.join("prepared"), b"")?;
        }
        fs::rename(&staging, &final_dir)
            .with_context(|| format!("publish {}", final_dir.display()))?;
        Ok(run_id)
    }

    fn existing_run(&self, run_id: &str) -> Result<PathBuf> {
        let dir = self.run_dir(run_id);
        read_manifest(&dir)?;
        Ok(dir)
    }
}

pub(crate) fn not_found(id: &str) -> anyhow::Error {
    anyhow!("Session {id} was not found")
}

pub(crate) fn read_manifest(dir: &Path) -> Result<RunManifest> {
    let path = dir.join("manifest.json");
    let bytes = fs::read(&path).with_context(|| format!("read {}", path.display()))?;
    let manifest: RunManifest =
        serde_json::from_slice(&bytes).with_context(|| format!("parse {}", path.display()))?;
    ensure!(
        manifest.schema_version == 1,
        "unsupported Run manifest schema {}; expected 1",
        manifest.schema_version
    );
    Ok(manifest)
}

/// A provider session is known from `provider-session.json` or an observed event.
pub(crate) fn has_provider_session(dir: &Path) -> bool {
    dir.join("provider-session.json").is_file()
        || fs::read_to_string(dir.join("events.jsonl")).is_ok_and(|events| {
            events.lines().any(|line| {
                serde_json::from_str::<serde_json::Value>(line)
                    .is_ok_and(|e| e["type"] == "provider_session_observed")
            })
        })
}

fn write_resolution(dir: &Path) -> Result<()> {
    #[derive(Serialize)]
    struct Resolution {
        schema_version: u32,
        #[serde(with = "time::serde::rfc3339")]
        resolved_at: OffsetDateTime,
    }
    let record = Resolution {
        schema_version: 1,
        resolved_at: OffsetDateTime::now_utc(),
    };
    let staging = format!(".session-resolution-{}.staging", publish::unique());
    publish::file(
        dir,
        &staging,
        "session-resolution.json",
        &publish::json(&record),
    )
}

fn read_entries(dir: &Path) -> Result<Vec<fs::DirEntry>> {
    match fs::read_dir(dir) {
        Ok(entries) => entries
            .collect::<Result<_, _>>()
            .with_context(|| format!("read {}", dir.display())),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e).with_context(|| format!("read {}", dir.display())),
    }
}

/// Subdirectories, skipping dot-names (staging directories).
fn read_dirs(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut dirs = Vec::new();
    for entry in read_entries(dir)? {
        let visible = entry
            .file_name()
            .to_str()
            .is_some_and(|n| !n.starts_with('.'));
        if visible && entry.file_type().is_ok_and(|t| t.is_dir()) {
            dirs.push(entry.path());
        }
    }
    Ok(dirs)
}

fn file_name(path: &Path) -> Result<&str> {
    path.file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| anyhow!("{} has no UTF-8 file name", path.display()))
}

fn kernel_value(name: &str) -> Option<String> {
    let value = fs::read_to_string(Path::new("/proc/sys/kernel").join(name)).ok()?;
    Some(value.trim().to_string()).filter(|v| !v.is_empty())
}

pub(crate) fn rfc3339(at: OffsetDateTime) -> String {
    at.format(&time::format_description::well_known::Rfc3339)
        .expect("a current time formats as RFC 3339")
}
