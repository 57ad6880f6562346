//! What the engine task hears: one message type for every source (the watcher, lf runs,
//! readers, process exits), beside the task and the file half that both send it.

use tokio::sync::oneshot;

use super::core::Exit;
use super::parts::Listed;
use crate::lf::agent::Found;
use crate::lf::cli::LfError;
use crate::lf::dialect::Dialect;
use crate::lf::monitor::Report;
use crate::schedule::Stamp;

/// One thing that happened, for the task to hand to the core or the file half.
pub(super) enum Msg {
    Fs(notify::Result<notify::Event>),
    /// A list of the tray's own ended, with lf's database files as they looked the moment
    /// it did.
    Listed(Listed, Stamp),
    /// An action (an lf run of the tray's own) started, or ended and wants a list.
    Acting,
    Acted(oneshot::Sender<()>),
    Reader(u64, Report),
    ReaderFailed(u64, LfError),
    Detected(Result<Dialect, LfError>),
    /// What lf's process list said of the agents asked for.
    AgentsFound(Result<Vec<(String, Option<Found>)>, LfError>, Stamp),
    /// A process the engine follows exited (or was already another process): lf writes
    /// nothing for an agent's or a client's death.
    Exited(Exit),
    /// A process waited on exited: the watch `serial` of `pid` saw it.
    ProcessExited {
        pid: i32,
        serial: u64,
    },
    /// The machines to follow now ([`super::Engine::set_machines`]).
    Machines(Vec<String>),
}
