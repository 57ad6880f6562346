//! What the engine knows from lf's files: every Ask record, and the Runs that can change
//! a listed session. Each method takes in only what it is told was read again, so the
//! cost of an event does not grow with the number of Runs in the home. Nothing here reads
//! the machine but [`Records::rescan`], for a reader outside the engine: the engine's file
//! half asks its task for the reads and hands the answers in.

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::event::Warning;
use crate::files::ask::AskRecord;
use crate::files::disk::{AllAsks, AllRuns, AskRead, Disk, Read, Real, RunReading};
use crate::files::run::{self, Run};
use crate::lf::home::Home;
use crate::lf::record::SessionRecord;

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
        Records {
            home,
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

    /// Read both sources from scratch on this machine, now: for a reader that does not
    /// watch (`lf-tray list`, the benchmark's cold scan). Returns the new problems.
    pub fn rescan(&mut self) -> Vec<Warning> {
        let (asks_dir, runs_dir) = (self.home.asks_dir(), self.home.runs_dir());
        let disk: &dyn Disk = &Real;
        let mut answers = disk.answer(vec![
            Read::Asks(asks_dir.clone()),
            Read::AllRuns(runs_dir.clone()),
        ]);
        let asks = answers.take_asks(&asks_dir).unwrap_or_default();
        let runs = answers.take_all_runs(&runs_dir).unwrap_or_default();
        self.rescanned(asks, runs)
    }

    /// Forget everything and take in both sources read from scratch: at start and after
    /// an inotify overflow. Returns the new problems.
    pub(crate) fn rescanned(&mut self, asks: AllAsks, (runs, listing): AllRuns) -> Vec<Warning> {
        let previous = std::mem::take(&mut self.problems);
        let mut fresh = Vec::new();
        self.take_asks(asks, &mut fresh);
        self.runs.clear();
        self.inert.clear();
        fresh.extend(listing);
        self.adopt_all(runs, &mut fresh);
        self.report(previous, fresh)
    }

    /// Every Ask record read again (its directory just appeared), the Runs left as they
    /// are.
    pub(crate) fn asks_rescanned(&mut self, asks: AllAsks) -> Vec<Warning> {
        let asks_dir = self.home.asks_dir();
        let previous = self.take_problems(|path| path.starts_with(&asks_dir));
        let mut fresh = Vec::new();
        self.take_asks(asks, &mut fresh);
        self.report(previous, fresh)
    }

    /// The slow safety net's first half: from every Run dir and its mtime (a survey),
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

    /// The other half: the Asks read again, and the stale Runs as they were read; `fresh`
    /// holds the survey's problems.
    pub(crate) fn reconciled(
        &mut self,
        mut fresh: Vec<Warning>,
        asks: AllAsks,
        read: Vec<RunReading>,
    ) -> Vec<Warning> {
        let asks_dir = self.home.asks_dir();
        let previous = self.take_problems(|path| {
            path.starts_with(&asks_dir) || read.iter().any(|r| path.starts_with(&r.dir))
        });
        self.take_asks(asks, &mut fresh);
        self.adopt_all(read, &mut fresh);
        self.report(previous, fresh)
    }

    /// One Ask record read again after an event on `<asks>/<id>.json`.
    pub(crate) fn ask_changed(&mut self, id: &str, read: AskRead) -> Vec<Warning> {
        let mut fresh = Vec::new();
        let path = self.home.asks_dir().join(format!("{id}.json"));
        let previous = self.take_problems(|p| p == path);
        let before = self.asks.get(id).and_then(|a| a.session_run_id.clone());
        self.take_ask(id, read, &mut fresh);
        let after = self.asks.get(id).and_then(|a| a.session_run_id.clone());
        // The Ask, and the Runs it names or named: a Run is listed as an interactive
        // session only while no Ask claims it.
        self.touched.insert(id.to_string());
        self.touched.extend(before.into_iter().chain(after));
        self.report(previous, fresh)
    }

    /// One Run directory read again after an event in it (or in its shard).
    pub(crate) fn run_changed(&mut self, run_id: &str, read: RunReading) -> Vec<Warning> {
        let mut fresh = Vec::new();
        let previous = self.take_problems(|p| p.starts_with(&read.dir));
        let referenced = self.referenced_runs();
        self.adopt(read, &referenced, &mut fresh);
        self.touch_run(run_id);
        self.report(previous, fresh)
    }

    /// The Run directories that these Asks name as their session and that are not
    /// followed: an Ask's session Run decides its state, and is followed once read.
    pub(crate) fn unfollowed_session_runs<'a>(
        &self,
        asks: impl IntoIterator<Item = &'a String>,
    ) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = asks
            .into_iter()
            .filter_map(|id| self.asks.get(id)?.session_run_id.as_deref())
            .filter(|run_id| !self.runs.contains_key(*run_id))
            .filter_map(|run_id| self.home.run_dir(run_id))
            .collect();
        dirs.sort();
        dirs.dedup();
        dirs
    }

    /// The ids of every Ask record held.
    pub(crate) fn ask_ids(&self) -> Vec<String> {
        self.asks.keys().cloned().collect()
    }

    /// Those session Runs, read: followed from now on (their problems are told each time,
    /// as the Ask that named them was read).
    pub(crate) fn session_runs_read(&mut self, read: Vec<RunReading>) -> Vec<Warning> {
        let mut fresh = Vec::new();
        for reading in read {
            let Some(run_id) = run_id_of(&reading.dir) else {
                continue;
            };
            let referenced = HashSet::from([run_id]);
            self.adopt(reading, &referenced, &mut fresh);
        }
        self.report(HashMap::new(), fresh)
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

    /// A client process of `run_id` exited, and its clients' liveness was judged again
    /// (`live`). No file is read; the client record may linger (a crashed agent leaves
    /// it) and that is exactly the case only liveness can tell.
    pub(crate) fn client_exited(&mut self, run_id: &str, live: Vec<i32>) {
        if let Some(tracked) = self.runs.get_mut(run_id) {
            tracked.live_pids = live;
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

    fn take_asks(&mut self, (read, listing): AllAsks, fresh: &mut Vec<Warning>) {
        self.asks.clear();
        fresh.extend(listing);
        for (id, read) in read {
            self.take_ask(&id, read, fresh);
        }
    }

    fn adopt_all(&mut self, read: Vec<RunReading>, fresh: &mut Vec<Warning>) {
        let referenced = self.referenced_runs();
        for reading in read {
            self.adopt(reading, &referenced, fresh);
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

    fn take_ask(&mut self, id: &str, read: AskRead, fresh: &mut Vec<Warning>) {
        match read {
            Ok(Some(record)) => {
                self.asks.insert(id.to_string(), record);
            }
            Ok(None) => {
                self.asks.remove(id);
            }
            // A record that turned unreadable keeps its last good version listed: a bad
            // write must not close a session the user still needs.
            Err(warning) => fresh.push(warning),
        }
    }

    fn adopt(&mut self, read: RunReading, referenced: &HashSet<String>, fresh: &mut Vec<Warning>) {
        fresh.extend(read.warnings);
        let Some(run_id) = run_id_of(&read.dir) else {
            return;
        };
        match read.run {
            Some(run) if follows(&run, referenced.contains(&run_id)) => {
                self.inert.remove(&read.dir);
                let live_pids = read.live;
                self.runs.insert(run_id, Tracked { run, live_pids });
            }
            _ => {
                self.runs.remove(&run_id);
                self.inert.insert(read.dir, read.seen);
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

fn run_id_of(dir: &Path) -> Option<String> {
    dir.file_name().and_then(OsStr::to_str).map(str::to_string)
}

#[cfg(test)]
mod tests {
    //! The file half as a person's lf leaves it: records written, replaced, half-written,
    //! unreadable, removed, and a directory that appears late, on a real directory.
    use super::*;
    use crate::lf::record::{words, State};
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

        /// An event on one record, read as the engine's task reads it.
        fn changed(&self, records: &mut Records, id: &str) -> Vec<Warning> {
            records.ask_changed(id, crate::files::ask::read_ask(&self.path(id)))
        }

        /// The Ask directory appeared: every record read.
        fn asks_appeared(&self, records: &mut Records) -> Vec<Warning> {
            let dir = self.home.asks_dir();
            let disk: &dyn Disk = &Real;
            let mut answers = disk.answer(vec![Read::Asks(dir.clone())]);
            records.asks_rescanned(answers.take_asks(&dir).unwrap())
        }
    }

    fn ask(id: &str, title: &str) -> Value {
        crate::files::ask::test_file(id, title)
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
        assert_eq!(
            words(&session.open_argv),
            ["/usr/bin/lf", "session", "open", A1]
        );
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
        assert!(files.changed(&mut records, A1).is_empty());
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
        let warned = files.changed(&mut records, A1);
        assert_eq!(warned.len(), 1, "{warned:?}");
        assert_eq!(warned[0].path.as_deref(), Some(files.path(A1).as_path()));
        assert_eq!(
            titles(&records),
            [pair(A1, "Good")],
            "a bad write closes nothing"
        );
        // The next event on the same broken file says nothing new...
        assert!(files.changed(&mut records, A1).is_empty());
        // ...the finished write is read...
        files.write_raw(A1, &full);
        assert!(files.changed(&mut records, A1).is_empty());
        assert_eq!(titles(&records), [pair(A1, "Better")]);
        // ...and a file that breaks again warns again.
        files.write_raw(A1, b"{");
        assert_eq!(files.changed(&mut records, A1).len(), 1);
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
        assert!(files.changed(&mut records, A1).is_empty());
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
        assert!(files.asks_appeared(&mut records).is_empty());
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
