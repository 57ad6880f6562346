//! The window's size as the person left it: kept in `window.json` beside `settings.json`,
//! and the window is built at that size the next time it opens. Not a setting: nothing in
//! the ⚙ panel, and a lost or unreadable file only means the default size again.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tauri::{AppHandle, Manager, Runtime, Window};

use crate::shell::Shell;

/// A size in logical pixels (what `tauri.conf.json` gives), so a change of the display's
/// scale keeps the window's size as the person sees it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Size {
    pub width: f64,
    pub height: f64,
}

/// A drag sends dozens of sizes a second; the size is written once it held this long.
const SETTLE: Duration = Duration::from_millis(500);

/// The largest size believed: a bigger number is a broken file, not a window.
const LARGEST: f64 = 16384.0;

/// What the window was opened at, and the latest size it was given since.
#[derive(Default)]
pub struct Seen {
    opened: Mutex<Option<Size>>,
    last: Mutex<Option<Size>>,
    pending: AtomicBool,
}

/// `window.json` in the tray's config directory (beside `settings.json`).
fn path(shell: &Shell) -> Option<PathBuf> {
    let settings = shell.settings.path.as_deref()?;
    Some(settings.parent()?.join("window.json"))
}

/// The size kept in `path`, if it reads as one at least `min` big.
pub fn load(path: &Path, min: Size) -> Option<Size> {
    let size: Size = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    let fits = |v: f64, least: f64| v.is_finite() && v >= least && v <= LARGEST;
    (fits(size.width, min.width) && fits(size.height, min.height)).then_some(size)
}

/// Write the size atomically (a temp file in the same directory, renamed over the old one):
/// a crash mid-write leaves the old size, never half a file.
pub fn save(path: &Path, size: Size) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut json = serde_json::to_vec(&size).map_err(std::io::Error::other)?;
    json.push(b'\n');
    let mut temp = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut temp, &json)?;
    temp.as_file().sync_all()?;
    temp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// The size to build the window at: the kept one, else `default` (the config's), within
/// the primary monitor (a size kept on a bigger screen must not open past this one's edge).
pub fn opening<R: Runtime>(app: &AppHandle<R>, default: Size, min: Size) -> Size {
    let kept = app
        .try_state::<Arc<Shell>>()
        .and_then(|shell| path(&shell))
        .and_then(|p| load(&p, min));
    let mut size = kept.unwrap_or(default);
    if let Ok(Some(monitor)) = app.primary_monitor() {
        let screen = monitor.size().to_logical::<f64>(monitor.scale_factor());
        size.width = size.width.min(screen.width).max(min.width);
        size.height = size.height.min(screen.height).max(min.height);
    }
    if let Some(seen) = app.try_state::<Seen>() {
        *crate::shell::lock(&seen.opened) = Some(size);
        *crate::shell::lock(&seen.last) = None;
    }
    size
}

/// The window was resized (by the person, or by its first layout): keep the new size once
/// it settled, unless it is the one it opened at, or a maximized or full-screen one (those
/// are the desktop's, not a size the person chose).
pub fn resized<R: Runtime>(window: &Window<R>, physical: tauri::PhysicalSize<u32>) {
    let app = window.app_handle();
    let (Some(seen), Some(shell)) = (app.try_state::<Seen>(), app.try_state::<Arc<Shell>>()) else {
        return;
    };
    if physical.width == 0
        || physical.height == 0
        || window.is_maximized().unwrap_or(false)
        || window.is_fullscreen().unwrap_or(false)
    {
        return;
    }
    let Some(file) = path(&shell) else { return };
    let Ok(scale) = window.scale_factor() else {
        return;
    };
    let logical = physical.to_logical::<f64>(scale);
    let size = Size {
        width: logical.width.round(),
        height: logical.height.round(),
    };
    *crate::shell::lock(&seen.last) = Some(size);
    if seen.pending.swap(true, Ordering::SeqCst) {
        return;
    }
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        tokio::time::sleep(SETTLE).await;
        let Some(seen) = app.try_state::<Seen>() else {
            return;
        };
        seen.pending.store(false, Ordering::SeqCst);
        let Some(size) = crate::shell::lock(&seen.last).take() else {
            return;
        };
        if *crate::shell::lock(&seen.opened) == Some(size) {
            return;
        }
        match save(&file, size) {
            Ok(()) => {
                *crate::shell::lock(&seen.opened) = Some(size);
                tracing::info!("WINDOW size kept: {}x{}", size.width, size.height);
            }
            Err(e) => tracing::warn!(
                "could not keep the window's size in {}: {e}",
                file.display()
            ),
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: Size = Size {
        width: 340.0,
        height: 360.0,
    };

    #[test]
    fn a_kept_size_reads_back_and_the_write_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("lf-tray").join("window.json");
        let size = Size {
            width: 700.0,
            height: 650.0,
        };
        save(&file, size).unwrap();
        assert_eq!(load(&file, MIN), Some(size));
        let names: Vec<_> = std::fs::read_dir(file.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["window.json"]);
    }

    #[test]
    fn a_size_too_small_too_big_or_unreadable_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("window.json");
        for text in [
            r#"{"width":100,"height":650}"#,
            r#"{"width":700,"height":1e9}"#,
            r#"{"width":700}"#,
            "not json",
        ] {
            std::fs::write(&file, text).unwrap();
            assert_eq!(load(&file, MIN), None, "{text}");
        }
        assert_eq!(load(&dir.path().join("none.json"), MIN), None);
    }
}
