//! What a person can do with a session, and the guard every request from the window passes.
//!
//! lf (generation B and later) lists each session's actions itself, with the reason an action
//! is unavailable; those are shown as they are. Records without them (generation A, or read
//! from lf's files) get them derived here from the kind and state, the way the `lf` in use
//! accepts them: generation A decides a Flow step with Approve / Iterate, later ones with
//! Complete.

use lf_tray_core::lf::Generation;
use lf_tray_core::{Kind, SessionRecord, State};
use serde::Serialize;

/// One button in the window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Button {
    /// lf's action kind: `open`, `move_here`, `complete`, `approve`, `iterate`, or one this
    /// app does not know (shown, never run).
    pub kind: String,
    pub label: String,
    pub help: Option<String>,
    pub enabled: bool,
    /// Why the button is disabled; lf's own sentence when lf gave one.
    pub unavailable_reason: Option<String>,
    /// Placeholder of the text box lf requires for this action (approve, iterate).
    pub text_hint: Option<String>,
}

/// What running an action means, once it passed the guard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Open the session in the user's terminal; `replace` moves it from another terminal.
    Open { replace: bool },
    /// `lf session <verb> -- <id> [text]`.
    Lf { verb: Verb, text: Option<String> },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Complete,
    Approve,
    Iterate,
}

/// lf takes the text as one argument; far beyond any real summary, and far below the
/// kernel's argument limit.
const MAX_TEXT: usize = 16 * 1024;

const NOT_READY: &str = "The agent has not marked this session ready yet.";

fn text_hint(kind: &str) -> Option<&'static str> {
    match kind {
        "approve" => Some("Approval summary (required)"),
        "iterate" => Some("What should change (required)"),
        _ => None,
    }
}

fn known(kind: &str) -> bool {
    matches!(
        kind,
        "open" | "move_here" | "complete" | "approve" | "iterate"
    )
}

/// The buttons of a session, in the order they are shown. `lf` is the generation of the lf
/// in use, when known.
pub fn buttons(record: &SessionRecord, lf: Option<Generation>) -> Vec<Button> {
    let mut buttons = match &record.actions {
        Some(actions) => actions
            .iter()
            .map(|a| {
                let reason = a.unavailable_reason.clone().or_else(|| {
                    (!known(&a.kind)).then(|| {
                        format!(
                            "Loopflow Tray cannot run “{}”; use lf in a terminal.",
                            a.label
                        )
                    })
                });
                Button {
                    kind: a.kind.clone(),
                    label: if a.label.is_empty() {
                        a.kind.clone()
                    } else {
                        a.label.clone()
                    },
                    help: a.help.clone(),
                    enabled: reason.is_none(),
                    unavailable_reason: reason,
                    text_hint: text_hint(&a.kind).map(Into::into),
                }
            })
            .collect(),
        None => derived(record, lf),
    };
    if record.open_argv.is_empty() {
        for b in buttons
            .iter_mut()
            .filter(|b| b.kind == "open" || b.kind == "move_here")
        {
            b.enabled = false;
            b.unavailable_reason = Some("lf gave no command to open this session.".into());
        }
    }
    buttons
}

/// Flow → Open, Approve, Iterate (generation A; later: Open, Complete once ready);
/// Ask → Open, Complete (once ready); Interactive → Open, Move here (while active
/// elsewhere), Complete. An lf of unknown generation, or none, is taken for generation A,
/// the model this app was built from.
fn derived(record: &SessionRecord, lf: Option<Generation>) -> Vec<Button> {
    let button = |kind: &str, label: &str, help: &str, reason: Option<&str>| Button {
        kind: kind.into(),
        label: label.into(),
        help: Some(help.into()),
        enabled: reason.is_none(),
        unavailable_reason: reason.map(Into::into),
        text_hint: text_hint(kind).map(Into::into),
    };
    let open = button("open", "Open", "Open this session in your terminal", None);
    let decides_with_complete = matches!(lf, Some(Generation::B | Generation::C));
    match record.kind {
        Kind::Flow if decides_with_complete => vec![
            open,
            button(
                "complete",
                "Complete",
                "Complete the review and return your feedback to the next Flow step",
                (record.state != State::Ready).then_some(NOT_READY),
            ),
        ],
        Kind::Flow => vec![
            open,
            button(
                "approve",
                "Approve",
                "Approve this step; the Flow continues",
                None,
            ),
            button(
                "iterate",
                "Iterate",
                "Send the step back to the agent with directions",
                None,
            ),
        ],
        Kind::Ask => vec![
            open,
            button(
                "complete",
                "Complete",
                "Finish the conversation and resume the agent that asked",
                (record.state != State::Ready).then_some(NOT_READY),
            ),
        ],
        Kind::Interactive => {
            let mut buttons = vec![open];
            if record.state == State::Active {
                buttons.push(button(
                    "move_here",
                    "Move here",
                    "Stop the client in the other terminal and continue in a new one",
                    None,
                ));
            }
            buttons.push(button(
                "complete",
                "Complete",
                "Stop the agent and remove this session; its history stays resumable",
                None,
            ));
            buttons
        }
        Kind::Other(_) => vec![open],
    }
}

/// The guard between the window and the world: `action` must be an enabled button of this
/// session, and an action that needs text must have some. Anything else is refused with a
/// sentence the window shows.
pub fn plan(
    record: &SessionRecord,
    lf: Option<Generation>,
    action: &str,
    text: Option<&str>,
) -> Result<Step, String> {
    let button = buttons(record, lf)
        .into_iter()
        .find(|b| b.kind == action)
        .ok_or_else(|| format!("“{action}” is not an action of this session."))?;
    if !button.enabled {
        return Err(button
            .unavailable_reason
            .unwrap_or_else(|| format!("{} is not available.", button.label)));
    }
    let text = text.map(str::trim).filter(|t| !t.is_empty());
    if text.is_some_and(|t| t.len() > MAX_TEXT) {
        return Err(format!(
            "That text is too long for lf (more than {MAX_TEXT} bytes)."
        ));
    }
    let with_text = |verb, missing: &str| match text {
        Some(text) => Ok(Step::Lf {
            verb,
            text: Some(text.to_string()),
        }),
        None => Err(missing.to_string()),
    };
    match action {
        "open" => Ok(Step::Open { replace: false }),
        "move_here" => Ok(Step::Open { replace: true }),
        "complete" => Ok(Step::Lf {
            verb: Verb::Complete,
            text: None,
        }),
        "approve" => with_text(Verb::Approve, "Write an approval summary first."),
        "iterate" => with_text(
            Verb::Iterate,
            "Write what should change for the next iteration first.",
        ),
        _ => Err(format!("Loopflow Tray cannot run “{}”.", button.label)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::board::tests::record;
    use lf_tray_core::Action;

    fn buttons_a(record: &SessionRecord) -> Vec<Button> {
        buttons(record, Some(Generation::A))
    }

    fn plan_a(record: &SessionRecord, action: &str, text: Option<&str>) -> Result<Step, String> {
        plan(record, Some(Generation::A), action, text)
    }

    fn kinds(buttons: &[Button]) -> Vec<(&str, bool)> {
        buttons
            .iter()
            .map(|b| (b.kind.as_str(), b.enabled))
            .collect()
    }

    #[test]
    fn generation_a_flow_offers_open_approve_iterate_with_text() {
        let flow = record("run_f", Kind::Flow, State::Waiting);
        let b = buttons_a(&flow);
        assert_eq!(
            kinds(&b),
            [("open", true), ("approve", true), ("iterate", true)]
        );
        assert!(b[0].text_hint.is_none());
        assert!(b[1].text_hint.as_deref().unwrap().contains("required"));
    }

    #[test]
    fn later_lf_completes_a_flow_once_ready_and_unknown_counts_as_a() {
        let waiting = record("run_f", Kind::Flow, State::Waiting);
        let ready = record("run_f", Kind::Flow, State::Ready);
        for lf in [Generation::B, Generation::C] {
            let b = buttons(&waiting, Some(lf));
            assert_eq!(kinds(&b), [("open", true), ("complete", false)]);
            assert_eq!(b[1].unavailable_reason.as_deref(), Some(NOT_READY));
            assert_eq!(
                plan(&ready, Some(lf), "complete", None),
                Ok(Step::Lf {
                    verb: Verb::Complete,
                    text: None
                })
            );
            assert!(plan(&ready, Some(lf), "approve", Some("ok")).is_err());
        }
        for lf in [None, Some(Generation::Unknown)] {
            assert_eq!(
                kinds(&buttons(&waiting, lf)),
                [("open", true), ("approve", true), ("iterate", true)]
            );
        }
    }

    #[test]
    fn generation_a_ask_completes_only_when_ready() {
        let waiting = record("ask_1", Kind::Ask, State::Waiting);
        let b = buttons_a(&waiting);
        assert_eq!(kinds(&b), [("open", true), ("complete", false)]);
        assert_eq!(b[1].unavailable_reason.as_deref(), Some(NOT_READY));
        let ready = record("ask_1", Kind::Ask, State::Ready);
        assert_eq!(
            kinds(&buttons_a(&ready)),
            [("open", true), ("complete", true)]
        );
    }

    #[test]
    fn generation_a_interactive_moves_only_while_active() {
        let active = record("run_1", Kind::Interactive, State::Active);
        assert_eq!(
            kinds(&buttons_a(&active)),
            [("open", true), ("move_here", true), ("complete", true)]
        );
        let closed = record("run_1", Kind::Interactive, State::Closed);
        assert_eq!(
            kinds(&buttons_a(&closed)),
            [("open", true), ("complete", true)]
        );
    }

    #[test]
    fn lf_actions_win_and_reasons_are_verbatim() {
        let mut ask = record("ask_2", Kind::Ask, State::Waiting);
        ask.actions = Some(vec![
            Action {
                kind: "open".into(),
                label: "Open here".into(),
                help: Some("Open this Session in a terminal".into()),
                unavailable_reason: None,
            },
            Action {
                kind: "complete".into(),
                label: "Complete".into(),
                help: None,
                unavailable_reason: Some("The session agent has not marked this ready".into()),
            },
            Action {
                kind: "rename".into(),
                label: "Rename".into(),
                help: None,
                unavailable_reason: None,
            },
        ]);
        let b = buttons_a(&ask);
        assert_eq!(
            kinds(&b),
            [("open", true), ("complete", false), ("rename", false)]
        );
        assert_eq!(b[0].label, "Open here");
        assert_eq!(
            b[1].unavailable_reason.as_deref(),
            Some("The session agent has not marked this ready")
        );
        assert!(b[2]
            .unavailable_reason
            .as_deref()
            .unwrap()
            .contains("Rename"));
        assert_eq!(
            plan_a(&ask, "complete", None),
            Err("The session agent has not marked this ready".into())
        );
        assert!(plan_a(&ask, "rename", None).is_err());
    }

    #[test]
    fn the_guard_maps_and_refuses() {
        let flow = record("run_f", Kind::Flow, State::Ready);
        assert_eq!(
            plan_a(&flow, "open", None),
            Ok(Step::Open { replace: false })
        );
        assert_eq!(
            plan_a(&flow, "approve", Some("  ship it \n")),
            Ok(Step::Lf {
                verb: Verb::Approve,
                text: Some("ship it".into())
            })
        );
        assert_eq!(
            plan_a(&flow, "iterate", Some("   ")),
            Err("Write what should change for the next iteration first.".into())
        );
        assert!(plan_a(&flow, "approve", Some(&"x".repeat(MAX_TEXT + 1)))
            .unwrap_err()
            .contains("too long"));
        // Flow sessions in generation A have no complete; arbitrary verbs never pass.
        assert!(plan_a(&flow, "complete", None).is_err());
        assert!(plan_a(&flow, "serve-flow", None).is_err());
        assert!(plan_a(&flow, "", None).is_err());

        let active = record("run_1", Kind::Interactive, State::Active);
        assert_eq!(
            plan_a(&active, "move_here", None),
            Ok(Step::Open { replace: true })
        );
        assert_eq!(
            plan_a(&active, "complete", Some("ignored")),
            Ok(Step::Lf {
                verb: Verb::Complete,
                text: None
            })
        );
    }

    #[test]
    fn no_open_command_disables_opening() {
        let mut ask = record("ask_3", Kind::Ask, State::Ready);
        ask.open_argv.clear();
        let b = buttons_a(&ask);
        assert_eq!(kinds(&b), [("open", false), ("complete", true)]);
        assert!(plan_a(&ask, "open", None).is_err());
    }
}
