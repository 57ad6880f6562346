//! Keys pressed outside the tray, as `lf-tray answer allow|deny|open [SESSION]` sends
//! them (what a sway or i3 binding runs): heard on their socket beside the hooks' (each
//! peer checked as a hook's is; `lf_tray_core::permission::pressed`), handed to the desk as
//! one more answer from a key, and the desk's word sent back.

use std::sync::{Arc, Mutex};

use lf_tray_core::permission::pressed::{self, Pressed, Told};
use lf_tray_core::permission::socket::{Arriving, Dir, Hooks, NotAHook, Unbound};
use lf_tray_surface::answer::{Answer, From, Given};
use lf_tray_surface::desk::Input;
use lf_tray_surface::keys::Key;
use lf_tray_surface::requests::NotTaken;
use tokio::sync::watch;

use crate::shell::{Shell, ToDesk};

#[cfg(not(target_os = "macos"))]
mod grab;

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

    /// The desk's `Grab`: hold these keys, let go of the others.
    pub(crate) fn hold(&self, keys: Vec<Key>) {
        self.hold.send_replace(keys);
    }

    /// Which keys the desktop gave and which another program holds, while on.
    pub(crate) fn status(&self) -> Option<String> {
        self.status.lock().ok()?.clone()
    }

    #[cfg_attr(target_os = "macos", allow(dead_code))]
    fn say(&self, status: Option<String>) {
        if let Ok(mut now) = self.status.lock() {
            *now = status;
        }
    }
}

/// Listen for `lf-tray answer` while the tray runs; without `$XDG_RUNTIME_DIR`, or with
/// another tray on it, the command finds this one deaf and says so.
pub(crate) async fn serve(shell: Arc<Shell>) {
    #[cfg(not(target_os = "macos"))]
    tauri::async_runtime::spawn(grab::follow(
        Arc::clone(&shell),
        shell.desktop.keys.on.subscribe(),
        shell.desktop.keys.hold.subscribe(),
    ));
    let runtime = std::env::var_os("XDG_RUNTIME_DIR").map(std::path::PathBuf::from);
    let Some(path) = pressed::socket_path(runtime) else {
        return;
    };
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    let keys = match Hooks::bind(&path, uid, Dir::Tray) {
        Ok(keys) => keys,
        Err(Unbound::Answered) => {
            tracing::warn!("KEYS another Loopflow Tray answers on {}", path.display());
            return;
        }
        Err(Unbound::Failed(why)) => {
            tracing::warn!("KEYS cannot listen on {}: {why}", path.display());
            return;
        }
    };
    tracing::info!("KEYS listening on {}", path.display());
    while let Some(arriving) = keys.next().await {
        tauri::async_runtime::spawn(take(Arc::clone(&shell), arriving));
    }
}

async fn take(shell: Arc<Shell>, arriving: Arriving) {
    let (peer, line) = match arriving.line().await {
        Ok(read) => read,
        Err(why @ (NotAHook::Stranger(_) | NotAHook::Unknown(_))) => {
            tracing::warn!("KEYS {why}");
            return;
        }
        Err(_) => return,
    };
    let told = match serde_json::from_slice::<Pressed>(&line) {
        Ok(pressed) => press(&shell, pressed).await,
        Err(e) => Told::Not(format!("unreadable: {e}")),
    };
    let _ = peer.say_last(&told.line()).await;
}

/// The desk's word on a key: what it sent, or why nothing.
pub(crate) async fn press(shell: &Shell, pressed: Pressed) -> Told {
    let (told, sent) = tokio::sync::oneshot::channel();
    let key = Input::Answer(Answer {
        request: pressed.session.unwrap_or_default(),
        choice: pressed.key,
        given: Given::default(),
        from: From::Key,
    });
    shell.send(ToDesk::Card(key, told));
    match sent.await {
        Ok(Ok(word)) => Told::Done(word.to_string()),
        Ok(Err(why @ NotTaken::NoneOpen)) => Told::Not(format!("Too late: {why}")),
        Ok(Err(why)) => Told::Not(why.to_string()),
        Err(_) => Told::Not("Loopflow Tray is quitting.".into()),
    }
}
