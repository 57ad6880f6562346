//! A process's start time, so a simulated provider-client record can name a live
//! process and pass lf's pid-reuse check (recorded `started_at` within ±5 s); and a
//! terminal of its own for an lf the tests run as a person's terminal would.

use std::fs;
use std::io;

/// When `pid` started, in unix seconds, from `/proc/<pid>/stat` and the boot time.
pub fn process_start_time(pid: u32) -> io::Result<i64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The command name (field 2) may hold spaces and parentheses; fields after the last
    // ')' are plain. `starttime` is field 22, the 20th after the name.
    let after_name = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .ok_or_else(|| invalid(format!("/proc/{pid}/stat has no command name")))?;
    let ticks: i64 = after_name
        .split_whitespace()
        .nth(19)
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| invalid(format!("/proc/{pid}/stat has no start time")))?;
    let boot: i64 = fs::read_to_string("/proc/stat")?
        .lines()
        .find_map(|line| line.strip_prefix("btime "))
        .and_then(|t| t.trim().parse().ok())
        .ok_or_else(|| invalid("/proc/stat has no boot time".into()))?;
    // SAFETY: sysconf only reads a configuration value.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if per_second <= 0 {
        return Err(invalid("the clock tick rate is unknown".into()));
    }
    Ok(boot + ticks / per_second as i64)
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

/// A new pseudo-terminal: its master (what the terminal window holds) and its slave (what
/// the programs in it read and write). Both close on exec, so that no process a test
/// starts holds the master open: an agent left on the terminal then reads its end when
/// the test lets go.
pub fn pty() -> (fs::File, fs::File) {
    use std::os::fd::FromRawFd;
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty writes two new descriptors, which the Files below take over.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", io::Error::last_os_error());
    for fd in [master, slave] {
        // SAFETY: fcntl on descriptors this function owns.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    // SAFETY: both descriptors were just opened here and nothing else owns them.
    unsafe { (fs::File::from_raw_fd(master), fs::File::from_raw_fd(slave)) }
}

/// The terminal's name, as `ttyname` gives it (`/dev/pts/N`).
pub fn tty_name(tty: &fs::File) -> String {
    use std::os::fd::AsRawFd;
    fs::read_link(format!("/proc/self/fd/{}", tty.as_raw_fd()))
        .unwrap()
        .display()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_child_started_just_now() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let started = process_start_time(child.id()).unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        // Boot time and ticks are whole seconds, so allow lf's own ±5 s.
        assert!((now - started).abs() <= 5, "started {started}, now {now}");
    }

    #[test]
    fn a_missing_process_is_an_error() {
        let err = process_start_time(u32::MAX).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }
}
