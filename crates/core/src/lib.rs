//! Loopflow Tray's engine, with no desktop dependency: lf's human sessions read from its
//! own records, watched, and turned into events; the `lf` CLI client; and the terminal
//! launcher that opens a session where the user works.
//!
//! `lf` is everything lf's contract decides; `files` reads the files generations A, B
//! and B′ keep; `proc` and `quote` are the leaves both stand on.

mod child;
pub mod engine;
mod event;
#[cfg(not(feature = "bench"))]
mod files;
/// The file half's reader, for the benchmark's cold scan.
#[cfg(feature = "bench")]
pub mod files;
pub mod history;
pub mod lf;
pub mod machine;
pub mod permission;
mod proc;
mod quote;
mod schedule;
mod snapshot;
mod ssh;
pub mod terminal;

pub use child::{end_with_tray, signal_was_ignored};
pub use event::{Event, Warning};
pub use lf::home::Home;
pub use lf::{
    Action, ActionKind, Agent, Dialect, FlowDecision, Generation, Kind, Lf, LfAction, LfError,
    Paging, Presents, ReaderScope, Reason, Runs, SessionKey, SessionRecord, State, WorkRef,
    RUN_CONTEXT_VARS,
};
