//! Desktop notifications: what they say (here), when they appear or go away (`policy`),
//! and showing them (`linux`: freedesktop notifications over D-Bus; `elsewhere`: macOS and
//! Windows). The text and the policy are plain code, tested without a display.

use std::sync::Arc;

pub use lf_tray_surface::notice::*;
pub use lf_tray_surface::policy::{
    Clock, Delivery, Effect, PauseFor, Popups, Preferences, QuietHours,
};

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
