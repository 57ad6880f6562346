//! The way out: Quit (the tray's, the window's), Ctrl-C and SIGTERM end the app the same
//! way, its popups taken down first.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use lf_tray_surface::desk::Input;
use tauri::{AppHandle, Runtime};

use crate::shell::Shell;

/// How long Quit waits for the notification server to take the popups down and for the
/// desk to keep what it was told before (two fsyncs): both take milliseconds, and a hung
/// server or disk must not keep the app from exiting.
const QUIT_GRACE: Duration = Duration::from_secs(1);

/// Close the app's popups (their buttons would do nothing once it is gone), then exit.
pub(crate) fn quit<R: Runtime>(app: &AppHandle<R>, shell: Arc<Shell>) {
    shell.desktop.quitting.store(true, Ordering::SeqCst);
    // The desk's task sees it at its next turn, and stops drawing what is going away.
    shell.tell(Input::Tick);
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        let popups = async {
            if let Some(notifications) = shell.desktop.notifications.get() {
                notifications.close_all().await;
            }
        };
        // Neither a notification server nor a disk that does not answer keeps the app alive.
        let _ = tokio::time::timeout(QUIT_GRACE, async {
            tokio::join!(popups, shell.desktop.kept.notified())
        })
        .await;
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
