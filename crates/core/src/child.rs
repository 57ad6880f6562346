//! The tray's own children end with it: its ssh connections and probes, lf's readers and
//! the person's `on_event` program. Terminals the person opens through the tray are theirs
//! and outlive it ([`crate::terminal`] starts them in a session of their own, without
//! this). lf's short runs (a list, an answer) are not tied: they end on their own, and the
//! hook would make each a full fork of the tray (see `Lf::command` in [`crate::lf::cli`]).
//!
//! `kill_on_drop` covers every way out that unwinds (Quit, a headless watch that returns),
//! but not a tray killed by a signal it does not handle, SIGKILL or a crash: its children
//! were reparented to init and an ssh with keep-alives stays connected for good. On Linux
//! the kernel ends them: `PR_SET_PDEATHSIG` in the child before exec. A process group the
//! tray owns would need someone alive to signal it, which a killed tray is not.
//!
//! The death signal is SIGKILL, as `kill_on_drop` and every timeout in the tray send: a
//! child's own SIGTERM handler cannot keep it alive, and what they run tolerates it (ssh's
//! socket is closed by the kernel, so the far side still sees the connection end; lf's
//! store writes are transactions).
//!
//! The kernel sends it when the *thread* that forked ends, not the process. Every child
//! here is spawned from a thread that lives as long as the tray: the main thread of the
//! headless commands (a current-thread runtime) or a worker of the app's tokio runtime,
//! which keeps its workers until it shuts down (nothing in the tray or its dependencies
//! uses `block_in_place`, which would retire a worker into the blocking pool, nor spawns
//! a child from `spawn_blocking` or a thread of its own). A child spawned from a
//! short-lived thread would be killed when that thread ends.

use tokio::process::Command;

/// Make `command`'s child end when the tray does, however the tray ends (Linux; elsewhere
/// only `kill_on_drop` and the children's own ends of their pipes do it).
#[cfg(target_os = "linux")]
pub fn end_with_tray(command: &mut Command) -> &mut Command {
    // The tray's pid as the child will see its parent, taken before the fork.
    let tray = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs in the forked child before exec and calls only prctl and
    // getppid, which are async-signal-safe; it allocates nothing and touches no lock.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            // The tray died between the fork and the prctl: the signal will never come,
            // so the child goes now instead of running on under init.
            if libc::getppid() != tray {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        })
    }
}

#[cfg(not(target_os = "linux"))]
pub fn end_with_tray(command: &mut Command) -> &mut Command {
    command
}

/// Whether `signal` is ignored in this process, as it was when the process started
/// unless it was changed since: a program that handles a signal only when it was not
/// ignored keeps `nohup` and a shell's background jobs working.
#[cfg(unix)]
pub fn signal_was_ignored(signal: i32) -> bool {
    // SAFETY: with a null new action, sigaction only reads the current one into `old`.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &mut old) == 0
            && old.sa_sigaction == libc::SIG_IGN
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    /// `sleep` started from a thread of its own, which then ends; its pid.
    fn sleeper_from_a_thread(tied: bool) -> u32 {
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let _entered = runtime.enter();
            let mut command = Command::new("sleep");
            command.arg("30");
            if tied {
                end_with_tray(&mut command);
            }
            command.spawn().unwrap().id().unwrap()
        })
        .join()
        .unwrap()
    }

    /// Running, and not a zombie waiting to be reaped.
    fn running(pid: u32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|stat| !matches!(stat.rsplit(')').next().map(str::trim_start), Some(s) if s.starts_with('Z')))
    }

    /// The thread that forked stands in for the tray: the kernel ends the tied child when
    /// it goes, and leaves the untied one running.
    #[test]
    fn a_tied_child_ends_with_the_thread_that_started_it() {
        let tied = sleeper_from_a_thread(true);
        let untied = sleeper_from_a_thread(false);
        // The signal is sent as the thread exits; a loaded machine may take a moment to
        // deliver it, far less than this.
        let deadline = Instant::now() + Duration::from_secs(5);
        while running(tied) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let untied_running = running(untied);
        // SAFETY: kill with a pid this test started and a signal number; no memory involved.
        unsafe { libc::kill(untied as libc::pid_t, libc::SIGKILL) };
        assert!(
            !running(tied),
            "the tied child outlived the thread that started it"
        );
        assert!(untied_running, "without it a child runs on");
    }
}
