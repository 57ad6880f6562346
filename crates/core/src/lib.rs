//! Loopflow Tray's engine, with no desktop dependency: lf's human sessions read from its
//! own records, watched, and turned into events; the `lf` CLI client; and the terminal
//! launcher that opens a session where the user works.

pub mod actions;
pub mod ask;
pub mod child;
pub mod dialect;
pub mod engine;
pub mod event;
pub mod history;
pub mod home;
pub mod lf;
pub mod liveness;
pub mod machine;
pub mod monitor;
pub mod records;
pub mod run;
pub mod schedule;
pub mod session;
pub mod snapshot;
pub mod terminal;
mod watch;

pub use dialect::{Dialect, Generation};
pub use event::{Event, Warning};
pub use home::Home;
pub use session::{
    Action, ActionKind, Kind, Presents, Reason, SessionKey, SessionRecord, State, WorkRef,
};
