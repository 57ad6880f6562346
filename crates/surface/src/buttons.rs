//! The window's buttons, drawn from the actions the core completed for each session (lf's
//! own, or derived for the generation in use in `lf_tray_core::lf`), with what only a
//! screen needs: whether a button is enabled, the hint of the text box lf requires, the key
//! that reaches that box, and what Enter on the row does.

use lf_tray_core::lf::{moves_from, unavailable};
use lf_tray_core::{ActionKind, SessionRecord};
use serde::{Deserialize, Serialize};

/// What a window button does: one of lf's actions, or the tray's own Go to terminal, which
/// is not lf's and must never reach lf.
///
/// On the page it is a token (lf's kind, or `go_to_terminal`) that the page only hands back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum Action {
    GoToTerminal,
    Lf(ActionKind),
}

impl Action {
    const GO_TO_TERMINAL: &str = "go_to_terminal";

    /// The token the page sends back.
    pub fn token(&self) -> &str {
        match self {
            Action::GoToTerminal => Self::GO_TO_TERMINAL,
            Action::Lf(kind) => kind.as_str(),
        }
    }
}

impl From<String> for Action {
    fn from(token: String) -> Action {
        if token == Action::GO_TO_TERMINAL {
            return Action::GoToTerminal;
        }
        // Every word is an ActionKind: one this app does not know is kept as lf's.
        let kind = serde_json::from_value(serde_json::Value::String(token.clone()))
            .unwrap_or(ActionKind::Other(token));
        Action::Lf(kind)
    }
}

impl From<Action> for String {
    fn from(action: Action) -> String {
        action.token().to_string()
    }
}

/// One button in the window. What it does not have is left out of its JSON, not sent as
/// `null` (a window opened on 10 000 sessions is sent every row's buttons); the page reads
/// an absent field as none. `enabled` is always sent: the page reads its absence as
/// disabled, and a button is enabled far more often than not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Button {
    pub action: Action,
    pub label: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
    pub enabled: bool,
    /// Why the button is disabled; lf's own sentence when lf gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unavailable_reason: Option<String>,
    /// Placeholder of the text box lf requires for this action (approve, iterate): the
    /// page draws a text box with the button beside it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_hint: Option<String>,
    /// The key that takes the person to that text box.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<char>,
}

fn text_box(kind: &ActionKind) -> Option<(&'static str, char)> {
    match kind {
        ActionKind::Approve => Some(("Approval summary (required)", 'a')),
        ActionKind::Iterate => Some(("What should change (required)", 'i')),
        _ => None,
    }
}

/// The buttons of a session, in lf's order.
pub fn buttons(record: &SessionRecord) -> Vec<Button> {
    record
        .actions
        .as_deref()
        .into_iter()
        .flatten()
        .map(|a| {
            let reason = unavailable(record, a);
            let text = text_box(&a.kind);
            Button {
                action: Action::Lf(a.kind.clone()),
                label: if a.label.is_empty() {
                    a.kind.to_string()
                } else {
                    a.label.clone()
                },
                help: match moves_from(record, &a.kind) {
                    Some(warning) => Some(match &a.help {
                        Some(help) if !help.is_empty() => format!("{help}. {warning}"),
                        _ => warning.to_string(),
                    }),
                    None => a.help.clone(),
                },
                enabled: reason.is_none(),
                unavailable_reason: reason,
                text_hint: text.map(|(hint, _)| hint.into()),
                key: text.map(|(_, key)| key),
            }
        })
        .collect()
}

/// The tray's own button, first, for a session whose terminal it can bring back.
pub fn go_to_terminal() -> Button {
    Button {
        action: Action::GoToTerminal,
        label: "Go to terminal".into(),
        help: Some("Bring back the terminal where this session already runs".into()),
        enabled: true,
        unavailable_reason: None,
        text_hint: None,
        key: None,
    }
}

/// What Enter on a row does: go to the terminal it runs in, else open one where it can be
/// opened. `None`, the row opens instead: a Flow review (answered here, with text) and a
/// row whose Open is unavailable show the person the fields or lf's reason.
pub fn primary(buttons: &[Button]) -> Option<Action> {
    if buttons.iter().any(|b| b.text_hint.is_some()) {
        return None;
    }
    if buttons.iter().any(|b| b.action == Action::GoToTerminal) {
        return Some(Action::GoToTerminal);
    }
    let open = Action::Lf(ActionKind::Open);
    buttons
        .iter()
        .any(|b| b.action == open && b.enabled)
        .then_some(open)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::record;
    use lf_tray_core::lf::finish;
    use lf_tray_core::{Dialect, Generation};
    use lf_tray_core::{Kind, State};

    fn tokens(buttons: &[Button]) -> Vec<(&str, bool)> {
        buttons
            .iter()
            .map(|b| (b.action.token(), b.enabled))
            .collect()
    }

    #[test]
    fn generation_a_flow_has_text_boxes_for_its_decisions() {
        let flow = finish(
            record("run_f", Kind::Flow, State::Waiting),
            Some(&Dialect::of(Generation::A)),
        );
        let b = buttons(&flow);
        assert_eq!(
            tokens(&b),
            [("open", true), ("approve", true), ("iterate", true)]
        );
        assert!(b[0].text_hint.is_none());
        assert!(b[1].text_hint.as_deref().unwrap().contains("required"));
        assert_eq!(
            b.iter().map(|b| b.key).collect::<Vec<_>>(),
            [None, Some('a'), Some('i')]
        );
        // A review is answered with text: Enter opens the row to its boxes.
        assert_eq!(primary(&b), None);
    }

    #[test]
    fn lf_reasons_disable_buttons_verbatim() {
        let mut ask = finish(
            record("ask_2", Kind::Ask, State::Waiting),
            Some(&Dialect::of(Generation::B)),
        );
        ask.open_argv = Default::default();
        let b = buttons(&ask);
        assert_eq!(tokens(&b), [("open", false), ("complete", false)]);
        assert_eq!(
            b[0].unavailable_reason.as_deref(),
            Some("lf gave no command to open this session.")
        );
        // Open unavailable: Enter shows the row with lf's reason.
        assert_eq!(primary(&b), None);
    }

    #[test]
    fn enter_goes_to_the_terminal_first_then_opens_one() {
        let ask = finish(
            record("ask_3", Kind::Ask, State::Waiting),
            Some(&Dialect::of(Generation::B)),
        );
        let mut b = buttons(&ask);
        assert_eq!(primary(&b), Some(Action::Lf(ActionKind::Open)));
        b.insert(0, go_to_terminal());
        assert_eq!(primary(&b), Some(Action::GoToTerminal));
    }

    /// A button's JSON leaves out what it does not have; the page (`ui/app.js`) reads each
    /// of those fields only by truthiness, so an absent one reads as none, as `null` did.
    #[test]
    fn a_button_leaves_out_what_it_does_not_have() {
        let ask = finish(
            record("ask_4", Kind::Ask, State::Waiting),
            Some(&Dialect::of(Generation::B)),
        );
        let b = buttons(&ask);
        let open = serde_json::to_value(&b[0]).unwrap();
        let open = open.as_object().unwrap();
        for absent in ["unavailable_reason", "text_hint", "key"] {
            assert!(!open.contains_key(absent), "{absent} is sent: {open:?}");
        }
        assert_eq!(open["enabled"], true);
        let terminal = serde_json::to_value(go_to_terminal()).unwrap();
        assert_eq!(terminal.as_object().unwrap().len(), 4, "{terminal}");
        // A disabled button still says so, and why.
        let mut ask = ask;
        ask.open_argv = Default::default();
        let closed = serde_json::to_value(&buttons(&ask)[0]).unwrap();
        assert_eq!(closed["enabled"], false);
        assert!(closed["unavailable_reason"].is_string(), "{closed}");

        let page = [
            include_str!("../../../ui/app.js"),
            include_str!("../../../ui/list.js"),
        ];
        let mut read = 0;
        for (page, field, name) in page.iter().flat_map(|page| {
            ["help", "unavailable_reason", "text_hint", "key"]
                .into_iter()
                .flat_map(move |field| ["b", "button"].map(|name| (page, field, name)))
        }) {
            let reading = format!("{name}.{field}");
            for (at, _) in page.match_indices(&reading) {
                if page[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
                    continue; // another name's field (`sub.key`)
                }
                let after = page[at + reading.len()..].trim_start();
                read += 1;
                for guard in [
                    "=== null",
                    "!== null",
                    "== null",
                    "!= null",
                    "=== undefined",
                    "!== undefined",
                ] {
                    assert!(
                        !after.starts_with(guard),
                        "the page tells an absent {field} from a null: {}",
                        page[at..].chars().take(40).collect::<String>()
                    );
                }
            }
        }
        // The page reads them: a rename there would leave this test checking nothing.
        assert!(
            read >= 10,
            "the page reads {read} button fields by `b.`/`button.`"
        );
    }

    #[test]
    fn the_page_hands_back_tokens_that_name_the_same_action() {
        for action in [
            Action::GoToTerminal,
            Action::Lf(ActionKind::Open),
            Action::Lf(ActionKind::MoveHere),
            Action::Lf(ActionKind::Approve),
            Action::Lf(ActionKind::Other("serve-ask".into())),
        ] {
            let token = serde_json::to_value(&action).unwrap();
            assert_eq!(token, action.token());
            assert_eq!(serde_json::from_value::<Action>(token).unwrap(), action);
        }
    }
}
