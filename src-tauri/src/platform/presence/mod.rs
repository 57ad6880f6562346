//! Whether the person is at the desk, as the desktop tells it, for the pushes to their
//! phone: the screen lock, as a locker says it on the session bus
//! (`org.freedesktop.ScreenSaver`, `org.gnome.ScreenSaver`; [`screensaver`]) and as logind's
//! session says it (`LockedHint`; [`logind`]), and how long no key or pointer was touched:
//! GNOME's idle monitor ([`mutter`]), else on Wayland the compositor's idle notification
//! ([`wayland`]), else on X11 the SYNC extension's `IDLETIME` counter ([`x11`]). All are
//! followed by events: nothing here wakes by itself.
//!
//! Started only while a push URL is set; dropping [`Following`] ends it all.

use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;
use std::time::Duration;

use lf_tray_surface::push::Desk;
use tokio::sync::watch;

#[cfg(target_os = "linux")]
mod logind;
mod mutter;
mod screensaver;
mod wayland;
mod x11;

/// What the desktop says now, and which parts of it could tell (for the log and the panel).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Seen {
    /// What all the parts say together.
    pub desk: Desk,
    /// Which lockers say whether the screen is locked, or why none can.
    pub lock_by: String,
    /// What tells the idle time, or why nothing can.
    pub idle_by: String,
    screensaver: Lock,
    logind: Lock,
}

/// What one source of the screen lock says: locked or not, by whom; `by` is `None` until
/// its follower has looked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Lock {
    locked: Option<bool>,
    by: Option<String>,
}

#[derive(Debug, Clone, Copy)]
enum LockSource {
    /// A locker on the session bus.
    ScreenSaver,
    /// logind's session on the system bus.
    Logind,
}

/// Which bus a source of the screen lock speaks on.
#[derive(Debug, Clone, Copy)]
enum Bus {
    Session,
    System,
}

/// A lost bus is tried again after 1 s, doubling to a minute: as the popups' own
/// connection is. A bus that is back is followed again within a minute at most.
const RECONNECT_FIRST: Duration = Duration::from_secs(1);
const RECONNECT_MAX: Duration = Duration::from_secs(60);

/// Follows a source on its bus for as long as the connection lasts, and connects again
/// after a loss; `lost` says meanwhile that it cannot tell. `what` names the source for
/// the log.
async fn on_bus<F: std::future::Future<Output = zbus::Result<()>>>(
    bus: Bus,
    what: &str,
    follow: impl Fn(zbus::Connection) -> F,
    lost: impl Fn(),
) {
    let mut wait = RECONNECT_FIRST;
    loop {
        let connection = match bus {
            Bus::Session => zbus::Connection::session().await,
            Bus::System => zbus::Connection::system().await,
        };
        match connection {
            Ok(connection) => {
                wait = RECONNECT_FIRST;
                if let Err(e) = follow(connection).await {
                    tracing::warn!("cannot follow {what}: {e}");
                }
            }
            Err(e) => tracing::debug!("no {bus:?} bus for {what}: {e}"),
        }
        lost();
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(RECONNECT_MAX);
    }
}

/// Said of the idle time until its follower has looked.
const IDLE_NOT_YET: &str = "idle time not read yet";

impl Seen {
    fn new() -> Seen {
        let mut seen = Seen {
            idle_by: IDLE_NOT_YET.into(),
            ..Seen::default()
        };
        #[cfg(not(target_os = "linux"))]
        seen.set_lock(LockSource::Logind, None, "no logind here".into());
        seen.combine_locks();
        seen
    }

    /// Every follower has looked: what they say is what this desktop offers.
    pub fn settled(&self) -> bool {
        self.screensaver.by.is_some() && self.logind.by.is_some() && self.idle_by != IDLE_NOT_YET
    }

    /// One sentence for the settings panel and the log.
    pub fn describe(&self) -> String {
        match (self.desk.locked, self.desk.idle) {
            (None, None) => format!(
                "Nothing on this desktop says whether you are away ({}; {}): nothing is \
                 pushed unless you choose always.",
                self.lock_by, self.idle_by
            ),
            // What tells first, then what does not.
            (None, _) => format!("Away is told by {}; {}.", self.idle_by, self.lock_by),
            _ => format!("Away is told by {}; {}.", self.lock_by, self.idle_by),
        }
    }

    /// One source's say; answers whether anything changed.
    fn set_lock(&mut self, source: LockSource, locked: Option<bool>, by: String) -> bool {
        let part = match source {
            LockSource::ScreenSaver => &mut self.screensaver,
            LockSource::Logind => &mut self.logind,
        };
        let new = Lock {
            locked,
            by: Some(by),
        };
        if *part == new {
            return false;
        }
        *part = new;
        self.combine_locks();
        true
    }

    /// Locked when any source says so; unknown when none answers.
    fn combine_locks(&mut self) {
        let parts = [&self.screensaver, &self.logind];
        let answering: Vec<&str> = parts
            .iter()
            .filter(|p| p.locked.is_some())
            .filter_map(|p| p.by.as_deref())
            .collect();
        if answering.is_empty() {
            self.desk.locked = None;
            let why: Vec<&str> = parts.iter().filter_map(|p| p.by.as_deref()).collect();
            self.lock_by = if why.is_empty() {
                "no screen locker seen yet".into()
            } else {
                why.join("; ")
            };
        } else {
            self.desk.locked = Some(parts.iter().any(|p| p.locked == Some(true)));
            self.lock_by = format!("the screen lock ({})", answering.join(", "));
        }
    }
}

/// The followers; dropped, they stop (and their bus, X and Wayland connections close).
pub struct Following {
    tasks: Vec<tauri::async_runtime::JoinHandle<()>>,
    pub seen: watch::Receiver<Seen>,
}

impl Drop for Following {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Start following the lock and the idle time (`away_after` without input is away).
pub fn follow(away_after: Duration) -> Following {
    let (said, seen) = watch::channel(Seen::new());
    let said = Arc::new(said);
    let mut tasks = vec![
        tauri::async_runtime::spawn(screensaver::follow(Arc::clone(&said))),
        tauri::async_runtime::spawn(follow_idle(Arc::clone(&said), away_after)),
    ];
    #[cfg(target_os = "linux")]
    tasks.push(tauri::async_runtime::spawn(logind::follow(said)));
    Following { tasks, seen }
}

/// A source of the screen lock says something.
fn say_lock(said: &watch::Sender<Seen>, source: LockSource, locked: Option<bool>, by: String) {
    said.send_if_modified(|seen| seen.set_lock(source, locked, by));
}

/// GNOME's own idle monitor where GNOME Shell offers it (its only idle time on Wayland),
/// else the compositor's idle notification on Wayland, else the X server's counter.
async fn follow_idle(said: Arc<watch::Sender<Seen>>, after: Duration) {
    let gnome = match mutter::watch(&said, after).await {
        Ok(never) => match never {},
        Err(why) => why,
    };
    // Xwayland's counter sees only input to X windows: on Wayland it would call a person
    // typing in a Wayland window idle, so a Wayland session never falls back to it.
    let other = if std::env::var_os("WAYLAND_DISPLAY").is_some() {
        wayland::watch(&said, after).await
    } else {
        x11::watch(&said, after).await
    };
    let other = match other {
        Ok(never) => match never {},
        Err(why) => why,
    };
    let why = format!("{gnome}; {other}");
    tracing::info!("PRESENCE idle time not known: {why}");
    said.send_modify(|seen| {
        seen.desk.idle = None;
        seen.idle_by = format!("idle time not known ({why})");
    });
}

/// What an idle follower says: idle or not for `after`, told by `by`.
fn say_idle(said: &watch::Sender<Seen>, idle: bool, after: Duration, by: &str) {
    said.send_if_modified(|seen| {
        let by = format!("no input for {} s ({by})", after.as_secs());
        let changed = seen.desk.idle != Some(idle) || seen.idle_by != by;
        seen.desk.idle = Some(idle);
        seen.idle_by = by;
        changed
    });
}

/// A connection's socket, for tokio to wait on (the connection owns it).
struct Fd(RawFd);

impl AsRawFd for Fd {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_desktop_where_nothing_tells_is_said_to_be_one_once_every_part_looked() {
        let mut seen = Seen::new();
        assert!(!seen.settled());
        seen.set_lock(
            LockSource::ScreenSaver,
            None,
            "no screen locker on the session bus".into(),
        );
        assert!(
            !seen.settled(),
            "logind and the idle time are still being read"
        );
        seen.set_lock(
            LockSource::Logind,
            None,
            "no logind on the system bus".into(),
        );
        assert!(!seen.settled(), "the idle time is still being read");
        seen.idle_by = "idle time not known (a Wayland session)".into();
        assert!(seen.settled());
        let said = seen.describe();
        assert!(
            said.starts_with("Nothing on this desktop says whether you are away"),
            "{said}"
        );
        assert!(said.contains("a Wayland session"), "{said}");
        assert!(said.contains("no logind on the system bus"), "{said}");
        seen.desk.idle = Some(false);
        seen.idle_by = "no input for 300 s (X11 idle time)".into();
        assert_eq!(
            seen.describe(),
            "Away is told by no input for 300 s (X11 idle time); no screen locker on the \
             session bus; no logind on the system bus."
        );
    }

    #[test]
    fn the_screen_is_locked_when_any_source_says_so_and_both_are_named() {
        let mut seen = Seen::new();
        assert!(seen.set_lock(
            LockSource::ScreenSaver,
            Some(false),
            "org.freedesktop.ScreenSaver".into()
        ));
        assert!(seen.set_lock(LockSource::Logind, Some(true), "logind's LockedHint".into()));
        assert_eq!(seen.desk.locked, Some(true));
        assert_eq!(
            seen.lock_by,
            "the screen lock (org.freedesktop.ScreenSaver, logind's LockedHint)"
        );
        assert!(
            !seen.set_lock(LockSource::Logind, Some(true), "logind's LockedHint".into()),
            "the same say twice is no change"
        );
        seen.set_lock(
            LockSource::Logind,
            Some(false),
            "logind's LockedHint".into(),
        );
        assert_eq!(seen.desk.locked, Some(false));
        seen.set_lock(
            LockSource::Logind,
            None,
            "no logind on the system bus".into(),
        );
        assert_eq!(seen.desk.locked, Some(false), "the locker still answers");
        assert_eq!(
            seen.lock_by,
            "the screen lock (org.freedesktop.ScreenSaver)"
        );
    }
}
