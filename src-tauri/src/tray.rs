//! The tray: an icon that shows whether anything waits, the count (on the icon on Linux,
//! beside it on macOS), and a menu that reaches every action (Linux trays are menu-only).
//!
//! The menu is a plain model built from the sessions (tested without a display), turned into
//! Tauri menu items on the main thread each time the engine's list changes.

use std::collections::BTreeSet;

use lf_tray_core::{SessionKey, SessionRecord};
use tauri::image::Image;
use tauri::menu::{IsMenuItem, Menu, MenuItem, PredefinedMenuItem, Submenu};
use tauri::tray::{MouseButton, MouseButtonState, TrayIcon, TrayIconBuilder, TrayIconEvent};
use tauri::{AppHandle, Manager, Runtime};

use crate::board::{self, Group};
use crate::notification::PauseFor;

pub const TRAY_ID: &str = "lf-tray";

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
pub fn menu(sessions: &[SessionRecord], popups: &Popups) -> Vec<Entry> {
    // The menu's snapshot of the popups carries no waiting times: today's order.
    let pending: Vec<_> = board::ordered(sessions, |r| popups.since.get(&r.key().token()).copied())
        .into_iter()
        .filter(|(group, r)| {
            // A stopped agent the person dismissed is theirs to resume from the window.
            group.is_pending()
                && !(*group == Group::Stopped && popups.dismissed.contains(&r.key().token()))
        })
        .collect();
    let mut entries = Vec::new();
    let mut heading: Option<Group> = None;
    for (group, record) in pending.iter().take(MAX_ROWS) {
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
    if pending.is_empty() {
        entries.push(Entry::Note("No sessions waiting".into()));
    }
    if pending.len() > MAX_ROWS {
        entries.push(Entry::Choice {
            item: Item::More,
            label: format!("{} more…", pending.len() - MAX_ROWS),
        });
    }
    // Rows open with one click, so dismissing has a submenu of its own.
    let dismissable: Vec<Entry> = pending
        .iter()
        .take(MAX_ROWS)
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
    entries.push(Entry::Choice {
        item: Item::Show,
        label: "Show window".into(),
    });
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
fn starting_menu() -> Vec<Entry> {
    let mut entries = menu(&[], &Popups::default());
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

fn label(text: &str) -> String {
    crate::notification::one_line(text, MAX_LABEL).replace('&', "&&")
}

/// The icon's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Look {
    Idle,
    Waiting,
    Ready,
}

impl Look {
    pub fn of(sessions: &[SessionRecord]) -> Look {
        let groups: Vec<Group> = sessions.iter().map(Group::of).collect();
        if groups.contains(&Group::Ready) {
            Look::Ready
        } else if groups.contains(&Group::Waiting) {
            Look::Waiting
        } else {
            Look::Idle
        }
    }

    fn png(self) -> &'static [u8] {
        match self {
            Look::Idle => include_bytes!("../../icons/tray-idle.png"),
            Look::Waiting => include_bytes!("../../icons/tray-waiting.png"),
            Look::Ready => include_bytes!("../../icons/tray-ready.png"),
        }
    }
}

/// The tooltip and the count shown beside the icon (macOS; elsewhere it is on the icon).
fn count_text(count: usize) -> (String, Option<String>) {
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

/// Whether the tray is made at start, before a tray host is known to be there. On Linux and
/// the BSDs it is a StatusNotifierItem (tray-icon's ksni backend), which cannot be made
/// without a watcher to register with (tray-icon then fails: "failed to register to the
/// StatusNotifierWatcher"); it is made once a host is there (see `tray_host`), and
/// registers again by itself with a watcher that restarts. With libayatana-appindicator
/// before it, a start without a host fell back to GTK's X11-only status icon, which on
/// Wayland failed a GTK assertion on every update (`gtk_widget_get_scale_factor`, three at a
/// start under sway).
pub fn at_start() -> bool {
    cfg!(not(all(unix, not(target_os = "macos"))))
}

/// Make the tray on the main thread once a host is there, if it was not made at start (see
/// [`at_start`]), and fill it with `refresh`.
#[cfg(all(unix, not(target_os = "macos")))]
pub fn make_late<R: Runtime>(
    app: &AppHandle<R>,
    on_item: impl Fn(&AppHandle<R>, Item) + Send + Sync + 'static,
    refresh: impl FnOnce(&AppHandle<R>) + Send + 'static,
) {
    let handle = app.clone();
    let result = app.run_on_main_thread(move || {
        if handle.tray_by_id(TRAY_ID).is_some() {
            return;
        }
        match create(&handle, on_item) {
            Ok(_) => {
                tracing::info!("TRAY made now that a tray host is there");
                refresh(&handle);
            }
            Err(e) => tracing::warn!("could not make the tray: {e}"),
        }
    });
    if let Err(e) = result {
        tracing::warn!("could not reach the main thread: {e}");
    }
}

/// Create the tray with an empty list; `refresh` fills it. `on_item` runs for each choice.
pub fn create<R: Runtime>(
    app: &AppHandle<R>,
    on_item: impl Fn(&AppHandle<R>, Item) + Send + Sync + 'static,
) -> tauri::Result<TrayIcon<R>> {
    let menu = build(app, &starting_menu())?;
    let builder = TrayIconBuilder::with_id(TRAY_ID);
    // Where the title is not drawn beside the icon, it names the item for the host.
    let builder = if COUNT_ON_ICON {
        builder.title(APP_TITLE)
    } else {
        builder
    };
    builder
        .icon(Image::from_bytes(Look::Idle.png())?)
        .tooltip(count_text(0).0)
        .menu(&menu)
        .show_menu_on_left_click(true)
        .on_tray_icon_event(|tray, event| {
            if ACTIVATE_SHOWS_WINDOW && activated(&event) {
                tracing::info!("TRAY activated");
                crate::window::show(tray.app_handle(), None);
            }
        })
        .on_menu_event(move |app, event| {
            let id = event.id().as_ref();
            tracing::info!("MENU {id}");
            match Item::parse(id) {
                Some(item) => on_item(app, item),
                None => tracing::warn!("unknown menu item {id}"),
            }
        })
        .build(app)
}

/// Linux and the BSDs: the host's primary action on the item (`Activate`: a left click on
/// xfce4-panel's and lxqt-panel's trays) reaches the app as a left click, and nothing else
/// answers it: the host draws the menu (on a right click), and tray-icon's ksni item does not
/// ask it to on a left one (`show_menu_on_left_click` is not read there). It shows the window,
/// as the menu's *Show window* does. Elsewhere the left click opens the menu.
const ACTIVATE_SHOWS_WINDOW: bool = cfg!(all(unix, not(target_os = "macos")));

/// Whether a tray event is the item's activation: a left click, released (how tray-icon's
/// ksni backend passes `Activate` on; `SecondaryActivate` comes as the middle button).
fn activated(event: &TrayIconEvent) -> bool {
    matches!(
        event,
        TrayIconEvent::Click {
            button: MouseButton::Left,
            button_state: MouseButtonState::Up,
            ..
        }
    )
}

/// Show these sessions in the tray. Safe to call from any thread: the work happens on the
/// main thread, where the platform's menu lives.
pub fn refresh<R: Runtime>(app: &AppHandle<R>, sessions: Vec<SessionRecord>, popups: Popups) {
    let handle = app.clone();
    let result = app.run_on_main_thread(move || {
        if let Err(e) = apply(&handle, &sessions, &popups) {
            tracing::warn!("could not update the tray: {e}");
        }
    });
    if let Err(e) = result {
        tracing::warn!("could not reach the main thread: {e}");
    }
}

fn apply<R: Runtime>(
    app: &AppHandle<R>,
    sessions: &[SessionRecord],
    popups: &Popups,
) -> tauri::Result<()> {
    let Some(tray) = app.tray_by_id(TRAY_ID) else {
        return Ok(());
    };
    let entries = menu(sessions, popups);
    let look = Look::of(sessions);
    let state = app.state::<Shown>();
    let mut shown = state.0.lock().unwrap_or_else(|e| e.into_inner());
    // A new menu renumbers every item for the tray host, and a click on a menu it replaced
    // is lost; a new icon is a file the host reads. Change each only when it changed.
    if shown.entries != entries {
        tray.set_menu(Some(build(app, &entries)?))?;
        let items = entries
            .iter()
            .filter(|e| !matches!(e, Entry::Separator))
            .count();
        tracing::debug!("TRAY_MENU {items}");
        shown.entries = entries;
    }
    let count = board::needing_person(sessions);
    let (tooltip, title) = count_text(count);
    let drawn = if COUNT_ON_ICON { count } else { 0 };
    if shown.look != Some((look, drawn)) {
        tray.set_icon(Some(icon(look, drawn)?))?;
        shown.look = Some((look, drawn));
    }
    if COUNT_ON_ICON {
        // The item's title names the app in the host's list of tray items; the count is
        // on the icon.
        tray.set_title(Some(APP_TITLE))?;
    } else {
        tray.set_title(title.as_deref())?;
    }
    tray.set_tooltip(Some(tooltip))?;
    Ok(())
}

/// Linux and the BSDs: a StatusNotifierItem has no place for a number beside its icon that
/// every host draws (see [`crate::badge`]). macOS shows the title beside the icon.
const COUNT_ON_ICON: bool = cfg!(all(unix, not(target_os = "macos")));
const APP_TITLE: &str = "Loopflow Tray";

/// The icon of this look, with the count drawn on it (none for 0).
fn icon(look: Look, count: usize) -> tauri::Result<Image<'static>> {
    let plain = Image::from_bytes(look.png())?;
    if count == 0 {
        return Ok(plain.to_owned());
    }
    let (width, height) = (plain.width(), plain.height());
    let mut rgba = plain.rgba().to_vec();
    crate::badge::draw(&mut rgba, width, height, count);
    Ok(Image::new_owned(rgba, width, height))
}

/// What the tray shows now (managed app state).
#[derive(Default)]
pub struct Shown(std::sync::Mutex<ShownState>);

#[derive(Default)]
struct ShownState {
    /// The icon drawn: its look and the count on it.
    look: Option<(Look, usize)>,
    entries: Vec<Entry>,
}

fn build<R: Runtime>(app: &AppHandle<R>, entries: &[Entry]) -> tauri::Result<Menu<R>> {
    let menu = Menu::new(app)?;
    for item in items(app, entries, "")? {
        menu.append(item.as_ref())?;
    }
    Ok(menu)
}

/// The menu items of these entries; `scope` keeps the disabled notes' ids unique across
/// submenus.
fn items<R: Runtime>(
    app: &AppHandle<R>,
    entries: &[Entry],
    scope: &str,
) -> tauri::Result<Vec<Box<dyn IsMenuItem<R>>>> {
    let mut items: Vec<Box<dyn IsMenuItem<R>>> = Vec::new();
    for (n, entry) in entries.iter().enumerate() {
        match entry {
            Entry::Note(text) => {
                // Disabled items still need ids unique within the menu.
                items.push(Box::new(MenuItem::with_id(
                    app,
                    format!("note:{scope}{n}"),
                    label(text),
                    false,
                    None::<&str>,
                )?));
            }
            Entry::Choice { item, label } => {
                items.push(Box::new(MenuItem::with_id(
                    app,
                    item.id(),
                    label,
                    true,
                    None::<&str>,
                )?));
            }
            Entry::Submenu { label, entries } => {
                let children = self::items(app, entries, &format!("{scope}{n}."))?;
                let children: Vec<&dyn IsMenuItem<R>> =
                    children.iter().map(|c| c.as_ref()).collect();
                items.push(Box::new(Submenu::with_items(app, label, true, &children)?));
            }
            Entry::Separator => items.push(Box::new(PredefinedMenuItem::separator(app)?)),
        }
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lf_tray_core::{Kind, State};
    use lf_tray_surface::fixtures::record;

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
        use lf_tray_surface::fixtures::record_d;
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
        a.extra.insert("attention".into(), serde_json::Value::Null);
        let a = lf_tray_core::session::finish(a, None);
        let mut b = waiting("b", idle());
        b.extra.insert("attention".into(), serde_json::Value::Null);
        let b = lf_tray_core::session::finish(b, None);
        assert!(!a.needs_you && !b.needs_you);
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
    fn only_a_released_left_click_activates() {
        let click = |button, button_state| TrayIconEvent::Click {
            id: TRAY_ID.into(),
            position: tauri::PhysicalPosition::new(4.0, 778.0),
            rect: tauri::Rect::default(),
            button,
            button_state,
        };
        assert!(activated(&click(MouseButton::Left, MouseButtonState::Up)));
        assert!(!activated(&click(
            MouseButton::Left,
            MouseButtonState::Down
        )));
        assert!(
            !activated(&click(MouseButton::Middle, MouseButtonState::Up)),
            "SecondaryActivate"
        );
        assert!(!activated(&click(MouseButton::Right, MouseButtonState::Up)));
    }

    #[test]
    fn the_icon_shows_the_most_pressing_state() {
        let waiting = record("a", Kind::Ask, State::Waiting);
        let ready = record("b", Kind::Flow, State::Ready);
        let active = record("c", Kind::Interactive, State::Active);
        assert_eq!(Look::of(&[]), Look::Idle);
        assert_eq!(Look::of(std::slice::from_ref(&active)), Look::Idle);
        assert_eq!(Look::of(&[active.clone(), waiting.clone()]), Look::Waiting);
        assert_eq!(Look::of(&[waiting, ready, active]), Look::Ready);
        assert_eq!(count_text(0).1, None);
        assert_eq!(count_text(3).1.as_deref(), Some("3"));
    }
}
