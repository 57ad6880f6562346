//! What a person can do with a session, for the lf in use, and the guard every request
//! passes before anything runs.
//!
//! lf (generation B and later) lists each session's actions itself, with the reason an
//! action is unavailable; those are kept as they are. Records without them (generation A,
//! or read from lf's files) get them derived here from the kind and state, the way that
//! generation's `lf` accepts them: generation A decides a Flow step with Approve / Iterate,
//! B and C with Complete once ready. Generation D always sends its own (Open, Move here).

use crate::lf::cli::LfAction;
use crate::lf::dialect::{Dialect, FlowDecision};
use crate::lf::record::{Action, ActionKind, Kind, SessionRecord, State};

/// lf takes the text as one argument; far beyond any real summary, and far below the
/// kernel's argument limit.
pub const MAX_TEXT: usize = 16 * 1024;

/// The reason Complete waits, for a record whose lf gave none.
pub const NOT_READY: &str = "The agent has not marked this session ready yet.";

/// What running an action means, once it passed the guard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Open the session in the user's terminal; `replace` moves it from another terminal
    /// (`open_argv` + `--replace`).
    Open { replace: bool },
    /// A headless `lf session <verb>`.
    Lf(LfAction),
}

/// The actions of a record that has none from lf, in the order they are shown. Without an
/// lf (or one not recognised) a Flow step is decided as generation A decides it, the model
/// this app was built from.
pub fn derive(record: &SessionRecord, lf: Option<&Dialect>) -> Vec<Action> {
    let action = |kind: ActionKind, label: &str, help: &str, reason: Option<&str>| Action {
        kind,
        label: label.into(),
        help: Some(help.into()),
        unavailable_reason: reason.map(Into::into),
    };
    let open = action(
        ActionKind::Open,
        "Open",
        "Open this session in your terminal",
        None,
    );
    let not_ready = (record.state != State::Ready).then_some(NOT_READY);
    // Without an lf (or one not recognised) a Flow step is decided as generation A does.
    let decision = lf.map_or(FlowDecision::ApproveIterate, |d| d.flow_decision);
    match &record.kind {
        Some(Kind::Flow) => match decision {
            // An lf that owns its actions sent none for this step: only Open, never a
            // verb it may not have.
            FlowDecision::LfOwn => vec![open],
            FlowDecision::Complete => vec![
                open,
                action(
                    ActionKind::Complete,
                    "Complete",
                    "Complete the review and return your feedback to the next Flow step",
                    not_ready,
                ),
            ],
            FlowDecision::ApproveIterate => vec![
                open,
                action(
                    ActionKind::Approve,
                    "Approve",
                    "Approve this step; the Flow continues",
                    None,
                ),
                action(
                    ActionKind::Iterate,
                    "Iterate",
                    "Send the step back to the agent with directions",
                    None,
                ),
            ],
        },
        Some(Kind::Ask) => vec![
            open,
            action(
                ActionKind::Complete,
                "Complete",
                "Finish the conversation and resume the agent that asked",
                not_ready,
            ),
        ],
        Some(Kind::Interactive) => {
            let mut actions = vec![open];
            if record.state == State::Active {
                actions.push(action(
                    ActionKind::MoveHere,
                    "Move here",
                    "Stop the client in the other terminal and continue in a new one",
                    None,
                ));
            }
            actions.push(action(
                ActionKind::Complete,
                "Complete",
                "Stop the agent and remove this session; its history stays resumable",
                None,
            ));
            actions
        }
        Some(Kind::Other(_)) | None => vec![open],
    }
}

/// Why an action is not available: lf's own sentence, or this app's when lf gave none
/// (an action kind it cannot run, a session with no command to open it).
pub fn unavailable(record: &SessionRecord, action: &Action) -> Option<String> {
    if let Some(reason) = &action.unavailable_reason {
        return Some(reason.clone());
    }
    if !action.kind.is_known() {
        let label = if action.label.is_empty() {
            action.kind.as_str()
        } else {
            &action.label
        };
        return Some(format!(
            "Loopflow Tray cannot run “{label}”; use lf in a terminal."
        ));
    }
    let opens = matches!(action.kind, ActionKind::Open | ActionKind::MoveHere);
    (opens && record.open_argv.is_empty())
        .then(|| "lf gave no command to open this session.".to_string())
}

/// What Move here does to where the session's agent runs, which lf's own help does not
/// say (generation E2, loopflow-model.md §10.6): a live agent in another terminal is
/// stopped there, and a headless one goes on while a second conversation starts here.
pub fn moves_from(record: &SessionRecord, kind: &ActionKind) -> Option<&'static str> {
    let agent = record.agent()?;
    if *kind != ActionKind::MoveHere || record.state != State::Active {
        return None;
    }
    Some(match agent.runs {
        super::record::Runs::Headless => {
            "It runs headless: Move here starts a second conversation here beside it, and the headless run goes on"
        }
        super::record::Runs::Terminal | super::record::Runs::Unknown => {
            "Move here stops the agent in its other terminal (text typed there and not sent is lost) and resumes the conversation here"
        }
    })
}

/// The guard between a request and the world: `kind` must be an available action of this
/// session (its `actions`, as the engine completed them), and an action that needs text
/// must have some. Anything else is refused with a sentence to show.
pub fn plan(record: &SessionRecord, kind: &ActionKind, text: Option<&str>) -> Result<Step, String> {
    let action = record
        .action(kind)
        .ok_or_else(|| format!("“{kind}” is not an action of this session."))?;
    if let Some(reason) = unavailable(record, action) {
        return Err(reason);
    }
    let text = text.map(str::trim).filter(|t| !t.is_empty());
    if text.is_some_and(|t| t.len() > MAX_TEXT) {
        return Err(format!(
            "That text is too long for lf (more than {MAX_TEXT} bytes)."
        ));
    }
    let id = record.id.clone();
    let with_text = |missing: &str| text.map(str::to_string).ok_or_else(|| missing.to_string());
    Ok(match kind {
        ActionKind::Open => Step::Open { replace: false },
        ActionKind::MoveHere => Step::Open { replace: true },
        ActionKind::Complete => Step::Lf(LfAction::Complete { id }),
        ActionKind::Approve => Step::Lf(LfAction::Approve {
            id,
            text: with_text("Write an approval summary first.")?,
        }),
        ActionKind::Iterate => Step::Lf(LfAction::Iterate {
            id,
            text: with_text("Write what should change for the next iteration first.")?,
        }),
        ActionKind::Other(_) => unreachable!("unknown kinds are unavailable"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lf::dialect::Generation;
    use crate::lf::record::test_record as record;
    use std::sync::Arc;

    fn with_derived(mut r: SessionRecord, lf: Option<Generation>) -> SessionRecord {
        r.actions = Some(derive(&r, lf.map(Dialect::of).as_ref()).into());
        r
    }

    fn kinds(r: &SessionRecord) -> Vec<(&str, bool)> {
        r.actions
            .as_deref()
            .into_iter()
            .flatten()
            .map(|a| (a.kind.as_str(), unavailable(r, a).is_none()))
            .collect()
    }

    #[test]
    fn generation_a_flow_offers_open_approve_iterate() {
        let flow = with_derived(
            record("t:f:n:0", Some(Kind::Flow), State::Waiting),
            Some(Generation::A),
        );
        assert_eq!(
            kinds(&flow),
            [("open", true), ("approve", true), ("iterate", true)]
        );
        // An lf of unknown generation, or none, is taken for A.
        for lf in [None, Some(Generation::Unknown)] {
            let r = with_derived(record("f", Some(Kind::Flow), State::Waiting), lf);
            assert_eq!(kinds(&r).len(), 3);
        }
    }

    #[test]
    fn later_lf_completes_a_flow_once_ready() {
        for lf in [Generation::B, Generation::C] {
            let waiting = with_derived(record("f", Some(Kind::Flow), State::Waiting), Some(lf));
            assert_eq!(kinds(&waiting), [("open", true), ("complete", false)]);
            assert_eq!(
                plan(&waiting, &ActionKind::Complete, None),
                Err(NOT_READY.into())
            );
            let ready = with_derived(record("f", Some(Kind::Flow), State::Ready), Some(lf));
            assert_eq!(
                plan(&ready, &ActionKind::Complete, None),
                Ok(Step::Lf(LfAction::Complete { id: "f".into() }))
            );
            assert!(plan(&ready, &ActionKind::Approve, Some("ok")).is_err());
        }
    }

    #[test]
    fn an_lf_that_owns_its_actions_never_gets_a_review_verb_it_did_not_send() {
        for lf in [Generation::D0, Generation::D, Generation::E] {
            let flow = with_derived(record("f", Some(Kind::Flow), State::Ready), Some(lf));
            assert_eq!(kinds(&flow), [("open", true)], "{lf:?}");
            assert!(plan(&flow, &ActionKind::Approve, Some("ok")).is_err());
        }
    }

    #[test]
    fn asks_and_interactive_sessions() {
        let a = Some(Generation::A);
        let ask = with_derived(record("ask_1", Some(Kind::Ask), State::Waiting), a);
        assert_eq!(kinds(&ask), [("open", true), ("complete", false)]);
        let ready = with_derived(record("ask_1", Some(Kind::Ask), State::Ready), a);
        assert_eq!(kinds(&ready), [("open", true), ("complete", true)]);
        let active = with_derived(record("run_1", Some(Kind::Interactive), State::Active), a);
        assert_eq!(
            kinds(&active),
            [("open", true), ("move_here", true), ("complete", true)]
        );
        let closed = with_derived(record("run_1", Some(Kind::Interactive), State::Closed), a);
        assert_eq!(kinds(&closed), [("open", true), ("complete", true)]);
        // A record of no kind (generation D never lacks lf's actions) can still be opened.
        let d = with_derived(record("S", None, State::Other("unknown".into())), a);
        assert_eq!(kinds(&d), [("open", true)]);
    }

    #[test]
    fn lf_reasons_are_verbatim_and_unknown_kinds_never_run() {
        let mut d = record("SESSION-B", None, State::Active);
        d.actions = Some(Arc::new([
            Action {
                kind: ActionKind::Open,
                label: "Open here".into(),
                help: Some("Open this Session in a terminal".into()),
                unavailable_reason: Some(
                    "This Session is active in another terminal; use Move here to transfer it"
                        .into(),
                ),
            },
            Action {
                kind: ActionKind::MoveHere,
                label: "Move here".into(),
                help: None,
                unavailable_reason: None,
            },
            Action {
                kind: ActionKind::Other("rename".into()),
                label: "Rename".into(),
                help: None,
                unavailable_reason: None,
            },
        ]));
        assert_eq!(
            kinds(&d),
            [("open", false), ("move_here", true), ("rename", false)]
        );
        assert_eq!(
            plan(&d, &ActionKind::Open, None),
            Err("This Session is active in another terminal; use Move here to transfer it".into())
        );
        assert_eq!(
            plan(&d, &ActionKind::MoveHere, None),
            Ok(Step::Open { replace: true })
        );
        assert!(plan(&d, &ActionKind::Other("rename".into()), None)
            .unwrap_err()
            .contains("Rename"));
        // Generation D offers no Complete, Approve or Iterate, so none can be run.
        for kind in [
            ActionKind::Complete,
            ActionKind::Approve,
            ActionKind::Iterate,
        ] {
            assert!(plan(&d, &kind, Some("text")).is_err(), "{kind}");
        }
    }

    #[test]
    fn the_guard_wants_text_within_bounds_and_a_command_to_open() {
        let flow = with_derived(
            record("f", Some(Kind::Flow), State::Ready),
            Some(Generation::A),
        );
        assert_eq!(
            plan(&flow, &ActionKind::Approve, Some("  ship it \n")),
            Ok(Step::Lf(LfAction::Approve {
                id: "f".into(),
                text: "ship it".into()
            }))
        );
        assert_eq!(
            plan(&flow, &ActionKind::Iterate, Some("   ")),
            Err("Write what should change for the next iteration first.".into())
        );
        assert!(
            plan(&flow, &ActionKind::Approve, Some(&"x".repeat(MAX_TEXT + 1)))
                .unwrap_err()
                .contains("too long")
        );
        assert!(plan(&flow, &ActionKind::Complete, None).is_err());
        let mut ask = with_derived(
            record("a", Some(Kind::Ask), State::Ready),
            Some(Generation::A),
        );
        ask.open_argv = Arc::default();
        assert_eq!(kinds(&ask), [("open", false), ("complete", true)]);
    }
}
