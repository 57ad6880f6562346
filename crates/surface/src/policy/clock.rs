//! The present as the policy reads it: one [`Clock`] (monotonic, wall and local time at
//! once) and the quiet hours it is measured against.

use std::time::{Duration, Instant};

/// "Until tomorrow" ends at this local hour: the start of a working morning.
const TOMORROW_HOUR: i64 = 8;

/// Quiet hours in local time, minutes after midnight; `from > to` crosses midnight, and
/// `from == to` is no quiet time at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuietHours {
    pub from: u32,
    pub to: u32,
}

impl QuietHours {
    /// `"22:00"`-style times.
    pub fn parse(from: &str, to: &str) -> Option<QuietHours> {
        Some(QuietHours {
            from: minute_of(from)?,
            to: minute_of(to)?,
        })
    }

    pub(super) fn contains(self, minute: u32) -> bool {
        if self.from <= self.to {
            (self.from..self.to).contains(&minute)
        } else {
            minute >= self.from || minute < self.to
        }
    }

    /// Minutes from `minute` until quiet ends.
    pub(super) fn left(self, minute: u32) -> u32 {
        (self.to + 24 * 60 - minute) % (24 * 60)
    }
}

/// `HH:MM` as minutes after midnight.
pub fn minute_of(text: &str) -> Option<u32> {
    let (h, m) = text.trim().split_once(':')?;
    let (h, m): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
    (h < 24 && m < 60).then_some(h * 60 + m)
}

/// The present on the three clocks the policy reads: the monotonic one (deadlines, holds,
/// bursts), the wall clock (what the memory keeps, pauses "until"), and the local time
/// zone's offset (quiet hours, "until tomorrow"). Every call is handed one, so the three
/// can never disagree and the tests set all of them at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clock {
    pub(super) at: Instant,
    pub(super) unix: i64,
    /// Seconds east of UTC.
    offset: i64,
}

impl Clock {
    pub fn new(at: Instant, unix: i64, offset: i64) -> Clock {
        Clock { at, unix, offset }
    }

    /// Now, as the system says; the offset from the C library's idea of local time.
    pub fn system() -> Clock {
        let unix = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        Clock::new(Instant::now(), unix, local_offset(unix))
    }

    pub fn at(&self) -> Instant {
        self.at
    }

    pub fn unix(&self) -> i64 {
        self.unix
    }

    /// The wall clock at another monotonic instant, as this one ties them.
    pub fn unix_at(&self, at: Instant) -> i64 {
        if at >= self.at {
            self.unix + (at - self.at).as_secs() as i64
        } else {
            self.unix - (self.at - at).as_secs() as i64
        }
    }

    pub(super) fn local_minute(&self) -> u32 {
        ((self.unix + self.offset).rem_euclid(86_400) / 60) as u32
    }

    /// The instant of a unix time; one already past is now.
    pub(super) fn instant(&self, unix: i64) -> Instant {
        match u64::try_from(unix - self.unix) {
            Ok(ahead) => self.at + Duration::from_secs(ahead),
            Err(_) => self.at,
        }
    }

    /// `14:05`, or `tomorrow 08:00` when not today.
    pub fn local_time(&self, unix: i64) -> String {
        let day = |t: i64| (t + self.offset).div_euclid(86_400);
        let of_day = (unix + self.offset).rem_euclid(86_400);
        let hm = format!("{:02}:{:02}", of_day / 3600, of_day % 3600 / 60);
        match day(unix) - day(self.unix) {
            0 => hm,
            1 => format!("tomorrow {hm}"),
            _ => {
                let date = time::OffsetDateTime::from_unix_timestamp(unix + self.offset)
                    .map(|t| t.date().to_string())
                    .unwrap_or_default();
                format!("{date} {hm}")
            }
        }
    }

    /// Unix time of tomorrow's [`TOMORROW_HOUR`], local time.
    pub(super) fn tomorrow_morning(&self) -> i64 {
        let local = self.unix + self.offset;
        (local.div_euclid(86_400) + 1) * 86_400 + TOMORROW_HOUR * 3600 - self.offset
    }
}

/// The same clocks later: the monotonic and the wall clock move together, as they do while
/// the machine is awake.
impl std::ops::Add<Duration> for Clock {
    type Output = Clock;

    fn add(self, by: Duration) -> Clock {
        Clock {
            at: self.at + by,
            unix: self.unix + by.as_secs() as i64,
            offset: self.offset,
        }
    }
}

impl std::ops::AddAssign<Duration> for Clock {
    fn add_assign(&mut self, by: Duration) {
        *self = *self + by;
    }
}

impl std::ops::Sub<Duration> for Clock {
    type Output = Clock;

    fn sub(self, by: Duration) -> Clock {
        Clock {
            at: self.at - by,
            unix: self.unix - by.as_secs() as i64,
            offset: self.offset,
        }
    }
}

/// How long between two presents, on the monotonic clock.
impl std::ops::Sub for Clock {
    type Output = Duration;

    fn sub(self, earlier: Clock) -> Duration {
        self.at.saturating_duration_since(earlier.at)
    }
}

#[cfg(unix)]
fn local_offset(unix: i64) -> i64 {
    let t = unix as libc::time_t;
    // SAFETY: localtime_r writes only into the tm it is given.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    if unsafe { libc::localtime_r(&t, &mut tm) }.is_null() {
        return 0;
    }
    tm.tm_gmtoff
}

/// NOT VERIFIED (Windows is not built here): quiet hours are read as UTC there.
#[cfg(not(unix))]
fn local_offset(_unix: i64) -> i64 {
    0
}
