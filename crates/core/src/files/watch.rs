//! The file watch: which directories are under inotify, and what each event makes dirty.
//! Only directories are watched, never single files: lf writes a temporary and renames it
//! into place, which a watch on the old file would not see.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use notify::event::{AccessKind, AccessMode, ModifyKind, RenameMode};
use notify::EventKind;

use crate::files::disk::{is_hidden, Answers, Entry};
use crate::files::run::Run;
use crate::lf::home::Home;

/// Sort one file event into what it makes dirty. `program` is the `lf` in use (and what
/// it links to): a change to it may be a new lf generation.
pub fn route(home: &Home, program: &[PathBuf], event: notify::Event, batch: &mut Batch) {
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
        if program.contains(path) {
            batch.program = true;
        }
        if let Ok(rest) = path.strip_prefix(&asks_dir) {
            match names(rest).as_slice() {
                [] => batch.tops = true,
                [name] => {
                    if let Some(id) = crate::files::ask::ask_id_from_file_name(name) {
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
            // SQLite's readers open the WAL for writing and close it having written nothing
            // (the tray's own reading of lf's revisions among them), and SQLite run as
            // root gives the WAL the database's owner again at each open: a commit always
            // changes the file's data, so neither counts.
            batch.database |= !matches!(
                event.kind,
                EventKind::Access(_) | EventKind::Modify(ModifyKind::Metadata(_))
            );
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
pub struct Batch {
    /// A client exited or lf answered.
    pub other: bool,
    pub rescan: bool,
    pub tops: bool,
    pub database: bool,
    /// The `lf` program was replaced or changed.
    pub program: bool,
    pub asks: HashSet<String>,
    pub runs: HashSet<String>,
    pub shards: HashSet<PathBuf>,
    /// Watched directories on the way to a source that were deleted or moved away.
    pub gone: Vec<PathBuf>,
}

impl Batch {
    pub fn changed(&self) -> bool {
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

/// The Runs a shard's listing names.
pub(crate) fn run_names(entries: &[Entry]) -> Vec<String> {
    entries
        .iter()
        .filter(|e| !is_hidden(&e.name))
        .filter_map(|e| e.name.to_str().map(str::to_string))
        .collect()
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

/// What the engine asks of a file watcher: one directory at a time, never recursive (lf
/// writes a temporary and renames it into place, which a watch on the old file would miss).
pub trait DirWatcher: Send {
    fn watch(&mut self, dir: &Path) -> notify::Result<()>;
    fn unwatch(&mut self, dir: &Path);
}

impl DirWatcher for notify::RecommendedWatcher {
    fn watch(&mut self, dir: &Path) -> notify::Result<()> {
        notify::Watcher::watch(self, dir, notify::RecursiveMode::NonRecursive)
    }

    fn unwatch(&mut self, dir: &Path) {
        let _ = notify::Watcher::unwatch(self, dir);
    }
}

/// Makes the watcher, given where its events go.
pub type MakeWatcher = Box<dyn FnOnce(Handler) -> notify::Result<Box<dyn DirWatcher>> + Send>;

/// Where a watcher's events go.
pub type Handler = Box<dyn FnMut(notify::Result<notify::Event>) + Send>;

/// A change to what inotify watches, for the engine's task to make: the file half decides
/// what is watched, and the task, which owns the watcher, watches it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Asked {
    Watch(PathBuf),
    Unwatch(PathBuf),
}

/// The directories under inotify watch. Only directories, never single files: lf writes
/// a temporary and renames it into place, which a watch on the old file would not see.
/// A directory asked for counts as watched until the task says it could not be
/// ([`Watches::unwatchable`]), which it does before the file half looks again. What is
/// there is told it, as the task read it ([`Answers`]).
pub struct Watches {
    /// The watches to add and let go of since the task last took them, in order.
    asked: Vec<Asked>,
    /// The source directories and, while one is missing, its nearest existing ancestor.
    tops: HashMap<PathBuf, Option<u64>>,
    /// `runs/<pp>` shards, where new Runs appear.
    shards: HashSet<PathBuf>,
    /// Followed Run dirs and their `provider-clients/`.
    runs: HashSet<PathBuf>,
    /// The directories that hold the `lf` program and what it links to.
    program: HashSet<PathBuf>,
}

#[derive(Default)]
pub struct Appeared {
    pub asks: bool,
    pub runs: bool,
    pub database: bool,
}

/// The source directories: lf's database directory, and with the files its two others.
fn sources(home: &Home, files: bool) -> Vec<PathBuf> {
    let mut sources = vec![home.db_dir().to_path_buf()];
    if files {
        sources.push(home.asks_dir());
        sources.push(home.runs_dir());
    }
    sources
}

/// What a look at the sources reads: every source directory and each one above it, for
/// where a missing one is watched from.
pub(crate) fn looked_at(home: &Home) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = sources(home, true)
        .iter()
        .flat_map(|dir| dir.ancestors().map(Path::to_path_buf))
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

impl Watches {
    pub(crate) fn new() -> Watches {
        Watches {
            asked: Vec::new(),
            tops: HashMap::new(),
            shards: HashSet::new(),
            runs: HashSet::new(),
            program: HashSet::new(),
        }
    }

    /// The watches to add and let go of, for the task to carry out in this order.
    pub(crate) fn take_asked(&mut self) -> Vec<Asked> {
        std::mem::take(&mut self.asked)
    }

    /// The task could not watch `dir`: it is not watched, and is asked for again the next
    /// time the file half looks for it.
    pub fn unwatchable(&mut self, dir: &Path) {
        self.tops.remove(dir);
        self.shards.remove(dir);
        self.runs.remove(dir);
        self.program.remove(dir);
    }

    fn add(&mut self, dir: &Path) {
        self.asked.push(Asked::Watch(dir.to_path_buf()));
    }

    fn remove(&mut self, dir: &Path) {
        self.asked.push(Asked::Unwatch(dir.to_path_buf()));
    }

    /// Where a source is watched from: itself, or the nearest existing ancestor of a
    /// missing one, so that its creation is seen.
    fn target(dir: &Path, seen: &Answers) -> PathBuf {
        if seen.is_dir(dir) {
            dir.to_path_buf()
        } else {
            nearest_existing(seen, dir)
        }
    }

    /// The source directories as watched now, to tell later which of them appeared.
    pub fn tops(&self) -> HashMap<PathBuf, Option<u64>> {
        self.tops.clone()
    }

    /// One look at the source directories: ask to watch each where it is watched from,
    /// and let go of what is no longer wanted (a directory deleted and made again, a new
    /// inode, is watched anew). Returns where each source was looked for: a directory can
    /// appear between this look and its parent's watch, unseen by either, so once the task
    /// has put these watches in place the file half looks again ([`Watches::settled`]).
    /// `seen` holds what [`looked_at`] names.
    pub fn look_tops(&mut self, home: &Home, files: bool, seen: &Answers) -> Vec<PathBuf> {
        let looked: Vec<PathBuf> = sources(home, files)
            .iter()
            .map(|dir| Watches::target(dir, seen))
            .collect();
        let wanted: HashMap<PathBuf, Option<u64>> = looked
            .iter()
            .map(|dir| (dir.clone(), seen.stat(dir).map(|s| s.inode)))
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
        for (dir, ino) in wanted {
            if !self.tops.contains_key(&dir) {
                self.add(&dir);
                self.tops.insert(dir, ino);
            }
        }
        looked
    }

    /// Whether a look now finds the sources where the last look (whose watches are in
    /// place) did: then what is watched is what exists.
    pub fn settled(&self, home: &Home, files: bool, looked: &[PathBuf], seen: &Answers) -> bool {
        sources(home, files)
            .iter()
            .all(|dir| looked.contains(&Watches::target(dir, seen)))
    }

    /// Which sources became watchable since `before`, counting a directory deleted and
    /// made again (a new inode) as new.
    pub fn appeared(
        &self,
        before: &HashMap<PathBuf, Option<u64>>,
        home: &Home,
        files: bool,
    ) -> Appeared {
        let appeared = |dir: &Path| {
            self.tops
                .get(dir)
                .is_some_and(|ino| before.get(dir) != Some(ino))
        };
        Appeared {
            database: appeared(home.db_dir()),
            asks: files && appeared(&home.asks_dir()),
            runs: files && appeared(&home.runs_dir()),
        }
    }

    /// Watch the directories of the `lf` program and of what it links to, so that an lf
    /// upgraded while the tray runs is noticed without polling. `target` is where `lf`
    /// leads once every link is followed. Returns the paths whose changes count (for
    /// [`route`]).
    pub fn program(&mut self, lf: &Path, target: Option<PathBuf>) -> Vec<PathBuf> {
        let mut paths = vec![lf.to_path_buf()];
        if let Some(target) = target {
            if target != lf {
                paths.push(target);
            }
        }
        for path in &paths {
            if let Some(dir) = path.parent() {
                if !self.program.contains(dir) {
                    self.add(dir);
                    self.program.insert(dir.to_path_buf());
                }
            }
        }
        paths
    }

    /// Drop the watches at and under a directory that went away.
    pub fn forget(&mut self, dir: &Path) {
        let gone: Vec<PathBuf> = self
            .tops
            .keys()
            .chain(&self.shards)
            .chain(&self.runs)
            .filter(|watched| watched.starts_with(dir) && !self.program.contains(*watched))
            .cloned()
            .collect();
        for watched in gone {
            self.remove(&watched);
            self.tops.remove(&watched);
            self.shards.remove(&watched);
            self.runs.remove(&watched);
        }
    }

    /// Watch every shard `runs/` lists (`entries`).
    pub fn shards(&mut self, runs_dir: &Path, entries: &[Entry]) {
        for shard in entries {
            if !is_hidden(&shard.name) && shard.dir {
                self.shard(&runs_dir.join(&shard.name), true);
            }
        }
    }

    /// Watch a shard that is there, let go of one that is not.
    pub fn shard(&mut self, shard: &Path, there: bool) {
        if there {
            if !self.shards.contains(shard) {
                self.add(shard);
                self.shards.insert(shard.to_path_buf());
            }
        } else if self.shards.remove(shard) {
            self.remove(shard);
        }
    }

    /// Watch a Run dir and its `provider-clients/`, as its last read found them; returns
    /// the directories newly asked for.
    pub fn watch_run(&mut self, run: &Run) -> Vec<PathBuf> {
        let mut asked = Vec::new();
        let clients = run
            .has_clients_dir
            .then(|| run.dir.join("provider-clients"));
        for dir in std::iter::once(run.dir.clone()).chain(clients) {
            if !self.runs.contains(&dir) {
                self.add(&dir);
                self.runs.insert(dir.clone());
                asked.push(dir);
            }
        }
        asked
    }

    /// Whether a Run dir (or its `provider-clients/`) is watched.
    pub fn watches_run(&self, dir: &Path) -> bool {
        self.runs.contains(dir)
    }

    pub fn unwatch_run(&mut self, home: &Home, run_id: &str) {
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
    pub fn retain_runs(&mut self, followed: impl Fn(&str) -> bool) {
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

fn nearest_existing(seen: &Answers, dir: &Path) -> PathBuf {
    let mut dir = dir;
    while let Some(parent) = dir.parent() {
        if seen.is_dir(parent) {
            return parent.to_path_buf();
        }
        dir = parent;
    }
    PathBuf::from("/")
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::{CreateKind, DataChange, Flag, MetadataKind, RemoveKind};

    fn routed(kind: EventKind, paths: &[&str]) -> Batch {
        let home = Home::at("/h");
        let program = [PathBuf::from("/bin/lf")];
        let mut event = notify::Event::new(kind);
        for path in paths {
            event = event.add_path(PathBuf::from(path));
        }
        let mut batch = Batch::default();
        route(&home, &program, event, &mut batch);
        batch
    }

    #[test]
    fn a_changed_lf_program_is_routed() {
        let batch = routed(EventKind::Create(CreateKind::File), &["/bin/lf"]);
        assert!(batch.program && !batch.changed());
        let other = routed(EventKind::Create(CreateKind::File), &["/bin/lfx"]);
        assert!(!other.program);
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
        // A reader closes the WAL it opened for writing, having written nothing.
        let closed = EventKind::Access(AccessKind::Close(AccessMode::Write));
        assert!(!routed(closed, &["/h/loopflow.db-wal"]).database);
        let chowned = EventKind::Modify(ModifyKind::Metadata(MetadataKind::Ownership));
        assert!(!routed(chowned, &["/h/loopflow.db-wal"]).database);
        let committed = EventKind::Modify(ModifyKind::Data(DataChange::Any));
        assert!(routed(committed, &["/h/loopflow.db-wal"]).database);
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
        route(&Home::at("/h"), &[], overflow, &mut batch);
        assert!(batch.rescan && batch.changed());
    }
}
