//! The stand-in `lf` of generations C, D0, D and E (loopflow-model.md §4.3, §4.4, §9,
//! §10): the Session inventory in SQLite, `connect`, `rename`, C's `complete`/`ready`,
//! D's and E's `monitor work`, and the hidden `lf sim …` verbs through which tests play
//! an agent's lf.
//!
//! E is D plus §10: `history` and `desktop` at the top, `-a/--agent`, `observe-status`
//! (refused here: only an agent's terminal may call it), `program_status` in records,
//! and an agent process whose liveness is read at query time. E1 reports
//! `provider_generation` and keeps `interrupted`; E2 reports `agent_process_id` (lf's
//! Process id of the agent, a UUID) and lets the agent's liveness decide `state` (a dead
//! agent reads `closed`) and, through `state`, the actions; E2a is E2 that may still
//! print `interrupted`. E2's agents run as lf's children (`agent.rs`); E2's `lf session
//! ensure <ID>` runs one in a detached tmux session `lf-human-<12>`.

use std::collections::{BTreeMap, BTreeSet};
use std::env;
use std::io::{self, BufRead, Write};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};
use serde::Serialize;
use serde_json::{json, Value};

use crate::home::not_found;
use crate::records::WorkRef;
use crate::store::{
    repo_of, Activity, Liveness, Query, Row, SessionSpec, StatusReport, Store, TitleSource,
    WaitingRule, DEFAULT_PROVIDER, PROGRAM_KINDS, PROGRAM_STATES,
};

pub(crate) const VERSION: &str = "lf 0.63.0\n";

/// Which lf the stand-in plays (`LF_SIM_GENERATION`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LfGeneration {
    A,
    C,
    /// D with `--needs-me`, before `--waiting` and `lf monitor`.
    D0,
    D,
    /// E's first variant: `provider_generation`, `flow_process_lfid`, `interrupted`.
    E1,
    /// E's intermediate build: E2's `agent_process_id` and liveness, but `interrupted`
    /// may still be printed (§10.6).
    E2a,
    /// E's second variant (also `e`): `agent_process_id`, `flow_lf_process_id`, and a
    /// `state` the agent's liveness decides.
    E2,
}

impl LfGeneration {
    pub(crate) fn from_env() -> Result<LfGeneration, String> {
        match env::var("LF_SIM_GENERATION").as_deref() {
            Err(_) | Ok("") | Ok("a") => Ok(LfGeneration::A),
            Ok("c") => Ok(LfGeneration::C),
            Ok("d0") => Ok(LfGeneration::D0),
            Ok("d") => Ok(LfGeneration::D),
            Ok("e1") => Ok(LfGeneration::E1),
            Ok("e2a") => Ok(LfGeneration::E2a),
            Ok("e2") | Ok("e") => Ok(LfGeneration::E2),
            Ok(other) => Err(format!(
                "LF_SIM_GENERATION is a, c, d0, d, e1 or e2 (e), or e2a, not {other:?}"
            )),
        }
    }

    /// D0, D and their successors: Sessions only in SQLite under `LF_HOME`, D's verbs.
    fn is_d(self) -> bool {
        matches!(
            self,
            LfGeneration::D0
                | LfGeneration::D
                | LfGeneration::E1
                | LfGeneration::E2a
                | LfGeneration::E2
        )
    }

    pub(crate) fn is_e(self) -> bool {
        matches!(
            self,
            LfGeneration::E1 | LfGeneration::E2a | LfGeneration::E2
        )
    }

    /// E2a and E2: agents are lf Processes with UUIDs, whose liveness decides `state`.
    pub(crate) fn has_agent_processes(self) -> bool {
        matches!(self, LfGeneration::E2a | LfGeneration::E2)
    }

    /// lf's `store_revisions` table: D and E (lf's reader came with it), not C or D0.
    pub(crate) fn has_store_revisions(self) -> bool {
        self.has_monitor()
    }

    /// `--waiting` and `lf monitor`: D and E.
    fn has_monitor(self) -> bool {
        matches!(self, LfGeneration::D) || self.is_e()
    }
}

/// Where this generation's lf keeps its database: D reads `LF_HOME` only (§9.7).
pub(crate) fn db_path(generation: LfGeneration, home: &crate::SimHome) -> PathBuf {
    if generation.is_d() {
        home.home().join("loopflow.db")
    } else {
        home.db_path().to_path_buf()
    }
}

// ---- Help ----

fn top_help(generation: LfGeneration) -> String {
    if generation.is_e() {
        return TOP_HELP_E.into();
    }
    let monitor = if generation == LfGeneration::D {
        "  monitor  Stream planning and activity for the selected Work\n"
    } else {
        ""
    };
    format!(
        "lf (simulated by lf-sim): Loopflow's command line\n\n\
         Usage: lf [OPTIONS] <COMMAND>\n\n\
         Commands:\n  session  Work with Sessions\n{monitor}\n\
         Options:\n  -h, --help     Print help\n  -V, --version  Print version\n"
    )
}

/// §10.1: `history` and `desktop` join the commands; `-a/--agent` replaces `--model`.
const TOP_HELP_E: &str = "lf (simulated by lf-sim): Loopflow's command line

Usage: lf [OPTIONS] <COMMAND>

Commands:
  session  Work with Sessions
  monitor  Stream planning and activity for the selected Work
  history  Process pages, show, usage and replay
  desktop  Open Loopflow.app (macOS only)

Options:
  -a, --agent <PROVIDER[:MODEL]>  The agent to run, e.g. codex or claude:opus
  -h, --help                      Print help
  -V, --version                   Print version
";

const HISTORY_HELP: &str = "Process pages, show, usage and replay

Usage: lf history <COMMAND>

Commands:
  pages   List the recorded Processes, a page at a time
  show    Show one Process
  usage   Show token and cost usage
  replay  Replay a Process's stream
";

const DESKTOP_HELP: &str = "Open Loopflow.app (macOS only)

Usage: lf desktop <COMMAND>

Commands:
  open  Open Loopflow.app, or a Task's Session in it (--session ID)
";

const OBSERVE_STATUS_REFUSED: &str = "lf session observe-status is how an agent's terminal \
    reports its program status; a tray must never call it (the simulated lf refuses it)";

fn session_help(generation: LfGeneration) -> &'static str {
    if generation.is_e() {
        "Work with Sessions

Usage: lf session <COMMAND>

Commands:
  resume          Resume a Session by id, or the last interactive Session in this worktree
  history         Show a Session's history
  list            List Sessions
  connect         Connect this terminal to a Session
  ensure          Ensure the one ongoing conversation of a scope
  replace         Replace a scope's ongoing conversation with a new one
  rename          Name a Session
  bind            Bind a Session to a Task; permanent
  observe-status  Report an agent program's status from its terminal
"
    } else if generation.is_d() {
        "Work with Sessions

Usage: lf session <COMMAND>

Commands:
  resume   Resume a Session by id, or the last interactive Session in this worktree
  history  Show a Session's history
  list     List Sessions
  connect  Connect this terminal to a Session
  ensure   Ensure the one ongoing conversation of a scope
  replace  Replace a scope's ongoing conversation with a new one
  rename   Name a Session
  bind     Bind a Session to a Task; permanent
"
    } else {
        "Work with Sessions

Usage: lf session <COMMAND>

Commands:
  history   Show a Session's history
  list      List Sessions
  connect   Connect this terminal to a Session
  ensure    Ensure the one ongoing conversation of a scope
  replace   Replace a scope's ongoing conversation with a new one
  complete  Finish a review or conversation
  rename    Name a Session
  bind      Bind a Session to a Task; permanent
  import    Import the Session files of older lf versions, once
  ready     Mark this Session ready for review
"
    }
}

fn list_help(generation: LfGeneration) -> String {
    let filter = match generation {
        LfGeneration::D | LfGeneration::E1 | LfGeneration::E2a | LfGeneration::E2 => {
            "      --waiting                    Only conversations waiting on you\n"
        }
        LfGeneration::D0 => {
            "      --needs-me                   Only conversations waiting for review or a reply\n"
        }
        _ => "",
    };
    format!(
        "List Sessions

Usage: {LIST_USAGE}

Options:
      --json                       Print JSON
      --all                        Every repository's Sessions, not only this one's
      --interactive <INTERACTIVE>  Interactive conversations, headless Runs or both [default: true] [possible values: true, false, all]
      --history                    Include completed conversations and historical reviews
{filter}      --limit <LIMIT>              At most this many rows; 0 lists all [default: 100]
      --offset <OFFSET>            Skip this many rows; not with --page [default: 0]
      --page                       Print a stable-ID page {{\"entries\": [...], \"next\": ID|null}}; needs --json
      --after <AFTER>              Continue after the previous page's next; needs --page
      --task <TASK>                Only Sessions of this Task (task id, issue id or identifier)
      --orphan                     Only Sessions with no Task
      --search <SEARCH>            Only Sessions whose title or id contains this
  -h, --help                       Print help
"
    )
}

const MONITOR_HELP: &str = "Stream planning and activity for the selected Work

Usage: lf monitor <COMMAND>

Commands:
  work    Stream planning and activity for the selected Work, each part again only when it changes
  active  Stream the live Sessions of this Machine
";

/// §10.1: `monitor` keeps `active`, `work`, `ps`, `top` and `prune`.
const MONITOR_HELP_E: &str = "Stream planning and activity for the selected Work

Usage: lf monitor <COMMAND>

Commands:
  active  Stream the live Sessions of this Machine
  work    Stream planning and activity for the selected Work, each part again only when it changes
  ps      List this Machine's lf Processes
  top     Watch this Machine's lf Processes
  prune   Remove the records of finished Processes
";

const LIST_USAGE: &str = "lf session list [OPTIONS]";

// ---- Parsing ----

/// A usage error: the full text for stderr (exit 2).
pub(crate) struct Usage(pub String);

fn usage_error(message: &str, usage: &str) -> Usage {
    Usage(format!(
        "error: {message}\n\nUsage: {usage}\n\nFor more information, try '--help'.\n"
    ))
}

#[derive(Default)]
struct Words {
    flags: BTreeSet<String>,
    options: BTreeMap<String, String>,
    positional: Vec<String>,
    help: bool,
}

impl Words {
    fn has(&self, flag: &str) -> bool {
        self.flags.contains(flag)
    }

    fn value(&self, option: &str) -> Option<String> {
        self.options.get(option).cloned()
    }
}

/// clap's reading of `words`: `flags` take no value, `options` take one (`--o v` or
/// `--o=v`), and after `--` every word is positional.
fn split(words: &[String], usage: &str, flags: &[&str], options: &[&str]) -> Result<Words, Usage> {
    let mut out = Words::default();
    let mut words = words.iter();
    while let Some(word) = words.next() {
        if word == "--" {
            out.positional.extend(words.by_ref().cloned());
            break;
        }
        if !(word.len() > 1 && word.starts_with('-')) {
            out.positional.push(word.clone());
            continue;
        }
        if matches!(word.as_str(), "--help" | "-h") {
            out.help = true;
            continue;
        }
        let (name, inline) = match word.split_once('=') {
            Some((name, value)) => (name, Some(value.to_string())),
            None => (word.as_str(), None),
        };
        if flags.contains(&name) && inline.is_none() {
            out.flags.insert(name.to_string());
        } else if options.contains(&name) {
            let value = match inline {
                Some(value) => value,
                None => words.next().cloned().ok_or_else(|| {
                    usage_error(
                        &format!(
                            "a value is required for '{name} <{}>' but none was supplied",
                            placeholder(name)
                        ),
                        usage,
                    )
                })?,
            };
            if out.options.insert(name.to_string(), value).is_some() {
                return Err(usage_error(
                    &format!(
                        "the argument '{name} <{}>' cannot be used multiple times",
                        placeholder(name)
                    ),
                    usage,
                ));
            }
        } else {
            let message = format!(
                "unexpected argument '{word}' found\n\n  tip: to pass '{word}' as a value, use '-- {word}'"
            );
            return Err(usage_error(&message, usage));
        }
    }
    Ok(out)
}

fn placeholder(option: &str) -> String {
    option
        .trim_start_matches('-')
        .replace('-', "_")
        .to_uppercase()
}

fn number(words: &Words, option: &str, default: u64, usage: &str) -> Result<u64, Usage> {
    match words.value(option) {
        None => Ok(default),
        Some(text) => text.parse().map_err(|e| {
            usage_error(
                &format!(
                    "invalid value '{text}' for '{option} <{}>': {e}",
                    placeholder(option)
                ),
                usage,
            )
        }),
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct ListArgs {
    json: bool,
    all: bool,
    interactive: Option<bool>,
    history: bool,
    waiting: bool,
    limit: u64,
    offset: u64,
    page: bool,
    after: Option<String>,
    task: Option<String>,
    orphan: bool,
    search: Option<String>,
}

enum Command {
    Print(String),
    List(ListArgs),
    Connect {
        id: String,
        json: bool,
        mode: Option<&'static str>,
    },
    Rename {
        id: String,
        name: String,
        json: bool,
        suggest: bool,
    },
    Complete {
        id: String,
    },
    /// E2a/E2: `lf session ensure <ID>`, the Session's conversation in a detached tmux
    /// session of its own.
    Ensure {
        id: String,
    },
    Ready {
        summary: String,
    },
    Unsimulated(String),
    /// A verb that answers an error here, e.g. E's `desktop` off macOS.
    Refused(String),
    Monitor {
        watch: bool,
        json: bool,
    },
    /// E2: `lf monitor ps --json`.
    MonitorPs,
    /// E2: `lf monitor active --json`, one document.
    MonitorActive,
    /// E2: `lf -a <PROVIDER[:MODEL]>` with no command: a new Session here, its agent run
    /// on this terminal.
    Start {
        provider: String,
        model: Option<String>,
    },
    Sim(Sim),
}

enum Sim {
    New(SessionSpec),
    /// Many Sessions at once (`S-00000`…), every `ask_every`th asking: a home at the scale
    /// of issue 47 in one transaction, not ten thousand processes.
    Many(Vec<SessionSpec>, usize),
    Activity(String, Activity),
    Attach(String, u32),
    Detach(String),
    Complete(String),
    Interrupt(String),
    Rename(String, String),
    Ready(String, String),
    Attention(String, Option<String>),
    Status(String, StatusReport),
    Agent(String, Option<u32>),
    /// E2: a detached headless agent for the Session.
    Headless(String),
}

fn parse(generation: LfGeneration, args: &[String]) -> Result<Command, Usage> {
    let top_usage = "lf [OPTIONS] <COMMAND>";
    let Some((first, rest)) = args.split_first() else {
        return Err(Usage(top_help(generation)));
    };
    match first.as_str() {
        "--version" | "-V" => Ok(Command::Print(VERSION.into())),
        "--help" | "-h" | "help" => Ok(Command::Print(top_help(generation))),
        // E's global agent flag takes its value and changes nothing the stand-in does.
        // E2 without a command starts a Session in this directory, as `lf -a claude` does.
        "-a" | "--agent" if generation.is_e() => match rest.split_first() {
            Some((agent, [])) if generation.has_agent_processes() => Ok(start(agent)),
            Some((_, rest)) => parse(generation, rest),
            None => Err(usage_error(
                "a value is required for '--agent <PROVIDER[:MODEL]>' but none was supplied",
                top_usage,
            )),
        },
        agent if generation.is_e() && agent.starts_with("--agent=") => {
            if rest.is_empty() && generation.has_agent_processes() {
                return Ok(start(&agent["--agent=".len()..]));
            }
            parse(generation, rest)
        }
        "session" => parse_session(generation, rest),
        "monitor" if generation.has_monitor() => parse_monitor(generation, rest),
        "history" if generation.is_e() => parse_history(rest),
        "desktop" if generation.is_e() => Ok(match rest.first().map(String::as_str) {
            Some("--help" | "-h" | "help") => Command::Print(DESKTOP_HELP.into()),
            _ => Command::Refused(format!(
                "lf desktop needs macOS; this Machine runs {}",
                env::consts::OS
            )),
        }),
        "sim" => parse_sim(generation, rest),
        other => Err(usage_error(
            &format!("unrecognized subcommand '{other}'"),
            top_usage,
        )),
    }
}

fn start(agent: &str) -> Command {
    let (provider, model) = match agent.split_once(':') {
        Some((provider, model)) => (provider.to_string(), Some(model.to_string())),
        None => (agent.to_string(), None),
    };
    Command::Start { provider, model }
}

fn observe_status_help(generation: LfGeneration) -> String {
    let (flag, help) = if generation.has_agent_processes() {
        (
            "--agent-process <ID>",
            "The lf Process id of the agent whose status this is",
        )
    } else {
        (
            "--generation <N>",
            "The provider generation whose status this is",
        )
    };
    format!(
        "Report an agent program's status from its terminal\n\n\
         Usage: lf session observe-status [OPTIONS] {flag} <SESSION>\n\n\
         Options:\n      {flag:<22}{help}\n  -h, --help              Print help\n"
    )
}

fn exactly<const N: usize>(
    words: Words,
    names: [&str; N],
    usage: &str,
) -> Result<[String; N], Usage> {
    let missing: Vec<&str> = names.iter().skip(words.positional.len()).copied().collect();
    if !missing.is_empty() {
        return Err(usage_error(
            &format!(
                "the following required arguments were not provided:\n  {}",
                missing.join("\n  ")
            ),
            usage,
        ));
    }
    if let Some(extra) = words.positional.get(N) {
        return Err(usage_error(
            &format!("unexpected argument '{extra}' found"),
            usage,
        ));
    }
    Ok(std::array::from_fn(|i| words.positional[i].clone()))
}

fn parse_session(generation: LfGeneration, args: &[String]) -> Result<Command, Usage> {
    let session_usage = "lf session <COMMAND>";
    let Some((verb, rest)) = args.split_first() else {
        return Err(Usage(session_help(generation).into()));
    };
    let d = generation.is_d();
    let c = generation == LfGeneration::C;
    match verb.as_str() {
        "--help" | "-h" | "help" => Ok(Command::Print(session_help(generation).into())),
        "list" => parse_list(generation, rest),
        // ARCH: `connect` keeps `open` as an alias.
        "connect" | "open" => {
            let usage = "lf session connect [OPTIONS] <ID>";
            let words = split(rest, usage, &["--json", "--replace", "--try"], &[])?;
            if words.help {
                return Ok(Command::Print(format!(
                    "Connect this terminal to a Session\n\nUsage: {usage}\n"
                )));
            }
            let mode = match (words.has("--replace"), words.has("--try")) {
                (true, true) => {
                    return Err(usage_error(
                        "the argument '--replace' cannot be used with '--try'",
                        usage,
                    ))
                }
                (true, false) => Some("--replace"),
                (false, true) => Some("--try"),
                (false, false) => None,
            };
            let json = words.has("--json");
            let [id] = exactly(words, ["<ID>"], usage)?;
            Ok(Command::Connect { id, json, mode })
        }
        "rename" => {
            let usage = "lf session rename [OPTIONS] <ID> <NAME>...";
            let words = split(rest, usage, &["--json", "--suggest"], &[])?;
            if words.help {
                return Ok(Command::Print(format!(
                    "Name a Session\n\nUsage: {usage}\n"
                )));
            }
            if words.positional.len() < 2 {
                let missing = if words.positional.is_empty() {
                    "<ID>\n  <NAME>..."
                } else {
                    "<NAME>..."
                };
                return Err(usage_error(
                    &format!("the following required arguments were not provided:\n  {missing}"),
                    usage,
                ));
            }
            Ok(Command::Rename {
                json: words.has("--json"),
                suggest: words.has("--suggest"),
                id: words.positional[0].clone(),
                name: words.positional[1..].join(" "),
            })
        }
        "complete" if c => {
            let usage = "lf session complete <ID>";
            let words = split(rest, usage, &[], &[])?;
            if words.help {
                return Ok(Command::Print(format!(
                    "Finish a review or conversation\n\nUsage: {usage}\n"
                )));
            }
            let [id] = exactly(words, ["<ID>"], usage)?;
            Ok(Command::Complete { id })
        }
        "ready" if c => {
            let usage = "lf session ready <SUMMARY>...";
            let words = split(rest, usage, &[], &[])?;
            if words.help {
                return Ok(Command::Print(format!(
                    "Mark this Session ready for review\n\nUsage: {usage}\n"
                )));
            }
            if words.positional.is_empty() {
                return Err(usage_error(
                    "the following required arguments were not provided:\n  <SUMMARY>...",
                    usage,
                ));
            }
            Ok(Command::Ready {
                summary: words.positional.join(" "),
            })
        }
        // Only E2's tmux-run conversation is simulated, and by a Session id: real lf names
        // a scope (`[--wave W] [--task T] [--choose SESSION]`, §9.1), which the stand-in
        // has no Waves or Tasks to resolve.
        "ensure" if generation.has_agent_processes() => {
            let usage = "lf session ensure <ID>";
            let words = split(rest, usage, &[], &[])?;
            if words.help {
                return Ok(Command::Print(format!(
                    "Ensure the one ongoing conversation of a scope\n\nUsage: {usage}\n"
                )));
            }
            let [id] = exactly(words, ["<ID>"], usage)?;
            Ok(Command::Ensure { id })
        }
        "history" | "ensure" | "replace" | "bind" => Ok(Command::Unsimulated(verb.clone())),
        // Recorded in argv.jsonl and as a Process like every call, then refused.
        "observe-status" if generation.is_e() => {
            if rest.iter().any(|w| w == "--help" || w == "-h") {
                return Ok(Command::Print(observe_status_help(generation)));
            }
            Ok(Command::Refused(OBSERVE_STATUS_REFUSED.into()))
        }
        "resume" if d => Ok(Command::Unsimulated(verb.clone())),
        "import" if c => Ok(Command::Unsimulated(verb.clone())),
        other => Err(usage_error(
            &format!("unrecognized subcommand '{other}'"),
            session_usage,
        )),
    }
}

fn parse_list(generation: LfGeneration, args: &[String]) -> Result<Command, Usage> {
    let usage = LIST_USAGE;
    let mut flags = vec!["--json", "--all", "--history", "--page", "--orphan"];
    let filter = match generation {
        LfGeneration::D | LfGeneration::E1 | LfGeneration::E2a | LfGeneration::E2 => {
            Some("--waiting")
        }
        LfGeneration::D0 => Some("--needs-me"),
        _ => None,
    };
    flags.extend(filter);
    let options = [
        "--interactive",
        "--limit",
        "--offset",
        "--after",
        "--task",
        "--search",
    ];
    let words = split(args, usage, &flags, &options)?;
    if words.help {
        return Ok(Command::Print(list_help(generation)));
    }
    if let Some(word) = words.positional.first() {
        return Err(usage_error(
            &format!("unexpected argument '{word}' found"),
            usage,
        ));
    }
    let interactive = match words.value("--interactive").as_deref() {
        None | Some("true") => Some(true),
        Some("false") => Some(false),
        Some("all") => None,
        Some(other) => {
            return Err(usage_error(
                &format!(
                    "invalid value '{other}' for '--interactive <INTERACTIVE>'\n  [possible values: true, false, all]"
                ),
                usage,
            ))
        }
    };
    let page = words.has("--page");
    if page && !words.has("--json") {
        return Err(usage_error(
            "the following required arguments were not provided:\n  --json",
            "lf session list --json --page [OPTIONS]",
        ));
    }
    if page && words.value("--offset").is_some() {
        return Err(usage_error(
            "the argument '--page' cannot be used with '--offset <OFFSET>'",
            usage,
        ));
    }
    if words.value("--after").is_some() && !page {
        return Err(usage_error(
            "the following required arguments were not provided:\n  --page",
            "lf session list --after <AFTER> --page [OPTIONS]",
        ));
    }
    Ok(Command::List(ListArgs {
        json: words.has("--json"),
        all: words.has("--all"),
        interactive,
        history: words.has("--history"),
        waiting: filter.is_some_and(|f| words.has(f)),
        limit: number(&words, "--limit", 100, usage)?,
        offset: number(&words, "--offset", 0, usage)?,
        page,
        after: words.value("--after"),
        task: words.value("--task"),
        orphan: words.has("--orphan"),
        search: words.value("--search"),
    }))
}

fn parse_monitor(generation: LfGeneration, args: &[String]) -> Result<Command, Usage> {
    let help = if generation.is_e() {
        MONITOR_HELP_E
    } else {
        MONITOR_HELP
    };
    let Some((verb, rest)) = args.split_first() else {
        return Err(Usage(help.into()));
    };
    match verb.as_str() {
        "--help" | "-h" | "help" => Ok(Command::Print(help.into())),
        "work" => {
            let usage = "lf monitor work [OPTIONS]";
            let words = split(rest, usage, &["--watch", "--json"], &[])?;
            if words.help {
                return Ok(Command::Print(format!(
                    "Stream planning and activity for the selected Work, each part again only when it changes\n\n\
                     Usage: {usage}\n\nOptions:\n      --watch  Keep streaming until stdin closes\n      --json   Print NDJSON frames\n"
                )));
            }
            if let Some(word) = words.positional.first() {
                return Err(usage_error(
                    &format!("unexpected argument '{word}' found"),
                    usage,
                ));
            }
            Ok(Command::Monitor {
                watch: words.has("--watch"),
                json: words.has("--json"),
            })
        }
        "ps" | "active" if generation.has_agent_processes() => {
            let usage = format!("lf monitor {verb} --json");
            let words = split(rest, &usage, &["--json"], &[])?;
            if words.help {
                return Ok(Command::Print(format!(
                    "List this Machine's lf Processes\n\nUsage: {usage}\n"
                )));
            }
            if let Some(word) = words.positional.first() {
                return Err(usage_error(
                    &format!("unexpected argument '{word}' found"),
                    &usage,
                ));
            }
            if !words.has("--json") {
                return Ok(Command::Unsimulated(format!(
                    "monitor {verb} without --json"
                )));
            }
            Ok(if verb == "ps" {
                Command::MonitorPs
            } else {
                Command::MonitorActive
            })
        }
        "active" => Ok(Command::Unsimulated("monitor active".into())),
        "ps" | "top" | "prune" if generation.is_e() => {
            Ok(Command::Unsimulated(format!("monitor {verb}")))
        }
        other => Err(usage_error(
            &format!("unrecognized subcommand '{other}'"),
            "lf monitor <COMMAND>",
        )),
    }
}

fn parse_history(args: &[String]) -> Result<Command, Usage> {
    let Some((verb, _)) = args.split_first() else {
        return Err(Usage(HISTORY_HELP.into()));
    };
    match verb.as_str() {
        "--help" | "-h" | "help" => Ok(Command::Print(HISTORY_HELP.into())),
        "pages" | "show" | "usage" | "replay" => {
            Ok(Command::Unsimulated(format!("history {verb}")))
        }
        other => Err(usage_error(
            &format!("unrecognized subcommand '{other}'"),
            "lf history <COMMAND>",
        )),
    }
}

fn parse_sim(generation: LfGeneration, args: &[String]) -> Result<Command, Usage> {
    let usage = "lf sim <COMMAND>";
    let Some((verb, rest)) = args.split_first() else {
        return Err(usage_error("a sim verb is required", usage));
    };
    let c = generation == LfGeneration::C;
    let e = generation.is_e();
    let one = |name: &str| -> Result<String, Usage> {
        let usage = format!("lf sim {name} <ID>");
        let [id] = exactly(split(rest, &usage, &[], &[])?, ["<ID>"], &usage)?;
        Ok(id)
    };
    let two = |name: &str, second: &str| -> Result<(String, String), Usage> {
        let usage = format!("lf sim {name} <ID> {second}");
        let words = split(rest, &usage, &[], &[])?;
        if words.positional.len() < 2 {
            return Err(usage_error(
                &format!("the following required arguments were not provided:\n  <ID>\n  {second}"),
                &usage,
            ));
        }
        Ok((words.positional[0].clone(), words.positional[1..].join(" ")))
    };
    let sim = match verb.as_str() {
        "new" => {
            let usage = "lf sim new <ID> --title <TITLE> --cwd <DIR> [OPTIONS]";
            let mut options = vec![
                "--title",
                "--cwd",
                "--repo",
                "--provider",
                "--model",
                "--work-path",
                "--task",
            ];
            if c {
                options.push("--kind");
            }
            let words = split(rest, usage, &["--headless"], &options)?;
            let headless = words.has("--headless");
            let (title, cwd, repo) = (
                words.value("--title"),
                words.value("--cwd"),
                words.value("--repo"),
            );
            let (provider, model) = (words.value("--provider"), words.value("--model"));
            let (work_path, task, kind) = (
                words.value("--work-path"),
                words.value("--task"),
                words.value("--kind"),
            );
            let [id] = exactly(words, ["<ID>"], usage)?;
            let cwd = match cwd {
                Some(dir) => std::path::absolute(dir).unwrap_or_default(),
                None => env::current_dir().unwrap_or_default(),
            };
            let mut spec = SessionSpec::new(id.clone(), title.unwrap_or(id), cwd);
            if let Some(repo) = repo {
                let repo = PathBuf::from(repo);
                spec.repo =
                    Some(repo_of(&repo).unwrap_or_else(|| repo.canonicalize().unwrap_or(repo)));
            }
            spec.interactive = !headless;
            spec.provider = provider;
            spec.model = model;
            spec.work_path = work_path;
            spec.task = task;
            spec.kind = if c {
                Some(kind.unwrap_or_else(|| "conversation".into()))
            } else {
                None
            };
            Sim::New(spec)
        }
        "many" => {
            let usage = "lf sim many <COUNT> --cwd <DIR> [--ask-every <N>]";
            let words = split(rest, usage, &[], &["--cwd", "--ask-every"])?;
            let cwd = words.value("--cwd").map(PathBuf::from).unwrap_or_default();
            let every = words.value("--ask-every");
            let [count] = exactly(words, ["<COUNT>"], usage)?;
            let number = |text: &str| {
                text.parse::<usize>()
                    .map_err(|e| usage_error(&format!("invalid value '{text}': {e}"), usage))
            };
            let cwd = std::path::absolute(cwd).unwrap_or_default();
            let specs = (0..number(&count)?)
                .map(|i| {
                    let id = format!("S-{i:05}");
                    SessionSpec::new(id.clone(), format!("Session {id}"), cwd.clone())
                })
                .collect();
            Sim::Many(specs, number(every.as_deref().unwrap_or("0"))?)
        }
        "ask" => Sim::Activity(one("ask")?, Activity::Ask),
        "hand-back" => Sim::Activity(one("hand-back")?, Activity::HandBack),
        "working" => Sim::Activity(one("working")?, Activity::Working),
        "quiet" => Sim::Activity(one("quiet")?, Activity::Quiet),
        "attach" => {
            let (id, pid) = two("attach", "<PID>")?;
            let pid = pid.parse().map_err(|e| {
                usage_error(
                    &format!("invalid value '{pid}' for '<PID>': {e}"),
                    "lf sim attach <ID> <PID>",
                )
            })?;
            Sim::Attach(id, pid)
        }
        "detach" => Sim::Detach(one("detach")?),
        "complete" => Sim::Complete(one("complete")?),
        "interrupt" => Sim::Interrupt(one("interrupt")?),
        "rename" => {
            let (id, title) = two("rename", "<TITLE>...")?;
            Sim::Rename(id, title)
        }
        "ready" if c => {
            let (id, summary) = two("ready", "<SUMMARY>...")?;
            Sim::Ready(id, summary)
        }
        "attention" if c => {
            let (id, attention) = two("attention", "review|reply|none")?;
            Sim::Attention(id, (attention != "none").then_some(attention))
        }
        "status" if e => {
            let usage = "lf sim status <ID> <STATE> [--kind <KIND>] [--title <TITLE>] \
                         [--msg <MSG>] [--app <APP>] [--progress <PROGRESS>] [--id <REPORT>]";
            let options = ["--kind", "--title", "--msg", "--app", "--progress", "--id"];
            let words = split(rest, usage, &[], &options)?;
            let progress = match words.value("--progress") {
                None => None,
                Some(text) => Some(text.parse().map_err(|e| {
                    usage_error(
                        &format!("invalid value '{text}' for '--progress <PROGRESS>': {e}"),
                        usage,
                    )
                })?),
            };
            let mut report = StatusReport::new("");
            report.id = words.value("--id").unwrap_or_default();
            report.kind = words.value("--kind");
            report.progress = progress;
            report.app = words.value("--app");
            report.title = words.value("--title");
            report.msg = words.value("--msg");
            let [id, state] = exactly(words, ["<ID>", "<STATE>"], usage)?;
            for (value, allowed, name) in [
                (Some(&state), &PROGRAM_STATES[..], "<STATE>"),
                (report.kind.as_ref(), &PROGRAM_KINDS[..], "--kind <KIND>"),
            ] {
                if let Some(value) = value.filter(|v| !allowed.contains(&v.as_str())) {
                    return Err(usage_error(
                        &format!(
                            "invalid value '{value}' for '{name}'\n  [possible values: {}]",
                            allowed.join(", ")
                        ),
                        usage,
                    ));
                }
            }
            report.state = state;
            Sim::Status(id, report)
        }
        "agent" if e => {
            let usage = "lf sim agent <ID> <PID|none|headless>";
            let [id, pid] = exactly(
                split(rest, usage, &[], &[])?,
                ["<ID>", "<PID|none|headless>"],
                usage,
            )?;
            let pid = match pid.as_str() {
                "headless" if generation.has_agent_processes() => {
                    return Ok(Command::Sim(Sim::Headless(id)))
                }
                "none" => None,
                _ => Some(pid.parse().map_err(|e| {
                    usage_error(
                        &format!("invalid value '{pid}' for '<PID|none|headless>': {e}"),
                        usage,
                    )
                })?),
            };
            Sim::Agent(id, pid)
        }
        other => {
            return Err(usage_error(
                &format!("unrecognized subcommand '{other}'"),
                usage,
            ))
        }
    };
    Ok(Command::Sim(sim))
}

// ---- Records ----

#[derive(Serialize, Clone, PartialEq)]
pub(crate) struct Action {
    kind: &'static str,
    label: &'static str,
    help: &'static str,
    unavailable_reason: Option<&'static str>,
}

const ACTIVE_ELSEWHERE: &str =
    "This Session is active in another terminal; use Move here to transfer it";
const NOT_READY: &str = "The session agent has not marked this ready";

fn actions(active: bool) -> Vec<Action> {
    let mut actions = vec![Action {
        kind: "open",
        label: "Open here",
        help: "Open this Session in a terminal",
        unavailable_reason: active.then_some(ACTIVE_ELSEWHERE),
    }];
    if active {
        actions.push(Action {
            kind: "move_here",
            label: "Move here",
            help: "Stop the other client and resume here; unsent text there is lost",
            unavailable_reason: None,
        });
    }
    actions
}

#[derive(Serialize, Clone, PartialEq)]
struct Workspace {
    machine_id: &'static str,
    worktree: String,
    task_id: Option<String>,
    unavailable: Option<String>,
}

/// HS's `SessionRecord` (§9.3), every key present, in serde's order.
#[derive(Serialize, Clone, PartialEq)]
pub(crate) struct RecordD {
    primary_scope: Option<String>,
    attention: Option<&'static str>,
    task_primary: bool,
    task_ids: Vec<String>,
    id: String,
    workspace: Option<Workspace>,
    interactive: bool,
    work: Option<WorkRef>,
    wave_id: Option<String>,
    work_path: Option<String>,
    actions: Vec<Action>,
    title: String,
    title_source: String,
    flow_membership: Value,
    detail: String,
    provider: Option<String>,
    cwd: String,
    state: &'static str,
    ready_summary: Option<String>,
    open_argv: Vec<String>,
    terminal_ids: Vec<String>,
}

#[derive(Serialize, Clone, PartialEq)]
struct WorkspaceC {
    home_id: &'static str,
    worktree: String,
    task_id: Option<String>,
    unavailable: Option<String>,
}

/// Generation C's record (§4.4's C column).
#[derive(Serialize, Clone, PartialEq)]
pub(crate) struct RecordC {
    id: String,
    kind: String,
    work: Option<WorkRef>,
    wave_id: Option<String>,
    work_path: Option<String>,
    actions: Vec<Action>,
    title: String,
    title_source: String,
    flow_membership: Value,
    detail: String,
    cwd: String,
    state: &'static str,
    ready_summary: Option<String>,
    open_argv: Vec<String>,
    terminal_ids: Vec<String>,
    interactive: bool,
    provider: Option<String>,
    task_ids: Vec<String>,
    workspace: Option<WorkspaceC>,
    caller_session_id: Option<String>,
    scope: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    attention: Option<String>,
}

/// §10.2's `program_status`: the program's reports, oldest first.
#[derive(Serialize, Clone, PartialEq)]
struct ProgramStatus {
    seen: bool,
    records: Vec<StatusReport>,
}

/// Generation E's record: D's fields in D's order, then E's. `program_status` is always
/// present; E1 adds `provider_generation`, E2 `agent_process_id` (possibly null).
#[derive(Serialize, Clone, PartialEq)]
pub(crate) struct RecordE {
    #[serde(flatten)]
    d: RecordD,
    program_status: Option<ProgramStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    provider_generation: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    agent_process_id: Option<Option<String>>,
}

#[derive(Serialize, Clone, PartialEq)]
#[serde(untagged)]
pub(crate) enum Record {
    D(RecordD),
    C(RecordC),
    E(RecordE),
}

impl Record {
    fn open_argv(&mut self) -> &mut Vec<String> {
        match self {
            Record::D(r) => &mut r.open_argv,
            Record::C(r) => &mut r.open_argv,
            Record::E(r) => &mut r.d.open_argv,
        }
    }

    /// The text-mode line and its action lines.
    fn text(&self) -> String {
        let (id, state, work_path, title, actions) = match self {
            Record::D(r) | Record::E(RecordE { d: r, .. }) => {
                let state = if r.attention.is_some() {
                    "waiting"
                } else {
                    r.state
                };
                (&r.id, state, &r.work_path, &r.title, &r.actions)
            }
            Record::C(r) => (&r.id, r.state, &r.work_path, &r.title, &r.actions),
        };
        let mut text = format!(
            "{id}  {state:<7} {}  {title}\n",
            work_path.as_deref().unwrap_or("Repository")
        );
        for a in actions {
            text += &format!(
                "  {} — {}\n",
                a.label,
                a.unavailable_reason.unwrap_or(a.help)
            );
        }
        text
    }
}

/// What every verb of one invocation shares.
pub(crate) struct Lf {
    pub generation: LfGeneration,
    /// This executable as invoked, absolute.
    pub program: String,
    /// `LF_HOME` as given.
    pub home: PathBuf,
    pub db: PathBuf,
    pub quiet: f64,
}

impl Lf {
    pub(crate) fn store(&self) -> Result<Store> {
        let mut store = Store::open(&self.db)?;
        if !self.generation.has_store_revisions() {
            store.drop_revisions()?;
        }
        Ok(store)
    }

    /// The Waiting rule of this generation (§9.4): the newest one from E on.
    pub(crate) fn rule(&self) -> WaitingRule {
        WaitingRule {
            quiet: self.quiet,
            newest: self.generation.is_e(),
        }
    }

    pub(crate) fn record(&self, row: &Row) -> Record {
        let active = !row.completed && row.client_alive();
        let work = row.task_id.as_ref().map(|id| WorkRef {
            kind: "task".into(),
            id: id.clone(),
        });
        let detail = match (&row.provider, &row.model) {
            (Some(p), Some(m)) => format!("{p}:{m}"),
            (Some(p), None) => p.clone(),
            _ => String::new(),
        };
        let task_ids: Vec<String> = row.task_id.iter().cloned().collect();
        let program = self.program.clone();
        if self.generation == LfGeneration::C {
            let kind = row.kind.clone().unwrap_or_else(|| "conversation".into());
            let state = if row.completed {
                "closed"
            } else if active {
                "active"
            } else if row.ready_summary.is_some() {
                "ready"
            } else if row.interrupted {
                "interrupted"
            } else {
                "waiting"
            };
            let mut actions = actions(active);
            actions.push(if kind == "flow" {
                Action {
                    kind: "complete",
                    label: "Complete",
                    help: "Complete the review and return feedback to the next Flow step",
                    unavailable_reason: row.ready_summary.is_none().then_some(NOT_READY),
                }
            } else {
                Action {
                    kind: "complete",
                    label: "Complete",
                    help: "Stop the provider and remove this Session; native history remains resumable",
                    unavailable_reason: None,
                }
            });
            return Record::C(RecordC {
                id: row.id.clone(),
                kind,
                work,
                wave_id: None,
                work_path: row.work_path.clone(),
                actions,
                title: row.title.clone(),
                title_source: row.title_source.clone(),
                flow_membership: json!({"kind": "independent"}),
                detail,
                cwd: row.cwd.clone(),
                state,
                ready_summary: row.ready_summary.clone(),
                open_argv: vec![program, "session".into(), "connect".into(), row.id.clone()],
                terminal_ids: Vec::new(),
                interactive: row.interactive,
                provider: row.provider.clone(),
                task_ids,
                workspace: row.repo.as_ref().map(|repo| WorkspaceC {
                    home_id: "HOME-LOCAL-SIM",
                    worktree: repo.clone(),
                    task_id: row.task_id.clone(),
                    unavailable: None,
                }),
                caller_session_id: None,
                scope: None,
                attention: row.review_attention.clone(),
            });
        }
        let state = self.state(row);
        // E lists a live client's terminal only by the id its launcher gave it (§10.6);
        // in E2 the agent itself is a native Session's client.
        let terminal_ids = if self.generation.is_e() {
            let agent = row
                .agent_pid
                .filter(|_| !row.agent_headless && row.agent_liveness() == Some(Liveness::Alive));
            let client = row.client_pid.filter(|_| active);
            let mut ids: Vec<String> = client
                .into_iter()
                .chain(agent)
                .filter_map(crate::agent::terminal_id)
                .collect();
            ids.dedup();
            ids
        } else {
            Vec::new()
        };
        let d = RecordD {
            primary_scope: None,
            attention: row.waiting.then_some("waiting"),
            task_primary: false,
            task_ids,
            id: row.id.clone(),
            workspace: row.repo.as_ref().map(|repo| Workspace {
                machine_id: "MACHINE-LOCAL-SIM",
                worktree: repo.clone(),
                task_id: row.task_id.clone(),
                unavailable: None,
            }),
            interactive: row.interactive,
            work,
            wave_id: None,
            work_path: row.work_path.clone(),
            actions: actions(state == "active"),
            title: row.title.clone(),
            title_source: row.title_source.clone(),
            flow_membership: json!({"kind": "independent"}),
            detail,
            provider: row.provider.clone(),
            cwd: row.cwd.clone(),
            state,
            ready_summary: row.ready_summary.clone(),
            open_argv: vec![
                "/usr/bin/env".into(),
                format!("LF_BIN={program}"),
                format!("LF_HOME={}", self.home.display()),
                program,
                "session".into(),
                "connect".into(),
                row.id.clone(),
            ],
            terminal_ids,
        };
        if !self.generation.is_e() {
            return Record::D(d);
        }
        let e2 = self.generation.has_agent_processes();
        Record::E(RecordE {
            d,
            program_status: (!row.program_status.is_empty()).then(|| ProgramStatus {
                seen: false,
                records: row.program_status.clone(),
            }),
            provider_generation: (!e2).then_some(row.provider_generation),
            agent_process_id: e2.then(|| row.agent_process_id.clone()),
        })
    }

    /// A D/E Session's `state`: completed → closed; in E2a/E2 an agent process's
    /// liveness decides (alive → active, dead → closed, unknown → unknown); else a live
    /// client → active, then `interrupted` (not in E2), else unknown.
    fn state(&self, row: &Row) -> &'static str {
        let liveness = row
            .agent_liveness()
            .filter(|_| self.generation.has_agent_processes());
        if row.completed {
            "closed"
        } else if let Some(liveness) = liveness {
            match liveness {
                Liveness::Alive => "active",
                Liveness::Dead => "closed",
                Liveness::Unknown => "unknown",
            }
        } else if row.client_alive() {
            "active"
        } else if row.interrupted && self.generation != LfGeneration::E2 {
            "interrupted"
        } else {
            "unknown"
        }
    }

    fn find(&self, store: &Store, id: &str) -> Result<Row> {
        store.session(id, self.rule())?.ok_or_else(|| not_found(id))
    }

    /// Runs `command`; returns lf's exit code (an agent's lf exits with its agent's).
    fn run(&self, command: Command) -> Result<i32> {
        match command {
            Command::Print(text) => print!("{text}"),
            Command::List(args) => self.list(&args)?,
            Command::Connect { id, json, mode } => return self.connect(&id, json, mode),
            Command::Start { provider, model } => return self.start(&provider, model),
            Command::MonitorPs => {
                let doc = crate::agent::monitor_ps(&self.store()?)?;
                println!("{}", serde_json::to_string_pretty(&doc)?);
            }
            Command::MonitorActive => {
                let doc = crate::agent::monitor_active(&self.store()?)?;
                println!("{}", serde_json::to_string_pretty(&doc)?);
            }
            Command::Rename {
                id,
                name,
                json,
                suggest,
            } => self.rename(&id, &name, json, suggest)?,
            Command::Complete { id } => self.complete(&id)?,
            Command::Ensure { id } => self.ensure(&id)?,
            Command::Ready { summary } => self.ready(&summary)?,
            Command::Unsimulated(verb) => bail!("the simulated lf does not implement `{verb}`"),
            Command::Refused(message) => bail!(message),
            Command::Monitor { watch, json } => {
                if !json {
                    bail!("lf monitor work prints NDJSON only; pass --json");
                }
                crate::monitor::run(self, watch)?
            }
            Command::Sim(sim) => self.sim(sim)?,
        }
        Ok(0)
    }

    fn list(&self, args: &ListArgs) -> Result<()> {
        if args.page && args.limit == 0 {
            bail!("paged Session inventory requires a positive limit");
        }
        let repo = if args.all {
            None
        } else {
            env::current_dir()
                .ok()
                .and_then(|cwd| repo_of(&cwd))
                .map(|r| r.display().to_string())
        };
        let query = Query {
            repo,
            interactive: args.interactive,
            history: args.history,
            waiting: args.waiting,
            task: args.task.clone(),
            orphan: args.orphan,
            search: args.search.clone(),
            after: args.after.clone(),
            by_id: args.page,
            // CMD reads one more row than the page to know whether there is a next.
            limit: match (args.page, args.limit) {
                (true, limit) => Some(limit + 1),
                (false, 0) => None,
                (false, limit) => Some(limit),
            },
            offset: if args.page { 0 } else { args.offset },
        };
        let store = self.store()?;
        let mut rows = store.sessions(&query, self.rule())?;
        let mut next = None;
        if args.page && rows.len() as u64 > args.limit {
            rows.truncate(args.limit as usize);
            next = rows.last().map(|r| r.id.clone());
        }
        let records: Vec<Record> = rows.iter().map(|r| self.record(r)).collect();
        crate::cli::pause_after_reading();
        let mut out = io::stdout().lock();
        if args.page {
            #[derive(Serialize)]
            struct Page {
                entries: Vec<Record>,
                next: Option<String>,
            }
            let page = Page {
                entries: records,
                next,
            };
            writeln!(out, "{}", serde_json::to_string_pretty(&page)?)?;
        } else if args.json {
            writeln!(out, "{}", serde_json::to_string_pretty(&records)?)?;
        } else if records.is_empty() {
            writeln!(out, "No Sessions.")?;
        } else {
            for record in &records {
                write!(out, "{}", record.text())?;
            }
        }
        Ok(())
    }

    fn connect(&self, id: &str, json: bool, mode: Option<&str>) -> Result<i32> {
        let mut store = self.store()?;
        let row = self.find(&store, id)?;
        let mut record = self.record(&row);
        if json {
            record.open_argv().extend(mode.map(String::from));
            println!("{}", serde_json::to_string_pretty(&record)?);
            return Ok(0);
        }
        if self.generation.has_agent_processes() {
            if self.state(&row) == "active" {
                if mode != Some("--replace") {
                    bail!(ACTIVE_ELSEWHERE);
                }
                // Move here stops the other terminal's native agent; beside a headless
                // one it stops nothing and resumes a second, native agent (lf's fallback).
                if let Some(agent) = store.current_agent(id)? {
                    if !agent.headless && agent.liveness() == Liveness::Alive {
                        crate::agent::stop_for_move(&mut store, &agent)?;
                    }
                }
            }
            return self.run_agent_here(&mut store, &row, "lf session");
        }
        // Instead of resuming a provider, say which Session would open and wait for the
        // person to leave, so a terminal launched by the tray stays up and shows it.
        let mut out = io::stdout().lock();
        writeln!(out, "Session {id}: {}", row.title)?;
        writeln!(out, "  in {}", row.cwd)?;
        writeln!(out, "(simulated lf: press Enter to leave)")?;
        out.flush()?;
        io::stdin().lock().read_line(&mut String::new())?;
        Ok(0)
    }

    /// E2's `lf session ensure`: a Session without a live agent gets one, run by `lf
    /// session connect` in a detached tmux session `lf-human-<12>` (§10.6); one with a
    /// live agent (native or headless) is left as it is.
    fn ensure(&self, id: &str) -> Result<()> {
        let store = self.store()?;
        let row = self.find(&store, id)?;
        let name = crate::agent::tmux_session_name(&row.id);
        // lf's words here are not known (the model is silent): a plain sentence.
        if self.state(&row) == "active" {
            println!("Session {} is already running; nothing started.", row.id);
            return Ok(());
        }
        drop(store);
        if crate::agent::ensure_in_tmux(self, &row.id, &row.cwd, &name)? {
            println!("Session {}: started in tmux session {name}.", row.id);
        } else {
            println!(
                "Session {} is already running in tmux session {name}; nothing started.",
                row.id
            );
        }
        Ok(())
    }

    /// E2: says which Session opens, then runs its agent as this lf's child here.
    fn run_agent_here(&self, store: &mut Store, row: &Row, label: &str) -> Result<i32> {
        {
            let mut out = io::stdout().lock();
            writeln!(out, "Session {}: {}", row.id, row.title)?;
            writeln!(out, "  in {}", row.cwd)?;
            out.flush()?;
        }
        let provider = row.provider.as_deref().unwrap_or(DEFAULT_PROVIDER);
        crate::agent::run_here(store, &row.id, provider, &row.cwd, label)
    }

    /// E2's `lf -a <PROVIDER>`: a new interactive Session in this directory (its id a
    /// UUID, as lf's are opaque), with its agent run here.
    fn start(&self, provider: &str, model: Option<String>) -> Result<i32> {
        if provider.is_empty() || provider.starts_with('-') {
            bail!("invalid agent {provider:?}: expected <provider[:model]>");
        }
        let cwd = env::current_dir()?;
        let id = uuid::Uuid::new_v4().to_string();
        let mut spec = SessionSpec::new(id.clone(), "New conversation", cwd.clone());
        spec.repo = repo_of(&cwd);
        spec.provider = Some(provider.to_string());
        spec.model = model;
        let mut store = self.store()?;
        store.create_session(&spec)?;
        let row = self.find(&store, &id)?;
        self.run_agent_here(&mut store, &row, "lf")
    }

    fn rename(&self, id: &str, name: &str, json: bool, suggest: bool) -> Result<()> {
        let mut store = self.store()?;
        let row = self.find(&store, id)?;
        if row.completed {
            bail!("Session {id} is already complete");
        }
        let name = name.trim();
        if name.is_empty() {
            bail!("cannot rename Session {id}: Session name cannot be empty");
        }
        let message = if suggest && row.title_source == "human" {
            format!(
                "Session {id} keeps its human-assigned name \"{}\".",
                row.title
            )
        } else {
            let source = if suggest {
                TitleSource::Generated
            } else {
                TitleSource::Human
            };
            store.rename(id, name, source)?;
            format!("Session {id} is named \"{name}\".")
        };
        if json {
            let row = self.find(&store, id)?;
            println!("{}", serde_json::to_string_pretty(&self.record(&row))?);
        } else {
            println!("{message}");
        }
        Ok(())
    }

    fn complete(&self, id: &str) -> Result<()> {
        let mut store = self.store()?;
        let row = self.find(&store, id)?;
        if row.completed {
            bail!("Session {id} is already complete");
        }
        let flow = row.kind.as_deref() == Some("flow");
        if flow && row.ready_summary.is_none() {
            bail!(NOT_READY);
        }
        store.complete(id)?;
        if flow {
            println!("Review completed; feedback returned to the Flow.");
        } else {
            println!("Session {id} completed; its provider history remains resumable.");
        }
        Ok(())
    }

    /// `lf session ready` names no Session: the agent's lf knows its own from
    /// `LF_HUMAN_SESSION` (`{"kind":"primary","id":…}`, or the bare id).
    fn ready(&self, summary: &str) -> Result<()> {
        let token = env::var("LF_HUMAN_SESSION")
            .ok()
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                anyhow!("lf session ready runs inside a Session (LF_HUMAN_SESSION is not set)")
            })?;
        let id = serde_json::from_str::<Value>(&token)
            .ok()
            .and_then(|v| v["id"].as_str().map(String::from))
            .unwrap_or(token);
        if summary.trim().is_empty() {
            bail!("summary cannot be empty");
        }
        self.store()?.ready(&id, summary.trim())?;
        println!("Session is ready for your review.");
        Ok(())
    }

    fn sim(&self, sim: Sim) -> Result<()> {
        let mut store = self.store()?;
        match sim {
            Sim::New(spec) => store.create_session(&spec),
            Sim::Many(specs, every) => {
                store.create_sessions(&specs)?;
                specs
                    .iter()
                    .step_by(every.max(1))
                    .take(if every == 0 { 0 } else { specs.len() })
                    .try_for_each(|spec| store.activity(&spec.id, Activity::Ask))
            }
            Sim::Activity(id, activity) => store.activity(&id, activity),
            Sim::Attach(id, pid) => store.attach(&id, pid),
            Sim::Detach(id) => store.detach(&id),
            Sim::Complete(id) => store.complete(&id),
            Sim::Interrupt(id) => store.interrupt(&id),
            Sim::Rename(id, title) => store.rename(&id, &title, TitleSource::Human),
            Sim::Ready(id, summary) => store.ready(&id, &summary),
            Sim::Attention(id, attention) => store.review_attention(&id, attention.as_deref()),
            Sim::Status(id, report) => store.report_status(&id, &report),
            Sim::Agent(id, pid) => store.set_agent(&id, pid),
            Sim::Headless(id) => {
                let row = self.find(&store, &id)?;
                let provider = row.provider.as_deref().unwrap_or(DEFAULT_PROVIDER);
                let (agent, pid) =
                    crate::agent::start_headless(&mut store, &id, provider, &row.cwd)?;
                println!("{}", json!({"agent_process_id": agent, "pid": pid}));
                Ok(())
            }
        }
    }
}

/// Run a C/D0/D invocation (`args` without the program). Returns the exit code.
pub(crate) fn main(lf: &Lf, args: &[String]) -> i32 {
    let command = match parse(lf.generation, args) {
        Ok(command) => command,
        Err(Usage(text)) => {
            eprint!("{text}");
            return 2;
        }
    };
    match lf.run(command) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("Error: {}", crate::cli::report(&e));
            1
        }
    }
}

/// `LF_SIM_QUIET_SECONDS`, else lf's 120 s.
pub(crate) fn quiet_seconds() -> f64 {
    env::var("LF_SIM_QUIET_SECONDS")
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .unwrap_or(crate::store::DEFAULT_QUIET_SECONDS)
}

/// The canonical form of a path when it exists.
pub(crate) fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}
