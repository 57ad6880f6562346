//! GNOME's idle monitor, `org.gnome.Mutter.IdleMonitor` on the session bus: a watch
//! that fires when the idle time reaches the threshold, and a one-shot watch for the
//! next input. GNOME Shell offers it on X11 and on Wayland, where nothing else tells an
//! app how long the person has not touched anything.

use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::watch;
use zbus::{Connection, MatchRule, MessageStream};

use super::Seen;

const NAME: &str = "org.gnome.Mutter.IdleMonitor";
const PATH: &str = "/org/gnome/Mutter/IdleMonitor/Core";
const BY: &str = "GNOME's idle monitor";

/// Follows until the monitor leaves the bus; answers why it cannot (any more).
pub async fn watch(
    said: &watch::Sender<Seen>,
    after: Duration,
) -> Result<std::convert::Infallible, String> {
    let connection = Connection::session()
        .await
        .map_err(|e| format!("no session bus for GNOME's idle monitor: {e}"))?;
    let failed = |e: zbus::Error| format!("GNOME's idle monitor: {e}");
    let owner = monitor_owner(&connection).await?;
    // Subscribed first, then the watches made, so that no firing falls in between.
    let mut fired = watches_fired(&connection, &owner).await?;
    let call = |method: &'static str| {
        let connection = &connection;
        let owner = owner.as_str();
        async move {
            connection
                .call_method(Some(owner), PATH, Some(NAME), method, &())
                .await
        }
    };
    let threshold = u64::try_from(after.as_millis()).unwrap_or(u64::MAX).max(1);
    let idle_watch: u32 = connection
        .call_method(
            Some(owner.as_str()),
            PATH,
            Some(NAME),
            "AddIdleWatch",
            &(threshold,),
        )
        .await
        .and_then(|m| m.body().deserialize())
        .map_err(failed)?;
    let idle_now: u64 = call("GetIdletime")
        .await
        .and_then(|m| m.body().deserialize())
        .map_err(failed)?;
    let mut away = idle_now >= threshold;
    let mut back_watch: Option<u32> = None;
    if away {
        back_watch = Some(
            call("AddUserActiveWatch")
                .await
                .and_then(|m| m.body().deserialize())
                .map_err(failed)?,
        );
    }
    tracing::info!("PRESENCE idle time from {BY}: {idle_now} ms now, away after {threshold} ms");
    super::say_idle(said, away, after, BY);
    while let Some(message) = fired.next().await {
        let Ok(message) = message else { continue };
        let Ok(id) = message.body().deserialize::<u32>() else {
            continue;
        };
        if id == idle_watch && !away {
            away = true;
            tracing::info!("PRESENCE idle {threshold} ms ({BY}): away");
            back_watch = Some(
                call("AddUserActiveWatch")
                    .await
                    .and_then(|m| m.body().deserialize())
                    .map_err(failed)?,
            );
            super::say_idle(said, true, after, BY);
        } else if Some(id) == back_watch && away {
            away = false;
            back_watch = None;
            tracing::info!("PRESENCE input ({BY}): back");
            super::say_idle(said, false, after, BY);
        }
    }
    Err("GNOME's idle monitor left the bus".into())
}

/// The bus name that owns the monitor now: its signals are taken from it only.
async fn monitor_owner(connection: &Connection) -> Result<String, String> {
    connection
        .call_method(
            Some("org.freedesktop.DBus"),
            "/org/freedesktop/DBus",
            Some("org.freedesktop.DBus"),
            "GetNameOwner",
            &(NAME,),
        )
        .await
        .and_then(|m| m.body().deserialize::<String>())
        .map_err(|_| "no GNOME idle monitor on the bus".to_string())
}

/// The monitor's `WatchFired` signals, from `owner` only.
async fn watches_fired(connection: &Connection, owner: &str) -> Result<MessageStream, String> {
    let failed = |e: zbus::Error| format!("GNOME's idle monitor: {e}");
    let rule = MatchRule::builder()
        .msg_type(zbus::message::Type::Signal)
        .sender(owner)
        .interface(NAME)
        .member("WatchFired")
        .path(PATH)
        .build()
        .map_err(failed)?;
    MessageStream::for_match_rule(rule, connection, None)
        .await
        .map_err(failed)
}
