//! `lf-tray setup gnome-focus [--remove]`: the GNOME Shell extension that lets the tray
//! bring a terminal to the front on GNOME's Wayland session, put into the person's profile
//! (or taken out again). GNOME lets no app focus another's window there; only the shell can,
//! and it loads extensions only when it starts, so it works from the next login.
//!
//! The extension's files are in the binary (a `cargo install` has no package to read them
//! from); the package ships the same files under /usr/share/lf-tray/gnome-focus/.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use lf_tray_core::terminal::GNOME_FOCUS_EXTENSION as UUID;

/// GNOME 43 and 44 load extensions through `imports`; 45 made them ES modules and
/// refuses the old format (and 43 cannot load the new one).
const IMPORTS_FORMAT: &str = include_str!("../../packaging/gnome-focus/43/extension.js");
const MODULE_FORMAT: &str = include_str!("../../packaging/gnome-focus/45/extension.js");
const FIRST_MODULE_VERSION: u32 = 45;

const ENABLED_KEY: (&str, &str) = ("org.gnome.shell", "enabled-extensions");

/// Install (or with `remove`, take out) the extension; what was done, for the person.
pub fn gnome_focus(remove: bool) -> Result<String, String> {
    let dir = extensions_dir()?.join(UUID);
    if remove {
        let mut enabled = enabled_extensions()?;
        let was_enabled = enabled.iter().any(|e| e == UUID);
        enabled.retain(|e| e != UUID);
        if was_enabled {
            set_enabled_extensions(&enabled)?;
        }
        let existed = dir.exists();
        if existed {
            std::fs::remove_dir_all(&dir)
                .map_err(|e| format!("could not remove {}: {e}", dir.display()))?;
        }
        return Ok(if existed || was_enabled {
            format!(
                "Removed Loopflow Tray's focus extension ({}). GNOME lets it go at your next login.",
                dir.display()
            )
        } else {
            "Loopflow Tray's focus extension was not installed.".to_string()
        });
    }
    let version = shell_version()?;
    std::fs::create_dir_all(&dir)
        .map_err(|e| format!("could not create {}: {e}", dir.display()))?;
    let (source, format) = if version >= FIRST_MODULE_VERSION {
        (MODULE_FORMAT, "ES modules")
    } else {
        (IMPORTS_FORMAT, "imports")
    };
    write(&dir.join("extension.js"), source)?;
    write(&dir.join("metadata.json"), &metadata(version))?;
    let mut enabled = enabled_extensions()?;
    if !enabled.iter().any(|e| e == UUID) {
        enabled.push(UUID.to_string());
        set_enabled_extensions(&enabled)?;
    }
    let mut said = format!(
        "Installed Loopflow Tray's focus extension for GNOME Shell {version} ({format}) in {}\n\
         and enabled it. It takes effect at your next login: log out and in again, and a click\n\
         on a popup or tray row brings your terminal to the front.",
        dir.display()
    );
    if gsettings(&["get", "org.gnome.shell", "disable-user-extensions"])?.trim() == "true" {
        said.push_str(
            "\nUser extensions are switched off on this desktop (Extensions app, or\n\
             `gsettings set org.gnome.shell disable-user-extensions false`): switch them on for it to load.",
        );
    }
    Ok(said)
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("could not write {}: {e}", path.display()))
}

fn metadata(version: u32) -> String {
    let metadata = serde_json::json!({
        "uuid": UUID,
        "name": "Loopflow Tray focus",
        "description": "Lets Loopflow Tray bring the terminal where an agent waits on you to the front.",
        "shell-version": [version.to_string()],
        "url": "https://github.com/loopflow/lf-tray",
    });
    format!("{metadata:#}\n")
}

/// Where the person's own extensions live: `$XDG_DATA_HOME/gnome-shell/extensions`.
fn extensions_dir() -> Result<PathBuf, String> {
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .ok_or("neither XDG_DATA_HOME nor HOME is set")?;
    Ok(data.join("gnome-shell/extensions"))
}

/// The installed shell's major version: the one the next login runs, where the
/// extension takes effect (`GNOME Shell 43.9`).
fn shell_version() -> Result<u32, String> {
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

fn parse_version(said: &str) -> Option<u32> {
    let number = said.trim().strip_prefix("GNOME Shell ")?;
    number.split('.').next()?.parse().ok()
}

fn gsettings(args: &[&str]) -> Result<String, String> {
    let out = Command::new("gsettings")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("gsettings could not run: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "gsettings {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn enabled_extensions() -> Result<Vec<String>, String> {
    let said = gsettings(&["get", ENABLED_KEY.0, ENABLED_KEY.1])?;
    parse_string_list(&said).ok_or_else(|| {
        format!(
            "could not read {} {} ({:?}); add {UUID} to it yourself",
            ENABLED_KEY.0,
            ENABLED_KEY.1,
            said.trim()
        )
    })
}

fn set_enabled_extensions(list: &[String]) -> Result<(), String> {
    gsettings(&["set", ENABLED_KEY.0, ENABLED_KEY.1, &string_list(list)]).map(|_| ())
}

/// A GVariant `as` as gsettings prints it (`['a@b', 'c@d']`, `@as []`); `None` for any
/// entry that needs escaping, which no extension id does: such a list is not rewritten.
fn parse_string_list(text: &str) -> Option<Vec<String>> {
    let text = text.trim();
    let inner = text
        .strip_prefix("@as ")
        .unwrap_or(text)
        .strip_prefix('[')?
        .strip_suffix(']')?
        .trim();
    if inner.is_empty() {
        return Some(Vec::new());
    }
    inner
        .split(',')
        .map(|item| {
            let item = item.trim();
            let body = item
                .strip_prefix('\'')
                .and_then(|i| i.strip_suffix('\''))
                .or_else(|| item.strip_prefix('"').and_then(|i| i.strip_suffix('"')))?;
            (!body.contains(['\'', '"', '\\'])).then(|| body.to_string())
        })
        .collect()
}

fn string_list(list: &[String]) -> String {
    let items: Vec<String> = list.iter().map(|e| format!("'{e}'")).collect();
    format!("[{}]", items.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_enabled_list_is_read_and_written_as_gsettings_prints_it() {
        assert_eq!(parse_string_list("@as []\n"), Some(vec![]));
        let list = parse_string_list("['ubuntu-appindicators@ubuntu.com', \"a@b\"]\n").unwrap();
        assert_eq!(list, ["ubuntu-appindicators@ubuntu.com", "a@b"]);
        assert_eq!(
            string_list(&list),
            "['ubuntu-appindicators@ubuntu.com', 'a@b']"
        );
        // Anything that would need escaping is left for the person to edit.
        assert_eq!(parse_string_list("['it\\'s@x']"), None);
        assert_eq!(parse_string_list("nonsense"), None);
    }

    #[test]
    fn the_format_follows_the_shell_version() {
        assert_eq!(parse_version("GNOME Shell 43.9\n"), Some(43));
        assert_eq!(parse_version("GNOME Shell 46.rc"), Some(46));
        assert_eq!(parse_version("bash: gnome-shell"), None);
        let meta: serde_json::Value = serde_json::from_str(&metadata(43)).unwrap();
        assert_eq!(meta["uuid"], UUID);
        assert_eq!(meta["shell-version"], serde_json::json!(["43"]));
        assert!(IMPORTS_FORMAT.contains("function init()") && !IMPORTS_FORMAT.contains("import "));
        assert!(MODULE_FORMAT.contains("export default class"));
    }
}
