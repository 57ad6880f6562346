//! The tray: an icon that shows whether anything waits, the count (on the icon on Linux,
//! beside it on macOS), and a menu that reaches every action (Linux trays are menu-only).
//!
//! The menu is a plain model built from the sessions (tested without a display), turned into
//! Tauri menu items on the main thread each time the engine's list changes.

use std::sync::Arc;

use lf_tray_core::engine::Sessions;
use lf_tray_core::SessionRecord;
use tauri::image::Image;
use tauri::menu::{IsMenuItem, Menu, MenuItem, PredefinedMenuItem, Submenu};
use tauri::tray::{MouseButton, MouseButtonState, TrayIcon, TrayIconBuilder, TrayIconEvent};
use tauri::{AppHandle, Manager, Runtime};

use lf_tray_surface::board;
use lf_tray_surface::menu::{count_text, label, menu, starting_menu, Entry, Item, Look, Popups};

pub const TRAY_ID: &str = "lf-tray";

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
        .icon(Image::from_bytes(png(Look::Idle))?)
        .tooltip(count_text(0).0)
        .menu(&menu)
        .show_menu_on_left_click(true)
        .on_tray_icon_event(|tray, event| {
            if ACTIVATE_SHOWS_WINDOW && activated(&event) {
                tracing::info!("TRAY activated");
                crate::platform::page::show(tray.app_handle(), None);
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
pub fn refresh<R: Runtime>(app: &AppHandle<R>, sessions: Sessions, popups: Popups) {
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
    sessions: &[Arc<SessionRecord>],
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
/// every host draws (see [`crate::platform::badge`]). macOS shows the title beside the icon.
const COUNT_ON_ICON: bool = cfg!(all(unix, not(target_os = "macos")));
const APP_TITLE: &str = "Loopflow Tray";

/// The icon of this look, with the count drawn on it (none for 0).
fn icon(look: Look, count: usize) -> tauri::Result<Image<'static>> {
    let plain = Image::from_bytes(png(look))?;
    if count == 0 {
        return Ok(plain.to_owned());
    }
    let (width, height) = (plain.width(), plain.height());
    let mut rgba = plain.rgba().to_vec();
    crate::platform::badge::draw(&mut rgba, width, height, count);
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

/// The icon's picture for this look.
fn png(look: Look) -> &'static [u8] {
    match look {
        Look::Idle => include_bytes!("../../../icons/tray-idle.png"),
        Look::Waiting => include_bytes!("../../../icons/tray-waiting.png"),
        Look::Ready => include_bytes!("../../../icons/tray-ready.png"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
