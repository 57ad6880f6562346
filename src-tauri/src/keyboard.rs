//! The keys the tray may hold itself: the setting, the keys the desk wants held and what
//! the panel says of them — the state the shell keeps, apart from the adapter that grabs
//! (`pressed`), so the shell below it need not know the adapter.

use std::sync::Mutex;

use lf_tray_surface::keys::Key;
use tokio::sync::watch;

/// The keys the tray holds itself (an X11 grab), while `answer_keys` is on: the setting,
/// which keys the desk wants held now, and what the panel says of them.
pub(crate) struct Keyboard {
    on: watch::Sender<bool>,
    hold: watch::Sender<Vec<Key>>,
    status: Mutex<Option<String>>,
}

impl Keyboard {
    pub(crate) fn new(on: bool) -> Keyboard {
        Keyboard {
            on: watch::Sender::new(on),
            hold: watch::Sender::new(Vec::new()),
            status: Mutex::new(None),
        }
    }

    pub(crate) fn set_on(&self, on: bool) {
        self.on
            .send_if_modified(|was| std::mem::replace(was, on) != on);
    }

    /// The setting, for the grab's adapter to follow.
    pub(crate) fn on(&self) -> watch::Receiver<bool> {
        self.on.subscribe()
    }

    /// The keys the desk wants held, for the grab's adapter to follow.
    pub(crate) fn wanted(&self) -> watch::Receiver<Vec<Key>> {
        self.hold.subscribe()
    }

    /// The desk's `Grab`: hold these keys, let go of the others.
    pub(crate) fn hold(&self, keys: Vec<Key>) {
        self.hold.send_replace(keys);
    }

    /// Which keys the desktop gave and which another program holds, while on.
    pub(crate) fn status(&self) -> Option<String> {
        self.status.lock().ok()?.clone()
    }

    /// What the panel is to say of the keys (the grab's adapter tells it).
    #[cfg_attr(target_os = "macos", allow(dead_code))]
    pub(crate) fn say(&self, status: Option<String>) {
        if let Ok(mut now) = self.status.lock() {
            *now = status;
        }
    }
}
