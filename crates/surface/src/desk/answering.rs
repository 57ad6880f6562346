//! The person's answers at the desk: a popup's button that answers nothing (where a click
//! goes), the one answer input from every place an answer comes from, a request handed
//! back to the agent's terminal, and a reply sent to the hook that asked.

use super::*;

impl Desk {
    /// A popup's `action` on `key` that answers nothing: the window, an expiry, or a click
    /// that goes somewhere.
    pub(super) fn act(
        &mut self,
        key: NoticeKey,
        action: String,
        token: Option<String>,
    ) -> Vec<Effect> {
        let NoticeKey::Session(named) = key else {
            return vec![Effect::Window(None)];
        };
        let session = || session_key(&named);
        // Going to a Codex agent's terminal hands it its prompt back: while the hook waits,
        // that terminal shows nothing to answer.
        let codex = self
            .requests
            .request(&named)
            .is_some_and(|request| request.client == Client::Codex);
        if codex && [notice::DEFAULT, notice::OPEN].contains(&action.as_str()) {
            return self.hand_back(&named, token);
        }
        match action.as_str() {
            notice::ANSWER => vec![Effect::Window(Some(session()))],
            notice::EXPIRED => {
                self.popups.expired(&named);
                vec![
                    Effect::Note(format!("UNSEEN session={named}: its popup expired")),
                    Effect::Redraw,
                ]
            }
            _ => vec![Effect::Go {
                key: session(),
                action,
                token,
            }],
        }
    }

    /// The person's answer to the session's open request: sent when it answers what was
    /// asked, else why not (to the window, which shows it; a popup's is only logged).
    pub(super) fn answered(&mut self, answer: Answer) -> Vec<Effect> {
        // A key's word becomes the request's own choice; what it does besides answering
        // (nothing open, a question's card, the terminal) is done there.
        let answer = match answer.from {
            answer::From::Key => match self.by_key(answer) {
                Ok(answer) => answer,
                Err(out) => return out,
            },
            _ => answer,
        };
        let key = answer.request.clone();
        // The phone, as a popup, is told nothing back: its card is (see `desk::phone`).
        let popup = matches!(
            answer.from,
            answer::From::Popup { .. } | answer::From::Phone
        );
        let token = match &answer.from {
            answer::From::Popup { token } => token.clone(),
            answer::From::Window | answer::From::Phone | answer::From::Key => None,
        };
        let reply = match self.requests.request(&key).map(|r| answer.reply(&r)) {
            None if answer.choice == answer::IN_TERMINAL => {
                // Nothing left to hand back: the click still goes where it says.
                return vec![Effect::Go {
                    key: session_key(&key),
                    action: answer.choice,
                    token,
                }];
            }
            None => Err(NotTaken::NoneOpen),
            Some(Err(Unsent::ToTerminal)) => return self.hand_back(&key, token),
            Some(Err(Unsent::NotOffered)) => Err(NotTaken::Refused(Refused::NotForThis(
                "That option is not one the agent offered.",
            ))),
            Some(Ok(reply)) => Ok(reply),
        };
        let word = reply.as_ref().ok().map(|reply| reply.word());
        let from = match answer.from {
            answer::From::Popup { .. } => "the popup",
            answer::From::Window => "the window",
            answer::From::Phone => "the phone",
            answer::From::Key => "a key",
        };
        match (
            reply.and_then(|reply| self.answer(&key, reply, from)),
            popup,
        ) {
            (Ok(out), true) => out,
            (Ok(mut out), false) => {
                out.push(Effect::Carded(Ok(word.unwrap_or("answer"))));
                out
            }
            (Err(why), true) => vec![Effect::Note(format!(
                "IGNORED {} session={key}: {why}",
                answer.choice
            ))],
            (Err(why), false) => vec![
                Effect::Note(format!(
                    "PERMISSION from {from} session={key}: not sent: {why}"
                )),
                Effect::Carded(Err(why)),
            ],
        }
    }

    /// The session's request goes back to its agent's terminal (Codex's, which shows its
    /// own prompt once the hook ends), and the person goes there.
    pub(super) fn hand_back(&mut self, key: &str, token: Option<String>) -> Vec<Effect> {
        let mut out = Vec::new();
        if let Some(hook) = self.requests.withdraw(key) {
            out.extend([
                Effect::Note(format!(
                    "PERMISSION to the terminal session={key}: Codex asks there now"
                )),
                Effect::Hook(hook, ToHook::Withdrawn),
                Effect::Close(NoticeKey::Session(key.to_string())),
                Effect::Redraw,
            ]);
        }
        out.push(Effect::Go {
            key: session_key(key),
            action: notice::DEFAULT.to_string(),
            token,
        });
        out
    }

    /// Send `reply` to the session's open request when it answers what was asked: the
    /// hook gets it, and the popup goes (servers close one whose button was pressed; the
    /// window's buttons need it gone as well).
    pub(super) fn answer(
        &mut self,
        key: &str,
        reply: Reply,
        from: &str,
    ) -> Result<Vec<Effect>, NotTaken> {
        let hook = self.requests.answer(key, &reply)?;
        Ok(vec![
            Effect::Note(format!(
                "PERMISSION {} from {from} session={key}",
                reply.word()
            )),
            Effect::Hook(hook, ToHook::Answer(reply)),
            Effect::Close(NoticeKey::Session(key.to_string())),
            Effect::Redraw,
        ])
    }
}
