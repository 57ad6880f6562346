//! What the tray has told the person, kept across restarts and crashes: for each session that
//! waits, which of its transitions was shown (or dismissed) and since when it waits; the
//! latest transitions for the window's Recent list; and a pause the person asked for.
//!
//! The file (`$XDG_STATE_HOME/lf-tray/history.json`) is rewritten whole on every change,
//! through a temp file renamed over it, so a kill at any moment leaves either the old or the
//! new file, never a torn one. It holds only what waits now and the last [`RECENT`] lines,
//! so it stays a few kilobytes. A file the tray cannot read (corrupt, or written by a newer
//! version) is kept beside it as `history.json.unreadable` and the tray starts fresh.

use std::collections::{BTreeMap, VecDeque};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::lf::Presents;
use crate::{Kind, SessionRecord, State};

/// The file's format; a file with a higher one is from a newer lf-tray.
pub const VERSION: u32 = 1;
/// The Recent list's length: an afternoon of a busy person's sessions.
pub const RECENT: usize = 50;

/// How a session is named across machines and restarts.
pub fn key(record: &SessionRecord) -> String {
    // The id alone for this machine's sessions, so what older versions wrote still names
    // them; another machine's carries the machine (see `SessionKey::token`).
    record.key().token()
}

/// What a session waits on the person for, as a short fingerprint, or `None` when it does
/// not wait. A different fingerprint is a new transition, which the person is told about
/// even if an earlier one of the same session was shown: it became ready, its question
/// changed, a Flow reached another step. A generation D conversation carries no content
/// lf would keep stable (its title is regenerated), so its fingerprint is only "waits";
/// attention that cleared and came back is a new transition because clearing forgets it.
pub fn transition(record: &SessionRecord) -> Option<String> {
    if record.stopped() {
        return Some("stopped".into());
    }
    if !record.needs_you() {
        return None;
    }
    if record.state == State::Ready {
        let summary = record.ready_summary.as_deref().unwrap_or("");
        return Some(format!("ready:{:016x}", fnv(&[summary])));
    }
    if record.presents() == Presents::Waits {
        // Why it waits is the agent's own report, stable while it stands: a new one is news.
        return Some(match record.reason() {
            None => "waits".into(),
            Some(r) => format!(
                "waits:{:016x}",
                fnv(&[
                    r.kind.as_deref().unwrap_or(""),
                    r.title.as_deref().unwrap_or(""),
                    r.msg.as_deref().unwrap_or("")
                ])
            ),
        });
    }
    let [step, step_index, iteration] = record.flow_step();
    let kind = record.kind.as_ref().map_or("", Kind::as_str);
    let prompt = record.prompt.as_deref().unwrap_or("");
    Some(format!(
        "asked:{:016x}",
        fnv(&[kind, prompt, &step_index, &iteration, &step])
    ))
}

/// FNV-1a: stable across builds and Rust versions, unlike std's hasher, so a fingerprint
/// written by one lf-tray matches the next one's.
fn fnv(parts: &[&str]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for byte in part.bytes().chain([0xff]) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    hash
}

/// One waiting session's memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mark {
    pub transition: String,
    /// When the tray first knew it waits for this, unix seconds.
    pub since: i64,
    /// Its popup (or a summary naming it) reached the notification server.
    #[serde(default)]
    pub shown: bool,
    /// The person dismissed it: no popups or reminders until its next transition.
    #[serde(default)]
    pub dismissed: bool,
}

/// One line of the Recent list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Unix seconds.
    pub at: i64,
    /// `asked`, `ready`, `waits`, `no_longer_waits` or `resolved`.
    pub what: String,
    pub id: String,
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
}

/// A pause of popups the person chose from the tray.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pause {
    /// Until this unix second.
    Until(i64),
    /// Until the person resumes.
    Indefinite,
}

#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
struct File {
    version: u32,
    #[serde(default)]
    sessions: BTreeMap<String, Mark>,
    #[serde(default)]
    recent: VecDeque<Entry>,
    #[serde(default)]
    pause: Option<Pause>,
}

/// The memory itself; `save` writes it when something changed.
#[derive(Debug, Default)]
pub struct History {
    file: File,
    dirty: bool,
}

/// What loading found: the history, and a sentence for the log when the file was unreadable.
pub struct Loaded {
    pub history: History,
    pub warning: Option<String>,
}

impl History {
    /// The file's place: `$XDG_STATE_HOME/lf-tray/history.json` (`~/.local/state` when unset).
    pub fn path() -> Option<PathBuf> {
        let state = std::env::var_os("XDG_STATE_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| {
                std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".local/state"))
            })?;
        Some(state.join("lf-tray").join("history.json"))
    }

    pub fn load(path: &Path) -> Loaded {
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Loaded {
                    history: History::default(),
                    warning: None,
                }
            }
            Err(e) => {
                return Loaded {
                    history: History::default(),
                    warning: Some(format!(
                        "could not read {} ({e}); starting with no memory of popups shown",
                        path.display()
                    )),
                }
            }
        };
        let problem = match serde_json::from_slice::<File>(&bytes) {
            Ok(file) if file.version <= VERSION => {
                return Loaded {
                    history: History { file, dirty: false },
                    warning: None,
                }
            }
            Ok(file) => format!("it is version {}, newer than this lf-tray's", file.version),
            Err(e) => format!("it is not valid ({e})"),
        };
        let kept = path.with_extension("json.unreadable");
        let kept = match std::fs::rename(path, &kept) {
            Ok(()) => format!("kept as {}", kept.display()),
            Err(e) => format!("could not keep a copy: {e}"),
        };
        Loaded {
            history: History {
                file: File::default(),
                dirty: true,
            },
            warning: Some(format!(
                "{} is unreadable: {problem}; {kept}; starting with no memory of popups shown",
                path.display()
            )),
        }
    }

    /// Write the file if anything changed since the last save: a temp file beside it,
    /// flushed to disk, renamed over it, and the directory synced so the rename survives a
    /// power cut.
    pub fn save(&mut self, path: &Path) -> std::io::Result<()> {
        if !self.dirty {
            return Ok(());
        }
        let bytes = self.to_bytes();
        write_atomically(path, &bytes)?;
        self.dirty = false;
        Ok(())
    }

    /// The file's bytes, for a caller that writes them outside its lock.
    pub fn to_bytes(&self) -> Vec<u8> {
        let file = File {
            version: VERSION,
            ..self.file.clone()
        };
        let mut bytes = serde_json::to_vec(&file).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }

    /// Whether something changed that `save` would write; clears the flag (the caller
    /// writes `to_bytes` itself).
    pub fn take_dirty(&mut self) -> bool {
        std::mem::take(&mut self.dirty)
    }

    pub fn mark(&self, key: &str) -> Option<&Mark> {
        self.file.sessions.get(key)
    }

    /// Every waiting session's mark, by key.
    pub fn marks(&self) -> impl Iterator<Item = (&str, &Mark)> {
        self.file
            .sessions
            .iter()
            .map(|(key, mark)| (key.as_str(), mark))
    }

    /// Record the session's current transition. A new transition (or a session not seen
    /// waiting before) starts unshown; the same one keeps what was known. `now` is unix
    /// seconds; an Ask's own creation time is its start when older. Returns the mark.
    pub fn waits(&mut self, record: &SessionRecord, now: i64) -> Option<&Mark> {
        let key = key(record);
        let Some(transition) = transition(record) else {
            self.forget(&key);
            return None;
        };
        let same = self
            .file
            .sessions
            .get(&key)
            .is_some_and(|m| m.transition == transition);
        if !same {
            let since = match record.kind {
                Some(Kind::Ask) if record.state != State::Ready => record
                    .created_at
                    .map(|c| c.min(now))
                    .filter(|c| *c > 0)
                    .unwrap_or(now),
                _ => now,
            };
            self.file.sessions.insert(
                key.clone(),
                Mark {
                    transition,
                    since,
                    shown: false,
                    dismissed: false,
                },
            );
            self.dirty = true;
        }
        self.file.sessions.get(&key)
    }

    /// The session no longer waits (or is gone): its next wait is a new transition.
    pub fn forget(&mut self, key: &str) {
        if self.file.sessions.remove(key).is_some() {
            self.dirty = true;
        }
    }

    /// Keep only the sessions in `keys`: what no longer exists is dropped.
    pub fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        let before = self.file.sessions.len();
        self.file.sessions.retain(|key, _| keep(key));
        self.dirty |= self.file.sessions.len() != before;
    }

    /// A popup or summary naming this transition reached the server.
    pub fn shown(&mut self, key: &str, transition: &str) {
        if let Some(mark) = self.file.sessions.get_mut(key) {
            if mark.transition == transition && !mark.shown {
                mark.shown = true;
                self.dirty = true;
            }
        }
    }

    /// Its popup went without the person acting on it (the server let it expire): it is
    /// told again in the next summary, as one never shown is.
    pub fn unseen(&mut self, key: &str) {
        if let Some(mark) = self.file.sessions.get_mut(key) {
            if mark.shown && !mark.dismissed {
                mark.shown = false;
                self.dirty = true;
            }
        }
    }

    pub fn dismiss(&mut self, key: &str) -> bool {
        match self.file.sessions.get_mut(key) {
            Some(mark) if !mark.dismissed => {
                mark.dismissed = true;
                self.dirty = true;
                true
            }
            _ => false,
        }
    }

    pub fn push_recent(&mut self, entry: Entry) {
        if self.file.recent.len() == RECENT {
            self.file.recent.pop_front();
        }
        self.file.recent.push_back(entry);
        self.dirty = true;
    }

    /// The latest transitions, newest first.
    pub fn recent(&self) -> Vec<Entry> {
        self.file.recent.iter().rev().cloned().collect()
    }

    pub fn pause(&self) -> Option<Pause> {
        self.file.pause
    }

    pub fn set_pause(&mut self, pause: Option<Pause>) {
        if self.file.pause != pause {
            self.file.pause = pause;
            self.dirty = true;
        }
    }
}

/// Replace `path` with `bytes` so that a reader (or a crash) sees the old file or the new
/// one, whole.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let written = (|| {
        let mut file = std::fs::File::create(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temp, path)?;
        // The rename is durable only once the directory is on disk too.
        std::fs::File::open(dir).and_then(|d| d.sync_all())
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str, kind: Option<Kind>, state: State) -> SessionRecord {
        let mut record: SessionRecord = serde_json::from_value(serde_json::json!({
            "id": id, "title": format!("Title of {id}"), "detail": "", "cwd": "/src",
            "state": state.as_str(), "open_argv": ["lf", "session", "open", id],
        }))
        .unwrap();
        record.kind = kind;
        record.set_needs_you(record.state != State::Active);
        record
    }

    #[test]
    fn a_transition_is_what_the_session_waits_for() {
        let mut ask = record("ask_1", Some(Kind::Ask), State::Waiting);
        ask.prompt = Some("Ship it?".into());
        let first = transition(&ask).unwrap();
        assert_eq!(transition(&ask).unwrap(), first);
        ask.title = "A new title".into();
        assert_eq!(
            transition(&ask).unwrap(),
            first,
            "titles change, questions count"
        );
        ask.prompt = Some("Ship it now?".into());
        assert_ne!(transition(&ask).unwrap(), first);
        let mut ready = ask.clone();
        ready.state = State::Ready;
        assert!(transition(&ready).unwrap().starts_with("ready:"));
        let mut d = record("s", None, State::Active);
        d.set_needs_you(true);
        assert_eq!(transition(&d).as_deref(), Some("waits"));
        d.set_needs_you(false);
        assert_eq!(transition(&d), None);
    }

    #[test]
    fn marks_keep_what_was_shown_until_a_new_transition() {
        let mut history = History::default();
        let mut ask = record("ask_1", Some(Kind::Ask), State::Waiting);
        ask.prompt = Some("Q?".into());
        ask.created_at = Some(50);
        let mark = history.waits(&ask, 100).unwrap().clone();
        assert_eq!(mark.since, 50, "an Ask waits since lf made it");
        assert!(!mark.shown);
        history.shown("ask_1", &mark.transition);
        assert!(history.waits(&ask, 200).unwrap().shown);
        ask.state = State::Ready;
        let ready = history.waits(&ask, 300).unwrap();
        assert!(!ready.shown && ready.since == 300);
        // A stale confirmation for the earlier transition does not mark the new one.
        history.shown("ask_1", &mark.transition);
        assert!(!history.mark("ask_1").unwrap().shown);
        ask.set_needs_you(false);
        ask.state = State::Active;
        assert!(history.waits(&ask, 400).is_none());
        assert!(history.mark("ask_1").is_none());
    }

    #[test]
    fn the_file_survives_a_round_trip_and_a_bad_file_is_kept_aside() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lf-tray").join("history.json");
        let mut history = History::default();
        let ask = record("ask_1", Some(Kind::Ask), State::Waiting);
        let t = history.waits(&ask, 10).unwrap().transition.clone();
        history.shown("ask_1", &t);
        history.dismiss("ask_1");
        history.set_pause(Some(Pause::Until(99)));
        for i in 0..(RECENT + 5) {
            history.push_recent(Entry {
                at: i as i64,
                what: "asked".into(),
                id: format!("ask_{i}"),
                title: "t".into(),
                machine: None,
            });
        }
        history.save(&path).unwrap();
        let loaded = History::load(&path);
        assert!(loaded.warning.is_none());
        let again = loaded.history;
        assert_eq!(again.mark("ask_1"), history.mark("ask_1"));
        assert_eq!(again.pause(), Some(Pause::Until(99)));
        let recent = again.recent();
        assert_eq!(recent.len(), RECENT);
        assert_eq!(recent[0].id, format!("ask_{}", RECENT + 4), "newest first");
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["history.json"], "no temp file is left behind");

        std::fs::write(&path, b"{\"version\": 1, \"sessions\": [tru").unwrap();
        let loaded = History::load(&path);
        let warning = loaded.warning.unwrap();
        assert!(warning.contains("is unreadable") && warning.contains("kept as"));
        assert!(loaded.history.mark("ask_1").is_none());
        assert!(path.with_extension("json.unreadable").exists());

        std::fs::write(&path, b"{\"version\": 7}").unwrap();
        let warning = History::load(&path).warning.unwrap();
        assert!(warning.contains("version 7, newer"), "{warning}");
    }

    #[test]
    fn retain_prunes_sessions_that_no_longer_exist() {
        let mut history = History::default();
        for id in ["a", "b", "c"] {
            history.waits(&record(id, Some(Kind::Ask), State::Waiting), 1);
        }
        history.take_dirty();
        history.retain(|key| key != "b");
        assert!(history.take_dirty());
        assert!(history.mark("a").is_some() && history.mark("b").is_none());
        history.retain(|_| true);
        assert!(!history.take_dirty());
    }
}
