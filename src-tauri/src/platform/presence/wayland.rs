//! Input idle time on Wayland outside GNOME, from the compositor's idle notification on a
//! connection of our own: `ext_idle_notifier_v1` where it is offered (wlroots 0.17 and
//! later, KWin 6), else KDE's older `org_kde_kwin_idle` (sway 1.7, wlroots 0.15, KWin 5).
//! One notification object with the threshold as its timeout: the compositor says `idle`
//! once the seat had no input for that long, and `resumed` at the next input.
//!
//! Both count from the object's creation, not from the last input: after a start (or a
//! new threshold) the person counts as present until a full threshold passed untouched.

use std::convert::Infallible;
use std::os::fd::{AsFd, AsRawFd};
use std::time::Duration;

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::sync::watch;
use wayland_client::backend::WaylandError;
use wayland_client::globals::{registry_queue_init, GlobalList, GlobalListContents};
use wayland_client::protocol::{wl_registry::WlRegistry, wl_seat::WlSeat};
use wayland_client::{delegate_noop, Connection, Dispatch, Proxy, QueueHandle};
use wayland_protocols::ext::idle_notify::v1::client::{
    ext_idle_notification_v1::{self, ExtIdleNotificationV1},
    ext_idle_notifier_v1::ExtIdleNotifierV1,
};
use wayland_protocols_plasma::idle::client::{
    org_kde_kwin_idle::OrgKdeKwinIdle,
    org_kde_kwin_idle_timeout::{self, OrgKdeKwinIdleTimeout},
};

use super::{say_idle, Fd, Seen};

/// What the notification objects said since the last look, oldest first: idle or back.
#[derive(Default)]
struct State {
    told: Vec<bool>,
}

impl Dispatch<WlRegistry, GlobalListContents> for State {
    // Globals that come or go later change nothing: the notification lives on its seat.
    fn event(
        _: &mut Self,
        _: &WlRegistry,
        _: <WlRegistry as Proxy>::Event,
        _: &GlobalListContents,
        _: &Connection,
        _: &QueueHandle<Self>,
    ) {
    }
}

delegate_noop!(State: ignore WlSeat);
delegate_noop!(State: ExtIdleNotifierV1);
delegate_noop!(State: OrgKdeKwinIdle);

impl Dispatch<ExtIdleNotificationV1, ()> for State {
    fn event(
        state: &mut Self,
        _: &ExtIdleNotificationV1,
        event: ext_idle_notification_v1::Event,
        _: &(),
        _: &Connection,
        _: &QueueHandle<Self>,
    ) {
        match event {
            ext_idle_notification_v1::Event::Idled => state.told.push(true),
            ext_idle_notification_v1::Event::Resumed => state.told.push(false),
            _ => {}
        }
    }
}

impl Dispatch<OrgKdeKwinIdleTimeout, ()> for State {
    fn event(
        state: &mut Self,
        _: &OrgKdeKwinIdleTimeout,
        event: org_kde_kwin_idle_timeout::Event,
        _: &(),
        _: &Connection,
        _: &QueueHandle<Self>,
    ) {
        match event {
            org_kde_kwin_idle_timeout::Event::Idle => state.told.push(true),
            org_kde_kwin_idle_timeout::Event::Resumed => state.told.push(false),
            _ => {}
        }
    }
}

/// Follows until the compositor closes the connection; answers why it cannot tell.
pub async fn watch(said: &watch::Sender<Seen>, after: Duration) -> Result<Infallible, String> {
    let conn = Connection::connect_to_env()
        .map_err(|e| format!("cannot connect to the Wayland compositor: {e}"))?;
    let failed = |e: &dyn std::fmt::Display| format!("Wayland: {e}");
    // One round trip, for the globals: the compositor answers it at once.
    let (globals, mut queue) = registry_queue_init::<State>(&conn).map_err(|e| failed(&e))?;
    let qh = queue.handle();
    let offers = |name: &str| {
        globals
            .contents()
            .with_list(|list| list.iter().any(|g| g.interface == name))
    };
    let (has_ext, has_kde) = (offers("ext_idle_notifier_v1"), offers("org_kde_kwin_idle"));
    if !has_ext && !has_kde {
        return Err(
            "the Wayland compositor offers no idle notification (neither \
                    ext_idle_notifier_v1 nor org_kde_kwin_idle)"
                .into(),
        );
    }
    // The first seat: a desktop has one, and a second would be another person's.
    let seat: WlSeat = globals
        .bind(&qh, 1..=1, ())
        .map_err(|e| failed(&format!("no seat: {e}")))?;
    let timeout = u32::try_from(after.as_millis()).unwrap_or(u32::MAX).max(1);
    let by = ask_idle(&globals, &qh, &seat, timeout, has_ext)?;
    conn.flush().map_err(|e| failed(&e))?;
    tracing::info!("PRESENCE idle time from {by}: away after {timeout} ms without input");
    let mut state = State::default();
    let mut away = false;
    say_idle(said, away, after, by);
    // SAFETY: the descriptor is the connection's, open while `conn` lives; `fd` is
    // declared after it, so it is dropped (and deregistered) first.
    let fd = unsafe {
        AsyncFd::register_with_interest(Fd(conn.as_fd().as_raw_fd()), Interest::READABLE)
    }
    .map_err(|e| failed(&e.to_string()))?;
    loop {
        queue.dispatch_pending(&mut state).map_err(|e| failed(&e))?;
        for idle in state.told.drain(..) {
            if idle != away {
                away = idle;
                if away {
                    tracing::info!("PRESENCE no input for {timeout} ms ({by}): away");
                } else {
                    tracing::info!("PRESENCE input ({by}): back");
                }
                say_idle(said, away, after, by);
            }
        }
        queue.flush().map_err(|e| failed(&e))?;
        let mut ready = fd.readable().await.map_err(|e| failed(&e))?;
        // None: events are queued already, dispatched at the top of the loop.
        let Some(read) = queue.prepare_read() else {
            continue;
        };
        match read.read() {
            Ok(_) => {}
            Err(WaylandError::Io(e)) if e.kind() == std::io::ErrorKind::WouldBlock => {
                ready.clear_ready();
            }
            Err(e) => return Err(format!("the Wayland compositor's connection ended: {e}")),
        }
    }
}

/// Ask the compositor to tell when `seat` was idle for `timeout` ms and when it is back,
/// through ext_idle_notifier_v1 (`has_ext`) or else KDE's older protocol; returns which.
fn ask_idle(
    globals: &GlobalList,
    qh: &QueueHandle<State>,
    seat: &WlSeat,
    timeout: u32,
    has_ext: bool,
) -> Result<&'static str, String> {
    let failed = |e: &dyn std::fmt::Display| format!("Wayland: {e}");
    // Kept for the connection's life; the compositor drops them when it closes.
    let by = if has_ext {
        let notifier: ExtIdleNotifierV1 = globals.bind(qh, 1..=2, ()).map_err(|e| failed(&e))?;
        // Version 2's input notification counts only input: a video that keeps the
        // screen on (an idle inhibitor) does not make an empty desk look occupied.
        if notifier.version() >= 2 {
            notifier.get_input_idle_notification(timeout, seat, qh, ());
            "the compositor's ext_idle_notifier_v1, input only"
        } else {
            notifier.get_idle_notification(timeout, seat, qh, ());
            "the compositor's ext_idle_notifier_v1"
        }
    } else {
        let idle: OrgKdeKwinIdle = globals.bind(qh, 1..=1, ()).map_err(|e| failed(&e))?;
        idle.get_idle_timeout(seat, timeout, qh, ());
        "the compositor's org_kde_kwin_idle"
    };
    Ok(by)
}
