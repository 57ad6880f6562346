//! A simulated Loopflow, for the tray's tests and its `demo`: [`SimHome`] writes lf's
//! records exactly the way lf writes them (private directories, staged and renamed
//! files), and [`cli`] is a stand-in `lf` that answers generation A's `lf session`
//! verbs from those records.
//!
//! Flow positions (generation A) and the Sessions of generations C, D0, D and E live in
//! a real SQLite database in WAL mode ([`Store`]), which the tray never reads: its
//! commits show in the database's directory, and every C/D0/D/E call of the stand-in
//! commits a Process row, so a tray that re-lists on every database write wakes itself.

mod agent;
pub mod cli;
mod home;
mod inventory;
mod monitor;
mod process;
mod publish;
mod records;
mod store;

pub use home::{AskSpec, Generation, Outcome, RunSpec, SimHome, Surface};
pub use process::{process_start_time, pty, tty_name};
pub use records::{FlowSpec, State, WorkRef};
pub use store::{
    repo_of, Activity, Revisions, SessionSpec, StatusReport, Store, TitleSource,
    DEFAULT_QUIET_SECONDS, PROGRAM_KINDS, PROGRAM_STATES,
};
