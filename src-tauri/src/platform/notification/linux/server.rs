//! The server as the bus shows it: who owns its name, whether one can be started, its
//! do-not-disturb, and its signals, heard until the connection ends.

use std::collections::HashMap;
use std::sync::Mutex;

use futures_util::StreamExt;
use zbus::{Connection, Message, MessageStream};

use super::live::{Live, Signal};
use super::{lock, Notifications, PATH, SERVER};
use crate::platform::notification::{OnAction, OnServer};
use lf_tray_surface::notice::Server;

/// Where servers say the person asked for quiet, as `(interface, property)`: the
/// `Inhibited` property KDE Plasma's server offers on the notification interface, and
/// dunst's own pause (`dunstctl set-paused`). Both signal changes with `PropertiesChanged`.
const DO_NOT_DISTURB: [(&str, &str); 2] = [
    ("org.freedesktop.Notifications", "Inhibited"),
    ("org.dunstproject.cmd0", "paused"),
];

/// The unique name of the connection that owns the server's name, if one does.
pub(super) async fn name_owner(connection: &Connection) -> Option<String> {
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
pub(super) async fn server_present(connection: &Connection) -> bool {
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
pub(super) async fn read_do_not_disturb(connection: &Connection, on_server: &OnServer) {
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

/// What the server says about the app's popups, until the connection ends; then the next
/// popup opens a new one.
pub(super) async fn listen(
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
