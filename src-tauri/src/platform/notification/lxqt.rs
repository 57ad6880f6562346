//! LXQt's do-not-disturb: lxqt-notificationd reads `doNotDisturb` from its settings,
//! `$XDG_CONFIG_HOME/lxqt/notifications.conf` (`LXQt::Settings("notifications")`, a
//! QSettings INI file; the key has no group, so it is written under `[General]`). Key and
//! file as found in Debian 12's lxqt-notificationd 1.2.0 (its strings, and its own
//! settings dialog `lxqt-config-notificationd` writing the same key). While it is on, the
//! server takes popups into its list of unattended ones and shows nothing, though Notify
//! returns an id.
//!
//! QSettings saves by writing a new file and renaming it over the old one, so the file
//! being watched would be gone after the first save: the directory is watched, and the
//! file read again after anything in it changed.

use std::path::{Path, PathBuf};

use notify::{RecommendedWatcher, RecursiveMode, Watcher};

pub const SOURCE: &str = "lxqt-notificationd doNotDisturb";
const DIR: &str = "lxqt";
const FILE: &str = "notifications.conf";
const KEY: &str = "doNotDisturb";

/// Whether the settings' text says do-not-disturb is on: `doNotDisturb` in `[General]`
/// (or before any group, which QSettings also reads as no group), read as QVariant reads a
/// string as a bool — anything but empty, `0` and `false` (any case) is on. No key is off,
/// lxqt-notificationd's default.
pub fn is_on(text: &str) -> bool {
    let mut general = true;
    let mut on = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with(';') || line.starts_with('#') || line.is_empty() {
            continue;
        }
        if let Some(group) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            general = group == "General";
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if general && key.trim() == KEY {
            // The last one wins, as QSettings reads a file with the key twice.
            on = truthy(value.trim());
        }
    }
    on
}

fn truthy(value: &str) -> bool {
    let value = value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or(value);
    !(value.is_empty() || value == "0" || value.eq_ignore_ascii_case("false"))
}

/// The settings file, under `config_home` (`$XDG_CONFIG_HOME`, else `~/.config`).
pub fn path(config_home: &Path) -> PathBuf {
    config_home.join(DIR).join(FILE)
}

/// The file and a watch on its directory, for as long as it is kept.
pub struct ConfigFile {
    file: PathBuf,
    dir: PathBuf,
    watcher: RecommendedWatcher,
    /// Whether the directory itself is watched yet. It may not exist before LXQt first
    /// saves a setting; until then `config_home` is watched for it to appear.
    watching_dir: bool,
}

impl ConfigFile {
    /// Watch the settings under `config_home`; `changed` runs (on the watcher's thread)
    /// after anything may have changed them. `None` when nothing there can be watched.
    pub fn watch(config_home: &Path, changed: impl Fn() + Send + 'static) -> Option<ConfigFile> {
        let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            // Not opening and reading: each read of the file (this one's own, too) is an
            // access event, and reading again on it would never end.
            if event.is_ok_and(|event| !matches!(event.kind, notify::EventKind::Access(_))) {
                changed();
            }
        });
        let mut watcher = match watcher {
            Ok(watcher) => watcher,
            Err(e) => {
                tracing::warn!("cannot watch LXQt's notification settings: {e}");
                return None;
            }
        };
        let file = path(config_home);
        let dir = file.parent()?.to_path_buf();
        if let Err(e) = watcher.watch(config_home, RecursiveMode::NonRecursive) {
            tracing::warn!("cannot watch {}: {e}", config_home.display());
        }
        let mut this = ConfigFile {
            file,
            dir,
            watcher,
            watching_dir: false,
        };
        this.rearm();
        Some(this)
    }

    /// After a change: watch the directory if it has appeared since.
    pub fn rearm(&mut self) {
        if !self.watching_dir && self.dir.is_dir() {
            self.watching_dir = self
                .watcher
                .watch(&self.dir, RecursiveMode::NonRecursive)
                .is_ok();
        }
    }

    /// The state now; a file that is not there (or not readable) is off.
    pub fn read(&self) -> bool {
        std::fs::read_to_string(&self.file).is_ok_and(|text| is_on(&text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_in_general_says_it() {
        // As lxqt-config-notificationd 1.2 saves it.
        let saved = "[General]\ndoNotDisturb=true\nplacement=bottom-right\nserver_decides=1\n";
        assert!(is_on(saved));
        assert!(!is_on(&saved.replace("=true", "=false")));
        for on in ["true", "True", "1", "\"true\"", " yes"] {
            assert!(is_on(&format!("[General]\ndoNotDisturb = {on}\n")), "{on}");
        }
        for off in ["false", "FALSE", "0", "", "\"\""] {
            assert!(
                !is_on(&format!("[General]\ndoNotDisturb={off}\n")),
                "{off:?}"
            );
        }
        // Before any group is the same as [General]; the last line wins.
        assert!(is_on("doNotDisturb=true\n"));
        assert!(!is_on(
            "[General]\ndoNotDisturb=true\r\ndoNotDisturb=false\r\n"
        ));
    }

    #[test]
    fn elsewhere_or_absent_it_is_off() {
        assert!(!is_on(""));
        assert!(!is_on("[General]\nplacement=top-left\n"));
        assert!(!is_on("[Other]\ndoNotDisturb=true\n"));
        assert!(!is_on(
            "[General]\n;doNotDisturb=true\n#doNotDisturb=true\n"
        ));
        assert!(!is_on(
            "[General]\ndoNotDisturbAlso=true\nDoNotDisturb=true\n"
        ));
        // A group named after it is not the key.
        assert!(!is_on("[doNotDisturb]\nx=true\n"));
    }

    #[test]
    fn a_replaced_file_is_read_anew_and_a_late_directory_is_found() {
        let config = tempfile::tempdir().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let mut file = ConfigFile::watch(config.path(), move || {
            let _ = tx.send(());
        })
        .unwrap();
        assert!(!file.read(), "no file is off");
        let wait = |what: &str| {
            rx.recv_timeout(std::time::Duration::from_secs(10))
                .unwrap_or_else(|_| panic!("no event for {what}"));
            while rx.try_recv().is_ok() {}
        };
        // The directory appears (LXQt's first save), then the file is saved as QSettings
        // does: a new file renamed over the old.
        std::fs::create_dir(config.path().join(DIR)).unwrap();
        wait("the directory");
        file.rearm();
        let save = |text: &str| {
            let tmp = config.path().join(DIR).join("notifications.conf.tmp");
            std::fs::write(&tmp, text).unwrap();
            std::fs::rename(&tmp, path(config.path())).unwrap();
        };
        save("[General]\ndoNotDisturb=true\n");
        wait("the first save");
        assert!(file.read());
        save("[General]\ndoNotDisturb=false\n");
        wait("the second save, over the first file");
        assert!(!file.read());
        // Reading it is no change: nothing to read again for.
        std::thread::sleep(std::time::Duration::from_millis(300));
        while rx.try_recv().is_ok() {}
        assert!(!file.read());
        assert!(
            rx.recv_timeout(std::time::Duration::from_millis(500))
                .is_err(),
            "a read of the file counted as a change"
        );
    }
}
