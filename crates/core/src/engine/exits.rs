//! The processes the engine waits on to exit, one descriptor (a pidfd) each however many
//! sessions name the process: ten thousand sessions of ten agents hold ten. The
//! descriptors stay within the process's limit, with room left for everything else the
//! tray opens (lf's runs and their pipes, the file watcher, the window): past it an agent
//! goes unwatched and its death is told by the safety list instead, said once; a client
//! is checked by its pid every few seconds, which costs no descriptor.

use std::collections::{HashMap, HashSet};
use std::os::fd::OwnedFd;
use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use super::core::Exit;
use super::msg::Msg;

/// Descriptors kept free of pidfds, whatever the limit: the window's toolkit and web view
/// hold one to two hundred, each lf run three for its pipes, the watcher one per
/// inotify instance, and a read a few more; a quarter of the limit where that is more.
const RESERVED: u64 = 256;

/// One process waited on, and every exit it stands for.
struct Watched {
    /// Which watch of this pid: a report from an earlier one (a pid since reused) is not
    /// this one's.
    serial: u64,
    handle: AbortHandle,
    /// The pidfd, also held here to ask without waiting whether the process is gone;
    /// `None` for a pid that is checked instead.
    fd: Option<Arc<OwnedFd>>,
    exits: HashSet<Exit>,
}

/// What [`Exits::watch`] did.
pub(super) enum Watching {
    /// Watched, or joined a watch of the same process.
    Watched,
    /// The process is gone already.
    Gone,
    /// Not watched: there are no descriptors to spare. `first` the first time this
    /// happened, for the one line that says so.
    GaveUp { first: bool },
}

pub(super) struct Exits {
    by_pid: HashMap<i32, Watched>,
    pid_of: HashMap<Exit, i32>,
    /// How many pidfds may be open at once, and how many are.
    budget: usize,
    open: usize,
    next_serial: u64,
    gave_up: bool,
}

impl Exits {
    /// Exits within the descriptor limit `limit` (`None` when it could not be read: the
    /// kernel's usual soft limit is assumed).
    pub(super) fn new(limit: Option<u64>) -> Exits {
        let limit = limit.unwrap_or(1024);
        let reserved = RESERVED.max(limit / 4);
        Exits {
            by_pid: HashMap::new(),
            pid_of: HashMap::new(),
            budget: usize::try_from(limit.saturating_sub(reserved)).unwrap_or(usize::MAX),
            open: 0,
            next_serial: 0,
            gave_up: false,
        }
    }

    /// Wait on process `pid` for `exit`, which a process found a moment ago stands for.
    pub(super) fn watch(
        &mut self,
        exit: Exit,
        pid: i32,
        tx: &mpsc::WeakUnboundedSender<Msg>,
    ) -> Watching {
        self.unwatch(&exit);
        if let Some(watched) = self.by_pid.get_mut(&pid) {
            let gone = watched
                .fd
                .as_ref()
                .is_some_and(|fd| crate::proc::has_exited(&**fd));
            if !gone {
                watched.exits.insert(exit.clone());
                self.pid_of.insert(exit, pid);
                return Watching::Watched;
            }
            // The process watched under this pid is gone, its report not yet taken, and
            // the pid already another's: what it stood for is told now.
            let old = self.remove(pid).unwrap_or_default();
            if let Some(tx) = tx.upgrade() {
                for exit in old {
                    let _ = tx.send(Msg::Exited(exit));
                }
            }
        }
        let fd = if self.open < self.budget {
            match crate::proc::pidfd(pid) {
                Ok(None) => return Watching::Gone,
                Ok(Some(fd)) => Some(Arc::new(fd)),
                Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => {
                    // Fewer to spare than reckoned: none more is opened.
                    self.budget = self.open;
                    None
                }
                Err(_) => None,
            }
        } else {
            None
        };
        let serial = self.next_serial;
        self.next_serial += 1;
        let report = tx.clone();
        let handle = match &fd {
            Some(fd) => {
                self.open += 1;
                let fd = Arc::clone(fd);
                tokio::spawn(async move {
                    crate::proc::exited_by(fd, pid).await;
                    reported(&report, pid, serial);
                })
            }
            // Out of descriptors an agent's death is left to the safety list: checking
            // thousands of pids every few seconds would cost more than the list does.
            None if self.open >= self.budget && matches!(exit, Exit::Agent(_)) => {
                let first = !std::mem::replace(&mut self.gave_up, true);
                return Watching::GaveUp { first };
            }
            None => tokio::spawn(async move {
                crate::proc::recheck_exit(pid).await;
                reported(&report, pid, serial);
            }),
        }
        .abort_handle();
        self.by_pid.insert(
            pid,
            Watched {
                serial,
                handle,
                fd,
                exits: HashSet::from([exit.clone()]),
            },
        );
        self.pid_of.insert(exit, pid);
        Watching::Watched
    }

    /// Stop waiting for `exit`; its process's watch ends with the last exit it stands for.
    pub(super) fn unwatch(&mut self, exit: &Exit) {
        let Some(pid) = self.pid_of.remove(exit) else {
            return;
        };
        let Some(watched) = self.by_pid.get_mut(&pid) else {
            return;
        };
        watched.exits.remove(exit);
        if watched.exits.is_empty() {
            self.remove(pid);
        }
    }

    /// The watch `serial` of `pid` saw it exit: what it stood for, or nothing if that
    /// watch is no longer kept.
    pub(super) fn exited(&mut self, pid: i32, serial: u64) -> Vec<Exit> {
        if self.by_pid.get(&pid).is_none_or(|w| w.serial != serial) {
            return Vec::new();
        }
        let mut exits: Vec<Exit> = self.remove(pid).unwrap_or_default().into_iter().collect();
        exits.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
        exits
    }

    /// A report of `exit` that did not come through a watch (the process was already
    /// another): it is no longer waited on.
    pub(super) fn forget(&mut self, exit: &Exit) {
        self.unwatch(exit);
    }

    /// How many pidfds are open, for the tests.
    #[cfg(test)]
    pub(super) fn open(&self) -> usize {
        self.open
    }

    fn remove(&mut self, pid: i32) -> Option<HashSet<Exit>> {
        let watched = self.by_pid.remove(&pid)?;
        watched.handle.abort();
        if watched.fd.is_some() {
            self.open -= 1;
        }
        for exit in &watched.exits {
            self.pid_of.remove(exit);
        }
        Some(watched.exits)
    }
}

fn reported(tx: &mpsc::WeakUnboundedSender<Msg>, pid: i32, serial: u64) {
    if let Some(tx) = tx.upgrade() {
        let _ = tx.send(Msg::ProcessExited { pid, serial });
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// A process that runs until it is killed, and is reaped then.
    struct Sleeper(std::process::Child);

    impl Sleeper {
        fn start() -> Sleeper {
            Sleeper(
                std::process::Command::new("sleep")
                    .arg("600")
                    .spawn()
                    .unwrap(),
            )
        }

        fn pid(&self) -> i32 {
            self.0.id() as i32
        }

        fn kill(mut self) {
            self.0.kill().unwrap();
            self.0.wait().unwrap();
        }
    }

    impl Drop for Sleeper {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    fn agent(id: &str) -> Exit {
        Exit::Agent(id.to_string())
    }

    /// The exits the next report stands for, taken as the task takes it.
    async fn next_exits(rx: &mut mpsc::UnboundedReceiver<Msg>, exits: &mut Exits) -> Vec<Exit> {
        loop {
            match rx.recv().await.expect("a report") {
                Msg::ProcessExited { pid, serial } => return exits.exited(pid, serial),
                Msg::Exited(exit) => return vec![exit],
                _ => {}
            }
        }
    }

    #[tokio::test]
    async fn sessions_sharing_an_agent_share_one_descriptor_and_all_hear_its_exit() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut exits = Exits::new(Some(1024));
        let shared = Sleeper::start();
        let other = Sleeper::start();
        for id in ["a", "b", "c"] {
            assert!(matches!(
                exits.watch(agent(id), shared.pid(), &tx.downgrade()),
                Watching::Watched
            ));
        }
        exits.watch(agent("d"), other.pid(), &tx.downgrade());
        assert_eq!(exits.open(), 2, "one descriptor per process");

        // One session let go of keeps the others' watch.
        exits.unwatch(&agent("c"));
        assert_eq!(exits.open(), 2);
        shared.kill();
        assert_eq!(
            next_exits(&mut rx, &mut exits).await,
            vec![agent("a"), agent("b")]
        );
        assert_eq!(exits.open(), 1);

        // The last session of a process let go of closes its descriptor.
        exits.unwatch(&agent("d"));
        assert_eq!(exits.open(), 0);
        other.kill();
    }

    #[tokio::test]
    async fn past_the_budget_agents_are_given_up_once_said_and_clients_still_checked() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        // The smallest limit leaves no descriptor for a pidfd at all.
        let mut exits = Exits::new(Some(RESERVED));
        let agent_process = Sleeper::start();
        let second = Sleeper::start();
        let client = Sleeper::start();
        assert!(matches!(
            exits.watch(agent("a"), agent_process.pid(), &tx.downgrade()),
            Watching::GaveUp { first: true }
        ));
        assert!(matches!(
            exits.watch(agent("b"), second.pid(), &tx.downgrade()),
            Watching::GaveUp { first: false }
        ));
        let run = Exit::Client {
            run: "run".into(),
            pid: client.pid(),
        };
        assert!(matches!(
            exits.watch(run.clone(), client.pid(), &tx.downgrade()),
            Watching::Watched
        ));
        assert_eq!(exits.open(), 0);
        client.kill();
        assert_eq!(next_exits(&mut rx, &mut exits).await, vec![run]);
    }

    #[tokio::test]
    async fn a_pid_watched_again_after_its_process_is_gone_tells_the_old_exits() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut exits = Exits::new(Some(1024));
        let first = Sleeper::start();
        let pid = first.pid();
        exits.watch(agent("old"), pid, &tx.downgrade());
        first.kill();
        // The report is not taken yet when the same pid is named for another exit (as a
        // reused pid would be): the old exit is told, the new one watched afresh.
        let fd = crate::proc::pidfd(std::process::id() as i32)
            .unwrap()
            .unwrap();
        assert!(!crate::proc::has_exited(&fd));
        exits.watch(agent("new"), pid, &tx.downgrade());
        let mut told = Vec::new();
        while told.is_empty() {
            told = next_exits(&mut rx, &mut exits).await;
        }
        assert_eq!(told, vec![agent("old")]);
    }
}
