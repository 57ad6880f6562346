//! The engine: one task that owns the session list, fed by inotify (through `notify`),
//! by client-process exits (pidfd), by `lf session list`, and on generation D by lf's own
//! readers (`lf monitor work`). It turns every change into exactly-once events and never
//! polls the home.
//!
//! lf's side is scheduled by [`Schedule`] (when to list, and never because of the tray's
//! own lf runs); the readers, one per repository with open sessions, bring generation D's
//! attention as it changes, including the quiet deadline no write announces.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use time::OffsetDateTime;
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;
use tokio::time::Instant;

use crate::dialect::{Dialect, Follow, Generation};
use crate::event::{Event, Warning};
use crate::home::Home;
use crate::lf::{self, Lf, LfAction, LfError};
use crate::machine::{self, MachineView, Reporter, Ssh};
use crate::monitor::{Part, Reader, Report};
use crate::records::Records;
use crate::schedule::{Schedule, QUIET_RECHECK};
use crate::session::{SessionKey, SessionRecord};
use crate::snapshot::{boundary_runs, merge_one, Snapshot};
use crate::watch::{route, run_names, Batch, Watches};

/// How often `lf session list` runs with nothing else asking for it. lf's database is
/// watched (or its reader followed), so this only catches what neither can see (a database
/// on another file system, a session whose agent died silently). A minute keeps an idle
/// tray from costing anything noticeable while bounding how stale a missed change can be.
pub const SAFETY_INTERVAL: Duration = Duration::from_secs(60);
/// The floor for the safety timer: lf itself takes up to a second or two on a large
/// store, and running it more often would be the busy polling this app exists to avoid.
pub const MIN_SAFETY_INTERVAL: Duration = Duration::from_secs(30);
/// How often the files are read from scratch, to repair anything the watches missed
/// (a headless Run opened interactively later, which is not watched). Ten minutes keeps
/// the cost of a 10 000-Run home far below a millisecond per idle minute on average.
pub const RECONCILE_INTERVAL: Duration = Duration::from_secs(600);
/// lf's reader sends a heartbeat every 2 s; three missed ones mean it hangs, and it is
/// started again.
const READER_SILENCE: Duration = Duration::from_secs(6);
/// A reader that fails is started again after 1 s, then 2, 4 … up to a minute, so a
/// broken lf costs one attempt a minute, not a loop.
const READER_BACKOFF: Duration = Duration::from_secs(1);
const READER_BACKOFF_MAX: Duration = Duration::from_secs(60);
/// At most this many readers run at once; each samples the process table every 2 s.
/// Repositories beyond them are followed through the store's revisions and lists.
const MAX_READERS: usize = 8;
/// A package manager replaces the lf program in several steps; it is asked what it is
/// once they have settled.
const PROGRAM_SETTLE: Duration = Duration::from_millis(500);
/// The wall clock moving this much further than the monotonic clock between two
/// wake-ups means the machine slept: lf's readers are asked for everything again.
const RESUME_JUMP: Duration = Duration::from_secs(10);

/// How the engine is set up.
#[derive(Debug, Clone)]
pub struct Config {
    pub home: Home,
    /// The `lf` to run; `None` when none was found, and the file sources work alone.
    pub lf_bin: Option<PathBuf>,
    pub lf_timeout: Duration,
    pub safety_interval: Duration,
    pub reconcile_interval: Duration,
    /// When, after a change on generation D, to ask again for sessions that lf's quiet
    /// rule may have turned Waiting without a write ([`QUIET_RECHECK`]; shorter only for
    /// an lf built with a shorter quiet time, as the tests' stand-in is).
    pub quiet_recheck: Duration,
    /// `--home DIR` was given: `lf` must look at the same directory.
    pub home_override: bool,
    /// Other machines to follow, as ssh destinations ([`crate::machine`]).
    pub machines: Vec<String>,
}

impl Config {
    /// The homes and `lf` from the environment, as lf resolves them, with optional
    /// overrides from the command line or settings.
    pub fn from_env(home: Option<PathBuf>, lf_bin: Option<PathBuf>) -> Config {
        let home_override = home.is_some();
        Config {
            home: home.map(Home::at).unwrap_or_else(Home::from_env),
            lf_bin: lf_bin.or_else(|| lf::resolve(|name| std::env::var_os(name))),
            lf_timeout: lf::DEFAULT_TIMEOUT,
            safety_interval: SAFETY_INTERVAL,
            reconcile_interval: RECONCILE_INTERVAL,
            quiet_recheck: QUIET_RECHECK,
            home_override,
            machines: Vec::new(),
        }
    }

    fn lf(&self) -> Option<Lf> {
        let bin = self.lf_bin.clone()?;
        let lf = Lf::new(bin).with_timeout(self.lf_timeout);
        Some(if self.home_override {
            lf.with_home(&self.home.lf_home)
        } else {
            lf
        })
    }
}

/// What the surfaces read between events.
#[derive(Debug, Default)]
struct Shared {
    snapshot: Snapshot,
    /// Every other machine, in the configured order.
    machines: Vec<MachineView>,
    /// This machine's part of the status line.
    status: String,
    can_watch: bool,
    detected: Option<Dialect>,
}

/// A handle on the running engine. Cheap to clone.
#[derive(Clone)]
pub struct Engine {
    shared: Arc<RwLock<Shared>>,
    lf: Option<Lf>,
    tx: mpsc::UnboundedSender<Msg>,
    /// Per machine: ask its follower for a list now (after an action there).
    nudges: Arc<Vec<mpsc::UnboundedSender<()>>>,
}

/// Every machine's sessions, in lf's list order.
fn all_sessions(shared: &Shared) -> Vec<SessionRecord> {
    let mut list = shared.snapshot.sessions();
    for machine in &shared.machines {
        list.extend(machine.sessions());
    }
    list.sort_by(SessionRecord::list_order);
    list
}

enum Msg {
    Fs(notify::Result<notify::Event>),
    ClientExited(String),
    Listed(Result<(Vec<SessionRecord>, Vec<String>), LfError>),
    /// An action (an lf run of the tray's own) started, or ended and wants a list.
    Acting,
    Acted(oneshot::Sender<()>),
    Reader(u64, Report),
    Detected(Result<Dialect, LfError>),
    /// An agent process a listed session names exited: lf writes nothing for that, and
    /// only a new list says the session stopped.
    AgentExited(i32),
}

/// Ends an action's "own lf run" even when the caller stops waiting for it.
struct Acting {
    tx: mpsc::UnboundedSender<Msg>,
    done: Option<oneshot::Sender<()>>,
}

impl Drop for Acting {
    fn drop(&mut self) {
        let (done, _) = oneshot::channel();
        let _ = self.tx.send(Msg::Acted(self.done.take().unwrap_or(done)));
    }
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    // A panic elsewhere must not take the list away from the surfaces.
    lock.read().unwrap_or_else(|e| e.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|e| e.into_inner())
}

impl Engine {
    /// Start watching on the current tokio runtime. The receiver gets a `Snapshot` first,
    /// then every transition, and warnings as they come. The engine stops when every
    /// `Engine` handle and the receiver are dropped.
    pub fn start(config: Config) -> (Engine, mpsc::UnboundedReceiver<Event>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let (events, events_rx) = mpsc::unbounded_channel();
        let lf = config.lf();
        let shared = Arc::new(RwLock::new(Shared::default()));
        // Each machine is followed by a task of its own; its reports come to the core,
        // which holds the receiver: once the core ends, the followers (and their ssh) do.
        let (reports, reports_rx) = mpsc::unbounded_channel();
        let mut nudges = Vec::new();
        let mut refused = Vec::new();
        for (index, dest) in config.machines.iter().enumerate() {
            write(&shared).machines.push(MachineView::new(dest));
            let (nudge, nudged) = mpsc::unbounded_channel();
            nudges.push(nudge);
            match Ssh::new(dest) {
                Ok(ssh) => {
                    let reporter = Reporter {
                        machine: index,
                        tx: reports.clone(),
                    };
                    tokio::spawn(machine::follow(ssh, reporter, nudged));
                }
                Err(message) => refused.push(Warning::new(None, message)),
            }
        }
        drop(reports);
        let engine = Engine {
            shared: shared.clone(),
            lf: lf.clone(),
            tx: tx.clone(),
            nudges: Arc::new(nudges),
        };
        let mut core = Core::new(config, lf, shared, tx.downgrade(), events);
        core.refused = refused;
        tokio::spawn(core.run(rx, reports_rx));
        (engine, events_rx)
    }

    /// The current sessions in lf's order.
    pub fn sessions(&self) -> Vec<SessionRecord> {
        all_sessions(&read(&self.shared))
    }

    /// The session with this key, on this machine or another.
    pub fn session(&self, key: &SessionKey) -> Option<SessionRecord> {
        match &key.machine {
            None => read(&self.shared).snapshot.get(&key.id).cloned(),
            Some(dest) => read(&self.shared)
                .machines
                .iter()
                .find(|m| &m.dest == dest)
                .and_then(|m| m.get(&key.id))
                .cloned(),
        }
    }

    pub fn lf_bin(&self) -> Option<PathBuf> {
        self.lf.as_ref().map(|lf| lf.bin().to_path_buf())
    }

    /// The variables the engine's lf runs with (see [`Lf::env`]); none without an lf.
    pub fn lf_env(&self) -> Vec<(&'static str, Option<std::ffi::OsString>)> {
        self.lf
            .as_ref()
            .map(|lf| lf.env().to_vec())
            .unwrap_or_default()
    }

    /// What the engine learned about the lf in use, once it asked.
    pub fn detected(&self) -> Option<Dialect> {
        read(&self.shared).detected
    }

    /// Whether file watching works. Without it only the timers refresh the list.
    pub fn can_watch(&self) -> bool {
        read(&self.shared).can_watch
    }

    /// One line on where the sessions come from, for a status bar.
    pub fn status(&self) -> String {
        let shared = read(&self.shared);
        let mut status = shared.status.clone();
        for machine in &shared.machines {
            status.push_str(" · ");
            status.push_str(&machine.status());
        }
        status
    }

    /// Run an `lf session` action on the session's machine: here as [`Engine::act`], on
    /// another machine its lf over ssh. A machine followed by list is listed again at once
    /// so the caller sees the effect soon; one followed live tells it by itself.
    pub async fn act_on(&self, machine: Option<&str>, action: LfAction) -> Result<String, LfError> {
        let Some(dest) = machine else {
            return self.act(action).await;
        };
        let found = {
            let shared = read(&self.shared);
            shared
                .machines
                .iter()
                .position(|m| m.dest == dest)
                .map(|i| (i, shared.machines[i].lf.clone()))
        };
        let not_reached = |what: &str| LfError::Failed {
            code: None,
            message: format!("{dest}: {what}"),
        };
        let (index, lf) = found.ok_or_else(|| not_reached("this machine is not followed"))?;
        let lf = lf.ok_or_else(|| not_reached("no lf was found there yet"))?;
        let ssh = Ssh::new(dest).map_err(|e| not_reached(&e))?;
        let result = Lf::over_ssh(ssh, &lf)
            .with_timeout(machine::REMOTE_LF_TIMEOUT)
            .act(&action)
            .await;
        if let Some(nudge) = self.nudges.get(index) {
            let _ = nudge.send(());
        }
        result
    }

    /// Run an `lf session` action, then wait until the list has been taken again so the
    /// caller sees its effect. Its own writes to lf's database wake nothing.
    pub async fn act(&self, action: LfAction) -> Result<String, LfError> {
        let lf = self.lf.as_ref().ok_or(LfError::NotFound)?;
        let _ = self.tx.send(Msg::Acting);
        let (done, wait) = oneshot::channel();
        let acting = Acting {
            tx: self.tx.clone(),
            done: Some(done),
        };
        let result = lf.act(&action).await;
        drop(acting);
        let _ = wait.await;
        result
    }
}

/// Read both sources once, without watching: `lf-tray list`.
pub async fn list_once(config: Config) -> (Vec<SessionRecord>, Vec<Warning>, String) {
    let lf = config.lf();
    let detected = match &lf {
        Some(lf) => lf.detect().await.ok(),
        None => None,
    };
    let files = detected.is_none_or(|d| d.session_files);
    let dialect = detected.unwrap_or(Dialect::of(Generation::Unknown));
    let home = config.home.clone();
    let scan = tokio::task::spawn_blocking(move || {
        let mut records = Records::new(home.clone(), config.lf_bin.as_deref());
        if !files {
            return (Vec::new(), Vec::new(), false);
        }
        let warnings = records.rescan();
        (records.sessions(), warnings, files_present(&home))
    });
    let cli = async {
        match &lf {
            Some(lf) => Some(lf.list(&dialect).await),
            None => None,
        }
    };
    // Every machine at once: one that does not answer costs its connect timeout, once.
    let asked: Vec<_> = config
        .machines
        .iter()
        .map(|dest| {
            let dest = dest.clone();
            tokio::spawn(async move {
                let result = match Ssh::new(&dest) {
                    Ok(ssh) => machine::list_once(&ssh).await,
                    Err(refused) => Err(refused),
                };
                (dest, result)
            })
        })
        .collect();
    let machines = async {
        let mut out = Vec::new();
        for task in asked {
            out.extend(task.await.ok());
        }
        out
    };
    let (scan, cli, machines) = tokio::join!(scan, cli, machines);
    let (file_sessions, mut warnings, files_active) = scan.expect("the file scan panicked");
    let mut listed = Vec::new();
    match cli {
        Some(Ok((records, problems))) => {
            listed = records;
            warnings.extend(problems.into_iter().map(|p| Warning::new(None, p)));
        }
        Some(Err(e)) => warnings.push(Warning::new(
            None,
            format!("lf session list: {}", one_line(&e.to_string())),
        )),
        None => {}
    }
    let snapshot = Snapshot::merge(file_sessions, &listed, files_active, detected.as_ref());
    let mut status = status_line(lf.as_ref(), detected, None, snapshot.len());
    let mut sessions = snapshot.sessions();
    for (dest, result) in machines {
        match result {
            Ok(records) => {
                status.push_str(&format!(" · {dest}: {} sessions", records.len()));
                sessions.extend(records);
            }
            Err(why) => {
                status.push_str(&format!(" · {dest}: not reached"));
                warnings.push(Warning::new(None, format!("{dest}: {why}")));
            }
        }
    }
    sessions.sort_by(SessionRecord::list_order);
    (sessions, warnings, status)
}

/// lf's error with its `Caused by:` chain on one line, as a warning line wants it; a
/// backtrace (lf run with `RUST_BACKTRACE`) is left out.
fn one_line(message: &str) -> String {
    let message = message
        .split("\nStack backtrace:")
        .next()
        .unwrap_or(message);
    message
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && *line != "Caused by:")
        .map(|line| {
            line.trim_start_matches(|c: char| c.is_ascii_digit() || c == ':')
                .trim()
        })
        .collect::<Vec<_>>()
        .join(": ")
}

fn files_present(home: &Home) -> bool {
    home.asks_dir().is_dir() || home.runs_dir().is_dir()
}

fn status_line(
    lf: Option<&Lf>,
    detected: Option<Dialect>,
    failure: Option<&str>,
    count: usize,
) -> String {
    let sessions = match count {
        1 => "1 session".to_string(),
        n => format!("{n} sessions"),
    };
    match (lf, failure) {
        (None, _) => format!(
            "No lf found ($LF_BIN, PATH, ~/.local/bin/lf): showing Ask and interactive \
             sessions from files; Flow sessions need lf · {sessions}"
        ),
        (Some(lf), None) => match detected {
            Some(d) if d.generation != Generation::Unknown => format!(
                "lf: {} (generation {}) · {sessions}",
                lf.bin().display(),
                d.generation.name()
            ),
            _ => format!("lf: {} · {sessions}", lf.bin().display()),
        },
        (Some(_), Some(failure)) => {
            format!(
                "lf failed ({failure}); sessions from lf are from the last good list · {sessions}"
            )
        }
    }
}

/// One of lf's readers, as the engine follows it.
struct Following {
    /// The path the reader was scoped with (a session's worktree).
    key: String,
    reader: Reader,
    last_frame: Instant,
    /// lf's canonical repository, from its first sessions frame.
    repo: Option<String>,
    /// Its first frame came: its start-up write to the store is behind it.
    started: bool,
}

/// lf's side: what `lf session list` and the readers said, and when to ask again.
struct LfSide {
    lf: Option<Lf>,
    detected: Option<Dialect>,
    schedule: Schedule,
    /// The last good list, with the readers' newer frames applied.
    listed: Vec<SessionRecord>,
    failure: Option<String>,
    /// Lists started and finished; `Engine::act` callers wait for a list started after
    /// their action.
    started: u64,
    finished: u64,
    waiters: Vec<(u64, oneshot::Sender<()>)>,
    /// Where in `listed` each id is, and the Runs lf names as Ask or Flow boundaries:
    /// what merging one changed session needs.
    index: HashMap<String, usize>,
    boundary: HashSet<String>,
    /// Ids a reader's frame changed since the last update.
    touched: HashSet<String>,
    readers: HashMap<u64, Following>,
    next_reader: u64,
    /// Which canonical repository a worktree belongs to, as lf's readers said.
    repo_of: HashMap<String, String>,
    /// Worktrees whose reader failed: when it may start again (`None` once it may), and
    /// the last pause, which doubles with each failure in a row.
    backoff: HashMap<String, (Option<Instant>, Duration)>,
    /// The store's `sessions` revision, as the readers last reported it.
    revision: Option<u64>,
    /// Warnings already given, so a failing reader or lf is reported once, not per try.
    told: HashSet<String>,
    program: Vec<PathBuf>,
    program_due: Option<Instant>,
    /// lf's database, and how its files looked when the tray's last own lf ended.
    db: PathBuf,
    stamp: Stamp,
}

/// Size and modification time of lf's database and its WAL: what tells a write made
/// after the tray's own lf ended from that lf's own late-delivered write.
type Stamp = Vec<Option<(u64, std::time::SystemTime)>>;

fn stamp(db: &Path) -> Stamp {
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    [db.to_path_buf(), PathBuf::from(wal)]
        .iter()
        .map(|p| {
            std::fs::metadata(p)
                .ok()
                .map(|m| (m.len(), m.modified().unwrap_or(std::time::UNIX_EPOCH)))
        })
        .collect()
}

impl LfSide {
    /// The dialect in use; an lf not (yet) recognised is read as an unknown one.
    fn dialect(&self) -> Dialect {
        self.detected.unwrap_or(Dialect::of(Generation::Unknown))
    }

    /// Whether lf's own readers follow the store (generation D's read-only one).
    fn readers(&self) -> bool {
        self.detected.is_some_and(|d| d.follow == Follow::Readers)
    }

    /// A reader whose frames arrive: it covers the store's revisions, so lf's database
    /// writes need not be watched for it.
    fn reader_live(&self) -> bool {
        self.readers.values().any(|r| r.started)
    }

    /// One of the tray's own lf processes ended (or a reader got past its start-up).
    fn own_ended(&mut self, now: Instant) {
        self.schedule.own_ended(now);
        self.stamp = stamp(&self.db);
    }

    /// lf's database was written: by someone else, unless it is the tray's own lf.
    fn written(&mut self, now: Instant) {
        let moved = stamp(&self.db) != self.stamp;
        self.schedule.written(now, moved);
    }

    fn reindex(&mut self) {
        self.index = self
            .listed
            .iter()
            .enumerate()
            .map(|(i, r)| (r.id.clone(), i))
            .collect();
        self.boundary = boundary_runs(&self.listed);
    }

    /// The repository a listed session belongs to, where a reader told.
    fn repo_of_record(&self, record: &SessionRecord) -> Option<&String> {
        self.repo_of.get(record.worktree()?)
    }

    /// A reader of `key` failed: it may start again after a pause that doubles each time.
    fn back_off(&mut self, key: &str, now: Instant) {
        let next = self
            .backoff
            .get(key)
            .map_or(READER_BACKOFF, |(_, d)| (*d * 2).min(READER_BACKOFF_MAX));
        self.backoff
            .insert(key.to_string(), (Some(now + next), next));
    }

    fn warn_once(&mut self, message: String, out: &mut Vec<Warning>) {
        if self.told.insert(message.clone()) {
            out.push(Warning::new(None, message));
        }
    }
}

/// The engine task's state.
struct Core {
    config: Config,
    shared: Arc<RwLock<Shared>>,
    tx: mpsc::WeakUnboundedSender<Msg>,
    events: mpsc::UnboundedSender<Event>,
    records: Records,
    watches: Watches,
    lf: LfSide,
    exits: HashMap<i32, (String, AbortHandle)>,
    /// The agent processes listed sessions name (where lf names them), each watched for
    /// its exit.
    agents: HashMap<i32, AbortHandle>,
    /// Whether a source directory exists (cached: it changes only on top-level events).
    files_active: bool,
    /// Set when a change may touch any session (a rescan, a new lf list): the next
    /// update merges everything; otherwise only the touched sessions are merged.
    full: bool,
    /// Whether lf keeps sessions in files (every generation before C).
    files: bool,
    /// The clocks at the last wake-up, to tell that the machine slept.
    woke: (Instant, SystemTime),
    /// Machines whose destination was refused, told with the first warnings.
    refused: Vec<Warning>,
}

impl Core {
    fn new(
        config: Config,
        lf: Option<Lf>,
        shared: Arc<RwLock<Shared>>,
        tx: mpsc::WeakUnboundedSender<Msg>,
        events: mpsc::UnboundedSender<Event>,
    ) -> Core {
        let records = Records::new(config.home.clone(), config.lf_bin.as_deref());
        let fs = tx.clone();
        let watches = Watches::new(move |event: notify::Result<notify::Event>| {
            if let Some(tx) = fs.upgrade() {
                let _ = tx.send(Msg::Fs(event));
            }
        });
        let safety = config.safety_interval.max(MIN_SAFETY_INTERVAL);
        let now = Instant::now();
        Core {
            lf: LfSide {
                lf,
                detected: None,
                schedule: Schedule::new(now, safety, None),
                listed: Vec::new(),
                failure: None,
                started: 0,
                finished: 0,
                waiters: Vec::new(),
                index: HashMap::new(),
                boundary: HashSet::new(),
                touched: HashSet::new(),
                readers: HashMap::new(),
                next_reader: 0,
                repo_of: HashMap::new(),
                backoff: HashMap::new(),
                revision: None,
                told: HashSet::new(),
                program: Vec::new(),
                program_due: None,
                db: config.home.db_path.clone(),
                stamp: Vec::new(),
            },
            config,
            shared,
            tx,
            events,
            records,
            watches,
            exits: HashMap::new(),
            agents: HashMap::new(),
            files_active: false,
            full: true,
            files: true,
            woke: (now, SystemTime::now()),
            refused: Vec::new(),
        }
    }

    async fn run(
        mut self,
        mut rx: mpsc::UnboundedReceiver<Msg>,
        mut machines: mpsc::UnboundedReceiver<(usize, machine::Report)>,
    ) {
        let mut warnings = match &self.watches.error {
            Some(e) => vec![Warning::new(None, e.clone())],
            None => Vec::new(),
        };
        warnings.append(&mut self.refused);
        if let Some(lf) = self.lf.lf.clone() {
            self.lf.program = self.watches.program(lf.bin());
            match lf.detect().await {
                Ok(detected) => self.detected(detected),
                Err(e) => self.lf.warn_once(
                    format!("lf session --help: {}", one_line(&e.to_string())),
                    &mut warnings,
                ),
            }
        }
        // Watch first, then read: a record written in between is seen by the read.
        self.watches.ensure_tops(&self.config.home, self.files);
        if self.files {
            warnings.extend(self.records.rescan());
            self.sync_runs(&mut warnings);
        }
        // The first list waits for lf (bounded by its timeout), so the first snapshot
        // already holds lf's sessions.
        if let Some(lf) = self.lf.lf.clone() {
            let dialect = self.lf.dialect();
            self.lf.schedule.own_started();
            let result = lf.list(&dialect).await;
            self.lf.own_ended(Instant::now());
            warnings.extend(self.take_listed(result));
        }
        // The snapshot says what is there; no transition is reported for it.
        self.update();
        let first = Event::Snapshot {
            at: OffsetDateTime::now_utc(),
            sessions: all_sessions(&read(&self.shared)),
        };
        if self.events.send(first).is_err() {
            return;
        }
        self.sync_readers(Instant::now(), &mut warnings);
        self.sync_agents();
        self.warn(warnings);

        let mut reconcile = tokio::time::interval(self.config.reconcile_interval);
        reconcile.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        reconcile.tick().await;

        loop {
            let lf_due = if self.lf.lf.is_some() {
                self.lf.schedule.deadline()
            } else {
                None
            };
            let readers_due = self.readers_deadline();
            let program_due = self.lf.program_due;
            let mut fresh = Vec::new();
            let changed = tokio::select! {
                msg = rx.recv() => {
                    let Some(msg) = msg else { return };
                    let mut batch = Batch::default();
                    self.absorb(msg, &mut batch, &mut fresh);
                    // Everything already queued is handled together: a burst of events
                    // for one file re-reads it once.
                    while let Ok(msg) = rx.try_recv() {
                        self.absorb(msg, &mut batch, &mut fresh);
                    }
                    let changed = batch.changed() || !self.lf.touched.is_empty();
                    self.apply(batch, &mut fresh);
                    changed
                }
                _ = reconcile.tick(), if self.files => {
                    self.watches.ensure_tops(&self.config.home, self.files);
                    fresh.extend(self.records.reconcile());
                    self.full = true;
                    self.sync_runs(&mut fresh);
                    true
                }
                Some((index, report)) = machines.recv() => {
                    self.machine(index, report, &mut fresh);
                    false
                }
                () = sleep_until(lf_due), if lf_due.is_some() => false,
                () = sleep_until(readers_due), if readers_due.is_some() => false,
                () = sleep_until(program_due), if program_due.is_some() => {
                    self.lf.program_due = None;
                    self.redetect();
                    false
                }
            };
            if self.events.is_closed() {
                return;
            }
            let now = Instant::now();
            self.resumed(now);
            if self.lf.lf.is_some() && self.lf.schedule.poll(now).is_some() {
                self.start_list();
            }
            self.check_readers(now, &mut fresh);
            // Most file events are our own reads or lf's temporaries: they change nothing
            // and cost no rebuild.
            if changed {
                for event in self.update() {
                    let _ = self.events.send(event);
                }
                self.sync_readers(now, &mut fresh);
                self.sync_agents();
            }
            self.warn(fresh);
            let finished = self.lf.finished;
            let (answered, waiting) = std::mem::take(&mut self.lf.waiters)
                .into_iter()
                .partition(|(wanted, _)| *wanted <= finished);
            self.lf.waiters = waiting;
            for (_, waiter) in answered {
                let _ = waiter.send(());
            }
        }
    }

    /// What was learned about the lf in use: which sources count and how lf is followed.
    fn detected(&mut self, detected: Dialect) {
        self.lf.detected = Some(detected);
        self.files = detected.session_files;
        let quiet = detected.quiet.then_some(self.config.quiet_recheck);
        self.lf.schedule.set_quiet(quiet);
    }

    /// The lf program changed: ask it again what it is, in the background.
    fn redetect(&mut self) {
        let (Some(lf), Some(tx)) = (self.lf.lf.clone(), self.tx.upgrade()) else {
            return;
        };
        self.lf.schedule.own_started();
        tokio::spawn(async move {
            let _ = tx.send(Msg::Detected(lf.detect().await));
        });
    }

    fn absorb(&mut self, msg: Msg, batch: &mut Batch, fresh: &mut Vec<Warning>) {
        let now = Instant::now();
        match msg {
            Msg::Fs(Ok(event)) => route(&self.config.home, &self.lf.program, event, batch),
            Msg::Fs(Err(e)) => fresh.push(Warning::new(
                e.paths.first().cloned(),
                format!("file watch failed: {e}"),
            )),
            Msg::ClientExited(run_id) => {
                self.records.client_exited(&run_id);
                self.settle(&run_id, fresh);
                batch.other = true;
            }
            Msg::Listed(result) => {
                batch.other = true;
                self.lf.finished += 1;
                fresh.extend(self.take_listed(result));
                let again = self.lf.schedule.finished(now);
                self.lf.stamp = stamp(&self.lf.db);
                if again {
                    self.start_list();
                }
            }
            Msg::Acting => self.lf.schedule.own_started(),
            Msg::Acted(waiter) => {
                // An action just ran: list now, without the debounce; the caller waits
                // for that list.
                self.lf.own_ended(now);
                self.lf.schedule.ask(now);
                let wanted = self.lf.started + 1;
                self.lf.waiters.push((wanted, waiter));
            }
            Msg::Reader(serial, report) => self.reader(serial, report, now, fresh),
            Msg::AgentExited(pid) => {
                self.agents.remove(&pid);
                self.lf.schedule.ask(now);
            }
            Msg::Detected(result) => {
                self.lf.own_ended(now);
                match result {
                    Ok(detected) if Some(detected) != self.lf.detected => {
                        // A new lf: its sources, readers and list replace the old ones.
                        self.detected(detected);
                        self.lf.readers.clear();
                        self.lf.repo_of.clear();
                        self.lf.backoff.clear();
                        self.lf.revision = None;
                        self.watches.ensure_tops(&self.config.home, self.files);
                        if self.files {
                            fresh.extend(self.records.rescan());
                            self.sync_runs(fresh);
                        }
                        self.lf.schedule.ask(now);
                        batch.other = true;
                    }
                    Ok(_) => {}
                    Err(e) => self.lf.warn_once(
                        format!("lf session --help: {}", one_line(&e.to_string())),
                        fresh,
                    ),
                }
            }
        }
    }

    fn apply(&mut self, batch: Batch, fresh: &mut Vec<Warning>) {
        let now = Instant::now();
        if batch.program {
            self.lf.program_due = Some(now + PROGRAM_SETTLE);
        }
        // lf's database was written. While a reader is followed, the store's revisions
        // say what moved; otherwise the write itself is the sign, unless it is the
        // tray's own lf at work.
        if batch.database && !self.lf.reader_live() {
            self.lf.written(now);
        }
        for dir in &batch.gone {
            self.watches.forget(dir);
        }
        if batch.rescan && self.files {
            self.full = true;
            // Events were lost: any watched directory may have been replaced.
            self.watches.forget(Path::new("/"));
            self.watches.ensure_tops(&self.config.home, self.files);
            fresh.extend(self.records.rescan());
            self.sync_runs(fresh);
            return;
        }
        if batch.tops {
            // A source directory came or went: whether the files count at all may change.
            self.full = true;
            let appeared = self.watches.ensure_tops(&self.config.home, self.files);
            // The database may have been written before its directory was watched.
            if appeared.database {
                self.lf.schedule.changed(now);
            }
            // A new source is read whole; the Runs only when `runs/` itself is new, since
            // reading 10 000 of them for a new `human-sessions/` would be wasted.
            if appeared.runs {
                fresh.extend(self.records.rescan());
                self.sync_runs(fresh);
                return;
            }
            if appeared.asks {
                fresh.extend(self.records.rescan_asks());
                self.sync_runs(fresh);
            }
            if !self.config.home.asks_dir().is_dir() {
                self.records.forget_asks();
            }
        }
        if !self.files {
            return;
        }
        for shard in &batch.shards {
            // A new shard holds new Run dirs; a vanished one takes its Runs along.
            self.watches.shard(shard);
            let mut runs = run_names(shard);
            runs.extend(self.tracked_in(shard));
            for run in runs {
                fresh.extend(self.records.run_changed(&run));
                self.settle(&run, fresh);
            }
        }
        for id in &batch.asks {
            fresh.extend(self.records.ask_changed(id));
        }
        for run in &batch.runs {
            fresh.extend(self.records.run_changed(run));
            self.settle(run, fresh);
        }
        // An Ask may have named a new session Run, which is followed from now on.
        for id in &batch.asks {
            if let Some(run) = self.records.session_run_of(id) {
                self.settle(&run, fresh);
            }
        }
    }

    fn tracked_in(&self, shard: &Path) -> Vec<String> {
        self.records
            .tracked()
            .filter(|(_, t)| t.run.dir.parent() == Some(shard))
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// A Run was just read: follow it. If that put a new watch in place (on the Run, or
    /// on a `provider-clients/` that just appeared), read it once more, so that nothing
    /// written between the read and the watch is missed.
    fn settle(&mut self, run_id: &str, fresh: &mut Vec<Warning>) {
        if self.sync_run(run_id) {
            fresh.extend(self.records.run_changed(run_id));
            self.sync_run(run_id);
        }
    }

    /// Bring watches and exit watchers in line with every followed Run (after a rescan).
    fn sync_runs(&mut self, fresh: &mut Vec<Warning>) {
        let followed: HashSet<String> = self.records.tracked().map(|(id, _)| id.clone()).collect();
        self.watches.retain_runs(|run| followed.contains(run));
        for run in &followed {
            self.settle(run, fresh);
        }
        self.watches.shards(&self.config.home.runs_dir());
        stop_exits(&mut self.exits, |run, _| !followed.contains(run));
    }

    /// Watch the agent process of every listed session that names one, and stop watching
    /// those no longer listed: an agent's death is written nowhere (lf reads it at query
    /// time), so its exit is the one sign that the session stopped.
    fn sync_agents(&mut self) {
        let dialect = self.lf.dialect();
        let wanted: HashSet<i32> = self
            .lf
            .listed
            .iter()
            .filter_map(|r| dialect.agent_pid(r))
            .collect();
        self.agents.retain(|pid, handle| {
            let keep = wanted.contains(pid);
            if !keep {
                handle.abort();
            }
            keep
        });
        for pid in wanted {
            if !self.agents.contains_key(&pid) {
                let handle = watch_exit(pid, self.tx.clone(), Msg::AgentExited(pid));
                self.agents.insert(pid, handle);
            }
        }
    }

    /// Watch a followed Run (its directory and `provider-clients/`) and its live client
    /// processes; stop watching one no longer followed.
    fn sync_run(&mut self, run_id: &str) -> bool {
        let home = self.config.home.clone();
        let Some(tracked) = self.records.tracked_run(run_id) else {
            self.watches.unwatch_run(&home, run_id);
            stop_exits(&mut self.exits, |run, _| run == run_id);
            return false;
        };
        let added = self.watches.watch_run(&tracked.run.dir);
        let live: Vec<i32> = tracked.live_pids.clone();
        stop_exits(&mut self.exits, |run, pid| {
            run == run_id && !live.contains(&pid)
        });
        for pid in live {
            if !self.exits.contains_key(&pid) {
                let handle = watch_exit(pid, self.tx.clone(), Msg::ClientExited(run_id.into()));
                self.exits.insert(pid, (run_id.to_string(), handle));
            }
        }
        added
    }

    /// Run `lf session list` in the background (the schedule said so).
    fn start_list(&mut self) {
        let (Some(lf), Some(tx)) = (self.lf.lf.clone(), self.tx.upgrade()) else {
            return;
        };
        self.lf.started += 1;
        let dialect = self.lf.dialect();
        tokio::spawn(async move {
            let _ = tx.send(Msg::Listed(lf.list(&dialect).await));
        });
    }

    fn take_listed(
        &mut self,
        result: Result<(Vec<SessionRecord>, Vec<String>), LfError>,
    ) -> Vec<Warning> {
        self.full = true;
        match result {
            Ok((records, problems)) => {
                self.lf.listed = records;
                self.lf.reindex();
                self.lf.failure = None;
                problems
                    .into_iter()
                    .map(|p| Warning::new(None, p))
                    .collect()
            }
            Err(e) => {
                // The status line says lf failed.
                let message = format!("lf session list: {}", one_line(&e.to_string()));
                // One warning per distinct failure, not one per safety tick.
                if self.lf.failure.as_deref() == Some(message.as_str()) {
                    return Vec::new();
                }
                self.lf.failure = Some(message.clone());
                vec![Warning::new(None, message)]
            }
        }
    }

    /// A reader's frame or end.
    fn reader(&mut self, serial: u64, report: Report, now: Instant, fresh: &mut Vec<Warning>) {
        let Some(following) = self.lf.readers.get_mut(&serial) else {
            // One the engine already let go of.
            return;
        };
        let frame = match report {
            Report::Frame(frame) => frame,
            Report::Ended(message) => {
                let key = following.key.clone();
                let started = following.started;
                self.lf.readers.remove(&serial);
                if !started {
                    self.lf.own_ended(now);
                }
                self.lf.back_off(&key, now);
                self.lf.warn_once(message, fresh);
                return;
            }
        };
        following.last_frame = now;
        let first = !std::mem::replace(&mut following.started, true);
        let key = following.key.clone();
        if first {
            // Its one write to the store (a Process row) is behind it.
            self.lf.own_ended(now);
        }
        self.lf.backoff.remove(&key);
        if let Some(revision) = frame.sessions_revision {
            // The first revision seen is where things stand; a higher one means some
            // session in the store moved, maybe outside every followed repository.
            if self.lf.revision.is_some_and(|seen| revision > seen) {
                self.lf.schedule.changed(now);
            }
            self.lf.revision = Some(self.lf.revision.map_or(revision, |r| r.max(revision)));
        }
        match frame.part {
            Part::Sessions {
                repo,
                entries,
                problems,
            } => {
                fresh.extend(problems.into_iter().map(|p| Warning::new(None, p)));
                self.lf.repo_of.insert(key, repo.clone());
                // Two worktrees of one repository: one reader is enough.
                let twin = self
                    .lf
                    .readers
                    .iter()
                    .any(|(s, r)| *s != serial && r.repo.as_deref() == Some(&repo));
                if twin {
                    self.lf.readers.remove(&serial);
                } else if let Some(following) = self.lf.readers.get_mut(&serial) {
                    following.repo = Some(repo.clone());
                }
                self.apply_frame(&repo, entries);
            }
            Part::Unavailable(reason) => self.lf.warn_once(reason, fresh),
            Part::Other => {}
        }
    }

    /// A reader's list of every open session in `repo` replaces what the engine had for
    /// that repository: sessions it no longer lists were completed.
    fn apply_frame(&mut self, repo: &str, entries: Vec<SessionRecord>) {
        let side = &mut self.lf;
        let fresh: HashSet<&str> = entries.iter().map(|r| r.id.as_str()).collect();
        let mut kept = Vec::with_capacity(side.listed.len());
        for record in std::mem::take(&mut side.listed) {
            let in_repo = side.repo_of_record(&record).is_some_and(|r| r == repo);
            if in_repo || fresh.contains(record.id.as_str()) {
                side.touched.insert(record.id);
            } else {
                kept.push(record);
            }
        }
        for record in &entries {
            side.touched.insert(record.id.clone());
        }
        kept.extend(entries);
        side.listed = kept;
        side.reindex();
    }

    /// Start a reader for each repository with open sessions that has none, and stop
    /// those whose repository has none left. Only where lf has `monitor work`.
    fn sync_readers(&mut self, now: Instant, fresh: &mut Vec<Warning>) {
        let Some(lf) = self.lf.lf.clone().filter(|_| self.lf.readers()) else {
            return;
        };
        let side = &mut self.lf;
        // The worktrees of open sessions, one per repository where the repository is
        // known; in list order, so the same ones win each time.
        let mut wanted: Vec<String> = Vec::new();
        let mut repos: HashSet<String> = HashSet::new();
        for record in &side.listed {
            let Some(worktree) = record.worktree() else {
                continue;
            };
            let new = match side.repo_of.get(worktree) {
                Some(repo) => repos.insert(repo.clone()),
                None => !wanted.iter().any(|w| w == worktree),
            };
            if new {
                wanted.push(worktree.to_string());
            }
        }
        // Readers no longer wanted go: their repository has no open session left.
        side.readers.retain(|_, r| {
            let repo = r.repo.as_ref();
            repo.is_some_and(|repo| repos.contains(repo)) || wanted.contains(&r.key)
        });
        for key in wanted {
            if side.readers.len() >= MAX_READERS {
                break;
            }
            let covered = side.readers.values().any(|r| {
                r.key == key || (r.repo.is_some() && r.repo.as_ref() == side.repo_of.get(&key))
            });
            let waiting = side
                .backoff
                .get(&key)
                .is_some_and(|(until, _)| until.is_some_and(|u| now < u));
            if covered || waiting {
                continue;
            }
            let serial = side.next_reader;
            side.next_reader += 1;
            let tx = self.tx.clone();
            let started = Reader::start(&lf, &key, move |report| {
                if let Some(tx) = tx.upgrade() {
                    let _ = tx.send(Msg::Reader(serial, report));
                }
            });
            match started {
                Ok(reader) => {
                    side.schedule.own_started();
                    side.readers.insert(
                        serial,
                        Following {
                            key,
                            reader,
                            last_frame: now,
                            repo: None,
                            started: false,
                        },
                    );
                }
                Err(e) => {
                    let message = format!("lf monitor work: {}", one_line(&e.to_string()));
                    side.warn_once(message, fresh);
                    side.back_off(&key, now);
                }
            }
        }
    }

    /// When a reader may have gone silent, or one that failed may start again.
    fn readers_deadline(&self) -> Option<Instant> {
        let silent = self
            .lf
            .readers
            .values()
            .map(|r| r.last_frame + READER_SILENCE)
            .min();
        let retry = self
            .lf
            .backoff
            .values()
            .filter_map(|(until, _)| *until)
            .min();
        [silent, retry].into_iter().flatten().min()
    }

    /// Restart readers that went silent; start those whose back-off is over.
    fn check_readers(&mut self, now: Instant, fresh: &mut Vec<Warning>) {
        let silent: Vec<u64> = self
            .lf
            .readers
            .iter()
            .filter(|(_, r)| now >= r.last_frame + READER_SILENCE)
            .map(|(s, _)| *s)
            .collect();
        for serial in silent {
            if let Some(r) = self.lf.readers.remove(&serial) {
                if !r.started {
                    self.lf.own_ended(now);
                }
                let message = format!(
                    "lf monitor work for {} sent nothing for {} s; it is started again",
                    r.repo.as_deref().unwrap_or(&r.key),
                    READER_SILENCE.as_secs()
                );
                fresh.push(Warning::new(None, message));
                self.lf.back_off(&r.key, now);
                // Its repository is covered by lists until the new one answers.
                self.lf.schedule.changed(now);
            }
        }
        let mut due = false;
        for (until, _) in self.lf.backoff.values_mut() {
            if until.is_some_and(|u| now >= u) {
                // May start again now; the pause is kept, so a next failure doubles it.
                *until = None;
                due = true;
            }
        }
        if due {
            self.sync_readers(now, fresh);
        }
    }

    /// The machine slept: everything lf's readers hold may be stale, and the quiet
    /// deadlines passed unseen.
    fn resumed(&mut self, now: Instant) {
        let wall = SystemTime::now();
        let (then, then_wall) = std::mem::replace(&mut self.woke, (now, wall));
        let slept = wall
            .duration_since(then_wall)
            .unwrap_or_default()
            .saturating_sub(now - then);
        if slept > RESUME_JUMP {
            for r in self.lf.readers.values() {
                r.reader.refresh();
            }
            self.lf.schedule.ask(now);
        }
    }

    /// Bring the published list up to date; returns the transitions. A change that
    /// touched a few records re-derives and merges only those, so its cost does not grow
    /// with the number of sessions or Runs.
    fn update(&mut self) -> Vec<Event> {
        let at = OffsetDateTime::now_utc();
        let mut touched = self.records.take_touched();
        touched.extend(self.lf.touched.drain());
        let dialect = self.lf.detected;
        let mut shared = write(&self.shared);
        let events = if std::mem::take(&mut self.full) {
            self.files_active = self.files && files_present(&self.config.home);
            let files = if self.files {
                self.records.sessions()
            } else {
                Vec::new()
            };
            let next = Snapshot::merge(files, &self.lf.listed, self.files_active, dialect.as_ref());
            let events = shared.snapshot.diff(&next, at);
            shared.snapshot = next;
            events
        } else {
            let files = self.files;
            touched
                .into_iter()
                .filter_map(|id| {
                    let file = if files {
                        self.records.session(&id)
                    } else {
                        None
                    };
                    let cli = self.lf.index.get(&id).map(|&i| &self.lf.listed[i]);
                    let next = merge_one(
                        file,
                        cli,
                        self.files_active,
                        &self.lf.boundary,
                        dialect.as_ref(),
                    );
                    shared.snapshot.update(&id, next, at)
                })
                .collect()
        };
        shared.can_watch = self.watches.watcher.is_some();
        shared.detected = self.lf.detected;
        shared.status = status_line(
            self.lf.lf.as_ref(),
            self.lf.detected,
            self.lf.failure.as_deref(),
            shared.snapshot.len(),
        );
        events
    }

    /// A machine's follower reported: its transitions, each once, and its warnings. Its
    /// first view changes the whole list, which is told as a new snapshot.
    fn machine(&mut self, index: usize, report: machine::Report, fresh: &mut Vec<Warning>) {
        let mut shared = write(&self.shared);
        let Some(machine) = shared.machines.get_mut(index) else {
            return;
        };
        let applied = machine.apply(report, OffsetDateTime::now_utc());
        fresh.extend(applied.warnings);
        let snapshot = applied.first_view.then(|| Event::Snapshot {
            at: OffsetDateTime::now_utc(),
            sessions: all_sessions(&shared),
        });
        drop(shared);
        for event in applied.events.into_iter().chain(snapshot) {
            let _ = self.events.send(event);
        }
    }

    fn warn(&self, warnings: Vec<Warning>) {
        for warning in warnings {
            let _ = self.events.send(Event::warning(warning));
        }
    }
}

/// Stop the exit watchers `stop` picks (by Run id and pid).
fn stop_exits(exits: &mut HashMap<i32, (String, AbortHandle)>, stop: impl Fn(&str, i32) -> bool) {
    exits.retain(|pid, (run, handle)| {
        let gone = stop(run, *pid);
        if gone {
            handle.abort();
        }
        !gone
    });
}

async fn sleep_until(due: Option<Instant>) {
    match due {
        Some(due) => tokio::time::sleep_until(due).await,
        None => std::future::pending().await,
    }
}

/// Tell the engine when a process exits.
fn watch_exit(pid: i32, tx: mpsc::WeakUnboundedSender<Msg>, exited: Msg) -> AbortHandle {
    tokio::spawn(async move {
        crate::liveness::exited(pid).await;
        if let Some(tx) = tx.upgrade() {
            let _ = tx.send(exited);
        }
    })
    .abort_handle()
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn lf_errors_fold_onto_one_line() {
        assert_eq!(
            one_line("parse human session record\n\nCaused by:\n    EOF while parsing\n\nStack backtrace:\n   0: x"),
            "parse human session record: EOF while parsing"
        );
        assert_eq!(one_line("a\n\nCaused by:\n    0: b\n    1: c"), "a: b: c");
    }
}
