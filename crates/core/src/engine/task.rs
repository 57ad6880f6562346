//! The engine task: the one place that waits. It reads the clocks, hands what arrived to
//! the file half and the [`Core`], and carries out their commands (lf runs, lf's readers,
//! exit watchers, the file watcher's watches, the file half's reads), whose results come
//! back to it as messages (the watches' and reads' at once, to the file half's driver).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;
use tokio::time::Instant;

use super::core::{Command, Core, Exit, Input, Now, Out};
use super::exits::{Exits, Watching};
use super::files::{FileInput, FileSide, Hands};
use super::msg::Msg;
use crate::schedule::Stamp;

/// How long a machine let go of keeps its link for its watcher to take the tray's hook
/// entry out: a settings file rewritten and one line back over a live ssh take
/// milliseconds; a link that is down or hung is cut after this anyway.
const LET_GO_WAIT: std::time::Duration = std::time::Duration::from_secs(2);
use super::parts::{Cli, Reading};
use super::shared::{write, Shared};
use crate::event::{Event, Warning};
use crate::files::disk::{Answers, Disk, Read, Real};
use crate::files::watch::{Batch, DirWatcher, Handler, MakeWatcher};
use crate::lf::home::Home;
use crate::lf::Revisions;
use crate::machine;

/// What the task holds for the core's commands.
pub(super) struct Task {
    pub core: Core,
    /// What the engine's handle reads, kept as the core's changes say.
    pub shared: Arc<RwLock<Shared>>,
    pub files: FileSide,
    pub lf: Option<Arc<dyn Cli>>,
    pub tx: mpsc::WeakUnboundedSender<Msg>,
    pub events: mpsc::UnboundedSender<Event>,
    pub reconcile_interval: std::time::Duration,
    pub nudges: super::Nudges,
    /// The machines' links for answering, handed to each follower.
    pub links: crate::permission::remote::Links,
    readers: HashMap<u64, Box<dyn Reading>>,
    /// Each machine's follower, by its id. Aborting one drops its ssh child, which is
    /// killed then (`kill_on_drop`) and reaped by tokio.
    followers: HashMap<u64, (AbortHandle, String)>,
    /// Where the followers report; the task holds the receiver, so once it ends every
    /// follower sees its channel closed and ends with its ssh.
    reports: mpsc::UnboundedSender<(u64, machine::Report)>,
    reports_rx: Option<mpsc::UnboundedReceiver<(u64, machine::Report)>>,
    /// Every exit waited on, agents' and clients' alike.
    exits: Exits,
    /// The callers of `Engine::act` waiting for the list after their action.
    waiters: HashMap<u64, oneshot::Sender<()>>,
    next_waiter: u64,
    /// A command fed the core what it found: it is woken again before the task waits.
    fed: bool,
    /// What makes the file watcher, and where its events go: used once, as the task starts.
    pub make_watcher: Option<(MakeWatcher, Handler)>,
    /// Where the file half's watches and reads are carried out.
    local: Local,
}

/// The file watcher and this machine's disk, on which the task carries out the file
/// half's watches and reads.
struct Local {
    /// The file watcher, unless it could not be made.
    watcher: Option<Box<dyn DirWatcher>>,
    disk: Arc<dyn Disk>,
    tx: mpsc::WeakUnboundedSender<Msg>,
}

impl Hands for Local {
    fn watch(&mut self, dir: &Path) -> bool {
        self.watcher
            .as_mut()
            .is_some_and(|watcher| watcher.watch(dir).is_ok())
    }

    fn unwatch(&mut self, dir: &Path) {
        if let Some(watcher) = &mut self.watcher {
            watcher.unwatch(dir);
        }
    }

    fn read(&mut self, reads: Vec<Read>) -> Option<Answers> {
        // Every handle on the engine is gone: nothing more is read, and what waited for
        // the reads ends, so the task can.
        self.tx.upgrade()?;
        Some(self.disk.answer(reads))
    }
}

impl Task {
    pub(super) fn new(
        core: Core,
        shared: Arc<RwLock<Shared>>,
        files: FileSide,
        lf: Option<Arc<dyn Cli>>,
        tx: mpsc::WeakUnboundedSender<Msg>,
        events: mpsc::UnboundedSender<Event>,
        reconcile_interval: std::time::Duration,
    ) -> Task {
        let (reports, reports_rx) = mpsc::unbounded_channel();
        let local = Local {
            watcher: None,
            disk: Arc::new(Real),
            tx: tx.clone(),
        };
        Task {
            core,
            shared,
            files,
            lf,
            tx,
            events,
            reconcile_interval,
            nudges: super::Nudges::default(),
            links: Default::default(),
            readers: HashMap::new(),
            followers: HashMap::new(),
            reports,
            reports_rx: Some(reports_rx),
            exits: Exits::new(crate::proc::raise_descriptor_limit()),
            waiters: HashMap::new(),
            next_waiter: 0,
            fed: false,
            make_watcher: None,
            local,
        }
    }

    /// Both clocks and lf's database files, read once for each thing handed to the core.
    fn now(&self) -> Now {
        Now {
            mono: Instant::now(),
            wall: SystemTime::now(),
            db: db_stamp(&*self.local.disk, self.files.home()),
        }
    }

    pub(super) async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Msg>, machines: Vec<String>) {
        let mut reports = self.reports_rx.take().expect("the task runs once");
        if let Some((make, handler)) = self.make_watcher.take() {
            match make(handler) {
                Ok(watcher) => self.local.watcher = Some(watcher),
                Err(e) => self.feed(Input::NoWatcher(e.to_string())),
            }
        }
        self.feed(Input::Machines(machines));
        for command in self.core.commands() {
            self.command(command);
        }
        if let Some(lf) = self.lf.clone() {
            self.files_take(FileInput::Program(lf.program().to_path_buf()));
            self.core.begin(lf.detect().await);
        }
        self.files_take(FileInput::Start {
            files: self.core.files(),
        });
        if let Some(lf) = self.lf.clone() {
            let shown = self.revisions_shown(&self.core.dialect());
            self.core.first_list(self.now(), shown);
            let result = lf.list(&self.core.dialect()).await;
            self.core.first_listed(self.now(), result);
        }
        let out = self.core.open(self.now(), &mut self.files);
        if !self.carry_out(out) {
            return;
        }

        let mut reconcile = tokio::time::interval(self.reconcile_interval);
        reconcile.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        reconcile.tick().await;

        loop {
            let due = self.core.deadline();
            tokio::select! {
                msg = rx.recv() => {
                    let Some(msg) = msg else { return };
                    let mut batch = Batch::default();
                    self.take(msg, &mut batch);
                    // Everything already queued is handled together: a burst of events
                    // for one file re-reads it once.
                    while let Ok(msg) = rx.try_recv() {
                        self.take(msg, &mut batch);
                    }
                    self.apply(batch);
                }
                _ = reconcile.tick(), if self.core.files() => {
                    self.files_take(FileInput::Reconcile { files: self.core.files() });
                }
                Some((id, report)) = reports.recv() => {
                    self.feed(Input::Machine(id, report));
                }
                () = sleep_until(due), if due.is_some() => {}
            };
            if self.events.is_closed() {
                return;
            }
            let out = self.core.wake(self.now(), &mut self.files);
            self.carry_out(out);
        }
    }

    fn feed(&mut self, input: Input) {
        let now = self.now();
        self.core.absorb(now, input);
    }

    /// One of the tray's own lf runs ended: the core is handed lf's database files as they
    /// looked the moment it did, not when the task got to it. A write by someone else in
    /// between (an agent clearing its ask while the task was busy) would otherwise count as
    /// the tray's own and be told only at the safety list.
    fn feed_ended(&mut self, input: Input, ended: Stamp) {
        let now = Now {
            db: ended,
            ..self.now()
        };
        self.core.absorb(now, input);
    }

    /// What reads lf's database files the moment one of the tray's own lf runs ends, on the
    /// thread that saw it end.
    fn ended_stamp(&self) -> impl FnOnce() -> Stamp + Send + 'static {
        let (disk, home) = (Arc::clone(&self.local.disk), self.files.home().clone());
        move || db_stamp(&*disk, &home)
    }

    /// lf's revisions as they are now, where the dialect says lf keeps them. Read here, on
    /// the task, rather than on another thread: one read-only query of a table of a few
    /// rows takes well under a millisecond, and a list must not start before it is done.
    fn revisions_shown(&self, dialect: &crate::lf::Dialect) -> Option<Revisions> {
        if !dialect.store_revisions {
            return None;
        }
        Revisions::read(&self.files.home().db_path).ok()
    }

    fn feed_all(&mut self, inputs: Vec<Input>) {
        for input in inputs {
            self.feed(input);
        }
    }

    /// One message: file events gather in the batch, the rest go to the core.
    fn take(&mut self, msg: Msg, batch: &mut Batch) {
        let input = match msg {
            Msg::Fs(Ok(event)) => return self.files.route(event, batch),
            Msg::Fs(Err(e)) => Input::Warned(vec![Warning::new(
                e.paths.first().cloned(),
                format!("file watch failed: {e}"),
            )]),
            Msg::Exited(exit) => {
                self.exits.forget(&exit);
                return self.exited(exit);
            }
            Msg::ProcessExited { pid, serial } => {
                for exit in self.exits.exited(pid, serial) {
                    self.exited(exit);
                }
                return;
            }
            Msg::Listed(result, ended) => return self.feed_ended(Input::Listed(result), ended),
            Msg::Acting => Input::Acting,
            Msg::Acted(waiter) => {
                let token = self.next_waiter;
                self.next_waiter += 1;
                self.waiters.insert(token, waiter);
                Input::Acted(token)
            }
            Msg::Reader(serial, report) => Input::Reader(serial, report),
            Msg::ReaderFailed(serial, e) => Input::ReaderFailed(serial, e),
            Msg::Detected(result) => Input::Detected(result),
            Msg::AgentsFound(result, ended) => {
                return self.feed_ended(Input::AgentsFound(result), ended)
            }
            Msg::Machines(dests) => Input::Machines(dests),
        };
        self.feed(input);
    }

    /// A process the engine waited on exited, for what it stood for.
    fn exited(&mut self, exit: Exit) {
        match exit {
            Exit::Client { run, .. } => self.files_take(FileInput::ClientExited(run)),
            Exit::Agent(_) => self.feed(Input::Exited(exit)),
        }
    }

    /// The batch, once every queued message was taken: what it says of lf to the core,
    /// the rest to the file half, and what that changed to the core.
    fn apply(&mut self, batch: Batch) {
        if batch.program {
            self.feed(Input::ProgramChanged);
        }
        if batch.database {
            self.feed(Input::Written);
        }
        let files = self.core.files();
        self.files_take(FileInput::Batch { batch, files });
    }

    /// The file half takes in what happened, its watches and reads carried out here
    /// before anything else reaches the engine; then the exit watches it asked for are
    /// carried out, and the core is handed what it found.
    fn files_take(&mut self, input: FileInput) {
        let out = self.files.drive(input, &mut self.local);
        for command in out.exits {
            self.command(command);
        }
        self.feed_all(out.inputs);
    }

    /// Publish the events and carry out the commands; false once nobody listens.
    fn carry_out(&mut self, out: Out) -> bool {
        // The surfaces that hear an event read the list it came from.
        if !out.changes.is_empty() {
            let mut shared = write(&self.shared);
            for change in out.changes {
                shared.apply(change);
            }
        }
        for event in out.events {
            if self.events.send(event).is_err() {
                return false;
            }
        }
        for command in out.commands {
            self.command(command);
        }
        if std::mem::take(&mut self.fed) {
            let out = self.core.wake(self.now(), &mut self.files);
            return self.carry_out(out);
        }
        true
    }

    fn command(&mut self, command: Command) {
        let Some(tx) = self.tx.upgrade() else {
            return;
        };
        match command {
            Command::List(dialect) => {
                let Some(lf) = self.lf.clone() else { return };
                if dialect.store_revisions {
                    // Read before lf starts, so that whatever it reads is at least this.
                    let shown = self.revisions_shown(&dialect);
                    self.feed(Input::Showing(shown));
                }
                let listing = lf.list(&dialect);
                let ended = self.ended_stamp();
                tokio::spawn(async move {
                    let listed = listing.await;
                    let _ = tx.send(Msg::Listed(listed, ended()));
                });
            }
            Command::ReadRevisions => {
                let reading = Revisions::read(&self.files.home().db_path).ok();
                self.feed(Input::Revisions(reading));
                self.fed = true;
            }
            Command::Detect => {
                let Some(lf) = &self.lf else { return };
                let detecting = lf.detect();
                tokio::spawn(async move {
                    let _ = tx.send(Msg::Detected(detecting.await));
                });
            }
            Command::StartReader { serial, key } => {
                let Some(lf) = self.lf.as_ref() else { return };
                let weak = self.tx.clone();
                let started = lf.read(
                    &key,
                    Box::new(move |report| {
                        if let Some(tx) = weak.upgrade() {
                            let _ = tx.send(Msg::Reader(serial, report));
                        }
                    }),
                );
                match started {
                    Ok(reader) => {
                        self.readers.insert(serial, reader);
                    }
                    Err(e) => {
                        let _ = tx.send(Msg::ReaderFailed(serial, e));
                    }
                }
            }
            Command::StopReader(serial) => {
                self.readers.remove(&serial);
            }
            Command::Refresh(serial) => {
                if let Some(reader) = self.readers.get(&serial) {
                    reader.refresh();
                }
            }
            Command::FindAgents(named) => {
                let Some(lf) = &self.lf else { return };
                let listing = lf.processes();
                let ended = self.ended_stamp();
                tokio::spawn(async move {
                    let found = listing.await;
                    let stamp = ended();
                    let found = found.map(|processes| crate::lf::agent::find(&named, &processes));
                    let _ = tx.send(Msg::AgentsFound(found, stamp));
                });
            }
            Command::WatchExit {
                exit,
                pid,
                started_at,
            } => {
                // Found a moment ago; a pid another process took meanwhile is not it.
                if crate::lf::agent::is_still(pid, started_at) == Some(false) {
                    let _ = tx.send(Msg::Exited(exit));
                    return;
                }
                let Ok(pid) = i32::try_from(pid) else { return };
                match self.exits.watch(exit.clone(), pid, &self.tx) {
                    Watching::Watched => {}
                    Watching::Gone => {
                        let _ = tx.send(Msg::Exited(exit));
                    }
                    Watching::GaveUp { first } => {
                        if first {
                            self.feed(Input::Warned(vec![Warning::new(
                                None,
                                "too many agent processes to watch each for its exit \
                                 within this process's open-file limit: the agents past it \
                                 are not watched, and their end is told by lf's next list \
                                 (at the latest the safety list) instead",
                            )]));
                        }
                    }
                }
            }
            Command::UnwatchExit(exit) => self.exits.unwatch(&exit),
            Command::Answer(token) => {
                if let Some(waiter) = self.waiters.remove(&token) {
                    let _ = waiter.send(());
                }
            }
            Command::Follow { id, ssh } => {
                let (nudge, nudged) = mpsc::unbounded_channel();
                lock(&self.nudges).insert(id, nudge);
                let reporter = machine::Reporter {
                    machine: id,
                    tx: self.reports.clone(),
                };
                let ssh_dest = ssh.dest.clone();
                let follower =
                    tokio::spawn(machine::follow(ssh, reporter, nudged, self.links.clone()));
                self.followers
                    .insert(id, (follower.abort_handle(), ssh_dest));
            }
            Command::Rescan { files } => {
                self.files_take(FileInput::Rescan { files });
                self.fed = true;
            }
            Command::Unfollow(id) => {
                lock(&self.nudges).remove(&id);
                if let Some((follower, dest)) = self.followers.remove(&id) {
                    // The tray's hook entry there goes with it, and its watcher takes it
                    // out: it is told first, on the link about to be cut.
                    let said = self.links.let_go(&dest);
                    tokio::spawn(async move {
                        let _ = tokio::time::timeout(LET_GO_WAIT, said).await;
                        follower.abort();
                    });
                }
            }
        }
    }
}

/// How lf's database files look now, for the clocks the task hands the core.
pub(super) fn db_stamp(disk: &dyn Disk, home: &Home) -> Stamp {
    let db = &home.db_path;
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    let look = |p: &Path| {
        disk.stat(p)
            .map(|s| (s.len, s.modified.unwrap_or(std::time::UNIX_EPOCH)))
    };
    [look(db), look(Path::new(&wal))]
}

pub(super) fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic elsewhere must not keep actions from nudging their machine.
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

async fn sleep_until(due: Option<Instant>) {
    match due {
        Some(due) => tokio::time::sleep_until(due).await,
        None => std::future::pending().await,
    }
}
