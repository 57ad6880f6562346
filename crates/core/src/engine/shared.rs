//! What the surfaces read between events: the engine's handle reads it, the task writes
//! it as the core's changes say.

use std::sync::{OnceLock, RwLock};

use super::core::{Change, Followed};
use crate::lf::dialect::Dialect;
use crate::snapshot::Snapshot;

/// What the surfaces read between events: the task keeps it as the core's changes say.
#[derive(Debug, Default)]
pub(super) struct Shared {
    pub(super) snapshot: Snapshot,
    /// Every other machine, in the configured order.
    pub(super) machines: Vec<Followed>,
    /// This machine's part of the status line.
    pub(super) status: String,
    pub(super) can_watch: bool,
    pub(super) detected: Option<Dialect>,
    /// Every machine's sessions in lf's order, made on the first read after they changed
    /// and handed out by cloning the `Arc`: a surface reading the list after every input
    /// costs a pointer, not a copy of every record.
    pub(super) listed: OnceLock<super::Sessions>,
}

impl Shared {
    pub(super) fn apply(&mut self, change: Change) {
        if !matches!(change, Change::Status { .. }) {
            self.listed = OnceLock::new();
        }
        match change {
            Change::Session(id, record) => self.snapshot.put(&id, record),
            Change::Sessions(snapshot) => self.snapshot = snapshot,
            Change::Status {
                status,
                detected,
                can_watch,
            } => {
                self.status = status;
                self.detected = detected;
                self.can_watch = can_watch;
            }
            Change::Machine(followed) => {
                if let Some(m) = self.machines.iter_mut().find(|m| m.id == followed.id) {
                    *m = followed;
                }
            }
            Change::Machines(machines) => self.machines = machines,
        }
    }
}

pub(super) fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    // A panic elsewhere must not take the list away from the surfaces.
    lock.read().unwrap_or_else(|e| e.into_inner())
}

pub(super) fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|e| e.into_inner())
}
