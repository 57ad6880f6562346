//! Opening a session in the user's terminal, from the tray, a notification or the window.
//! When that fails, the person is told twice (a notification, and a notice in the window)
//! and given the command to run themselves.

use std::sync::Arc;

use lf_tray_core::terminal::{self, Env, Launch};
use lf_tray_core::SessionRecord;
use serde::Serialize;
use tauri::{AppHandle, Emitter, Runtime};

use crate::notification;
use crate::steplog::step;
use crate::{window, Shell};

/// The window's notice when a terminal could not be opened.
#[derive(Debug, Clone, Serialize)]
struct Failed {
    text: String,
    command: String,
}

/// Open `record` in a new terminal window (`replace`: Move here). Returns the terminal's
/// name, or the message the person was shown.
pub fn open<R: Runtime>(
    app: &AppHandle<R>,
    shell: &Arc<Shell>,
    record: &SessionRecord,
    replace: bool,
) -> Result<String, String> {
    let mut launch = Launch::for_session(record);
    if replace {
        launch = launch.replace();
    }
    let choice = shell.settings().terminal_choice();
    match terminal::open(&choice, &launch, &Env::from_process()) {
        Ok(opened) => {
            step(format!(
                "LAUNCH terminal={} session={}",
                opened.terminal, record.id
            ));
            Ok(opened.terminal)
        }
        Err(e) => {
            let command = match &e {
                terminal::TerminalError::NotFound { command, .. } => command.clone(),
                _ => terminal::copyable_command(&launch),
            };
            let (summary, text) = match &e {
                terminal::TerminalError::NotFound { .. } => (
                    "No terminal found",
                    "No terminal was found to open this session. Run this in a terminal, \
                     or pick one in Settings:"
                        .to_string(),
                ),
                other => (
                    "Could not open a terminal",
                    format!("{other}. Run this in a terminal instead:"),
                ),
            };
            eprintln!("lf-tray: {e}");
            let _ = app.emit_to(
                window::LABEL,
                "launch-failed",
                Failed {
                    text: text.clone(),
                    command: command.clone(),
                },
            );
            let notice = notification::launch_failed(record, summary, &command);
            let shell = Arc::clone(shell);
            tauri::async_runtime::spawn(async move {
                if let Some(notifications) = shell.notifications.get() {
                    notifications.show(&notice, false).await;
                }
            });
            Err(format!("{text}\n{command}"))
        }
    }
}
