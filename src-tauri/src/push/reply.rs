//! Answering from the phone, the shell half: whether the push topic refuses an anonymous
//! read (what the desk allows on it depends on that), a push with buttons as ntfy's JSON
//! publish takes it, a card replaced by its sequence id, and the one subscription to the
//! reply topic, held only while the desk says a request can be answered there. No port is
//! opened: the tray reads the reply topic as any ntfy subscriber does
//! (`GET <topic>/json?since=…`, one JSON object a line).

use std::io::BufRead;
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use lf_tray_surface::desk::{Input, PhoneInput};
use lf_tray_surface::phone::{Protection, Setup};
use lf_tray_surface::push::{retry_after, server, Message};
use tokio::sync::{mpsc as tokio_mpsc, watch};

use super::{locked, Config, Tell};

/// Connecting and the response's headers: ntfy answers in milliseconds; a server that has
/// not within this long is treated as away and tried again with the pushes' back-off.
const ANSWER: Duration = Duration::from_secs(20);
/// A first subscription reads from this long before it started: the push whose button
/// was tapped went out moments before, and the server's clock may differ a little from
/// ours. A reply read twice changes nothing (each nonce answers once).
const SINCE_SLACK: u64 = 60;

/// Where a topic URL's server is, and the topic: `https://h/p/topic` → (`https://h/p`,
/// `topic`).
pub(super) fn split(url: &str) -> Option<(&str, &str)> {
    let url = url.split(['?', '#']).next().unwrap_or(url);
    let (base, topic) = url.trim_end_matches('/').rsplit_once('/')?;
    (!topic.is_empty() && base.contains("://")).then_some((base, topic))
}

/// Whether the push topic refuses an anonymous read: ntfy answers 401 or 403 to a poll
/// without credentials. Anything else (a 200, an error) counts as open.
pub(super) fn protection(agent: &ureq::Agent, push_url: &str) -> (Protection, String) {
    let poll = format!("{}/json?poll=1", push_url.trim_end_matches('/'));
    match agent.get(&poll).call() {
        Ok(response) if matches!(response.status().as_u16(), 401 | 403) => (
            Protection::Protected,
            "The push topic refuses anyone without a login: the phone offers Allow.".into(),
        ),
        Ok(response) if response.status().is_success() => (
            Protection::Open,
            "Anyone who knows the push topic's name can read it, buttons and all, so the phone \
             offers Deny only (an Allow there could be forged). To be offered Allow, let only \
             your user read it: on your own server `auth-default-access: deny-all` and \
             `ntfy access <you> <topic> rw`; on ntfy.sh, reserve the topic (docs/phone.md)."
                .into(),
        ),
        Ok(response) => (
            Protection::Unchecked,
            format!(
                "Could not tell whether the push topic is protected (the server answered {}): \
                 the phone offers Deny only.",
                response.status()
            ),
        ),
        Err(e) => (
            Protection::Unchecked,
            format!(
                "Could not tell whether the push topic is protected ({e}): the phone offers Deny only."
            ),
        ),
    }
}

/// A push as ntfy's JSON publish takes it: the topic in the body, each button an `http`
/// action the phone sends itself (its URL, its one header, its body, nothing else).
pub(super) fn publish_json(topic: &str, message: &Message) -> serde_json::Value {
    let actions: Vec<serde_json::Value> = message
        .buttons
        .iter()
        .map(|b| {
            serde_json::json!({
                "action": "http",
                "label": b.label,
                "url": b.url,
                "method": "POST",
                "headers": {"Authorization": format!("Bearer {}", b.token)},
                "body": b.body,
                "clear": true,
            })
        })
        .collect();
    serde_json::json!({
        "topic": topic,
        "title": message.title,
        "message": message.body,
        "priority": message.priority,
        "tags": [message.tags],
        "actions": actions,
    })
}

/// A card replaced: the same sequence id, the new words, no buttons.
pub(super) fn card_json(topic: &str, title: &str) -> serde_json::Value {
    serde_json::json!({
        "topic": topic,
        "message": title,
        "priority": 2,
        "tags": ["white_check_mark"],
    })
}

/// Answering from the phone while pushes run: the push topic checked at start and at each
/// change of the settings (the desk told the outcome), each card replaced as the desk says,
/// and the reply topic read exactly while the desk says a request can be answered there.
/// Over 80 lines: one `select!` loop owning the phone's state (the check in flight, what
/// the desk was told, the subscription), as the pushes' own `run` is.
pub(super) async fn carry(
    mut configs: watch::Receiver<Option<Config>>,
    mut cards: tokio_mpsc::UnboundedReceiver<(String, String)>,
    mut listening: watch::Receiver<bool>,
    status: Arc<Mutex<Option<String>>>,
    tell: Tell,
) {
    let agent = super::new_agent();
    let mut checked: Option<tauri::async_runtime::JoinHandle<(Protection, String)>> = None;
    let mut told: Option<Setup> = None;
    let mut subscription: Option<Subscription> = None;
    let mut config: Option<Config> = None;
    let mut fresh = true;
    loop {
        if fresh {
            fresh = false;
            let now = configs.borrow_and_update().clone();
            let Some(now) = now else { break };
            let setup = now.reply.as_ref().map(|(url, token)| Setup {
                reply_url: url.clone(),
                reply_token: token.clone(),
                protection: Protection::Unchecked,
            });
            // What the desk offers changes only once the check says so: until then, Deny.
            if setup.as_ref().map(|s| (&s.reply_url, &s.reply_token))
                != told.as_ref().map(|s| (&s.reply_url, &s.reply_token))
                || config.as_ref().map(|c| &c.url) != Some(&now.url)
            {
                tell(Input::Phone(PhoneInput::Setup(setup.clone())));
                told = setup;
                *locked(&status) = None;
                checked = told.as_ref().map(|_| {
                    let (agent, url) = (agent.clone(), now.url.clone());
                    tauri::async_runtime::spawn_blocking(move || protection(&agent, &url))
                });
            }
            if now.reply.is_none() {
                subscription = None;
            }
            config = Some(now);
        }
        tokio::select! {
            changed = configs.changed() => {
                if changed.is_err() {
                    break;
                }
                fresh = true;
            }
            done = async { checked.as_mut().expect("guarded").await }, if checked.is_some() => {
                checked = None;
                let (protection, said) = done.unwrap_or((
                    Protection::Unchecked,
                    "Could not check the push topic: the phone offers Deny only.".into(),
                ));
                tracing::info!("PHONE push topic: {protection:?}");
                *locked(&status) = Some(said);
                if let Some(setup) = &mut told {
                    setup.protection = protection;
                    tell(Input::Phone(PhoneInput::Setup(Some(setup.clone()))));
                }
            }
            replaced = cards.recv() => {
                let Some((sequence, title)) = replaced else { break };
                let Some(config) = config.clone() else { continue };
                let agent = agent.clone();
                tauri::async_runtime::spawn_blocking(move || {
                    if let Err(why) = card(&agent, &config, &sequence, &title) {
                        tracing::warn!("PHONE card not replaced: {why}");
                    }
                });
            }
            changed = listening.changed() => {
                if changed.is_err() {
                    break;
                }
                let on = *listening.borrow_and_update();
                subscription = match (on, &config) {
                    (true, Some(Config { reply: Some((url, _)), token, .. })) => Some(
                        subscription.take().unwrap_or_else(|| {
                            Subscription::start(streaming_agent(), url.clone(), token.clone(), Arc::clone(&tell))
                        }),
                    ),
                    _ => None,
                };
            }
        }
    }
    drop(subscription);
    *locked(&status) = None;
}

/// POST a push with buttons (or a card's new words) as ntfy's JSON publish: to the
/// server, the topic inside, the sequence id as `X-Sequence-ID`.
pub(super) fn publish(
    agent: &ureq::Agent,
    url: &str,
    token: Option<&str>,
    message: &Message,
) -> Result<(), String> {
    let (base, topic) = split(url).ok_or("the push URL is not valid")?;
    let body = publish_json(topic, message);
    post(agent, base, token, message.sequence.as_deref(), &body)
}

fn card(agent: &ureq::Agent, config: &Config, sequence: &str, title: &str) -> Result<(), String> {
    let (base, topic) = split(&config.url).ok_or("the push URL is not valid")?;
    let body = card_json(topic, title);
    post(agent, base, config.token.as_deref(), Some(sequence), &body)
}

fn post(
    agent: &ureq::Agent,
    base: &str,
    token: Option<&str>,
    sequence: Option<&str>,
    body: &serde_json::Value,
) -> Result<(), String> {
    let mut request = agent.post(base).header("Content-Type", "application/json");
    if let Some(sequence) = sequence {
        request = request.header("X-Sequence-ID", sequence);
    }
    if let Some(token) = token {
        request = request.header("Authorization", format!("Bearer {token}"));
    }
    match request.send(body.to_string().as_bytes()) {
        Ok(response) if response.status().is_success() => Ok(()),
        Ok(response) => Err(format!("the server answered {}", response.status())),
        Err(e) => Err(super::said(e)),
    }
}

/// The subscription to the reply topic, on its own thread; dropping it ends it at once:
/// the link is shut down under the blocked read (the agent is the subscription's own), so
/// nothing stays connected while nothing waits (not even until the server's keepalive).
pub(super) struct Subscription {
    stop: mpsc::Sender<()>,
    agent: ureq::Agent,
}

impl Subscription {
    /// Read `reply_url` with `token` (a reader's), each message's body told to the desk.
    pub(super) fn start(
        agent: ureq::Agent,
        reply_url: String,
        token: Option<String>,
        tell: Tell,
    ) -> Subscription {
        let (stop, stopped) = mpsc::channel();
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
            .saturating_sub(SINCE_SLACK)
            .to_string();
        let reader = agent.clone();
        std::thread::spawn(move || read(reader, reply_url, token, tell, stopped, since));
        Subscription { stop, agent }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        // Told first, so the reader takes the shut link for the stop it is.
        let _ = self.stop.send(());
        self.agent.clone().shutdown();
    }
}

/// Read the reply topic until told to stop: each `message` event's body to the desk, the
/// last id kept so a link made again resumes after it (nothing read twice, nothing lost
/// within the server's cache), backing off as the pushes do while the server is away.
fn read(
    agent: ureq::Agent,
    reply_url: String,
    token: Option<String>,
    tell: Tell,
    stopped: mpsc::Receiver<()>,
    mut since: String,
) {
    let at = server(&reply_url);
    let mut tries = 0u32;
    loop {
        let url = format!("{}/json?since={since}", reply_url.trim_end_matches('/'));
        let mut request = agent.get(&url);
        if let Some(token) = &token {
            request = request.header("Authorization", format!("Bearer {token}"));
        }
        let why = match request.call() {
            Ok(response) if response.status().is_success() => {
                tracing::info!("PHONE listening for answers at {at}");
                let reader = std::io::BufReader::new(response.into_body().into_reader());
                let mut why = "the server closed the link".to_string();
                for line in reader.lines() {
                    if stopped.try_recv() != Err(mpsc::TryRecvError::Empty) {
                        tracing::info!("PHONE not listening: nothing waits on the phone");
                        return;
                    }
                    let line = match line {
                        Ok(line) => line,
                        Err(e) => {
                            why = e.to_string();
                            break;
                        }
                    };
                    // Back-off starts over once the server has said something (its `open`
                    // event), not at a 200 it closes at once: that would be tried every second.
                    tries = 0;
                    let Ok(event) = serde_json::from_str::<serde_json::Value>(&line) else {
                        continue;
                    };
                    if event["event"] != "message" {
                        continue;
                    }
                    if let Some(id) = event["id"].as_str() {
                        since = id.to_string();
                    }
                    let body = event["message"].as_str().unwrap_or_default().to_string();
                    tell(Input::Phone(PhoneInput::Reply(body)));
                }
                why
            }
            Ok(response) => format!("the server answered {}", response.status()),
            Err(e) => e.to_string(),
        };
        if stopped.try_recv() != Err(mpsc::TryRecvError::Empty) {
            tracing::info!("PHONE not listening: nothing waits on the phone");
            return;
        }
        let wait = retry_after(tries);
        tries += 1;
        tracing::warn!(
            "PHONE reply topic at {at}: {why}; again in {} s",
            wait.as_secs()
        );
        match stopped.recv_timeout(wait) {
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            _ => {
                tracing::info!("PHONE not listening: nothing waits on the phone");
                return;
            }
        }
    }
}

/// An agent for the subscription: no limit on the body (it is a stream that lasts while a
/// request waits); ureq has no limit per read, so a link that dies without a word is only
/// noticed by the system's TCP keepalive.
pub(super) fn streaming_agent() -> ureq::Agent {
    super::agent_config()
        .timeout_connect(Some(ANSWER))
        .timeout_recv_response(Some(ANSWER))
        .build()
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use lf_tray_surface::phone::Button;

    #[test]
    fn a_push_with_buttons_is_ntfys_json_publish_with_http_actions() {
        assert_eq!(
            split("https://ntfy.example/sub/lf-me"),
            Some(("https://ntfy.example/sub", "lf-me"))
        );
        assert_eq!(split("nonsense"), None);
        let message = Message {
            id: 1,
            title: "Publish asks permission".into(),
            body: "shop\nAnswer here until 14:31".into(),
            priority: 4,
            tags: "bell",
            sessions: vec!["S1".into()],
            buttons: vec![Button {
                label: "Allow".into(),
                url: "https://ntfy.example/reply".into(),
                token: "tk_reply".into(),
                body: r#"{"request":"S1","nonce":"00"}"#.into(),
            }],
            sequence: Some("abc".into()),
        };
        let json = publish_json("lf-me", &message);
        assert_eq!(json["topic"], "lf-me");
        assert_eq!(json["tags"], serde_json::json!(["bell"]));
        let action = &json["actions"][0];
        assert_eq!(action["action"], "http");
        assert_eq!(action["method"], "POST");
        assert_eq!(action["url"], "https://ntfy.example/reply");
        assert_eq!(action["headers"]["Authorization"], "Bearer tk_reply");
        assert_eq!(action["body"], r#"{"request":"S1","nonce":"00"}"#);
        assert_eq!(
            card_json("lf-me", "Answered at the desk")["actions"],
            serde_json::Value::Null
        );
    }
}
