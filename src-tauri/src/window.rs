//! The review window: the commands it may call (the only IPC there is) and the events it
//! listens to.
//!
//! The window never names a command line: it asks for the list, and for an action on a
//! session id that is in the engine's current list. The core's `actions::plan` decides
//! whether that action exists and is available, exactly as the buttons showed it.

use std::path::PathBuf;
use std::sync::Arc;

use lf_tray_core::history;
use lf_tray_core::session::{plan, Step};
use lf_tray_core::{ActionKind, Presents, SessionKey, SessionRecord};
use serde::Serialize;
use tauri::{AppHandle, Manager, Runtime, State};

use crate::actions;
use crate::board;
use crate::notification::Popups;
use crate::shell::Shell;
use crate::{autostart, launch};
use lf_tray_surface::route::Click;
use lf_tray_surface::settings::{self, Settings};

use crate::page::RecentView;
pub use crate::page::{tell, Board, SessionView, ToWindow, LABEL};

/// How the window offers to go back to a session's terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reach {
    /// The setting is off: lf's buttons only.
    Off,
    /// A Go to terminal button, first, for every attached session.
    Button,
    /// This desktop focuses nothing: say where the session runs.
    Say,
}

/// The window's action kind for Go to terminal (not one of lf's).
pub const GO_TO_TERMINAL: &str = "go_to_terminal";

fn go_to_button() -> actions::Button {
    actions::Button {
        kind: ActionKind::Other(GO_TO_TERMINAL.into()),
        label: "Go to terminal".into(),
        help: Some("Bring back the terminal where this session already runs".into()),
        enabled: true,
        unavailable_reason: None,
        text_hint: None,
    }
}

/// The sessions as the window draws them, in the board's order.
fn views(
    popups: &Popups,
    sessions: &[SessionRecord],
    reach: Reach,
    runs_in: impl Fn(&SessionRecord) -> Option<String>,
    permission: impl Fn(&str) -> Option<String>,
) -> Vec<SessionView> {
    board::ordered(sessions, |r| popups.waiting_since(&history::key(r)))
        .into_iter()
        .map(|(group, record)| {
            let key = history::key(record);
            let mut buttons = actions::buttons(record);
            let shown = record.in_terminal() && record.machine.is_none();
            if shown && reach == Reach::Button {
                buttons.insert(0, go_to_button());
            }
            let runs_in = if record.headless() {
                // The page says "It runs …." around it.
                Some("headless: no terminal shows it".to_string())
            } else if let Some(machine) = record.machine.as_deref().filter(|_| record.in_terminal())
            {
                // Its terminal is on that machine: nothing here can bring it back.
                Some(format!("in a terminal on {machine}"))
            } else {
                (shown && reach == Reach::Say)
                    .then(|| runs_in(record))
                    .flatten()
            };
            SessionView {
                runs_in,
                buttons,
                question: board::question(record),
                repo_name: (record.presents() == Presents::Waits)
                    .then(|| record.repo())
                    .flatten(),
                waiting_since: popups.waiting_since(&key),
                dismissed: popups.dismissed(&key),
                group,
                group_title: group.title(),
                kind_name: board::kind_name(record.kind.as_ref()),
                reason_phrase: record.reason.as_ref().map(|r| r.phrase()),
                permission: permission(&key),
                key: key.clone(),
                record: record.clone(),
            }
        })
        .collect()
}

pub fn board(shell: &Shell) -> Board {
    let quiet = shell.held_back();
    let sessions = shell.engine.sessions();
    let (sessions, recent) = {
        let popups = crate::lock(&shell.popups);
        let reach = if !shell.settings().focus_existing {
            Reach::Off
        } else if crate::focus::can_focus() {
            Reach::Button
        } else {
            Reach::Say
        };
        let terminals = crate::lock(&shell.terminals).clone();
        let runs_in = |r: &SessionRecord| crate::focus::where_it_runs(r, &terminals);
        #[cfg(unix)]
        let permission = |key: &str| {
            shell.requests.request(key).map(|request| {
                let runs = lf_tray_surface::notice::runs(&request);
                lf_tray_surface::notice::visible(&format!("{}: {runs}", request.tool_name))
            })
        };
        #[cfg(not(unix))]
        let permission = |_: &str| None;
        (
            views(&popups, &sessions, reach, runs_in, permission),
            popups
                .history()
                .recent()
                .into_iter()
                .map(|entry| RecentView {
                    words: board::recent_words(&entry.what).to_string(),
                    entry,
                })
                .collect(),
        )
    };
    Board {
        sessions,
        status: shell.engine.status(),
        quiet,
        recent,
        warnings: shell.warnings(),
        tray: shell.tray_note(),
        focus: None,
    }
}

/// Send the window the current board, if there is a window.
pub fn publish<R: Runtime>(app: &AppHandle<R>, shell: &Shell) {
    if app.get_webview_window(LABEL).is_none() {
        return;
    }
    tell(app, ToWindow::Board(board(shell)));
}

/// Show the window, optionally scrolled to one session. The window and its web engine
/// exist only while it is open: built here on the first show after a close, and destroyed
/// when the person closes it (WebKit's processes take ~150 MB that a tray app has no
/// business keeping while it sits in the tray).
pub fn show<R: Runtime>(app: &AppHandle<R>, focus: Option<&SessionKey>) {
    let focus = focus.map(SessionKey::token);
    let focus = focus.as_deref();
    let window = match app.get_webview_window(LABEL) {
        Some(window) => {
            if let Some(id) = focus {
                tell(app, ToWindow::Focus(id.to_string()));
            }
            window
        }
        None => {
            if let Some(shell) = app.try_state::<Arc<Shell>>() {
                *crate::lock(&shell.focus) = focus.map(str::to_string);
            }
            match build(app) {
                Ok(window) => window,
                Err(e) => return tracing::warn!("could not open the window: {e}"),
            }
        }
    };
    let shown = window
        .show()
        .and_then(|()| window.unminimize())
        .and_then(|()| window.set_focus());
    if let Err(e) = shown {
        tracing::warn!("could not show the window: {e}");
    }
    tracing::info!("WINDOW shown");
}

/// How long after the window closed its leftovers are given back: long enough for WebKit to
/// have ended its web process and freed the page, and for a person who closed the window by
/// mistake to have opened it again (then nothing is done).
const SETTLE: std::time::Duration = std::time::Duration::from_secs(5);

/// The window was closed: once things settled with no window open, give back what the web
/// engine left behind, so the tray sits in as little memory as before the first show.
pub fn closed<R: Runtime>(app: &AppHandle<R>) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        tokio::time::sleep(SETTLE).await;
        if app.get_webview_window(LABEL).is_none() {
            leftovers::release();
        }
    });
}

#[cfg(target_os = "linux")]
mod leftovers {
    /// WebKitGTK keeps its network process for as long as its web context lives, and
    /// tauri keeps the context for the app's lifetime on Linux (tauri#14626, so that a
    /// second window reuses one process instead of leaking another). With no window, the
    /// process serves nothing but holds ~18 MB; WebKit starts a new one for the next window.
    /// glibc keeps the freed page memory in its arenas until asked to return it.
    pub fn release() {
        let ended = end_network_process();
        // SAFETY: malloc_trim only walks glibc's own arenas under their locks.
        let trimmed = unsafe { libc::malloc_trim(0) } == 1;
        tracing::info!(
            "WINDOW leftovers released: network process ended={ended} trimmed={trimmed}"
        );
    }

    fn end_network_process() -> bool {
        let me = std::process::id();
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{me}/task")) else {
            return false;
        };
        let mut ended = false;
        for task in tasks.flatten() {
            let children =
                std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            for pid in children
                .split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok())
            {
                let name = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
                // The kernel cuts names to 15 bytes: "WebKitNetworkProcess".
                if name.trim_end() == "WebKitNetworkPr" {
                    // SAFETY: a signal to our own child, found by its name just now.
                    ended |= unsafe { libc::kill(pid, libc::SIGTERM) } == 0;
                }
            }
        }
        ended
    }
}

#[cfg(not(target_os = "linux"))]
mod leftovers {
    /// WebKit on macOS ends its helpers itself; WebView2 ends with its last webview.
    pub fn release() {}
}

/// The window as `tauri.conf.json` describes it (`create: false` there: not at start).
fn build<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<tauri::WebviewWindow<R>> {
    let config = app
        .config()
        .app
        .windows
        .iter()
        .find(|w| w.label == LABEL)
        .cloned()
        .ok_or_else(|| tauri::Error::WindowNotFound)?;
    let window = tauri::WebviewWindowBuilder::from_config(app, &config)?.build()?;
    tracing::info!("WINDOW built");
    Ok(window)
}

#[tauri::command]
pub fn sessions(shell: State<'_, Arc<Shell>>) -> Board {
    Board {
        focus: crate::lock(&shell.focus).take(),
        ..board(&shell)
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
    action: ActionKind,
    text: Option<String>,
) -> Result<String, String> {
    // `id` is the session's key token (`SessionView::key`): ids are unique per machine.
    let record = SessionKey::parse(&id).and_then(|key| shell.engine.session(&key));
    let record = record.ok_or_else(|| {
        "This session is no longer listed; it may have just been resolved.".to_string()
    })?;
    if action.as_str() == GO_TO_TERMINAL {
        crate::click::go(&app, &shell, &record.key(), Click::GoToTerminal, None);
        return Ok(String::new());
    }
    match plan(&record, &action, text.as_deref())? {
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

/// Allow (`allow`) or Deny an agent's open permission request from the window, as the
/// popup's buttons do; the first answer wins.
#[tauri::command]
pub fn answer_permission<R: Runtime>(
    app: AppHandle<R>,
    shell: State<'_, Arc<Shell>>,
    id: String,
    allow: bool,
) -> Result<(), String> {
    #[cfg(unix)]
    {
        use lf_tray_core::permission::Answer;
        let answer = if allow { Answer::Allow } else { Answer::Deny };
        let taken = shell.requests.answer(&id, answer);
        tracing::info!(
            "PERMISSION {} from the window session={id}: {}",
            answer.word(),
            if taken { "sent" } else { "no request open" }
        );
        crate::refresh(&app, &shell);
        taken
            .then_some(())
            .ok_or_else(|| "The agent no longer waits for this answer.".to_string())
    }
    #[cfg(not(unix))]
    {
        let _ = (app, shell, id, allow);
        Err("Answering from the tray needs a Unix desktop.".into())
    }
}

/// The settings panel's content.
#[derive(Debug, Serialize)]
pub struct SettingsView {
    pub settings: Settings,
    pub autostart: bool,
    /// Where they are saved, to show the person.
    pub path: Option<PathBuf>,
    /// Why the saved file could not be used, if it could not.
    pub warning: Option<String>,
    /// The app's log file, to show and open.
    pub log: Option<PathBuf>,
    /// The push token is never sent back (`settings.push_token` is empty): only whether
    /// one is set, and its last characters when it is long enough to keep the rest secret.
    pub push_token_hint: Option<String>,
    /// How away is told on this desktop, and the last push failure, while pushes are on.
    pub push_status: Option<String>,
}

/// `set, ends …f3a9` for a long token; `set` for a short one, which its end would give away.
fn token_hint(token: &str) -> String {
    let chars: Vec<char> = token.chars().collect();
    if chars.len() >= 16 {
        let end: String = chars[chars.len() - 4..].iter().collect();
        format!("set, ends …{end}")
    } else {
        "set".into()
    }
}

fn settings_view(shell: &Shell) -> SettingsView {
    let mut settings = shell.settings();
    let push_token_hint = settings.push_token.take().map(|t| token_hint(&t.0));
    SettingsView {
        push_token_hint,
        push_status: shell.push_status(),
        settings,
        autostart: autostart::enabled(),
        path: shell.settings_path.clone(),
        warning: shell.settings_warning(),
        log: crate::logfile::path().map(PathBuf::from),
    }
}

/// Open the log with the desktop's handler for text files.
/// Dismiss a session's popups and reminders until its next transition; lf is not told.
#[tauri::command]
pub fn dismiss<R: Runtime>(
    app: AppHandle<R>,
    shell: State<'_, Arc<Shell>>,
    id: String,
) -> Result<(), String> {
    // `id` is the session's key token (`SessionView::key`), as for `act`.
    let record = SessionKey::parse(&id)
        .and_then(|key| shell.engine.session(&key))
        .ok_or("That session is no longer listed.")?;
    shell.dismiss(&record);
    crate::refresh(&app, &shell);
    Ok(())
}

/// End the app, as the tray's Quit does: where no tray shows, the window is the only
/// surface that can.
#[tauri::command]
pub fn quit<R: Runtime>(app: AppHandle<R>, shell: State<'_, Arc<Shell>>) {
    tracing::info!("QUIT from the window");
    crate::quit(&app, Arc::clone(&shell));
}

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

#[tauri::command]
pub fn settings(shell: State<'_, Arc<Shell>>) -> SettingsView {
    settings_view(&shell)
}

#[tauri::command]
pub fn save_settings(
    shell: State<'_, Arc<Shell>>,
    settings: Settings,
    autostart: bool,
) -> Result<SettingsView, String> {
    let mut settings = settings;
    // The panel never had the token: none sent keeps it, an empty one forgets it.
    match &settings.push_token {
        None => settings.push_token = shell.settings().push_token,
        Some(token) if token.0.trim().is_empty() => settings.push_token = None,
        Some(_) => {}
    }
    let settings = settings.normalized();
    settings.check()?;
    // Claude Code's file first: refused (it does not parse), the switch stays as it was
    // and the panel says why.
    #[cfg(unix)]
    if settings.answer_from_popup != shell.settings().answer_from_popup {
        crate::permission::claude_hook(settings.answer_from_popup)?;
    }
    if let Some(path) = &shell.settings_path {
        settings::save(path, &settings)
            .map_err(|e| format!("Could not save {}: {e}", path.display()))?;
    }
    shell.set_settings(settings);
    if autostart != autostart::enabled() {
        autostart::set(autostart).map_err(|e| format!("Could not change autostart: {e}"))?;
    }
    Ok(settings_view(&shell))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use lf_sim::{AskSpec, SimHome};
    use lf_tray_core::engine::{Config, Engine};
    use lf_tray_core::Event;
    use serde_json::{json, Value};
    use tauri::ipc::{CallbackFn, InvokeBody};
    use tauri::test::{get_ipc_response, mock_builder, MockRuntime, INVOKE_KEY};
    use tauri::webview::{InvokeRequest, WebviewWindow, WebviewWindowBuilder};

    use super::*;

    struct Fixture {
        _home: tempfile::TempDir,
        _app: tauri::App<MockRuntime>,
        webview: WebviewWindow<MockRuntime>,
        ask: String,
    }

    /// The real app's handler and capability, on the mock runtime, over a simulated home
    /// with one waiting Ask and no `lf`.
    fn fixture() -> Fixture {
        let home = tempfile::tempdir().unwrap();
        let sim = SimHome::new(home.path());
        let ask = sim
            .ask(&AskSpec::new("Which target first?", home.path()))
            .unwrap();
        let mut config = Config::from_env(Some(home.path().to_path_buf()), None);
        config.lf_bin = None;
        let (engine, mut events) = tauri::async_runtime::block_on(async {
            let (engine, mut events) = Engine::start(config);
            // Once the snapshot is out, the Ask is listed.
            let snapshot = tokio::time::timeout(Duration::from_secs(10), async {
                while let Some(event) = events.recv().await {
                    if matches!(event, Event::Snapshot { .. }) {
                        return true;
                    }
                }
                false
            });
            assert_eq!(snapshot.await, Ok(true), "no snapshot from the engine");
            (engine, events)
        });
        // Keep the engine's channel open for the test's life without reading it.
        std::thread::spawn(move || while events.blocking_recv().is_some() {});
        assert!(engine.session(&ask.as_str().into()).is_some());
        let shell = Arc::new(Shell::new(engine, None, settings::Loaded::default()));
        let app = crate::builder(mock_builder())
            .manage(shell)
            .build(tauri::generate_context!("../tauri.conf.json"))
            .unwrap();
        let webview = WebviewWindowBuilder::new(&app, LABEL, Default::default())
            .build()
            .unwrap();
        Fixture {
            _home: home,
            _app: app,
            webview,
            ask,
        }
    }

    fn invoke(
        webview: &WebviewWindow<MockRuntime>,
        cmd: &str,
        args: Value,
    ) -> Result<Value, Value> {
        get_ipc_response(
            webview,
            InvokeRequest {
                cmd: cmd.into(),
                callback: CallbackFn(0),
                error: CallbackFn(1),
                url: "tauri://localhost".parse().unwrap(),
                body: InvokeBody::Json(args),
                headers: Default::default(),
                invoke_key: INVOKE_KEY.to_string(),
            },
        )
        .map(|body| body.deserialize::<Value>().unwrap())
    }

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
        assert_eq!(ask["prompt"], "Which target first?");
        // The prompt is only its title: nothing more to show as the question.
        assert_eq!(ask["question"], Value::Null);
        let buttons: Vec<_> = ask["buttons"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| (b["kind"].as_str().unwrap(), b["enabled"].as_bool().unwrap()))
            .collect();
        assert_eq!(buttons, [("open", true), ("complete", false)]);
        assert!(board["status"].is_string());
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

    /// `(kind, label, enabled, reason)` of each button, as the window draws them.
    fn drawn_buttons(view: &Value) -> Vec<(String, String, bool, Option<String>)> {
        view["buttons"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                (
                    b["kind"].as_str().unwrap().to_string(),
                    b["label"].as_str().unwrap().to_string(),
                    b["enabled"].as_bool().unwrap(),
                    b["unavailable_reason"].as_str().map(str::to_string),
                )
            })
            .collect()
    }

    #[test]
    fn todays_agents_say_where_they_run_and_what_move_here_does_there() {
        use lf_tray_core::{Runs, State};
        use lf_tray_surface::fixtures::{blocked, record_e, with_agent};
        let e = |id| record_e(id, State::Active, true, blocked("question", "Which?", ""));
        let headless = with_agent(e("S-1"), Runs::Headless);
        let native = with_agent(e("S-2"), Runs::Terminal);
        let move_help = |v: &SessionView| {
            v.buttons
                .iter()
                .find(|b| b.kind.as_str() == "move_here")
                .and_then(|b| b.help.clone())
                .unwrap_or_default()
        };
        let views = super::views(
            &Popups::default(),
            &[headless, native],
            Reach::Button,
            |_| None,
            |_| None,
        );
        let (h, n) = if views[0].record.headless() {
            (&views[0], &views[1])
        } else {
            (&views[1], &views[0])
        };
        assert_eq!(h.runs_in.as_deref(), Some("headless: no terminal shows it"));
        assert!(h.buttons.iter().all(|b| b.kind.as_str() != GO_TO_TERMINAL));
        assert!(
            move_help(h).contains("second conversation"),
            "{}",
            move_help(h)
        );
        // The native one is reached in its terminal, and Move here warns what it stops.
        assert_eq!(n.buttons[0].kind.as_str(), GO_TO_TERMINAL);
        assert!(
            move_help(n).contains("not sent is lost"),
            "{}",
            move_help(n)
        );
    }

    #[test]
    fn generation_d_records_reach_the_window_with_lf_buttons_and_their_context() {
        use lf_tray_core::State;
        use lf_tray_surface::fixtures::record_d;
        let attached = record_d("S-1", State::Active, true);
        let idle = record_d("S-2", State::Other("unknown".into()), false);
        let records = [idle, attached];
        let views = serde_json::to_value(views(
            &Popups::default(),
            &records,
            Reach::Off,
            |_| None,
            |_| None,
        ))
        .unwrap();
        let (waiting, other) = (&views[0], &views[1]);
        assert_eq!(waiting["id"], "S-1");
        assert_eq!(waiting["group"], "waiting");
        // No kind at all: the chips come from needs_you and the state.
        assert!(waiting.get("kind").is_none());
        assert_eq!(waiting["needs_you"], true);
        assert_eq!(waiting["state"], "active");
        assert_eq!(waiting["work_path"], "product / LOO-412");
        assert_eq!(waiting["provider"], "codex");
        assert_eq!(waiting["repo_name"], "app.loo-412");
        assert_eq!(waiting["question"], Value::Null);
        // lf's labels and reason verbatim, and nothing lf did not offer.
        assert_eq!(
            drawn_buttons(waiting),
            [
                (
                    "open".into(),
                    "Open here".into(),
                    false,
                    Some(
                        "This Session is active in another terminal; use Move here to transfer it"
                            .into()
                    )
                ),
                ("move_here".into(), "Move here".into(), true, None),
            ]
        );
        assert_eq!(other["group"], "other");
        assert_eq!(other["needs_you"], false);
        assert_eq!(
            drawn_buttons(other),
            [("open".into(), "Open here".into(), true, None)]
        );

        // Where the tray can focus windows, the attached one offers Go to terminal
        // first; where it cannot, it says where the session runs instead.
        let reached = super::views(
            &Popups::default(),
            &records,
            Reach::Button,
            |_| None,
            |_| None,
        );
        let kinds = |v: &SessionView| -> Vec<String> {
            v.buttons.iter().map(|b| b.kind.to_string()).collect()
        };
        assert_eq!(kinds(&reached[0]), [GO_TO_TERMINAL, "open", "move_here"]);
        assert_eq!(
            kinds(&reached[1]),
            ["open"],
            "nothing attached, nothing to go to"
        );
        let said = super::views(
            &Popups::default(),
            &records,
            Reach::Say,
            |r| Some(format!("attached in tmux session work ({})", r.id)),
            |_| None,
        );
        assert_eq!(kinds(&said[0]), ["open", "move_here"]);
        assert_eq!(
            said[0].runs_in.as_deref(),
            Some("attached in tmux session work (S-1)")
        );
        assert_eq!(said[1].runs_in, None);
    }

    #[test]
    fn generation_d_requests_pass_the_core_guard_as_the_buttons_say() {
        use lf_tray_core::State;
        use lf_tray_surface::fixtures::record_d;
        let attached = record_d("S-1", State::Active, true);
        assert_eq!(
            plan(&attached, &ActionKind::Open, None),
            Err(
                "This Session is active in another terminal; use Move here to transfer it"
                    .to_string()
            )
        );
        assert_eq!(
            plan(&attached, &ActionKind::MoveHere, None),
            Ok(Step::Open { replace: true })
        );
        for refused in [
            ActionKind::Approve,
            ActionKind::Iterate,
            ActionKind::Complete,
        ] {
            assert!(
                plan(&attached, &refused, Some("text")).is_err(),
                "{refused}"
            );
        }
        let idle = record_d("S-2", State::Other("unknown".into()), true);
        assert_eq!(
            plan(&idle, &ActionKind::Open, None),
            Ok(Step::Open { replace: false })
        );
        assert!(plan(&idle, &ActionKind::MoveHere, None).is_err());
    }

    /// What the status line says once it says what `want` wants, within a deadline long
    /// enough for a loaded CI machine (the engine takes the change in milliseconds).
    fn status_until(f: &Fixture, want: impl Fn(&str) -> bool) -> String {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let board = invoke(&f.webview, "sessions", json!({})).unwrap();
            let status = board["status"].as_str().unwrap().to_string();
            if want(&status) {
                return status;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the status stayed {status:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn saved_machines_apply_at_once_and_one_taken_off_leaves_the_status() {
        let f = fixture();
        let view = invoke(&f.webview, "settings", json!({})).unwrap();
        let mut settings = view["settings"].clone();
        let autostart = view["autostart"].clone();
        settings["machines"] = json!(["box", "far"]);
        let save = json!({"settings": settings, "autostart": autostart});
        invoke(&f.webview, "save_settings", save).unwrap();
        status_until(&f, |s| s.contains(" · box: ") && s.contains(" · far: "));

        settings["machines"] = json!(["far"]);
        let save = json!({"settings": settings, "autostart": autostart});
        invoke(&f.webview, "save_settings", save).unwrap();
        let status = status_until(&f, |s| !s.contains("box"));
        assert!(status.contains(" · far: "), "{status}");
    }

    #[test]
    fn the_push_token_is_never_shown_back_and_kept_unless_forgotten() {
        let f = fixture();
        let view = invoke(&f.webview, "settings", json!({})).unwrap();
        let mut settings = view["settings"].clone();
        let autostart = view["autostart"].clone();
        assert_eq!(view["push_token_hint"], Value::Null);
        // An address nothing listens on; nothing is pushed anyway while nobody is away.
        settings["push_url"] = json!("http://127.0.0.1:9/lf-test");
        settings["push_token"] = json!("tk_0123456789abcdefXYZ9");
        let save = json!({"settings": settings, "autostart": autostart});
        let saved = invoke(&f.webview, "save_settings", save).unwrap();
        let shown = saved.to_string();
        assert!(!shown.contains("0123456789"), "{shown}");
        assert_eq!(saved["push_token_hint"], json!("set, ends …XYZ9"));
        assert_eq!(saved["settings"]["push_token"], Value::Null);

        // Saved again from what the panel shows (no token in it): kept.
        let mut again = saved["settings"].clone();
        again["push_text"] = json!(true);
        let save = json!({"settings": again, "autostart": autostart});
        let view = invoke(&f.webview, "save_settings", save).unwrap();
        assert_eq!(view["push_token_hint"], json!("set, ends …XYZ9"));
        assert_eq!(view["settings"]["push_text"], json!(true));

        // An empty one forgets it; a short one is only said to be set.
        again["push_token"] = json!("");
        let save = json!({"settings": again.clone(), "autostart": autostart});
        let view = invoke(&f.webview, "save_settings", save).unwrap();
        assert_eq!(view["push_token_hint"], Value::Null);
        again["push_token"] = json!("tk_short");
        let save = json!({"settings": again.clone(), "autostart": autostart});
        let view = invoke(&f.webview, "save_settings", save).unwrap();
        assert_eq!(view["push_token_hint"], json!("set"));

        // Bad input is refused with a sentence, and what was saved stays.
        again["push_url"] = json!("ntfy.sh/no-scheme");
        let save = json!({"settings": again, "autostart": autostart});
        let refused = invoke(&f.webview, "save_settings", save)
            .unwrap_err()
            .to_string();
        assert!(refused.contains("topic's address"), "{refused}");
        let view = invoke(&f.webview, "settings", json!({})).unwrap();
        assert_eq!(
            view["settings"]["push_url"],
            json!("http://127.0.0.1:9/lf-test")
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
