//! What the desk says now, for the tray and the window to read: published by the desk's
//! task after each step (`Desk::view`), so no reader waits on the desk or changes it.

use std::collections::{BTreeMap, BTreeSet};

use lf_tray_core::history::Entry;
use lf_tray_core::permission::Request;

/// What the desk says now, for the tray and the window to read: published after each
/// step, so no reader waits on the desk.
#[derive(Debug, Clone, Default)]
pub struct View {
    /// Why popups are held back, if they are.
    pub held_back: Option<String>,
    pub paused: bool,
    /// A notification server is there to show popups.
    pub server: bool,
    pub(crate) since: BTreeMap<String, i64>,
    pub(crate) dismissed: BTreeSet<String>,
    pub(crate) unseen: BTreeSet<String>,
    pub(crate) requests: BTreeMap<String, Request>,
    /// The latest transitions told, newest first.
    pub recent: Vec<Entry>,
}

impl View {
    /// Since when the session waits on the person, unix seconds.
    pub fn waiting_since(&self, key: &str) -> Option<i64> {
        self.since.get(key).copied()
    }

    pub fn dismissed(&self, key: &str) -> bool {
        self.dismissed.contains(key)
    }

    /// The session's open request, if any (its card in the window).
    pub fn request(&self, key: &str) -> Option<&Request> {
        self.requests.get(key)
    }

    /// What the tray's menu says about popups, read by its sessions' keys.
    pub fn tray(&self) -> crate::menu::Popups {
        crate::menu::Popups {
            held_back: self.held_back.clone(),
            paused: self.paused,
            dismissed: self.dismissed.clone(),
            unseen: self.unseen.clone(),
            since: self.since.clone(),
        }
    }
}
