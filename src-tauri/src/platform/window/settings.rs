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
    /// The reply token as the push token: whether one is set, never the token.
    pub push_reply_token_hint: Option<String>,
    /// Whether the phone offers Allow, and when not, why and how to protect the topic.
    pub phone_status: Option<String>,
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
    let push_reply_token_hint = settings.push_reply_token.take().map(|t| token_hint(&t.0));
    SettingsView {
        push_token_hint,
        push_status: shell.push.status(),
        push_reply_token_hint,
        phone_status: shell.push.phone_status(),
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
    // The reply token likewise; the reply topic is the tray's own, which the panel only
    // shows (made by `normalized` when answering is first turned on).
    let now = shell.settings();
    match &settings.push_reply_token {
        None => settings.push_reply_token = now.push_reply_token,
        Some(token) if token.0.trim().is_empty() => settings.push_reply_token = None,
        Some(_) => {}
    }
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

    #[test]
    fn answering_from_the_phone_from_the_panel_keeps_the_reply_token_secret_and_the_topic_the_trays(
    ) {
        let f = fixture();
        let view = invoke(&f.webview, "settings", json!({})).unwrap();
        let autostart = view["autostart"].clone();
        let mut settings = view["settings"].clone();
        assert_eq!(
            settings["answer_from_phone"],
            json!(false),
            "off by default"
        );
        assert_eq!(view["push_reply_token_hint"], Value::Null);
        settings["push_url"] = json!("http://127.0.0.1:9/lf-test");
        settings["push_token"] = json!("tk_push_0123456789");
        settings["answer_from_phone"] = json!(true);
        settings["push_reply_token"] = json!("tk_reply_abcdefghijWXYZ");
        // The panel sends no topic of its own: the tray makes it.
        settings["push_reply_topic"] = json!("");
        let save = json!({"settings": settings.clone(), "autostart": autostart});
        let saved = invoke(&f.webview, "save_settings", save).unwrap();
        let shown = saved.to_string();
        assert!(!shown.contains("abcdefghij"), "{shown}");
        assert_eq!(saved["push_reply_token_hint"], json!("set, ends …WXYZ"));
        let topic = saved["settings"]["push_reply_topic"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(
            topic.len() == 32 && topic.bytes().all(|b| b.is_ascii_hexdigit()),
            "{topic}"
        );
        assert!(
            !topic.contains("lf-test"),
            "never derived from the push topic"
        );

        // Saved again from what the panel shows: the token kept, the topic the same, and a
        // topic typed into the request is not taken.
        let mut again = saved["settings"].clone();
        again["push_reply_topic"] = json!("chosen-by-someone-else-0123456789");
        let save = json!({"settings": again.clone(), "autostart": autostart});
        let view = invoke(&f.webview, "save_settings", save).unwrap();
        assert_eq!(view["push_reply_token_hint"], json!("set, ends …WXYZ"));
        assert_eq!(view["settings"]["push_reply_topic"], json!(topic));

        // The push token as the reply token, or none while on: refused with a sentence.
        again["push_reply_token"] = json!("tk_push_0123456789");
        let save = json!({"settings": again.clone(), "autostart": autostart});
        let refused = invoke(&f.webview, "save_settings", save)
            .unwrap_err()
            .to_string();
        assert!(refused.contains("write-only"), "{refused}");
        again["push_reply_token"] = json!("");
        let save = json!({"settings": again.clone(), "autostart": autostart});
        let refused = invoke(&f.webview, "save_settings", save)
            .unwrap_err()
            .to_string();
        assert!(refused.contains("needs a reply token"), "{refused}");
        // Off, it may be forgotten; the topic stays the tray's.
        again["answer_from_phone"] = json!(false);
        let save = json!({"settings": again, "autostart": autostart});
        let view = invoke(&f.webview, "save_settings", save).unwrap();
        assert_eq!(view["push_reply_token_hint"], Value::Null);
        assert_eq!(view["settings"]["push_reply_topic"], json!(topic));
    }

    /// The panel's phone fields are the settings' and the view's, by the names Rust gives
    /// them: a renamed field fails here, not silently in the window.
    #[test]
    fn the_panel_reads_and_sends_the_phone_settings_by_rusts_names() {
        const PAGE: &str = include_str!("../../../../ui/app.js");
        let f = fixture();
        let view = invoke(&f.webview, "settings", json!({})).unwrap();
        for field in ["answer_from_phone", "push_reply_token", "push_reply_topic"] {
            assert!(view["settings"].get(field).is_some(), "no setting {field}");
            assert!(
                PAGE.contains(&format!("    {field}: ")),
                "ui/app.js does not send {field}"
            );
        }
        for read in ["s.answer_from_phone", "s.push_reply_topic"] {
            assert!(PAGE.contains(read), "ui/app.js does not show {read}");
        }
        for field in ["push_reply_token_hint", "phone_status"] {
            assert!(view.get(field).is_some(), "the view has no {field}");
            assert!(
                PAGE.contains(&format!("view.{field}")),
                "ui/app.js does not show {field}"
            );
        }
    }
}
