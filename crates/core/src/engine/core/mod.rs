//! The engine's decisions, as a state machine with no I/O of its own: it is told what
//! happened ([`Input`]) and when ([`Now`]), and answers with the events to publish, the
//! [`Change`]s to what the surfaces read (the task keeps that for the engine's handle; the
//! core shares no lock), and the [`Command`]s for the engine's task to carry out (run a
//! list, start or stop a reader, watch a process's exit …), whose results come back as
//! inputs. How lf's database files look comes with the clocks ([`Now`]); the sessions the
//! file half holds come through a [`FileView`] of its data, so tests give it one made of
//! data.
//!
//! lf's side is scheduled by [`Schedule`] (when to list, and never because of the tray's
//! own lf runs); the readers, one per repository with open sessions, bring generation D's
//! attention as it changes, including the quiet deadline no write announces.
//!
//! The core is split by what it follows, each part in its own file: the lf program in use
//! (`program.rs`), its list (`listing.rs`) and the callers waiting for one
//! (`waiters.rs`), lf's readers (`readers.rs`), the agents listed sessions name
//! (`agents.rs`), other machines (`machines.rs`), and the merge of the file half's records
//! with lf's list into what is published (`merge.rs`), and the warnings to give
//! (`warnings.rs`); what the task and the core say to each other is in `io.rs`. This file takes the inputs, keeps lf's schedule, and hands each part
//! its share.

mod agents;
mod io;
mod listing;
mod machines;
mod merge;
mod program;
mod readers;
mod waiters;
mod warnings;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use time::OffsetDateTime;
use tokio::time::Instant;

use crate::engine::parts::Listed;
use crate::event::{Event, Warning};
use crate::lf::agent::Found;
use crate::lf::cli::{one_line, LfError};
use crate::lf::dialect::Dialect;
use crate::lf::monitor::Report;
use crate::lf::record::SessionRecord;
use crate::lf::Revisions;
use crate::schedule::{Schedule, Stamp};
use crate::snapshot::Snapshot;

use self::agents::Agents;
pub(crate) use self::io::{Command, Exit, Input};
use self::listing::Listing;
pub(crate) use self::machines::Followed;
use self::machines::Machines;
pub(super) use self::machines::{all_sessions, shared_sessions};
use self::merge::{LfSide, Merge};
use self::program::Program;
use self::readers::{Heard, Readers, Said};
use self::waiters::Waiters;
use self::warnings::Warnings;

/// The wall clock moving this much further than the monotonic clock between two
/// wake-ups means the machine slept: lf's readers are asked for everything again.
const RESUME_JUMP: Duration = Duration::from_secs(10);

/// Both clocks, read once by the task for each thing it hands the core: the monotonic one
/// for every deadline, the wall one for the events' times and to tell that the machine
/// slept (the monotonic clock stands still in suspend, the wall clock does not). With them,
/// how lf's database files look at that moment.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Now {
    pub mono: Instant,
    pub wall: SystemTime,
    pub db: Stamp,
}

impl Now {
    fn at(self) -> OffsetDateTime {
        self.wall.into()
    }
}

/// What the core reads of the file half while it decides: the data it holds (the task
/// has it read and watch the files), never the machine itself.
pub(crate) trait FileView {
    /// Whether a source directory of the files existed when the file half last looked.
    fn present(&self) -> bool;
    /// The sessions the files show, and one of them by id.
    fn sessions(&self) -> Vec<SessionRecord>;
    fn session(&self, id: &str) -> Option<SessionRecord>;
    /// The ids the file changes since the last call may have altered.
    fn take_touched(&mut self) -> HashSet<String>;
}

/// This machine's part of the status line: which lf, and how many sessions.
pub(super) fn status_line(
    lf: Option<&Path>,
    detected: Option<Dialect>,
    failure: Option<&str>,
    count: usize,
) -> String {
    let sessions = match count {
        1 => "1 session".to_string(),
        n => format!("{n} sessions"),
    };
    match (lf, failure) {
        (None, _) => format!(
            "No lf found ($LF_BIN, PATH, ~/.local/bin/lf): showing Ask and interactive \
             sessions from files; Flow sessions need lf · {sessions}"
        ),
        (Some(lf), None) => match detected {
            Some(d) if d.generation.is_known() => format!(
                "lf: {} (generation {}) · {sessions}",
                lf.display(),
                d.generation.name()
            ),
            Some(_) | None => format!("lf: {} · {sessions}", lf.display()),
        },
        (Some(_), Some(failure)) => {
            format!(
                "lf failed ({failure}); sessions from lf are from the last good list · {sessions}"
            )
        }
    }
}

/// What the surfaces read between events that changed, for the task to keep where the
/// engine's handle reads it. A change that touched one session hands out that session
/// alone, so publishing costs what the change does, not what the list holds.
#[derive(Debug)]
pub(crate) enum Change {
    /// This session is now this record, or gone.
    Session(String, Option<Arc<SessionRecord>>),
    /// The whole list of this machine's sessions.
    Sessions(Snapshot),
    /// What this machine's part of the status says.
    Status {
        status: String,
        detected: Option<Dialect>,
        can_watch: bool,
    },
    /// One other machine's view, by its follower's id.
    Machine(Followed),
    /// The machines followed, in the configured order.
    Machines(Vec<Followed>),
}

/// What one wake-up of the core asks for: events to publish in this order, what the
/// surfaces read that changed (before those events go out), and commands.
#[derive(Debug, Default)]
pub(crate) struct Out {
    pub events: Vec<Event>,
    pub changes: Vec<Change>,
    pub commands: Vec<Command>,
}

/// The engine's state, lf's side and the merge of both sides.
pub(crate) struct Core {
    /// This machine's sessions as last published, and what the next update merges.
    merge: Merge,
    /// Every other machine followed, in the configured order.
    machines: Machines,
    /// The `lf` in use (without one, lf's side stays idle) and what it said it is.
    program: Program,
    schedule: Schedule,
    /// lf's list: the last good one, with the readers' newer frames applied.
    listing: Listing,
    /// The `Engine::act` callers waiting for a list started after their action.
    waiters: Waiters,
    /// lf's readers (generation D).
    readers: Readers,
    /// The agent processes listed sessions name (generation E2).
    agents: Agents,
    /// Whether the task has a file watcher.
    can_watch: bool,
    /// The clocks at the last wake-up, to tell that the machine slept.
    woke: (Instant, SystemTime),
    warnings: Warnings,
    out: Out,
}

impl Core {
    pub(crate) fn new(
        now: Now,
        lf_bin: Option<PathBuf>,
        safety: Duration,
        lf_quiet: Option<Duration>,
    ) -> Core {
        Core {
            merge: Merge::default(),
            machines: Machines::default(),
            program: Program::new(lf_bin, lf_quiet),
            schedule: Schedule::new(now.mono, safety, None),
            listing: Listing::default(),
            waiters: Waiters::default(),
            readers: Readers::default(),
            agents: Agents::default(),
            can_watch: true,
            woke: (now.mono, now.wall),
            warnings: Warnings::default(),
            out: Out::default(),
        }
    }

    /// Whether lf keeps sessions in files, which the file half then reads and watches.
    pub(crate) fn files(&self) -> bool {
        self.program.files()
    }

    /// The dialect in use; an lf not (yet) recognised is read as an unknown one.
    pub(crate) fn dialect(&self) -> Dialect {
        self.program.dialect()
    }

    /// What lf said it is when the engine started.
    pub(crate) fn begin(&mut self, detected: Result<Dialect, LfError>) {
        match detected {
            Ok(detected) => self.detected(detected),
            Err(e) => self
                .warnings
                .once(format!("lf session --help: {}", one_line(&e.to_string()))),
        }
    }

    /// The engine's first list is about to run; it waits for it (bounded by lf's timeout)
    /// so that the first snapshot already holds lf's sessions.
    /// `shown`: lf's revisions read just before it starts, where lf keeps them.
    pub(crate) fn first_list(&mut self, now: Now, shown: Option<Revisions>) {
        self.schedule.first_started(now.db);
        self.schedule.showing(shown);
    }

    pub(crate) fn first_listed(&mut self, now: Now, result: Listed) {
        // The writes that came while it ran are still queued; the files say whether any
        // came at all.
        self.schedule.first_ended(now.mono, now.db);
        self.take_listed(result);
    }

    /// The first snapshot, which says what is there (no transition is reported for it),
    /// then the readers and agent watches it calls for, and the start-up's warnings.
    pub(crate) fn open(&mut self, now: Now, files: &mut impl FileView) -> Out {
        // The snapshot says what is there; no transition is reported for it.
        let _ = self.update(now, files);
        let first = Event::Snapshot {
            at: now.at(),
            sessions: all_sessions(self.merge.snapshot(), self.machines.followed()),
        };
        self.out.events.push(first);
        self.sync_readers(now.mono);
        self.sync_agents();
        self.flush(now)
    }

    /// When [`Core::wake`] has something to do.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        let lf = self.program.bin().and_then(|_| self.schedule.deadline());
        [lf, self.readers.deadline(), self.program.due()]
            .into_iter()
            .flatten()
            .min()
    }

    /// Take one input. Nothing is decided until [`Core::wake`]: everything the task found
    /// queued is taken first and handled together, so a burst costs one update.
    pub(crate) fn absorb(&mut self, now: Now, input: Input) {
        let mono = now.mono;
        match input {
            Input::Written => {
                // While a reader is followed, the store's revisions say what moved;
                // otherwise the write itself is the sign, unless it is the tray's own lf
                // at work.
                if !self.readers.live() {
                    self.schedule.written(mono, now.db);
                }
            }
            Input::DatabaseAppeared => self.schedule.changed(mono),
            Input::Showing(reading) => self.schedule.showing(reading),
            Input::Revisions(reading) => {
                self.schedule.checked(mono, reading);
            }
            Input::ProgramChanged => self.program.changed(mono),
            Input::FilesChanged { full } => {
                self.merge.changed(full);
            }
            Input::Warned(warnings) => self.warnings.extend(warnings),
            Input::NoWatcher(why) => {
                self.can_watch = false;
                self.warnings.push(Warning::new(
                    None,
                    format!(
                        "cannot watch files ({why}); the list refreshes only on the slow timer"
                    ),
                ));
            }
            Input::Listed(result) => {
                self.merge.changed(false);
                self.waiters.list_finished();
                // What lf said, not what the tray made of it: a write that came while this
                // list ran is followed up only while lists find something new.
                let found =
                    matches!(&result, Ok((records, _)) if *records != self.listing.records());
                self.take_listed(result);
                let again = self.schedule.finished(mono, found, now.db);
                if again {
                    self.start_list();
                }
            }
            Input::Acting => self.schedule.own_started(),
            Input::Acted(token) => {
                // An action just ran: list now, without the debounce; the caller waits
                // for that list.
                self.own_ended(now);
                self.schedule.ask(mono);
                self.waiters.wait(token);
            }
            Input::Reader(serial, report) => self.reader(serial, report, now),
            Input::ReaderFailed(serial, e) => {
                if self.readers.failed(serial, mono) {
                    // No lf ran, so none of its writes are to come.
                    self.schedule.own_abandoned();
                    self.warnings
                        .once(format!("lf monitor work: {}", one_line(&e.to_string())));
                }
            }
            Input::AgentsFound(result) => {
                self.schedule.aside_ended(mono, now.db);
                self.found(result, mono);
            }
            // The file half judges the Run's clients again; the task hands it these.
            Input::Exited(Exit::Client { .. }) => {}
            Input::Exited(Exit::Agent(id)) => {
                if self.agents.exited(&id) {
                    // lf reads the death at its next list (`closed`), which tells it; the
                    // pid leaves the records that name it now.
                    self.schedule.ask(mono);
                    self.agents_changed(&HashSet::from([id]));
                }
            }
            Input::Detected(result) => {
                self.own_ended(now);
                match result {
                    Ok(detected) if Some(detected) != self.program.detected() => {
                        // A new lf: its sources, readers and list replace the old ones.
                        self.detected(detected);
                        self.readers.stop_all(&mut self.out.commands);
                        let files = self.program.files();
                        self.out.commands.push(Command::Rescan { files });
                        self.schedule.ask(mono);
                        self.merge.changed(false);
                    }
                    Ok(_) => {}
                    Err(e) => self
                        .warnings
                        .once(format!("lf session --help: {}", one_line(&e.to_string()))),
                }
            }
            Input::Machine(id, report) => {
                let (snapshot, out) = (self.merge.snapshot(), &mut self.out);
                let warnings = &mut self.warnings;
                self.machines
                    .report(id, report, now, snapshot, out, warnings);
            }
            Input::Machines(dests) => {
                let (snapshot, out) = (self.merge.snapshot(), &mut self.out);
                self.machines
                    .set(dests, now, snapshot, out, &mut self.warnings);
            }
        }
    }

    /// Decide: after the inputs taken since the last wake-up, or at a deadline.
    pub(crate) fn wake(&mut self, now: Now, files: &mut impl FileView) -> Out {
        if self.program.take_due(now.mono) {
            self.redetect();
        }
        self.resumed(now);
        if self.program.bin().is_some() && self.schedule.take_check(now.mono) {
            self.out.commands.push(Command::ReadRevisions);
        }
        if self.program.bin().is_some() && self.schedule.poll(now.mono).is_some() {
            self.start_list();
        }
        self.check_readers(now);
        // Most file events are our own reads or lf's temporaries: they change nothing
        // and cost no rebuild.
        if self.merge.due() {
            let events = self.update(now, files);
            self.out.events.extend(events);
            self.sync_readers(now.mono);
            self.sync_agents();
        }
        self.waiters.answer(&mut self.out.commands);
        self.flush(now)
    }

    /// This wake-up's output: the transitions first, then the warnings.
    fn flush(&mut self, now: Now) -> Out {
        let at = now.at();
        let warnings = self.warnings.take().into_iter();
        self.out.events.extend(warnings.map(|w| Event::Warning {
            at,
            path: w.path,
            message: w.message,
        }));
        std::mem::take(&mut self.out)
    }

    /// What was learned about the lf in use: which sources count and how lf is followed.
    fn detected(&mut self, detected: Dialect) {
        let detected = self.program.learned(detected);
        self.schedule.set_quiet(detected.quiet_recheck());
    }

    /// The lf program changed: ask it again what it is.
    fn redetect(&mut self) {
        if self.program.bin().is_none() {
            return;
        }
        self.schedule.own_started();
        self.out.commands.push(Command::Detect);
    }

    /// Run `lf session list` (the schedule said so).
    fn start_list(&mut self) {
        if self.program.bin().is_none() {
            return;
        }
        self.waiters.list_started();
        let dialect = self.dialect();
        if !dialect.store_revisions {
            // Nothing will say what it shows: writes are judged by who may have made them.
            self.schedule.showing(None);
        }
        self.out.commands.push(Command::List(dialect));
    }

    fn take_listed(&mut self, result: Listed) {
        // Only the sessions the list changed are merged again: a change costs what
        // changed, not what is listed.
        let (problems, each) = self.listing.take(result, self.merge.touched());
        if !each {
            self.merge.all();
        }
        // A failure is kept for the status line, and told once.
        self.warnings.extend(problems);
    }

    /// One of the tray's own lf processes ended (or a reader got past its start-up).
    fn own_ended(&mut self, now: Now) {
        self.schedule.own_ended(now.mono, now.db);
    }

    /// A reader's frame or end.
    fn reader(&mut self, serial: u64, report: Report, at: Now) {
        let now = at.mono;
        match self
            .readers
            .heard(serial, report, now, &mut self.out.commands)
        {
            Heard::Nothing => {}
            Heard::Ended { started, message } => {
                if !started {
                    self.own_ended(at);
                }
                self.warnings.once(message);
            }
            Heard::Frame { first, moved, said } => {
                if first {
                    // Its one write to the store (a Process row) is behind it.
                    self.own_ended(at);
                }
                if moved {
                    self.schedule.changed(now);
                }
                match said {
                    Some(Said::Sessions {
                        repo,
                        entries,
                        problems,
                    }) => {
                        let problems = problems.into_iter().map(|p| Warning::new(None, p));
                        self.warnings.extend(problems);
                        let (readers, touched) = (&self.readers, self.merge.touched());
                        self.listing.apply_frame(&repo, entries, readers, touched);
                    }
                    Some(Said::Unavailable(reason)) => self.warnings.once(reason),
                    None => {}
                }
            }
        }
    }

    /// Start a reader for each repository with open sessions that has none, and stop
    /// those whose repository has none left. Only where the dialect's reader scope allows
    /// a reader per repository.
    fn sync_readers(&mut self, now: Instant) {
        if self.program.bin().is_none() || !self.program.readers_follow() {
            return;
        }
        let started = self
            .readers
            .sync(self.listing.records(), now, &mut self.out.commands);
        for _ in 0..started {
            self.schedule.own_started();
        }
    }

    /// Restart readers that went silent; start those whose back-off is over.
    fn check_readers(&mut self, at: Now) {
        let now = at.mono;
        for silent in self.readers.silent(now, &mut self.out.commands) {
            if !silent.started {
                self.own_ended(at);
            }
            self.warnings.push(Warning::new(None, silent.warning));
            // Its repository is covered by lists until the new one answers.
            self.schedule.changed(now);
        }
        if self.readers.retry_due(now) {
            self.sync_readers(now);
        }
    }

    /// The machine slept: everything lf's readers hold may be stale, and the quiet
    /// deadlines passed unseen.
    fn resumed(&mut self, now: Now) {
        let (then, then_wall) = std::mem::replace(&mut self.woke, (now.mono, now.wall));
        let slept = now
            .wall
            .duration_since(then_wall)
            .unwrap_or_default()
            .saturating_sub(now.mono - then);
        if slept > RESUME_JUMP {
            self.readers.refresh(&mut self.out.commands);
            self.schedule.ask(now.mono);
        }
    }

    /// Find and watch the agent process of every listed session that names one, and
    /// forget those no longer listed: from the ids the lists since the last call made
    /// named or unnamed, so it costs what changed.
    fn sync_agents(&mut self) {
        let moved = self.listing.named_moved(self.dialect());
        let can_find = self.program.bin().is_some();
        if self.agents.sync(moved, can_find, &mut self.out.commands) {
            // Its one write to the store (lf's own Process row) is the tray's; another
            // that lands meanwhile is checked by a list after it.
            self.schedule.aside_started();
        }
    }

    /// What lf's process list said of the agents asked for.
    fn found(&mut self, result: Result<Vec<(String, Option<Found>)>, LfError>, now: Instant) {
        let answered: HashSet<String> = match &result {
            Ok(found) => found.iter().map(|(id, _)| id.clone()).collect(),
            Err(_) => HashSet::new(),
        };
        match self.agents.found(result, &mut self.out.commands) {
            Err(e) => {
                self.warnings.once(format!(
                    "lf monitor ps: {}; an agent that dies is told at lf's next list",
                    one_line(&e.to_string())
                ));
                return;
            }
            // One died since its list, which a new list tells.
            Ok(true) => self.schedule.ask(now),
            Ok(false) => {}
        }
        // Their pids and terminals reach the records that name them, merged again alone;
        // ids listed meanwhile are asked for at the update after it.
        self.agents_changed(&answered);
    }

    /// What the tray knows of these agents changed: the sessions that name them are
    /// merged again, found by one pass over the list without copies (at 10 000 sessions
    /// far less than merging every one, which cloned each record).
    fn agents_changed(&mut self, agents: &HashSet<String>) {
        let sessions = self.listing.naming(self.dialect(), agents);
        let touched = self.merge.touched();
        touched.extend(sessions.map(str::to_string));
        self.merge.changed(false);
    }

    /// Bring the published list up to date, with its transitions, and the status line.
    fn update(&mut self, now: Now, files: &mut impl FileView) -> Vec<Event> {
        let lf = LfSide {
            program: &self.program,
            listing: &self.listing,
            agents: &self.agents,
        };
        let events = self
            .merge
            .update(now.at(), files, lf, &mut self.out.changes);
        self.out.changes.push(Change::Status {
            status: status_line(
                self.program.bin(),
                self.program.detected(),
                self.listing.failure(),
                self.merge.snapshot().len(),
            ),
            detected: self.program.detected(),
            can_watch: self.can_watch,
        });
        events
    }

    /// The commands decided so far, to carry out before the first snapshot: the machines'
    /// followers start while lf's first list runs, not after it.
    pub(crate) fn commands(&mut self) -> Vec<Command> {
        std::mem::take(&mut self.out.commands)
    }
}
