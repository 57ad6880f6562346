//! The grouping both the tray menu and the window show: what is ready for review first, then
//! what waits for the person (longest waiting first within each), then what is active,
//! newest first.

use std::borrow::Borrow;

use lf_tray_core::{Kind, SessionRecord, State};
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Group {
    Ready,
    Waiting,
    /// An agent that stopped with its session still open (generation E): listed until it
    /// resumes, leaves lf's list, or the person dismisses it.
    Stopped,
    Active,
    /// Closed interactive sessions and states lf adds later: listed in the window only.
    Other,
}

impl Group {
    pub fn of(record: &SessionRecord) -> Group {
        match (&record.state, &record.kind) {
            (State::Ready, _) => Group::Ready,
            _ if record.needs_you() => Group::Waiting,
            _ if record.stopped() => Group::Stopped,
            (State::Active, _) => Group::Active,
            _ => Group::Other,
        }
    }

    /// The heading shown above the group.
    pub fn title(self) -> &'static str {
        match self {
            Group::Ready => "Ready for review",
            Group::Waiting => "Waiting for you",
            Group::Stopped => "Stopped",
            Group::Active => "Active",
            Group::Other => "Other sessions",
        }
    }

    /// Whether the tray lists this group.
    pub fn is_pending(self) -> bool {
        self != Group::Other
    }
}

/// The sessions in display order: by group; inside Ready and Waiting, the session that has
/// waited on the person longest first (`since`, unix seconds, as the tray's memory knows it),
/// since that is the one most likely forgotten. Sessions without a waiting time follow, and
/// so do the other groups, newest first: sessions without a start time (lf's list does not
/// carry one) follow those with one, in lf's own order.
pub fn ordered<R: Borrow<SessionRecord>>(
    sessions: &[R],
    since: impl Fn(&SessionRecord) -> Option<i64>,
) -> Vec<(Group, &R)> {
    let mut rows = placed(sessions, since, |_, _| true);
    rows.sort_unstable_by(before);
    rows.into_iter().map(|(group, _, s)| (group, s)).collect()
}

/// The first `n` of the sessions `keep` lets through, in [`ordered`]'s order, and how many
/// it lets through; the rest are not ordered among themselves (the tray's menu shows ten of
/// what may be 10 000: ordering all of them cost it 1.3 ms a redraw).
pub fn first<R: Borrow<SessionRecord>>(
    sessions: &[R],
    since: impl Fn(&SessionRecord) -> Option<i64>,
    keep: impl Fn(Group, &SessionRecord) -> bool,
    n: usize,
) -> (Vec<(Group, &R)>, usize) {
    let mut rows = placed(sessions, since, keep);
    let kept = rows.len();
    if n == 0 {
        return (Vec::new(), kept);
    }
    if rows.len() > n {
        // `before` is a total order (lf's order ends on the id and machine, which are
        // unique), so the `n` first are the same ones a full sort puts first.
        rows.select_nth_unstable_by(n - 1, before);
        rows.truncate(n);
    }
    rows.sort_unstable_by(before);
    let rows = rows.into_iter().map(|(group, _, s)| (group, s)).collect();
    (rows, kept)
}

/// A session with its group and, in Ready and Waiting, its waiting time.
type Placed<'a, R> = (Group, Option<i64>, &'a R);

fn placed<'a, R: Borrow<SessionRecord>>(
    sessions: &'a [R],
    since: impl Fn(&SessionRecord) -> Option<i64>,
    keep: impl Fn(Group, &SessionRecord) -> bool,
) -> Vec<Placed<'a, R>> {
    sessions
        .iter()
        .filter_map(|r| {
            let s = r.borrow();
            let group = Group::of(s);
            if !keep(group, s) {
                return None;
            }
            let waited = matches!(group, Group::Ready | Group::Waiting)
                .then(|| since(s))
                .flatten();
            Some((group, waited, r))
        })
        .collect()
}

/// [`ordered`]'s order: total, since lf's order ends on the id and the machine.
fn before<R: Borrow<SessionRecord>>(
    (ga, wa, a): &Placed<'_, R>,
    (gb, wb, b): &Placed<'_, R>,
) -> std::cmp::Ordering {
    let (a, b) = ((*a).borrow(), (*b).borrow());
    ga.cmp(gb)
        .then_with(|| wb.is_some().cmp(&wa.is_some()))
        .then_with(|| wa.cmp(wb))
        .then_with(|| b.created_at.is_some().cmp(&a.created_at.is_some()))
        .then_with(|| b.created_at.cmp(&a.created_at))
        .then_with(|| SessionRecord::list_order(a, b))
}

/// How many sessions wait on the person (the tray's count).
pub fn needing_person<R: Borrow<SessionRecord>>(sessions: &[R]) -> usize {
    sessions
        .iter()
        .filter(|s| (*s).borrow().needs_you())
        .count()
}

/// `title — detail`, the way a session is named in one line; where its agent said why it
/// waits, `title — permission: Run cargo publish --dry-run` instead.
pub fn one_line(record: &SessionRecord) -> String {
    let title = if record.title.trim().is_empty() {
        record.id.as_str()
    } else {
        record.title.trim()
    };
    if let Some(reason) = record.reason() {
        return match reason.title.as_deref().or(reason.msg.as_deref()) {
            Some(what) => format!("{title} — {}: {what}", reason.label()),
            None => format!("{title} — {}", reason.label()),
        };
    }
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

/// What the person calls a session of this kind; lf's own word for a kind this tray does
/// not know yet, and nothing for a record without a kind (generation D and later).
pub fn kind_name(kind: Option<&Kind>) -> Option<String> {
    Some(
        match kind? {
            Kind::Ask => "Ask",
            Kind::Flow => "Flow review",
            Kind::Interactive => "Interactive",
            Kind::Other(word) => word,
        }
        .to_string(),
    )
}

/// A Recent entry's transition as the window says it (the memory keeps lf-neutral ids:
/// `asked`, `ready`, `waits`, `no_longer_waits`, `resolved`, `stopped`); an id from a
/// newer memory is shown as it is.
pub fn recent_words(what: &str) -> &str {
    match what {
        "asked" => "asked",
        "ready" => "ready for review",
        "waits" => "waits",
        "no_longer_waits" => "no longer waits",
        "resolved" => "resolved",
        "stopped" => "agent stopped",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{blocked, record, record_d, record_e};

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
        let ids: Vec<_> = ordered(&sessions, |_| None)
            .into_iter()
            .map(|(_, s)| s.id.as_str())
            .collect();
        assert_eq!(ids, ["ready", "new", "old", "a", "b", "act"]);
        assert_eq!(needing_person(&sessions), 5);
    }

    #[test]
    fn inside_ready_and_waiting_the_longest_waiting_comes_first() {
        let session = |id: &str, kind: Kind, state: State, created: Option<i64>| {
            let mut r = record(id, kind, state);
            r.created_at = created;
            r
        };
        let sessions = vec![
            session("w-new", Kind::Ask, State::Waiting, Some(300)),
            session("w-unknown-new", Kind::Ask, State::Waiting, Some(200)),
            session("w-old", Kind::Ask, State::Waiting, Some(100)),
            session("w-unknown-old", Kind::Ask, State::Waiting, Some(50)),
            session("r-late", Kind::Flow, State::Ready, None),
            session("r-early", Kind::Flow, State::Ready, None),
            session("act-old", Kind::Interactive, State::Active, Some(10)),
            session("act-new", Kind::Interactive, State::Active, Some(20)),
            session("closed", Kind::Interactive, State::Closed, None),
        ];
        // Waiting times as the memory has them: not the start times, which they contradict
        // here on purpose, and none for two sessions it has not seen wait yet.
        let since = |r: &SessionRecord| match r.id.as_str() {
            "w-new" => Some(1_000),
            "w-old" => Some(2_000),
            "r-late" => Some(5_000),
            "r-early" => Some(4_000),
            // Active sessions do not wait: a time for them does not reorder them.
            "act-old" => Some(1),
            "act-new" => Some(9_999),
            _ => None,
        };
        let rows: Vec<_> = ordered(&sessions, since)
            .into_iter()
            .map(|(g, s)| (g, s.id.as_str()))
            .collect();
        assert_eq!(
            rows,
            [
                (Group::Ready, "r-early"),
                (Group::Ready, "r-late"),
                (Group::Waiting, "w-new"),
                (Group::Waiting, "w-old"),
                // Without a waiting time: after those with one, newest first as before.
                (Group::Waiting, "w-unknown-new"),
                (Group::Waiting, "w-unknown-old"),
                (Group::Active, "act-new"),
                (Group::Active, "act-old"),
                (Group::Other, "closed"),
            ]
        );
        // Equal waiting times keep today's order among themselves.
        let tie = |_: &SessionRecord| Some(7);
        let ids: Vec<_> = ordered(&sessions[..4], tie)
            .into_iter()
            .map(|(_, s)| s.id.as_str())
            .collect();
        assert_eq!(ids, ["w-new", "w-unknown-new", "w-old", "w-unknown-old"]);
    }

    /// The tray's menu takes its ten rows from `first`: on random lists full of ties (titles,
    /// start and waiting times), they are exactly the ten a full sort puts first.
    #[test]
    fn the_first_few_are_the_full_orders_first_few() {
        // A small linear congruential generator: the same lists on every run.
        let mut seed: u64 = 0x5eed;
        let mut next = |below: u64| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) % below
        };
        let kinds = [Kind::Ask, Kind::Flow, Kind::Interactive];
        let states = [State::Ready, State::Waiting, State::Active, State::Closed];
        for round in 0..200 {
            let len = next(60) as usize;
            let sessions: Vec<SessionRecord> = (0..len)
                .map(|i| {
                    let kind = kinds[next(3) as usize].clone();
                    let state = states[next(4) as usize].clone();
                    let mut r = record(
                        &format!("s{}", next(1_000_000) * 100 + i as u64),
                        kind,
                        state,
                    );
                    r.title = format!("T{}", next(4));
                    r.created_at = (next(3) > 0).then(|| next(5) as i64);
                    r.machine = (next(4) == 0).then(|| format!("m{}", next(2)));
                    r
                })
                .collect();
            let mut waits = std::collections::HashMap::new();
            for r in &sessions {
                if next(2) == 0 {
                    waits.insert(r.id.clone(), next(4) as i64);
                }
            }
            let since = |r: &SessionRecord| waits.get(&r.id).copied();
            let keep = |g: Group, r: &SessionRecord| g.is_pending() && !r.id.ends_with('7');
            let full: Vec<(Group, &str)> = ordered(&sessions, since)
                .into_iter()
                .filter(|(g, r)| keep(*g, r))
                .map(|(g, r)| (g, r.id.as_str()))
                .collect();
            for n in [0, 1, 3, 10, len, len + 5] {
                let (rows, kept) = first(&sessions, since, keep, n);
                let rows: Vec<(Group, &str)> =
                    rows.into_iter().map(|(g, r)| (g, r.id.as_str())).collect();
                assert_eq!(kept, full.len(), "round {round}");
                assert_eq!(rows, full[..n.min(full.len())], "round {round}, n {n}");
            }
        }
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
    fn stopped_agents_have_a_group_of_their_own() {
        let dead = record_e("s", State::Closed, false, serde_json::Value::Null);
        assert!(dead.stopped());
        assert_eq!(Group::of(&dead), Group::Stopped);
        assert!(Group::of(&dead).is_pending());
        let why = record_e(
            "s",
            State::Other("unknown".into()),
            true,
            blocked(
                "permission",
                "Run cargo publish --dry-run",
                "Bash wants to run a command",
            ),
        );
        assert_eq!(Group::of(&why), Group::Waiting);
        assert_eq!(
            one_line(&why),
            "Title of s — permission: Run cargo publish --dry-run"
        );
    }

    #[test]
    fn generation_d_groups_by_attention_alone() {
        // Waiting with the person's terminal attached is still waiting.
        let attached = record_d("s", State::Active, true);
        assert!(attached.kind.is_none() && attached.needs_you());
        assert_eq!(Group::of(&attached), Group::Waiting);
        // Attention cleared: active while attached, otherwise not in the tray at all.
        assert_eq!(
            Group::of(&record_d("s", State::Active, false)),
            Group::Active
        );
        let idle = record_d("s", State::Other("unknown".into()), false);
        assert_eq!(Group::of(&idle), Group::Other);
        assert!(!Group::of(&idle).is_pending());
        assert_eq!(
            Group::of(&record_d("s", State::Other("unknown".into()), true)),
            Group::Waiting
        );
    }

    #[test]
    fn work_repo_and_provider_of_a_generation_d_record() {
        let mut r = record_d("s", State::Active, true);
        assert_eq!(r.work().as_deref(), Some("product / LOO-412"));
        assert_eq!(r.provider(), Some("codex"));
        r.remove_lf_field("work_path");
        assert_eq!(r.work().as_deref(), Some("app.loo-412"));
        r.remove_lf_field("workspace");
        assert_eq!(r.work().as_deref(), Some("sub"));
        r.set_lf_field("provider", serde_json::Value::Null);
        assert_eq!(r.provider(), Some("codex:gpt-5-codex"));
        r.detail = " ".into();
        assert_eq!(r.provider(), None);
        r.cwd = "/".into();
        assert_eq!(r.work(), None);
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

    #[test]
    fn kinds_and_recent_transitions_are_named_as_the_person_says_them() {
        assert_eq!(kind_name(Some(&Kind::Flow)).as_deref(), Some("Flow review"));
        assert_eq!(
            kind_name(Some(&Kind::Other("chore".into()))).as_deref(),
            Some("chore")
        );
        assert_eq!(kind_name(None), None);
        assert_eq!(recent_words("no_longer_waits"), "no longer waits");
        assert_eq!(recent_words("stopped"), "agent stopped");
        assert_eq!(recent_words("paused_by_lf"), "paused_by_lf");
    }
}
