//! The engine: one task that owns the session list, fed by inotify (through `notify`),
//! by client-process exits (pidfd), by `lf session list`, and on generation D by lf's own
//! readers (`lf monitor work`). It turns every change into exactly-once events and never
//! polls the home.
//!
//! Three parts, each knowing only the ones below it: the task (`task.rs`) waits for
//! anything to happen, reads the clocks and carries out commands; the file half
//! (`files/`) decides what of lf's session files to read and watch, and its one driver
//! (`files/drive.rs`) has the task read and watch them, or a disk made of data in its
//! replays (`replay_files.rs`);
//! the core (`core/`) decides, with no I/O and no clock of its own, what to publish and
//! what to do next, so that it can be replayed as data (`replay.rs`). The task publishes
//! what the core says in `shared.rs`, which the [`Engine`] handle reads. What the task runs
//! on — lf and the file watcher — is injected (`parts.rs`), so the loop itself is tested
//! on scripted parts (`wired.rs`).

mod core;
mod exits;
mod files;
mod msg;
mod parts;
#[cfg(test)]
mod replay;
#[cfg(test)]
mod replay_files;
mod shared;
mod task;
#[cfg(test)]
mod wired;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, SystemTime};

use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use self::core::{shared_sessions, status_line, Core, Now};
use self::files::FileSide;
use self::msg::Msg;
pub use self::parts::{Cli, Listed, Parts, Reading, Running};
use self::shared::{read, Shared};
use self::task::Task;
use crate::event::{Event, Warning};
use crate::files::disk::{Disk, Real};
use crate::files::records::Records;
pub use crate::files::watch::{DirWatcher, Handler, MakeWatcher};
use crate::lf::cli::{self as lf, one_line, Lf, LfAction, LfError};
use crate::lf::dialect::{Dialect, Generation};
use crate::lf::home::Home;
use crate::lf::record::{SessionKey, SessionRecord};
use crate::machine::{self, Ssh};
use crate::permission::remote::Links;
use crate::snapshot::Snapshot;

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

/// How the engine is set up.
#[derive(Debug, Clone)]
pub struct Config {
    pub home: Home,
    /// The `lf` to run; `None` when none was found, and the file sources work alone.
    pub lf_bin: Option<PathBuf>,
    pub lf_timeout: Duration,
    pub safety_interval: Duration,
    pub reconcile_interval: Duration,
    /// lf's quiet time where the lf in use was built with another than its dialect's (the
    /// tests' stand-in): it replaces [`Dialect::quiet`] where lf has the rule. `None`:
    /// lf's own.
    pub lf_quiet: Option<Duration>,
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
            lf_bin: lf_bin.or_else(|| Lf::find(|name| std::env::var_os(name))),
            lf_timeout: lf::DEFAULT_TIMEOUT,
            safety_interval: SAFETY_INTERVAL,
            reconcile_interval: RECONCILE_INTERVAL,
            lf_quiet: None,
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

/// How many sessions a whole list (or snapshot) must hold before the memory its reading
/// freed is handed back: at 1 000 it is a few MB, at 10 the trim would cost more than it
/// returns.
pub const MANY_SESSIONS: usize = 1_000;

/// Hand back to the kernel the memory freed after a whole list of `sessions` was read,
/// merged or printed, when it was a long one. glibc keeps what a peak freed for the next
/// allocation, and the next peak is the next whole list, rare after the first: at 10 000
/// sessions that kept memory was half the tray's anonymous memory (issue 47 counts it).
/// `malloc_trim(0)` returns every free page of every arena. Elsewhere the allocator
/// decides.
pub fn give_back_freed(sessions: usize) {
    #[cfg(target_env = "gnu")]
    if sessions >= MANY_SESSIONS {
        // SAFETY: malloc_trim only returns free pages of glibc's own heap to the kernel;
        // it takes the arenas' locks as malloc does, and touches no memory in use.
        unsafe { libc::malloc_trim(0) };
    }
    #[cfg(not(target_env = "gnu"))]
    let _ = sessions;
}

/// A handle on the running engine. Cheap to clone.
/// The sessions as [`Engine::sessions`] hands them out: one list shared by every reader
/// until it changes, of records shared with the engine's snapshot.
pub type Sessions = Arc<[Arc<SessionRecord>]>;

#[derive(Clone)]
pub struct Engine {
    shared: Arc<RwLock<Shared>>,
    lf: Option<Arc<dyn Cli>>,
    tx: mpsc::UnboundedSender<Msg>,
    nudges: Nudges,
    links: Links,
}

/// Per machine, by its [`Followed::id`]: ask its follower for a list now (after an action
/// there). The task adds and removes them as it starts and stops followers.
type Nudges = Arc<Mutex<HashMap<u64, mpsc::UnboundedSender<()>>>>;

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

impl Engine {
    /// Start watching on the current tokio runtime. The receiver gets a `Snapshot` first,
    /// then every transition, and warnings as they come. The engine stops when every
    /// `Engine` handle and the receiver are dropped.
    pub fn start(config: Config) -> (Engine, mpsc::UnboundedReceiver<Event>) {
        let parts = Parts::real(config.lf());
        Engine::start_on(config, parts)
    }

    /// [`Engine::start`] on other parts than the `lf` program and inotify.
    pub fn start_on(config: Config, parts: Parts) -> (Engine, mpsc::UnboundedReceiver<Event>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let (events, events_rx) = mpsc::unbounded_channel();
        let lf = parts.cli;
        let shared = Arc::new(RwLock::new(Shared::default()));
        let nudges = Nudges::default();
        let links = Links::default();
        let engine = Engine {
            shared: shared.clone(),
            lf: lf.clone(),
            tx: tx.clone(),
            nudges: nudges.clone(),
            links: links.clone(),
        };
        let weak = tx.downgrade();
        let handler = Box::new(move |event: notify::Result<notify::Event>| {
            if let Some(tx) = weak.upgrade() {
                let _ = tx.send(Msg::Fs(event));
            }
        });
        let files = FileSide::new(config.home.clone(), config.lf_bin.as_deref());
        let start = Now {
            mono: Instant::now(),
            wall: SystemTime::now(),
            db: task::db_stamp(&Real, &config.home),
        };
        let safety = config.safety_interval.max(MIN_SAFETY_INTERVAL);
        let core = Core::new(
            start,
            lf.as_ref().map(|lf| lf.program().to_path_buf()),
            safety,
            config.lf_quiet,
        );
        let mut task = Task::new(
            core,
            shared,
            files,
            lf,
            tx.downgrade(),
            events,
            config.reconcile_interval,
        );
        task.nudges = nudges;
        task.links = links;
        task.make_watcher = Some((parts.watcher, handler));
        tokio::spawn(task.run(rx, config.machines));
        (engine, events_rx)
    }

    /// The current sessions in lf's order, every machine's: the same list (one `Arc`)
    /// until one of them changes.
    pub fn sessions(&self) -> Sessions {
        let shared = read(&self.shared);
        let list = shared
            .listed
            .get_or_init(|| shared_sessions(&shared.snapshot, &shared.machines).into());
        Arc::clone(list)
    }

    /// The session with this key, on this machine or another.
    pub fn session(&self, key: &SessionKey) -> Option<SessionRecord> {
        match &key.machine {
            None => read(&self.shared).snapshot.get(&key.id).cloned(),
            Some(dest) => read(&self.shared)
                .machines
                .iter()
                .find(|m| &m.view.dest == dest)
                .and_then(|m| m.view.get(&key.id))
                .cloned(),
        }
    }

    pub fn lf_bin(&self) -> Option<PathBuf> {
        self.lf.as_ref().map(|lf| lf.program().to_path_buf())
    }

    /// The variables the engine's lf runs with (see [`Lf::env`]); none without an lf.
    pub fn lf_env(&self) -> Vec<(&'static str, Option<std::ffi::OsString>)> {
        self.lf.as_ref().map(|lf| lf.env()).unwrap_or_default()
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
            status.push_str(&machine.view.status());
            if let Some(answering) = self.answering_on(&machine.view) {
                status.push_str(" · ");
                status.push_str(&answering);
            }
        }
        status
    }

    /// Per followed machine, whether its agents are answered from here, while the tray
    /// answers: `build-box: answers from here`, `pi: answering needs lf-tray there`, …
    /// (the settings panel, under the machines).
    pub fn answering(&self) -> Vec<String> {
        let shared = read(&self.shared);
        shared
            .machines
            .iter()
            .filter_map(|machine| {
                let said = self.answering_on(&machine.view)?;
                Some(format!("{}: {said}", machine.view.dest))
            })
            .collect()
    }

    fn answering_on(&self, machine: &machine::MachineView) -> Option<String> {
        let watched = machine.mode().map(|mode| mode == machine::Mode::Watch);
        self.links.status(&machine.dest, watched)
    }

    /// The links to the machines' watchers, over which their agents' requests come and
    /// the person's answers go ([`crate::permission::remote`]).
    pub fn links(&self) -> &Links {
        &self.links
    }

    /// Run an `lf session` action on the session's machine: here as [`Engine::act`], on
    /// another machine its lf over ssh. A machine followed by list is listed again at once
    /// so the caller sees the effect soon; one followed live tells it by itself.
    pub async fn act_on(&self, machine: Option<&str>, action: LfAction) -> Result<String, LfError> {
        let Some(dest) = machine else {
            return self.act(action).await;
        };
        let found = read(&self.shared)
            .machines
            .iter()
            .find(|m| m.view.dest == dest)
            .map(|m| (m.id, m.view.lf.clone()));
        let not_reached = |what: &str| LfError::Failed {
            code: None,
            message: format!("{dest}: {what}"),
        };
        let (id, lf) = found.ok_or_else(|| not_reached("this machine is not followed"))?;
        let lf = lf.ok_or_else(|| not_reached("no lf was found there yet"))?;
        let ssh = Ssh::new(dest).map_err(|e| not_reached(&e))?;
        let result = Lf::over_ssh(ssh, &lf)
            .with_timeout(machine::REMOTE_LF_TIMEOUT)
            .act(&action)
            .await;
        if let Some(nudge) = task::lock(&self.nudges).get(&id) {
            let _ = nudge.send(());
        }
        result
    }

    /// Follow these machines from now on, in this order: a machine no longer named is let
    /// go at once (its follower stopped, so its ssh is killed and reaped, and its sessions
    /// leave the list in one new snapshot), one newly named is reached, and one that stays
    /// is left as it is, its connection untouched.
    pub fn set_machines(&self, dests: Vec<String>) {
        let _ = self.tx.send(Msg::Machines(dests));
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
        let result = lf.act(action).await;
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
        (records.sessions(), warnings, files_present(&Real, &home))
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
    let mut status = status_line(lf.as_ref().map(Lf::bin), detected, None, snapshot.len());
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

fn files_present(disk: &dyn Disk, home: &Home) -> bool {
    disk.is_dir(&home.asks_dir()) || disk.is_dir(&home.runs_dir())
}
