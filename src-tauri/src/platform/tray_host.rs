//! Whether the desktop shows tray icons at all, followed as that changes.
//!
//! On Linux a tray icon is a StatusNotifierItem, which shows only where a host (a panel's
//! tray) has registered with `org.kde.StatusNotifierWatcher`: the watcher's
//! `IsStatusNotifierHostRegistered`. Stock GNOME has neither; a bar without a tray module
//! may own the watcher with no host. Without one the app is invisible once its window is
//! closed, so the person is told: a warning in the log, a note in the window's footer, and
//! at a start without a tray one popup per login.
//!
//! The decisions (`Host::hear`, `login`, `tell`) are in `lf_tray_surface::tray_host`;
//! this reads the bus, keeps the login last told, and tells the person.

use std::path::{Path, PathBuf};
use std::time::Duration;
#[cfg(all(unix, not(target_os = "macos")))]
use std::{
    sync::{atomic::Ordering, Arc},
    time::Instant,
};

#[cfg(all(unix, not(target_os = "macos")))]
use lf_tray_surface::desk::Input;
use lf_tray_surface::{notice, tray_host};
#[cfg(all(unix, not(target_os = "macos")))]
use tauri::{AppHandle, Runtime};

use crate::platform::tray;
#[cfg(all(unix, not(target_os = "macos")))]
use crate::shell::{lock, Shell};

/// How long a start waits for a tray before it tells the person there is none. At login
/// the panel and the autostart apps start together and in no set order, and a panel's tray
/// registers its host as soon as the panel runs: the slowest shell measured here, GNOME
/// Shell under Xvfb, took about 3 s to start on the 2-core machine while two builds ran
/// (`tests/e2e/gnome.py`), so a host still missing after 4 s is not coming with the login.
/// Longer only delays the word for a person who just logged in and looks for the icon;
/// a host already there is known within about 50 ms of the start, and is not waited for.
pub const GRACE: Duration = Duration::from_secs(4);

/// The StatusNotifier watcher: its well-known name, object path and interface.
const WATCHER: &str = "org.kde.StatusNotifierWatcher";
const WATCHER_PATH: &str = "/StatusNotifierWatcher";
const HOST_REGISTERED: &str = "IsStatusNotifierHostRegistered";

/// Where the login last told is kept: `$XDG_STATE_HOME/lf-tray/no-tray-told`.
pub fn told_path() -> Option<PathBuf> {
    let state = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| dirs::home_dir().map(|h| h.join(".local/state")))?;
    Some(state.join("lf-tray").join("no-tray-told"))
}

pub fn read_told(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

pub fn write_told(path: &Path, login: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    lf_tray_core::history::write_atomically(path, login.as_bytes())
}

/// The kernel's id of this boot.
pub fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()
}

/// Follow whether a tray shows the app: the log and the window's footer say when none
/// does, and a start without one (after [`GRACE`] for a panel still starting)
/// tells the person once per login.
#[cfg(all(unix, not(target_os = "macos")))]
pub(crate) async fn follow_host<R: Runtime>(
    app: AppHandle<R>,
    shell: Arc<Shell>,
    mut host: tokio::sync::watch::Receiver<Option<bool>>,
    on_menu: fn(&AppHandle<R>, lf_tray_surface::menu::Item),
) {
    let started = Instant::now();
    let deadline = tokio::time::Instant::now() + GRACE;
    let mut decided = false;
    let mut known: Option<bool> = None;
    loop {
        let now = *host.borrow_and_update();
        if now.is_some() && now != known {
            known = now;
            *lock(&shell.desktop.tray_host.host) = now;
            if now == Some(true) {
                tracing::info!("TRAY_HOST present");
                decided = true;
                let filled = Arc::clone(&shell);
                tray::make_late(&app, on_menu, move |app| {
                    crate::platform::redraw(app, &filled)
                });
                // What it said is no longer so.
                shell.tell(Input::TrayCame);
            } else {
                tracing::warn!(
                    "TRAY_HOST absent: no tray shows Loopflow Tray on this desktop (no \
                     StatusNotifierWatcher with a registered host on the session bus); start \
                     lf-tray again to show its window"
                );
            }
            crate::platform::window::publish(&app, &shell);
        }
        tokio::select! {
            changed = host.changed() => if changed.is_err() { break },
            () = tokio::time::sleep_until(deadline), if !decided => {
                decided = true;
                if known != Some(true) && !shell.desktop.quitting.load(Ordering::SeqCst) {
                    tell_no_tray(&shell, started).await;
                }
            }
        }
    }
}

/// On GNOME's Wayland session without the tray's extension, say once (for this profile,
/// ever) what a click cannot do there and the one command that fixes it. Each click that
/// stops short says it again in its own popup, so once is enough; a person who ran the
/// command and has not logged in again since is not told.
#[cfg(all(unix, not(target_os = "macos")))]
pub(crate) async fn tell_gnome_focus_setup(shell: Arc<Shell>) {
    // Asked once the login's parts are up: GNOME's notification server is the shell's own,
    // and the grace is how long a login's shell has been seen to take.
    tokio::time::sleep(GRACE).await;
    mend_gnome_focus(&shell).await;
    let without = crate::platform::focus::gnome_without_extension().await;
    let Some(told) = told_path().map(|p| p.with_file_name("gnome-focus-told")) else {
        return;
    };
    if !without {
        return;
    }
    if told.exists() {
        tracing::info!("GNOME_FOCUS_SETUP told already");
        return;
    }
    if !shell.view().server {
        return; // no notification server yet: told at a later start
    }
    shell.tell(Input::ClickFailed(notice::gnome_focus_setup()));
    tracing::info!("GNOME_FOCUS_SETUP told");
    if let Err(e) = write_told(&told, "told") {
        tracing::warn!("could not keep {}: {e}", told.display());
    }
}

/// After a GNOME upgrade: the focus extension the person set up is written again in the
/// format and versions the next login's shell loads, and they are told to log in again
/// once (the shell reads extensions only at login). A copy that fits is left alone, and
/// none is written for a person who never ran `lf-tray setup gnome-focus`.
#[cfg(all(unix, not(target_os = "macos")))]
async fn mend_gnome_focus(shell: &Shell) {
    use crate::gnome_extension::{self, Mended};
    let Ok(dir) = gnome_extension::dir() else {
        return;
    };
    if !dir.join("metadata.json").is_file() {
        return;
    }
    let mended = tokio::task::spawn_blocking(move || {
        gnome_extension::next_login_shell()
            .map(|version| (version, gnome_extension::mend(&dir, version)))
    })
    .await;
    let Ok(mended) = mended else { return };
    let (summary, body) = match mended {
        Err(why) => {
            tracing::info!("GNOME_FOCUS_MEND not asked: {why}");
            return;
        }
        Ok((version, Mended::Nothing)) => {
            tracing::info!("GNOME_FOCUS_EXTENSION fits GNOME Shell {version}");
            return;
        }
        Ok((
            _,
            Mended::Rewritten {
                was,
                shell: version,
                format,
            },
        )) => {
            tracing::info!(
                "GNOME_FOCUS_MENDED made for {was}, written again for GNOME Shell {version} ({})",
                format.name()
            );
            (
                format!(
                    "Loopflow Tray updated its GNOME focus extension for GNOME Shell {version}"
                ),
                format!(
                    "The copy you set up was made for GNOME Shell {was}, which GNOME Shell \
                     {version} does not load. Log out and in again once, and a click on a popup \
                     or tray row brings your terminal to the front again."
                ),
            )
        }
        Ok((_, Mended::Failed { advice, why })) => {
            tracing::warn!("GNOME_FOCUS_MEND failed: {why}");
            (
                "A click cannot bring your terminal to the front on GNOME".to_string(),
                format!("{}{}: {why}.", advice[..1].to_uppercase(), &advice[1..]),
            )
        }
    };
    if !shell.view().server {
        return; // the log says it; a click that stops short says what to do
    }
    shell.tell(Input::ClickFailed(notice::Notice {
        key: notice::NoticeKey::Error,
        kind: notice::NoticeKind::Error,
        summary,
        body: notice::escape(&body),
        actions: vec![(notice::DEFAULT, "Show")],
        choices: Vec::new(),
        replaces: None,
        covers: Vec::new(),
    }));
}

/// The popup for a start without a tray, unless this login was told already.
#[cfg(all(unix, not(target_os = "macos")))]
async fn tell_no_tray(shell: &Shell, started: Instant) {
    let session = std::env::var("XDG_SESSION_ID").ok();
    let login = tray_host::login(
        boot_id().as_deref(),
        session.as_deref(),
        bus_id().await.as_deref(),
    );
    let path = told_path();
    let told = path.as_deref().and_then(read_told);
    let login_name = login.as_deref().unwrap_or("unknown");
    if !tray_host::tell(login.as_deref(), told.as_deref()) {
        tracing::info!("NO_TRAY told already in this login ({login_name})");
        return;
    }
    let notice = notice::no_tray(&crate::platform::desktop::current());
    tracing::info!(
        "NO_TRAY popup for login {login_name} after {} ms",
        started.elapsed().as_millis()
    );
    *lock(&shell.desktop.tray_host.login) = login;
    shell.tell(Input::NoTray(notice));
}

/// The no-tray popup reached the server: this login was told, and is not told again.
#[cfg(all(unix, not(target_os = "macos")))]
pub(crate) fn no_tray_told(shell: &Shell) {
    let login = lock(&shell.desktop.tray_host.login).take();
    tracing::info!(
        "NO_TRAY popup shown login={}",
        login.as_deref().unwrap_or("unknown")
    );
    if let (Some(path), Some(login)) = (told_path(), login) {
        if let Err(e) = write_told(&path, &login) {
            tracing::warn!("could not keep {}: {e}", path.display());
        }
    }
}

#[cfg(all(unix, not(target_os = "macos")))]
pub use bus::{bus_id, follow};

#[cfg(all(unix, not(target_os = "macos")))]
mod bus {
    use futures_util::StreamExt;
    use tokio::sync::watch;
    use zbus::{Connection, MatchRule, Message, MessageStream};

    use lf_tray_surface::tray_host::{Heard, Host, Then};

    use super::{HOST_REGISTERED, WATCHER, WATCHER_PATH};

    const BUS: &str = "org.freedesktop.DBus";
    const BUS_PATH: &str = "/org/freedesktop/DBus";

    /// Follow the tray host for the app's life: the value is `None` until first known,
    /// then whether a tray shows the app, sent on every change. Without a session bus
    /// there is no tray either.
    pub fn follow() -> watch::Receiver<Option<bool>> {
        let (sender, receiver) = watch::channel(None);
        tauri::async_runtime::spawn(async move {
            if let Err(e) = run(&sender).await {
                tracing::info!("TRAY_HOST not followed: {e}");
            }
            // The bus is gone, and with it every tray.
            sender.send_replace(Some(false));
        });
        receiver
    }

    async fn run(sender: &watch::Sender<Option<bool>>) -> zbus::Result<()> {
        let connection = Connection::session().await?;
        let owner = MatchRule::builder()
            .msg_type(zbus::message::Type::Signal)
            .sender(BUS)
            .interface(BUS)
            .member("NameOwnerChanged")
            .arg(0, WATCHER)
            .build()?;
        let mut owner = MessageStream::for_match_rule(owner, &connection, None).await?;
        let signals = MatchRule::builder()
            .msg_type(zbus::message::Type::Signal)
            .interface(WATCHER)
            .path(WATCHER_PATH)
            .build()?;
        let mut signals = MessageStream::for_match_rule(signals, &connection, None).await?;
        let properties = MatchRule::builder()
            .msg_type(zbus::message::Type::Signal)
            .interface("org.freedesktop.DBus.Properties")
            .member("PropertiesChanged")
            .path(WATCHER_PATH)
            .build()?;
        let mut properties = MessageStream::for_match_rule(properties, &connection, None).await?;
        // Asked once its changes are followed, so none falls in between.
        let mut host = Host::default();
        let first = name_owner(&connection).await;
        if host.hear(None, Heard::Owner(first)) == Then::Read {
            read(&connection, &mut host).await;
        }
        sender.send_replace(Some(host.present()));
        loop {
            let (from, heard) = tokio::select! {
                biased;
                message = owner.next() => match message {
                    Some(Ok(m)) => {
                        let (_, _, new) = m
                            .body()
                            .deserialize::<(String, String, String)>()
                            .unwrap_or_default();
                        tracing::info!(
                            "TRAY_HOST watcher {}",
                            if new.is_empty() { "gone" } else { new.as_str() }
                        );
                        (None, Heard::Owner(Some(new).filter(|n| !n.is_empty())))
                    }
                    Some(Err(_)) => continue,
                    None => break,
                },
                message = signals.next() => match message {
                    Some(Ok(m)) => match m.header().member().map(|m| m.as_str()) {
                        Some("StatusNotifierHostRegistered") => (sender_of(&m), Heard::HostRegistered),
                        Some("StatusNotifierHostUnregistered") => (sender_of(&m), Heard::HostUnregistered),
                        _ => continue,
                    },
                    Some(Err(_)) => continue,
                    None => break,
                },
                message = properties.next() => match message {
                    Some(Ok(m)) => match changed(&m) {
                        Some(registered) => (sender_of(&m), Heard::Registered(registered)),
                        None => continue,
                    },
                    Some(Err(_)) => continue,
                    None => break,
                },
            };
            if host.hear(from.as_deref(), heard) == Then::Read {
                read(&connection, &mut host).await;
            }
            sender.send_if_modified(|known| {
                let now = Some(host.present());
                let changed = *known != now;
                *known = now;
                changed
            });
        }
        Ok(())
    }

    fn sender_of(message: &Message) -> Option<String> {
        message.header().sender().map(|s| s.to_string())
    }

    /// `IsStatusNotifierHostRegistered` from a `PropertiesChanged` of the watcher's
    /// interface, if it is there.
    fn changed(message: &Message) -> Option<bool> {
        type Changed = (
            String,
            std::collections::HashMap<String, zbus::OwnedVariant>,
            Vec<String>,
        );
        let (interface, changed, _) = message.body().deserialize::<Changed>().ok()?;
        if interface != WATCHER {
            return None;
        }
        bool::try_from(changed.get(HOST_REGISTERED)?.try_clone().ok()?).ok()
    }

    /// Ask the watcher whether a host is registered; its reply counts as from its sender.
    async fn read(connection: &Connection, host: &mut Host) {
        let reply = connection
            .call_method(
                Some(WATCHER),
                WATCHER_PATH,
                Some("org.freedesktop.DBus.Properties"),
                "Get",
                &(WATCHER, HOST_REGISTERED),
            )
            .await;
        let (from, registered) = match reply {
            Ok(reply) => (
                sender_of(&reply),
                reply
                    .body()
                    .deserialize::<zbus::OwnedVariant>()
                    .ok()
                    .and_then(|v| bool::try_from(v).ok())
                    .unwrap_or(false),
            ),
            // A watcher that cannot say has no host to speak of.
            Err(_) => (host.watcher().map(str::to_string), false),
        };
        host.hear(from.as_deref(), Heard::Registered(registered));
    }

    async fn name_owner(connection: &Connection) -> Option<String> {
        connection
            .call_method(Some(BUS), BUS_PATH, Some(BUS), "GetNameOwner", &(WATCHER,))
            .await
            .and_then(|m| m.body().deserialize::<String>())
            .ok()
    }

    /// The session bus's id (`org.freedesktop.DBus.GetId`).
    pub async fn bus_id() -> Option<String> {
        let connection = Connection::session().await.ok()?;
        connection
            .call_method(Some(BUS), BUS_PATH, Some(BUS), "GetId", &())
            .await
            .and_then(|m| m.body().deserialize::<String>())
            .ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lf_tray_surface::tray_host::tell;

    #[test]
    fn what_was_told_is_kept_across_starts() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lf-tray").join("no-tray-told");
        assert_eq!(read_told(&path), None);
        write_told(&path, "bus a").unwrap();
        assert!(!tell(Some("bus a"), read_told(&path).as_deref()));
    }
}
