//! What the window draws, worded here so that the page only draws: each session as a row
//! (its line, chips, details, buttons and what Enter does), the Recent list, and the one
//! message the page hears. The page is buildless and cannot import Rust's names, so
//! whatever it would otherwise have to know about lf (its states, kinds, fields, action
//! kinds) is decided here, and the page reads these fields as they are.

use lf_tray_core::history::{self, Entry};
use lf_tray_core::permission::{Prompt, Request};
use lf_tray_core::{Presents, SessionRecord, State};
use serde::Serialize;

use crate::board::{self, Group};
use crate::buttons::{self, Action, Button};
use crate::view::View;

/// How the window offers to go back to a session's terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// The setting is off: lf's buttons only.
    Off,
    /// A Go to terminal button, first, for every attached session.
    Button,
    /// This desktop focuses nothing: say where the session runs.
    Say,
}

/// How a chip looks (its class on the page).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChipStyle {
    /// What kind of session it is.
    Kind,
    /// It waits on the person though its state does not say so.
    NeedsYou,
    Ready,
    Waiting,
    Active,
    /// Something went wrong (lf's `interrupted`).
    Trouble,
    /// A state lf added later.
    Plain,
}

impl ChipStyle {
    fn of(state: &State) -> ChipStyle {
        match state {
            State::Ready => ChipStyle::Ready,
            State::Waiting | State::Closed => ChipStyle::Waiting,
            State::Active => ChipStyle::Active,
            State::Other(word) if word == "interrupted" => ChipStyle::Trouble,
            State::Other(_) => ChipStyle::Plain,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Chip {
    pub text: String,
    pub style: ChipStyle,
}

/// Why the agent waits, in its own words (generation E): untrusted text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Why {
    /// `Agent asks permission`.
    pub label: String,
    /// What it said: its title, then its message.
    pub text: String,
}

/// One session as the window draws it. What it does not have (a field that is `None` or
/// `false`) is left out of its JSON, which the page reads as absent: a row of 10 000 is
/// sent whole when a window opens.
#[derive(Debug, Clone, Serialize)]
pub struct SessionView {
    /// What the window names the session by (its `SessionKey::token`), and hands back:
    /// ids are unique per machine only.
    pub key: String,
    /// lf's id, which the filter finds it by.
    pub id: String,
    /// Its title, else its id.
    pub title: String,
    /// The group it is drawn in; the page only tells one group from the next.
    pub group: Group,
    /// The group's heading, as the tray says it.
    pub group_title: &'static str,
    /// It waits on the person (ready for review, or waiting): counted in the heading, and
    /// how long it has waited is shown.
    #[serde(skip_serializing_if = "is_false")]
    pub needs_you: bool,
    /// The person can dismiss its popups (it waits, or its agent stopped).
    #[serde(skip_serializing_if = "is_false")]
    pub dismissable: bool,
    /// The person dismissed its popups until its next transition.
    #[serde(skip_serializing_if = "is_false")]
    pub dismissed: bool,
    /// What and where it is, on its one line: `Flow review · asks permission · box · app`.
    pub label: String,
    /// Since when it waits on the person (unix seconds), as the tray's memory knows it
    /// across restarts; only while it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting_since: Option<i64>,
    pub chips: Vec<Chip>,
    /// Which agent runs it and where the work is: `codex · product / LOO-412 · app`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub meta: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<Why>,
    /// Its agent stopped with the session still open.
    #[serde(skip_serializing_if = "is_false")]
    pub stopped: bool,
    /// An Ask's prompt without the line that is already its title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready_summary: Option<String>,
    /// An agent's request open for an answer from here ([`RequestView`]): its card shows
    /// while it is there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request: Option<RequestView>,
    /// The card's buttons for that request: each one's id (sent back as it is) and label.
    pub choices: Vec<ChoiceButton>,
    pub buttons: Vec<Button>,
    /// What Enter on the row runs; `None`: the row opens to show its fields or reasons.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub primary: Option<Action>,
    /// Where it runs, said instead of a Go to terminal button where the desktop lets
    /// nothing focus another app's window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs_in: Option<String>,
    /// What the filter looks in: its title, id, repository and work.
    pub search: Vec<String>,
}

/// What an agent's open request asks, as the window's card draws it. All of it is untrusted
/// text with every hidden character made visible (the page sets it as text); the page
/// answers by a choice's id and option numbers ([`crate::answer::Given`]), never by
/// echoing a label back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RequestView {
    /// A tool to run: Allow, Deny, and Always allow with what it would allow from now on.
    Tool {
        runs: String,
        always: Option<String>,
    },
    /// Questions, each with its options: Send once every one has an answer.
    Questions { questions: Vec<QuestionView> },
    /// A plan, whole and editable: Approve plan (as shown, or as the person edited it),
    /// or Keep planning with what to change.
    Plan { plan: String },
}

/// A choice of the request as the card offers it ([`crate::answer::choices`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChoiceButton {
    pub id: &'static str,
    pub label: String,
    /// The card's field it carries with it, if any.
    pub fills: Option<Fills>,
}

/// A field of the card a choice sends ([`crate::answer::Given`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Fills {
    /// Each question's options ticked and the person's own words (`answers`).
    Answers,
    /// The plan as the card holds it (`text`).
    Plan,
    /// What to change (`text`).
    Message,
}

impl ChoiceButton {
    /// The choices the card offers for `request`.
    pub fn of(request: &Request) -> Vec<ChoiceButton> {
        use crate::answer::Sends;
        crate::answer::choices(request)
            .into_iter()
            .filter(|c| c.sends.on_card())
            .map(|c| ChoiceButton {
                id: c.id,
                label: crate::notice::visible(&c.label),
                fills: match c.sends {
                    Sends::Answers => Some(Fills::Answers),
                    Sends::ApprovePlan => Some(Fills::Plan),
                    Sends::KeepPlanning => Some(Fills::Message),
                    _ => None,
                },
            })
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct QuestionView {
    pub header: String,
    pub question: String,
    pub multi: bool,
    pub options: Vec<ChoiceView>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChoiceView {
    pub label: String,
    pub description: String,
}

impl RequestView {
    pub fn of(request: &Request) -> RequestView {
        use crate::notice::visible;
        match request.prompt() {
            Ok(Prompt::Questions(asked)) => RequestView::Questions {
                questions: asked
                    .iter()
                    .map(|q| QuestionView {
                        header: visible(&q.header),
                        question: visible(&q.question),
                        multi: q.multi,
                        options: q
                            .options
                            .iter()
                            .map(|o| ChoiceView {
                                label: visible(&o.label),
                                description: visible(&o.description),
                            })
                            .collect(),
                    })
                    .collect(),
            },
            Ok(Prompt::Plan(plan)) => RequestView::Plan {
                plan: plan_as_shown(&plan),
            },
            Ok(Prompt::Tool { always }) => RequestView::Tool {
                runs: visible(&format!(
                    "{}: {}",
                    request.tool_name,
                    crate::notice::runs(request)
                )),
                always: always.map(|a| visible(&a.sentence())),
            },
            Err(_) => RequestView::Tool {
                runs: visible(&request.tool_name),
                always: None,
            },
        }
    }
}

/// A plan as the card shows it: its lines kept, for a plan is read as written; only its
/// hidden characters show.
pub(crate) fn plan_as_shown(plan: &str) -> String {
    plan.lines()
        .map(crate::notice::visible)
        .collect::<Vec<_>>()
        .join("\n")
}

/// One question's answer on the card: the options ticked, by number, and the person's
/// own words.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
pub struct Picked {
    #[serde(default)]
    pub chosen: Vec<usize>,
    #[serde(default)]
    pub own: String,
}

/// Where the rows go, in order: a run of the rows the page holds (`[from, count]`, by their
/// places in its list), or a session it does not hold yet (its key; its row is in
/// the rows module's answer).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Place {
    Held(usize, usize),
    New(String),
}

/// Everything the window shows: the sessions' rows as the rows module gives them
/// (every row to a page that holds none, else the rows that changed and where each goes),
/// and the rest whole (it is small).
#[derive(Debug, Clone, Serialize)]
pub struct Board {
    /// The board's number: the page names it when it asks for the next one.
    pub number: u64,
    /// Every row in order when `order` is none; else only the rows that changed.
    pub sessions: Vec<SessionView>,
    /// Where each row goes, from the rows the page holds.
    pub order: Option<Vec<Place>>,
    /// The engine's status line.
    pub status: String,
    /// Why popups are held back now (a pause, quiet hours, do-not-disturb, no server).
    pub quiet: Option<String>,
    /// The latest transitions, newest first.
    pub recent: Vec<RecentView>,
    /// The latest problems reading lf's records or running lf, oldest first.
    pub warnings: Vec<String>,
    /// What the footer says while no tray shows the app: one sentence.
    pub tray: Option<String>,
    /// What to do about it on this desktop, shown when the person asks.
    pub tray_fix: Option<String>,
    /// No lf was found: the footer offers the setting that names it.
    pub lf_missing: bool,
    /// The session to scroll to, for a window just built to show it (it was not there
    /// yet to hear a `focus` message).
    pub focus: Option<String>,
}

/// One Recent entry as the window draws it: the memory's entry and its words.
#[derive(Debug, Clone, Serialize)]
pub struct RecentView {
    #[serde(flatten)]
    pub entry: Entry,
    /// The transition as the person says it ("ready for review").
    pub words: String,
}

/// The one event the page listens to ([`TO_WINDOW`]); what it carries says what it is, so
/// the page keeps no event names of its own.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", content = "payload", rename_all = "snake_case")]
pub enum ToWindow {
    /// What the window shows changed: the page asks for the [`Board`] (`sessions`) once it
    /// has drawn the last one, naming the one it holds, and is given what changed since.
    /// A burst of changes costs one board in flight and one after it, not one each, and
    /// the page's thread is not stopped by a board it did not ask for.
    Changed,
    /// Scroll to this session (its key token) and select it.
    Focus(String),
    /// A terminal could not be opened: what to say, and the command to run by hand.
    LaunchFailed { text: String, command: String },
    /// Go to terminal did not get there: the session (its key token) and why not.
    Unreached { key: String, text: String },
}

/// The event name of [`ToWindow`].
pub const TO_WINDOW: &str = "app";

/// The sessions as the window draws them, in the board's order. `runs_in` says where a
/// session runs (asked only where the desktop focuses nothing), `request` the open request
/// of the session (by its key), if any.
pub fn views(
    desk: &View,
    sessions: &[impl std::borrow::Borrow<SessionRecord>],
    reach: Reach,
    runs_in: impl Fn(&SessionRecord) -> Option<String>,
) -> Vec<SessionView> {
    board::ordered(sessions, |r| desk.waiting_since(&history::key(r)))
        .into_iter()
        .map(|(group, record)| {
            let record = record.borrow();
            let key = history::key(record);
            let runs_in = where_it_runs(record, reach, &runs_in);
            row(desk, key, group, record, reach, runs_in)
        })
        .collect()
}

/// One session's row. `runs_in` is [`where_it_runs`]'s.
// One struct literal, field by field: splitting it would only scatter what a row says.
pub(crate) fn row(
    desk: &View,
    key: String,
    group: Group,
    record: &SessionRecord,
    reach: Reach,
    runs_in: Option<String>,
) -> SessionView {
    let mut buttons = buttons::buttons(record);
    let shown = record.in_terminal() && record.machine.is_none();
    if shown && reach == Reach::Button {
        buttons.insert(0, buttons::go_to_terminal());
    }
    let needs_you = matches!(group, Group::Ready | Group::Waiting);
    let repo_name = (record.presents() == Presents::Waits)
        .then(|| record.repo())
        .flatten();
    let kind_name = board::kind_name(record.kind.as_ref());
    let reason_phrase = record.reason().map(|r| r.phrase());
    let repo = repo_name.clone().or_else(|| last_part(&record.cwd));
    let label = [
        kind_name.as_deref().or(record.provider_named()),
        reason_phrase,
        record.machine.as_deref(),
        repo.as_deref(),
    ];
    let work = record
        .work_path()
        .or(record.work.as_ref().map(|w| w.id.as_str()));
    let meta = [
        record.provider_named().or(Some(record.detail.as_str())),
        work,
        repo_name.as_deref(),
    ];
    let search = [
        Some(record.title.as_str()),
        Some(record.id.as_str()),
        repo.as_deref(),
        record.work_path(),
    ];
    let primary = buttons::primary(&buttons);
    SessionView {
        id: record.id.clone(),
        title: if record.title.is_empty() {
            record.id.clone()
        } else {
            record.title.clone()
        },
        group,
        group_title: group.title(),
        needs_you,
        dismissable: needs_you || group == Group::Stopped,
        dismissed: desk.dismissed(&key),
        label: joined(&label),
        waiting_since: desk.waiting_since(&key).filter(|_| needs_you),
        chips: chips(record, kind_name),
        meta: Some(joined(&meta)).filter(|m| !m.is_empty()),
        cwd: Some(record.cwd.clone()).filter(|c| !c.is_empty()),
        why: record.reason().map(|reason| Why {
            label: format!("Agent {}", reason_phrase.unwrap_or("waits for you")),
            text: joined_with(&[reason.title.as_deref(), reason.msg.as_deref()], " — "),
        }),
        stopped: record.stopped(),
        question: board::question(record),
        ready_summary: record.ready_summary.clone().filter(|s| !s.is_empty()),
        request: desk.request(&key).map(RequestView::of),
        choices: desk.request(&key).map(ChoiceButton::of).unwrap_or_default(),
        buttons,
        primary,
        runs_in,
        search: search.into_iter().flatten().map(str::to_string).collect(),
        key,
    }
}

fn is_false(value: &bool) -> bool {
    !value
}

/// Where the row says the session runs, when no button goes there: headless, on another
/// machine, or (its terminal is here, but the desktop focuses nothing) `runs_in`'s.
pub(crate) fn where_it_runs(
    record: &SessionRecord,
    reach: Reach,
    runs_in: &impl Fn(&SessionRecord) -> Option<String>,
) -> Option<String> {
    let say = reach == Reach::Say && record.in_terminal() && record.machine.is_none();
    if record.headless() {
        // The page says "It runs …." around it.
        Some("headless: no terminal shows it".to_string())
    } else if let Some(machine) = record.machine.as_deref().filter(|_| record.in_terminal()) {
        // Its terminal is on that machine: nothing here can bring it back.
        Some(format!("in a terminal on {machine}"))
    } else {
        say.then(|| runs_in(record)).flatten()
    }
}

/// The chips of a row. A record without a kind (generation D) has no kind chip; its state
/// only says whether a terminal is attached, so `unknown` says nothing, and whether it
/// waits on the person comes from `needs_you`, named when the state chip does not already
/// say so.
fn chips(record: &SessionRecord, kind_name: Option<String>) -> Vec<Chip> {
    let mut chips = Vec::new();
    if let Some(text) = kind_name {
        chips.push(Chip {
            text,
            style: ChipStyle::Kind,
        });
    }
    let says_waiting = matches!(record.state, State::Waiting | State::Ready);
    if record.needs_you() && !says_waiting {
        chips.push(Chip {
            text: "Waiting for you".into(),
            style: ChipStyle::NeedsYou,
        });
    }
    let state = record.state.as_str();
    if !state.is_empty() && state != "unknown" {
        chips.push(Chip {
            text: state.to_string(),
            style: ChipStyle::of(&record.state),
        });
    }
    chips
}

/// The Recent list as the window draws it, newest first.
pub fn recent(entries: &[Entry]) -> Vec<RecentView> {
    entries
        .iter()
        .cloned()
        .map(|entry| RecentView {
            words: board::recent_words(&entry.what).to_string(),
            entry,
        })
        .collect()
}

/// The last part of a path, as a person names the directory it is.
fn last_part(path: &str) -> Option<String> {
    path.split('/')
        .rfind(|part| !part.is_empty())
        .map(str::to_string)
}

fn joined(parts: &[Option<&str>]) -> String {
    joined_with(parts, " · ")
}

fn joined_with(parts: &[Option<&str>], between: &str) -> String {
    parts
        .iter()
        .flatten()
        .filter(|part| !part.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(between)
}

#[cfg(test)]
mod tests {
    use lf_tray_core::lf::{plan, Step};
    use lf_tray_core::{ActionKind, Runs, State};

    use super::*;
    use crate::fixtures::{blocked, record_d, record_e, with_agent};
    use lf_tray_core::permission::Reply;

    const PAGE: &str = include_str!("../../../ui/app.js");
    /// The page's list, which draws app.js's rows a screenful at a time.
    const LIST: &str = include_str!("../../../ui/list.js");
    const STYLE: &str = include_str!("../../../ui/style.css");

    /// The card sends the plan's text as it holds it: untouched, that is the plan as asked
    /// (Claude gets it back whole, with its file's path); changed, it is the person's edit.
    #[test]
    fn the_cards_plan_is_an_edit_only_when_the_person_changed_it() {
        let request: Request = serde_json::from_value(serde_json::json!({
            "tool_name": "ExitPlanMode",
            "tool_input": {"plan": "1. Bump\u{7}\n2. Publish\n", "planFilePath": "/p.md"},
        }))
        .unwrap();
        let RequestView::Plan { plan: shown } = RequestView::of(&request) else {
            panic!("not a plan card")
        };
        // As the card sends it: the choice's id, and what the person gave.
        let sent = |json: serde_json::Value| {
            let answer = crate::answer::Answer {
                request: "S1".into(),
                choice: crate::answer::APPROVE_PLAN.into(),
                given: serde_json::from_value(json).unwrap(),
                from: crate::answer::From::Window,
            };
            answer.reply(&request).unwrap()
        };
        let as_asked = Reply::ApprovePlan { plan: None };
        assert_eq!(sent(serde_json::json!({})), as_asked);
        assert_eq!(sent(serde_json::json!({"text": shown})), as_asked);
        let edited = format!("0. Tag\n{shown}");
        assert_eq!(
            sent(serde_json::json!({"text": edited})),
            Reply::ApprovePlan {
                plan: Some(edited.clone())
            }
        );
    }

    fn tokens(view: &SessionView) -> Vec<&str> {
        view.buttons.iter().map(|b| b.action.token()).collect()
    }

    fn by_id<'a>(views: &'a [SessionView], id: &str) -> &'a SessionView {
        views.iter().find(|v| v.id == id).unwrap()
    }

    #[test]
    fn todays_agents_say_where_they_run_and_what_move_here_does_there() {
        let e = |id| record_e(id, State::Active, true, blocked("question", "Which?", ""));
        let headless = with_agent(e("S-1"), Runs::Headless);
        let native = with_agent(e("S-2"), Runs::Terminal);
        let move_help = |v: &SessionView| {
            v.buttons
                .iter()
                .find(|b| b.action == Action::Lf(ActionKind::MoveHere))
                .and_then(|b| b.help.clone())
                .unwrap_or_default()
        };
        let views = views(&View::default(), &[headless, native], Reach::Button, |_| {
            None
        });
        let (h, n) = (by_id(&views, "S-1"), by_id(&views, "S-2"));
        assert_eq!(h.runs_in.as_deref(), Some("headless: no terminal shows it"));
        assert!(!tokens(h).contains(&"go_to_terminal"));
        assert!(
            move_help(h).contains("second conversation"),
            "{}",
            move_help(h)
        );
        // The native one is reached in its terminal, and Move here warns what it stops.
        assert_eq!(n.buttons[0].action, Action::GoToTerminal);
        assert_eq!(n.primary, Some(Action::GoToTerminal));
        assert!(
            move_help(n).contains("not sent is lost"),
            "{}",
            move_help(n)
        );
        // Why it waits, as the agent said it, under the person's words for it.
        assert_eq!(
            n.why,
            Some(Why {
                label: "Agent asks a question".into(),
                text: "Which?".into()
            })
        );
        assert!(n.label.contains("asks a question"), "{}", n.label);
    }

    /// A row's JSON leaves out what the session does not have (a third of a row of 10 000
    /// sent whole when a window opens); the page reads an absent field as none, and never
    /// tells an absent one from a null.
    #[test]
    fn a_row_leaves_out_what_it_does_not_have() {
        let idle = record_d("S-2", State::Other("unknown".into()), false);
        let views = views(&View::default(), &[idle], Reach::Off, |_| None);
        let row = serde_json::to_value(&views[0]).unwrap();
        let row = row.as_object().unwrap();
        for absent in [
            "needs_you",
            "dismissable",
            "dismissed",
            "waiting_since",
            "why",
            "stopped",
            "question",
            "ready_summary",
            "request",
            "runs_in",
        ] {
            assert!(!row.contains_key(absent), "{absent} is sent: {row:?}");
        }
        // What the page reads without a guard is always there.
        for list in ["chips", "choices", "buttons", "search"] {
            assert!(row[list].is_array(), "{list}");
        }
        for field in ["key", "id", "title", "group", "group_title", "label"] {
            assert!(row[field].is_string(), "{field}");
        }
        for page in [PAGE, LIST] {
            for (at, _) in page.match_indices("session.") {
                let after = page[at + "session.".len()..]
                    .trim_start_matches(|c: char| c.is_alphanumeric() || c == '_')
                    .trim_start();
                for guard in ["=== null", "!== null", "== null", "!= null", "=== false"] {
                    assert!(
                        !after.starts_with(guard),
                        "the page tells an absent field from another: {}",
                        &page[at..at + 40]
                    );
                }
            }
        }
    }

    #[test]
    fn generation_d_records_reach_the_window_with_lf_buttons_and_their_context() {
        let attached = record_d("S-1", State::Active, true);
        let idle = record_d("S-2", State::Other("unknown".into()), false);
        let records = [idle, attached];
        let views = views(&View::default(), &records, Reach::Off, |_| None);
        let (waiting, other) = (&views[0], &views[1]);
        assert_eq!(waiting.id, "S-1");
        assert_eq!(waiting.group, Group::Waiting);
        assert_eq!(waiting.group_title, "Waiting for you");
        assert!(waiting.needs_you && waiting.dismissable);
        // No kind: the chips come from needs_you and the state.
        assert_eq!(
            waiting.chips,
            [
                Chip {
                    text: "Waiting for you".into(),
                    style: ChipStyle::NeedsYou
                },
                Chip {
                    text: "active".into(),
                    style: ChipStyle::Active
                },
            ]
        );
        // lf's provider where no kind names it, and the repository, not the directory.
        assert_eq!(waiting.label, "codex · app.loo-412");
        assert_eq!(
            waiting.meta.as_deref(),
            Some("codex · product / LOO-412 · app.loo-412")
        );
        assert_eq!(waiting.cwd.as_deref(), Some("/home/me/src/app.loo-412/sub"));
        assert_eq!(waiting.question, None);
        assert!(waiting.search.contains(&"product / LOO-412".to_string()));
        // lf's labels and reason verbatim, and nothing lf did not offer.
        let drawn = |v: &SessionView| -> Vec<(String, String, bool, Option<String>)> {
            v.buttons
                .iter()
                .map(|b| {
                    (
                        b.action.token().to_string(),
                        b.label.clone(),
                        b.enabled,
                        b.unavailable_reason.clone(),
                    )
                })
                .collect()
        };
        assert_eq!(
            drawn(waiting),
            [
                (
                    "open".into(),
                    "Open here".into(),
                    false,
                    Some(
                        "This Session is active in another terminal; use Move here to transfer it"
                            .into()
                    )
                ),
                ("move_here".into(), "Move here".into(), true, None),
            ]
        );
        // Open is refused here: Enter shows lf's reason and Move here.
        assert_eq!(waiting.primary, None);
        assert_eq!(other.group, Group::Other);
        assert!(!other.needs_you && !other.dismissable);
        // `unknown` says nothing: no chip.
        assert!(other.chips.is_empty());
        assert_eq!(
            drawn(other),
            [("open".into(), "Open here".into(), true, None)]
        );
        assert_eq!(other.primary, Some(Action::Lf(ActionKind::Open)));

        // Where the tray can focus windows, the attached one offers Go to terminal
        // first; where it cannot, it says where the session runs instead.
        let reached = super::views(&View::default(), &records, Reach::Button, |_| None);
        assert_eq!(tokens(&reached[0]), ["go_to_terminal", "open", "move_here"]);
        assert_eq!(
            tokens(&reached[1]),
            ["open"],
            "nothing attached, nothing to go to"
        );
        let said = super::views(&View::default(), &records, Reach::Say, |r| {
            Some(format!("attached in tmux session work ({})", r.id))
        });
        assert_eq!(tokens(&said[0]), ["open", "move_here"]);
        assert_eq!(
            said[0].runs_in.as_deref(),
            Some("attached in tmux session work (S-1)")
        );
        assert_eq!(said[1].runs_in, None);
    }

    /// What a button says is what the core's guard does: an enabled button's action is
    /// carried out, a disabled one is refused with the reason the button showed, and what
    /// no button offers is refused.
    #[test]
    fn generation_d_buttons_say_what_the_core_guard_does() {
        let records = [
            record_d("S-1", State::Active, true),
            record_d("S-2", State::Other("unknown".into()), true),
        ];
        let views = views(&View::default(), &records, Reach::Off, |_| None);
        for record in &records {
            let view = by_id(&views, &record.id);
            for button in &view.buttons {
                let Action::Lf(kind) = &button.action else {
                    panic!("{}: not lf's", button.label)
                };
                match plan(record, kind, None) {
                    Ok(Step::Open { .. }) => assert!(button.enabled, "{}", button.label),
                    Ok(step) => panic!("{}: {step:?}", button.label),
                    Err(why) => assert_eq!(Some(why), button.unavailable_reason),
                }
            }
            for refused in [
                ActionKind::Approve,
                ActionKind::Iterate,
                ActionKind::Complete,
            ] {
                assert!(!tokens(view).contains(&refused.as_str()));
                assert!(plan(record, &refused, Some("text")).is_err(), "{refused}");
            }
        }
    }

    /// The page is buildless, so it cannot import these names: this holds its copies to
    /// the Rust side, and a renamed variant or event fails here, not in a person's window.
    #[test]
    fn the_page_listens_for_the_event_and_every_message_kind_as_rust_names_them() {
        assert!(
            PAGE.contains(&format!("listen('{TO_WINDOW}',")),
            "ui/app.js does not listen for {TO_WINDOW:?}"
        );
        let messages = [
            ToWindow::Changed,
            ToWindow::Focus(String::new()),
            ToWindow::LaunchFailed {
                text: String::new(),
                command: String::new(),
            },
            ToWindow::Unreached {
                key: String::new(),
                text: String::new(),
            },
        ];
        for message in messages {
            // A new kind stops this compiling until it is in the list above.
            match &message {
                ToWindow::Changed
                | ToWindow::Focus(_)
                | ToWindow::LaunchFailed { .. }
                | ToWindow::Unreached { .. } => {}
            }
            let value = serde_json::to_value(&message).unwrap();
            let kind = value["kind"].as_str().unwrap();
            assert!(
                PAGE.contains(&format!("case '{kind}':")),
                "ui/app.js does not handle the message kind {kind:?}"
            );
            let unit = matches!(message, ToWindow::Changed);
            assert!(unit || value.get("payload").is_some(), "{kind}: no payload");
        }
    }

    /// The page's words come from here: it draws the fields Rust names them by, and keeps
    /// no table of kinds or transitions, no group ids, action kinds or lf fields of its own
    /// that could drift from Rust's.
    #[test]
    fn the_page_copies_none_of_lfs_words_ids_or_fields() {
        let entry = Entry {
            at: 0,
            what: "ready".into(),
            id: "S-1".into(),
            title: "Ship it".into(),
            machine: None,
        };
        let recent = serde_json::to_value(RecentView {
            words: board::recent_words(&entry.what).into(),
            entry,
        })
        .unwrap();
        assert_eq!(recent["words"], "ready for review");
        assert_eq!(
            recent["what"], "ready",
            "the id stays for the page's styling"
        );
        for drawn in [
            "entry.words",
            "session.label",
            "session.chips",
            "session.why",
            "session.primary",
            "session.needs_you",
            "session.dismissable",
            "button.action",
            "b.key",
        ] {
            assert!(PAGE.contains(drawn), "ui/app.js does not draw `{drawn}`");
        }
        for copy in [
            // Words Rust says.
            "'Flow review'",
            "'ready for review'",
            "'agent stopped'",
            "'no longer waits'",
            "'waits for you'",
            // Group ids, action kinds, states: lf's and Rust's ids.
            "'ready'",
            "'waiting'",
            "'stopped'",
            "'open'",
            "'go_to_terminal'",
            "'approve'",
            "'iterate'",
            "'unknown'",
            // lf's fields, as lf spells them.
            "session.state",
            "session.kind",
            "session.provider",
            "session.work",
            "session.detail",
            "session.reason",
            "session.machine",
            "session.repo_name",
            "button.kind",
        ] {
            assert!(
                !PAGE.contains(copy) && !LIST.contains(copy),
                "ui/app.js or ui/list.js keeps its own copy of {copy}"
            );
        }
    }

    /// The card's buttons are the request's choices as Rust made them: the page keeps no
    /// label or reply word of its own, and sends back the fields Rust reads.
    #[test]
    fn the_card_draws_the_choices_it_is_given_and_sends_what_rust_reads() {
        for copy in [
            "'Allow'",
            "'Deny'",
            "'Always allow'",
            "'Approve plan'",
            "'Keep planning'",
            "'Send'",
            "always_allow",
            "approve_plan",
            "keep_planning",
            "reply:",
        ] {
            assert!(
                !PAGE.contains(copy),
                "ui/app.js keeps its own copy of {copy}"
            );
        }
        let bash: Request = serde_json::from_value(serde_json::json!({
            "tool_name": "Bash", "tool_input": {"command": "ls"},
        }))
        .unwrap();
        let view = serde_json::to_value(ChoiceButton::of(&bash)).unwrap();
        for field in view[0].as_object().unwrap().keys() {
            assert!(
                PAGE.contains(&format!("c.{field}")),
                "ui/app.js never reads {field}"
            );
        }
        // What the page sends: the command's arguments, and `Given`'s fields.
        let given: crate::answer::Given =
            serde_json::from_value(serde_json::json!({"answers": [], "text": "x"})).unwrap();
        assert_eq!(given.text.as_deref(), Some("x"));
        for sent in [
            "invoke('answer_request', { id, choice, given })",
            "session.choices",
            "{ answers: state.picks",
            "{ text: state.plan }",
            "{ text: state.message }",
        ] {
            assert!(PAGE.contains(sent), "ui/app.js does not send `{sent}`");
        }
        // Every field a choice may carry is one the page fills.
        for fills in [Fills::Answers, Fills::Plan, Fills::Message] {
            let word = serde_json::to_value(fills).unwrap();
            let read = format!("c.fills === '{}'", word.as_str().unwrap());
            assert!(PAGE.contains(&read), "ui/app.js does not fill {word}");
        }
    }

    #[test]
    fn every_chip_style_has_its_look() {
        for style in [
            ChipStyle::NeedsYou,
            ChipStyle::Ready,
            ChipStyle::Waiting,
            ChipStyle::Active,
            ChipStyle::Trouble,
        ] {
            let class = serde_json::to_value(style).unwrap();
            let rule = format!(".chip.{}", class.as_str().unwrap());
            assert!(STYLE.contains(&rule), "ui/style.css has no {rule}");
        }
        assert_eq!(
            ChipStyle::of(&State::Other("interrupted".into())),
            ChipStyle::Trouble
        );
        assert_eq!(ChipStyle::of(&State::Closed), ChipStyle::Waiting);
    }
}
