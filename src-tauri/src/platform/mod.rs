//! What talks to the desktop, apart from the app's wiring: the popups over the
//! notification bus, the tray and whether a host shows it, the window and its page, going
//! to a terminal and opening one, whether the person is at the desk, starting at login,
//! and the checks before GTK starts. Each part carries out what the desk and the engine
//! decided; the code for other platforms sits beside it in small cfg-gated modules.

pub(crate) mod autostart;
#[cfg_attr(not(all(unix, not(target_os = "macos"))), allow(dead_code))]
pub(crate) mod badge;
pub(crate) mod desktop;
#[cfg(all(unix, not(target_os = "macos")))]
pub(crate) mod focus;
// No window of another app can be found or focused there (not built here): every click
// takes lf's own way.
#[cfg(not(all(unix, not(target_os = "macos"))))]
#[path = "focus_elsewhere.rs"]
pub(crate) mod focus;
pub(crate) mod go;
pub(crate) mod launch;
pub(crate) mod notification;
pub(crate) mod page;
// Whether the person is at the desk: the screen lock on the session bus, X11's idle time.
#[cfg(all(unix, not(target_os = "macos")))]
pub(crate) mod presence;
#[cfg(not(all(unix, not(target_os = "macos"))))]
#[path = "presence_elsewhere.rs"]
pub(crate) mod presence;
pub(crate) mod quiet;
pub(crate) mod tray;
// Followed on Linux and the BSDs only: elsewhere the platform's tray is always there.
#[cfg_attr(not(all(unix, not(target_os = "macos"))), allow(dead_code))]
pub(crate) mod tray_host;
pub(crate) mod window;

use tauri::{AppHandle, Runtime};

use crate::shell::Shell;

/// Draw the tray and the window again: the engine's list, and what the desk says of it.
pub(crate) fn redraw<R: Runtime>(app: &AppHandle<R>, shell: &Shell) {
    let sessions = shell.engine.sessions();
    let popups = shell.view().tray();
    tray::refresh(app, sessions, popups);
    window::publish(app, shell);
}
