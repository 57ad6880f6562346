//! The tray's menu and icon as a plain model: the sessions grouped, the one waiting longest
//! first, the popups' state, and the app's own items. The shell turns it into the platform's
//! menu and draws the icon; everything it decides is here, tested without a display.

use std::borrow::Borrow;
use std::collections::BTreeSet;

use lf_tray_core::{SessionKey, SessionRecord};

use crate::board::{self, Group};
use crate::policy::PauseFor;

/// More session rows than this stop being glanceable in a menu; the window lists them all.
const MAX_ROWS: usize = 10;
/// Marks a row whose session waits and was not shown to the person (its popup held back or
/// taken down by the desktop before they acted): a dot, as mail and chat mark unread.
const UNSEEN: &str = "● ";
/// Menus are as wide as their longest row; beyond this a title is cut.
const MAX_LABEL: usize = 64;

/// A menu item the user can choose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    Session(SessionKey),
    /// Dismiss a session's popups and reminders until its next transition.
    Dismiss(SessionKey),
    More,
    Show,
    Pause(PauseFor),
    Resume,
    Quit,
}

const SESSION_PREFIX: &str = "session:";
const DISMISS_PREFIX: &str = "dismiss:";

impl Item {
    pub fn id(&self) -> String {
        match self {
            Item::Session(key) => format!("{SESSION_PREFIX}{}", key.token()),
            Item::Dismiss(key) => format!("{DISMISS_PREFIX}{}", key.token()),
            Item::More => "more".into(),
            Item::Show => "show".into(),
            Item::Pause(PauseFor::Hour) => "pause:hour".into(),
            Item::Pause(PauseFor::Tomorrow) => "pause:tomorrow".into(),
            Item::Pause(PauseFor::Indefinite) => "pause:indefinite".into(),
            Item::Resume => "resume".into(),
            Item::Quit => "quit".into(),
        }
    }

    pub fn parse(id: &str) -> Option<Item> {
        if let Some(session) = id.strip_prefix(SESSION_PREFIX) {
            return SessionKey::parse(session).map(Item::Session);
        }
        if let Some(session) = id.strip_prefix(DISMISS_PREFIX) {
            return SessionKey::parse(session).map(Item::Dismiss);
        }
        match id {
            "more" => Some(Item::More),
            "show" => Some(Item::Show),
            "pause:hour" => Some(Item::Pause(PauseFor::Hour)),
            "pause:tomorrow" => Some(Item::Pause(PauseFor::Tomorrow)),
            "pause:indefinite" => Some(Item::Pause(PauseFor::Indefinite)),
            "resume" => Some(Item::Resume),
            "quit" => Some(Item::Quit),
            _ => None,
        }
    }
}

/// What the menu says about popups: why they are held back (a pause, quiet hours, the
/// desktop's do-not-disturb), whether the person paused them, and what they dismissed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Popups {
    pub held_back: Option<String>,
    pub paused: bool,
    /// By key token (`SessionKey::token`).
    pub dismissed: BTreeSet<String>,
    /// Waiting sessions the person was not shown (held back, or the popup expired), by
    /// key token: their rows are marked.
    pub unseen: BTreeSet<String>,
    /// Since when each waiting session waits (unix seconds), by key token: the longest
    /// first.
    pub since: std::collections::BTreeMap<String, i64>,
}

/// One line of the menu.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A disabled line: a group heading, or "No sessions waiting".
    Note(String),
    Choice {
        item: Item,
        label: String,
    },
    Submenu {
        label: String,
        entries: Vec<Entry>,
    },
    Separator,
}

/// The menu for these sessions: pending ones grouped, the one waiting longest first, then
/// the app's own items.
pub fn menu<R: Borrow<SessionRecord>>(sessions: &[R], popups: &Popups) -> Vec<Entry> {
    // The ten rows it shows, found without ordering every session.
    let (shown, pending) = board::first(
        sessions,
        |r| popups.since.get(&r.key().token()).copied(),
        |group, r| {
            // A stopped agent the person dismissed is theirs to resume from the window.
            group.is_pending()
                && !(group == Group::Stopped && popups.dismissed.contains(&r.key().token()))
        },
        MAX_ROWS,
    );
    let shown: Vec<(Group, &SessionRecord)> =
        shown.into_iter().map(|(g, r)| (g, r.borrow())).collect();
    let mut entries = Vec::new();
    let mut heading: Option<Group> = None;
    for (group, record) in &shown {
        if heading != Some(*group) {
            heading = Some(*group);
            entries.push(Entry::Note(group.title().into()));
        }
        let line = on_machine(record, &board::one_line(record));
        let line = if popups.unseen.contains(&record.key().token()) {
            format!("{UNSEEN}{line}")
        } else {
            line
        };
        entries.push(Entry::Choice {
            item: Item::Session(record.key()),
            label: label(&line),
        });
    }
    if pending == 0 {
        entries.push(Entry::Note("No sessions waiting".into()));
    }
    if pending > MAX_ROWS {
        entries.push(Entry::Choice {
            item: Item::More,
            label: format!("{} more…", pending - MAX_ROWS),
        });
    }
    // Rows open with one click, so dismissing has a submenu of its own.
    let dismissable: Vec<Entry> = shown
        .iter()
        .filter(|(group, r)| {
            *group != Group::Active && !popups.dismissed.contains(&r.key().token())
        })
        .map(|(_, r)| Entry::Choice {
            item: Item::Dismiss(r.key()),
            label: label(&on_machine(r, &board::one_line(r))),
        })
        .collect();
    if !dismissable.is_empty() {
        entries.push(Entry::Submenu {
            label: "Dismiss".into(),
            entries: dismissable,
        });
    }
    entries.push(Entry::Separator);
    entries.extend(app_items(popups));
    entries
}

/// The app's own items, below the sessions: the window, the popups' pause, Quit.
fn app_items(popups: &Popups) -> Vec<Entry> {
    let mut entries = vec![Entry::Choice {
        item: Item::Show,
        label: "Show window".into(),
    }];
    if let Some(why) = &popups.held_back {
        entries.push(Entry::Note(why.clone()));
    }
    if popups.paused {
        entries.push(Entry::Choice {
            item: Item::Resume,
            label: "Resume notifications".into(),
        });
    } else {
        let choice = |pause, text: &str| Entry::Choice {
            item: Item::Pause(pause),
            label: text.into(),
        };
        entries.push(Entry::Submenu {
            label: "Pause notifications".into(),
            entries: vec![
                choice(PauseFor::Hour, "For 1 hour"),
                choice(PauseFor::Tomorrow, "Until tomorrow morning"),
                choice(PauseFor::Indefinite, "Until I resume"),
            ],
        });
    }
    entries.push(Entry::Separator);
    entries.push(Entry::Choice {
        item: Item::Quit,
        label: "Quit".into(),
    });
    entries
}

/// The menu until the engine has read the sessions once: saying "No sessions waiting"
/// before anything was read would be a guess.
pub fn starting_menu() -> Vec<Entry> {
    let mut entries = menu::<SessionRecord>(&[], &Popups::default());
    entries[0] = Entry::Note("Reading sessions…".into());
    entries
}

/// Untrusted text as a menu label: one line, capped, and `&` doubled because the menu
/// library reads a single `&` as a mnemonic marker.
/// Another machine's row names it first: the same title may wait on two machines.
fn on_machine(record: &SessionRecord, line: &str) -> String {
    match &record.machine {
        Some(machine) => format!("{machine}: {line}"),
        None => line.to_string(),
    }
}

pub fn label(text: &str) -> String {
    crate::notice::one_line(text, MAX_LABEL).replace('&', "&&")
}

/// The icon's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Look {
    Idle,
    Waiting,
    Ready,
}

impl Look {
    pub fn of<R: Borrow<SessionRecord>>(sessions: &[R]) -> Look {
        let mut look = Look::Idle;
        for session in sessions {
            match Group::of(session.borrow()) {
                Group::Ready => return Look::Ready,
                Group::Waiting => look = Look::Waiting,
                _ => {}
            }
        }
        look
    }
}

/// The tooltip and the count shown beside the icon (macOS; elsewhere it is on the icon).
pub fn count_text(count: usize) -> (String, Option<String>) {
    match count {
        0 => ("Loopflow Tray — nothing waiting".into(), None),
        1 => (
            "Loopflow Tray — 1 session needs you".into(),
            Some("1".into()),
        ),
        n => (
            format!("Loopflow Tray — {n} sessions need you"),
            Some(n.to_string()),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::record;
    use lf_tray_core::{Kind, State};

    fn labels(entries: &[Entry]) -> Vec<String> {
        entries
            .iter()
            .map(|e| match e {
                Entry::Note(t) => format!("[{t}]"),
                Entry::Choice { label, .. } => label.clone(),
                Entry::Submenu { label, .. } => format!("{label} ▸"),
                Entry::Separator => "---".into(),
            })
            .collect()
    }

    #[test]
    fn groups_in_order_with_the_app_items_last() {
        let mut ask = record("ask_1", Kind::Ask, State::Waiting);
        ask.title = "Pick a target".into();
        ask.detail = "loop-decide".into();
        let mut ready = record("run_f", Kind::Flow, State::Ready);
        ready.title = "Plan".into();
        ready.detail = "review".into();
        let mut active = record("run_i", Kind::Interactive, State::Active);
        active.title = "Fix bug".into();
        active.detail = "claude:opus".into();
        let closed = record("run_c", Kind::Interactive, State::Closed);
        let entries = menu(&[active, closed, ask, ready], &Popups::default());
        assert_eq!(
            labels(&entries),
            [
                "[Ready for review]",
                "Plan — review",
                "[Waiting for you]",
                "Pick a target — loop-decide",
                "[Active]",
                "Fix bug — claude:opus",
                "Dismiss ▸",
                "---",
                "Show window",
                "Pause notifications ▸",
                "---",
                "Quit"
            ]
        );
        let Entry::Submenu {
            entries: dismiss, ..
        } = &entries[6]
        else {
            panic!()
        };
        // What waits can be dismissed; an active session has nothing to dismiss.
        assert_eq!(
            labels(dismiss),
            ["Plan — review", "Pick a target — loop-decide"]
        );
        assert_eq!(
            dismiss[0],
            Entry::Choice {
                item: Item::Dismiss("run_f".into()),
                label: "Plan — review".into()
            }
        );
        assert_eq!(
            entries[1],
            Entry::Choice {
                item: Item::Session("run_f".into()),
                label: "Plan — review".into()
            }
        );
    }

    #[test]
    fn a_generation_d_session_leaves_waiting_when_its_attention_clears() {
        use crate::fixtures::record_d;
        let waiting = |id, state: State| {
            let mut r = record_d(id, state, true);
            r.title = id.to_string();
            r.detail = "codex".into();
            r
        };
        let idle = || State::Other("unknown".into());
        let entries = menu(
            &[waiting("a", State::Active), waiting("b", idle())],
            &Popups::default(),
        );
        assert_eq!(
            labels(&entries)[..3],
            ["[Waiting for you]", "a — codex", "b — codex"]
        );
        // Cleared: the attached one is active, the other is not in the tray at all.
        let mut a = waiting("a", State::Active);
        a.set_lf_field("attention", serde_json::Value::Null);
        let a = lf_tray_core::lf::finish(a, None);
        let mut b = waiting("b", idle());
        b.set_lf_field("attention", serde_json::Value::Null);
        let b = lf_tray_core::lf::finish(b, None);
        assert!(!a.needs_you() && !b.needs_you());
        let entries = menu(&[a, b], &Popups::default());
        assert_eq!(labels(&entries)[..3], ["[Active]", "a — codex", "---"]);
    }

    #[test]
    fn the_session_waiting_longest_comes_first() {
        let ask = |id: &str, created| {
            let mut r = record(id, Kind::Ask, State::Waiting);
            r.title = id.to_string();
            r.detail.clear();
            r.created_at = Some(created);
            r
        };
        // Newest first by lf's times, until the tray knows since when each waits.
        let sessions = [ask("late", 300), ask("early", 100)];
        let popups = Popups {
            since: [("late".to_string(), 50), ("early".to_string(), 200)].into(),
            ..Popups::default()
        };
        assert_eq!(labels(&menu(&sessions, &popups))[1..3], ["late", "early"]);
        assert_eq!(
            labels(&menu(&sessions, &Popups::default()))[1..3],
            ["late", "early"]
        );
        let popups = Popups {
            since: [("late".to_string(), 500), ("early".to_string(), 200)].into(),
            ..Popups::default()
        };
        assert_eq!(labels(&menu(&sessions, &popups))[1..3], ["early", "late"]);
    }

    #[test]
    fn newest_first_and_the_rest_behind_more() {
        let sessions: Vec<_> = (0..13)
            .map(|i| {
                let mut r = record(&format!("ask_{i:02}"), Kind::Ask, State::Waiting);
                r.title = format!("Ask {i:02}");
                r.detail.clear();
                r.created_at = Some(1000 + i);
                r
            })
            .collect();
        let paused = Popups {
            held_back: Some("Notifications paused until 14:05".into()),
            paused: true,
            dismissed: ["ask_12".to_string()].into(),
            unseen: ["ask_11".to_string()].into(),
            since: Default::default(),
        };
        let entries = menu(&sessions, &paused);
        let labels = labels(&entries);
        assert_eq!(labels[0], "[Waiting for you]");
        assert_eq!(labels[1], "Ask 12");
        assert_eq!(labels[2], "● Ask 11", "not shown to the person: marked");
        assert_eq!(labels[10], "Ask 03");
        assert_eq!(labels[11], "3 more…");
        assert_eq!(
            entries[11],
            Entry::Choice {
                item: Item::More,
                label: "3 more…".into()
            }
        );
        assert!(labels.contains(&"Resume notifications".to_string()));
        assert!(labels.contains(&"[Notifications paused until 14:05]".to_string()));
        let Entry::Submenu {
            entries: dismiss, ..
        } = &entries[12]
        else {
            panic!("{labels:?}")
        };
        assert_eq!(dismiss.len(), 9, "the dismissed one is not offered again");
    }

    #[test]
    fn empty_menu_says_so_once_the_sessions_were_read() {
        let closed = record("run_c", Kind::Interactive, State::Closed);
        assert_eq!(
            labels(&menu(&[closed], &Popups::default()))[..2],
            ["[No sessions waiting]", "---"]
        );
        assert_eq!(
            labels(&starting_menu()),
            [
                "[Reading sessions…]",
                "---",
                "Show window",
                "Pause notifications ▸",
                "---",
                "Quit"
            ]
        );
    }

    #[test]
    fn labels_are_single_lines_capped_and_mnemonic_safe() {
        let mut r = record("ask_1", Kind::Ask, State::Waiting);
        r.title = "Tom & Jerry\nsecond line".into();
        r.detail = "x".repeat(200);
        let Entry::Choice { label, .. } = &menu(&[r], &Popups::default())[1] else {
            panic!()
        };
        assert!(label.starts_with("Tom && Jerry second line — xxx"));
        assert!(label.ends_with('…'));
        assert!(label.chars().count() <= MAX_LABEL + 1);
    }

    #[test]
    fn another_machines_rows_name_it() {
        let mut r = record("ask_1", Kind::Ask, State::Waiting);
        r.machine = Some("build-box".into());
        let local = record("ask_1", Kind::Ask, State::Waiting);
        let entries = menu(&[r, local], &Popups::default());
        let rows: Vec<(&Item, &String)> = entries
            .iter()
            .filter_map(|e| match e {
                Entry::Choice {
                    item: item @ Item::Session(_),
                    label,
                } => Some((item, label)),
                _ => None,
            })
            .collect();
        assert_eq!(rows.len(), 2, "the same id on two machines is two rows");
        assert!(rows.iter().any(|(_, l)| l.starts_with("build-box: ")));
        assert_ne!(rows[0].0.id(), rows[1].0.id());
    }

    #[test]
    fn item_ids_round_trip() {
        for item in [
            Item::Session("ask_1".into()),
            Item::Session("weird:id".into()),
            Item::Session(SessionKey {
                machine: Some("build-box".into()),
                id: "ask_1".into(),
            }),
            Item::Dismiss("dismiss:x".into()),
            Item::More,
            Item::Show,
            Item::Pause(PauseFor::Hour),
            Item::Pause(PauseFor::Tomorrow),
            Item::Pause(PauseFor::Indefinite),
            Item::Resume,
            Item::Quit,
        ] {
            assert_eq!(Item::parse(&item.id()), Some(item));
        }
        assert_eq!(Item::parse("note:3"), None);
    }

    #[test]
    fn the_icon_shows_the_most_pressing_state() {
        let waiting = record("a", Kind::Ask, State::Waiting);
        let ready = record("b", Kind::Flow, State::Ready);
        let active = record("c", Kind::Interactive, State::Active);
        assert_eq!(Look::of::<SessionRecord>(&[]), Look::Idle);
        assert_eq!(Look::of(std::slice::from_ref(&active)), Look::Idle);
        assert_eq!(Look::of(&[active.clone(), waiting.clone()]), Look::Waiting);
        assert_eq!(Look::of(&[waiting, ready, active]), Look::Ready);
        assert_eq!(count_text(0).1, None);
        assert_eq!(count_text(3).1.as_deref(), Some("3"));
    }
}
