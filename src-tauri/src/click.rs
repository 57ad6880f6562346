//! A person's click on the tray or a popup, handed on: a tray row goes where
//! [`go`] takes it, a popup's button to the desk, which says what it means.

use std::sync::Arc;

use lf_tray_surface::menu;
use lf_tray_surface::route::Click;
use tauri::{AppHandle, Manager, Runtime};

use crate::platform::go::go;
use crate::platform::page;
use crate::quit::quit;
use crate::shell::Shell;
use lf_tray_surface::desk::Input;
use lf_tray_surface::notice::{self, NoticeKey};

/// A choice in the tray's menu.
pub(crate) fn on_menu<R: Runtime>(app: &AppHandle<R>, item: menu::Item) {
    let shell = Arc::clone(&app.state::<Arc<Shell>>());
    match item {
        menu::Item::Session(key) => go(app, &shell, &key, Click::Row, None),
        menu::Item::Dismiss(key) => go(app, &shell, &key, Click::Popup(notice::DISMISS), None),
        menu::Item::More | menu::Item::Show => page::show(app, None),
        menu::Item::Pause(pause) => shell.pause(Some(pause)),
        menu::Item::Resume => shell.pause(None),
        menu::Item::Quit => quit(app, shell),
    }
}

/// A click on a session's tray row or popup: its terminal when lf lets it open here, else
/// the window at that session. lf refuses Open for a session attached elsewhere (generation
/// D: "use Move here"), and a terminal that only prints that refusal and closes focuses
/// nothing; the window shows lf's reason and its Move here button.
///
/// `token`: the notification server's activation token for the click, if any.
pub(crate) fn on_notification<R: Runtime>(
    app: &AppHandle<R>,
    key: NoticeKey,
    action: &str,
    token: Option<String>,
) {
    // What the button means is the desk's to say: an answer to the agent, the window, or
    // a click that comes back to [`go`] to be carried out.
    app.state::<Arc<Shell>>()
        .tell(Input::popup(key, action, token));
}
