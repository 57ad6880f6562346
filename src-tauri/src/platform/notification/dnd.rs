//! Do-not-disturb switches a notification server keeps in its own settings, not on the bus:
//! xfce4-notifyd's in xfconf ([`xfce`]), lxqt-notificationd's in a file ([`lxqt`]). While
//! one is on, that server swallows every popup (Notify still returns an id), so the app
//! holds them back itself and sums them up when it ends, as for the switches the server
//! itself says on the bus (`Inhibited`, dunst's pause) and GNOME's.
//!
//! Followed by **which server owns `org.freedesktop.Notifications`**, not by the desktop
//! (`XDG_CURRENT_DESKTOP`): the switch is the server's, which honours it under any desktop
//! (xfce4-notifyd is often run under i3 or Openbox), and it means nothing to another server
//! on an Xfce or LXQt desktop (dunst there would show the popups the switch would hold
//! back). The owner is followed as it changes; the app's own notification connection
//! starts the server at the app's start (D-Bus activation), so it is known before the
//! first popup in all but a start that races it.
//!
//! On a connection of its own: it asks xfconfd, which the notification connection never
//! does, and it is not tied to that connection's reconnects.

use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::mpsc;
use tokio::time::Instant;
use zbus::{Connection, MatchRule, MessageStream};

use lf_tray_surface::notice::Server;

use super::{lxqt, xfce, OnServer};

const SERVER: &str = "org.freedesktop.Notifications";
const PATH: &str = "/org/freedesktop/Notifications";
const BUS: &str = "org.freedesktop.DBus";
const BUS_PATH: &str = "/org/freedesktop/DBus";
/// Connecting again after the session bus went away: as the notification connection does
/// (soon at first, a session manager restarts a bus within a second; then a try a minute).
const RECONNECT_FIRST: Duration = Duration::from_secs(1);
const RECONNECT_MAX: Duration = Duration::from_secs(60);
/// How long after LXQt's file says "off" the app says so. lxqt-notificationd reads the file
/// again 1 s after the last change (liblxqt's `Settings` restarts a 1000 ms timer on each);
/// a summary sent before that is taken in under do-not-disturb and never shown (measured:
/// a popup 0.8 s after the change was held, one 1.0 s after shown). 1.5 s leaves room for a
/// loaded machine. "On" is said at once: holding back early costs nothing.
const LXQT_RELOAD: Duration = Duration::from_millis(1500);

/// Whose settings hold the switch, by the server's `GetServerInformation` name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keeper {
    Xfce,
    Lxqt,
}

impl Keeper {
    /// The names as Debian 12's xfce4-notifyd 0.7.3 (`Xfce Notify Daemon`, vendor `Xfce`)
    /// and lxqt-notificationd 1.2.0 give them; `xfce4-notifyd` too, the name of its program,
    /// should a later one say that.
    pub fn of(server: &str) -> Option<Keeper> {
        match server {
            "Xfce Notify Daemon" | "xfce4-notifyd" => Some(Keeper::Xfce),
            "lxqt-notificationd" => Some(Keeper::Lxqt),
            _ => None,
        }
    }

    fn source(self) -> &'static str {
        match self {
            Keeper::Xfce => xfce::SOURCE,
            Keeper::Lxqt => lxqt::SOURCE,
        }
    }
}

/// The switch being followed, and what was last said about it.
struct Following {
    keeper: Keeper,
    /// The file and its watch, for LXQt.
    file: Option<lxqt::ConfigFile>,
    said: Option<bool>,
    /// When an "off" read from LXQt's file is to be said (see [`LXQT_RELOAD`]).
    off_at: Option<Instant>,
}

impl Following {
    /// Tell the policy, once per change.
    fn say(&mut self, on: bool, on_server: &OnServer) {
        if self.said == Some(on) {
            return;
        }
        self.said = Some(on);
        let source = self.keeper.source();
        tracing::info!("DO_NOT_DISTURB {source}={on}");
        on_server(Server::DoNotDisturb { source, on });
    }

    /// What LXQt's file says now: "on" is said at once, "off" after "on" once the server
    /// has read the file too.
    fn file_says(&mut self, on: bool, now: Instant, on_server: &OnServer) {
        if on {
            self.off_at = None;
            self.say(true, on_server);
        } else if self.said == Some(true) {
            // Each change restarts the server's timer, and so this one.
            self.off_at = Some(now + LXQT_RELOAD);
        } else {
            self.say(false, on_server);
        }
    }

    /// Say a pending "off" once it is due.
    fn due(&mut self, now: Instant, on_server: &OnServer) {
        if self.off_at.is_some_and(|at| at <= now) {
            self.off_at = None;
            self.say(false, on_server);
        }
    }

    /// Let go: the server that honoured it is gone, and its switch with it.
    fn end(mut self, on_server: &OnServer) {
        if self.said == Some(true) {
            self.say(false, on_server);
        }
    }
}

/// Start following; runs for the app's life on the async runtime.
pub fn follow(on_server: OnServer) {
    // LXQt's settings: `$XDG_CONFIG_HOME`, else `~/.config` (`dirs` reads both).
    let config_home = dirs::config_dir();
    tauri::async_runtime::spawn(async move {
        let mut wait = RECONNECT_FIRST;
        loop {
            match Connection::session().await {
                Ok(connection) => {
                    wait = RECONNECT_FIRST;
                    if let Err(e) = run(&connection, config_home.as_deref(), &on_server).await {
                        tracing::warn!("cannot follow the server's do-not-disturb: {e}");
                    }
                }
                Err(e) => tracing::debug!("no session bus for do-not-disturb yet: {e}"),
            }
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(RECONNECT_MAX);
        }
    });
}

/// Follow the server's switch until the connection ends.
async fn run(
    connection: &Connection,
    config_home: Option<&std::path::Path>,
    on_server: &OnServer,
) -> zbus::Result<()> {
    let owners = MatchRule::builder()
        .msg_type(zbus::message::Type::Signal)
        .sender(BUS)
        .interface(BUS)
        .member("NameOwnerChanged")
        .arg(0, SERVER)
        .build()?;
    let mut owners = MessageStream::for_match_rule(owners, connection, None).await?;
    let mut xfconf = MessageStream::for_match_rule(xfce::changes_rule()?, connection, None).await?;
    let (touched, mut files) = mpsc::unbounded_channel();
    let start = |keeper: Option<Keeper>| follow_keeper(keeper, config_home, &touched);
    // Subscribed first, then asked, so that no change falls in between.
    let owner = name_owner(connection).await;
    let mut following = start(keeper_of(connection, owner.as_deref()).await);
    read(connection, following.as_mut(), on_server).await;
    loop {
        let off_at = following.as_ref().and_then(|f| f.off_at);
        tokio::select! {
            _ = tokio::time::sleep_until(off_at.unwrap_or_else(Instant::now)), if off_at.is_some() => {
                if let Some(f) = following.as_mut() {
                    f.due(Instant::now(), on_server);
                }
            }
            message = owners.next() => match message {
                Some(Ok(message)) => {
                    let (_, _, new) = message
                        .body()
                        .deserialize::<(String, String, String)>()
                        .unwrap_or_default();
                    let owner = Some(new).filter(|new| !new.is_empty());
                    let keeper = keeper_of(connection, owner.as_deref()).await;
                    if following.as_ref().map(|f| f.keeper) != keeper {
                        if let Some(old) = following.take() {
                            old.end(on_server);
                        }
                        following = start(keeper);
                    }
                    // Read again also for the same kind of server: a restarted one.
                    read(connection, following.as_mut(), on_server).await;
                }
                Some(Err(e)) => tracing::debug!("unreadable signal: {e}"),
                None => break,
            },
            message = xfconf.next() => match message {
                Some(Ok(message)) => {
                    if let Some(f) = following.as_mut().filter(|f| f.keeper == Keeper::Xfce) {
                        if let Some(on) = xfce::changed(&message) {
                            f.say(on, on_server);
                        }
                    }
                }
                Some(Err(e)) => tracing::debug!("unreadable signal: {e}"),
                None => break,
            },
            Some(()) = files.recv() => {
                if let Some(f) = following.as_mut().filter(|f| f.keeper == Keeper::Lxqt) {
                    if let Some(file) = f.file.as_mut() {
                        file.rearm();
                        let on = file.read();
                        f.file_says(on, Instant::now(), on_server);
                    }
                }
            }
        }
    }
    if let Some(old) = following.take() {
        old.end(on_server);
    }
    Ok(())
}

/// Start following the switch of `keeper`, if any: LXQt's in its config file (each change
/// told to `touched`), the others' over the bus.
fn follow_keeper(
    keeper: Option<Keeper>,
    config_home: Option<&std::path::Path>,
    touched: &mpsc::UnboundedSender<()>,
) -> Option<Following> {
    let touched = touched.clone();
    keeper.map(|keeper| Following {
        keeper,
        file: (keeper == Keeper::Lxqt)
            .then(|| {
                let home = config_home?;
                lxqt::ConfigFile::watch(home, move || {
                    let _ = touched.send(());
                })
            })
            .flatten(),
        said: None,
        off_at: None,
    })
}

/// The state of the switch now.
async fn read(connection: &Connection, following: Option<&mut Following>, on_server: &OnServer) {
    let Some(f) = following else {
        return;
    };
    let on = match f.keeper {
        Keeper::Xfce => xfce::read(connection).await,
        Keeper::Lxqt => f.file.as_ref().map(lxqt::ConfigFile::read),
    };
    if let Some(on) = on {
        f.say(on, on_server);
    }
}

/// Which switch the server owning the name `owner` keeps, if any. Asked of the owner by
/// its unique name, so that asking never starts a server.
async fn keeper_of(connection: &Connection, owner: Option<&str>) -> Option<Keeper> {
    let owner = owner?;
    let info = connection
        .call_method(Some(owner), PATH, Some(SERVER), "GetServerInformation", &())
        .await
        .and_then(|m| m.body().deserialize::<(String, String, String, String)>());
    match info {
        Ok((name, ..)) => {
            let keeper = Keeper::of(&name);
            tracing::info!(
                "SERVER_INFO {name}: do-not-disturb {}",
                match keeper {
                    Some(Keeper::Xfce) => "in xfconf",
                    Some(Keeper::Lxqt) => "in LXQt's settings file",
                    None => "on the bus or none",
                }
            );
            keeper
        }
        Err(e) => {
            tracing::debug!("the notification server did not say what it is: {e}");
            None
        }
    }
}

async fn name_owner(connection: &Connection) -> Option<String> {
    connection
        .call_method(Some(BUS), BUS_PATH, Some(BUS), "GetNameOwner", &(SERVER,))
        .await
        .and_then(|m| m.body().deserialize::<String>())
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_servers_that_keep_a_switch_are_followed() {
        assert_eq!(Keeper::of("Xfce Notify Daemon"), Some(Keeper::Xfce));
        assert_eq!(Keeper::of("xfce4-notifyd"), Some(Keeper::Xfce));
        assert_eq!(Keeper::of("lxqt-notificationd"), Some(Keeper::Lxqt));
        for other in [
            "dunst",
            "gnome-shell",
            "Plasma",
            "mako",
            "Notification Daemon",
            "",
        ] {
            assert_eq!(Keeper::of(other), None, "{other}");
        }
    }

    #[test]
    fn said_once_per_change_and_off_when_let_go() {
        use std::sync::{Arc, Mutex};
        let heard = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&heard);
        let on_server: OnServer = Arc::new(move |server| log.lock().unwrap().push(server));
        let mut f = Following {
            keeper: Keeper::Xfce,
            file: None,
            said: None,
            off_at: None,
        };
        f.say(false, &on_server);
        f.say(true, &on_server);
        f.say(true, &on_server);
        f.end(&on_server);
        let dnd = |on| Server::DoNotDisturb {
            source: xfce::SOURCE,
            on,
        };
        assert_eq!(*heard.lock().unwrap(), [dnd(false), dnd(true), dnd(false)]);
        // Let go while off: nothing more to say.
        let mut f = Following {
            keeper: Keeper::Lxqt,
            file: None,
            said: None,
            off_at: None,
        };
        f.say(false, &on_server);
        f.end(&on_server);
        assert_eq!(heard.lock().unwrap().len(), 4);
    }

    #[test]
    fn lxqts_off_is_said_once_the_server_has_read_its_file_again() {
        use std::sync::{Arc, Mutex};
        let heard = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&heard);
        let on_server: OnServer = Arc::new(move |server| {
            if let Server::DoNotDisturb { on, .. } = server {
                log.lock().unwrap().push(on);
            }
        });
        let said = || heard.lock().unwrap().clone();
        let mut f = Following {
            keeper: Keeper::Lxqt,
            file: None,
            said: None,
            off_at: None,
        };
        let t0 = Instant::now();
        // The first read is said at once, whatever it says; so is "on".
        f.file_says(false, t0, &on_server);
        f.file_says(true, t0, &on_server);
        assert_eq!(said(), [false, true]);
        // "Off" waits for the server's reload; another change starts the wait again.
        f.file_says(false, t0, &on_server);
        f.due(t0 + LXQT_RELOAD / 2, &on_server);
        f.file_says(false, t0 + LXQT_RELOAD / 2, &on_server);
        f.due(t0 + LXQT_RELOAD, &on_server);
        assert_eq!(said(), [false, true]);
        f.due(t0 + LXQT_RELOAD / 2 + LXQT_RELOAD, &on_server);
        assert_eq!(said(), [false, true, false]);
        assert!(f.off_at.is_none());
        // On again before the wait is over: the off is never said.
        f.file_says(true, t0, &on_server);
        f.file_says(false, t0, &on_server);
        f.file_says(true, t0, &on_server);
        f.due(t0 + 2 * LXQT_RELOAD, &on_server);
        assert_eq!(said(), [false, true, false, true]);
    }
}
