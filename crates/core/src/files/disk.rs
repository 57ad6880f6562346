//! What the file half asks of the machine it runs on: how a path looks, what a directory
//! holds, lf's records read and decoded, and which of a Run's client processes are live.
//! The file half asks for its reads as data ([`Read`]) and is handed the [`Answers`]; the
//! engine's task makes them on the real file system and `/proc` through [`Real`], and the
//! replays on a disk made of data, so that a record written, half-written, unreadable or
//! removed, a directory made late and a client that exits are scripted, not staged.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::event::Warning;
use crate::files::ask::{self, AskRecord};
use crate::files::liveness;
use crate::files::run::{self, Run};

/// How a path looks, following symbolic links (as `fs::metadata` does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stat {
    pub dir: bool,
    pub len: u64,
    pub modified: Option<SystemTime>,
    /// Which directory this is: one deleted and made again under the same name is another.
    pub inode: u64,
}

/// One directory entry, its type as the entry says it (a link is not followed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub name: OsString,
    pub dir: bool,
}

/// The reads the file half makes. `Sync`: a cold scan reads Run directories on several
/// threads at once.
pub(crate) trait Disk: Send + Sync + std::fmt::Debug {
    /// `None` when nothing is there (or it cannot be looked at).
    fn stat(&self, path: &Path) -> Option<Stat>;
    /// The entries of a directory, in no particular order.
    fn list(&self, dir: &Path) -> io::Result<Vec<Entry>>;
    /// One Ask record ([`ask::read_ask`]).
    fn read_ask(&self, path: &Path) -> Result<Option<AskRecord>, Warning>;
    /// One Run directory ([`run::read_run`]).
    fn read_run(&self, dir: &Path) -> (Option<Run>, Vec<Warning>);
    /// The pids of the Run's clients that lf would judge live now.
    fn live_pids(&self, run: &Run) -> Vec<i32>;
    /// Where a path leads once every link is followed.
    fn canonical(&self, path: &Path) -> Option<PathBuf>;
}

/// The machine itself: the file system and `/proc`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Real;

impl Disk for Real {
    fn stat(&self, path: &Path) -> Option<Stat> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(path).ok()?;
        Some(Stat {
            dir: meta.is_dir(),
            len: meta.len(),
            modified: meta.modified().ok(),
            inode: meta.ino(),
        })
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<Entry>> {
        Ok(std::fs::read_dir(dir)?
            .flatten()
            .map(|entry| Entry {
                dir: entry.file_type().is_ok_and(|t| t.is_dir()),
                name: entry.file_name(),
            })
            .collect())
    }

    fn read_ask(&self, path: &Path) -> Result<Option<AskRecord>, Warning> {
        ask::read_ask(path)
    }

    fn read_run(&self, dir: &Path) -> (Option<Run>, Vec<Warning>) {
        run::read_run(dir)
    }

    fn live_pids(&self, run: &Run) -> Vec<i32> {
        liveness::live_clients(&run.clients, &run.manifest.harness)
            .into_iter()
            .map(|c| c.pid)
            .collect()
    }

    fn canonical(&self, path: &Path) -> Option<PathBuf> {
        std::fs::canonicalize(path).ok()
    }
}

/// A read the file half asks the engine's task for, in its `FileCommand::Read`: the file half
/// decides and the task reads, so that the deciding is replayed on data. Every
/// read of one command is answered at once, in one [`Answers`], after the watches asked
/// with it are in place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Read {
    /// How a path looks.
    Stat(PathBuf),
    /// What a directory holds.
    List(PathBuf),
    /// Where a path leads once every link is followed.
    Canonical(PathBuf),
    /// One Ask record.
    Ask(PathBuf),
    /// Every Ask record in this directory.
    Asks(PathBuf),
    /// These Run directories ([`RunReading`]).
    Runs(Vec<PathBuf>),
    /// Every Run directory under this `runs/`, read likewise.
    AllRuns(PathBuf),
    /// Every Run directory under this `runs/` with its mtime, none read ([`Survey`]).
    Survey(PathBuf),
    /// Which of this Run's clients are live now.
    Live(Box<Run>),
}

/// One Ask record read: `None` when it is gone, a warning when it cannot be read.
pub(crate) type AskRead = Result<Option<AskRecord>, Warning>;

/// Every Ask record of a directory, by id as read, and the problems of listing them.
pub(crate) type AllAsks = (Vec<(String, AskRead)>, Vec<Warning>);

/// One Run directory read, with its mtime from just before (so that a change during the
/// read shows at the next reconciliation) and its clients' liveness judged as it was read.
#[derive(Debug, Clone)]
pub(crate) struct RunReading {
    pub dir: PathBuf,
    pub seen: Option<SystemTime>,
    pub run: Option<Run>,
    pub warnings: Vec<Warning>,
    pub live: Vec<i32>,
}

/// Every Run directory read, and the problems of listing them.
pub(crate) type AllRuns = (Vec<RunReading>, Vec<Warning>);

/// Every Run directory with its mtime, and the problems of listing them: what the
/// reconciliation compares (`Records::stale`).
pub(crate) type Survey = (Vec<(PathBuf, Option<SystemTime>)>, Vec<Warning>);

/// What the task read for the file half, each answer found by what was asked. A path
/// asked after is read as "not there" when it was not asked.
#[derive(Debug, Default)]
pub(crate) struct Answers {
    stats: HashMap<PathBuf, Option<Stat>>,
    lists: HashMap<PathBuf, Vec<Entry>>,
    canonical: HashMap<PathBuf, Option<PathBuf>>,
    asks: HashMap<PathBuf, AskRead>,
    all_asks: HashMap<PathBuf, AllAsks>,
    runs: HashMap<PathBuf, RunReading>,
    all_runs: HashMap<PathBuf, AllRuns>,
    surveys: HashMap<PathBuf, Survey>,
    live: HashMap<PathBuf, Vec<i32>>,
}

impl Answers {
    pub(crate) fn stat(&self, path: &Path) -> Option<Stat> {
        self.stats.get(path).copied().flatten()
    }

    pub(crate) fn is_dir(&self, path: &Path) -> bool {
        self.stat(path).is_some_and(|s| s.dir)
    }

    /// The entries of a directory; none when it could not be listed.
    pub(crate) fn entries(&self, dir: &Path) -> &[Entry] {
        self.lists.get(dir).map_or(&[], Vec::as_slice)
    }

    pub(crate) fn canonical(&self, path: &Path) -> Option<PathBuf> {
        self.canonical.get(path).cloned().flatten()
    }

    pub(crate) fn take_ask(&mut self, path: &Path) -> Option<AskRead> {
        self.asks.remove(path)
    }

    pub(crate) fn take_asks(&mut self, dir: &Path) -> Option<AllAsks> {
        self.all_asks.remove(dir)
    }

    /// A Run directory read; a copy, since two of the file half's steps may ask for the
    /// same directory in one command.
    pub(crate) fn run(&self, dir: &Path) -> Option<RunReading> {
        self.runs.get(dir).cloned()
    }

    pub(crate) fn take_all_runs(&mut self, runs_dir: &Path) -> Option<AllRuns> {
        self.all_runs.remove(runs_dir)
    }

    pub(crate) fn take_survey(&mut self, runs_dir: &Path) -> Option<Survey> {
        self.surveys.remove(runs_dir)
    }

    pub(crate) fn take_live(&mut self, run_dir: &Path) -> Option<Vec<i32>> {
        self.live.remove(run_dir)
    }
}

impl dyn Disk + '_ {
    pub(crate) fn is_dir(&self, path: &Path) -> bool {
        self.stat(path).is_some_and(|s| s.dir)
    }

    /// Carry out the file half's reads, in order.
    pub(crate) fn answer(&self, reads: Vec<Read>) -> Answers {
        let mut answers = Answers::default();
        for read in reads {
            match read {
                Read::Stat(path) => {
                    let stat = self.stat(&path);
                    answers.stats.insert(path, stat);
                }
                Read::List(dir) => {
                    let entries = self.list(&dir).unwrap_or_default();
                    answers.lists.insert(dir, entries);
                }
                Read::Canonical(path) => {
                    let target = self.canonical(&path);
                    answers.canonical.insert(path, target);
                }
                Read::Ask(path) => {
                    let read = self.read_ask(&path);
                    answers.asks.insert(path, read);
                }
                Read::Asks(dir) => {
                    let all = read_asks(self, &dir);
                    answers.all_asks.insert(dir, all);
                }
                Read::Runs(dirs) => {
                    for reading in read_runs_parallel(self, dirs) {
                        answers.runs.insert(reading.dir.clone(), reading);
                    }
                }
                Read::AllRuns(runs_dir) => {
                    let mut warnings = Vec::new();
                    let dirs = list_run_dirs(self, &runs_dir, &mut warnings);
                    let read = read_runs_parallel(self, dirs);
                    answers.all_runs.insert(runs_dir, (read, warnings));
                }
                Read::Survey(runs_dir) => {
                    let survey = survey(self, &runs_dir);
                    answers.surveys.insert(runs_dir, survey);
                }
                Read::Live(run) => {
                    let live = self.live_pids(&run);
                    answers.live.insert(run.dir.clone(), live);
                }
            }
        }
        answers
    }
}

/// lf's dot-named staging entries and the like: never a record.
pub fn is_hidden(name: &OsStr) -> bool {
    name.as_encoded_bytes().starts_with(b".")
}

fn read_asks(disk: &dyn Disk, dir: &Path) -> AllAsks {
    let mut warnings = Vec::new();
    let read = list_asks(disk, dir, &mut warnings)
        .into_iter()
        .map(|(id, path)| (id, disk.read_ask(&path)))
        .collect();
    (read, warnings)
}

fn list_asks(disk: &dyn Disk, dir: &Path, fresh: &mut Vec<Warning>) -> Vec<(String, PathBuf)> {
    let entries = match disk.list(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            fresh.push(Warning::new(
                Some(dir.to_path_buf()),
                format!("cannot list Ask records: {e}"),
            ));
            return Vec::new();
        }
    };
    let mut asks = Vec::new();
    for entry in entries {
        let name = entry.name;
        match ask::ask_id_from_file_name(&name) {
            Some(id) => asks.push((id.to_string(), dir.join(&name))),
            None if name.to_str().is_none() && !is_hidden(&name) => fresh.push(Warning::new(
                Some(dir.join(&name)),
                "skipped a file whose name is not valid UTF-8",
            )),
            None => {}
        }
    }
    asks
}

/// `runs/<pp>/<run>` directories, skipping lf's dot-named staging entries.
fn list_run_dirs(disk: &dyn Disk, runs_dir: &Path, fresh: &mut Vec<Warning>) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let shards = match disk.list(runs_dir) {
        Ok(shards) => shards,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return dirs,
        Err(e) => {
            fresh.push(Warning::new(
                Some(runs_dir.to_path_buf()),
                format!("cannot list Runs: {e}"),
            ));
            return dirs;
        }
    };
    for shard in shards {
        if is_hidden(&shard.name) || !shard.dir {
            continue;
        }
        let shard = runs_dir.join(&shard.name);
        let Ok(runs) = disk.list(&shard) else {
            continue;
        };
        for run in runs {
            if !is_hidden(&run.name) && run.dir {
                dirs.push(shard.join(&run.name));
            }
        }
    }
    dirs
}

fn survey(disk: &dyn Disk, runs_dir: &Path) -> Survey {
    let mut fresh = Vec::new();
    let dirs = list_run_dirs(disk, runs_dir, &mut fresh)
        .into_iter()
        .map(|dir| {
            let modified = disk.stat(&dir).and_then(|s| s.modified);
            (dir, modified)
        })
        .collect();
    (dirs, fresh)
}

/// A Run dir's mtime, taken before it is read, then the Run and its clients' liveness.
/// Liveness is judged for every Run with clients, followed or not: what it costs beside
/// reading those clients' records is a look in `/proc` each.
fn read_dated(disk: &dyn Disk, dir: &Path) -> RunReading {
    let seen = disk.stat(dir).and_then(|s| s.modified);
    let (run, warnings) = disk.read_run(dir);
    let live = match &run {
        Some(run) if !run.clients.is_empty() => disk.live_pids(run),
        _ => Vec::new(),
    };
    RunReading {
        dir: dir.to_path_buf(),
        seen,
        run,
        warnings,
        live,
    }
}

/// Read many Run directories on every core: the cold scan of a home with thousands of
/// Runs is bound by file system calls, which parallelise well.
fn read_runs_parallel(disk: &dyn Disk, dirs: Vec<PathBuf>) -> Vec<RunReading> {
    let read = |dir: &PathBuf| read_dated(disk, dir);
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(8);
    // Below a few hundred Runs a thread costs more than it saves.
    if threads == 1 || dirs.len() < 256 {
        return dirs.iter().map(read).collect();
    }
    let chunk = dirs.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = dirs
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().map(read).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    })
}
