//! Loopflow Tray's engine, with no desktop dependency: lf's human sessions read from its
//! own records, watched, and turned into events; the `lf` CLI client; and the terminal
//! launcher that opens a session where the user works.

pub mod actions;
mod agent;
mod ask;
pub mod child;
pub mod claude_settings;
mod dialect;
pub mod engine;
mod event;
pub mod history;
mod home;
pub mod lf;
mod liveness;
pub mod machine;
mod monitor;
pub mod permission;
mod record_file;
pub mod records;
mod run;
mod schedule;
pub mod session;
pub mod snapshot;
mod ssh;
pub mod terminal;
mod watch;

pub use dialect::{Dialect, FlowDecision, Follow, Generation};
pub use event::{Event, Warning};
pub use home::Home;
pub use session::{
    Action, ActionKind, Agent, Kind, Presents, Reason, Runs, SessionKey, SessionRecord, State,
    WorkRef,
};
