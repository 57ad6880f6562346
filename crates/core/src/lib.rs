//! Loopflow Tray's engine, with no desktop dependency: lf's human sessions read from its
//! own records, watched, and turned into events; the `lf` CLI client; and the terminal
//! launcher that opens a session where the user works.

mod actions;
mod agent;
mod ask;
mod child;
mod dialect;
mod disk;
pub mod engine;
mod event;
pub mod history;
mod home;
mod lf;
mod liveness;
pub mod machine;
mod monitor;
pub mod permission;
mod record_file;
#[cfg(not(feature = "bench"))]
mod records;
/// The file half's reader, for the benchmark's cold scan.
#[cfg(feature = "bench")]
pub mod records;
mod run;
mod schedule;
pub mod session;
mod snapshot;
mod ssh;
pub mod terminal;
mod watch;

pub use child::{end_with_tray, signal_was_ignored};
pub use dialect::{Dialect, FlowDecision, Generation, Paging, ReaderScope};
pub use event::{Event, Warning};
pub use home::Home;
pub use lf::{Lf, LfAction, LfError, RUN_CONTEXT_VARS};
pub use session::{
    Action, ActionKind, Agent, Kind, Presents, Reason, Runs, SessionKey, SessionRecord, State,
    WorkRef,
};
