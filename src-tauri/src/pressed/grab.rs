//! The three keys held on X11 (`XGrabKey` on the root window) only while the desk says a
//! request they answer waits, and let go at once after: the rest of the time every key
//! reaches the program it is meant for. An adapter: a press goes to the desk as
//! `lf-tray answer` does (one more answer from a key), and the desk decides.

use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;

use lf_tray_surface::desk::Input;
use lf_tray_surface::keys::{Key, Triggers};
use tokio::io::unix::AsyncFd;
use tokio::sync::watch;
use x11rb::connection::Connection;
use x11rb::errors::ReplyError;
use x11rb::protocol::xproto::{ConnectionExt as _, GrabMode, Keycode, ModMask, Window};
use x11rb::protocol::{ErrorKind, Event};
use x11rb::rust_connection::RustConnection;

use crate::shell::Shell;

/// Each key's letter, as X's lower-case keysym, under Super+Alt ([`Key::trigger`] says
/// why these).
const LETTERS: [(Key, u32); 3] = [(Key::Allow, 0x79), (Key::Deny, 0x6e), (Key::Open, 0x6f)];
const NUM_LOCK: u32 = 0xff7f;
const SUPER_L: u32 = 0xffeb;
const ALT_L: u32 = 0xffe9;

/// The X server, and how its keyboard names the triggers.
struct Display {
    conn: RustConnection,
    root: Window,
    /// Super and Alt, as this server's modifier map has them.
    mods: ModMask,
    /// Each key is grabbed with CapsLock and NumLock on and off too: X matches the
    /// modifiers exactly, so without these a lock left on would let the key through.
    locks: [ModMask; 4],
    codes: Vec<(Key, Keycode)>,
}

/// The connection's descriptor, for tokio to wake on.
struct Fd(RawFd);

impl AsRawFd for Fd {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

/// Why a key could not be held.
enum NotHeld {
    /// Another program grabbed it first (BadAccess).
    Taken,
    Failed(String),
}

impl Display {
    fn open() -> Result<Display, String> {
        if std::env::var_os("WAYLAND_DISPLAY").is_some() {
            // Xwayland would give the grab only keys typed into X11 windows.
            return Err("a Wayland session".into());
        }
        if std::env::var_os("DISPLAY").is_none() {
            return Err("no X display".into());
        }
        let (conn, screen) = x11rb::connect(None).map_err(|e| format!("no X display: {e}"))?;
        let failed = |e: &dyn std::fmt::Display| format!("X11: {e}");
        let root = conn.setup().roots[screen].root;
        let (min, max) = (conn.setup().min_keycode, conn.setup().max_keycode);
        let map = conn
            .get_keyboard_mapping(min, max - min + 1)
            .map_err(|e| failed(&e))?
            .reply()
            .map_err(|e| failed(&e))?;
        let per = usize::from(map.keysyms_per_keycode).max(1);
        let code_of = |sym: u32| {
            let at = map.keysyms.iter().position(|s| *s == sym)?;
            Keycode::try_from(at / per).ok().map(|i| min + i)
        };
        let modmap = conn
            .get_modifier_mapping()
            .map_err(|e| failed(&e))?
            .reply()
            .map_err(|e| failed(&e))?;
        let per_mod = usize::from(modmap.keycodes_per_modifier()).max(1);
        // The modifier a keysym's key sets, else the usual one (Mod4, Mod1, Mod2).
        let mask_of = |sym: u32, usual: ModMask| {
            let Some(code) = code_of(sym) else {
                return usual;
            };
            modmap
                .keycodes
                .chunks(per_mod)
                .position(|codes| codes.contains(&code))
                .map(|i| ModMask::from(1u16 << i))
                .unwrap_or(usual)
        };
        let mods = mask_of(SUPER_L, ModMask::M4) | mask_of(ALT_L, ModMask::M1);
        let num = mask_of(NUM_LOCK, ModMask::M2);
        let locks = [ModMask::from(0u16), ModMask::LOCK, num, ModMask::LOCK | num];
        let codes = LETTERS
            .iter()
            .filter_map(|(key, sym)| Some((*key, code_of(*sym)?)))
            .collect();
        Ok(Display {
            conn,
            root,
            mods,
            locks,
            codes,
        })
    }

    fn grab(&self, key: Key) -> Result<(), NotHeld> {
        let Some(&(_, code)) = self.codes.iter().find(|(k, ..)| *k == key) else {
            return Err(NotHeld::Failed("no such key on this keyboard".into()));
        };
        for lock in self.locks {
            let grabbed = self
                .conn
                .grab_key(
                    false,
                    self.root,
                    self.mods | lock,
                    code,
                    GrabMode::ASYNC,
                    GrabMode::ASYNC,
                )
                .map_err(|e| e.to_string())
                .and_then(|cookie| match cookie.check() {
                    Err(ReplyError::X11Error(e)) if e.error_kind == ErrorKind::Access => {
                        Err(String::new())
                    }
                    other => other.map_err(|e| e.to_string()),
                });
            if let Err(why) = grabbed {
                self.ungrab(key);
                return Err(match why.is_empty() {
                    true => NotHeld::Taken,
                    false => NotHeld::Failed(why),
                });
            }
        }
        Ok(())
    }

    /// Let go of the key (a lock combination never grabbed is no error to X).
    fn ungrab(&self, key: Key) {
        for (_, code) in self.codes.iter().filter(|(k, ..)| *k == key) {
            for lock in self.locks {
                let _ = self.conn.ungrab_key(*code, self.root, self.mods | lock);
            }
        }
        let _ = self.conn.flush();
    }

    /// Each key grabbed and let go at once: one another program holds is known, said and
    /// left off the popups before any request waits.
    fn free(&self) -> Result<Vec<Key>, String> {
        let mut free = Vec::new();
        for (key, ..) in &self.codes {
            match self.grab(*key) {
                Ok(()) => {
                    self.ungrab(*key);
                    free.push(*key);
                }
                Err(NotHeld::Taken) => {}
                Err(NotHeld::Failed(why)) => return Err(why),
            }
        }
        Ok(free)
    }

    /// From holding `now` to holding `wanted`: what is held then, and the keys another
    /// program took meanwhile.
    fn hold(&self, now: &[Key], wanted: Vec<Key>) -> Result<(Vec<Key>, Vec<Key>), String> {
        for key in now.iter().filter(|k| !wanted.contains(k)) {
            self.ungrab(*key);
        }
        let (mut held, mut taken) = (Vec::new(), Vec::new());
        for key in wanted {
            if now.contains(&key) {
                held.push(key);
                continue;
            }
            match self.grab(key) {
                Ok(()) => held.push(key),
                Err(NotHeld::Taken) => taken.push(key),
                Err(NotHeld::Failed(why)) => return Err(why),
            }
        }
        Ok((held, taken))
    }
}

/// Hold the keys the desk asks for on X11 until the setting turns off (`Ok`), or why not.
pub(super) async fn grabbed(
    shell: &Arc<Shell>,
    on: &mut watch::Receiver<bool>,
    hold: &mut watch::Receiver<Vec<Key>>,
) -> Result<(), String> {
    match Display::open() {
        Ok(display) => held(shell, &display, on, hold).await,
        Err(why) => Err(why),
    }
}

/// Hold what the desk asks until the setting turns off (`Ok`) or X fails.
async fn held(
    shell: &Arc<Shell>,
    display: &Display,
    on: &mut watch::Receiver<bool>,
    hold: &mut watch::Receiver<Vec<Key>>,
) -> Result<(), String> {
    let failed = |e: &dyn std::fmt::Display| format!("X11: {e}");
    let mut free = display.free().map_err(|e| failed(&e))?;
    tell(shell, display, &free);
    // SAFETY: the descriptor is the connection's, open while `display` lives, which
    // outlives `fd` (dropped, and deregistered, when this returns).
    let fd = unsafe { AsyncFd::register(Fd(display.conn.stream().as_raw_fd())) }
        .map_err(|e| failed(&e))?;
    let mut holding: Vec<Key> = Vec::new();
    hold.mark_changed();
    loop {
        while let Some(event) = display.conn.poll_for_event().map_err(|e| failed(&e))? {
            let Event::KeyPress(press) = event else {
                continue;
            };
            let Some(&(key, ..)) = display.codes.iter().find(|(_, c)| *c == press.detail) else {
                continue;
            };
            if holding.contains(&key) {
                tauri::async_runtime::spawn(super::pressed(
                    Arc::clone(shell),
                    key,
                    key.trigger().to_string(),
                ));
            }
        }
        display.conn.flush().map_err(|e| failed(&e))?;
        tokio::select! {
            changed = on.changed() => {
                if changed.is_err() || !*on.borrow_and_update() {
                    for key in holding {
                        display.ungrab(key);
                    }
                    tracing::info!("KEYS off: none held");
                    return Ok(());
                }
            }
            changed = hold.changed() => {
                if changed.is_err() {
                    return Ok(());
                }
                let wanted = hold.borrow_and_update().clone();
                let taken;
                (holding, taken) = display.hold(&holding, wanted).map_err(|e| failed(&e))?;
                if !taken.is_empty() {
                    // Taken since the setting came on: no longer offered.
                    free.retain(|k| !taken.contains(k));
                    tell(shell, display, &free);
                }
                let named: Vec<&str> = holding.iter().map(|k| k.trigger()).collect();
                tracing::info!("KEYS holding {named:?}");
            }
            ready = fd.readable() => {
                ready.map_err(|e| failed(&e))?.clear_ready();
            }
        }
    }
}

/// The desk and the panel told which keys are free, and which another program holds.
fn tell(shell: &Shell, display: &Display, free: &[Key]) {
    let triggers: Vec<(Key, String)> = free
        .iter()
        .map(|key| (*key, key.trigger().to_string()))
        .collect();
    let mut status = match super::listed(&triggers) {
        None => "No key is free.".to_string(),
        Some(said) => format!("{said}: held only while a request waits."),
    };
    for (key, _) in display.codes.iter().filter(|(k, _)| !free.contains(k)) {
        let name = key.trigger();
        let line = format!(
            "{name} is held by another program: bind `lf-tray answer {}` to a free key in \
             your desktop's keyboard settings.",
            key.word()
        );
        tracing::warn!("KEYS {line}");
        status = format!("{status} {line}");
    }
    tracing::info!("KEYS offered {triggers:?}");
    shell.desktop.keys.say(Some(status));
    shell.tell(Input::Keys(Triggers(triggers)));
}
