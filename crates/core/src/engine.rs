//! The engine: one task that owns the session list, fed by inotify (through `notify`),
//! by client-process exits (pidfd), and by `lf session list`. It turns every change into
//! exactly-once events and never polls the home.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use notify::event::{AccessKind, AccessMode, ModifyKind, RenameMode};
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use time::OffsetDateTime;
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;

use crate::event::{Event, Warning};
use crate::home::Home;
use crate::lf::{self, Generation, Lf, LfAction, LfError};
use crate::records::{is_hidden, Records};
use crate::session::SessionRecord;
use crate::snapshot::{boundary_runs, merge_one, Snapshot};

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
/// Without pidfd (older kernels, other systems), the known live client pids are checked
/// this often. Only those few pids are checked, never the tree.
const EXIT_RECHECK: Duration = Duration::from_secs(2);

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
        let watches = Watches::new(tx.clone());
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
            if appeared.asks || appeared.runs {
                fresh.extend(self.records.rescan());
                self.sync_runs(fresh);
                return;
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

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::{CreateKind, Flag, RemoveKind};

    fn routed(kind: EventKind, paths: &[&str]) -> Batch {
        let home = Home::at("/h");
        let mut event = notify::Event::new(kind);
        for path in paths {
            event = event.add_path(PathBuf::from(path));
        }
        let mut batch = Batch::default();
        route(&home, event, &mut batch);
        batch
    }

    const RENAME: EventKind = EventKind::Modify(ModifyKind::Name(RenameMode::Both));

    #[test]
    fn ask_renames_dirty_one_ask_and_temporaries_nothing() {
        let batch = routed(
            RENAME,
            &[
                "/h/human-sessions/ask_1.json.tmp",
                "/h/human-sessions/ask_1.json",
            ],
        );
        assert_eq!(batch.asks, HashSet::from(["ask_1".to_string()]));
        assert!(!routed(
            EventKind::Create(CreateKind::File),
            &["/h/human-sessions/.x.lock"]
        )
        .changed());
        assert!(!routed(
            EventKind::Create(CreateKind::File),
            &["/h/human-sessions/ask_2.9f.tmp"]
        )
        .changed());
    }

    #[test]
    fn reads_change_nothing_but_finished_writes_do() {
        let open = EventKind::Access(AccessKind::Open(AccessMode::Any));
        assert!(!routed(open, &["/h/human-sessions/ask_1.json"]).changed());
        let written = EventKind::Access(AccessKind::Close(AccessMode::Write));
        assert!(routed(written, &["/h/human-sessions/ask_1.json"]).changed());
    }

    #[test]
    fn run_files_shards_and_staging() {
        let any = EventKind::Modify(ModifyKind::Any);
        let batch = routed(any, &["/h/runs/ab/run_ab12/provider-clients/42.json"]);
        assert_eq!(batch.runs, HashSet::from(["run_ab12".to_string()]));
        let batch = routed(any, &["/h/runs/ab/run_ab12"]);
        assert_eq!(batch.runs, HashSet::from(["run_ab12".to_string()]));
        assert!(!routed(any, &["/h/runs/ab/.run_ab12.staging/manifest.json"]).changed());
        let batch = routed(EventKind::Create(CreateKind::Folder), &["/h/runs/cd"]);
        assert_eq!(batch.shards, HashSet::from([PathBuf::from("/h/runs/cd")]));
    }

    #[test]
    fn database_files_and_the_way_to_the_sources() {
        let any = EventKind::Modify(ModifyKind::Any);
        for db in [
            "/h/loopflow.db",
            "/h/loopflow.db-wal",
            "/h/loopflow.db-journal",
        ] {
            let batch = routed(any, &[db]);
            assert!(batch.database && !batch.changed(), "{db}");
        }
        // Readers touch -shm: lf's own list must not wake the engine again.
        assert!(!routed(any, &["/h/loopflow.db-shm"]).database);
        assert!(routed(any, &["/h"]).tops);
        assert!(
            routed(
                EventKind::Create(CreateKind::Folder),
                &["/h/human-sessions"]
            )
            .tops
        );
        assert!(!routed(any, &["/h/run-bindings"]).changed());
        assert!(!routed(any, &["/elsewhere/file"]).changed());
    }

    #[test]
    fn a_source_directory_going_away_is_noted() {
        let removed = EventKind::Remove(RemoveKind::Folder);
        assert_eq!(
            routed(removed, &["/h/runs"]).gone,
            [PathBuf::from("/h/runs")]
        );
        assert_eq!(routed(removed, &["/h"]).gone, [PathBuf::from("/h")]);
        let moved = EventKind::Modify(ModifyKind::Name(RenameMode::From));
        assert_eq!(routed(moved, &["/h/human-sessions"]).gone.len(), 1);
        assert!(routed(removed, &["/h/runs/ab/run_ab1"]).gone.is_empty());
    }

    #[test]
    fn an_overflow_asks_for_a_rescan() {
        let overflow = notify::Event::new(EventKind::Other).set_flag(Flag::Rescan);
        let mut batch = Batch::default();
        route(&Home::at("/h"), overflow, &mut batch);
        assert!(batch.rescan && batch.changed());
    }

    #[test]
    fn lf_errors_fold_onto_one_line() {
        assert_eq!(
            one_line("parse human session record\n\nCaused by:\n    EOF while parsing\n\nStack backtrace:\n   0: x"),
            "parse human session record: EOF while parsing"
        );
        assert_eq!(one_line("a\n\nCaused by:\n    0: b\n    1: c"), "a: b: c");
    }
}

/// Sort one file event into what it makes dirty.
fn route(home: &Home, event: notify::Event, batch: &mut Batch) {
    // Opening and reading a file (ours included) changes nothing.
    if let EventKind::Access(kind) = event.kind {
        if kind != AccessKind::Close(AccessMode::Write) {
            return;
        }
    }
    if event.need_rescan() {
        batch.rescan = true;
        return;
    }
    let asks_dir = home.asks_dir();
    let runs_dir = home.runs_dir();
    for path in &event.paths {
        if let Ok(rest) = path.strip_prefix(&asks_dir) {
            match names(rest).as_slice() {
                [] => batch.tops = true,
                [name] => {
                    if let Some(id) = crate::ask::ask_id_from_file_name(name) {
                        batch.asks.insert(id.to_string());
                    }
                }
                _ => {}
            }
        } else if let Ok(rest) = path.strip_prefix(&runs_dir) {
            match names(rest).as_slice() {
                [] => batch.tops = true,
                [shard] => {
                    if !is_hidden(shard) {
                        batch.shards.insert(path.clone());
                    }
                }
                [_, run, ..] => {
                    if !is_hidden(run) {
                        if let Some(run) = run.to_str() {
                            batch.runs.insert(run.to_string());
                        }
                    }
                }
            }
        } else if path.parent() == Some(home.db_dir()) && is_database(path, &home.db_path) {
            batch.database = true;
        } else if asks_dir.starts_with(path)
            || runs_dir.starts_with(path)
            || home.db_dir().starts_with(path)
        {
            // A source directory, or one on the way to it, appeared or went away.
            batch.tops = true;
        }
        // A directory on the way to a source that is deleted or moved away takes its
        // watch with it; one made again in its place (maybe with the same inode number)
        // must be watched anew.
        let gone = matches!(
            event.kind,
            EventKind::Remove(_) | EventKind::Modify(ModifyKind::Name(RenameMode::From))
        );
        if gone
            && (asks_dir.starts_with(path)
                || runs_dir.starts_with(path)
                || home.db_dir().starts_with(path))
        {
            batch.gone.push(path.clone());
        }
    }
}

/// What one wake-up of the engine made dirty.
#[derive(Default)]
struct Batch {
    /// A client exited or lf answered.
    other: bool,
    rescan: bool,
    tops: bool,
    database: bool,
    asks: HashSet<String>,
    runs: HashSet<String>,
    shards: HashSet<PathBuf>,
    /// Watched directories on the way to a source that were deleted or moved away.
    gone: Vec<PathBuf>,
}

impl Batch {
    fn changed(&self) -> bool {
        self.other
            || self.rescan
            || self.tops
            || !self.asks.is_empty()
            || !self.runs.is_empty()
            || !self.shards.is_empty()
    }
}

fn names(rest: &Path) -> Vec<&std::ffi::OsStr> {
    rest.components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect()
}

fn run_names(shard: &Path) -> Vec<String> {
    std::fs::read_dir(shard)
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| !is_hidden(&e.file_name()))
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// `loopflow.db`, `loopflow.db-wal` or `loopflow.db-journal` (not `-shm`, which readers
/// touch too: lf's own list would wake us again).
fn is_database(path: &Path, db: &Path) -> bool {
    let (Some(name), Some(db)) = (path.file_name(), db.file_name()) else {
        return false;
    };
    let mut wal = OsString::from(db);
    wal.push("-wal");
    let mut journal = OsString::from(db);
    journal.push("-journal");
    name == db || name == wal || name == journal
}

async fn sleep_until(due: Option<tokio::time::Instant>) {
    match due {
        Some(due) => tokio::time::sleep_until(due).await,
        None => std::future::pending().await,
    }
}

/// Tell the engine when a client process exits. On Linux a pidfd becomes readable at
/// exit, so this costs nothing while the agent runs.
fn watch_exit(pid: i32, run_id: String, tx: mpsc::WeakUnboundedSender<Msg>) -> AbortHandle {
    tokio::spawn(async move {
        wait_exit(pid).await;
        if let Some(tx) = tx.upgrade() {
            let _ = tx.send(Msg::ClientExited(run_id));
        }
    })
    .abort_handle()
}

#[cfg(target_os = "linux")]
async fn wait_exit(pid: i32) {
    use std::os::fd::{FromRawFd, OwnedFd};
    use tokio::io::unix::AsyncFd;
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH) {
        // It exited between the liveness check and now.
        return;
    }
    if fd >= 0 {
        // SAFETY: the descriptor was just returned to us and nothing else owns it.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
        // SAFETY: `OwnedFd` keeps the descriptor open, unchanged, for the AsyncFd's life.
        if let Ok(fd) =
            unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }
        {
            let _ = fd.readable().await;
            return;
        }
    }
    recheck_exit(pid).await
}

#[cfg(not(target_os = "linux"))]
async fn wait_exit(pid: i32) {
    recheck_exit(pid).await
}

async fn recheck_exit(pid: i32) {
    loop {
        tokio::time::sleep(EXIT_RECHECK).await;
        // SAFETY: signal 0 only asks whether the process exists.
        let gone = unsafe { libc::kill(pid, 0) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if gone {
            return;
        }
    }
}

/// The directories under inotify watch. Only directories, never single files: lf writes
/// a temporary and renames it into place, which a watch on the old file would not see.
struct Watches {
    watcher: Option<RecommendedWatcher>,
    error: Option<String>,
    /// The source directories and, while one is missing, its nearest existing ancestor.
    tops: HashMap<PathBuf, Option<u64>>,
    /// `runs/<pp>` shards, where new Runs appear.
    shards: HashSet<PathBuf>,
    /// Followed Run dirs and their `provider-clients/`.
    runs: HashSet<PathBuf>,
}

#[derive(Default)]
struct Appeared {
    asks: bool,
    runs: bool,
    database: bool,
}

impl Watches {
    fn new(tx: mpsc::WeakUnboundedSender<Msg>) -> Watches {
        let handler = move |event: notify::Result<notify::Event>| {
            if let Some(tx) = tx.upgrade() {
                let _ = tx.send(Msg::Fs(event));
            }
        };
        match notify::recommended_watcher(handler) {
            Ok(watcher) => Watches {
                watcher: Some(watcher),
                error: None,
                tops: HashMap::new(),
                shards: HashSet::new(),
                runs: HashSet::new(),
            },
            Err(e) => Watches {
                watcher: None,
                error: Some(format!(
                    "cannot watch files ({e}); the list refreshes only on the slow timer"
                )),
                tops: HashMap::new(),
                shards: HashSet::new(),
                runs: HashSet::new(),
            },
        }
    }

    fn add(&mut self, dir: &Path) -> bool {
        match &mut self.watcher {
            Some(w) => w.watch(dir, RecursiveMode::NonRecursive).is_ok(),
            None => false,
        }
    }

    fn remove(&mut self, dir: &Path) {
        if let Some(w) = &mut self.watcher {
            let _ = w.unwatch(dir);
        }
    }

    /// Watch the three source directories, or the nearest existing ancestor of a missing
    /// one so that its creation is seen. Reports which sources became watchable, counting
    /// a directory deleted and made again (a new inode) as new.
    fn ensure_tops(&mut self, home: &Home, files: bool) -> Appeared {
        let mut sources = vec![home.db_dir().to_path_buf()];
        if files {
            sources.push(home.asks_dir());
            sources.push(home.runs_dir());
        }
        let target = |dir: &PathBuf| {
            if dir.is_dir() {
                dir.clone()
            } else {
                nearest_existing(dir)
            }
        };
        let before = self.tops.clone();
        // A directory can appear between looking for it and watching its parent, unseen
        // by either: look again after watching until what is watched is what exists.
        // Sixteen rounds is far more than a home being made a level at a time needs.
        for _ in 0..16 {
            let wanted: HashMap<PathBuf, Option<u64>> = sources
                .iter()
                .map(|dir| {
                    let dir = target(dir);
                    let ino = inode(&dir);
                    (dir, ino)
                })
                .collect();
            let stale: Vec<PathBuf> = self
                .tops
                .iter()
                .filter(|(dir, ino)| wanted.get(*dir) != Some(ino))
                .map(|(dir, _)| dir.clone())
                .collect();
            for dir in stale {
                self.remove(&dir);
                self.tops.remove(&dir);
            }
            for (dir, ino) in &wanted {
                if !self.tops.contains_key(dir) && self.add(dir) {
                    self.tops.insert(dir.clone(), *ino);
                }
            }
            if sources.iter().all(|dir| wanted.contains_key(&target(dir))) {
                break;
            }
        }
        let appeared = |dir: &PathBuf| {
            self.tops
                .get(dir)
                .is_some_and(|ino| before.get(dir) != Some(ino))
        };
        Appeared {
            database: appeared(&sources[0]),
            asks: files && appeared(&sources[1]),
            runs: files && appeared(&sources[2]),
        }
    }

    /// Drop the watches at and under a directory that went away.
    fn forget(&mut self, dir: &Path) {
        let gone: Vec<PathBuf> = self
            .tops
            .keys()
            .chain(&self.shards)
            .chain(&self.runs)
            .filter(|watched| watched.starts_with(dir))
            .cloned()
            .collect();
        for watched in gone {
            self.remove(&watched);
            self.tops.remove(&watched);
            self.shards.remove(&watched);
            self.runs.remove(&watched);
        }
    }

    fn shards(&mut self, runs_dir: &Path) {
        for shard in std::fs::read_dir(runs_dir).into_iter().flatten().flatten() {
            if !is_hidden(&shard.file_name()) && shard.file_type().is_ok_and(|t| t.is_dir()) {
                self.shard(&shard.path());
            }
        }
    }

    fn shard(&mut self, shard: &Path) {
        if shard.is_dir() {
            if !self.shards.contains(shard) && self.add(shard) {
                self.shards.insert(shard.to_path_buf());
            }
        } else if self.shards.remove(shard) {
            self.remove(shard);
        }
    }

    /// Watch a Run dir and its `provider-clients/`; true if a watch was added.
    fn watch_run(&mut self, dir: &Path) -> bool {
        let mut added = false;
        for dir in [dir.to_path_buf(), dir.join("provider-clients")] {
            if !self.runs.contains(&dir) && dir.is_dir() && self.add(&dir) {
                self.runs.insert(dir);
                added = true;
            }
        }
        added
    }

    fn unwatch_run(&mut self, home: &Home, run_id: &str) {
        let Some(dir) = home.run_dir(run_id) else {
            return;
        };
        for dir in [dir.join("provider-clients"), dir] {
            if self.runs.remove(&dir) {
                self.remove(&dir);
            }
        }
    }

    /// Drop the watches of Runs no longer followed.
    fn retain_runs(&mut self, followed: impl Fn(&str) -> bool) {
        let stale: Vec<PathBuf> = self
            .runs
            .iter()
            .filter(|dir| {
                let run = if dir.ends_with("provider-clients") {
                    dir.parent().and_then(Path::file_name)
                } else {
                    dir.file_name()
                };
                !run.and_then(|r| r.to_str()).is_some_and(&followed)
            })
            .cloned()
            .collect();
        for dir in stale {
            self.runs.remove(&dir);
            self.remove(&dir);
        }
    }
}

fn inode(dir: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(dir).ok().map(|m| m.ino())
}

fn nearest_existing(dir: &Path) -> PathBuf {
    let mut dir = dir;
    while let Some(parent) = dir.parent() {
        if parent.is_dir() {
            return parent.to_path_buf();
        }
        dir = parent;
    }
    PathBuf::from("/")
}
