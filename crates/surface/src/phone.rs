//! Answering from the phone: which of a request's answers its push carries as ntfy `http`
//! buttons, and whether a reply that came back through the tray's reply topic answers it.
//!
//! ntfy's app sends an `http` button's request itself, exactly as the message wrote it, so
//! whoever reads the push topic could send the same request. Hence: **Allow** (and
//! everything that lets an agent go on) only on a push topic that refuses an anonymous
//! read; on one anyone can read, **Deny** alone (a forged Deny only stops an agent). Each
//! button carries a nonce of its own, good once, for one request, until the request's
//! expiry; a reply is only ever turned into the desk's one [`Answer`](crate::answer::Answer)
//! input, which checks it as it checks a popup's click.
//!
//! Plain code with the time injected; the shell checks the topic, sends and subscribes.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use lf_tray_core::permission::{Client, Request};

use crate::answer::{self, Sends};

/// ntfy shows at most three actions on a message.
pub const MAX_BUTTONS: usize = 3;
/// A tap must reach the tray, and its answer the hook, before the hook gives up: ten
/// seconds covers a phone on a slow network (ntfy's own publish timeout is of that
/// order) and the hop to an agent on another machine over ssh.
pub const MARGIN: Duration = Duration::from_secs(10);

/// Whether the push topic refuses a reader without credentials, as the shell found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protection {
    /// Not checked yet, or the check failed: taken as open.
    #[default]
    Unchecked,
    /// ntfy answered 401/403 to an anonymous read: only its users read the pushes.
    Protected,
    /// Anyone who knows the topic's name reads it, buttons and all.
    Open,
}

/// How the tray is answered from the phone: the reply topic's URL (on the push server)
/// and the token of a user that may only write it, which travels inside every button.
#[derive(Clone, PartialEq, Eq)]
pub struct Setup {
    pub reply_url: String,
    pub reply_token: String,
    pub protection: Protection,
}

/// Never the topic or the token: safe to log.
impl std::fmt::Debug for Setup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Setup")
            .field("server", &crate::push::server(&self.reply_url))
            .field("protection", &self.protection)
            .finish_non_exhaustive()
    }
}

/// One `http` button of a push, as ntfy's app will send it: `POST url`, the header
/// `Authorization: Bearer token`, the body.
#[derive(Clone, PartialEq, Eq)]
pub struct Button {
    pub label: String,
    pub url: String,
    pub token: String,
    pub body: String,
}

/// The label alone: the URL names the reply topic, the body holds the nonce.
impl std::fmt::Debug for Button {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Button({:?})", self.label)
    }
}

/// What a request's push carries.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Offer {
    pub buttons: Vec<Button>,
    /// A line for the push: until when a tap answers, or why there are no buttons.
    pub line: String,
    /// The push's sequence id: its later words replace the card.
    pub sequence: String,
}

/// A reply's body, as a button wrote it.
#[derive(serde::Serialize, serde::Deserialize)]
struct Body {
    request: String,
    nonce: String,
}

/// Why a reply answered nothing; said in the log, which never shows the nonce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Not a body any button of the tray's writes.
    Unreadable,
    /// No request of that session waits on the phone (answered, withdrawn, never asked).
    NotWaiting,
    /// The nonce is none of that request's unused ones (forged, another request's).
    NotItsNonce,
    /// It came after the request's expiry.
    Late,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Refusal::Unreadable => "not a reply of the tray's buttons",
            Refusal::NotWaiting => "no request of that session waits on the phone",
            Refusal::NotItsNonce => "not one of that request's unused buttons",
            Refusal::Late => "it came after the request's expiry",
        })
    }
}

/// A request's buttons as pushed: each nonce with the choice it answers.
struct Ticket {
    nonces: Vec<(String, &'static str)>,
    until: Instant,
    sequence: String,
}

/// The requests that can be answered from the phone, by session key.
#[derive(Default)]
pub struct Tickets {
    open: HashMap<String, Ticket>,
}

impl Tickets {
    /// The buttons for `request` of session `key`, expiring at `until`; `None` when no
    /// randomness could be had (then the push goes without buttons). The request's earlier
    /// buttons, if any were pushed, are void.
    pub fn offer(
        &mut self,
        key: &str,
        request: &Request,
        setup: &Setup,
        until: Instant,
        until_said: &str,
    ) -> Option<Offer> {
        let (picked, why_not) = buttons(request, setup.protection);
        let sequence = match self.open.get(key) {
            Some(ticket) => ticket.sequence.clone(),
            None => random_hex()?,
        };
        let mut nonces = Vec::new();
        let mut out = Vec::new();
        for (id, label) in picked {
            let nonce = random_hex()?;
            let body = serde_json::to_string(&Body {
                request: key.to_string(),
                nonce: nonce.clone(),
            })
            .ok()?;
            out.push(Button {
                label,
                url: setup.reply_url.clone(),
                token: setup.reply_token.clone(),
                body,
            });
            nonces.push((nonce, id));
        }
        let line = match why_not {
            Some(why) => why.to_string(),
            None => format!("Answer here until {until_said}"),
        };
        self.open.insert(
            key.to_string(),
            Ticket {
                nonces,
                until,
                sequence: sequence.clone(),
            },
        );
        Some(Offer {
            buttons: out,
            line,
            sequence,
        })
    }

    /// The session and the choice a reply's `body` makes, when it is one of an open
    /// request's unused buttons tapped before its expiry; the request's other buttons are
    /// void from then on (one answer per request). The desk still checks the answer as any.
    pub fn take(&mut self, body: &str, now: Instant) -> Result<(String, &'static str), Refusal> {
        let body: Body = serde_json::from_str(body.trim()).map_err(|_| Refusal::Unreadable)?;
        let ticket = self.open.get(&body.request).ok_or(Refusal::NotWaiting)?;
        let choice = ticket
            .nonces
            .iter()
            .find(|(nonce, _)| same(nonce, &body.nonce))
            .map(|(_, choice)| *choice)
            .ok_or(Refusal::NotItsNonce)?;
        if now > ticket.until {
            return Err(Refusal::Late);
        }
        if let Some(ticket) = self.open.get_mut(&body.request) {
            ticket.nonces.clear();
        }
        Ok((body.request, choice))
    }

    /// The session's request is over (answered, withdrawn, gone): its card's sequence id,
    /// when its push had one.
    pub fn close(&mut self, key: &str) -> Option<String> {
        self.open.remove(key).map(|ticket| ticket.sequence)
    }

    /// The sessions whose pushes carry (or carried) buttons.
    pub fn sessions(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.open.keys().cloned().collect();
        keys.sort();
        keys
    }

    /// Whether any request waits with buttons on the phone: the shell listens to the
    /// reply topic only then.
    pub fn listening(&self) -> bool {
        self.open.values().any(|t| !t.nonces.is_empty())
    }
}

/// The choices a push of `request` carries, with their labels, on a topic with
/// `protection`; and the line that says why it carries fewer than the desk offers.
pub fn buttons(
    request: &Request,
    protection: Protection,
) -> (Vec<(&'static str, String)>, Option<&'static str>) {
    let offered = answer::choices(request);
    let options = offered
        .iter()
        .filter(|c| matches!(c.sends, Sends::Option(_)))
        .count();
    let question = matches!(
        request.prompt(),
        Ok(lf_tray_core::permission::Prompt::Questions(_))
    );
    let safe = |sends: Sends| matches!(sends, Sends::Deny);
    let mut picked: Vec<(&'static str, String)> = offered
        .iter()
        .filter(|c| match c.sends {
            Sends::Allow | Sends::AlwaysAllow | Sends::Deny => true,
            Sends::Option(_) => options <= MAX_BUTTONS,
            _ => false,
        })
        .filter(|c| protection == Protection::Protected || safe(c.sends))
        .map(|c| (c.id, crate::notice::one_line(&c.label, 40)))
        .collect();
    picked.truncate(MAX_BUTTONS);
    let why = if question && (options == 0 || options > MAX_BUTTONS) {
        Some("Answer at the desk: the phone offers one question's three options at most")
    } else if !question
        && matches!(
            request.prompt(),
            Ok(lf_tray_core::permission::Prompt::Plan(_))
        )
    {
        Some("Answer at the desk: a plan is read there")
    } else if protection == Protection::Open {
        Some("Allow is not offered here: anyone can read this push topic")
    } else if protection == Protection::Unchecked {
        Some("Allow is not offered here: the push topic's protection is not checked yet")
    } else {
        None
    };
    (picked, why)
}

/// When a request's buttons expire: before its hook gives up (or, for Codex, before the
/// tray hands it back to its terminal), less the [`MARGIN`] a tap needs to arrive.
pub fn expiry(client: Client, asked: Instant, handed_back: Option<Instant>) -> Instant {
    let gives_up = asked + client.give_up();
    let end = handed_back.map_or(gives_up, |at| at.min(gives_up));
    end.checked_sub(MARGIN).unwrap_or(end).max(asked)
}

/// Two nonces compared in full whatever their first difference, so the time taken tells
/// nothing of how much of a guess was right.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// 128 random bits from the kernel, as 32 hex digits; `None` if it gives none.
pub fn random_hex() -> Option<String> {
    let mut bytes = [0u8; 16];
    let mut filled = 0;
    while filled < bytes.len() {
        // SAFETY: the pointer and length describe the unfilled rest of `bytes`.
        let got = unsafe {
            libc::getrandom(bytes[filled..].as_mut_ptr().cast(), bytes.len() - filled, 0)
        };
        if got <= 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return None;
        }
        filled += got as usize;
    }
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(tool: &str, input: serde_json::Value, always: bool) -> Request {
        let mut json = serde_json::json!({"tool_name": tool, "tool_input": input});
        if always {
            json["permission_suggestions"] = serde_json::json!([{"type": "addRules",
                "rules": [{"toolName": "Bash", "ruleContent": "ls:*"}],
                "behavior": "allow", "destination": "localSettings"}]);
        }
        serde_json::from_value(json).unwrap()
    }

    fn bash() -> Request {
        request("Bash", serde_json::json!({"command": "ls"}), false)
    }

    fn question(options: usize, multi: bool) -> Request {
        let options: Vec<_> = (0..options)
            .map(|n| serde_json::json!({"label": format!("option {n}")}))
            .collect();
        request(
            "AskUserQuestion",
            serde_json::json!({"questions": [{"question": "Q?", "multiSelect": multi,
                "options": options}]}),
            false,
        )
    }

    fn setup(protection: Protection) -> Setup {
        Setup {
            reply_url: "https://ntfy.example/reply-topic".into(),
            reply_token: "tk_reply".into(),
            protection,
        }
    }

    fn labels(offer: &Offer) -> Vec<&str> {
        offer.buttons.iter().map(|b| b.label.as_str()).collect()
    }

    fn nonce(button: &Button) -> String {
        serde_json::from_str::<Body>(&button.body).unwrap().nonce
    }

    #[test]
    fn allow_only_where_the_push_topic_refuses_an_anonymous_read() {
        let t0 = Instant::now();
        let mut tickets = Tickets::default();
        let protected = setup(Protection::Protected);
        let offer = tickets
            .offer("S1", &bash(), &protected, t0, "14:31")
            .unwrap();
        assert_eq!(labels(&offer), ["Allow", "Deny"]);
        assert_eq!(offer.line, "Answer here until 14:31");
        let always = request("Bash", serde_json::json!({"command": "ls"}), true);
        let offer = tickets.offer("S2", &always, &protected, t0, "").unwrap();
        assert_eq!(labels(&offer), ["Allow", "Always allow", "Deny"]);
        for protection in [Protection::Open, Protection::Unchecked] {
            let offer = tickets
                .offer("S3", &always, &setup(protection), t0, "")
                .unwrap();
            assert_eq!(labels(&offer), ["Deny"], "{protection:?}");
            assert!(
                offer.line.starts_with("Allow is not offered"),
                "{}",
                offer.line
            );
            let (none, _) = buttons(&question(2, false), protection);
            assert!(none.is_empty(), "no option on an open topic");
        }
    }

    #[test]
    fn a_single_select_question_of_three_options_at_most_gets_one_button_each() {
        let p = Protection::Protected;
        let ids = |r: &Request| buttons(r, p).0.into_iter().map(|b| b.1).collect::<Vec<_>>();
        assert_eq!(
            ids(&question(3, false)),
            ["option 0", "option 1", "option 2"]
        );
        assert!(buttons(&question(3, false), p).1.is_none());
        for many in [question(4, false), question(2, true)] {
            let (picked, why) = buttons(&many, p);
            assert!(picked.is_empty());
            assert!(why.unwrap().starts_with("Answer at the desk"));
        }
        let two = request(
            "AskUserQuestion",
            serde_json::json!({"questions": [
                {"question": "A?", "options": [{"label": "a"}, {"label": "b"}]},
                {"question": "B?", "options": [{"label": "c"}, {"label": "d"}]}]}),
            false,
        );
        assert!(buttons(&two, p).0.is_empty());
        let plan = request("ExitPlanMode", serde_json::json!({"plan": "1."}), false);
        assert!(buttons(&plan, p).0.is_empty());
    }

    #[test]
    fn each_button_has_its_own_nonce_good_once_for_its_request_before_its_expiry() {
        let t0 = Instant::now();
        let until = t0 + Duration::from_secs(60);
        let mut tickets = Tickets::default();
        let s = setup(Protection::Protected);
        let one = tickets.offer("S1", &bash(), &s, until, "").unwrap();
        let two = tickets.offer("S2", &bash(), &s, until, "").unwrap();
        let all: Vec<String> = one.buttons.iter().chain(&two.buttons).map(nonce).collect();
        assert!(all.iter().all(|n| n.len() == 32));
        let mut unique = all.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), all.len(), "a nonce per button");
        assert_ne!(one.sequence, two.sequence, "a sequence id per request");
        assert!(tickets.listening());
        // Forged, another request's nonce, unreadable.
        let forged = format!(r#"{{"request":"S1","nonce":"{}"}}"#, "0".repeat(32));
        assert_eq!(tickets.take(&forged, t0), Err(Refusal::NotItsNonce));
        let crossed = format!(r#"{{"request":"S1","nonce":"{}"}}"#, nonce(&two.buttons[0]));
        assert_eq!(tickets.take(&crossed, t0), Err(Refusal::NotItsNonce));
        assert_eq!(tickets.take("allow", t0), Err(Refusal::Unreadable));
        // Too late.
        let deny_two = &two.buttons[1].body;
        assert_eq!(
            tickets.take(deny_two, until + Duration::from_millis(1)),
            Err(Refusal::Late)
        );
        // Allow on S1, once; then S1's Deny and a replay are void.
        assert_eq!(
            tickets.take(&one.buttons[0].body, t0),
            Ok(("S1".into(), answer::ALLOW))
        );
        assert_eq!(
            tickets.take(&one.buttons[0].body, t0),
            Err(Refusal::NotItsNonce)
        );
        assert_eq!(
            tickets.take(&one.buttons[1].body, t0),
            Err(Refusal::NotItsNonce)
        );
        assert_eq!(tickets.close("S1"), Some(one.sequence));
        assert_eq!(
            tickets.take(&one.buttons[0].body, t0),
            Err(Refusal::NotWaiting)
        );
        assert_eq!(tickets.take(deny_two, t0), Ok(("S2".into(), answer::DENY)));
        assert!(!tickets.listening(), "nothing left to listen for");
    }

    #[test]
    fn buttons_expire_before_the_hook_gives_up_and_say_nothing_secret() {
        let t0 = Instant::now();
        assert_eq!(
            expiry(Client::Claude, t0, None),
            t0 + Client::Claude.give_up() - MARGIN
        );
        let back = t0 + Duration::from_secs(30);
        assert_eq!(expiry(Client::Codex, t0, Some(back)), back - MARGIN);
        assert_eq!(expiry(Client::Codex, t0, Some(t0)), t0);
        let offer = Tickets::default()
            .offer("S1", &bash(), &setup(Protection::Protected), t0, "")
            .unwrap();
        let said = format!("{offer:?} {:?}", setup(Protection::Open));
        assert!(
            !said.contains("tk_reply") && !said.contains("reply-topic"),
            "{said}"
        );
        assert!(!said.contains(&nonce(&offer.buttons[0])), "{said}");
        assert_eq!(
            format!("{}", Refusal::NotItsNonce),
            "not one of that request's unused buttons"
        );
    }
}
