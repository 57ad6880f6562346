//! Showing desktop notifications (`linux`: freedesktop notifications over D-Bus;
//! `elsewhere`: macOS and Windows) and following the server's do-not-disturb (`gnome`,
//! `dnd`). What they say is `lf_tray_surface::notice`, when they appear or go away
//! `lf_tray_surface::policy`, both tested without a display.

use std::sync::Arc;

use lf_tray_surface::notice::{NoticeKey, Server};

#[cfg(all(unix, not(target_os = "macos")))]
pub mod dnd;
#[cfg(all(unix, not(target_os = "macos")))]
pub mod gnome;
#[cfg(all(unix, not(target_os = "macos")))]
mod linux;
#[cfg(all(unix, not(target_os = "macos")))]
mod lxqt;
#[cfg(all(unix, not(target_os = "macos")))]
pub use linux::Notifications;
#[cfg(all(unix, not(target_os = "macos")))]
mod xfce;

#[cfg(any(target_os = "macos", windows))]
mod elsewhere;
#[cfg(any(target_os = "macos", windows))]
pub use elsewhere::Notifications;

/// What the app does when the user picks an action (`default` is a click on the body).
/// The third argument is the server's activation token for the click, when it sent one: the
/// terminal opened for it gets it as `XDG_ACTIVATION_TOKEN`.
pub type OnAction = Arc<dyn Fn(NoticeKey, String, Option<String>) + Send + Sync>;

/// What the app does when the server comes or goes.
pub type OnServer = Arc<dyn Fn(Server) + Send + Sync>;

/// The app icon for popups: its name when the package installed it in the icon theme
/// (servers then pick the size they draw), else the PNG written where the server can read it.
pub(crate) fn icon() -> Option<String> {
    if installed_icon() {
        return Some(DESKTOP_ENTRY_ICON.to_string());
    }
    let dir = dirs::runtime_dir()
        .or_else(dirs::cache_dir)?
        .join("lf-tray");
    let path = dir.join("icon.png");
    let written = std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(&path, include_bytes!("../../../icons/128x128.png")));
    match written {
        Ok(()) => Some(path.display().to_string()),
        Err(e) => {
            tracing::warn!("notifications go without an icon: {e}");
            None
        }
    }
}

/// The icon's name in the hicolor theme, as the .deb and .rpm install it.
const DESKTOP_ENTRY_ICON: &str = "lf-tray";

/// Whether `icons/hicolor/<size>/apps/lf-tray.png` is in one of the XDG data directories.
fn installed_icon() -> bool {
    let data_dirs = std::env::var("XDG_DATA_DIRS")
        .ok()
        .filter(|dirs| !dirs.is_empty())
        .unwrap_or_else(|| "/usr/local/share:/usr/share".into());
    dirs::data_dir()
        .into_iter()
        .chain(data_dirs.split(':').map(std::path::PathBuf::from))
        .filter(|dir| dir.is_absolute())
        .filter_map(|dir| std::fs::read_dir(dir.join("icons/hicolor")).ok())
        .flatten()
        .flatten()
        .any(|size| {
            let png = format!("{DESKTOP_ENTRY_ICON}.png");
            size.path().join("apps").join(png).is_file()
        })
}
