//! Linux and the BSDs: freedesktop notifications, spoken over one D-Bus connection for the
//! app's lifetime.
//!
//! One connection matters beyond saving sockets: servers such as dunst and mako send
//! `ActionInvoked` and `ActivationToken` only to the connection that sent the notification,
//! so the connection that shows popups is the one that must listen. It is opened on the
//! first popup, subscribed to the server's signals before anything is shown (a click can
//! never come before the app listens), and opened again after the bus or the connection
//! went away. When the server itself restarts (its name changes owner), the popups it
//! showed are gone with it and are forgotten.
//!
//! Only the server speaks for its popups. GNOME Shell broadcasts its own `ActionInvoked`
//! (and `ActivationToken`, `NotificationClosed`) for every click beside the one its
//! notification service, which owns the name, sends to the app: heard from both, each click
//! opened two terminals. So the server's signals count only from the connection that owns
//! `org.freedesktop.Notifications` now, and each action of a popup at most once.
//!
//! A click carries the server's activation token (spec 1.2, `ActivationToken` just before
//! `ActionInvoked`), which the app hands to the terminal it opens as
//! `XDG_ACTIVATION_TOKEN`, so a Wayland compositor raises and focuses that window.

mod live;
mod server;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::Mutex as AsyncMutex;
use zbus::{Connection, MatchRule, Message, MessageStream, Variant};

use live::{About, Live};
use server::{listen, name_owner, read_do_not_disturb, server_present};

use lf_tray_surface::notice::{Notice, NoticeKey, Server, APP_NAME, DESKTOP_ENTRY};
use lf_tray_surface::policy::Delivery;

use super::{OnAction, OnServer};

const SERVER: &str = "org.freedesktop.Notifications";
const PATH: &str = "/org/freedesktop/Notifications";
/// Reconnecting to a session bus that went away: soon at first (a bus restarted by the
/// session manager is back within a second), then doubling to a try a minute, so a bus
/// that is gone for good costs nothing.
const RECONNECT_FIRST: std::time::Duration = std::time::Duration::from_secs(1);
const RECONNECT_MAX: std::time::Duration = std::time::Duration::from_secs(60);
/// What a server that does not say (or an unreadable answer) is taken to offer: the
/// common case, buttons and markup.
const USUAL_CAPABILITIES: [&str; 2] = ["actions", "body-markup"];

pub struct Notifications {
    live: Arc<Mutex<Live>>,
    /// The connection, once opened; `None` again after it broke. Shows and closes take it
    /// in turn, so two popups never race to open two connections.
    connection: Arc<AsyncMutex<Option<Connection>>>,
    icon: String,
    on_action: OnAction,
    on_server: OnServer,
    /// A reconnect loop is running (one at a time).
    reconnecting: Arc<std::sync::atomic::AtomicBool>,
}

impl Notifications {
    /// `icon`: an icon name from the theme (`lf-tray` when installed) or a PNG path the
    /// server can read; `on_action` runs for every action the user picks (`default` for a
    /// click on the body), with the activation token when the server sent one.
    /// `on_server` hears whether a server is there to show popups, as that changes.
    pub fn new(icon: Option<String>, on_action: OnAction, on_server: OnServer) -> Notifications {
        Notifications {
            live: Arc::default(),
            connection: Arc::default(),
            icon: icon.unwrap_or_default(),
            on_action,
            on_server,
            reconnecting: Arc::default(),
        }
    }

    /// Show the notice. It takes the place of the popup shown for its key, or else of the
    /// one for `notice.replaces` (a burst summary over the first popup of the burst): the
    /// server updates that popup instead of flashing a new one.
    pub async fn show(&self, notice: &Notice, sound: bool) -> Delivery {
        let about = self.about().await;
        self.learn_owner().await;
        let can = |what: &str| about.capabilities.iter().any(|c| c == what);
        let replaces = self.replacing(notice, &about).await;
        let hints = hints(notice, sound);
        // A server without buttons (notify-osd) would drop them silently: the body says
        // where to act instead. One without markup would show the escapes as typed.
        let actions: Vec<&str> = if can("actions") {
            lf_tray_surface::notice::buttons(&about.name, notice)
                .into_iter()
                .flat_map(|(key, label)| [key, label])
                .collect()
        } else {
            Vec::new()
        };
        let mut body = notice.body.clone();
        if !can("actions") && !notice.actions.is_empty() {
            body.push_str("\nOpen it from the Loopflow Tray icon in the panel.");
        }
        if !can("body-markup") {
            body = lf_tray_surface::notice::unescape(&body);
        }
        let body = (
            APP_NAME,
            replaces.unwrap_or(0),
            self.icon.as_str(),
            notice.summary.as_str(),
            body.as_str(),
            actions,
            hints,
            notice.kind.expire_timeout(),
        );
        let reply = self.call("Notify", &body).await;
        let id = match reply.and_then(|m| m.body().deserialize::<u32>()) {
            Ok(id) => id,
            Err(e) => {
                tracing::warn!("could not show a notification: {e}");
                return if no_server(&e) {
                    (self.on_server)(Server::Absent);
                    Delivery::NoServer
                } else {
                    Delivery::Failed
                };
            }
        };
        {
            let mut live = lock(&self.live);
            live.forget(id);
            live.ids.insert(notice.key.clone(), id);
        }
        tracing::info!(
            "NOTIFY id={id} replaces={} kind={} session={}",
            replaces.unwrap_or(0),
            notice.kind.as_str(),
            notice.key.session()
        );
        Delivery::Shown
    }

    /// The popup `notice` takes the place of, if it is to be replaced in place. A server
    /// that would show the replaced popup without its buttons gets the old one closed.
    async fn replacing(&self, notice: &Notice, about: &About) -> Option<u32> {
        let replaces = {
            let mut live = lock(&self.live);
            live.ids.remove(&notice.key).or_else(|| {
                notice
                    .replaces
                    .as_ref()
                    .and_then(|old| live.ids.remove(old))
            })
        };
        // A server that would show the replaced popup without its buttons gets the old one
        // closed and a new one.
        match replaces {
            Some(old) if !lf_tray_surface::notice::replaces_in_place(&about.name) => {
                lock(&self.live).forget(old);
                if let Err(e) = self.call("CloseNotification", &(old,)).await {
                    tracing::warn!("could not close notification {old}: {e}");
                }
                None
            }
            kept => kept,
        }
    }

    /// The server's name and capabilities, asked on first need after it (re)started.
    async fn about(&self) -> About {
        if let Some(known) = lock(&self.live).about.clone() {
            return known;
        }
        let answer = self
            .call("GetCapabilities", &())
            .await
            .and_then(|m| m.body().deserialize::<Vec<String>>());
        let capabilities = match answer {
            Ok(capabilities) => capabilities,
            // No server yet: ask again next time rather than remember a guess.
            Err(_) => {
                return About {
                    name: String::new(),
                    capabilities: USUAL_CAPABILITIES.map(String::from).to_vec(),
                }
            }
        };
        // Name, vendor, version, spec version; a server that cannot say is no known one.
        let name = self
            .call("GetServerInformation", &())
            .await
            .and_then(|m| m.body().deserialize::<(String, String, String, String)>())
            .map(|(name, ..)| name)
            .unwrap_or_default();
        tracing::info!("SERVER name={name} capabilities={}", capabilities.join(","));
        let about = About { name, capabilities };
        lock(&self.live).about = Some(about.clone());
        about
    }

    /// Ask the bus who owns the server's name, when that is not known: a server the bus
    /// started on demand (for the `GetCapabilities` just before) was not there when the
    /// connection opened, and its popup's clicks must count.
    async fn learn_owner(&self) {
        if lock(&self.live).owner.is_some() {
            return;
        }
        let Some(connection) = self.connection.lock().await.clone() else {
            return;
        };
        if let Some(owner) = name_owner(&connection).await {
            // A `NameOwnerChanged` read meanwhile is newer than this answer.
            lock(&self.live).owner.get_or_insert(owner);
        }
    }

    /// Take the popup for `key` off the screen, if one is there.
    pub async fn close(&self, key: &NoticeKey) {
        let Some(id) = lock(&self.live).ids.remove(key) else {
            return;
        };
        lock(&self.live).forget(id);
        if let Err(e) = self.call("CloseNotification", &(id,)).await {
            tracing::warn!("could not close notification {id}: {e}");
        }
        tracing::info!("NOTIFY_CLOSED id={id} session={}", key.session());
    }

    /// Take every popup off the screen: their actions stop working once the app is gone.
    pub async fn close_all(&self) {
        let keys: Vec<NoticeKey> = lock(&self.live).ids.keys().cloned().collect();
        for key in keys {
            self.close(&key).await;
        }
    }

    /// Open the connection ahead of the first popup, and say whether a server is there.
    pub async fn connect(&self) {
        let mut slot = self.connection.lock().await;
        if slot.is_none() {
            match self.open().await {
                Ok(connection) => *slot = Some(connection),
                Err(e) => {
                    tracing::warn!("no D-Bus connection for notifications yet: {e}");
                    drop(slot);
                    (self.on_server)(Server::NoBus);
                    self.reconnect();
                }
            }
        }
    }

    /// Try the bus again with backoff until it is back; then popups can show again.
    fn reconnect(&self) {
        use std::sync::atomic::Ordering;
        if self.reconnecting.swap(true, Ordering::SeqCst) {
            return;
        }
        let this = self.handle();
        tauri::async_runtime::spawn(async move {
            let mut wait = RECONNECT_FIRST;
            loop {
                tokio::time::sleep(wait).await;
                let mut slot = this.connection.lock().await;
                if slot.is_some() {
                    break;
                }
                match this.open().await {
                    Ok(connection) => {
                        *slot = Some(connection);
                        break;
                    }
                    Err(e) => {
                        tracing::info!("DBUS still unreachable ({e}); next try in {wait:?}");
                        wait = (wait * 2).min(RECONNECT_MAX);
                    }
                }
            }
            this.reconnecting.store(false, Ordering::SeqCst);
        });
    }

    /// The parts a background task needs, sharing this one's state.
    fn handle(&self) -> Notifications {
        Notifications {
            live: Arc::clone(&self.live),
            connection: Arc::clone(&self.connection),
            icon: self.icon.clone(),
            on_action: Arc::clone(&self.on_action),
            on_server: Arc::clone(&self.on_server),
            reconnecting: Arc::clone(&self.reconnecting),
        }
    }

    /// One call to the server on the app's connection, opening it first if need be. A call
    /// that fails because the connection broke is tried once more on a new one.
    async fn call<B>(&self, method: &str, body: &B) -> zbus::Result<Message>
    where
        B: serde::Serialize + zbus::DynamicType,
    {
        let mut slot = self.connection.lock().await;
        let mut retried = false;
        loop {
            let connection = match slot.as_ref() {
                Some(connection) => connection.clone(),
                None => {
                    let connection = self.open().await?;
                    *slot = Some(connection.clone());
                    connection
                }
            };
            match connection
                .call_method(Some(SERVER), PATH, Some(SERVER), method, body)
                .await
            {
                // The server answered, even if with an error: the connection is fine.
                Err(e @ zbus::Error::MethodError(..)) => return Err(e),
                Err(e) if !retried => {
                    tracing::info!("the D-Bus connection broke ({e}); connecting again");
                    *slot = None;
                    retried = true;
                }
                result => return result,
            }
        }
    }

    /// Open the session bus and listen to the server's signals on it.
    async fn open(&self) -> zbus::Result<Connection> {
        let connection = Connection::session().await?;
        // Every signal of the interface in one stream, so a click's `ActivationToken` is
        // read before its `ActionInvoked`, as the server sent them.
        let signals = MatchRule::builder()
            .msg_type(zbus::message::Type::Signal)
            .interface(SERVER)
            .path(PATH)
            .build()?;
        let signals = MessageStream::for_match_rule(signals, &connection, None).await?;
        let owner = MatchRule::builder()
            .msg_type(zbus::message::Type::Signal)
            .sender("org.freedesktop.DBus")
            .interface("org.freedesktop.DBus")
            .member("NameOwnerChanged")
            .arg(0, SERVER)
            .build()?;
        let owner = MessageStream::for_match_rule(owner, &connection, None).await?;
        let properties = MatchRule::builder()
            .msg_type(zbus::message::Type::Signal)
            .interface("org.freedesktop.DBus.Properties")
            .member("PropertiesChanged")
            .path(PATH)
            .build()?;
        let properties = MessageStream::for_match_rule(properties, &connection, None).await?;
        // Asked once its changes are followed, so none is missed in between, and before the
        // connection is handed out, so the first popup on it (and any click) comes after.
        let serving = name_owner(&connection).await;
        tracing::info!(
            "DBUS connected as {}; the server is {}",
            connection
                .unique_name()
                .map_or_else(|| "?".to_string(), |n| n.to_string()),
            serving.as_deref().unwrap_or("not there")
        );
        lock(&self.live).owner = serving;
        let present = server_present(&connection).await;
        (self.on_server)(if present {
            Server::Present
        } else {
            Server::Absent
        });
        read_do_not_disturb(&connection, &self.on_server).await;
        tauri::async_runtime::spawn(listen(signals, owner, properties, self.handle()));
        Ok(connection)
    }
}

/// Whether a failed call means no server is there (rather than one that refused).
fn no_server(e: &zbus::Error) -> bool {
    match e {
        zbus::Error::MethodError(name, ..) => matches!(
            name.as_str(),
            "org.freedesktop.DBus.Error.ServiceUnknown"
                | "org.freedesktop.DBus.Error.NameHasNoOwner"
        ),
        zbus::Error::InputOutput(_) | zbus::Error::Address(_) | zbus::Error::Handshake(_) => true,
        _ => false,
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The popup's hints: the app, how urgent, what kind, and its sound (or none).
fn hints(notice: &Notice, sound: bool) -> HashMap<&'static str, Variant<'static>> {
    let mut hints: HashMap<&str, Variant<'_>> = HashMap::new();
    hints.insert("desktop-entry", Variant::from(DESKTOP_ENTRY));
    hints.insert("urgency", Variant::U8(notice.kind.urgency() as u8));
    hints.insert("category", Variant::from(notice.kind.category()));
    match notice.kind.sound().filter(|_| sound) {
        Some(name) => hints.insert("sound-name", Variant::from(name)),
        None => hints.insert("suppress-sound", Variant::Bool(true)),
    };
    hints
}
