//! lf's readers (`lf monitor work`, generation D), one per repository with open sessions:
//! which run, what they said of the store and of which repository a worktree is in, and
//! when one that failed may start again. The core schedules lists around them.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::Command;
use crate::lf::monitor::{Part, Report};
use crate::lf::record::SessionRecord;

/// lf's reader sends a heartbeat every 2 s; three missed ones mean it hangs, and it is
/// started again.
const READER_SILENCE: Duration = Duration::from_secs(6);
/// A reader that fails is started again after 1 s, then 2, 4 … up to a minute, so a
/// broken lf costs one attempt a minute, not a loop.
const READER_BACKOFF: Duration = Duration::from_secs(1);
const READER_BACKOFF_MAX: Duration = Duration::from_secs(60);
/// At most this many readers run at once; each samples the process table every 2 s.
/// Repositories beyond them are followed through the store's revisions and lists.
const MAX_READERS: usize = 8;

/// One of lf's readers, as the core follows it.
#[derive(Debug)]
struct Following {
    /// The path the reader was scoped with (a session's worktree).
    key: String,
    last_frame: Instant,
    /// lf's canonical repository, from its first sessions frame.
    repo: Option<String>,
    /// Its first frame came: its start-up write to the store is behind it.
    started: bool,
}

/// The readers that run, by serial, and what they said.
#[derive(Default)]
pub(super) struct Readers {
    following: HashMap<u64, Following>,
    next: u64,
    /// Which canonical repository a worktree belongs to, as lf's readers said.
    repo_of: HashMap<String, String>,
    /// Worktrees whose reader failed: when it may start again (`None` once it may), and
    /// the last pause, which doubles with each failure in a row.
    backoff: HashMap<String, (Option<Instant>, Duration)>,
    /// The store's `sessions` revision, as the readers last reported it.
    revision: Option<u64>,
}

/// What a reader's report comes to, for the core.
pub(super) enum Heard {
    /// A reader the engine already let go of: nothing.
    Nothing,
    /// It ended (`message` says why), before its first frame if not `started`.
    Ended { started: bool, message: String },
    /// A frame: its first (its start-up write to the store is behind it), whether the
    /// store moved beyond what was seen, and the part, if it is one the core takes in.
    Frame {
        first: bool,
        moved: bool,
        said: Option<Said>,
    },
}

/// The part of a frame the core takes in.
pub(super) enum Said {
    /// Every open session in `repo`, with lf's problems reading them.
    Sessions {
        repo: String,
        entries: Vec<SessionRecord>,
        problems: Vec<String>,
    },
    /// The reader cannot tell what the part holds, and why.
    Unavailable(String),
}

/// A reader that went silent and was stopped: `started` if it had sent a frame, and the
/// warning that says so.
pub(super) struct Silent {
    pub started: bool,
    pub warning: String,
}

impl Readers {
    /// When a reader is due to have fallen silent, or one that failed may start again.
    pub(super) fn deadline(&self) -> Option<Instant> {
        let silent = self
            .following
            .values()
            .map(|r| r.last_frame + READER_SILENCE)
            .min();
        let retry = self.backoff.values().filter_map(|(until, _)| *until).min();
        silent.into_iter().chain(retry).min()
    }

    /// A reader whose frames arrive: it covers the store's revisions, so lf's database
    /// writes need not be watched for it.
    pub(super) fn live(&self) -> bool {
        self.following.values().any(|r| r.started)
    }

    /// Which canonical repository `worktree` belongs to, as the readers said.
    pub(super) fn repo_of(&self, worktree: &str) -> Option<&String> {
        self.repo_of.get(worktree)
    }

    /// A new lf: every reader goes, with all they said. Serials are never reused, so a
    /// report of one let go lands nowhere.
    pub(super) fn stop_all(&mut self, commands: &mut Vec<Command>) {
        let mut gone: Vec<u64> = self.following.drain().map(|(s, _)| s).collect();
        gone.sort_unstable();
        commands.extend(gone.into_iter().map(Command::StopReader));
        self.repo_of.clear();
        self.backoff.clear();
        self.revision = None;
    }

    /// The reader `serial` could not start: false if it is no longer followed; else it
    /// may start again after a pause.
    pub(super) fn failed(&mut self, serial: u64, now: Instant) -> bool {
        let Some(r) = self.following.remove(&serial) else {
            return false;
        };
        self.back_off(&r.key, now);
        true
    }

    /// A reader of `key` failed: it may start again after a pause that doubles each time.
    fn back_off(&mut self, key: &str, now: Instant) {
        let next = self
            .backoff
            .get(key)
            .map_or(READER_BACKOFF, |(_, d)| (*d * 2).min(READER_BACKOFF_MAX));
        self.backoff
            .insert(key.to_string(), (Some(now + next), next));
    }

    /// A reader's frame or end.
    pub(super) fn heard(
        &mut self,
        serial: u64,
        report: Report,
        now: Instant,
        commands: &mut Vec<Command>,
    ) -> Heard {
        let Some(following) = self.following.get_mut(&serial) else {
            return Heard::Nothing;
        };
        let frame = match report {
            Report::Frame(frame) => frame,
            Report::Ended(message) => {
                let key = following.key.clone();
                let started = following.started;
                self.following.remove(&serial);
                commands.push(Command::StopReader(serial));
                self.back_off(&key, now);
                return Heard::Ended { started, message };
            }
        };
        following.last_frame = now;
        let first = !std::mem::replace(&mut following.started, true);
        let key = following.key.clone();
        self.backoff.remove(&key);
        let mut moved = false;
        if let Some(revision) = frame.sessions_revision {
            // The first revision seen is where things stand; a higher one means some
            // session in the store moved, maybe outside every followed repository.
            moved = self.revision.is_some_and(|seen| revision > seen);
            self.revision = Some(self.revision.map_or(revision, |r| r.max(revision)));
        }
        let said = match frame.part {
            Part::Sessions {
                repo,
                entries,
                problems,
            } => {
                self.repo_of.insert(key, repo.clone());
                // Two worktrees of one repository: one reader is enough.
                let twin = self
                    .following
                    .iter()
                    .any(|(s, r)| *s != serial && r.repo.as_deref() == Some(&repo));
                if twin {
                    self.following.remove(&serial);
                    commands.push(Command::StopReader(serial));
                } else if let Some(following) = self.following.get_mut(&serial) {
                    following.repo = Some(repo.clone());
                }
                Some(Said::Sessions {
                    repo,
                    entries,
                    problems,
                })
            }
            Part::Unavailable(reason) => Some(Said::Unavailable(reason)),
            Part::Other => None,
        };
        Heard::Frame { first, moved, said }
    }

    /// Start a reader for each repository with open sessions (in `listed`) that has none,
    /// and stop those whose repository has none left. Returns how many started.
    pub(super) fn sync(
        &mut self,
        listed: &[Arc<SessionRecord>],
        now: Instant,
        commands: &mut Vec<Command>,
    ) -> usize {
        // The worktrees of open sessions, one per repository where the repository is
        // known; in list order, so the same ones win each time.
        let mut wanted: Vec<String> = Vec::new();
        let mut repos: HashSet<String> = HashSet::new();
        for record in listed {
            let Some(worktree) = record.worktree() else {
                continue;
            };
            let new = match self.repo_of.get(worktree) {
                Some(repo) => repos.insert(repo.clone()),
                None => !wanted.iter().any(|w| w == worktree),
            };
            if new {
                wanted.push(worktree.to_string());
            }
        }
        // Readers no longer wanted go: their repository has no open session left.
        let mut gone: Vec<u64> = self
            .following
            .iter()
            .filter(|(_, r)| {
                let repo = r.repo.as_ref();
                !(repo.is_some_and(|repo| repos.contains(repo)) || wanted.contains(&r.key))
            })
            .map(|(s, _)| *s)
            .collect();
        gone.sort_unstable();
        for serial in gone {
            self.following.remove(&serial);
            commands.push(Command::StopReader(serial));
        }
        let mut started = 0;
        for key in wanted {
            if self.following.len() >= MAX_READERS {
                break;
            }
            let covered = self.following.values().any(|r| {
                r.key == key || (r.repo.is_some() && r.repo.as_ref() == self.repo_of.get(&key))
            });
            let waiting = self
                .backoff
                .get(&key)
                .is_some_and(|(until, _)| until.is_some_and(|u| now < u));
            if covered || waiting {
                continue;
            }
            let serial = self.next;
            self.next += 1;
            started += 1;
            commands.push(Command::StartReader {
                serial,
                key: key.clone(),
            });
            self.following.insert(
                serial,
                Following {
                    key,
                    last_frame: now,
                    repo: None,
                    started: false,
                },
            );
        }
        started
    }

    /// Stop the readers that went silent; they may start again after a pause.
    pub(super) fn silent(&mut self, now: Instant, commands: &mut Vec<Command>) -> Vec<Silent> {
        let mut silent: Vec<u64> = self
            .following
            .iter()
            .filter(|(_, r)| now >= r.last_frame + READER_SILENCE)
            .map(|(s, _)| *s)
            .collect();
        silent.sort_unstable();
        let mut stopped = Vec::new();
        for serial in silent {
            if let Some(r) = self.following.remove(&serial) {
                commands.push(Command::StopReader(serial));
                let warning = format!(
                    "lf monitor work for {} sent nothing for {} s; it is started again",
                    r.repo.as_deref().unwrap_or(&r.key),
                    READER_SILENCE.as_secs()
                );
                self.back_off(&r.key, now);
                stopped.push(Silent {
                    started: r.started,
                    warning,
                });
            }
        }
        stopped
    }

    /// Whether a pause after a failure is over: its reader may start again. The pause is
    /// kept, so a next failure doubles it.
    pub(super) fn retry_due(&mut self, now: Instant) -> bool {
        let mut due = false;
        for (until, _) in self.backoff.values_mut() {
            if until.is_some_and(|u| now >= u) {
                *until = None;
                due = true;
            }
        }
        due
    }

    /// Ask every reader for every part again (the machine slept).
    pub(super) fn refresh(&self, commands: &mut Vec<Command>) {
        let mut serials: Vec<u64> = self.following.keys().copied().collect();
        serials.sort_unstable();
        commands.extend(serials.into_iter().map(Command::Refresh));
    }
}
