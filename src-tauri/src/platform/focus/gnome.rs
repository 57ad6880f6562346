//! GNOME Shell on Wayland: no app may focus another's window there (`Eval` is refused
//! outside a developer mode, the window list too); the shell itself can. Loopflow Tray's
//! focus extension (`lf-tray setup gnome-focus`, packaging/gnome-focus/) exports, on the
//! shell's own bus connection, the pids of the normal windows and of the focused one, and
//! activating the window of a pid.

use zbus::Connection;

use super::View;
use crate::gnome_extension::{self, Fit, Installed};

pub const NAME: &str = "org.gnome.Shell";
const PATH: &str = "/org/loopflow/Tray/Focus";
const INTERFACE: &str = "org.loopflow.Tray.Focus1";

/// The windows and the focused one; `None` when the extension does not answer (not
/// installed, or installed in this login and not loaded until the next).
pub async fn windows(bus: &Connection) -> Option<View> {
    let (pids, focused): (Vec<u32>, u32) = bus
        .call_method(Some(NAME), PATH, Some(INTERFACE), "Windows", &())
        .await
        .ok()?
        .body()
        .deserialize()
        .ok()?;
    Some(View {
        pids,
        active: (focused != 0).then_some(focused),
    })
}

/// Activate the normal window of `pid`. With several (gnome-terminal-server owns all of
/// its windows), the shell takes the one the person used last: `Ok(false)` says the
/// choice was among several, for the log.
pub async fn activate(bus: &Connection, pid: u32) -> Result<bool, String> {
    let (candidates, focused): (u32, bool) = bus
        .call_method(Some(NAME), PATH, Some(INTERFACE), "Activate", &(pid, ""))
        .await
        .and_then(|m| m.body().deserialize())
        .map_err(|e| format!("GNOME Shell's focus extension did not answer: {e}"))?;
    if candidates == 0 {
        return Err("GNOME Shell shows no window of its terminal".into());
    }
    if !focused {
        return Err("GNOME Shell did not bring its window to the front".into());
    }
    Ok(candidates == 1)
}

/// The running shell's major version (`ShellVersion`, `48.7`): what it loaded at login.
pub async fn running_version(bus: &Connection) -> Option<u32> {
    let reply = bus
        .call_method(
            Some(NAME),
            "/org/gnome/Shell",
            Some("org.freedesktop.DBus.Properties"),
            "Get",
            &(NAME, "ShellVersion"),
        )
        .await
        .ok()?;
    let value: zbus::OwnedVariant = reply.body().deserialize().ok()?;
    let version = String::try_from(value).ok()?;
    gnome_extension::parse_version(&version)
}

/// Whether the extension is in the person's profile (so a login can load it).
pub fn installed() -> bool {
    gnome_extension::dir().is_ok_and(|d| Installed::read(&d).is_some())
}

/// How the copy in the person's profile stands against the shell of the next login (the
/// installed one; the running one where that cannot be asked): whether logging in again
/// would load it.
pub fn extension(running: Option<u32>) -> Fit {
    let installed = gnome_extension::dir()
        .ok()
        .and_then(|d| Installed::read(&d));
    match gnome_extension::next_login_shell().ok().or(running) {
        Some(shell) => gnome_extension::fit(installed.as_ref(), shell),
        // No version to judge by: what the tray said before it could tell.
        None if installed.is_some() => Fit::Fits,
        None => Fit::Absent,
    }
}
