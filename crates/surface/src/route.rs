//! Where a click goes: one answer for a tray row and for every popup button, so that the
//! same session is reached the same way from wherever the person clicked.

use lf_tray_core::actions::{plan, Step};
use lf_tray_core::{ActionKind, SessionKey, SessionRecord};

use crate::board;
use crate::notice::{DISMISS, REVIEW};

/// What the person clicked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Click<'a> {
    /// The session's row in the tray menu.
    Row,
    /// A popup's action (`default` is a click on its body).
    Popup(&'a str),
}

/// What the click does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// Open the session in a terminal (`replace`: move it from the one it is in).
    Terminal { replace: bool },
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
/// window, which says why not.
pub fn destination(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{record, record_d};
    use crate::notice::{DEFAULT, OPEN};
    use lf_tray_core::snapshot::finish;
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
        // window shows lf's reason and Move here.
        let attached = record_d("S", State::Active, true);
        assert_eq!(
            destination(&attached.key(), Some(&attached), Click::Popup(DEFAULT)),
            Destination::Window(Some(attached.key()))
        );
        let idle = record_d("S", State::Other("unknown".into()), true);
        assert_eq!(
            destination(&idle.key(), Some(&idle), Click::Row),
            Destination::Terminal { replace: false }
        );
    }
}
