//! Linux and the BSDs: freedesktop notifications over D-Bus through notify-rust.
//!
//! Each popup on screen has one small task waiting for its action or its close (on the
//! handle's own D-Bus connection: servers such as dunst signal only the connection that sent
//! the notification). The task ends when the popup closes, or is aborted when the app closes
//! or replaces the popup, so waiting tasks never outnumber the popups on screen.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use notify_rust::{Hint, NotificationHandle, NotificationResponse};
use tauri::async_runtime::JoinHandle;

use super::{Notice, NoticeKey, OnAction, APP_NAME, DESKTOP_ENTRY};
use crate::steplog::step;

/// The freedesktop sound theme's name for "something wants your attention".
const SOUND: &str = "message-new-instant";

struct Live {
    id: u32,
    handle: Arc<NotificationHandle>,
    waiter: JoinHandle<()>,
}

type LiveMap = Arc<Mutex<HashMap<NoticeKey, Live>>>;

pub struct Notifications {
    live: LiveMap,
    icon: Option<String>,
    on_action: OnAction,
}

impl Notifications {
    /// `icon`: a PNG path the server can read; `on_action` runs for every action the user
    /// picks (`default` for a click on the body).
    pub fn new(icon: Option<PathBuf>, on_action: OnAction) -> Notifications {
        Notifications {
            live: Arc::default(),
            icon: icon.map(|p| p.display().to_string()),
            on_action,
        }
    }

    /// Show the notice, replacing the popup already shown for its key.
    pub async fn show(&self, notice: &Notice, sound: bool) {
        let replaced = lock(&self.live).remove(&notice.key);
        let mut n = notify_rust::Notification::new();
        n.appname(APP_NAME)
            .summary(&notice.summary)
            .body(&notice.body)
            .hint(Hint::DesktopEntry(DESKTOP_ENTRY.into()));
        if let Some(icon) = &self.icon {
            n.icon(icon);
        }
        for (key, label) in &notice.actions {
            n.action(key, label);
        }
        if sound {
            n.sound_name(SOUND);
        } else {
            n.hint(Hint::SuppressSound(true));
        }
        if let Some(old) = &replaced {
            // Replace in place: the server updates the popup instead of flashing a new one.
            old.waiter.abort();
            n.id(old.id);
        }
        let handle = match n.show_async().await {
            Ok(handle) => Arc::new(handle),
            Err(e) => {
                eprintln!("lf-tray: could not show a notification: {e}");
                return;
            }
        };
        let id = handle.id();
        step(format!(
            "NOTIFY id={id} kind={} session={}",
            notice.kind.as_str(),
            notice.key.session()
        ));
        // Registered before the waiter can look for it: it takes the lock first.
        let mut live = lock(&self.live);
        let waiter = tauri::async_runtime::spawn(wait(
            Arc::clone(&handle),
            notice.key.clone(),
            Arc::clone(&self.live),
            Arc::clone(&self.on_action),
        ));
        live.insert(notice.key.clone(), Live { id, handle, waiter });
    }

    /// Take the popup for `key` off the screen, if one is there.
    pub async fn close(&self, key: &NoticeKey) {
        let Some(live) = lock(&self.live).remove(key) else {
            return;
        };
        live.waiter.abort();
        live.handle.close_async().await;
        step(format!(
            "NOTIFY_CLOSED id={} session={}",
            live.id,
            key.session()
        ));
    }
}

impl Notifications {
    /// Take every popup off the screen: their actions stop working once the app is gone.
    pub async fn close_all(&self) {
        let keys: Vec<NoticeKey> = lock(&self.live).keys().cloned().collect();
        for key in keys {
            self.close(&key).await;
        }
    }
}

/// Wait for what happens to one popup. An action runs the app's handler and then closes the
/// popup (it has done its job); a close just forgets it.
async fn wait(handle: Arc<NotificationHandle>, key: NoticeKey, live: LiveMap, on_action: OnAction) {
    let id = handle.id();
    let mut response = None;
    handle
        .wait_for_action_async(|r| response = Some(r.clone()))
        .await;
    let action = match response {
        Some(NotificationResponse::Default) => Some(super::DEFAULT.to_string()),
        Some(NotificationResponse::Action(action)) => Some(action),
        _ => None,
    };
    // Only the popup still registered under its key is this task's to forget: a replaced or
    // closed one was already taken out.
    let still_ours = {
        let mut live = lock(&live);
        let ours = live.get(&key).is_some_and(|l| l.id == id);
        if ours {
            live.remove(&key);
        }
        ours
    };
    if let Some(action) = action {
        step(format!("ACTION {action} id={id} session={}", key.session()));
        on_action(key.clone(), action);
        if still_ours {
            handle.close_async().await;
        }
    }
    if still_ours {
        step(format!("NOTIFY_CLOSED id={id} session={}", key.session()));
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
