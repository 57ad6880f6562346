//! The user's settings: one JSON file in the XDG config dir
//! (`$XDG_CONFIG_HOME/lf-tray/settings.json`), written atomically so a crash mid-write never
//! leaves half a file behind.

use std::path::{Path, PathBuf};

use lf_tray_core::terminal::Choice;
use serde::{Deserialize, Serialize};

/// Everything the settings panel edits. Missing fields take their defaults, so a file written
/// by an older version still loads; unknown fields are ignored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// `auto`, a terminal's name (`kitty`, `gnome-terminal`, …) or `custom`.
    pub terminal: String,
    /// The command line used when `terminal` is `custom`; see `lf_tray_core::terminal`.
    pub terminal_template: String,
    pub notify_on_ask: bool,
    pub notify_on_ready: bool,
    pub sound: bool,
    /// Remind once about a session left waiting this many minutes; 0 turns reminders off.
    pub reminder_minutes: u32,
    /// How long a session the person's own terminal is attached to (generation D) must
    /// stay waiting before it pops up; 0 pops it up at once.
    pub attached_grace_seconds: u32,
    /// The `lf` to run instead of the one found on `PATH` / `$LF_BIN`.
    pub lf_path: Option<PathBuf>,
    /// lf's home instead of `$LF_HOME` / `~/.lf`.
    pub home: Option<PathBuf>,
    /// Other machines whose sessions to follow: ssh destinations (a `Host` from
    /// `~/.ssh/config`, `user@host`), as the person's own ssh understands them.
    pub machines: Vec<String>,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            terminal: "auto".into(),
            terminal_template: String::new(),
            notify_on_ask: true,
            notify_on_ready: true,
            sound: true,
            reminder_minutes: 0,
            // An agent that hands its turn back to a person watching its terminal is
            // answered within seconds; 45 s lets a typical reply land first and still
            // tells someone who looked away well before they would notice by themselves.
            attached_grace_seconds: 45,
            lf_path: None,
            home: None,
            machines: Vec::new(),
        }
    }
}

impl Settings {
    /// The terminal the user chose, as the launcher understands it.
    pub fn terminal_choice(&self) -> Choice {
        match self.terminal.trim() {
            "" | "auto" => Choice::Auto,
            "custom" => Choice::Custom(self.terminal_template.clone()),
            name => Choice::Named(name.to_string()),
        }
    }

    /// Empty paths from the panel's text boxes mean "not set".
    pub fn normalized(mut self) -> Settings {
        let unset_empty = |p: Option<PathBuf>| p.filter(|p| !p.as_os_str().is_empty());
        self.lf_path = unset_empty(self.lf_path);
        self.home = unset_empty(self.home);
        self.terminal = self.terminal.trim().to_string();
        // One per line in the panel: blanks around them and empty lines mean nothing, and
        // a machine listed twice is followed once.
        let mut machines: Vec<String> = Vec::new();
        for machine in self.machines.iter().map(|m| m.trim()) {
            if !machine.is_empty() && !machines.iter().any(|m| m == machine) {
                machines.push(machine.to_string());
            }
        }
        self.machines = machines;
        if self.terminal.is_empty() {
            self.terminal = "auto".into();
        }
        self
    }

    /// Reject what would only fail later, with a sentence the panel shows.
    pub fn check(&self) -> Result<(), String> {
        if self.terminal == "custom" && self.terminal_template.trim().is_empty() {
            return Err("A custom terminal needs a command line.".into());
        }
        for machine in &self.machines {
            lf_tray_core::machine::check_destination(machine)?;
        }
        Ok(())
    }
}

/// Where the settings live: `$XDG_CONFIG_HOME/lf-tray/settings.json` (on macOS and Windows,
/// the platform's config dir).
pub fn default_path() -> Option<PathBuf> {
    dirs::config_dir().map(|dir| dir.join("lf-tray").join("settings.json"))
}

/// What loading found: the settings to use, and a warning when the file was unreadable (the
/// defaults are used then, and the bad file is kept aside on the next save).
#[derive(Default)]
pub struct Loaded {
    pub settings: Settings,
    pub warning: Option<String>,
}

pub fn load(path: &Path) -> Loaded {
    match std::fs::read(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Loaded {
            settings: Settings::default(),
            warning: None,
        },
        Err(e) => Loaded {
            settings: Settings::default(),
            warning: Some(format!("Could not read {}: {e}", path.display())),
        },
        Ok(bytes) => match serde_json::from_slice::<Settings>(&bytes) {
            Ok(settings) => Loaded {
                settings: settings.normalized(),
                warning: None,
            },
            Err(e) => Loaded {
                settings: Settings::default(),
                warning: Some(format!(
                    "{} is not valid settings ({e}); using the defaults",
                    path.display()
                )),
            },
        },
    }
}

/// Write the settings atomically: a temp file in the same directory, flushed, then renamed
/// over the old file. A file that does not parse as settings is first moved to
/// `settings.json.invalid`, so a hand edit gone wrong is not lost.
pub fn save(path: &Path, settings: &Settings) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    if let Ok(bytes) = std::fs::read(path) {
        if serde_json::from_slice::<Settings>(&bytes).is_err() {
            std::fs::rename(path, path.with_extension("json.invalid"))?;
        }
    }
    let mut json = serde_json::to_vec_pretty(settings).map_err(std::io::Error::other)?;
    json.push(b'\n');
    let mut temp = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut temp, &json)?;
    temp.as_file().sync_all()?;
    temp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keeps_every_field() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lf-tray").join("settings.json");
        let settings = Settings {
            terminal: "custom".into(),
            terminal_template: "foot -- {argv}".into(),
            notify_on_ask: false,
            notify_on_ready: true,
            sound: false,
            reminder_minutes: 15,
            attached_grace_seconds: 0,
            lf_path: Some("/opt/lf/bin/lf".into()),
            home: Some("/srv/lf-home".into()),
            machines: vec!["build-box".into(), "me@10.0.0.2".into()],
        };
        save(&path, &settings).unwrap();
        let loaded = load(&path);
        assert_eq!(loaded.settings, settings);
        assert!(loaded.warning.is_none());
        // Only the settings file is left: the temp file was renamed, not copied.
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["settings.json"]);
    }

    #[test]
    fn missing_file_gives_defaults_and_old_files_gain_new_fields() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        let loaded = load(&path);
        assert_eq!(loaded.settings, Settings::default());
        assert!(loaded.warning.is_none());

        std::fs::write(&path, r#"{"terminal":"kitty","future_option":1}"#).unwrap();
        let loaded = load(&path);
        assert_eq!(loaded.settings.terminal, "kitty");
        assert!(loaded.settings.notify_on_ready);
        assert_eq!(loaded.settings.attached_grace_seconds, 45);
        assert_eq!(
            loaded.settings.terminal_choice(),
            Choice::Named("kitty".into())
        );
    }

    #[test]
    fn a_broken_file_warns_and_is_kept_aside_on_save() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, "{ half written").unwrap();
        let loaded = load(&path);
        assert_eq!(loaded.settings, Settings::default());
        assert!(loaded.warning.unwrap().contains("not valid settings"));

        save(&path, &Settings::default()).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("settings.json.invalid")).unwrap(),
            "{ half written"
        );
        assert!(load(&path).warning.is_none());
    }

    #[test]
    fn panel_input_is_normalized_and_checked() {
        let settings = Settings {
            terminal: "  ".into(),
            lf_path: Some(PathBuf::new()),
            home: Some("".into()),
            ..Settings::default()
        }
        .normalized();
        assert_eq!(settings.terminal_choice(), Choice::Auto);
        assert_eq!(settings.lf_path, None);
        assert_eq!(settings.home, None);
        let machines = Settings {
            machines: vec![" box ".into(), "".into(), "box".into(), "me@far".into()],
            ..Settings::default()
        }
        .normalized();
        assert_eq!(machines.machines, ["box", "me@far"]);
        assert!(machines.check().is_ok());
        let hostile = Settings {
            machines: vec!["-oProxyCommand=sh".into()],
            ..Settings::default()
        }
        .normalized();
        assert!(hostile.check().unwrap_err().contains("cannot start with"));

        let custom = Settings {
            terminal: "custom".into(),
            ..Settings::default()
        };
        assert!(custom.check().is_err());
        let custom = Settings {
            terminal_template: "xterm -e {argv}".into(),
            ..custom
        };
        assert!(custom.check().is_ok());
        assert_eq!(
            custom.terminal_choice(),
            Choice::Custom("xterm -e {argv}".into())
        );
    }
}
