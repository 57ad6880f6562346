//! What the tray needs from the session before it starts: a display and a session bus.
//! Without them GTK (through tao) panics with a backtrace that tells a person nothing; this
//! says in one sentence what is missing and what works instead. Called on the main thread
//! before anything else has started a thread, as changing the environment requires.

use anyhow::{bail, Result};

/// For a terminal, an ssh login or a server, where the tray cannot run.
const INSTEAD: &str = "use `lf-tray watch` or `lf-tray list` there instead";

#[cfg(all(unix, not(target_os = "macos")))]
pub fn check() -> Result<()> {
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    if !set("DISPLAY") && !set("WAYLAND_DISPLAY") {
        bail!("there is no display (neither DISPLAY nor WAYLAND_DISPLAY is set); {INSTEAD}");
    }
    // GTK 3 on X11 opens GLX when it opens the display, only to pick visuals for GL, and so
    // maps the GL driver (17 MB of Mesa and LLVM on a software-rendered display) into an app
    // that never draws with GL: the window's page is drawn by WebKit, which falls back to
    // its non-GL path. GDK reads the variable once, here; it is removed again so that the
    // terminals the tray opens do not inherit it.
    crate::platform::quiet::set_webkit_env();
    let gl_setting = std::env::var_os("GDK_GL");
    if gl_setting.is_none() {
        std::env::set_var("GDK_GL", "disable");
    }
    let opened = gtk::init();
    if gl_setting.is_none() {
        std::env::remove_var("GDK_GL");
    }
    if let Err(e) = opened {
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

/// `XDG_CURRENT_DESKTOP`, or empty.
pub fn current() -> String {
    std::env::var("XDG_CURRENT_DESKTOP").unwrap_or_default()
}
