//! What each notification server draws of a popup's buttons, measured on each: which
//! buttons to send it, and whether it keeps them when a popup is replaced.

use super::{Notice, ANSWER, DEFAULT, OPEN};

/// Servers that offer every action a popup has: dunst and mako list them in a menu of
/// their own (dunst's context menu, `makoctl menu`), and Plasma 5.27 draws them all as
/// buttons in a row that wraps (its `NotificationItem.qml`: one button per action, no cap).
const EVERY_ACTION: [&str; 3] = ["dunst", "mako", "Plasma"];
/// The most buttons GNOME Shell draws on a popup (`MAX_NOTIFICATION_BUTTONS` in its 43
/// message tray); later ones are dropped.
const GNOME_SHELL_BUTTONS: usize = 3;
/// Servers (by `GetServerInformation`'s name) that draw the `default` action as a button
/// of its own beside the others, measured with xfce4-notifyd 0.7 and lxqt-notificationd
/// 1.2; the others take `default` as the click on the popup and draw no button for it.
/// xfce4-notifyd 0.7.3 calls itself `Xfce Notify Daemon` (tests/e2e/desktops.sh).
pub(super) const DEFAULT_AS_A_BUTTON: [&str; 3] =
    ["Xfce Notify Daemon", "xfce4-notifyd", "lxqt-notificationd"];

/// Whether the server named `server` keeps a popup's buttons when the app replaces it
/// (`replaces_id`). GNOME Shell 43 does not: its daemon updates the shown banner, which
/// clears the banner's buttons, and only then adds the new actions to the notification
/// without telling the banner, so a replaced banner shows no buttons at all (read in its
/// `notificationDaemon.js` and `messageTray.js`, seen in tests/e2e/gnome.py). There the old
/// popup is closed and the new one shown in its place.
pub fn replaces_in_place(server: &str) -> bool {
    server != "gnome-shell"
}

/// How many buttons the server named `server` draws at most; `None`: all of them.
fn most_buttons(server: &str) -> Option<usize> {
    match server {
        s if EVERY_ACTION.contains(&s) => None,
        "gnome-shell" => Some(GNOME_SHELL_BUTTONS),
        // Not measured: as GNOME's, so that no option is ever drawn off the popup.
        _ => Some(GNOME_SHELL_BUTTONS),
    }
}

/// The `(key, label)` pairs to send to the server named `server`.
///
/// A session's popup offers `open` beside `default` (both "Open", both open the session) so
/// that servers which draw no button for `default` still show an Open button. Where
/// `default` is a button already, that would read "Open" twice: `default` stays, since it
/// is also what a click on the popup sends where the server has such a click, and `open`
/// goes. A question's options replace its Answer… where the server draws every one of
/// them; where it draws fewer buttons than the popup has, Open goes first (the popup's
/// click does the same).
pub fn buttons<'a>(server: &str, notice: &'a Notice) -> Vec<(&'a str, &'a str)> {
    let most = most_buttons(server);
    let default_drawn = DEFAULT_AS_A_BUTTON.contains(&server);
    let mut actions: Vec<(&str, &str)> = notice.actions.to_vec();
    let fits = |n: usize| !matches!(most, Some(m) if n > m);
    if !notice.choices.is_empty() && fits(notice.choices.len()) {
        let at = actions.iter().position(|(k, _)| *k == ANSWER);
        let options = notice.choices.iter().map(|(k, l)| (*k, l.as_str()));
        match at {
            Some(at) => {
                actions.splice(at..=at, options);
            }
            None => actions.extend(options),
        }
    }
    let has_default = actions.iter().any(|(k, _)| *k == DEFAULT);
    if default_drawn && has_default {
        actions.retain(|(k, _)| *k != OPEN);
    }
    let drawn = |actions: &[(&str, &str)]| {
        actions
            .iter()
            .filter(|(k, _)| default_drawn || *k != DEFAULT)
            .count()
    };
    if !fits(drawn(&actions)) && has_default {
        actions.retain(|(k, _)| *k != OPEN);
    }
    actions
}
