//! What the app tells the window's page: one event, one typed message. Apart from
//! `window` so that what opens terminals (`launch`) can tell the page about a failure
//! without depending on the window's commands, which depend on it.

use serde::Serialize;
use tauri::{AppHandle, Emitter, Manager, Runtime};

use lf_tray_core::SessionRecord;

use crate::actions::Button;
use crate::board::Group;

/// The window's label: there is one.
pub const LABEL: &str = "main";

/// One session as the window draws it: lf's record, its group and its buttons.
#[derive(Debug, Clone, Serialize)]
pub struct SessionView {
    #[serde(flatten)]
    pub record: SessionRecord,
    /// What the window names the session by (its [`SessionKey::token`]): ids are unique
    /// per machine only.
    pub key: String,
    pub group: Group,
    /// The group's heading, as the tray says it: the page keeps no copy of its own.
    pub group_title: &'static str,
    /// What the person calls its kind ("Flow review"), where the record has one.
    pub kind_name: Option<String>,
    /// Why it waits as a person says it ("asks permission"), where the agent said.
    pub reason_phrase: Option<&'static str>,
    pub buttons: Vec<Button>,
    /// An Ask's prompt without the line that is already its title.
    pub question: Option<String>,
    /// The repository's name, for a generation D record: lf's `cwd` may be deep inside
    /// it, and older records show only their directory.
    pub repo_name: Option<String>,
    /// Since when it waits on the person (unix seconds), as the tray's memory knows it
    /// across restarts; for sessions that wait or are ready.
    pub waiting_since: Option<i64>,
    /// The person dismissed its popups until its next transition.
    pub dismissed: bool,
    /// Where it runs, said instead of a Go to terminal button where the desktop lets
    /// nothing focus another app's window.
    pub runs_in: Option<String>,
    /// An agent's permission request open for an answer from here: the tool and exactly
    /// what it will run, with every hidden character made visible (the page sets it as
    /// text). Allow and Deny show while it is there.
    pub permission: Option<String>,
}

/// Everything the window shows, sent whole on every change.
#[derive(Debug, Clone, Serialize)]
pub struct Board {
    pub sessions: Vec<SessionView>,
    /// The engine's status line.
    pub status: String,
    /// Why popups are held back now (a pause, quiet hours, do-not-disturb, no server).
    pub quiet: Option<String>,
    /// The latest transitions, newest first.
    pub recent: Vec<RecentView>,
    /// The latest problems reading lf's records or running lf, oldest first.
    pub warnings: Vec<String>,
    /// What the footer says while no tray shows the app (what to do on this desktop).
    pub tray: Option<String>,
    /// The session to scroll to, for a window just built to show it (it was not there
    /// yet to hear a `focus` event).
    pub focus: Option<String>,
}

/// One Recent entry as the window draws it: the memory's entry and its words.
#[derive(Debug, Clone, Serialize)]
pub struct RecentView {
    #[serde(flatten)]
    pub entry: lf_tray_core::history::Entry,
    /// The transition as the person says it ("ready for review").
    pub words: String,
}

/// The one event the page listens to ([`TO_WINDOW`]); what it carries says what it is, so
/// the page keeps no event names of its own.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", content = "payload", rename_all = "snake_case")]
pub enum ToWindow {
    /// Everything the window shows, whole.
    Board(Board),
    /// Scroll to this session (its key token) and select it.
    Focus(String),
    /// A terminal could not be opened: what to say, and the command to run by hand.
    LaunchFailed { text: String, command: String },
    /// Go to terminal did not get there: the session (its key token) and why not.
    Unreached { key: String, text: String },
}

/// The event name of [`ToWindow`].
pub const TO_WINDOW: &str = "app";

/// Tell the window, if there is one.
pub fn tell<R: Runtime>(app: &AppHandle<R>, message: ToWindow) {
    if app.get_webview_window(LABEL).is_none() {
        return;
    }
    if let Err(e) = app.emit_to(LABEL, TO_WINDOW, message) {
        tracing::warn!("could not update the window: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page is buildless, so it cannot import these names: this holds its copies to
    /// the Rust side, and a renamed variant or event fails here, not in a person's window.
    #[test]
    fn the_page_listens_for_the_event_and_every_message_kind_as_rust_names_them() {
        let page = include_str!("../../ui/app.js");
        assert!(
            page.contains(&format!("listen('{TO_WINDOW}',")),
            "ui/app.js does not listen for {TO_WINDOW:?}"
        );
        let board = Board {
            sessions: Vec::new(),
            status: String::new(),
            quiet: None,
            recent: Vec::new(),
            warnings: Vec::new(),
            focus: None,
            tray: None,
        };
        let messages = [
            ToWindow::Board(board),
            ToWindow::Focus(String::new()),
            ToWindow::LaunchFailed {
                text: String::new(),
                command: String::new(),
            },
            ToWindow::Unreached {
                key: String::new(),
                text: String::new(),
            },
        ];
        for message in messages {
            // A new kind stops this compiling until it is in the list above.
            match &message {
                ToWindow::Board(_)
                | ToWindow::Focus(_)
                | ToWindow::LaunchFailed { .. }
                | ToWindow::Unreached { .. } => {}
            }
            let value = serde_json::to_value(&message).unwrap();
            let kind = value["kind"].as_str().unwrap();
            assert!(
                page.contains(&format!("case '{kind}':")),
                "ui/app.js does not handle the message kind {kind:?}"
            );
            assert!(value.get("payload").is_some(), "{kind}: no payload");
        }
    }

    /// The page's words come from here: it draws the fields Rust names them by, and keeps
    /// no table of kinds or transitions of its own that could drift from Rust's.
    #[test]
    fn the_page_says_kinds_and_recent_transitions_in_rusts_words() {
        let page = include_str!("../../ui/app.js");
        let entry = lf_tray_core::history::Entry {
            at: 0,
            what: "ready".into(),
            id: "S-1".into(),
            title: "Ship it".into(),
            machine: None,
        };
        let recent = serde_json::to_value(RecentView {
            words: crate::board::recent_words(&entry.what).into(),
            entry,
        })
        .unwrap();
        assert_eq!(recent["words"], "ready for review");
        assert_eq!(
            recent["what"], "ready",
            "the id stays for the page's styling"
        );
        assert!(
            page.contains("entry.words"),
            "ui/app.js does not draw `words`"
        );
        assert!(
            page.contains("session.kind_name"),
            "ui/app.js does not draw `kind_name`"
        );
        for copy in [
            "Flow review",
            "ready for review",
            "agent stopped",
            "no longer waits",
        ] {
            // As a string of its own: prose may use the words.
            assert!(
                !page.contains(&format!("'{copy}'")),
                "ui/app.js keeps its own copy of {copy:?}"
            );
        }
    }
}
