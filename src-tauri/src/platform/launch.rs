//! Opening a session in the user's terminal, from the tray, a notification or the window.
//! When that fails, the person is told twice (a popup, as the popup policy decides, and a
//! notice in the window) and given the command to run themselves.

use std::ffi::OsString;
use std::sync::Arc;

use lf_tray_core::terminal::{self, place, Env, Launch};
use lf_tray_core::SessionRecord;
use lf_tray_surface::desk::Input;
use lf_tray_surface::window::ToWindow;
use tauri::{AppHandle, Runtime};

use crate::platform::page;
use crate::shell::Shell;

/// Open `record` in a new terminal window (`replace`: Move here). Returns the terminal's
/// name, or the message the person was shown.
///
/// `activation`: the token the notification server gave the click, so that a Wayland
/// compositor focuses the new window (xdg-activation) instead of flashing it in the
/// background.
pub fn open<R: Runtime>(
    app: &AppHandle<R>,
    shell: &Arc<Shell>,
    record: &SessionRecord,
    replace: bool,
    activation: Option<&str>,
) -> Result<String, String> {
    let mut launch = Launch::for_session(record);
    if replace {
        launch = launch.replace();
    }
    // Another machine's session runs there, through ssh in the person's terminal here;
    // its argv and directory name that machine's paths and are never run here.
    let remote = record.machine.is_some();
    if let Some(dest) = &record.machine {
        let home = std::env::var_os("HOME").map_or_else(|| "/".into(), std::path::PathBuf::from);
        launch = lf_tray_core::machine::remote_launch(dest, &launch, home)?;
    }
    let choice = shell.settings().terminal_choice();
    let own = crate::platform::quiet::ours()
        .iter()
        .fold(Env::from_process(), |env, name| env.unset(name));
    // This machine's lf home means nothing to another machine's lf.
    let lf_env = if remote {
        Vec::new()
    } else {
        shell.engine.lf_env()
    };
    let env = environment(own, &lf_env, activation);
    // Marked so that lf lists this terminal in the record's `terminal_ids`, and a later
    // click can come back to it (`crate::platform::focus`). A remote lf sees no variable of ours.
    // Linux only: elsewhere the tray finds no client to go back to (no /proc, no EWMH).
    let terminal_id = (!remote && cfg!(target_os = "linux")).then(place::new_terminal_id);
    let run = match &terminal_id {
        Some(id) => launch.clone().marked(id),
        None => launch.clone(),
    };
    match terminal::open(&choice, &run, &env) {
        Ok(opened) => {
            tracing::info!(
                "LAUNCH terminal={} session={} terminal_id={}",
                opened.terminal,
                record.id,
                terminal_id.as_deref().unwrap_or("-")
            );
            if let Some(id) = terminal_id {
                shell.desktop.terminals.remember(id, &opened, &record.id);
            }
            shell.tell(Input::ClickReached);
            Ok(opened.terminal)
        }
        Err(e) => Err(failed(app, shell, record, &launch, &e)),
    }
}

/// Tell the person the terminal did not open, in the window and in a popup, with the
/// command to run by hand; returns the same as one message.
fn failed<R: Runtime>(
    app: &AppHandle<R>,
    shell: &Arc<Shell>,
    record: &SessionRecord,
    launch: &Launch,
    e: &terminal::TerminalError,
) -> String {
    // The person's own copy, without the mark that lets the tray come back to a
    // terminal it opened: one they open by hand is found as any other client is.
    let command = terminal::copyable_command(launch);
    let (summary, text) = match e {
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
    tracing::warn!("{e}");
    page::tell(
        app,
        ToWindow::LaunchFailed {
            text: text.clone(),
            command: command.clone(),
        },
    );
    let notice = lf_tray_surface::notice::launch_failed(record, summary, &command);
    shell.tell(Input::ClickFailed(notice));
    format!("{text}\n{command}")
}

/// The terminal's environment: the app's, with the home its lf runs with (`--home` or the
/// settings' home) and this click's activation token. A token the app itself was started
/// with is spent (tokens are single-use) and names the app's own launch, so it is never
/// passed on.
fn environment(env: Env, lf_env: &[(&str, Option<OsString>)], activation: Option<&str>) -> Env {
    let mut env = env.unset(ACTIVATION_TOKEN).unset("DESKTOP_STARTUP_ID");
    for (name, value) in lf_env {
        env = match value {
            Some(value) => env.set(*name, value.clone()),
            None => env.unset(name),
        };
    }
    match activation.filter(|token| !token.is_empty()) {
        Some(token) => env.set(ACTIVATION_TOKEN, token),
        None => env,
    }
}

const ACTIVATION_TOKEN: &str = "XDG_ACTIVATION_TOKEN";

#[cfg(test)]
mod tests {
    use lf_tray_core::terminal::{plan, Choice, Env, Launch};
    use lf_tray_core::State;

    use lf_tray_surface::fixtures::record_d;

    #[test]
    fn the_terminal_gets_this_clicks_activation_token_and_never_an_inherited_one() {
        let inherited = Env::default()
            .set("XDG_ACTIVATION_TOKEN", "spent-at-login")
            .set("DESKTOP_STARTUP_ID", "spent-too")
            .set("LF_HOME", "/h");
        let clicked = super::environment(inherited.clone(), &[], Some("from-mako"));
        assert_eq!(
            clicked.get("XDG_ACTIVATION_TOKEN"),
            Some("from-mako".as_ref())
        );
        assert_eq!(clicked.get("DESKTOP_STARTUP_ID"), None);
        assert_eq!(clicked.get("LF_HOME"), Some("/h".as_ref()));
        for no_token in [None, Some("")] {
            let env = super::environment(inherited.clone(), &[], no_token);
            assert_eq!(env.get("XDG_ACTIVATION_TOKEN"), None);
        }
    }

    #[test]
    fn the_terminal_sees_the_home_the_tray_lists_from() {
        let lf = lf_tray_core::Lf::new("/usr/bin/lf".into()).with_home("/chosen".as_ref());
        let inherited = Env::default()
            .set("LF_HOME", "/from-login")
            .set("LF_DB_PATH", "/from-login/loopflow.db");
        let env = super::environment(inherited, lf.env(), None);
        assert_eq!(env.get("LF_HOME"), Some("/chosen".as_ref()));
        assert_eq!(env.get("LF_CONTROL_HOME"), Some("/chosen".as_ref()));
        assert_eq!(
            env.get("LF_DB_PATH"),
            None,
            "a path into the other home is dropped"
        );
    }

    #[test]
    fn generation_d_runs_open_argv_verbatim_and_move_here_only_appends() {
        let record = record_d("S-1", State::Active, true);
        let open = Launch::for_session(&record);
        let words: Vec<&str> = record.open_argv.iter().map(|w| &**w).collect();
        assert_eq!(open.argv, words);
        assert_eq!(open.argv[0], "/usr/bin/env");
        assert_eq!(open.cwd.to_str(), Some(record.cwd.as_str()));
        let moved = open.clone().replace();
        let mut expected: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        expected.push("--replace".into());
        assert_eq!(moved.argv, expected);

        // The terminal gets the argv as it is, `/usr/bin/env` first, in the session's cwd.
        let dir = tempfile::tempdir().unwrap();
        let launch = Launch {
            cwd: dir.path().to_path_buf(),
            ..moved
        };
        let env = Env::default().set("PATH", "/usr/bin:/bin");
        let plan = plan(&Choice::Custom("env {argv}".into()), &launch, &env).unwrap();
        assert!(plan.args.ends_with(&launch.argv), "{:?}", plan.args);
        assert_eq!(plan.cwd, dir.path());
    }
}
