//! The lf program in use, and what it said it is: which of lf's sources count, how its
//! readers may follow the store, and when to ask a changed program again.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::time::Instant;

use crate::lf::dialect::{Dialect, Generation, ReaderScope};

/// A package manager replaces the lf program in several steps; it is asked what it is
/// once they have settled.
const PROGRAM_SETTLE: Duration = Duration::from_millis(500);

pub(super) struct Program {
    /// The `lf` in use, for the status line; without one, lf's side stays idle.
    bin: Option<PathBuf>,
    /// lf's quiet time where it is not lf's own (the tests' stand-in).
    quiet: Option<Duration>,
    detected: Option<Dialect>,
    /// Whether lf keeps sessions in files (every generation before C).
    files: bool,
    /// When to ask the program what it is, once a change to it has settled.
    due: Option<Instant>,
}

impl Program {
    pub(super) fn new(bin: Option<PathBuf>, quiet: Option<Duration>) -> Program {
        Program {
            bin,
            quiet,
            detected: None,
            files: true,
            due: None,
        }
    }

    pub(super) fn bin(&self) -> Option<&Path> {
        self.bin.as_deref()
    }

    /// What lf said it is, as the engine uses it.
    pub(super) fn detected(&self) -> Option<Dialect> {
        self.detected
    }

    /// The dialect in use; an lf not (yet) recognised is read as an unknown one.
    pub(super) fn dialect(&self) -> Dialect {
        self.detected.unwrap_or(Dialect::of(Generation::Unknown))
    }

    pub(super) fn files(&self) -> bool {
        self.files
    }

    /// What was learned about the lf in use, as the engine uses it (with the quiet time
    /// that replaces lf's own).
    pub(super) fn learned(&mut self, detected: Dialect) -> Dialect {
        let detected = detected.with_quiet(self.quiet);
        self.detected = Some(detected);
        self.files = detected.session_files;
        detected
    }

    /// Whether lf's own readers follow the store, one per repository: only where a
    /// repository's reader is read-only.
    pub(super) fn readers_follow(&self) -> bool {
        match self.detected.map(|d| d.reader_scope) {
            Some(ReaderScope::Repository) => true,
            Some(ReaderScope::Missing | ReaderScope::RepositoryWrites) | None => false,
        }
    }

    /// The program changed: it is asked what it is once that has settled.
    pub(super) fn changed(&mut self, now: Instant) {
        self.due = Some(now + PROGRAM_SETTLE);
    }

    pub(super) fn due(&self) -> Option<Instant> {
        self.due
    }

    /// Whether it is time to ask the changed program what it is (once).
    pub(super) fn take_due(&mut self, now: Instant) -> bool {
        let due = self.due.is_some_and(|due| now >= due);
        if due {
            self.due = None;
        }
        due
    }
}
