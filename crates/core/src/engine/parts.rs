//! What the engine runs on, injected: lf (every run of the `lf` program it makes) and the
//! file watcher. [`Engine::start`](super::Engine::start) takes the real ones, the `lf`
//! program and inotify; the engine's own tests hand it scripted ones, so the task's loop
//! is tested without an lf or a file system that changes by itself.

use std::ffi::OsString;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;

use crate::files::watch::{DirWatcher, MakeWatcher};
use crate::lf::agent::Process;
use crate::lf::cli::{Lf, LfAction, LfError};
use crate::lf::dialect::Dialect;
use crate::lf::monitor::{Reader, Report};
use crate::lf::record::SessionRecord;

/// An lf run under way; it owns what it needs, so the task can hand it to tokio.
pub type Running<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// What one list says: the records, and a problem per element that did not decode.
/// Each record shared: one lf printed as the last list did is that list's.
pub type Listed = Result<(Vec<Arc<SessionRecord>>, Vec<String>), LfError>;

/// What the engine has lf do.
pub trait Cli: Send + Sync {
    /// The `lf` program, watched so that one replaced while the tray runs is noticed.
    fn program(&self) -> &Path;
    /// The variables every run sets or removes (see [`Lf::env`]).
    fn env(&self) -> Vec<(&'static str, Option<OsString>)>;
    fn detect(&self) -> Running<Result<Dialect, LfError>>;
    fn list(&self, dialect: &Dialect) -> Running<Listed>;
    /// Start lf's reader (`lf monitor work --watch --json`) for the repository at `repo`;
    /// dropping what it returns ends it.
    fn read(
        &self,
        repo: &str,
        report: Box<dyn Fn(Report) + Send + Sync>,
    ) -> Result<Box<dyn Reading>, LfError>;
    fn act(&self, action: LfAction) -> Running<Result<String, LfError>>;
    /// The processes lf knows (its agents' pids, generation E2).
    fn processes(&self) -> Running<Result<Vec<Process>, LfError>>;
}

/// A reader that runs until it is dropped.
pub trait Reading: Send {
    /// Ask for every part again (after the machine slept).
    fn refresh(&self);
}

impl Reading for Reader {
    fn refresh(&self) {
        Reader::refresh(self);
    }
}

impl Cli for Lf {
    fn program(&self) -> &Path {
        self.bin()
    }

    fn env(&self) -> Vec<(&'static str, Option<OsString>)> {
        Lf::env(self).to_vec()
    }

    fn detect(&self) -> Running<Result<Dialect, LfError>> {
        let lf = self.clone();
        Box::pin(async move { lf.detect().await })
    }

    fn list(&self, dialect: &Dialect) -> Running<Listed> {
        let (lf, dialect) = (self.clone(), *dialect);
        Box::pin(async move { lf.list_shared(&dialect).await })
    }

    fn read(
        &self,
        repo: &str,
        report: Box<dyn Fn(Report) + Send + Sync>,
    ) -> Result<Box<dyn Reading>, LfError> {
        Ok(Box::new(Reader::start(self, repo, report)?))
    }

    fn act(&self, action: LfAction) -> Running<Result<String, LfError>> {
        let lf = self.clone();
        Box::pin(async move { lf.act(&action).await })
    }

    fn processes(&self) -> Running<Result<Vec<Process>, LfError>> {
        let lf = self.clone();
        Box::pin(async move { lf.processes().await })
    }
}

/// The real parts: the `lf` program (when there is one) and inotify.
pub struct Parts {
    pub cli: Option<Arc<dyn Cli>>,
    pub watcher: MakeWatcher,
}

impl Parts {
    pub fn real(lf: Option<Lf>) -> Parts {
        Parts {
            cli: lf.map(|lf| Arc::new(lf) as Arc<dyn Cli>),
            watcher: Box::new(|handler| {
                let watcher = notify::recommended_watcher(handler)?;
                Ok(Box::new(watcher) as Box<dyn DirWatcher>)
            }),
        }
    }
}
