//! Whether the person is at the desk, as the desktop tells it, for the pushes to their
//! phone: the screen lock, as a locker says it on the session bus
//! (`org.freedesktop.ScreenSaver`, `org.gnome.ScreenSaver`: `GetActive`, `ActiveChanged`),
//! and how long no key or pointer was touched (X11: the SYNC extension's `IDLETIME` counter
//! with two alarms, one at the threshold and one for the first input after it, as GNOME's
//! idle monitor does). Both are followed by events: nothing here wakes by itself.
//!
//! Started only while a push URL is set; dropping [`Following`] ends it all.

use std::sync::Arc;
use std::time::Duration;

use lf_tray_surface::push::Desk;
use tokio::sync::watch;

/// What the desktop says now, and which parts of it could tell (for the log and the panel).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Seen {
    pub desk: Desk,
    /// Which locker says whether the screen is locked, or why none can.
    pub lock_by: String,
    /// What tells the idle time, or why nothing can.
    pub idle_by: String,
}

/// Said of each part until its follower has looked.
const LOCK_NOT_YET: &str = "no screen locker seen yet";
const IDLE_NOT_YET: &str = "idle time not read yet";

impl Seen {
    /// Both followers have looked: what they say is what this desktop offers.
    pub fn settled(&self) -> bool {
        self.lock_by != LOCK_NOT_YET && self.idle_by != IDLE_NOT_YET
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
}

/// The followers; dropped, they stop (and their bus and X connections close).
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
    let (said, seen) = watch::channel(Seen {
        lock_by: LOCK_NOT_YET.into(),
        idle_by: IDLE_NOT_YET.into(),
        ..Seen::default()
    });
    let said = Arc::new(said);
    Following {
        tasks: vec![
            tauri::async_runtime::spawn(lock::follow(Arc::clone(&said))),
            tauri::async_runtime::spawn(idle::follow(said, away_after)),
        ],
        seen,
    }
}

mod lock {
    //! The screen lock, as the locker on the session bus says it.

    use std::sync::Arc;
    use std::time::Duration;

    use futures_util::StreamExt;
    use tokio::sync::watch;
    use zbus::{Connection, MatchRule, MessageStream};

    use super::Seen;

    const BUS: &str = "org.freedesktop.DBus";
    const BUS_PATH: &str = "/org/freedesktop/DBus";
    /// The lockers' names, objects and interfaces: KDE's and Xfce's (and any locker that
    /// speaks the freedesktop one), and GNOME Shell's own.
    pub const LOCKERS: [(&str, &str); 2] = [
        (
            "org.freedesktop.ScreenSaver",
            "/org/freedesktop/ScreenSaver",
        ),
        ("org.gnome.ScreenSaver", "/org/gnome/ScreenSaver"),
    ];
    /// A lost session bus is tried again after 1 s, doubling to a minute: as the popups'
    /// own connection does.
    const RECONNECT_FIRST: Duration = Duration::from_secs(1);
    const RECONNECT_MAX: Duration = Duration::from_secs(60);

    pub async fn follow(said: Arc<watch::Sender<Seen>>) {
        let mut wait = RECONNECT_FIRST;
        loop {
            match Connection::session().await {
                Ok(connection) => {
                    wait = RECONNECT_FIRST;
                    if let Err(e) = run(&connection, &said).await {
                        tracing::warn!("cannot follow the screen lock: {e}");
                    }
                }
                Err(e) => tracing::debug!("no session bus for the screen lock: {e}"),
            }
            say(&said, None, "no session bus".into());
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(RECONNECT_MAX);
        }
    }

    fn say(said: &watch::Sender<Seen>, locked: Option<bool>, by: String) {
        said.send_if_modified(|seen| {
            let changed = seen.desk.locked != locked || seen.lock_by != by;
            seen.desk.locked = locked;
            seen.lock_by = by;
            changed
        });
    }

    /// Each locker's owner (a unique name) and what it said.
    #[derive(Default, Clone)]
    struct Locker {
        owner: Option<String>,
        active: Option<bool>,
    }

    async fn run(connection: &Connection, said: &watch::Sender<Seen>) -> zbus::Result<()> {
        // Subscribed first, then asked, so that no change falls in between.
        let owners = |name: &'static str| {
            MatchRule::builder()
                .msg_type(zbus::message::Type::Signal)
                .sender(BUS)
                .interface(BUS)
                .member("NameOwnerChanged")
                .arg(0, name)
                .build()
        };
        let mut first =
            MessageStream::for_match_rule(owners(LOCKERS[0].0)?, connection, None).await?;
        let mut second =
            MessageStream::for_match_rule(owners(LOCKERS[1].0)?, connection, None).await?;
        // From whichever interface: the sender is checked against the lockers' owners.
        let changes = MatchRule::builder()
            .msg_type(zbus::message::Type::Signal)
            .member("ActiveChanged")
            .build()?;
        let mut changes = MessageStream::for_match_rule(changes, connection, None).await?;
        let mut lockers: [Locker; 2] = Default::default();
        for (at, (name, _)) in LOCKERS.iter().enumerate() {
            lockers[at].owner = name_owner(connection, name).await;
            lockers[at].active = ask(connection, at, lockers[at].owner.as_deref()).await;
        }
        tell(said, &lockers);
        loop {
            let (at, message) = tokio::select! {
                m = first.next() => (Some(0), m),
                m = second.next() => (Some(1), m),
                m = changes.next() => (None, m),
            };
            let message = match message {
                Some(Ok(message)) => message,
                Some(Err(e)) => {
                    tracing::debug!("unreadable signal: {e}");
                    continue;
                }
                None => return Ok(()),
            };
            match at {
                Some(at) => {
                    let (_, _, new) = message
                        .body()
                        .deserialize::<(String, String, String)>()
                        .unwrap_or_default();
                    lockers[at].owner = Some(new).filter(|new| !new.is_empty());
                    lockers[at].active = ask(connection, at, lockers[at].owner.as_deref()).await;
                }
                None => {
                    let header = message.header();
                    let sender = header.sender().map(|s| s.as_str().to_string());
                    let interface = header.interface().map(|i| i.as_str().to_string());
                    let Ok(active) = message.body().deserialize::<bool>() else {
                        continue;
                    };
                    for (at, (name, _)) in LOCKERS.iter().enumerate() {
                        if lockers[at].owner.is_some()
                            && lockers[at].owner == sender
                            && interface.as_deref() == Some(*name)
                        {
                            lockers[at].active = Some(active);
                        }
                    }
                }
            }
            tell(said, &lockers);
        }
    }

    /// Locked when any locker says so; unknown when none answers.
    fn tell(said: &watch::Sender<Seen>, lockers: &[Locker; 2]) {
        let answering: Vec<&str> = LOCKERS
            .iter()
            .zip(lockers)
            .filter(|(_, l)| l.active.is_some())
            .map(|((name, _), _)| *name)
            .collect();
        let locked = if answering.is_empty() {
            None
        } else {
            Some(lockers.iter().any(|l| l.active == Some(true)))
        };
        let by = if answering.is_empty() {
            "no screen locker on the session bus".to_string()
        } else {
            format!("the screen lock ({})", answering.join(", "))
        };
        say(said, locked, by);
    }

    /// Ask a locker that is there (never by its well-known name, which could start one).
    async fn ask(connection: &Connection, at: usize, owner: Option<&str>) -> Option<bool> {
        let (name, path) = LOCKERS[at];
        let answer = connection
            .call_method(Some(owner?), path, Some(name), "GetActive", &())
            .await
            .and_then(|m| m.body().deserialize::<bool>());
        match answer {
            Ok(active) => Some(active),
            Err(e) => {
                // Some desktops own the name only to take inhibitions.
                tracing::info!("PRESENCE {name} does not say whether the screen is locked: {e}");
                None
            }
        }
    }

    async fn name_owner(connection: &Connection, name: &str) -> Option<String> {
        connection
            .call_method(Some(BUS), BUS_PATH, Some(BUS), "GetNameOwner", &(name,))
            .await
            .and_then(|m| m.body().deserialize::<String>())
            .ok()
    }
}

mod idle {
    //! Input idle time on X11, from the SYNC extension's `IDLETIME` counter: an alarm when
    //! it reaches the threshold, another when input sets it back below.

    use std::os::fd::{AsRawFd, RawFd};
    use std::sync::Arc;
    use std::time::Duration;

    use tokio::io::unix::AsyncFd;
    use tokio::sync::watch;
    use x11rb::connection::{Connection, RequestConnection};
    use x11rb::protocol::sync::{
        self, Alarm, ChangeAlarmAux, ConnectionExt as _, Counter, CreateAlarmAux, Int64, TESTTYPE,
        VALUETYPE,
    };
    use x11rb::protocol::Event;

    use super::Seen;

    const X11: &str = "X11 idle time";

    /// GNOME's own idle monitor where GNOME Shell offers it (its only idle time on
    /// Wayland), else the X server's counter.
    pub async fn follow(said: Arc<watch::Sender<Seen>>, after: Duration) {
        let gnome = match super::gnome::watch(&said, after).await {
            Ok(never) => match never {},
            Err(why) => why,
        };
        let x11 = match watch_idle(&said, after).await {
            Ok(never) => match never {},
            Err(why) => why,
        };
        let why = format!("{gnome}; {x11}");
        tracing::info!("PRESENCE idle time not known: {why}");
        said.send_modify(|seen| {
            seen.desk.idle = None;
            seen.idle_by = format!("idle time not known ({why})");
        });
    }

    pub fn say(said: &watch::Sender<Seen>, idle: bool, after: Duration, by: &str) {
        said.send_if_modified(|seen| {
            let by = format!("no input for {} s ({by})", after.as_secs());
            let changed = seen.desk.idle != Some(idle) || seen.idle_by != by;
            seen.desk.idle = Some(idle);
            seen.idle_by = by;
            changed
        });
    }

    fn int64(value: i64) -> Int64 {
        Int64 {
            hi: (value >> 32) as i32,
            lo: value as u32,
        }
    }

    fn value(v: Int64) -> i64 {
        (i64::from(v.hi) << 32) | i64::from(v.lo)
    }

    struct Fd(RawFd);

    impl AsRawFd for Fd {
        fn as_raw_fd(&self) -> RawFd {
            self.0
        }
    }

    /// Follows until the X connection fails; answers why it cannot tell.
    async fn watch_idle(
        said: &watch::Sender<Seen>,
        after: Duration,
    ) -> Result<std::convert::Infallible, String> {
        // Xwayland's counter sees only input to X windows: on Wayland it would call a
        // person typing in a Wayland window idle.
        if std::env::var_os("WAYLAND_DISPLAY").is_some() {
            return Err("a Wayland session: its compositor's idle notification is not read".into());
        }
        if std::env::var_os("DISPLAY").is_none() {
            return Err("no X display".into());
        }
        let (conn, _) =
            x11rb::connect(None).map_err(|e| format!("cannot open the display: {e}"))?;
        let failed = |e: &dyn std::fmt::Display| format!("X11: {e}");
        if conn
            .extension_information(sync::X11_EXTENSION_NAME)
            .map_err(|e| failed(&e))?
            .is_none()
        {
            return Err("the X server has no SYNC extension".into());
        }
        conn.sync_initialize(3, 1)
            .map_err(|e| failed(&e))?
            .reply()
            .map_err(|e| failed(&e))?;
        let counters = conn
            .sync_list_system_counters()
            .map_err(|e| failed(&e))?
            .reply()
            .map_err(|e| failed(&e))?;
        let counter: Counter = counters
            .counters
            .iter()
            .find(|c| c.name == b"IDLETIME")
            .map(|c| c.counter)
            .ok_or("the X server has no IDLETIME counter")?;
        let threshold = i64::try_from(after.as_millis()).unwrap_or(i64::MAX).max(1);
        // Fires once the idle time reaches the threshold; the other once input set it back
        // below. Each goes inactive after firing and is armed again when the other fired.
        let idle_alarm: Alarm = conn.generate_id().map_err(|e| failed(&e))?;
        let back_alarm: Alarm = conn.generate_id().map_err(|e| failed(&e))?;
        let trigger = |test: TESTTYPE, at: i64| {
            CreateAlarmAux::new()
                .counter(counter)
                .value_type(VALUETYPE::ABSOLUTE)
                .value(int64(at))
                .test_type(test)
                .delta(int64(0))
                .events(1)
        };
        conn.sync_create_alarm(
            idle_alarm,
            &trigger(TESTTYPE::POSITIVE_COMPARISON, threshold),
        )
        .map_err(|e| failed(&e))?
        .check()
        .map_err(|e| failed(&e))?;
        let idle_now = value(
            conn.sync_query_counter(counter)
                .map_err(|e| failed(&e))?
                .reply()
                .map_err(|e| failed(&e))?
                .counter_value,
        );
        let mut away = idle_now >= threshold;
        // Armed only once away (a comparison that holds fires at once).
        conn.sync_create_alarm(
            back_alarm,
            &trigger(
                TESTTYPE::NEGATIVE_COMPARISON,
                if away { threshold - 1 } else { -1 },
            ),
        )
        .map_err(|e| failed(&e))?
        .check()
        .map_err(|e| failed(&e))?;
        tracing::info!(
            "PRESENCE idle time from X11 IDLETIME: {idle_now} ms now, away after {threshold} ms"
        );
        say(said, away, after, X11);
        // SAFETY: the descriptor is the connection's, open while `conn` lives; `fd` is
        // declared after it, so it is dropped (and deregistered) first.
        let fd = unsafe { AsyncFd::register(Fd(conn.stream().as_raw_fd())) }
            .map_err(|e| failed(&e.to_string()))?;
        let rearm = |alarm: Alarm, test: TESTTYPE, at: i64| {
            let aux = ChangeAlarmAux::new()
                .counter(counter)
                .value_type(VALUETYPE::ABSOLUTE)
                .value(int64(at))
                .test_type(test)
                .delta(int64(0))
                .events(1);
            conn.sync_change_alarm(alarm, &aux).map(|_| ())
        };
        loop {
            while let Some(event) = conn.poll_for_event().map_err(|e| failed(&e))? {
                let Event::SyncAlarmNotify(notify) = event else {
                    continue;
                };
                let idle = value(notify.counter_value);
                if notify.alarm == idle_alarm && !away && idle >= threshold {
                    away = true;
                    tracing::info!("PRESENCE idle {idle} ms: away");
                    rearm(back_alarm, TESTTYPE::NEGATIVE_COMPARISON, threshold - 1)
                        .map_err(|e| failed(&e))?;
                    say(said, true, after, X11);
                } else if notify.alarm == back_alarm && away && idle < threshold {
                    away = false;
                    tracing::info!("PRESENCE input after {idle} ms idle: back");
                    rearm(idle_alarm, TESTTYPE::POSITIVE_COMPARISON, threshold)
                        .map_err(|e| failed(&e))?;
                    say(said, false, after, X11);
                }
            }
            conn.flush().map_err(|e| failed(&e))?;
            let mut ready = fd.readable().await.map_err(|e| failed(&e))?;
            ready.clear_ready();
        }
    }
}

mod gnome {
    //! GNOME's idle monitor, `org.gnome.Mutter.IdleMonitor` on the session bus: a watch
    //! that fires when the idle time reaches the threshold, and a one-shot watch for the
    //! next input. GNOME Shell offers it on X11 and on Wayland, where nothing else tells an
    //! app how long the person has not touched anything.

    use std::time::Duration;

    use futures_util::StreamExt;
    use tokio::sync::watch;
    use zbus::{Connection, MatchRule, MessageStream};

    use super::Seen;

    const NAME: &str = "org.gnome.Mutter.IdleMonitor";
    const PATH: &str = "/org/gnome/Mutter/IdleMonitor/Core";
    const BY: &str = "GNOME's idle monitor";

    /// Follows until the monitor leaves the bus; answers why it cannot (any more).
    pub async fn watch(
        said: &watch::Sender<Seen>,
        after: Duration,
    ) -> Result<std::convert::Infallible, String> {
        let connection = Connection::session()
            .await
            .map_err(|e| format!("no session bus for GNOME's idle monitor: {e}"))?;
        let failed = |e: zbus::Error| format!("GNOME's idle monitor: {e}");
        let owner = connection
            .call_method(
                Some("org.freedesktop.DBus"),
                "/org/freedesktop/DBus",
                Some("org.freedesktop.DBus"),
                "GetNameOwner",
                &(NAME,),
            )
            .await
            .and_then(|m| m.body().deserialize::<String>())
            .map_err(|_| "no GNOME idle monitor on the bus".to_string())?;
        // Subscribed first, then the watches made, so that no firing falls in between.
        let rule = MatchRule::builder()
            .msg_type(zbus::message::Type::Signal)
            .sender(owner.clone())
            .interface(NAME)
            .member("WatchFired")
            .path(PATH)
            .build()
            .map_err(failed)?;
        let mut fired = MessageStream::for_match_rule(rule, &connection, None)
            .await
            .map_err(failed)?;
        let call = |method: &'static str| {
            let connection = &connection;
            let owner = owner.as_str();
            async move {
                connection
                    .call_method(Some(owner), PATH, Some(NAME), method, &())
                    .await
            }
        };
        let threshold = u64::try_from(after.as_millis()).unwrap_or(u64::MAX).max(1);
        let idle_watch: u32 = connection
            .call_method(
                Some(owner.as_str()),
                PATH,
                Some(NAME),
                "AddIdleWatch",
                &(threshold,),
            )
            .await
            .and_then(|m| m.body().deserialize())
            .map_err(failed)?;
        let idle_now: u64 = call("GetIdletime")
            .await
            .and_then(|m| m.body().deserialize())
            .map_err(failed)?;
        let mut away = idle_now >= threshold;
        let mut back_watch: Option<u32> = None;
        if away {
            back_watch = Some(
                call("AddUserActiveWatch")
                    .await
                    .and_then(|m| m.body().deserialize())
                    .map_err(failed)?,
            );
        }
        tracing::info!(
            "PRESENCE idle time from {BY}: {idle_now} ms now, away after {threshold} ms"
        );
        super::idle::say(said, away, after, BY);
        while let Some(message) = fired.next().await {
            let Ok(message) = message else { continue };
            let Ok(id) = message.body().deserialize::<u32>() else {
                continue;
            };
            if id == idle_watch && !away {
                away = true;
                tracing::info!("PRESENCE idle {threshold} ms ({BY}): away");
                back_watch = Some(
                    call("AddUserActiveWatch")
                        .await
                        .and_then(|m| m.body().deserialize())
                        .map_err(failed)?,
                );
                super::idle::say(said, true, after, BY);
            } else if Some(id) == back_watch && away {
                away = false;
                back_watch = None;
                tracing::info!("PRESENCE input ({BY}): back");
                super::idle::say(said, false, after, BY);
            }
        }
        Err("GNOME's idle monitor left the bus".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_desktop_where_nothing_tells_is_said_to_be_one_once_both_parts_looked() {
        let mut seen = Seen {
            lock_by: LOCK_NOT_YET.into(),
            idle_by: IDLE_NOT_YET.into(),
            ..Seen::default()
        };
        assert!(!seen.settled());
        seen.lock_by = "no screen locker on the session bus".into();
        assert!(!seen.settled(), "the idle time is still being read");
        seen.idle_by = "idle time not known (a Wayland session)".into();
        assert!(seen.settled());
        let said = seen.describe();
        assert!(
            said.starts_with("Nothing on this desktop says whether you are away"),
            "{said}"
        );
        assert!(said.contains("a Wayland session"), "{said}");
        seen.desk.idle = Some(false);
        seen.idle_by = "no input for 300 s (X11 idle time)".into();
        assert_eq!(
            seen.describe(),
            "Away is told by no input for 300 s (X11 idle time); no screen locker on the session bus."
        );
    }
}
