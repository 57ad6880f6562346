//! The environment WebKitGTK reads once at start, set so a tray app that is idle for hours
//! wakes nobody (measured with `scripts/bench-desktop.sh`, see the README's Desktop
//! benchmark):
//!
//! - `WEBKIT_DISABLE_MEMORY_PRESSURE_MONITOR=1`: without it, a `MemoryPressureMonitor`
//!   thread in the app reads `/proc/meminfo` a byte per `read` every 5 s (about 2 ms of CPU
//!   each time), and each web process walks `/proc/self/smaps` every 30 s for its periodic
//!   memory monitor (15–25 ms of CPU each time). The page is a few kilobytes of HTML; there
//!   is no cache worth giving back under memory pressure.
//! - `WEBKIT_DISABLE_COMPOSITING_MODE=1`: the list is drawn without accelerated
//!   compositing. With it, the first show of the window waited 2.5 s for its first frame
//!   under Mesa's software GL and the web process grew by about 70 MB; without it the page
//!   was painted as the window mapped. A list of rows has nothing to composite.
//!
//! A value the person set wins, so `WEBKIT_DISABLE_COMPOSITING_MODE=0` brings compositing
//! back.

use std::ffi::OsString;

const QUIET: &[(&str, &str)] = &[
    ("WEBKIT_DISABLE_MEMORY_PRESSURE_MONITOR", "1"),
    ("WEBKIT_DISABLE_COMPOSITING_MODE", "1"),
];

/// Set the variables the person has not set. Call it before the Tauri app (GTK, WebKit)
/// starts and while the process still has one thread: changing the environment races
/// with any other thread's `getenv`.
#[cfg(target_os = "linux")]
pub fn set_webkit_env() {
    for (name, value) in unset(|name| std::env::var_os(name)) {
        std::env::set_var(name, value);
    }
}

#[cfg(not(target_os = "linux"))]
pub fn set_webkit_env() {}

/// The variables of [`QUIET`] that `get` finds unset, with their values.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
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
        let set = unset(|name| (name == "WEBKIT_DISABLE_COMPOSITING_MODE").then(|| "0".into()));
        assert_eq!(set, [("WEBKIT_DISABLE_MEMORY_PRESSURE_MONITOR", "1")]);
    }
}
