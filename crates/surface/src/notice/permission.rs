//! The popups of an agent asking through its own hook: a tool to run, questions, a plan;
//! and what a request will run, shown with nothing hidden in it.

use std::borrow::Cow;

use lf_tray_core::permission::{Prompt, Question, Request};
use lf_tray_core::SessionRecord;

use super::*;
use crate::answer::{self, Sends};

/// An agent asks through its own hook, answered from the popup. What it asks decides the
/// popup: a tool to run (`tool`), questions (`questions`) or a plan (`plan`).
pub fn permission(record: &SessionRecord, request: &Request) -> Notice {
    match request.prompt() {
        Ok(Prompt::Questions(asked)) => questions(record, request, &asked),
        Ok(Prompt::Plan(text)) => plan(record, request, &text),
        Ok(Prompt::Tool { always }) => tool(record, request, always.as_ref()),
        // Never registered (the hook and the tray leave it to the terminal); worded as a
        // tool all the same, whose Allow the core would refuse.
        Err(_) => tool(record, request, None),
    }
}

/// The lines after what is asked: the session's title and where the work is.
fn about(record: &SessionRecord) -> impl Iterator<Item = String> + '_ {
    std::iter::once(title(record).to_string())
        .chain(record.work())
        .map(|line| escape(&one_line(&line, MAX_TITLE)))
        .filter(|line| !line.is_empty())
}

/// A tool to run: `claude asks permission · <title>`; the body the tool and exactly what it
/// will run (every control, bidi and invisible character shown as a visible mark, so the
/// text read is the text run), what Always allow would allow, then the title and where the
/// work is. **Allow**, **Always allow** (where Claude suggests a rule) and **Deny** answer
/// the agent; the body's click and Open go to its terminal as for any popup.
fn tool(
    record: &SessionRecord,
    request: &Request,
    always: Option<&lf_tray_core::permission::Always>,
) -> Notice {
    let who = record.provider().unwrap_or("Agent");
    let summary = one_line(
        &format!("{who} asks permission · {}", title(record)),
        MAX_SUMMARY,
    );
    let tool = one_line(&visible(&request.tool_name), MAX_SUMMARY);
    let mut lines = vec![escape(&format!(
        "{tool}: {}",
        cap(&visible(&runs(request)), MAX_COMMAND)
    ))];
    if let Some(always) = always {
        lines.push(escape(&cap(&visible(&always.sentence()), MAX_COMMAND)));
    }
    let mut actions = vec![(DEFAULT, "Open")];
    actions.extend(offered(request));
    // Codex's own choice goes to its terminal already.
    if request.client == Client::Claude {
        actions.push((OPEN, "Open"));
    }
    lines.extend(about(record));
    Notice {
        actions,
        ..session_notice(record, NoticeKind::Asked, summary, lines.join("\n"), false)
    }
}

/// Questions: `claude asks · <title>`; the body each question (after its header) and its
/// options with their descriptions, as words a person reads. One single-select question
/// offers its options as buttons where the server draws them all, else **Answer…**, which
/// opens the window at the question ([`buttons`]); several questions or a multi-select one
/// are answered there.
fn questions(record: &SessionRecord, request: &Request, asked: &[Question]) -> Notice {
    let who = record.provider().unwrap_or("Agent");
    let summary = one_line(&format!("{who} asks · {}", title(record)), MAX_SUMMARY);
    let mut lines = Vec::new();
    for q in asked {
        let pick = if q.multi { " (pick any)" } else { "" };
        let line = match q.header.trim() {
            "" => format!("{}{pick}", q.question),
            header => format!("{header}: {}{pick}", q.question),
        };
        lines.push(escape(&one_line(&visible(&line), MAX_PROMPT)));
        for option in &q.options {
            let line = match option.description.trim() {
                "" => format!("• {}", option.label),
                about => format!("• {} — {about}", option.label),
            };
            lines.push(escape(&one_line(&visible(&line), MAX_TITLE)));
        }
    }
    lines.extend(record.work().map(|w| escape(&one_line(&w, MAX_TITLE))));
    let choices = answer::choices(request)
        .into_iter()
        .filter(|c| matches!(c.sends, Sends::Option(_)))
        .map(|c| (c.id, button_label(&c.label)))
        .collect();
    Notice {
        actions: vec![(DEFAULT, "Open"), (ANSWER, "Answer…"), (OPEN, "Open")],
        choices,
        ..session_notice(record, NoticeKind::Asked, summary, lines.join("\n"), false)
    }
}

/// An agent's words as a button's label. The spec gives labels no markup, but Plasma draws
/// a label that looks like rich text as rich text (`internal <b>` read `internal`, bold):
/// its angle brackets are shown as `‹ ›`. The reply is made from the request, by the
/// option's place, never from the label.
fn button_label(text: &str) -> String {
    one_line(&visible(text), MAX_SUMMARY)
        .replace('<', "‹")
        .replace('>', "›")
}

/// How many lines of a plan the popup shows; the window shows it whole.
const PLAN_LINES: usize = 6;

/// A plan: `claude has a plan · <title>`; the body its first lines, **Approve plan**,
/// **Keep planning** and **Read the plan…** (the window, with the whole plan and a box for
/// what to change).
fn plan(record: &SessionRecord, request: &Request, text: &str) -> Notice {
    let who = record.provider().unwrap_or("Agent");
    let summary = one_line(
        &format!("{who} has a plan · {}", title(record)),
        MAX_SUMMARY,
    );
    let mut lines: Vec<String> = text
        .lines()
        .map(|line| one_line(&visible(line), MAX_TITLE))
        .filter(|line| !line.is_empty())
        .take(PLAN_LINES + 1)
        .map(|line| escape(&line))
        .collect();
    if lines.len() > PLAN_LINES {
        lines.truncate(PLAN_LINES);
        lines.push("…".into());
    }
    lines.extend(about(record));
    let mut actions = vec![(DEFAULT, "Open")];
    actions.extend(offered(request));
    actions.extend([(ANSWER, "Read the plan…"), (OPEN, "Open")]);
    Notice {
        actions,
        ..session_notice(record, NoticeKind::Asked, summary, lines.join("\n"), false)
    }
}

/// The request's choices a popup's button can carry whole, in the tray's words (a
/// question's options are offered apart, as [`Notice::choices`]).
fn offered(request: &Request) -> impl Iterator<Item = (&'static str, &'static str)> {
    answer::choices(request)
        .into_iter()
        .filter(|c| c.sends.whole() && !matches!(c.sends, Sends::Option(_)))
        .filter_map(|c| match c.label {
            Cow::Borrowed(label) => Some((c.id, label)),
            Cow::Owned(_) => None,
        })
}

/// What a request will do, in the terms the person judges it by: a shell command as it
/// will run, the file a tool writes, the address it fetches; otherwise its whole input.
pub fn runs(request: &Request) -> String {
    let input = &request.tool_input;
    let field = match request.tool_name.as_str() {
        "Bash" => "command",
        "Write" | "Edit" | "MultiEdit" | "Read" => "file_path",
        "NotebookEdit" => "notebook_path",
        "WebFetch" => "url",
        _ => "",
    };
    match input.get(field).and_then(|v| v.as_str()) {
        Some(text) => text.to_string(),
        None if input.is_null() => String::new(),
        None => input.to_string(),
    }
}

/// Untrusted text with nothing hidden in it: control characters become their visible
/// pictures (a newline reads `␊`), and bidi overrides, isolates and invisible characters
/// (which make a command read other than it runs) become `<U+202E>`.
pub fn visible(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\u{0}'..='\u{1f}' => out.push(char::from_u32(0x2400 + c as u32).unwrap_or('?')),
            '\u{7f}' => out.push('␡'),
            '\u{80}'..='\u{9f}'
            | '\u{061c}'
            | '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{2069}'
            | '\u{feff}' => out.push_str(&format!("<U+{:04X}>", c as u32)),
            c => out.push(c),
        }
    }
    out
}
