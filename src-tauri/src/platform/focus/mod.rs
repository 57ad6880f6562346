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
//! - KDE Plasma on Wayland: a KWin script loaded over D-Bus lists the windows by pid and
//!   makes one active (`kwin.rs`); nothing to set up;
//! - GNOME on Wayland: Loopflow Tray's Shell extension, once the person installed it
//!   (`lf-tray setup gnome-focus`) and logged in again (`gnome.rs`). On both, a window is
//!   known by its process: the walk up from the agent stops at the first ancestor that
//!   owns a normal window, and the looking-at gate compares the focused window's pid.
//!
//! Other Wayland compositors let no client focus another's window: there the person is
//! told where the session runs instead.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use lf_tray_core::terminal::place::{
    self, Holder, Processes, Terminals, CLIENT_FORMAT, PANE_FORMAT,
};
use lf_tray_core::terminal::tab::{self, Tab};
use lf_tray_core::SessionRecord;
use lf_tray_surface::looking::{Place, Screen};
use lf_tray_surface::route::Unreached;

use crate::gnome_extension::Fit;

/// The desktop's way of listing and focusing windows.
enum Desktop {
    X11(Box<x11::Display>),
    Sway,
    /// KDE Plasma on Wayland: windows are known by their pids.
    Kwin(View),
    /// GNOME on Wayland with Loopflow Tray's extension loaded.
    Gnome(View),
    /// GNOME on Wayland without it: how the copy in the person's profile stands against
    /// the next login's shell (a login loads one that fits; none that does not).
    GnomeWithout {
        extension: Fit,
    },
    /// Nothing can focus here; the words say what the desktop is.
    Unable(&'static str),
}

/// What a compositor that knows windows by their process says: the pids of its normal
/// windows, and of the focused one.
#[derive(Debug, Clone, Default)]
pub(crate) struct View {
    pub pids: Vec<u32>,
    pub active: Option<u32>,
}

impl Desktop {
    fn current() -> Desktop {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        if var("WAYLAND_DISPLAY").is_some() {
            if var("SWAYSOCK").is_some() || var("I3SOCK").is_some() {
                return Desktop::Sway;
            }
            return on_bus(|bus| async move {
                if owned(&bus, kwin::NAME).await {
                    return match kwin::ask(&bus, None).await {
                        Ok(view) => Desktop::Kwin(view),
                        Err(why) => {
                            tracing::info!("KWin cannot list its windows: {why}");
                            Desktop::Unable("KWin did not answer the tray's script")
                        }
                    };
                }
                if owned(&bus, gnome::NAME).await {
                    return match gnome::windows(&bus).await {
                        Some(view) => Desktop::Gnome(view),
                        None => {
                            let running = gnome::running_version(&bus).await;
                            Desktop::GnomeWithout {
                                extension: gnome::extension(running),
                            }
                        }
                    };
                }
                Desktop::Unable("this Wayland desktop lets no app focus another's window")
            })
            .unwrap_or(Desktop::Unable("the session bus could not be reached"));
        }
        if var("DISPLAY").is_some() {
            return match x11::Display::open() {
                Some(display) => Desktop::X11(Box::new(display)),
                None => Desktop::Unable("the X display could not be reached"),
            };
        }
        Desktop::Unable("there is no display")
    }

    /// Top-level windows by the pid that owns them (on KWin and GNOME, the pid itself).
    fn windows(&self) -> HashMap<u32, u32> {
        match self {
            Desktop::X11(display) => display.windows(),
            Desktop::Sway => sway::windows(),
            Desktop::Kwin(view) | Desktop::Gnome(view) => {
                view.pids.iter().map(|pid| (*pid, *pid)).collect()
            }
            Desktop::GnomeWithout { .. } | Desktop::Unable(_) => HashMap::new(),
        }
    }

    fn active(&self) -> Option<u32> {
        match self {
            Desktop::X11(display) => display.active(),
            Desktop::Sway => sway::focused(),
            Desktop::Kwin(view) | Desktop::Gnome(view) => view.active,
            Desktop::GnomeWithout { .. } | Desktop::Unable(_) => None,
        }
    }

    fn focus(&self, window: u32) -> Result<(), String> {
        match self {
            Desktop::X11(display) => display.focus(window),
            Desktop::Sway => sway::focus(window),
            Desktop::Kwin(_) => {
                let view = on_bus(|bus| async move { kwin::ask(&bus, Some(window)).await })
                    .unwrap_or_else(|| Err("the session bus could not be reached".into()))?;
                if view.active == Some(window) {
                    Ok(())
                } else {
                    Err("KWin did not bring its window to the front".into())
                }
            }
            Desktop::Gnome(_) => {
                let alone = on_bus(|bus| async move { gnome::activate(&bus, window).await })
                    .unwrap_or_else(|| Err("the session bus could not be reached".into()))?;
                if !alone {
                    // gnome-terminal-server owns every window of its own: the shell took
                    // the one used last, which may not be the session's.
                    tracing::info!("FOCUS_AMBIGUOUS pid={window}: several windows, the last used one was shown");
                }
                Ok(())
            }
            Desktop::GnomeWithout { .. } | Desktop::Unable(_) => Err("it cannot focus".into()),
        }
    }
}

/// Run `work` with a connection of its own to the session bus, on a thread of its own:
/// the callers are plain threads and the app's async tasks alike, and a connection lives
/// on the runtime that made it. `None` when the bus cannot be reached.
fn on_bus<T, F>(work: impl FnOnce(zbus::Connection) -> F + Send) -> Option<T>
where
    T: Send,
    F: std::future::Future<Output = T>,
{
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .ok()?;
                runtime.block_on(async {
                    let bus = zbus::Connection::session().await.ok()?;
                    Some(work(bus).await)
                })
            })
            .join()
            .ok()
            .flatten()
    })
}

/// Whether `name` has an owner on the bus.
async fn owned(bus: &zbus::Connection, name: &str) -> bool {
    bus.call_method(
        Some("org.freedesktop.DBus"),
        "/org/freedesktop/DBus",
        Some("org.freedesktop.DBus"),
        "NameHasOwner",
        &(name,),
    )
    .await
    .and_then(|m| m.body().deserialize::<bool>())
    .unwrap_or(false)
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
    if let Some(pid) = record.agent().and_then(|a| a.pid) {
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
    /// Not, and why.
    Not(Unreached),
}

/// Bring the terminal where `record` runs to the front.
pub fn go(record: &SessionRecord, terminals: &Terminals) -> Went {
    let started = Instant::now();
    let desktop = Desktop::current();
    let Some(place) = locate(record, terminals, &desktop) else {
        return Went::Not(Unreached::Gone);
    };
    let window = match &place.holder {
        Holder::Window { window, .. } => *window,
        Holder::Tmux {
            pane,
            client,
            window,
        } => {
            if let Err(why) = tmux::select(pane, client.as_ref()) {
                return Went::Not(Unreached::TmuxRefused {
                    place: place.sentence,
                    why: why.to_string(),
                });
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
    match &desktop {
        Desktop::Unable(why) => {
            show_tab();
            return Went::Not(Unreached::Refused {
                place: place.sentence,
                why: why.to_string(),
            });
        }
        Desktop::GnomeWithout { extension } => {
            show_tab();
            // Logging in again helps only when the copy fits the next login's shell.
            return Went::Not(match extension.misfit_advice() {
                Some(why) => Unreached::Refused {
                    place: place.sentence,
                    why,
                },
                None => Unreached::GnomeNeedsExtension {
                    place: place.sentence,
                    installed: *extension == Fit::Fits,
                },
            });
        }
        _ => {}
    }
    let Some(window) = window else {
        show_tab();
        return Went::Not(Unreached::NoWindow {
            place: place.sentence,
        });
    };
    let focused = desktop.focus(window);
    show_tab();
    match focused {
        Ok(()) => Went::There(started.elapsed()),
        Err(why) => Went::Not(Unreached::Refused {
            place: place.sentence,
            why: why.to_string(),
        }),
    }
}

/// Whether this desktop lets the tray focus another app's window at all (X11, sway/i3,
/// KWin, GNOME with the tray's extension). Asked each time the window is drawn: on KDE
/// and GNOME only who owns a name, or one call into the shell, not a KWin script.
pub fn can_focus() -> bool {
    let var = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    if var("WAYLAND_DISPLAY") {
        if var("SWAYSOCK") || var("I3SOCK") {
            return true;
        }
        return on_bus(|bus| async move {
            owned(&bus, kwin::NAME).await || gnome::windows(&bus).await.is_some()
        })
        .unwrap_or(false);
    }
    var("DISPLAY")
}

/// Where `record` runs, for the window to say where nothing can focus it.
pub fn where_it_runs(record: &SessionRecord, terminals: &Terminals) -> Option<String> {
    locate(record, terminals, &Desktop::Unable("")).map(|p| p.sentence)
}

/// The desktop as it is now, and the terminals the tray opened, for the looking-at gate
/// (`lf_tray_surface::looking`), which decides what the answers mean.
pub struct Desk {
    desktop: Desktop,
    terminals: Terminals,
}

impl Desk {
    pub fn open(terminals: Terminals) -> Desk {
        Desk {
            desktop: Desktop::current(),
            terminals,
        }
    }
}

impl Screen for Desk {
    fn active(&self) -> Option<u32> {
        self.desktop.active()
    }

    fn place(&self, record: &SessionRecord) -> Option<Place> {
        locate(record, &self.terminals, &self.desktop)
    }

    fn pane_active(&self, pane: &str) -> bool {
        tmux::is_active(pane)
    }

    fn tab_shown(&self, tab: &Tab) -> Option<bool> {
        tabs::shown(tab)
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

mod gnome;
mod kwin;
mod sway;
mod tabs;
mod tmux;
mod x11;

/// Whether this is GNOME's Wayland session without the tray's extension (nor one it
/// would need no extension on): a click cannot bring a terminal to the front here yet.
/// Asked once the login's parts are up (GNOME's notification server is the shell's own).
pub(crate) async fn gnome_without_extension() -> bool {
    let var = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    if !var("WAYLAND_DISPLAY") || var("SWAYSOCK") || gnome::installed() {
        return false;
    }
    tokio::task::spawn_blocking(|| {
        on_bus(|bus| async move {
            owned(&bus, gnome::NAME).await
                && !owned(&bus, kwin::NAME).await
                && gnome::windows(&bus).await.is_none()
        })
        .unwrap_or(false)
    })
    .await
    .unwrap_or(false)
}
