//! How lf makes a record appear: never half-written. Content goes to a staging name in
//! the same directory (a dot-name or `*.tmp`, which watchers skip), is fsynced, then
//! renamed into place, so a reader sees the old record or the new one and nothing between.
//! Directories are private (0700) and files 0600, as lf makes them.

use std::fs::{self, DirBuilder, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;

/// Create `dir` and any missing parents with mode 0700.
pub(crate) fn dir(dir: &Path) -> Result<()> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("create {}", dir.display()))
}

/// Write a file that must not exist yet (mode 0600) and fsync it.
pub(crate) fn new_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let write = || -> io::Result<()> {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)?;
        file.write_all(bytes)?;
        file.sync_all()
    };
    write().with_context(|| format!("write {}", path.display()))
}

/// Publish `bytes` at `dir/name` through `dir/staging`.
pub(crate) fn file(dir: &Path, staging: &str, name: &str, bytes: &[u8]) -> Result<()> {
    self::dir(dir)?;
    let staging = dir.join(staging);
    let target = dir.join(name);
    new_file(&staging, bytes)?;
    fs::rename(&staging, &target).with_context(|| format!("publish {}", target.display()))
}

/// Publish a file only if none exists at `dir/name` (lf writes terminal receipts
/// create-new): the staged file is hard-linked into place, which fails if the name is taken.
pub(crate) fn file_once(dir: &Path, staging: &str, name: &str, bytes: &[u8]) -> Result<()> {
    let staging = dir.join(staging);
    let target = dir.join(name);
    new_file(&staging, bytes)?;
    let linked = fs::hard_link(&staging, &target);
    fs::remove_file(&staging).with_context(|| format!("remove {}", staging.display()))?;
    linked.with_context(|| format!("publish {}", target.display()))
}

/// lf's pretty JSON.
pub(crate) fn json(value: &impl Serialize) -> Vec<u8> {
    serde_json::to_vec_pretty(value).expect("records serialize to JSON")
}

/// A fresh uuid in the short form lf uses in staging names.
pub(crate) fn unique() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}
