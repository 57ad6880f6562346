//! The app's run: the desk's task, which owns the desk (the popups and the agents' open
//! requests) and takes it the engine's events and everything else that happens; the
//! popups delivered on a task of their own; redrawing the tray and the window; and the way
//! out (Quit, Ctrl-C, SIGTERM).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lf_tray_core::history;
use lf_tray_core::{Event, SessionRecord};
use lf_tray_surface::desk::{Effect, HookId, Input, ToHook};
use lf_tray_surface::looking;
#[cfg(all(unix, not(target_os = "macos")))]
use lf_tray_surface::notice::NoticeKey;
use lf_tray_surface::policy::{Clock, Delivery, Effect as PopupEffect, Focus};
use lf_tray_surface::route::Click;
use tauri::{AppHandle, Runtime};
use tokio::sync::mpsc;

use crate::platform::{focus, tray, window};
use crate::shell::{lock, Shell, ToDesk, Unstarted};
use crate::{click, logfile};

/// The desk's task: it owns the [`Desk`] and is the only part that changes it. It takes
/// the engine's events, what the rest of the shell tells it, and the desk's own deadlines,
/// one [`Input`] at a time, and carries out the effects: popups to the delivering task,
/// news to the hooks that asked, clicks taken where they go, the memory kept, the tray and
/// the window redrawn from the view it publishes. Ends when the engine stops or Quit.
pub(crate) async fn follow<R: Runtime>(
    app: AppHandle<R>,
    shell: Arc<Shell>,
    start: Unstarted,
    mut events: mpsc::UnboundedReceiver<Event>,
    deliveries: mpsc::UnboundedSender<PopupEffect>,
) {
    let Unstarted {
        mut desk,
        mut letters,
    } = start;
    let mut hooks: HashMap<HookId, mpsc::UnboundedSender<ToHook>> = HashMap::new();
    let memory = shell.history_path.clone().map(Memory::new);
    let mut held_back = {
        let prefs = shell.preferences();
        desk.view(&[], Clock::system(), &prefs).held_back
    };
    // The tray and the window are first filled from the engine's first batch, which holds
    // its first snapshot.
    while !shell.quitting.load(Ordering::SeqCst) {
        let prefs = shell.preferences();
        let deadline = desk
            .next_deadline(Clock::system(), &prefs)
            .map(|due| due.at());
        let mut card = None;
        let mut batch = Vec::new();
        let input = tokio::select! {
            event = events.recv() => {
                let Some(event) = event else { break };
                // Take everything already queued, so a burst rebuilds the menu once.
                batch.push(event);
                while let Ok(event) = events.try_recv() {
                    batch.push(event);
                }
                let focus = before_the_desk(&shell, &batch);
                Input::Events { batch: batch.clone(), focus }
            }
            letter = letters.recv() => match letter {
                Some(ToDesk::Input(input)) => input,
                Some(ToDesk::Hook(input, news)) => {
                    if let Input::Ask { hook, .. } = &input {
                        hooks.insert(*hook, news);
                    }
                    input
                }
                Some(ToDesk::Card(input, told)) => {
                    card = Some(told);
                    input
                }
                None => break,
            },
            () = until(deadline) => Input::Tick,
        };
        if shell.quitting.load(Ordering::SeqCst) {
            break;
        }
        if let Input::HookEnded(hook) = &input {
            hooks.remove(hook);
        }
        let mut redraw = false;
        for effect in desk.step(Clock::system(), &prefs, input) {
            match effect {
                // Popups first: the tray and the window can wait the few milliseconds
                // they take.
                Effect::Show(notice) => {
                    let _ = deliveries.send(PopupEffect::Show(notice));
                }
                Effect::Close(key) => {
                    let _ = deliveries.send(PopupEffect::Close(key));
                }
                Effect::Hook(hook, news) => {
                    let last = news != ToHook::Taken;
                    if let Some(to) = hooks.get(&hook) {
                        let _ = to.send(news);
                    }
                    if last {
                        hooks.remove(&hook);
                    }
                }
                Effect::Go { key, action, token } => {
                    click::go(&app, &shell, &key, Click::Popup(&action), token)
                }
                Effect::Window(at) => window::show(&app, at.as_ref()),
                Effect::Carded(sent) => {
                    if let Some(told) = card.take() {
                        let _ = told.send(sent);
                    }
                }
                Effect::Redraw => redraw = true,
                Effect::Save(bytes) => {
                    if let Some(memory) = &memory {
                        memory.keep(bytes);
                    }
                }
                Effect::Note(line) => tracing::info!("{line}"),
            }
        }
        // The pushes decide on their own task: nothing there holds up a popup.
        if !batch.is_empty() {
            let runner = lock(&shell.push);
            if batch.iter().any(|e| matches!(e, Event::Snapshot { .. })) {
                shell.listed.store(true, Ordering::SeqCst);
            }
            if let Some(runner) = runner.as_ref() {
                for event in &batch {
                    runner.send(event);
                }
            }
        }
        let sessions = shell.engine.sessions();
        let view = desk.view(&sessions, Clock::system(), &prefs);
        if view.held_back != held_back {
            tracing::info!("HELD_BACK {}", view.held_back.as_deref().unwrap_or("no"));
            held_back = view.held_back.clone();
            redraw = true;
        }
        shell.view.send_replace(Arc::new(view));
        if redraw {
            refresh(&app, &shell);
        }
    }
}

/// What the shell does with the engine's events before the desk takes them: the log, the
/// person's `on_event` program, the window's warnings, and where the person looks for each
/// session that asked (no popup for a turn handed back in the terminal they look at; a
/// terminal may take seconds to answer, `kitty @ ls`, so it is asked here, once a batch).
fn before_the_desk(shell: &Shell, batch: &[Event]) -> Vec<(SessionRecord, Focus)> {
    let program = shell.settings().on_event;
    for event in batch {
        logfile::event(event);
        if let Some(program) = &program {
            shell.hook.send(program, event);
        }
        if let Event::Warning { path, message, .. } = event {
            shell.warn(match path {
                Some(path) => format!("{}: {message}", path.display()),
                None => message.clone(),
            });
        }
    }
    let focus = looking::gate(batch, || focus::Desk::open(lock(&shell.terminals).clone()));
    for (session, _) in focus.iter().filter(|(_, f)| *f == Focus::Looking) {
        tracing::info!("LOOKING_AT session={}: no popup", session.id);
    }
    focus
        .into_iter()
        .map(|(session, focus)| (session.clone(), focus))
        .collect()
}

/// Where the popups' memory is written: on a thread of its own, so no popup waits for the
/// disk (two fsyncs); a newer memory queued behind an older one replaces it.
struct Memory {
    queue: std::sync::mpsc::Sender<Vec<u8>>,
}

impl Memory {
    fn new(path: PathBuf) -> Memory {
        let (queue, queued) = std::sync::mpsc::channel::<Vec<u8>>();
        let spawned = std::thread::Builder::new()
            .name("history".into())
            .spawn(move || {
                while let Ok(mut bytes) = queued.recv() {
                    while let Ok(newer) = queued.try_recv() {
                        bytes = newer;
                    }
                    if let Err(e) = history::write_atomically(&path, &bytes) {
                        tracing::warn!(
                            "could not keep the popups' memory in {}: {e}",
                            path.display()
                        );
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("could not start the memory's writer: {e}");
        }
        Memory { queue }
    }

    fn keep(&self, bytes: Vec<u8>) {
        let _ = self.queue.send(bytes);
    }
}

/// Show and close popups in the order the desk decided, apart from [`follow`]: a slow or
/// missing notification server (D-Bus activation can wait 25 s) must not hold up the tray
/// and the window. How each went goes back to the desk.
pub(crate) async fn deliver(shell: Arc<Shell>, mut effects: mpsc::UnboundedReceiver<PopupEffect>) {
    while let Some(effect) = effects.recv().await {
        let Some(notifications) = shell.notifications.get() else {
            continue;
        };
        match effect {
            PopupEffect::Show(notice) => {
                let delivery = notifications.show(&notice, shell.settings().sound).await;
                #[cfg(all(unix, not(target_os = "macos")))]
                if notice.key == NoticeKey::NoTray && delivery == Delivery::Shown {
                    crate::platform::tray_host::no_tray_told(&shell);
                }
                shell.tell(Input::Delivered { notice, delivery });
            }
            PopupEffect::Close(key) => notifications.close(&key).await,
        }
    }
}

/// How long Quit waits for the notification server to take the popups down: it answers
/// in milliseconds, and a hung one must not keep the app from exiting.
const QUIT_GRACE: Duration = Duration::from_secs(1);

/// Until `deadline`, or for ever without one.
pub(crate) async fn until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// Show the current list in the tray and the window.
pub(crate) fn refresh<R: Runtime>(app: &AppHandle<R>, shell: &Shell) {
    let sessions = shell.engine.sessions();
    let popups = shell.view().tray(&sessions);
    if let Some(runner) = lock(&shell.push).as_ref() {
        runner.dismissed(&popups.dismissed);
    }
    tray::refresh(app, sessions, popups);
    window::publish(app, shell);
}

/// Close the app's popups (their buttons would do nothing once it is gone), then exit.
pub(crate) fn quit<R: Runtime>(app: &AppHandle<R>, shell: Arc<Shell>) {
    shell.quitting.store(true, Ordering::SeqCst);
    shell.tell(Input::Tick);
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        if let Some(notifications) = shell.notifications.get() {
            // A notification server that does not answer must not keep the app alive.
            let _ = tokio::time::timeout(QUIT_GRACE, notifications.close_all()).await;
        }
        app.exit(0);
    });
}

/// Ctrl-C in the terminal that started the app, or SIGTERM from a session manager, ends it
/// like Quit: popups taken down, and the demo's temporary home removed on the way out.
pub(crate) async fn on_signal<R: Runtime>(app: AppHandle<R>, shell: Arc<Shell>) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut interrupt), Ok(mut terminate)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return;
    };
    tokio::select! {
        _ = interrupt.recv() => {}
        _ = terminate.recv() => {}
    }
    quit(&app, shell);
}
