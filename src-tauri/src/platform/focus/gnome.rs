//! GNOME Shell on Wayland: no app may focus another's window there (`Eval` is refused
//! outside a developer mode, the window list too); the shell itself can. Loopflow Tray's
//! focus extension (`lf-tray setup gnome-focus`, packaging/gnome-focus/) exports, on the
//! shell's own bus connection, the pids of the normal windows and of the focused one, and
//! activating the window of a pid.

use zbus::Connection;

use super::View;

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

/// Whether the extension is in the person's profile (so the next login loads it).
pub fn installed() -> bool {
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|d| !d.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".local/share"))
        });
    data.is_some_and(|d| {
        d.join("gnome-shell/extensions")
            .join(lf_tray_core::terminal::GNOME_FOCUS_EXTENSION)
            .join("metadata.json")
            .is_file()
    })
}
