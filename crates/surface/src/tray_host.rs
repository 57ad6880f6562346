//! Whether a tray shows the app, decided from what the bus says about the
//! StatusNotifier watcher (only its owner speaks for it), and whether a start without one
//! tells the person (once per login). The shell follows the bus and keeps the file of the
//! login last told.

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
    /// The unique name of the connection that owns the watcher's name, if one does.
    pub fn watcher(&self) -> Option<&str> {
        self.watcher.as_deref()
    }

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

/// The footer's note while no tray shows the app: one sentence, with what to do on this
/// desktop ([`crate::notice::tray_hint`]) behind a button of its own.
pub const NOTE: &str = "No tray icon: this desktop shows no tray.";

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
}
