//! The agents' requests that wait for the person, one per session: what the popup, the
//! window and the hook's connection share. Plain state, held by the [`Desk`](crate::desk)
//! beside the popups' policy, and tested here without a desktop. A request is known by
//! the hook that asked ([`HookId`]); where that hook's answer travels (a local socket, an
//! ssh link) is the shell's to know.

use std::collections::HashMap;
use std::time::Instant;

use lf_tray_core::permission::{Refused, Reply, Request};
use lf_tray_core::SessionRecord;

use crate::notice::{self, NoticeKey};

/// One hook's request, as the shell numbered it when the hook connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HookId(pub u64);

struct Open {
    hook: HookId,
    record: SessionRecord,
    request: Request,
    /// When the request goes back to the agent's terminal unanswered (Codex's, whose
    /// terminal shows no prompt while its hook waits).
    until: Option<Instant>,
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
}

impl Requests {
    /// The person's reply to the session's open request, taken when it answers what was
    /// asked (the core's [`Request::decide`]) and is the first: the hook it goes to.
    /// A reply that does not answer it leaves the request open, its popup and card up.
    pub fn answer(&mut self, key: &str, reply: &Reply) -> Result<HookId, NotTaken> {
        let request = &self.open.get(key).ok_or(NotTaken::NoneOpen)?.request;
        request.decide(reply).map_err(NotTaken::Refused)?;
        let open = self.open.remove(key).ok_or(NotTaken::NoneOpen)?;
        Ok(open.hook)
    }

    /// Take back the session's open request without an answer: its hook, when there was one.
    pub fn withdraw(&mut self, key: &str) -> Option<HookId> {
        self.open.remove(key).map(|open| open.hook)
    }

    /// The session whose open request `hook` asked, if it is still open.
    pub fn session_of(&self, hook: HookId) -> Option<String> {
        self.open
            .iter()
            .find(|(_, open)| open.hook == hook)
            .map(|(key, _)| key.clone())
    }

    /// Every open request, by session key (the window's cards).
    pub fn all(&self) -> impl Iterator<Item = (&String, &Request)> {
        self.open.iter().map(|(key, open)| (key, &open.request))
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

    /// Take `hook`'s request for the session. A newer request of the same session replaces
    /// the older: the older's hook, returned, gets no answer.
    pub fn register(
        &mut self,
        key: &str,
        hook: HookId,
        record: SessionRecord,
        request: Request,
        until: Option<Instant>,
    ) -> Option<HookId> {
        let open = Open {
            hook,
            record,
            request,
            until,
        };
        self.open
            .insert(key.to_string(), open)
            .map(|older| older.hook)
    }

    /// When the first open request with a time limit runs out.
    pub fn next_expiry(&self) -> Option<Instant> {
        self.open.values().filter_map(|open| open.until).min()
    }

    /// Withdraw every request whose time ran out by `now`: their session keys and hooks.
    pub fn expire(&mut self, now: Instant) -> Vec<(String, HookId)> {
        let due: Vec<String> = self
            .open
            .iter()
            .filter(|(_, open)| open.until.is_some_and(|until| until <= now))
            .map(|(key, _)| key.clone())
            .collect();
        let mut gone: Vec<(String, HookId)> = due
            .into_iter()
            .filter_map(|key| self.open.remove(&key).map(|open| (key, open.hook)))
            .collect();
        gone.sort();
        gone
    }

    /// Withdraw `hook`'s request if it is still open: its session's key.
    pub fn withdraw_this(&mut self, hook: HookId) -> Option<String> {
        let key = self.session_of(hook)?;
        self.open.remove(&key);
        Some(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::record_d;
    use lf_tray_core::State;

    fn request(command: &str) -> Request {
        Request {
            client: lf_tray_core::permission::Client::Claude,
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
        requests.register(
            "S1",
            HookId(1),
            record_d("S1", State::Active, true),
            question(),
            None,
        );
        for wrong in [
            Reply::Allow,
            Reply::Answers { answers: vec![] },
            Reply::Answers {
                answers: vec![Answer::chose("npm")],
            },
        ] {
            assert!(matches!(
                requests.answer("S1", &wrong),
                Err(NotTaken::Refused(_))
            ));
        }
        assert!(requests.request("S1").is_some(), "the question was dropped");
        let right = Reply::Answers {
            answers: vec![Answer::chose("internal")],
        };
        assert_eq!(requests.answer("S1", &right), Ok(HookId(1)));
    }

    #[test]
    fn the_first_answer_is_sent_and_a_second_finds_nothing() {
        let mut requests = Requests::default();
        requests.register(
            "S1",
            HookId(1),
            record_d("S1", State::Active, true),
            request("ls"),
            None,
        );
        assert_eq!(requests.request("S1"), Some(request("ls")));
        assert_eq!(requests.answer("S1", &Reply::Allow), Ok(HookId(1)));
        assert_eq!(requests.answer("S1", &Reply::Deny), Err(NotTaken::NoneOpen));
        assert_eq!(requests.request("S1"), None);
    }

    #[test]
    fn a_newer_request_of_the_session_replaces_the_older_whose_hook_gets_no_answer() {
        let mut requests = Requests::default();
        let record = record_d("S1", State::Active, true);
        let (old, new) = (HookId(1), HookId(2));
        assert_eq!(
            requests.register("S1", old, record.clone(), request("ls"), None),
            None
        );
        // The older one's hook is let go without an answer: it falls back to the terminal.
        let replaced = requests.register("S1", new, record, request("rm -r build"), None);
        assert_eq!(replaced, Some(old));
        assert_eq!(requests.request("S1"), Some(request("rm -r build")));
        // Its withdrawal (its connection closing) must not take the newer request away.
        assert_eq!(requests.withdraw_this(old), None);
        assert_eq!(requests.answer("S1", &Reply::Deny), Ok(new));
    }

    #[test]
    fn a_request_with_a_time_limit_goes_back_when_it_runs_out() {
        let mut requests = Requests::default();
        let t0 = Instant::now();
        let limit = std::time::Duration::from_secs(30);
        let record = |id| record_d(id, State::Active, true);
        requests.register("S1", HookId(1), record("S1"), request("ls"), None);
        requests.register(
            "S2",
            HookId(2),
            record("S2"),
            request("ls"),
            Some(t0 + limit),
        );
        assert_eq!(requests.next_expiry(), Some(t0 + limit));
        assert!(requests.expire(t0 + limit / 2).is_empty());
        assert_eq!(requests.expire(t0 + limit), [("S2".to_string(), HookId(2))]);
        assert_eq!(requests.next_expiry(), None);
        assert_eq!(
            requests.answer("S2", &Reply::Allow),
            Err(NotTaken::NoneOpen)
        );
        assert_eq!(requests.answer("S1", &Reply::Allow), Ok(HookId(1)));
    }

    #[test]
    fn a_withdrawn_request_takes_no_answer() {
        let mut requests = Requests::default();
        requests.register(
            "S1",
            HookId(1),
            record_d("S1", State::Active, true),
            request("ls"),
            None,
        );
        assert_eq!(requests.withdraw_this(HookId(1)).as_deref(), Some("S1"));
        assert_eq!(
            requests.answer("S1", &Reply::Allow),
            Err(NotTaken::NoneOpen)
        );
        requests.register(
            "S2",
            HookId(2),
            record_d("S2", State::Active, true),
            request("ls"),
            None,
        );
        assert_eq!(requests.withdraw("S2"), Some(HookId(2)));
        assert_eq!(requests.withdraw("S2"), None);
    }

    #[test]
    fn an_ask_that_arrives_after_the_request_keeps_the_requests_popup_and_its_buttons() {
        let mut requests = Requests::default();
        let record = record_d("S1", State::Active, true);
        let asked = notice::asked(&record);
        assert_eq!(requests.in_place_of(asked.clone()), asked);
        requests.register(
            "S1",
            HookId(1),
            record.clone(),
            request("cargo publish"),
            None,
        );
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
