//! The user's settings: one JSON file in the XDG config dir
//! (`$XDG_CONFIG_HOME/lf-tray/settings.json`), written atomically so a crash mid-write never
//! leaves half a file behind.

use std::path::{Path, PathBuf};

use lf_tray_core::terminal::Choice;

use crate::policy::QuietHours;
use crate::push::When;
use serde::{Deserialize, Serialize};

/// Everything the settings panel edits. Missing fields take their defaults, so a file written
/// by an older version still loads; unknown fields are ignored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// `auto`, a terminal's name (`kitty`, `gnome-terminal`, …) or `custom`.
    pub terminal: String,
    /// The command line used when `terminal` is `custom`; see `lf_tray_core::terminal`.
    pub terminal_template: String,
    pub notify_on_ask: bool,
    pub notify_on_ready: bool,
    pub sound: bool,
    /// Remind about a session left waiting this many minutes, then after twice as long,
    /// four times… (capped at 4 h); 0 turns reminders off.
    pub reminder_minutes: u32,
    /// How long a session the person's own terminal is attached to (generation D) must
    /// stay waiting before it pops up; 0 pops it up at once.
    pub attached_grace_seconds: u32,
    /// A click on a session a terminal of the person's is attached to brings that
    /// terminal back (window, tmux pane) instead of opening another one.
    pub focus_existing: bool,
    /// The `lf` to run instead of the one found on `PATH` / `$LF_BIN`.
    pub lf_path: Option<PathBuf>,
    /// lf's home instead of `$LF_HOME` / `~/.lf`.
    pub home: Option<PathBuf>,
    /// No popups or sounds between these local times (`"22:00"`–`"07:00"` crosses midnight);
    /// empty strings turn quiet hours off.
    pub quiet_from: String,
    pub quiet_to: String,
    /// A program run for every event, with the event's JSON on stdin (as `lf-tray watch
    /// --json` prints it) and `LF_TRAY_EVENT=<type>` in its environment.
    pub on_event: Option<PathBuf>,
    /// Other machines whose sessions to follow: ssh destinations (a `Host` from
    /// `~/.ssh/config`, `user@host`), as the person's own ssh understands them.
    pub machines: Vec<String>,
    /// Answer an agent's permission request from the popup: adds one hook of the tray's
    /// to Claude Code's settings while on, and takes exactly it out again when turned off.
    pub answer_from_popup: bool,
    /// The same for Codex: one hook of the tray's in Codex's `hooks.json` while on. Codex
    /// shows no prompt of its own while the hook waits, so the popup is given a short time.
    pub answer_codex_from_popup: bool,
    /// How long a Codex request waits for the popup before its terminal prompt comes back.
    pub codex_wait_seconds: u32,
    /// Answer the newest popup's request from the keyboard with keys the tray holds (an
    /// X11 grab, only while such a request waits); `lf-tray answer` works either way.
    pub answer_keys: bool,
    /// The ntfy topic's URL to push to while the person is away (`https://ntfy.sh/<topic>`,
    /// or their own server's); none: no push, and no network traffic at all.
    pub push_url: Option<String>,
    /// Sent only as `Authorization: Bearer`; never logged, and never shown back in full.
    pub push_token: Option<Token>,
    /// `away` (the default): only while the screen is locked or input is idle; `always`.
    pub push_when: When,
    /// No input for this long counts as away.
    pub away_after_seconds: u32,
    /// The push says what the popup says (the agent's own words); off, only the title, the
    /// repository and why it waits.
    pub push_text: bool,
    /// A request's push carries its answers as buttons, answered through the reply topic.
    pub answer_from_phone: bool,
    /// The token of a user that may only write the reply topic: it travels inside every
    /// button, so it must grant nothing else. Never shown back in full.
    pub push_reply_token: Option<Token>,
    /// The reply topic's name on the push server: 128 random bits, the tray's own, made
    /// when answering from the phone is first turned on (never derived from the push topic).
    pub push_reply_topic: String,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            terminal: "auto".into(),
            terminal_template: String::new(),
            notify_on_ask: true,
            notify_on_ready: true,
            sound: true,
            reminder_minutes: 0,
            // An agent that hands its turn back to a person watching its terminal is
            // answered within seconds; 45 s lets a typical reply land first and still
            // tells someone who looked away well before they would notice by themselves.
            attached_grace_seconds: 45,
            focus_existing: true,
            lf_path: None,
            home: None,
            quiet_from: String::new(),
            quiet_to: String::new(),
            on_event: None,
            machines: Vec::new(),
            // Off: Claude Code's settings are the person's file, never touched unasked.
            answer_from_popup: false,
            answer_codex_from_popup: false,
            // Half a minute: enough to read a popup and click it, short enough that someone
            // at Codex's terminal (which shows only "Running hook" meanwhile) gets their
            // prompt back before wondering what it waits for.
            codex_wait_seconds: 30,
            // Off: a grab takes its keys from every other program while a request waits,
            // which the person should choose knowingly.
            answer_keys: false,
            push_url: None,
            push_token: None,
            push_when: When::Away,
            // Five minutes: a person reading a long diff or thinking touches nothing for a
            // minute or two and is still at the desk; a coffee takes longer.
            away_after_seconds: 300,
            // Off: a phone's lock screen shows pushes to whoever holds it, and the agent's
            // words may hold the code.
            push_text: false,
            // Off: it needs a server set up for it (a read-protected push topic, a
            // write-only reply user).
            answer_from_phone: false,
            push_reply_token: None,
            push_reply_topic: String::new(),
        }
    }
}

impl Settings {
    /// The terminal the user chose, as the launcher understands it.
    pub fn terminal_choice(&self) -> Choice {
        match self.terminal.trim() {
            "" | "auto" => Choice::Auto,
            "custom" => Choice::Custom(self.terminal_template.clone()),
            name => Choice::Named(name.to_string()),
        }
    }

    /// Empty paths from the panel's text boxes mean "not set".
    pub fn normalized(mut self) -> Settings {
        let unset_empty = |p: Option<PathBuf>| p.filter(|p| !p.as_os_str().is_empty());
        self.lf_path = unset_empty(self.lf_path);
        self.home = unset_empty(self.home);
        self.on_event = unset_empty(self.on_event);
        let unset_blank =
            |s: Option<String>| s.map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
        self.push_url = unset_blank(self.push_url);
        self.push_token = unset_blank(self.push_token.map(|t| t.0)).map(Token);
        self.push_reply_token = unset_blank(self.push_reply_token.map(|t| t.0)).map(Token);
        self.push_reply_topic = self.push_reply_topic.trim().to_string();
        if self.answer_from_phone && self.push_reply_topic.is_empty() {
            // Kept once made: the buttons already on the phone write to it.
            self.push_reply_topic = crate::phone::random_hex().unwrap_or_default();
        }
        self.quiet_from = self.quiet_from.trim().to_string();
        self.quiet_to = self.quiet_to.trim().to_string();
        self.terminal = self.terminal.trim().to_string();
        // One per line in the panel: blanks around them and empty lines mean nothing, and
        // a machine listed twice is followed once.
        let mut machines: Vec<String> = Vec::new();
        for machine in self.machines.iter().map(|m| m.trim()) {
            if !machine.is_empty() && !machines.iter().any(|m| m == machine) {
                machines.push(machine.to_string());
            }
        }
        self.machines = machines;
        if self.terminal.is_empty() {
            self.terminal = "auto".into();
        }
        self
    }

    /// Reject what would only fail later, with a sentence the panel shows.
    pub fn check(&self) -> Result<(), String> {
        if self.terminal == "custom" && self.terminal_template.trim().is_empty() {
            return Err("A custom terminal needs a command line.".into());
        }
        match (self.quiet_from.is_empty(), self.quiet_to.is_empty()) {
            (true, true) => {}
            (false, false) if self.quiet_hours().is_some() => {}
            _ => return Err("Quiet hours need a start and an end, as HH:MM (22:00).".into()),
        }
        if let Some(program) = &self.on_event {
            if !program.is_absolute() {
                return Err("The event program needs an absolute path.".into());
            }
        }
        for machine in &self.machines {
            lf_tray_core::machine::check_destination(machine)?;
        }
        if let Some(url) = &self.push_url {
            check_push_url(url)?;
        }
        for (name, token) in [
            ("push token", &self.push_token),
            ("reply token", &self.push_reply_token),
        ] {
            if let Some(Token(token)) = token {
                if !token.bytes().all(|b| b.is_ascii_graphic()) {
                    return Err(format!(
                        "The {name} is one word of plain ASCII characters, as the server gave it."
                    ));
                }
            }
        }
        if self.answer_from_phone {
            self.check_answering_from_phone()?;
        }
        if self.away_after_seconds == 0 {
            return Err(
                "Away after needs at least 1 second (to push at the desk too, choose always)."
                    .into(),
            );
        }
        let most = lf_tray_core::permission::CODEX_WAIT_MAX.as_secs();
        if !(5..=most).contains(&u64::from(self.codex_wait_seconds)) {
            return Err(format!(
                "Codex's wait for the popup is 5 to {most} seconds: its terminal shows no prompt meanwhile."
            ));
        }
        Ok(())
    }

    fn check_answering_from_phone(&self) -> Result<(), String> {
        if self.push_url.is_none() {
            return Err("Answering from the phone needs a push URL.".into());
        }
        let Some(reply) = &self.push_reply_token else {
            return Err(
                "Answering from the phone needs a reply token: a user that may only write the reply topic."
                    .into(),
            );
        };
        // It is written into every push: the push token there would let anyone who reads
        // one push read (and write) all of them.
        if self.push_token.as_ref() == Some(reply) {
            return Err(
                "The reply token travels inside every button: it must be a write-only user's, not the push token."
                    .into(),
            );
        }
        if self.push_reply_topic.len() < 32
            || !self
                .push_reply_topic
                .bytes()
                .all(|b| b.is_ascii_alphanumeric())
        {
            return Err("The reply topic is 32 letters and digits, as the tray made it.".into());
        }
        Ok(())
    }

    /// The reply topic's URL: on the push topic's server, beside it.
    pub fn reply_url(&self) -> Option<String> {
        let url = self.push_url.as_deref()?;
        let base = url.split(['?', '#']).next().unwrap_or(url);
        let (base, _topic) = base.trim_end_matches('/').rsplit_once('/')?;
        Some(format!("{base}/{}", self.push_reply_topic))
    }

    /// The quiet hours, when both ends are set and readable.
    pub fn quiet_hours(&self) -> Option<QuietHours> {
        QuietHours::parse(&self.quiet_from, &self.quiet_to)
    }

    /// What the popups' policy follows of the settings: a reminder of 0 minutes is none.
    pub fn preferences(&self) -> crate::policy::Preferences {
        use std::time::Duration;
        crate::policy::Preferences {
            on_ask: self.notify_on_ask,
            on_ready: self.notify_on_ready,
            reminder: (self.reminder_minutes > 0)
                .then(|| Duration::from_secs(u64::from(self.reminder_minutes) * 60)),
            attached_grace: Duration::from_secs(u64::from(self.attached_grace_seconds)),
            quiet_hours: self.quiet_hours(),
            codex_wait: Duration::from_secs(u64::from(self.codex_wait_seconds)),
        }
    }
}

/// A secret the settings hold (the push token): stored as it is, never printed by `Debug`,
/// so no log line that shows settings can carry it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Token(pub String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(…)")
    }
}

impl From<&str> for Token {
    fn from(token: &str) -> Token {
        Token(token.to_string())
    }
}

/// A topic's URL: `http(s)://host[:port]/topic`, with no spaces or control characters.
fn check_push_url(url: &str) -> Result<(), String> {
    let bad = || {
        Err(format!(
            "The push URL needs to be a topic's address, as https://ntfy.sh/my-topic (got {:?}).",
            crate::push::server(url)
        ))
    };
    let Some((scheme, rest)) = url.split_once("://") else {
        return bad();
    };
    let (host, topic) = rest.split_once('/').unwrap_or((rest, ""));
    let topic = topic.split(['?', '#']).next().unwrap_or("");
    if !matches!(scheme, "http" | "https")
        || host.is_empty()
        || topic.is_empty()
        || !url.bytes().all(|b| b.is_ascii_graphic())
    {
        return bad();
    }
    Ok(())
}

/// Where the settings live: `$XDG_CONFIG_HOME/lf-tray/settings.json` (on macOS and Windows,
/// the platform's config dir).
pub fn default_path() -> Option<PathBuf> {
    dirs::config_dir().map(|dir| dir.join("lf-tray").join("settings.json"))
}

/// What loading found: the settings to use, and a warning when the file was unreadable (the
/// defaults are used then, and the bad file is kept aside on the next save).
#[derive(Default)]
pub struct Loaded {
    pub settings: Settings,
    pub warning: Option<String>,
}

pub fn load(path: &Path) -> Loaded {
    match std::fs::read(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Loaded {
            settings: Settings::default(),
            warning: None,
        },
        Err(e) => Loaded {
            settings: Settings::default(),
            warning: Some(format!("Could not read {}: {e}", path.display())),
        },
        Ok(bytes) => match serde_json::from_slice::<Settings>(&bytes) {
            Ok(settings) => {
                let made = settings.push_reply_topic.trim().is_empty();
                let settings = settings.normalized();
                // A reply topic made now is kept at once: the person names it in the
                // server's rules, and the buttons write to it.
                let warning = (made && !settings.push_reply_topic.is_empty())
                    .then(|| save(path, &settings).err())
                    .flatten()
                    .map(|e| {
                        format!(
                            "Could not keep the new reply topic in {}: {e}",
                            path.display()
                        )
                    });
                Loaded { settings, warning }
            }
            Err(e) => Loaded {
                settings: Settings::default(),
                warning: Some(format!(
                    "{} is not valid settings ({e}); using the defaults",
                    path.display()
                )),
            },
        },
    }
}

/// Write the settings atomically: a temp file in the same directory, flushed, then renamed
/// over the old file. A file that does not parse as settings is first moved to
/// `settings.json.invalid`, so a hand edit gone wrong is not lost.
pub fn save(path: &Path, settings: &Settings) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    if let Ok(bytes) = std::fs::read(path) {
        if serde_json::from_slice::<Settings>(&bytes).is_err() {
            std::fs::rename(path, path.with_extension("json.invalid"))?;
        }
    }
    let mut json = serde_json::to_vec_pretty(settings).map_err(std::io::Error::other)?;
    json.push(b'\n');
    let mut temp = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut temp, &json)?;
    temp.as_file().sync_all()?;
    temp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keeps_every_field() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lf-tray").join("settings.json");
        let settings = Settings {
            terminal: "custom".into(),
            terminal_template: "foot -- {argv}".into(),
            notify_on_ask: false,
            notify_on_ready: true,
            sound: false,
            reminder_minutes: 15,
            attached_grace_seconds: 0,
            focus_existing: false,
            lf_path: Some("/opt/lf/bin/lf".into()),
            home: Some("/srv/lf-home".into()),
            quiet_from: "22:30".into(),
            quiet_to: "07:00".into(),
            on_event: Some("/usr/local/bin/push".into()),
            machines: vec!["build-box".into(), "me@10.0.0.2".into()],
            answer_from_popup: true,
            answer_codex_from_popup: true,
            codex_wait_seconds: 20,
            answer_keys: true,
            push_url: Some("https://ntfy.example.net/lf-me".into()),
            push_token: Some("tk_abc".into()),
            push_when: When::Always,
            away_after_seconds: 120,
            push_text: true,
            answer_from_phone: true,
            push_reply_token: Some("tk_reply".into()),
            push_reply_topic: "0123456789abcdef0123456789abcdef".into(),
        };
        save(&path, &settings).unwrap();
        let loaded = load(&path);
        assert_eq!(loaded.settings, settings);
        assert!(loaded.warning.is_none());
        // Only the settings file is left: the temp file was renamed, not copied.
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["settings.json"]);
        // It holds the push token: the person's alone to read.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn missing_file_gives_defaults_and_old_files_gain_new_fields() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        let loaded = load(&path);
        assert_eq!(loaded.settings, Settings::default());
        assert!(loaded.warning.is_none());

        std::fs::write(&path, r#"{"terminal":"kitty","future_option":1}"#).unwrap();
        let loaded = load(&path);
        assert_eq!(loaded.settings.terminal, "kitty");
        assert!(loaded.settings.notify_on_ready);
        assert_eq!(loaded.settings.attached_grace_seconds, 45);
        assert!(loaded.settings.focus_existing, "on unless turned off");
        assert!(!loaded.settings.answer_from_popup, "off unless turned on");
        assert!(
            !loaded.settings.answer_codex_from_popup,
            "off unless turned on"
        );
        assert_eq!(loaded.settings.codex_wait_seconds, 30);
        assert_eq!(loaded.settings.push_url, None, "no push unless asked");
        assert_eq!(loaded.settings.push_when, When::Away);
        assert_eq!(loaded.settings.away_after_seconds, 300);
        assert!(
            !loaded.settings.push_text,
            "no agent's words on a phone unless asked"
        );
        assert!(!loaded.settings.answer_from_phone, "off unless turned on");
        assert_eq!(loaded.settings.push_reply_topic, "", "made when turned on");
        assert_eq!(
            loaded.settings.terminal_choice(),
            Choice::Named("kitty".into())
        );
    }

    #[test]
    fn a_broken_file_warns_and_is_kept_aside_on_save() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, "{ half written").unwrap();
        let loaded = load(&path);
        assert_eq!(loaded.settings, Settings::default());
        assert!(loaded.warning.unwrap().contains("not valid settings"));

        save(&path, &Settings::default()).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("settings.json.invalid")).unwrap(),
            "{ half written"
        );
        assert!(load(&path).warning.is_none());
    }

    #[test]
    fn panel_input_is_normalized_and_checked() {
        let settings = Settings {
            terminal: "  ".into(),
            lf_path: Some(PathBuf::new()),
            home: Some("".into()),
            ..Settings::default()
        }
        .normalized();
        assert_eq!(settings.terminal_choice(), Choice::Auto);
        assert_eq!(settings.lf_path, None);
        assert_eq!(settings.home, None);
        let machines = Settings {
            machines: vec![" box ".into(), "".into(), "box".into(), "me@far".into()],
            ..Settings::default()
        }
        .normalized();
        assert_eq!(machines.machines, ["box", "me@far"]);
        assert!(machines.check().is_ok());
        let hostile = Settings {
            machines: vec!["-oProxyCommand=sh".into()],
            ..Settings::default()
        }
        .normalized();
        assert!(hostile.check().unwrap_err().contains("cannot start with"));

        let custom = Settings {
            terminal: "custom".into(),
            ..Settings::default()
        };
        assert!(custom.check().is_err());
        let custom = Settings {
            terminal_template: "xterm -e {argv}".into(),
            ..custom
        };
        assert!(custom.check().is_ok());
        assert_eq!(
            custom.terminal_choice(),
            Choice::Custom("xterm -e {argv}".into())
        );

        let quiet = |from: &str, to: &str| Settings {
            quiet_from: from.into(),
            quiet_to: to.into(),
            ..Settings::default()
        };
        assert!(quiet("22:00", "07:00").check().is_ok());
        assert_eq!(
            quiet("22:00", "07:00").quiet_hours(),
            Some(QuietHours {
                from: 22 * 60,
                to: 7 * 60
            })
        );
        assert!(quiet("22:00", "").check().is_err());
        assert!(quiet("25:00", "07:00").check().is_err());
        assert!(quiet("", "").quiet_hours().is_none());
        let relative = Settings {
            on_event: Some("push.sh".into()),
            ..Settings::default()
        };
        assert!(relative.check().is_err());

        let push = |url: &str, token: &str| {
            Settings {
                push_url: Some(url.into()),
                push_token: Some(token.into()),
                ..Settings::default()
            }
            .normalized()
        };
        assert!(push(" https://ntfy.sh/lf-me ", "").check().is_ok());
        assert_eq!(push("https://ntfy.sh/t", "  ").push_token, None);
        let kept = push("https://ntfy.sh/t", " tk_secret ");
        assert_eq!(kept.push_token, Some(Token::from("tk_secret")));
        assert!(
            !format!("{kept:?}").contains("tk_secret"),
            "Debug shows no token"
        );
        assert_eq!(push("", "tk").push_url, None, "blank: no push");
        assert!(push("http://127.0.0.1:8080/t", "tk_1").check().is_ok());
        for url in [
            "ntfy.sh/t",
            "ftp://ntfy.sh/t",
            "https://ntfy.sh",
            "https://ntfy.sh/",
            "https:///t",
            "https://ntfy.sh/a b",
        ] {
            assert!(
                push(url, "")
                    .check()
                    .unwrap_err()
                    .contains("topic's address"),
                "{url}"
            );
        }
        assert!(push("https://ntfy.sh/t", "tk 1")
            .check()
            .unwrap_err()
            .contains("token"));
        assert!(push("https://ntfy.sh/t", "tk\n1").check().is_err());
        let never = Settings {
            away_after_seconds: 0,
            ..Settings::default()
        };
        assert!(never.check().unwrap_err().contains("at least 1 second"));
    }

    #[test]
    fn answering_from_the_phone_needs_its_own_write_only_token_and_a_random_reply_topic() {
        let on = |reply: Option<&str>| {
            Settings {
                push_url: Some("https://ntfy.example.net/lf-me".into()),
                push_token: Some("tk_push".into()),
                answer_from_phone: true,
                push_reply_token: reply.map(Token::from),
                ..Settings::default()
            }
            .normalized()
        };
        let ok = on(Some(" tk_reply "));
        assert!(ok.check().is_ok(), "{:?}", ok.check());
        assert_eq!(ok.push_reply_token, Some(Token::from("tk_reply")));
        assert_eq!(ok.push_reply_topic.len(), 32);
        assert_ne!(ok.push_reply_topic, on(Some("tk_reply")).push_reply_topic);
        assert_eq!(
            ok.reply_url().unwrap(),
            format!("https://ntfy.example.net/{}", ok.push_reply_topic)
        );
        // Kept once made.
        assert_eq!(
            ok.clone().normalized().push_reply_topic,
            ok.push_reply_topic
        );
        assert!(on(None).check().unwrap_err().contains("reply token"));
        assert!(on(Some("tk_push"))
            .check()
            .unwrap_err()
            .contains("not the push token"));
        let mut no_url = ok.clone();
        no_url.push_url = None;
        assert!(no_url.check().unwrap_err().contains("push URL"));
        let mut guessable = ok;
        guessable.push_reply_topic = "lf-me-replies".into();
        assert!(guessable.check().unwrap_err().contains("32 letters"));
        assert!(!format!("{:?}", on(Some("tk_reply"))).contains("tk_"));
        // Turned on by hand in the file: the topic made on loading is written there.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, r#"{"answer_from_phone": true}"#).unwrap();
        let made = load(&path).settings.push_reply_topic;
        assert_eq!(made.len(), 32);
        assert_eq!(load(&path).settings.push_reply_topic, made, "kept");
    }
}
