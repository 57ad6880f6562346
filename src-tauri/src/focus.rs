//! Going back to the terminal where a session already runs, and telling whether the
//! person is looking at it.
//!
//! Where it runs is found by `lf_tray_core::terminal::place` (the client process, up its
//! parents to a window or tmux pane); this module asks the desktop for the pieces that
//! walk needs and does the focusing:
//! - X11 (any EWMH window manager): `_NET_CLIENT_LIST` and `_NET_WM_PID` for the windows,
//!   `_NET_ACTIVE_WINDOW` to read and to request focus (source indication 2, a pager:
//!   the person asked for it, so no focus-stealing prevention applies), and
//!   `_NET_CURRENT_DESKTOP` when the window is on another desktop;
//! - sway / i3: the IPC through `swaymsg` (`get_tree` for pids and focus, `[con_id=N]
//!   focus`);
//! - tmux: `select-window`, `select-pane`, `switch-client` for the client showing that
//!   session, then the terminal window of that client as above;
//! - the tab inside the terminal, before its window is focused: kitty (`kitty @
//!   focus-window`, when the person turned remote control on), WezTerm (`wezterm cli
//!   activate-pane`), Konsole (`setCurrentSession` over D-Bus). When the tab cannot be
//!   shown, the window still comes to the front, and the log says why.
//!
//! Other Wayland compositors (GNOME, KDE) let no client focus another's window: there the
//! person is told where the session runs instead.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use lf_tray_core::terminal::place::{
    self, Holder, Processes, Terminals, CLIENT_FORMAT, PANE_FORMAT,
};
use lf_tray_core::terminal::tab::{self, Tab};
use lf_tray_core::SessionRecord;
use lf_tray_surface::policy::Focus;

/// The desktop's way of listing and focusing windows.
enum Desktop {
    X11(Box<x11::Display>),
    Sway,
    /// Nothing can focus here; the words say what the desktop is.
    Unable(&'static str),
}

impl Desktop {
    fn current() -> Desktop {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        if var("WAYLAND_DISPLAY").is_some() {
            if var("SWAYSOCK").is_some() || var("I3SOCK").is_some() {
                return Desktop::Sway;
            }
            return Desktop::Unable("this Wayland desktop lets no app focus another's window");
        }
        if var("DISPLAY").is_some() {
            return match x11::Display::open() {
                Some(display) => Desktop::X11(Box::new(display)),
                None => Desktop::Unable("the X display could not be reached"),
            };
        }
        Desktop::Unable("there is no display")
    }

    /// Top-level windows by the pid that owns them.
    fn windows(&self) -> HashMap<u32, u32> {
        match self {
            Desktop::X11(display) => display.windows(),
            Desktop::Sway => sway::windows(),
            Desktop::Unable(_) => HashMap::new(),
        }
    }

    fn active(&self) -> Option<u32> {
        match self {
            Desktop::X11(display) => display.active(),
            Desktop::Sway => sway::focused(),
            Desktop::Unable(_) => None,
        }
    }

    fn focus(&self, window: u32) -> Result<(), String> {
        match self {
            Desktop::X11(display) => display.focus(window),
            Desktop::Sway => sway::focus(window),
            Desktop::Unable(why) => Err((*why).to_string()),
        }
    }
}

/// Where a session runs now, and how to say it.
pub struct Place {
    holder: Holder,
    /// The tab of the terminal window that shows it, where the terminal names one.
    tab: Option<Tab>,
    /// `attached in tmux session work, window 3, in an xterm window`.
    pub sentence: String,
}

/// Where `record` runs now, if its client is found.
fn locate(record: &SessionRecord, terminals: &Terminals, desktop: &Desktop) -> Option<Place> {
    if record.machine.is_some() {
        return None; // its client runs on that machine, under ssh here
    }
    // SAFETY: getuid cannot fail and touches no memory of ours.
    let uid = unsafe { libc::getuid() };
    // Only the person's own processes: a client of someone else's is not theirs to go to.
    let processes = Processes::read(Path::new("/proc"), uid);
    let ids = record.terminal_ids();
    let mut clients = processes.clients(&record.id, &ids);
    // Today's lf runs the agent as its own child on the person's terminal, and no
    // command line need name the session (§10.6): the agent's process is where it runs.
    if let Some(pid) = record.agent.as_ref().and_then(|a| a.pid) {
        if processes.get(pid).is_some() && !clients.contains(&pid) {
            clients.push(pid);
        }
    }
    if clients.is_empty() {
        return None;
    }
    let windows = desktop.windows();
    let (panes, tmux_clients) = tmux::state();
    let found = clients.iter().find_map(|c| {
        place::holder(&processes, *c, &windows, &panes, &tmux_clients).map(|h| (*c, h))
    });
    // No window known (a Wayland desktop that shows none, a terminal without
    // `_NET_WM_PID`): the terminal process around the client still says where it is.
    let (client, holder) = found.or_else(|| {
        clients.iter().find_map(|c| {
            place::terminal_around(&processes, *c)
                .map(|(pid, _)| (*c, Holder::Window { pid, window: None }))
        })
    })?;
    // A tmux pane is in the tab of the terminal that runs the tmux client showing it.
    let tab = match &holder {
        Holder::Window { .. } => tab::tab_of(&processes, client),
        Holder::Tmux { client, .. } => client.as_ref().and_then(|c| tab::tab_of(&processes, c.pid)),
    };
    let opened = terminals.of_record(&ids).map(|(_, o)| o.terminal.as_str());
    let sentence = place::sentence(&processes, &holder, opened);
    Some(Place {
        holder,
        tab,
        sentence,
    })
}

/// What a Go to terminal came to.
#[derive(Debug)]
pub enum Went {
    /// Focused, after this long.
    There(Duration),
    /// Not: why, in one sentence for the person.
    Not(String),
}

/// Bring the terminal where `record` runs to the front.
pub fn go(record: &SessionRecord, terminals: &Terminals) -> Went {
    let started = Instant::now();
    let desktop = Desktop::current();
    let Some(place) = locate(record, terminals, &desktop) else {
        return Went::Not(
            "Its terminal is no longer there (no lf client of this session was found).".to_string(),
        );
    };
    let window = match &place.holder {
        Holder::Window { window, .. } => *window,
        Holder::Tmux {
            pane,
            client,
            window,
        } => {
            if let Err(why) = tmux::select(pane, client.as_ref()) {
                return Went::Not(format!(
                    "It is {}, but tmux refused: {why}.",
                    place.sentence
                ));
            }
            *window
        }
    };
    // The tab once its window has the focus: Konsole switches its tab only in a
    // window that has it (measured: asked before, it still showed the other tab until
    // its window was focused). Where the window cannot be focused, the tab is still
    // asked for, so that it shows when the person gets there.
    let show_tab = || {
        if let Some(tab) = &place.tab {
            match tabs::show(tab) {
                Ok(()) => tracing::info!("TAB_SHOWN session={} {tab:?}", record.id),
                Err(why) => tracing::info!(
                    "TAB_NOT_SHOWN session={} {tab:?}: {why}; its window is shown as it is",
                    record.id
                ),
            }
        }
    };
    // Where nothing can focus, the person is told where to look (a tmux pane is
    // selected all the same, so the terminal shows it when they get there).
    if let Desktop::Unable(why) = &desktop {
        show_tab();
        return Went::Not(format!("It is {}, but {why}.", place.sentence));
    }
    let Some(window) = window else {
        show_tab();
        return Went::Not(format!(
            "It is {}, which no window on this screen shows.",
            place.sentence
        ));
    };
    let focused = desktop.focus(window);
    show_tab();
    match focused {
        Ok(()) => Went::There(started.elapsed()),
        Err(why) => Went::Not(format!("It is {}, but {why}.", place.sentence)),
    }
}

/// Whether this desktop lets the tray focus another app's window at all (X11, sway/i3).
pub fn can_focus() -> bool {
    let var = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    if var("WAYLAND_DISPLAY") {
        return var("SWAYSOCK") || var("I3SOCK");
    }
    var("DISPLAY")
}

/// Where `record` runs, for the window to say where nothing can focus it.
pub fn where_it_runs(record: &SessionRecord, terminals: &Terminals) -> Option<String> {
    locate(record, terminals, &Desktop::Unable("")).map(|p| p.sentence)
}

/// Whether the window (or tmux pane, in the active window of the client showing it)
/// holding `record`'s client has the focus now.
pub fn looking_at(record: &SessionRecord, terminals: &Terminals) -> Focus {
    if !record.in_terminal() {
        return Focus::Elsewhere;
    }
    let desktop = Desktop::current();
    let Some(active) = desktop.active() else {
        return Focus::Unknown;
    };
    let Some(place) = locate(record, terminals, &desktop) else {
        return Focus::Unknown;
    };
    let window_seen = match &place.holder {
        Holder::Window { window, .. } => *window == Some(active),
        Holder::Tmux { pane, window, .. } => *window == Some(active) && tmux::is_active(&pane.pane),
    };
    // Its window focused, but showing another tab: not looked at. A terminal that
    // cannot be asked leaves the window's answer as it is.
    if window_seen && place.tab.as_ref().and_then(tabs::shown) != Some(false) {
        Focus::Looking
    } else {
        Focus::Elsewhere
    }
}

/// Run a helper program (tmux, swaymsg) with separate arguments and no shell; its stdout,
/// or why not.
fn run(program: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{program} could not run: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!("{program}: {}", err.trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

mod tabs {
    use super::*;
    use lf_tray_core::terminal::tab::NoCommand;

    /// How long a terminal gets to answer: `kitty @` starts kitty's Python each time,
    /// ~0.4 s here when idle, a few seconds on a loaded 2-core machine; a terminal that
    /// hangs must not hold the click (or the popup it decides on) longer than that.
    const ANSWER_WAIT: Duration = Duration::from_secs(5);

    /// Make `tab` the one its terminal window shows.
    pub(super) fn show(tab: &Tab) -> Result<(), String> {
        match tab::command(tab) {
            Ok(command) => run_within(&command, ANSWER_WAIT).map(|_| ()),
            Err(NoCommand::KittyRemoteControlOff) => Err(
                "kitty's remote control is off (allow_remote_control and listen_on in kitty.conf)"
                    .into(),
            ),
            Err(NoCommand::DBus) => match tab {
                Tab::Konsole {
                    service,
                    session,
                    window,
                } => konsole::show(service, *session, *window),
                _ => Err("no way to show this tab".into()),
            },
        }
    }

    /// Whether the terminal shows `tab` now; `None` where it cannot be asked (WezTerm,
    /// kitty without remote control) or did not answer.
    pub(super) fn shown(tab: &Tab) -> Option<bool> {
        match tab {
            Tab::Kitty { window, .. } => {
                let ls = run_within(&tab::query(tab)?, ANSWER_WAIT).ok()?;
                tab::kitty_shows(&ls, *window)
            }
            Tab::Konsole {
                service,
                session,
                window,
            } => konsole::shown(service, *session, *window),
            Tab::WezTerm { .. } => None,
        }
    }

    /// Run `command` (no shell), its stdout; killed if it has not ended within `limit`.
    fn run_within(command: &tab::Command, limit: Duration) -> Result<String, String> {
        let program = &command.argv[0];
        let child = Command::new(program)
            .args(&command.argv[1..])
            .envs(command.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("{program} could not run: {e}"))?;
        let pid = child.id();
        let (tx, rx) = std::sync::mpsc::channel();
        // Read on a thread of its own: kitty's `ls` lists every window's environment and
        // can outgrow a pipe's buffer, so it cannot just be waited for.
        std::thread::spawn(move || {
            let _ = tx.send(child.wait_with_output());
        });
        match rx.recv_timeout(limit) {
            Ok(Ok(out)) if out.status.success() => {
                Ok(String::from_utf8_lossy(&out.stdout).into_owned())
            }
            Ok(Ok(out)) => Err(format!(
                "{program}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )),
            Ok(Err(e)) => Err(format!("{program}: {e}")),
            Err(_) => {
                // Not reaped yet (the thread still waits on it), so the pid is still
                // this child's.
                // SAFETY: kill touches no memory; the pid is our unreaped child's.
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
                Err(format!(
                    "{program} did not answer within {} s",
                    limit.as_secs()
                ))
            }
        }
    }

    /// Konsole's D-Bus interface, as konsole 22.12 has it (introspected): each window is
    /// `/Windows/N` with `org.kde.konsole.Window.sessionList()` (session numbers as
    /// strings), `currentSession()` and `setCurrentSession(i)`.
    mod konsole {
        use super::*;
        use zbus::Connection;

        const WINDOW: &str = "org.kde.konsole.Window";
        /// How long Konsole gets to show the tab once asked: it switches in the next turn
        /// of its event loop, within ~10 ms here; a loaded machine can delay that by a few
        /// hundred.
        const SWITCH_WAIT: Duration = Duration::from_secs(2);
        const SWITCH_POLL: Duration = Duration::from_millis(10);

        /// Run `talk` on a connection to the session bus, within [`ANSWER_WAIT`] (zbus
        /// itself would wait 25 s for a Konsole that does not answer).
        fn on_bus<T: Send>(
            talk: impl AsyncFnOnce(&Connection) -> Result<T, String> + Send,
        ) -> Result<T, String> {
            // A short exchange on a runtime of its own, on a thread of its own: the
            // looking-at question is asked from inside the tray's runtime, where another
            // cannot be entered (tokio panics: measured), and the tray's own bus
            // connection lives on the notification runtime, which this does not wait on.
            std::thread::scope(|scope| {
                scope
                    .spawn(|| {
                        let runtime = tokio::runtime::Builder::new_current_thread()
                            .enable_all()
                            .build()
                            .map_err(|e| format!("no runtime for D-Bus: {e}"))?;
                        runtime.block_on(async {
                            let exchange = async {
                                let bus = Connection::session()
                                    .await
                                    .map_err(|e| format!("the session bus: {e}"))?;
                                talk(&bus).await
                            };
                            tokio::time::timeout(ANSWER_WAIT, exchange)
                                .await
                                .map_err(|_| {
                                    format!(
                                        "konsole did not answer within {} s",
                                        ANSWER_WAIT.as_secs()
                                    )
                                })?
                        })
                    })
                    .join()
                    .unwrap_or_else(|_| Err("the D-Bus exchange with konsole failed".into()))
            })
        }

        /// The window (its object path) that holds `session`: the one it was opened in
        /// first, then every window (a tab dragged out to a window of its own is there).
        async fn holding(
            bus: &Connection,
            service: &str,
            session: u32,
            window: Option<u32>,
        ) -> Result<String, String> {
            let listed = windows(bus, service).await?;
            let candidates = window
                .into_iter()
                .chain(listed.into_iter().filter(|w| Some(*w) != window));
            for w in candidates {
                let path = format!("/Windows/{w}");
                if let Ok(sessions) =
                    call::<Vec<String>>(bus, service, &path, "sessionList", &()).await
                {
                    if sessions.iter().any(|s| s == &session.to_string()) {
                        return Ok(path);
                    }
                }
            }
            Err(format!(
                "no konsole window of {service} holds session {session}"
            ))
        }

        pub(super) fn show(service: &str, session: u32, window: Option<u32>) -> Result<(), String> {
            let id = i32::try_from(session).map_err(|e| e.to_string())?;
            on_bus(async |bus: &Connection| {
                let path = holding(bus, service, session, window).await?;
                call::<()>(bus, service, &path, "setCurrentSession", &(id,)).await?;
                // Konsole answers the call before its event loop switches the tab.
                let deadline = Instant::now() + SWITCH_WAIT;
                loop {
                    let now = call::<i32>(bus, service, &path, "currentSession", &()).await?;
                    if now == id {
                        return Ok(());
                    }
                    if Instant::now() > deadline {
                        return Err(format!("konsole still shows session {now}, not {id}"));
                    }
                    tokio::time::sleep(SWITCH_POLL).await;
                }
            })
        }

        pub(super) fn shown(service: &str, session: u32, window: Option<u32>) -> Option<bool> {
            let id = i32::try_from(session).ok()?;
            on_bus(async |bus: &Connection| {
                let path = holding(bus, service, session, window).await?;
                Ok(call::<i32>(bus, service, &path, "currentSession", &()).await? == id)
            })
            .ok()
        }

        async fn windows(bus: &Connection, service: &str) -> Result<Vec<u32>, String> {
            let xml: String = bus
                .call_method(
                    Some(service),
                    "/Windows",
                    Some("org.freedesktop.DBus.Introspectable"),
                    "Introspect",
                    &(),
                )
                .await
                .map_err(|e| format!("konsole at {service}: {e}"))?
                .body()
                .deserialize()
                .map_err(|e| e.to_string())?;
            Ok(tab::konsole_windows(&xml))
        }

        async fn call<T>(
            bus: &Connection,
            service: &str,
            path: &str,
            method: &str,
            body: &(impl serde::Serialize + zbus::zvariant::DynamicType),
        ) -> Result<T, String>
        where
            T: for<'d> serde::Deserialize<'d> + zbus::zvariant::Type,
        {
            bus.call_method(Some(service), path, Some(WINDOW), method, body)
                .await
                .map_err(|e| format!("konsole {path} {method}: {e}"))?
                .body()
                .deserialize()
                .map_err(|e| format!("konsole {path} {method}: {e}"))
        }
    }
}

mod tmux {
    use super::*;
    use lf_tray_core::terminal::place::{Pane, TmuxClient};

    /// The panes and clients of the tmux server the tray would talk to (`$TMUX`, else
    /// the default socket); none when there is no server.
    pub(super) fn state() -> (Vec<Pane>, Vec<TmuxClient>) {
        let panes = run("tmux", &["list-panes", "-a", "-F", PANE_FORMAT]).unwrap_or_default();
        let clients = run("tmux", &["list-clients", "-F", CLIENT_FORMAT]).unwrap_or_default();
        (place::parse_panes(&panes), place::parse_clients(&clients))
    }

    pub(super) fn select(pane: &Pane, client: Option<&TmuxClient>) -> Result<(), String> {
        run("tmux", &["select-window", "-t", &pane.window])?;
        run("tmux", &["select-pane", "-t", &pane.pane])?;
        if let Some(client) = client {
            run(
                "tmux",
                &["switch-client", "-c", &client.tty, "-t", &pane.pane],
            )?;
        }
        Ok(())
    }

    /// Whether the pane is its window's active pane in its session's current window.
    pub(super) fn is_active(pane: &str) -> bool {
        run(
            "tmux",
            &[
                "display-message",
                "-p",
                "-t",
                pane,
                "#{pane_active}#{window_active}",
            ],
        )
        .is_ok_and(|out| out.trim() == "11")
    }
}

mod sway {
    use super::*;
    use serde_json::Value;

    fn tree() -> Option<Value> {
        serde_json::from_str(&run("swaymsg", &["-r", "-t", "get_tree"]).ok()?).ok()
    }

    fn walk<'a>(node: &'a Value, out: &mut Vec<&'a Value>) {
        if node.get("pid").and_then(Value::as_u64).is_some() {
            out.push(node);
        }
        for key in ["nodes", "floating_nodes"] {
            for child in node
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                walk(child, out);
            }
        }
    }

    fn views() -> Vec<(u32, u32, bool)> {
        let Some(tree) = tree() else {
            return Vec::new();
        };
        let mut nodes = Vec::new();
        walk(&tree, &mut nodes);
        nodes
            .into_iter()
            .filter_map(|n| {
                Some((
                    n.get("pid")?.as_u64()? as u32,
                    n.get("id")?.as_u64()? as u32,
                    n.get("focused").and_then(Value::as_bool).unwrap_or(false),
                ))
            })
            .collect()
    }

    /// Views by pid, as con ids (what `[con_id=N]` takes).
    pub(super) fn windows() -> HashMap<u32, u32> {
        views().into_iter().map(|(pid, id, _)| (pid, id)).collect()
    }

    pub(super) fn focused() -> Option<u32> {
        views().into_iter().find(|v| v.2).map(|v| v.1)
    }

    pub(super) fn focus(con: u32) -> Result<(), String> {
        run("swaymsg", &[&format!("[con_id={con}]"), "focus"]).map(|_| ())
    }
}

mod x11 {
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
}
