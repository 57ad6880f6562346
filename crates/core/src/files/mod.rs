//! lf's own files, which generations A, B and B′ keep under its home: the Ask records,
//! the Runs and their provider clients, read leniently and watched; the engine's file
//! half drives them.

pub(crate) mod ask;
pub(crate) mod disk;
pub(crate) mod liveness;
pub(crate) mod record_file;
/// Public for the benchmark's cold scan.
pub mod records;
pub(crate) mod run;
pub(crate) mod watch;
