//! Answering from the keyboard: three keys, one meaning wherever they are pressed (a
//! shortcut the desktop gives, an X11 grab, `lf-tray answer`). *allow* is a tool's Allow
//! and a plan's Approve plan, *deny* its Deny and Keep planning, *open* what the popup's
//! click does (the terminal; a question's card in the window, as a key never picks an
//! option). A key answers the newest open request the person was shown a popup for, or the
//! session named; it comes to the desk as one more [`Answer`](crate::answer::Answer) (from
//! [`From::Key`](crate::answer::From::Key)), which this module's [`pick`] turns into the
//! request's own choice, so the popup's and the window's path decides it.

use std::collections::HashMap;

use lf_tray_core::permission::{Prompt, Request};

use crate::answer;

/// One of the three keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Allow,
    Deny,
    Open,
}

impl Key {
    pub const ALL: [Key; 3] = [Key::Allow, Key::Deny, Key::Open];

    /// Its word: on the command line, on the wire, in an answer's `choice`.
    pub fn word(self) -> &'static str {
        match self {
            Key::Allow => "allow",
            Key::Deny => "deny",
            Key::Open => "open",
        }
    }

    pub fn parse(word: &str) -> Option<Key> {
        Key::ALL.into_iter().find(|key| key.word() == word)
    }

    /// The key the tray holds for it where it holds keys itself (X11): Super+Alt and a
    /// letter that says the answer, yes, no, open. Super is the desktop's modifier
    /// (terminals and editors leave it to the desktop), and the desktops' own Super+Alt
    /// shortcuts checked use none of these letters (docs/answering.md).
    pub fn trigger(self) -> &'static str {
        match self {
            Key::Allow => "Super+Alt+Y",
            Key::Deny => "Super+Alt+N",
            Key::Open => "Super+Alt+O",
        }
    }
}

/// What a key does to a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick {
    /// The request's own choice, answered as its popup button would.
    Choice(&'static str),
    /// Go where the popup's body click goes (the agent's terminal).
    Terminal,
    /// Show the request's card in the window.
    Card,
}

/// What `key` does to `request`, or why it does nothing (a sentence for the person).
pub fn pick(key: Key, request: &Request) -> Result<Pick, &'static str> {
    let prompt = request.prompt();
    let question = matches!(prompt, Ok(Prompt::Questions(_)));
    let plan = matches!(prompt, Ok(Prompt::Plan(_)));
    match key {
        Key::Open if question => Ok(Pick::Card),
        Key::Open => Ok(Pick::Terminal),
        _ if question => Err("A question is answered by its options: open shows its card."),
        Key::Allow if plan => Ok(Pick::Choice(answer::APPROVE_PLAN)),
        Key::Deny if plan => Ok(Pick::Choice(answer::KEEP_PLANNING)),
        Key::Allow => Ok(Pick::Choice(answer::ALLOW)),
        Key::Deny => Ok(Pick::Choice(answer::DENY)),
    }
}

/// The keys the person can press, each with its trigger as the desktop names it
/// (`Super+Alt+Y`): those an adapter holds or can hold. Empty: answering from the keys is
/// off, or nothing here can take a key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Triggers(pub Vec<(Key, String)>);

impl Triggers {
    /// The keys that answer something on `request`: all three, or *open* alone for a
    /// question (allow and deny would only be refused, so they are left to other
    /// programs).
    pub fn wanted(&self, request: &Request) -> Vec<Key> {
        self.0
            .iter()
            .map(|(key, _)| *key)
            .filter(|key| pick(*key, request).is_ok())
            .collect()
    }

    /// The popup's line that names them, as plain text (the caller escapes it):
    /// `Super+Alt+Y allows · Super+Alt+N denies · Super+Alt+O opens the terminal`.
    pub fn line(&self, request: &Request) -> Option<String> {
        let said: Vec<String> = self
            .0
            .iter()
            .filter_map(|(key, trigger)| {
                let does = match pick(*key, request).ok()? {
                    Pick::Choice(answer::APPROVE_PLAN) => "approves the plan",
                    Pick::Choice(answer::KEEP_PLANNING) => "keeps planning",
                    Pick::Choice(answer::ALLOW) => "allows",
                    Pick::Choice(_) => "denies",
                    Pick::Terminal => "opens the terminal",
                    Pick::Card => "shows it in the window",
                };
                Some(format!("{trigger} {does}"))
            })
            .collect();
        (!said.is_empty()).then(|| said.join(" · "))
    }
}

/// The order in which the open requests' popups were shown, so a key finds the newest.
#[derive(Debug, Default)]
pub struct Shown {
    count: u64,
    at: HashMap<String, u64>,
}

impl Shown {
    /// The session's popup for its open request was shown (again: a reminder makes it the
    /// newest once more).
    pub fn shown(&mut self, session: &str) {
        self.count += 1;
        self.at.insert(session.to_string(), self.count);
    }

    /// The session's request is gone or replaced: a newer one is not shown until its
    /// own popup is.
    pub fn forget(&mut self, session: &str) {
        self.at.remove(session);
    }

    /// Keep only the sessions `open` says are: a session's stamp goes with its request.
    pub fn retain(&mut self, open: impl Fn(&str) -> bool) {
        self.at.retain(|key, _| open(key));
    }

    /// Of the `open` sessions, the one whose popup was shown last.
    pub fn newest<'a>(&self, open: impl Iterator<Item = &'a String>) -> Option<String> {
        open.filter_map(|key| Some((self.at.get(key)?, key)))
            .max()
            .map(|(_, key)| key.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lf_tray_core::permission::Client;

    fn request(tool: &str, input: serde_json::Value) -> Request {
        Request {
            client: Client::Claude,
            session_id: "c1".into(),
            cwd: "/w".into(),
            tool_name: tool.into(),
            tool_input: input,
            permission_suggestions: Vec::new(),
        }
    }

    #[test]
    fn each_key_means_the_same_on_a_tool_a_plan_and_a_question() {
        let bash = request("Bash", serde_json::json!({"command": "ls"}));
        let plan = request("ExitPlanMode", serde_json::json!({"plan": "1."}));
        let question = request(
            "AskUserQuestion",
            serde_json::json!({"questions": [{"question": "Q?",
                "options": [{"label": "a"}, {"label": "b"}]}]}),
        );
        let picks = |r: &Request| Key::ALL.map(|key| pick(key, r));
        assert_eq!(
            picks(&bash),
            [
                Ok(Pick::Choice(answer::ALLOW)),
                Ok(Pick::Choice(answer::DENY)),
                Ok(Pick::Terminal)
            ]
        );
        assert_eq!(
            picks(&plan),
            [
                Ok(Pick::Choice(answer::APPROVE_PLAN)),
                Ok(Pick::Choice(answer::KEEP_PLANNING)),
                Ok(Pick::Terminal)
            ]
        );
        let [allow, deny, open] = picks(&question);
        assert!(allow.is_err() && deny.is_err());
        assert_eq!(open, Ok(Pick::Card));
        // Every choice a key picks is one the request offers.
        for (r, key) in [(&bash, Key::Allow), (&bash, Key::Deny), (&plan, Key::Deny)] {
            let Ok(Pick::Choice(id)) = pick(key, r) else {
                panic!()
            };
            assert!(answer::choices(r).iter().any(|c| c.id == id));
        }
        assert_eq!(Key::parse("deny"), Some(Key::Deny));
        assert_eq!(Key::parse("-y"), None);
    }

    #[test]
    fn the_triggers_wanted_and_named_are_those_that_answer_the_request() {
        let triggers = Triggers(vec![
            (Key::Allow, "Super+Alt+Y".into()),
            (Key::Deny, "Super+Alt+N".into()),
            (Key::Open, "Super+Alt+O".into()),
        ]);
        let bash = request("Bash", serde_json::json!({"command": "ls"}));
        let plan = request("ExitPlanMode", serde_json::json!({"plan": "1."}));
        let question = request(
            "AskUserQuestion",
            serde_json::json!({"questions": [{"question": "Q?",
                "options": [{"label": "a"}, {"label": "b"}]}]}),
        );
        assert_eq!(triggers.wanted(&bash), Key::ALL.to_vec());
        assert_eq!(triggers.wanted(&question), vec![Key::Open]);
        assert_eq!(
            triggers.line(&bash).as_deref(),
            Some("Super+Alt+Y allows · Super+Alt+N denies · Super+Alt+O opens the terminal")
        );
        assert_eq!(
            triggers.line(&plan).as_deref(),
            Some("Super+Alt+Y approves the plan · Super+Alt+N keeps planning · Super+Alt+O opens the terminal")
        );
        assert_eq!(
            triggers.line(&question).as_deref(),
            Some("Super+Alt+O shows it in the window")
        );
        // A key another program holds is not offered: only the others are named.
        let held = Triggers(vec![(Key::Deny, "Super+Alt+N".into())]);
        assert_eq!(held.line(&question), None);
        assert!(held.wanted(&question).is_empty());
        assert_eq!(Triggers::default().line(&bash), None);
    }

    /// The panel names the keys before they are on: the same the shell grabs.
    #[test]
    fn the_panel_names_the_triggers_the_tray_holds() {
        const PANEL: &str = include_str!("../../../ui/index.html");
        let said = format!(
            "{} allows, {} denies, {} opens",
            Key::Allow.trigger(),
            Key::Deny.trigger(),
            Key::Open.trigger()
        );
        assert!(PANEL.contains(&said), "ui/index.html does not say {said:?}");
    }

    #[test]
    fn the_newest_shown_of_the_open_requests_and_none_before_its_popup() {
        let mut shown = Shown::default();
        let open: Vec<String> = ["S1", "S2"].map(String::from).to_vec();
        assert_eq!(shown.newest(open.iter()), None);
        shown.shown("S2");
        shown.shown("S1");
        assert_eq!(shown.newest(open.iter()).as_deref(), Some("S1"));
        shown.forget("S1");
        assert_eq!(shown.newest(open.iter()).as_deref(), Some("S2"));
        shown.shown("S2");
        shown.shown("S3");
        // S3 is no longer open: the newest of those open.
        assert_eq!(shown.newest(open.iter()).as_deref(), Some("S2"));
    }
}
