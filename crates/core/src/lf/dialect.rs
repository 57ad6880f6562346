//! lf's dialect: everything that differs between the lf generations people run, decided
//! once per detection and read as fields everywhere else.
//!
//! lf's contract moves every few weeks. Following a new lf should be a change to this
//! module alone (plus the stand-in lf and its tests): the engine, the actions, the
//! snapshot and the machines read what the [`Dialect`] says, never a generation letter.
//! The letter ([`Generation`]) is kept only as a label for people.

use std::time::Duration;

use crate::lf::record::SessionRecord;

/// lf's generations as people name them (loopflow-model.md §0, §9, §10): a label for the
/// status line and `--version --verbose`, never a branch in the code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Generation {
    /// Session files plus `approve` / `iterate` for Flow review steps.
    A,
    /// Session files plus `actions[]` on each record (`rename`, no `connect`).
    B,
    /// Sessions in SQLite (`connect`, `import`, `bind`): the old files are history only.
    C,
    /// SQLite only, `attention`, no `kind`, no `complete`; the list's filter is spelt
    /// `--needs-me`, and there is no `lf monitor work`.
    D0,
    /// As D0, with `--waiting` and a read-only `lf monitor work --watch --json`.
    D,
    /// Today's lf (October 2026): D's verbs, plus the agent's own status
    /// (`program_status`), a dead agent read as `closed`, and a `lf monitor work` whose
    /// repository scope starts a planning sync (it writes, so the tray does not use it).
    E,
    /// A help text this app does not recognise: read the files and trust the CLI.
    Unknown,
}

impl Generation {
    /// The generation's letter, for people.
    pub fn name(self) -> &'static str {
        match self {
            Generation::A => "A",
            Generation::B => "B",
            Generation::C => "C",
            Generation::D0 => "D0",
            Generation::D => "D",
            Generation::E => "E",
            Generation::Unknown => "unknown",
        }
    }

    /// Whether lf's help texts named a generation this app knows.
    pub fn is_known(self) -> bool {
        match self {
            Generation::A
            | Generation::B
            | Generation::C
            | Generation::D0
            | Generation::D
            | Generation::E => true,
            Generation::Unknown => false,
        }
    }
}

/// Which of lf's own readers (`lf monitor work --watch --json`) the tray may start, and
/// with what scope. A reader is scoped to one repository or to none; only a repository's
/// scope has a `sessions` part (§9.5), so the rule is whether that scope is safe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReaderScope {
    /// lf has no `lf monitor work` (before D, D0, and a `--waiting` build without it): its
    /// files, or its database directory, are watched instead.
    Missing,
    /// One reader per repository with open sessions, scoped to it (D): it is read-only
    /// (lf commits nothing for it) and sends that repository's open sessions whenever they
    /// move, arming lf's quiet deadline itself, so it never wakes the tray with its own
    /// writes.
    Repository,
    /// Scoped to a repository, lf's reader starts that repository's planning sync, which
    /// commits to lf's store and calls the person's issue tracker (E, §10.3); scoped to
    /// none it sends no sessions. The tray never writes lf's store, itself or through a
    /// reader it starts, so none is started: the store is watched as where it is missing.
    RepositoryWrites,
}

/// How lf answers `lf session list` when there are many sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Paging {
    /// One plain array of every session: lf knows no `--page` (A, B).
    Never,
    /// The first list asks for every session at once; an lf that still answers with a
    /// page `{entries, next}` is asked for the page after `next` with the list's own
    /// `filters` (later pages must keep the same rows in view) and `--page --limit <size>
    /// --after <next>` (C and later, §4.3, §9.2), until `next` is null.
    After {
        filters: &'static [&'static str],
        size: u32,
    },
}

impl Paging {
    /// The `lf session list` arguments for the page after the cursor `after`; `None` where
    /// lf has no way to ask for one.
    pub fn after(self, after: &str) -> Option<Vec<String>> {
        match self {
            Paging::Never => None,
            Paging::After { filters, size } => {
                let page =
                    ["--page", "--limit", &size.to_string(), "--after", after].map(str::to_string);
                Some(filters.iter().map(|a| a.to_string()).chain(page).collect())
            }
        }
    }
}

/// How a Flow review step is decided from the tray.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowDecision {
    /// `lf session approve|iterate <id> <text>` (generation A).
    ApproveIterate,
    /// `lf session complete <id>` once the agent marked it ready (B, C).
    Complete,
    /// lf lists its own actions and has no review verb (D and later).
    LfOwn,
}

/// What one lf can do and how the tray follows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dialect {
    /// The label for people.
    pub generation: Generation,
    /// lf keeps sessions in files the engine reads and watches.
    pub session_files: bool,
    /// The `lf session list` that returns every session the tray shows.
    pub list_args: &'static [&'static str],
    /// How to ask for the next page when lf answers with one.
    pub paging: Paging,
    /// The `lf monitor work` readers the tray may start.
    pub reader_scope: ReaderScope,
    /// lf's quiet time (its `WAITING_QUIET_SECONDS`, D and later): a session whose agent
    /// said nothing for this long turns Waiting, and no write announces it, so the tray
    /// re-checks after each change ([`Dialect::quiet_recheck`]). `None` before D.
    pub quiet: Option<Duration>,
    pub flow_decision: FlowDecision,
    /// A listed, uncompleted session that reads `closed` has a stopped agent (its death or
    /// exit), to be told once when nobody was attached; before E, `closed` in a list meant
    /// an Ask's client left while the caller still waits.
    pub closed_means_stopped: bool,
    /// Records name the agent's process by lf's id (`agent_process_id`, E2): the tray maps
    /// it to a pid with lf's process list and watches it exit, since lf writes nothing
    /// when an agent dies together with its lf.
    pub agent_ids: bool,
    /// lf keeps a `store_revisions` table (D and E; not C or D0), which says whether a
    /// write moved the sessions or only recorded an lf process: the tray lists on what
    /// moved ([`crate::lf::revisions`]) rather than on who may have written.
    pub store_revisions: bool,
}

/// lf's `WAITING_QUIET_SECONDS` (§9.4, unchanged in E §10.3).
const LF_QUIET: Duration = Duration::from_secs(120);
/// The re-check comes this long after lf's quiet time, so that lf's own
/// `now - observed_at >= quiet` already holds when the tray asks: lf's `observed_at` and
/// the moment the tray saw the write are not the same instant, and a list right at the
/// deadline could find the session a moment short of it.
const QUIET_MARGIN: Duration = Duration::from_secs(1);
/// Rows per page where lf pages: lf's own default `--limit` (§4.3, §9.2), which is also
/// what Loopflow.app asks for; about 50 KB of JSON a page, so few round trips and none
/// large.
const PAGE_SIZE: u32 = 100;

/// Generations A and B (and an unknown lf): lf's defaults list every session already.
const LIST_FILES: &[&str] = &["session", "list", "--json", "--all"];
/// C and later list only the current repository, interactive sessions and 100 rows by
/// default; `--all`, `--interactive all` and `--limit 0` lift that, since a headless Run
/// can wait on a person too (a Codex approval). Every *open* session is listed rather than
/// only `--waiting` ones: a session that stops waiting must be told apart from one that
/// was completed, and the waiting filter cannot tell them apart. Both run the same store
/// query; the full list only prints more JSON.
const LIST_STORE: &[&str] = &[
    "session",
    "list",
    "--json",
    "--all",
    "--interactive",
    "all",
    "--limit",
    "0",
];
/// [`LIST_STORE`]'s rows, a page at a time: its filters without the `--limit 0`.
const STORE_FILTERS: &[&str] = &["session", "list", "--json", "--all", "--interactive", "all"];

impl Dialect {
    /// The dialect of a generation.
    pub const fn of(generation: Generation) -> Dialect {
        let files = Dialect {
            generation,
            session_files: true,
            list_args: LIST_FILES,
            paging: Paging::Never,
            reader_scope: ReaderScope::Missing,
            quiet: None,
            flow_decision: FlowDecision::ApproveIterate,
            closed_means_stopped: false,
            agent_ids: false,
            store_revisions: false,
        };
        let store = Dialect {
            session_files: false,
            list_args: LIST_STORE,
            paging: Paging::After {
                filters: STORE_FILTERS,
                size: PAGE_SIZE,
            },
            ..files
        };
        match generation {
            Generation::A => files,
            // Read as A is; an lf this app does not know that answers in pages is most
            // likely a newer one, and is asked for the next page as C to E are.
            Generation::Unknown => Dialect {
                paging: Paging::After {
                    filters: LIST_FILES,
                    size: PAGE_SIZE,
                },
                ..files
            },
            Generation::B => Dialect {
                flow_decision: FlowDecision::Complete,
                ..files
            },
            Generation::C => Dialect {
                flow_decision: FlowDecision::Complete,
                ..store
            },
            Generation::D0 => Dialect {
                quiet: Some(LF_QUIET),
                flow_decision: FlowDecision::LfOwn,
                ..store
            },
            Generation::D => Dialect {
                reader_scope: ReaderScope::Repository,
                quiet: Some(LF_QUIET),
                store_revisions: true,
                flow_decision: FlowDecision::LfOwn,
                ..store
            },
            // The store is watched instead of lf's reader (see `RepositoryWrites`), with
            // the quiet re-check, and the agents' processes for deaths.
            Generation::E => Dialect {
                reader_scope: ReaderScope::RepositoryWrites,
                quiet: Some(LF_QUIET),
                flow_decision: FlowDecision::LfOwn,
                closed_means_stopped: true,
                agent_ids: true,
                store_revisions: true,
                ..store
            },
        }
    }

    /// When to ask again after a change, for sessions lf's quiet rule may turn Waiting
    /// with no write: a `QUIET_MARGIN` after lf's quiet time. `None` where lf has none.
    pub fn quiet_recheck(&self) -> Option<Duration> {
        self.quiet.map(|quiet| quiet + QUIET_MARGIN)
    }

    /// This dialect on an lf built with another quiet time than lf's own (the tests'
    /// stand-in): `quiet` replaces lf's where this lf has the rule at all.
    pub fn with_quiet(self, quiet: Option<Duration>) -> Dialect {
        match (self.quiet, quiet) {
            (Some(_), Some(quiet)) => Dialect {
                quiet: Some(quiet),
                ..self
            },
            (None, _) | (_, None) => self,
        }
    }

    /// The dialect from lf's help texts (§9.1, §10.1): `lf session --help`, and for the
    /// SQLite-only builds `lf session list --help`, `lf monitor --help` and `lf --help`.
    /// `None` for a text lf did not give.
    pub fn from_help(help: &Help<'_>) -> Dialect {
        let verbs = commands(help.session);
        let has = |verb: &str| verbs.contains(&verb);
        let generation = if (has("resume") || has("ensure")) && !has("complete") {
            let top = help.top.map(commands).unwrap_or_default();
            let agent_flag = help.top.is_some_and(|t| t.contains("--agent"));
            let monitor_work = help
                .monitor
                .is_some_and(|text| commands(text).contains(&"work"));
            if top.contains(&"desktop") || top.contains(&"history") || agent_flag {
                Generation::E
            } else if help
                .list
                .is_some_and(|text| text.contains("--needs-me") && !text.contains("--waiting"))
            {
                Generation::D0
            } else if !monitor_work {
                // A `--waiting` build without lf's reader: followed as D0 is.
                return Dialect {
                    reader_scope: ReaderScope::Missing,
                    ..Dialect::of(Generation::D)
                };
            } else {
                Generation::D
            }
        } else if has("connect") || has("import") || has("bind") {
            Generation::C
        } else if has("approve") || has("iterate") {
            Generation::A
        } else if has("rename") {
            Generation::B
        } else {
            Generation::Unknown
        };
        Dialect::of(generation)
    }

    /// Whether the other help texts are worth asking for: only the SQLite-only builds tell
    /// their variants apart by them.
    pub fn needs_more_help(session_help: &str) -> bool {
        let verbs = commands(session_help);
        (verbs.contains(&"resume") || verbs.contains(&"ensure")) && !verbs.contains(&"complete")
    }

    /// The agent process a record names, by lf's id, where this lf names one and it may
    /// still be alive: not on a session lf already reads `closed` (its agent is gone, and
    /// there is no exit left to wait for). lf's id is a UUID string (§10.6); anything else
    /// names no process the tray could find.
    pub fn agent_id<'r>(&self, record: &'r SessionRecord) -> Option<&'r str> {
        if !self.agent_ids || record.state == super::record::State::Closed {
            return None;
        }
        record
            .extra
            .string("agent_process_id")
            .map(str::trim)
            .filter(|id| !id.is_empty())
    }
}

impl Dialect {
    /// Whether a terminal of the person's is attached to the session now: lf lists a live
    /// client's terminal id, or offers Move here (which moves it from that client), or its
    /// state says `active` (before generation E that meant a client).
    ///
    /// A record that names its agent process (E2) offers Move here for every live agent
    /// and reads `active` for it, terminal or not (loopflow-model.md §10.6): there only a
    /// listed terminal id counts. Where the agent itself runs is the engine's to find.
    pub fn attached(&self, record: &SessionRecord) -> bool {
        let terminals = !record.terminal_ids().is_empty();
        if self.agent_ids && record.extra.has("agent_process_id") {
            return terminals;
        }
        let move_here = record
            .action(&super::record::ActionKind::MoveHere)
            .is_some_and(|a| a.unavailable_reason.is_none());
        terminals || move_here || record.state == super::record::State::Active
    }
}

/// lf's help texts, as far as they were asked for.
#[derive(Debug, Default, Clone, Copy)]
pub struct Help<'a> {
    pub session: &'a str,
    pub list: Option<&'a str>,
    pub monitor: Option<&'a str>,
    pub top: Option<&'a str>,
}

/// The first word of each line of a clap help text: its commands (and stray words, which
/// match no verb).
fn commands(help: &str) -> Vec<&str> {
    help.lines()
        .filter_map(|line| line.split_whitespace().next())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const D_SESSION: &str = "Commands:\n  resume  R\n  history  H\n  list  L\n  connect  C\n  ensure  E\n  replace  R\n  rename  R\n  bind  B\n";
    const D_LIST: &str =
        "Options:\n      --json\n      --all\n      --waiting  Only conversations waiting on you\n";
    const D0_LIST: &str =
        "Options:\n      --json\n      --needs-me  Only conversations waiting for review or a reply\n";
    const MONITOR: &str = "Commands:\n  active  A\n  work  W\n";
    const D_TOP: &str = "Commands:\n  session  S\n  monitor  M\n";
    const E_TOP: &str = "Commands:\n  session  S\n  monitor  M\n  history  Process pages\n  desktop  Open Loopflow.app\n\nOptions:\n  -a, --agent <PROVIDER[:MODEL]>\n";

    fn generation(
        session: &str,
        list: Option<&str>,
        monitor: Option<&str>,
        top: Option<&str>,
    ) -> Generation {
        Dialect::from_help(&Help {
            session,
            list,
            monitor,
            top,
        })
        .generation
    }

    #[test]
    fn generations_from_help() {
        let a = "Usage: lf session <COMMAND>\n\nCommands:\n  list      List\n  open      Open\n  approve   Approve\n  iterate   Iterate\n";
        assert_eq!(generation(a, None, None, None), Generation::A);
        let b = "Commands:\n  list  L\n  open  O\n  complete  C\n  rename  R\n  ready  R\n";
        assert_eq!(generation(b, None, None, None), Generation::B);
        let c = "Commands:\n  history  H\n  list  L\n  connect  C\n  ensure  E\n  complete  C\n  rename  R\n  import  I\n";
        assert_eq!(generation(c, None, None, None), Generation::C);
        assert!(!Dialect::needs_more_help(c));
        assert_eq!(generation("garbage", None, None, None), Generation::Unknown);
        assert!(Dialect::needs_more_help(D_SESSION));
        let d = generation(D_SESSION, Some(D_LIST), Some(MONITOR), Some(D_TOP));
        assert_eq!(d, Generation::D);
        let d0 = generation(D_SESSION, Some(D0_LIST), None, Some(D_TOP));
        assert_eq!(d0, Generation::D0);
        // `--waiting` but no `monitor work`: followed as D0 is.
        let no_monitor = Dialect::from_help(&Help {
            session: D_SESSION,
            list: Some(D_LIST),
            monitor: None,
            top: Some(D_TOP),
        });
        assert_eq!(no_monitor.generation, Generation::D);
        assert_eq!(no_monitor.reader_scope, ReaderScope::Missing);
        assert_eq!(no_monitor.quiet, Some(LF_QUIET));
        let e = generation(D_SESSION, Some(D_LIST), Some(MONITOR), Some(E_TOP));
        assert_eq!(e, Generation::E);
        // Any one of E's marks is enough: `--agent` alone, or `desktop` alone.
        let agent_only = "Options:\n  -a, --agent <PROVIDER[:MODEL]>\n";
        let e = generation(D_SESSION, Some(D_LIST), Some(MONITOR), Some(agent_only));
        assert_eq!(e, Generation::E);
    }

    #[test]
    fn each_dialect_says_how_it_is_followed() {
        let files = Dialect::of(Generation::A);
        assert!(files.session_files && files.quiet.is_none());
        assert_eq!(files.list_args, LIST_FILES);
        assert_eq!(
            Dialect::of(Generation::Unknown).flow_decision,
            FlowDecision::ApproveIterate
        );
        assert_eq!(
            Dialect::of(Generation::B).flow_decision,
            FlowDecision::Complete
        );
        for g in [Generation::C, Generation::D0, Generation::D, Generation::E] {
            let d = Dialect::of(g);
            assert!(!d.session_files, "{g:?}");
            assert!(d.list_args.ends_with(&["--limit", "0"]), "{g:?}");
            assert!(!d.list_args.contains(&"--waiting"), "{g:?}");
        }
        assert!(Dialect::of(Generation::C).quiet.is_none());
        assert_eq!(
            Dialect::of(Generation::D).reader_scope,
            ReaderScope::Repository
        );
        // E's scoped reader would sync the person's issue tracker: never started.
        let e = Dialect::of(Generation::E);
        assert_eq!(e.reader_scope, ReaderScope::RepositoryWrites);
        assert!(e.quiet.is_some() && e.closed_means_stopped && e.agent_ids);
        assert!(!Dialect::of(Generation::D).closed_means_stopped);
        // lf's `store_revisions` came with D's reader: C and D0 are followed by who wrote.
        for g in [Generation::A, Generation::B, Generation::C, Generation::D0] {
            assert!(!Dialect::of(g).store_revisions, "{g:?}");
        }
        assert!(Dialect::of(Generation::D).store_revisions && e.store_revisions);
    }

    /// One generation's profile: session files, list, paging (`None`: no `--page`; else
    /// the page size), reader scope, quiet time (s), Flow decision, `closed` means stopped,
    /// agent ids.
    type Row = (
        bool,
        &'static [&'static str],
        Option<u32>,
        ReaderScope,
        Option<u64>,
        FlowDecision,
        bool,
        bool,
    );

    /// Each generation's profile as loopflow-model.md gives it, one row each. Any change
    /// to a generation's rules has to change its row here too; a new generation does not
    /// compile until it has one.
    #[rustfmt::skip]
    fn contract(g: Generation) -> Row {
        use FlowDecision::{ApproveIterate, Complete, LfOwn};
        use ReaderScope::{Missing, Repository, RepositoryWrites};
        match g {
            // §2, §4.1: files; `approve` / `iterate`.
            Generation::A =>  (true,  LIST_FILES, None,      Missing,          None,      ApproveIterate, false, false),
            // §4.2: files; `complete`.
            Generation::B =>  (true,  LIST_FILES, None,      Missing,          None,      Complete,       false, false),
            // §4.3: SQLite, `--page --limit 100 --after`; `complete`.
            Generation::C =>  (false, LIST_STORE, Some(100), Missing,          None,      Complete,       false, false),
            // §9.1, §9.4: no `monitor work`; `WAITING_QUIET_SECONDS` = 120.
            Generation::D0 => (false, LIST_STORE, Some(100), Missing,          Some(120), LfOwn,          false, false),
            // §9.5: a read-only reader per repository.
            Generation::D =>  (false, LIST_STORE, Some(100), Repository,       Some(120), LfOwn,          false, false),
            // §10.3: a repository's reader writes; §10.2, §10.6: `closed`, agent ids.
            Generation::E =>  (false, LIST_STORE, Some(100), RepositoryWrites, Some(120), LfOwn,          true,  true),
            // Read as A; pages as C to E would.
            Generation::Unknown =>
                              (true,  LIST_FILES, Some(100), Missing,          None,      ApproveIterate, false, false),
        }
    }

    const GENERATIONS: [Generation; 7] = [
        Generation::A,
        Generation::B,
        Generation::C,
        Generation::D0,
        Generation::D,
        Generation::E,
        Generation::Unknown,
    ];

    #[test]
    fn every_generation_follows_lf_as_the_contract_says() {
        for g in GENERATIONS {
            let d = Dialect::of(g);
            let paging = match d.paging {
                Paging::Never => None,
                Paging::After { size, .. } => Some(size),
            };
            let row = (
                d.session_files,
                d.list_args,
                paging,
                d.reader_scope,
                d.quiet.map(|q| q.as_secs()),
                d.flow_decision,
                d.closed_means_stopped,
                d.agent_ids,
            );
            assert_eq!(row, contract(g), "{g:?}");
            assert_eq!(d.generation, g);
            assert_eq!(g.is_known(), g != Generation::Unknown, "{g:?}");
        }
    }

    #[test]
    fn the_quiet_recheck_comes_a_second_after_lfs_quiet_time() {
        for g in GENERATIONS {
            let d = Dialect::of(g);
            assert_eq!(
                d.quiet_recheck(),
                d.quiet.map(|q| q + Duration::from_secs(1)),
                "{g:?}"
            );
        }
        assert_eq!(
            Dialect::of(Generation::E).quiet_recheck(),
            Some(Duration::from_secs(121))
        );
        assert_eq!(Dialect::of(Generation::C).quiet_recheck(), None);
        // A stand-in lf's own quiet time counts only where lf has the rule.
        let quick = Some(Duration::from_secs(3));
        let d = Dialect::of(Generation::D).with_quiet(quick);
        assert_eq!(d.quiet_recheck(), Some(Duration::from_secs(4)));
        assert_eq!(Dialect::of(Generation::C).with_quiet(quick).quiet, None);
        assert_eq!(
            Dialect::of(Generation::D).with_quiet(None),
            Dialect::of(Generation::D)
        );
    }

    #[test]
    fn later_pages_keep_the_lists_filters() {
        let d = Dialect::of(Generation::D);
        assert_eq!(
            d.paging.after("S-1").unwrap(),
            [
                "session",
                "list",
                "--json",
                "--all",
                "--interactive",
                "all",
                "--page",
                "--limit",
                "100",
                "--after",
                "S-1"
            ]
        );
        for g in GENERATIONS {
            let d = Dialect::of(g);
            let Some(paged) = d.paging.after("X") else {
                continue;
            };
            // The list's own arguments, with `--limit 0` (every row) for a page's.
            let filters: Vec<&str> = d
                .list_args
                .strip_suffix(&["--limit", "0"])
                .unwrap_or(d.list_args)
                .to_vec();
            assert_eq!(paged[..filters.len()], filters, "{g:?}");
            assert_eq!(
                paged[filters.len()..],
                ["--page", "--limit", "100", "--after", "X"]
            );
        }
        assert_eq!(Dialect::of(Generation::B).paging.after("X"), None);
    }

    #[test]
    fn agent_ids_only_where_lf_names_them() {
        const ID: &str = "44444444-4444-4444-8444-444444444444";
        let mut record =
            crate::lf::record::test_record("s", None, crate::lf::record::State::Active);
        record.set_lf_field("agent_process_id", ID);
        let e = Dialect::of(Generation::E);
        assert_eq!(e.agent_id(&record), Some(ID));
        assert_eq!(Dialect::of(Generation::D).agent_id(&record), None);
        record.state = crate::lf::record::State::Other("interrupted".into());
        assert_eq!(e.agent_id(&record), Some(ID), "E2a's interrupted");
        record.state = crate::lf::record::State::Closed;
        assert_eq!(e.agent_id(&record), None, "known dead");
        record.state = crate::lf::record::State::Active;
        for nothing in [serde_json::Value::Null, "".into(), "  ".into(), 4242.into()] {
            record.set_lf_field("agent_process_id", nothing.clone());
            assert_eq!(e.agent_id(&record), None, "{nothing}");
        }
    }
}
