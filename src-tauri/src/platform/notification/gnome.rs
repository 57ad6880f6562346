//! GNOME's do-not-disturb: GNOME Shell's notification server has no `Inhibited` property;
//! its "Do Not Disturb" switch is the `show-banners` key of `org.gnome.desktop.notifications`.
//! Read (and followed) only in a GNOME session, where that key means what it says.

use gtk::gio;
use gtk::gio::prelude::*;

use lf_tray_surface::notice::Server;

use super::OnServer;

const SCHEMA: &str = "org.gnome.desktop.notifications";
const KEY: &str = "show-banners";

/// Start following the switch; must run on the main thread, whose loop delivers changes.
pub fn follow(on_server: OnServer) {
    let gnome = std::env::var("XDG_CURRENT_DESKTOP")
        .is_ok_and(|desktops| desktops.split(':').any(|d| d.eq_ignore_ascii_case("gnome")));
    if !gnome {
        return;
    }
    // Looked up first: `Settings::new` aborts the process for a schema that is not installed.
    let installed = gio::SettingsSchemaSource::default()
        .and_then(|source| source.lookup(SCHEMA, true))
        .is_some_and(|schema| schema.has_key(KEY));
    if !installed {
        return;
    }
    let settings = gio::Settings::new(SCHEMA);
    let report = move |settings: &gio::Settings| {
        let on = !settings.boolean(KEY);
        tracing::info!("DO_NOT_DISTURB {KEY}={}", !on);
        on_server(Server::DoNotDisturb { source: KEY, on });
    };
    report(&settings);
    settings.connect_changed(Some(KEY), move |settings, _| report(settings));
    // Kept for the app's life: the change signal ends with the object.
    std::mem::forget(settings);
}
