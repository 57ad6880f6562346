//! The window's page: built on show, destroyed on close, at the size the person left it,
//! and told one typed message at a time (`lf_tray_surface::window::ToWindow`). Apart from
//! `window` so that what opens terminals (`launch`) and where a click goes (`go`) can show
//! and tell the page without depending on the window's commands, which depend on them.

pub mod size;

use tauri::{AppHandle, Emitter, Manager, Runtime};

use lf_tray_core::SessionKey;
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

/// The session a window being built should scroll to, asked for by its page once it runs
/// (`commands::sessions`).
#[derive(Default)]
pub struct At(pub std::sync::Mutex<Option<String>>);

/// Show the window, optionally scrolled to one session. The window and its web engine
/// exist only while it is open: built here on the first show after a close, and destroyed
/// when the person closes it (WebKit's processes take ~150 MB that a tray app has no
/// business keeping while it sits in the tray).
pub fn show<R: Runtime>(app: &AppHandle<R>, focus: Option<&SessionKey>) {
    let focus = focus.map(SessionKey::token);
    let focus = focus.as_deref();
    let window = match app.get_webview_window(LABEL) {
        Some(window) => {
            if let Some(id) = focus {
                tell(app, ToWindow::Focus(id.to_string()));
            }
            window
        }
        None => {
            if let Some(at) = app.try_state::<At>() {
                *crate::shell::lock(&at.0) = focus.map(str::to_string);
            }
            match build(app) {
                Ok(window) => window,
                Err(e) => return tracing::warn!("could not open the window: {e}"),
            }
        }
    };
    let shown = window
        .show()
        .and_then(|()| window.unminimize())
        .and_then(|()| window.set_focus());
    if let Err(e) = shown {
        tracing::warn!("could not show the window: {e}");
    }
    tracing::info!("WINDOW shown");
}

/// How long after the window closed its leftovers are given back: long enough for WebKit to
/// have ended its web process and freed the page, and for a person who closed the window by
/// mistake to have opened it again (then nothing is done).
const SETTLE: std::time::Duration = std::time::Duration::from_secs(5);

/// The window was closed: once things settled with no window open, give back what the web
/// engine left behind, so the tray sits in as little memory as before the first show.
pub fn closed<R: Runtime>(app: &AppHandle<R>) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        tokio::time::sleep(SETTLE).await;
        if app.get_webview_window(LABEL).is_none() {
            leftovers::release();
        }
    });
}

#[cfg(target_os = "linux")]
mod leftovers {
    /// WebKitGTK keeps its network process for as long as its web context lives, and
    /// tauri keeps the context for the app's lifetime on Linux (tauri#14626, so that a
    /// second window reuses one process instead of leaking another). With no window, the
    /// process serves nothing but holds ~18 MB; WebKit starts a new one for the next window.
    /// glibc keeps the freed page memory in its arenas until asked to return it.
    pub fn release() {
        let ended = end_network_process();
        // SAFETY: malloc_trim only walks glibc's own arenas under their locks.
        let trimmed = unsafe { libc::malloc_trim(0) } == 1;
        tracing::info!(
            "WINDOW leftovers released: network process ended={ended} trimmed={trimmed}"
        );
    }

    fn end_network_process() -> bool {
        let me = std::process::id();
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{me}/task")) else {
            return false;
        };
        let mut ended = false;
        for task in tasks.flatten() {
            let children =
                std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            for pid in children
                .split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok())
            {
                let name = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
                // The kernel cuts names to 15 bytes: "WebKitNetworkProcess".
                if name.trim_end() == "WebKitNetworkPr" {
                    // SAFETY: a signal to our own child, found by its name just now.
                    ended |= unsafe { libc::kill(pid, libc::SIGTERM) } == 0;
                }
            }
        }
        ended
    }
}

#[cfg(not(target_os = "linux"))]
mod leftovers {
    /// WebKit on macOS ends its helpers itself; WebView2 ends with its last webview.
    pub fn release() {}
}

/// The window as `tauri.conf.json` describes it (`create: false` there: not at start), at
/// the size the person left it.
fn build<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<tauri::WebviewWindow<R>> {
    let config = app
        .config()
        .app
        .windows
        .iter()
        .find(|w| w.label == LABEL)
        .cloned()
        .ok_or_else(|| tauri::Error::WindowNotFound)?;
    let mut config = config;
    let min = size::Size {
        width: config.min_width.unwrap_or(0.0),
        height: config.min_height.unwrap_or(0.0),
    };
    let default = size::Size {
        width: config.width,
        height: config.height,
    };
    let opening = size::opening(app, default, min);
    config.width = opening.width;
    config.height = opening.height;
    let window = tauri::WebviewWindowBuilder::from_config(app, &config)?.build()?;
    tracing::info!("WINDOW built");
    Ok(window)
}
