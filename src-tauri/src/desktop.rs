//! What the tray needs from the session before it starts: a display and a session bus.
//! Without them GTK (through tao) panics with a backtrace that tells a person nothing; this
//! says in one sentence what is missing and what works instead.

use anyhow::{bail, Result};

/// For a terminal, an ssh login or a server, where the tray cannot run.
const INSTEAD: &str = "use `lf-tray watch` or `lf-tray list` there instead";

#[cfg(all(unix, not(target_os = "macos")))]
pub fn check() -> Result<()> {
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    if !set("DISPLAY") && !set("WAYLAND_DISPLAY") {
        bail!("there is no display (neither DISPLAY nor WAYLAND_DISPLAY is set); {INSTEAD}");
    }
    if let Err(e) = gtk::init() {
        bail!("the display could not be opened ({e}); {INSTEAD}");
    }
    if !set("DBUS_SESSION_BUS_ADDRESS") && !session_bus_socket() {
        bail!(
            "there is no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is not set and \
             $XDG_RUNTIME_DIR/bus does not exist), which the tray icon and notifications \
             need; {INSTEAD}"
        );
    }
    Ok(())
}

/// The bus systemd and dbus-broker put at a fixed place; libdbus and zbus find it there.
#[cfg(all(unix, not(target_os = "macos")))]
fn session_bus_socket() -> bool {
    std::env::var_os("XDG_RUNTIME_DIR")
        .map(|dir| std::path::Path::new(&dir).join("bus"))
        .is_some_and(|bus| bus.exists())
}

/// macOS and Windows always have their window server in a desktop session.
#[cfg(not(all(unix, not(target_os = "macos"))))]
pub fn check() -> Result<()> {
    Ok(())
}
