//! Whether the person is looking at a session's terminal: a turn handed back where they
//! are looking is seen there, and needs no popup.
//!
//! The shell asks the desktop (X11 or sway for the focused window, tmux for the active
//! pane, the terminal itself for the tab it shows) through [`Screen`]; what the answers
//! mean is decided here. Each question is asked only when the answers before it leave the
//! decision open, since a terminal can take seconds to answer (`kitty @ ls` starts
//! Python).

use lf_tray_core::terminal::place::Holder;
use lf_tray_core::terminal::tab::Tab;
use lf_tray_core::{Event, SessionRecord};

use crate::policy::Focus;

/// Where a session runs now, and how to say it.
#[derive(Debug, Clone)]
pub struct Place {
    pub holder: Holder,
    /// The tab of the terminal window that shows it, where the terminal names one.
    pub tab: Option<Tab>,
    /// `attached in tmux session work, window 3, in an xterm window`.
    pub sentence: String,
}

/// The desktop, as the gate asks it.
pub trait Screen {
    /// The window that has the focus; `None` where the desktop does not say.
    fn active(&self) -> Option<u32>;
    /// Where `record`'s client runs, if it is found.
    fn place(&self, record: &SessionRecord) -> Option<Place>;
    /// Whether this tmux pane is its window's active pane, in its session's current window.
    fn pane_active(&self, pane: &str) -> bool;
    /// Whether the terminal shows `tab` now; `None` where it cannot be asked or did not
    /// answer.
    fn tab_shown(&self, tab: &Tab) -> Option<bool>;
}

/// Whether the window (or the tmux pane, in the active window of the client showing it)
/// holding `record`'s client has the focus now.
pub fn looking_at(record: &SessionRecord, screen: &impl Screen) -> Focus {
    if !record.in_terminal() {
        return Focus::Elsewhere;
    }
    let Some(active) = screen.active() else {
        return Focus::Unknown;
    };
    let Some(place) = screen.place(record) else {
        return Focus::Unknown;
    };
    let window_seen = match &place.holder {
        Holder::Window { window, .. } => *window == Some(active),
        Holder::Tmux { pane, window, .. } => {
            *window == Some(active) && screen.pane_active(&pane.pane)
        }
    };
    // Its window focused, but showing another tab: not looked at. A terminal that cannot
    // be asked leaves the window's answer as it is.
    let tab_hidden = || {
        place
            .tab
            .as_ref()
            .and_then(|tab| screen.tab_shown(tab))
            .is_some_and(|shown| !shown)
    };
    if window_seen && !tab_hidden() {
        Focus::Looking
    } else {
        Focus::Elsewhere
    }
}

/// Where the person looks for each session whose turn `batch` hands back (an ask, a turn
/// of an attached conversation), for [`crate::policy::Popups::set_focus`]. The screen is
/// opened only when one of them runs in a terminal: a batch with no such turn asks the
/// desktop nothing.
pub fn gate<S: Screen>(batch: &[Event], open: impl FnOnce() -> S) -> Vec<(&SessionRecord, Focus)> {
    let asked: Vec<&SessionRecord> = batch
        .iter()
        .filter_map(|event| match event {
            Event::Asked { session, .. } => Some(session),
            _ => None,
        })
        .collect();
    let mut open = Some(open);
    let mut screen = None;
    asked
        .into_iter()
        .map(|session| {
            if !session.in_terminal() {
                return (session, Focus::Elsewhere);
            }
            if let Some(open) = open.take() {
                screen = Some(open());
            }
            let focus = match &screen {
                Some(screen) => looking_at(session, screen),
                None => Focus::Unknown,
            };
            (session, focus)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use lf_tray_core::terminal::place::Pane;
    use lf_tray_core::{Kind, State};

    use super::*;
    use crate::fixtures::{record, record_d};

    /// A desktop that answers as told, and keeps what it was asked.
    #[derive(Default)]
    struct Told {
        active: Option<u32>,
        holder: Option<Holder>,
        tab: Option<Tab>,
        pane_active: bool,
        tab_shown: Option<bool>,
        asked: RefCell<Vec<&'static str>>,
    }

    impl Screen for Told {
        fn active(&self) -> Option<u32> {
            self.asked.borrow_mut().push("active");
            self.active
        }
        fn place(&self, _: &SessionRecord) -> Option<Place> {
            self.asked.borrow_mut().push("place");
            Some(Place {
                holder: self.holder.clone()?,
                tab: self.tab.clone(),
                sentence: String::new(),
            })
        }
        fn pane_active(&self, _: &str) -> bool {
            self.asked.borrow_mut().push("pane");
            self.pane_active
        }
        fn tab_shown(&self, _: &Tab) -> Option<bool> {
            self.asked.borrow_mut().push("tab");
            self.tab_shown
        }
    }

    fn in_window(window: u32) -> Holder {
        Holder::Window {
            pid: 10,
            window: Some(window),
        }
    }

    fn in_tmux(window: u32) -> Holder {
        Holder::Tmux {
            pane: Pane {
                pid: 11,
                pane: "%3".into(),
                window: "@1".into(),
                window_index: "1".into(),
                session: "work".into(),
            },
            client: None,
            window: Some(window),
        }
    }

    fn kitty() -> Tab {
        Tab::Kitty {
            window: 2,
            listen_on: None,
        }
    }

    fn attached() -> SessionRecord {
        record_d("S-1", State::Active, true)
    }

    #[test]
    fn its_window_focused_is_looking_and_another_is_elsewhere() {
        let screen = Told {
            active: Some(7),
            holder: Some(in_window(7)),
            ..Told::default()
        };
        assert_eq!(looking_at(&attached(), &screen), Focus::Looking);
        let screen = Told {
            active: Some(8),
            holder: Some(in_window(7)),
            ..Told::default()
        };
        assert_eq!(looking_at(&attached(), &screen), Focus::Elsewhere);
    }

    #[test]
    fn a_desktop_that_cannot_say_leaves_it_unknown() {
        let screen = Told {
            holder: Some(in_window(7)),
            ..Told::default()
        };
        assert_eq!(looking_at(&attached(), &screen), Focus::Unknown);
        assert_eq!(*screen.asked.borrow(), ["active"], "nothing more is asked");
        // The client is not found: nothing to compare the focus with.
        let screen = Told {
            active: Some(7),
            ..Told::default()
        };
        assert_eq!(looking_at(&attached(), &screen), Focus::Unknown);
    }

    #[test]
    fn a_session_in_no_terminal_is_never_looked_at_and_the_desktop_is_not_asked() {
        let ask = record("ask_1", Kind::Ask, State::Waiting);
        assert!(!ask.in_terminal());
        let screen = Told {
            active: Some(7),
            holder: Some(in_window(7)),
            ..Told::default()
        };
        assert_eq!(looking_at(&ask, &screen), Focus::Elsewhere);
        assert!(screen.asked.borrow().is_empty());
    }

    #[test]
    fn a_tmux_pane_is_looked_at_only_while_it_is_the_active_one() {
        let mut screen = Told {
            active: Some(7),
            holder: Some(in_tmux(7)),
            pane_active: true,
            ..Told::default()
        };
        assert_eq!(looking_at(&attached(), &screen), Focus::Looking);
        screen.pane_active = false;
        assert_eq!(looking_at(&attached(), &screen), Focus::Elsewhere);
        // Another window has the focus: tmux is not asked.
        let screen = Told {
            active: Some(8),
            holder: Some(in_tmux(7)),
            pane_active: true,
            ..Told::default()
        };
        assert_eq!(looking_at(&attached(), &screen), Focus::Elsewhere);
        assert_eq!(*screen.asked.borrow(), ["active", "place"]);
    }

    #[test]
    fn another_tab_shown_is_elsewhere_and_a_terminal_that_cannot_say_keeps_the_window() {
        let told = |tab_shown| Told {
            active: Some(7),
            holder: Some(in_window(7)),
            tab: Some(kitty()),
            tab_shown,
            ..Told::default()
        };
        assert_eq!(looking_at(&attached(), &told(Some(true))), Focus::Looking);
        assert_eq!(
            looking_at(&attached(), &told(Some(false))),
            Focus::Elsewhere
        );
        assert_eq!(looking_at(&attached(), &told(None)), Focus::Looking);
        // The tab is asked only once its window has the focus: a slow terminal is not
        // waited on for a window the person is not in.
        let screen = Told {
            active: Some(8),
            ..told(Some(true))
        };
        assert_eq!(looking_at(&attached(), &screen), Focus::Elsewhere);
        assert!(!screen.asked.borrow().contains(&"tab"));
    }

    #[test]
    fn the_gate_asks_only_about_turns_handed_back_in_a_terminal() {
        let at = time::OffsetDateTime::UNIX_EPOCH;
        let ask = record("ask_1", Kind::Ask, State::Waiting);
        let batch = [
            Event::Asked {
                at,
                session: attached(),
            },
            Event::Asked {
                at,
                session: ask.clone(),
            },
            Event::Ready {
                at,
                session: attached(),
            },
        ];
        let mut opened = 0;
        let focus = gate(&batch, || {
            opened += 1;
            Told {
                active: Some(7),
                holder: Some(in_window(7)),
                ..Told::default()
            }
        });
        let focus: Vec<_> = focus.iter().map(|(s, f)| (s.id.as_str(), *f)).collect();
        assert_eq!(
            focus,
            [("S-1", Focus::Looking), ("ask_1", Focus::Elsewhere)]
        );
        assert_eq!(opened, 1);

        let quiet = [Event::Asked { at, session: ask }];
        let focus = gate(&quiet, || -> Told { panic!("no screen is needed") });
        assert_eq!(focus.len(), 1);
    }
}
