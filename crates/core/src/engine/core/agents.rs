//! The agent processes listed sessions name (generation E2): an agent that dies together
//! with its lf is written nowhere (lf reads it at query time), so its exit is the one
//! sign that the session stopped. One `lf monitor ps` finds every id new since the last,
//! and each process found is watched for its exit.
//!
//! Which ids the list names is kept from what each list changed ([`Named`]), so a change
//! to one session costs the agents' bookkeeping that session, not every one listed.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use super::{Command, Exit};
use crate::lf::agent::Found;
use crate::lf::cli::LfError;
use crate::lf::dialect::Dialect;
use crate::lf::record::SessionRecord;

/// An agent process a listed session names, as far as the tray followed it.
#[derive(Debug, Clone, PartialEq)]
enum Seen {
    /// lf is being asked which process it is.
    Finding,
    /// Found, and watched for its exit.
    Watched(Found),
    /// lf could not say (no process list, no pid): nothing to watch; a list still tells
    /// its death, later.
    Unknown,
    /// Its process exited, or lf no longer lists it: never watched again while a list
    /// names it (lf may read a dead agent `closed` for good, or alive for a moment).
    Exited,
}

/// How many listed sessions name each agent id, kept from the records each list changed,
/// and which ids came to be named or stopped being named since the agents last heard.
#[derive(Default)]
pub(super) struct Named {
    counts: HashMap<String, u32>,
    /// Ids whose count went to or from zero since the last [`Named::take`].
    moved: HashSet<String>,
    /// The gate the counts were made with (which records name an agent is the dialect's);
    /// `None` until the first count, and after a list that is counted whole.
    gate: Option<Dialect>,
}

impl Named {
    /// A listed record changed from `old` to `new` (`None`: it came, or went).
    pub(super) fn changed(&mut self, old: Option<&SessionRecord>, new: Option<&SessionRecord>) {
        let Some(gate) = self.gate else {
            return; // counted whole at the next take
        };
        let old = old.and_then(|r| gate.agent_id(r));
        let new = new.and_then(|r| gate.agent_id(r));
        if old == new {
            return;
        }
        if let Some(id) = old {
            if let Some(n) = self.counts.get_mut(id) {
                *n -= 1;
                if *n == 0 {
                    self.counts.remove(id);
                    self.moved.insert(id.to_string());
                }
            }
        }
        if let Some(id) = new {
            let n = self.counts.entry(id.to_string()).or_insert(0);
            *n += 1;
            if *n == 1 {
                self.moved.insert(id.to_string());
            }
        }
    }

    /// The list was replaced whole (its first, or after a failure): counted again at the
    /// next take.
    pub(super) fn recount(&mut self) {
        self.gate = None;
    }

    /// The ids whose being named changed since the last take, each with whether it is
    /// named now, in id order. Counted whole first when the list was replaced or the
    /// dialect changed (an O(N) pass, as the list that caused it was).
    pub(super) fn take(
        &mut self,
        dialect: Dialect,
        records: &[Arc<SessionRecord>],
    ) -> Vec<(String, bool)> {
        if self.gate != Some(dialect) {
            let mut counts: HashMap<String, u32> = HashMap::new();
            for id in records.iter().filter_map(|r| dialect.agent_id(r)) {
                *counts.entry(id.to_string()).or_insert(0) += 1;
            }
            let old = std::mem::replace(&mut self.counts, counts);
            let came = self.counts.keys().filter(|id| !old.contains_key(*id));
            let went = old.keys().filter(|id| !self.counts.contains_key(*id));
            self.moved.extend(came.chain(went).cloned());
            self.gate = Some(dialect);
        }
        let mut moved: Vec<(String, bool)> = self
            .moved
            .drain()
            .map(|id| {
                let named = self.counts.contains_key(&id);
                (id, named)
            })
            .collect();
        moved.sort_unstable();
        moved
    }
}

/// The agents listed sessions name, by lf's id.
#[derive(Default)]
pub(super) struct Agents {
    seen: HashMap<String, Seen>,
    /// Named ids not asked for yet: a search is under way, or there was no lf to ask.
    waiting: BTreeSet<String>,
    /// An `lf monitor ps` is under way: ids that appear meanwhile wait for the next.
    finding: bool,
}

impl Agents {
    /// Forget the agents no longer named, and ask to find those new since the last
    /// search, unless one is under way or there is no lf to ask (`can_find`). `moved`:
    /// the ids whose being named changed ([`Named::take`]), so this costs what changed.
    /// True when a search was asked for.
    pub(super) fn sync(
        &mut self,
        moved: Vec<(String, bool)>,
        can_find: bool,
        commands: &mut Vec<Command>,
    ) -> bool {
        for (id, named) in moved {
            if named {
                if !self.seen.contains_key(&id) {
                    self.waiting.insert(id);
                }
                continue;
            }
            self.waiting.remove(&id);
            if let Some(Seen::Watched(_)) = self.seen.remove(&id) {
                commands.push(Command::UnwatchExit(Exit::Agent(id)));
            }
        }
        if self.finding || !can_find || self.waiting.is_empty() {
            return false;
        }
        let new: Vec<String> = std::mem::take(&mut self.waiting).into_iter().collect();
        for id in &new {
            self.seen.insert(id.clone(), Seen::Finding);
        }
        self.finding = true;
        commands.push(Command::FindAgents(new));
        true
    }

    /// What lf's process list said of the agents asked for: each found is watched for its
    /// exit. True when one died since the list that named it, which a new list tells. If
    /// lf could not say, none of them is watched.
    pub(super) fn found(
        &mut self,
        result: Result<Vec<(String, Option<Found>)>, LfError>,
        commands: &mut Vec<Command>,
    ) -> Result<bool, LfError> {
        self.finding = false;
        let found = match result {
            Ok(found) => found,
            Err(e) => {
                for seen in self.seen.values_mut() {
                    if *seen == Seen::Finding {
                        *seen = Seen::Unknown;
                    }
                }
                return Err(e);
            }
        };
        let mut died = false;
        for (id, process) in found {
            let Some(seen) = self.seen.get_mut(&id) else {
                continue; // no longer listed
            };
            *seen = match process {
                Some(process) => {
                    commands.push(Command::WatchExit {
                        exit: Exit::Agent(id.clone()),
                        pid: process.pid,
                        started_at: process.started_at,
                    });
                    Seen::Watched(process)
                }
                // lf lists only processes not proven dead: this one died since its list.
                None => {
                    died = true;
                    Seen::Exited
                }
            };
        }
        Ok(died)
    }

    /// The agent `id` exited; false if it is no longer followed.
    pub(super) fn exited(&mut self, id: &str) -> bool {
        let Some(seen) = self.seen.get_mut(id) else {
            return false;
        };
        *seen = Seen::Exited;
        true
    }

    /// A listed record with what the tray found of its agent.
    pub(super) fn annotate(&self, dialect: &Dialect, record: &SessionRecord) -> SessionRecord {
        let mut record = record.clone();
        record.found_agent(dialect, |id| match self.seen.get(id) {
            Some(Seen::Watched(found)) => Some((found.pid, found.runs)),
            _ => None,
        });
        record
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lf::dialect::Generation;
    use crate::lf::record::{test_record, State};

    fn naming(id: &str, agent: Option<u64>, closed: bool) -> SessionRecord {
        let state = if closed { State::Closed } else { State::Active };
        let mut record = test_record(id, None, state);
        if let Some(agent) = agent {
            record.set_lf_field("agent_process_id", format!("agent-{agent}"));
        }
        record
    }

    /// Changes one record at a time, as lists do, and checks after each few that the ids
    /// `take` said moved leave one who follows them holding exactly the ids named (what a
    /// recount of every record says).
    #[test]
    fn what_moved_adds_up_to_what_is_named() {
        let dialect = Dialect::of(Generation::E);
        let mut listed: Vec<Option<Arc<SessionRecord>>> = vec![None; 40];
        let mut named = Named::default();
        let mut held: HashSet<String> = HashSet::new();
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for step in 0..5_000 {
            let slot = next(40) as usize;
            let new = match next(4) {
                0 => None,
                1 => Some(naming(&format!("s{slot}"), None, false)),
                k => Some(naming(
                    &format!("s{slot}"),
                    Some(next(12)),
                    k == 2 && next(3) == 0,
                )),
            };
            let new = new.map(Arc::new);
            named.changed(listed[slot].as_deref(), new.as_deref());
            listed[slot] = new;
            if step % 500 == 250 {
                named.recount(); // a list taken whole
            }
            if next(5) == 0 {
                let records: Vec<Arc<SessionRecord>> = listed.iter().flatten().cloned().collect();
                // An id that came and went between two takes may be said again: harmless.
                for (id, is_named) in named.take(dialect, &records) {
                    if is_named {
                        held.insert(id);
                    } else {
                        held.remove(&id);
                    }
                }
                let truth: HashSet<String> = records
                    .iter()
                    .filter_map(|r| dialect.agent_id(r))
                    .map(str::to_string)
                    .collect();
                assert_eq!(held, truth, "step {step}");
            }
        }
    }
}
