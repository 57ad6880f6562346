//! The commands the window may call. It never names a command line: it asks for the list,
//! and for an action on a session that is in the engine's current list. The core's
//! `session::plan` decides whether that action exists and is available, exactly as the
//! buttons showed it.

use std::sync::Arc;

use lf_tray_core::lf::{plan, Step};
use lf_tray_core::SessionKey;
use lf_tray_surface::buttons::Action;
use lf_tray_surface::route::Click;
use lf_tray_surface::window::Board;
use tauri::{AppHandle, Manager, Runtime, State};

use super::{board, publish};
use crate::platform::launch;
use crate::platform::page::LABEL;
use crate::shell::Shell;

// Off the main thread (`async`): at 10 000 sessions a whole board takes a while to make and
// send, and the main thread runs the window and the tray. `held`: the number of the board
// the page holds, if any; it is given what changed since (see `Rows`).
#[tauri::command(async)]
pub fn sessions(
    shell: State<'_, Arc<Shell>>,
    at: State<'_, crate::platform::page::At>,
    given: State<'_, super::Given>,
    held: Option<u64>,
) -> Board {
    Board {
        focus: crate::shell::lock(&at.0).take(),
        ..board(&shell, &given, held)
    }
}

/// Hide the window the way its close button does (which destroys it, see `show`).
#[tauri::command]
pub fn close_window<R: Runtime>(app: AppHandle<R>) {
    if let Some(window) = app.get_webview_window(LABEL) {
        if let Err(e) = window.close() {
            tracing::warn!("could not close the window: {e}");
        }
    }
}

/// Run one of a session's actions. Returns lf's (or the launcher's) message for the window
/// to show, or the reason it failed, verbatim.
#[tauri::command]
pub async fn act<R: Runtime>(
    app: AppHandle<R>,
    shell: State<'_, Arc<Shell>>,
    id: String,
    action: Action,
    text: Option<String>,
) -> Result<String, String> {
    // `id` is the session's key token (`SessionView::key`): ids are unique per machine.
    let record = SessionKey::parse(&id).and_then(|key| shell.engine.session(&key));
    let record = record.ok_or_else(|| {
        "This session is no longer listed; it may have just been resolved.".to_string()
    })?;
    let kind = match action {
        Action::GoToTerminal => {
            crate::platform::go::go(&app, &shell, &record.key(), Click::GoToTerminal, None);
            return Ok(String::new());
        }
        Action::Lf(kind) => kind,
    };
    match plan(&record, &kind, text.as_deref())? {
        Step::Open { replace } => launch::open(&app, &shell, &record, replace, None)
            .map(|terminal| format!("Opened in {terminal}.")),
        Step::Lf(action) => {
            let result = shell
                .engine
                .act_on(record.machine.as_deref(), action)
                .await
                .map_err(|e| e.to_string());
            publish(&app, &shell);
            result.map(|out| out.trim().to_string())
        }
    }
}

/// Answer an agent's open request from the window's card, as the popup's buttons do: the
/// choice's id the card was given (`SessionView::choices`), with what the person filled in
/// (a question's answers, options by number, and their own words; the plan as edited, or
/// what to change). The first answer wins; one that does not answer what was asked is
/// refused with why, and the request stays open.
#[tauri::command]
pub async fn answer_request(
    shell: State<'_, Arc<Shell>>,
    id: String,
    choice: String,
    given: lf_tray_surface::answer::Given,
) -> Result<(), String> {
    use lf_tray_surface::answer::{Answer, From};
    let (told, sent) = tokio::sync::oneshot::channel();
    let card = lf_tray_surface::desk::Input::Answer(Answer {
        request: id,
        choice,
        given,
        from: From::Window,
    });
    shell.send(crate::shell::ToDesk::Card(card, told));
    match sent.await {
        Ok(sent) => sent.map(|_| ()).map_err(|why| why.to_string()),
        Err(_) => Err("Loopflow Tray is quitting.".into()),
    }
}

/// Dismiss a session's popups and reminders until its next transition; lf is not told.
#[tauri::command]
pub fn dismiss(shell: State<'_, Arc<Shell>>, id: String) -> Result<(), String> {
    // `id` is the session's key token (`SessionView::key`), as for `act`.
    let record = SessionKey::parse(&id)
        .and_then(|key| shell.engine.session(&key))
        .ok_or("That session is no longer listed.")?;
    shell.dismiss(&record);
    Ok(())
}

/// End the app, as the tray's Quit does: where no tray shows, the window is the only
/// surface that can.
#[tauri::command]
pub fn quit<R: Runtime>(app: AppHandle<R>, shell: State<'_, Arc<Shell>>) {
    tracing::info!("QUIT from the window");
    crate::quit::quit(&app, Arc::clone(&shell));
}

/// Open the log with the desktop's handler for text files.
#[tauri::command]
pub fn open_log() -> Result<(), String> {
    let path = crate::logfile::path().ok_or("There is no log file.")?;
    #[cfg(target_os = "macos")]
    let opener = "open";
    #[cfg(windows)]
    let opener = "explorer";
    #[cfg(not(any(target_os = "macos", windows)))]
    let opener = "xdg-open";
    let mut child = std::process::Command::new(opener)
        .arg(path)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("Could not run {opener} to open {}: {e}", path.display()))?;
    tracing::info!("LOG opened with {opener}");
    // Reaped in the background; the opener returns once the viewer runs.
    std::thread::spawn(move || child.wait());
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::super::fixture::{fixture, invoke};

    #[test]
    fn the_window_gets_the_list_with_groups_and_buttons() {
        let f = fixture();
        let board = invoke(&f.webview, "sessions", json!({})).unwrap();
        let sessions = board["sessions"].as_array().unwrap();
        assert_eq!(sessions.len(), 1);
        let ask = &sessions[0];
        assert_eq!(ask["id"], f.ask.as_str());
        assert_eq!(ask["group"], "waiting");
        assert_eq!(ask["title"], "Which target first?");
        assert_eq!(ask["group_title"], "Waiting for you");
        assert_eq!(ask["needs_you"], true);
        // The prompt is only its title: nothing more to show as the question.
        assert_eq!(ask["question"], Value::Null);
        let buttons: Vec<_> = ask["buttons"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                (
                    b["action"].as_str().unwrap(),
                    b["enabled"].as_bool().unwrap(),
                )
            })
            .collect();
        assert_eq!(buttons, [("open", true), ("complete", false)]);
        assert!(board["status"].is_string());
    }

    /// The page names the board it holds and is given what changed since; a page holding
    /// any other (reloaded, opened again, its answer lost) is given the whole board.
    #[test]
    fn the_page_is_given_what_changed_since_the_board_it_holds() {
        let f = fixture();
        let whole = invoke(&f.webview, "sessions", json!({})).unwrap();
        assert_eq!(whole["order"], Value::Null);
        assert_eq!(whole["sessions"].as_array().unwrap().len(), 1);
        let held = whole["number"].as_u64().unwrap();
        let same = invoke(&f.webview, "sessions", json!({ "held": held })).unwrap();
        assert_eq!(same["sessions"], json!([]), "nothing changed");
        assert_eq!(
            same["order"],
            json!([[0, 1]]),
            "the row it holds, where it was"
        );
        assert_eq!(same["status"], whole["status"]);
        let stale = invoke(&f.webview, "sessions", json!({ "held": held })).unwrap();
        assert_eq!(stale["sessions"].as_array().unwrap().len(), 1);
        assert_eq!(stale["order"], Value::Null);
    }

    #[test]
    fn actions_are_refused_unless_the_session_offers_them() {
        let f = fixture();
        let act = |id: &str, action: &str| {
            invoke(
                &f.webview,
                "act",
                json!({"id": id, "action": action, "text": null}),
            )
        };
        assert_eq!(
            act("ask_not_listed", "complete"),
            Err(json!(
                "This session is no longer listed; it may have just been resolved."
            ))
        );
        assert_eq!(
            act(&f.ask, "serve-ask"),
            Err(json!("“serve-ask” is not an action of this session."))
        );
        assert_eq!(
            act(&f.ask, "approve"),
            Err(json!("“approve” is not an action of this session."))
        );
        // Complete exists but waits for the agent's ready summary.
        assert_eq!(
            act(&f.ask, "complete"),
            Err(json!("The agent has not marked this session ready yet."))
        );
    }

    #[test]
    fn commands_outside_the_capability_do_not_exist_for_the_window() {
        let f = fixture();
        let refused = invoke(&f.webview, "plugin:window|close", json!({}));
        // Refused by the capability, not for some other reason (a missing plugin, a bad
        // request): the error is the ACL's own.
        let message = refused
            .expect_err("the window may not close itself")
            .to_string();
        assert!(message.contains("not allowed"), "{message}");
        // The app's own command with the same request goes through.
        assert!(invoke(&f.webview, "sessions", json!({})).is_ok());
    }
}
