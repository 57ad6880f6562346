//! The tab inside a terminal window: showing it, and asking which one is shown. kitty and
//! WezTerm are asked through their own command lines, Konsole over D-Bus.

use super::*;
use lf_tray_core::terminal::tab::NoCommand;

/// How long a terminal gets to answer: `kitty @` starts kitty's Python each time,
/// ~0.4 s here when idle, a few seconds on a loaded 2-core machine; a terminal that
/// hangs must not hold the click (or the popup it decides on) longer than that.
const ANSWER_WAIT: Duration = Duration::from_secs(5);

/// Make `tab` the one its terminal window shows.
pub(super) fn show(tab: &Tab) -> Result<(), String> {
    match tab::command(tab) {
        Ok(command) => run_within(&command, ANSWER_WAIT).map(|_| ()),
        Err(NoCommand::KittyRemoteControlOff) => Err(
            "kitty's remote control is off (allow_remote_control and listen_on in kitty.conf)"
                .into(),
        ),
        Err(NoCommand::DBus) => match tab {
            Tab::Konsole {
                service,
                session,
                window,
            } => konsole::show(service, *session, *window),
            _ => Err("no way to show this tab".into()),
        },
    }
}

/// Whether the terminal shows `tab` now; `None` where it cannot be asked (WezTerm,
/// kitty without remote control) or did not answer.
pub(super) fn shown(tab: &Tab) -> Option<bool> {
    match tab {
        Tab::Kitty { window, .. } => {
            let ls = run_within(&tab::query(tab)?, ANSWER_WAIT).ok()?;
            tab::kitty_shows(&ls, *window)
        }
        Tab::Konsole {
            service,
            session,
            window,
        } => konsole::shown(service, *session, *window),
        Tab::WezTerm { .. } => None,
    }
}

/// Run `command` (no shell), its stdout; killed if it has not ended within `limit`.
fn run_within(command: &tab::Command, limit: Duration) -> Result<String, String> {
    let program = &command.argv[0];
    let child = Command::new(program)
        .args(&command.argv[1..])
        .envs(command.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{program} could not run: {e}"))?;
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    // Read on a thread of its own: kitty's `ls` lists every window's environment and
    // can outgrow a pipe's buffer, so it cannot just be waited for.
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(Ok(out)) if out.status.success() => {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        }
        Ok(Ok(out)) => Err(format!(
            "{program}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Ok(Err(e)) => Err(format!("{program}: {e}")),
        Err(_) => {
            // Not reaped yet (the thread still waits on it), so the pid is still
            // this child's.
            // SAFETY: kill touches no memory; the pid is our unreaped child's.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            Err(format!(
                "{program} did not answer within {} s",
                limit.as_secs()
            ))
        }
    }
}

/// Konsole's D-Bus interface, as konsole 22.12 has it (introspected): each window is
/// `/Windows/N` with `org.kde.konsole.Window.sessionList()` (session numbers as
/// strings), `currentSession()` and `setCurrentSession(i)`.
mod konsole {
    use super::*;
    use zbus::Connection;

    const WINDOW: &str = "org.kde.konsole.Window";
    /// How long Konsole gets to show the tab once asked: it switches in the next turn
    /// of its event loop, within ~10 ms here; a loaded machine can delay that by a few
    /// hundred.
    const SWITCH_WAIT: Duration = Duration::from_secs(2);
    const SWITCH_POLL: Duration = Duration::from_millis(10);

    /// Run `talk` on a connection to the session bus, within [`ANSWER_WAIT`] (zbus
    /// itself would wait 25 s for a Konsole that does not answer).
    fn on_bus<T: Send>(
        talk: impl AsyncFnOnce(&Connection) -> Result<T, String> + Send,
    ) -> Result<T, String> {
        // A short exchange on a runtime of its own, on a thread of its own: the
        // looking-at question is asked from inside the tray's runtime, where another
        // cannot be entered (tokio panics: measured), and the tray's own bus
        // connection lives on the notification runtime, which this does not wait on.
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .map_err(|e| format!("no runtime for D-Bus: {e}"))?;
                    runtime.block_on(async {
                        let exchange = async {
                            let bus = Connection::session()
                                .await
                                .map_err(|e| format!("the session bus: {e}"))?;
                            talk(&bus).await
                        };
                        tokio::time::timeout(ANSWER_WAIT, exchange)
                            .await
                            .map_err(|_| {
                                format!("konsole did not answer within {} s", ANSWER_WAIT.as_secs())
                            })?
                    })
                })
                .join()
                .unwrap_or_else(|_| Err("the D-Bus exchange with konsole failed".into()))
        })
    }

    /// The window (its object path) that holds `session`: the one it was opened in
    /// first, then every window (a tab dragged out to a window of its own is there).
    async fn holding(
        bus: &Connection,
        service: &str,
        session: u32,
        window: Option<u32>,
    ) -> Result<String, String> {
        let listed = windows(bus, service).await?;
        let candidates = window
            .into_iter()
            .chain(listed.into_iter().filter(|w| Some(*w) != window));
        for w in candidates {
            let path = format!("/Windows/{w}");
            if let Ok(sessions) = call::<Vec<String>>(bus, service, &path, "sessionList", &()).await
            {
                if sessions.iter().any(|s| s == &session.to_string()) {
                    return Ok(path);
                }
            }
        }
        Err(format!(
            "no konsole window of {service} holds session {session}"
        ))
    }

    pub(super) fn show(service: &str, session: u32, window: Option<u32>) -> Result<(), String> {
        let id = i32::try_from(session).map_err(|e| e.to_string())?;
        on_bus(async |bus: &Connection| {
            let path = holding(bus, service, session, window).await?;
            call::<()>(bus, service, &path, "setCurrentSession", &(id,)).await?;
            // Konsole answers the call before its event loop switches the tab.
            let deadline = Instant::now() + SWITCH_WAIT;
            loop {
                let now = call::<i32>(bus, service, &path, "currentSession", &()).await?;
                if now == id {
                    return Ok(());
                }
                if Instant::now() > deadline {
                    return Err(format!("konsole still shows session {now}, not {id}"));
                }
                tokio::time::sleep(SWITCH_POLL).await;
            }
        })
    }

    pub(super) fn shown(service: &str, session: u32, window: Option<u32>) -> Option<bool> {
        let id = i32::try_from(session).ok()?;
        on_bus(async |bus: &Connection| {
            let path = holding(bus, service, session, window).await?;
            Ok(call::<i32>(bus, service, &path, "currentSession", &()).await? == id)
        })
        .ok()
    }

    async fn windows(bus: &Connection, service: &str) -> Result<Vec<u32>, String> {
        let xml: String = bus
            .call_method(
                Some(service),
                "/Windows",
                Some("org.freedesktop.DBus.Introspectable"),
                "Introspect",
                &(),
            )
            .await
            .map_err(|e| format!("konsole at {service}: {e}"))?
            .body()
            .deserialize()
            .map_err(|e| e.to_string())?;
        Ok(tab::konsole_windows(&xml))
    }

    async fn call<T>(
        bus: &Connection,
        service: &str,
        path: &str,
        method: &str,
        body: &(impl serde::Serialize + zbus::zvariant::DynamicType),
    ) -> Result<T, String>
    where
        T: for<'d> serde::Deserialize<'d> + zbus::zvariant::Type,
    {
        bus.call_method(Some(service), path, Some(WINDOW), method, body)
            .await
            .map_err(|e| format!("konsole {path} {method}: {e}"))?
            .body()
            .deserialize()
            .map_err(|e| format!("konsole {path} {method}: {e}"))
    }
}
