//! The file half of the engine: lf's session files as [`Records`] reads them, the
//! directories under inotify ([`Watches`]), and which client processes of followed Runs
//! are to be watched for their exit (the task watches them, as it does agents). Every
//! read goes through a [`Disk`], the machine's or a replay's. The task hands it each
//! file-watch batch and each client's exit, and hands the core what that changed as
//! [`Input`]s; the core reads what it holds through [`FileView`].

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::core::{Command, Exit, FileView, Input, Stamp};
use crate::disk::Disk;
use crate::event::Warning;
use crate::home::Home;
use crate::records::Records;
use crate::session::SessionRecord;
use crate::watch::{route, run_names, Batch, Handler, MakeWatcher, Watches};

/// What one batch changed, for the core.
pub(super) struct Applied {
    /// Anything that may change a session.
    pub changed: bool,
    /// It may have changed any session.
    pub full: bool,
    /// lf's database directory became watchable.
    pub database_appeared: bool,
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
}

impl FileSide {
    /// The file half of `home` read from `disk`; the watcher made sends its events to
    /// `handler`.
    pub(super) fn new(
        disk: Arc<dyn Disk>,
        home: Home,
        lf_bin: Option<&Path>,
        watcher: MakeWatcher,
        handler: Handler,
    ) -> FileSide {
        let records = Records::on(disk.clone(), home.clone(), lf_bin);
        let watches = Watches::new(disk.clone(), watcher, handler);
        FileSide {
            disk,
            home,
            records,
            watches,
            program: Vec::new(),
            exits: HashMap::new(),
            commands: Vec::new(),
            present: false,
        }
    }

    /// The exit watches decided since the last call, for the task to carry out.
    pub(super) fn commands(&mut self) -> Vec<Command> {
        std::mem::take(&mut self.commands)
    }

    /// Why files cannot be watched, if they cannot.
    pub(super) fn watch_error(&self) -> Option<String> {
        self.watches.error.clone()
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
    pub(super) fn start(&mut self, files: bool) -> Vec<Warning> {
        self.present = self.present_now();
        let mut fresh = Vec::new();
        self.watches.ensure_tops(&self.home, files);
        if files {
            fresh.extend(self.records.rescan());
            self.sync_runs(&mut fresh);
        }
        fresh
    }

    /// A new lf was detected: watch its sources anew and, if it keeps its sessions in
    /// `files`, read them all again.
    pub(super) fn rescan(&mut self, files: bool) -> Vec<Input> {
        let fresh = self.start(files);
        vec![Input::Warned(fresh), Input::FilesChanged { full: true }]
    }

    /// The slow safety net over the files (see [`Records::reconcile`]).
    pub(super) fn reconcile(&mut self, files: bool) -> Vec<Input> {
        self.present = self.present_now();
        let mut fresh = Vec::new();
        self.watches.ensure_tops(&self.home, files);
        fresh.extend(self.records.reconcile());
        self.sync_runs(&mut fresh);
        vec![Input::Warned(fresh), Input::FilesChanged { full: true }]
    }

    /// A client process of a followed Run exited: its Run's session alone may change.
    pub(super) fn client_exited(&mut self, run_id: &str) -> Vec<Input> {
        let mut fresh = Vec::new();
        self.records.client_exited(run_id);
        self.settle(run_id, &mut fresh);
        vec![Input::Warned(fresh), Input::FilesChanged { full: false }]
    }

    /// A batch of file events, for the core: lf's database directory that appeared, the
    /// problems of what was read again, and whether (and how widely) sessions changed.
    pub(super) fn batch(&mut self, batch: &Batch, files: bool) -> Vec<Input> {
        let mut fresh = Vec::new();
        let applied = self.apply(batch, files, &mut fresh);
        let mut inputs = Vec::new();
        if applied.database_appeared {
            inputs.push(Input::DatabaseAppeared);
        }
        inputs.push(Input::Warned(fresh));
        if applied.changed {
            inputs.push(Input::FilesChanged { full: applied.full });
        }
        inputs
    }

    /// Read again what a batch of file events made dirty, and watch what appeared.
    fn apply(&mut self, batch: &Batch, files: bool, fresh: &mut Vec<Warning>) -> Applied {
        self.present = self.present_now();
        let mut applied = Applied {
            changed: batch.changed(),
            full: false,
            database_appeared: false,
        };
        for dir in &batch.gone {
            self.watches.forget(dir);
        }
        if batch.rescan && files {
            applied.full = true;
            // Events were lost: any watched directory may have been replaced.
            self.watches.forget(Path::new("/"));
            self.watches.ensure_tops(&self.home, files);
            fresh.extend(self.records.rescan());
            self.sync_runs(fresh);
            return applied;
        }
        if batch.tops {
            // A source directory came or went: whether the files count at all may change.
            applied.full = true;
            let appeared = self.watches.ensure_tops(&self.home, files);
            // The database may have been written before its directory was watched.
            applied.database_appeared = appeared.database;
            // A new source is read whole; the Runs only when `runs/` itself is new, since
            // reading 10 000 of them for a new `human-sessions/` would be wasted.
            if appeared.runs {
                fresh.extend(self.records.rescan());
                self.sync_runs(fresh);
                return applied;
            }
            if appeared.asks {
                fresh.extend(self.records.rescan_asks());
                self.sync_runs(fresh);
            }
            if !self.disk.is_dir(&self.home.asks_dir()) {
                self.records.forget_asks();
            }
        }
        if !files {
            return applied;
        }
        for shard in &batch.shards {
            // A new shard holds new Run dirs; a vanished one takes its Runs along.
            self.watches.shard(shard);
            let mut runs = run_names(&*self.disk, shard);
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
        applied
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
        self.watches.shards(&self.home.runs_dir());
        self.stop_exits(|run, _| !followed.contains(run));
    }

    /// Watch a followed Run (its directory and `provider-clients/`) and its live client
    /// processes; stop watching one no longer followed.
    fn sync_run(&mut self, run_id: &str) -> bool {
        let Some(tracked) = self.records.tracked_run(run_id) else {
            self.watches.unwatch_run(&self.home, run_id);
            self.stop_exits(|run, _| run == run_id);
            return false;
        };
        let added = self.watches.watch_run(&tracked.run.dir);
        let live: Vec<i32> = tracked.live_pids.clone();
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
        added
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

    fn can_watch(&self) -> bool {
        self.watches.watcher.is_some()
    }
}
