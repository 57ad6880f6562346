//! The file half of the engine: lf's session files as [`Records`] holds them, which
//! directories are to be under inotify ([`Watches`]), and which client processes of
//! followed Runs are to be watched for their exit. It decides; others do the I/O. Its one
//! face is [`FileSide::drive`] (`drive.rs`): handed what happened (a [`FileInput`]), it
//! steps until nothing waits, each step asking for watches and reads ([`FileCommand`]s)
//! that the driver's [`Hands`] carry out, since the task owns the watcher and the
//! machine; the replays' hands are a disk made of data. What it found goes to the core
//! as [`Input`]s, with the exit watches for the task ([`FileOut`]); the core reads what
//! it holds through [`FileView`].

mod batch;
mod drive;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::core::{Command, Exit, FileView, Input};
use crate::event::Warning;
use crate::files::disk::{Answers, Read, RunReading};
use crate::files::records::Records;
use crate::files::watch::{looked_at, route, Appeared, Asked, Batch, Watches};
use crate::lf::home::Home;
use crate::lf::record::SessionRecord;

pub(super) use self::drive::Hands;

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
/// come after a watch, so that nothing made or written between them goes unseen, and
/// what takes in the task's reads.
#[derive(Default)]
struct Waiting {
    /// The source directories were looked for and asked to be watched: look again.
    tops: Option<Looking>,
    /// What follows once the sources are settled (or, if none were looked for, once the
    /// task has carried out what was asked).
    then: Option<Then>,
    /// Runs read whose directory (or `provider-clients/`) was then asked to be watched,
    /// with those directories: read once more if a watch held.
    runs: Vec<(String, Vec<PathBuf>)>,
    /// Runs asked to be read once more, their watch in place.
    rereading: Vec<String>,
}

struct Looking {
    files: bool,
    /// The sources as watched before: one watched anew since has appeared.
    before: HashMap<PathBuf, Option<u64>>,
    /// Where the last look found them.
    looked: Vec<PathBuf>,
    looks: u8,
}

/// The steps that wait for watches or for the task's reads, each taking in what the
/// one before it asked to be read.
enum Then {
    /// The sources were read ([`looked_at`]): note whether the files are there, look for
    /// the sources, then `then`.
    Looked { files: bool, then: Box<Then> },
    /// Read everything (at start, for a new lf, after lost events).
    Rescan { files: bool },
    /// Everything was read: take it in.
    Rescanned,
    /// The slow safety net: every Run dir with its mtime is asked for, then what is stale
    /// ([`Records::stale`]) with the Asks, then the session Runs the Asks name.
    Survey,
    /// The Run dirs and their mtimes came: ask for the stale ones and the Asks.
    Surveyed,
    /// They were read: take them in, with the survey's problems.
    Reconciled {
        warnings: Vec<Warning>,
        stale: Vec<PathBuf>,
    },
    /// A batch's sources and new shards were read: watch them.
    Arrived { batch: Batch, files: bool },
    /// What a batch made dirty, once its sources and new shards are watched: ask for it.
    Batch { batch: Batch, files: bool },
    /// What a batch made dirty was read, and its shards listed: take it in.
    BatchRead { batch: Batch, asks_appeared: bool },
    /// Runs read again (`changed`, found by listing a shard) and session Runs that Asks
    /// name (`session`): take them in and follow them, then the session Runs of `asks`.
    Runs {
        changed: Vec<String>,
        session: Vec<PathBuf>,
        asks: Vec<String>,
    },
    /// A client of this Run exited and its clients' liveness was judged again.
    Exited(String),
    /// Where the `lf` program leads was read: watch both.
    Program(PathBuf),
}

/// What happened, for the file half: each is taken in whole (watched, read and judged)
/// before the next, since [`FileSide::drive`] steps until nothing waits.
pub(super) enum FileInput {
    /// Watch the lf program, so that an lf upgraded while the tray runs is noticed.
    Program(PathBuf),
    /// The engine starts: watch the sources, then read them if lf keeps its sessions in
    /// `files`.
    Start { files: bool },
    /// A new lf was detected: watch its sources anew and, if it keeps its sessions in
    /// `files`, read them all again.
    Rescan { files: bool },
    /// The slow safety net's turn ([`Records::stale`], [`Records::reconciled`]).
    Reconcile { files: bool },
    /// A batch of file events.
    Batch { batch: Batch, files: bool },
    /// A client process of this followed Run exited.
    ClientExited(String),
}

/// A watch or a read the file half asks for, carried out in the order asked: a read asked
/// with a watch is made once the watch is in place.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum FileCommand {
    /// Watch this directory (not recursively); one that cannot be is handed back.
    Watch(PathBuf),
    Unwatch(PathBuf),
    /// Make these reads and hand back what they found.
    Read(Vec<Read>),
}

/// What became of the commands of the last step.
#[derive(Default)]
struct CarriedOut {
    /// What the reads found; `None` when they were not made (the task is ending).
    answers: Option<Answers>,
    /// The directories that could not be watched.
    refused: Vec<PathBuf>,
}

/// What one step of the file half is handed.
enum Handed {
    /// Something happened: the work it starts goes on until nothing waits.
    Input(FileInput),
    /// Boxed: the answers are far larger than any input, and each step is handed one.
    CarriedOut(Box<CarriedOut>),
}

/// What the file half asks of the hand-off after it.
enum Step {
    /// Carry these out, in order, and step again with what became of them.
    CarryOut(Vec<FileCommand>),
    /// Nothing waits any more.
    Done(FileOut),
}

/// What one [`FileInput`] came to, once nothing waits.
pub(super) struct FileOut {
    /// The exit watches of client processes to start and stop, for the task, in order.
    pub exits: Vec<Command>,
    /// What was found, for the core: lf's database directory that appeared, the problems
    /// of what was read, and whether (and how widely) sessions changed.
    pub inputs: Vec<Input>,
}

pub(super) struct FileSide {
    home: Home,
    records: Records,
    watches: Watches,
    /// The `lf` program and what it links to, whose changes may be a new lf.
    program: Vec<PathBuf>,
    /// The client processes of followed Runs watched for their exit, by pid, with their Run.
    exits: HashMap<i32, String>,
    /// The exit watches to start and stop, for the task once nothing waits.
    exits_asked: Vec<Command>,
    /// The reads to ask the task for, after the watches.
    reads: Vec<Read>,
    /// Whether the last step asked for reads.
    asked_reads: bool,
    /// Whether a source directory existed when this last looked (at every batch, scan and
    /// reconciliation): what the core's merges ask without touching the machine.
    present: bool,
    waiting: Waiting,
    found: Findings,
}

impl FileSide {
    /// The file half of `home`.
    pub(super) fn new(home: Home, lf_bin: Option<&Path>) -> FileSide {
        let records = Records::new(home.clone(), lf_bin);
        FileSide {
            home,
            records,
            watches: Watches::new(),
            program: Vec::new(),
            exits: HashMap::new(),
            exits_asked: Vec::new(),
            reads: Vec::new(),
            asked_reads: false,
            present: false,
            waiting: Waiting::default(),
            found: Findings::default(),
        }
    }

    /// One hand-off: what happened, or what became of the commands the last step asked
    /// for. The first starts work, the rest carry it on (a look or a read that waited for
    /// the watches asked before it); the step that leaves nothing waiting hands out what
    /// was found.
    fn step(&mut self, handed: Handed) -> Step {
        match handed {
            Handed::Input(input) => {
                debug_assert!(!self.waits(), "an input arrives only once nothing waits");
                self.take(input);
            }
            Handed::CarriedOut(carried) => self.carried_out(*carried),
        }
        let commands = self.commands();
        if commands.is_empty() && !self.waits() {
            return Step::Done(FileOut {
                exits: std::mem::take(&mut self.exits_asked),
                inputs: self.inputs(),
            });
        }
        Step::CarryOut(commands)
    }

    fn take(&mut self, input: FileInput) {
        match input {
            FileInput::Program(lf) => self.watch_program(lf),
            FileInput::Start { files } => self.start(files),
            FileInput::Rescan { files } => self.rescan(files),
            FileInput::Reconcile { files } => self.reconcile(files),
            FileInput::Batch { batch, files } => self.batch(batch, files),
            FileInput::ClientExited(run) => self.client_exited(&run),
        }
    }

    /// The watches and the reads decided since the last step, in the order to carry them
    /// out.
    fn commands(&mut self) -> Vec<FileCommand> {
        let mut commands: Vec<FileCommand> = self
            .watches
            .take_asked()
            .into_iter()
            .map(|asked| match asked {
                Asked::Watch(dir) => FileCommand::Watch(dir),
                Asked::Unwatch(dir) => FileCommand::Unwatch(dir),
            })
            .collect();
        if !self.reads.is_empty() {
            self.asked_reads = true;
            commands.push(FileCommand::Read(std::mem::take(&mut self.reads)));
        }
        commands
    }

    /// Whether a look or a read waits for the commands asked for.
    pub(super) fn waits(&self) -> bool {
        self.waiting.tops.is_some()
            || self.waiting.then.is_some()
            || !self.waiting.runs.is_empty()
            || !self.waiting.rereading.is_empty()
    }

    /// The commands asked for were carried out (the watches are in place, the reads
    /// answered): what waited for them goes on. A directory that could not be watched is
    /// not, nothing is told (a directory that vanished meanwhile is the common case), and
    /// it is asked for again the next time the file half looks for it. The sources are
    /// looked for again, and watched again until a look finds what the last one watched;
    /// only then is what waits for them read. A Run read before its watch was in place is
    /// read once more. What that asks in turn waits for the next step. Reads left
    /// unanswered (the task is ending) end whatever waited.
    fn carried_out(&mut self, carried: CarriedOut) {
        for dir in &carried.refused {
            self.watches.unwatchable(dir);
        }
        let answers = carried.answers;
        if std::mem::take(&mut self.asked_reads) && answers.is_none() {
            self.waiting = Waiting::default();
            return;
        }
        let mut answers = answers.unwrap_or_default();
        for run in std::mem::take(&mut self.waiting.rereading) {
            if self.run_read_again(&run, &answers) {
                // A `provider-clients/` made meanwhile is watched; nothing reads after it.
                self.sync_run(&run);
            }
        }
        // Runs that wait now had their watches carried out; those asked below wait for
        // the next call.
        for (run, asked) in std::mem::take(&mut self.waiting.runs) {
            let dir = self.home.run_dir(&run);
            if let Some(dir) = dir.filter(|_| asked.iter().any(|d| self.watches.watches_run(d))) {
                self.reads.push(Read::Runs(vec![dir]));
                self.waiting.rereading.push(run);
            }
        }
        let mut appeared = Appeared::default();
        if let Some(mut looking) = self.waiting.tops.take() {
            let settled =
                self.watches
                    .settled(&self.home, looking.files, &looking.looked, &answers);
            if !settled && looking.looks < LOOKS {
                looking.looked = self.watches.look_tops(&self.home, looking.files, &answers);
                looking.looks += 1;
                self.read_sources();
                self.waiting.tops = Some(looking);
                return;
            }
            appeared = self
                .watches
                .appeared(&looking.before, &self.home, looking.files);
        }
        if let Some(then) = self.waiting.then.take() {
            self.next(then, &mut answers, appeared);
        }
    }

    /// What the work since the last input found, for the core.
    fn inputs(&mut self) -> Vec<Input> {
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

    /// Where this machine's lf keeps its files.
    pub(super) fn home(&self) -> &Home {
        &self.home
    }

    /// Watch the lf program where it leads, once that is read.
    fn watch_program(&mut self, lf: PathBuf) {
        self.reads.push(Read::Canonical(lf.clone()));
        self.waiting.then = Some(Then::Program(lf));
    }

    /// Sort one file event into the batch.
    pub(super) fn route(&self, event: notify::Event, batch: &mut Batch) {
        route(&self.home, &self.program, event, batch);
    }

    /// Watch first, then read: a record written in between is seen by the read.
    fn start(&mut self, files: bool) {
        self.read_sources();
        let then = Box::new(Then::Rescan { files });
        self.waiting.then = Some(Then::Looked { files, then });
    }

    /// A new lf was detected: watch its sources anew and, if it keeps its sessions in
    /// `files`, read them all again.
    fn rescan(&mut self, files: bool) {
        self.start(files);
        self.found.changed = true;
        self.found.full = true;
    }

    /// The slow safety net over the files ([`Records::stale`], [`Records::reconciled`]).
    fn reconcile(&mut self, files: bool) {
        self.read_sources();
        let then = Box::new(Then::Survey);
        self.waiting.then = Some(Then::Looked { files, then });
        self.found.changed = true;
        self.found.full = true;
    }

    /// A client process of a followed Run exited: its Run's session alone may change,
    /// once its clients' liveness is judged again.
    fn client_exited(&mut self, run_id: &str) {
        if let Some(tracked) = self.records.tracked_run(run_id) {
            self.reads.push(Read::Live(Box::new(tracked.run.clone())));
        }
        self.waiting.then = Some(Then::Exited(run_id.to_string()));
    }

    /// The step that waited goes on with what was read for it.
    fn next(&mut self, then: Then, answers: &mut Answers, appeared: Appeared) {
        let asks_dir = self.home.asks_dir();
        let runs_dir = self.home.runs_dir();
        match then {
            Then::Looked { files, then } => {
                self.present = answers.is_dir(&asks_dir) || answers.is_dir(&runs_dir);
                self.look(files, *then, answers);
            }
            Then::Rescan { files: true } => self.read_everything(),
            Then::Rescan { files: false } => {}
            Then::Rescanned => {
                let (Some(asks), Some(runs)) = (
                    answers.take_asks(&asks_dir),
                    answers.take_all_runs(&runs_dir),
                ) else {
                    return;
                };
                self.found
                    .warnings
                    .extend(self.records.rescanned(asks, runs));
                self.sync_runs(answers);
            }
            Then::Survey => {
                self.reads.push(Read::Survey(runs_dir));
                self.waiting.then = Some(Then::Surveyed);
            }
            Then::Surveyed => {
                let Some((dirs, warnings)) = answers.take_survey(&runs_dir) else {
                    return;
                };
                let stale = self.records.stale(&dirs);
                self.reads.push(Read::Runs(stale.clone()));
                self.reads.push(Read::Asks(asks_dir));
                self.reads.push(Read::List(runs_dir));
                self.waiting.then = Some(Then::Reconciled { warnings, stale });
            }
            Then::Reconciled { warnings, stale } => {
                let read: Option<Vec<RunReading>> = stale.iter().map(|d| answers.run(d)).collect();
                let (Some(asks), Some(read)) = (answers.take_asks(&asks_dir), read) else {
                    return;
                };
                let fresh = self.records.reconciled(warnings, asks, read);
                self.found.warnings.extend(fresh);
                self.sync_runs(answers);
                let asks = self.records.ask_ids();
                self.read_runs(Vec::new(), asks);
            }
            Then::Arrived { batch, files } => self.arrived(batch, files, answers),
            Then::Batch { batch, files } => self.dirty(batch, files, answers, appeared),
            Then::BatchRead {
                batch,
                asks_appeared,
            } => self.take_in(batch, asks_appeared, answers),
            Then::Runs {
                changed,
                session,
                asks,
            } => {
                for run in changed {
                    if self.run_read_again(&run, answers) {
                        self.settle(&run);
                    }
                }
                let read: Option<Vec<RunReading>> =
                    session.iter().map(|d| answers.run(d)).collect();
                let Some(read) = read else { return };
                self.found
                    .warnings
                    .extend(self.records.session_runs_read(read));
                // An Ask may have named a new session Run, which is followed from now on.
                for id in &asks {
                    if let Some(run) = self.records.session_run_of(id) {
                        self.settle(&run);
                    }
                }
            }
            Then::Exited(run_id) => {
                let live = match self.records.tracked_run(&run_id) {
                    Some(tracked) => match answers.take_live(&tracked.run.dir) {
                        Some(live) => live,
                        None => return,
                    },
                    None => Vec::new(),
                };
                self.records.client_exited(&run_id, live);
                self.settle(&run_id);
                self.found.changed = true;
            }
            Then::Program(lf) => {
                let target = answers.canonical(&lf);
                self.program = self.watches.program(&lf, target);
            }
        }
    }

    /// Ask for both sources to be read whole, and `runs/` listed for its shards.
    fn read_everything(&mut self) {
        let runs_dir = self.home.runs_dir();
        self.reads.push(Read::Asks(self.home.asks_dir()));
        self.reads.push(Read::AllRuns(runs_dir.clone()));
        self.reads.push(Read::List(runs_dir));
        self.waiting.then = Some(Then::Rescanned);
    }

    /// Ask for the sources and every directory above them to be read, for a look.
    fn read_sources(&mut self) {
        self.reads
            .extend(looked_at(&self.home).into_iter().map(Read::Stat));
    }

    /// Look for the sources in what was read and ask to watch them; `then` waits until a
    /// look after those watches finds what they watch.
    fn look(&mut self, files: bool, then: Then, seen: &Answers) {
        let before = self.watches.tops();
        let looked = self.watches.look_tops(&self.home, files, seen);
        self.waiting.tops = Some(Looking {
            files,
            before,
            looked,
            looks: 1,
        });
        self.read_sources();
        self.waiting.then = Some(then);
    }

    /// Ask for these Runs to be read again, and for the session Runs these Asks name that
    /// are not followed yet.
    fn read_runs(&mut self, changed: Vec<String>, asks: Vec<String>) {
        let session = self.records.unfollowed_session_runs(&asks);
        let mut dirs: Vec<PathBuf> = changed
            .iter()
            .filter_map(|run| self.home.run_dir(run))
            .collect();
        dirs.extend(session.iter().cloned());
        if !dirs.is_empty() {
            self.reads.push(Read::Runs(dirs));
        }
        self.waiting.then = Some(Then::Runs {
            changed,
            session,
            asks,
        });
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

    /// Bring watches and exit watchers in line with every followed Run (after a rescan);
    /// `seen` lists `runs/`, for its shards.
    fn sync_runs(&mut self, seen: &Answers) {
        let followed: HashSet<String> = self.records.tracked().map(|(id, _)| id.clone()).collect();
        self.watches.retain_runs(|run| followed.contains(run));
        for run in &followed {
            self.settle(run);
        }
        let runs_dir = self.home.runs_dir();
        self.watches.shards(&runs_dir, seen.entries(&runs_dir));
        self.stop_exits(|run, _| !followed.contains(run));
    }

    /// Take in a Run read again, if the task read it; false when it was not asked for or
    /// has no directory.
    fn run_read_again(&mut self, run: &str, answers: &Answers) -> bool {
        let Some(read) = self.home.run_dir(run).and_then(|dir| answers.run(&dir)) else {
            return false;
        };
        let warnings = self.records.run_changed(run, read);
        self.found.warnings.extend(warnings);
        true
    }

    /// Watch a followed Run (its directory and `provider-clients/`) and its live client
    /// processes; stop watching one no longer followed. Returns the directories asked for.
    fn sync_run(&mut self, run_id: &str) -> Vec<PathBuf> {
        let Some(tracked) = self.records.tracked_run(run_id) else {
            self.watches.unwatch_run(&self.home, run_id);
            self.stop_exits(|run, _| run == run_id);
            return Vec::new();
        };
        let live: Vec<i32> = tracked.live_pids.clone();
        let asked = self.watches.watch_run(&tracked.run);
        self.stop_exits(|run, pid| run == run_id && !live.contains(&pid));
        for pid in live {
            if self.exits.contains_key(&pid) {
                continue;
            }
            self.exits.insert(pid, run_id.to_string());
            // Its liveness was judged as it was read: no start time to check again.
            self.exits_asked.push(Command::WatchExit {
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
        let commands = &mut self.exits_asked;
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
