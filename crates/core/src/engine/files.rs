//! The file half of the engine: lf's session files as [`Records`] reads them, which
//! directories are to be under inotify ([`Watches`]), and which client processes of
//! followed Runs are to be watched for their exit. Every read goes through a [`Disk`], the
//! machine's or a replay's; every watch, a file's or a process's, is a [`Command`] the task
//! carries out, since the task owns the watcher, and so are the reconciliation's reads.
//! The task hands it each file-watch batch and each client's exit, carries out what it
//! asked, tells it once that is done ([`FileSide::carried_out`]), and hands the core what
//! it found as [`Input`]s; the core reads what it holds through [`FileView`].

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::core::{Command, Exit, FileView, Input, Stamp};
use crate::disk::Disk;
use crate::event::Warning;
use crate::home::Home;
use crate::records::{Records, RunReading, Survey};
use crate::session::SessionRecord;
use crate::watch::{route, run_names, Appeared, Asked, Batch, Watches};

/// How many times the sources are looked for again after their watches are in place
/// before the file half goes on: far more than a home made a level at a time needs, and
/// a bound should directories come and go without end.
const LOOKS: u8 = 16;

/// What the work since the task last took it found, for the core.
#[derive(Default)]
struct Findings {
    warnings: Vec<Warning>,
    /// Anything that may change a session.
    changed: bool,
    /// It may have changed any session.
    full: bool,
    /// lf's database directory became watchable.
    database_appeared: bool,
}

/// What waits for the commands asked for to be carried out: a look or a read that must
/// come after a watch, so that nothing made or written between them goes unseen, and what
/// follows the reads the task makes.
#[derive(Default)]
struct Waiting {
    /// The source directories were looked for and asked to be watched: look again.
    tops: Option<Looking>,
    /// What follows once the sources are settled (or, if none were looked for, once the
    /// task says the watches asked for are in place).
    then: Option<Then>,
    /// Runs read whose directory (or `provider-clients/`) was then asked to be watched,
    /// with those directories: read once more if a watch held.
    runs: Vec<(String, Vec<PathBuf>)>,
    /// The task's answers to [`Command::SurveyRuns`] and [`Command::ReadRuns`].
    survey: Option<Survey>,
    read: Option<Vec<RunReading>>,
}

struct Looking {
    files: bool,
    /// The sources as watched before: one watched anew since has appeared.
    before: HashMap<PathBuf, Option<u64>>,
    /// Where the last look found them.
    looked: Vec<PathBuf>,
    looks: u8,
}

/// The reads that wait for watches, and what waits for the task's reads.
enum Then {
    /// Read everything (at start, for a new lf, after lost events).
    Rescan { files: bool },
    /// The slow safety net: every Run dir with its mtime is asked for, then what is stale
    /// ([`Records::stale`]), then the Asks and those Runs are taken in.
    Reconcile,
    /// The Run dirs and their mtimes came: ask for the stale ones to be read.
    Surveyed,
    /// They were read: take them in, with the survey's problems.
    Read { warnings: Vec<Warning> },
    /// What a batch made dirty, once its sources and new shards are watched.
    Batch { batch: Batch, files: bool },
}

pub(super) struct FileSide {
    disk: Arc<dyn Disk>,
    home: Home,
    records: Records,
    watches: Watches,
    /// The `lf` program and what it links to, whose changes may be a new lf.
    program: Vec<PathBuf>,
    /// The client processes of followed Runs watched for their exit, by pid, with their Run.
    exits: HashMap<i32, String>,
    /// The exit watches to start and stop, for the task.
    commands: Vec<Command>,
    /// Whether a source directory existed when this last looked (at every batch, scan and
    /// reconciliation): what the core's merges ask without touching the machine.
    present: bool,
    waiting: Waiting,
    found: Findings,
}

impl FileSide {
    /// The file half of `home`, read from `disk`.
    pub(super) fn new(disk: Arc<dyn Disk>, home: Home, lf_bin: Option<&Path>) -> FileSide {
        let records = Records::on(disk.clone(), home.clone(), lf_bin);
        let watches = Watches::new(disk.clone());
        FileSide {
            disk,
            home,
            records,
            watches,
            program: Vec::new(),
            exits: HashMap::new(),
            commands: Vec::new(),
            present: false,
            waiting: Waiting::default(),
            found: Findings::default(),
        }
    }

    /// The watches (of directories and of processes) decided since the last call, for the
    /// task to carry out in this order before it hands anything else to the engine.
    pub(super) fn commands(&mut self) -> Vec<Command> {
        let mut commands: Vec<Command> = self
            .watches
            .take_asked()
            .into_iter()
            .map(|asked| match asked {
                Asked::Watch(dir) => Command::Watch(dir),
                Asked::Unwatch(dir) => Command::Unwatch(dir),
            })
            .collect();
        commands.append(&mut self.commands);
        commands
    }

    /// Whether a look or a read waits for the commands asked for: the task tells
    /// [`FileSide::carried_out`] once it has carried them out.
    pub(super) fn waits(&self) -> bool {
        self.waiting.tops.is_some() || self.waiting.then.is_some() || !self.waiting.runs.is_empty()
    }

    /// A [`Command::Watch`] failed: the directory is not watched, nothing is told (a
    /// directory that vanished meanwhile is the common case), and it is asked for again
    /// the next time the file half looks for it. The task says so before
    /// [`FileSide::carried_out`].
    pub(super) fn unwatchable(&mut self, dir: &Path) {
        self.watches.unwatchable(dir);
    }

    /// The answer to [`Command::SurveyRuns`].
    pub(super) fn surveyed(&mut self, survey: Survey) {
        self.waiting.survey = Some(survey);
    }

    /// The answer to [`Command::ReadRuns`].
    pub(super) fn runs_read(&mut self, read: Vec<RunReading>) {
        self.waiting.read = Some(read);
    }

    /// The task has carried out every command asked for (the watches are in place, the
    /// reads answered): what waited for them goes on. The sources are looked for again,
    /// and watched again until a look finds what the last one watched; only then are they
    /// read. A Run read before its watch was in place is read once more. What that asks in
    /// turn waits for the next call.
    pub(super) fn carried_out(&mut self) {
        // Runs that wait now had their watches carried out; those asked below wait for
        // the next call.
        for (run, asked) in std::mem::take(&mut self.waiting.runs) {
            if asked.iter().any(|dir| self.watches.watches_run(dir)) {
                self.found.warnings.extend(self.records.run_changed(&run));
                // A `provider-clients/` made meanwhile is watched; nothing reads after it.
                self.sync_run(&run);
            }
        }
        let mut appeared = Appeared::default();
        if let Some(mut looking) = self.waiting.tops.take() {
            let settled = self
                .watches
                .settled(&self.home, looking.files, &looking.looked);
            if !settled && looking.looks < LOOKS {
                looking.looked = self.watches.look_tops(&self.home, looking.files);
                looking.looks += 1;
                self.waiting.tops = Some(looking);
                return;
            }
            appeared = self
                .watches
                .appeared(&looking.before, &self.home, looking.files);
        }
        match self.waiting.then.take() {
            Some(Then::Rescan { files: true }) => {
                self.found.warnings.extend(self.records.rescan());
                self.sync_runs();
            }
            Some(Then::Reconcile) => {
                self.commands
                    .push(Command::SurveyRuns(self.home.runs_dir()));
                self.waiting.then = Some(Then::Surveyed);
            }
            Some(Then::Surveyed) => {
                // Without an answer (the task is ending) nothing is forgotten.
                if let Some((dirs, warnings)) = self.waiting.survey.take() {
                    let stale = self.records.stale(&dirs);
                    self.commands.push(Command::ReadRuns(stale));
                    self.waiting.then = Some(Then::Read { warnings });
                }
            }
            Some(Then::Read { warnings }) => {
                if let Some(read) = self.waiting.read.take() {
                    let fresh = self.records.reconciled(warnings, read);
                    self.found.warnings.extend(fresh);
                    self.sync_runs();
                }
            }
            Some(Then::Batch { batch, files }) => self.read(&batch, files, appeared),
            Some(Then::Rescan { files: false }) | None => {}
        }
    }

    /// What the work since the last call found, for the core: lf's database directory
    /// that appeared, the problems of what was read, and whether (and how widely)
    /// sessions changed.
    pub(super) fn inputs(&mut self) -> Vec<Input> {
        let found = std::mem::take(&mut self.found);
        let mut inputs = Vec::new();
        if found.database_appeared {
            inputs.push(Input::DatabaseAppeared);
        }
        inputs.push(Input::Warned(found.warnings));
        if found.changed {
            inputs.push(Input::FilesChanged { full: found.full });
        }
        inputs
    }

    /// Watch the lf program, so that an lf upgraded while the tray runs is noticed.
    pub(super) fn watch_program(&mut self, lf: &Path) {
        self.program = self.watches.program(lf);
    }

    /// Sort one file event into the batch.
    pub(super) fn route(&self, event: notify::Event, batch: &mut Batch) {
        route(&self.home, &self.program, event, batch);
    }

    /// Watch first, then read: a record written in between is seen by the read.
    pub(super) fn start(&mut self, files: bool) {
        self.present = self.present_now();
        self.look(files, Then::Rescan { files });
    }

    /// A new lf was detected: watch its sources anew and, if it keeps its sessions in
    /// `files`, read them all again.
    pub(super) fn rescan(&mut self, files: bool) {
        self.start(files);
        self.found.changed = true;
        self.found.full = true;
    }

    /// The slow safety net over the files (see [`Records::reconcile`]).
    pub(super) fn reconcile(&mut self, files: bool) {
        self.present = self.present_now();
        self.look(files, Then::Reconcile);
        self.found.changed = true;
        self.found.full = true;
    }

    /// A client process of a followed Run exited: its Run's session alone may change.
    pub(super) fn client_exited(&mut self, run_id: &str) {
        self.records.client_exited(run_id);
        self.settle(run_id);
        self.found.changed = true;
    }

    /// A batch of file events: watch what appeared and let go of what went; once that is
    /// in place, read again what it made dirty.
    pub(super) fn batch(&mut self, batch: Batch, files: bool) {
        self.present = self.present_now();
        self.found.changed |= batch.changed();
        for dir in &batch.gone {
            self.watches.forget(dir);
        }
        if batch.rescan && files {
            self.found.full = true;
            // Events were lost: any watched directory may have been replaced.
            self.watches.forget(Path::new("/"));
            self.look(files, Then::Rescan { files });
            return;
        }
        if files {
            // A new shard holds new Run dirs, listed once it is watched; a vanished one
            // takes its Runs along.
            for shard in &batch.shards {
                self.watches.shard(shard);
            }
        }
        if batch.tops {
            // A source directory came or went: whether the files count at all may change.
            self.found.full = true;
            self.look(files, Then::Batch { batch, files });
        } else {
            self.waiting.then = Some(Then::Batch { batch, files });
        }
    }

    /// Look for the sources and ask to watch them; `then` waits until a look after those
    /// watches finds what they watch.
    fn look(&mut self, files: bool, then: Then) {
        let before = self.watches.tops();
        let looked = self.watches.look_tops(&self.home, files);
        self.waiting.tops = Some(Looking {
            files,
            before,
            looked,
            looks: 1,
        });
        self.waiting.then = Some(then);
    }

    /// Read again what a batch of file events made dirty, its sources and new shards now
    /// watched.
    fn read(&mut self, batch: &Batch, files: bool, appeared: Appeared) {
        if batch.tops {
            // The database may have been written before its directory was watched.
            self.found.database_appeared |= appeared.database;
            // A new source is read whole; the Runs only when `runs/` itself is new, since
            // reading 10 000 of them for a new `human-sessions/` would be wasted.
            if appeared.runs {
                self.found.warnings.extend(self.records.rescan());
                self.sync_runs();
                return;
            }
            if appeared.asks {
                self.found.warnings.extend(self.records.rescan_asks());
                self.sync_runs();
            }
            if !self.disk.is_dir(&self.home.asks_dir()) {
                self.records.forget_asks();
            }
        }
        if !files {
            return;
        }
        for shard in &batch.shards {
            let mut runs = run_names(&*self.disk, shard);
            runs.extend(self.tracked_in(shard));
            for run in runs {
                self.found.warnings.extend(self.records.run_changed(&run));
                self.settle(&run);
            }
        }
        for id in &batch.asks {
            self.found.warnings.extend(self.records.ask_changed(id));
        }
        for run in &batch.runs {
            self.found.warnings.extend(self.records.run_changed(run));
            self.settle(run);
        }
        // An Ask may have named a new session Run, which is followed from now on.
        for id in &batch.asks {
            if let Some(run) = self.records.session_run_of(id) {
                self.settle(&run);
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

    /// A Run was just read: follow it. If that asks for a new watch (on the Run, or on a
    /// `provider-clients/` that just appeared), it is read once more when the watch is in
    /// place, so that nothing written between the read and the watch is missed.
    fn settle(&mut self, run_id: &str) {
        let asked = self.sync_run(run_id);
        if !asked.is_empty() {
            self.waiting.runs.push((run_id.to_string(), asked));
        }
    }

    /// Bring watches and exit watchers in line with every followed Run (after a rescan).
    fn sync_runs(&mut self) {
        let followed: HashSet<String> = self.records.tracked().map(|(id, _)| id.clone()).collect();
        self.watches.retain_runs(|run| followed.contains(run));
        for run in &followed {
            self.settle(run);
        }
        self.watches.shards(&self.home.runs_dir());
        self.stop_exits(|run, _| !followed.contains(run));
    }

    /// Watch a followed Run (its directory and `provider-clients/`) and its live client
    /// processes; stop watching one no longer followed. Returns the directories asked for.
    fn sync_run(&mut self, run_id: &str) -> Vec<PathBuf> {
        let Some(tracked) = self.records.tracked_run(run_id) else {
            self.watches.unwatch_run(&self.home, run_id);
            self.stop_exits(|run, _| run == run_id);
            return Vec::new();
        };
        let dir = tracked.run.dir.clone();
        let live: Vec<i32> = tracked.live_pids.clone();
        let asked = self.watches.watch_run(&dir);
        self.stop_exits(|run, pid| run == run_id && !live.contains(&pid));
        for pid in live {
            if self.exits.contains_key(&pid) {
                continue;
            }
            self.exits.insert(pid, run_id.to_string());
            // Its liveness was judged as it was read: no start time to check again.
            self.commands.push(Command::WatchExit {
                exit: Exit::Client {
                    run: run_id.to_string(),
                    pid,
                },
                pid: pid as u32,
                started_at: None,
            });
        }
        asked
    }

    /// Stop the exit watches `stop` picks (by Run id and pid).
    fn stop_exits(&mut self, stop: impl Fn(&str, i32) -> bool) {
        let commands = &mut self.commands;
        self.exits.retain(|pid, run| {
            let gone = stop(run, *pid);
            if gone {
                commands.push(Command::UnwatchExit(Exit::Client {
                    run: run.clone(),
                    pid: *pid,
                }));
            }
            !gone
        });
    }
}

impl FileSide {
    /// How lf's database files look now, for the clocks the task hands the core.
    pub(super) fn db_stamp(&self) -> Stamp {
        let db = &self.home.db_path;
        let mut wal = db.as_os_str().to_owned();
        wal.push("-wal");
        let look = |p: &Path| {
            self.disk
                .stat(p)
                .map(|s| (s.len, s.modified.unwrap_or(std::time::UNIX_EPOCH)))
        };
        [look(db), look(Path::new(&wal))]
    }

    /// Whether a source directory of the files exists now.
    fn present_now(&self) -> bool {
        super::files_present(&*self.disk, &self.home)
    }
}

impl FileView for FileSide {
    fn present(&self) -> bool {
        self.present
    }

    fn sessions(&self) -> Vec<SessionRecord> {
        self.records.sessions()
    }

    fn session(&self, id: &str) -> Option<SessionRecord> {
        self.records.session(id)
    }

    fn take_touched(&mut self) -> HashSet<String> {
        self.records.take_touched()
    }
}
