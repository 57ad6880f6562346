//! The screen lock as logind's session says it: `LockedHint` on the session object of this
//! process (`org.freedesktop.login1.Session` on the system bus), which desktops that lock
//! set through `SetLockedHint`, followed by its `PropertiesChanged` signal
//! (org.freedesktop.login1(5)). elogind offers the same interface.

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::StreamExt;
use tokio::sync::watch;
use zbus::{Connection, MatchRule, MessageStream, OwnedObjectPath, OwnedVariant};

use super::{Bus, LockSource, Seen};

const BUS: &str = "org.freedesktop.DBus";
const BUS_PATH: &str = "/org/freedesktop/DBus";
const LOGIN: &str = "org.freedesktop.login1";
const MANAGER_PATH: &str = "/org/freedesktop/login1";
const MANAGER: &str = "org.freedesktop.login1.Manager";
const SESSION: &str = "org.freedesktop.login1.Session";
const PROPERTIES: &str = "org.freedesktop.DBus.Properties";
const BY: &str = "logind's LockedHint";
pub async fn follow(said: Arc<watch::Sender<Seen>>) {
    super::on_bus(
        Bus::System,
        BY,
        |connection| {
            let said = Arc::clone(&said);
            async move { run(&connection, &said).await }
        },
        || say(&said, None, "no system bus for logind".into()),
    )
    .await;
}

fn say(said: &watch::Sender<Seen>, locked: Option<bool>, by: String) {
    super::say_lock(said, LockSource::Logind, locked, by);
}

async fn run(connection: &Connection, said: &watch::Sender<Seen>) -> zbus::Result<()> {
    // Subscribed first, then asked, so that no change falls in between: logind coming,
    // going or restarting, then the session's properties.
    let owners = MatchRule::builder()
        .msg_type(zbus::message::Type::Signal)
        .sender(BUS)
        .interface(BUS)
        .member("NameOwnerChanged")
        .arg(0, LOGIN)
        .build()?;
    let mut owners = MessageStream::for_match_rule(owners, connection, None).await?;
    loop {
        match session(connection).await {
            Ok(path) => follow_session(connection, said, &path, &mut owners).await?,
            Err(why) => {
                tracing::info!("PRESENCE {BY} not followed: {why}");
                say(said, None, why);
                // Until logind's name changes hands.
                if owners.next().await.is_none() {
                    return Ok(());
                }
            }
        }
    }
}

/// The session of this process, or why there is none to follow.
async fn session(connection: &Connection) -> Result<OwnedObjectPath, String> {
    let owner = connection
        .call_method(Some(BUS), BUS_PATH, Some(BUS), "GetNameOwner", &(LOGIN,))
        .await
        .and_then(|m| m.body().deserialize::<String>());
    if owner.is_err() {
        return Err("no logind on the system bus".into());
    }
    let by_pid = connection
        .call_method(
            Some(LOGIN),
            MANAGER_PATH,
            Some(MANAGER),
            "GetSessionByPID",
            &(std::process::id(),),
        )
        .await
        .and_then(|m| m.body().deserialize::<OwnedObjectPath>());
    let by_pid_failed = match by_pid {
        Ok(path) => return Ok(path),
        Err(e) => e,
    };
    // Started outside the session's processes (a user service), the session is the one
    // the environment names.
    let Some(id) = std::env::var("XDG_SESSION_ID")
        .ok()
        .filter(|id| !id.is_empty())
    else {
        return Err(format!(
            "this process is in no logind session ({by_pid_failed}) and no XDG_SESSION_ID \
             names one"
        ));
    };
    connection
        .call_method(
            Some(LOGIN),
            MANAGER_PATH,
            Some(MANAGER),
            "GetSession",
            &(id.as_str(),),
        )
        .await
        .and_then(|m| m.body().deserialize::<OwnedObjectPath>())
        .map_err(|e| format!("logind has no session {id} (XDG_SESSION_ID): {e}"))
}

/// Follows one session's `LockedHint` until logind's name changes hands.
async fn follow_session(
    connection: &Connection,
    said: &watch::Sender<Seen>,
    path: &OwnedObjectPath,
    owners: &mut MessageStream,
) -> zbus::Result<()> {
    let changes = MatchRule::builder()
        .msg_type(zbus::message::Type::Signal)
        .sender(LOGIN)
        .path(path.as_str())
        .interface(PROPERTIES)
        .member("PropertiesChanged")
        .arg(0, SESSION)
        .build()?;
    let mut changes = MessageStream::for_match_rule(changes, connection, None).await?;
    let mut locked = locked_hint(connection, path).await;
    match locked {
        Some(now) => tracing::info!("PRESENCE {BY} of session {}: {now}", path.as_str()),
        None => tracing::info!("PRESENCE session {} has no LockedHint", path.as_str()),
    }
    tell(said, locked);
    loop {
        tokio::select! {
            owner = owners.next() => {
                if owner.is_some() {
                    tracing::info!("PRESENCE logind changed hands: its session is looked up again");
                }
                return Ok(());
            }
            change = changes.next() => {
                let Some(change) = change else { return Ok(()) };
                let Ok(change) = change else { continue };
                let Ok((_, changed, invalidated)) = change
                    .body()
                    .deserialize::<(String, HashMap<String, OwnedVariant>, Vec<String>)>()
                else {
                    continue;
                };
                let now = match changed.get("LockedHint") {
                    Some(value) => value.try_clone().ok().and_then(|v| bool::try_from(v).ok()),
                    None if invalidated.iter().any(|p| p == "LockedHint") => {
                        locked_hint(connection, path).await
                    }
                    None => continue,
                };
                if now != locked {
                    locked = now;
                    tracing::info!("PRESENCE {BY}: {locked:?}");
                    tell(said, locked);
                }
            }
        }
    }
}

fn tell(said: &watch::Sender<Seen>, locked: Option<bool>) {
    let by = match locked {
        Some(_) => BY.to_string(),
        None => "logind's session says nothing of a lock".to_string(),
    };
    say(said, locked, by);
}

async fn locked_hint(connection: &Connection, path: &OwnedObjectPath) -> Option<bool> {
    connection
        .call_method(
            Some(LOGIN),
            path.as_str(),
            Some(PROPERTIES),
            "Get",
            &(SESSION, "LockedHint"),
        )
        .await
        .and_then(|m| m.body().deserialize::<OwnedVariant>())
        .ok()
        .and_then(|value| bool::try_from(value).ok())
}
