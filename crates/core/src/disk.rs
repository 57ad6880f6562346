//! What the file half asks of the machine it runs on: how a path looks, what a directory
//! holds, lf's records read and decoded, and which of a Run's client processes are live.
//! The engine reads the real file system and `/proc` through [`Real`]; its replays hand
//! the file half a disk made of data, so that a record written, half-written, unreadable
//! or removed, a directory made late and a client that exits are scripted, not staged.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::ask::{self, AskRecord};
use crate::event::Warning;
use crate::liveness;
use crate::run::{self, Run};

/// How a path looks, following symbolic links (as `fs::metadata` does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stat {
    pub dir: bool,
    pub len: u64,
    pub modified: Option<SystemTime>,
    /// Which directory this is: one deleted and made again under the same name is another.
    pub inode: u64,
}

/// One directory entry, its type as the entry says it (a link is not followed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub name: OsString,
    pub dir: bool,
}

/// The reads the file half makes. `Sync`: a cold scan reads Run directories on several
/// threads at once.
pub(crate) trait Disk: Send + Sync + std::fmt::Debug {
    /// `None` when nothing is there (or it cannot be looked at).
    fn stat(&self, path: &Path) -> Option<Stat>;
    /// The entries of a directory, in no particular order.
    fn list(&self, dir: &Path) -> io::Result<Vec<Entry>>;
    /// One Ask record ([`ask::read_ask`]).
    fn read_ask(&self, path: &Path) -> Result<Option<AskRecord>, Warning>;
    /// One Run directory ([`run::read_run`]).
    fn read_run(&self, dir: &Path) -> (Option<Run>, Vec<Warning>);
    /// The pids of the Run's clients that lf would judge live now.
    fn live_pids(&self, run: &Run) -> Vec<i32>;
    /// Where a path leads once every link is followed.
    fn canonical(&self, path: &Path) -> Option<PathBuf>;
}

/// The machine itself: the file system and `/proc`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Real;

impl Disk for Real {
    fn stat(&self, path: &Path) -> Option<Stat> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(path).ok()?;
        Some(Stat {
            dir: meta.is_dir(),
            len: meta.len(),
            modified: meta.modified().ok(),
            inode: meta.ino(),
        })
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<Entry>> {
        Ok(std::fs::read_dir(dir)?
            .flatten()
            .map(|entry| Entry {
                dir: entry.file_type().is_ok_and(|t| t.is_dir()),
                name: entry.file_name(),
            })
            .collect())
    }

    fn read_ask(&self, path: &Path) -> Result<Option<AskRecord>, Warning> {
        ask::read_ask(path)
    }

    fn read_run(&self, dir: &Path) -> (Option<Run>, Vec<Warning>) {
        run::read_run(dir)
    }

    fn live_pids(&self, run: &Run) -> Vec<i32> {
        liveness::live_clients(&run.clients, &run.manifest.harness)
            .into_iter()
            .map(|c| c.pid)
            .collect()
    }

    fn canonical(&self, path: &Path) -> Option<PathBuf> {
        std::fs::canonicalize(path).ok()
    }
}

impl dyn Disk + '_ {
    pub(crate) fn is_dir(&self, path: &Path) -> bool {
        self.stat(path).is_some_and(|s| s.dir)
    }
}
