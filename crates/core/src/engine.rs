//! The engine: one task that owns the session list, fed by inotify (through `notify`),
//! by client-process exits (pidfd), and by `lf session list`. It turns every change into
//! exactly-once events and never polls the home.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use time::OffsetDateTime;
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;

use crate::event::{Event, Warning};
use crate::home::Home;
use crate::lf::{self, Generation, Lf, LfAction, LfError};
use crate::records::Records;
use crate::session::SessionRecord;
use crate::snapshot::{boundary_runs, merge_one, Snapshot};
use crate::watch::{route, run_names, Batch, Watches};

/// How often `lf session list` runs with nothing else asking for it. Flow sessions live
/// in lf's database, whose directory is watched, so this only catches what a watch
/// cannot see (a database on another file system, a remote Home). A minute keeps an idle
/// tray from costing anything noticeable while bounding how stale a missed Flow can be.
pub const SAFETY_INTERVAL: Duration = Duration::from_secs(60);
/// The floor for the safety timer: lf itself takes up to a second or two on a large
/// store, and running it more often would be the busy polling this app exists to avoid.
pub const MIN_SAFETY_INTERVAL: Duration = Duration::from_secs(30);
/// How often the files are read from scratch, to repair anything the watches missed
/// (a headless Run opened interactively later, which is not watched). Ten minutes keeps
/// the cost of a 10 000-Run home far below a millisecond per idle minute on average.
pub const RECONCILE_INTERVAL: Duration = Duration::from_secs(600);
/// Quiet time after a database change before `lf` runs. One SQLite transaction touches
/// the database, its WAL and its journal in a burst of a few milliseconds; waiting
/// 100 ms turns a burst into one `lf` run and still shows a Flow well within a second.
const LF_DEBOUNCE: Duration = Duration::from_millis(100);

/// How the engine is set up.
#[derive(Debug, Clone)]
pub struct Config {
    pub home: Home,
    /// The `lf` to run; `None` when none was found, and the file sources work alone.
    pub lf_bin: Option<PathBuf>,
    pub lf_timeout: Duration,
    pub safety_interval: Duration,
    pub reconcile_interval: Duration,
    /// `--home DIR` was given: `lf` must look at the same directory.
    pub home_override: bool,
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
            home_override,
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
    status: String,
    can_watch: bool,
    generation: Option<Generation>,
}

/// A handle on the running engine. Cheap to clone.
#[derive(Clone)]
pub struct Engine {
    shared: Arc<RwLock<Shared>>,
    lf: Option<Lf>,
    tx: mpsc::UnboundedSender<Msg>,
}

enum Msg {
    Fs(notify::Result<notify::Event>),
    ClientExited(String),
    Listed(Result<(Vec<SessionRecord>, Vec<String>), LfError>),
    Relist(Option<oneshot::Sender<()>>),
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
        let engine = Engine {
            shared: shared.clone(),
            lf: lf.clone(),
            tx: tx.clone(),
        };
        let core = Core::new(config, lf, shared, tx.downgrade(), events);
        tokio::spawn(core.run(rx));
        (engine, events_rx)
    }

    /// The current sessions in lf's order.
    pub fn sessions(&self) -> Vec<SessionRecord> {
        self.shared.read().unwrap().snapshot.sessions()
    }

    pub fn session(&self, id: &str) -> Option<SessionRecord> {
        self.shared.read().unwrap().snapshot.get(id).cloned()
    }

    pub fn lf_bin(&self) -> Option<PathBuf> {
        self.lf.as_ref().map(|lf| lf.bin().to_path_buf())
    }

    /// The generation of the `lf` in use, once known (it decides which actions a record
    /// without lf's own `actions` gets).
    pub fn generation(&self) -> Option<Generation> {
        self.shared.read().unwrap().generation
    }

    /// Whether file watching works. Without it only the timers refresh the list.
    pub fn can_watch(&self) -> bool {
        self.shared.read().unwrap().can_watch
    }

    /// One line on where the sessions come from, for a status bar.
    pub fn status(&self) -> String {
        self.shared.read().unwrap().status.clone()
    }

    /// Run an `lf session` action, then wait until the list has been taken again so the
    /// caller sees its effect.
    pub async fn act(&self, action: LfAction) -> Result<String, LfError> {
        let lf = self.lf.as_ref().ok_or(LfError::NotFound)?;
        let result = lf.act(&action).await;
        let (done, wait) = oneshot::channel();
        if self.tx.send(Msg::Relist(Some(done))).is_ok() {
            let _ = wait.await;
        }
        result
    }
}

/// Read both sources once, without watching: `lf-tray list`.
pub async fn list_once(config: Config) -> (Vec<SessionRecord>, Vec<Warning>, String) {
    let lf = config.lf();
    let generation = match &lf {
        Some(lf) => lf.generation().await.ok(),
        None => None,
    };
    let files = generation.is_none_or(Generation::has_session_files);
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
            Some(lf) => Some(lf.list().await),
            None => None,
        }
    };
    let (scan, cli) = tokio::join!(scan, cli);
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
    let snapshot = Snapshot::merge(file_sessions, &listed, files_active);
    let status = status_line(lf.as_ref(), None, snapshot.len());
    (snapshot.sessions(), warnings, status)
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

fn status_line(lf: Option<&Lf>, failure: Option<&str>, count: usize) -> String {
    let sessions = match count {
        1 => "1 session".to_string(),
        n => format!("{n} sessions"),
    };
    match (lf, failure) {
        (None, _) => format!(
            "No lf found ($LF_BIN, PATH, ~/.local/bin/lf): showing Ask and interactive \
             sessions from files; Flow sessions need lf · {sessions}"
        ),
        (Some(lf), None) => format!("lf: {} · {sessions}", lf.bin().display()),
        (Some(_), Some(failure)) => {
            format!("lf failed ({failure}); Flow sessions are from the last good list · {sessions}")
        }
    }
}

/// The engine task's state.
struct Core {
    config: Config,
    lf: Option<Lf>,
    shared: Arc<RwLock<Shared>>,
    tx: mpsc::WeakUnboundedSender<Msg>,
    events: mpsc::UnboundedSender<Event>,
    records: Records,
    watches: Watches,
    /// The last good `lf session list`.
    listed: Vec<SessionRecord>,
    lf_failure: Option<String>,
    lf_running: bool,
    lf_again: bool,
    lf_due: Option<tokio::time::Instant>,
    /// Callers of `Engine::act`, waiting for the first list started after their action,
    /// then for the one running, then for its result to be published.
    waiting: Vec<oneshot::Sender<()>>,
    in_flight: Vec<oneshot::Sender<()>>,
    answered: Vec<oneshot::Sender<()>>,
    exits: HashMap<i32, (String, AbortHandle)>,
    /// Where in `listed` each id is, and the Runs lf names as Ask or Flow boundaries:
    /// what merging one changed session needs.
    listed_index: HashMap<String, usize>,
    boundary: HashSet<String>,
    /// Whether a source directory exists (cached: it changes only on top-level events).
    files_active: bool,
    /// Set when a change may touch any session (a rescan, a new lf list): the next
    /// update merges everything; otherwise only the touched sessions are merged.
    full: bool,
    generation: Option<Generation>,
    /// Whether lf keeps sessions in files (every generation before C).
    files: bool,
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
        Core {
            config,
            lf,
            shared,
            tx,
            events,
            records,
            watches,
            listed: Vec::new(),
            lf_failure: None,
            lf_running: false,
            lf_again: false,
            lf_due: None,
            waiting: Vec::new(),
            in_flight: Vec::new(),
            answered: Vec::new(),
            exits: HashMap::new(),
            listed_index: HashMap::new(),
            boundary: HashSet::new(),
            files_active: false,
            full: true,
            generation: None,
            files: true,
        }
    }

    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Msg>) {
        let mut warnings = match &self.watches.error {
            Some(e) => vec![Warning::new(None, e.clone())],
            None => Vec::new(),
        };
        if let Some(lf) = &self.lf {
            self.generation = lf.generation().await.ok();
            self.files = self.generation.is_none_or(Generation::has_session_files);
        }
        // Watch first, then read: a record written in between is seen by the read.
        self.watches.ensure_tops(&self.config.home, self.files);
        if self.files {
            warnings.extend(self.records.rescan());
            self.sync_runs(&mut warnings);
        }
        // The first list waits for lf (bounded by its timeout), so the first snapshot
        // already holds the Flow sessions.
        if let Some(lf) = self.lf.clone() {
            let result = lf.list().await;
            warnings.extend(self.take_listed(result));
        }
        // The snapshot says what is there; no transition is reported for it.
        self.update();
        let first = Event::Snapshot {
            at: OffsetDateTime::now_utc(),
            sessions: self.shared.read().unwrap().snapshot.sessions(),
        };
        if self.events.send(first).is_err() {
            return;
        }
        self.warn(warnings);

        let mut safety =
            tokio::time::interval(self.config.safety_interval.max(MIN_SAFETY_INTERVAL));
        safety.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        safety.tick().await;
        let mut reconcile = tokio::time::interval(self.config.reconcile_interval);
        reconcile.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        reconcile.tick().await;

        loop {
            let lf_due = self.lf_due;
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
                    let changed = batch.changed();
                    self.apply(batch, &mut fresh);
                    changed
                }
                _ = safety.tick(), if self.lf.is_some() => {
                    self.request_list(None);
                    false
                }
                _ = reconcile.tick(), if self.files => {
                    self.watches.ensure_tops(&self.config.home, self.files);
                    fresh.extend(self.records.reconcile());
                    self.full = true;
                    self.sync_runs(&mut fresh);
                    true
                }
                _ = sleep_until(lf_due), if lf_due.is_some() => {
                    self.lf_due = None;
                    self.start_list();
                    false
                }
            };
            if self.events.is_closed() {
                return;
            }
            // Most file events are our own reads or lf's temporaries: they change nothing
            // and cost no rebuild.
            if changed {
                for event in self.update() {
                    let _ = self.events.send(event);
                }
            }
            self.warn(fresh);
            for waiter in self.answered.drain(..) {
                let _ = waiter.send(());
            }
        }
    }

    fn absorb(&mut self, msg: Msg, batch: &mut Batch, fresh: &mut Vec<Warning>) {
        match msg {
            Msg::Fs(Ok(event)) => route(&self.config.home, event, batch),
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
                self.lf_running = false;
                fresh.extend(self.take_listed(result));
                self.answered.append(&mut self.in_flight);
                if std::mem::take(&mut self.lf_again) {
                    self.start_list();
                }
            }
            Msg::Relist(waiter) => {
                // An action just ran: list now, without the debounce.
                self.waiting.extend(waiter);
                self.start_list();
            }
        }
    }

    fn apply(&mut self, batch: Batch, fresh: &mut Vec<Warning>) {
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
                self.request_list(Some(LF_DEBOUNCE));
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
        if batch.database {
            self.request_list(Some(LF_DEBOUNCE));
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
        self.exits.retain(|_, (run, handle)| {
            let keep = followed.contains(run);
            if !keep {
                handle.abort();
            }
            keep
        });
    }

    /// Watch a followed Run (its directory and `provider-clients/`) and its live client
    /// processes; stop watching one no longer followed.
    fn sync_run(&mut self, run_id: &str) -> bool {
        let home = self.config.home.clone();
        let Some(tracked) = self.records.tracked_run(run_id) else {
            self.watches.unwatch_run(&home, run_id);
            self.exits.retain(|_, (run, handle)| {
                let keep = run != run_id;
                if !keep {
                    handle.abort();
                }
                keep
            });
            return false;
        };
        let added = self.watches.watch_run(&tracked.run.dir);
        let live: Vec<i32> = tracked.live_pids.clone();
        self.exits.retain(|pid, (run, handle)| {
            let keep = run != run_id || live.contains(pid);
            if !keep {
                handle.abort();
            }
            keep
        });
        for pid in live {
            if !self.exits.contains_key(&pid) {
                let handle = watch_exit(pid, run_id.to_string(), self.tx.clone());
                self.exits.insert(pid, (run_id.to_string(), handle));
            }
        }
        added
    }

    fn request_list(&mut self, after: Option<Duration>) {
        if self.lf.is_none() {
            return;
        }
        match after {
            Some(delay) => {
                self.lf_due = Some(tokio::time::Instant::now() + delay);
            }
            None => self.start_list(),
        }
    }

    /// Run `lf session list` in the background; at most one at a time, and one more
    /// afterwards if something asked for it meanwhile.
    fn start_list(&mut self) {
        let (Some(lf), Some(tx)) = (self.lf.clone(), self.tx.upgrade()) else {
            self.answered.append(&mut self.waiting);
            return;
        };
        if self.lf_running {
            self.lf_again = true;
            return;
        }
        self.lf_running = true;
        self.in_flight.append(&mut self.waiting);
        tokio::spawn(async move {
            let _ = tx.send(Msg::Listed(lf.list().await));
        });
    }

    fn take_listed(
        &mut self,
        result: Result<(Vec<SessionRecord>, Vec<String>), LfError>,
    ) -> Vec<Warning> {
        match result {
            Ok((records, problems)) => {
                self.listed_index = records
                    .iter()
                    .enumerate()
                    .map(|(i, r)| (r.id.clone(), i))
                    .collect();
                self.boundary = boundary_runs(&records);
                self.listed = records;
                self.lf_failure = None;
                self.full = true;
                problems
                    .into_iter()
                    .map(|p| Warning::new(None, p))
                    .collect()
            }
            Err(e) => {
                // The status line says lf failed.
                self.full = true;
                let message = format!("lf session list: {}", one_line(&e.to_string()));
                // One warning per distinct failure, not one per safety tick.
                if self.lf_failure.as_deref() == Some(message.as_str()) {
                    return Vec::new();
                }
                self.lf_failure = Some(message.clone());
                vec![Warning::new(None, message)]
            }
        }
    }

    /// Bring the published list up to date; returns the transitions. A change that
    /// touched a few records re-derives and merges only those, so its cost does not grow
    /// with the number of sessions or Runs.
    fn update(&mut self) -> Vec<Event> {
        let at = OffsetDateTime::now_utc();
        let touched = self.records.take_touched();
        let mut shared = self.shared.write().unwrap();
        let events = if std::mem::take(&mut self.full) {
            self.files_active = self.files && files_present(&self.config.home);
            let files = if self.files {
                self.records.sessions()
            } else {
                Vec::new()
            };
            let next = Snapshot::merge(files, &self.listed, self.files_active);
            let events = shared.snapshot.diff(&next, at);
            shared.snapshot = next;
            events
        } else {
            touched
                .into_iter()
                .filter_map(|id| {
                    let file = self.records.session(&id);
                    let cli = self.listed_index.get(&id).map(|&i| &self.listed[i]);
                    let next = merge_one(file, cli, self.files_active, &self.boundary);
                    shared.snapshot.update(&id, next, at)
                })
                .collect()
        };
        shared.can_watch = self.watches.watcher.is_some();
        shared.generation = self.generation;
        shared.status = status_line(
            self.lf.as_ref(),
            self.lf_failure.as_deref(),
            shared.snapshot.len(),
        );
        events
    }

    fn warn(&self, warnings: Vec<Warning>) {
        for warning in warnings {
            let _ = self.events.send(Event::warning(warning));
        }
    }
}

async fn sleep_until(due: Option<tokio::time::Instant>) {
    match due {
        Some(due) => tokio::time::sleep_until(due).await,
        None => std::future::pending().await,
    }
}

/// Tell the engine when a client process exits.
fn watch_exit(pid: i32, run_id: String, tx: mpsc::WeakUnboundedSender<Msg>) -> AbortHandle {
    tokio::spawn(async move {
        crate::liveness::exited(pid).await;
        if let Some(tx) = tx.upgrade() {
            let _ = tx.send(Msg::ClientExited(run_id));
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
