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
//! A click carries the server's activation token (spec 1.2, `ActivationToken` just before
//! `ActionInvoked`), which the app hands to the terminal it opens as
//! `XDG_ACTIVATION_TOKEN`, so a Wayland compositor raises and focuses that window.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use tokio::sync::Mutex as AsyncMutex;
use zbus::{Connection, MatchRule, Message, MessageStream, Variant};

use super::{Notice, NoticeKey, OnAction, APP_NAME, DESKTOP_ENTRY};

/// The freedesktop sound theme's name for "something wants your attention".
const SOUND: &str = "message-new-instant";
const SERVER: &str = "org.freedesktop.Notifications";
const PATH: &str = "/org/freedesktop/Notifications";
/// Let the server pick how long a popup stays (most keep one with actions until clicked).
const SERVER_DEFAULT_TIMEOUT: i32 = -1;

/// Which popups are on screen, by what they stand for and by the server's id.
#[derive(Default)]
struct Live {
    ids: HashMap<NoticeKey, u32>,
    /// Activation tokens the server sent for a popup, until its action arrives.
    tokens: HashMap<u32, String>,
}

impl Live {
    fn key_of(&self, id: u32) -> Option<NoticeKey> {
        self.ids
            .iter()
            .find(|(_, &live)| live == id)
            .map(|(key, _)| key.clone())
    }
}

pub struct Notifications {
    live: Arc<Mutex<Live>>,
    /// The connection, once opened; `None` again after it broke. Shows and closes take it
    /// in turn, so two popups never race to open two connections.
    connection: Arc<AsyncMutex<Option<Connection>>>,
    icon: String,
    on_action: OnAction,
}

impl Notifications {
    /// `icon`: an icon name from the theme (`lf-tray` when installed) or a PNG path the
    /// server can read; `on_action` runs for every action the user picks (`default` for a
    /// click on the body), with the activation token when the server sent one.
    pub fn new(icon: Option<String>, on_action: OnAction) -> Notifications {
        Notifications {
            live: Arc::default(),
            connection: Arc::default(),
            icon: icon.unwrap_or_default(),
            on_action,
        }
    }

    /// Show the notice. It takes the place of the popup shown for its key, or else of the
    /// one for `notice.replaces` (a burst summary over the first popup of the burst): the
    /// server updates that popup instead of flashing a new one.
    pub async fn show(&self, notice: &Notice, sound: bool) {
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
        if sound {
            hints.insert("sound-name", Variant::from(SOUND));
        } else {
            hints.insert("suppress-sound", Variant::Bool(true));
        }
        let actions: Vec<&str> = notice
            .actions
            .iter()
            .flat_map(|(key, label)| [*key, *label])
            .collect();
        let body = (
            APP_NAME,
            replaces.unwrap_or(0),
            self.icon.as_str(),
            notice.summary.as_str(),
            notice.body.as_str(),
            actions,
            hints,
            SERVER_DEFAULT_TIMEOUT,
        );
        let reply = self.call("Notify", &body).await;
        let id = match reply.and_then(|m| m.body().deserialize::<u32>()) {
            Ok(id) => id,
            Err(e) => {
                tracing::warn!("could not show a notification: {e}");
                return;
            }
        };
        lock(&self.live).ids.insert(notice.key.clone(), id);
        tracing::info!(
            "NOTIFY id={id} replaces={} kind={} session={}",
            replaces.unwrap_or(0),
            notice.kind.as_str(),
            notice.key.session()
        );
    }

    /// Take the popup for `key` off the screen, if one is there.
    pub async fn close(&self, key: &NoticeKey) {
        let Some(id) = lock(&self.live).ids.remove(key) else {
            return;
        };
        lock(&self.live).tokens.remove(&id);
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

    /// Open the connection ahead of the first popup.
    pub async fn connect(&self) {
        let mut slot = self.connection.lock().await;
        if slot.is_none() {
            match self.open().await {
                Ok(connection) => *slot = Some(connection),
                Err(e) => tracing::warn!("no D-Bus connection for notifications yet: {e}"),
            }
        }
    }

    /// One call to the server on the app's connection, opening it first if need be. A call
    /// that fails because the connection broke is tried once more on a new one.
    async fn call<B>(&self, method: &str, body: &B) -> zbus::Result<Message>
    where
        B: serde::Serialize + zbus::DynamicType,
    {
        let mut slot = self.connection.lock().await;
        for attempt in 0..2 {
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
                Err(e) if attempt == 0 => {
                    tracing::info!("the D-Bus connection broke ({e}); connecting again");
                    *slot = None;
                }
                result => return result,
            }
        }
        unreachable!("the second attempt returns")
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
        tracing::info!(
            "DBUS connected as {}",
            connection
                .unique_name()
                .map_or_else(|| "?".to_string(), |n| n.to_string())
        );
        tauri::async_runtime::spawn(listen(
            signals,
            owner,
            Arc::clone(&self.live),
            Arc::clone(&self.on_action),
            Arc::clone(&self.connection),
        ));
        Ok(connection)
    }
}

/// What the server says about the app's popups, until the connection ends; then the next
/// popup opens a new one.
async fn listen(
    mut signals: MessageStream,
    mut owner: MessageStream,
    live: Arc<Mutex<Live>>,
    on_action: OnAction,
    slot: Arc<AsyncMutex<Option<Connection>>>,
) {
    loop {
        tokio::select! {
            message = signals.next() => match message {
                Some(Ok(message)) => on_signal(&message, &live, &on_action),
                Some(Err(e)) => tracing::debug!("unreadable signal: {e}"),
                None => break,
            },
            message = owner.next() => match message {
                Some(Ok(message)) => {
                    let (_, _, new) = message
                        .body()
                        .deserialize::<(String, String, String)>()
                        .unwrap_or_default();
                    let mut live = lock(&live);
                    // Its popups went with the old server.
                    live.ids.clear();
                    live.tokens.clear();
                    tracing::info!(
                        "SERVER {}",
                        if new.is_empty() { "gone" } else { "restarted" }
                    );
                }
                Some(Err(e)) => tracing::debug!("unreadable signal: {e}"),
                None => break,
            },
        }
    }
    tracing::info!("DBUS connection closed");
    *slot.lock().await = None;
    let mut live = lock(&live);
    live.ids.clear();
    live.tokens.clear();
}

fn on_signal(message: &Message, live: &Mutex<Live>, on_action: &OnAction) {
    let header = message.header();
    let Some(member) = header.member() else {
        return;
    };
    match member.as_str() {
        "ActivationToken" => {
            if let Ok((id, token)) = message.body().deserialize::<(u32, String)>() {
                let mut live = lock(live);
                if live.key_of(id).is_some() {
                    live.tokens.insert(id, token);
                }
            }
        }
        "ActionInvoked" => {
            let Ok((id, action)) = message.body().deserialize::<(u32, String)>() else {
                return;
            };
            let (key, token) = {
                let mut live = lock(live);
                let token = live.tokens.remove(&id);
                (live.key_of(id), token)
            };
            // Another app's popup, or one already replaced.
            let Some(key) = key else { return };
            tracing::info!(
                "ACTION {action} id={id} session={} token={}",
                key.session(),
                if token.is_some() { "yes" } else { "no" }
            );
            on_action(key, action, token);
        }
        "NotificationClosed" => {
            if let Ok((id, reason)) = message.body().deserialize::<(u32, u32)>() {
                let mut live = lock(live);
                live.tokens.remove(&id);
                if let Some(key) = live.key_of(id) {
                    live.ids.remove(&key);
                    tracing::info!(
                        "NOTIFY_CLOSED id={id} session={} reason={reason}",
                        key.session()
                    );
                }
            }
        }
        _ => {}
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
