//! Loopflow Tray's GNOME Shell focus extension as files in the person's profile: its two
//! formats, the shell versions each one loads on, and whether the copy installed there
//! fits the shell the person runs. `lf-tray setup gnome-focus` writes it; the tray reads it
//! at start and after a GNOME upgrade writes the right format again (`mend`).
//!
//! GNOME Shell loads an extension only when its `metadata.json` lists the shell's major
//! version, and 45 made extensions ES modules and refuses the old `imports` format (43
//! cannot load the new one): a copy made for 43 stays OUT_OF_DATE after an upgrade to 48,
//! however often the person logs in again.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use lf_tray_core::terminal::GNOME_FOCUS_EXTENSION as UUID;

/// GNOME 43 and 44 load extensions through `imports`; 45 made them ES modules.
const IMPORTS_SOURCE: &str = include_str!("../../packaging/gnome-focus/43/extension.js");
const MODULE_SOURCE: &str = include_str!("../../packaging/gnome-focus/45/extension.js");

/// The extension's two ways of being written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// GNOME 40–44: `extension.js` with `init()`, through `imports`.
    Imports,
    /// GNOME 45 and later: `extension.js` exporting a default class.
    Modules,
}

impl Format {
    /// The format GNOME Shell `major` loads.
    pub fn for_shell(major: u32) -> Format {
        if major >= 45 {
            Format::Modules
        } else {
            Format::Imports
        }
    }

    /// The majors this format is listed for. Imports: from 40 (GNOME's single-number
    /// versions; the APIs it calls are older) to 44, the last that loads it. Modules: 45 to
    /// 50, the newest shell released (Ubuntu 26.04, Fedora 44); a newer shell is added by
    /// `shell_versions` when the extension is written on it.
    fn majors(self) -> std::ops::RangeInclusive<u32> {
        match self {
            Format::Imports => 40..=44,
            Format::Modules => 45..=50,
        }
    }

    fn source(self) -> &'static str {
        match self {
            Format::Imports => IMPORTS_SOURCE,
            Format::Modules => MODULE_SOURCE,
        }
    }

    /// For the person: which format it is.
    pub fn name(self) -> &'static str {
        match self {
            Format::Imports => "imports",
            Format::Modules => "ES modules",
        }
    }

    /// The format of an `extension.js` as found on disk.
    fn of(source: &str) -> Format {
        if source.contains("export default class") {
            Format::Modules
        } else {
            Format::Imports
        }
    }
}

/// Every major the extension written for GNOME Shell `major` lists in `shell-version`: all
/// its format loads on, and `major` itself when it is newer than any known (the format has
/// not changed since 45, and the person's shell is the one it must load on).
pub fn shell_versions(major: u32) -> Vec<u32> {
    let mut majors: Vec<u32> = Format::for_shell(major).majors().collect();
    if !majors.contains(&major) {
        majors.push(major);
    }
    majors
}

/// The `metadata.json` written for GNOME Shell `major`.
pub fn metadata(major: u32) -> String {
    let versions: Vec<String> = shell_versions(major).iter().map(u32::to_string).collect();
    let metadata = serde_json::json!({
        "uuid": UUID,
        "name": "Loopflow Tray focus",
        "description": "Lets Loopflow Tray bring the terminal where an agent waits on you to the front.",
        "shell-version": versions,
        "url": "https://github.com/loopflow/lf-tray",
    });
    format!("{metadata:#}\n")
}

/// Where the person's own extensions live: `$XDG_DATA_HOME/gnome-shell/extensions`.
pub fn extensions_dir() -> Result<PathBuf, String> {
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .ok_or("neither XDG_DATA_HOME nor HOME is set")?;
    Ok(data.join("gnome-shell/extensions"))
}

/// The extension's own directory in the person's profile.
pub fn dir() -> Result<PathBuf, String> {
    Ok(extensions_dir()?.join(UUID))
}

/// Write the extension for GNOME Shell `major` into `dir`; the format written.
pub fn write(dir: &Path, major: u32) -> Result<Format, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("could not create {}: {e}", dir.display()))?;
    let format = Format::for_shell(major);
    write_file(&dir.join("extension.js"), format.source())?;
    write_file(&dir.join("metadata.json"), &metadata(major))?;
    Ok(format)
}

fn write_file(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("could not write {}: {e}", path.display()))
}

/// The copy in a profile, as the shell would judge it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// `shell-version` as written (`"43"`; `"3.38"` before GNOME 40).
    pub versions: Vec<String>,
    pub format: Format,
}

impl Installed {
    /// The copy in `dir`; `None` when there is none (no `metadata.json`). An unreadable or
    /// unparsable one lists no version, so it fits no shell and is written again.
    pub fn read(dir: &Path) -> Option<Installed> {
        let metadata = std::fs::read_to_string(dir.join("metadata.json")).ok()?;
        let versions = serde_json::from_str::<serde_json::Value>(&metadata)
            .ok()
            .and_then(|m| {
                m.get("shell-version")?.as_array().map(|list| {
                    list.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
            })
            .unwrap_or_default();
        let source = std::fs::read_to_string(dir.join("extension.js")).unwrap_or_default();
        Some(Installed {
            versions,
            format: Format::of(&source),
        })
    }

    /// For the person: the versions it was made for (`43`, `43–44`, `45–50`).
    pub fn made_for(&self) -> String {
        match self.versions.as_slice() {
            [] => "no GNOME Shell version".into(),
            [one] => one.clone(),
            [first, .., last] => format!("{first}–{last}"),
        }
    }
}

/// Whether the copy in the profile loads on a shell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fit {
    /// None in the profile: the person never ran `lf-tray setup gnome-focus`.
    Absent,
    /// It loads on that shell, from the login after it was written.
    Fits,
    /// That shell never loads it (a GNOME upgrade since it was written): only writing
    /// it again helps, logging in again does not.
    Misfit { made_for: String, shell: u32 },
}

/// Whether `installed` loads on GNOME Shell `shell` (its major version): the shell wants
/// its major listed in `shell-version` and the format it reads.
pub fn fit(installed: Option<&Installed>, shell: u32) -> Fit {
    let Some(installed) = installed else {
        return Fit::Absent;
    };
    let listed = installed.versions.iter().any(|v| major(v) == Some(shell));
    if listed && installed.format == Format::for_shell(shell) {
        Fit::Fits
    } else {
        Fit::Misfit {
            made_for: installed.made_for(),
            shell,
        }
    }
}

impl Fit {
    /// Why a click cannot bring the terminal to the front, and what to do, when the copy
    /// does not fit; `None` otherwise.
    pub fn misfit_advice(&self) -> Option<String> {
        match self {
            Fit::Misfit { made_for, shell } => Some(format!(
                "the tray's focus extension in your profile was made for GNOME Shell \
                 {made_for}, which GNOME Shell {shell} does not load: run lf-tray setup \
                 gnome-focus again, then log out and in again"
            )),
            Fit::Absent | Fit::Fits => None,
        }
    }
}

fn major(version: &str) -> Option<u32> {
    version.split('.').next()?.trim().parse().ok()
}

/// The installed shell's major version: the one the next login runs, where the extension
/// takes effect (`GNOME Shell 43.9`). After an upgrade and before the next login it is
/// newer than the running shell's.
pub fn next_login_shell() -> Result<u32, String> {
    let out = Command::new("gnome-shell")
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("GNOME Shell is not installed here (gnome-shell: {e})"))?;
    parse_version(&String::from_utf8_lossy(&out.stdout)).ok_or_else(|| {
        format!(
            "gnome-shell --version said {:?}, not a version",
            String::from_utf8_lossy(&out.stdout).trim()
        )
    })
}

/// The major of `gnome-shell --version`'s line, or of the shell's `ShellVersion` (`48.7`).
pub fn parse_version(said: &str) -> Option<u32> {
    let said = said.trim();
    major(said.strip_prefix("GNOME Shell ").unwrap_or(said))
}

/// What `mend` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mended {
    /// Nothing to do: none in the profile, or it fits the next login's shell.
    Nothing,
    /// Written again for `shell`; it was made for `was`.
    Rewritten {
        was: String,
        shell: u32,
        format: Format,
    },
    /// It does not fit and could not be written again.
    Failed { advice: String, why: String },
}

/// After a GNOME upgrade: write the extension again for the next login's shell when the
/// copy in `dir` does not fit it. Only a copy the person put there (by running setup) is
/// rewritten, in place; whether it is enabled is theirs and left as it is.
pub fn mend(dir: &Path, shell: u32) -> Mended {
    let fit = fit(Installed::read(dir).as_ref(), shell);
    let Fit::Misfit { made_for, .. } = &fit else {
        return Mended::Nothing;
    };
    match write(dir, shell) {
        Ok(format) => Mended::Rewritten {
            was: made_for.clone(),
            shell,
            format,
        },
        Err(why) => Mended::Failed {
            advice: fit.misfit_advice().unwrap_or_default(),
            why,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `lf-tray setup gnome-focus` wrote under GNOME 43 before this module: one
    /// version, the imports format.
    fn written_by_old_setup(dir: &Path) {
        std::fs::create_dir_all(dir).unwrap();
        let old = serde_json::json!({"uuid": UUID, "shell-version": ["43"]});
        std::fs::write(dir.join("metadata.json"), old.to_string()).unwrap();
        std::fs::write(dir.join("extension.js"), IMPORTS_SOURCE).unwrap();
    }

    #[test]
    fn each_format_lists_every_shell_it_loads_on() {
        assert_eq!(shell_versions(43), [40, 41, 42, 43, 44]);
        assert_eq!(shell_versions(48), [45, 46, 47, 48, 49, 50]);
        // A shell newer than any known: the ES-module format, and that shell listed too.
        assert_eq!(shell_versions(52), [45, 46, 47, 48, 49, 50, 52]);
        let meta: serde_json::Value = serde_json::from_str(&metadata(48)).unwrap();
        assert_eq!(meta["uuid"], UUID);
        assert_eq!(
            meta["shell-version"],
            serde_json::json!(["45", "46", "47", "48", "49", "50"])
        );
        assert!(IMPORTS_SOURCE.contains("function init()") && !IMPORTS_SOURCE.contains("import "));
        assert!(MODULE_SOURCE.contains("export default class"));
        assert_eq!(Format::of(IMPORTS_SOURCE), Format::Imports);
        assert_eq!(Format::of(MODULE_SOURCE), Format::Modules);
    }

    #[test]
    fn the_version_is_read_from_the_binary_and_from_the_running_shell() {
        assert_eq!(parse_version("GNOME Shell 43.9\n"), Some(43));
        assert_eq!(parse_version("GNOME Shell 46.rc"), Some(46));
        assert_eq!(parse_version("48.7"), Some(48));
        assert_eq!(parse_version("bash: gnome-shell"), None);
    }

    #[test]
    fn a_copy_fits_only_a_shell_it_lists_in_the_format_that_shell_reads() {
        let dir = tempfile::tempdir().unwrap();
        let ext = dir.path().join(UUID);
        assert_eq!(fit(Installed::read(&ext).as_ref(), 48), Fit::Absent);
        write(&ext, 44).unwrap();
        let installed = Installed::read(&ext).unwrap();
        assert_eq!(installed.format, Format::Imports);
        assert_eq!(fit(Some(&installed), 43), Fit::Fits);
        assert_eq!(fit(Some(&installed), 44), Fit::Fits);
        assert_eq!(
            fit(Some(&installed), 45),
            Fit::Misfit {
                made_for: "40–44".into(),
                shell: 45
            }
        );
        // Listed but in the wrong format (edited by hand): GNOME 48 would not load it.
        let hand_edited = Installed {
            versions: vec!["48".into()],
            format: Format::Imports,
        };
        assert!(matches!(fit(Some(&hand_edited), 48), Fit::Misfit { .. }));
        // Unreadable metadata lists nothing, and fits nothing.
        std::fs::write(ext.join("metadata.json"), "{").unwrap();
        assert!(matches!(
            fit(Installed::read(&ext).as_ref(), 43),
            Fit::Misfit { .. }
        ));
    }

    /// The upgrade case of issue 46: set up under GNOME 43, then GNOME 48. Before, the tray
    /// saw an installed extension and said "log out and in again", which never helps;
    /// now it says the copy does not fit, and at start writes the 48 format itself.
    #[test]
    fn a_copy_made_for_43_is_told_and_rewritten_for_48() {
        let dir = tempfile::tempdir().unwrap();
        let ext = dir.path().join(UUID);
        written_by_old_setup(&ext);
        let on_48 = fit(Installed::read(&ext).as_ref(), 48);
        assert_eq!(
            on_48,
            Fit::Misfit {
                made_for: "43".into(),
                shell: 48
            }
        );
        let advice = on_48.misfit_advice().unwrap();
        assert!(
            advice.contains("made for GNOME Shell 43, which GNOME Shell 48 does not load")
                && advice
                    .contains("run lf-tray setup gnome-focus again, then log out and in again"),
            "{advice}"
        );
        // Still 43 at the next login (no upgrade): nothing to mend, nothing written.
        assert_eq!(mend(&ext, 43), Mended::Nothing);
        assert_eq!(Installed::read(&ext).unwrap().versions, ["43"]);
        assert_eq!(
            mend(&ext, 48),
            Mended::Rewritten {
                was: "43".into(),
                shell: 48,
                format: Format::Modules
            }
        );
        let now = Installed::read(&ext).unwrap();
        assert_eq!(now.format, Format::Modules);
        assert_eq!(fit(Some(&now), 48), Fit::Fits);
        assert_eq!(fit(Some(&now), 50), Fit::Fits);
        assert_eq!(mend(&ext, 48), Mended::Nothing);
        // Nobody ran setup: nothing is put in the profile.
        let never = dir.path().join("never");
        assert_eq!(mend(&never, 48), Mended::Nothing);
        assert!(!never.exists());
    }

    #[test]
    fn a_copy_that_cannot_be_written_again_says_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let ext = dir.path().join(UUID);
        written_by_old_setup(&ext);
        // extension.js as a directory: the write fails whoever runs the test (root too).
        std::fs::remove_file(ext.join("extension.js")).unwrap();
        std::fs::create_dir(ext.join("extension.js")).unwrap();
        match mend(&ext, 48) {
            Mended::Failed { advice, why } => {
                assert!(
                    advice.contains("run lf-tray setup gnome-focus again"),
                    "{advice}"
                );
                assert!(why.contains("extension.js"), "{why}");
            }
            other => panic!("{other:?}"),
        }
    }
}
