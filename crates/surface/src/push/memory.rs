//! The memory of what was pushed (`pushes.json`): which transition of each waiting
//! session went out, so one is pushed at most once, also across a restart.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The memory file's format.
const VERSION: u32 = 1;

/// Which transition of each waiting session was pushed: kept across restarts so a
/// transition is pushed at most once. Holds only sessions that wait now.
#[derive(Debug, Clone, Default)]
pub struct Pushed {
    file: File,
    dirty: bool,
    /// The cards that still had buttons when the file was written last (the tray stopped
    /// since): their requests ended with it.
    stale: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct File {
    version: u32,
    #[serde(default)]
    pushed: BTreeMap<String, String>,
    /// The sequence ids of the cards on the phone that carry buttons now.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    cards: BTreeSet<String>,
}

impl Pushed {
    /// What the file holds; a sentence for the log when it could not be read (then
    /// nothing is remembered: better one push too many than one lost).
    pub fn load(path: &Path) -> (Pushed, Option<String>) {
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (Pushed::default(), None),
            Err(e) => {
                return (
                    Pushed::default(),
                    Some(format!("could not read {} ({e})", path.display())),
                )
            }
        };
        match serde_json::from_slice::<File>(&bytes) {
            Ok(mut file) if file.version <= VERSION => {
                let stale: Vec<String> = std::mem::take(&mut file.cards).into_iter().collect();
                let dirty = !stale.is_empty();
                (Pushed { file, dirty, stale }, None)
            }
            Ok(file) => (
                Pushed::default(),
                Some(format!(
                    "{} is version {}, newer than this lf-tray's; starting with no memory of pushes",
                    path.display(),
                    file.version
                )),
            ),
            Err(e) => {
                // Kept for the person to look at, as the popups' memory keeps an unreadable
                // file; the next push writes a fresh one.
                let kept = path.with_extension("json.unreadable");
                let kept = match std::fs::rename(path, &kept) {
                    Ok(()) => format!("kept as {}", kept.display()),
                    Err(e) => format!("could not keep it aside: {e}"),
                };
                (
                    Pushed::default(),
                    Some(format!(
                        "{} is not valid ({e}), {kept}; starting with no memory of pushes",
                        path.display()
                    )),
                )
            }
        }
    }

    pub(super) fn get(&self, key: &str) -> Option<&str> {
        self.file.pushed.get(key).map(String::as_str)
    }

    pub(super) fn set(&mut self, key: &str, transition: &str) {
        if self.get(key) != Some(transition) {
            self.file.pushed.insert(key.into(), transition.into());
            self.dirty = true;
        }
    }

    pub(super) fn forget(&mut self, key: &str) {
        self.dirty |= self.file.pushed.remove(key).is_some();
    }

    pub(super) fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        let before = self.file.pushed.len();
        self.file.pushed.retain(|key, _| keep(key));
        self.dirty |= self.file.pushed.len() != before;
    }

    /// A card with buttons is on the phone (`open`), or it was replaced.
    pub(super) fn card(&mut self, sequence: &str, open: bool) {
        self.dirty |= if open {
            self.file.cards.insert(sequence.into())
        } else {
            self.file.cards.remove(sequence)
        };
    }

    pub(super) fn take_stale(&mut self) -> Vec<String> {
        std::mem::take(&mut self.stale)
    }

    /// The file's bytes when something changed since the last call.
    pub fn take_dirty(&mut self) -> Option<Vec<u8>> {
        if !std::mem::take(&mut self.dirty) {
            return None;
        }
        let file = File {
            version: VERSION,
            pushed: self.file.pushed.clone(),
            cards: self.file.cards.clone(),
        };
        let mut bytes = serde_json::to_vec_pretty(&file).unwrap_or_default();
        bytes.push(b'\n');
        Some(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreadable_memory_is_said_and_forgets_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pushes.json");
        std::fs::write(&path, "{\"version\": 1, \"pushed\": [").unwrap();
        let (memory, warning) = Pushed::load(&path);
        assert!(warning.unwrap().contains("not valid"));
        assert!(memory.file.pushed.is_empty());
        assert_eq!(
            std::fs::read_to_string(path.with_extension("json.unreadable")).unwrap(),
            "{\"version\": 1, \"pushed\": ["
        );
        std::fs::write(&path, "{\"version\": 9}").unwrap();
        assert!(Pushed::load(&path).1.unwrap().contains("newer"));
    }

    #[test]
    fn cards_with_buttons_left_by_the_last_run_are_stale_once_and_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pushes.json");
        let mut memory = Pushed::default();
        memory.card("aa", true);
        memory.card("bb", true);
        memory.card("bb", false);
        std::fs::write(&path, memory.take_dirty().unwrap()).unwrap();
        let (mut loaded, warning) = Pushed::load(&path);
        assert!(warning.is_none());
        assert_eq!(loaded.take_stale(), ["aa"]);
        assert!(loaded.take_stale().is_empty(), "told once");
        let written: File = serde_json::from_slice(&loaded.take_dirty().unwrap()).unwrap();
        assert!(
            written.cards.is_empty(),
            "not stale again at the next start"
        );
    }
}
