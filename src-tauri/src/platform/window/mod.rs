//! The review window's side of the app: told of every change, asked for the board, and what
//! it may call, in [`commands`] and [`settings`] (the only IPC there is); what it draws is
//! worded in `lf_tray_surface::window`. Its page is built, shown and closed in `page`.

pub mod commands;
#[cfg(test)]
mod fixture;
pub mod settings;

use tauri::{AppHandle, Manager, Runtime, WindowEvent};

use std::sync::Mutex;

use lf_tray_core::SessionRecord;
use lf_tray_surface::rows::Rows;
use lf_tray_surface::window::{recent, Board, Reach, ToWindow};

use crate::platform::page::{self, size, tell, At, LABEL};
use crate::shell::Shell;

/// The window's commands and its page's life, as the real app and the command tests share
/// them. Closing the window destroys it (and its web engine); the app stays in the tray.
/// The [`Shell`] is managed by the caller.
pub fn handled<R: Runtime>(builder: tauri::Builder<R>) -> tauri::Builder<R> {
    builder
        .manage(size::Seen::default())
        .manage(At::default())
        .manage(Given::default())
        .invoke_handler(tauri::generate_handler![
            commands::sessions,
            commands::act,
            settings::settings,
            settings::save_settings,
            commands::dismiss,
            commands::answer_request,
            commands::close_window,
            commands::open_log,
            commands::quit
        ])
        .on_window_event(|window, event| match event {
            WindowEvent::Destroyed => {
                tracing::info!("WINDOW closed");
                // Its rows go with it: the next page is given a whole board.
                crate::shell::lock(&window.state::<Given>().0).forget();
                page::closed(window.app_handle());
            }
            WindowEvent::Resized(size) => size::resized(window, *size),
            _ => {}
        })
}

/// The rows the window's page was given, to give it only what changed next time.
#[derive(Default)]
pub struct Given(pub Mutex<Rows>);

/// Everything the window shows now, for a page that holds board `held` (`None`: none): what
/// changed since, or all of it (no session to scroll to: see `commands::sessions`).
pub fn board(shell: &Shell, given: &Given, held: Option<u64>) -> Board {
    let desk = shell.view();
    let sessions = shell.engine.sessions();
    let reach = if !shell.settings().focus_existing {
        Reach::Off
    } else if crate::platform::focus::can_focus() {
        Reach::Button
    } else {
        Reach::Say
    };
    let terminals = shell.desktop.terminals.now();
    let runs_in = |r: &SessionRecord| crate::platform::focus::where_it_runs(r, &terminals);
    let rows = crate::shell::lock(&given.0).rows(held, &desk, &sessions, reach, runs_in);
    let (tray, tray_fix) = shell.tray_note().unzip();
    Board {
        number: rows.number,
        sessions: rows.rows,
        order: rows.order,
        status: shell.engine.status(),
        quiet: desk.held_back.clone(),
        recent: recent(&desk.recent),
        warnings: shell.warnings(),
        tray,
        tray_fix,
        lf_missing: shell.engine.lf_bin().is_none(),
        focus: None,
    }
}

/// Tell the window, if there is one, that its board changed; it asks for it (`sessions`).
pub fn publish<R: Runtime>(app: &AppHandle<R>, _shell: &Shell) {
    if app.get_webview_window(LABEL).is_none() {
        return;
    }
    tell(app, ToWindow::Changed);
}
