//! The phone as one more input of the desk: a request's push carries the answers the desk
//! offers for it (as [`crate::phone`] allows on this push topic), a tap that comes back is
//! turned into the desk's one [`Answer`] input (`From::Phone`), checked and sent as a
//! popup's click is, and the card on the phone is told how the request ended.

use std::collections::HashMap;
use std::time::Instant;

use lf_tray_core::permission::{Client, Reply, Request};

use super::{Desk, Effect, HookId, ToHook};
use crate::answer::{self, Answer, Given};
use crate::phone::{self, Setup, Tickets};
use crate::policy::Clock;
use crate::push::Message;

/// What the shell tells the desk of the phone.
#[derive(Debug, Clone)]
pub enum PhoneInput {
    /// Answering from the phone turned on (how, and whether the push topic is protected)
    /// or off.
    Setup(Option<Setup>),
    /// A message read from the reply topic: a button's body, or anything anyone wrote.
    Reply(String),
}

/// The desk's side of answering from the phone.
#[derive(Default)]
pub(super) struct Answering {
    setup: Option<Setup>,
    tickets: Tickets,
    /// Each open request's hook and when its buttons expire, from when it was asked.
    asked: HashMap<String, (HookId, Instant)>,
    /// What the shell was last told: listen to the reply topic or not.
    listening: bool,
}

impl Desk {
    /// A request was taken: when answers from the phone expire for it.
    pub(super) fn phone_asked(
        &mut self,
        key: &str,
        hook: HookId,
        client: Client,
        handed_back: Option<Instant>,
        now: Clock,
    ) {
        let until = phone::expiry(client, now.at(), handed_back);
        self.phone.asked.insert(key.to_string(), (hook, until));
    }

    /// A request that came after its session's push went out (lf may say the agent waits
    /// before its hook reaches the tray): the session is pushed again, now with the
    /// buttons, when the phone can answer this request at all.
    pub(super) fn push_again(&mut self, key: &str, request: &Request, now: Clock) -> Vec<Effect> {
        let (Some(setup), Some(pushes)) = (&self.phone.setup, &mut self.pushes) else {
            return Vec::new();
        };
        if phone::buttons(request, setup.protection).0.is_empty() || !pushes.again(key, now.at()) {
            return Vec::new();
        }
        vec![Effect::Note(format!(
            "PUSH again session={key}: its request came after its push"
        ))]
    }

    /// The push about one session whose request is open carries its buttons.
    pub(super) fn with_buttons(&mut self, message: &mut Message, now: Clock) {
        let Some(setup) = &self.phone.setup else {
            return;
        };
        let [key] = message.sessions.as_slice() else {
            return;
        };
        let (Some(request), Some(&(hook, until))) =
            (self.requests.request(key), self.phone.asked.get(key))
        else {
            return;
        };
        if self.requests.session_of(hook).as_deref() != Some(key.as_str()) {
            return;
        }
        let said = now.local_time(now.unix_at(until));
        if let Some(offer) = self.phone.tickets.offer(key, &request, setup, until, &said) {
            if let (Some(pushes), false) = (&mut self.pushes, offer.buttons.is_empty()) {
                pushes.card(&offer.sequence, true);
            }
            message.body = format!("{}\n{}", message.body, offer.line);
            message.buttons = offer.buttons;
            message.sequence = Some(offer.sequence);
        }
    }

    pub(super) fn phone_input(&mut self, input: PhoneInput, now: Clock) -> Vec<Effect> {
        match input {
            PhoneInput::Setup(setup) => {
                let mut out = Vec::new();
                if setup.is_none() {
                    // Answering from the phone turned off: what was pushed answers nothing.
                    for key in self.phone.tickets.sessions() {
                        out.extend(self.card(&key, "Answer at the desk".into()));
                    }
                }
                out.push(Effect::Note(format!("PHONE answering {setup:?}")));
                // Cards the last run left with buttons: their requests ended with it.
                if let (Some(pushes), true) = (&mut self.pushes, setup.is_some()) {
                    for sequence in pushes.take_stale_cards() {
                        out.push(Effect::Card {
                            session: String::new(),
                            sequence,
                            title: "No longer waiting".into(),
                        });
                    }
                }
                self.phone.setup = setup;
                out
            }
            PhoneInput::Reply(body) => self.tapped(&body, now),
        }
    }

    /// A message from the reply topic: an answer when it is an open request's unused
    /// button, tapped in time; else ignored, and logged without the nonce.
    fn tapped(&mut self, body: &str, now: Clock) -> Vec<Effect> {
        let (key, choice) = match self.phone.tickets.take(body, now.at()) {
            Ok(taken) => taken,
            Err(why) => return vec![Effect::Note(format!("PHONE reply ignored: {why}"))],
        };
        let out = self.answered(Answer {
            request: key.clone(),
            choice: choice.to_string(),
            given: Given::default(),
            from: answer::From::Phone,
        });
        let reply = out.iter().find_map(|effect| match effect {
            Effect::Hook(_, ToHook::Answer(reply)) => Some(reply.clone()),
            _ => None,
        });
        let mut out = out;
        if let Some(reply) = reply {
            let at = now.local_time(now.unix());
            out.extend(self.card(&key, format!("{} from your phone · {at}", done(&reply))));
        }
        out
    }

    /// After every input: the cards of requests that ended otherwise say so, and the
    /// shell listens to the reply topic exactly while a request can be answered there.
    pub(super) fn phone_sweep(&mut self, at_the_desk: bool) -> Vec<Effect> {
        let mut out = Vec::new();
        let requests = &self.requests;
        self.phone
            .asked
            .retain(|key, (hook, _)| requests.session_of(*hook).as_deref() == Some(key.as_str()));
        for key in self.phone.tickets.sessions() {
            if !self.phone.asked.contains_key(&key) {
                let title = if at_the_desk {
                    "Answered at the desk"
                } else {
                    "No longer waiting"
                };
                out.extend(self.card(&key, title.into()));
            }
        }
        // The cards replaced here are forgotten on disk now, not at the next input.
        if let Some(bytes) = self
            .pushes
            .as_mut()
            .and_then(crate::push::Pushes::take_memory)
        {
            out.push(Effect::KeepPushed(bytes));
        }
        let listening = self.phone.setup.is_some() && self.phone.tickets.listening();
        if listening != self.phone.listening {
            self.phone.listening = listening;
            out.push(Effect::Listen(listening));
        }
        out
    }

    /// The session's card on the phone replaced by `title`, with no buttons.
    fn card(&mut self, key: &str, title: String) -> Option<Effect> {
        let sequence = self.phone.tickets.close(key)?;
        if let Some(pushes) = &mut self.pushes {
            pushes.card(&sequence, false);
        }
        Some(Effect::Card {
            session: key.to_string(),
            sequence,
            title,
        })
    }
}

/// What an answer did, for its card.
fn done(reply: &Reply) -> &'static str {
    match reply {
        Reply::Allow => "Allowed",
        Reply::Deny => "Denied",
        Reply::AlwaysAllow => "Always allowed",
        _ => "Answered",
    }
}
