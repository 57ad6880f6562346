//! The agent processes listed sessions name (generation E2): an agent that dies together
//! with its lf is written nowhere (lf reads it at query time), so its exit is the one
//! sign that the session stopped. One `lf monitor ps` finds every id new since the last,
//! and each process found is watched for its exit.

use std::collections::{HashMap, HashSet};

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

/// The agents listed sessions name, by lf's id.
#[derive(Default)]
pub(super) struct Agents {
    seen: HashMap<String, Seen>,
    /// An `lf monitor ps` is under way: ids that appear meanwhile wait for the next.
    finding: bool,
}

impl Agents {
    /// Forget the agents no longer `named`, and ask to find those new since the last
    /// search, unless one is under way or there is no lf to ask (`can_find`). True when a
    /// search was asked for.
    pub(super) fn sync(
        &mut self,
        named: HashSet<&str>,
        can_find: bool,
        commands: &mut Vec<Command>,
    ) -> bool {
        let mut gone: Vec<String> = self
            .seen
            .keys()
            .filter(|id| !named.contains(id.as_str()))
            .cloned()
            .collect();
        gone.sort_unstable();
        for id in gone {
            if let Some(Seen::Watched(_)) = self.seen.remove(&id) {
                commands.push(Command::UnwatchExit(Exit::Agent(id)));
            }
        }
        if self.finding || !can_find {
            return false;
        }
        let mut new: Vec<String> = named
            .into_iter()
            .filter(|id| !self.seen.contains_key(*id))
            .map(str::to_string)
            .collect();
        if new.is_empty() {
            return false;
        }
        new.sort_unstable();
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
