//! lf's SQLite database (loopflow-model.md §3, §9.4, §9.7) as the simulation keeps it:
//! one real file in WAL mode, written one transaction per change with lf's 15 s busy
//! timeout, with a `store_revisions` row per domain that every commit moves, because
//! that table is what lf's own readers trust to say what changed.
//!
//! The tables are the simulation's own (lf's schema moves every generation and no
//! reader may rely on it); only the shapes the CLI projects from them follow lf.

use std::collections::HashMap;
use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, ensure, Context, Result};
use rusqlite::types::Value as Sql;
use rusqlite::{params, params_from_iter, Connection, OptionalExtension, TransactionBehavior};
use serde::{Deserialize, Serialize};

use crate::home::not_found;
use crate::publish;
use crate::records::FlowSpec;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS store_revisions (
    domain TEXT PRIMARY KEY,
    revision INTEGER NOT NULL
);
INSERT OR IGNORE INTO store_revisions (domain, revision) VALUES
    ('planning', 0), ('sessions', 0), ('flows', 0), ('processes', 0), ('usage', 0);
CREATE TABLE IF NOT EXISTS processes (
    id INTEGER PRIMARY KEY,
    pid INTEGER NOT NULL,
    argv TEXT NOT NULL,
    started_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS flow_positions (
    position INTEGER PRIMARY KEY,
    spec TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    title_source TEXT NOT NULL,
    cwd TEXT NOT NULL,
    repo TEXT,
    interactive INTEGER NOT NULL,
    provider TEXT,
    model TEXT,
    work_path TEXT,
    task_id TEXT,
    kind TEXT,
    ready_summary TEXT,
    review_attention TEXT,
    client_pid INTEGER,
    interrupted INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL,
    completed_at REAL
);
CREATE TABLE IF NOT EXISTS session_activity (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id),
    observed_at REAL NOT NULL,
    open_tools INTEGER NOT NULL,
    pending_input INTEGER NOT NULL,
    yielded INTEGER NOT NULL
);
PRAGMA user_version = 1;
";

/// Generation E's additions (loopflow-model.md §10): the agent process whose liveness
/// decides Waiting (and E2's `state`), the provider generation E1 reports, the agent
/// program's own status reports, and the planning syncs a scoped reader starts. A
/// version-1 store created by an older stand-in is migrated in place.
const SCHEMA_2: &str = "
ALTER TABLE sessions ADD COLUMN agent_pid INTEGER;
ALTER TABLE sessions ADD COLUMN provider_generation INTEGER NOT NULL DEFAULT 1;
CREATE TABLE IF NOT EXISTS program_status (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    state TEXT NOT NULL,
    status_id TEXT NOT NULL,
    kind TEXT,
    progress INTEGER,
    app TEXT,
    title TEXT,
    msg TEXT,
    reported_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS program_status_by_session ON program_status (session_id, seq);
CREATE TABLE IF NOT EXISTS planning_syncs (
    id INTEGER PRIMARY KEY,
    repo TEXT NOT NULL,
    pid INTEGER NOT NULL,
    started_at REAL NOT NULL
);
PRAGMA user_version = 2;
";

/// Generation E2's agent processes (loopflow-model.md §10.6): lf's own Process rows for
/// the agents it launched or was told of, keyed by lf's Process id (a UUID, never an OS
/// pid), with the OS `pid` and `os_started_at` (unix seconds, ~1 s resolution) that
/// liveness is judged by. `lf_*` name the lf process that launched the agent and waits
/// on it (null for an agent lf was only told of). `moved_at` is set by a Move here just
/// before it stops the agent, so that the agent's own lf can tell a move from a death.
/// `conversation_id` is the provider's conversation, which resumes never name by the
/// Session id.
const SCHEMA_3: &str = "
CREATE TABLE IF NOT EXISTS agent_processes (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    provider TEXT NOT NULL,
    pid INTEGER,
    os_started_at INTEGER,
    headless INTEGER NOT NULL,
    lf_id TEXT,
    lf_pid INTEGER,
    lf_os_started_at INTEGER,
    lf_label TEXT,
    started_at REAL NOT NULL,
    exited_at REAL,
    exit_code INTEGER,
    moved_at REAL
);
ALTER TABLE sessions ADD COLUMN agent_process_id TEXT;
ALTER TABLE sessions ADD COLUMN conversation_id TEXT;
PRAGMA user_version = 3;
";

/// lf ends each Process row as its process exits (`record_process_within`'s upsert):
/// one more commit, moving `processes` again.
const SCHEMA_4: &str = "
ALTER TABLE processes ADD COLUMN completed_at REAL;
ALTER TABLE processes ADD COLUMN exit_code INTEGER;
PRAGMA user_version = 4;
";

/// lf's pid-reuse tolerance: a process whose start time is more than this far from the
/// recorded `os_started_at` is another process that reused the pid. `ps etime` and
/// `/proc` both give whole seconds, so an honest reading is off by at most ~1 s; lf
/// allows 3.
pub const START_TOLERANCE_SECONDS: i64 = 3;

/// How lf judges a recorded process at read time (§10.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveness {
    Alive,
    /// Gone, a zombie, its pid reused, or its exit recorded.
    Dead,
    /// No pid or no start time was recorded, or the process table could not be read.
    Unknown,
}

/// lf's check: the process exists, is no zombie, and started when it was recorded to.
pub fn judge(pid: Option<u32>, os_started_at: Option<i64>) -> Liveness {
    let (Some(pid), Some(recorded)) = (pid, os_started_at) else {
        return Liveness::Unknown;
    };
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Liveness::Dead,
        Err(_) => return Liveness::Unknown,
        Ok(_) if !alive(pid) => return Liveness::Dead,
        Ok(_) => {}
    }
    match crate::process::process_start_time(pid) {
        Ok(started) if (started - recorded).abs() <= START_TOLERANCE_SECONDS => Liveness::Alive,
        Ok(_) => Liveness::Dead,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Liveness::Dead,
        Err(_) => Liveness::Unknown,
    }
}

/// An agent process as lf records it when it launches one, or is told of one.
#[derive(Debug, Clone)]
pub(crate) struct AgentStart {
    pub session_id: String,
    pub provider: String,
    pub pid: u32,
    pub os_started_at: Option<i64>,
    pub headless: bool,
    /// The launching lf: its Process id, pid, start and label (`lf session`).
    pub lf: Option<(String, u32, Option<i64>, String)>,
}

/// One row of `agent_processes`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AgentRow {
    pub id: String,
    pub session_id: String,
    pub provider: String,
    pub pid: Option<u32>,
    pub os_started_at: Option<i64>,
    pub headless: bool,
    pub lf_id: Option<String>,
    pub lf_pid: Option<u32>,
    pub lf_os_started_at: Option<i64>,
    pub lf_label: Option<String>,
    pub exited: bool,
    pub moved: bool,
    pub repo: Option<String>,
    pub cwd: String,
}

impl AgentRow {
    pub fn liveness(&self) -> Liveness {
        if self.exited {
            Liveness::Dead
        } else {
            judge(self.pid, self.os_started_at)
        }
    }
}

const AGENT_COLUMNS: &str = "ap.id, ap.session_id, ap.provider, ap.pid, ap.os_started_at, \
    ap.headless, ap.lf_id, ap.lf_pid, ap.lf_os_started_at, ap.lf_label, \
    ap.exited_at IS NOT NULL, ap.moved_at IS NOT NULL, s.repo, s.cwd";

fn read_agent(r: &rusqlite::Row) -> rusqlite::Result<AgentRow> {
    Ok(AgentRow {
        id: r.get(0)?,
        session_id: r.get(1)?,
        provider: r.get(2)?,
        pid: r.get(3)?,
        os_started_at: r.get(4)?,
        headless: r.get(5)?,
        lf_id: r.get(6)?,
        lf_pid: r.get(7)?,
        lf_os_started_at: r.get(8)?,
        lf_label: r.get(9)?,
        exited: r.get(10)?,
        moved: r.get(11)?,
        repo: r.get(12)?,
        cwd: r.get(13)?,
    })
}

/// The program-status states and kinds of `swift/Loopflow/Models/ProgramStatus.swift`.
pub const PROGRAM_STATES: [&str; 6] = ["idle", "working", "done", "blocked", "error", "clear"];
pub const PROGRAM_KINDS: [&str; 3] = ["permission", "question", "auth"];

/// The provider lf launches when a Session names none.
pub(crate) const DEFAULT_PROVIDER: &str = "claude";

/// lf's `WAITING_QUIET_SECONDS`.
pub const DEFAULT_QUIET_SECONDS: f64 = 120.0;

/// Seconds since the epoch with sub-second precision, so that tests can use quiet
/// windows of a second or two.
pub(crate) fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The `store_revisions` table: each domain's commit counter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Revisions {
    pub planning: i64,
    pub sessions: i64,
    pub flows: i64,
    pub processes: i64,
    pub usage: i64,
}

/// What an agent's stream last said about a Session (§9.4's `session_activity` row).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activity {
    /// A question or approval is pending: Waiting at once.
    Ask,
    /// The turn ended successfully: Waiting at once if the Session is interactive.
    HandBack,
    /// A tool is running: not Waiting, however long it takes.
    Working,
    /// Output without a signal: Waiting once the quiet window passes with no write.
    Quiet,
}

/// One report of an agent program's own status (§10.2's `program_status.records[]`), as
/// its terminal sends it through `lf session observe-status`. `title` and `msg` are the
/// program's words.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusReport {
    /// idle, working, done, blocked, error or clear.
    pub state: String,
    /// The report's id; [`Store::report_status`] numbers an empty one `status-<n>`.
    pub id: String,
    /// permission, question or auth.
    pub kind: Option<String>,
    pub progress: Option<i64>,
    pub app: Option<String>,
    pub title: Option<String>,
    pub msg: Option<String>,
}

impl StatusReport {
    pub fn new(state: impl Into<String>) -> Self {
        StatusReport {
            state: state.into(),
            id: String::new(),
            kind: None,
            progress: None,
            app: None,
            title: None,
            msg: None,
        }
    }
}

/// Which of §9.4's rules reads Waiting: D's first one, or the newest (generation E),
/// where a dead agent never waits and the program's own status overrides inference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct WaitingRule {
    /// The quiet window, in seconds.
    pub quiet: f64,
    pub newest: bool,
}

/// Who named a Session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TitleSource {
    Generated,
    Human,
}

impl TitleSource {
    pub fn as_str(self) -> &'static str {
        match self {
            TitleSource::Generated => "generated",
            TitleSource::Human => "human",
        }
    }
}

/// A Session as an agent's lf creates it (generations C, D0 and D).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSpec {
    pub id: String,
    pub title: String,
    pub cwd: PathBuf,
    /// The canonical repository root; [`SessionSpec::new`] discovers it from `cwd`.
    pub repo: Option<PathBuf>,
    pub interactive: bool,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub work_path: Option<String>,
    pub task: Option<String>,
    /// Generation C only: `flow` or `conversation` (the default).
    pub kind: Option<String>,
}

impl SessionSpec {
    /// An interactive Session in `cwd`, in whatever repository contains `cwd`.
    pub fn new(id: impl Into<String>, title: impl Into<String>, cwd: impl Into<PathBuf>) -> Self {
        let cwd = cwd.into();
        SessionSpec {
            id: id.into(),
            title: title.into(),
            repo: repo_of(&cwd),
            cwd,
            interactive: true,
            provider: None,
            model: None,
            work_path: None,
            task: None,
            kind: None,
        }
    }
}

/// The repository containing `path`, as lf's `CanonicalRepo` finds it: the nearest
/// ancestor holding `.git` (a directory, or a worktree's file), canonicalized.
pub fn repo_of(path: &Path) -> Option<PathBuf> {
    let path = path.canonicalize().ok()?;
    path.ancestors()
        .find(|dir| dir.join(".git").exists())
        .map(Path::to_path_buf)
}

/// A connection to a home's database. Every change is one committed transaction.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl Store {
    /// Open (creating if needed) the database at `path`, in WAL mode.
    pub fn open(path: impl AsRef<Path>) -> Result<Store> {
        let path = path.as_ref().to_path_buf();
        if let Some(dir) = path.parent() {
            publish::dir(dir)?;
        }
        // SQLite gives `-wal` and `-shm` the database file's mode, so creating the
        // file private first keeps all three private, as lf's home is.
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&path)
            .with_context(|| format!("create {}", path.display()))?;
        let conn = Connection::open(&path).with_context(|| format!("open {}", path.display()))?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // Switching a new file to WAL and creating the tables happen while other lf
        // processes may hold rollback-mode locks on it; SQLite then answers busy without
        // calling the busy handler (to avoid deadlock), so wait here as the handler would.
        let started = Instant::now();
        loop {
            match initialize(&conn) {
                Ok(()) => break,
                Err(e) if is_busy(&e) && started.elapsed() < BUSY_TIMEOUT => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => {
                    return Err(e).with_context(|| format!("open {}", path.display()));
                }
            }
        }
        Ok(Store { conn, path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// One transaction that moves the revisions of `domains` when it commits, inside it
    /// as lf's triggers do, where this lf keeps them (D and later; see
    /// [`Store::drop_revisions`]).
    fn write<T>(
        &mut self,
        domains: &[&str],
        change: impl FnOnce(&rusqlite::Transaction) -> Result<T>,
    ) -> Result<T> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let out = change(&tx)?;
        let kept: bool = tx.query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'store_revisions')",
            [],
            |r| r.get(0),
        )?;
        for domain in domains.iter().filter(|_| kept) {
            tx.execute(
                "UPDATE store_revisions SET revision = revision + 1 WHERE domain = ?1",
                [domain],
            )?;
        }
        tx.commit()?;
        Ok(out)
    }

    /// lf of generations C and D0 keeps no `store_revisions` (lf added it with D's
    /// reader): a store first made for a test is made so once such an lf opens it.
    pub(crate) fn drop_revisions(&mut self) -> Result<()> {
        let kept: bool = self.conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'store_revisions')",
            [],
            |r| r.get(0),
        )?;
        if kept {
            self.conn
                .execute_batch("DROP TABLE IF EXISTS store_revisions")?;
        }
        Ok(())
    }

    pub fn revisions(&self) -> Result<Revisions> {
        let mut revisions = Revisions::default();
        let mut stmt = self
            .conn
            .prepare_cached("SELECT domain, revision FROM store_revisions")?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
        for row in rows {
            let (domain, revision) = row?;
            match domain.as_str() {
                "planning" => revisions.planning = revision,
                "sessions" => revisions.sessions = revision,
                "flows" => revisions.flows = revision,
                "processes" => revisions.processes = revision,
                "usage" => revisions.usage = revision,
                _ => {}
            }
        }
        Ok(revisions)
    }

    // ---- Processes ----

    /// lf records one Process per invocation as it starts, in its own commit. Returns
    /// the row, for [`Store::end_process`].
    pub fn record_process(&mut self, pid: u32, argv: &[String]) -> Result<i64> {
        let argv = serde_json::to_string(argv)?;
        self.write(&["processes"], |tx| {
            tx.execute(
                "INSERT INTO processes (pid, argv, started_at) VALUES (?1, ?2, ?3)",
                params![pid, argv, now()],
            )?;
            Ok(tx.last_insert_rowid())
        })
    }

    /// The process of that row exits with `code`: lf's second commit for it.
    pub fn end_process(&mut self, row: i64, code: i32) -> Result<()> {
        self.write(&["processes"], |tx| {
            tx.execute(
                "UPDATE processes SET completed_at = ?2, exit_code = ?3
                 WHERE id = ?1 AND completed_at IS NULL",
                params![row, now(), code],
            )?;
            Ok(())
        })
    }

    pub fn process_count(&self) -> Result<u64> {
        let n: i64 = self
            .conn
            .query_row("SELECT COUNT(*) FROM processes", [], |r| r.get(0))?;
        Ok(n as u64)
    }

    /// The argv of every recorded Process, oldest first.
    pub fn process_argvs(&self) -> Result<Vec<Vec<String>>> {
        let mut stmt = self
            .conn
            .prepare("SELECT argv FROM processes ORDER BY id")?;
        let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
        rows.map(|argv| Ok(serde_json::from_str(&argv?)?)).collect()
    }

    // ---- Generation A's Flow positions ----

    pub(crate) fn flow_list(&self) -> Result<Vec<FlowSpec>> {
        read_flows(&self.conn)
    }

    /// Read, change and write the Flow positions in one transaction.
    pub(crate) fn update_flows<T>(
        &mut self,
        change: impl FnOnce(&mut Vec<FlowSpec>) -> Result<T>,
    ) -> Result<T> {
        self.write(&["flows"], |tx| {
            let mut flows = read_flows(tx)?;
            let out = change(&mut flows)?;
            tx.execute("DELETE FROM flow_positions", [])?;
            let mut insert =
                tx.prepare("INSERT INTO flow_positions (position, spec) VALUES (?1, ?2)")?;
            for (position, flow) in flows.iter().enumerate() {
                insert.execute(params![position as i64, serde_json::to_string(flow)?])?;
            }
            Ok(out)
        })
    }

    // ---- Sessions ----

    /// Create Sessions in one transaction (one `sessions` revision for all of them).
    pub fn create_sessions(&mut self, specs: &[SessionSpec]) -> Result<()> {
        for spec in specs {
            if let Some(kind) = &spec.kind {
                ensure!(
                    matches!(kind.as_str(), "flow" | "conversation"),
                    "a Session kind is flow or conversation, not {kind:?}"
                );
            }
        }
        self.write(&["sessions"], |tx| {
            let mut insert = tx.prepare(
                "INSERT INTO sessions (id, title, title_source, cwd, repo, interactive, provider,
                     model, work_path, task_id, kind, created_at)
                 VALUES (?1, ?2, 'generated', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            )?;
            let created = now();
            for s in specs {
                insert
                    .execute(params![
                        s.id,
                        s.title,
                        s.cwd.display().to_string(),
                        s.repo.as_ref().map(|r| r.display().to_string()),
                        s.interactive,
                        s.provider,
                        s.model,
                        s.work_path,
                        s.task,
                        s.kind,
                        created,
                    ])
                    .with_context(|| format!("create Session {}", s.id))?;
            }
            Ok(())
        })
    }

    pub fn create_session(&mut self, spec: &SessionSpec) -> Result<()> {
        self.create_sessions(std::slice::from_ref(spec))
    }

    /// A change to one existing Session: `sql` gets the id as `?1` and `values` after it.
    fn change_session(&mut self, id: &str, sql: &str, values: Vec<Sql>) -> Result<()> {
        self.write(&["sessions"], |tx| {
            let exists: bool = tx.query_row(
                "SELECT EXISTS (SELECT 1 FROM sessions WHERE id = ?1)",
                [id],
                |r| r.get(0),
            )?;
            if !exists {
                return Err(not_found(id));
            }
            let mut all = vec![Sql::Text(id.into())];
            all.extend(values);
            tx.execute(sql, params_from_iter(all))?;
            Ok(())
        })
    }

    /// The agent's stream reported `activity` now.
    pub fn activity(&mut self, id: &str, activity: Activity) -> Result<()> {
        let (open_tools, pending_input, yielded) = match activity {
            Activity::Ask => (0, 1, 0),
            Activity::HandBack => (0, 0, 1),
            Activity::Working => (1, 0, 0),
            Activity::Quiet => (0, 0, 0),
        };
        self.change_session(
            id,
            "INSERT INTO session_activity (session_id, observed_at, open_tools, pending_input, yielded)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (session_id) DO UPDATE SET observed_at = excluded.observed_at,
                 open_tools = excluded.open_tools, pending_input = excluded.pending_input,
                 yielded = excluded.yielded",
            vec![
                Sql::Real(now()),
                Sql::Integer(open_tools),
                Sql::Integer(pending_input),
                Sql::Integer(yielded),
            ],
        )
    }

    /// A provider client with `pid` attached (the Session is `active` while it lives).
    pub fn attach(&mut self, id: &str, pid: u32) -> Result<()> {
        ensure!(pid > 1, "a provider client pid must be greater than 1");
        self.change_session(
            id,
            "UPDATE sessions SET client_pid = ?2 WHERE id = ?1",
            vec![Sql::Integer(pid.into())],
        )
    }

    pub fn detach(&mut self, id: &str) -> Result<()> {
        self.change_session(
            id,
            "UPDATE sessions SET client_pid = NULL WHERE id = ?1",
            vec![],
        )
    }

    pub fn complete(&mut self, id: &str) -> Result<()> {
        self.change_session(
            id,
            "UPDATE sessions SET completed_at = ?2, client_pid = NULL WHERE id = ?1",
            vec![Sql::Real(now())],
        )
    }

    /// The driver's last outcome was `interrupted`.
    pub fn interrupt(&mut self, id: &str) -> Result<()> {
        self.change_session(
            id,
            "UPDATE sessions SET interrupted = 1 WHERE id = ?1",
            vec![],
        )
    }

    pub fn rename(&mut self, id: &str, title: &str, source: TitleSource) -> Result<()> {
        self.change_session(
            id,
            "UPDATE sessions SET title = ?2, title_source = ?3 WHERE id = ?1",
            vec![Sql::Text(title.into()), Sql::Text(source.as_str().into())],
        )
    }

    /// Generation C: `lf session ready "<summary>"` by the Session's agent.
    pub fn ready(&mut self, id: &str, summary: &str) -> Result<()> {
        self.change_session(
            id,
            "UPDATE sessions SET ready_summary = ?2 WHERE id = ?1",
            vec![Sql::Text(summary.into())],
        )
    }

    /// Generation C: the `review`/`reply` attention, or none.
    pub fn review_attention(&mut self, id: &str, attention: Option<&str>) -> Result<()> {
        if let Some(a) = attention {
            ensure!(
                matches!(a, "review" | "reply"),
                "attention is review, reply or none, not {a:?}"
            );
        }
        self.change_session(
            id,
            "UPDATE sessions SET review_attention = ?2 WHERE id = ?1",
            vec![attention.map_or(Sql::Null, |a| Sql::Text(a.into()))],
        )
    }

    /// Generation E: the agent program reported `report` (appended; the newest decides
    /// Waiting). Moves the `sessions` revision, since Waiting or the reported detail may
    /// change.
    pub fn report_status(&mut self, id: &str, report: &StatusReport) -> Result<()> {
        ensure!(
            PROGRAM_STATES.contains(&report.state.as_str()),
            "a program status is one of {}, not {:?}",
            PROGRAM_STATES.join(", "),
            report.state
        );
        if let Some(kind) = &report.kind {
            ensure!(
                PROGRAM_KINDS.contains(&kind.as_str()),
                "a program status kind is one of {}, not {kind:?}",
                PROGRAM_KINDS.join(", ")
            );
        }
        let r = report.clone();
        let null = |v: Option<String>| v.map_or(Sql::Null, Sql::Text);
        self.change_session(
            id,
            "INSERT INTO program_status
                 (session_id, state, status_id, kind, progress, app, title, msg, reported_at)
             VALUES (?1, ?2, CASE WHEN ?3 = '' THEN 'status-' ||
                 (1 + (SELECT COUNT(*) FROM program_status WHERE session_id = ?1)) ELSE ?3 END,
                 ?4, ?5, ?6, ?7, ?8, ?9)",
            vec![
                Sql::Text(r.state),
                Sql::Text(r.id),
                null(r.kind),
                r.progress.map_or(Sql::Null, Sql::Integer),
                null(r.app),
                null(r.title),
                null(r.msg),
                Sql::Real(now()),
            ],
        )
    }

    /// Generation E: the provider's agent process is now `pid` (or none), a process lf
    /// was told of rather than launched. It becomes an agent-process row with a new lf
    /// Process id (a UUID) and the start time read now, unless it is the current agent
    /// already. Each new agent after a first one is another provider generation (E1's
    /// `provider_generation`).
    pub fn set_agent(&mut self, id: &str, pid: Option<u32>) -> Result<()> {
        let Some(pid) = pid else {
            return self.change_session(
                id,
                "UPDATE sessions SET agent_pid = NULL, agent_process_id = NULL WHERE id = ?1",
                vec![],
            );
        };
        ensure!(pid > 1, "an agent process pid must be greater than 1");
        // A process that is already gone gets no start time: lf then judges it unknown.
        let os_started_at = crate::process::process_start_time(pid).ok();
        let provider: Option<String> = self
            .conn
            .query_row("SELECT provider FROM sessions WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .optional()?
            .ok_or_else(|| not_found(id))?;
        if let Some(current) = self.current_agent(id)? {
            let same_start = match (current.os_started_at, os_started_at) {
                (Some(a), Some(b)) => (a - b).abs() <= START_TOLERANCE_SECONDS,
                _ => true,
            };
            if current.pid == Some(pid) && same_start && !current.exited {
                return Ok(());
            }
        }
        self.start_agent(&AgentStart {
            session_id: id.to_string(),
            provider: provider.unwrap_or_else(|| DEFAULT_PROVIDER.into()),
            pid,
            os_started_at,
            headless: false,
            lf: None,
        })
        .map(drop)
    }

    /// Many Sessions' agents set at once, as [`Store::set_agent`] sets one, in one
    /// transaction: a store of thousands of live sessions made in a second, not minutes.
    /// Each Session gets its own lf Process id, however many name one pid.
    pub fn set_agents(&mut self, agents: &[(&str, u32)]) -> Result<()> {
        let mut starts = HashMap::new();
        for (_, pid) in agents {
            ensure!(*pid > 1, "an agent process pid must be greater than 1");
            starts
                .entry(*pid)
                .or_insert_with(|| crate::process::process_start_time(*pid).ok());
        }
        self.write(&["sessions", "processes"], |tx| {
            let mut insert = tx.prepare(
                "INSERT INTO agent_processes (id, session_id, provider, pid, os_started_at,
                     headless, started_at)
                 SELECT ?1, ?2, coalesce(provider, ?5), ?3, ?4, 0, ?6 FROM sessions WHERE id = ?2",
            )?;
            let mut update = tx.prepare(
                "UPDATE sessions SET provider_generation = provider_generation +
                     (agent_pid IS NOT NULL AND agent_pid IS NOT ?2),
                     agent_pid = ?2, agent_process_id = ?3
                 WHERE id = ?1",
            )?;
            let at = now();
            for (session, pid) in agents {
                let agent_id = uuid::Uuid::new_v4().to_string();
                let inserted = insert.execute(params![
                    agent_id,
                    session,
                    pid,
                    starts[pid],
                    DEFAULT_PROVIDER,
                    at
                ])?;
                if inserted == 0 {
                    return Err(not_found(session));
                }
                update.execute(params![session, pid, agent_id])?;
            }
            Ok(())
        })
    }

    /// An agent process started (or became known) for a Session: a new row with a new lf
    /// Process id, made the Session's current agent. Returns that id.
    pub(crate) fn start_agent(&mut self, agent: &AgentStart) -> Result<String> {
        let agent_id = uuid::Uuid::new_v4().to_string();
        let (lf_id, lf_pid, lf_started, lf_label) = match &agent.lf {
            Some((id, pid, started, label)) => {
                (Some(id.clone()), Some(*pid), *started, Some(label.clone()))
            }
            None => (None, None, None, None),
        };
        let changed = self.write(&["sessions", "processes"], |tx| {
            tx.execute(
                "INSERT INTO agent_processes (id, session_id, provider, pid, os_started_at,
                     headless, lf_id, lf_pid, lf_os_started_at, lf_label, started_at)
                 SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11
                 WHERE EXISTS (SELECT 1 FROM sessions WHERE id = ?2)",
                params![
                    agent_id,
                    agent.session_id,
                    agent.provider,
                    agent.pid,
                    agent.os_started_at,
                    agent.headless,
                    lf_id,
                    lf_pid,
                    lf_started,
                    lf_label,
                    now()
                ],
            )?;
            Ok(tx.execute(
                "UPDATE sessions SET provider_generation = provider_generation +
                     (agent_pid IS NOT NULL AND agent_pid IS NOT ?2),
                     agent_pid = ?2, agent_process_id = ?3
                 WHERE id = ?1",
                params![agent.session_id, agent.pid, agent_id],
            )?)
        })?;
        if changed == 0 {
            return Err(not_found(&agent.session_id));
        }
        Ok(agent_id)
    }

    /// The Session's current agent process, if it has one.
    pub(crate) fn current_agent(&self, session_id: &str) -> Result<Option<AgentRow>> {
        let sql = format!(
            "SELECT {AGENT_COLUMNS} FROM sessions s JOIN agent_processes ap
             ON ap.id = s.agent_process_id WHERE s.id = ?1"
        );
        Ok(self
            .conn
            .query_row(&sql, [session_id], read_agent)
            .optional()?)
    }

    /// A Session's title and Task, for `lf monitor active`.
    pub(crate) fn session_title_and_task(&self, id: &str) -> Result<(String, Option<String>)> {
        self.conn
            .query_row(
                "SELECT title, task_id FROM sessions WHERE id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?
            .ok_or_else(|| not_found(id))
    }

    /// Every agent process with no recorded exit, oldest first (`lf monitor ps`).
    pub(crate) fn unfinished_agents(&self) -> Result<Vec<AgentRow>> {
        let sql = format!(
            "SELECT {AGENT_COLUMNS} FROM agent_processes ap JOIN sessions s
             ON s.id = ap.session_id WHERE ap.exited_at IS NULL ORDER BY ap.started_at, ap.id"
        );
        let mut stmt = self.conn.prepare(&sql)?;
        let rows = stmt.query_map([], read_agent)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// A Move here is about to stop `agent_id`: its own lf will say so in its terminal.
    pub(crate) fn mark_moved(&mut self, agent_id: &str) -> Result<()> {
        self.write(&["processes"], |tx| {
            tx.execute(
                "UPDATE agent_processes SET moved_at = ?2 WHERE id = ?1",
                params![agent_id, now()],
            )?;
            Ok(())
        })
    }

    /// The agent's lf outlived it and records its exit (the only write an agent's end
    /// causes; nothing is written when both die).
    pub(crate) fn record_agent_exit(&mut self, agent_id: &str, code: Option<i32>) -> Result<()> {
        self.write(&["sessions", "processes"], |tx| {
            tx.execute(
                "UPDATE agent_processes SET exited_at = ?2, exit_code = ?3 WHERE id = ?1",
                params![agent_id, now(), code],
            )?;
            Ok(())
        })
    }

    /// Whether `agent_id` was moved away (read by its own lf once it has exited).
    pub(crate) fn agent_moved(&self, agent_id: &str) -> Result<bool> {
        Ok(self
            .conn
            .query_row(
                "SELECT moved_at IS NOT NULL FROM agent_processes WHERE id = ?1",
                [agent_id],
                |r| r.get(0),
            )
            .optional()?
            .unwrap_or(false))
    }

    /// The provider conversation a resume names; the first launch starts one.
    pub(crate) fn conversation(&mut self, session_id: &str) -> Result<(String, bool)> {
        let existing: Option<String> = self
            .conn
            .query_row(
                "SELECT conversation_id FROM sessions WHERE id = ?1",
                [session_id],
                |r| r.get(0),
            )
            .optional()?
            .ok_or_else(|| not_found(session_id))?;
        if let Some(id) = existing {
            return Ok((id, true));
        }
        let id = uuid::Uuid::new_v4().to_string();
        self.change_session(
            session_id,
            "UPDATE sessions SET conversation_id = ?2 WHERE id = ?1",
            vec![Sql::Text(id.clone())],
        )?;
        Ok((id, false))
    }

    /// Generation E: a scoped `lf monitor work` reader started `repo`'s planning sync,
    /// which commits to the store on the reader's behalf (§10.3).
    pub(crate) fn start_planning_sync(&mut self, repo: &str, pid: u32, at: f64) -> Result<()> {
        self.write(&["planning"], |tx| {
            tx.execute(
                "INSERT INTO planning_syncs (repo, pid, started_at) VALUES (?1, ?2, ?3)",
                params![repo, pid, at],
            )?;
            Ok(())
        })
    }

    /// Every planning sync started, oldest first: `(repo, pid)`.
    pub fn planning_syncs(&self) -> Result<Vec<(String, u32)>> {
        let mut stmt = self
            .conn
            .prepare("SELECT repo, pid FROM planning_syncs ORDER BY id")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    // ---- What the CLI projects ----

    /// The ids of the Sessions' current agent processes that are alive now, as the JSON
    /// array `?3` of the Waiting SQL: liveness is read at query time, never written.
    fn live_agents(&self) -> Result<String> {
        let sql = format!(
            "SELECT {AGENT_COLUMNS} FROM sessions s JOIN agent_processes ap
             ON ap.id = s.agent_process_id"
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let agents = stmt.query_map([], read_agent)?;
        let mut live = Vec::new();
        for agent in agents {
            let agent = agent?;
            if agent.liveness() == Liveness::Alive {
                live.push(agent.id);
            }
        }
        Ok(serde_json::to_string(&live)?)
    }

    pub(crate) fn session(&self, id: &str, rule: WaitingRule) -> Result<Option<Row>> {
        let waiting = waiting_sql(rule);
        let sql = format!("SELECT {COLUMNS}, {waiting} FROM {FROM} WHERE s.id = ?4");
        let live = self.live_agents()?;
        self.conn
            .query_row(&sql, params![now(), rule.quiet, live, id], Row::read)
            .optional()
            .map_err(|e| anyhow!("Session record unavailable: {e}"))
    }

    pub(crate) fn sessions(&self, query: &Query, rule: WaitingRule) -> Result<Vec<Row>> {
        let waiting = waiting_sql(rule);
        let mut values = vec![
            Sql::Real(now()),
            Sql::Real(rule.quiet),
            Sql::Text(self.live_agents()?),
        ];
        let mut bind = |value: Sql| {
            values.push(value);
            format!("?{}", values.len())
        };
        let mut filters = Vec::new();
        if let Some(repo) = &query.repo {
            filters.push(format!("s.repo = {}", bind(Sql::Text(repo.clone()))));
        }
        match query.interactive {
            Some(true) => filters.push("s.interactive = 1".into()),
            Some(false) => filters.push("s.interactive = 0".into()),
            None => {}
        }
        if !query.history {
            filters.push("s.completed_at IS NULL".into());
        }
        if query.waiting {
            filters.push(waiting.into());
        }
        if let Some(task) = &query.task {
            filters.push(format!("s.task_id = {}", bind(Sql::Text(task.clone()))));
        }
        if query.orphan {
            filters.push("s.task_id IS NULL".into());
        }
        if let Some(search) = &query.search {
            let s = bind(Sql::Text(search.clone()));
            filters.push(format!(
                "(instr(lower(s.title), lower({s})) > 0 OR instr(s.id, {s}) > 0)"
            ));
        }
        if let Some(after) = &query.after {
            filters.push(format!("s.id > {}", bind(Sql::Text(after.clone()))));
        }
        let order = if query.by_id { "s.id" } else { "s.title, s.id" };
        let limit = query.limit.map_or(-1, |l| l as i64);
        let mut sql = format!("SELECT {COLUMNS}, {waiting} FROM {FROM}");
        if !filters.is_empty() {
            sql += &format!(" WHERE {}", filters.join(" AND "));
        }
        sql += &format!(
            " ORDER BY {order} LIMIT {} OFFSET {}",
            bind(Sql::Integer(limit)),
            bind(Sql::Integer(query.offset as i64))
        );
        let mut stmt = self
            .conn
            .prepare(&sql)
            .map_err(|e| anyhow!("Session records unavailable: {e}"))?;
        let rows = stmt.query_map(params_from_iter(values), Row::read)?;
        rows.collect::<rusqlite::Result<_>>()
            .map_err(|e| anyhow!("Session records unavailable: {e}"))
    }

    /// ACT's `next_quiet_waiting`: when the earliest Session of `repo` that is still
    /// counting its quiet window becomes Waiting without any write.
    /// Under the newest rule a Session whose agent is dead, or whose program reported a
    /// status, is not counting: its quiet window decides nothing.
    pub(crate) fn next_quiet_deadline(
        &self,
        repo: &str,
        headless: bool,
        rule: WaitingRule,
    ) -> Result<Option<f64>> {
        let interactive = if headless {
            ""
        } else {
            "AND s.interactive = 1"
        };
        let newest = if rule.newest {
            "AND (s.agent_process_id IS NULL
                  OR s.agent_process_id IN (SELECT value FROM json_each(?4)))
             AND NOT EXISTS (SELECT 1 FROM program_status r WHERE r.session_id = s.id)"
        } else {
            ""
        };
        let sql = format!(
            "SELECT MIN(a.observed_at) FROM sessions s JOIN session_activity a ON a.session_id = s.id
             WHERE s.completed_at IS NULL AND a.pending_input = 0 AND a.open_tools = 0
               AND NOT (s.interactive = 1 AND a.yielded = 1) AND ?1 - a.observed_at < ?2
               AND s.repo = ?3 {interactive} {newest}"
        );
        let first: Option<f64> = if rule.newest {
            let live = self.live_agents()?;
            self.conn
                .query_row(&sql, params![now(), rule.quiet, repo, live], |r| r.get(0))?
        } else {
            self.conn
                .query_row(&sql, params![now(), rule.quiet, repo], |r| r.get(0))?
        };
        Ok(first.map(|at| at + rule.quiet))
    }
}

const BUSY_TIMEOUT: Duration = Duration::from_secs(15);

fn initialize(conn: &Connection) -> rusqlite::Result<()> {
    let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        // Another connection held the file: the switch did not happen yet.
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
            Some(format!("journal mode stayed {mode}")),
        ));
    }
    conn.execute_batch("PRAGMA foreign_keys=ON; PRAGMA journal_size_limit=67108864;")?;
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    // Checked first so that opening an existing store writes nothing.
    if version < 4 {
        migrate(conn).inspect_err(|_| {
            let _ = conn.execute_batch("ROLLBACK");
        })?;
    }
    Ok(())
}

/// Brings the schema to the newest version in one transaction. The version is read
/// again under the write lock: another process may have migrated since the first read,
/// and `ALTER TABLE … ADD COLUMN` cannot run twice.
fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version < 1 {
        conn.execute_batch(SCHEMA)?;
    }
    if version < 2 {
        conn.execute_batch(SCHEMA_2)?;
    }
    if version < 3 {
        conn.execute_batch(SCHEMA_3)?;
    }
    if version < 4 {
        conn.execute_batch(SCHEMA_4)?;
    }
    conn.execute_batch("COMMIT")
}

fn is_busy(error: &rusqlite::Error) -> bool {
    matches!(
        error.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

fn read_flows(conn: &Connection) -> Result<Vec<FlowSpec>> {
    let mut stmt = conn.prepare("SELECT spec FROM flow_positions ORDER BY position")?;
    let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
    rows.map(|spec| serde_json::from_str(&spec?).context("read a Flow position from the database"))
        .collect()
}

/// §9.4 "Rule, D version 1"; `?1` is now and `?2` the quiet window.
const WAITING: &str = "(s.completed_at IS NULL AND a.session_id IS NOT NULL AND \
    (a.pending_input > 0 OR (a.open_tools = 0 AND \
    ((s.interactive = 1 AND a.yielded = 1) OR ?1 - a.observed_at >= ?2))))";

/// §9.4 "Rule, newest" (generation E); `?3` is the JSON array of the agent processes alive
/// at the query's clock, so a dead agent stops Waiting with no write. The newest
/// program-status report `p`, when there is one, decides instead of the reading: blocked,
/// or idle on an interactive Session, waits; anything else (clear included) does not.
const WAITING_NEWEST: &str = "(s.completed_at IS NULL \
    AND (s.agent_process_id IS NULL \
        OR s.agent_process_id IN (SELECT value FROM json_each(?3))) \
    AND CASE WHEN p.state IS NULL THEN \
        (a.session_id IS NOT NULL AND (a.pending_input > 0 OR (a.open_tools = 0 AND \
        ((s.interactive = 1 AND a.yielded = 1) OR ?1 - a.observed_at >= ?2)))) \
    ELSE p.state = 'blocked' OR (p.state = 'idle' AND s.interactive = 1) END)";

fn waiting_sql(rule: WaitingRule) -> &'static str {
    if rule.newest {
        WAITING_NEWEST
    } else {
        WAITING
    }
}

const FROM: &str = "sessions s LEFT JOIN session_activity a ON a.session_id = s.id \
    LEFT JOIN agent_processes ap ON ap.id = s.agent_process_id \
    LEFT JOIN program_status p ON p.seq = \
        (SELECT MAX(seq) FROM program_status WHERE session_id = s.id)";

const COLUMNS: &str = "s.id, s.title, s.title_source, s.cwd, s.repo, s.interactive, s.provider, \
    s.model, s.work_path, s.task_id, s.kind, s.ready_summary, s.review_attention, s.client_pid, \
    s.interrupted, s.completed_at IS NOT NULL, ap.pid, s.provider_generation, \
    (SELECT json_group_array(json_object('state', r.state, 'id', r.status_id, 'kind', r.kind, \
        'progress', r.progress, 'app', r.app, 'title', r.title, 'msg', r.msg) ORDER BY r.seq) \
     FROM program_status r WHERE r.session_id = s.id), \
    ap.id, ap.os_started_at, ap.exited_at IS NOT NULL, ap.headless";

/// A Session row with its Waiting reading at the query's clock.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    pub id: String,
    pub title: String,
    pub title_source: String,
    pub cwd: String,
    pub repo: Option<String>,
    pub interactive: bool,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub work_path: Option<String>,
    pub task_id: Option<String>,
    pub kind: Option<String>,
    pub ready_summary: Option<String>,
    pub review_attention: Option<String>,
    pub client_pid: Option<u32>,
    pub interrupted: bool,
    pub completed: bool,
    /// Generation E: the OS pid of the provider's current agent process.
    pub agent_pid: Option<u32>,
    /// Generation E2: lf's Process id of that agent (a UUID), its recorded start, whether
    /// its lf recorded its exit, and whether it runs headless.
    pub agent_process_id: Option<String>,
    pub agent_os_started_at: Option<i64>,
    pub agent_exited: bool,
    pub agent_headless: bool,
    pub provider_generation: i64,
    /// Generation E: the program's status reports, oldest first.
    pub program_status: Vec<StatusReport>,
    pub waiting: bool,
}

impl Row {
    fn read(r: &rusqlite::Row) -> rusqlite::Result<Row> {
        Ok(Row {
            id: r.get(0)?,
            title: r.get(1)?,
            title_source: r.get(2)?,
            cwd: r.get(3)?,
            repo: r.get(4)?,
            interactive: r.get(5)?,
            provider: r.get(6)?,
            model: r.get(7)?,
            work_path: r.get(8)?,
            task_id: r.get(9)?,
            kind: r.get(10)?,
            ready_summary: r.get(11)?,
            review_attention: r.get(12)?,
            client_pid: r.get(13)?,
            interrupted: r.get(14)?,
            completed: r.get(15)?,
            agent_pid: r.get(16)?,
            provider_generation: r.get(17)?,
            program_status: {
                let json: String = r.get(18)?;
                serde_json::from_str(&json).map_err(|e| {
                    rusqlite::Error::FromSqlConversionFailure(
                        18,
                        rusqlite::types::Type::Text,
                        e.into(),
                    )
                })?
            },
            agent_process_id: r.get(19)?,
            agent_os_started_at: r.get(20)?,
            agent_exited: r.get::<_, Option<bool>>(21)?.unwrap_or(false),
            agent_headless: r.get::<_, Option<bool>>(22)?.unwrap_or(false),
            waiting: r.get(23)?,
        })
    }

    /// A client is attached and its process is alive (not gone, not a zombie).
    pub fn client_alive(&self) -> bool {
        self.client_pid.is_some_and(alive)
    }

    /// How lf judges the Session's agent process; `None` when it has none.
    pub fn agent_liveness(&self) -> Option<Liveness> {
        self.agent_process_id.as_ref()?;
        Some(if self.agent_exited {
            Liveness::Dead
        } else {
            judge(self.agent_pid, self.agent_os_started_at)
        })
    }
}

fn alive(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // The state follows the parenthesised command name, which may itself hold spaces.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .is_some_and(|state| state != "Z" && state != "X")
}

/// The rows `lf session list` asks for.
#[derive(Debug, Clone, Default)]
pub(crate) struct Query {
    pub repo: Option<String>,
    /// `None`: interactive and headless.
    pub interactive: Option<bool>,
    pub history: bool,
    pub waiting: bool,
    pub task: Option<String>,
    pub orphan: bool,
    pub search: Option<String>,
    pub after: Option<String>,
    pub by_id: bool,
    pub limit: Option<u64>,
    pub offset: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A home made by a stand-in from before generation E keeps its Sessions and gains
    /// E's columns and tables (and the Process rows' end) on the next open.
    #[test]
    fn a_version_1_store_is_migrated_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("loopflow.db");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(&format!("PRAGMA journal_mode=WAL; BEGIN;{SCHEMA}COMMIT;"))
                .unwrap();
            conn.execute(
                "INSERT INTO sessions (id, title, title_source, cwd, interactive, created_at)
                 VALUES ('old', 'Old', 'generated', '/', 1, 0)",
                [],
            )
            .unwrap();
        }
        let mut store = Store::open(&path).unwrap();
        let version: i64 = store
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, 4);
        store
            .report_status("old", &StatusReport::new("blocked"))
            .unwrap();
        store.set_agent("old", Some(std::process::id())).unwrap();
        let rule = WaitingRule {
            quiet: DEFAULT_QUIET_SECONDS,
            newest: true,
        };
        let row = store.session("old", rule).unwrap().unwrap();
        assert!(row.waiting);
        assert_eq!(row.agent_liveness(), Some(Liveness::Alive));
        assert_eq!(row.provider_generation, 1);
        assert_eq!(row.program_status[0].id, "status-1");
    }
}
