//! Where a person's click goes: a tray row, a popup's button or body. The route is decided
//! in the Tauri-free crate ([`destination`]); this carries it out — a terminal opened, one
//! brought back, the window shown, a session dismissed.

use std::sync::Arc;

use lf_tray_core::{SessionKey, SessionRecord};
use lf_tray_surface::menu;
use lf_tray_surface::route::{destination, Click, Destination};
use lf_tray_surface::window::ToWindow;
use tauri::{AppHandle, Manager, Runtime};

use crate::platform::{focus, launch, page, window};
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
        menu::Item::More | menu::Item::Show => window::show(app, None),
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
    // a click that comes back here ([`go`]) to be carried out.
    app.state::<Arc<Shell>>()
        .tell(Input::popup(key, action, token));
}

/// Take the person where their click on the session `key` goes ([`destination`]).
pub(crate) fn go<R: Runtime>(
    app: &AppHandle<R>,
    shell: &Arc<Shell>,
    key: &SessionKey,
    click: Click<'_>,
    token: Option<String>,
) {
    let record = shell.engine.session(key);
    let to = destination(key, record.as_ref(), click);
    arrive(app, shell, key, record, to, token);
}

/// Carry out a click's [`Destination`]. Go to terminal runs on a thread of its own and,
/// when it cannot get there, arrives at its fallback from there.
fn arrive<R: Runtime>(
    app: &AppHandle<R>,
    shell: &Arc<Shell>,
    key: &SessionKey,
    record: Option<SessionRecord>,
    to: Destination,
    token: Option<String>,
) {
    match to {
        Destination::Terminal { replace } => {
            if let Some(record) = &record {
                let _ = launch::open(app, shell, record, replace, token.as_deref());
            }
        }
        Destination::Existing { otherwise } => {
            let Some(record) = record.filter(|_| shell.settings().focus_existing) else {
                return arrive(
                    app,
                    shell,
                    key,
                    shell.engine.session(key),
                    *otherwise,
                    token,
                );
            };
            // Reading /proc and waiting for the window manager take a moment: not on the
            // thread that runs the tray and the window.
            let (app, shell, key) = (app.clone(), Arc::clone(shell), key.clone());
            std::thread::spawn(move || {
                let terminals = shell.desktop.terminals.now();
                match focus::go(&record, &terminals) {
                    focus::Went::There(took) => {
                        tracing::info!("FOCUSED session={} in {} ms", record.id, took.as_millis());
                        shell.tell(Input::ClickReached);
                    }
                    focus::Went::Not(unreached) => {
                        let why = unreached.sentence();
                        tracing::info!("NOT_FOCUSED session={}: {why}", record.id);
                        // lf's own way there (Open here, Move here), with the reason: the
                        // person asked for the terminal the session is in, so a second one
                        // (what Open did before D) is theirs to choose in the window.
                        let fallback = match *otherwise {
                            Destination::Terminal { .. } => Destination::Window(Some(key.clone())),
                            other => other,
                        };
                        let notice = notice::unreached(&record, &why);
                        arrive(&app, &shell, &key, Some(record), fallback, token);
                        let text = why;
                        page::tell(
                            &app,
                            ToWindow::Unreached {
                                key: key.token(),
                                text,
                            },
                        );
                        shell.tell(Input::ClickFailed(notice));
                    }
                }
            });
        }
        Destination::Window(focus) => window::show(app, focus.as_ref()),
        Destination::Dismiss => {
            if let Some(record) = &record {
                shell.dismiss(record);
            }
        }
        Destination::Nothing => {}
    }
}
