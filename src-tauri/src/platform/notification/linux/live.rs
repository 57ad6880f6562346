//! Which popups are on screen and what the server said about them: a click counts once,
//! and only from the connection that owns the server's name now.

use std::collections::{HashMap, HashSet};

use zbus::Message;

use lf_tray_surface::notice::{NoticeKey, EXPIRED};

/// What the server is and can do, asked once per server.
#[derive(Clone)]
pub(super) struct About {
    /// `GetServerInformation`'s name (`dunst`, `gnome-shell`, `xfce4-notifyd`, …); empty
    /// when it did not say.
    pub(super) name: String,
    /// `GetCapabilities`.
    pub(super) capabilities: Vec<String>,
}

/// Which popups are on screen, by what they stand for and by the server's id.
#[derive(Default)]
pub(super) struct Live {
    pub(super) ids: HashMap<NoticeKey, u32>,
    /// Activation tokens the server sent for a popup, until its action arrives.
    tokens: HashMap<u32, String>,
    /// What the current server is and says it can do, asked once per server.
    pub(super) about: Option<About>,
    /// The unique name of the connection that owns the server's name now; `None` while no
    /// one does (or before it is known), when no signal is believed.
    pub(super) owner: Option<String>,
    /// The actions already handed on, by popup id. A popup without the `resident` hint
    /// (the app never sets it) is closed by the server once an action is invoked, so the
    /// same action of the same id again is the server repeating itself, not a second
    /// click. A popup shown anew under the id (`replaces_id`) starts over.
    acted: HashSet<(u32, String)>,
}

impl Live {
    pub(super) fn key_of(&self, id: u32) -> Option<NoticeKey> {
        self.ids
            .iter()
            .find(|(_, &live)| live == id)
            .map(|(key, _)| key.clone())
    }

    /// What is kept about popup `id` besides its key: gone with the popup, or stale once
    /// another is shown under its id.
    pub(super) fn forget(&mut self, id: u32) {
        self.tokens.remove(&id);
        self.acted.retain(|(acted, _)| *acted != id);
    }

    /// Another server owns the name (or none does): the old one's popups went with it, and
    /// what it could do may differ.
    pub(super) fn server_changed(&mut self, owner: Option<String>) {
        self.ids.clear();
        self.tokens.clear();
        self.acted.clear();
        self.about = None;
        self.owner = owner;
    }

    /// Take in a signal `from` a connection: the action to run, when it is a click on one
    /// of the app's popups, said by the server, for the first time.
    pub(super) fn hear(
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
pub(super) enum Signal {
    ActivationToken(u32, String),
    ActionInvoked(u32, String),
    NotificationClosed(u32, u32),
}

impl Signal {
    pub(super) fn read(message: &Message) -> Option<Signal> {
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
