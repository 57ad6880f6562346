//! Replay cases for the file half: lf's files as data, the engine's own [`FileSide`]
//! reading and watching them, and the [`Core`] deciding what to tell. The disk is a few
//! maps; a directory under watch reports what happens in it as inotify would (lf's
//! temporary and rename, a writer that does not rename, the tray's own reads), and one
//! not watched reports nothing. Each case edits the disk, delivers what inotify said or a
//! process's exit as the task would, and looks at what the engine then told, read,
//! watched and asked the task to do.

use std::collections::{HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use notify::event::{
    AccessKind, AccessMode, CreateKind, DataChange, Flag, MetadataKind, ModifyKind, RemoveKind,
    RenameMode,
};
use notify::EventKind;
use serde_json::{json, Value};
use tokio::time::Instant;

use super::core::{Command, Core, Exit, Input, Now, Out};
use super::files::{FileCommand, FileInput, FileSide, Hands};
use super::task::db_stamp;
use super::SAFETY_INTERVAL;
use crate::event::{Event, Warning};
use crate::files::ask::{self, AskRecord};
use crate::files::disk::{Answers, Disk, Entry, Read, Stat};
use crate::files::liveness::ProviderClient;
use crate::files::run::{Manifest, Run};
use crate::files::watch::{Batch, DirWatcher};
use crate::lf::home::Home;
use crate::lf::record::State;

const HOME: &str = "/home/me/.lf";
const A1: &str = "ask_11111111111111111111111111111111";
const A2: &str = "ask_22222222222222222222222222222222";
const R1: &str = "run_0f000000000000000000000000000001";
const R2: &str = "run_0f000000000000000000000000000002";
/// What the fake says of a record it cannot read, as the OS says it.
const DENIED: &str = "Permission denied (os error 13)";

type Meanwhile = Box<dyn FnOnce(&mut Tree) + Send>;

/// The machine as data.
#[derive(Default)]
struct Tree {
    /// Directories, with their inode numbers.
    dirs: HashMap<PathBuf, u64>,
    /// When Run directories last changed (the others are left without).
    modified: HashMap<PathBuf, SystemTime>,
    next_inode: u64,
    /// Ask record files (and lf's temporaries beside them): their bytes, or why they
    /// cannot be read.
    asks: HashMap<PathBuf, Result<Vec<u8>, String>>,
    /// Run directories, as `run::read_run` reads them.
    runs: HashMap<PathBuf, Run>,
    /// The pids that run.
    live: HashSet<i32>,
    watched: HashSet<PathBuf>,
    /// Directories inotify refuses to watch (`EACCES`), though they exist.
    refused: HashSet<PathBuf>,
    /// What happens once, when the task next puts watches in place: after the file half
    /// looked, before its watches are there.
    meanwhile: Option<Meanwhile>,
    /// What inotify has to tell, in order.
    events: Vec<notify::Event>,
    /// Every record the engine read (an Ask file or a Run directory), in order.
    reads: Vec<PathBuf>,
}

impl Tree {
    /// inotify tells what happens in a watched directory, and to the directory itself.
    fn report(&mut self, kind: EventKind, paths: &[&Path]) {
        let seen = paths.iter().any(|p| {
            self.watched.contains(*p) || p.parent().is_some_and(|d| self.watched.contains(d))
        });
        if seen {
            let event = paths
                .iter()
                .fold(notify::Event::new(kind), |e, p| e.add_path(p.to_path_buf()));
            self.events.push(event);
        }
    }

    /// `mkdir -p`: each directory made is told in its parent.
    fn mkdir(&mut self, dir: &Path) {
        let mut missing: Vec<&Path> = dir
            .ancestors()
            .take_while(|d| !self.dirs.contains_key(*d))
            .collect();
        missing.reverse();
        for made in missing {
            self.next_inode += 1;
            self.dirs.insert(made.to_path_buf(), self.next_inode);
            self.report(EventKind::Create(CreateKind::Folder), &[made]);
        }
    }

    /// `rm -r`: the directory's removal is told; the kernel drops the watches under it.
    fn remove_dir(&mut self, dir: &Path) {
        self.report(EventKind::Remove(RemoveKind::Folder), &[dir]);
        self.dirs.retain(|d, _| !d.starts_with(dir));
        self.asks.retain(|p, _| !p.starts_with(dir));
        self.runs.retain(|d, _| !d.starts_with(dir));
        self.watched.retain(|d| !d.starts_with(dir));
    }

    /// A Run lf prepared: staged beside its shard's Runs, then renamed into place.
    fn add_run(&mut self, run: Run) {
        let shard = run.dir.parent().unwrap().to_path_buf();
        self.mkdir(&shard);
        let name = run.dir.file_name().unwrap().to_str().unwrap();
        let staged = shard.join(format!(".{name}.staging"));
        self.next_inode += 1;
        let inode = self.next_inode;
        self.dirs.insert(run.dir.clone(), inode);
        if run.has_clients_dir {
            self.next_inode += 1;
            let inode = self.next_inode;
            self.dirs.insert(run.dir.join("provider-clients"), inode);
        }
        self.live.extend(run.clients.iter().map(|c| c.pid));
        self.modified.insert(run.dir.clone(), epoch());
        let renamed = EventKind::Modify(ModifyKind::Name(RenameMode::Both));
        self.report(renamed, &[&staged, &run.dir]);
        self.runs.insert(run.dir.clone(), run);
    }

    /// lf opens a headless Run interactively: `provider-clients/` is made in it, which
    /// changes the Run directory's mtime; told to no one, since a finished Run is not
    /// watched.
    fn open_interactively(&mut self, run_id: &str) {
        let dir = Home::at(HOME).run_dir(run_id).unwrap();
        self.mkdir(&dir.join("provider-clients"));
        self.runs.get_mut(&dir).unwrap().has_clients_dir = true;
        self.modified.insert(dir, epoch() + Duration::from_secs(60));
    }

    /// As lf writes an Ask record: in full, to a temporary name, renamed into place.
    fn write(&mut self, id: &str, record: &Value) {
        let asks = Home::at(HOME).asks_dir();
        let path = asks.join(format!("{id}.json"));
        let staged = asks.join(format!("{id}.0f3a9c2e.tmp"));
        self.asks
            .insert(staged.clone(), Ok(serde_json::to_vec(record).unwrap()));
        self.report(EventKind::Create(CreateKind::File), &[&staged]);
        let written = EventKind::Access(AccessKind::Close(AccessMode::Write));
        self.report(written, &[&staged]);
        let bytes = self.asks.remove(&staged).unwrap();
        self.asks.insert(path.clone(), bytes);
        let renamed = EventKind::Modify(ModifyKind::Name(RenameMode::Both));
        self.report(renamed, &[&staged, &path]);
    }

    /// The tray's own read of a record, which inotify tells like anyone's.
    fn opened(&mut self, path: &Path) {
        self.reads.push(path.to_path_buf());
        let open = EventKind::Access(AccessKind::Open(AccessMode::Any));
        let closed = EventKind::Access(AccessKind::Close(AccessMode::Read));
        self.report(open, &[path]);
        self.report(closed, &[path]);
    }
}

/// The disk and the watcher of one replay, over one tree.
#[derive(Clone, Default)]
struct Fake(Arc<Mutex<Tree>>);

impl std::fmt::Debug for Fake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Fake")
    }
}

impl Fake {
    fn tree(&self) -> MutexGuard<'_, Tree> {
        self.0.lock().unwrap()
    }
}

impl Disk for Fake {
    fn stat(&self, path: &Path) -> Option<Stat> {
        let tree = self.tree();
        let stat = |dir, len, inode| Stat {
            dir,
            len,
            modified: tree.modified.get(path).copied(),
            inode,
        };
        if let Some(inode) = tree.dirs.get(path) {
            return Some(stat(true, 0, *inode));
        }
        let file = tree.asks.get(path)?;
        Some(stat(false, file.as_ref().map_or(0, |b| b.len() as u64), 0))
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<Entry>> {
        let tree = self.tree();
        if !tree.dirs.contains_key(dir) {
            return Err(io::ErrorKind::NotFound.into());
        }
        let dirs = tree.dirs.keys().map(|d| (d, true));
        let files = tree.asks.keys().map(|f| (f, false));
        Ok(dirs
            .chain(files)
            .filter(|(p, _)| p.parent() == Some(dir))
            .map(|(p, is_dir)| Entry {
                name: p.file_name().unwrap().to_owned(),
                dir: is_dir,
            })
            .collect())
    }

    fn read_ask(&self, path: &Path) -> Result<Option<AskRecord>, Warning> {
        let mut tree = self.tree();
        tree.opened(path);
        match tree.asks.get(path) {
            None => Ok(None),
            Some(Ok(bytes)) => ask::decode_ask(path, bytes).map(Some),
            Some(Err(why)) => Err(Warning::new(
                Some(path.to_path_buf()),
                format!("Ask record cannot be read: {why}"),
            )),
        }
    }

    fn read_run(&self, dir: &Path) -> (Option<Run>, Vec<Warning>) {
        let mut tree = self.tree();
        tree.opened(&dir.join("manifest.json"));
        tree.reads.pop();
        tree.reads.push(dir.to_path_buf());
        (tree.runs.get(dir).cloned(), Vec::new())
    }

    fn live_pids(&self, run: &Run) -> Vec<i32> {
        let tree = self.tree();
        run.clients
            .iter()
            .map(|c| c.pid)
            .filter(|pid| tree.live.contains(pid))
            .collect()
    }

    fn canonical(&self, path: &Path) -> Option<PathBuf> {
        Some(path.to_path_buf())
    }
}

/// The watcher: a directory is watched if it exists, as inotify's `add_watch` wants.
struct Inotify(Fake);

impl DirWatcher for Inotify {
    fn watch(&mut self, dir: &Path) -> notify::Result<()> {
        let mut tree = self.0.tree();
        if !tree.dirs.contains_key(dir) {
            return Err(notify::Error::path_not_found().add_path(dir.to_path_buf()));
        }
        if tree.refused.contains(dir) {
            let denied = io::Error::from(io::ErrorKind::PermissionDenied);
            return Err(notify::Error::io(denied).add_path(dir.to_path_buf()));
        }
        tree.watched.insert(dir.to_path_buf());
        Ok(())
    }
    fn unwatch(&mut self, dir: &Path) {
        self.0.tree().watched.remove(dir);
    }
}

/// The task's hands over the fake: every watch and read carried out as the task does,
/// and noted for [`Replay::asked`]; none once the task is ending.
struct Carrying<'a> {
    disk: &'a Fake,
    inotify: &'a mut Inotify,
    asked: &'a mut Vec<FileCommand>,
    ending: bool,
}

impl Hands for Carrying<'_> {
    fn watch(&mut self, dir: &Path) -> bool {
        if self.ending {
            return true;
        }
        let meanwhile = self.disk.tree().meanwhile.take();
        if let Some(meanwhile) = meanwhile {
            meanwhile(&mut self.disk.tree());
        }
        self.asked.push(FileCommand::Watch(dir.to_path_buf()));
        self.inotify.watch(dir).is_ok()
    }

    fn unwatch(&mut self, dir: &Path) {
        if self.ending {
            return;
        }
        self.asked.push(FileCommand::Unwatch(dir.to_path_buf()));
        self.inotify.unwatch(dir);
    }

    fn read(&mut self, reads: Vec<Read>) -> Option<Answers> {
        if self.ending {
            return None;
        }
        self.asked.push(FileCommand::Read(reads.clone()));
        let disk: &dyn Disk = self.disk;
        Some(disk.answer(reads))
    }
}

/// One engine's file half and core over a fake disk, driven as the task drives them.
struct Replay {
    core: Core,
    files: FileSide,
    disk: Fake,
    /// The watcher, as the task holds it.
    inotify: Inotify,
    home: Home,
    t0: Instant,
    steps: u32,
    /// The exit watches the task holds, by pid.
    exits: HashMap<i32, Exit>,
    commands: Vec<Command>,
    /// The watches and reads the file half asked for, as carried out.
    file_commands: Vec<FileCommand>,
    events: Vec<Event>,
    /// Every handle on the engine is gone: the task carries out nothing more.
    ending: bool,
}

impl Replay {
    /// An engine (generation A's files, no lf) started on the disk `setup` leaves.
    fn start(setup: impl FnOnce(&mut Replay)) -> Replay {
        let disk = Fake::default();
        let home = Home::at(HOME);
        let inotify = Inotify(disk.clone());
        let files = FileSide::new(home.clone(), Some(Path::new("/usr/bin/lf")));
        let t0 = Instant::now();
        let now = Now {
            mono: t0,
            wall: SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000),
            db: db_stamp(&disk, &home),
        };
        let core = // No lf is followed here, so there is no quiet time to override.
        Core::new(now, None, SAFETY_INTERVAL, None);
        let mut r = Replay {
            core,
            files,
            disk,
            inotify,
            home,
            t0,
            steps: 0,
            exits: HashMap::new(),
            commands: Vec::new(),
            file_commands: Vec::new(),
            events: Vec::new(),
            ending: false,
        };
        r.disk.tree().mkdir(Path::new("/home/me"));
        setup(&mut r);
        // What lf did before the tray started was told to no one.
        r.disk.tree().events.clear();
        // As the task starts: watch, then read, then the first snapshot.
        let files = r.core.files();
        r.take(FileInput::Start { files });
        let now = r.now();
        let out = r.core.open(now, &mut r.files);
        r.out(out);
        r
    }

    fn now(&mut self) -> Now {
        self.steps += 1;
        let since = Duration::from_secs(self.steps.into());
        Now {
            mono: self.t0 + since,
            wall: SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000) + since,
            db: db_stamp(&self.disk, &self.home),
        }
    }

    fn feed_all(&mut self, inputs: Vec<Input>) {
        for input in inputs {
            let now = self.now();
            self.core.absorb(now, input);
        }
    }

    fn wake(&mut self) {
        let now = self.now();
        let out = self.core.wake(now, &mut self.files);
        self.out(out);
    }

    fn out(&mut self, out: Out) {
        self.commands.extend(out.commands);
        self.events.extend(out.events);
    }

    /// The file half takes in what happened, as the task hands it: its watches and reads
    /// carried out on the fake, then its exit watches, then what it found to the core.
    fn take(&mut self, input: FileInput) {
        let mut hands = Carrying {
            disk: &self.disk,
            inotify: &mut self.inotify,
            asked: &mut self.file_commands,
            ending: self.ending,
        };
        let out = self.files.drive(input, &mut hands);
        if !self.ending {
            for command in out.exits {
                match &command {
                    Command::WatchExit {
                        exit: exit @ Exit::Client { pid, .. },
                        ..
                    } => {
                        self.exits.insert(*pid, exit.clone());
                    }
                    Command::UnwatchExit(Exit::Client { pid, .. }) => {
                        self.exits.remove(pid);
                    }
                    _ => {}
                }
                self.commands.push(command);
            }
        }
        self.feed_all(out.inputs);
    }

    /// Everything inotify has to tell, taken as one batch, then the core's wake-up.
    fn deliver(&mut self) -> &mut Replay {
        let events = std::mem::take(&mut self.disk.tree().events);
        let mut batch = Batch::default();
        for event in events {
            self.files.route(event, &mut batch);
        }
        let files = self.core.files();
        self.take(FileInput::Batch { batch, files });
        self.wake();
        self
    }

    /// The process `pid` ends; if it is watched, the task hears of it.
    fn kill(&mut self, pid: i32) -> &mut Replay {
        self.disk.tree().live.remove(&pid);
        if let Some(Exit::Client { run, .. }) = self.exits.remove(&pid) {
            self.take(FileInput::ClientExited(run));
            self.wake();
        }
        self
    }

    fn ask_path(&self, id: &str) -> PathBuf {
        self.home.asks_dir().join(format!("{id}.json"))
    }

    /// As lf writes a record: in full, to a temporary name, renamed into place.
    fn write(&mut self, id: &str, record: &Value) -> &mut Replay {
        self.disk.tree().write(id, record);
        self
    }

    /// What a writer that does not rename leaves in place.
    fn write_raw(&mut self, id: &str, bytes: &[u8]) -> &mut Replay {
        let path = self.ask_path(id);
        let mut tree = self.disk.tree();
        tree.asks.insert(path.clone(), Ok(bytes.to_vec()));
        let modified = EventKind::Modify(ModifyKind::Data(DataChange::Content));
        tree.report(modified, &[&path]);
        drop(tree);
        self
    }

    /// `chmod 000`: the record is there, and cannot be read.
    fn lock_out(&mut self, id: &str) -> &mut Replay {
        let path = self.ask_path(id);
        let mut tree = self.disk.tree();
        tree.asks.insert(path.clone(), Err(DENIED.into()));
        let chmod = EventKind::Modify(ModifyKind::Metadata(MetadataKind::Permissions));
        tree.report(chmod, &[&path]);
        drop(tree);
        self
    }

    fn remove(&mut self, id: &str) -> &mut Replay {
        let path = self.ask_path(id);
        let mut tree = self.disk.tree();
        tree.asks.remove(&path);
        tree.report(EventKind::Remove(RemoveKind::File), &[&path]);
        drop(tree);
        self
    }

    fn mkdir(&mut self, dir: &Path) -> &mut Replay {
        self.disk.tree().mkdir(dir);
        self
    }

    /// A Run lf prepared: staged beside its shard's Runs, then renamed into place.
    fn add_run(&mut self, run: Run) -> &mut Replay {
        self.disk.tree().add_run(run);
        self
    }

    /// What happens when the task next puts watches in place, before they are there.
    fn meanwhile(&mut self, happen: impl FnOnce(&mut Tree) + Send + 'static) -> &mut Replay {
        self.disk.tree().meanwhile = Some(Box::new(happen));
        self
    }

    /// The slow safety net's turn.
    fn reconcile(&mut self) -> &mut Replay {
        let files = self.core.files();
        self.take(FileInput::Reconcile { files });
        self.wake();
        self
    }

    /// lf removes a client's record as its terminal closes.
    fn client_left(&mut self, run_id: &str, pid: i32) -> &mut Replay {
        let dir = self.home.run_dir(run_id).unwrap();
        let mut tree = self.disk.tree();
        let run = tree.runs.get_mut(&dir).unwrap();
        run.clients.retain(|c| c.pid != pid);
        let file = dir.join("provider-clients").join(format!("{pid}.json"));
        tree.report(EventKind::Remove(RemoveKind::File), &[&file]);
        drop(tree);
        self
    }

    /// inotify's queue overflowed: what happened is lost, only that something did.
    fn overflow(&mut self) -> &mut Replay {
        let lost = notify::Event::new(EventKind::Other).set_flag(Flag::Rescan);
        self.disk.tree().events.push(lost);
        self
    }

    /// The records read since the last look, as `file` names (Run dirs by their name).
    fn reads(&mut self) -> Vec<String> {
        std::mem::take(&mut self.disk.tree().reads)
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect()
    }

    fn watches(&self, dir: &Path) -> bool {
        self.disk.tree().watched.contains(dir)
    }

    /// The exit watches given and let go of since the last look, as `watch pid` /
    /// `unwatch pid`.
    fn exit_watches(&mut self) -> Vec<String> {
        self.file_commands.clear();
        std::mem::take(&mut self.commands)
            .into_iter()
            .filter_map(|c| match c {
                Command::WatchExit {
                    exit: Exit::Client { pid, .. },
                    ..
                } => Some(format!("watch {pid}")),
                Command::UnwatchExit(Exit::Client { pid, .. }) => Some(format!("unwatch {pid}")),
                _ => None,
            })
            .collect()
    }

    /// The watches and reads asked for since the last look, in order, each path by its
    /// name: `watch NAME`, `list NAME`, `read NAME` (an Ask file or a Run dir), `live RUN`.
    /// How paths look (the looks for the sources) is left out.
    fn asked(&mut self) -> Vec<String> {
        let name = |p: &Path| p.file_name().unwrap().to_string_lossy().into_owned();
        let mut asked = Vec::new();
        self.commands.clear();
        for command in std::mem::take(&mut self.file_commands) {
            match command {
                FileCommand::Watch(dir) => asked.push(format!("watch {}", name(&dir))),
                FileCommand::Unwatch(dir) => asked.push(format!("unwatch {}", name(&dir))),
                FileCommand::Read(reads) => {
                    for read in reads {
                        match read {
                            Read::Stat(_) => {}
                            Read::List(dir) => asked.push(format!("list {}", name(&dir))),
                            Read::Ask(path) => asked.push(format!("read {}", name(&path))),
                            Read::Runs(dirs) => {
                                asked.extend(dirs.iter().map(|d| format!("read {}", name(d))))
                            }
                            Read::Live(run) => asked.push(format!("live {}", name(&run.dir))),
                            other => asked.push(format!("{other:?}")),
                        }
                    }
                }
            }
        }
        asked
    }

    /// The warnings published since the last look.
    fn warnings(&mut self) -> Vec<String> {
        let (warnings, rest): (Vec<Event>, Vec<Event>) = std::mem::take(&mut self.events)
            .into_iter()
            .partition(|e| matches!(e, Event::Warning { .. }));
        self.events = rest;
        warnings
            .into_iter()
            .filter_map(|e| match e {
                Event::Warning { message, .. } => Some(message),
                _ => None,
            })
            .collect()
    }

    /// The other events since the last look, as `kind id` in order (a snapshot as the ids
    /// it holds, sorted).
    fn told(&mut self) -> Vec<String> {
        std::mem::take(&mut self.events)
            .into_iter()
            .filter_map(|e| {
                let kind = match &e {
                    Event::Snapshot { sessions, .. } => {
                        let mut ids: Vec<&str> = sessions.iter().map(|s| s.id.as_str()).collect();
                        ids.sort_unstable();
                        return Some(format!("snapshot [{}]", ids.join(" ")));
                    }
                    Event::Warning { .. } => return None,
                    _ => e.kind(),
                };
                Some(format!("{kind} {}", e.session()?.id))
            })
            .collect()
    }

    /// The state of a listed session.
    fn state(&mut self, id: &str) -> Option<State> {
        use super::core::FileView;
        self.files.session(id).map(|s| s.state)
    }
}

fn ask(id: &str, title: &str) -> Value {
    crate::files::ask::test_file(id, title)
}

fn ready(id: &str, summary: &str) -> Value {
    let mut record = ask(id, "Ship which?");
    record["ready_summary"] = json!(summary);
    record
}

/// An interactive Run with a provider session to resume, and these client processes.
fn conversation(id: &str, pids: &[i32]) -> Run {
    let dir = Home::at(HOME).run_dir(id).unwrap();
    let clients = pids
        .iter()
        .map(|&pid| ProviderClient {
            pid,
            started_at: 1_800_000_000,
            path: dir.join("provider-clients").join(format!("{pid}.json")),
        })
        .collect();
    Run {
        dir,
        manifest: Manifest {
            run_id: id.into(),
            parent_run_id: None,
            created_at: 1_800_000_000,
            harness: "claude".into(),
            model: None,
            surface: "tui".into(),
            cwd: "/src/app".into(),
            skill: None,
            subjects: Vec::new(),
        },
        has_clients_dir: true,
        resolved: false,
        provider_session: true,
        title: "Fix the build".into(),
        clients,
    }
}

/// A Run that ran without a terminal and finished: read once, then left alone.
fn headless(id: &str) -> Run {
    let mut run = conversation(id, &[]);
    run.manifest.surface = "headless".into();
    run.has_clients_dir = false;
    run
}

/// When the replay's disk was made.
fn epoch() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

/// A home with `human-sessions/` and `runs/`.
fn home(r: &mut Replay) {
    r.mkdir(&Home::at(HOME).asks_dir());
    r.mkdir(&Home::at(HOME).runs_dir());
}

// Records written, replaced, half-written, unreadable and removed.

#[test]
fn a_record_written_is_read_once_and_asked_once() {
    let mut r = Replay::start(home);
    assert_eq!(r.told(), ["snapshot []"]);
    r.write(A1, &ask(A1, "Ship which?")).deliver();
    assert_eq!(
        r.reads(),
        [format!("{A1}.json")],
        "lf's temporary is not read"
    );
    assert_eq!(r.told(), [format!("asked {A1}")]);
}

#[test]
fn the_trays_own_reads_come_back_as_events_and_wake_nothing() {
    // Reading a record opens and closes it in a watched directory, which inotify tells
    // like anyone's access: were that a change, the tray would read forever.
    let mut r = Replay::start(home);
    r.write(A1, &ask(A1, "Ship which?")).deliver();
    r.reads();
    r.told();
    assert!(!r.disk.tree().events.is_empty(), "the read was seen");
    r.deliver();
    assert!(r.reads().is_empty());
    assert!(r.told().is_empty());
    assert!(r.disk.tree().events.is_empty(), "and nothing more");
}

#[test]
fn a_replaced_record_is_its_next_transition_and_touches_no_other() {
    let mut r = Replay::start(|r| {
        home(r);
        r.write(A1, &ask(A1, "Ship which?"));
        r.write(A2, &ask(A2, "Other"));
    });
    r.reads();
    assert_eq!(r.told(), [format!("snapshot [{A1} {A2}]")]);
    r.write(A1, &ready(A1, "Shipped A")).deliver();
    assert_eq!(r.reads(), [format!("{A1}.json")]);
    assert_eq!(r.told(), [format!("ready {A1}")]);
}

#[test]
fn a_half_written_record_warns_once_keeps_its_session_and_is_read_when_finished() {
    let mut r = Replay::start(|r| {
        home(r);
        r.write(A1, &ask(A1, "Ship which?"));
    });
    r.told();
    let full = serde_json::to_vec(&ready(A1, "Shipped A")).unwrap();
    r.write_raw(A1, &full[..full.len() / 2]).deliver();
    let warned = r.warnings();
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(
        warned[0].starts_with("Ask record is not valid JSON"),
        "{warned:?}"
    );
    assert!(r.told().is_empty(), "a bad write closes nothing");
    assert_eq!(r.state(A1), Some(State::Waiting));
    // Another event on the same broken file (the writer closing it) says nothing new...
    r.write_raw(A1, &full[..full.len() / 2]).deliver();
    assert!(r.warnings().is_empty());
    // ...and the finished write is the session's next transition.
    r.write_raw(A1, &full).deliver();
    assert!(r.warnings().is_empty());
    assert_eq!(r.told(), [format!("ready {A1}")]);
}

#[test]
fn an_unreadable_record_warns_keeps_its_session_and_hides_no_other() {
    let mut r = Replay::start(|r| {
        home(r);
        r.write(A1, &ask(A1, "Ship which?"));
        r.write(A2, &ask(A2, "Other"));
    });
    r.told();
    r.lock_out(A1).deliver();
    assert_eq!(
        r.warnings(),
        [format!("Ask record cannot be read: {DENIED}")]
    );
    assert!(r.told().is_empty());
    assert_eq!(r.state(A1), Some(State::Waiting));
    r.write(A2, &ready(A2, "Done")).deliver();
    assert_eq!(r.told(), [format!("ready {A2}")]);
    assert!(r.warnings().is_empty(), "told once, not at every event");
}

#[test]
fn a_removed_record_is_resolved() {
    let mut r = Replay::start(|r| {
        home(r);
        r.write(A1, &ask(A1, "Ship which?"));
    });
    r.told();
    r.remove(A1).deliver();
    assert_eq!(r.told(), [format!("resolved {A1}")]);
    assert_eq!(r.state(A1), None);
}

// Directories that appear after the tray started.

#[test]
fn a_directory_made_late_is_watched_and_read_with_what_was_written_before_its_watch() {
    // lf makes `human-sessions/` and writes a record into it at once: the record's events
    // come before the directory is watched, and are lost. The directory's own event is
    // seen (its parent is watched), and reading it whole finds the record.
    let mut r = Replay::start(|_| {});
    let home = Path::new(HOME);
    let asks = Home::at(HOME).asks_dir();
    assert!(
        r.watches(Path::new("/home/me")),
        "the nearest existing ancestor"
    );
    r.mkdir(home);
    r.deliver();
    assert!(r.watches(home) && !r.watches(Path::new("/home/me")));
    r.mkdir(&asks).write(A1, &ask(A1, "Ship which?"));
    r.deliver();
    assert!(r.watches(&asks));
    assert_eq!(r.told(), ["snapshot []".to_string(), format!("asked {A1}")]);
}

#[test]
fn a_home_made_in_one_go_is_found_whole_from_the_watch_above_it() {
    // `mkdir -p ~/.lf/human-sessions` and a record, all before the tray's next look: only
    // `.lf` is told, in the one directory watched; the engine looks again after each
    // watch until what it watches is what exists.
    let mut r = Replay::start(|_| {});
    let asks = Home::at(HOME).asks_dir();
    r.mkdir(&asks).write(A1, &ask(A1, "Ship which?"));
    r.deliver();
    assert!(r.watches(&asks) && r.watches(Path::new(HOME)));
    assert_eq!(r.told(), ["snapshot []".to_string(), format!("asked {A1}")]);
}

#[test]
fn a_source_directory_removed_lets_its_watch_go_and_resolves_its_sessions() {
    let mut r = Replay::start(|r| {
        home(r);
        r.write(A1, &ask(A1, "Ship which?"));
    });
    r.told();
    let asks = Home::at(HOME).asks_dir();
    r.disk.tree().remove_dir(&asks);
    r.deliver();
    assert!(!r.watches(&asks));
    assert_eq!(r.told(), [format!("resolved {A1}")]);
    // Made again (a new inode): watched anew, and read.
    r.mkdir(&asks).deliver();
    r.write(A1, &ask(A1, "Back")).deliver();
    assert!(r.watches(&asks));
    assert_eq!(r.told(), [format!("asked {A1}")]);
}

#[test]
fn a_directory_made_between_a_look_and_its_watch_is_found_by_the_look_after_the_watch() {
    // The file half sees `.lf` made and asks to watch it; before the task has put that
    // watch in place, lf makes `human-sessions/` inside and writes a record, told to no
    // one. The task carries out the watch before anything else reaches the engine, and
    // only then does the file half look again: it finds the directory, watches it, and
    // reads the record.
    let mut r = Replay::start(|_| {});
    r.told();
    let asks = Home::at(HOME).asks_dir();
    let made = asks.clone();
    r.mkdir(Path::new(HOME)).meanwhile(move |tree| {
        tree.mkdir(&made);
        tree.write(A1, &ask(A1, "Ship which?"));
    });
    r.deliver();
    assert!(r.watches(Path::new(HOME)) && r.watches(&asks));
    assert_eq!(r.reads(), [format!("{A1}.json")]);
    assert_eq!(r.told(), [format!("asked {A1}")]);
}

#[test]
fn a_directory_that_cannot_be_watched_is_still_read_tells_nothing_and_is_asked_for_again() {
    // inotify refuses `human-sessions/` (`EACCES`): its records are read all the same,
    // nobody is warned, and what is written there is seen at the next look, which asks
    // for the watch again.
    let asks = Home::at(HOME).asks_dir();
    let refused = asks.clone();
    let mut r = Replay::start(move |r| {
        home(r);
        r.write(A1, &ask(A1, "Ship which?"));
        r.disk.tree().refused.insert(refused);
    });
    assert!(r.warnings().is_empty());
    assert_eq!(r.told(), [format!("snapshot [{A1}]")]);
    assert!(!r.watches(&asks));
    r.write(A2, &ask(A2, "Other")).deliver();
    assert!(r.told().is_empty(), "no event came");
    r.disk.tree().refused.clear();
    r.reconcile();
    assert!(r.watches(&asks), "asked for again");
    assert_eq!(r.told(), [format!("asked {A2}")]);
    r.write(A1, &ready(A1, "Shipped A")).deliver();
    assert_eq!(r.told(), [format!("ready {A1}")]);
    assert!(r.warnings().is_empty());
}

// Bursts and lost events.

#[test]
fn a_burst_on_one_record_reads_it_once_and_tells_once() {
    let mut r = Replay::start(home);
    r.told();
    for title in ["One", "Two", "Three", "Four", "Five"] {
        r.write(A1, &ask(A1, title));
    }
    r.deliver();
    assert_eq!(r.reads(), [format!("{A1}.json")]);
    assert_eq!(r.told(), [format!("asked {A1}")]);
}

#[test]
fn lost_events_read_everything_again_and_tell_only_what_changed() {
    let mut r = Replay::start(|r| {
        home(r);
        r.write(A1, &ask(A1, "Ship which?"));
        r.write(A2, &ask(A2, "Other"));
    });
    r.told();
    r.reads();
    r.write(A1, &ready(A1, "Shipped A"));
    r.disk.tree().events.clear();
    r.overflow().deliver();
    let mut reads = r.reads();
    reads.sort();
    assert_eq!(reads, [format!("{A1}.json"), format!("{A2}.json")]);
    assert_eq!(r.told(), [format!("ready {A1}")]);
}

// Runs and their client processes.

#[test]
fn a_run_in_a_new_shard_is_watched_followed_and_read_again_after_its_watch() {
    // The shard's event is seen in `runs/`; the Run's own rename inside it is not (the
    // shard was not watched yet). Listing the shard finds it; once its directory is
    // watched it is read once more, so a write between the read and the watch is not lost.
    let mut r = Replay::start(home);
    r.told();
    r.add_run(conversation(R1, &[4242])).deliver();
    assert!(r.watches(&Home::at(HOME).runs_dir().join("0f")));
    let dir = Home::at(HOME).run_dir(R1).unwrap();
    assert!(r.watches(&dir) && r.watches(&dir.join("provider-clients")));
    assert_eq!(r.reads(), [R1, R1]);
    assert_eq!(r.told(), [format!("appeared {R1}")]);
    assert_eq!(r.exit_watches(), ["watch 4242"]);
    assert_eq!(r.state(R1), Some(State::Active));
}

#[test]
fn a_run_made_while_its_new_shards_watch_is_put_in_place_is_found_by_listing_after_it() {
    // `runs/0f/` is made (told in `runs/`) and, before its watch is there, a Run is
    // renamed into it (told to no one): the shard is listed once its watch is in place.
    let mut r = Replay::start(home);
    r.told();
    let shard = Home::at(HOME).runs_dir().join("0f");
    r.mkdir(&shard)
        .meanwhile(|tree| tree.add_run(conversation(R1, &[4242])));
    r.deliver();
    assert!(r.watches(&shard));
    assert_eq!(r.told(), [format!("appeared {R1}")]);
    assert_eq!(r.state(R1), Some(State::Active));
}

#[test]
fn a_client_that_exits_leaves_its_conversation_closed_told_once() {
    // The terminal closes: its process exits (the exit watch tells) and lf removes its
    // record (inotify tells). Whichever comes first, the person hears once.
    let mut r = Replay::start(|r| {
        home(r);
        r.add_run(conversation(R1, &[4242]));
        r.add_run(conversation(R2, &[4343]));
    });
    r.told();
    let mut watched = r.exit_watches();
    watched.sort();
    assert_eq!(watched, ["watch 4242", "watch 4343"]);
    r.kill(4242);
    assert_eq!(
        r.told(),
        [format!("state {R1}")],
        "the other is not touched"
    );
    assert_eq!(r.state(R1), Some(State::Closed));
    assert_eq!(r.exit_watches(), ["unwatch 4242"]);
    r.client_left(R1, 4242).deliver();
    assert!(r.told().is_empty());
}

#[test]
fn an_agent_that_dies_without_a_word_is_told_by_its_exit_alone() {
    // An Ask's session Run whose agent crashes: lf writes nothing, the client's record
    // lingers, and only its process's exit says the session is no longer attended.
    let mut r = Replay::start(|r| {
        home(r);
        r.add_run(conversation(R1, &[4242]));
        let mut record = ask(A1, "Ship which?");
        record["session_run_id"] = json!(R1);
        r.write(A1, &record);
    });
    assert_eq!(
        r.told(),
        [format!("snapshot [{A1}]")],
        "the Run serves the Ask"
    );
    assert_eq!(r.state(A1), Some(State::Active));
    r.reads();
    r.kill(4242);
    assert!(
        r.reads().is_empty(),
        "no file was read: nothing was written"
    );
    assert_eq!(r.told(), [format!("state {A1}")]);
    assert_eq!(r.state(A1), Some(State::Closed));
}

#[test]
fn the_safety_net_reads_again_only_the_runs_followed_new_or_changed_and_tells_once() {
    // Most of a busy home is finished headless Runs: the reconciliation lists every Run
    // dir with its mtime, the task reads the stale ones, and the core hears of it once
    // every read is answered.
    const R3: &str = "run_0f000000000000000000000000000003";
    let mut r = Replay::start(|r| {
        home(r);
        r.add_run(conversation(R1, &[4242]));
        r.add_run(headless(R2));
        r.add_run(headless(R3));
    });
    assert_eq!(r.told(), [format!("snapshot [{R1}]")]);
    r.reads();
    r.disk.tree().open_interactively(R2);
    r.reconcile();
    let mut reads = r.reads();
    reads.sort();
    // R1 is followed; R2 changed, and once followed is read again after its watch; R3
    // is left alone.
    assert_eq!(reads, [R1, R2, R2]);
    assert_eq!(r.told(), [format!("appeared {R2}")]);
    r.reconcile();
    let mut reads = r.reads();
    reads.sort();
    assert_eq!(reads, [R1, R2], "what is followed, and nothing finished");
    assert!(r.told().is_empty());
}

#[test]
fn a_process_that_is_not_watched_tells_nothing() {
    let mut r = Replay::start(home);
    r.told();
    r.kill(999);
    assert!(r.told().is_empty() && r.exit_watches().is_empty());
}

// The reads as commands: asked after the watches they must follow, answered by the task.

#[test]
fn a_new_shard_is_listed_once_watched_and_its_run_read_again_once_its_watch_is_in_place() {
    // Each read the file half needs is a command, carried out after the watches asked
    // before it: the order of the commands is what keeps a Run written between a read
    // and a watch from going unseen.
    let mut r = Replay::start(home);
    r.told();
    r.asked();
    r.add_run(conversation(R1, &[4242])).deliver();
    assert_eq!(
        r.asked(),
        [
            "watch 0f",
            "list 0f",
            &format!("read {R1}"),
            &format!("watch {R1}"),
            "watch provider-clients",
            &format!("read {R1}"),
        ]
    );
    assert_eq!(r.told(), [format!("appeared {R1}")]);
}

#[test]
fn a_run_whose_watch_is_refused_is_read_once_and_still_followed() {
    // inotify refuses the Run's directories: what was read stands, its client is watched
    // all the same, and it is not read again for a watch that is not there.
    let dir = Home::at(HOME).run_dir(R1).unwrap();
    let mut r = Replay::start(home);
    r.told();
    r.exit_watches();
    r.disk
        .tree()
        .refused
        .extend([dir.clone(), dir.join("provider-clients")]);
    r.add_run(conversation(R1, &[4242])).deliver();
    assert_eq!(r.reads(), [R1]);
    assert!(!r.watches(&dir));
    assert_eq!(r.told(), [format!("appeared {R1}")]);
    assert_eq!(r.exit_watches(), ["watch 4242"]);
    assert_eq!(r.state(R1), Some(State::Active));
}

#[test]
fn an_ask_that_names_a_finished_run_reads_it_and_follows_it_from_then_on() {
    // A finished headless Run is read once and left alone; an Ask that later names it as
    // its session is read first, then the Run it names, which is followed (watched, and
    // read once more after its watch) from then on.
    let mut r = Replay::start(|r| {
        home(r);
        r.add_run(headless(R2));
    });
    assert_eq!(r.told(), ["snapshot []"]);
    r.reads();
    r.asked();
    let mut record = ask(A1, "Ship which?");
    record["session_run_id"] = json!(R2);
    r.write(A1, &record).deliver();
    assert_eq!(
        r.asked(),
        [
            format!("read {A1}.json"),
            format!("read {R2}"),
            format!("watch {R2}"),
            format!("read {R2}"),
        ]
    );
    assert_eq!(r.reads(), [format!("{A1}.json"), R2.into(), R2.into()]);
    assert!(r.watches(&Home::at(HOME).run_dir(R2).unwrap()));
    assert_eq!(r.told(), [format!("asked {A1}")]);
}

#[test]
fn a_clients_exit_is_judged_by_a_read_of_its_runs_liveness_alone() {
    // The exit asks for no file: only the liveness of the Run's clients, read by the task.
    let mut r = Replay::start(|r| {
        home(r);
        r.add_run(conversation(R1, &[4242, 4343]));
    });
    r.told();
    r.reads();
    r.asked();
    r.kill(4242);
    assert_eq!(r.asked(), [format!("live {R1}")]);
    assert!(r.reads().is_empty());
    assert!(r.told().is_empty(), "another client still attends it");
    r.kill(4343);
    assert_eq!(r.told(), [format!("state {R1}")]);
    assert_eq!(r.state(R1), Some(State::Closed));
}

#[test]
fn reads_the_task_leaves_unanswered_end_what_waited_for_them() {
    // An engine whose every handle is gone carries out nothing more: the file half takes
    // in nothing, tells nothing, and leaves nothing waiting, so the task's loop ends.
    let mut r = Replay::start(home);
    r.told();
    r.ending = true;
    r.write(A1, &ask(A1, "Ship which?")).deliver();
    assert!(r.reads().is_empty());
    assert!(r.told().is_empty() && r.warnings().is_empty());
    assert!(!r.files.waits());
}
