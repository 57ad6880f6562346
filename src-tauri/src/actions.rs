//! The window's buttons, drawn from the actions the core completed for each session (lf's
//! own, or derived for the generation in use in `lf_tray_core::session`), with what only a
//! screen needs: whether a button is enabled and the hint of the text box lf requires.

use lf_tray_core::session::unavailable;
use lf_tray_core::{ActionKind, SessionRecord};
use serde::Serialize;

/// One button in the window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Button {
    /// lf's action kind: `open`, `move_here`, `complete`, `approve`, `iterate`, or one this
    /// app does not know (shown, never run).
    pub kind: ActionKind,
    pub label: String,
    pub help: Option<String>,
    pub enabled: bool,
    /// Why the button is disabled; lf's own sentence when lf gave one.
    pub unavailable_reason: Option<String>,
    /// Placeholder of the text box lf requires for this action (approve, iterate).
    pub text_hint: Option<String>,
}

fn text_hint(kind: &ActionKind) -> Option<&'static str> {
    match kind {
        ActionKind::Approve => Some("Approval summary (required)"),
        ActionKind::Iterate => Some("What should change (required)"),
        _ => None,
    }
}

/// The buttons of a session, in lf's order.
pub fn buttons(record: &SessionRecord) -> Vec<Button> {
    record
        .actions
        .iter()
        .flatten()
        .map(|a| {
            let reason = unavailable(record, a);
            Button {
                kind: a.kind.clone(),
                label: if a.label.is_empty() {
                    a.kind.to_string()
                } else {
                    a.label.clone()
                },
                help: match lf_tray_core::session::moves_from(record, &a.kind) {
                    Some(warning) => Some(match &a.help {
                        Some(help) if !help.is_empty() => format!("{help}. {warning}"),
                        _ => warning.to_string(),
                    }),
                    None => a.help.clone(),
                },
                enabled: reason.is_none(),
                unavailable_reason: reason,
                text_hint: text_hint(&a.kind).map(Into::into),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use lf_tray_core::session::finish;
    use lf_tray_core::{Dialect, Generation};
    use lf_tray_core::{Kind, State};
    use lf_tray_surface::fixtures::record;

    fn kinds(buttons: &[Button]) -> Vec<(&str, bool)> {
        buttons
            .iter()
            .map(|b| (b.kind.as_str(), b.enabled))
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
            kinds(&b),
            [("open", true), ("approve", true), ("iterate", true)]
        );
        assert!(b[0].text_hint.is_none());
        assert!(b[1].text_hint.as_deref().unwrap().contains("required"));
    }

    #[test]
    fn lf_reasons_disable_buttons_verbatim() {
        let mut ask = finish(
            record("ask_2", Kind::Ask, State::Waiting),
            Some(&Dialect::of(Generation::B)),
        );
        ask.open_argv.clear();
        let b = buttons(&ask);
        assert_eq!(kinds(&b), [("open", false), ("complete", false)]);
        assert_eq!(
            b[0].unavailable_reason.as_deref(),
            Some("lf gave no command to open this session.")
        );
    }
}
