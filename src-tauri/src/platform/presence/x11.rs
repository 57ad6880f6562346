//! Input idle time on X11, from the SYNC extension's `IDLETIME` counter: an alarm when
//! it reaches the threshold, another when input sets it back below.

use std::os::fd::AsRawFd;
use std::time::Duration;

use tokio::io::unix::AsyncFd;
use tokio::sync::watch;
use x11rb::connection::Connection;
use x11rb::protocol::sync::{
    self, Alarm, ChangeAlarmAux, ConnectionExt as _, Counter, CreateAlarmAux, Int64, TESTTYPE,
    VALUETYPE,
};
use x11rb::protocol::Event;

use super::{say_idle as say, Fd, Seen};

const X11: &str = "X11 idle time";

fn int64(value: i64) -> Int64 {
    Int64 {
        hi: (value >> 32) as i32,
        lo: value as u32,
    }
}

fn value(v: Int64) -> i64 {
    (i64::from(v.hi) << 32) | i64::from(v.lo)
}

/// Follows until the X connection fails; answers why it cannot tell.
pub async fn watch(
    said: &watch::Sender<Seen>,
    after: Duration,
) -> Result<std::convert::Infallible, String> {
    if std::env::var_os("DISPLAY").is_none() {
        return Err("no X display".into());
    }
    let (conn, _) = x11rb::connect(None).map_err(|e| format!("cannot open the display: {e}"))?;
    let failed = |e: &dyn std::fmt::Display| format!("X11: {e}");
    let counter = idle_counter(&conn)?;
    let threshold = i64::try_from(after.as_millis()).unwrap_or(i64::MAX).max(1);
    let Alarms {
        idle_alarm,
        back_alarm,
        idle_now,
    } = alarms(&conn, counter, threshold)?;
    let mut away = idle_now >= threshold;
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

/// The server's `IDLETIME` counter, once SYNC is known to be there.
fn idle_counter(conn: &impl Connection) -> Result<Counter, String> {
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
    counters
        .counters
        .iter()
        .find(|c| c.name == b"IDLETIME")
        .map(|c| c.counter)
        .ok_or_else(|| "the X server has no IDLETIME counter".into())
}

/// The two alarms on the idle time, and the idle time when they were set.
struct Alarms {
    idle_alarm: Alarm,
    back_alarm: Alarm,
    idle_now: i64,
}

/// Set the alarms: away at `threshold`, back below it (armed only once away).
fn alarms(conn: &impl Connection, counter: Counter, threshold: i64) -> Result<Alarms, String> {
    let failed = |e: &dyn std::fmt::Display| format!("X11: {e}");
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
    let away = idle_now >= threshold;
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
    Ok(Alarms {
        idle_alarm,
        back_alarm,
        idle_now,
    })
}
