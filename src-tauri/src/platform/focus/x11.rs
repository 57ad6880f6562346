//! X11 under any EWMH window manager: the windows by pid, the active one, and asking the
//! window manager to focus one.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use x11rb::connection::Connection;
use x11rb::protocol::xproto::{
    AtomEnum, ClientMessageEvent, ConnectionExt, CreateWindowAux, EventMask, PropMode, Window,
    WindowClass,
};
use x11rb::protocol::Event;
use x11rb::rust_connection::RustConnection;

/// How long the window manager gets to make the window active: openbox answers in
/// milliseconds; a loaded 2-core machine has been seen to take a few hundred.
const ACTIVATION_WAIT: Duration = Duration::from_secs(2);
const POLL: Duration = Duration::from_millis(20);

pub struct Display {
    conn: RustConnection,
    root: Window,
    atoms: Atoms,
}

struct Atoms {
    client_list: u32,
    wm_pid: u32,
    active: u32,
    wm_desktop: u32,
    current_desktop: u32,
    cardinal: u32,
}

impl Display {
    pub fn open() -> Option<Display> {
        let (conn, screen) = x11rb::connect(None).ok()?;
        let root = conn.setup().roots.get(screen)?.root;
        let atom = |name: &str| -> Option<u32> {
            Some(
                conn.intern_atom(false, name.as_bytes())
                    .ok()?
                    .reply()
                    .ok()?
                    .atom,
            )
        };
        let atoms = Atoms {
            client_list: atom("_NET_CLIENT_LIST")?,
            wm_pid: atom("_NET_WM_PID")?,
            active: atom("_NET_ACTIVE_WINDOW")?,
            wm_desktop: atom("_NET_WM_DESKTOP")?,
            current_desktop: atom("_NET_CURRENT_DESKTOP")?,
            cardinal: AtomEnum::CARDINAL.into(),
        };
        Some(Display { conn, root, atoms })
    }

    fn cardinals(&self, window: Window, property: u32, kind: u32) -> Vec<u32> {
        self.conn
            .get_property(false, window, property, kind, 0, 4096)
            .ok()
            .and_then(|c| c.reply().ok())
            .and_then(|r| r.value32().map(|v| v.collect()))
            .unwrap_or_default()
    }

    /// The window manager's client windows, by `_NET_WM_PID`; with two windows of
    /// one process (a terminal server), the newest listed wins.
    pub fn windows(&self) -> HashMap<u32, u32> {
        let list = self.cardinals(self.root, self.atoms.client_list, AtomEnum::WINDOW.into());
        list.into_iter()
            .filter_map(|w| {
                let pid = *self
                    .cardinals(w, self.atoms.wm_pid, self.atoms.cardinal)
                    .first()?;
                Some((pid, w))
            })
            .collect()
    }

    pub fn active(&self) -> Option<u32> {
        self.cardinals(self.root, self.atoms.active, AtomEnum::WINDOW.into())
            .first()
            .copied()
            .filter(|w| *w != 0)
    }

    /// A server timestamp, as EWMH asks for: the time of a property change on a
    /// window of our own.
    fn timestamp(&self) -> u32 {
        let stamp = || -> Option<u32> {
            let me = self.conn.generate_id().ok()?;
            self.conn
                .create_window(
                    0,
                    me,
                    self.root,
                    -1,
                    -1,
                    1,
                    1,
                    0,
                    WindowClass::INPUT_ONLY,
                    0,
                    &CreateWindowAux::new().event_mask(EventMask::PROPERTY_CHANGE),
                )
                .ok()?;
            self.conn
                .change_property(
                    PropMode::APPEND,
                    me,
                    AtomEnum::WM_NAME,
                    AtomEnum::STRING,
                    8,
                    0,
                    &[],
                )
                .ok()?;
            self.conn.flush().ok()?;
            let deadline = Instant::now() + ACTIVATION_WAIT;
            let mut time = None;
            while Instant::now() < deadline {
                match self.conn.poll_for_event().ok()? {
                    Some(Event::PropertyNotify(e)) if e.window == me => {
                        time = Some(e.time);
                        break;
                    }
                    Some(_) => {}
                    None => std::thread::sleep(POLL / 4),
                }
            }
            let _ = self.conn.destroy_window(me);
            time
        };
        // 0 (CurrentTime) is what EWMH allows a client that has none.
        stamp().unwrap_or(x11rb::CURRENT_TIME)
    }

    fn send(&self, window: Window, kind: u32, data: [u32; 5]) -> Result<(), String> {
        let event = ClientMessageEvent::new(32, window, kind, data);
        self.conn
            .send_event(
                false,
                self.root,
                EventMask::SUBSTRUCTURE_REDIRECT | EventMask::SUBSTRUCTURE_NOTIFY,
                event,
            )
            .map_err(|e| e.to_string())?;
        self.conn.flush().map_err(|e| e.to_string())
    }

    /// Ask the window manager to show and focus `window`, and wait until it did.
    pub fn focus(&self, window: Window) -> Result<(), String> {
        let time = self.timestamp();
        let on = self
            .cardinals(window, self.atoms.wm_desktop, self.atoms.cardinal)
            .first()
            .copied();
        let now = self
            .cardinals(self.root, self.atoms.current_desktop, self.atoms.cardinal)
            .first()
            .copied();
        // 0xFFFFFFFF: on every desktop.
        if let (Some(on), Some(now)) = (on, now) {
            if on != now && on != u32::MAX {
                self.send(self.root, self.atoms.current_desktop, [on, time, 0, 0, 0])?;
            }
        }
        let current = self.active().unwrap_or(0);
        self.send(window, self.atoms.active, [2, time, current, 0, 0])?;
        let deadline = Instant::now() + ACTIVATION_WAIT;
        while Instant::now() < deadline {
            if self.active() == Some(window) {
                return Ok(());
            }
            std::thread::sleep(POLL);
        }
        Err("the window manager did not bring its window to the front".into())
    }
}
