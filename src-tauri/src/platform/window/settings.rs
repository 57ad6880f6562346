//! The settings panel's commands: what it shows, and saving what the person changed.

use std::path::PathBuf;
use std::sync::Arc;

use lf_tray_core::permission::Client;
use lf_tray_surface::settings::{self, Settings};
use serde::Serialize;
use tauri::State;

use crate::platform::autostart;
use crate::shell::Shell;

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
    /// Per other machine, whether its agents are answered from here (while answering is
    /// on): shown under the machines.
    pub machines_answering: Vec<String>,
    /// While answering from the keys is on: which keys the desktop gave the tray, and
    /// which another program holds.
    pub keys_status: Option<String>,
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
        push_status: shell.push.status(),
        machines_answering: shell.engine.answering(),
        #[cfg(unix)]
        keys_status: shell.desktop.keys.status(),
        #[cfg(not(unix))]
        keys_status: None,
        settings,
        autostart: autostart::enabled(),
        path: shell.settings.path.clone(),
        warning: shell.settings.warning.clone(),
        log: crate::logfile::path().map(PathBuf::from),
    }
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
    // Answering from the phone is set in settings.json only, for now: the panel has no
    // fields for it, so what is saved there is kept.
    let now = shell.settings();
    settings.answer_from_phone = now.answer_from_phone;
    settings.push_reply_token = now.push_reply_token;
    settings.push_reply_topic = now.push_reply_topic;
    let settings = settings.normalized();
    settings.check()?;
    // The agents' files first: refused (one does not parse), the switch stays as it was
    // and the panel says why.
    #[cfg(unix)]
    for client in [Client::Claude, Client::Codex] {
        let on = crate::permission::answering(&settings, client);
        if on != crate::permission::answering(&shell.settings(), client) {
            crate::permission::agent_hook(client, on)?;
        }
    }
    if let Some(path) = &shell.settings.path {
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
    use serde_json::{json, Value};

    use super::super::fixture::{fixture, invoke, status_until};

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
}
