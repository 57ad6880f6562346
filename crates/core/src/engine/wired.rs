//! The task's loop on scripted parts: an lf that answers from a script and a watcher that
//! records what is watched and lets the test deliver file events. What the core decides is
//! replayed in `replay.rs`; these check that the loop carries it out — the commands reach
//! lf and the watcher, the answers come back, the events go out — as it does on real parts.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use notify::event::{DataChange, EventKind, ModifyKind};
use tokio::sync::mpsc;

use super::parts::{Cli, Listed, Parts, Reading, Running};
use super::{Config, Engine};
use crate::event::Event;
use crate::files::watch::{DirWatcher, Handler};
use crate::lf::cli::{LfAction, LfError};
use crate::lf::dialect::{Dialect, Generation};
use crate::lf::monitor::Report;
use crate::lf::record::{test_record, SessionRecord, State};

/// lf as a script: what it lists now, and what an action does to that.
struct Script {
    dialect: Dialect,
    sessions: Mutex<Vec<SessionRecord>>,
    lists: Mutex<usize>,
    acted: Mutex<Vec<String>>,
    /// What an action does while it runs: lf writes its database, which the watcher sees.
    on_act: Mutex<Option<Box<dyn FnMut() + Send>>>,
    /// What happens once, while the next list runs after it read the sessions.
    on_list: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl Script {
    fn lists(&self) -> usize {
        *self.lists.lock().unwrap()
    }
}

struct Scripted(Arc<Script>);

impl Cli for Scripted {
    fn program(&self) -> &Path {
        Path::new("/nonexistent/lf")
    }
    fn env(&self) -> Vec<(&'static str, Option<OsString>)> {
        Vec::new()
    }
    fn detect(&self) -> Running<Result<Dialect, LfError>> {
        let dialect = self.0.dialect;
        Box::pin(async move { Ok(dialect) })
    }
    fn list(&self, _dialect: &Dialect) -> Running<Listed> {
        *self.0.lists.lock().unwrap() += 1;
        let sessions: Vec<_> = (self.0.sessions.lock().unwrap().iter().cloned())
            .map(Arc::new)
            .collect();
        let Some(meanwhile) = self.0.on_list.lock().unwrap().take() else {
            return Box::pin(async move { Ok((sessions, Vec::new())) });
        };
        meanwhile();
        // lf prints and exits after that: longer than the debounce, so the write is
        // delivered while this list still runs.
        Box::pin(async move {
            tokio::time::sleep(crate::schedule::DEBOUNCE_MAX).await;
            Ok((sessions, Vec::new()))
        })
    }
    fn read(
        &self,
        _repo: &str,
        _report: Box<dyn Fn(Report) + Send + Sync>,
    ) -> Result<Box<dyn Reading>, LfError> {
        Err(LfError::NotFound)
    }
    fn act(&self, action: LfAction) -> Running<Result<String, LfError>> {
        self.0.acted.lock().unwrap().push(format!("{action:?}"));
        if let Some(on_act) = self.0.on_act.lock().unwrap().as_mut() {
            on_act();
        }
        // lf takes its time after writing (it prints, it exits): longer than the engine's
        // debounce and its grace for its own writes, so an engine that took this write for
        // someone else's would list while the action still runs. (On a machine too slow to
        // list within this, that mistake would go unseen, never a right engine fail.)
        Box::pin(async {
            tokio::time::sleep(crate::schedule::DEBOUNCE_MAX + crate::schedule::SELF_GRACE * 2)
                .await;
            Ok(String::new())
        })
    }
    fn processes(&self) -> Running<Result<Vec<crate::lf::agent::Process>, LfError>> {
        Box::pin(async { Err(LfError::NotFound) })
    }
}

/// The watcher: what is watched, and the handler the engine gave it.
#[derive(Clone, Default)]
struct Inotify {
    watched: Arc<Mutex<Vec<PathBuf>>>,
    handler: Arc<Mutex<Option<Handler>>>,
}

struct Watching(Inotify);

impl DirWatcher for Watching {
    fn watch(&mut self, dir: &Path) -> notify::Result<()> {
        self.0.watched.lock().unwrap().push(dir.to_path_buf());
        Ok(())
    }
    fn unwatch(&mut self, dir: &Path) {
        self.0.watched.lock().unwrap().retain(|d| d != dir);
    }
}

impl Inotify {
    /// A write to `path`, as inotify reports it.
    fn written(&self, path: &Path) {
        self.send(EventKind::Modify(ModifyKind::Data(DataChange::Any)), path);
    }

    fn send(&self, kind: EventKind, path: &Path) {
        let event = notify::Event::new(kind).add_path(path.to_path_buf());
        let mut handler = self.handler.lock().unwrap();
        (handler.as_mut().expect("the engine made its watcher"))(Ok(event));
    }

    fn watches(&self, dir: &Path) -> bool {
        self.watched.lock().unwrap().iter().any(|d| d == dir)
    }

    /// Wait until the engine has watched (or let go of) `dir`, as it must after the events
    /// the test sent; a loop that does not within this has failed.
    async fn until(&self, dir: &Path, watched: bool) {
        let wait = async {
            while self.watches(dir) != watched {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        if tokio::time::timeout(Duration::from_secs(10), wait)
            .await
            .is_err()
        {
            panic!(
                "{} {}watched; watched: {:?}",
                dir.display(),
                if watched { "never " } else { "still " },
                self.watched.lock().unwrap()
            );
        }
    }
}

struct Rig {
    engine: Engine,
    events: mpsc::UnboundedReceiver<Event>,
    lf: Arc<Script>,
    inotify: Inotify,
    db: PathBuf,
    _home: tempfile::TempDir,
}

impl Rig {
    async fn start(generation: Generation, sessions: Vec<SessionRecord>) -> Rig {
        let home = tempfile::tempdir().unwrap();
        let config = Config::from_env(Some(home.path().to_path_buf()), None);
        let db = config.home.db_path.clone();
        std::fs::write(&db, b"lf's database").unwrap();
        let lf = Arc::new(Script {
            dialect: Dialect::of(generation),
            sessions: Mutex::new(sessions),
            lists: Mutex::new(0),
            acted: Mutex::new(Vec::new()),
            on_act: Mutex::new(None),
            on_list: Mutex::new(None),
        });
        let inotify = Inotify::default();
        let made = inotify.clone();
        let parts = Parts {
            cli: Some(Arc::new(Scripted(lf.clone()))),
            watcher: Box::new(move |handler| {
                *made.handler.lock().unwrap() = Some(handler);
                Ok(Box::new(Watching(made)) as Box<dyn DirWatcher>)
            }),
        };
        let (engine, events) = Engine::start_on(config, parts);
        Rig {
            engine,
            events,
            lf,
            inotify,
            db,
            _home: home,
        }
    }

    /// The next event that `pick` takes, skipping others; a test that waits longer than
    /// this for an engine on scripted parts has failed.
    async fn next<T>(&mut self, pick: impl Fn(&Event) -> Option<T>) -> T {
        let wait = async {
            loop {
                let event = self.events.recv().await.expect("the engine runs");
                if let Some(found) = pick(&event) {
                    return found;
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(10), wait)
            .await
            .expect("the event came")
    }

    fn set(&self, sessions: Vec<SessionRecord>) {
        *self.lf.sessions.lock().unwrap() = sessions;
    }

    /// Someone else's write to lf's database: its size and time move, and inotify says so.
    fn foreign_write(&self, what: &[u8]) {
        std::fs::write(&self.db, what).unwrap();
        self.inotify.written(&self.db);
    }
}

fn snapshot_ids(event: &Event) -> Option<Vec<String>> {
    match event {
        Event::Snapshot { sessions, .. } => Some(sessions.iter().map(|s| s.id.clone()).collect()),
        _ => None,
    }
}

/// A session whose agent waits for the person, as generation E lists it.
fn waiting(id: &str) -> SessionRecord {
    let mut record = test_record(id, None, State::Waiting);
    record.set_lf_field("attention", "waiting");
    record
}

#[tokio::test]
async fn the_first_list_is_the_first_snapshot_and_the_database_directory_is_watched() {
    let idle = test_record("S1", None, State::Active);
    let mut rig = Rig::start(Generation::E, vec![idle]).await;
    assert_eq!(rig.next(snapshot_ids).await, ["S1"]);
    assert_eq!(rig.lf.lists(), 1);
    let db_dir = rig.db.parent().unwrap().to_path_buf();
    assert!(
        rig.inotify.watched.lock().unwrap().contains(&db_dir),
        "watched: {:?}",
        rig.inotify.watched.lock().unwrap()
    );
}

#[tokio::test]
async fn a_foreign_write_is_listed_again_and_what_changed_is_told() {
    let mut rig = Rig::start(Generation::E, vec![test_record("S1", None, State::Active)]).await;
    rig.next(snapshot_ids).await;
    rig.set(vec![waiting("S1")]);
    rig.foreign_write(b"lf's database, written by an agent");
    let told = rig
        .next(|e| match e {
            Event::State { session, .. } | Event::Asked { session, .. } => {
                Some((session.id.clone(), session.needs_you()))
            }
            _ => None,
        })
        .await;
    assert_eq!(told, ("S1".to_string(), true));
    assert_eq!(rig.lf.lists(), 2);
}

#[tokio::test]
async fn the_list_is_handed_out_shared_until_a_session_in_it_changes() {
    let idle = |id| test_record(id, None, State::Active);
    let mut rig = Rig::start(Generation::E, vec![idle("S1"), idle("S2")]).await;
    rig.next(snapshot_ids).await;
    let first = rig.engine.sessions();
    let ids = |list: &super::Sessions| list.iter().map(|s| s.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&first), ["S1", "S2"]);
    assert!(
        Arc::ptr_eq(&first, &rig.engine.sessions()),
        "read again with nothing changed, it is the same list, not a copy"
    );
    rig.set(vec![idle("S1"), waiting("S2")]);
    rig.foreign_write(b"lf's database, written by an agent");
    rig.next(|e| match e {
        Event::State { session, .. } | Event::Asked { session, .. } if session.id == "S2" => {
            Some(())
        }
        _ => None,
    })
    .await;
    let second = rig.engine.sessions();
    assert!(!Arc::ptr_eq(&first, &second), "a change makes a new list");
    assert_eq!(ids(&second), ["S1", "S2"]);
    assert!(second[1].needs_you() && !first[1].needs_you());
    assert!(
        Arc::ptr_eq(&first[0], &second[0]),
        "the session that did not change is the same record"
    );
}

#[tokio::test]
async fn a_write_that_lands_while_lf_lists_after_it_read_is_still_told() {
    let mut rig = Rig::start(Generation::E, vec![test_record("S1", None, State::Active)]).await;
    rig.next(snapshot_ids).await;
    // An agent starts a session, and asks while the list its start caused runs, after
    // that lf read the sessions: the write looks like the list's own.
    let (lf, inotify, db) = (rig.lf.clone(), rig.inotify.clone(), rig.db.clone());
    *rig.lf.on_list.lock().unwrap() = Some(Box::new(move || {
        *lf.sessions.lock().unwrap() = vec![test_record("S1", None, State::Active), waiting("S2")];
        std::fs::write(&db, b"lf's database, S2 asks").unwrap();
        inotify.written(&db);
    }));
    rig.set(vec![
        test_record("S1", None, State::Active),
        test_record("S2", None, State::Active),
    ]);
    rig.foreign_write(b"lf's database, S2 started");
    let asked = rig
        .next(|e| match e {
            Event::Asked { session, .. } => Some(session.id.clone()),
            _ => None,
        })
        .await;
    assert_eq!(asked, "S2");
    assert_eq!(
        rig.lf.lists(),
        3,
        "the first, S2's start, and one more after it"
    );
}

#[tokio::test]
async fn an_action_is_listed_after_once_and_its_own_write_wakes_nothing() {
    let mut rig = Rig::start(Generation::E, vec![waiting("S1")]).await;
    rig.next(snapshot_ids).await;
    // The action resolves the session and, while it runs, writes the database, as lf does.
    let (lf, inotify, db) = (rig.lf.clone(), rig.inotify.clone(), rig.db.clone());
    *rig.lf.on_act.lock().unwrap() = Some(Box::new(move || {
        *lf.sessions.lock().unwrap() = Vec::new();
        std::fs::write(&db, b"lf's database, written by the tray's own lf").unwrap();
        inotify.written(&db);
    }));
    rig.engine
        .act(LfAction::Complete { id: "S1".into() })
        .await
        .unwrap();
    // `act` returns once the list after it was taken: the session is gone already.
    assert!(rig.engine.sessions().is_empty());
    assert_eq!(rig.lf.lists(), 2, "one list after the action");
    assert_eq!(rig.lf.acted.lock().unwrap().len(), 1);
    // A foreign write after it is listed once more: had the action's own write woken the
    // engine too, this would be the fourth list.
    rig.set(vec![waiting("S2")]);
    rig.foreign_write(b"lf's database, written by an agent");
    rig.next(|e| match e {
        Event::State { session, .. } | Event::Asked { session, .. } if session.id == "S2" => {
            Some(())
        }
        _ => None,
    })
    .await;
    assert_eq!(rig.lf.lists(), 3);
}

#[tokio::test]
async fn without_a_watcher_the_engine_says_so_and_still_lists() {
    let home = tempfile::tempdir().unwrap();
    let config = Config::from_env(Some(home.path().to_path_buf()), None);
    let lf = Arc::new(Script {
        dialect: Dialect::of(Generation::E),
        sessions: Mutex::new(vec![waiting("S1")]),
        lists: Mutex::new(0),
        acted: Mutex::new(Vec::new()),
        on_act: Mutex::new(None),
        on_list: Mutex::new(None),
    });
    let parts = Parts {
        cli: Some(Arc::new(Scripted(lf.clone()))),
        watcher: Box::new(|_| Err(notify::Error::generic("inotify: too many instances"))),
    };
    let (engine, mut events) = Engine::start_on(config, parts);
    let (mut warned, mut listed) = (None, None);
    let wait = async {
        while warned.is_none() || listed.is_none() {
            match events.recv().await.expect("the engine runs") {
                Event::Warning { message, .. } => warned = Some(message),
                Event::Snapshot { sessions, .. } => listed = Some(sessions.len()),
                _ => {}
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), wait)
        .await
        .expect("the snapshot and the warning came");
    assert_eq!(listed, Some(1));
    let warned = warned.unwrap();
    assert!(
        warned.contains("cannot watch files") && warned.contains("too many instances"),
        "{warned}"
    );
    assert!(!engine.can_watch());
}

#[tokio::test]
async fn lf_s_directories_are_watched_as_they_appear_and_let_go_as_they_go() {
    use notify::event::{CreateKind, RemoveKind};
    // Generation A: records in files. A fresh home has none of lf's directories yet.
    let mut rig = Rig::start(Generation::A, Vec::new()).await;
    rig.next(snapshot_ids).await;
    let home = rig.db.parent().unwrap().to_path_buf();
    let runs = home.join("runs");
    assert!(
        rig.inotify.watches(&home),
        "the home, where lf's directories will appear"
    );
    assert!(!rig.inotify.watches(&runs));

    std::fs::create_dir(&runs).unwrap();
    rig.inotify
        .send(EventKind::Create(CreateKind::Folder), &runs);
    rig.inotify.until(&runs, true).await;

    // A shard is where new Runs appear: watched when made, let go when removed.
    let shard = runs.join("0f");
    std::fs::create_dir(&shard).unwrap();
    rig.inotify
        .send(EventKind::Create(CreateKind::Folder), &shard);
    rig.inotify.until(&shard, true).await;
    std::fs::remove_dir(&shard).unwrap();
    rig.inotify
        .send(EventKind::Remove(RemoveKind::Folder), &shard);
    rig.inotify.until(&shard, false).await;

    // `runs/` itself removed: its watch goes, and the home is watched for its return.
    std::fs::remove_dir(&runs).unwrap();
    rig.inotify
        .send(EventKind::Remove(RemoveKind::Folder), &runs);
    rig.inotify.until(&runs, false).await;
    assert!(rig.inotify.watches(&home));
}
