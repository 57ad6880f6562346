//! `lf-tray list` and `lf-tray watch`: the engine without a display, for scripts and servers.

use std::io::{self, Write};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use lf_tray_core::engine::{self, Config, Engine};
use lf_tray_core::permission::remote::{FromMachine, Place, Relay, ToMachine};
use lf_tray_core::{Event, SessionRecord};

/// Overrides from the command line: timing, and the other machines to follow.
#[derive(Debug, Default, PartialEq)]
pub struct Timing {
    pub lf_timeout: Option<Duration>,
    pub relist: Option<Duration>,
    /// lf's quiet time (generation D), for an lf built with another than 120 s.
    pub quiet: Option<Duration>,
    /// `--remote DEST`: other machines to follow.
    pub machines: Vec<String>,
}

fn config(home: Option<PathBuf>, lf: Option<PathBuf>, timing: Timing) -> Config {
    let mut config = Config::from_env(home, lf);
    // A machine named twice is followed once.
    for machine in timing.machines {
        if !config.machines.contains(&machine) {
            config.machines.push(machine);
        }
    }
    if let Some(timeout) = timing.lf_timeout {
        config.lf_timeout = timeout;
    }
    if let Some(relist) = timing.relist {
        config.safety_interval = relist.max(engine::MIN_SAFETY_INTERVAL);
    }
    config.lf_quiet = timing.quiet;
    config
}

pub fn list(home: Option<PathBuf>, lf: Option<PathBuf>, timing: Timing, json: bool) -> Result<()> {
    let config = config(home, lf, timing);
    let (sessions, warnings, status) = runtime()?.block_on(engine::list_once(config));
    for warning in &warnings {
        eprintln!("warning: {}", printable(&warning.to_string()));
    }
    let mut out = io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, &sessions)?;
        writeln!(out)?;
    } else {
        if sessions.is_empty() {
            writeln!(out, "No sessions.")?;
        }
        for session in &sessions {
            writeln!(out, "{}", line(session))?;
        }
        eprintln!("{status}");
    }
    Ok(())
}

/// `lf-tray --version --verbose`: the lf it would follow, and how (its generation).
pub fn about_lf(home: Option<PathBuf>, lf: Option<PathBuf>, timing: Timing) -> Result<()> {
    let config = config(home, lf, timing);
    let (_, warnings, status) = runtime()?.block_on(engine::list_once(config));
    for warning in &warnings {
        eprintln!("warning: {}", printable(&warning.to_string()));
    }
    println!("{}", printable(&status));
    Ok(())
}

pub fn watch(home: Option<PathBuf>, lf: Option<PathBuf>, timing: Timing, json: bool) -> Result<()> {
    let config = config(home, lf, timing);
    let runtime = runtime()?;
    let ended = runtime.block_on(async move {
        let (engine, mut events) = Engine::start(config);
        let mut out = io::stdout().lock();
        let mut first = true;
        let unheard = nobody_listens();
        let signalled = signalled();
        tokio::pin!(unheard, signalled);
        // A tray that follows this machine over ssh talks on stdin: answering its agents
        // from there (`permission::remote`). Only `--json` is a tray's.
        let (mut relay, mut from_tray, mut to_tray) = if json {
            let (relay, from_tray, to_tray) = relay(&engine);
            (relay, Some(from_tray), Some(to_tray))
        } else {
            (None, None, None)
        };
        loop {
            let event = tokio::select! {
                event = events.recv() => event,
                () = &mut unheard => return Ok(None),
                signal = &mut signalled => return Ok(Some(signal)),
                line = recv(&mut from_tray) => {
                    if !heard(line, relay.as_mut()) {
                        from_tray = None;
                    }
                    continue;
                }
                line = recv(&mut to_tray) => {
                    let Some(line) = line else {
                        to_tray = None;
                        continue;
                    };
                    if json_line(&mut out, &line).and_then(|()| out.flush()).is_err() {
                        return Ok(None);
                    }
                    continue;
                }
            };
            let Some(event) = event else {
                return Ok(None);
            };
            let written = if json {
                json_line(&mut out, &event)
            } else {
                writeln!(out, "{}", describe(&event))
            };
            // A reader that went away (`| head`) ends the watch quietly.
            if written.and_then(|()| out.flush()).is_err() {
                return Ok(None);
            }
            // A snapshot is a copy of every session, gone once printed.
            if let Event::Snapshot { sessions, .. } = &event {
                let listed = sessions.len();
                drop(event);
                engine::give_back_freed(listed);
            }
            if std::mem::take(&mut first) {
                if !json {
                    eprintln!("{}", engine.status());
                }
                if !engine.can_watch() && engine.lf_bin().is_none() {
                    bail!("nothing can be watched: file watching failed and no lf was found");
                }
            }
        }
    });
    // The engine's tasks go with the runtime, and with them every ssh and lf reader they
    // hold (killed on drop), before the process exits.
    drop(runtime);
    match ended? {
        // The shell's convention for a command ended by a signal.
        Some(signal) => std::process::exit(128 + signal),
        None => Ok(()),
    }
}

/// A line from the tray given to the relay; returns false when the tray is gone (stdin
/// ended), and with it every hook that waited for it.
fn heard(line: Option<Result<ToMachine, String>>, relay: Option<&mut Relay>) -> bool {
    match (line, relay) {
        (Some(Ok(line)), Some(relay)) => relay.take(line),
        (Some(Ok(_)), None) => {}
        (Some(Err(why)), _) => eprintln!("lf-tray watch: stdin: {why}"),
        // The tray is gone: no hook waits for it any more.
        (None, relay) => {
            if let Some(relay) = relay {
                relay.end();
            }
            return false;
        }
    }
    true
}

/// One JSON line (`watch --json`'s shape: one value a line).
fn json_line(out: &mut impl Write, value: &impl serde::Serialize) -> io::Result<()> {
    serde_json::to_writer(&mut *out, value)
        .map_err(io::Error::from)
        .and_then(|()| writeln!(out))
}

type FromTray = tokio::sync::mpsc::UnboundedReceiver<Result<ToMachine, String>>;
type ToTray = tokio::sync::mpsc::UnboundedReceiver<FromMachine>;

/// The relay for a tray's answers, the tray's lines read from stdin (on a thread of their
/// own: stdin cannot be read without blocking everywhere), and the relay's lines to print.
/// Without a place for the hook (no own path) there is no relay, and the lines are read
/// and dropped.
fn relay(engine: &Engine) -> (Option<Relay>, FromTray, ToTray) {
    use std::io::{BufRead, Read};
    let (lines, from_tray) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        let mut stdin = io::stdin().lock();
        let mut line = Vec::new();
        loop {
            line.clear();
            // A reply carries the person's own words, bounded as a request is.
            let cap = lf_tray_core::permission::MAX_REQUEST as u64 + 1024;
            match (&mut stdin).take(cap).read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let text = String::from_utf8_lossy(&line);
            if text.trim().is_empty() {
                continue;
            }
            if lines.send(ToMachine::read(&text)).is_err() {
                break;
            }
        }
    });
    let (out, to_tray) = tokio::sync::mpsc::unbounded_channel();
    let sessions = engine.clone();
    let relay = match Place::here() {
        Ok(place) => Some(Relay::new(
            place,
            out,
            std::sync::Arc::new(move || sessions.sessions()),
        )),
        Err(why) => {
            eprintln!("lf-tray watch: no answering from a tray: {why}");
            None
        }
    };
    (relay, from_tray, to_tray)
}

/// The next item, or never once there is none to wait for.
async fn recv<T>(from: &mut Option<tokio::sync::mpsc::UnboundedReceiver<T>>) -> Option<T> {
    match from {
        Some(from) => from.recv().await,
        None => std::future::pending().await,
    }
}

/// Resolves when nobody listens any more: stdin, when it is a pipe or socket, reached its
/// end (the ssh that ran this watch is gone, or the script closed it), or stdout's reader
/// is gone. A terminal or /dev/null on stdin is not a listener that leaves: `lf-tray watch
/// < /dev/null` and a watch started from an interactive shell run until stopped. Waiting
/// costs nothing: the runtime's poller tells the hang-up, also when no event is due.
#[cfg(unix)]
async fn nobody_listens() {
    use std::os::fd::{AsFd, BorrowedFd};
    use std::os::unix::fs::FileTypeExt;
    use tokio::io::unix::AsyncFd;
    use tokio::io::{Interest, Ready};

    async fn hung_up(fd: BorrowedFd<'_>, interest: Interest, gone: fn(Ready) -> bool) {
        // A copy of the descriptor, owned by the poller: it stays open as long as it is
        // watched, and closing it leaves stdin and stdout as they are.
        let Ok(copy) = fd.try_clone_to_owned() else {
            return std::future::pending().await;
        };
        // SAFETY: `copy` is an open descriptor that the AsyncFd owns until it is dropped.
        // A file or /dev/null cannot be polled, and never hangs up.
        let Ok(watched) = (unsafe { AsyncFd::register_with_interest(copy, interest) }) else {
            return std::future::pending().await;
        };
        loop {
            let Ok(mut guard) = watched.ready(interest).await else {
                return std::future::pending().await;
            };
            if gone(guard.ready()) {
                return;
            }
            // Writable again, or data nobody reads: wait for the next change.
            guard.clear_ready();
        }
    }

    let (stdin_handle, stdout_handle) = (io::stdin(), io::stdout());
    let stdin_is_a_pipe = stdin_handle
        .as_fd()
        .try_clone_to_owned()
        .map(std::fs::File::from)
        .and_then(|stdin| stdin.metadata())
        .is_ok_and(|m| m.file_type().is_fifo() || m.file_type().is_socket());
    let stdin = async {
        if stdin_is_a_pipe {
            hung_up(
                stdin_handle.as_fd(),
                Interest::READABLE,
                Ready::is_read_closed,
            )
            .await
        } else {
            std::future::pending().await
        }
    };
    // A pipe whose reader left reports an error; a socket or terminal a hang-up.
    let stdout = hung_up(
        stdout_handle.as_fd(),
        Interest::WRITABLE | Interest::ERROR,
        |ready| ready.is_write_closed() || ready.is_error(),
    );
    tokio::select! {
        () = stdin => {}
        () = stdout => {}
    }
}

#[cfg(not(unix))]
async fn nobody_listens() {
    std::future::pending().await
}

/// The number of the first SIGTERM or SIGINT. Handled, not left to kill the process, so
/// the engine's children are ended on the way out on every platform, not only where the
/// kernel does it ([`lf_tray_core::end_with_tray`]). A signal the watch was started with ignored
/// (SIGINT for a job a script put in the background) stays ignored.
#[cfg(unix)]
async fn signalled() -> i32 {
    use tokio::signal::unix::{signal, SignalKind};
    async fn one(kind: SignalKind) -> i32 {
        let number = kind.as_raw_value();
        if lf_tray_core::signal_was_ignored(number) {
            return std::future::pending().await;
        }
        match signal(kind) {
            Ok(mut stream) => {
                stream.recv().await;
                number
            }
            // Left to its default action, which still ends the process.
            Err(_) => std::future::pending().await,
        }
    }
    tokio::select! {
        number = one(SignalKind::terminate()) => number,
        number = one(SignalKind::interrupt()) => number,
    }
}

#[cfg(not(unix))]
async fn signalled() -> i32 {
    let _ = tokio::signal::ctrl_c().await;
    // What a console program ended by Ctrl-C reports.
    2
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("start the async runtime")
}

/// One readable line per session: state, kind (or, for a conversation, whether it waits on
/// you: [`SessionRecord::kind_word`]), title — detail, and the id to pass to lf.
fn line(session: &SessionRecord) -> String {
    let kind = session.kind_word();
    let mut text = format!(
        "{:<8} {:<12} {}",
        session.state.as_str(),
        kind,
        label(session)
    );
    if let Some(summary) = &session.ready_summary {
        text.push_str(&format!("\n{:21}summary: {}", "", printable(summary)));
    }
    text
}

fn label(session: &SessionRecord) -> String {
    // Another machine's session says which: the same id may be on two machines.
    let mut text = match &session.machine {
        Some(machine) => format!("{}: {}", printable(machine), printable(&session.title)),
        None => printable(&session.title),
    };
    if !session.detail.is_empty() {
        text.push_str(" — ");
        text.push_str(&printable(&session.detail));
    }
    text.push_str(&format!("  [{}]", printable(&session.id)));
    text
}

fn describe(event: &Event) -> String {
    let clock = |at: &time::OffsetDateTime| {
        format!("{:02}:{:02}:{:02}", at.hour(), at.minute(), at.second())
    };
    match event {
        Event::Snapshot { at, sessions } => {
            let mut text = format!("{} {} sessions", clock(at), sessions.len());
            for session in sessions {
                text.push_str("\n  ");
                text.push_str(&line(session));
            }
            text
        }
        Event::Asked { at, session } => format!(
            "{} asked    {}{}",
            clock(at),
            label(session),
            session
                .reason()
                .map(|r| format!(
                    " ({}{})",
                    r.phrase(),
                    r.title
                        .as_deref()
                        .map(|t| format!(": {}", printable(t)))
                        .unwrap_or_default()
                ))
                .unwrap_or_default()
        ),
        Event::Stopped { at, session, .. } => {
            format!("{} stopped  {}", clock(at), label(session))
        }
        Event::Ready { at, session } => format!(
            "{} ready    {}{}",
            clock(at),
            label(session),
            session
                .ready_summary
                .as_deref()
                .map(|s| format!(": {}", printable(s)))
                .unwrap_or_default()
        ),
        Event::State {
            at,
            session,
            previous,
            previous_needs_you,
        } => format!(
            "{} state    {} ({} → {}{})",
            clock(at),
            label(session),
            printable(previous.as_str()),
            session.state.as_str(),
            match (previous_needs_you, session.needs_you()) {
                (true, false) => ", no longer needs you",
                (false, true) => ", needs you",
                _ => "",
            }
        ),
        Event::Resolved { at, session } => format!("{} resolved {}", clock(at), label(session)),
        Event::Appeared { at, session } => format!("{} appeared {}", clock(at), label(session)),
        Event::Warning { at, path, message } => match path {
            Some(path) => format!(
                "{} warning  {}: {}",
                clock(at),
                printable(&path.display().to_string()),
                printable(message)
            ),
            None => format!("{} warning  {}", clock(at), printable(message)),
        },
    }
}

/// Untrusted text on a terminal: control characters (escape sequences could rewrite the
/// screen or the title) are shown as their escapes instead.
fn printable(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::printable;

    #[test]
    fn another_machines_sessions_are_labelled_with_it() {
        let mut record: lf_tray_core::SessionRecord = serde_json::from_value(
            serde_json::json!({"id": "ask_1", "state": "waiting", "title": "Ship?"}),
        )
        .unwrap();
        assert_eq!(super::label(&record), "Ship?  [ask_1]");
        record.machine = Some("build-box".into());
        assert_eq!(super::label(&record), "build-box: Ship?  [ask_1]");
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(
            printable("a\u{1b}]0;pwned\u{7}b\nc"),
            "a\\u{1b}]0;pwned\\u{7}b\\nc"
        );
        assert_eq!(printable("Ask · ready — ok"), "Ask · ready — ok");
    }
}
