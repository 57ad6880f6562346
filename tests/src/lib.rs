//! A simulated Loopflow, for the tray's tests and its `demo`: [`SimHome`] writes lf's
//! records exactly the way lf writes them (private directories, staged and renamed
//! files), and [`cli`] is a stand-in `lf` that answers generation A's `lf session`
//! verbs from those records.
//!
//! Flow sessions live in lf's SQLite database, which the tray never reads; the
//! simulation keeps them as JSON at the database's path so that watching the database's
//! directory still tells the tray when to ask `lf session list` again.

pub mod cli;
mod home;
mod process;
mod publish;
mod records;

pub use home::{AskSpec, Generation, Outcome, RunSpec, SimHome, Surface};
pub use process::process_start_time;
pub use records::{FlowSpec, State, WorkRef};
