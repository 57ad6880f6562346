//! A key's answer at the desk: which request it is for (the session named, else the newest
//! open request whose popup was shown) and which of that request's own choices it is
//! ([`keys::pick`]); from there it is answered as the popup's or the window's is, and the
//! one who pressed it is told, as the window is, whether it was sent. While answering
//! from the keys is on, each request's popup names the keys that answer it, and the shell
//! is told which keys to hold: exactly those that answer the newest request shown, none
//! while nothing waits (an X11 grab takes a key from every other program).

use lf_tray_core::permission::Refused;

use super::{session_key, Desk, Effect};
use crate::answer::{self, Answer};
use crate::keys::{self, Key, Pick, Triggers};
use crate::notice::{self, NoticeKey};
use crate::requests::NotTaken;

/// Nothing for a key to answer: no request is open whose popup was shown.
const NOTHING_WAITS: Refused =
    Refused::NotForThis("No request waits for an answer (none has shown its popup).");

/// The desk's side of the keys a desktop gives.
#[derive(Debug, Default)]
pub(super) struct Keyboard {
    /// The keys the shell can hold and what they are called; empty while off.
    triggers: Triggers,
    /// What the shell was last told to hold.
    held: Vec<Key>,
}

impl Desk {
    /// Answering from the keys turned on with these triggers (or off: none).
    pub(super) fn set_keys(&mut self, triggers: Triggers) -> Effect {
        let note = Effect::Note(format!("KEYS triggers {:?}", triggers.0));
        self.keyboard.triggers = triggers;
        note
    }

    /// After every input: a request's popup names the keys that answer it, and the shell
    /// holds exactly the keys that answer the newest request shown.
    pub(super) fn keys_sweep(&mut self, out: &mut Vec<Effect>) {
        let triggers = &self.keyboard.triggers;
        for effect in out.iter_mut() {
            let Effect::Show(shown) = effect else {
                continue;
            };
            let NoticeKey::Session(session) = &shown.key else {
                continue;
            };
            let line = self
                .requests
                .request(session)
                .and_then(|r| triggers.line(&r));
            if let Some(line) = line {
                let line = notice::escape(&line);
                shown.body = match shown.body.is_empty() {
                    true => line,
                    false => format!("{}\n{line}", shown.body),
                };
            }
        }
        let newest = self.shown.newest(self.requests.all().map(|(key, _)| key));
        let wanted = newest
            .and_then(|session| self.requests.request(&session))
            .map(|request| triggers.wanted(&request))
            .unwrap_or_default();
        if wanted != self.keyboard.held {
            self.keyboard.held.clone_from(&wanted);
            out.push(Effect::Grab(wanted));
        }
    }

    /// The popup for the session's open request was shown: the newest, for the keys.
    pub(super) fn popup_shown(&mut self, key: &NoticeKey) -> Option<Effect> {
        let requests = &self.requests;
        self.shown
            .retain(|session| requests.request(session).is_some());
        let NoticeKey::Session(session) = key else {
            return None;
        };
        self.requests.request(session)?;
        self.shown.shown(session);
        Some(Effect::Note(format!("KEYS newest session={session}")))
    }

    /// A key's `answer` (its `choice` the key's word, its `request` the session named or
    /// empty): the request's own choice to answer with, or what the key did instead.
    pub(super) fn by_key(&mut self, answer: Answer) -> Result<Answer, Vec<Effect>> {
        let not = |why: NotTaken| Err(vec![Effect::Carded(Err(why))]);
        let Some(key) = Key::parse(&answer.choice) else {
            return not(NotTaken::Refused(Refused::NotForThis(
                "A key answers allow, deny or open.",
            )));
        };
        let session = match answer.request.as_str() {
            "" => self.shown.newest(self.requests.all().map(|(key, _)| key)),
            named => Some(named.to_string()),
        };
        let Some(session) = session else {
            return not(NotTaken::Refused(NOTHING_WAITS));
        };
        let Some(request) = self.requests.request(&session) else {
            return not(NotTaken::NoneOpen);
        };
        let said =
            |what: &str| Effect::Note(format!("KEY {} session={session}: {what}", key.word()));
        match keys::pick(key, &request) {
            Ok(Pick::Choice(choice)) => Ok(Answer {
                request: session,
                choice: choice.to_string(),
                given: answer::Given::default(),
                from: answer.from,
            }),
            Ok(Pick::Card) => Err(vec![
                said("its card in the window"),
                Effect::Window(Some(session_key(&session))),
                Effect::Carded(Ok(key.word())),
            ]),
            Ok(Pick::Terminal) => {
                let mut out = vec![said("to its terminal")];
                out.extend(self.act(
                    NoticeKey::Session(session),
                    notice::DEFAULT.to_string(),
                    None,
                ));
                out.push(Effect::Carded(Ok(key.word())));
                Err(out)
            }
            Err(why) => Err(vec![
                said(why),
                Effect::Carded(Err(NotTaken::Refused(Refused::NotForThis(why)))),
            ]),
        }
    }
}
