//! The grouping both the tray menu and the window show: what is ready for review first, then
//! what waits for the person, then what is active, newest first within each group.

use lf_tray_core::{Kind, SessionRecord, State};
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Group {
    Ready,
    Waiting,
    Active,
    /// Closed interactive sessions and states lf adds later: listed in the window only.
    Other,
}

impl Group {
    pub fn of(record: &SessionRecord) -> Group {
        match (&record.state, &record.kind) {
            (State::Ready, _) => Group::Ready,
            _ if record.needs_you => Group::Waiting,
            (State::Active, _) => Group::Active,
            _ => Group::Other,
        }
    }

    /// The heading shown above the group.
    pub fn title(self) -> &'static str {
        match self {
            Group::Ready => "Ready for review",
            Group::Waiting => "Waiting for you",
            Group::Active => "Active",
            Group::Other => "Other sessions",
        }
    }

    /// Whether the tray lists this group.
    pub fn is_pending(self) -> bool {
        self != Group::Other
    }
}

/// The sessions in display order: by group, then newest first. Sessions without a start time
/// (lf's list does not carry one) follow those with one, in lf's own order.
pub fn ordered(sessions: &[SessionRecord]) -> Vec<(Group, &SessionRecord)> {
    let mut rows: Vec<_> = sessions.iter().map(|s| (Group::of(s), s)).collect();
    rows.sort_by(|(ga, a), (gb, b)| {
        ga.cmp(gb)
            .then_with(|| b.created_at.is_some().cmp(&a.created_at.is_some()))
            .then_with(|| b.created_at.cmp(&a.created_at))
            .then_with(|| SessionRecord::list_order(a, b))
    });
    rows
}

/// How many sessions wait on the person (the tray's count).
pub fn needing_person(sessions: &[SessionRecord]) -> usize {
    sessions.iter().filter(|s| s.needs_you).count()
}

/// `title — detail`, the way a session is named in one line.
pub fn one_line(record: &SessionRecord) -> String {
    let title = if record.title.trim().is_empty() {
        record.id.as_str()
    } else {
        record.title.trim()
    };
    match record.detail.trim() {
        "" => title.to_string(),
        detail => format!("{title} — {detail}"),
    }
}

/// What an Ask asks, without the line lf already made its title (lf titles an Ask with the
/// prompt's first line, so showing both would say it twice). `None` when nothing is left.
pub fn question(record: &SessionRecord) -> Option<String> {
    let prompt = record.prompt.as_deref()?.trim();
    let rest = match prompt.split_once('\n') {
        Some((first, rest)) if first.trim() == record.title.trim() => rest,
        None if prompt == record.title.trim() => "",
        _ => prompt,
    };
    let rest = rest.trim();
    (!rest.is_empty()).then(|| rest.to_string())
}

/// Whether choosing this session shows the review window rather than a terminal: a Flow
/// review is decided in the window.
pub fn reviews_in_window(record: &SessionRecord) -> bool {
    record.is(Kind::Flow)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A record as the engine hands it on (with `needs_you` judged); tests adjust the
    /// fields they care about.
    pub fn record(id: &str, kind: Kind, state: State) -> SessionRecord {
        let mut record = SessionRecord {
            id: id.into(),
            kind: Some(kind),
            work: None,
            title: format!("Title of {id}"),
            detail: "detail".into(),
            cwd: "/src/app".into(),
            state,
            ready_summary: None,
            open_argv: vec![
                "/usr/bin/lf".into(),
                "session".into(),
                "open".into(),
                id.into(),
            ],
            actions: None,
            needs_you: false,
            prompt: None,
            created_at: None,
            extra: Default::default(),
        };
        record.needs_you = lf_tray_core::session::needs_you(&record);
        record
    }

    #[test]
    fn groups_follow_what_the_person_must_do() {
        assert_eq!(
            Group::of(&record("a", Kind::Ask, State::Ready)),
            Group::Ready
        );
        assert_eq!(
            Group::of(&record("a", Kind::Ask, State::Waiting)),
            Group::Waiting
        );
        // An Ask nobody is attached to any more still waits on the person.
        assert_eq!(
            Group::of(&record("a", Kind::Ask, State::Closed)),
            Group::Waiting
        );
        assert_eq!(
            Group::of(&record("r", Kind::Interactive, State::Active)),
            Group::Active
        );
        assert_eq!(
            Group::of(&record("r", Kind::Interactive, State::Closed)),
            Group::Other
        );
        assert_eq!(
            Group::of(&record(
                "s",
                Kind::Other("conversation".into()),
                State::Ready
            )),
            Group::Ready
        );
    }

    #[test]
    fn order_is_group_then_newest_then_lf_order() {
        let mut old = record("old", Kind::Ask, State::Waiting);
        old.created_at = Some(100);
        let mut new = record("new", Kind::Ask, State::Waiting);
        new.created_at = Some(200);
        let mut b = record("b", Kind::Flow, State::Waiting);
        b.title = "B".into();
        let mut a = record("a", Kind::Flow, State::Waiting);
        a.title = "A".into();
        let ready = record("ready", Kind::Flow, State::Ready);
        let active = record("act", Kind::Interactive, State::Active);
        let sessions = vec![active, b, old, ready, a, new];
        let ids: Vec<_> = ordered(&sessions)
            .into_iter()
            .map(|(_, s)| s.id.as_str())
            .collect();
        assert_eq!(ids, ["ready", "new", "old", "a", "b", "act"]);
        assert_eq!(needing_person(&sessions), 5);
    }

    #[test]
    fn the_question_does_not_repeat_the_title() {
        let mut r = record("ask_1", Kind::Ask, State::Waiting);
        r.title = "Ship it?".into();
        r.prompt = Some("Ship it?\n\nThe build is green.\nTwo reviews.".into());
        assert_eq!(
            question(&r).as_deref(),
            Some("The build is green.\nTwo reviews.")
        );
        r.prompt = Some(" Ship it? ".into());
        assert_eq!(question(&r), None);
        // A title lf cut short, or one that is not the first line, keeps the whole prompt.
        r.title = "Ship…".into();
        r.prompt = Some("Ship it?\nNow.".into());
        assert_eq!(question(&r).as_deref(), Some("Ship it?\nNow."));
        r.prompt = None;
        assert_eq!(question(&r), None);
    }

    #[test]
    fn one_line_names() {
        let mut r = record("ask_1", Kind::Ask, State::Waiting);
        r.title = "Ship it?".into();
        r.detail = "loop-decide".into();
        assert_eq!(one_line(&r), "Ship it? — loop-decide");
        r.detail = " ".into();
        assert_eq!(one_line(&r), "Ship it?");
        r.title = String::new();
        assert_eq!(one_line(&r), "ask_1");
    }
}
