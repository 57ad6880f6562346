//! The step log: with `LF_TRAY_LOG=<file>` set, one plain line per observable step (`READY`,
//! `NOTIFY id=7 kind=asked session=ask_1`, …) is appended to that file. It exists so the
//! end-to-end tests know when to look; they still check the real surfaces.

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

fn file() -> &'static Option<Mutex<std::fs::File>> {
    static FILE: OnceLock<Option<Mutex<std::fs::File>>> = OnceLock::new();
    FILE.get_or_init(|| {
        let path = PathBuf::from(std::env::var_os("LF_TRAY_LOG")?);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| eprintln!("lf-tray: cannot open LF_TRAY_LOG {}: {e}", path.display()))
            .ok()?;
        Some(Mutex::new(file))
    })
}

/// Append one line. Lines are written whole, so concurrent steps never interleave; a line
/// break inside untrusted text (a session id) cannot start a line of its own.
pub fn step(line: impl AsRef<str>) {
    if let Some(file) = file() {
        let line = line.as_ref().replace(['\n', '\r'], " ");
        let mut file = file.lock().unwrap_or_else(|e| e.into_inner());
        let _ = writeln!(file, "{line}");
    }
}
