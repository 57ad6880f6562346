//! Whether Claude Code has moved on from the request its hook waits on: the person
//! answered in the terminal.
//!
//! Claude ends the hook (SIGTERM) only when the terminal says No or Esc. After a terminal
//! Yes, or a question or plan answered there, the hook is left running and what it prints
//! later is dropped, so a popup kept up by the hook would offer live buttons for an answer
//! already given. Its transcript says nothing until the tool has run (measured with 2.1.328:
//! a six-second command left the transcript untouched for six seconds), but Claude keeps a
//! small state file of its own per running client, `<config>/sessions/<pid>.json`, whose
//! `status` is `waiting` while a prompt is on screen and changes the moment it is answered.
//! The hook watches that file (inotify, no polling): once the status has been `waiting` and
//! then is something else, Claude has moved on.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use notify::Watcher;
use serde::Deserialize;

/// The status Claude writes while a prompt waits for the person.
const WAITING: &str = "waiting";

/// Claude's state file for the client with pid `pid` (the hook's `CLAUDE_PID`), under its
/// config dir (`CLAUDE_CONFIG_DIR`, else `~/.claude`). Only a number names a client: the
/// variable never becomes a path of its own.
pub fn state_file(
    pid: Option<&OsStr>,
    config_dir: Option<PathBuf>,
    home: Option<PathBuf>,
) -> Option<PathBuf> {
    let pid: u32 = pid?.to_str()?.parse().ok()?;
    let config = config_dir
        .filter(|d| d.is_absolute())
        .or_else(|| home.filter(|h| h.is_absolute()).map(|h| h.join(".claude")))?;
    Some(config.join("sessions").join(format!("{pid}.json")))
}

/// A watch on Claude's state file; dropping it ends the watch.
pub struct Watch {
    _watcher: notify::RecommendedWatcher,
    waited: Arc<AtomicBool>,
    moved: Arc<AtomicBool>,
}

impl Watch {
    /// Whether Claude's prompt was seen waiting.
    pub fn waited(&self) -> bool {
        self.waited.load(Ordering::SeqCst)
    }

    /// Whether Claude moved on (and `on_moved` was called).
    pub fn moved(&self) -> bool {
        self.moved.load(Ordering::SeqCst)
    }
}

/// Watch `file` and call `on_moved` once, when Claude's status leaves `waiting` after it
/// was seen there. `None` where the file's folder cannot be watched (another agent, an
/// older Claude without the file): the hook then waits as before.
pub fn watch(file: &Path, on_moved: impl Fn() + Send + Sync + 'static) -> Option<Watch> {
    let dir = file.parent()?.to_path_buf();
    let name = file.file_name()?.to_owned();
    let moved = Arc::new(AtomicBool::new(false));
    let waited = Arc::new(AtomicBool::new(false));
    let check = {
        let file = file.to_path_buf();
        let (waited, moved) = (Arc::clone(&waited), Arc::clone(&moved));
        // One check at a time: the first read and the watch's thread may overlap.
        let one = Mutex::new(());
        move || {
            let _one = one.lock().unwrap_or_else(|e| e.into_inner());
            // A file caught mid-write reads as nothing; its next event reads it whole.
            let Some(status) = status(&file) else { return };
            if status == WAITING {
                waited.store(true, Ordering::SeqCst);
            } else if waited.load(Ordering::SeqCst) && !moved.swap(true, Ordering::SeqCst) {
                on_moved();
            }
        }
    };
    let check = Arc::new(check);
    let on_event = {
        let check = Arc::clone(&check);
        move |event: notify::Result<notify::Event>| {
            // Claude writes the file in place; a rename onto it is read the same way.
            if let Ok(event) = event {
                if event.paths.iter().any(|p| p.file_name() == Some(&name)) {
                    check();
                }
            }
        }
    };
    let mut watcher = notify::recommended_watcher(on_event).ok()?;
    watcher
        .watch(&dir, notify::RecursiveMode::NonRecursive)
        .ok()?;
    // Read once the watch is up, so no change can fall between the read and the watch.
    check();
    Some(Watch {
        _watcher: watcher,
        waited,
        moved,
    })
}

fn status(file: &Path) -> Option<String> {
    #[derive(Deserialize)]
    struct State {
        status: String,
    }
    let bytes = std::fs::read(file).ok()?;
    serde_json::from_slice::<State>(&bytes)
        .ok()
        .map(|s| s.status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// As Claude 2.1.328 writes it (fields trimmed).
    fn state(status: &str) -> String {
        format!(
            r#"{{"pid":10667,"sessionId":"5c5e","cwd":"/tmp/proj","version":"2.1.328","kind":"interactive","status":"{status}","updatedAt":1,"statusUpdatedAt":1{}}}"#,
            if status == "waiting" {
                r#","waitingFor":"permission prompt""#
            } else {
                ""
            }
        )
    }

    #[test]
    fn the_state_file_is_named_by_the_pid_alone() {
        let home = Some(PathBuf::from("/home/p"));
        assert_eq!(
            state_file(Some(OsStr::new("10667")), None, home.clone()),
            Some(PathBuf::from("/home/p/.claude/sessions/10667.json"))
        );
        assert_eq!(
            state_file(
                Some(OsStr::new("7")),
                Some(PathBuf::from("/etc/cc")),
                home.clone()
            ),
            Some(PathBuf::from("/etc/cc/sessions/7.json"))
        );
        for odd in ["../../x", "", "12/..", "-1"] {
            assert_eq!(state_file(Some(OsStr::new(odd)), None, home.clone()), None);
        }
        assert_eq!(state_file(None, None, home), None);
        assert_eq!(
            state_file(Some(OsStr::new("7")), None, Some("rel".into())),
            None
        );
    }

    fn watched(dir: &Path) -> (Watch, mpsc::Receiver<()>) {
        let (tx, rx) = mpsc::channel();
        let tx = Mutex::new(tx);
        let watch = watch(&dir.join("sessions/10667.json"), move || {
            let _ = tx.lock().unwrap().send(());
        })
        .expect("the folder is watched");
        (watch, rx)
    }

    /// What a slow machine may take to deliver one inotify event to the watch's thread.
    const EVENT: Duration = Duration::from_secs(10);

    /// Claude flips its status at a person's pace; a test writes faster than events are
    /// read, so it waits until the watch has seen the prompt waiting.
    fn until_waited(watch: &Watch) {
        let deadline = std::time::Instant::now() + EVENT;
        while !watch.waited() {
            assert!(std::time::Instant::now() < deadline, "never seen waiting");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn a_prompt_answered_in_the_terminal_is_told_once() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sessions")).unwrap();
        let file = dir.path().join("sessions/10667.json");
        // The hook starts a few milliseconds before Claude marks its prompt.
        std::fs::write(&file, state("busy")).unwrap();
        let (watch, told) = watched(dir.path());
        assert!(!watch.waited());
        std::fs::write(&file, state("waiting")).unwrap();
        until_waited(&watch);
        std::fs::write(&file, state("busy")).unwrap();
        told.recv_timeout(EVENT).expect("the move was told");
        assert!(watch.moved());
        std::fs::write(&file, state("waiting")).unwrap();
        std::fs::write(&file, state("idle")).unwrap();
        // Once: a later prompt of the same client is another hook's.
        std::fs::write(&file, "a marker").unwrap();
        drop(watch);
        assert!(told.try_recv().is_err());
    }

    #[test]
    fn a_prompt_still_waiting_or_a_torn_write_is_no_move() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sessions")).unwrap();
        let file = dir.path().join("sessions/10667.json");
        std::fs::write(&file, state("waiting")).unwrap();
        let (watch, told) = watched(dir.path());
        assert!(watch.waited(), "the first read sees the prompt waiting");
        // Half a file, then the same status again, then another client's file.
        std::fs::write(&file, &state("busy")[..20]).unwrap();
        std::fs::write(&file, state("waiting")).unwrap();
        std::fs::write(dir.path().join("sessions/99.json"), state("busy")).unwrap();
        // The marker: an event after all of the above, which the watch reads in order.
        std::fs::write(&file, state("idle")).unwrap();
        told.recv_timeout(EVENT).expect("the move was told");
        assert!(watch.moved());
        assert!(told.try_recv().is_err(), "told twice");
    }

    #[test]
    fn without_the_file_nothing_moves_and_without_its_folder_there_is_no_watch() {
        let dir = tempfile::tempdir().unwrap();
        assert!(watch(&dir.path().join("none/1.json"), || {}).is_none());
        std::fs::create_dir(dir.path().join("sessions")).unwrap();
        let (watch, told) = watched(dir.path());
        // Never waiting: a status other than `waiting` is no move on its own.
        let file = dir.path().join("sessions/10667.json");
        std::fs::write(&file, state("busy")).unwrap();
        std::fs::write(&file, state("idle")).unwrap();
        assert!(told.try_recv().is_err());
        std::fs::write(&file, state("waiting")).unwrap();
        until_waited(&watch);
        std::fs::write(&file, state("busy")).unwrap();
        told.recv_timeout(EVENT).expect("the move was told");
        assert!(watch.moved());
    }
}
