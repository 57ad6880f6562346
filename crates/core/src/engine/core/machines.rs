//! The other machines the engine follows over ssh, in the configured order: each one's
//! follower runs in the task, and its view ([`MachineView`]) turns its reports into
//! exactly-once events.

use std::sync::Arc;

use super::warnings::Warnings;
use super::{Change, Command, Now, Out};
use crate::event::{Event, Warning};
use crate::lf::record::SessionRecord;
use crate::machine::{self, MachineView};
use crate::snapshot::Snapshot;

/// One other machine the engine follows.
#[derive(Debug, Clone)]
pub(crate) struct Followed {
    /// Its follower's for that follower's life, never reused: a report still on its way
    /// from a machine let go names an id no machine has, and lands nowhere (an index would
    /// land on whichever machine took its place).
    pub id: u64,
    pub view: MachineView,
}

/// Every machine's sessions, in lf's list order.
pub(in crate::engine) fn all_sessions(
    snapshot: &Snapshot,
    machines: &[Followed],
) -> Vec<SessionRecord> {
    let mut list = snapshot.sessions();
    for machine in machines {
        list.extend(machine.view.sessions());
    }
    list.sort_by(SessionRecord::list_order);
    list
}

/// Every machine's sessions, in lf's list order, shared with the snapshots: what
/// [`crate::engine::Engine::sessions`] hands out.
pub(in crate::engine) fn shared_sessions(
    snapshot: &Snapshot,
    machines: &[Followed],
) -> Vec<Arc<SessionRecord>> {
    let mut list: Vec<Arc<SessionRecord>> = snapshot.shared().cloned().collect();
    for machine in machines {
        list.extend(machine.view.shared().cloned());
    }
    list.sort_by(|a, b| SessionRecord::list_order(a, b));
    list
}

/// The machines followed, and the id the next follower gets.
#[derive(Default)]
pub(super) struct Machines {
    followed: Vec<Followed>,
    next: u64,
}

impl Machines {
    pub(super) fn followed(&self) -> &[Followed] {
        &self.followed
    }

    /// A machine's follower reported: its transitions, each once, and its warnings. Its
    /// first view changes the whole list (this machine's `snapshot` and every other),
    /// which is told as a new snapshot. A report from a follower already let go finds no
    /// machine and is dropped.
    pub(super) fn report(
        &mut self,
        id: u64,
        report: machine::Report,
        now: Now,
        snapshot: &Snapshot,
        out: &mut Out,
        warnings: &mut Warnings,
    ) {
        let Some(machine) = self.followed.iter_mut().find(|m| m.id == id) else {
            return;
        };
        let applied = machine.view.apply(report, now.at());
        out.changes.push(Change::Machine(machine.clone()));
        warnings.extend(applied.warnings);
        let whole = applied.first_view.then(|| Event::Snapshot {
            at: now.at(),
            sessions: all_sessions(snapshot, &self.followed),
        });
        out.events.extend(applied.events.into_iter().chain(whole));
    }

    /// The machines to follow now. One that stays keeps its follower and view; one no
    /// longer named is stopped, and if it showed sessions the list changed as a whole, as
    /// at its first view: that is told as a new snapshot, not as transitions, since its
    /// sessions did not end (a `resolved` would tell an `on_event` program they had).
    pub(super) fn set(
        &mut self,
        dests: Vec<String>,
        now: Now,
        snapshot: &Snapshot,
        out: &mut Out,
        warnings: &mut Warnings,
    ) {
        let mut before = std::mem::take(&mut self.followed);
        for dest in dests {
            if self.followed.iter().any(|m| m.view.dest == dest) {
                continue;
            }
            if let Some(at) = before.iter().position(|m| m.view.dest == dest) {
                self.followed.push(before.remove(at));
                continue;
            }
            let id = self.next;
            self.next += 1;
            // A destination ssh would misread is shown, not connected to.
            match machine::Ssh::new(&dest) {
                Ok(ssh) => out.commands.push(Command::Follow { id, ssh }),
                Err(message) => warnings.push(Warning::new(None, message)),
            }
            self.followed.push(Followed {
                id,
                view: MachineView::new(&dest),
            });
        }
        let mut shown = false;
        for gone in before {
            shown |= !gone.view.sessions().is_empty();
            out.commands.push(Command::Unfollow(gone.id));
        }
        out.changes.push(Change::Machines(self.followed.clone()));
        if shown {
            let sessions = all_sessions(snapshot, &self.followed);
            out.events.push(Event::Snapshot {
                at: now.at(),
                sessions,
            });
        }
    }
}
