//! An answer to an agent's open request, spelled once. For each request the surface makes
//! its [`Choice`]s here — each one's id, its label, what it sends — and every carrier
//! offers those: the popup's action ids, the window's card (whose page draws what it is
//! given), and later the phone and the keys. Whatever carries it, the person's pick comes
//! back to the desk as one [`Answer`], turned into the hook's [`Reply`] here, by what was
//! asked (options by their place, never by a label echoed back).

use std::borrow::Cow;

use lf_tray_core::permission::{Client, Prompt, Reply, Request};

use crate::window::Picked;

/// The choice ids: the popup's action keys, the card's buttons.
pub const ALLOW: &str = "allow";
pub const DENY: &str = "deny";
/// Allow, with Claude's own suggested rule, so it asks no more.
pub const ALWAYS: &str = "always";
/// A Codex request's third button: no decision from here, and the person goes to the
/// terminal, whose prompt shows once the hook has ended.
pub const IN_TERMINAL: &str = "in-terminal";
pub const APPROVE_PLAN: &str = "approve-plan";
pub const KEEP_PLANNING: &str = "keep-planning";
/// The card's answers to its questions, as the person picked and typed them.
pub const SEND: &str = "send";
/// A single-select question's options, one choice each, in the order asked (Claude asks
/// two to four; the core reads at most twelve).
pub const OPTIONS: [&str; 12] = [
    "choice-1",
    "choice-2",
    "choice-3",
    "choice-4",
    "choice-5",
    "choice-6",
    "choice-7",
    "choice-8",
    "choice-9",
    "choice-10",
    "choice-11",
    "choice-12",
];

/// Whether a popup's action is one of the choices any request may offer (rather than a
/// click that goes somewhere).
pub fn is_choice(action: &str) -> bool {
    [
        ALLOW,
        DENY,
        ALWAYS,
        IN_TERMINAL,
        APPROVE_PLAN,
        KEEP_PLANNING,
        SEND,
    ]
    .contains(&action)
        || OPTIONS.contains(&action)
}

/// One way to answer a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub id: &'static str,
    /// The tray's words, or the agent's for an option (untrusted: escaped where shown).
    pub label: Cow<'static, str>,
    pub sends: Sends,
}

/// What a choice sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sends {
    Allow,
    Deny,
    AlwaysAllow,
    /// The option at this place of the one question.
    Option(usize),
    /// The answers the person gave on the card.
    Answers,
    /// The plan, as the card holds it when the person gave it.
    ApprovePlan,
    /// Keep planning, with the person's words when they gave any.
    KeepPlanning,
    /// Nothing: the request goes back to the agent's terminal.
    Terminal,
}

impl Sends {
    /// Whether a carrier that cannot take typing or ticks (a popup's button) offers it.
    pub fn whole(self) -> bool {
        !matches!(self, Sends::Answers)
    }

    /// Whether the card offers it: options are ticked there, and the card never hands
    /// the request back.
    pub fn on_card(self) -> bool {
        !matches!(self, Sends::Option(_) | Sends::Terminal)
    }
}

/// Every choice the request offers, in the order carriers show them.
pub fn choices(request: &Request) -> Vec<Choice> {
    let choice = |id, label: &'static str, sends| Choice {
        id,
        label: Cow::Borrowed(label),
        sends,
    };
    match request.prompt() {
        Ok(Prompt::Questions(asked)) => {
            let mut out = Vec::new();
            // Options are choices of their own only for one single-select question.
            if let [one] = asked.as_slice() {
                if !one.multi {
                    out.extend(OPTIONS.iter().zip(&one.options).enumerate().map(
                        |(n, (id, option))| Choice {
                            id,
                            label: Cow::Owned(option.label.clone()),
                            sends: Sends::Option(n),
                        },
                    ));
                }
            }
            out.push(choice(SEND, "Send", Sends::Answers));
            out
        }
        Ok(Prompt::Plan(_)) => vec![
            choice(APPROVE_PLAN, "Approve plan", Sends::ApprovePlan),
            choice(KEEP_PLANNING, "Keep planning", Sends::KeepPlanning),
        ],
        Ok(Prompt::Tool { always }) => {
            let mut out = vec![choice(ALLOW, "Allow", Sends::Allow)];
            if always.is_some() {
                out.push(choice(ALWAYS, "Always allow", Sends::AlwaysAllow));
            }
            out.push(choice(DENY, "Deny", Sends::Deny));
            // Codex shows its own prompt only once the hook gives up: going there is an
            // answer of its own.
            if request.client == Client::Codex {
                out.push(choice(
                    IN_TERMINAL,
                    "Answer in the terminal",
                    Sends::Terminal,
                ));
            }
            out
        }
        // Never registered (the tray leaves it to the terminal); offered as a tool all the
        // same, whose Allow the core would refuse.
        Err(_) => vec![
            choice(ALLOW, "Allow", Sends::Allow),
            choice(DENY, "Deny", Sends::Deny),
        ],
    }
}

/// Where an answer came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum From {
    /// A popup's button; `token` is the server's activation token for the click, passed on
    /// to where a hand-back goes.
    Popup { token: Option<String> },
    /// The window's card.
    Window,
    /// A button of a push, tapped on the person's phone (its nonce already checked).
    Phone,
    /// A key (`crate::keys`): its `choice` is the key's word, its `request` the session
    /// named or empty for the newest shown; the desk makes it the request's own choice.
    Key,
}

/// What the person filled in besides the choice (the card's fields).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
pub struct Given {
    /// Each question's options ticked, by number, and the person's own words.
    #[serde(default)]
    pub answers: Vec<Picked>,
    /// The plan as the card holds it, or what to change with Keep planning.
    #[serde(default)]
    pub text: Option<String>,
}

/// The person's answer to the session's open request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The session whose request it answers (its key token).
    pub request: String,
    pub choice: String,
    pub given: Given,
    pub from: From,
}

/// Why an answer sends nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsent {
    /// The request offers no such choice.
    NotOffered,
    /// The choice hands the request back to the agent's terminal.
    ToTerminal,
}

impl Answer {
    /// The reply `choice` makes to `request`, from what was asked; whether it answers the
    /// request whole is the core's to say.
    pub fn reply(&self, request: &Request) -> Result<Reply, Unsent> {
        let sends = choices(request)
            .into_iter()
            .find(|c| c.id == self.choice)
            .ok_or(Unsent::NotOffered)?
            .sends;
        let prompt = request.prompt();
        Ok(match sends {
            Sends::Allow => Reply::Allow,
            Sends::Deny => Reply::Deny,
            Sends::AlwaysAllow => Reply::AlwaysAllow,
            Sends::Terminal => return Err(Unsent::ToTerminal),
            Sends::Option(n) => {
                let Ok(Prompt::Questions(asked)) = prompt else {
                    return Err(Unsent::NotOffered);
                };
                let label = &asked[0].options[n].label;
                Reply::Answers {
                    answers: vec![lf_tray_core::permission::Answer::chose(label)],
                }
            }
            Sends::Answers => {
                let Ok(Prompt::Questions(asked)) = prompt else {
                    return Err(Unsent::NotOffered);
                };
                let answers = self
                    .given
                    .answers
                    .iter()
                    .zip(asked.iter().map(Some).chain(std::iter::repeat(None)))
                    .map(|(picked, q)| {
                        let options = &q?.options;
                        Some(lf_tray_core::permission::Answer {
                            chosen: picked
                                .chosen
                                .iter()
                                .map(|&n| options.get(n).map(|o| o.label.clone()))
                                .collect::<Option<_>>()?,
                            own: picked.own.clone(),
                        })
                    })
                    .collect::<Option<_>>()
                    .ok_or(Unsent::NotOffered)?;
                Reply::Answers { answers }
            }
            // The plan as shown is the plan as asked: only a changed text is an edit.
            Sends::ApprovePlan => {
                let shown = match prompt {
                    Ok(Prompt::Plan(asked)) => Some(crate::window::plan_as_shown(&asked)),
                    _ => None,
                };
                Reply::ApprovePlan {
                    plan: self
                        .given
                        .text
                        .clone()
                        .filter(|text| Some(text) != shown.as_ref()),
                }
            }
            Sends::KeepPlanning => Reply::KeepPlanning {
                message: self.given.text.clone().unwrap_or_default(),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(client: Client, tool: &str, input: serde_json::Value) -> Request {
        serde_json::from_value(serde_json::json!({"tool_name": tool, "tool_input": input}))
            .map(|request: Request| Request { client, ..request })
            .unwrap()
    }

    fn ids(request: &Request) -> Vec<&'static str> {
        choices(request).iter().map(|c| c.id).collect()
    }

    #[test]
    fn each_request_offers_its_choices_once_for_every_carrier() {
        let bash = serde_json::json!({"command": "ls"});
        let claude = request(Client::Claude, "Bash", bash.clone());
        assert_eq!(ids(&claude), [ALLOW, DENY]);
        let codex = request(Client::Codex, "Bash", bash);
        assert_eq!(ids(&codex), [ALLOW, DENY, IN_TERMINAL]);
        let options = serde_json::json!([{"label": "a"}, {"label": "b <i>"}]);
        let one = request(
            Client::Claude,
            "AskUserQuestion",
            serde_json::json!({"questions": [{"question": "Q?", "options": options}]}),
        );
        let offered = choices(&one);
        assert_eq!(ids(&one), [OPTIONS[0], OPTIONS[1], SEND]);
        // The agent's label as asked: where it is shown, it is escaped there.
        assert_eq!(offered[1].label, "b <i>");
        assert_eq!(offered[1].sends, Sends::Option(1));
        let multi = request(
            Client::Claude,
            "AskUserQuestion",
            serde_json::json!({"questions": [{"question": "Q?", "multiSelect": true,
                "options": options}]}),
        );
        assert_eq!(ids(&multi), [SEND]);
        let plan = request(
            Client::Claude,
            "ExitPlanMode",
            serde_json::json!({"plan": "1."}),
        );
        assert_eq!(ids(&plan), [APPROVE_PLAN, KEEP_PLANNING]);
        // A popup carries every choice but the card's answers; the card every one but the
        // options it ticks and a hand-back.
        let popup: Vec<_> = offered
            .iter()
            .filter(|c| c.sends.whole())
            .map(|c| c.id)
            .collect();
        assert_eq!(popup, [OPTIONS[0], OPTIONS[1]]);
        let card: Vec<_> = choices(&codex)
            .into_iter()
            .filter(|c| c.sends.on_card())
            .map(|c| c.id)
            .collect();
        assert_eq!(card, [ALLOW, DENY]);
        for id in ids(&claude).into_iter().chain(ids(&codex)).chain(ids(&one)) {
            assert!(is_choice(id), "{id}");
        }
        assert!(!is_choice("default") && !is_choice("open") && !is_choice("answer"));
    }

    #[test]
    fn an_answer_sends_what_its_choice_says_and_nothing_for_a_choice_not_offered() {
        let answer = |choice: &str, given: Given| Answer {
            request: "S1".into(),
            choice: choice.into(),
            given,
            from: From::Window,
        };
        let codex = request(Client::Codex, "Bash", serde_json::json!({"command": "ls"}));
        assert_eq!(
            answer(DENY, Given::default()).reply(&codex),
            Ok(Reply::Deny)
        );
        assert_eq!(
            answer(IN_TERMINAL, Given::default()).reply(&codex),
            Err(Unsent::ToTerminal)
        );
        assert_eq!(
            answer(ALWAYS, Given::default()).reply(&codex),
            Err(Unsent::NotOffered)
        );
        let plan = request(
            Client::Claude,
            "ExitPlanMode",
            serde_json::json!({"plan": "1."}),
        );
        let words = Given {
            answers: Vec::new(),
            text: Some("smaller".into()),
        };
        assert_eq!(
            answer(KEEP_PLANNING, words).reply(&plan),
            Ok(Reply::KeepPlanning {
                message: "smaller".into()
            })
        );
    }
}
