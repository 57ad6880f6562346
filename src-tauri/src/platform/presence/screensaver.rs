//! The screen lock, as the locker on the session bus says it.

use std::sync::Arc;

use futures_util::StreamExt;
use tokio::sync::watch;
use zbus::{Connection, MatchRule, MessageStream};

use super::{Bus, LockSource, Seen};

const BUS: &str = "org.freedesktop.DBus";
const BUS_PATH: &str = "/org/freedesktop/DBus";
/// The lockers' names, objects and interfaces: KDE's and Xfce's (and any locker that
/// speaks the freedesktop one), and GNOME Shell's own.
pub const LOCKERS: [(&str, &str); 2] = [
    (
        "org.freedesktop.ScreenSaver",
        "/org/freedesktop/ScreenSaver",
    ),
    ("org.gnome.ScreenSaver", "/org/gnome/ScreenSaver"),
];
pub async fn follow(said: Arc<watch::Sender<Seen>>) {
    super::on_bus(
        Bus::Session,
        "the screen lock",
        |connection| {
            let said = Arc::clone(&said);
            async move { run(&connection, &said).await }
        },
        || say(&said, None, "no session bus".into()),
    )
    .await;
}

fn say(said: &watch::Sender<Seen>, locked: Option<bool>, by: String) {
    super::say_lock(said, LockSource::ScreenSaver, locked, by);
}

/// Each locker's owner (a unique name) and what it said.
#[derive(Default, Clone)]
struct Locker {
    owner: Option<String>,
    active: Option<bool>,
}

async fn run(connection: &Connection, said: &watch::Sender<Seen>) -> zbus::Result<()> {
    // Subscribed first, then asked, so that no change falls in between.
    let owners = |name: &'static str| {
        MatchRule::builder()
            .msg_type(zbus::message::Type::Signal)
            .sender(BUS)
            .interface(BUS)
            .member("NameOwnerChanged")
            .arg(0, name)
            .build()
    };
    let mut first = MessageStream::for_match_rule(owners(LOCKERS[0].0)?, connection, None).await?;
    let mut second = MessageStream::for_match_rule(owners(LOCKERS[1].0)?, connection, None).await?;
    // From whichever interface: the sender is checked against the lockers' owners.
    let changes = MatchRule::builder()
        .msg_type(zbus::message::Type::Signal)
        .member("ActiveChanged")
        .build()?;
    let mut changes = MessageStream::for_match_rule(changes, connection, None).await?;
    let mut lockers: [Locker; 2] = Default::default();
    for (at, (name, _)) in LOCKERS.iter().enumerate() {
        lockers[at].owner = name_owner(connection, name).await;
        lockers[at].active = ask(connection, at, lockers[at].owner.as_deref()).await;
    }
    tell(said, &lockers);
    loop {
        let (at, message) = tokio::select! {
            m = first.next() => (Some(0), m),
            m = second.next() => (Some(1), m),
            m = changes.next() => (None, m),
        };
        let message = match message {
            Some(Ok(message)) => message,
            Some(Err(e)) => {
                tracing::debug!("unreadable signal: {e}");
                continue;
            }
            None => return Ok(()),
        };
        match at {
            Some(at) => {
                let (_, _, new) = message
                    .body()
                    .deserialize::<(String, String, String)>()
                    .unwrap_or_default();
                lockers[at].owner = Some(new).filter(|new| !new.is_empty());
                lockers[at].active = ask(connection, at, lockers[at].owner.as_deref()).await;
            }
            None => {
                let header = message.header();
                let sender = header.sender().map(|s| s.as_str().to_string());
                let interface = header.interface().map(|i| i.as_str().to_string());
                let Ok(active) = message.body().deserialize::<bool>() else {
                    continue;
                };
                for (at, (name, _)) in LOCKERS.iter().enumerate() {
                    if lockers[at].owner.is_some()
                        && lockers[at].owner == sender
                        && interface.as_deref() == Some(*name)
                    {
                        lockers[at].active = Some(active);
                    }
                }
            }
        }
        tell(said, &lockers);
    }
}

/// Locked when any locker says so; unknown when none answers.
fn tell(said: &watch::Sender<Seen>, lockers: &[Locker; 2]) {
    let answering: Vec<&str> = LOCKERS
        .iter()
        .zip(lockers)
        .filter(|(_, l)| l.active.is_some())
        .map(|((name, _), _)| *name)
        .collect();
    let locked = if answering.is_empty() {
        None
    } else {
        Some(lockers.iter().any(|l| l.active == Some(true)))
    };
    let by = if answering.is_empty() {
        "no screen locker on the session bus".to_string()
    } else {
        answering.join(", ")
    };
    say(said, locked, by);
}

/// Ask a locker that is there (never by its well-known name, which could start one).
async fn ask(connection: &Connection, at: usize, owner: Option<&str>) -> Option<bool> {
    let (name, path) = LOCKERS[at];
    let answer = connection
        .call_method(Some(owner?), path, Some(name), "GetActive", &())
        .await
        .and_then(|m| m.body().deserialize::<bool>());
    match answer {
        Ok(active) => Some(active),
        Err(e) => {
            // Some desktops own the name only to take inhibitions.
            tracing::info!("PRESENCE {name} does not say whether the screen is locked: {e}");
            None
        }
    }
}

async fn name_owner(connection: &Connection, name: &str) -> Option<String> {
    connection
        .call_method(Some(BUS), BUS_PATH, Some(BUS), "GetNameOwner", &(name,))
        .await
        .and_then(|m| m.body().deserialize::<String>())
        .ok()
}
