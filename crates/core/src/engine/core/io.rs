//! What the task and the core say to each other: what happened ([`Input`]), what the task
//! is to do ([`Command`]), and the processes followed to their exit ([`Exit`]).

use crate::engine::parts::Listed;
use crate::event::Warning;
use crate::lf::agent::Found;
use crate::lf::cli::LfError;
use crate::lf::dialect::Dialect;
use crate::lf::monitor::Report;
use crate::lf::Revisions;
use crate::machine;

/// What happened, as the core is told.
#[derive(Debug)]
pub(crate) enum Input {
    /// lf's database (or its WAL or journal) was written.
    Written,
    /// lf's database directory became watchable: it may have been written unseen.
    DatabaseAppeared,
    /// The lf program, or what it links to, changed.
    ProgramChanged,
    /// The file half changed something (a record, a client's exit, a rescan); `full` when
    /// it may have touched any session.
    FilesChanged { full: bool },
    /// Warnings from the file half, given with this wake-up's.
    Warned(Vec<Warning>),
    /// The task could not make its file watcher (why): no directory will be watched.
    NoWatcher(String),
    /// The list about to run (the [`Command::List`] just carried out, or the first)
    /// shows at least these revisions of lf's store, read just before it started; `None`
    /// when they could not be read.
    Showing(Option<Revisions>),
    /// What a [`Command::ReadRevisions`] read (`None`: it could not).
    Revisions(Option<Revisions>),
    /// A [`Command::List`] ended.
    Listed(Listed),
    /// An action (an lf run of the tray's own) started.
    Acting,
    /// That action ended: the waiter with this token wants the list after it.
    Acted(u64),
    /// A reader's frame or end.
    Reader(u64, Report),
    /// A [`Command::StartReader`] could not start lf.
    ReaderFailed(u64, LfError),
    /// A [`Command::Detect`] answered.
    Detected(Result<Dialect, LfError>),
    /// What a [`Command::FindAgents`] found: each lf id asked for, with its process here
    /// if lf lists one that still runs.
    AgentsFound(Result<Vec<(String, Option<Found>)>, LfError>),
    /// The process a [`Command::WatchExit`] named exited, or was already another process.
    Exited(Exit),
    /// The follower of the machine with this id reported.
    Machine(u64, machine::Report),
    /// The machines to follow now, in this order.
    Machines(Vec<String>),
}

/// What the task is to do.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Command {
    /// Run `lf session list` in this dialect; its result comes back as [`Input::Listed`].
    /// Where the dialect has `store_revisions`, they are read just before it starts and
    /// handed back at once as [`Input::Showing`].
    List(Dialect),
    /// Read lf's `store_revisions` now; the reading comes back as [`Input::Revisions`].
    ReadRevisions,
    /// Ask lf what it is; the answer comes back as [`Input::Detected`].
    Detect,
    /// Start lf's reader scoped to `key` (a worktree): its reports come back as
    /// [`Input::Reader`] with this serial, a failure to start as [`Input::ReaderFailed`].
    StartReader {
        serial: u64,
        key: String,
    },
    /// Let that reader go.
    StopReader(u64),
    /// Ask that reader for every part again.
    Refresh(u64),
    /// Ask lf which processes these agents (lf ids) are; the answer comes back as
    /// [`Input::AgentsFound`].
    FindAgents(Vec<String>),
    /// Watch this process for its exit ([`Input::Exited`]) once it is still the process
    /// recorded as started at `started_at` (if known), or stop.
    WatchExit {
        exit: Exit,
        pid: u32,
        started_at: Option<i64>,
    },
    UnwatchExit(Exit),
    /// The list after the action with this token was taken: let its caller go on.
    Answer(u64),
    /// Start following a machine; its reports come back as [`Input::Machine`] with `id`.
    Follow {
        id: u64,
        ssh: machine::Ssh,
    },
    /// Stop that follower now, and with it its ssh.
    Unfollow(u64),
    /// A new lf was detected: watch its file sources anew and, if it keeps its sessions in
    /// `files`, read them all again; what that changed comes back as
    /// [`Input::FilesChanged`] (and its problems as [`Input::Warned`]).
    Rescan {
        files: bool,
    },
}

/// A process the engine follows to its exit, by what it is to the sessions: every exit
/// the engine hears of goes through [`Command::WatchExit`] and [`Input::Exited`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Exit {
    /// The agent a listed session names, by lf's id (generation E2).
    Agent(String),
    /// A client process of a followed Run, whose exit may leave the Run's session waiting.
    Client { run: String, pid: i32 },
}
