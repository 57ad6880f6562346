//! Everything lf's contract decides (loopflow-model.md), in one place: a new lf is
//! followed here and nowhere else. The CLI client, the dialect of each generation, the
//! session record as lf's JSON names it, the buttons each generation offers, lf's
//! monitor stream, the agent processes lf names, where lf keeps its data, and the
//! revisions of its store.

pub(crate) mod actions;
pub(crate) mod agent;
pub(crate) mod cli;
pub(crate) mod dialect;
pub(crate) mod elements;
pub(crate) mod fields;
pub(crate) mod home;
pub(crate) mod last_list;
pub(crate) mod monitor;
pub(crate) mod reading;
pub(crate) mod record;
pub(crate) mod repeats;
pub(crate) mod revisions;

pub use actions::{moves_from, plan, unavailable, Step};
pub use cli::{Lf, LfAction, LfError, RUN_CONTEXT_VARS};
pub use dialect::{Dialect, FlowDecision, Generation, Paging, ReaderScope};
pub use reading::finish;
/// For other crates' fixtures: the verdict a test record is read with.
#[cfg(feature = "fixtures")]
pub use reading::needs_you;
pub use record::{
    Action, ActionKind, Agent, Kind, Presents, Reading, Reason, Runs, SessionKey, SessionRecord,
    State, WorkRef,
};
pub use revisions::Revisions;
