//! What an agent's request asks of the person — a tool to allow, questions to answer, a
//! plan to approve — and the one way a reply becomes Claude's answer ([`Request::decide`]).
//!
//! Claude Code sends its `AskUserQuestion` tool and its `ExitPlanMode` plan through the
//! same `PermissionRequest` hook as any tool. A bare allow on a question runs the tool with
//! no answers: the agent goes on with a guess while the person believes they answered. So
//! every reply is checked against what was asked, and only a complete, fitting reply makes
//! an answer; anything else is no decision, and the terminal keeps the prompt.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Raw, Request, Unreadable};

/// Claude Code's tool that asks the person questions (its hooks reference).
pub const ASK_USER_QUESTION: &str = "AskUserQuestion";
/// Claude Code's tool that ends plan mode by presenting a plan.
pub const EXIT_PLAN_MODE: &str = "ExitPlanMode";

/// Claude asks one to four questions of two to four options each; these bounds leave room
/// for a later Claude to ask more, while keeping a runaway input from filling the desk.
const MAX_QUESTIONS: usize = 8;
const MAX_OPTIONS: usize = 12;

/// What Claude reads from a denial: the agent is told who said no, and where.
pub const DENIED: &str = "Denied by the person from the desktop notification (Loopflow Tray).";
/// What Claude reads when the person keeps planning without saying more.
pub const KEEP_PLANNING: &str =
    "The person wants to keep planning (Loopflow Tray): do not start yet; revise the plan.";

/// What the request asks of the person.
#[derive(Debug, Clone, PartialEq)]
pub enum Prompt {
    /// A tool to run: Allow or Deny, and Always allow where Claude suggests a rule.
    Tool { always: Option<Always> },
    /// Questions to answer, each by its options or the person's own words.
    Questions(Vec<Question>),
    /// A plan to approve, or to keep working on.
    Plan(String),
}

/// Claude's own "don't ask again": a rule it suggests, echoed back exactly as suggested.
#[derive(Debug, Clone, PartialEq)]
pub struct Always {
    /// The rules as Claude writes them: `Bash(cargo publish *)`, or a tool's name alone.
    pub rules: Vec<String>,
    /// Claude's settings file the rules go into (`localSettings`, …).
    pub destination: String,
    /// The suggestion exactly as Claude sent it.
    raw: Raw,
}

impl Always {
    /// Where the rule will live, in the person's words.
    pub fn place(&self) -> String {
        match self.destination.as_str() {
            "localSettings" => "this project's local settings".into(),
            "projectSettings" => "this project's shared settings".into(),
            "userSettings" => "your user settings, for every project".into(),
            "session" => "this conversation only".into(),
            other => format!("Claude's {other}"),
        }
    }

    /// One sentence: what will be allowed from now on, and where.
    pub fn sentence(&self) -> String {
        format!(
            "From now on, allow {} without asking, in {}.",
            self.rules.join(", "),
            self.place()
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Question {
    /// The question's text: also its key in the answers Claude reads.
    pub question: String,
    /// Its short label (a chip), possibly empty.
    pub header: String,
    pub options: Vec<Choice>,
    /// Several options may be chosen.
    pub multi: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Choice {
    pub label: String,
    pub description: String,
}

/// The person's reply, as the tray hands it to the hook (one JSON line).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum Reply {
    Allow,
    Deny,
    /// Allow, and add Claude's suggested rule so it asks no more.
    AlwaysAllow,
    /// One answer per question, in the order asked.
    Answers {
        answers: Vec<Answer>,
    },
    /// Approve the plan as Claude wrote it, or as the person edited it (`plan`).
    ApprovePlan {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        plan: Option<String>,
    },
    /// Deny the plan's end with the person's words (may be empty).
    KeepPlanning {
        #[serde(default)]
        message: String,
    },
}

/// The person's answer to one question: the options chosen, and their own words.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    #[serde(default)]
    pub chosen: Vec<String>,
    #[serde(default)]
    pub own: String,
}

impl Answer {
    pub fn chose(label: &str) -> Answer {
        Answer {
            chosen: vec![label.to_string()],
            own: String::new(),
        }
    }
}

impl Reply {
    /// The line the tray writes; the words of an older tray (`allow`, `deny`) are read too.
    pub fn line(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    pub fn read(line: &str) -> Option<Reply> {
        match line.trim() {
            "allow" => Some(Reply::Allow),
            "deny" => Some(Reply::Deny),
            line => serde_json::from_str(line).ok(),
        }
    }

    /// For the log: which reply, never what the person wrote.
    pub fn word(&self) -> &'static str {
        match self {
            Reply::Allow => "allow",
            Reply::Deny => "deny",
            Reply::AlwaysAllow => "always-allow",
            Reply::Answers { .. } => "answers",
            Reply::ApprovePlan { plan: None } => "approve-plan",
            Reply::ApprovePlan { plan: Some(_) } => "approve-edited-plan",
            Reply::KeepPlanning { .. } => "keep-planning",
        }
    }
}

/// Why a reply is no answer to the request: nothing is sent, the prompt stays open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// The reply does not fit what was asked (a bare Allow on a question).
    NotForThis(&'static str),
    /// A question left without an answer.
    Unanswered(String),
    /// A label that is none of the question's options.
    NotAnOption { question: String, label: String },
    /// Several answers to a question that takes one.
    OneOnly(String),
    /// Answers for another number of questions.
    Count { asked: usize, answered: usize },
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::NotForThis(what) => write!(f, "{what}"),
            Refused::Unanswered(q) => write!(f, "“{q}” has no answer yet."),
            Refused::NotAnOption { question, label } => {
                write!(f, "“{label}” is not one of the options of “{question}”.")
            }
            Refused::OneOnly(q) => write!(f, "“{q}” takes one answer."),
            Refused::Count { asked, answered } => {
                write!(f, "{answered} answers for {asked} questions.")
            }
        }
    }
}

/// Claude's answer to the hook, made only by [`Request::decide`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision(String);

impl Decision {
    /// The one line the hook prints on stdout.
    pub fn output(&self) -> &str {
        &self.0
    }

    fn of(decision: Value) -> Decision {
        Decision(
            serde_json::json!({"hookSpecificOutput": {
                "hookEventName": super::claude_settings::EVENT,
                "decision": decision,
            }})
            .to_string(),
        )
    }
}

impl Request {
    /// What the request asks. A question or plan that cannot be read whole is no prompt
    /// at all: offering Allow on it would answer nothing.
    pub fn prompt(&self) -> Result<Prompt, Unreadable> {
        // Codex asks only to run a command, and its hook takes allow or deny alone (its
        // schema has no `updatedInput` or `updatedPermissions`).
        if self.client == super::Client::Codex {
            return Ok(Prompt::Tool { always: None });
        }
        match self.tool_name.as_str() {
            ASK_USER_QUESTION => questions(&self.tool_input).map(Prompt::Questions),
            EXIT_PLAN_MODE => match self.tool_input.get("plan").and_then(Value::as_str) {
                Some(plan) if !plan.trim().is_empty() => Ok(Prompt::Plan(plan.to_string())),
                _ => Err(Unreadable::Shape("a plan without its text".into())),
            },
            _ => Ok(Prompt::Tool {
                always: self.permission_suggestions.iter().find_map(always),
            }),
        }
    }

    /// The reply as Claude's answer, when it answers what was asked completely.
    pub fn decide(&self, reply: &Reply) -> Result<Decision, Refused> {
        let prompt = self
            .prompt()
            .map_err(|_| Refused::NotForThis("unreadable"))?;
        let decision = match (&prompt, reply) {
            (Prompt::Tool { .. }, Reply::Allow) => serde_json::json!({"behavior": "allow"}),
            (Prompt::Tool { .. }, Reply::Deny) => {
                serde_json::json!({"behavior": "deny", "message": DENIED})
            }
            (Prompt::Tool { always: Some(always) }, Reply::AlwaysAllow) => {
                // Built as text, so the suggestion goes back byte for byte.
                return Ok(Decision(format!(
                    r#"{{"hookSpecificOutput":{{"hookEventName":"{}","decision":{{"behavior":"allow","updatedPermissions":[{}]}}}}}}"#,
                    super::claude_settings::EVENT,
                    always.raw.get()
                )));
            }
            (Prompt::Tool { always: None }, Reply::AlwaysAllow) => {
                return Err(Refused::NotForThis(
                    "Claude suggested no rule to allow from now on.",
                ))
            }
            (Prompt::Questions(questions), Reply::Answers { answers }) => {
                let answers = answered(questions, answers)?;
                let mut input = match &self.tool_input {
                    Value::Object(input) => input.clone(),
                    _ => return Err(Refused::NotForThis("unreadable")),
                };
                input.insert("answers".into(), serde_json::json!(answers));
                serde_json::json!({"behavior": "allow", "updatedInput": input})
            }
            // Claude 2.1.328 drops a bare allow on a plan (its dialog stays, the agent waits):
            // the plan goes back as `updatedInput`, as asked or as the person edited it,
            // and Claude goes on in its default mode, one its own dialog offers.
            (Prompt::Plan(_), Reply::ApprovePlan { plan: None }) => {
                serde_json::json!({"behavior": "allow", "updatedInput": self.tool_input})
            }
            (Prompt::Plan(_), Reply::ApprovePlan { plan: Some(edited) }) => {
                if edited.trim().is_empty() {
                    return Err(Refused::NotForThis(
                        "An edited plan needs its text: approve the plan as written, or keep planning.",
                    ));
                }
                serde_json::json!({"behavior": "allow", "updatedInput": {"plan": edited}})
            }
            (Prompt::Plan(_), Reply::KeepPlanning { message }) => {
                let message = match message.trim() {
                    "" => KEEP_PLANNING.to_string(),
                    said => format!("The person keeps planning (Loopflow Tray): {said}"),
                };
                serde_json::json!({"behavior": "deny", "message": message})
            }
            (Prompt::Questions(_), _) => {
                return Err(Refused::NotForThis(
                    "A question is answered by its options or your own words, never a bare Allow or Deny.",
                ))
            }
            (Prompt::Plan(_), _) => {
                return Err(Refused::NotForThis(
                    "A plan is approved or kept in planning, not allowed or denied.",
                ))
            }
            (Prompt::Tool { .. }, _) => {
                return Err(Refused::NotForThis("A tool is allowed or denied."))
            }
        };
        Ok(Decision::of(decision))
    }
}

/// The answers Claude reads: each question's text → the chosen labels joined by `", "`
/// (Claude's format for several), with the person's own words last. Every question must
/// have one; a single-select question takes one label or the person's words, not both.
fn answered(
    questions: &[Question],
    answers: &[Answer],
) -> Result<BTreeMap<String, String>, Refused> {
    if questions.len() != answers.len() {
        return Err(Refused::Count {
            asked: questions.len(),
            answered: answers.len(),
        });
    }
    let mut out = BTreeMap::new();
    for (q, a) in questions.iter().zip(answers) {
        for label in &a.chosen {
            if !q.options.iter().any(|o| &o.label == label) {
                return Err(Refused::NotAnOption {
                    question: q.question.clone(),
                    label: label.clone(),
                });
            }
        }
        let own = a.own.trim();
        let mut parts: Vec<&str> = a.chosen.iter().map(String::as_str).collect();
        if !own.is_empty() {
            parts.push(own);
        }
        match parts.len() {
            0 => return Err(Refused::Unanswered(q.question.clone())),
            1 => {}
            _ if q.multi => {}
            _ => return Err(Refused::OneOnly(q.question.clone())),
        }
        out.insert(q.question.clone(), parts.join(", "));
    }
    Ok(out)
}

fn questions(input: &Value) -> Result<Vec<Question>, Unreadable> {
    let shape = |why: &str| Unreadable::Shape(why.to_string());
    let list = input
        .get("questions")
        .and_then(Value::as_array)
        .ok_or_else(|| shape("a question without `questions`"))?;
    if list.is_empty() || list.len() > MAX_QUESTIONS {
        return Err(shape(&format!("{} questions", list.len())));
    }
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
    let mut out: Vec<Question> = Vec::new();
    for q in list {
        let question = text(q, "question")
            .filter(|t| !t.trim().is_empty())
            .ok_or_else(|| shape("a question without its text"))?;
        // The answers are keyed by the question's text: two alike could not both be told.
        if out.iter().any(|o| o.question == question) {
            return Err(shape("the same question twice"));
        }
        let options = match q.get("options") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(options)) if options.len() <= MAX_OPTIONS => options
                .iter()
                .map(|o| {
                    Some(Choice {
                        label: text(o, "label").filter(|l| !l.trim().is_empty())?,
                        description: text(o, "description").unwrap_or_default(),
                    })
                })
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| shape("an option without its label"))?,
            Some(_) => return Err(shape("options that are not a short list")),
        };
        out.push(Question {
            question,
            header: text(q, "header").unwrap_or_default(),
            options,
            multi: q
                .get("multiSelect")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        });
    }
    Ok(out)
}

/// Claude's suggestion, where it is one the tray offers: rules to add with `allow`. A mode
/// change or a directory is never applied from a popup.
fn always(raw: &Raw) -> Option<Always> {
    let v: Value = serde_json::from_str(raw.get()).ok()?;
    if v.get("type")?.as_str()? != "addRules" || v.get("behavior")?.as_str()? != "allow" {
        return None;
    }
    let rules = v
        .get("rules")?
        .as_array()?
        .iter()
        .map(|r| {
            let tool = r.get("toolName")?.as_str()?;
            Some(match r.get("ruleContent").and_then(Value::as_str) {
                Some(content) if !content.is_empty() => format!("{tool}({content})"),
                _ => tool.to_string(),
            })
        })
        .collect::<Option<Vec<_>>>()?;
    if rules.is_empty() {
        return None;
    }
    Some(Always {
        rules,
        destination: v.get("destination")?.as_str()?.to_string(),
        raw: raw.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permission::Client;
    use serde_json::json;

    fn request(tool: &str, input: Value, suggestions: &[&str]) -> Request {
        let suggestions = suggestions.join(",");
        let text = format!(
            r#"{{"hook_event_name":"PermissionRequest","tool_name":{},"tool_input":{input},
                "permission_suggestions":[{suggestions}]}}"#,
            json!(tool)
        );
        Request::decode(text.as_bytes(), Client::Claude).unwrap()
    }

    fn two_questions() -> Request {
        request(
            ASK_USER_QUESTION,
            json!({"questions": [
                {"question": "Which registry?", "header": "Registry", "multiSelect": false,
                 "options": [{"label": "crates.io", "description": "the public one"},
                             {"label": "internal", "description": "ours"}]},
                {"question": "Which crates?", "header": "Crates", "multiSelect": true,
                 "options": [{"label": "core", "description": ""},
                             {"label": "surface", "description": ""},
                             {"label": "tray", "description": ""}]}],
                "metadata": {"source": "agent"}}),
            &[],
        )
    }

    fn decision(d: &Decision) -> Value {
        let v: Value = serde_json::from_str(d.output()).unwrap();
        assert_eq!(
            v["hookSpecificOutput"]["hookEventName"],
            "PermissionRequest"
        );
        v["hookSpecificOutput"]["decision"].clone()
    }

    fn answers(list: &[(&[&str], &str)]) -> Reply {
        Reply::Answers {
            answers: list
                .iter()
                .map(|(chosen, own)| Answer {
                    chosen: chosen.iter().map(|c| c.to_string()).collect(),
                    own: own.to_string(),
                })
                .collect(),
        }
    }

    #[test]
    fn a_question_is_read_as_asked() {
        let Prompt::Questions(qs) = two_questions().prompt().unwrap() else {
            panic!("not questions")
        };
        assert_eq!(qs.len(), 2);
        assert_eq!(qs[0].question, "Which registry?");
        assert_eq!(qs[0].header, "Registry");
        assert!(!qs[0].multi && qs[1].multi);
        assert_eq!(qs[0].options[0].label, "crates.io");
        assert_eq!(qs[0].options[0].description, "the public one");
    }

    #[test]
    fn complete_answers_go_back_with_the_questions_as_asked() {
        let req = two_questions();
        let reply = answers(&[(&["internal"], ""), (&["core", "tray"], "docs too")]);
        let d = decision(&req.decide(&reply).unwrap());
        assert_eq!(d["behavior"], "allow");
        let input = &d["updatedInput"];
        // Everything asked, unchanged, plus the answers.
        assert_eq!(input["questions"], req.tool_input["questions"]);
        assert_eq!(input["metadata"], req.tool_input["metadata"]);
        assert_eq!(
            input["answers"],
            json!({"Which registry?": "internal", "Which crates?": "core, tray, docs too"})
        );
        // The person's own words in place of an option.
        let d = decision(
            &req.decide(&answers(&[(&[], " GitHub Packages "), (&["core"], "")]))
                .unwrap(),
        );
        assert_eq!(
            d["updatedInput"]["answers"]["Which registry?"],
            "GitHub Packages"
        );
    }

    /// No reply, of any kind, makes an allow that leaves a question unanswered.
    #[test]
    fn no_reply_allows_a_question_without_every_answer() {
        let req = two_questions();
        let replies = [
            Reply::Allow,
            Reply::Deny,
            Reply::AlwaysAllow,
            Reply::ApprovePlan { plan: None },
            Reply::ApprovePlan {
                plan: Some("x".into()),
            },
            Reply::KeepPlanning {
                message: "x".into(),
            },
            answers(&[]),
            answers(&[(&["internal"], "")]),
            answers(&[(&["internal"], ""), (&[], "")]),
            answers(&[(&["internal"], ""), (&[], "   ")]),
            answers(&[(&[], ""), (&["core"], "")]),
            answers(&[(&["internal", "crates.io"], ""), (&["core"], "")]),
            answers(&[(&["internal"], "and this"), (&["core"], "")]),
            answers(&[(&["npm"], ""), (&["core"], "")]),
            answers(&[(&["internal"], ""), (&["core"], ""), (&["tray"], "")]),
        ];
        for reply in &replies {
            match req.decide(reply) {
                Err(_) => {}
                Ok(d) => {
                    let d = decision(&d);
                    let given = d["updatedInput"]["answers"]
                        .as_object()
                        .cloned()
                        .unwrap_or_default();
                    panic!("{reply:?} was sent as {d} with answers {given:?}");
                }
            }
        }
        assert_eq!(
            req.decide(&answers(&[(&["internal"], ""), (&[], "")])),
            Err(Refused::Unanswered("Which crates?".into()))
        );
        assert!(matches!(
            req.decide(&Reply::Allow),
            Err(Refused::NotForThis(_))
        ));
    }

    #[test]
    fn a_question_that_cannot_be_read_whole_is_no_prompt() {
        let q = |v: Value| request(ASK_USER_QUESTION, v, &[]).prompt();
        assert!(q(json!({})).is_err());
        assert!(q(json!({"questions": []})).is_err());
        assert!(q(json!({"questions": "Which?"})).is_err());
        assert!(q(json!({"questions": [{"header": "x", "options": []}]})).is_err());
        assert!(q(
            json!({"questions": [{"question": "Q", "options": [{"description": "no label"}]}]})
        )
        .is_err());
        assert!(q(json!({"questions": [{"question": "Q"}, {"question": "Q"}]})).is_err());
        let many: Vec<Value> = (0..9)
            .map(|i| json!({"question": format!("Q{i}")}))
            .collect();
        assert!(q(json!({ "questions": many })).is_err());
        // A question without options is answered in the person's own words.
        assert!(q(json!({"questions": [{"question": "Why?"}]})).is_ok());
    }

    const RULE: &str = r#"{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"cargo publish *"}],"behavior":"allow","destination":"localSettings"}"#;

    #[test]
    fn always_allow_echoes_claudes_suggestion_byte_for_byte() {
        // Key order and spacing as Claude sent them, not as a JSON writer would.
        let spaced = RULE.replace(",\"behavior\"", ", \"behavior\"");
        let mode = r#"{"type":"setMode","mode":"acceptEdits","destination":"session"}"#;
        let req = request(
            "Bash",
            json!({"command": "cargo publish"}),
            &[mode, &spaced],
        );
        let Prompt::Tool {
            always: Some(always),
        } = req.prompt().unwrap()
        else {
            panic!("no always")
        };
        assert_eq!(always.rules, ["Bash(cargo publish *)"]);
        assert_eq!(
            always.sentence(),
            "From now on, allow Bash(cargo publish *) without asking, in this project's local settings."
        );
        let out = req.decide(&Reply::AlwaysAllow).unwrap();
        assert!(
            out.output()
                .contains(&format!("\"updatedPermissions\":[{spaced}]")),
            "{}",
            out.output()
        );
        assert_eq!(decision(&out)["behavior"], "allow");
    }

    #[test]
    fn only_a_rule_to_allow_is_offered_never_a_mode_or_a_denial() {
        let mode = r#"{"type":"setMode","mode":"bypassPermissions","destination":"session"}"#;
        let dirs = r#"{"type":"addDirectories","directories":["/"],"destination":"session"}"#;
        let deny = RULE.replace(r#""behavior":"allow""#, r#""behavior":"deny""#);
        let req = request("Bash", json!({"command": "x"}), &[mode, dirs, &deny]);
        assert_eq!(req.prompt().unwrap(), Prompt::Tool { always: None });
        assert!(req.decide(&Reply::AlwaysAllow).is_err());
        let plain = request("Bash", json!({"command": "x"}), &[]);
        assert_eq!(
            decision(&plain.decide(&Reply::Allow).unwrap()),
            json!({"behavior": "allow"})
        );
        assert_eq!(
            decision(&plain.decide(&Reply::Deny).unwrap()),
            json!({"behavior": "deny", "message": DENIED})
        );
        assert!(plain.decide(&answers(&[(&["x"], "")])).is_err());
    }

    #[test]
    fn a_plan_is_approved_or_kept_in_planning_with_the_persons_words() {
        // As Claude 2.1.328 sends it: the plan and the file it came from.
        let asked = json!({"plan": "1. Bump\n2. Publish", "planFilePath": "/h/.claude/plans/p.md"});
        let req = request(EXIT_PLAN_MODE, asked.clone(), &[]);
        assert_eq!(
            req.prompt().unwrap(),
            Prompt::Plan("1. Bump\n2. Publish".into())
        );
        // Approved: the plan goes back as asked (a bare allow is dropped by Claude).
        assert_eq!(
            decision(&req.decide(&Reply::ApprovePlan { plan: None }).unwrap()),
            json!({"behavior": "allow", "updatedInput": asked})
        );
        // Approved with the person's edits: Claude rewrites its plan file with them and
        // tells the model "Approved Plan (edited by user)".
        let edited = Reply::ApprovePlan {
            plan: Some("1. Tag\n2. Bump\n3. Publish".into()),
        };
        assert_eq!(
            decision(&req.decide(&edited).unwrap()),
            json!({"behavior": "allow", "updatedInput": {"plan": "1. Tag\n2. Bump\n3. Publish"}})
        );
        assert!(matches!(
            req.decide(&Reply::ApprovePlan {
                plan: Some(" \n".into())
            }),
            Err(Refused::NotForThis(_))
        ));
        let keep = decision(
            &req.decide(&Reply::KeepPlanning {
                message: "Tag first.".into(),
            })
            .unwrap(),
        );
        assert_eq!(keep["behavior"], "deny");
        assert!(keep["message"].as_str().unwrap().ends_with("Tag first."));
        let keep = decision(
            &req.decide(&Reply::KeepPlanning {
                message: String::new(),
            })
            .unwrap(),
        );
        assert_eq!(keep["message"], KEEP_PLANNING);
        assert!(req.decide(&Reply::Allow).is_err());
        assert!(request(EXIT_PLAN_MODE, json!({}), &[]).prompt().is_err());
    }

    /// The hook inputs the real clients sent (captured by `tests/agents/capture.py` from
    /// Claude Code 2.1.328 and Codex 0.169.0), read as the tray reads them.
    #[test]
    fn the_real_clients_requests_are_read_and_answered_as_asked() {
        let fixture = |name: &str, client: Client| {
            let path = format!(
                "{}/../../tests/fixtures/claude/hook-input/{name}.json",
                env!("CARGO_MANIFEST_DIR")
            );
            let text = std::fs::read_to_string(&path).unwrap();
            (Request::decode(text.as_bytes(), client).unwrap(), text)
        };
        // One rule, as 2.1.328 words it (a space, not `:*`), echoed back as sent.
        let (bash, text) = fixture("bash", Client::Claude);
        let Ok(Prompt::Tool {
            always: Some(always),
        }) = bash.prompt()
        else {
            panic!("no Always allow on {text}")
        };
        assert_eq!(always.rules, ["Bash(cargo publish *)"]);
        let sent = bash.decide(&Reply::AlwaysAllow).unwrap();
        let suggestion = &text[text.find(r#"{"type":"addRules""#).unwrap()..text.len() - 2];
        assert!(sent.output().contains(suggestion), "{}", sent.output());
        // A compound command: one suggestion with every rule it would add, all said.
        let (compound, _) = fixture("bash-compound", Client::Claude);
        let Ok(Prompt::Tool {
            always: Some(always),
        }) = compound.prompt()
        else {
            panic!("no Always allow on the compound command")
        };
        assert_eq!(
            always.rules,
            [
                "Read(//tmp/**)",
                "Bash(cargo build *)",
                "Bash(rm -rf target)"
            ]
        );
        assert!(always
            .sentence()
            .contains("Read(//tmp/**), Bash(cargo build *), Bash(rm -rf target)"));
        // A mode change is never offered as Always allow.
        let (write, _) = fixture("write", Client::Claude);
        assert_eq!(write.prompt().unwrap(), Prompt::Tool { always: None });
        // Two questions, one multi-select: the answers go back with the questions as asked.
        let (ask, _) = fixture("ask-user-question", Client::Claude);
        let Ok(Prompt::Questions(asked)) = ask.prompt() else {
            panic!("not questions")
        };
        assert_eq!((asked.len(), asked[1].multi), (2, true));
        let d = decision(
            &ask.decide(&answers(&[
                (&["Summary"], ""),
                (&["Introduction", "Conclusion"], ""),
            ]))
            .unwrap(),
        );
        assert_eq!(d["updatedInput"]["questions"], ask.tool_input["questions"]);
        assert_eq!(
            d["updatedInput"]["answers"],
            json!({"How should I format the output?": "Summary",
                   "Which sections should I include?": "Introduction, Conclusion"})
        );
        // A plan: approved, it goes back whole (its file's path too).
        let (plan, _) = fixture("exit-plan-mode", Client::Claude);
        assert!(matches!(plan.prompt(), Ok(Prompt::Plan(_))));
        let d = decision(&plan.decide(&Reply::ApprovePlan { plan: None }).unwrap());
        assert_eq!(d["updatedInput"], plan.tool_input);
        // Codex's exec request: Allow or Deny.
        let (codex, _) = fixture("codex-exec", Client::Codex);
        assert_eq!(codex.prompt().unwrap(), Prompt::Tool { always: None });
        assert_eq!(
            decision(&codex.decide(&Reply::Allow).unwrap())["behavior"],
            "allow"
        );
    }

    /// Claude Code 2.1.328 drops an allow without `updatedInput` on a question or a plan:
    /// its prompt stays and the agent waits while the person believes they answered
    /// (`shared/reference/real-agents.md` §3). No reply may make one.
    #[test]
    fn no_reply_makes_an_allow_the_real_client_drops() {
        let plan = request(EXIT_PLAN_MODE, json!({"plan": "1. Bump"}), &[]);
        let replies = [
            Reply::Allow,
            Reply::Deny,
            Reply::AlwaysAllow,
            Reply::ApprovePlan { plan: None },
            Reply::ApprovePlan {
                plan: Some("1. Tag".into()),
            },
            Reply::KeepPlanning {
                message: String::new(),
            },
            answers(&[(&["internal"], ""), (&["core"], "")]),
        ];
        for req in [&two_questions(), &plan] {
            for reply in &replies {
                let Ok(out) = req.decide(reply) else { continue };
                let d = decision(&out);
                if d["behavior"] == "allow" {
                    assert!(
                        d["updatedInput"].is_object(),
                        "{} {reply:?} was sent as {d}",
                        req.tool_name
                    );
                }
            }
        }
    }

    #[test]
    fn replies_travel_as_one_line_and_older_words_are_read() {
        for reply in [
            Reply::Allow,
            Reply::AlwaysAllow,
            Reply::ApprovePlan { plan: None },
            Reply::ApprovePlan {
                plan: Some("1. a\n2. b".into()),
            },
            answers(&[(&["a", "b"], "own\nwords")]),
            Reply::KeepPlanning {
                message: "x".into(),
            },
        ] {
            let line = reply.line();
            assert!(!line.contains('\n'));
            assert_eq!(Reply::read(&line), Some(reply));
        }
        assert_eq!(Reply::read("allow\n"), Some(Reply::Allow));
        // An older tray's plan approval, with no edits.
        assert_eq!(
            Reply::read(r#"{"reply":"approve_plan"}"#),
            Some(Reply::ApprovePlan { plan: None })
        );
        assert_eq!(Reply::read("deny"), Some(Reply::Deny));
        assert_eq!(Reply::read("maybe"), None);
    }
}
