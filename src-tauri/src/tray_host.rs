//! Whether the desktop shows tray icons at all, followed as that changes.
//!
//! On Linux a tray icon is a StatusNotifierItem, which shows only where a host (a panel's
//! tray) has registered with `org.kde.StatusNotifierWatcher`: the watcher's
//! `IsStatusNotifierHostRegistered`. Stock GNOME has neither; a bar without a tray module
//! may own the watcher with no host. Without one the app is invisible once its window is
//! closed, so the person is told: a warning in the log, a note in the window's footer, and
//! at a start without a tray one popup per login.
//!
//! The decisions ([`Host::hear`], [`login`], [`tell`]) are plain code; [`follow`] only
//! reads the bus.

use std::path::{Path, PathBuf};
use std::time::Duration;

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

/// What is known about the desktop's tray host.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Host {
    /// The unique name of the connection that owns the watcher's name; `None` while none
    /// does.
    watcher: Option<String>,
    /// The watcher's `IsStatusNotifierHostRegistered`, as last heard from that owner.
    registered: bool,
}

/// Something heard on the bus about the watcher.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    /// Its name has this owner now (`NameOwnerChanged`, or `GetNameOwner` at start).
    Owner(Option<String>),
    /// `StatusNotifierHostRegistered`.
    HostRegistered,
    /// `StatusNotifierHostUnregistered`: another host may still be registered.
    HostUnregistered,
    /// `IsStatusNotifierHostRegistered`, read or in a `PropertiesChanged`.
    Registered(bool),
}

/// What to do next about what was heard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Then {
    Nothing,
    /// Ask the watcher for `IsStatusNotifierHostRegistered`.
    Read,
}

impl Host {
    /// Whether a tray shows the app's icon.
    pub fn present(&self) -> bool {
        self.watcher.is_some() && self.registered
    }

    /// Take in what connection `from` said (a name's owner comes from the bus itself).
    /// Only the watcher's owner speaks for it: anyone may send a signal with its interface.
    pub fn hear(&mut self, from: Option<&str>, heard: Heard) -> Then {
        match heard {
            Heard::Owner(owner) => {
                // A new watcher knows nothing of the old one's hosts.
                self.registered = false;
                self.watcher = owner;
                if self.watcher.is_some() {
                    Then::Read
                } else {
                    Then::Nothing
                }
            }
            _ if from.is_none() || from != self.watcher.as_deref() => Then::Nothing,
            Heard::HostRegistered => {
                self.registered = true;
                Then::Nothing
            }
            // Kept as it is until the watcher says: one of two hosts leaving leaves a tray.
            Heard::HostUnregistered => Then::Read,
            Heard::Registered(registered) => {
                self.registered = registered;
                Then::Nothing
            }
        }
    }
}

/// What names this login, for telling the person once per login: logind's session
/// (`XDG_SESSION_ID`, new at every login and unique within a boot, hence with the boot id),
/// else the session bus's id (`org.freedesktop.DBus.GetId`, random for every bus daemon:
/// a session without logind — startx, `dbus-run-session` — has a bus of its own that
/// starts and ends with it). Not the bus address: with systemd's user bus it is
/// `unix:path=/run/user/UID/bus` at every login. `None`: nothing tells logins apart.
pub fn login(boot: Option<&str>, session: Option<&str>, bus: Option<&str>) -> Option<String> {
    fn clean(s: Option<&str>) -> Option<&str> {
        s.map(str::trim).filter(|s| !s.is_empty())
    }
    match (clean(session), clean(bus)) {
        (Some(session), _) => Some(format!(
            "boot {} session {session}",
            clean(boot).unwrap_or("?")
        )),
        (None, Some(bus)) => Some(format!("bus {bus}")),
        (None, None) => None,
    }
}

/// Whether a start without a tray tells the person, given the login it runs in and the
/// one they were last told in. Where logins cannot be told apart, every start tells:
/// a popup too many beats an app nobody can find.
pub fn tell(login: Option<&str>, told: Option<&str>) -> bool {
    match login {
        Some(login) => told.map(str::trim) != Some(login),
        None => true,
    }
}

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

/// The footer's note while no tray shows the app.
pub fn note(current_desktop: &str) -> String {
    format!(
        "No tray icon: this desktop shows no tray. {}",
        lf_tray_surface::notice::tray_hint(current_desktop)
    )
}

/// `XDG_CURRENT_DESKTOP`, or empty.
pub fn current_desktop() -> String {
    std::env::var("XDG_CURRENT_DESKTOP").unwrap_or_default()
}

/// The kernel's id of this boot.
pub fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()
}

#[cfg(all(unix, not(target_os = "macos")))]
pub use bus::{bus_id, follow};

#[cfg(all(unix, not(target_os = "macos")))]
mod bus {
    use futures_util::StreamExt;
    use tokio::sync::watch;
    use zbus::{Connection, MatchRule, Message, MessageStream};

    use super::{Heard, Host, Then, HOST_REGISTERED, WATCHER, WATCHER_PATH};

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
            Err(_) => (host.watcher.clone(), false),
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

    #[test]
    fn a_tray_is_there_while_its_watcher_says_a_host_is() {
        let mut host = Host::default();
        assert!(!host.present());
        assert_eq!(
            host.hear(None, Heard::Owner(Some(":1.7".into()))),
            Then::Read
        );
        assert!(!host.present(), "a watcher alone is no tray");
        host.hear(Some(":1.7"), Heard::Registered(true));
        assert!(host.present());
        // Another host leaving is asked about, not taken as the last one gone.
        assert_eq!(host.hear(Some(":1.7"), Heard::HostUnregistered), Then::Read);
        assert!(host.present());
        host.hear(Some(":1.7"), Heard::Registered(false));
        assert!(!host.present());
        host.hear(Some(":1.7"), Heard::HostRegistered);
        assert!(host.present());
        // The watcher goes: its hosts with it; a new one starts out without.
        assert_eq!(host.hear(None, Heard::Owner(None)), Then::Nothing);
        assert!(!host.present());
        host.hear(None, Heard::Owner(Some(":1.9".into())));
        assert!(!host.present());
        host.hear(Some(":1.9"), Heard::HostRegistered);
        assert!(host.present());
    }

    #[test]
    fn only_the_watcher_speaks_for_itself() {
        let mut host = Host::default();
        host.hear(None, Heard::HostRegistered);
        assert!(!host.present(), "no watcher: nobody's signal counts");
        host.hear(None, Heard::Owner(Some(":1.7".into())));
        host.hear(Some(":1.8"), Heard::HostRegistered);
        host.hear(None, Heard::Registered(true));
        assert!(!host.present(), "another connection's signal is no host");
        host.hear(Some(":1.7"), Heard::Registered(true));
        host.hear(Some(":1.8"), Heard::Registered(false));
        assert!(host.present());
    }

    #[test]
    fn a_login_is_logind_s_session_in_this_boot_else_the_session_bus() {
        assert_eq!(
            login(Some("b1\n"), Some("3"), Some("bus-a")).as_deref(),
            Some("boot b1 session 3")
        );
        assert_eq!(
            login(None, Some("3"), None).as_deref(),
            Some("boot ? session 3")
        );
        assert_eq!(
            login(Some("b1"), Some(""), Some("bus-a")).as_deref(),
            Some("bus bus-a")
        );
        assert_eq!(login(Some("b1"), None, None), None);
        assert_ne!(
            login(Some("b1"), Some("3"), None),
            login(Some("b2"), Some("3"), None),
            "session ids start over at every boot"
        );
    }

    #[test]
    fn told_once_per_login() {
        assert!(tell(Some("bus a"), None));
        assert!(!tell(Some("bus a"), Some("bus a")));
        assert!(!tell(Some("bus a"), Some("bus a\n")));
        assert!(tell(Some("bus b"), Some("bus a")));
        assert!(tell(None, Some("bus a")), "logins cannot be told apart");
    }

    #[test]
    fn what_was_told_is_kept_across_starts() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lf-tray").join("no-tray-told");
        assert_eq!(read_told(&path), None);
        write_told(&path, "bus a").unwrap();
        assert!(!tell(Some("bus a"), read_told(&path).as_deref()));
    }
}
