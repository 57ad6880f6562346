//! Starting at login, in the tray (`--hidden`).
//!
//! Linux and the BSDs: an XDG autostart entry, `$XDG_CONFIG_HOME/autostart/lf-tray.desktop`,
//! which every freedesktop session starts. macOS (a LaunchAgent) and Windows (the `Run` key)
//! go through the auto-launch crate: NOT VERIFIED, this project is only built and tested on
//! Linux.

use std::io;
use std::path::Path;

/// The argument the login start passes: the app starts in the tray, window hidden.
pub const HIDDEN_ARG: &str = "--hidden";

#[cfg(all(unix, not(target_os = "macos")))]
pub use xdg::{enabled, set};

#[cfg(all(unix, not(target_os = "macos")))]
mod xdg {
    use std::io;
    use std::path::PathBuf;

    fn entry_path() -> Option<PathBuf> {
        dirs::config_dir().map(|dir| dir.join("autostart").join("lf-tray.desktop"))
    }

    pub fn enabled() -> bool {
        entry_path().is_some_and(|path| super::entry_enabled(&path))
    }

    pub fn set(on: bool) -> io::Result<()> {
        let path = entry_path()
            .ok_or_else(|| io::Error::other("there is no config directory for autostart"))?;
        if on {
            let exe = std::env::current_exe()?;
            super::write_entry(&path, &exe)
        } else {
            match std::fs::remove_file(&path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            }
        }
    }
}

/// Whether the entry at `path` starts the app: it exists and is not switched off with
/// `Hidden=true` (how desktop settings panels disable an entry without deleting it).
#[cfg_attr(any(target_os = "macos", windows), allow(dead_code))]
fn entry_enabled(path: &Path) -> bool {
    std::fs::read_to_string(path).is_ok_and(|text| {
        !text
            .lines()
            .any(|l| l.trim().eq_ignore_ascii_case("hidden=true"))
    })
}

#[cfg_attr(any(target_os = "macos", windows), allow(dead_code))]
fn write_entry(path: &Path, exe: &Path) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut temp = tempfile::NamedTempFile::new_in(dir)?;
    io::Write::write_all(&mut temp, desktop_entry(exe).as_bytes())?;
    temp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// The autostart entry for the program at `exe`.
fn desktop_entry(exe: &Path) -> String {
    format!(
        "[Desktop Entry]\n\
         Type=Application\n\
         Name=Loopflow Tray\n\
         Comment=Notifications and a review window for the lf sessions waiting on you\n\
         Exec={} {HIDDEN_ARG}\n\
         Terminal=false\n\
         X-GNOME-Autostart-enabled=true\n",
        exec_quote(&exe.to_string_lossy())
    )
}

/// One argument of a desktop entry's `Exec` key: always in double quotes, with the four
/// characters the spec reserves inside quotes escaped, and `%` doubled so it is not read as
/// a field code.
fn exec_quote(arg: &str) -> String {
    let mut out = String::from("\"");
    for c in arg.chars() {
        match c {
            '"' | '`' | '$' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '%' => out.push_str("%%"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(any(target_os = "macos", windows))]
fn launcher() -> io::Result<auto_launch::AutoLaunch> {
    let exe = std::env::current_exe()?;
    auto_launch::AutoLaunchBuilder::new()
        .set_app_name("Loopflow Tray")
        .set_app_path(&exe.to_string_lossy())
        .set_args(&[HIDDEN_ARG])
        .build()
        .map_err(io::Error::other)
}

#[cfg(any(target_os = "macos", windows))]
pub fn enabled() -> bool {
    launcher()
        .and_then(|l| l.is_enabled().map_err(io::Error::other))
        .unwrap_or(false)
}

#[cfg(any(target_os = "macos", windows))]
pub fn set(on: bool) -> io::Result<()> {
    let launcher = launcher()?;
    if on {
        launcher.enable()
    } else {
        launcher.disable()
    }
    .map_err(io::Error::other)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_line_quotes_odd_paths() {
        let entry = desktop_entry(Path::new("/opt/My Apps/100% \"lf\"/lf-tray"));
        assert!(entry.contains("Exec=\"/opt/My Apps/100%% \\\"lf\\\"/lf-tray\" --hidden\n"));
        assert!(entry.starts_with("[Desktop Entry]\nType=Application\n"));
        assert_eq!(exec_quote("a$b`c\\d"), "\"a\\$b\\`c\\\\d\"");
    }

    #[test]
    fn written_entries_start_hidden_and_can_be_switched_off() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("autostart").join("lf-tray.desktop");
        assert!(!entry_enabled(&path));
        write_entry(&path, Path::new("/usr/bin/lf-tray")).unwrap();
        assert!(entry_enabled(&path));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("Exec=\"/usr/bin/lf-tray\" --hidden"));
        std::fs::write(&path, format!("{text}Hidden=true\n")).unwrap();
        assert!(!entry_enabled(&path));
    }
}
