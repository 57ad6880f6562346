//! macOS and Windows: notifications through notify-rust's native backends
//! (NSUserNotificationCenter, WinRT toasts). NOT VERIFIED: this project is built and tested
//! on Linux only; this module compiles against notify-rust's documented API for those
//! platforms and has never run there.
//!
//! Known limits there: a shown notification cannot be taken back (`close` only forgets it);
//! macOS reports a button by its label, mapped back to the key here; Windows attributes
//! toasts of an uninstalled build to PowerShell.

use std::sync::Arc;

use notify_rust::NotificationResponse;

use lf_tray_surface::notice::{unescape, Notice, NoticeKey, APP_NAME};
use lf_tray_surface::policy::Delivery;

use super::{OnAction, OnServer};

pub struct Notifications {
    on_action: OnAction,
}

impl Notifications {
    pub fn new(_icon: Option<String>, on_action: OnAction, _on_server: OnServer) -> Notifications {
        #[cfg(target_os = "macos")]
        {
            // Attribute the notifications to this app rather than to the terminal.
            let _ = notify_rust::set_application("dev.loopflow.tray");
        }
        Notifications { on_action }
    }

    /// The native call's outcome comes later, on its own thread: a popup handed over counts
    /// as shown.
    pub async fn show(&self, notice: &Notice, sound: bool) -> Delivery {
        let mut n = notify_rust::Notification::new();
        n.appname(APP_NAME)
            .summary(&notice.summary)
            .body(&unescape(&notice.body));
        for (key, label) in &notice.actions {
            if *key != super::DEFAULT {
                n.action(key, label);
            }
        }
        if sound {
            n.sound_name("Default");
        }
        let notice = notice.clone();
        let on_action = Arc::clone(&self.on_action);
        // The native calls block until the user responds: one thread per notification,
        // ended by the response or the dismissal.
        let spawned = std::thread::Builder::new()
            .name("notification".into())
            .spawn(move || {
                let handle = match n.show() {
                    Ok(handle) => handle,
                    Err(e) => return tracing::warn!("could not show a notification: {e}"),
                };
                tracing::info!(
                    "NOTIFY id=0 kind={} session={}",
                    notice.kind.as_str(),
                    notice.key.session()
                );
                let _ = handle.wait_for_response(|response: &NotificationResponse| {
                    let action = match response {
                        NotificationResponse::Default => super::DEFAULT.to_string(),
                        NotificationResponse::Action(a) => notice
                            .actions
                            .iter()
                            .find(|(key, label)| key == a || label == a)
                            .map_or_else(|| a.clone(), |(key, _)| key.to_string()),
                        _ => return,
                    };
                    tracing::info!("ACTION {action} id=0 session={}", notice.key.session());
                    on_action(notice.key.clone(), action, None);
                });
            });
        match spawned {
            Ok(_) => Delivery::Shown,
            Err(e) => {
                tracing::warn!("could not start a notification thread: {e}");
                Delivery::Failed
            }
        }
    }

    /// Nothing to open ahead: each notification is its own native call.
    pub async fn connect(&self) {}

    /// These platforms' notify-rust backends cannot remove a shown notification.
    pub async fn close(&self, _key: &NoticeKey) {}

    pub async fn close_all(&self) {}
}
