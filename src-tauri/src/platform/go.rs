//! Where a person's click goes: a tray row, a popup's button or body, the window's Go to
//! terminal. The route is decided in the Tauri-free crate ([`destination`]); this carries
//! it out — a terminal opened, one brought back, the window shown, a session dismissed.

use std::sync::Arc;

use lf_tray_core::{SessionKey, SessionRecord};
use lf_tray_surface::desk::Input;
use lf_tray_surface::notice;
use lf_tray_surface::route::{destination, Click, Destination};
use lf_tray_surface::window::ToWindow;
use tauri::{AppHandle, Runtime};

use crate::platform::{focus, launch, page};
use crate::shell::Shell;

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
        Destination::Window(focus) => page::show(app, focus.as_ref()),
        Destination::Dismiss => {
            if let Some(record) = &record {
                shell.dismiss(record);
            }
        }
        Destination::Nothing => {}
    }
}
