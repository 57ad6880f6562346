//! The app's run: the event loop that takes the engine's events to the desk (the popups and
//! the agents' open requests), the pushes, the tray and the window; the desk's effects
//! delivered on a task of their own; redrawing the tray and the window; and the way out
//! (Quit, Ctrl-C, SIGTERM).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lf_tray_core::Event;
use lf_tray_surface::looking;
#[cfg(all(unix, not(target_os = "macos")))]
use lf_tray_surface::notice::NoticeKey;
use lf_tray_surface::policy::{Clock, Delivery, Effect, Focus};
use tauri::{AppHandle, Runtime};
use tokio::sync::mpsc;

use crate::logfile;
use crate::platform::{focus, tray, window};
use crate::shell::{lock, Shell};

/// Take the engine's events to the tray, the window and the notifications, and release
/// held notifications at their deadline. Ends when the engine stops.
pub(crate) async fn follow<R: Runtime>(
    app: AppHandle<R>,
    shell: Arc<Shell>,
    mut events: mpsc::UnboundedReceiver<Event>,
    deliveries: mpsc::UnboundedSender<Effect>,
) {
    let mut held_back = shell.held_back();
    // The tray and the window are first filled from the engine's first batch, which holds
    // its first snapshot.
    while !shell.quitting.load(Ordering::SeqCst) {
        let prefs = shell.preferences();
        let deadline = {
            lock(&shell.desk)
                .popups
                .next_deadline(Clock::system(), &prefs)
                .map(|due| due.at())
        };
        // Nothing from the engine: a popup's deadline came, or a pause, a setting or the
        // server changed; either way what may show now goes out.
        let batch = tokio::select! {
            event = events.recv() => {
                let Some(event) = event else { break };
                // Take everything already queued, so a burst rebuilds the menu once.
                let mut batch = vec![event];
                while let Ok(event) = events.try_recv() {
                    batch.push(event);
                }
                batch
            }
            () = until(deadline) => Vec::new(),
            () = shell.wake.notified() => Vec::new(),
        };
        if shell.quitting.load(Ordering::SeqCst) {
            break;
        }
        let program = shell.settings().on_event;
        for event in &batch {
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
        // No popup for a turn handed back in the terminal the person is looking at. A
        // terminal may take seconds to answer (`kitty @ ls`): asked here, not under the
        // popups' lock, which the tray's clicks take too.
        let focus = looking::gate(&batch, || focus::Desk::open(lock(&shell.terminals).clone()));
        for (session, _) in focus.iter().filter(|(_, f)| *f == Focus::Looking) {
            tracing::info!("LOOKING_AT session={}: no popup", session.id);
        }
        let turn = {
            let mut desk = lock(&shell.desk);
            desk.popups.set_focus(focus);
            desk.on_events(&batch, Clock::system(), &prefs)
        };
        // lf says the agent no longer waits: its open request was answered elsewhere.
        for key in &turn.withdrawn {
            tracing::info!("PERMISSION withdrawn session={key}: lf no longer says it waits");
        }
        // Popups first: the tray and the window can wait the few milliseconds they take.
        for effect in turn.effects {
            let _ = deliveries.send(effect);
        }
        // The pushes decide on their own task: nothing there holds up a popup.
        {
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
        shell.save_history();
        let now_held_back = shell.held_back();
        let held_back_changed = now_held_back != held_back;
        if held_back_changed {
            tracing::info!("HELD_BACK {}", now_held_back.as_deref().unwrap_or("no"));
            held_back = now_held_back;
        }
        let redraw = shell.redraw.swap(false, Ordering::SeqCst) || !turn.withdrawn.is_empty();
        if !batch.is_empty() || held_back_changed || redraw {
            refresh(&app, &shell);
        }
    }
}

/// Show and close popups in the order the policy decided, apart from [`follow`]: a slow or
/// missing notification server (D-Bus activation can wait 25 s) must not hold up the tray
/// and the window.
pub(crate) async fn deliver(shell: Arc<Shell>, mut effects: mpsc::UnboundedReceiver<Effect>) {
    while let Some(effect) = effects.recv().await {
        let Some(notifications) = shell.notifications.get() else {
            continue;
        };
        match effect {
            Effect::Show(notice) => {
                let notice = lock(&shell.desk).shown(notice);
                let delivery = notifications.show(&notice, shell.settings().sound).await;
                let marks = lock(&shell.desk).delivered(&notice, delivery);
                #[cfg(all(unix, not(target_os = "macos")))]
                if notice.key == NoticeKey::NoTray && delivery == Delivery::Shown {
                    crate::platform::tray_host::no_tray_told(&shell);
                }
                shell.save_history();
                if marks {
                    shell.redraw.store(true, Ordering::SeqCst);
                }
                if delivery != Delivery::Shown || marks {
                    shell.wake.notify_one();
                }
            }
            Effect::Close(key) => notifications.close(&key).await,
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
    let popups = shell.tray_popups(&sessions);
    if let Some(runner) = lock(&shell.push).as_ref() {
        runner.dismissed(&popups.dismissed);
    }
    tray::refresh(app, sessions, popups);
    window::publish(app, shell);
}

/// Close the app's popups (their buttons would do nothing once it is gone), then exit.
pub(crate) fn quit<R: Runtime>(app: &AppHandle<R>, shell: Arc<Shell>) {
    shell.quitting.store(true, Ordering::SeqCst);
    shell.wake.notify_one();
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
