//! The environment WebKitGTK reads once, set so that a tray app idle for hours wakes nobody
//! and gives its memory back when its window closes. Measured with
//! `scripts/bench-desktop.sh` (the README's Desktop benchmark) on WebKitGTK 2.50:
//!
//! - `WEBKIT_DISABLE_MEMORY_PRESSURE_MONITOR=1`. Once a window was shown, WebKit keeps a
//!   `MemoryPressureMonitor` thread in the app for good, even after the window is
//!   destroyed: it reads `/proc/meminfo` one byte per `read` every 5 s (12 wake-ups and
//!   5–10 ms of CPU a minute). While the window is open, its web process also walks
//!   `/proc/self/smaps` every 30 s for its periodic memory monitor (15–25 ms each time).
//!   The page is a few kilobytes; there is no cache worth giving back under pressure.
//! - `WEBKIT_DISABLE_DMABUF_RENDERER=1` and `WEBKIT_WEB_RENDER_DEVICE_FILE=/dev/null`.
//!   Without them, building the first webview makes the app itself open an EGL display,
//!   only to ask it for a DMA-BUF renderer and a DRM render node for the web process: that
//!   maps Mesa (with LLVM, on a software-rendered display) into the app for good, 10 MB of
//!   private memory that stayed after the window closed (25.5 MB private dirty instead of
//!   the hidden tray's 15). GTK draws the window without GL anyway (`GDK_GL=disable` at
//!   init), and a web process without a render node draws the list in software, as it
//!   already does on such displays. `/dev/null` because WebKit takes any non-empty value
//!   as the device and falls back when it is none.
//!
//! A value the person set wins, so each can be turned back on (for instance
//! `WEBKIT_DISABLE_DMABUF_RENDERER=0`).

use std::ffi::OsString;

const QUIET: &[(&str, &str)] = &[
    ("WEBKIT_DISABLE_MEMORY_PRESSURE_MONITOR", "1"),
    ("WEBKIT_DISABLE_DMABUF_RENDERER", "1"),
    ("WEBKIT_WEB_RENDER_DEVICE_FILE", "/dev/null"),
];

/// The variables [`set_webkit_env`] set (not the person's): a terminal the tray opens must
/// not inherit them, or every WebKit app started from it would run without GPU rendering.
static SET: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();

/// Set the variables the person has not set. Call it before the Tauri app (GTK, WebKit)
/// starts and while the process still has one thread: changing the environment races
/// with any other thread's `getenv`.
#[cfg(all(unix, not(target_os = "macos")))]
pub fn set_webkit_env() {
    let set = unset(|name| std::env::var_os(name));
    for (name, value) in &set {
        std::env::set_var(name, value);
    }
    let _ = SET.set(set.into_iter().map(|(name, _)| name).collect());
}

/// WebKitGTK is the Linux webview only.
#[cfg(not(all(unix, not(target_os = "macos"))))]
pub fn set_webkit_env() {}

/// What [`set_webkit_env`] set, for the terminals' environment to leave out.
pub fn ours() -> &'static [&'static str] {
    SET.get().map(Vec::as_slice).unwrap_or_default()
}

/// The variables of [`QUIET`] that `get` finds unset, with their values.
#[cfg_attr(not(all(unix, not(target_os = "macos"))), allow(dead_code))]
fn unset(get: impl Fn(&str) -> Option<OsString>) -> Vec<(&'static str, &'static str)> {
    QUIET
        .iter()
        .filter(|(name, _)| get(name).is_none())
        .copied()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_the_person_left_unset() {
        assert_eq!(unset(|_| None), QUIET);
        let left = unset(|name| (name == "WEBKIT_DISABLE_DMABUF_RENDERER").then(|| "0".into()));
        assert_eq!(
            left,
            [
                ("WEBKIT_DISABLE_MEMORY_PRESSURE_MONITOR", "1"),
                ("WEBKIT_WEB_RENDER_DEVICE_FILE", "/dev/null")
            ]
        );
    }
}
