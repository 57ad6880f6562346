//! Replay cases for the engine's [`Core`]: each case is a short sequence of inputs at
//! given times, and what the core then did — the commands it gave and the events it
//! published. Time is data here: the core is woken at each deadline it asks for, as the
//! task would, and never sleeps.

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use super::core::{Command, Core, Exit, FileView, Input, Now, Out};
use super::shared::Shared;
use super::SAFETY_INTERVAL;
use crate::event::{Event, Warning};
use crate::lf::agent::Found;
use crate::lf::cli::LfError;
use crate::lf::dialect::{Dialect, Generation};
use crate::lf::monitor::{Frame, Part, Report};
use crate::lf::record::{test_record, SessionRecord, State};
use crate::lf::{Agent, Runs};
use crate::machine;

/// What the file half holds, and lf's database, as data: these cases are about the core
/// (the file half itself, on a disk made of data, is replayed in `replay_files.rs`).
/// `db` stands for the database files' size and time: a write by someone else moves it.
#[derive(Default)]
struct Held {
    db: u64,
    /// lf's `store_revisions` (sessions, processes), where this lf keeps them and they
    /// can be read: the core is handed them as the task reads them.
    store: Option<(i64, i64)>,
    sessions: HashMap<String, SessionRecord>,
    touched: HashSet<String>,
    /// How often the core merged everything (it asks whether the files exist only then).
    full_merges: Cell<usize>,
}

impl FileView for Held {
    fn present(&self) -> bool {
        // Only a full merge asks; counting here counts those.
        self.full_merges.set(self.full_merges.get() + 1);
        !self.sessions.is_empty()
    }
    fn sessions(&self) -> Vec<SessionRecord> {
        self.sessions.values().cloned().collect()
    }
    fn session(&self, id: &str) -> Option<SessionRecord> {
        self.sessions.get(id).cloned()
    }
    fn take_touched(&mut self) -> HashSet<String> {
        std::mem::take(&mut self.touched)
    }
}

/// One engine core, its clock and what it did since the last look.
struct Replay {
    core: Core,
    disk: Held,
    /// What the surfaces would read, kept from the core's changes as the task keeps it.
    shared: Shared,
    t0: Instant,
    wall0: SystemTime,
    elapsed: Duration,
    /// How long the machine slept: the wall clock moved on, the monotonic one did not.
    slept: Duration,
    commands: Vec<Command>,
    events: Vec<Event>,
    /// Lists answer at once with these records, for cases about many lists.
    auto: Option<Vec<SessionRecord>>,
}

impl Replay {
    fn new(generation: Generation) -> Replay {
        Replay::with(generation, Vec::new())
    }

    /// An engine that detected `generation` and took its first list (`listed`) at 0.
    fn with(generation: Generation, listed: Vec<SessionRecord>) -> Replay {
        Replay::started(Some(generation), listed, SAFETY_INTERVAL)
    }

    /// One whose safety list is an hour away, for cases about the other lists.
    fn hourly(generation: Generation) -> Replay {
        Replay::started(Some(generation), Vec::new(), Duration::from_secs(3600))
    }

    fn started(
        generation: Option<Generation>,
        listed: Vec<SessionRecord>,
        safety: Duration,
    ) -> Replay {
        let lf = generation.map(|g| (Ok(Dialect::of(g)), Ok((listed, Vec::new()))));
        Replay::starting(lf, safety)
    }

    /// An engine whose start-up went this way: what lf said it is, and its first list
    /// (`None` without an lf).
    fn starting(lf: Option<(Result<Dialect, LfError>, Listed)>, safety: Duration) -> Replay {
        Replay::starting_with_writes(lf, safety, 0)
    }

    /// One whose first list saw `writes` commits to lf's database while it ran (its own
    /// Process row, and maybe someone else's).
    fn starting_with_writes(
        lf: Option<(Result<Dialect, LfError>, Listed)>,
        safety: Duration,
        writes: u64,
    ) -> Replay {
        let mut replay = Replay::blank(lf.is_some(), safety);
        if let Some((detected, listed)) = lf {
            replay.core.begin(detected);
            replay.core.first_list(replay.now(), None);
            replay.disk.db += writes;
            replay.core.first_listed(replay.now(), shared(listed));
        }
        let out = replay.core.open(replay.now(), &mut replay.disk);
        replay.out(out);
        replay
    }

    /// An engine before its start-up, with an lf or without.
    fn blank(lf: bool, safety: Duration) -> Replay {
        let t0 = Instant::now();
        let wall0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let now = Now {
            mono: t0,
            wall: wall0,
            db: [Some((0, SystemTime::UNIX_EPOCH)), None],
        };
        let bin = lf.then(|| "/bin/lf".into());
        Replay {
            core: Core::new(now, bin, safety, None),
            disk: Held::default(),
            shared: Shared::default(),
            t0,
            wall0,
            elapsed: Duration::ZERO,
            slept: Duration::ZERO,
            commands: Vec::new(),
            events: Vec::new(),
            auto: None,
        }
    }

    /// An engine on an lf that keeps `store_revisions` (D, E), read just before its first
    /// list (`listed`), during which that list wrote its Process row at start and at exit,
    /// and someone else committed a change to a session if `someone` says so. The writes'
    /// events are still queued: the case delivers them.
    fn on_store(generation: Generation, listed: Vec<SessionRecord>, someone: bool) -> Replay {
        let mut r = Replay::blank(true, SAFETY_INTERVAL);
        r.disk.store = Some((1, 1));
        r.core.begin(Ok(Dialect::of(generation)));
        r.core.first_list(r.now(), r.revisions());
        let (sessions, processes) = r.disk.store.as_mut().unwrap();
        *processes += 2;
        if someone {
            *sessions += 1;
            *processes += 1;
        }
        r.disk.db += 1;
        r.core
            .first_listed(r.now(), shared(Ok((listed, Vec::new()))));
        let out = r.core.open(r.now(), &mut r.disk);
        r.out(out);
        r
    }

    fn now(&self) -> Now {
        Now {
            mono: self.t0 + self.elapsed,
            wall: self.wall0 + self.elapsed + self.slept,
            db: [Some((self.disk.db, SystemTime::UNIX_EPOCH)), None],
        }
    }

    /// Let time run to `ms` after the start, waking the core at each of its deadlines.
    fn at(&mut self, ms: u64) -> &mut Replay {
        let until = Duration::from_millis(ms);
        assert!(until >= self.elapsed, "time runs forward");
        for _ in 0..10_000 {
            let Some(due) = self.core.deadline() else {
                break;
            };
            let due = due - self.t0;
            if due > until {
                break;
            }
            self.elapsed = self.elapsed.max(due);
            self.wake();
        }
        self.elapsed = until;
        self
    }

    fn wake(&mut self) {
        let out = self.core.wake(self.now(), &mut self.disk);
        let listed = out.commands.iter().any(|c| matches!(c, Command::List(_)));
        // The revisions are read as the task reads them: before each list, at once, and
        // for a check, handed back before the core is woken again.
        let showing = out
            .commands
            .iter()
            .any(|c| matches!(c, Command::List(d) if d.store_revisions));
        let read = out.commands.contains(&Command::ReadRevisions);
        self.out(out);
        if showing {
            self.absorb(Input::Showing(self.revisions()));
        }
        if read {
            self.absorb(Input::Revisions(self.revisions()));
            self.wake();
        }
        if let Some(records) = self.auto.clone().filter(|_| listed) {
            self.absorb(Input::Listed(shared(Ok((records, Vec::new())))));
            self.wake();
        }
    }

    /// What one wake-up handed out, kept for the case to look at.
    fn out(&mut self, out: Out) {
        for change in out.changes {
            self.shared.apply(change);
        }
        self.commands.extend(out.commands);
        self.events.extend(out.events);
    }

    fn absorb(&mut self, input: Input) {
        self.core.absorb(self.now(), input);
    }

    /// One input, then the wake-up after it.
    fn feed(&mut self, input: Input) -> &mut Replay {
        self.absorb(input);
        self.wake();
        self
    }

    /// Several inputs found queued together, then one wake-up.
    fn burst(&mut self, inputs: Vec<Input>) -> &mut Replay {
        for input in inputs {
            self.absorb(input);
        }
        self.wake();
        self
    }

    /// Someone else wrote lf's database: its files moved.
    fn write(&mut self) -> &mut Replay {
        self.disk.db += 1;
        self.feed(Input::Written)
    }

    /// lf's revisions as the task would read them now.
    fn revisions(&self) -> Option<crate::lf::Revisions> {
        let (sessions, processes) = self.disk.store?;
        let pairs = [("planning", 1), ("sessions", sessions), ("flows", 1)];
        Some(crate::lf::Revisions::of(
            pairs
                .into_iter()
                .chain([("processes", processes), ("usage", 1)]),
        ))
    }

    /// Someone else's lf commits a change to a session (its Process row with it).
    fn commit(&mut self) -> &mut Replay {
        let (sessions, processes) = self.disk.store.as_mut().expect("a store with revisions");
        *sessions += 1;
        *processes += 1;
        self.write()
    }

    /// An lf process (the tray's own, or anyone's) records or ends its Process row.
    fn process_row(&mut self) -> &mut Replay {
        let (_, processes) = self.disk.store.as_mut().expect("a store with revisions");
        *processes += 1;
        self.write()
    }

    /// A write event that leaves the files as the tray's last own lf left them.
    fn late_write(&mut self) -> &mut Replay {
        self.feed(Input::Written)
    }

    fn listed(&mut self, records: Vec<SessionRecord>) -> &mut Replay {
        self.feed(Input::Listed(shared(Ok((records, Vec::new())))))
    }

    fn failed(&mut self, message: &str) -> &mut Replay {
        self.feed(Input::Listed(Err(failure(message))))
    }

    /// A reader's frame with its repository's sessions.
    fn frame(
        &mut self,
        serial: u64,
        revision: u64,
        repo: &str,
        entries: Vec<SessionRecord>,
    ) -> &mut Replay {
        let part = Part::Sessions {
            repo: repo.into(),
            entries,
            problems: Vec::new(),
        };
        self.report(serial, Some(revision), part)
    }

    /// A reader's heartbeat.
    fn beat(&mut self, serial: u64, revision: u64) -> &mut Replay {
        self.report(serial, Some(revision), Part::Other)
    }

    fn report(&mut self, serial: u64, revision: Option<u64>, part: Part) -> &mut Replay {
        let frame = Frame {
            sessions_revision: revision,
            part,
        };
        self.feed(Input::Reader(serial, Report::Frame(frame)))
    }

    fn ended(&mut self, serial: u64, message: &str) -> &mut Replay {
        self.feed(Input::Reader(serial, Report::Ended(message.into())))
    }

    /// The machine is suspended for `secs`.
    fn sleep(&mut self, secs: u64) -> &mut Replay {
        self.slept += Duration::from_secs(secs);
        self
    }

    /// The commands given since the last look.
    fn take(&mut self) -> Vec<Command> {
        std::mem::take(&mut self.commands)
    }

    /// How many lists were started since the last look (other commands are dropped).
    fn lists(&mut self) -> usize {
        self.take()
            .iter()
            .filter(|c| matches!(c, Command::List(_)))
            .count()
    }

    /// The warnings published since the last look.
    fn warnings(&mut self) -> Vec<String> {
        let (warnings, rest) = std::mem::take(&mut self.events)
            .into_iter()
            .partition(|e| matches!(e, Event::Warning { .. }));
        self.events = rest;
        warnings
            .into_iter()
            .map(|e| match e {
                Event::Warning { message, .. } => message,
                _ => unreachable!(),
            })
            .collect()
    }

    /// The other events since the last look, as `kind id`.
    fn told(&mut self) -> Vec<String> {
        let mut told: Vec<String> = std::mem::take(&mut self.events)
            .into_iter()
            .filter_map(|e| {
                let kind = match &e {
                    Event::Snapshot { .. } => return Some("snapshot".to_string()),
                    Event::Warning { .. } => return None,
                    _ => e.kind(),
                };
                Some(format!("{kind} {}", e.session()?.id))
            })
            .collect();
        told.sort();
        told
    }

    fn status(&self) -> String {
        self.shared.status.clone()
    }

    fn shown(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .shared
            .snapshot
            .sessions()
            .into_iter()
            .map(|s| s.id)
            .collect();
        ids.sort();
        ids
    }
}

type Listed = Result<(Vec<SessionRecord>, Vec<String>), LfError>;

/// A list as the lf client hands it to the engine: each record shared.
fn shared(listed: Listed) -> crate::engine::Listed {
    listed.map(|(records, problems)| (records.into_iter().map(Arc::new).collect(), problems))
}

fn failure(message: &str) -> LfError {
    LfError::Failed {
        code: Some(1),
        message: message.into(),
    }
}

/// An open session lf lists, in a worktree.
fn open_in(id: &str, worktree: &str) -> SessionRecord {
    let mut record = test_record(id, None, State::Active);
    let workspace = serde_json::json!({ "worktree": worktree });
    record.set_lf_field("workspace", workspace);
    record
}

fn waiting_in(id: &str, worktree: &str) -> SessionRecord {
    let mut record = open_in(id, worktree);
    record.state = State::Waiting;
    record
}

/// A session whose agent asks the person, as D and E list it.
fn asking_in(id: &str, worktree: &str) -> SessionRecord {
    let mut record = waiting_in(id, worktree);
    record.set_lf_field("attention", "waiting");
    record
}

/// An E2 session whose agent lf names by its Process id.
fn with_agent(id: &str, agent: &str) -> SessionRecord {
    let mut record = test_record(id, None, State::Active);
    record.set_lf_field("agent_process_id", agent);
    record.set_lf_field("terminal_ids", serde_json::json!([]));
    record
}

const A1: &str = "11111111-1111-4111-8111-111111111111";
const A2: &str = "22222222-2222-4222-8222-222222222222";
const A3: &str = "33333333-3333-4333-8333-333333333333";

fn find(ids: &[&str]) -> Command {
    Command::FindAgents(ids.iter().map(|id| id.to_string()).collect())
}

fn watch(id: &str, pid: u32) -> Command {
    Command::WatchExit {
        exit: Exit::Agent(id.into()),
        pid,
        started_at: Some(1_800_000_000),
    }
}

/// lf's process list: these agents found, each with its pid, on a terminal or not.
fn found(agents: &[(&str, Option<(u32, Runs)>)]) -> Input {
    Input::AgentsFound(Ok(agents
        .iter()
        .map(|(id, process)| {
            let process = process.map(|(pid, runs)| Found {
                pid,
                started_at: Some(1_800_000_000),
                runs,
            });
            (id.to_string(), process)
        })
        .collect()))
}

fn start(serial: u64, key: &str) -> Command {
    Command::StartReader {
        serial,
        key: key.into(),
    }
}

fn list(generation: Generation) -> Command {
    Command::List(Dialect::of(generation))
}

use Generation::{C, D, D0, E};

// Self-write suppression: the tray's own lf runs write the database too (a Process row);
// those writes must never cause a list, or the tray would wake itself forever.

#[test]
fn someone_elses_write_lists_after_the_debounce() {
    let mut r = Replay::new(C);
    r.at(1000).write();
    assert_eq!(r.at(1099).lists(), 0);
    assert_eq!(r.at(1100).take(), [list(C)]);
}

#[test]
fn a_write_while_an_action_runs_is_the_trays_own() {
    let mut r = Replay::new(C);
    r.at(1000).feed(Input::Acting);
    r.at(1010).write();
    assert_eq!(r.at(5000).lists(), 0);
}

#[test]
fn a_late_write_that_left_the_files_as_they_were_is_the_trays_own() {
    // The first list ended at 0; its last write is delivered 100 ms later.
    let mut r = Replay::new(C);
    r.at(100).late_write();
    assert_eq!(r.at(5000).lists(), 0);
}

#[test]
fn a_write_just_after_the_trays_lf_that_moved_the_files_is_someone_elses() {
    let mut r = Replay::new(C);
    r.at(100).write();
    assert_eq!(r.at(200).lists(), 1);
}

#[test]
fn after_the_grace_an_unchanged_write_is_someone_elses() {
    let mut r = Replay::new(C);
    r.at(300).late_write();
    assert_eq!(r.at(400).lists(), 1);
}

#[test]
fn a_first_list_during_which_the_database_moved_is_listed_once_more_a_second_later() {
    // Its own Process row, or an ask committed after that lf read the sessions: nothing
    // tells them apart, and an ask missed then would wait for the safety list.
    let first = Ok((Vec::new(), Vec::new()));
    let mut r = Replay::starting_with_writes(Some((Ok(Dialect::of(E)), first)), SAFETY_INTERVAL, 1);
    // Its writes, still queued, are taken for the tray's own...
    r.at(5).late_write();
    assert_eq!(r.at(999).lists(), 0);
    // ...and the list a second later finds what was missed, then lists are followed as
    // ever: one that found nothing new ends the chain with its own writes.
    assert_eq!(r.at(1000).lists(), 1);
    r.at(1050).write();
    r.at(1200).listed(vec![waiting_in("s1", "/r/a")]);
    assert_eq!(r.at(2200).lists(), 1);
    r.at(2250).write();
    r.at(2300).listed(vec![waiting_in("s1", "/r/a")]);
    assert_eq!(r.at(30_000).lists(), 0);
}

#[test]
fn a_first_list_that_left_the_database_as_it_was_is_not_listed_again() {
    let mut r = Replay::new(E);
    r.at(5).late_write();
    assert_eq!(r.at(30_000).lists(), 0);
}

#[test]
fn a_lists_own_writes_never_cause_another() {
    let mut r = Replay::new(C);
    r.at(1000).write();
    assert_eq!(r.at(1100).lists(), 1);
    // It writes its Process row while it runs, and the last write lands after it ended.
    r.at(1150).write();
    r.at(1300).listed(Vec::new());
    r.at(1310).late_write();
    // It ran for someone else's write, who may have written again while it ran: one list
    // a second later, whose own writes, finding nothing new, end it.
    assert_eq!(r.at(2300).lists(), 1);
    r.at(2350).write();
    r.at(2500).listed(Vec::new());
    r.at(2510).late_write();
    assert_eq!(r.at(10_000).lists(), 0);
}

#[test]
fn an_ask_committed_while_a_list_for_a_write_that_changed_nothing_runs_is_listed_a_second_later() {
    // An agent's lf saves its status (nothing the list shows), and asks a moment later,
    // while the tray's list for that first write runs: that list finds nothing new, and
    // the ask's write looks like the list's own.
    let mut r = Replay::with(E, vec![open_in("s1", "/r/a")]);
    r.told();
    r.at(1000).write();
    assert_eq!(r.at(1100).lists(), 1);
    r.at(1150).write();
    r.at(1300).listed(vec![open_in("s1", "/r/a")]);
    assert_eq!(r.at(2299).lists(), 0);
    assert_eq!(r.at(2300).lists(), 1);
    r.at(2350).write();
    let mut asks = waiting_in("s1", "/r/a");
    asks.set_lf_field("attention", "waiting");
    r.at(2500).listed(vec![asks]);
    assert_eq!(r.told(), ["asked s1"]);
}

#[test]
fn a_write_while_a_list_runs_that_found_something_new_is_listed_once_more() {
    // lf read the sessions, then someone committed before that lf exited: the write
    // arrives while the list runs and looks like its own. The list found a new session,
    // so someone is writing now: one more list a second later, which finds the rest.
    let mut r = Replay::new(E);
    r.at(1000).write();
    assert_eq!(r.at(1100).lists(), 1);
    r.at(1150).write();
    r.at(1300).listed(vec![open_in("s1", "/r/a")]);
    assert_eq!(
        r.at(2299).lists(),
        0,
        "not at once: the writer's next step first"
    );
    assert_eq!(r.at(2300).lists(), 1);
    let mut asked = open_in("s1", "/r/a");
    asked.state = State::Waiting;
    // Its own Process row lands while it runs too; it finds the ask, so once more...
    r.at(2350).write();
    r.at(2400).listed(vec![asked.clone()]);
    assert_eq!(r.at(3400).lists(), 1);
    // ...and that one finds nothing new: its own write ends the chain.
    r.at(3450).write();
    r.at(3500).listed(vec![asked]);
    assert_eq!(r.at(10_000).lists(), 0);
}

#[test]
fn someone_elses_write_before_the_recheck_lists_after_the_debounce_and_serves_for_it() {
    let mut r = Replay::new(E);
    r.at(1000).write();
    assert_eq!(r.at(1100).lists(), 1);
    r.at(1150).write();
    r.at(1300).listed(vec![open_in("s1", "/r/a")]);
    // The person answers right after the tray told them: listed after the debounce...
    r.at(1400).write();
    assert_eq!(r.at(1500).lists(), 1);
    // ...and that list, finding nothing new with no write while it ran, is the last.
    r.at(1600).listed(vec![open_in("s1", "/r/a")]);
    assert_eq!(r.at(10_000).lists(), 0);
}

#[test]
fn lists_that_keep_finding_something_new_follow_their_writes_a_few_times_only() {
    // A field lf computed at each read would make every list new: the chain ends.
    let mut r = Replay::hourly(E);
    r.at(1000).write();
    let (mut lists, mut t) = (0, 1100);
    let recheck = crate::schedule::DOUBT_RECHECK.as_millis() as u64;
    // Each list writes its own Process row while it runs, and lists something new.
    while r.at(t).lists() == 1 && lists < 100 {
        lists += 1;
        r.at(t + 10).write();
        let mut record = open_in("s1", "/r/a");
        record.title = format!("read {lists}");
        r.at(t + 50).listed(vec![record]);
        t += 50 + recheck;
    }
    assert_eq!(lists, 1 + crate::schedule::DOUBT_CHAIN as usize);
    assert_eq!(r.at(100_000).lists(), 0);
}

#[test]
fn a_readers_start_up_write_is_the_trays_own() {
    let mut r = Replay::with(D, vec![open_in("s1", "/r/a")]);
    assert_eq!(r.take(), [start(0, "/r/a")]);
    r.at(50).write();
    r.at(100).frame(0, 5, "/r", vec![open_in("s1", "/r/a")]);
    r.at(120).late_write();
    assert_eq!(r.at(5000).lists(), 0);
}

#[test]
fn while_a_reader_is_live_its_revisions_not_the_writes_say_what_moved() {
    let mut r = Replay::with(D, vec![open_in("s1", "/r/a")]);
    r.at(100).frame(0, 5, "/r", vec![open_in("s1", "/r/a")]);
    r.take();
    r.at(1000).write();
    r.at(1000).beat(0, 5);
    assert_eq!(r.at(1500).lists(), 0);
}

// Where lf keeps `store_revisions` (D, E): a list follows a write only when a domain that
// may change the list moved since the revisions read just before the last list started.
// The tray's own runs move only `processes`; nobody else's write hides behind them.

/// Each list the core starts runs `ms`, writing its Process row as it starts and as it
/// exits, and finds `records`; the core is woken at its deadlines in between.
fn run_lists(r: &mut Replay, until: u64, ms: u64, records: &[SessionRecord]) -> Vec<u64> {
    let mut started = Vec::new();
    let mut t = r.elapsed.as_millis() as u64;
    for _ in 0..10_000 {
        let next = r.core.deadline().map(|d| (d - r.t0).as_millis() as u64);
        let Some(next) = next.filter(|n| *n <= until) else {
            break;
        };
        t = t.max(next).max(r.elapsed.as_millis() as u64);
        if r.at(t).lists() == 0 {
            continue;
        }
        started.push(t);
        r.at(t + 1).process_row();
        r.at(t + ms).listed(records.to_vec());
        r.at(t + ms + 1).process_row();
        t += ms + 1;
    }
    r.at(until.max(t));
    started
}

#[test]
fn on_a_store_with_revisions_the_trays_own_runs_never_list_again() {
    for generation in [D, E] {
        let mut r = Replay::on_store(generation, Vec::new(), false);
        // Its first list's writes, then ten idle minutes of safety lists that each write
        // their Process row twice: no list but the safety list, once a minute.
        r.at(5).late_write();
        let lists = run_lists(&mut r, 600_000, 300, &[]);
        let minutes: Vec<u64> = (1..=10).map(|n| n * 60_000).collect();
        assert_eq!(lists, minutes, "{generation:?}");
    }
}

#[test]
fn a_session_committed_while_the_first_list_runs_is_listed_after_the_debounce() {
    // (a) The first list read the sessions, then an agent's lf committed its ask before
    // that list exited: the revisions read before it say the sessions moved since.
    let mut r = Replay::on_store(E, vec![open_in("s1", "/r/a")], true);
    r.told();
    r.at(5).late_write();
    assert_eq!(r.at(104).lists(), 0, "the write is debounced");
    assert_eq!(r.at(105).lists(), 1);
    r.at(400).listed(vec![asking_in("s1", "/r/a")]);
    assert_eq!(r.told(), ["asked s1"], "told 0.4 s after the commit");
    // Without it, the first list's own writes list nothing.
    let mut r = Replay::on_store(E, vec![open_in("s1", "/r/a")], false);
    r.at(5).late_write();
    assert_eq!(r.at(30_000).lists(), 0);
}

#[test]
fn a_session_committed_while_a_list_runs_is_listed_right_after_it() {
    // (b) An agent's lf saves the session working (a list for it), and asks while that
    // list runs, after it read the sessions.
    let mut r = Replay::on_store(E, vec![open_in("s1", "/r/a")], false);
    r.told();
    r.at(1000).commit();
    assert_eq!(r.at(1100).lists(), 1);
    r.at(1110).process_row();
    r.at(1200).commit();
    assert_eq!(r.at(1399).lists(), 0, "folded while the list runs");
    assert_eq!(r.at(1400).listed(vec![open_in("s1", "/r/a")]).lists(), 1);
    r.at(1401).process_row();
    r.at(1700).listed(vec![asking_in("s1", "/r/a")]);
    assert_eq!(r.told(), ["asked s1"], "told 0.5 s after the ask");
    r.at(1701).process_row();
    assert_eq!(
        r.at(60_000).lists(),
        0,
        "and nothing more till the safety list"
    );
}

#[test]
fn a_session_committed_before_a_lists_exit_and_heard_after_it_is_listed() {
    // (c) The ask commits between the list's read and its exit; its event is delivered
    // only after the list ended, with the files as that lf left them, which today's rule
    // takes for the list's own late write.
    let mut r = Replay::on_store(E, vec![open_in("s1", "/r/a")], false);
    r.told();
    r.at(1000).commit();
    assert_eq!(r.at(1100).lists(), 1);
    let (sessions, processes) = r.disk.store.as_mut().unwrap();
    *sessions += 1;
    *processes += 2;
    r.disk.db += 1;
    r.at(1300).listed(vec![open_in("s1", "/r/a")]);
    r.at(1310).late_write();
    assert_eq!(r.at(1409).lists(), 0);
    assert_eq!(r.at(1410).lists(), 1);
    r.at(1600).listed(vec![asking_in("s1", "/r/a")]);
    assert_eq!(r.told(), ["asked s1"]);
}

#[test]
fn only_a_change_to_what_lf_lists_arms_the_quiet_deadline() {
    let mut r = Replay::on_store(D, Vec::new(), false);
    r.auto = Some(Vec::new());
    r.at(1000).process_row();
    assert_eq!(r.at(121_999).lists(), 2, "the safety lists only");
    assert_eq!(
        r.at(122_100).lists(),
        0,
        "no quiet deadline for a Process row"
    );
    r.at(130_000).commit();
    assert_eq!(r.at(130_100).lists(), 1);
    assert_eq!(r.at(251_099).lists(), 2, "the safety lists");
    assert_eq!(
        r.at(251_100).lists(),
        1,
        "the quiet deadline, 121 s after the change"
    );
}

#[test]
fn revisions_that_cannot_be_read_fall_back_to_todays_rule() {
    let mut r = Replay::on_store(E, Vec::new(), false);
    // The table went (an lf rolled back): the check cannot say, so it lists...
    r.disk.store = None;
    r.at(1000).write();
    assert_eq!(r.at(1100).lists(), 1);
    // ...and that list's revisions cannot be read either: its own late write is its own.
    r.at(1300).listed(Vec::new());
    r.at(1310).late_write();
    assert_eq!(r.at(30_000).take(), []);
}

#[test]
fn an_lf_without_store_revisions_is_followed_as_before() {
    for generation in [C, D0] {
        let first = Ok((Vec::new(), Vec::new()));
        let lf = Some((Ok(Dialect::of(generation)), first));
        let mut r = Replay::starting_with_writes(lf, SAFETY_INTERVAL, 1);
        r.at(5).late_write();
        assert_eq!(r.at(999).lists(), 0, "{generation:?}");
        assert_eq!(r.at(1000).take(), [list(generation)], "never a reading");
        r.at(1300).listed(Vec::new());
        r.at(1310).late_write();
        assert_eq!(r.at(30_000).take(), [], "{generation:?}");
    }
}

// The debounce: one SQLite transaction is a burst of writes; 100 ms of quiet makes it one
// list, and a stream of writes cannot postpone the list past 250 ms.

#[test]
fn a_burst_of_writes_lists_once_after_its_last() {
    let mut r = Replay::new(C);
    for ms in [1000, 1030, 1060, 1090] {
        r.at(ms).write();
    }
    assert_eq!(r.at(1189).lists(), 0);
    assert_eq!(r.at(1190).lists(), 1);
    assert_eq!(r.at(5000).lists(), 0);
}

#[test]
fn a_stream_of_writes_lists_250_ms_after_its_first() {
    let mut r = Replay::new(C);
    for ms in (1000..=1200).step_by(50) {
        r.at(ms).write();
    }
    assert_eq!(r.lists(), 0);
    r.at(1250);
    assert_eq!(r.lists(), 1, "the cap, though writes go on");
}

#[test]
fn writes_taken_together_cost_one_list() {
    let mut r = Replay::new(C);
    r.disk.db += 3;
    r.at(1000)
        .burst(vec![Input::Written, Input::Written, Input::Written]);
    assert_eq!(r.at(2000).lists(), 1);
}

#[test]
fn a_change_while_a_list_runs_is_one_more_list_after_it() {
    let mut r = Replay::new(C);
    r.at(1000).write();
    assert_eq!(r.at(1100).lists(), 1);
    r.at(1150).feed(Input::DatabaseAppeared);
    r.at(1160).feed(Input::DatabaseAppeared);
    assert_eq!(r.at(1300).lists(), 0, "folded while the list runs");
    assert_eq!(r.at(1400).listed(Vec::new()).lists(), 1, "right after it");
    r.at(1600).listed(Vec::new());
    assert_eq!(r.at(5000).lists(), 0);
}

#[test]
fn a_database_directory_that_appears_is_listed() {
    let mut r = Replay::new(C);
    r.at(1000).feed(Input::DatabaseAppeared);
    assert_eq!(r.at(1100).lists(), 1);
}

// lf's readers (generation D): one per repository with open sessions.

#[test]
fn a_reader_starts_for_each_worktree_of_an_unknown_repository() {
    let mut r = Replay::with(D, vec![open_in("s1", "/r/a"), open_in("s2", "/q/b")]);
    assert_eq!(r.take(), [start(0, "/r/a"), start(1, "/q/b")]);
}

#[test]
fn two_worktrees_of_one_repository_keep_one_reader() {
    let mut r = Replay::with(D, vec![open_in("s1", "/r/a"), open_in("s2", "/r/b")]);
    assert_eq!(r.take(), [start(0, "/r/a"), start(1, "/r/b")]);
    let both = vec![open_in("s1", "/r/a"), open_in("s2", "/r/b")];
    r.at(100).frame(0, 5, "/r", both.clone());
    r.at(120).frame(1, 5, "/r", both);
    assert_eq!(r.take(), [Command::StopReader(1)], "the twin goes");
    r.at(1000).beat(0, 5);
    assert_eq!(r.take(), [], "and is not started again");
}

#[test]
fn a_reader_whose_repository_has_no_open_session_left_stops() {
    let mut r = Replay::with(D, vec![open_in("s1", "/r/a")]);
    r.take();
    r.at(100).frame(0, 5, "/r", vec![open_in("s1", "/r/a")]);
    r.at(200).frame(0, 6, "/r", Vec::new());
    assert_eq!(r.take(), [Command::StopReader(0)]);
}

#[test]
fn no_readers_where_lf_has_none_to_give() {
    for generation in [C, D0, E] {
        let mut r = Replay::with(generation, vec![open_in("s1", "/r/a")]);
        assert!(
            !r.take()
                .iter()
                .any(|c| matches!(c, Command::StartReader { .. })),
            "{generation:?}"
        );
    }
}

#[test]
fn at_most_eight_readers_run() {
    let listed = (0..10)
        .map(|i| open_in(&format!("s{i}"), &format!("/r{i}/w")))
        .collect();
    let mut r = Replay::with(D, listed);
    let started = r
        .take()
        .into_iter()
        .filter(|c| matches!(c, Command::StartReader { .. }))
        .count();
    assert_eq!(started, 8);
}

#[test]
fn a_silent_reader_is_started_again_with_a_warning() {
    let mut r = Replay::with(D, vec![open_in("s1", "/r/a")]);
    r.take();
    r.at(100).frame(0, 5, "/r", vec![open_in("s1", "/r/a")]);
    assert_eq!(r.at(6099).take(), []);
    assert_eq!(r.at(6100).take(), [Command::StopReader(0)]);
    assert_eq!(
        r.warnings(),
        ["lf monitor work for /r sent nothing for 6 s; it is started again"]
    );
    // Its repository is covered by a list until the new reader answers.
    assert_eq!(r.at(6200).take(), [list(D)]);
    r.at(6400).listed(vec![open_in("s1", "/r/a")]);
    assert_eq!(r.at(7099).take(), []);
    assert_eq!(r.at(7100).take(), [start(1, "/r/a")], "after its back-off");
}

#[test]
fn a_reader_that_never_answered_is_named_by_its_worktree() {
    let mut r = Replay::with(D, vec![open_in("s1", "/r/a")]);
    r.at(6000);
    assert_eq!(
        r.warnings(),
        ["lf monitor work for /r/a sent nothing for 6 s; it is started again"]
    );
}

#[test]
fn a_failing_reader_backs_off_1_2_4_up_to_60_s_and_warns_once() {
    let mut r = Replay::with(D, vec![open_in("s1", "/r/a")]);
    r.take();
    let mut now = 0;
    let mut pauses = Vec::new();
    for serial in 0..9 {
        r.at(now).ended(serial, "lf monitor ended (exit status: 1)");
        assert_eq!(r.take(), [Command::StopReader(serial)]);
        let before = now;
        while !r.at(now).take().contains(&start(serial + 1, "/r/a")) {
            now += 1000;
        }
        pauses.push((now - before) / 1000);
    }
    assert_eq!(pauses, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
    assert_eq!(r.warnings(), ["lf monitor ended (exit status: 1)"]);
}

#[test]
fn a_frame_ends_the_back_off() {
    let mut r = Replay::with(D, vec![open_in("s1", "/r/a")]);
    r.at(100).ended(0, "gone");
    r.at(1100).ended(1, "gone");
    assert!(r.at(3100).take().contains(&start(2, "/r/a")), "2 s");
    r.at(3200).frame(2, 5, "/r", vec![open_in("s1", "/r/a")]);
    r.at(4000).ended(2, "gone");
    assert!(r.at(5000).take().contains(&start(3, "/r/a")), "1 s again");
}

#[test]
fn a_reader_lf_could_not_start_backs_off_too() {
    let mut r = Replay::with(D, vec![open_in("s1", "/r/a")]);
    r.take();
    r.at(0)
        .feed(Input::ReaderFailed(0, failure("Permission denied")));
    assert_eq!(r.warnings(), ["lf monitor work: Permission denied"]);
    assert_eq!(r.at(999).take(), []);
    assert_eq!(r.at(1000).take(), [start(1, "/r/a")]);
    // Nothing ran, so a write right after it is someone else's.
    r.at(1000)
        .feed(Input::ReaderFailed(1, failure("Permission denied")));
    r.at(1050).write();
    assert_eq!(r.at(1150).lists(), 1);
}

#[test]
fn a_part_lf_could_not_read_is_told_once() {
    let mut r = Replay::with(D, vec![open_in("s1", "/r/a")]);
    for ms in [100, 2100, 4100] {
        let part = Part::Unavailable("lf monitor: sessions: locked".into());
        r.at(ms).report(0, Some(5), part);
    }
    assert_eq!(r.warnings(), ["lf monitor: sessions: locked"]);
}

#[test]
fn a_bad_record_in_a_frame_is_a_warning() {
    let mut r = Replay::with(D, vec![open_in("s1", "/r/a")]);
    let part = Part::Sessions {
        repo: "/r".into(),
        entries: vec![open_in("s1", "/r/a")],
        problems: vec!["lf session record 3: missing field `state`".into()],
    };
    r.at(100).report(0, Some(5), part);
    assert_eq!(r.warnings(), ["lf session record 3: missing field `state`"]);
}

// The store's `sessions` revision, which every frame carries.

#[test]
fn the_first_revision_is_where_things_stand() {
    let mut r = Replay::with(D, vec![open_in("s1", "/r/a")]);
    r.at(100).frame(0, 5, "/r", vec![open_in("s1", "/r/a")]);
    assert_eq!(r.at(2000).lists(), 0);
}

#[test]
fn a_higher_revision_is_a_list_after_the_debounce() {
    let mut r = Replay::with(D, vec![open_in("s1", "/r/a")]);
    r.at(100).frame(0, 5, "/r", vec![open_in("s1", "/r/a")]);
    r.at(1000).beat(0, 6);
    assert_eq!(r.at(1099).lists(), 0);
    assert_eq!(r.at(1100).lists(), 1);
}

#[test]
fn the_same_or_a_lower_revision_is_nothing() {
    let mut r = Replay::with(D, vec![open_in("s1", "/r/a")]);
    r.at(100).frame(0, 5, "/r", vec![open_in("s1", "/r/a")]);
    r.at(1000).beat(0, 5);
    r.at(2000).beat(0, 4);
    assert_eq!(r.at(3000).lists(), 0);
}

// Resume from suspend: the monotonic clock stood still while the wall clock moved on.

#[test]
fn after_a_suspend_the_readers_are_asked_again_and_lf_listed() {
    let mut r = Replay::with(D, vec![open_in("s1", "/r/a"), open_in("s2", "/q/b")]);
    r.at(100).frame(0, 5, "/r", vec![open_in("s1", "/r/a")]);
    r.at(200).frame(1, 5, "/q", vec![open_in("s2", "/q/b")]);
    r.take();
    r.sleep(3600).at(300).beat(0, 5);
    assert_eq!(
        r.take(),
        [Command::Refresh(0), Command::Refresh(1), list(D)]
    );
}

#[test]
fn a_wall_clock_step_of_ten_seconds_or_less_is_no_suspend() {
    let mut r = Replay::new(C);
    r.sleep(10).at(1000).feed(Input::Warned(Vec::new()));
    assert_eq!(r.lists(), 0);
}

#[test]
fn without_readers_a_suspend_is_a_list() {
    let mut r = Replay::new(C);
    r.sleep(11).at(1000).feed(Input::Warned(Vec::new()));
    assert_eq!(r.take(), [list(C)]);
}

// A new lf while the tray runs: its program changed, it settles, it is asked what it is.

#[test]
fn a_changed_program_is_asked_once_it_settled() {
    let mut r = Replay::new(C);
    r.at(1000).feed(Input::ProgramChanged);
    r.at(1300).feed(Input::ProgramChanged);
    assert_eq!(r.at(1799).take(), []);
    assert_eq!(r.at(1800).take(), [Command::Detect]);
}

#[test]
fn a_new_generation_replaces_readers_sources_and_list() {
    let mut r = Replay::with(D, vec![open_in("s1", "/r/a")]);
    r.at(100).frame(0, 5, "/r", vec![open_in("s1", "/r/a")]);
    r.take();
    r.at(1000).feed(Input::Detected(Ok(Dialect::of(E))));
    assert_eq!(
        r.take(),
        [
            Command::StopReader(0),
            Command::Rescan { files: false },
            list(E)
        ],
        "its sources (the database's directory alone) are watched anew"
    );
    r.at(1200).listed(vec![open_in("s1", "/r/a")]);
    assert_eq!(r.take(), [], "and E has no readers");
    assert!(r.status().contains("generation E"), "{}", r.status());
}

#[test]
fn the_same_lf_again_changes_nothing() {
    let mut r = Replay::new(C);
    r.at(1000).feed(Input::ProgramChanged);
    r.at(1500).take();
    r.at(1600).feed(Input::Detected(Ok(Dialect::of(C))));
    assert_eq!(r.at(5000).take(), [], "not even its sources read anew");
}

#[test]
fn an_lf_that_cannot_say_what_it_is_is_told_once() {
    let mut r = Replay::new(C);
    for ms in [1000, 2000] {
        r.at(ms).feed(Input::Detected(Err(failure("killed"))));
    }
    assert_eq!(r.warnings(), ["lf session --help: killed"]);
}

// The quiet deadline: lf turns a silent session Waiting 120 s after its last word, with no
// write to say so; the tray asks again 121 s after each change.

#[test]
fn a_change_is_checked_again_121_s_later() {
    let mut r = Replay::hourly(D0);
    r.auto = Some(Vec::new());
    r.at(1000).write();
    assert_eq!(r.at(1100).lists(), 1);
    assert_eq!(r.at(121_999).lists(), 0);
    assert_eq!(r.at(122_000).lists(), 1);
}

#[test]
fn the_earliest_quiet_deadline_is_kept_and_never_postponed() {
    let mut r = Replay::hourly(D0);
    r.auto = Some(Vec::new());
    r.at(1000).write();
    r.at(50_000).write();
    assert_eq!(r.at(121_999).lists(), 2, "both changes");
    assert_eq!(r.at(122_000).lists(), 1, "the first change's deadline");
    assert_eq!(r.at(170_999).lists(), 0);
    assert_eq!(r.at(171_000).lists(), 1, "then the second's");
}

#[test]
fn before_the_quiet_rule_there_is_no_recheck() {
    let mut r = Replay::hourly(C);
    r.auto = Some(Vec::new());
    r.at(1000).write();
    assert_eq!(r.at(1100).lists(), 1);
    assert_eq!(r.at(200_000).lists(), 0);
}

// Merging: a full list replaces everything; a reader's frame replaces its repository,
// and only the sessions it touched are merged again.

#[test]
fn a_full_list_replaces_every_session() {
    let mut r = Replay::with(C, vec![open_in("s1", "/r/a"), open_in("s2", "/q/b")]);
    assert_eq!(r.told(), ["snapshot"]);
    r.at(1000).write();
    r.at(1100).listed(vec![open_in("s1", "/r/a")]);
    assert_eq!(r.told(), ["resolved s2"]);
    assert_eq!(r.shown(), ["s1"]);
}

#[test]
fn a_frame_replaces_only_its_repository() {
    let mut r = Replay::with(D, vec![open_in("s1", "/r/a"), open_in("s2", "/q/b")]);
    r.told();
    r.at(100).frame(0, 5, "/r", vec![waiting_in("s1", "/r/a")]);
    assert_eq!(r.told(), ["state s1"], "s2 is not merged again");
    r.at(200).frame(0, 6, "/r", Vec::new());
    assert_eq!(r.told(), ["resolved s1"]);
    assert_eq!(r.shown(), ["s2"], "the other repository's session stays");
}

#[test]
fn a_list_merges_again_only_the_sessions_it_changed() {
    let mut r = Replay::with(D, vec![open_in("s1", "/r/a"), open_in("s2", "/q/b")]);
    r.told();
    let full = r.disk.full_merges.get();
    r.at(1000).write();
    r.at(1100)
        .listed(vec![waiting_in("s1", "/r/a"), open_in("s2", "/q/b")]);
    assert_eq!(r.told(), ["state s1"]);
    r.at(2000).write();
    r.at(2100).listed(vec![waiting_in("s1", "/r/a")]);
    assert_eq!(r.told(), ["resolved s2"]);
    assert_eq!(r.shown(), ["s1"]);
    assert_eq!(r.disk.full_merges.get(), full, "no list merged everything");

    // After a failed list, the next (merged whole) still tells what changed meanwhile.
    r.at(3000).write();
    r.at(3100).failed("lf broke");
    r.told();
    r.at(4000).write();
    r.at(4100).listed(vec![open_in("s1", "/r/a")]);
    assert_eq!(r.told(), ["state s1"]);
    assert_eq!(r.shown(), ["s1"]);
}

#[test]
fn a_file_change_merges_only_the_sessions_it_touched() {
    let mut r = Replay::new(Generation::A);
    r.told();
    let full = r.disk.full_merges.get();
    let ask = test_record("ask_1", Some(crate::Kind::Ask), State::Waiting);
    r.disk.sessions.insert("ask_1".into(), ask);
    r.disk.touched.insert("ask_1".into());
    r.at(1000).feed(Input::FilesChanged { full: false });
    assert_eq!(r.told(), ["asked ask_1"]);
    assert_eq!(r.disk.full_merges.get(), full);
}

/// The file half read `id` again after an event: now `record`, or gone.
fn on_disk(r: &mut Replay, id: &str, record: Option<SessionRecord>) {
    match record {
        Some(record) => r.disk.sessions.insert(id.into(), record),
        None => r.disk.sessions.remove(id),
    };
    r.disk.touched.insert(id.into());
}

fn ask(id: &str, state: State) -> SessionRecord {
    test_record(id, Some(crate::Kind::Ask), state)
}

/// A session Run lf lists as an interactive session (generation A).
fn conversation(id: &str, state: State) -> SessionRecord {
    test_record(id, Some(crate::Kind::Interactive), state)
}

#[test]
fn a_burst_of_events_on_one_record_is_one_transition() {
    // lf writes a record to a temporary name and renames it; an editor may write it in
    // several steps: every event of the burst arrives queued, and the person hears once.
    let mut r = Replay::new(Generation::A);
    r.told();
    on_disk(&mut r, "ask_1", Some(ask("ask_1", State::Waiting)));
    let burst = (0..5)
        .map(|_| Input::FilesChanged { full: false })
        .collect();
    r.at(1000).burst(burst);
    assert_eq!(r.told(), ["asked ask_1"]);
    // The same record written again unchanged is no news.
    on_disk(&mut r, "ask_1", Some(ask("ask_1", State::Waiting)));
    r.at(2000).feed(Input::FilesChanged { full: false });
    assert!(r.told().is_empty());
}

#[test]
fn a_replaced_record_is_its_next_transition_and_a_removed_one_is_resolved() {
    let mut r = Replay::new(Generation::A);
    on_disk(&mut r, "ask_1", Some(ask("ask_1", State::Waiting)));
    r.at(1000).feed(Input::FilesChanged { full: false });
    r.told();
    let mut ready = ask("ask_1", State::Ready);
    ready.ready_summary = Some("Shipped".into());
    on_disk(&mut r, "ask_1", Some(ready));
    r.at(2000).feed(Input::FilesChanged { full: false });
    assert_eq!(r.told(), ["ready ask_1"]);
    on_disk(&mut r, "ask_1", None);
    r.at(3000).feed(Input::FilesChanged { full: false });
    assert_eq!(r.told(), ["resolved ask_1"]);
    assert!(r.shown().is_empty());
}

#[test]
fn a_record_that_turned_unreadable_warns_and_keeps_its_session() {
    // The file half keeps the last good version and says why it could not read the file.
    let mut r = Replay::new(Generation::A);
    on_disk(&mut r, "ask_1", Some(ask("ask_1", State::Waiting)));
    on_disk(&mut r, "ask_2", Some(ask("ask_2", State::Waiting)));
    r.at(1000).feed(Input::FilesChanged { full: false });
    r.told();
    let warning = Warning::new(
        Some("/home/me/.lf/human-sessions/ask_1.json".into()),
        "Ask record is not valid JSON",
    );
    r.disk.touched.insert("ask_1".into());
    r.at(2000).burst(vec![
        Input::Warned(vec![warning]),
        Input::FilesChanged { full: false },
    ]);
    assert_eq!(r.warnings(), ["Ask record is not valid JSON"]);
    assert!(r.told().is_empty(), "nothing closed, nothing told again");
    assert_eq!(r.shown(), ["ask_1", "ask_2"]);
}

#[test]
fn a_directory_that_appears_late_is_merged_whole() {
    // `human-sessions/` made after the tray started: the file half reads it all at once.
    let mut r = Replay::new(Generation::A);
    r.told();
    let full = r.disk.full_merges.get();
    r.disk
        .sessions
        .insert("ask_1".into(), ask("ask_1", State::Waiting));
    r.disk
        .sessions
        .insert("ask_2".into(), ask("ask_2", State::Ready));
    r.at(1000).feed(Input::FilesChanged { full: true });
    assert_eq!(r.disk.full_merges.get(), full + 1);
    assert_eq!(r.told(), ["asked ask_1", "ready ask_2"]);
}

#[test]
fn a_client_that_exits_is_a_change_of_its_session_alone() {
    // The file half judges the Run's clients again when one exits (no file changes): the
    // session it lists turns from Active to Waiting, a change of state told for it alone
    // (a conversation waiting for its person to come back asks nothing); the other is not
    // merged again.
    let mut r = Replay::new(Generation::A);
    on_disk(&mut r, "run_1", Some(conversation("run_1", State::Active)));
    on_disk(&mut r, "run_2", Some(conversation("run_2", State::Active)));
    r.at(1000).feed(Input::FilesChanged { full: false });
    r.told();
    let full = r.disk.full_merges.get();
    on_disk(&mut r, "run_1", Some(conversation("run_1", State::Waiting)));
    r.at(2000).feed(Input::FilesChanged { full: false });
    assert_eq!(r.told(), ["state run_1"]);
    assert_eq!(r.disk.full_merges.get(), full);
}

#[test]
fn nothing_that_changed_nothing_costs_an_update() {
    let mut r = Replay::new(C);
    let full = r.disk.full_merges.get();
    r.disk.touched.insert("s9".into());
    r.at(1000).feed(Input::Warned(Vec::new()));
    assert_eq!(r.disk.touched.len(), 1, "the file half was not even asked");
    assert_eq!(r.disk.full_merges.get(), full);
}

// Bad records and failing lists.

#[test]
fn a_bad_record_in_a_list_is_a_warning() {
    let mut r = Replay::new(C);
    r.at(1000).write();
    let problems = vec!["lf session record 2: bad state".to_string()];
    r.at(1100).feed(Input::Listed(shared(Ok((
        vec![open_in("s1", "/r/a")],
        problems,
    )))));
    assert_eq!(r.warnings(), ["lf session record 2: bad state"]);
    assert_eq!(r.shown(), ["s1"], "the good records are shown");
}

#[test]
fn a_failing_list_warns_once_not_per_retry() {
    let mut r = Replay::with(C, vec![open_in("s1", "/r/a")]);
    for ms in [1000, 2000, 3000] {
        r.at(ms).write();
        assert_eq!(r.at(ms + 100).lists(), 1);
        r.at(ms + 200).failed("database is locked");
    }
    assert_eq!(r.warnings(), ["lf session list: database is locked"]);
    assert!(r.status().starts_with("lf failed"), "{}", r.status());
    assert_eq!(r.shown(), ["s1"], "the last good list stays");
}

#[test]
fn a_failure_after_a_good_list_or_another_failure_warns_again() {
    let mut r = Replay::new(C);
    let steps: [Option<&str>; 4] = [Some("locked"), Some("timeout"), None, Some("timeout")];
    for (i, step) in steps.into_iter().enumerate() {
        let ms = 1000 * (i as u64 + 1);
        r.at(ms).write();
        assert_eq!(r.at(ms + 100).lists(), 1);
        match step {
            Some(why) => r.at(ms + 200).failed(why),
            None => r.at(ms + 200).listed(Vec::new()),
        };
    }
    assert_eq!(
        r.warnings(),
        [
            "lf session list: locked",
            "lf session list: timeout",
            "lf session list: timeout"
        ]
    );
}

// The safety list: once a minute of nothing else.

#[test]
fn the_safety_list_comes_after_a_minute_of_nothing() {
    let mut r = Replay::new(C);
    r.auto = Some(Vec::new());
    assert_eq!(r.at(59_999).lists(), 0);
    assert_eq!(r.at(60_000).lists(), 1);
    assert_eq!(r.at(119_999).lists(), 0);
    assert_eq!(r.at(120_000).lists(), 1);
}

#[test]
fn any_list_puts_the_safety_list_a_minute_after_it() {
    let mut r = Replay::new(C);
    r.auto = Some(Vec::new());
    r.at(30_000).write();
    assert_eq!(r.at(30_100).lists(), 1);
    assert_eq!(r.at(90_099).lists(), 0);
    assert_eq!(r.at(90_100).lists(), 1);
}

#[test]
fn without_an_lf_nothing_is_ever_listed() {
    let mut r = Replay::started(None, Vec::new(), SAFETY_INTERVAL);
    r.at(1000).feed(Input::Written);
    assert_eq!(r.at(600_000).take(), []);
    assert!(r.status().starts_with("No lf found"), "{}", r.status());
}

// Agents (generation E2): lf names each by its Process id, lf's process list says which
// process that is, and lf writes nothing when an agent dies with its lf, so its exit is
// watched.

#[test]
fn a_new_agent_is_found_with_one_process_list_then_watched() {
    let mut r = Replay::with(E, vec![with_agent("s1", A1)]);
    assert_eq!(r.take(), [find(&[A1])]);
    r.at(100).feed(found(&[(A1, Some((4242, Runs::Terminal)))]));
    assert_eq!(r.take(), [watch(A1, 4242)]);
    let record = r.shared.snapshot.get("s1").unwrap();
    assert_eq!(
        record.agent(),
        Some(&Agent {
            id: A1.into(),
            pid: Some(4242),
            runs: Runs::Terminal
        })
    );
    assert!(record.in_terminal() && !record.attached() && !record.headless());
    // Listed again: nothing new to ask lf.
    r.at(1000).write();
    r.at(1100).take();
    r.at(1200).listed(vec![with_agent("s1", A1)]);
    assert_eq!(r.take(), [], "one process list per new agent");
}

#[test]
fn the_process_lists_own_write_lists_nothing() {
    let mut r = Replay::with(E, vec![with_agent("s1", A1)]);
    r.take();
    r.at(100).feed(found(&[(A1, Some((4242, Runs::Headless)))]));
    // lf's own Process row, delivered just after it ended: the files as it left them.
    r.at(150).late_write();
    assert_eq!(r.at(5_000).take(), [watch(A1, 4242)]);
    assert!(r.shared.snapshot.get("s1").unwrap().headless());
}

#[test]
fn a_write_while_lf_lists_its_processes_is_listed_a_moment_after() {
    // lf's process list writes its own Process row; someone's ask may land meanwhile,
    // and inotify does not say whose a write is.
    let mut r = Replay::with(E, vec![with_agent("s1", A1)]);
    assert_eq!(r.take(), [find(&[A1])]);
    r.at(50).write();
    assert_eq!(r.lists(), 0, "not while it runs");
    r.at(100).feed(found(&[(A1, Some((4242, Runs::Terminal)))]));
    assert_eq!(r.take(), [watch(A1, 4242)]);
    let recheck = crate::schedule::DOUBT_RECHECK.as_millis() as u64;
    assert_eq!(r.at(100 + recheck - 1).lists(), 0);
    assert_eq!(r.at(100 + recheck).lists(), 1, "a moment later");
    r.at(100 + recheck + 100).listed(vec![with_agent("s1", A1)]);
    assert_eq!(r.at(30_000).lists(), 0, "and no more");
}

#[test]
fn the_list_that_found_a_new_agent_checks_the_process_lists_write_too() {
    let mut r = Replay::with(E, vec![]);
    r.take();
    // Someone starts an agent: a list finds it, while its own write came (a doubt).
    r.at(1000).write();
    assert_eq!(r.at(1100).lists(), 1);
    r.at(1150).late_write();
    r.at(1200).listed(vec![with_agent("s1", A1)]);
    assert_eq!(r.take(), [find(&[A1])]);
    r.at(1250).write();
    r.at(1300)
        .feed(found(&[(A1, Some((4242, Runs::Terminal)))]));
    r.take();
    // One list a second after the first serves for both: no extra lf run.
    let recheck = crate::schedule::DOUBT_RECHECK.as_millis() as u64;
    assert_eq!(r.at(1200 + recheck).lists(), 1);
    r.at(1300 + recheck).listed(vec![with_agent("s1", A1)]);
    assert_eq!(r.at(1300 + recheck * 3).lists(), 0);
}

#[test]
fn agents_listed_while_lf_is_asked_wait_for_the_next_question() {
    let mut r = Replay::with(E, vec![with_agent("s1", A1), with_agent("s2", A2)]);
    assert_eq!(r.take(), [find(&[A1, A2])], "both in one lf run");
    r.at(1000).write();
    r.at(1100).take();
    r.at(1200).listed(vec![
        with_agent("s1", A1),
        with_agent("s2", A2),
        with_agent("s3", A3),
    ]);
    assert_eq!(r.take(), [], "one question at a time");
    r.at(1300).feed(found(&[
        (A1, Some((4242, Runs::Terminal))),
        (A2, Some((4343, Runs::Terminal))),
    ]));
    assert_eq!(r.take(), [watch(A1, 4242), watch(A2, 4343), find(&[A3])]);
}

#[test]
fn an_agents_exit_is_a_list_now_and_never_watched_again() {
    let mut r = Replay::with(E, vec![with_agent("s1", A1)]);
    r.take();
    r.at(100).feed(found(&[(A1, Some((4242, Runs::Terminal)))]));
    r.take();
    r.at(1000).feed(Input::Exited(Exit::Agent(A1.into())));
    assert_eq!(r.take(), [list(E)], "at once");
    // A zombie not yet reaped reads as alive to lf for a moment: its exit was seen once.
    r.at(1200).listed(vec![with_agent("s1", A1)]);
    assert_eq!(r.take(), [], "no second question, no second watch");
    let mut dead = with_agent("s1", A1);
    dead.state = State::Closed;
    r.at(2000).write();
    r.at(2100).take();
    r.at(2200).listed(vec![dead.clone()]);
    assert_eq!(r.take(), []);
    let told = r.told();
    assert!(
        told.contains(&"stopped s1".to_string()),
        "its stop, with no terminal attached: {told:?}"
    );
    assert_eq!(
        r.at(30_000).take(),
        [],
        "and nothing lists before the safety list"
    );
    // Arriving already dead: nothing to find or watch.
    let mut r = Replay::with(E, vec![dead]);
    assert_eq!(r.take(), []);
}

#[test]
fn an_agent_lf_no_longer_lists_is_dead_a_list_tells_it() {
    let mut r = Replay::with(E, vec![with_agent("s1", A1)]);
    r.take();
    r.at(100).feed(found(&[(A1, None)]));
    assert_eq!(r.take(), [list(E)]);
    r.at(300).listed(vec![with_agent("s1", A1)]);
    assert_eq!(r.take(), [], "not asked again while listed");
}

/// s1 and s2 listed, naming A1 and A2, both agents found and watched, and a write listed
/// for: the next list is the replay's to give.
fn two_agents_watched() -> Replay {
    let mut r = Replay::with(E, vec![with_agent("s1", A1), with_agent("s2", A2)]);
    r.take();
    r.at(100).feed(found(&[
        (A1, Some((4242, Runs::Terminal))),
        (A2, Some((4343, Runs::Terminal))),
    ]));
    r.take();
    r.at(1000).write();
    r.at(1100).take();
    r
}

#[test]
fn an_agent_no_longer_listed_is_no_longer_watched() {
    let mut r = two_agents_watched();
    r.at(1200)
        .listed(vec![with_agent("s2", A2), with_agent("s3", A3)]);
    assert_eq!(
        r.take(),
        [Command::UnwatchExit(Exit::Agent(A1.into())), find(&[A3])]
    );
    // A late exit of the forgotten one changes nothing.
    r.at(1300).feed(Input::Exited(Exit::Agent(A1.into())));
    assert_eq!(r.take(), []);
}

#[test]
fn an_lf_without_a_process_list_is_asked_once_per_new_agent() {
    let mut r = Replay::with(E, vec![with_agent("s1", A1)]);
    r.take();
    r.at(100).feed(Input::AgentsFound(Err(failure(
        "unrecognized subcommand 'ps'",
    ))));
    assert_eq!(r.take(), []);
    let warnings = r.warnings();
    assert!(
        warnings.len() == 1 && warnings[0].starts_with("lf monitor ps: unrecognized"),
        "{warnings:?}"
    );
    r.at(1000).write();
    r.at(1100).take();
    r.at(1200)
        .listed(vec![with_agent("s1", A1), with_agent("s2", A2)]);
    assert_eq!(r.take(), [find(&[A2])], "only the new one");
    r.at(1300).feed(Input::AgentsFound(Err(failure(
        "unrecognized subcommand 'ps'",
    ))));
    assert_eq!(r.warnings(), Vec::<String>::new(), "told once");
    let agent = r
        .shared
        .snapshot
        .get("s1")
        .unwrap()
        .agent()
        .cloned()
        .unwrap();
    assert_eq!((agent.pid, agent.runs), (None, Runs::Unknown));
}

// The agents' bookkeeping follows what each list changed: these cases check that it
// still holds whichever way a list came (same order, a new order, whole after a failure,
// a reader's frame, a new lf).

/// An E2 session in a worktree whose agent lf names.
fn agent_in(id: &str, worktree: &str, agent: &str) -> SessionRecord {
    let mut record = open_in(id, worktree);
    record.set_lf_field("agent_process_id", agent);
    record.set_lf_field("terminal_ids", serde_json::json!([]));
    record
}

fn unwatch(id: &str) -> Command {
    Command::UnwatchExit(Exit::Agent(id.into()))
}

/// The commands about agents (the readers' and lists' left out).
fn about_agents(commands: Vec<Command>) -> Vec<Command> {
    let agents = |c: &Command| {
        matches!(
            c,
            Command::FindAgents(_) | Command::WatchExit { .. } | Command::UnwatchExit(_)
        )
    };
    commands.into_iter().filter(agents).collect()
}

/// The record published for `id`, as the surfaces hold it.
fn published(r: &Replay, id: &str) -> Arc<SessionRecord> {
    let shared = r.shared.snapshot.shared().find(|s| s.id == id);
    Arc::clone(shared.expect("published"))
}

fn pid(r: &Replay, id: &str) -> Option<u32> {
    r.shared.snapshot.get(id)?.agent()?.pid
}

#[test]
fn an_agent_two_sessions_name_stays_watched_until_neither_names_it() {
    let mut r = Replay::with(E, vec![with_agent("s1", A1), with_agent("s2", A1)]);
    assert_eq!(r.take(), [find(&[A1])], "one question for both");
    r.at(100).feed(found(&[(A1, Some((4242, Runs::Terminal)))]));
    assert_eq!(r.take(), [watch(A1, 4242)]);
    assert_eq!((pid(&r, "s1"), pid(&r, "s2")), (Some(4242), Some(4242)));
    // s1 reads closed (lf's list in the same order): s2 still names the agent.
    let mut closed = with_agent("s1", A1);
    closed.state = State::Closed;
    r.at(1000).write();
    r.at(1100).take();
    r.at(1200).listed(vec![closed, with_agent("s2", A1)]);
    assert_eq!(r.take(), [], "still watched for s2");
    // s1 is gone (a list of other ids).
    r.at(2000).write();
    r.at(2100).take();
    r.at(2200).listed(vec![with_agent("s2", A1)]);
    assert_eq!(r.take(), []);
    assert_eq!(pid(&r, "s2"), Some(4242));
    // Neither names it now: dropped, and the new one asked for.
    r.at(3000).write();
    r.at(3100).take();
    r.at(3200).listed(vec![with_agent("s3", A2)]);
    assert_eq!(r.take(), [unwatch(A1), find(&[A2])]);
}

#[test]
fn an_agent_listed_and_gone_while_lf_is_asked_is_never_asked_for() {
    let mut r = Replay::with(E, vec![with_agent("s1", A1)]);
    assert_eq!(r.take(), [find(&[A1])]);
    r.at(1000).write();
    r.at(1100).take();
    r.at(1200)
        .listed(vec![with_agent("s1", A1), with_agent("s2", A2)]);
    r.at(2000).write();
    r.at(2100).take();
    r.at(2200).listed(vec![with_agent("s1", A1)]);
    assert_eq!(r.take(), []);
    r.at(2300)
        .feed(found(&[(A1, Some((4242, Runs::Terminal)))]));
    assert_eq!(r.take(), [watch(A1, 4242)], "A2 came and went meanwhile");
}

#[test]
fn lists_in_a_new_order_and_after_a_failure_count_the_agents_again() {
    let mut r = two_agents_watched();
    // The same sessions in another order, s2 now naming A1 too: A2 is dropped.
    r.at(1200)
        .listed(vec![with_agent("s2", A1), with_agent("s1", A1)]);
    assert_eq!(r.take(), [unwatch(A2)]);
    assert_eq!(pid(&r, "s2"), Some(4242));
    // A failed list keeps the last good one; the next is taken whole.
    r.at(2000).write();
    r.at(2100).take();
    r.at(2200).failed("lf broke");
    r.at(3000).write();
    r.at(3100).take();
    r.at(3200)
        .listed(vec![with_agent("s2", A1), with_agent("s3", A3)]);
    assert_eq!(r.take(), [find(&[A3])], "A1 named still, A3 new");
    r.at(4000).write();
    r.at(4100).take();
    r.at(4200).listed(vec![with_agent("s3", A3)]);
    assert_eq!(r.take(), [unwatch(A1)]);
}

#[test]
fn an_lf_that_names_no_agents_drops_every_watch() {
    let mut r = Replay::with(E, vec![with_agent("s1", A1), with_agent("s2", A2)]);
    r.take();
    r.at(100).feed(found(&[(A1, Some((4242, Runs::Terminal)))]));
    r.take();
    r.at(1000).feed(Input::Detected(Ok(Dialect::of(D))));
    let unwatched = about_agents(r.take());
    assert_eq!(unwatched, [unwatch(A1)], "A2 was never watched");
}

#[test]
fn a_readers_frame_counts_the_agents_of_its_repository_again() {
    // No lf has both (E's reader is never started): the frame's path, kept right anyway.
    let both = Dialect {
        reader_scope: crate::lf::dialect::ReaderScope::Repository,
        ..Dialect::of(E)
    };
    let listed = vec![agent_in("s1", "/r/a", A1), agent_in("s2", "/q/b", A2)];
    let lf = (Ok(both), Ok((listed, Vec::new())));
    let mut r = Replay::starting(Some(lf), SAFETY_INTERVAL);
    let asked = r.take();
    assert!(asked.contains(&find(&[A1, A2])), "{asked:?}");
    r.at(100).feed(found(&[
        (A1, Some((4242, Runs::Terminal))),
        (A2, Some((4343, Runs::Terminal))),
    ]));
    r.take();
    let frame = vec![agent_in("s1", "/r/a", A1), agent_in("s3", "/r/c", A3)];
    r.at(200).frame(0, 5, "/r", frame);
    assert_eq!(about_agents(r.take()), [find(&[A3])]);
    r.at(300)
        .frame(0, 6, "/r", vec![agent_in("s3", "/r/c", A2)]);
    let unwatched = about_agents(r.take());
    assert_eq!(
        unwatched,
        [unwatch(A1)],
        "A2 named by s2 and s3, A3 by none"
    );
    assert_eq!(pid(&r, "s3"), Some(4343));
}

#[test]
fn a_found_agent_merges_again_only_the_sessions_that_name_it() {
    let plain = |id| test_record(id, None, State::Active);
    let listed = vec![
        with_agent("s1", A1),
        plain("s2"),
        with_agent("s3", A1),
        plain("s4"),
        with_agent("s5", A2),
    ];
    let mut r = Replay::with(E, listed);
    r.take();
    r.told();
    let other = published(&r, "s2");
    let full = r.disk.full_merges.get();
    r.at(100).feed(found(&[
        (A1, Some((4242, Runs::Terminal))),
        (A2, Some((4343, Runs::Terminal))),
    ]));
    assert_eq!((pid(&r, "s1"), pid(&r, "s3")), (Some(4242), Some(4242)));
    assert!(Arc::ptr_eq(&other, &published(&r, "s2")), "s2 not merged");
    // Its exit: the pid leaves both, and s2 is still not merged.
    r.at(1000).feed(Input::Exited(Exit::Agent(A1.into())));
    assert_eq!((pid(&r, "s1"), pid(&r, "s3")), (None, None));
    assert_eq!(pid(&r, "s5"), Some(4343));
    assert!(Arc::ptr_eq(&other, &published(&r, "s2")));
    assert_eq!(r.disk.full_merges.get(), full, "no full merge");
}

/// What a new session with its own agent costs the core at 10 000 sessions, each with
/// its own agent (as in real use): the list that brings it, lf's process list's answer,
/// and a list where one session changed state. Figures, not a timed test: run it with
/// `cargo test --release -p lf-tray-core --lib -- --ignored --nocapture new_agent_at_10000`.
#[test]
#[ignore = "a measurement: run in release"]
fn new_agent_at_10000() {
    const N: usize = 10_000;
    let agent = |i: usize| format!("{i:08}-0000-4000-8000-000000000000");
    let mut records: Vec<Arc<SessionRecord>> = (0..N)
        .map(|i| Arc::new(with_agent(&format!("s{i:05}"), &agent(i))))
        .collect();
    let plain: Vec<SessionRecord> = records.iter().map(|r| SessionRecord::clone(r)).collect();
    let mut r = Replay::with(E, plain);
    r.take();
    let all: Vec<(String, Option<(u32, Runs)>)> = (0..N)
        .map(|i| (agent(i), Some((1000 + i as u32, Runs::Terminal))))
        .collect();
    let all: Vec<(&str, Option<(u32, Runs)>)> = all.iter().map(|(a, p)| (a.as_str(), *p)).collect();
    r.at(100).feed(found(&all));
    r.take();
    let (mut listing, mut answer, mut state) = (Vec::new(), Vec::new(), Vec::new());
    let mut at = 1000;
    for k in 0..15 {
        let i = N + k;
        records.push(Arc::new(with_agent(&format!("s{i:05}"), &agent(i))));
        let list = Input::Listed(Ok((records.clone(), Vec::new())));
        at += 1000;
        r.at(at);
        let started = std::time::Instant::now();
        r.feed(list);
        listing.push(started.elapsed());
        assert_eq!(r.take(), [find(&[&agent(i)])]);
        let answered = found(&[(&agent(i), Some((1000 + i as u32, Runs::Terminal)))]);
        at += 100;
        r.at(at);
        let started = std::time::Instant::now();
        r.feed(answered);
        answer.push(started.elapsed());
        assert_eq!(r.take(), [watch(&agent(i), 1000 + i as u32)]);
        // One session turns waiting, the list in the same order.
        let mut waiting = SessionRecord::clone(&records[k]);
        waiting.state = State::Waiting;
        records[k] = Arc::new(waiting);
        let list = Input::Listed(Ok((records.clone(), Vec::new())));
        at += 1000;
        r.at(at);
        let started = std::time::Instant::now();
        r.feed(list);
        state.push(started.elapsed());
        r.take();
    }
    let median = |mut d: Vec<Duration>| {
        d.sort();
        d[d.len() / 2].as_secs_f64() * 1e3
    };
    println!(
        "{N} sessions, medians of 15: a list bringing a new agent {:.2} ms; lf's process \
         list's answer for it {:.2} ms; a list where one session changed state {:.2} ms",
        median(listing),
        median(answer),
        median(state)
    );
}

#[test]
fn before_e_agents_are_not_watched() {
    let mut r = Replay::with(D0, vec![with_agent("s1", A1)]);
    assert_eq!(r.take(), []);
    assert_eq!(r.shared.snapshot.get("s1").unwrap().agent(), None);
}

// An action: the tray's own lf run, then a list whose end lets the caller go on.

#[test]
fn an_action_is_followed_by_a_list_and_answered_after_it() {
    let mut r = Replay::new(C);
    r.at(1000).feed(Input::Acting);
    r.at(1010).write();
    r.at(1300).feed(Input::Acted(7));
    assert_eq!(r.take(), [list(C)], "at once, without the debounce");
    r.at(1500).listed(Vec::new());
    assert_eq!(r.take(), [Command::Answer(7)]);
}

#[test]
fn an_action_ending_while_a_list_runs_waits_for_the_next_list() {
    let mut r = Replay::new(C);
    r.at(1000).write();
    assert_eq!(r.at(1100).lists(), 1);
    r.at(1110).feed(Input::Acting);
    r.at(1150).feed(Input::Acted(1));
    r.at(1200).listed(Vec::new());
    assert_eq!(r.take(), [list(C)], "the running list saw no effect of it");
    r.at(1400).listed(Vec::new());
    assert_eq!(r.take(), [Command::Answer(1)]);
}

#[test]
fn an_action_ends_the_trays_own_run_so_a_late_write_is_its_own() {
    let mut r = Replay::new(C);
    r.at(1000).feed(Input::Acting);
    r.at(1300).feed(Input::Acted(1));
    r.at(1310).take();
    r.at(1320).late_write();
    r.at(1500).listed(Vec::new());
    r.at(1510).late_write();
    assert_eq!(r.at(5000).lists(), 0);
}

#[test]
fn a_report_from_a_reader_let_go_of_is_ignored() {
    let mut r = Replay::with(D, vec![open_in("s1", "/r/a"), open_in("s2", "/r/b")]);
    let both = vec![open_in("s1", "/r/a"), open_in("s2", "/r/b")];
    r.at(100).frame(0, 5, "/r", both.clone());
    r.at(120).frame(1, 5, "/r", both);
    r.take();
    r.told();
    r.at(200).frame(1, 9, "/r", Vec::new());
    r.at(300).ended(1, "gone");
    assert_eq!(r.at(2000).take(), [], "no list, no restart");
    assert!(r.told().is_empty() && r.warnings().is_empty());
}

// Other machines: each follower's reports come to the core, which tells their changes.

#[test]
fn a_machines_first_view_is_a_snapshot_and_later_ones_transitions() {
    let mut r = Replay::new(C);
    r.told();
    r.at(0).feed(Input::Machines(vec!["box".into()]));
    let view = |ids: &[&str]| {
        let records = ids.iter().map(|id| test_record(id, None, State::Active));
        machine::Report::View(records.collect())
    };
    r.at(1000).feed(Input::Machine(0, view(&["m1", "m2"])));
    assert_eq!(r.told(), ["snapshot"]);
    r.at(2000).feed(Input::Machine(0, view(&["m1"])));
    assert_eq!(r.told(), ["resolved m2"]);
    r.at(3000).feed(Input::Machine(
        0,
        machine::Report::Down("ssh: timeout".into()),
    ));
    assert_eq!(r.lists(), 0, "another machine never lists this one");
}

#[test]
fn a_machine_let_go_leaves_in_one_snapshot_and_its_late_reports_land_nowhere() {
    let mut r = Replay::new(C);
    r.told();
    r.take();
    let view = |ids: &[&str]| {
        let records = ids.iter().map(|id| test_record(id, None, State::Active));
        machine::Report::View(records.collect())
    };
    let follow = |id, dest: &str| Command::Follow {
        id,
        ssh: machine::Ssh::new(dest).unwrap(),
    };
    let names = |r: &Replay| -> Vec<String> {
        let mut names: Vec<String> =
            super::core::all_sessions(&r.shared.snapshot, &r.shared.machines)
                .into_iter()
                .map(|s| format!("{}@{}", s.id, s.machine.unwrap_or_default()))
                .collect();
        names.sort();
        names
    };
    r.at(0)
        .feed(Input::Machines(vec!["box".into(), "far".into()]));
    assert_eq!(r.take(), [follow(0, "box"), follow(1, "far")]);
    r.at(1000).feed(Input::Machine(0, view(&["b1"])));
    r.at(1000).feed(Input::Machine(1, view(&["f1"])));
    assert_eq!(r.told(), ["snapshot", "snapshot"]);

    r.at(2000).feed(Input::Machines(vec!["far".into()]));
    assert_eq!(r.take(), [Command::Unfollow(0)]);
    assert_eq!(r.told(), ["snapshot"], "the list changed as a whole");
    assert_eq!(names(&r), ["f1@far"]);

    // Its follower's last report, queued before it was stopped.
    r.at(2100).feed(Input::Machine(0, view(&["b1", "b2"])));
    assert!(r.told().is_empty());
    assert_eq!(names(&r), ["f1@far"]);

    // Named again, it is a new follower; the one that stayed is not started again.
    r.at(3000)
        .feed(Input::Machines(vec!["far".into(), "box".into()]));
    assert_eq!(r.take(), [follow(2, "box")]);
    assert!(r.told().is_empty(), "nothing to show of it yet");
    r.at(3100).feed(Input::Machine(0, view(&["b1"])));
    r.at(3100).feed(Input::Machine(2, view(&["b3"])));
    assert_eq!(names(&r), ["b3@box", "f1@far"]);
}

// Start-up: the engine waits for lf's answers before its first snapshot.

#[test]
fn the_first_snapshot_comes_before_the_start_ups_warnings() {
    let lf = (
        Err(failure("killed")),
        Ok((vec![open_in("s1", "/r/a")], Vec::new())),
    );
    let mut r = Replay::starting(Some(lf), SAFETY_INTERVAL);
    assert!(
        matches!(&r.events[..], [Event::Snapshot { sessions, .. }, Event::Warning { .. }] if sessions.len() == 1)
    );
    assert_eq!(r.warnings(), ["lf session --help: killed"]);
    assert!(!r.status().contains("generation"), "{}", r.status());
}

#[test]
fn a_first_list_that_fails_starts_with_lfs_failure() {
    let lf = (Ok(Dialect::of(C)), Err(failure("database is locked")));
    let mut r = Replay::starting(Some(lf), SAFETY_INTERVAL);
    assert_eq!(r.warnings(), ["lf session list: database is locked"]);
    assert!(r.status().starts_with("lf failed"), "{}", r.status());
    r.at(1000).write();
    r.at(1100).take();
    r.at(1200).failed("database is locked");
    assert!(r.warnings().is_empty(), "the same failure, told already");
}

#[test]
fn an_lf_that_moved_from_files_to_the_store_stops_reading_files() {
    let mut r = Replay::new(Generation::A);
    assert!(r.core.files());
    r.at(1000).feed(Input::Detected(Ok(Dialect::of(C))));
    assert!(!r.core.files(), "the file half is told on its next batch");
    assert_eq!(r.take(), [Command::Rescan { files: false }, list(C)]);
}
