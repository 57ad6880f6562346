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

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use tokio::sync::Mutex as AsyncMutex;
use zbus::{Connection, MatchRule, Message, MessageStream, Variant};

use super::{
    Delivery, Notice, NoticeKey, OnAction, OnServer, Server, APP_NAME, DEFAULT, DESKTOP_ENTRY,
    EXPIRED, OPEN,
};

const SERVER: &str = "org.freedesktop.Notifications";
const PATH: &str = "/org/freedesktop/Notifications";
/// Reconnecting to a session bus that went away: soon at first (a bus restarted by the
/// session manager is back within a second), then doubling to a try a minute, so a bus
/// that is gone for good costs nothing.
const RECONNECT_FIRST: std::time::Duration = std::time::Duration::from_secs(1);
const RECONNECT_MAX: std::time::Duration = std::time::Duration::from_secs(60);
/// Where servers say the person asked for quiet, as `(interface, property)`: the
/// `Inhibited` property KDE Plasma's server offers on the notification interface, and
/// dunst's own pause (`dunstctl set-paused`). Both signal changes with `PropertiesChanged`.
const DO_NOT_DISTURB: [(&str, &str); 2] = [
    ("org.freedesktop.Notifications", "Inhibited"),
    ("org.dunstproject.cmd0", "paused"),
];

/// What a server that does not say (or an unreadable answer) is taken to offer: the
/// common case, buttons and markup.
const USUAL_CAPABILITIES: [&str; 2] = ["actions", "body-markup"];

/// Servers (by `GetServerInformation`'s name) that draw the `default` action as a button
/// of its own beside the others, measured with xfce4-notifyd 0.7 and lxqt-notificationd
/// 1.2; the others take `default` as the click on the popup and draw no button for it.
/// xfce4-notifyd 0.7.3 calls itself `Xfce Notify Daemon` (tests/e2e/desktops.sh).
const DEFAULT_AS_A_BUTTON: [&str; 3] =
    ["Xfce Notify Daemon", "xfce4-notifyd", "lxqt-notificationd"];

/// What the server is and can do, asked once per server.
#[derive(Clone)]
struct About {
    /// `GetServerInformation`'s name (`dunst`, `gnome-shell`, `xfce4-notifyd`, …); empty
    /// when it did not say.
    name: String,
    /// `GetCapabilities`.
    capabilities: Vec<String>,
}

/// Which popups are on screen, by what they stand for and by the server's id.
#[derive(Default)]
struct Live {
    ids: HashMap<NoticeKey, u32>,
    /// Activation tokens the server sent for a popup, until its action arrives.
    tokens: HashMap<u32, String>,
    /// What the current server is and says it can do, asked once per server.
    about: Option<About>,
    /// The unique name of the connection that owns the server's name now; `None` while no
    /// one does (or before it is known), when no signal is believed.
    owner: Option<String>,
    /// The actions already handed on, by popup id. A popup without the `resident` hint
    /// (the app never sets it) is closed by the server once an action is invoked, so the
    /// same action of the same id again is the server repeating itself, not a second
    /// click. A popup shown anew under the id (`replaces_id`) starts over.
    acted: HashSet<(u32, String)>,
}

impl Live {
    fn key_of(&self, id: u32) -> Option<NoticeKey> {
        self.ids
            .iter()
            .find(|(_, &live)| live == id)
            .map(|(key, _)| key.clone())
    }

    /// What is kept about popup `id` besides its key: gone with the popup, or stale once
    /// another is shown under its id.
    fn forget(&mut self, id: u32) {
        self.tokens.remove(&id);
        self.acted.retain(|(acted, _)| *acted != id);
    }

    /// Another server owns the name (or none does): the old one's popups went with it, and
    /// what it could do may differ.
    fn server_changed(&mut self, owner: Option<String>) {
        self.ids.clear();
        self.tokens.clear();
        self.acted.clear();
        self.about = None;
        self.owner = owner;
    }

    /// Take in a signal `from` a connection: the action to run, when it is a click on one
    /// of the app's popups, said by the server, for the first time.
    fn hear(
        &mut self,
        from: Option<&str>,
        signal: Signal,
    ) -> Option<(NoticeKey, String, Option<String>)> {
        let id = signal.id();
        // Another app's popup, or one already replaced.
        let key = self.key_of(id)?;
        // With no owner known, nothing is believed: the owner is asked for before the
        // connection is handed out and before a popup is shown while it is unknown, so the
        // server of every popup is known before its first click can come.
        if from.is_none() || from != self.owner.as_deref() {
            tracing::info!(
                "IGNORED {} id={id} from {}: the server is {}",
                signal.name(),
                from.unwrap_or("?"),
                self.owner.as_deref().unwrap_or("unknown")
            );
            return None;
        }
        match signal {
            Signal::ActivationToken(_, token) => {
                self.tokens.insert(id, token);
                None
            }
            Signal::ActionInvoked(_, action) => {
                let token = self.tokens.remove(&id);
                if !self.acted.insert((id, action.clone())) {
                    tracing::info!("IGNORED ActionInvoked id={id} {action}: acted on already");
                    return None;
                }
                tracing::info!(
                    "ACTION {action} id={id} session={} token={}",
                    key.session(),
                    if token.is_some() { "yes" } else { "no" }
                );
                Some((key, action, token))
            }
            Signal::NotificationClosed(_, reason) => {
                self.ids.remove(&key);
                let acted = self.acted.iter().any(|(acted, _)| *acted == id);
                self.forget(id);
                tracing::info!(
                    "NOTIFY_CLOSED id={id} session={} reason={reason}",
                    key.session()
                );
                // The spec's reason 1: it expired. One the person acted on is theirs.
                let expired = reason == 1 && !acted && matches!(key, NoticeKey::Session(_));
                expired.then(|| (key, EXPIRED.to_string(), None))
            }
        }
    }
}

/// What the server says about a popup, by its id.
enum Signal {
    ActivationToken(u32, String),
    ActionInvoked(u32, String),
    NotificationClosed(u32, u32),
}

impl Signal {
    fn read(message: &Message) -> Option<Signal> {
        let body = message.body();
        match message.header().member()?.as_str() {
            "ActivationToken" => body
                .deserialize()
                .ok()
                .map(|(id, token)| Signal::ActivationToken(id, token)),
            "ActionInvoked" => body
                .deserialize()
                .ok()
                .map(|(id, action)| Signal::ActionInvoked(id, action)),
            "NotificationClosed" => body
                .deserialize()
                .ok()
                .map(|(id, reason)| Signal::NotificationClosed(id, reason)),
            _ => None,
        }
    }

    fn id(&self) -> u32 {
        match self {
            Signal::ActivationToken(id, _)
            | Signal::ActionInvoked(id, _)
            | Signal::NotificationClosed(id, _) => *id,
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Signal::ActivationToken(..) => "ActivationToken",
            Signal::ActionInvoked(..) => "ActionInvoked",
            Signal::NotificationClosed(..) => "NotificationClosed",
        }
    }
}

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
        let replaces = {
            let mut live = lock(&self.live);
            live.ids.remove(&notice.key).or_else(|| {
                notice
                    .replaces
                    .as_ref()
                    .and_then(|old| live.ids.remove(old))
            })
        };
        let mut hints: HashMap<&str, Variant<'_>> = HashMap::new();
        hints.insert("desktop-entry", Variant::from(DESKTOP_ENTRY));
        hints.insert("urgency", Variant::U8(notice.kind.urgency() as u8));
        hints.insert("category", Variant::from(notice.kind.category()));
        match notice.kind.sound().filter(|_| sound) {
            Some(name) => hints.insert("sound-name", Variant::from(name)),
            None => hints.insert("suppress-sound", Variant::Bool(true)),
        };
        // A server without buttons (notify-osd) would drop them silently: the body says
        // where to act instead. One without markup would show the escapes as typed.
        let actions: Vec<&str> = if can("actions") {
            buttons(&about.name, &notice.actions)
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
            body = super::unescape(&body);
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

/// The `(key, label)` pairs to send to the server named `server`. A session's popup offers
/// `open` beside `default` (both "Open", both open the session) so that servers which draw
/// no button for `default` still show an Open button. Where `default` is a button already,
/// that would read "Open" twice: `default` stays, since it is also what a click on the
/// popup sends where the server has such a click, and `open` goes.
fn buttons<'a>(server: &str, actions: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let doubled =
        DEFAULT_AS_A_BUTTON.contains(&server) && actions.iter().any(|(key, _)| *key == DEFAULT);
    actions
        .iter()
        .copied()
        .filter(|(key, _)| !(doubled && *key == OPEN))
        .collect()
}

/// The unique name of the connection that owns the server's name, if one does.
async fn name_owner(connection: &Connection) -> Option<String> {
    connection
        .call_method(
            Some("org.freedesktop.DBus"),
            "/org/freedesktop/DBus",
            Some("org.freedesktop.DBus"),
            "GetNameOwner",
            &(SERVER,),
        )
        .await
        .and_then(|m| m.body().deserialize::<String>())
        .ok()
}

/// Whether a `Notify` would reach a server now: one owns the name, or the bus can start
/// one (D-Bus activation).
async fn server_present(connection: &Connection) -> bool {
    const BUS: &str = "org.freedesktop.DBus";
    const BUS_PATH: &str = "/org/freedesktop/DBus";
    let owned = connection
        .call_method(Some(BUS), BUS_PATH, Some(BUS), "NameHasOwner", &(SERVER,))
        .await
        .and_then(|m| m.body().deserialize::<bool>());
    if owned.unwrap_or(true) {
        return true;
    }
    connection
        .call_method(Some(BUS), BUS_PATH, Some(BUS), "ListActivatableNames", &())
        .await
        .and_then(|m| m.body().deserialize::<Vec<String>>())
        .map(|names| names.iter().any(|n| n == SERVER))
        .unwrap_or(true)
}

/// Ask the server for its do-not-disturb state; a server without one does not answer.
async fn read_do_not_disturb(connection: &Connection, on_server: &OnServer) {
    for (interface, property) in DO_NOT_DISTURB {
        let answer = connection
            .call_method(
                Some(SERVER),
                PATH,
                Some("org.freedesktop.DBus.Properties"),
                "Get",
                &(interface, property),
            )
            .await;
        let on = answer
            .ok()
            .and_then(|m| m.body().deserialize::<zbus::OwnedVariant>().ok())
            .and_then(|v| bool::try_from(v).ok());
        if let Some(on) = on {
            on_server(Server::DoNotDisturb {
                source: property,
                on,
            });
        }
    }
}

/// A `PropertiesChanged` that says a do-not-disturb property changed.
fn do_not_disturb_changed(message: &Message, on_server: &OnServer) {
    type Changed = (String, HashMap<String, zbus::OwnedVariant>, Vec<String>);
    let Ok((interface, changed, _)) = message.body().deserialize::<Changed>() else {
        return;
    };
    for (watched, property) in DO_NOT_DISTURB {
        if interface != watched {
            continue;
        }
        if let Some(on) = changed
            .get(property)
            .and_then(|v| bool::try_from(v.try_clone().ok()?).ok())
        {
            tracing::info!("DO_NOT_DISTURB {property}={on}");
            on_server(Server::DoNotDisturb {
                source: property,
                on,
            });
        }
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

/// What the server says about the app's popups, until the connection ends; then the next
/// popup opens a new one.
async fn listen(
    mut signals: MessageStream,
    mut owner: MessageStream,
    mut properties: MessageStream,
    this: Notifications,
) {
    let live = &this.live;
    let on_action = &this.on_action;
    loop {
        tokio::select! {
            // A change of owner first: the bus sends it before anything the new owner says,
            // and a signal is judged by who owned the name when it was sent.
            biased;
            message = owner.next() => match message {
                Some(Ok(message)) => {
                    let (_, _, new) = message
                        .body()
                        .deserialize::<(String, String, String)>()
                        .unwrap_or_default();
                    lock(live).server_changed(Some(new.clone()).filter(|new| !new.is_empty()));
                    tracing::info!("SERVER {}", if new.is_empty() { "gone" } else { "appeared" });
                    // A server that went away may still be started on demand by the bus.
                    let present = if new.is_empty() {
                        let connection = this.connection.lock().await.clone();
                        match connection {
                            Some(connection) => server_present(&connection).await,
                            None => false,
                        }
                    } else {
                        true
                    };
                    if new.is_empty() {
                        // Its do-not-disturb went with it.
                        for (_, property) in DO_NOT_DISTURB {
                            (this.on_server)(Server::DoNotDisturb { source: property, on: false });
                        }
                    } else if let Some(connection) = this.connection.lock().await.clone() {
                        read_do_not_disturb(&connection, &this.on_server).await;
                    }
                    (this.on_server)(if present { Server::Present } else { Server::Absent });
                }
                Some(Err(e)) => tracing::debug!("unreadable signal: {e}"),
                None => break,
            },
            message = signals.next() => match message {
                Some(Ok(message)) => on_signal(&message, live, on_action),
                Some(Err(e)) => tracing::debug!("unreadable signal: {e}"),
                None => break,
            },
            message = properties.next() => match message {
                Some(Ok(message)) => do_not_disturb_changed(&message, &this.on_server),
                Some(Err(e)) => tracing::debug!("unreadable signal: {e}"),
                None => break,
            },
        }
    }
    tracing::warn!("the D-Bus session bus went away; reconnecting");
    *this.connection.lock().await = None;
    lock(live).server_changed(None);
    (this.on_server)(Server::NoBus);
    this.reconnect();
}

fn on_signal(message: &Message, live: &Mutex<Live>, on_action: &OnAction) {
    let Some(signal) = Signal::read(message) else {
        return;
    };
    let header = message.header();
    let from = header.sender().map(|sender| sender.as_str());
    let heard = lock(live).hear(from, signal);
    if let Some((key, action, token)) = heard {
        on_action(key, action, token);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SERVER_NAME: &str = ":1.5";
    /// gnome-shell, beside GNOME's notification service.
    const SHELL: &str = ":1.9";

    fn showing(id: u32) -> Live {
        let mut live = Live {
            owner: Some(SERVER_NAME.into()),
            ..Live::default()
        };
        live.ids.insert(NoticeKey::Session("S-1".into()), id);
        live
    }

    fn click(id: u32) -> Signal {
        Signal::ActionInvoked(id, "default".into())
    }

    #[test]
    fn one_open_button_where_the_server_draws_default_as_one() {
        use crate::notification::DISMISS;
        let session = [(DEFAULT, "Open"), (OPEN, "Open"), (DISMISS, "Dismiss")];
        for server in DEFAULT_AS_A_BUTTON {
            assert_eq!(
                buttons(server, &session),
                [(DEFAULT, "Open"), (DISMISS, "Dismiss")]
            );
        }
        for server in ["dunst", "gnome-shell", "Plasma", "mako", "notify-osd", ""] {
            assert_eq!(buttons(server, &session), session);
        }
        // A summary's one Show, and a popup without a `default`, keep what they have.
        assert_eq!(
            buttons("xfce4-notifyd", &[(DEFAULT, "Show")]),
            [(DEFAULT, "Show")]
        );
        assert_eq!(
            buttons("xfce4-notifyd", &[(OPEN, "Open")]),
            [(OPEN, "Open")]
        );
    }

    #[test]
    fn a_click_counts_once_and_only_from_the_server() {
        let mut live = showing(7);
        // GNOME: the shell's broadcast beside the server's own signals, in either order.
        assert!(live
            .hear(Some(SHELL), Signal::ActivationToken(7, "shell".into()))
            .is_none());
        assert!(live.hear(Some(SHELL), click(7)).is_none());
        assert!(live
            .hear(Some(SERVER_NAME), Signal::ActivationToken(7, "t".into()))
            .is_none());
        let (key, action, token) = live.hear(Some(SERVER_NAME), click(7)).unwrap();
        assert_eq!(key, NoticeKey::Session("S-1".into()));
        assert_eq!(action, "default");
        assert_eq!(token.as_deref(), Some("t"));
        assert!(live.hear(Some(SHELL), click(7)).is_none());
        // A server that sends the one click twice.
        assert!(live.hear(Some(SERVER_NAME), click(7)).is_none());
        // Another button of the same popup is another choice.
        assert!(live
            .hear(
                Some(SERVER_NAME),
                Signal::ActionInvoked(7, "dismiss".into())
            )
            .is_some());
        // Another app's popup.
        assert!(live.hear(Some(SERVER_NAME), click(8)).is_none());
    }

    #[test]
    fn nothing_counts_while_the_owner_is_unknown_or_from_a_former_one() {
        let mut live = showing(7);
        live.owner = None;
        assert!(live.hear(Some(SERVER_NAME), click(7)).is_none());
        assert!(live.hear(None, click(7)).is_none());
        live.owner = Some(SERVER_NAME.into());
        assert!(live.hear(None, click(7)).is_none());
        live.server_changed(Some(":1.12".into()));
        live.ids.insert(NoticeKey::Burst, 1);
        assert!(live.hear(Some(SERVER_NAME), click(1)).is_none());
        assert!(live.hear(Some(":1.12"), click(1)).is_some());
    }

    #[test]
    fn only_the_server_closes_a_popup_and_a_new_one_under_its_id_starts_over() {
        let mut live = showing(7);
        assert!(live
            .hear(Some(SHELL), Signal::NotificationClosed(7, 2))
            .is_none());
        assert!(
            live.key_of(7).is_some(),
            "the shell's close made the app forget it"
        );
        assert!(live.hear(Some(SERVER_NAME), click(7)).is_some());
        // Shown again under its id (`replaces_id`): a click on it is a new one.
        live.forget(7);
        assert!(live.hear(Some(SERVER_NAME), click(7)).is_some());
        live.hear(Some(SERVER_NAME), Signal::NotificationClosed(7, 2));
        assert!(live.key_of(7).is_none());
        assert!(live.acted.is_empty() && live.tokens.is_empty());
    }

    #[test]
    fn a_popup_that_expired_unacted_is_reported_once_and_only_by_the_server() {
        let expired = |live: &mut Live, from, reason| {
            live.hear(Some(from), Signal::NotificationClosed(7, reason))
                .map(|(key, action, _)| (key.session().to_string(), action))
        };
        let mut live = showing(7);
        assert_eq!(expired(&mut live, SHELL, 1), None, "not from the server");
        assert_eq!(
            expired(&mut live, SERVER_NAME, 1),
            Some(("S-1".to_string(), EXPIRED.to_string()))
        );
        assert_eq!(
            expired(&mut live, SERVER_NAME, 1),
            None,
            "forgotten with it"
        );
        // Closed by the person (2) or by the app (3): not expired.
        for reason in [2, 3] {
            let mut live = showing(7);
            assert_eq!(expired(&mut live, SERVER_NAME, reason), None);
        }
        // Clicked, then timed out (servers may close after the action): the person saw it.
        let mut live = showing(7);
        assert!(live.hear(Some(SERVER_NAME), click(7)).is_some());
        assert_eq!(expired(&mut live, SERVER_NAME, 1), None);
    }
}
