//! Pushes to the person's phone through an ntfy topic, while they are away from the desk:
//! the shell half, a carrier. What to push and when is the desk's (`lf_tray_surface::push`
//! inside it); here the person's desktop is followed ([`crate::platform::presence`]), each
//! push the desk hands over is POSTed (one at a time, on a blocking thread, so a slow or
//! dead server holds up nothing else) and the memory of what was pushed is kept beside the
//! popups' (`pushes.json`).
//!
//! Nothing of it exists while no push URL is set: no task, no connection, no thread.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lf_tray_core::{history, SessionRecord};
use lf_tray_surface::desk::{Input, PhoneInput, PushSetting};
use lf_tray_surface::push::{server, Message, Prefs, Presence, Pushed, When};
use tokio::sync::{mpsc, watch};

mod reply;

use crate::platform::presence;
use lf_tray_surface::settings::Settings;

/// A server that has not taken a small POST within this long is treated as down and tried
/// again later: ntfy answers in milliseconds, and a push later than this is late anyway.
const TIMEOUT: Duration = Duration::from_secs(20);
/// The memory of what was pushed, beside the popups' memory.
pub const MEMORY_FILE: &str = "pushes.json";

/// What the pushes run with, from the settings.
#[derive(Clone, PartialEq, Eq)]
pub struct Config {
    pub url: String,
    pub token: Option<String>,
    pub prefs: Prefs,
    pub away_after: Duration,
    /// Answering from the phone: the reply topic's URL and its write-only token.
    pub reply: Option<(String, String)>,
}

/// Never the token: a `Debug` of the config is safe to log.
impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("server", &server(&self.url))
            .field("token", &self.token.as_ref().map(|_| "…"))
            .field("prefs", &self.prefs)
            .field("away_after", &self.away_after)
            .field("answer_from_phone", &self.reply.is_some())
            .finish()
    }
}

impl Config {
    /// The pushes the settings ask for; `None` without a push URL.
    pub fn of(settings: &Settings) -> Option<Config> {
        let url = settings.push_url.clone()?;
        Some(Config {
            url,
            token: settings.push_token.as_ref().map(|t| t.0.clone()),
            prefs: Prefs {
                when: settings.push_when,
                text: settings.push_text,
            },
            away_after: Duration::from_secs(u64::from(settings.away_after_seconds)),
            reply: match (settings.answer_from_phone, &settings.push_reply_token) {
                (true, Some(token)) => settings.reply_url().map(|url| (url, token.0.clone())),
                _ => None,
            },
        })
    }
}

/// How the desk is told what the pushes follow (the presence, how a push went).
pub(crate) type Tell = Arc<dyn Fn(Input) + Send + Sync>;

/// The pushes to the person's phone, as the shell carries them: running while a URL is
/// set. What to push and when is the desk's; this follows the desktop, POSTs, and keeps.
pub(crate) struct Phone {
    runner: Mutex<Option<Runner>>,
    /// What the settings panel says about them (how away is told, the last failure).
    status: Arc<Mutex<Option<String>>>,
    /// What it says about answering from the phone (whether Allow is offered, and why).
    phone_status: Arc<Mutex<Option<String>>>,
    /// Where what was pushed is remembered (`None`: the demo and the command tests).
    memory: Option<PathBuf>,
}

impl Phone {
    pub(crate) fn new(memory: Option<PathBuf>) -> Phone {
        Phone {
            runner: Mutex::new(None),
            status: Arc::default(),
            phone_status: Arc::default(),
            memory,
        }
    }

    /// Start, change or end the pushes as `settings` say, and tell the desk. Pushes that
    /// start take what was pushed before and the engine's sessions now (the desk uses
    /// them once its first list went by).
    pub(crate) fn apply(
        &self,
        settings: &Settings,
        tell: Tell,
        sessions: impl FnOnce() -> Vec<SessionRecord>,
    ) {
        let config = Config::of(settings);
        let mut runner = locked(&self.runner);
        match (config, runner.as_ref()) {
            (None, None) => {}
            (None, Some(_)) => {
                *runner = None;
                tell(Input::Pushes(PushSetting::Off));
                tell(Input::Phone(PhoneInput::Setup(None)));
            }
            (Some(config), Some(running)) => {
                tell(Input::Pushes(PushSetting::Prefs(config.prefs)));
                running.set(config);
            }
            (Some(config), None) => {
                let memory = match &self.memory {
                    Some(path) => {
                        let (pushed, warning) = Pushed::load(path);
                        if let Some(warning) = warning {
                            tracing::warn!("{warning}");
                        }
                        pushed
                    }
                    None => Pushed::default(),
                };
                // Told before the runner starts, so the presence it follows comes after.
                tell(Input::Pushes(PushSetting::Start {
                    prefs: config.prefs,
                    memory,
                    sessions: sessions(),
                }));
                *runner = Some(Runner::start(
                    config,
                    Arc::clone(&self.status),
                    Arc::clone(&self.phone_status),
                    tell,
                ));
            }
        }
    }

    /// A push the desk decided, to deliver.
    pub(crate) fn push(&self, message: Message) {
        if let Some(runner) = locked(&self.runner).as_ref() {
            let _ = runner.messages.send(message);
        }
    }

    /// The session's card on the phone replaced (its sequence id) by `title`.
    pub(crate) fn card(&self, sequence: String, title: String) {
        if let Some(runner) = locked(&self.runner).as_ref() {
            let _ = runner.cards.send((sequence, title));
        }
    }

    /// Listen to the reply topic, or stop: the desk says whether a request can be
    /// answered from the phone.
    pub(crate) fn listen(&self, on: bool) {
        if let Some(runner) = locked(&self.runner).as_ref() {
            runner.listen.send_replace(on);
        }
    }

    /// Keep what was pushed, beside the popups' memory, off the desk's task.
    pub(crate) fn keep(&self, bytes: Vec<u8>) {
        let Some(path) = self.memory.clone() else {
            return;
        };
        tauri::async_runtime::spawn_blocking(move || {
            if let Err(e) = history::write_atomically(&path, &bytes) {
                tracing::warn!("could not keep what was pushed in {}: {e}", path.display());
            }
        });
    }

    /// Keep the memory of what was pushed now, on this thread: the app is quitting.
    pub(crate) fn keep_now(&self, bytes: Vec<u8>) {
        if let Some(path) = &self.memory {
            if let Err(e) = history::write_atomically(path, &bytes) {
                tracing::warn!("could not keep what was pushed in {}: {e}", path.display());
            }
        }
    }

    /// The settings panel's sentence about pushes, while they are on.
    pub(crate) fn status(&self) -> Option<String> {
        locked(&self.status).clone()
    }

    /// The panel's sentence about answering from the phone, while it is on: whether the
    /// phone offers Allow, and when not, why and how to protect the push topic.
    pub(crate) fn phone_status(&self) -> Option<String> {
        locked(&self.phone_status).clone()
    }
}

/// The pushes while a URL is set; dropping it ends them.
pub struct Runner {
    config: watch::Sender<Option<Config>>,
    messages: mpsc::UnboundedSender<Message>,
    cards: mpsc::UnboundedSender<(String, String)>,
    listen: watch::Sender<bool>,
}

impl Runner {
    /// Follow the desktop and deliver what the desk pushes; `status` holds what the panel
    /// says about it, and `tell` takes the presence and each push's outcome to the desk.
    fn start(
        config: Config,
        status: Arc<Mutex<Option<String>>>,
        phone_status: Arc<Mutex<Option<String>>>,
        tell: Tell,
    ) -> Runner {
        let (set, configs) = watch::channel(Some(config));
        let (messages, received) = mpsc::unbounded_channel();
        let (cards, cards_received) = mpsc::unbounded_channel();
        let (listen, listening) = watch::channel(false);
        tauri::async_runtime::spawn(reply::carry(
            configs.clone(),
            cards_received,
            listening,
            Arc::clone(&phone_status),
            Arc::clone(&tell),
        ));
        tauri::async_runtime::spawn(run(configs, received, status, tell));
        Runner {
            config: set,
            messages,
            cards,
            listen,
        }
    }

    fn set(&self, config: Config) {
        self.config.send_if_modified(|now| {
            let changed = now.as_ref() != Some(&config);
            *now = Some(config);
            changed
        });
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        // The loop ends at its next turn.
        let _ = self.config.send(None);
    }
}

fn when(config: &Config) -> String {
    match config.prefs.when {
        When::Always => "always".into(),
        When::Away => format!(
            "while away (locked, or no input for {} s)",
            config.away_after.as_secs()
        ),
    }
}

/// The carrier: the desktop followed (each change of presence told to the desk), and each
/// push the desk hands over POSTed on a blocking thread, its outcome told back.
async fn run(
    mut configs: watch::Receiver<Option<Config>>,
    mut messages: mpsc::UnboundedReceiver<Message>,
    status: Arc<Mutex<Option<String>>>,
    tell: Tell,
) {
    let Some(config) = configs.borrow_and_update().clone() else {
        return;
    };
    let mut carrier = Carrier::start(config, status, tell);
    loop {
        tokio::select! {
            // The desk hands over one at a time; the guard keeps their order all the same.
            message = messages.recv(), if carrier.flight.is_none() => {
                let Some(message) = message else { break };
                carrier.send(message);
            }
            changed = configs.changed() => {
                let new = if changed.is_ok() { configs.borrow_and_update().clone() } else { None };
                let Some(new) = new else { break };
                carrier.reconfigure(new);
            }
            changed = carrier.desk.seen.changed(), if carrier.desk_open => {
                carrier.seen(changed.is_ok());
            }
            done = async { carrier.flight.as_mut().expect("guarded").await }, if carrier.flight.is_some() => {
                carrier.flight = None;
                carrier.delivered(done.unwrap_or_else(|e| Delivered {
                    id: 0,
                    sessions: Vec::new(),
                    result: Err(format!("the delivery stopped: {e}")),
                }));
            }
        }
    }
    *locked(&carrier.status) = None;
    tracing::info!("PUSH off");
}

/// What the carrier's loop holds: the settings it runs with, the desktop it follows, what
/// it last told, and the one POST in flight.
struct Carrier {
    config: Config,
    desk: presence::Following,
    /// The presence followers' channel is open (it closes when they all give up).
    desk_open: bool,
    /// As the desk's pushes start: nothing told yet.
    told: Presence,
    /// Made at the first push: nothing connects before one is due.
    agent: Option<ureq::Agent>,
    flight: Option<tauri::async_runtime::JoinHandle<Delivered>>,
    /// What the log last said about what tells away.
    said: String,
    status: Arc<Mutex<Option<String>>>,
    tell: Tell,
}

impl Carrier {
    fn start(config: Config, status: Arc<Mutex<Option<String>>>, tell: Tell) -> Carrier {
        tracing::info!("PUSH on: {}, {}", server(&config.url), when(&config));
        let desk = presence::follow(config.away_after);
        if desk.seen.borrow().settled() {
            *locked(&status) = Some(desk.seen.borrow().describe());
        }
        Carrier {
            config,
            desk,
            desk_open: true,
            told: Presence::Unknown,
            agent: None,
            flight: None,
            said: String::new(),
            status,
            tell,
        }
    }

    /// POST one push on a blocking thread.
    fn send(&mut self, message: Message) {
        tracing::info!(
            "PUSH sending id={} sessions={} to {}",
            message.id,
            message.sessions.join(","),
            server(&self.config.url)
        );
        let agent = self.agent.get_or_insert_with(new_agent).clone();
        let (url, token) = (self.config.url.clone(), self.config.token.clone());
        self.flight = Some(tauri::async_runtime::spawn_blocking(move || {
            let started = Instant::now();
            let result = deliver(&agent, &url, token.as_deref(), &message);
            Delivered {
                id: message.id,
                sessions: message.sessions,
                result: result.map(|()| started.elapsed()),
            }
        }));
    }

    /// New settings: a new threshold starts the desktop's followers again.
    fn reconfigure(&mut self, new: Config) {
        if new.away_after != self.config.away_after {
            self.desk = presence::follow(new.away_after);
            self.desk_open = true;
        }
        tracing::info!("PUSH settings: {}, {}", server(&new.url), when(&new));
        self.config = new;
    }

    /// The desktop's followers saw something: a new presence goes to the desk, and what
    /// tells away to the log (once both have looked, and again when it changes) and the panel.
    fn seen(&mut self, open: bool) {
        if !open {
            self.desk_open = false;
            return;
        }
        let seen = self.desk.seen.borrow_and_update().clone();
        let presence = seen.desk.presence();
        if presence != self.told {
            tracing::info!(
                "PRESENCE {} (locked={:?} idle={:?}; {}; {})",
                match presence {
                    Presence::Present => "present",
                    Presence::Away => "away",
                    Presence::Unknown => "unknown: nothing on this desktop tells, taken as present",
                },
                seen.desk.locked,
                seen.desk.idle,
                seen.lock_by,
                seen.idle_by
            );
            self.told = presence;
            (self.tell)(Input::Presence(presence));
        }
        if seen.settled() {
            let describe = seen.describe();
            if describe != self.said {
                tracing::info!("PRESENCE sources: {describe}");
                self.said = describe.clone();
            }
            *locked(&self.status) = Some(describe);
        }
    }

    /// A POST ended: logged, the panel told of a failure, the desk told the outcome.
    fn delivered(&mut self, done: Delivered) {
        let Delivered {
            id,
            sessions,
            result,
        } = done;
        let named = sessions.join(",");
        let failing = match &result {
            Ok(took) => {
                tracing::info!(
                    "PUSH delivered id={id} sessions={named} in {} ms",
                    took.as_millis()
                );
                None
            }
            Err(why) => {
                tracing::warn!("PUSH failed id={id} sessions={named}: {why}");
                Some(why)
            }
        };
        let now_said = self.desk.seen.borrow().describe();
        *locked(&self.status) = Some(match failing {
            Some(why) => format!("{now_said} The last push failed: {why}."),
            None => now_said,
        });
        (self.tell)(Input::Pushed {
            id,
            sessions,
            ok: result.is_ok(),
        });
    }
}

/// How one POST went: how long it took, or why it failed.
struct Delivered {
    id: u64,
    sessions: Vec<String>,
    result: Result<Duration, String>,
}

fn new_agent() -> ureq::Agent {
    agent_config().timeout_global(Some(TIMEOUT)).build().into()
}

/// What every request to the push server shares: a refusal's status is read as an answer
/// (not an error), the tray says who it is, and certificates are the system's.
fn agent_config() -> ureq::config::ConfigBuilder<ureq::typestate::AgentScope> {
    use ureq::tls::{RootCerts, TlsConfig};
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .user_agent(format!("lf-tray/{}", env!("CARGO_PKG_VERSION")))
        .tls_config(
            TlsConfig::builder()
                .root_certs(RootCerts::PlatformVerifier)
                .build(),
        )
}

/// POST one message as ntfy's publish API takes it: the message plain text in the body,
/// the rest in headers; the token only ever in `Authorization`.
fn deliver(
    agent: &ureq::Agent,
    url: &str,
    token: Option<&str>,
    message: &Message,
) -> Result<(), String> {
    if message.sequence.is_some() {
        return reply::publish(agent, url, token, message);
    }
    let mut request = agent
        .post(url)
        .header("Title", header_text(&message.title))
        .header("Priority", message.priority.to_string())
        .header("Tags", message.tags)
        .header("Content-Type", "text/plain; charset=utf-8");
    if let Some(token) = token {
        request = request.header("Authorization", format!("Bearer {token}"));
    }
    match request.send(message.body.as_bytes()) {
        Ok(response) if response.status().is_success() => Ok(()),
        Ok(response) => Err(format!("the server answered {}", response.status())),
        Err(e) => Err(said(e)),
    }
}

/// Why a request failed, in the person's words.
fn said(e: ureq::Error) -> String {
    match e {
        ureq::Error::BadUri(_) => "the push URL is not valid".into(),
        ureq::Error::HostNotFound => "its host was not found".into(),
        ureq::Error::ConnectionFailed => "could not connect".into(),
        other => other.to_string(),
    }
}

/// A header's text: ASCII as it is; anything else as one RFC 2047 encoded word, which ntfy
/// decodes (HTTP headers carry no UTF-8 of their own). The text is one line already.
pub fn header_text(text: &str) -> String {
    if text.bytes().all(|b| (0x20..0x7f).contains(&b)) && !text.contains("=?") {
        return text.to_string();
    }
    format!("=?UTF-8?B?{}?=", base64(text.as_bytes()))
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A lock of the pushes' own, kept usable if a panic elsewhere held it (each change is one
/// assignment or one call).
fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_carry_ascii_as_is_and_the_rest_encoded() {
        assert_eq!(
            header_text("Fix it asks a question"),
            "Fix it asks a question"
        );
        assert_eq!(header_text("Grüße"), "=?UTF-8?B?R3LDvMOfZQ==?=");
        assert_eq!(header_text("=?x?="), "=?UTF-8?B?PT94Pz0=?=");
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
        ] {
            assert_eq!(base64(plain.as_bytes()), encoded);
        }
    }

    #[test]
    fn the_log_names_the_server_never_the_topic_or_the_token() {
        assert_eq!(server("https://ntfy.sh/secret-topic"), "https://ntfy.sh");
        assert_eq!(
            server("http://me:pw@127.0.0.1:8080/t?x=1"),
            "http://127.0.0.1:8080"
        );
        let config = Config {
            url: "https://ntfy.sh/secret-topic".into(),
            token: Some("tk_supersecret".into()),
            prefs: Prefs::default(),
            away_after: Duration::from_secs(300),
            reply: Some((
                "https://ntfy.sh/reply-topic".into(),
                "tk_replysecret".into(),
            )),
        };
        let said = format!("{config:?}");
        assert!(
            !said.contains("supersecret") && !said.contains("secret-topic"),
            "{said}"
        );
        assert!(
            !said.contains("replysecret") && !said.contains("reply-topic"),
            "{said}"
        );
    }
}
