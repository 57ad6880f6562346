//! What this machine's process table says of one process: when it started, whether it has
//! a controlling terminal, and when it exits. Read from `/proc` on Linux, never by
//! spawning `ps`; the leaf both lf's agent processes and the files' provider clients use.

/// The fields of `/proc/PID/stat` after `comm` (field 2, in parentheses, which may
/// itself hold spaces and `)`), from field 3, the state, on; `None` for a process
/// that is not running (gone, or a zombie waiting to be reaped).
#[cfg(target_os = "linux")]
fn stat_fields(pid: i32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_comm = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<String> = after_comm
        .split_ascii_whitespace()
        .map(str::to_string)
        .collect();
    // Z is a zombie, X dead.
    (!matches!(fields.first()?.as_str(), "Z" | "X")).then_some(fields)
}

/// Field 7, `tty_nr`: 0 for a process without a controlling terminal.
#[cfg(target_os = "linux")]
pub(crate) fn has_terminal(pid: i32) -> Option<bool> {
    let tty: i64 = stat_fields(pid)?.get(4)?.parse().ok()?;
    Some(tty != 0)
}

/// The process's start in Unix seconds, or `None` if it is not running (gone, or a
/// zombie waiting to be reaped).
#[cfg(target_os = "linux")]
pub(crate) fn start_time(pid: i32) -> Option<f64> {
    // Field 22, `starttime`, in clock ticks since boot.
    let ticks: u64 = stat_fields(pid)?.get(19)?.parse().ok()?;
    Some(boot_time()? as f64 + ticks as f64 / clock_ticks_per_second()? as f64)
}

/// `btime` from `/proc/stat`. Read every time rather than cached: the kernel derives
/// it from the wall clock, so it moves when the clock is set, as `started_at` does.
#[cfg(target_os = "linux")]
fn boot_time() -> Option<i64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    stat.lines()
        .find_map(|line| line.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()
}

#[cfg(target_os = "linux")]
fn clock_ticks_per_second() -> Option<i64> {
    // SAFETY: sysconf only reads a system constant.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (ticks > 0).then_some(ticks as i64)
}

/// Without pidfd (older kernels, other systems), a known live client pid is checked this
/// often. Only those few pids are checked, never the process tree.
const EXIT_RECHECK: std::time::Duration = std::time::Duration::from_secs(2);

/// A descriptor that becomes readable when the process `pid` exits (a pidfd): `Ok(None)`
/// if it already has. An error where this system has none (older kernels, other systems)
/// or the process is out of descriptors (`EMFILE`).
#[cfg(target_os = "linux")]
pub(crate) fn pidfd(pid: i32) -> std::io::Result<Option<std::os::fd::OwnedFd>> {
    use std::os::fd::FromRawFd;
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        let error = std::io::Error::last_os_error();
        return match error.raw_os_error() {
            // It exited between the liveness check and now.
            Some(libc::ESRCH) => Ok(None),
            _ => Err(error),
        };
    }
    // SAFETY: the descriptor was just returned to us and nothing else owns it.
    Ok(Some(unsafe {
        std::os::fd::OwnedFd::from_raw_fd(fd as i32)
    }))
}

/// Whether the process behind a [`pidfd`] has exited already, asked without waiting.
#[cfg(target_os = "linux")]
pub(crate) fn has_exited(fd: &impl std::os::fd::AsRawFd) -> bool {
    let mut poll = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one pollfd, valid for the call; a zero timeout never blocks.
    unsafe { libc::poll(&mut poll, 1, 0) == 1 }
}

/// Returns when the process behind a [`pidfd`] has exited: waiting costs nothing while it
/// runs. Without a reactor to register it with, the pid is checked as without pidfd.
#[cfg(target_os = "linux")]
pub(crate) async fn exited_by(fd: std::sync::Arc<std::os::fd::OwnedFd>, pid: i32) {
    use tokio::io::unix::AsyncFd;
    // SAFETY: the `OwnedFd` keeps the descriptor open, unchanged, for as long as the
    // AsyncFd holds its `Arc`.
    match unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) } {
        Ok(fd) => {
            let _ = fd.readable().await;
        }
        Err(_) => recheck_exit(pid).await,
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn pidfd(_pid: i32) -> std::io::Result<Option<std::os::fd::OwnedFd>> {
    Err(std::io::ErrorKind::Unsupported.into())
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn has_exited(_fd: &impl std::os::fd::AsRawFd) -> bool {
    false
}

#[cfg(not(target_os = "linux"))]
pub(crate) async fn exited_by(_fd: std::sync::Arc<std::os::fd::OwnedFd>, pid: i32) {
    recheck_exit(pid).await
}

/// The soft limit on this process's open descriptors, raised first to the hard limit, as
/// long-running desktop programs do: each watched process costs one. `None` where the
/// limit cannot be read.
pub fn raise_descriptor_limit() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit, which lives for the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return None;
    }
    if limit.rlim_cur < limit.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: limit.rlim_max,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: setrlimit reads one rlimit, which lives for the call.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            limit = raised;
        }
    }
    Some(limit.rlim_cur)
}

pub(crate) async fn recheck_exit(pid: i32) {
    loop {
        tokio::time::sleep(EXIT_RECHECK).await;
        // SAFETY: signal 0 only asks whether the process exists.
        let gone = unsafe { libc::kill(pid, 0) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if gone {
            return;
        }
    }
}
