//! The three keys through the desktop's own shortcuts portal
//! (`org.freedesktop.portal.GlobalShortcuts`: Plasma 5.27 and later, GNOME 48 and later,
//! Hyprland), where the desktop offers it: the person's keyboard settings hold the
//! triggers, the tray only asks for them and hears them pressed. An adapter: an activation
//! goes to the desk as `lf-tray answer` does (one more answer from a key); the desk decides,
//! and ignores it while nothing waits.
//!
//! On a connection of its own, so that `Register` (the portal's host-app registry, 1.19
//! and later) is its first call to the portal: the portal fixes a connection's app id at
//! its first call. xdg-desktop-portal 1.16 (Debian 12) has no registry; it takes an
//! unsandboxed app's id from its systemd scope (`app-<id>-….scope`) or else leaves it
//! empty, and Plasma 5.27's backend names the kglobalaccel component after the app id and
//! the session's token together — so the token is fixed ([`SESSION_TOKEN`]) and the
//! component, and the triggers the person set on it, are the same at every start.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use lf_tray_surface::desk::Input;
use lf_tray_surface::keys::{Key, Triggers};
use tokio::sync::watch;
use zbus::{Connection, MatchRule, MessageStream, OwnedObjectPath, OwnedVariant, Variant};

use crate::shell::Shell;

const PORTAL: &str = "org.freedesktop.portal.Desktop";
const PATH: &str = "/org/freedesktop/portal/desktop";
const SHORTCUTS: &str = "org.freedesktop.portal.GlobalShortcuts";
const REGISTRY: &str = "org.freedesktop.host.portal.Registry";
const REQUEST: &str = "org.freedesktop.portal.Request";
const SESSION: &str = "org.freedesktop.portal.Session";
/// The app ids the portal may know the tray by, each the name of a desktop entry it checks
/// is installed: the reverse-DNS one first (the identifier in tauri.conf.json), which GNOME
/// 48's shortcuts need (its provider discards an id without a dot: measured; the package
/// installs it hidden, packaging/dev.loopflow.tray.desktop), then `lf-tray.desktop`, the
/// entry in the menus, which the popups' `desktop-entry` hint names (a build from source
/// may have only that one, in the person's own applications folder).
const APP_IDS: [&str; 2] = ["dev.loopflow.tray", "lf-tray"];
/// The session's token: Plasma 5.27's component in System Settings → Shortcuts is the app
/// id followed by it (just this, where the portal knows no app id); Plasma 6 names it after
/// the app id alone (`token_` and this without one).
const SESSION_TOKEN: &str = "loopflow_tray";
/// What the tray says when a bind gave no keys: the person cancelled the desktop's dialog,
/// or the desktop refused (GNOME 48 answers both alike). No grab of the tray's own follows.
pub(super) const DECLINED: &str = "The desktop gave no keys (its dialog was cancelled, or it \
                                   refused)";
/// How long the portal may take to answer creating a session or listing its shortcuts:
/// its backend answers these at once (measured on Plasma 5.27: under 100 ms, kglobalaccel
/// started by the first); 25 s is D-Bus's own default reply timeout, for a hung backend.
const ANSWER_WAIT: Duration = Duration::from_secs(25);
/// Binding may show the desktop's dialog (GNOME 48's *Add Keyboard Shortcuts*), which
/// waits for the person's Add or Cancel: ten minutes to read it and choose.
const BIND_WAIT: Duration = Duration::from_secs(600);

/// The shortcuts asked for: the id (the key's word), what the desktop's settings call it,
/// and the trigger preferred, in the portal's shortcut notation ([`Key::trigger`] says
/// why Super+Alt and these letters).
fn asked() -> Vec<(&'static str, HashMap<&'static str, Variant<'static>>)> {
    Key::ALL
        .iter()
        .map(|key| {
            let (description, trigger) = match key {
                Key::Allow => ("Allow what the newest Loopflow popup asks", "LOGO+ALT+y"),
                Key::Deny => ("Deny what the newest Loopflow popup asks", "LOGO+ALT+n"),
                Key::Open => ("Open what the newest Loopflow popup is about", "LOGO+ALT+o"),
            };
            let options = HashMap::from([
                ("description", Variant::from(description)),
                ("preferred_trigger", Variant::from(trigger)),
            ]);
            (key.word(), options)
        })
        .collect()
}

/// A session with the portal, on its own connection.
pub(super) struct Portal {
    bus: Connection,
    session: OwnedObjectPath,
    /// The portal's signals for this session (Activated, ShortcutsChanged).
    heard: MessageStream,
    /// The path element the portal makes of this connection's name, for request handles.
    sender: String,
    asked: u32,
}

impl Portal {
    /// Register, then open a session; `Err` where the desktop offers no shortcuts portal
    /// (then the keys are held some other way).
    pub(super) async fn open() -> Result<Portal, String> {
        let bus = Connection::session()
            .await
            .map_err(|e| format!("no session bus: {e}"))?;
        let app_id = installed_app_id();
        let register = bus
            .call_method(
                Some(PORTAL),
                PATH,
                Some(REGISTRY),
                "Register",
                &(app_id, HashMap::<&str, Variant>::new()),
            )
            .await;
        match register.map_err(|e| e.to_string()) {
            Ok(_) => tracing::info!("KEYS registered with the portal as {app_id}"),
            // 1.16 has no registry: it knows the app by its systemd scope, or not at all.
            Err(e) if e.contains("UnknownMethod") || e.contains("UnknownInterface") => {
                tracing::info!("KEYS the portal has no registry: it names the app itself")
            }
            Err(e) if e.contains("ServiceUnknown") => return Err("no desktop portal".into()),
            Err(e) => tracing::warn!("KEYS the portal did not register {app_id}: {e}"),
        }
        let sender = bus
            .unique_name()
            .map(|n| n.as_str().trim_start_matches(':').replace('.', "_"))
            .ok_or("no name on the bus")?;
        let session = format!("{PATH}/session/{sender}/{SESSION_TOKEN}");
        let rule = MatchRule::builder()
            .msg_type(zbus::message::Type::Signal)
            .interface(SHORTCUTS)
            .path(PATH)
            .arg_path(0, session.as_str())
            .build()
            .map_err(|e| e.to_string())?;
        let heard = MessageStream::for_match_rule(rule, &bus, None)
            .await
            .map_err(|e| e.to_string())?;
        let mut portal = Portal {
            bus,
            session: OwnedObjectPath::try_from(session).map_err(|e| e.to_string())?,
            heard,
            sender,
            asked: 0,
        };
        // Plasma 5.27's backend sets the shortcuts from the session's options (its
        // BindShortcuts only opens System Settings); later portals drop the option.
        let shortcuts = asked();
        let options = HashMap::from([
            ("session_handle_token", Variant::from(SESSION_TOKEN)),
            ("shortcuts", Variant::from(shortcuts)),
        ]);
        portal
            .ask("CreateSession", None, options, ANSWER_WAIT)
            .await?;
        Ok(portal)
    }

    /// A portal request: the call, then its `Response` on the request's own path
    /// (listened for before calling, so it cannot come first). The answer's results, or
    /// why none.
    async fn ask(
        &mut self,
        method: &str,
        shortcuts: Option<Vec<(&str, HashMap<&str, Variant<'_>>)>>,
        mut options: HashMap<&str, Variant<'_>>,
        wait: Duration,
    ) -> Result<HashMap<String, OwnedVariant>, String> {
        self.asked += 1;
        let token = format!("lf_tray_{}", self.asked);
        let handle = format!("{PATH}/request/{}/{token}", self.sender);
        let rule = MatchRule::builder()
            .msg_type(zbus::message::Type::Signal)
            .interface(REQUEST)
            .member("Response")
            .path(handle.as_str())
            .build()
            .map_err(|e| e.to_string())?;
        let mut response = MessageStream::for_match_rule(rule, &self.bus, None)
            .await
            .map_err(|e| e.to_string())?;
        options.insert("handle_token", Variant::from(token.as_str()));
        let session = &self.session;
        let called = match (method, shortcuts) {
            ("CreateSession", _) => self.call(method, &(options,)).await,
            ("BindShortcuts", Some(shortcuts)) => {
                self.call(method, &(session, shortcuts, "", options)).await
            }
            _ => self.call(method, &(session, options)).await,
        };
        called.map_err(|e| format!("{method}: {e}"))?;
        let answer = tokio::time::timeout(wait, response.next())
            .await
            .map_err(|_| format!("{method}: the portal did not answer"))?
            .ok_or_else(|| format!("{method}: the bus closed"))?
            .map_err(|e| e.to_string())?;
        let (code, results): (u32, HashMap<String, OwnedVariant>) =
            answer.body().deserialize().map_err(|e| e.to_string())?;
        match code {
            0 => Ok(results),
            1 => Err(format!("{method}: cancelled")),
            _ => Err(format!("{method}: the portal refused")),
        }
    }

    async fn call<B>(&self, method: &str, body: &B) -> zbus::Result<zbus::Message>
    where
        B: serde::Serialize + zbus::DynamicType,
    {
        self.bus
            .call_method(Some(PORTAL), PATH, Some(SHORTCUTS), method, body)
            .await
    }

    /// The triggers the desktop gave now. The shortcuts are bound only where the desktop
    /// lists none of them yet (never bound for this app): binding may show the desktop's
    /// dialog each time and nothing unbinds, so one listed with no trigger (the person
    /// cleared it) stays so. At most once per switch-on: this runs once per session. A bind
    /// that gave no keys is remembered ([`Declined`]): a later start of the tray does not
    /// ask again (GNOME would show its dialog at each), only the person switching the
    /// setting on (`switched_on`).
    pub(super) async fn triggers(
        &mut self,
        switched_on: bool,
    ) -> Result<Vec<(Key, String)>, String> {
        let listed = self.list().await?;
        let listed = listed.get("shortcuts").map(|v| &**v);
        let declined = Declined::at();
        if !listed_ids(listed).is_empty() {
            declined.forget();
            return Ok(given(listed));
        }
        if declined.told() && !switched_on {
            return Err(DECLINED.into());
        }
        tracing::info!("KEYS binding the shortcuts with the portal");
        let bound = self
            .ask("BindShortcuts", Some(asked()), HashMap::new(), BIND_WAIT)
            .await;
        let given = match bound {
            Ok(results) => given(results.get("shortcuts").map(|v| &**v)),
            // GNOME 48 answers a bind it made as refused (49 fixed it; measured on 48.7:
            // the shortcuts bound, ShortcutsChanged sent, the answer 2), and a cancelled
            // dialog alike: its list says which.
            Err(why) => {
                tracing::info!("KEYS {why}");
                let listed = self.list().await?;
                given(listed.get("shortcuts").map(|v| &**v))
            }
        };
        if given.is_empty() {
            declined.tell();
            return Err(DECLINED.into());
        }
        declined.forget();
        Ok(given)
    }

    async fn list(&mut self) -> Result<HashMap<String, OwnedVariant>, String> {
        self.ask("ListShortcuts", None, HashMap::new(), ANSWER_WAIT)
            .await
    }

    /// Answer what the person presses until the setting turns off (`Ok`) or the portal
    /// goes; the triggers followed as the person changes them.
    pub(super) async fn held(
        mut self,
        shell: &Arc<Shell>,
        on: &mut watch::Receiver<bool>,
        mut triggers: Vec<(Key, String)>,
    ) -> Result<(), String> {
        tell(shell, &triggers);
        loop {
            tokio::select! {
                changed = on.changed() => {
                    if changed.is_err() || !*on.borrow_and_update() {
                        self.close().await;
                        tracing::info!("KEYS off: the portal's session closed");
                        return Ok(());
                    }
                }
                heard = self.heard.next() => {
                    let Some(Ok(message)) = heard else {
                        return Err("the shortcuts portal went away".into());
                    };
                    let header = message.header();
                    match header.member().map(|m| m.as_str()) {
                        Some("Activated") => {
                            let Ok((_, id, ..)) = message
                                .body()
                                .deserialize::<(OwnedObjectPath, String, u64, HashMap<String, OwnedVariant>)>()
                            else {
                                continue;
                            };
                            let Some(&(key, ref trigger)) = triggers.iter().find(|(k, _)| k.word() == id) else {
                                continue;
                            };
                            let trigger = trigger.clone();
                            tauri::async_runtime::spawn(super::pressed(Arc::clone(shell), key, trigger));
                        }
                        Some("ShortcutsChanged") => {
                            // (o, a(sa{sv})): the list read as the answers' is.
                            let body = message.body();
                            let Ok(changed) = body.deserialize::<zbus::Structure>() else {
                                continue;
                            };
                            // The bind's own change comes too, after its answer: said once.
                            let now = given(changed.fields().get(1));
                            if now != triggers {
                                triggers = now;
                                tell(shell, &triggers);
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
    }

    /// Close the session: the desktop stops passing on its keys (they stay the person's).
    async fn close(&self) {
        let _ = self
            .bus
            .call_method(
                Some(PORTAL),
                self.session.as_str(),
                Some(SESSION),
                "Close",
                &(),
            )
            .await;
    }
}

/// That a bind gave no keys, kept between the tray's starts:
/// `$XDG_STATE_HOME/lf-tray/shortcuts-declined`.
struct Declined(Option<std::path::PathBuf>);

impl Declined {
    fn at() -> Declined {
        let state = std::env::var_os("XDG_STATE_HOME")
            .map(std::path::PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| dirs::home_dir().map(|h| h.join(".local/state")));
        Declined(state.map(|s| s.join("lf-tray").join("shortcuts-declined")))
    }

    fn told(&self) -> bool {
        self.0.as_ref().is_some_and(|p| p.is_file())
    }

    fn tell(&self) {
        let Some(path) = &self.0 else { return };
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(path, b"declined\n"));
        if let Err(e) = written {
            tracing::warn!("KEYS cannot keep {}: {e}", path.display());
        }
    }

    fn forget(&self) {
        if let Some(path) = self.0.as_ref().filter(|p| p.is_file()) {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// The first of [`APP_IDS`] whose desktop entry is installed where the portal looks
/// (`$XDG_DATA_HOME`, then `$XDG_DATA_DIRS`, with their defaults), else the package's.
fn installed_app_id() -> &'static str {
    let home = std::env::var_os("XDG_DATA_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| dirs::home_dir().map(|h| h.join(".local/share")));
    let dirs = std::env::var("XDG_DATA_DIRS")
        .ok()
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| "/usr/local/share:/usr/share".into());
    let roots: Vec<std::path::PathBuf> = home
        .into_iter()
        .chain(dirs.split(':').map(std::path::PathBuf::from))
        .collect();
    APP_IDS
        .into_iter()
        .find(|id| {
            roots
                .iter()
                .any(|root| root.join(format!("applications/{id}.desktop")).is_file())
        })
        .unwrap_or(APP_IDS[1])
}

/// The keys the portal's `a(sa{sv})` list gives a trigger, with it as the desktop names it
/// (`trigger_description`: Plasma 5.27 says `Meta+Alt+Y`). A shortcut listed with no
/// trigger (the person cleared it) is no key to press.
fn given(shortcuts: Option<&Variant<'_>>) -> Vec<(Key, String)> {
    let Some(Variant::Array(list)) = shortcuts.map(|v| strip(v)) else {
        return Vec::new();
    };
    let mut given = Vec::new();
    for item in list.inner() {
        let Variant::Structure(item) = strip(item) else {
            continue;
        };
        let [Variant::Str(id), Variant::Dict(options)] = item.fields() else {
            continue;
        };
        let Some(key) = Key::parse(id.as_str()) else {
            continue;
        };
        let trigger = options
            .iter()
            .find_map(|(name, value)| match (strip(name), strip(value)) {
                (Variant::Str(name), Variant::Str(text))
                    if name.as_str() == "trigger_description" =>
                {
                    Some(text.as_str().to_string())
                }
                _ => None,
            });
        if let Some(trigger) = trigger.filter(|t| !t.trim().is_empty()) {
            given.push((key, readable(&trigger)));
        }
    }
    given.sort_by_key(|(key, _)| Key::ALL.iter().position(|k| k == key));
    given
}

/// A trigger as people read it. GNOME 48 describes one as `Press <Alt><Super>y` (a GTK
/// accelerator in a sentence): that becomes `Alt+Super+Y`, as its own dialog shows it.
/// Others (Plasma's `Meta+Alt+Y`) are kept as given.
fn readable(trigger: &str) -> String {
    let Some(accelerator) = trigger
        .strip_prefix("Press ")
        .filter(|a| a.starts_with('<'))
    else {
        return trigger.to_string();
    };
    let mut parts = Vec::new();
    let mut rest = accelerator;
    while let Some(after) = rest.strip_prefix('<') {
        let Some((modifier, tail)) = after.split_once('>') else {
            return trigger.to_string();
        };
        parts.push(match modifier.to_ascii_lowercase().as_str() {
            "control" | "primary" | "ctrl" => "Ctrl".to_string(),
            "super" => "Super".to_string(),
            "alt" => "Alt".to_string(),
            "shift" => "Shift".to_string(),
            other => other.to_string(),
        });
        rest = tail;
    }
    parts.push(match rest.chars().count() {
        1 => rest.to_uppercase(),
        _ => rest.to_string(),
    });
    parts.join("+")
}

/// The keys the portal's list names at all, with a trigger or without.
fn listed_ids(shortcuts: Option<&Variant<'_>>) -> Vec<Key> {
    let Some(Variant::Array(list)) = shortcuts.map(|v| strip(v)) else {
        return Vec::new();
    };
    list.inner()
        .iter()
        .filter_map(|item| match strip(item) {
            Variant::Structure(item) => match item.fields().first() {
                Some(Variant::Str(id)) => Key::parse(id.as_str()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// A value without the variants around it.
fn strip<'a>(value: &'a Variant<'a>) -> &'a Variant<'a> {
    match value {
        Variant::Variant(inner) => strip(inner),
        other => other,
    }
}

/// The desk and the panel told which triggers the desktop gave.
fn tell(shell: &Shell, triggers: &[(Key, String)]) {
    tracing::info!("KEYS the portal gave {triggers:?}");
    let status = status(triggers);
    tracing::info!("KEYS panel: {status}");
    shell.desktop.keys.say(Some(status));
    shell.tell(Input::Keys(Triggers(triggers.to_vec())));
}

/// What the ⚙ panel says of the keys the desktop gave: each trigger as the desktop names
/// it, a key it gave none, and where the person changes them.
fn status(triggers: &[(Key, String)]) -> String {
    let mut status = match super::listed(triggers) {
        None => "The desktop's shortcuts give none of the keys.".to_string(),
        Some(said) => format!("{said}: the desktop's shortcuts."),
    };
    let missing: Vec<&str> = Key::ALL
        .iter()
        .filter(|key| !triggers.iter().any(|(k, _)| k == *key))
        .map(|key| key.word())
        .collect();
    if !missing.is_empty() {
        status = format!("{status} No key {} yet.", missing.join(" or "));
    }
    format!(
        "{status} Change them in the desktop's keyboard settings (Plasma: System Settings → \
         Shortcuts → Loopflow Tray, on 5.27 “{SESSION_TOKEN}”; GNOME: Settings → Apps → \
         Loopflow Tray)."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(items: &[(&str, &str)]) -> OwnedVariant {
        let list: Vec<(String, HashMap<String, Variant<'static>>)> = items
            .iter()
            .map(|(id, trigger)| {
                let options = HashMap::from([
                    ("description".to_string(), Variant::from("d")),
                    (
                        "trigger_description".to_string(),
                        Variant::from(trigger.to_string()),
                    ),
                ]);
                (id.to_string(), options)
            })
            .collect();
        OwnedVariant::try_from(Variant::from(list)).unwrap()
    }

    #[test]
    fn the_triggers_are_those_the_desktop_lists_in_the_keys_order() {
        let list = listed(&[
            ("open", "Meta+Alt+O"),
            ("allow", "Meta+Alt+Y"),
            ("deny", ""),
            ("-rf", "Ctrl+X"),
        ]);
        assert_eq!(
            given(Some(&*list)),
            vec![
                (Key::Allow, "Meta+Alt+Y".into()),
                (Key::Open, "Meta+Alt+O".into())
            ]
        );
        assert!(given(None).is_empty());
        // Listed, even with no trigger: known to the desktop, not bound again.
        assert_eq!(
            listed_ids(Some(&*list)),
            vec![Key::Open, Key::Allow, Key::Deny]
        );
        assert!(listed_ids(None).is_empty());
    }

    #[test]
    fn gnomes_sentence_becomes_the_keys_and_plasmas_stays() {
        assert_eq!(readable("Press <Alt><Super>y"), "Alt+Super+Y");
        assert_eq!(
            readable("Press <Control><Shift>Return"),
            "Ctrl+Shift+Return"
        );
        assert_eq!(readable("Meta+Alt+Y"), "Meta+Alt+Y");
        assert_eq!(readable("Press <Alt"), "Press <Alt");
    }

    #[test]
    fn the_panel_names_the_triggers_given_and_where_to_change_them() {
        let given = vec![
            (Key::Allow, "Meta+Alt+Y".to_string()),
            (Key::Open, "Meta+Alt+O".to_string()),
        ];
        assert_eq!(
            status(&given),
            "Meta+Alt+Y allows, Meta+Alt+O opens: the desktop's shortcuts. No key deny yet. \
             Change them in the desktop's keyboard settings (Plasma: System Settings → \
             Shortcuts → Loopflow Tray, on 5.27 “loopflow_tray”; GNOME: Settings → Apps → \
             Loopflow Tray)."
        );
        assert!(status(&[]).starts_with(
            "The desktop's shortcuts give none of the keys. No key allow or deny or open yet."
        ));
    }
}
