//! Where a click goes: one answer for a tray row and for every popup button, so that the
//! same session is reached the same way from wherever the person clicked.

use lf_tray_core::lf::{plan, Step};
use lf_tray_core::{ActionKind, SessionKey, SessionRecord};

use crate::board;
use crate::notice::{DEFAULT, DISMISS, OPEN, REVIEW};

/// What the person clicked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Click<'a> {
    /// The session's row in the tray menu.
    Row,
    /// A popup's action (`default` is a click on its body).
    Popup(&'a str),
    /// The window's Go to terminal button.
    GoToTerminal,
}

/// What the click does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// Open the session in a terminal (`replace`: move it from the one it is in).
    Terminal { replace: bool },
    /// Bring back the terminal where a client of the person's already runs it; where
    /// that cannot be done (the setting is off, the terminal is gone, the desktop lets
    /// nothing focus), go `otherwise`.
    Existing { otherwise: Box<Destination> },
    /// Show the window, scrolled to this session (or as it is, without one).
    Window(Option<SessionKey>),
    /// Mute the session's popups and reminders until its next transition.
    Dismiss,
    /// Nothing is left to act on (a Dismiss for a session that is gone).
    Nothing,
}

/// Where a click on the session `key` goes, given its record now (`None`: it was resolved
/// meanwhile). A Flow review is decided in the window, so its tray row goes there; a
/// popup's body and Open go where lf lets the session open (a terminal), else to the
/// window, which says why not. A session a terminal shows (one of the person's attached
/// to it, or the one its agent runs on) is reached in that terminal first, whatever lf
/// would do for Open: on today's lf, Open on a live agent is refused.
pub fn destination(
    key: &SessionKey,
    record: Option<&SessionRecord>,
    click: Click<'_>,
) -> Destination {
    let fresh = fresh_destination(key, record, click);
    let reaches_terminal = matches!(
        click,
        Click::Row | Click::Popup(DEFAULT | OPEN) | Click::GoToTerminal
    );
    let review_row = click == Click::Row && record.is_some_and(board::reviews_in_window);
    match record {
        Some(r) if reaches_terminal && !review_row && r.in_terminal() => Destination::Existing {
            // The window's own button has nowhere else to go than the window, which
            // offers what lf does (Open here, Move here).
            otherwise: Box::new(match click {
                Click::GoToTerminal => Destination::Window(Some(key.clone())),
                _ => fresh,
            }),
        },
        Some(_) if click == Click::GoToTerminal => Destination::Window(Some(key.clone())),
        _ => fresh,
    }
}

/// Where the click would go were no terminal attached.
fn fresh_destination(
    key: &SessionKey,
    record: Option<&SessionRecord>,
    click: Click<'_>,
) -> Destination {
    match (click, record) {
        (Click::Popup(REVIEW), _) => Destination::Window(Some(key.clone())),
        (Click::Popup(DISMISS), Some(_)) => Destination::Dismiss,
        (Click::Popup(DISMISS), None) => Destination::Nothing,
        // Resolved meanwhile: the window shows what is left.
        (_, None) => Destination::Window(None),
        (Click::Row, Some(record)) if board::reviews_in_window(record) => {
            Destination::Window(Some(key.clone()))
        }
        (_, Some(record)) => match plan(record, &ActionKind::Open, None) {
            Ok(Step::Open { replace }) => Destination::Terminal { replace },
            _ => Destination::Window(Some(key.clone())),
        },
    }
}

/// Why a Go to terminal did not bring the session's terminal to the front, as the log, the
/// popup and the window tell the person. `place` is where the session runs, in words
/// ("in Konsole, tab 2 of 3"); `why` is what the desktop or tmux said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unreached {
    /// No client of the session runs on this machine any more.
    Gone,
    /// tmux would not select the session's pane.
    TmuxRefused { place: String, why: String },
    /// The desktop cannot focus another app's window, or refused this one.
    Refused { place: String, why: String },
    /// It runs where no window on this screen shows it (a detached tmux, another seat).
    NoWindow { place: String },
    /// GNOME on Wayland, where only the shell can focus another app's window, without
    /// the tray's extension loaded: not in the person's profile, or put there (`installed`)
    /// and loaded only from their next login.
    GnomeNeedsExtension { place: String, installed: bool },
    /// This system has no way for the tray to focus another app's window yet.
    Unsupported,
}

impl Unreached {
    /// One sentence for the person.
    pub fn sentence(&self) -> String {
        match self {
            Unreached::Gone => {
                "Its terminal is no longer there (no lf client of this session was found).".into()
            }
            Unreached::TmuxRefused { place, why } => {
                format!("It is {place}, but tmux refused: {why}.")
            }
            Unreached::Refused { place, why } => format!("It is {place}, but {why}."),
            Unreached::NoWindow { place } => {
                format!("It is {place}, which no window on this screen shows.")
            }
            Unreached::GnomeNeedsExtension {
                place,
                installed: false,
            } => format!(
                "It is {place}, but GNOME lets an app bring a window to the front only through \
                 the shell: run lf-tray setup gnome-focus once, and from your next login a \
                 click brings it there."
            ),
            Unreached::GnomeNeedsExtension {
                place,
                installed: true,
            } => format!(
                "It is {place}, but GNOME loads the tray's focus extension only at login: log \
                 out and in again, and a click brings it there."
            ),
            Unreached::Unsupported => {
                "Going back to a terminal is not supported on this system yet.".into()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_unreached_terminal_is_told_in_one_sentence_that_says_where_it_runs() {
        let place = || "in Konsole, tab 2 of 3".to_string();
        assert_eq!(
            Unreached::TmuxRefused {
                place: place(),
                why: "no such pane".into()
            }
            .sentence(),
            "It is in Konsole, tab 2 of 3, but tmux refused: no such pane."
        );
        assert_eq!(
            Unreached::Refused {
                place: place(),
                why: "this desktop lets no app focus another's window".into()
            }
            .sentence(),
            "It is in Konsole, tab 2 of 3, but this desktop lets no app focus another's window."
        );
        assert_eq!(
            Unreached::NoWindow { place: place() }.sentence(),
            "It is in Konsole, tab 2 of 3, which no window on this screen shows."
        );
        assert_eq!(
            Unreached::GnomeNeedsExtension {
                place: place(),
                installed: false
            }
            .sentence(),
            "It is in Konsole, tab 2 of 3, but GNOME lets an app bring a window to the front \
             only through the shell: run lf-tray setup gnome-focus once, and from your next \
             login a click brings it there."
        );
        let installed = Unreached::GnomeNeedsExtension {
            place: place(),
            installed: true,
        };
        assert!(installed.sentence().contains("log out and in again"));
        for unreached in [Unreached::Gone, Unreached::Unsupported] {
            let sentence = unreached.sentence();
            assert!(
                sentence.ends_with('.') && !sentence.contains('{'),
                "{sentence}"
            );
        }
    }

    use super::*;
    use crate::fixtures::{record, record_d};
    use lf_tray_core::lf::finish;
    use lf_tray_core::{Dialect, Generation, Kind, State};

    fn with_actions(r: SessionRecord) -> SessionRecord {
        finish(r, Some(&Dialect::of(Generation::A)))
    }

    #[test]
    fn a_click_goes_where_the_session_can_be_reached() {
        let ask = with_actions(record("ask_1", Kind::Ask, State::Waiting));
        let key = ask.key();
        for click in [Click::Row, Click::Popup(DEFAULT), Click::Popup(OPEN)] {
            assert_eq!(
                destination(&key, Some(&ask), click),
                Destination::Terminal { replace: false },
                "{click:?}"
            );
        }
        assert_eq!(
            destination(&key, Some(&ask), Click::Popup(REVIEW)),
            Destination::Window(Some(key.clone()))
        );
        assert_eq!(
            destination(&key, Some(&ask), Click::Popup(DISMISS)),
            Destination::Dismiss
        );
        // Gone meanwhile.
        assert_eq!(
            destination(&key, None, Click::Popup(DEFAULT)),
            Destination::Window(None)
        );
        assert_eq!(
            destination(&key, None, Click::Row),
            Destination::Window(None)
        );
        assert_eq!(
            destination(&key, None, Click::Popup(DISMISS)),
            Destination::Nothing
        );
    }

    #[test]
    fn a_flow_row_is_decided_in_the_window_and_a_refused_open_explained_there() {
        let flow = with_actions(record("f", Kind::Flow, State::Waiting));
        assert_eq!(
            destination(&flow.key(), Some(&flow), Click::Row),
            Destination::Window(Some(flow.key()))
        );
        // lf refuses Open while another terminal has the session (generation D): the
        // click goes to that terminal, else to the window, which shows lf's reason and
        // Move here.
        let attached = record_d("S", State::Active, true);
        let key = attached.key();
        let existing = |otherwise| Destination::Existing {
            otherwise: Box::new(otherwise),
        };
        for click in [Click::Row, Click::Popup(DEFAULT), Click::Popup(OPEN)] {
            assert_eq!(
                destination(&key, Some(&attached), click),
                existing(Destination::Window(Some(key.clone()))),
                "{click:?}"
            );
        }
        assert_eq!(
            destination(&key, Some(&attached), Click::GoToTerminal),
            existing(Destination::Window(Some(key.clone())))
        );
        assert_eq!(
            destination(&key, Some(&attached), Click::Popup(DISMISS)),
            Destination::Dismiss
        );
        let idle = record_d("S", State::Other("unknown".into()), true);
        assert_eq!(
            destination(&idle.key(), Some(&idle), Click::Row),
            Destination::Terminal { replace: false }
        );
        // Nothing attached: the window's button shows the session, with lf's buttons.
        assert_eq!(
            destination(&idle.key(), Some(&idle), Click::GoToTerminal),
            Destination::Window(Some(idle.key()))
        );
    }

    #[test]
    fn todays_agent_is_reached_where_it_runs_and_a_headless_one_in_the_window() {
        use crate::fixtures::{blocked, record_e, with_agent};
        use lf_tray_core::Runs;
        // lf lists no terminal and offers Move here for every live agent (E2): that alone
        // reaches nothing; the agent's own terminal does.
        let e = record_e("S", State::Active, true, blocked("question", "Which?", ""));
        assert!(!e.attached() && !e.in_terminal());
        let key = e.key();
        let window = Destination::Window(Some(key.clone()));
        assert_eq!(destination(&key, Some(&e), Click::Popup(DEFAULT)), window);
        let native = with_agent(e.clone(), Runs::Terminal);
        for click in [Click::Row, Click::Popup(DEFAULT), Click::Popup(OPEN)] {
            assert_eq!(
                destination(&key, Some(&native), click),
                Destination::Existing {
                    otherwise: Box::new(window.clone())
                },
                "{click:?}: never a connect lf refuses"
            );
        }
        let headless = with_agent(e, Runs::Headless);
        for click in [Click::Row, Click::Popup(DEFAULT), Click::GoToTerminal] {
            assert_eq!(
                destination(&key, Some(&headless), click),
                window,
                "{click:?}"
            );
        }
    }

    #[test]
    fn an_attached_session_opened_before_d_still_opens_a_terminal_otherwise() {
        // Generations A–C let Open run beside a client: that stays the fallback.
        let mut ask = with_actions(record("ask_1", Kind::Ask, State::Active));
        ask.set_lf_field("terminal_ids", serde_json::json!(["T-1"]));
        assert!(ask.attached());
        assert_eq!(
            destination(&ask.key(), Some(&ask), Click::Popup(DEFAULT)),
            Destination::Existing {
                otherwise: Box::new(Destination::Terminal { replace: false })
            }
        );
        // A Flow review's row is decided in the window even while a terminal has it.
        let mut flow = with_actions(record("f", Kind::Flow, State::Waiting));
        flow.set_lf_field("terminal_ids", serde_json::json!(["T-1"]));
        assert_eq!(
            destination(&flow.key(), Some(&flow), Click::Row),
            Destination::Window(Some(flow.key()))
        );
    }
}
