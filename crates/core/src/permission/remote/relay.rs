//! The machine's side: the watcher there takes the tray's lines, keeps the hook entry and
//! the socket while answering is on, and hands the hooks' requests on as [`FromMachine`]
//! lines.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use super::{FromMachine, ToMachine, SILENT};
use crate::engine::Sessions;
use crate::permission::claude_settings;
use crate::permission::socket::{Dir, Hook, Hooks, Unbound};
use crate::permission::{requester, Request};

/// Where the relay finds what it needs on its machine.
pub struct Place {
    /// Where the hook looks ([`crate::permission::hook_socket`]).
    pub socket: PathBuf,
    /// Claude's settings file, `None` without a home.
    pub settings: Option<PathBuf>,
    /// The entry's command: this lf-tray's own `permission-hook`.
    pub command: String,
    pub uid: u32,
}

impl Place {
    /// This process's place: its user, its Claude settings, its own binary.
    pub fn here() -> Result<Place, String> {
        let program = std::env::current_exe()
            .map_err(|e| format!("could not find lf-tray's own path for the hook: {e}"))?;
        Ok(Place {
            socket: crate::permission::hook_socket_here(),
            settings: claude_settings::path(
                std::env::var_os("CLAUDE_CONFIG_DIR").map(PathBuf::from),
                std::env::var_os("HOME")
                    .map(PathBuf::from)
                    .filter(|h| h.is_absolute()),
            ),
            command: claude_settings::command(&program, crate::permission::Client::Claude),
            // SAFETY: getuid cannot fail.
            uid: unsafe { libc::getuid() },
        })
    }
}

type Open = Arc<Mutex<HashMap<u64, mpsc::UnboundedSender<ToMachine>>>>;

/// The watcher's side: takes the tray's lines, keeps the hook entry and the socket while
/// answering is on, and hands the hooks' requests on as [`FromMachine`] lines.
pub struct Relay {
    place: Place,
    out: mpsc::UnboundedSender<FromMachine>,
    sessions: Arc<dyn Fn() -> Sessions + Send + Sync>,
    open: Open,
    listening: Option<AbortHandle>,
    /// When the tray last said anything: a hook whose popup is up gives up after
    /// [`SILENT`] without a word.
    heard: Heard,
}

type Heard = Arc<tokio::sync::watch::Sender<tokio::time::Instant>>;

impl Relay {
    pub fn new(
        place: Place,
        out: mpsc::UnboundedSender<FromMachine>,
        sessions: Arc<dyn Fn() -> Sessions + Send + Sync>,
    ) -> Relay {
        Relay {
            place,
            out,
            sessions,
            open: Open::default(),
            listening: None,
            heard: Arc::new(tokio::sync::watch::Sender::new(tokio::time::Instant::now())),
        }
    }

    /// One line from the tray.
    pub fn take(&mut self, line: ToMachine) {
        self.heard.send_replace(tokio::time::Instant::now());
        match line {
            ToMachine::Answering(on) => {
                let problem = if on { self.start() } else { self.stop(true) };
                let _ = self.out.send(FromMachine::Answering { on, problem });
            }
            ToMachine::Shown { id } | ToMachine::Reply { id, .. } => {
                let mut open = lock(&self.open);
                let answered = matches!(line, ToMachine::Reply { .. });
                if let Some(hook) = open.get(&id) {
                    let _ = hook.send(line);
                }
                if answered {
                    open.remove(&id);
                }
            }
            // Dropping its sender ends the hook's connection: no decision.
            ToMachine::Withdraw { id } => {
                lock(&self.open).remove(&id);
            }
            ToMachine::Alive => {}
        }
    }

    /// The tray is gone (the end of stdin: the ssh cut, the tray quit, the machine let
    /// go): every waiting hook gets no decision now, and nobody listens. The entry stays,
    /// as the tray's own does when it quits: a hook that finds no one gives no decision at
    /// once, and Claude, which reads its hooks when it starts, keeps answering from here
    /// once the tray is back without a restart of the agent.
    pub fn end(&mut self) {
        self.stop(false);
    }

    fn start(&mut self) -> Option<String> {
        let mut problems = Vec::new();
        match &self.place.settings {
            Some(path) => {
                if let Err(refusal) = claude_settings::apply(path, Some(&self.place.command)) {
                    problems.push(refusal.to_string());
                }
            }
            None => problems.push("no home directory, so no Claude Code settings".into()),
        }
        if self.listening.is_none() {
            match Hooks::bind(&self.place.socket, self.place.uid, Dir::Relay) {
                Ok(hooks) => {
                    let task = tokio::spawn(accept(
                        hooks,
                        self.place.uid,
                        self.out.clone(),
                        self.sessions.clone(),
                        self.open.clone(),
                        self.heard.clone(),
                    ));
                    self.listening = Some(task.abort_handle());
                }
                // A socket that answers belongs to a tray running on this machine: its
                // person answers there, and it is left alone.
                Err(Unbound::Answered) => {
                    problems.push("a tray on that machine answers its agents itself".into())
                }
                Err(Unbound::Failed(why)) => problems.push(why),
            }
        }
        (!problems.is_empty()).then(|| problems.join("; "))
    }

    fn stop(&mut self, remove: bool) -> Option<String> {
        lock(&self.open).clear();
        if let Some(task) = self.listening.take() {
            task.abort();
            let _ = std::fs::remove_file(&self.place.socket);
        }
        if !remove {
            return None;
        }
        let path = self.place.settings.as_deref()?;
        claude_settings::apply(path, None)
            .err()
            .map(|refusal| refusal.to_string())
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.end();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

async fn accept(
    hooks: Hooks,
    uid: u32,
    out: mpsc::UnboundedSender<FromMachine>,
    sessions: Arc<dyn Fn() -> Sessions + Send + Sync>,
    open: Open,
    heard: Heard,
) {
    let mut next = 0u64;
    while let Some(arriving) = hooks.next().await {
        next += 1;
        let (out, sessions, open, heard) = (
            out.clone(),
            sessions.clone(),
            open.clone(),
            heard.subscribe(),
        );
        tokio::spawn(async move {
            let Ok((hook, request)) = arriving.read().await else {
                return;
            };
            let Some(session) = find(hook.pid, uid, sessions.as_ref()).await else {
                return;
            };
            relay(hook, next, session, request, out, open, heard).await;
        });
    }
}

/// How long the relay looks for the hook's agent among the sessions: lf's list names an
/// agent's pid a moment after the agent starts (its process list is read after the
/// session's change), and an agent may ask at once. A second, since the hook waits
/// `SHOWN_WAIT` (2 s) for `shown`, and the tray needs the other second to show its popup.
const FIND_WAIT: Duration = Duration::from_secs(1);
/// How often it looks again meanwhile: the list is in memory, the processes a /proc walk.
const FIND_AGAIN: Duration = Duration::from_millis(50);

/// The lf session of the agent above the hook `pid` (the walk as locally).
async fn find(
    pid: u32,
    uid: u32,
    sessions: &(dyn Fn() -> Sessions + Send + Sync),
) -> Option<String> {
    let deadline = tokio::time::Instant::now() + FIND_WAIT;
    loop {
        let chain = crate::terminal::place::Processes::read(Path::new("/proc"), uid).ancestors(pid);
        if let Some(found) = requester(&chain, &sessions()) {
            return Some(found.id.clone());
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(FIND_AGAIN).await;
    }
}

/// One hook's connection: its request handed on, then `shown` and the reply as the tray
/// sends them. The connection closed without a reply is no decision.
async fn relay(
    mut hook: Hook,
    id: u64,
    session: String,
    request: Request,
    out: mpsc::UnboundedSender<FromMachine>,
    open: Open,
    heard: tokio::sync::watch::Receiver<tokio::time::Instant>,
) {
    let (tx, mut steps) = mpsc::unbounded_channel();
    lock(&open).insert(id, tx);
    let sent = out.send(FromMachine::Request {
        id,
        session,
        request,
    });
    if sent.is_err() {
        lock(&open).remove(&id);
        return;
    }
    // Until its popup is up the hook keeps its own time (`SHOWN_WAIT`); then the tray's
    // silence is what gives up on it.
    let mut shown = false;
    loop {
        let silent_until = *heard.borrow() + SILENT;
        tokio::select! {
            step = steps.recv() => match step {
                Some(ToMachine::Shown { .. }) => {
                    if hook.shown().await.is_err() {
                        break;
                    }
                    shown = true;
                }
                Some(ToMachine::Reply { reply, .. }) => {
                    if hook.answer(&reply).await.is_err() {
                        break;
                    }
                    let _ = out.send(FromMachine::Answered { id });
                    return;
                }
                // Withdrawn, or the tray gone: no decision.
                _ => return hook.withdraw(),
            },
            // The hook went away: Claude ended it, the terminal answered.
            () = hook.left() => break,
            // Nothing from the tray for SILENT (each line moves this on): the link died
            // without a word. No decision; the request ends for a tray that does hear.
            () = tokio::time::sleep_until(silent_until), if shown => {
                if heard.borrow().elapsed() >= SILENT {
                    break;
                }
            }
        }
    }
    if lock(&open).remove(&id).is_some() {
        let _ = out.send(FromMachine::RequestEnded { id });
    }
}
