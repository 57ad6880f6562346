//! What the engine knows from lf's files: every Ask record, and the Runs that can change
//! a listed session. Each method re-reads only what it is told changed, so the cost of an
//! event does not grow with the number of Runs in the home.

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use crate::ask::{self, AskRecord};
use crate::disk::{Disk, Real};
use crate::event::Warning;
use crate::home::Home;
use crate::run::{self, Run};
use crate::session::SessionRecord;

/// A Run the engine follows, with its clients' liveness judged when it was last read (or
/// when a client process exited since).
#[derive(Debug)]
pub struct Tracked {
    pub run: Run,
    pub live_pids: Vec<i32>,
}

/// The file-derived half of the session list.
#[derive(Debug)]
pub struct Records {
    home: Home,
    /// Where the files are read, and client processes judged.
    disk: Arc<dyn Disk>,
    /// The absolute `lf` that `open_argv` names; lf's own CLI falls back to its own path,
    /// so with no `lf` found the bare name keeps the record usable on a user's PATH.
    lf: String,
    asks: HashMap<String, AskRecord>,
    runs: HashMap<String, Tracked>,
    /// The problem last reported for each file, so one bad file gives one warning, not one
    /// per event, and a repaired file can warn again if it breaks again.
    problems: HashMap<PathBuf, String>,
    /// Run dirs read and found not worth following, with their mtime then: the
    /// reconciliation reads them again only if it changed.
    inert: HashMap<PathBuf, Option<SystemTime>>,
    /// Session ids that the event-driven changes since the engine last looked may have
    /// altered (rescans change everything and are merged whole instead).
    touched: HashSet<String>,
}

impl Records {
    pub fn new(home: Home, lf: Option<&Path>) -> Records {
        Records::on(Arc::new(Real), home, lf)
    }

    /// Records read from `disk`, not necessarily the machine's.
    pub(crate) fn on(disk: Arc<dyn Disk>, home: Home, lf: Option<&Path>) -> Records {
        Records {
            home,
            disk,
            lf: lf
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "lf".to_string()),
            asks: HashMap::new(),
            runs: HashMap::new(),
            problems: HashMap::new(),
            inert: HashMap::new(),
            touched: HashSet::new(),
        }
    }

    pub fn tracked(&self) -> impl Iterator<Item = (&String, &Tracked)> {
        self.runs.iter()
    }

    pub fn tracked_run(&self, run_id: &str) -> Option<&Tracked> {
        self.runs.get(run_id)
    }

    /// Forget everything and read both sources from scratch: at start and after an
    /// inotify overflow. Returns the new problems.
    pub fn rescan(&mut self) -> Vec<Warning> {
        let previous = std::mem::take(&mut self.problems);
        let mut fresh = Vec::new();
        self.read_asks(&mut fresh);
        self.runs.clear();
        self.inert.clear();
        let dirs = list_run_dirs(&*self.disk, &self.home.runs_dir(), &mut fresh);
        self.read_runs(dirs, &mut fresh);
        self.report(previous, fresh)
    }

    /// Read every Ask record again (its directory just appeared), leaving the Runs as they
    /// are.
    pub fn rescan_asks(&mut self) -> Vec<Warning> {
        let asks_dir = self.home.asks_dir();
        let previous = self.take_problems(|path| path.starts_with(&asks_dir));
        let mut fresh = Vec::new();
        self.read_asks(&mut fresh);
        self.report(previous, fresh)
    }

    /// The slow safety net's first half: from every Run dir and its mtime ([`survey`]),
    /// which Runs to read again: every one that is followed or new, and one found not
    /// worth following only if its directory changed since (a headless Run that lf opened
    /// interactively gains `provider-clients/`, which changes its directory's mtime). A
    /// finished Run costs one `stat`, so this stays cheap at 10 000 Runs. What is no
    /// longer there is forgotten.
    pub(crate) fn stale(&mut self, dirs: &[(PathBuf, Option<SystemTime>)]) -> Vec<PathBuf> {
        let present: HashSet<&PathBuf> = dirs.iter().map(|(dir, _)| dir).collect();
        self.inert.retain(|dir, _| present.contains(dir));
        self.runs
            .retain(|_, tracked| present.contains(&tracked.run.dir));
        dirs.iter()
            .filter(|(dir, modified)| match self.inert.get(dir) {
                Some(seen) => modified != seen,
                None => true,
            })
            .map(|(dir, _)| dir.clone())
            .collect()
    }

    /// The other half: the Asks read again, and the stale Runs as they were read
    /// ([`read_runs_parallel`]); `fresh` holds the survey's problems.
    pub(crate) fn reconciled(
        &mut self,
        mut fresh: Vec<Warning>,
        read: Vec<RunReading>,
    ) -> Vec<Warning> {
        let asks_dir = self.home.asks_dir();
        let previous = self.take_problems(|path| {
            path.starts_with(&asks_dir) || read.iter().any(|(dir, ..)| path.starts_with(dir))
        });
        self.read_asks(&mut fresh);
        self.adopt_all(read, &mut fresh);
        self.report(previous, fresh)
    }

    /// Re-read one Ask record after an event on `<asks>/<id>.json`.
    pub fn ask_changed(&mut self, id: &str) -> Vec<Warning> {
        let mut fresh = Vec::new();
        let path = self.home.asks_dir().join(format!("{id}.json"));
        let previous = self.take_problems(|p| p == path);
        let before = self.asks.get(id).and_then(|a| a.session_run_id.clone());
        self.read_ask_at(id, &path, &mut fresh);
        let after = self.asks.get(id).and_then(|a| a.session_run_id.clone());
        // The Ask, and the Runs it names or named: a Run is listed as an interactive
        // session only while no Ask claims it.
        self.touched.insert(id.to_string());
        self.touched.extend(before.into_iter().chain(after));
        self.report(previous, fresh)
    }

    /// Re-read one Run directory after an event in it (or in its shard).
    pub fn run_changed(&mut self, run_id: &str) -> Vec<Warning> {
        let mut fresh = Vec::new();
        let Some(dir) = self.home.run_dir(run_id) else {
            return fresh;
        };
        let previous = self.take_problems(|p| p.starts_with(&dir));
        self.read_runs(vec![dir], &mut fresh);
        self.touch_run(run_id);
        self.report(previous, fresh)
    }

    /// The session Run an Ask names, if the engine follows it.
    pub fn session_run_of(&self, ask_id: &str) -> Option<String> {
        let run = self.asks.get(ask_id)?.session_run_id.clone()?;
        self.runs.contains_key(&run).then_some(run)
    }

    /// Drop what the files no longer show, when a whole source directory went away.
    pub fn forget_asks(&mut self) {
        self.asks.clear();
    }

    /// A client process of `run_id` exited: judge its liveness again. No file is read; the
    /// client record may linger (a crashed agent leaves it) and that is exactly the case
    /// only liveness can tell.
    pub fn client_exited(&mut self, run_id: &str) {
        if let Some(tracked) = self.runs.get_mut(run_id) {
            tracked.live_pids = self.disk.live_pids(&tracked.run);
        }
        self.touch_run(run_id);
    }

    /// The sessions the files show, as lf would list them.
    pub fn sessions(&self) -> Vec<SessionRecord> {
        let boundary = self.referenced_runs();
        let asks = self
            .asks
            .values()
            .filter_map(|record| self.ask_session(record));
        let runs = self
            .runs
            .iter()
            .filter(|(run_id, _)| !boundary.contains(*run_id))
            .filter_map(|(run_id, tracked)| self.run_session(run_id, tracked));
        asks.chain(runs).collect()
    }

    /// One session the files show, by id: what a change to one record re-derives.
    pub fn session(&self, id: &str) -> Option<SessionRecord> {
        if let Some(record) = self.asks.get(id) {
            return self.ask_session(record);
        }
        let tracked = self.runs.get(id)?;
        let boundary = self
            .asks
            .values()
            .any(|a| a.session_run_id.as_deref() == Some(id));
        if boundary {
            return None;
        }
        self.run_session(id, tracked)
    }

    /// The ids whose listing the changes since the last call may have altered.
    pub fn take_touched(&mut self) -> HashSet<String> {
        std::mem::take(&mut self.touched)
    }

    fn ask_session(&self, record: &AskRecord) -> Option<SessionRecord> {
        if record.completed {
            return None;
        }
        let tracked = record
            .session_run_id
            .as_deref()
            .and_then(|id| self.runs.get(id));
        let state = run::native_state(
            record.ready_summary.as_deref(),
            tracked.map(|t| &t.run),
            tracked.is_some_and(|t| !t.live_pids.is_empty()),
        );
        let mut session = record.session(state, self.open_argv(&record.id));
        session.created_at = tracked.map(|t| t.run.manifest.created_at);
        Some(session)
    }

    fn run_session(&self, run_id: &str, tracked: &Tracked) -> Option<SessionRecord> {
        tracked.run.listed().then(|| {
            tracked
                .run
                .session(!tracked.live_pids.is_empty(), self.open_argv(run_id))
        })
    }

    /// A Run changed: its own session and the Asks it serves may list differently.
    fn touch_run(&mut self, run_id: &str) {
        self.touched.insert(run_id.to_string());
        let asks = self
            .asks
            .values()
            .filter(|a| a.session_run_id.as_deref() == Some(run_id))
            .map(|a| a.id.clone());
        self.touched.extend(asks);
    }

    fn read_asks(&mut self, fresh: &mut Vec<Warning>) {
        self.asks.clear();
        for (id, path) in list_asks(&*self.disk, &self.home.asks_dir(), fresh) {
            self.read_ask_at(&id, &path, fresh);
        }
    }

    fn read_runs(&mut self, dirs: Vec<PathBuf>, fresh: &mut Vec<Warning>) {
        let read = read_runs_parallel(&*self.disk, dirs);
        self.adopt_all(read, fresh);
    }

    fn adopt_all(&mut self, read: Vec<RunReading>, fresh: &mut Vec<Warning>) {
        let referenced = self.referenced_runs();
        for (dir, seen, result) in read {
            self.adopt(dir, seen, result, &referenced, fresh);
        }
    }

    /// `[lf, "session", "open", id]` as lf builds it, with `--` before an id that starts
    /// with `-` so that lf cannot read it as an option.
    fn open_argv(&self, id: &str) -> Vec<String> {
        let mut argv = vec![self.lf.clone(), "session".into(), "open".into()];
        if id.starts_with('-') {
            argv.push("--".into());
        }
        argv.push(id.to_string());
        argv
    }

    fn referenced_runs(&self) -> HashSet<String> {
        self.asks
            .values()
            .filter_map(|a| a.session_run_id.clone())
            .collect()
    }

    fn read_ask_at(&mut self, id: &str, path: &Path, fresh: &mut Vec<Warning>) {
        match self.disk.read_ask(path) {
            Ok(Some(record)) => {
                let new_run = record
                    .session_run_id
                    .clone()
                    .filter(|run_id| !self.runs.contains_key(run_id));
                self.asks.insert(id.to_string(), record);
                // The Ask's session Run decides its state, and is followed from now on.
                if let Some(run_id) = new_run {
                    if let Some(dir) = self.home.run_dir(&run_id) {
                        let referenced = HashSet::from([run_id]);
                        let (seen, result) = read_dated(&*self.disk, &dir);
                        self.adopt(dir, seen, result, &referenced, fresh);
                    }
                }
            }
            Ok(None) => {
                self.asks.remove(id);
            }
            // A record that turned unreadable keeps its last good version listed: a bad
            // write must not close a session the user still needs.
            Err(warning) => fresh.push(warning),
        }
    }

    fn adopt(
        &mut self,
        dir: PathBuf,
        seen: Option<SystemTime>,
        (run, warnings): RunRead,
        referenced: &HashSet<String>,
        fresh: &mut Vec<Warning>,
    ) {
        fresh.extend(warnings);
        let Some(run_id) = dir.file_name().and_then(OsStr::to_str).map(str::to_string) else {
            return;
        };
        match run {
            Some(run) if follows(&run, referenced.contains(&run_id)) => {
                let live_pids = self.disk.live_pids(&run);
                self.inert.remove(&dir);
                self.runs.insert(run_id, Tracked { run, live_pids });
            }
            _ => {
                self.runs.remove(&run_id);
                self.inert.insert(dir, seen);
            }
        }
    }

    /// Remove and return the problems reported for the files about to be read again.
    fn take_problems(&mut self, scope: impl Fn(&Path) -> bool) -> HashMap<PathBuf, String> {
        let (taken, kept) = std::mem::take(&mut self.problems)
            .into_iter()
            .partition(|(path, _)| scope(path));
        self.problems = kept;
        taken
    }

    /// Record the problems of a fresh read; return only those not already reported for
    /// the same file before it.
    fn report(&mut self, previous: HashMap<PathBuf, String>, fresh: Vec<Warning>) -> Vec<Warning> {
        let mut new = Vec::new();
        for warning in fresh {
            let key = warning.path.clone().unwrap_or_default();
            if previous.get(&key) != Some(&warning.message) {
                new.push(warning.clone());
            }
            self.problems.insert(key, warning.message);
        }
        new
    }
}

/// Whether a Run can change a listed session, and so is followed and watched: an
/// interactive Run that is not resolved, or the session Run of an Ask. A finished
/// headless Run (most of a busy home) is read once and then left alone.
fn follows(run: &Run, referenced: bool) -> bool {
    referenced || (run.interactive() && !run.resolved)
}

fn list_asks(disk: &dyn Disk, dir: &Path, fresh: &mut Vec<Warning>) -> Vec<(String, PathBuf)> {
    let entries = match disk.list(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
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
            None if name.to_str().is_none() && !name.as_encoded_bytes().starts_with(b".") => fresh
                .push(Warning::new(
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
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return dirs,
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

pub fn is_hidden(name: &OsStr) -> bool {
    name.as_encoded_bytes().starts_with(b".")
}

/// A Run dir's mtime, taken before it is read so that a change during the read shows at
/// the next reconciliation.
fn read_dated(disk: &dyn Disk, dir: &Path) -> (Option<SystemTime>, RunRead) {
    let seen = disk.stat(dir).and_then(|s| s.modified);
    (seen, disk.read_run(dir))
}

/// What `run::read_run` gives for one directory.
type RunRead = (Option<Run>, Vec<Warning>);

/// One Run directory read, with its mtime from just before.
pub(crate) type RunReading = (PathBuf, Option<SystemTime>, RunRead);

/// Every Run directory with its mtime, and the problems of listing them: what the
/// reconciliation compares ([`Records::stale`]).
pub(crate) type Survey = (Vec<(PathBuf, Option<SystemTime>)>, Vec<Warning>);

pub(crate) fn survey(disk: &dyn Disk, runs_dir: &Path) -> Survey {
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

/// Read many Run directories on every core: the cold scan of a home with thousands of
/// Runs is bound by file system calls, which parallelise well.
pub(crate) fn read_runs_parallel(disk: &dyn Disk, dirs: Vec<PathBuf>) -> Vec<RunReading> {
    let read = |dir: &PathBuf| {
        let (seen, result) = read_dated(disk, dir);
        (dir.clone(), seen, result)
    };
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

#[cfg(test)]
mod tests {
    //! The file half as a person's lf leaves it: records written, replaced, half-written,
    //! unreadable, removed, and a directory that appears late, on a real directory.
    use super::*;
    use crate::session::State;
    use serde_json::{json, Value};
    use std::fs;

    const A1: &str = "ask_11111111111111111111111111111111";
    const A2: &str = "ask_22222222222222222222222222222222";

    struct Files {
        _dir: tempfile::TempDir,
        home: Home,
    }

    impl Files {
        /// A home whose `human-sessions` directory does not exist yet.
        fn empty() -> Files {
            let dir = tempfile::tempdir().unwrap();
            let home = Home::at(dir.path());
            Files { _dir: dir, home }
        }

        fn new() -> Files {
            let files = Files::empty();
            fs::create_dir_all(files.home.asks_dir()).unwrap();
            files
        }

        fn path(&self, id: &str) -> PathBuf {
            self.home.asks_dir().join(format!("{id}.json"))
        }

        /// As lf writes a record: in full, to a temporary name, renamed into place.
        fn write(&self, id: &str, record: &Value) {
            let staged = self.home.asks_dir().join(format!(".{id}.tmp"));
            fs::write(&staged, serde_json::to_vec(record).unwrap()).unwrap();
            fs::rename(&staged, self.path(id)).unwrap();
        }

        /// What a writer that does not rename leaves while it writes.
        fn write_raw(&self, id: &str, bytes: &[u8]) {
            fs::write(self.path(id), bytes).unwrap();
        }

        fn records(&self) -> Records {
            Records::new(self.home.clone(), Some(Path::new("/usr/bin/lf")))
        }
    }

    fn ask(id: &str, title: &str) -> Value {
        crate::ask::test_file(id, title)
    }

    fn titles(records: &Records) -> Vec<(String, String)> {
        let mut listed: Vec<_> = records
            .sessions()
            .into_iter()
            .map(|s| (s.id, s.title))
            .collect();
        listed.sort();
        listed
    }

    fn pair(id: &str, title: &str) -> (String, String) {
        (id.to_string(), title.to_string())
    }

    #[test]
    fn a_record_written_is_a_session_that_lf_opens_by_its_id() {
        let files = Files::new();
        files.write(A1, &ask(A1, "Ship which?"));
        let mut records = files.records();
        assert!(records.rescan().is_empty());
        let session = records.session(A1).unwrap();
        assert_eq!(session.title, "Ship which?");
        assert_eq!(session.state, State::Waiting);
        assert_eq!(session.open_argv, ["/usr/bin/lf", "session", "open", A1]);
    }

    #[test]
    fn a_replaced_record_is_read_again_and_touches_only_its_session() {
        let files = Files::new();
        files.write(A1, &ask(A1, "First"));
        files.write(A2, &ask(A2, "Other"));
        let mut records = files.records();
        records.rescan();
        records.take_touched();
        let mut ready = ask(A1, "First");
        ready["ready_summary"] = json!("Done: shipped");
        files.write(A1, &ready);
        assert!(records.ask_changed(A1).is_empty());
        assert_eq!(records.take_touched(), HashSet::from([A1.to_string()]));
        let session = records.session(A1).unwrap();
        assert_eq!(session.ready_summary.as_deref(), Some("Done: shipped"));
        assert_eq!(session.state, State::Ready);
    }

    #[test]
    fn a_half_written_record_warns_once_and_keeps_its_last_good_version() {
        let files = Files::new();
        files.write(A1, &ask(A1, "Good"));
        let mut records = files.records();
        records.rescan();
        let full = serde_json::to_vec(&ask(A1, "Better")).unwrap();
        files.write_raw(A1, &full[..full.len() / 2]);
        let warned = records.ask_changed(A1);
        assert_eq!(warned.len(), 1, "{warned:?}");
        assert_eq!(warned[0].path.as_deref(), Some(files.path(A1).as_path()));
        assert_eq!(
            titles(&records),
            [pair(A1, "Good")],
            "a bad write closes nothing"
        );
        // The next event on the same broken file says nothing new...
        assert!(records.ask_changed(A1).is_empty());
        // ...the finished write is read...
        files.write_raw(A1, &full);
        assert!(records.ask_changed(A1).is_empty());
        assert_eq!(titles(&records), [pair(A1, "Better")]);
        // ...and a file that breaks again warns again.
        files.write_raw(A1, b"{");
        assert_eq!(records.ask_changed(A1).len(), 1);
    }

    #[test]
    fn one_unreadable_record_hides_none_of_the_others() {
        let files = Files::new();
        files.write(A1, &ask(A1, "Readable"));
        files.write_raw(A2, b"\xff\xfe not json");
        let other = "ask_33333333333333333333333333333333";
        // A record whose id is not its file's name is refused, not listed under either.
        files.write(other, &ask(A1, "Misnamed"));
        let mut records = files.records();
        let warned = records.rescan();
        let mut paths: Vec<_> = warned.iter().filter_map(|w| w.path.clone()).collect();
        paths.sort();
        assert_eq!(paths, [files.path(A2), files.path(other)], "{warned:?}");
        assert_eq!(titles(&records), [pair(A1, "Readable")]);
        // A rescan of the same files repeats no warning.
        assert!(records.rescan().is_empty());
    }

    #[test]
    fn a_removed_record_leaves_the_list() {
        let files = Files::new();
        files.write(A1, &ask(A1, "Gone soon"));
        files.write(A2, &ask(A2, "Stays"));
        let mut records = files.records();
        records.rescan();
        fs::remove_file(files.path(A1)).unwrap();
        assert!(records.ask_changed(A1).is_empty());
        assert_eq!(titles(&records), [pair(A2, "Stays")]);
        assert!(records.session(A1).is_none());
    }

    #[test]
    fn a_completed_record_is_no_session() {
        let files = Files::new();
        let mut done = ask(A1, "Answered");
        done["status"] = json!({"completed": {"summary": "Ship A"}});
        files.write(A1, &done);
        let mut records = files.records();
        assert!(records.rescan().is_empty());
        assert!(records.sessions().is_empty());
    }

    #[test]
    fn a_directory_that_appears_late_is_read_whole() {
        let files = Files::empty();
        let mut records = files.records();
        assert!(records.rescan().is_empty(), "no directory is no problem");
        assert!(records.sessions().is_empty());
        fs::create_dir_all(files.home.asks_dir()).unwrap();
        files.write(A1, &ask(A1, "One"));
        files.write(A2, &ask(A2, "Two"));
        assert!(records.rescan_asks().is_empty());
        assert_eq!(titles(&records), [pair(A1, "One"), pair(A2, "Two")]);
    }

    #[test]
    fn lfs_staging_files_and_other_names_are_no_records() {
        let files = Files::new();
        files.write(A1, &ask(A1, "Real"));
        fs::write(files.home.asks_dir().join(".ask_staging.tmp"), b"{").unwrap();
        fs::write(files.home.asks_dir().join("notes.txt"), b"hello").unwrap();
        let mut records = files.records();
        assert!(records.rescan().is_empty());
        assert_eq!(titles(&records), [pair(A1, "Real")]);
    }
}
