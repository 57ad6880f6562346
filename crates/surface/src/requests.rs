//! The agents' requests that wait for the person, one per session: what the popup, the
//! window and the hook's connection share. Plain state, held by the [`Desk`](crate::desk)
//! beside the popups' policy, and tested here without a desktop.

use std::collections::HashMap;

use lf_tray_core::permission::{Refused, Reply, Request};
use lf_tray_core::SessionRecord;
use tokio::sync::oneshot;

use crate::notice::{self, NoticeKey};

struct Open {
    id: u64,
    record: SessionRecord,
    request: Request,
    answer: oneshot::Sender<Reply>,
}

/// Why a reply was not sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotTaken {
    /// No request is open: answered already, or withdrawn.
    NoneOpen,
    /// It does not answer what was asked.
    Refused(Refused),
}

impl std::fmt::Display for NotTaken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotTaken::NoneOpen => f.write_str("The agent no longer waits for this answer."),
            NotTaken::Refused(why) => write!(f, "{why}"),
        }
    }
}

/// The requests waiting for the person, by session key: one per session, the newest.
#[derive(Default)]
pub struct Requests {
    open: HashMap<String, Open>,
    next: u64,
}

impl Requests {
    /// The person's reply to the session's open request, taken when it answers what was
    /// asked (the core's [`Request::decide`]) and is the first: then it goes to the hook.
    /// A reply that does not answer it leaves the request open, its popup and card up.
    pub fn answer(&mut self, key: &str, reply: Reply) -> Result<(), NotTaken> {
        let request = &self.open.get(key).ok_or(NotTaken::NoneOpen)?.request;
        request.decide(&reply).map_err(NotTaken::Refused)?;
        let open = self.open.remove(key).ok_or(NotTaken::NoneOpen)?;
        open.answer.send(reply).map_err(|_| NotTaken::NoneOpen)
    }

    /// Take back the session's open request without an answer; true when there was one.
    pub fn withdraw(&mut self, key: &str) -> bool {
        self.open.remove(key).is_some()
    }

    /// The session's open request, if any: its popup and its window buttons.
    pub fn request(&self, key: &str) -> Option<Request> {
        self.open.get(key).map(|o| o.request.clone())
    }

    /// The popup for a session with an open request in place of the one the policy would
    /// show (an ask that arrives after the request must not take its buttons away); the
    /// policy's bookkeeping (`covers`) stays.
    pub fn in_place_of(&self, shown: notice::Notice) -> notice::Notice {
        let NoticeKey::Session(key) = &shown.key else {
            return shown;
        };
        match self.open.get(key) {
            Some(open) => notice::Notice {
                covers: shown.covers,
                ..notice::permission(&open.record, &open.request)
            },
            None => shown,
        }
    }

    /// Take a new request for the session; its answer comes on the receiver.
    pub fn register(
        &mut self,
        key: &str,
        record: SessionRecord,
        request: Request,
    ) -> (u64, oneshot::Receiver<Reply>) {
        let id = self.next;
        self.next += 1;
        let (answer, answered) = oneshot::channel();
        // A newer request of the same session replaces the older: its hook gets no answer.
        self.open.insert(
            key.to_string(),
            Open {
                id,
                record,
                request,
                answer,
            },
        );
        (id, answered)
    }

    /// Withdraw the session's request `id` if it is still the open one.
    pub fn withdraw_this(&mut self, key: &str, id: u64) -> bool {
        if self.open.get(key).is_some_and(|o| o.id == id) {
            self.open.remove(key);
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::record_d;
    use lf_tray_core::State;

    fn request(command: &str) -> Request {
        Request {
            session_id: "c1".into(),
            cwd: "/w".into(),
            tool_name: "Bash".into(),
            tool_input: serde_json::json!({ "command": command }),
            permission_suggestions: Vec::new(),
        }
    }

    fn question() -> Request {
        Request {
            tool_name: "AskUserQuestion".into(),
            tool_input: serde_json::json!({"questions": [{"question": "Which registry?",
                "options": [{"label": "crates.io"}, {"label": "internal"}]}]}),
            ..request("")
        }
    }

    #[test]
    fn a_reply_that_does_not_answer_the_question_leaves_it_open() {
        use lf_tray_core::permission::Answer;
        let mut requests = Requests::default();
        let (_, mut answered) =
            requests.register("S1", record_d("S1", State::Active, true), question());
        for wrong in [
            Reply::Allow,
            Reply::Answers { answers: vec![] },
            Reply::Answers {
                answers: vec![Answer::chose("npm")],
            },
        ] {
            assert!(matches!(
                requests.answer("S1", wrong),
                Err(NotTaken::Refused(_))
            ));
        }
        assert!(answered.try_recv().is_err());
        assert!(requests.request("S1").is_some(), "the question was dropped");
        let right = Reply::Answers {
            answers: vec![Answer::chose("internal")],
        };
        assert_eq!(requests.answer("S1", right.clone()), Ok(()));
        assert_eq!(answered.try_recv().ok(), Some(right));
    }

    #[test]
    fn the_first_answer_is_sent_and_a_second_finds_nothing() {
        let mut requests = Requests::default();
        let (_, mut answered) =
            requests.register("S1", record_d("S1", State::Active, true), request("ls"));
        assert_eq!(requests.request("S1"), Some(request("ls")));
        assert_eq!(requests.answer("S1", Reply::Allow), Ok(()));
        assert_eq!(answered.try_recv().ok(), Some(Reply::Allow));
        assert_eq!(requests.answer("S1", Reply::Deny), Err(NotTaken::NoneOpen));
        assert_eq!(requests.request("S1"), None);
    }

    #[test]
    fn a_newer_request_of_the_session_replaces_the_older_whose_hook_gets_no_answer() {
        let mut requests = Requests::default();
        let record = record_d("S1", State::Active, true);
        let (old, mut old_answer) = requests.register("S1", record.clone(), request("ls"));
        let (new, mut new_answer) = requests.register("S1", record, request("rm -r build"));
        assert_ne!(old, new);
        assert_eq!(requests.request("S1"), Some(request("rm -r build")));
        // The older one's hook is let go without an answer: it falls back to the terminal.
        assert!(old_answer.try_recv().is_err());
        // Its withdrawal (its connection closing) must not take the newer request away.
        assert!(!requests.withdraw_this("S1", old));
        assert_eq!(requests.answer("S1", Reply::Deny), Ok(()));
        assert_eq!(new_answer.try_recv().ok(), Some(Reply::Deny));
    }

    #[test]
    fn a_withdrawn_request_takes_no_answer() {
        let mut requests = Requests::default();
        let (id, _answered) =
            requests.register("S1", record_d("S1", State::Active, true), request("ls"));
        assert!(requests.withdraw_this("S1", id));
        assert_eq!(requests.answer("S1", Reply::Allow), Err(NotTaken::NoneOpen));
        let (_, _answered) =
            requests.register("S2", record_d("S2", State::Active, true), request("ls"));
        assert!(requests.withdraw("S2"));
        assert!(!requests.withdraw("S2"));
    }

    #[test]
    fn an_ask_that_arrives_after_the_request_keeps_the_requests_popup_and_its_buttons() {
        let mut requests = Requests::default();
        let record = record_d("S1", State::Active, true);
        let asked = notice::asked(&record);
        assert_eq!(requests.in_place_of(asked.clone()), asked);
        requests.register("S1", record.clone(), request("cargo publish"));
        let shown = requests.in_place_of(asked.clone());
        assert_eq!(
            shown,
            notice::Notice {
                covers: asked.covers.clone(),
                ..notice::permission(&record, &request("cargo publish"))
            }
        );
    }
}
