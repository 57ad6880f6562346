//! The stand-in `lf`: generation A's `lf session` verbs (loopflow-model.md §4.1, §4.4,
//! §4.8) over the records a [`SimHome`] holds, or with `LF_SIM_GENERATION` = `c`, `d0`,
//! `d`, `e1`, `e2a` or `e2` (`e` = `e2`) those generations' verbs over the SQLite
//! inventory (§4.3, §9, §10). With `LF_SIM_PLAY_AGENT` set it is an agent an E2 lf
//! started (see `agent.rs`) and records nothing. Errors print `Error: <message>` on stderr and exit 1; usage errors
//! exit 2, as lf's clap front end does.
//!
//! For tests it records every call and obeys knobs, both in `$LF_SIM_DIR` so a test can
//! change them while the program under test runs:
//! - `argv.jsonl` gets one line per call: `{"pid", "argv", "cwd", "env", "tty"}` (the
//!   `LF_*` variables; `tty` is stdin's terminal or null);
//! - a file `hang` makes every call sleep until it is killed;
//! - a file `fail` makes every call fail with the file's contents as the message;
//! - a file `mute-monitor` silences `lf monitor work` (generations D and E) while it
//!   exists;
//! - a file `pause-list` holds `lf session list` (C and later) after it read the
//!   sessions and before it answers, until the file is removed; it creates `list-paused`
//!   once it holds, so a test can commit something that list then misses;
//! - a file `slow-exit` holds every call of C and later after it answered and before it
//!   ends its Process row and exits, until the file is removed; it creates `exit-held`
//!   once it holds;
//! - on E, `planning-syncs.jsonl` gets one line `{"pid", "repo", "at"}` for each planning
//!   sync a scoped `lf monitor work` reader starts (it also commits to the database).
//!
//! `LF_SIM_QUIET_SECONDS` (default 120, fractions allowed) is the quiet window after
//! which a Session with a silent reading becomes Waiting, so tests need not wait 2 min.
//! In C, D0, D and E the hidden `lf sim …` verbs write the database as an agent's lf
//! would (see `inventory.rs`; E adds `lf sim status` and `lf sim agent`); every call of
//! those generations, these included, first commits one Process row, even when `hang`
//! or `fail` then applies, and ends it in another commit as it exits. lf's
//! `store_revisions` (D and later) is kept as lf's triggers keep it: each commit moves
//! its domains inside its own transaction; C's and D0's store has no such table.

use std::collections::BTreeMap;
use std::env;
use std::ffi::{OsStr, OsString};
use std::fs::{self, OpenOptions};
use std::io::{self, BufRead, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use serde::Serialize;

use crate::home::{has_provider_session, not_found, SimHome};
use crate::inventory::{self, LfGeneration};
use crate::records::{title_of, AskRecord, AskStatus, FlowSpec, RunManifest, State, WorkRef};

const TOP_HELP: &str = "\
lf (simulated by lf-sim): the human sessions of a Loopflow home

Usage: lf session <COMMAND>

Commands:
  session  Work with human sessions
";

const SESSION_HELP: &str = "\
Work with the sessions where an agent waits on a person

Usage: lf session <COMMAND>

Commands:
  list      List human sessions
  open      Open a session in this terminal
  complete  Complete an Ask or Interactive session
  approve   Approve a Task FlowStep so the Task may continue
  iterate   Return a Task FlowStep to autonomous work for another iteration
";

/// Run the stand-in with `args` as the process received them (`args[0]` is the program
/// as invoked). Returns the exit code.
pub fn main(args: Vec<OsString>) -> i32 {
    let mut args = args.into_iter();
    // An agent this lf started: it plays the provider and touches nothing of lf's.
    if let Some(mode) = env::var_os(crate::agent::PLAY_AGENT) {
        return crate::agent::play(&mode.to_string_lossy());
    }
    let program = args.next().unwrap_or_else(|| "lf".into());
    let args: Vec<OsString> = args.collect();
    let generation = match LfGeneration::from_env() {
        Ok(generation) => generation,
        Err(message) => {
            eprintln!("Error: {message}");
            return 1;
        }
    };
    let home = SimHome::from_env(|name| env::var_os(name));
    let sim_dir = env::var_os("LF_SIM_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from);
    if let Some(dir) = &sim_dir {
        if let Err(e) = record_call(dir, &args) {
            eprintln!("Error: {e:#}");
            return 1;
        }
    }
    let program = program_path(&program);
    let lf = inventory::Lf {
        generation,
        db: inventory::db_path(generation, &home),
        home: home.home().to_path_buf(),
        program,
        quiet: inventory::quiet_seconds(),
    };
    // From C on, every lf process records itself before doing anything else, in a
    // commit of its own, and ends that record as it exits, in another: a reader that
    // re-lists on every commit wakes itself.
    let mut process_row = None;
    if generation != LfGeneration::A {
        let argv: Vec<String> = std::iter::once(lf.program.clone())
            .chain(args.iter().map(|a| a.to_string_lossy().into_owned()))
            .collect();
        match lf
            .store()
            .and_then(|mut store| store.record_process(std::process::id(), &argv))
        {
            Ok(row) => process_row = Some(row),
            Err(e) => {
                eprintln!("Error: {}", report(&e));
                return 1;
            }
        }
    }
    if let Some(dir) = &sim_dir {
        if dir.join("hang").exists() {
            // Stands for an lf that never answers; the caller's timeout must end it.
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        }
        if let Ok(message) = fs::read_to_string(dir.join("fail")) {
            eprintln!("Error: {}", message.trim());
            return 1;
        }
    }
    let args: Vec<String> = match args.into_iter().map(OsString::into_string).collect() {
        Ok(args) => args,
        Err(bad) => {
            eprintln!("error: invalid UTF-8 was detected in the argument {bad:?}");
            return 2;
        }
    };
    if let Some(row) = process_row {
        let code = inventory::main(&lf, &args);
        hold_before_exit();
        if let Err(e) = lf
            .store()
            .and_then(|mut store| store.end_process(row, code))
        {
            eprintln!("Error: {}", report(&e));
            return 1;
        }
        return code;
    }
    let command = match parse(&args) {
        Ok(command) => command,
        Err(Usage(text)) => {
            eprint!("{text}");
            return 2;
        }
    };
    let lf = Lf {
        program: lf.program,
        home,
    };
    match lf.run(command) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("Error: {}", report(&e));
            1
        }
    }
}

/// What lf's `main` prints for an error: the message, then its causes. (anyhow's own
/// `{:?}` would add a backtrace whenever `RUST_BACKTRACE` is set.)
pub(crate) fn report(error: &anyhow::Error) -> String {
    let mut text = error.to_string();
    let causes: Vec<String> = error.chain().skip(1).map(ToString::to_string).collect();
    match causes.as_slice() {
        [] => {}
        [cause] => text += &format!("\n\nCaused by:\n    {cause}"),
        _ => {
            text += "\n\nCaused by:";
            for (i, cause) in causes.iter().enumerate() {
                text += &format!("\n    {i}: {cause}");
            }
        }
    }
    text
}

#[derive(Debug, PartialEq, Eq)]
enum Command {
    Help(String),
    List {
        json: bool,
    },
    Open {
        id: String,
        mode: Option<String>,
    },
    Complete {
        id: String,
    },
    Decide {
        approve: bool,
        id: String,
        text: String,
    },
}

/// A usage error: the full text for stderr.
#[derive(Debug, PartialEq, Eq)]
struct Usage(String);

fn usage_error(message: &str, usage: &str) -> Usage {
    Usage(format!(
        "error: {message}\n\nUsage: {usage}\n\nFor more information, try '--help'.\n"
    ))
}

fn parse(args: &[String]) -> Result<Command, Usage> {
    let top = "lf session <COMMAND>";
    let Some((first, rest)) = args.split_first() else {
        return Err(Usage(TOP_HELP.into()));
    };
    match first.as_str() {
        "session" => {}
        "--help" | "-h" | "help" => return Ok(Command::Help(TOP_HELP.into())),
        "--version" | "-V" => return Ok(Command::Help(inventory::VERSION.into())),
        other => {
            return Err(usage_error(
                &format!("unrecognized subcommand '{other}'"),
                top,
            ))
        }
    }
    let Some((verb, rest)) = rest.split_first() else {
        return Err(Usage(SESSION_HELP.into()));
    };
    let (usage, flags): (&str, &[&str]) = match verb.as_str() {
        "--help" | "-h" | "help" => return Ok(Command::Help(SESSION_HELP.into())),
        "list" => ("lf session list [--json] [--all]", &["--json", "--all"]),
        "open" => (
            "lf session open [--replace | --try] [--] <ID>",
            &["--replace", "--try"],
        ),
        "complete" => ("lf session complete [--] <ID>", &[]),
        "approve" => ("lf session approve [--] <ID> <SUMMARY>...", &[]),
        "iterate" => ("lf session iterate [--] <ID> <DIRECTION>...", &[]),
        other => {
            return Err(usage_error(
                &format!("unrecognized subcommand '{other}'"),
                top,
            ))
        }
    };
    // Before `--`, a word starting with `-` is an option; after it, nothing is.
    let mut given = Vec::new();
    let mut positional = Vec::new();
    let mut words = rest.iter();
    for word in words.by_ref() {
        if word == "--" {
            break;
        }
        if word.len() > 1 && word.starts_with('-') {
            given.push(word.as_str());
        } else {
            positional.push(word.clone());
        }
    }
    positional.extend(words.cloned());
    for flag in &given {
        if matches!(*flag, "--help" | "-h") {
            return Ok(Command::Help(format!("Usage: {usage}\n")));
        }
        if !flags.contains(flag) {
            let message = format!(
                "unexpected argument '{flag}' found\n\n  tip: to pass '{flag}' as a value, use '-- {flag}'"
            );
            return Err(usage_error(&message, usage));
        }
    }
    let missing = |what: &str| {
        usage_error(
            &format!("the following required arguments were not provided:\n  {what}"),
            usage,
        )
    };
    let unexpected =
        |word: &str| usage_error(&format!("unexpected argument '{word}' found"), usage);
    let has = |flag: &str| given.contains(&flag);
    match verb.as_str() {
        "list" => match positional.first() {
            Some(word) => Err(unexpected(word)),
            None => Ok(Command::List {
                json: has("--json"),
            }),
        },
        "open" | "complete" => {
            let mut positional = positional.into_iter();
            let id = positional.next().ok_or_else(|| missing("<ID>"))?;
            if let Some(word) = positional.next() {
                return Err(unexpected(&word));
            }
            if verb == "complete" {
                return Ok(Command::Complete { id });
            }
            let mode = match (has("--replace"), has("--try")) {
                (true, true) => {
                    let message = "the argument '--replace' cannot be used with '--try'";
                    return Err(usage_error(message, usage));
                }
                (true, false) => Some("--replace".into()),
                (false, true) => Some("--try".into()),
                (false, false) => None,
            };
            Ok(Command::Open { id, mode })
        }
        _ => {
            let approve = verb == "approve";
            let mut positional = positional.into_iter();
            let id = positional.next().ok_or_else(|| missing("<ID>"))?;
            let words: Vec<String> = positional.collect();
            if words.is_empty() {
                return Err(missing(if approve {
                    "<SUMMARY>..."
                } else {
                    "<DIRECTION>..."
                }));
            }
            Ok(Command::Decide {
                approve,
                id,
                text: words.join(" "),
            })
        }
    }
}

/// The session a verb is about.
enum Target {
    Interactive(PathBuf, RunManifest),
    Ask(AskRecord),
    Flow(FlowSpec),
}

/// One element of `lf session list --json`, generation A's fields in lf's order.
#[derive(Serialize)]
struct Listed {
    id: String,
    kind: &'static str,
    work: Option<WorkRef>,
    title: String,
    detail: String,
    cwd: String,
    state: State,
    ready_summary: Option<String>,
    open_argv: Vec<String>,
}

struct Lf {
    /// This executable as invoked, absolute: it goes into `open_argv`.
    program: String,
    home: SimHome,
}

impl Lf {
    fn run(&self, command: Command) -> Result<()> {
        match command {
            Command::Help(text) => print!("{text}"),
            Command::List { json } => self.list(json)?,
            Command::Complete { id } => println!("{}", self.complete(&id)?),
            Command::Decide { approve, id, text } => {
                println!("{}", self.decide(approve, &id, &text)?)
            }
            Command::Open { id, mode } => self.open(&id, mode.is_some())?,
        }
        Ok(())
    }

    /// Flow sessions from the database and waiting Asks. The simulation does not check
    /// liveness: an Ask is ready with a summary and waiting without. Like lf, one
    /// unreadable Ask record fails the whole list.
    fn list(&self, json: bool) -> Result<()> {
        let open_argv = |id: &str| {
            [self.program.as_str(), "session", "open", id]
                .map(String::from)
                .to_vec()
        };
        let mut sessions: Vec<Listed> = self
            .home
            .flow_list()?
            .into_iter()
            .map(|flow| Listed {
                open_argv: open_argv(&flow.id),
                kind: "flow",
                work: flow.work.as_deref().and_then(WorkRef::from_selector),
                state: flow.listed_state(),
                cwd: flow.cwd.display().to_string(),
                id: flow.id,
                title: flow.title,
                detail: flow.detail,
                ready_summary: flow.ready_summary,
            })
            .collect();
        for id in self.home.ask_ids()? {
            let Some(record) = self.home.read_ask(&id)? else {
                continue;
            };
            if record.status != AskStatus::Waiting {
                continue;
            }
            sessions.push(Listed {
                open_argv: open_argv(&record.id),
                kind: "ask",
                work: record.work,
                state: match record.ready_summary {
                    Some(_) => State::Ready,
                    None => State::Waiting,
                },
                cwd: record.cwd.display().to_string(),
                id: record.id,
                title: record.title,
                detail: record.detail,
                ready_summary: record.ready_summary,
            });
        }
        sessions.sort_by(|a, b| a.title.cmp(&b.title).then_with(|| a.id.cmp(&b.id)));
        if json {
            println!("{}", serde_json::to_string_pretty(&sessions)?);
        } else if sessions.is_empty() {
            println!("No Sessions.");
        } else {
            for s in &sessions {
                let work = s.work.as_ref().map_or("run", |w| w.id.as_str());
                println!("{}  {:<7} {work}  {}", s.id, s.state.as_str(), s.title);
            }
        }
        Ok(())
    }

    /// lf's `find_session`: a Run first (by id or prefix), then an Ask, then a Flow step.
    fn find(&self, id: &str) -> Result<Option<Target>> {
        match self.home.find_run(id) {
            Ok(Some((dir, manifest))) => {
                let run = &manifest.run_id;
                if manifest.surface != "tui" {
                    bail!("Run {run} is not an interactive Session");
                }
                if dir.join("session-resolution.json").exists() {
                    bail!("Session {run} is resolved");
                }
                if !has_provider_session(&dir) {
                    bail!("Session {run} has no provider history yet");
                }
                return Ok(Some(Target::Interactive(dir, manifest)));
            }
            Ok(None) => {}
            Err(e) => return Err(anyhow!("Session record unavailable: {e:#}")),
        }
        if let Some(record) = self.home.read_ask(id)? {
            if record.status != AskStatus::Waiting {
                bail!("human session {id:?} is already resolved");
            }
            return Ok(Some(Target::Ask(record)));
        }
        let flow = self.home.flow_list()?.into_iter().find(|f| f.id == id);
        Ok(flow.map(Target::Flow))
    }

    fn complete(&self, id: &str) -> Result<String> {
        match self.find(id)?.ok_or_else(|| not_found(id))? {
            Target::Interactive(dir, manifest) => {
                self.home.settle(&dir, true)?;
                Ok(format!(
                    "Session {} completed; its provider history remains resumable.",
                    manifest.run_id
                ))
            }
            Target::Ask(_) => {
                let summary = self.home.complete(id)?;
                Ok(format!("Ask session completed: {summary}"))
            }
            Target::Flow(_) => {
                bail!("Task FlowStep Sessions use `lf session approve` or `lf session iterate`")
            }
        }
    }

    fn decide(&self, approve: bool, id: &str, text: &str) -> Result<String> {
        if text.trim().is_empty() {
            bail!(if approve {
                "approval summary cannot be empty"
            } else {
                "iteration direction cannot be empty"
            });
        }
        match self.find(id)?.ok_or_else(|| not_found(id))? {
            Target::Interactive(..) => bail!("Interactive Sessions use `lf session complete`"),
            Target::Ask(_) => bail!("Ad-hoc Ask Sessions use `lf session complete`"),
            Target::Flow(_) => {}
        }
        self.home.update_flows(|flows| {
            let at = flows
                .iter()
                .position(|f| f.id == id)
                .ok_or_else(|| not_found(id))?;
            if approve {
                flows.remove(at);
            } else {
                flows[at].state = State::Waiting;
                flows[at].ready_summary = None;
            }
            Ok(())
        })?;
        Ok(if approve {
            "Task FlowStep approved; the Task may continue."
        } else {
            "Task FlowStep returned to autonomous work for another iteration."
        }
        .into())
    }

    /// Instead of resuming a provider, say which session would open and wait for the
    /// person to leave, so a terminal launched by the tray stays up and shows it.
    fn open(&self, id: &str, moving: bool) -> Result<()> {
        let target = self.find(id)?.ok_or_else(|| not_found(id))?;
        let (title, cwd) = match &target {
            Target::Interactive(dir, manifest) => (session_title(dir, manifest), &manifest.cwd),
            Target::Ask(record) => (record.title.clone(), &record.cwd),
            Target::Flow(flow) => (flow.title.clone(), &flow.cwd),
        };
        if moving && !matches!(target, Target::Interactive(..)) {
            bail!("--replace and --try apply only to interactive provider sessions");
        }
        let mut out = io::stdout().lock();
        writeln!(out, "Session {id}: {title}")?;
        writeln!(out, "  in {}", cwd.display())?;
        writeln!(out, "(simulated lf: press Enter to leave)")?;
        out.flush()?;
        // EOF ends the session as well as a line does.
        io::stdin().lock().read_line(&mut String::new())?;
        Ok(())
    }
}

/// Generation A's Interactive title: the first line of the Run's first message, else
/// its skill, else its harness.
fn session_title(dir: &Path, manifest: &RunManifest) -> String {
    fs::read(dir.join("context.json"))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .and_then(|context| {
            context
                .pointer("/context/task/text")
                .and_then(|t| t.as_str())
                .and_then(title_of)
        })
        .or_else(|| manifest.skill.clone())
        .unwrap_or_else(|| manifest.harness.clone())
}

/// This executable's absolute path as it was invoked, without resolving symlinks: a
/// program that acts as `lf` through a symlink named `lf` must be called by that name.
fn program_path(program: &OsStr) -> String {
    let path = Path::new(program);
    let found = if program.as_encoded_bytes().contains(&b'/') {
        Some(path.to_path_buf())
    } else {
        // Invoked through PATH: argv[0] is the bare name.
        env::var_os("PATH").and_then(|paths| {
            env::split_paths(&paths)
                .filter(|dir| !dir.as_os_str().is_empty())
                .map(|dir| dir.join(path))
                .find(|candidate| is_executable(candidate))
        })
    };
    found
        .and_then(|p| std::path::absolute(p).ok())
        .or_else(|| env::current_exe().ok())
        .unwrap_or_else(|| path.to_path_buf())
        .display()
        .to_string()
}

fn is_executable(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// One line of `argv.jsonl`.
#[derive(Serialize)]
struct Call {
    pid: u32,
    argv: Vec<String>,
    cwd: String,
    env: BTreeMap<String, String>,
    /// The terminal on stdin, so tests can tell a terminal really gave lf one.
    tty: Option<String>,
}

fn record_call(dir: &Path, args: &[OsString]) -> Result<()> {
    let lossy = |s: &OsStr| s.to_string_lossy().into_owned();
    let call = Call {
        pid: std::process::id(),
        argv: args.iter().map(|a| lossy(a)).collect(),
        cwd: env::current_dir().map_or_else(|_| String::new(), |d| lossy(d.as_os_str())),
        env: env::vars_os()
            .filter(|(name, _)| name.as_encoded_bytes().starts_with(b"LF_"))
            .map(|(name, value)| (lossy(&name), lossy(&value)))
            .collect(),
        tty: stdin_tty(),
    };
    let mut line = serde_json::to_vec(&call)?;
    line.push(b'\n');
    let path = dir.join("argv.jsonl");
    // One append-mode write per call keeps lines whole when calls overlap.
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&path)
        .and_then(|mut file| file.write_all(&line))
        .with_context(|| format!("record this call in {}", path.display()))
}

fn stdin_tty() -> Option<String> {
    // SAFETY: ttyname returns a pointer to a static buffer or null; it is copied out at
    // once, and this single-threaded start of the program has no other caller.
    unsafe {
        let name = libc::ttyname(0);
        (!name.is_null()).then(|| {
            std::ffi::CStr::from_ptr(name)
                .to_string_lossy()
                .into_owned()
        })
    }
}

/// The `slow-exit` knob: hold here, after the command did its work and wrote its answer
/// and before lf ends its Process row and exits, while the file exists; `exit-held` is
/// created once it holds (with this pid).
fn hold_before_exit() {
    let Some(dir) = env::var_os("LF_SIM_DIR").filter(|d| !d.is_empty()) else {
        return;
    };
    let dir = PathBuf::from(dir);
    if !dir.join("slow-exit").exists() {
        return;
    }
    // The answer is out: whoever runs this lf has read it and now waits for the exit.
    let _ = io::stdout().flush();
    let _ = fs::write(dir.join("exit-held"), std::process::id().to_string());
    // The test removes the file when it has written; 10 ms is far below anything it times.
    while dir.join("slow-exit").exists() {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The `pause-list` knob: hold here, after the sessions were read, while the file exists.
pub(crate) fn pause_after_reading() {
    let Some(dir) = env::var_os("LF_SIM_DIR").filter(|d| !d.is_empty()) else {
        return;
    };
    let dir = PathBuf::from(dir);
    if !dir.join("pause-list").exists() {
        return;
    }
    let _ = fs::write(dir.join("list-paused"), std::process::id().to_string());
    // The test removes the file when it has written; 10 ms is far below anything it times.
    while dir.join("pause-list").exists() {
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_words(words: &[&str]) -> Result<Command, Usage> {
        parse(&words.iter().map(|w| w.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn everything_after_double_dash_is_positional() {
        assert_eq!(
            parse_words(&["session", "approve", "--", "-rf", "--json", "x"]).unwrap(),
            Command::Decide {
                approve: true,
                id: "-rf".into(),
                text: "--json x".into()
            }
        );
        assert_eq!(
            parse_words(&["session", "complete", "--", "--"]).unwrap(),
            Command::Complete { id: "--".into() }
        );
        let Usage(text) = parse_words(&["session", "complete", "-rf"]).unwrap_err();
        assert!(text.contains("unexpected argument '-rf'"), "{text}");
    }

    #[test]
    fn options_and_arity() {
        assert_eq!(
            parse_words(&["session", "list", "--all", "--json"]).unwrap(),
            Command::List { json: true }
        );
        assert_eq!(
            parse_words(&["session", "open", "x", "--replace"]).unwrap(),
            Command::Open {
                id: "x".into(),
                mode: Some("--replace".into())
            }
        );
        for bad in [
            &["session", "open", "x", "--replace", "--try"][..],
            &["session", "complete"],
            &["session", "complete", "a", "b"],
            &["session", "approve", "a"],
            &["session", "list", "x"],
            &["session", "rename", "a", "b"],
            &["ask", "why"],
            &[],
        ] {
            assert!(parse_words(bad).is_err(), "{bad:?}");
        }
        assert!(matches!(
            parse_words(&["session", "--help"]).unwrap(),
            Command::Help(text) if text.contains("approve") && text.contains("iterate")
        ));
    }
}
