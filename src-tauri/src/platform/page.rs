//! Telling the window's page: one event, one typed message
//! (`lf_tray_surface::window::ToWindow`). Apart from `window` so that what opens terminals
//! (`launch`) can tell the page about a failure without depending on the window's
//! commands, which depend on it.

use tauri::{AppHandle, Emitter, Manager, Runtime};

use lf_tray_surface::window::{ToWindow, TO_WINDOW};

/// The window's label: there is one.
pub const LABEL: &str = "main";

/// Tell the window, if there is one.
pub fn tell<R: Runtime>(app: &AppHandle<R>, message: ToWindow) {
    if app.get_webview_window(LABEL).is_none() {
        return;
    }
    if let Err(e) = app.emit_to(LABEL, TO_WINDOW, message) {
        tracing::warn!("could not update the window: {e}");
    }
}
