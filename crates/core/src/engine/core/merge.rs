//! This machine's sessions as last published, and what the next update merges: the file
//! half's records and lf's list, into exactly-once events.

use std::collections::HashSet;
use std::sync::Arc;

use time::OffsetDateTime;

use super::agents::Agents;
use super::listing::Listing;
use super::program::Program;
use super::{Change, FileView};
use crate::event::Event;
use crate::lf::record::SessionRecord;
use crate::snapshot::{merge_one, Snapshot};

/// What lf's side holds, for a merge.
pub(super) struct LfSide<'a> {
    pub program: &'a Program,
    pub listing: &'a Listing,
    pub agents: &'a Agents,
}

impl LfSide<'_> {
    /// A listed record with what the tray found of its agent.
    fn with_agent(&self, record: &SessionRecord) -> SessionRecord {
        self.agents.annotate(&self.program.dialect(), record)
    }
}

pub(super) struct Merge {
    snapshot: Snapshot,
    /// Ids a reader's frame changed since the last update.
    touched: HashSet<String>,
    /// Whether a source directory exists (cached: it changes only on top-level events).
    files_active: bool,
    /// Set when a change may touch any session (a rescan, a new lf list): the next
    /// update merges everything; otherwise only the touched sessions are merged.
    full: bool,
    /// Something changed since the last wake-up: the list is brought up to date.
    changed: bool,
}

impl Default for Merge {
    fn default() -> Merge {
        Merge {
            snapshot: Snapshot::default(),
            touched: HashSet::new(),
            files_active: false,
            // Nothing was merged yet.
            full: true,
            changed: false,
        }
    }
}

impl Merge {
    pub(super) fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    /// Where a reader's frame notes the ids it changed.
    pub(super) fn touched(&mut self) -> &mut HashSet<String> {
        &mut self.touched
    }

    /// Something changed; `full` when it may have touched any session.
    pub(super) fn changed(&mut self, full: bool) {
        self.changed = true;
        self.full |= full;
    }

    /// The next update merges every session, whenever it comes.
    pub(super) fn all(&mut self) {
        self.full = true;
    }

    /// Whether an update is due: something changed since the last wake-up.
    pub(super) fn due(&mut self) -> bool {
        std::mem::take(&mut self.changed) || !self.touched.is_empty()
    }

    /// Bring the published list up to date, with its transitions. A change that touched
    /// a few records re-derives and merges only those, so its cost does not grow with the
    /// number of sessions or Runs.
    pub(super) fn update(
        &mut self,
        at: OffsetDateTime,
        files: &mut impl FileView,
        lf: LfSide<'_>,
        changes: &mut Vec<Change>,
    ) -> Vec<Event> {
        let mut touched = files.take_touched();
        // Taken, not drained: a burst that touched thousands (an agent they all name)
        // leaves no table of that size behind.
        touched.extend(std::mem::take(&mut self.touched));
        let dialect = lf.program.detected();
        let agents = lf.program.dialect().agent_ids;
        let full = std::mem::take(&mut self.full);
        if full {
            let records = lf.listing.records().iter();
            let listed: Vec<SessionRecord> = if agents {
                records.map(|r| lf.with_agent(r)).collect()
            } else {
                records.map(|r| SessionRecord::clone(r)).collect()
            };
            self.files_active = lf.program.files() && files.present();
            let file_sessions = if lf.program.files() {
                files.sessions()
            } else {
                Vec::new()
            };
            let next = Snapshot::merge(file_sessions, &listed, self.files_active, dialect.as_ref());
            let events = self.snapshot.diff(&next, at);
            self.snapshot = next;
            drop(listed);
            crate::engine::give_back_freed(self.snapshot.len());
            changes.push(Change::Sessions(self.snapshot.clone()));
            return events;
        }
        let many = touched.len();
        let events = touched
            .into_iter()
            .filter_map(|id| {
                let file = if lf.program.files() {
                    files.session(&id)
                } else {
                    None
                };
                let cli = lf.listing.get(&id).map(|r| lf.with_agent(r));
                let next = merge_one(
                    file,
                    cli.as_ref(),
                    self.files_active,
                    lf.listing.boundary(),
                    dialect.as_ref(),
                );
                let next = next.map(Arc::new);
                let event = self.snapshot.update(&id, next.clone(), at);
                changes.push(Change::Session(id, next));
                event
            })
            .collect();
        // Thousands merged again one by one (an agent they all name found, or gone) free
        // as much as a whole list does.
        crate::engine::give_back_freed(many);
        events
    }
}
