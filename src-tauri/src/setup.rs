//! `lf-tray setup gnome-focus [--remove]`: the GNOME Shell extension that lets the tray
//! bring a terminal to the front on GNOME's Wayland session, put into the person's profile
//! (or taken out again). GNOME lets no app focus another's window there; only the shell can,
//! and it loads extensions only when it starts, so it works from the next login.
//!
//! The extension's files are in the binary (a `cargo install` has no package to read them
//! from); the package ships the same files under /usr/share/lf-tray/gnome-focus/.

use std::process::{Command, Stdio};

use crate::gnome_extension;
use lf_tray_core::terminal::GNOME_FOCUS_EXTENSION as UUID;

const ENABLED_KEY: (&str, &str) = ("org.gnome.shell", "enabled-extensions");

/// Install (or with `remove`, take out) the extension; what was done, for the person.
pub fn gnome_focus(remove: bool) -> Result<String, String> {
    let dir = gnome_extension::dir()?;
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
    let version = gnome_extension::next_login_shell()?;
    let format = gnome_extension::write(&dir, version)?.name();
    let made_for = gnome_extension::Installed::read(&dir)
        .map(|i| i.made_for())
        .unwrap_or_else(|| version.to_string());
    let mut enabled = enabled_extensions()?;
    if !enabled.iter().any(|e| e == UUID) {
        enabled.push(UUID.to_string());
        set_enabled_extensions(&enabled)?;
    }
    let mut said = format!(
        "Installed Loopflow Tray's focus extension for GNOME Shell {made_for} ({format}) in {}\n\
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
}
