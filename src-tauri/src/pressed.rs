//! Keys pressed outside the tray, as `lf-tray answer allow|deny|open [SESSION]` sends
//! them (what a sway or i3 binding runs): heard on their socket beside the hooks' (each
//! peer checked as a hook's is; `lf_tray_core::permission::pressed`), handed to the desk as
//! one more answer from a key, and the desk's word sent back.

use std::sync::Arc;

use lf_tray_core::permission::pressed::{self, Pressed, Told};
use lf_tray_core::permission::socket::{Arriving, Dir, Hooks, NotAHook, Unbound};
use lf_tray_surface::answer::{Answer, From, Given};
use lf_tray_surface::desk::Input;
use lf_tray_surface::requests::NotTaken;

use crate::shell::{Shell, ToDesk};

#[cfg(not(target_os = "macos"))]
mod grab;
#[cfg(not(target_os = "macos"))]
mod portal;

/// Listen for `lf-tray answer` while the tray runs; without `$XDG_RUNTIME_DIR`, or with
/// another tray on it, the command finds this one deaf and says so.
pub(crate) async fn serve(shell: Arc<Shell>) {
    #[cfg(not(target_os = "macos"))]
    tauri::async_runtime::spawn(follow(
        Arc::clone(&shell),
        shell.desktop.keys.on(),
        shell.desktop.keys.wanted(),
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

/// Follow the setting for the tray's lifetime: while on, the desktop's shortcuts portal
/// where it has one (its keys are the person's, set in the desktop's own settings), else
/// the keys the desk asks for held on X11 while a request waits — never both.
#[cfg(not(target_os = "macos"))]
async fn follow(
    shell: Arc<Shell>,
    mut on: tokio::sync::watch::Receiver<bool>,
    mut hold: tokio::sync::watch::Receiver<Vec<lf_tray_surface::keys::Key>>,
) {
    use lf_tray_surface::keys::Triggers;
    // The setting as the tray started with it, then each time the person switches it on.
    let mut switched_on = false;
    loop {
        if *on.borrow_and_update() {
            let ended = match given(switched_on).await {
                Ok((portal, triggers)) => portal.held(&shell, &mut on, triggers).await,
                // Maybe the person said no to the desktop's own dialog: no grab behind
                // their back.
                Err(why) if why.contains(portal::DECLINED) => Err(format!(
                    "{why}: switch answering from the keyboard off and on to be asked again, or \
                     bind `lf-tray answer allow`, `deny` and `open` yourself."
                )),
                Err(no_portal) => {
                    tracing::info!("KEYS no shortcuts portal ({no_portal}): the X11 grab");
                    grab::grabbed(&shell, &mut on, &mut hold)
                        .await
                        .map_err(|why| {
                            format!(
                                "This desktop gives the tray no keys ({no_portal}; {why}): bind \
                                 `lf-tray answer allow`, `lf-tray answer deny` and `lf-tray \
                                 answer open` in its keyboard settings."
                            )
                        })
                }
            };
            match ended {
                // Turned off: the panel has nothing to say of keys no longer wanted.
                Ok(()) => shell.desktop.keys.say(None),
                Err(why) => {
                    tracing::warn!("KEYS {why}");
                    shell.desktop.keys.say(Some(why));
                }
            }
        } else {
            shell.desktop.keys.say(None);
        }
        shell.tell(Input::Keys(Triggers::default()));
        if on.changed().await.is_err() {
            return;
        }
        switched_on = true;
    }
}

/// A session with the desktop's shortcuts portal and the triggers it gave, or why not.
#[cfg(not(target_os = "macos"))]
async fn given(
    switched_on: bool,
) -> Result<(portal::Portal, Vec<(lf_tray_surface::keys::Key, String)>), String> {
    let mut portal = portal::Portal::open().await?;
    let triggers = portal.triggers(switched_on).await?;
    Ok((portal, triggers))
}

/// The keys the person has, as the ⚙ panel lists them: "Super+Alt+Y allows, …"; `None`
/// when there is none. The portal's triggers and the X11 grab's free keys alike.
#[cfg(not(target_os = "macos"))]
fn listed(triggers: &[(lf_tray_surface::keys::Key, String)]) -> Option<String> {
    use lf_tray_surface::keys::Key;
    let said: Vec<String> = triggers
        .iter()
        .map(|(key, trigger)| {
            let does = match key {
                Key::Allow => "allows",
                Key::Deny => "denies",
                Key::Open => "opens",
            };
            format!("{trigger} {does}")
        })
        .collect();
    (!said.is_empty()).then(|| said.join(", "))
}

/// A press: the same answer as `lf-tray answer`'s, and the desk's word in the log.
#[cfg(not(target_os = "macos"))]
async fn pressed(shell: Arc<Shell>, key: lf_tray_surface::keys::Key, trigger: String) {
    let pressed = Pressed {
        key: key.word().to_string(),
        session: None,
    };
    match press(&shell, pressed).await {
        Told::Done(word) => tracing::info!("KEYS {trigger}: {word}"),
        Told::Not(why) => tracing::info!("KEYS {trigger}: nothing done: {why}"),
    }
}
